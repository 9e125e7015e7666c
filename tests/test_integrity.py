"""Result integrity (issue 16): no mislabelled rows, no silent wrong answers, clean errors.

Each test here failed before the fix it names. Sweeps are stored without Ray (each run executed
in-process and committed with the same code the Ray driver uses), which keeps them fast.
"""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import pytest
import xlat as api
from conftest import ROOT, xlat
from xlat.query import QueryError, results
from xlat.store import Store
from xlat.sweeps import (
    GRID_KEYS,
    TASK_RETRIES,
    SpecError,
    execute,
    expand,
    make_row,
    parse_spec,
)

TINY = {"footprint": "1MiB", "refs": "2000"}
META = {"spec": "test", "xlat_version": "test", "git_commit": None}


def store_runs(db: Path, runs) -> list[dict]:
    """Execute ``runs`` in this process and commit their rows as a sweep does; the rows."""
    rows = [make_row(run, execute(run.kwargs()), META) for run in runs]
    Store(db).commit(rows)
    return rows


# 1. [set] cannot relabel the grid --------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(GRID_KEYS))
def test_set_may_not_override_a_grid_key_and_the_error_names_the_grid_key(key):
    with pytest.raises(SpecError, match=f"'{GRID_KEYS[key]}' key instead"):
        parse_spec({"designs": ["radix"], "workloads": ["gups"], "set": {key: ["x"]}}, "g.toml")


def test_the_issue_spec_that_relabelled_rows_is_a_clean_cli_error(tmp_path):
    spec = tmp_path / "g.toml"
    spec.write_text(
        'designs = ["radix", "ideal"]\nworkloads = ["gups"]\n'
        '[set]\n"workload.name" = ["stream"]\n"sim.design" = ["ecpt"]\n'
    )
    proc = xlat("sweep", str(spec), "--dry-run", "--db", str(tmp_path / "r.duckdb"), check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "use the top-level 'workloads' key instead" in proc.stderr


#: Keys a random grid draws its [set] from: ordinary ones and the grid's own.
SET_POOL = {
    "os.thp": ["never", "always"],
    "radix.pwc_entries": [0, 16, 32],
    "tlb.l1d_4k_entries": [32, 64],
    "sim.seed": [1, 2],
    "sim.design": ["ecpt", "ideal"],
    "workload.name": ["stream", "gups"],
    "sim.refs": [1000],
}


def test_for_random_grids_every_stored_rows_labels_equal_its_record(tmp_path):
    rng = random.Random(16)
    designs, workloads = api.designs(), ["gups", "stream", "kv"]
    stored = rejected = 0
    for i in range(12):
        keys = rng.sample(sorted(SET_POOL), rng.randint(0, 2))
        data = {
            "designs": rng.sample(designs, rng.randint(1, 2)),
            "workloads": rng.sample(workloads, 1),
            "seeds": rng.sample([1, 2, 3], rng.randint(1, 2)),
            "set": {k: rng.sample(SET_POOL[k], 1) for k in keys},
            **TINY,
        }
        try:
            runs = expand(parse_spec(data, f"fuzz{i}.toml"))
        except SpecError as e:
            assert any(k in GRID_KEYS for k in keys), e
            rejected += 1
            continue
        db = tmp_path / f"r{i}.duckdb"
        store_runs(db, runs)
        rows = Store(db).query("SELECT design, workload, seed, status, record_json FROM runs")
        assert len(rows) == len(runs) and set(rows["status"]) == {"ok"}
        for row in rows.itertuples():
            rec = json.loads(row.record_json)
            assert (row.design, row.seed) == (rec["design"], rec["seed"])
            assert row.workload == rec["config"]["workload"]["name"] == rec["workload"]
            stored += 1
    assert stored and rejected  # both branches were exercised


# 2. A trace that changes during a sweep ---------------------------------------------------------


def write_champsim(path: Path, pages: list[int]) -> None:
    """A ChampSim trace: one instruction per page, each loading from that page."""
    with open(path, "wb") as fh:
        for i, page in enumerate(pages):
            ip = 0x400000 + 4 * i
            fh.write(
                struct.pack(
                    "<QBB2B4B2Q4Q",
                    ip,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0x7F0000000000 + 4096 * page,
                    0,
                    0,
                    0,
                )
            )


def test_a_trace_changed_during_a_sweep_is_stored_under_the_hash_of_what_was_read(tmp_path):
    trace = tmp_path / "t.champsim"
    write_champsim(trace, list(range(8)))
    spec = {"designs": ["radix"], "traces": [str(trace)]}
    (before,) = expand(parse_spec(spec))
    write_champsim(trace, list(range(0, 64, 2)))  # the file changes before the run reads it
    (row,) = store_runs(tmp_path / "r.duckdb", [before])
    rec = json.loads(row["record_json"])
    (after,) = expand(parse_spec(spec))
    assert row["trace_sha256"] == rec["trace"]["sha256"] == after.trace_sha256
    assert row["trace_sha256"] != before.trace_sha256
    # A rerun with the file as it now is finds the row (and one with the old content would not).
    assert row["config_hash"] == after.config_hash != before.config_hash


# 3. Configuration filters ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_designs_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("int") / "r.duckdb"
    spec = {"designs": ["radix", "ideal"], "workloads": ["gups"], **TINY}
    store_runs(db, expand(parse_spec(spec)))
    return db


def test_a_where_on_a_configuration_key_matches_every_design_not_one_designs_figure(
    two_designs_db,
):
    df = results(two_designs_db, where=["radix.levels=4"])
    assert sorted(df["design"]) == ["ideal", "radix"]
    out = xlat("results", "--db", str(two_designs_db), "--where", "radix.levels=4").stdout
    assert "ideal" in out and "radix" in out


def test_an_ambiguous_column_name_is_an_error_listing_the_candidates(two_designs_db):
    with pytest.raises(QueryError, match="ambiguous.*config.radix.levels.*config.ideal.levels"):
        results(two_designs_db, where=["levels=4"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--by", "design", "--pivot", "design", "--value", "timing.cycles"], "also a --by"),
        (["--by", "design", "--value", "design"], "also a --by"),
        (["--by", "workload", "--value", "os.thp"], "not numeric"),
        (["--by", "design,design", "--value", "timing.cycles"], "names a column twice"),
    ],
)
def test_results_grouping_naming_a_column_twice_or_a_text_value_is_a_clean_error(
    two_designs_db, args, message
):
    proc = xlat("results", "--db", str(two_designs_db), *args, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert message in proc.stderr


# Sweep bookkeeping ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        {"footprint": ["1MiB", "1MiB"]},
        {"refs": [1000, "1000"]},
        {"seeds": [1, 1]},
        {"set": {"os.thp": ["never", "never"]}},
        {"set": {"radix.pwc_entries": [16, "16"]}},
    ],
)
def test_a_value_listed_twice_is_rejected(extra):
    with pytest.raises(SpecError, match="twice"):
        parse_spec({"designs": ["radix"], "workloads": ["gups"], **extra}, "g.toml")


