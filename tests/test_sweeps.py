"""Sweeps, the result store and `xlat results`: the issue's acceptance list, end to end.

The sweeps here run on a real local Ray instance (2 workers) with tiny runs.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import xlat as api
from conftest import ROOT, xlat
from xlat.store import WALL_CLOCK_KEYS, Store
from xlat.sweeps import expand, load_spec

#: The spec form of the issue, exactly as written there.
ISSUE_SPEC = """\
designs = ["radix", "ideal"]
workloads = ["gups", "stream", "bfs"]
footprint = "256MiB"
refs = "1M"
seeds = [1]
[set]
"os.thp" = ["never", "always"]
"""

#: The same grid with tiny runs.
SMALL_SPEC = ISSUE_SPEC.replace('"256MiB"', '"16MiB"').replace('"1M"', '"20000"')


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def without_wall_clock(record: dict) -> dict:
    rec = json.loads(json.dumps(record))
    rec.pop("sim", None)
    return rec


def test_the_issue_spec_as_written_expands_to_twelve_runs(tmp_path):
    spec = write(tmp_path / "grid.toml", ISSUE_SPEC)
    proc = xlat("sweep", str(spec), "--dry-run", "--db", str(tmp_path / "r.duckdb"))
    lines = proc.stdout.strip().split("\n")
    assert len(lines) == 12 and all(" new " in ln for ln in lines)
    assert "12 runs, 12 to run" in proc.stderr
    labels = [ln.split(None, 2)[2] for ln in lines]
    assert labels[0] == "radix gups footprint=256MiB refs=1M os.thp=never seed=1"
    assert "ideal bfs footprint=256MiB refs=1M os.thp=always seed=1" in labels
    assert not (tmp_path / "r.duckdb").exists()  # a dry run writes nothing


@pytest.fixture(scope="module")
def small_db(tmp_path_factory):
    """A store holding the 12 runs of SMALL_SPEC, swept once on Ray with 2 workers."""
    tmp = tmp_path_factory.mktemp("sweep")
    spec = write(tmp / "grid.toml", SMALL_SPEC)
    db = tmp / "results.duckdb"
    first = xlat("sweep", str(spec), "--db", str(db), "--workers", "2")
    return spec, db, first


def test_a_two_by_three_by_two_sweep_stores_twelve_rows_and_a_rerun_runs_nothing(small_db):
    spec, db, first = small_db
    assert "12 runs, 0 already stored, 12 ran ok" in first.stderr
    assert first.stderr.count(" ok (") == 12  # one progress line per finished run (not a tty)
    rows = Store(db).query("SELECT config_hash, status, design, workload FROM runs")
    assert len(rows) == 12 and rows["config_hash"].is_unique and set(rows["status"]) == {"ok"}
    assert {r.config_hash for r in expand(load_spec(spec))} == set(rows["config_hash"])
    again = xlat("sweep", str(spec), "--db", str(db), "--workers", "2")
    assert "12 runs, 12 already stored, 0 ran ok" in again.stderr
    dry = xlat("sweep", str(spec), "--dry-run", "--db", str(db)).stdout
    assert dry.count(" ok ") == 12


def test_every_stored_row_carries_its_metadata_and_the_record_figures_as_columns(small_db):
    _, db, _ = small_db
    df = api.results(db)
    for col in [
        "design",
        "workload",
        "seed",
        "xlat_version",
        "git_commit",
        "started_at",
        "finished_at",
        "config_json",
        "record_json",
        "trace_sha256",
        "tlb.l2_mpki",
        "cache.pt_served_dram",
        "cache.llc.pt_line_share_avg",
        "config.os.thp",
        "page_table.max_contiguous_bytes",
    ]:
        assert col in df.columns, col
    assert df["trace_sha256"].isna().all()  # built-in workloads have no trace file
    assert (df["xlat_version"] == api.version()).all()
    row = df.iloc[0]
    rec = json.loads(row["record_json"])
    assert rec["tlb"]["l2_mpki"] == row["tlb.l2_mpki"]
    assert json.loads(row["config_json"])["os"]["thp"] == row["config.os.thp"]
    assert (df["finished_at"] >= df["started_at"]).all()


def test_the_stored_values_equal_a_serial_run_of_the_same_config(small_db):
    spec, db, _ = small_db
    df = api.results(db).set_index("config_hash")
    for run in expand(load_spec(spec))[::5]:
        serial = api.run(**run.kwargs())
        assert without_wall_clock(json.loads(df.loc[run.config_hash, "record_json"])) == (
            without_wall_clock(serial)
        )


def test_results_filters_pivots_and_prints_csv_and_json(small_db):
    _, db, _ = small_db
    out = xlat(
        "results",
        "--db",
        str(db),
        "--where",
        "design=radix",
        "--where",
        "os.thp=always",
        "--format",
        "csv",
        "--columns",
        "design,workload,os.thp,tlb.l2_mpki",
    ).stdout
    lines = out.strip().split("\n")
    assert lines[0] == "design,workload,os.thp,tlb.l2_mpki" and len(lines) == 4
    assert all(ln.startswith("radix,") and ",always," in ln for ln in lines[1:])

    table = json.loads(
        xlat("results", "--db", str(db), "--speedup-over", "radix", "--format", "json").stdout
    )
    assert len(table) == 8  # 3 workloads x 2 THP settings + a geomean per THP setting
    geo = {r["os.thp"]: r for r in table if r["workload"] == "geomean"}
    assert set(geo) == {"never", "always"} and table[-2:] == list(geo.values())
    assert all(row["radix"] == 1.0 and row["ideal"] > 0 for row in table)
    speedups = api.results(db, speedup_over="radix")
    for thp, row in geo.items():  # the workloads of that setting only, never pooled
        each = [r["ideal"] for r in table if r["os.thp"] == thp and r["workload"] != "geomean"]
        assert row["ideal"] == pytest.approx(math.prod(each) ** (1 / len(each)))
    gups_never = next(r for r in table if (r["workload"], r["os.thp"]) == ("gups", "never"))
    assert speedups.loc[("gups", "never"), "ideal"] == pytest.approx(gups_never["ideal"])
    radix = api.results(db, where={"design": "radix", "workload": "gups", "os.thp": "never"})
    ideal = api.results(db, where={"design": "ideal", "workload": "gups", "os.thp": "never"})
    expected = radix["timing.cycles"].iloc[0] / ideal["timing.cycles"].iloc[0]
    assert gups_never["ideal"] == pytest.approx(expected)

    text = xlat(
        "results", "--db", str(db), "--by", "design", "--value", "walk.mem_accesses", "--agg", "sum"
    ).stdout
    assert text.split("\n")[0].split() == ["design", "walk.mem_accesses"]


def test_results_of_one_spec_leave_out_the_other_runs_in_the_store(small_db, tmp_path):
    spec, shared_db, _ = small_db
    db = tmp_path / "copy.duckdb"
    db.write_bytes(shared_db.read_bytes())  # leave the shared store as the other tests expect
    other = {
        "designs": ["radix"],
        "workloads": ["gups"],
        "footprint": "16MiB",
        "refs": "20000",
        "seeds": [99],
    }
    api.sweep(other, db, workers=1)
    assert len(api.results(db)) == 13
    assert len(api.results(db, spec=spec)) == 12
    assert api.results(db, spec=other)["seed"].tolist() == [99]
    out = xlat("results", "--db", str(db), "--spec", str(spec), "--format", "csv").stdout
    assert len(out.strip().split("\n")) == 13 and ",99," not in out


def test_results_name_an_unknown_column_with_the_closest_one(small_db):
    _, db, _ = small_db
    proc = xlat("results", "--db", str(db), "--where", "desgn=radix", check=False)
    assert proc.returncode == 2
    assert "desgn" in proc.stderr and "'design'" in proc.stderr and "Traceback" not in proc.stderr


def test_a_trace_is_a_sweep_axis_and_its_rows_carry_the_file_and_its_sha256(tmp_path):
    import hashlib

    trace = ROOT / "tests" / "data" / "sort.xlat"
    spec = write(
        tmp_path / "t.toml",
        'designs = ["radix", "ideal"]\nworkloads = ["gups"]\n'
        f'traces = ["{trace}"]\nfootprint = "16MiB"\nrefs = "20000"\n',
    )
    db = tmp_path / "r.duckdb"
    xlat("sweep", str(spec), "--db", str(db), "--workers", "2")
    df = api.results(db)
    assert len(df) == 4 and (df["status"] == "ok").all()
    traced = df[df["workload"] == "sort.xlat"]
    assert len(traced) == 2
    assert (traced["trace"] == str(trace)).all()
    assert (traced["trace_sha256"] == hashlib.sha256(trace.read_bytes()).hexdigest()).all()
    rec = json.loads(traced.iloc[0]["record_json"])
    assert rec["trace"]["sha256"] == traced.iloc[0]["trace_sha256"]
    assert df[df["workload"] == "gups"]["trace_sha256"].isna().all()


def test_a_missing_trace_file_is_a_spec_error_naming_it(tmp_path):
    spec = write(tmp_path / "t.toml", 'designs = ["radix"]\ntraces = ["nope.xlat"]\n')
    proc = xlat("sweep", str(spec), "--dry-run", check=False)
    assert proc.returncode == 2
    assert "nope.xlat" in proc.stderr and "not found" in proc.stderr


def test_a_failed_run_is_stored_with_its_error_and_never_as_data(tmp_path):
    spec = write(
        tmp_path / "oom.toml",
        """\
