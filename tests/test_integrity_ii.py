"""Result integrity II (issue 37): non-finite figures, trace rows under a made-up workload,
unbounded grids, full disks, the last tracebacks, silent or false messages.

Sections follow the issue's numbered items; each test failed before the fix it names. Sweeps
are stored without Ray where the item allows (each run executed in-process and committed with
the code the Ray driver uses), which keeps them fast.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
import xlat as api
from conftest import ROOT, xlat
from test_integrity import META, TINY, store_runs, write_champsim
from xlat import _core
from xlat.query import check_store, results
from xlat.run import resolve_config
from xlat.store import Store, StoreError, frame_from_records
from xlat.sweeps import SpecError, execute, expand, grid_size, iter_runs, make_row, parse_spec
from xlat.values import FLOAT_LIMIT, bad_figures, check_inputs, key_types

SORT = str(ROOT / "tests" / "data" / "sort.xlat")
RUN = ["run", "--refs", "1k", "--footprint", "1MiB"]
FLOAT_KEYS = sorted(k for k, t in key_types().items() if t is float)


def clean_error(*args: str, message: str, code: int = 2) -> subprocess.CompletedProcess:
    """``xlat ARGS`` exits ``code`` with one ``xlat: error:`` line holding ``message``."""
    proc = xlat(*args, check=False)
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr and "usage:" not in proc.stderr, proc.stderr
    assert message in proc.stderr, proc.stderr
    return proc


# 1. Non-finite figures ------------------------------------------------------------------------


def test_there_are_float_keys_and_their_defaults_pass_the_value_rule():
    assert len(FLOAT_KEYS) > 20 and "timing.base_cpi" in FLOAT_KEYS
    check_inputs([], [("defaults", _core.resolve_config(None, "defaults", []))])


@pytest.mark.parametrize("key", FLOAT_KEYS)
def test_every_float_key_refuses_infinity_nan_and_a_value_beyond_the_limit(key):
    for text in ("inf", "+inf", "-inf", "nan", "1e308", str(FLOAT_LIMIT * 10), "1" + "0" * 400):
        with pytest.raises(_core.XlatError, match=f"'{key}' must be a finite number"):
            resolve_config(set={key: text})
    with pytest.raises(_core.XlatError, match=f"p.toml: '{key}' must be a finite number"):
        section, _, field = key.rpartition(".")
        check_inputs([], [("p.toml", f"[{section}]\n{field} = inf\n")])


def test_run_with_an_infinite_base_cpi_is_one_error_line_and_prints_no_record():
    args = [*RUN, "--set", "timing.model=simple", "--set", "timing.base_cpi=inf"]
    proc = clean_error(*args, message="'timing.base_cpi' must be a finite number")
    assert proc.stdout == ""
    proc = clean_error(*args, "--json", message="'timing.base_cpi' must be a finite number")
    assert proc.stdout == ""


def test_a_sweep_over_non_finite_base_cpi_values_is_refused_before_any_run(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(
        'designs = ["radix"]\nworkloads = ["gups"]\nfootprint = "1MiB"\nrefs = "2000"\n'
        '[set]\n"timing.model" = ["simple"]\n"timing.base_cpi" = [inf, 1e308, 1.0]\n'
    )
    db = tmp_path / "r.duckdb"
    clean_error("sweep", str(spec), "--db", str(db), message="'timing.base_cpi' must be a finite")
    assert not db.exists()


def test_a_record_with_a_non_finite_figure_is_stored_as_a_failure_naming_the_figure(tmp_path):
    (run,) = expand(parse_spec({"designs": ["radix"], "workloads": ["gups"], **TINY}))
    record = api.run(**run.kwargs())
    record["timing"]["cycles"] = None  # what the core writes for an infinite figure
    row = make_row(run, {"record": record, "error": None}, META)
    assert row["status"] == "failed" and "timing.cycles" in row["error"]
    assert row["record_json"] is None and row.get("timing.cycles") is None
    assert bad_figures({"timing": {"cycles": float("nan"), "ipc": None}}) == ["timing.cycles"]


def test_a_null_ratio_is_no_value_but_a_null_count_or_cycle_figure_is_not_finite():
    rec = api.run("ecpt", "gups", "1MiB", 2000)
    assert rec["ecpt"]["pmd_cwc_hit_rate"] is None  # no lookups: a rate without a value
    assert bad_figures(rec) == []
    rec["walk"]["cycles"] = None
    assert bad_figures(rec) == ["walk.cycles"]


# 2. Trace rows labelled with the trace --------------------------------------------------------


@pytest.fixture(scope="module")
def mixed_db(tmp_path_factory):
    """A store with gups runs (1 MiB) and runs of the trace sort.xlat, as a sweep stores them,
    under THP (restrictive_only maps no 2 MiB page: its peak data mapped differs from radix's)."""
    db = tmp_path_factory.mktemp("labels") / "r.duckdb"
    spec = {
        "designs": ["radix", "restrictive_only"],
        "workloads": ["gups"],
        "traces": [SORT],
        "set": {"os.thp": "always"},
        **TINY,
    }
    store_runs(db, expand(parse_spec(spec)))
    return db


def test_trace_rows_carry_the_traces_name_and_own_footprint_not_the_default_workloads(mixed_db):
    df = results(mixed_db)
    trace = df[df["trace"].notna()]
    assert len(trace) == 2
    assert set(trace["config.workload.name"]) == {"sort.xlat"}
    assert set(trace["config.workload.footprint"]) == {581632}  # `xlat trace info` of sort.xlat
    assert (trace["config.workload.footprint"] == trace["trace.footprint_bytes"]).all()
    assert (trace["config.workload.footprint"] != 1 << 30).all()
    gups = results(mixed_db, where=["workload.name=gups"])
    assert set(gups["workload"]) == {"gups"} and gups["trace"].isna().all()


def test_the_speedup_table_never_groups_trace_rows_under_the_default_footprint(mixed_db):
    table = results(mixed_db, speedup_over="radix")
    assert list(table.index) == [("gups", 1 << 20), ("sort.xlat", 581632), ("geomean", 581632),
                                 ("geomean", 1 << 20)]  # fmt: skip
    assert table.notna().all().all()  # both designs on one row per point: a design-free label


def test_two_partial_stores_merge_into_the_whole_store_a_rerun_resumes_from(mixed_db, tmp_path):
    # Two machines each ran part of a sweep: the second also holds a run that failed there.
    rows = {h: Store(mixed_db).query(f"SELECT * FROM runs WHERE config_hash = '{h}'")
            for h in sorted(Store(mixed_db).stored_hashes())}  # fmt: skip
    hashes = sorted(rows)
    first, second = tmp_path / "first.duckdb", tmp_path / "second.duckdb"
    for part, db in ((hashes[:2], first), (hashes[2:], second)):
        Store(db).commit(
            {k: v for k, v in rows[h].iloc[0].to_dict().items() if v == v and v is not None}
            for h in part
        )
    Store(second).commit([{"config_hash": hashes[0], "status": "failed", "error": "killed"}])
    proc = xlat("results", "--db", str(first), "--merge", str(second))
    assert "2 run(s) added, 0 already stored, 1 failed there and stored here (kept)" in (
        proc.stderr
    )
    # What a sweep's or `xlat reproduce`'s resume reads (key, status, model version, build):
    # the merged store's is the whole one's, so a rerun runs nothing.
    assert Store(first).stored() == Store(mixed_db).stored()
    assert check_store(first) == (4, [])
    records = "SELECT config_hash, record_json FROM runs ORDER BY config_hash"
    assert Store(first).query(records).equals(Store(mixed_db).query(records))
    missing = xlat("results", "--db", str(first), "--merge", str(tmp_path / "none"), check=False)
    assert missing.returncode != 0 and "no result database" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_results_check_passes_a_good_store_and_lists_a_row_whose_labels_disagree(
    mixed_db, tmp_path
):
    assert check_store(mixed_db) == (4, [])
    proc = xlat("results", "--db", str(mixed_db), "--check")
    assert "4 rows checked" in proc.stderr
    bad = tmp_path / "bad.duckdb"
    bad.write_bytes(Path(mixed_db).read_bytes())
    con = duckdb.connect(str(bad))
    # What stores made before the fix hold: the trace rows under the default workload.
    con.execute(
        "UPDATE runs SET \"config.workload.name\" = 'gups', "
        '"config.workload.footprint" = 1073741824 WHERE trace IS NOT NULL'
    )
    con.close()
    proc = xlat("results", "--db", str(bad), "--check", check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 4, proc.stdout  # two rows, name and footprint each
    assert all("its record says" in ln for ln in lines)
    assert "config.workload.name is 'gups', its record says 'sort.xlat'" in proc.stdout


def test_a_run_of_several_traces_is_labelled_with_their_names_not_the_default_workload():
    recs = api.compare(["radix"], trace=[SORT, SORT], refs=1000, set={"sim.cores": 2})
    df = frame_from_records(recs)
    assert df.loc[0, "workload"] == "sort.xlat,sort.xlat"
    assert df.loc[0, "config.workload.name"] == "sort.xlat,sort.xlat"
    assert df.loc[0, "trace_sha256"].count(",") == 1


# 3. Grids counted before they are built -------------------------------------------------------

BIG_SET = {
    "radix.pwc_entries": [4 * i for i in range(10)],
    "tlb.l2.entries": [12 * i for i in range(1, 11)],
    "sim.switch_window_refs": list(range(1, 11)),
    "os.fmfi_order": list(range(10)),
    "mem.l2.latency_cycles": list(range(1, 11)),
    "tlb.l1_4k.entries": [4 * i for i in range(1, 11)],
    "os.khugepaged.pages_to_scan": [512 * i for i in range(1, 11)],
    "lvm.x1": [float(i) for i in range(1, 11)],
    "os.swap.swap_in_cycles": list(range(1, 11)),
}


def big_spec(path: Path, extra: str = "") -> Path:
    lines = ['designs = ["radix"]', 'workloads = ["gups"]', extra, "[set]"]
    lines += [f'"{k}" = {json.dumps(v)}' for k, v in BIG_SET.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_nine_by_ten_grid_is_refused_at_once_with_its_size(tmp_path):
    spec = big_spec(tmp_path / "big.toml")
    start = time.monotonic()
    proc = clean_error(
        "sweep", str(spec), "--dry-run", "--db", str(tmp_path / "r.duckdb"), message="1,000,000,000"
    )
    assert time.monotonic() - start < 30
    assert "more than the limit of 10,000" in proc.stderr and "--max-runs" in proc.stderr
    assert proc.stdout == ""


def test_the_limit_is_raised_by_the_spec_or_the_command_line():
    spec = {"designs": ["radix", "ideal"], "workloads": ["gups"], "seeds": [1, 2, 3], **TINY}
    assert grid_size(parse_spec(spec)) == 6
    with pytest.raises(SpecError, match="the grid has 6 runs .* more than the limit of 5"):
        expand(parse_spec({**spec, "max_runs": 5}))
    assert len(expand(parse_spec({**spec, "max_runs": 6}))) == 6
    assert len(expand(parse_spec({**spec, "max_runs": 5}), max_runs=0)) == 6


def test_dry_run_of_an_unlimited_grid_streams_its_first_runs_without_building_the_grid(tmp_path):
    runs = iter_runs(parse_spec({"designs": ["radix"], "workloads": ["gups"], "set": BIG_SET}), 0)
    first = [next(runs) for _ in range(3)]
    assert [r.params[-1] for r in first] == [("os.swap.swap_in_cycles", v) for v in (1, 2, 3)]
    spec = big_spec(tmp_path / "big.toml")
    proc = subprocess.Popen(
        [sys.executable, "-m", "xlat", "sweep", str(spec), "--dry-run", "--max-runs", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = [proc.stdout.readline() for _ in range(5)]
        rss_kib = int(
            next(
                ln.split()[1]
                for ln in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
                if ln.startswith("VmRSS:")
            )
        )
    finally:
        proc.kill()
        proc.communicate()
    assert all("new" in ln and "radix gups" in ln for ln in lines), lines
    assert rss_kib < 1 << 20, f"{rss_kib} KiB"  # 1 GiB: it grew by 200 MB/s before


# 4. Full disks ----------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 16 MiB tmpfs mounted at tmp_path/disk (root only; skipped where mounting is refused)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def fill(disk: Path) -> None:
    """Fill the file system of ``disk`` to the last byte."""
    try:
        fh = open(disk / "filler", "ab", buffering=0)  # noqa: SIM115 - closed below
    except OSError:
        return  # full already
    with fh:
        for block in (65536, 1):
            try:
                while True:
                    fh.write(b"\0" * block)
                    fh.flush()
            except OSError:
                pass


def test_a_store_whose_disk_fills_is_a_store_error_naming_it_and_keeps_the_committed_rows(
    small_disk,
):
    spec = {"designs": ["radix", "ideal"], "workloads": ["gups"], "seeds": [1, 2, 3], **TINY}
    runs = expand(parse_spec(spec))
    db = small_disk / "r.duckdb"
    store_runs(db, runs[:2])
    fill(small_disk)
    rows = [make_row(r, execute(r.kwargs()), META) for r in runs[2:]]
    with pytest.raises(StoreError) as err:
        for row in rows:
            Store(db).commit([row])
    assert str(db) in str(err.value) and "No space left on device" in str(err.value)
    assert "cannot rollback" not in str(err.value)
    kept = set(results(db)["config_hash"])
    assert {runs[0].config_hash, runs[1].config_hash} <= kept


def test_a_sweep_whose_disk_fills_stops_with_one_error_line(small_disk, tmp_path):
    db = small_disk / "r.duckdb"
    first = {"designs": ["radix"], "workloads": ["gups"], **TINY}
    store_runs(db, expand(parse_spec(first)))
    fill(small_disk)
    spec = tmp_path / "s.toml"
    spec.write_text(
        'designs = ["radix", "ideal", "ecpt"]\nworkloads = ["gups"]\nfootprint = "1MiB"\n'
        'refs = "2000"\nseeds = [1, 2]\n'
    )
    proc = clean_error(
        "sweep", str(spec), "--db", str(db), "--workers", "1", message="No space left on device"
    )
    assert str(db) in proc.stderr and "cannot rollback" not in proc.stderr
    assert "rerun the same command" in proc.stderr
    assert len(results(db)) >= 1


def test_a_report_on_a_full_disk_leaves_the_earlier_report_untouched(small_disk, mixed_db):
    out = small_disk / "report"
    xlat("report", str(mixed_db), "--out", str(out))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert "results.json" in before
    fill(small_disk)
    proc = clean_error("report", str(mixed_db), "--out", str(out), message="No space left")
    assert f"--out {out}" in proc.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no temporary left either
    table = small_disk / "t.csv"
    (small_disk / "filler").unlink()
    xlat("results", "--db", str(mixed_db), "--output", str(table))
    good = table.read_bytes()
    fill(small_disk)
    for name in ("t.csv", "t.parquet"):
        clean_error("results", "--db", str(mixed_db), "--output", str(small_disk / name),
                    message="cannot write")  # fmt: skip
    assert table.read_bytes() == good


# 5. No traceback on ordinary mistakes -----------------------------------------------------------


@pytest.fixture
def read_only_dir(tmp_path):
    """A read-only file system at tmp_path/ro (root ignores a folder's mode bits)."""
    mnt = tmp_path / "ro"
    mnt.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        if os.geteuid() == 0:
            pytest.skip(f"cannot mount a read-only tmpfs here: {proc.stderr.strip()}")
        mnt.chmod(0o555)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.mark.parametrize("name", ["t.csv", "t.json", "t.parquet"])
def test_results_output_into_a_read_only_folder_is_a_clean_error(read_only_dir, mixed_db, name):
    clean_error(
        "results", "--db", str(mixed_db), "--output", str(read_only_dir / name),
        message=f"{read_only_dir / name}: cannot write",
    )  # fmt: skip


def test_snapshot_output_into_a_read_only_folder_is_a_clean_error(read_only_dir):
    target = read_only_dir / "s.json"
    clean_error("snapshot", str(os.getpid()), "-o", str(target), message=f"{target}: cannot write")


@pytest.mark.parametrize(
    "content, message",
    [
        ("[1, 2]", "holds a list, not a snapshot object"),
        ('{"pid": 1}', "no 'vmas' list"),
        ('{"vmas": [{"start": 0}]}', "vmas[0] has no whole-number 'start' and 'end'"),
        (
            '{"vmas": [{"start": 0, "end": 4096, "runs": [[0, 1, 0, 0]]}], "pfns_known": true}',
            "vmas[0].runs",
        ),  # fmt: skip
    ],
)
def test_snapshot_analyze_of_a_json_that_is_no_snapshot_is_a_clean_error(
    tmp_path, content, message
):
    path = tmp_path / "s.json"
    path.write_text(content)
    clean_error("snapshot", "--analyze", str(path), message=message)


def test_the_last_tracebacks_are_clean_errors(tmp_path):
    clean_error(*RUN, "--cpu", "a" * 300, message="unknown CPU preset")
    clean_error(*RUN, "--preset", "/tmp/" + "p" * 300 + ".toml", message="File name too long")
    clean_error("reproduce", "mehpt", "--workers", "-1", message="--workers must be at least 1")
    deep = tmp_path / "deep.toml"
    deep.write_text('designs = ["radix"]\nworkloads = ["gups"]\nname = ' + "[" * 5000 + "]" * 5000)
    clean_error("sweep", str(deep), "--dry-run", message="nested too deeply")


def test_an_unexpected_error_is_one_line_and_its_traceback_shows_only_with_debug(
    monkeypatch, capsys
):
    from xlat import cli, commands

    def broken(args):
        raise KeyError("boom")

    monkeypatch.setitem(commands.COMMANDS, "results", broken)
    assert cli.main(["results"]) == cli.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "internal error" in err and "KeyError: 'boom'" in err and "--debug" in err
    assert cli.main(["results", "--debug"]) == cli.EXIT_INTERNAL
    assert "Traceback" in capsys.readouterr().err

    def full(args):
        raise OSError(28, "No space left on device", "/d/out.json")

    monkeypatch.setitem(commands.COMMANDS, "results", full)
    assert cli.main(["--debug", "results"]) == 1
    assert "xlat: error: /d/out.json: No space left on device" in capsys.readouterr().err


# 6. Silent or false messages --------------------------------------------------------------------


def test_sweep_quiet_prints_the_failed_runs_with_their_errors(tmp_path):
    spec = tmp_path / "s.toml"
    # 32 MiB does not fit a 16 MiB machine: that run fails (and is stored so).
    spec.write_text(
        'designs = ["radix"]\nworkloads = ["gups"]\nfootprint = "32MiB"\nrefs = "2000"\n'
        '[set]\n"os.phys_mem_bytes" = ["16MiB", "1GiB"]\n'
    )
    db = tmp_path / "r.duckdb"
    proc = xlat("sweep", str(spec), "--db", str(db), "--workers", "1", "--quiet", check=False)
    assert proc.returncode == 1, proc.stderr
    assert "FAILED" in proc.stderr and "os.phys_mem_bytes=16MiB" in proc.stderr, proc.stderr
    assert "does not fit" in proc.stderr
    assert "1GiB" not in proc.stderr  # the run that succeeds stays quiet


def write_champsim_without_memory(path: Path, n: int) -> None:
    with open(path, "wb") as fh:
        for i in range(n):
            fh.write(struct.pack("<QBB2B4B2Q4Q", 0x400000 + 4 * i, *[0] * 14))


def test_a_champsim_trace_without_memory_operands_fails_instead_of_giving_zeros(tmp_path):
    trace = tmp_path / "nomem.champsim"
    write_champsim_without_memory(trace, 64)
    clean_error(
        "run", "--trace", str(trace), "--trace-format", "champsim",
        message="produced no memory reference", code=1,
    )  # fmt: skip
    good = tmp_path / "mem.champsim"
    write_champsim(good, list(range(8)))
    assert api.run("radix", trace=str(good), trace_format="champsim")["refs"] > 0


def test_reproduce_refuses_zero_workers_as_sweep_does(tmp_path):
    clean_error("reproduce", "mehpt", "--workers", "0", message="--workers must be at least 1")
    spec = tmp_path / "s.toml"
    spec.write_text('designs = ["radix"]\nworkloads = ["gups"]\n')
    clean_error("sweep", str(spec), "--workers", "0", message="--workers must be at least 1")


def test_a_store_that_lost_its_primary_key_and_holds_a_run_twice_is_refused(mixed_db, tmp_path):
    db = tmp_path / "copy.duckdb"
    db.write_bytes(Path(mixed_db).read_bytes())
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE runs2 AS SELECT * FROM runs")
    con.execute("INSERT INTO runs2 SELECT * FROM runs LIMIT 1")
    con.execute("DROP TABLE runs")
    con.execute("ALTER TABLE runs2 RENAME TO runs")
    con.close()
    for args in (["results", "--db", str(db)], ["report", str(db), "--out", str(tmp_path / "o")]):
        clean_error(*args, message="1 run(s) are stored more than once")
    proc = xlat("results", "--db", str(db), "--check", check=False)
    assert proc.returncode == 1 and "stored 2 times" in proc.stdout


def test_trace_info_names_a_device_and_a_pipe_as_such(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    clean_error("trace", "info", "/dev/zero", message="not a regular file (a character device)")
    clean_error("trace", "info", str(fifo), message="not a regular file (a named pipe)")
    clean_error(*RUN[:1], "--trace", str(fifo), message="(a named pipe)")
    clean_error("trace", "info", str(tmp_path / "none.xlat"), message="no such file")


def test_a_count_key_says_whole_number_and_refuses_byte_units():
    clean_error(
        *RUN, "--set", "radix.levels=abc", message="'radix.levels': cannot read 'abc' as a whole"
    )
    clean_error("run", "--refs", "2KiB", message="'sim.refs': cannot read '2KiB' as a whole")
    assert resolve_config(refs="10M").count("refs = 10000000") == 1


def test_a_size_in_mb_is_refused_as_ambiguous_and_binary_units_are_accepted():
    proc = clean_error(*RUN[:3], "--footprint", "64MB", message="'64MB' is ambiguous")
    assert "64MiB" in proc.stderr
    assert "footprint = 67108864" in resolve_config(footprint="64MiB")
    assert "bytes = 8589934592" in resolve_config(set={"os.swap.bytes": "8GiB"})
    with pytest.raises(SpecError, match="'64MB' is ambiguous"):
        expand(parse_spec({"designs": ["radix"], "workloads": ["gups"], "footprint": "64MB"}))