def test_two_spellings_of_one_value_are_rejected_as_the_same_configuration():
    spec = parse_spec({"designs": ["radix"], "workloads": ["gups"], "footprint": ["1MiB", "1M"]})
    with pytest.raises(SpecError, match="resolve to the same configuration"):
        expand(spec)


def test_run_labels_name_footprint_and_refs():
    spec = {"designs": ["radix"], "workloads": ["gups"], "footprint": ["1MiB", "2MiB"]}
    labels = [r.label() for r in expand(parse_spec(spec))]
    assert labels == ["radix gups footprint=1MiB seed=1", "radix gups footprint=2MiB seed=1"]


def test_a_failed_row_keeps_its_configuration_columns(tmp_path):
    db = tmp_path / "r.duckdb"
    spec = {"designs": ["radix"], "workloads": ["gups"], "set": {"os.thp": ["always"]}, **TINY}
    (run,) = expand(parse_spec(spec))
    died = {"record": None, "error": "WorkerCrashedError: out of memory"}
    Store(db).commit([make_row(run, died, META)])
    failed = results(db, status="failed")
    assert failed.loc[0, "config.os.thp"] == "always"
    assert failed.loc[0, "config.workload.footprint"] == 1 << 20
    out = xlat("results", "--db", str(db), "--status", "failed").stdout
    assert "always" in out and "out of memory" in out


def test_a_run_whose_worker_dies_is_not_retried():
    assert TASK_RETRIES == 0


# Clean errors ----------------------------------------------------------------------------------


def test_ended_by_values_are_the_ones_docs_results_md_lists():
    doc = (ROOT / "docs" / "results.md").read_text()
    line = next(ln for ln in doc.splitlines() if ln.startswith("| `ended_by`"))
    rec = api.run("radix", "gups", refs=1000, footprint="1MiB")
    assert f"`{rec['ended_by']}`" in line
    trace = api.run("radix", trace=str(ROOT / "tests" / "data" / "sort.xlat"))
    assert f"`{trace['ended_by']}`" in line