designs = ["radix"]
workloads = ["gups"]
footprint = "32MiB"
refs = "20000"
[set]
"os.phys_mem_bytes" = ["16MiB", "1GiB"]
""",
    )
    db = tmp_path / "r.duckdb"
    proc = xlat("sweep", str(spec), "--db", str(db), "--workers", "2", check=False)
    assert proc.returncode == 1  # some run failed
    assert "1 ran ok" in proc.stderr and "1 failed" in proc.stderr
    failed = api.results(db, status="failed")
    assert len(failed) == 1
    row = failed.iloc[0]
    # Refused up front (workloads::check_fits), naming both sizes, instead of failing mid-run.
    assert "does not fit the simulated machine's memory" in row["error"]
    assert "os.phys_mem_bytes = 16MiB" in row["error"]
    assert failed[["record_json", "walk.count", "timing.cycles"]].isna().all(axis=None)
    assert len(api.results(db)) == 1  # the default view holds data only
    shown = xlat("results", "--db", str(db), "--status", "failed").stdout
    assert "does not fit" in shown
    # A rerun retries the failure (still failing: the same row is replaced, never duplicated).
    again = xlat("sweep", str(spec), "--db", str(db), "--workers", "1", check=False)
    assert "1 already stored" in again.stderr and "1 failed" in again.stderr
    assert len(Store(db).query("SELECT * FROM runs")) == 2


def test_a_bad_spec_exits_2_naming_the_file_and_the_problem(tmp_path):
    cases = {
        "typo.toml": ('desings = ["radix"]\nworkloads = ["gups"]\n', "did you mean 'designs'"),
        "broken.toml": ('designs = ["radix"\n', "not valid TOML"),
        "design.toml": ('designs = ["radx"]\nworkloads = ["gups"]\n', "did you mean 'radix'"),
        "key.toml": ('workloads = ["gups"]\n[set]\n"radix.levls" = [4]\n', "radix.levels"),
        "noload.toml": ('designs = ["radix"]\n', "'workloads' is missing"),
    }
    for name, (text, message) in cases.items():
        spec = write(tmp_path / name, text)
        proc = xlat("sweep", str(spec), "--db", str(tmp_path / "r.duckdb"), check=False)
        assert proc.returncode == 2, (name, proc.stderr)
        assert str(spec) in proc.stderr and message in proc.stderr, (name, proc.stderr)
        assert "Traceback" not in proc.stderr
    missing = xlat("sweep", str(tmp_path / "nope.toml"), check=False)
    assert missing.returncode == 2 and "nope.toml" in missing.stderr


def test_a_record_key_added_later_becomes_a_column_and_older_rows_read_null(tmp_path):
    store = Store(tmp_path / "r.duckdb")
    store.commit([{"config_hash": "a", "status": "ok", "tlb.l1_mpki": 1}])
    store.commit([{"config_hash": "b", "status": "ok", "tlb.l1_mpki": 2.5, "new.figure": 7}])
    df = store.query("SELECT * FROM runs ORDER BY config_hash")
    assert df["tlb.l1_mpki"].tolist() == [1.0, 2.5]  # the integer column widened to DOUBLE
    assert df["new.figure"].isna().tolist() == [True, False]
    store.commit([{"config_hash": "a", "status": "ok", "tlb.l1_mpki": 3}])  # replaces, no dup
    assert store.query("SELECT count(*) AS n FROM runs")["n"][0] == 2


# --- The kill test ---------------------------------------------------------------------------

KILL_SPEC = """\
designs = ["radix", "ideal"]
workloads = ["gups", "stream", "bfs"]
footprint = "64MiB"
refs = "3M"
seeds = [7]
[set]
"os.thp" = ["never", "always"]
"""


def session_processes(sid: int) -> dict[int, str]:
    """pid -> command line of every live process in session ``sid`` (Linux /proc)."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[3]) == sid and fields[0] != "Z":
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
                out[int(entry.name)] = cmd
        except (OSError, ValueError, IndexError):
            continue
    return out