def clean_error(*args: str, message: str) -> None:
    """``xlat ARGS`` exits 2 with one ``xlat: error:`` line holding ``message``: no traceback,
    no usage text."""
    proc = xlat(*args, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "usage:" not in proc.stderr, proc.stderr
    assert message in proc.stderr, proc.stderr


SORT = str(ROOT / "tests" / "data" / "sort.xlat")
RUN = ["run", "--refs", "1k", "--footprint", "1MiB"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "--footprint", "-1MiB"], "'workload.footprint' must not be negative"),
        (["run", "--footprint", "1PiB"], "must be at most 1TiB"),
        (RUN + ["--seed", "18446744073709551615"], "'sim.seed' is at most 9223372036854775807"),
        (RUN + ["--seed", "-1"], "'sim.seed' must not be negative"),
        (["run", "--refs", "0"], "sim.refs must be at least 1"),
        (["run", "--trace", SORT, "--workload", "gups"], "--workload cannot be given with --trace"),
        (["run", "--trace", SORT, "--footprint", "1MiB"], "--footprint cannot be given with"),
        (["compare", "--designs", "", "--refs", "1k"], "--designs names no design"),
        (RUN + ["--design", "mehpt", "--set", "mehpt.chunk_bytes=0"], "mehpt.chunk_bytes must"),
        (RUN + ["--design", "mehpt", "--set", "mehpt.chunk_bytes=3000"], "power of two"),
        (RUN + ["--design", "mehpt", "--set", "mehpt.upsize_occupancy=0.1"], "mehpt.upsize_occ"),
        (RUN + ["--set", "os.fmfi_order=40"], "os.fmfi_order must be at most 18"),
        (["trace", "record", "--zstd-level", "99", "-o", "x.xlat", "--", "true"], "zstd's range"),
    ],
)
def test_bad_command_lines_are_one_clean_error_line(args, message):
    clean_error(*args, message=message)


def test_non_utf8_files_and_directories_are_clean_errors_naming_them(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_bytes(b'designs = ["radix"]\nworkloads = ["gups"]\nname = "\xff"\n')
    clean_error("sweep", str(spec), "--dry-run", message="not UTF-8 text (byte 0xff at offset 49)")
    preset = tmp_path / "p.toml"
    preset.write_bytes(b"[sim]\n# \xff\n")
    clean_error(*RUN, "--preset", str(preset), message="not UTF-8 text (byte 0xff at offset 8)")
    folder = str(tmp_path) + "/"
    clean_error(*RUN, "--trace", folder, message="is a directory")
    clean_error(*RUN, "--preset", folder, message="is a directory")
    clean_error("sweep", folder, "--dry-run", message="is a directory")


def test_a_database_whose_runs_table_is_not_ours_is_a_clean_error(tmp_path):
    import duckdb

    db = tmp_path / "other.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE runs (a INTEGER)")
    con.close()
    spec = tmp_path / "s.toml"
    spec.write_text('designs = ["radix"]\nworkloads = ["gups"]\nfootprint = "1MiB"\nrefs = "1k"\n')
    for args in (
        ["results", "--db", str(db)],
        ["sweep", str(spec), "--db", str(db)],
        ["report", str(db), "--out", str(tmp_path / "o")],
    ):
        clean_error(*args, message="is not an xlat result table")


def test_report_destinations_that_cannot_be_written_and_incomplete_json_are_clean_errors(
    tmp_path, two_designs_db
):
    afile = tmp_path / "afile"
    afile.write_text("")
    clean_error("report", str(two_designs_db), "--out", str(afile), message="is a file")
    clean_error("report", str(two_designs_db), "--out", "/proc/nope", message="cannot write")
    clean_error(
        "compare", "--designs", "radix", *RUN[1:], "--report", str(afile), message="is a file"
    )
    partial = tmp_path / "r.json"
    partial.write_text('[{"design": "radix"}]')
    clean_error("report", str(partial), "--out", str(tmp_path / "o"), message="record 0 lacks")


def test_a_spec_with_only_traces_rejects_a_footprint():
    with pytest.raises(SpecError, match="'footprint' applies to built-in workloads only"):
        parse_spec({"designs": ["radix"], "traces": [SORT], "footprint": "1MiB"}, "g.toml")


def test_trace_runs_are_not_multiplied_by_the_footprint_axis():
    spec = {
        "designs": ["radix"],
        "workloads": ["gups"],
        "traces": [SORT],
        "footprint": ["1MiB", "2MiB"],
        "refs": "1k",
    }
    runs = expand(parse_spec(spec))
    assert [(r.workload, r.footprint) for r in runs] == [
        ("gups", "1MiB"),
        ("gups", "2MiB"),
        ("sort.xlat", None),
    ]


# Structure -------------------------------------------------------------------------------------

#: The Python front's modules in dependency order: each may import only those before it.
FRONT_ORDER = [
    "_core",
    "records",
    "values",
    "store",
    "run",
    "sweeps",
    "query",
    "report",
    "commands",
    "cli",
]


def test_the_python_front_imports_in_one_direction():
    import ast

    package = ROOT / "python" / "xlat"
    for i, name in enumerate(FRONT_ORDER[1:], start=1):
        tree = ast.parse((package / f"{name}.py").read_text())
        imported = set()
        for node in ast.walk(tree):  # module level and inside functions alike
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module == "xlat":
                    imported |= {a.name for a in node.names}
                elif node.module.startswith("xlat."):
                    imported.add(node.module.split(".")[1])
        later = sorted(m for m in imported if m in FRONT_ORDER[i:])
        assert not later, f"xlat.{name} imports {later}, which come after it in {FRONT_ORDER}"