def kill_session(sid: int) -> None:
    for pid in session_processes(sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 10
    while session_processes(sid) and time.monotonic() < deadline:
        time.sleep(0.1)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_killing_workers_and_the_driver_mid_sweep_leaves_one_row_per_run_equal_to_serial(
    tmp_path,
):
    spec = write(tmp_path / "kill.toml", KILL_SPEC)
    db = tmp_path / "r.duckdb"
    runs = expand(load_spec(spec))
    driver = subprocess.Popen(
        [sys.executable, "-m", "xlat", "sweep", str(spec), "--db", str(db), "--workers", "2"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    killed_worker = None
    finished = 0
    try:
        for line in driver.stderr:
            if " ok (" not in line and "FAILED" not in line:
                continue
            finished += 1
            if finished == 2:
                # SIGKILL a worker in the middle of a run: its run is stored as failed.
                deadline = time.monotonic() + 5
                while killed_worker is None and time.monotonic() < deadline:
                    busy = [
                        p
                        for p, c in session_processes(driver.pid).items()
                        if c.startswith("ray::execute")
                    ]
                    if busy:
                        killed_worker = busy[0]
                        os.kill(killed_worker, signal.SIGKILL)
                    time.sleep(0.01)
            if finished == 5:
                kill_session(driver.pid)  # the driver, Ray's processes and its workers
                break
    finally:
        kill_session(driver.pid)
        driver.wait(timeout=30)
        driver.stderr.close()
    assert killed_worker is not None, "no busy Ray worker found to kill"
    assert finished == 5, "the sweep ended before it could be killed; make the runs longer"
    assert driver.returncode == -signal.SIGKILL

    partial = Store(db).query("SELECT config_hash, status, error FROM runs")
    assert 5 <= len(partial) < len(runs) and partial["config_hash"].is_unique
    # The killed worker's run is stored as failed with the reason after one attempt (a run that
    # kills its worker would do it again); the rerun below runs it again.
    failed = partial[partial["status"] == "failed"]
    assert len(failed) <= 1 and all("Worker" in e or "died" in e for e in failed["error"])
    ok = int((partial["status"] == "ok").sum())

    rerun = xlat("sweep", str(spec), "--db", str(db), "--workers", "2")
    assert f"{ok} already stored" in rerun.stderr
    assert f"{len(runs) - ok} ran ok" in rerun.stderr

    final = Store(db).query("SELECT config_hash, status, record_json FROM runs")
    assert len(final) == len(runs) == 12 and final["config_hash"].is_unique
    assert set(final["config_hash"]) == {r.config_hash for r in runs}
    assert set(final["status"]) == {"ok"}
    stored = dict(zip(final["config_hash"], final["record_json"]))
    for run in runs:
        serial = api.run(**run.kwargs())
        assert without_wall_clock(json.loads(stored[run.config_hash])) == (
            without_wall_clock(serial)
        ), run.label()
    assert all(k.startswith("sim.") for k in WALL_CLOCK_KEYS)


def test_ctrl_c_stops_the_sweep_keeps_what_finished_and_exits_130(tmp_path):
    spec = write(tmp_path / "kill.toml", KILL_SPEC)
    db = tmp_path / "r.duckdb"
    driver = subprocess.Popen(
        [sys.executable, "-m", "xlat", "sweep", str(spec), "--db", str(db), "--workers", "2"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        finished = 0
        for line in driver.stderr:
            finished += " ok (" in line
            if finished == 2:
                driver.send_signal(signal.SIGINT)
                break
        rest = driver.stderr.read()
        driver.wait(timeout=60)
        time.sleep(1)
        leftover = session_processes(driver.pid)
    finally:
        kill_session(driver.pid)
        driver.stderr.close()
    assert driver.returncode == 130, rest
    assert "interrupted" in rest and "Rerun the same command" in rest
    assert "Traceback" not in rest
    assert leftover == {}  # Ray shut down with the driver
    rows = Store(db).query("SELECT config_hash, status FROM runs")
    assert 2 <= len(rows) < 12 and rows["config_hash"].is_unique and set(rows["status"]) == {"ok"}


# --- An existing Ray cluster (--address) -----------------------------------------------------

#: A one-node Ray cluster on loopback only: Ray would otherwise advertise the machine's
#: outward address, and its token authentication is off for this private test cluster.
CLUSTER_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_AUTH_MODE": "disabled",
    "RAY_USAGE_STATS_ENABLED": "0",
}


def free_port() -> int:
    """A TCP port free on loopback now (from the ephemeral range, outside Ray's worker ports)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, seconds: float = 60.0) -> None:
    import socket

    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                pytest.fail(f"nothing listens on 127.0.0.1:{port} after {seconds} s")
            time.sleep(0.2)


def test_the_same_sweep_on_an_existing_ray_cluster_stores_identical_rows(small_db, tmp_path):
    spec, local_db, _ = small_db
    env = {**os.environ, **CLUSTER_ENV}
    gcs_port, client_port = free_port(), free_port()
    ray_bin = Path(sys.executable).with_name("ray")
    head = subprocess.Popen(
        [
            str(ray_bin),
            "start",
            "--head",
            "--block",
            "--node-ip-address",
            "127.0.0.1",
            "--port",
            str(gcs_port),
            "--ray-client-server-port",
            str(client_port),
            "--num-cpus",
            "2",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        for line in head.stdout:
            if "will now block" in line:
                break
        else:
            pytest.fail("the Ray head node did not start")
        wait_for_port(client_port)  # the client server starts after `ray start` reports ready
        db = tmp_path / "cluster.duckdb"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "xlat",
                "sweep",
                str(spec),
                "--db",
                str(db),
                "--address",
                f"ray://127.0.0.1:{client_port}",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert f"12 ran ok on ray://127.0.0.1:{client_port}" in proc.stderr
        Path(tmp_path / "cluster-sweep.log").write_text(proc.stderr)
    finally:
        kill_session(head.pid)
        head.wait(timeout=30)
        head.stdout.close()
    remote = Store(db).query("SELECT config_hash, record_json FROM runs")
    local = Store(local_db).query("SELECT config_hash, record_json FROM runs")
    assert set(remote["config_hash"]) == set(local["config_hash"]) and len(remote) == 12
    local_recs = dict(zip(local["config_hash"], local["record_json"]))
    for h, rec in zip(remote["config_hash"], remote["record_json"]):
        assert without_wall_clock(json.loads(rec)) == without_wall_clock(json.loads(local_recs[h]))


def test_an_unreachable_cluster_address_exits_2_quickly(tmp_path):
    spec = write(tmp_path / "s.toml", SMALL_SPEC)
    t0 = time.monotonic()
    proc = xlat(
        "sweep",
        str(spec),
        "--db",
        str(tmp_path / "r.duckdb"),
        "--address",
        "ray://127.0.0.1:1",
        check=False,
    )
    assert proc.returncode == 2 and "cannot reach the Ray cluster" in proc.stderr
    assert "Traceback" not in proc.stderr and time.monotonic() - t0 < 30


def test_a_sweep_that_keeps_ray_leaves_it_running_and_the_next_sweep_reuses_it(tmp_path):
    import ray
    from xlat.sweeps import run_sweep

    one = load_spec(write(tmp_path / "a.toml", 'designs = ["radix"]\nworkloads = ["gups"]\n'
                          'footprint = "16MiB"\nrefs = "5000"\n'))  # fmt: skip
    two = load_spec(write(tmp_path / "b.toml", 'designs = ["ideal"]\nworkloads = ["gups"]\n'
                          'footprint = "16MiB"\nrefs = "5000"\n'))  # fmt: skip
    db = tmp_path / "r.duckdb"
    assert not ray.is_initialized()
    try:
        assert run_sweep(one, db, workers=1, keep_ray=True)["ok"] == 1
        assert ray.is_initialized()  # kept for the next sweep (xlat reproduce's experiments)
        node = ray.get_runtime_context().get_node_id()
        assert run_sweep(two, db, workers=1)["ok"] == 1
        # The second sweep ran on the same Ray and, not having started it, left it running.
        assert ray.is_initialized() and ray.get_runtime_context().get_node_id() == node
    finally:
        ray.shutdown()
    assert run_sweep(load_spec(tmp_path / "a.toml"), db, workers=1)["skipped"] == 1


def _sweep_of_gups(tmp_path: Path, designs: list[str]) -> tuple[Path, Path]:
    """A small sweep of ``designs`` on GUPS, run into ``tmp_path/r.duckdb``: (spec, store)."""
    names = ", ".join(f'"{d}"' for d in designs)
    spec = write(tmp_path / "one.toml", f'designs = [{names}]\nworkloads = ["gups"]\n'
                 'footprint = "16MiB"\nrefs = "5000"\n')  # fmt: skip
    db = tmp_path / "r.duckdb"
    xlat("sweep", str(spec), "--db", str(db), "--workers", "1")
    return spec, db


def test_a_stored_run_of_another_model_version_runs_again_and_one_of_none_counts_as_version_one(
    tmp_path,
):
    import duckdb

    spec, db = _sweep_of_gups(tmp_path, ["radix"])
    # The run's model version: a one-core run keeps the last that moved one-core runs.
    current = api.model_version_of(1, 1)
    assert Store(db).query("SELECT model_version FROM runs")["model_version"].tolist() == [current]

    def set_version(value) -> None:
        con = duckdb.connect(str(db))
        con.execute("UPDATE runs SET model_version = ?", [value])
        con.close()

    set_version(current + 1)  # a row of another model: run again, and said so
    again = xlat("sweep", str(spec), "--db", str(db), "--workers", "1")
    assert "1 runs, 0 already stored, 1 ran ok" in again.stderr
    assert f"1 stored runs were made by model version {current + 1}" in again.stderr
    assert Store(db).query("SELECT model_version FROM runs")["model_version"].tolist() == [current]
    # A row from before records carried a model version counts as version 1's (reused while a
    # run's version is 1: `plan_reuse`'s doctest); model version 3 moved one-core runs, so it
    # runs again, and the note says so.
    assert current > 1
    set_version(None)
    again = xlat("sweep", str(spec), "--db", str(db), "--workers", "1")
    assert "1 runs, 0 already stored, 1 ran ok" in again.stderr
    assert "1 stored runs were made by model version 1" in again.stderr


def test_workload_set_gives_one_workload_its_own_keys_and_refuses_what_it_cannot_set():
    from xlat.sweeps import SpecError, parse_spec

    spec = {
        "designs": ["radix"], "workloads": ["gups", "stream"], "footprint": "64MiB",
        "refs": "20k", "set": {"os.thp": "always"},
        "workload_set": {"gups": {"os.free_blocks": "2MiB*10,1MiB*60"}},
    }  # fmt: skip
    runs = {r.workload: r for r in expand(parse_spec(spec))}
    assert dict(runs["gups"].params) == {"os.thp": "always", "os.free_blocks": "2MiB*10,1MiB*60"}
    assert dict(runs["stream"].params) == {"os.thp": "always"}
    assert runs["gups"].config["os"]["free_blocks"] == "2MiB*10,1MiB*60"
    for bad, why in [
        ({"bfs": {"os.thp": "never"}}, "not among the workloads"),
        ({"gups": {"os.thp": "never"}}, "which the grid or \\[set\\] sets"),
        ({"gups": {"workload.footprint": "1GiB"}}, "which the grid or \\[set\\] sets"),
        ({"gups": {"os.free_blocks": ["2MiB*1"]}}, "must be one scalar"),
    ]:
        with pytest.raises(SpecError, match=why):
            parse_spec({**spec, "workload_set": bad})


def test_speedups_between_designs_whose_runs_a_design_scoped_change_left_apart_are_one_model(
    tmp_path,
):
    import duckdb

    # Model version 6 moved LVM's runs only: a build of versions 6-8 gave radix's runs version 5,
    # the same model, so the speedup of LVM over radix is allowed (`make demo` compared every
    # design this way). Today's build gives both version 11 (it moved every run): the store is
    # made to hold what a version-8 build wrote.
    _, db = _sweep_of_gups(tmp_path, ["radix", "lvm"])
    from xlat import _core

    assert _core.model_version_as_of(1, 1, "lvm", "gups", 8) == 6
    assert _core.model_version_as_of(1, 1, "radix", "gups", 8) == 5
    con = duckdb.connect(str(db))
    con.execute("UPDATE runs SET model_version = CASE design WHEN 'lvm' THEN 6 ELSE 5 END")
    con.close()
    versions = Store(db).query("SELECT design, model_version FROM runs ORDER BY design")
    assert versions["model_version"].tolist() == [6, 5]
    out = xlat("results", "--db", str(db), "--speedup-over", "radix")
    assert "lvm" in out.stdout
    # Two versions a scope does not explain (radix 5 against LVM 9) are two models.
    con = duckdb.connect(str(db))
    con.execute("UPDATE runs SET model_version = 9 WHERE design = 'lvm'")
    con.close()
    refused = xlat("results", "--db", str(db), "--speedup-over", "radix", check=False)
    assert refused.returncode != 0 and "model versions 5, 9" in refused.stderr


def _default_config() -> dict:
    import tomllib
    from xlat import _core

    return tomllib.loads(_core.resolve_config(None, "", []))


def test_a_configuration_key_added_at_its_default_leaves_every_stored_run_key_unchanged(
    monkeypatch,
):
    import xlat.store as store

    # Pretend os.free_blocks came after the run keys' list was frozen.
    frozen = store._run_key_keys() - {"os.free_blocks"}
    monkeypatch.setattr(store, "_run_key_keys", lambda: frozen)
    with_key = _default_config()
    without_key = json.loads(json.dumps(with_key))
    del without_key["os"]["free_blocks"]
    key = store.config_hash(with_key, "radix", "gups", None, 1)
    assert key == store.config_hash(without_key, "radix", "gups", None, 1)
    with_key["os"]["free_blocks"] = "2MiB*4"
    assert key != store.config_hash(with_key, "radix", "gups", None, 1)


def test_run_keys_of_todays_configurations_hash_the_whole_configuration_as_stored_runs_did():
    import hashlib

    from xlat.records import flatten
    from xlat.store import _run_key_keys, canonical_json, config_hash

    cfg = _default_config()
    cfg["os"]["thp"] = "always"
    # A stored run's configuration had only the keys that existed then (the frozen list); keys
    # added since, at their defaults, are what it lacked.
    frozen = _run_key_keys()
    stored: dict = {}
    for key, value in flatten(cfg).items():
        if key in frozen:
            node = stored
            *parents, leaf = key.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = value
    added = set(flatten(cfg)) - frozen
    assert added, "no key was added since the list was frozen: compare the whole configuration"
    whole = {"config": stored, "design": "lvm", "workload": "gups", "trace_sha256": None, "seed": 3}
    expected = hashlib.sha256(canonical_json(whole).encode()).hexdigest()
    assert config_hash(cfg, "lvm", "gups", None, 3) == expected


def test_the_frozen_list_of_run_key_configuration_keys_is_never_edited():
    import hashlib

    from xlat._data import data_dir
    from xlat.store import RUN_KEY_CONFIG_KEYS_FILE

    text = (data_dir() / RUN_KEY_CONFIG_KEYS_FILE).read_bytes()
    # Stored runs' keys were computed with exactly these 484 keys (2026-11-30).
    assert len(text.splitlines()) == 484
    assert hashlib.sha256(text).hexdigest() == (
        "d8d201c8803e17b38c369ad421323dd3838f0de2199886c1bb6e40b95997cb51"
    )
