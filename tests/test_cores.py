"""Several cores and processes (issue 13 part C) through the Python front: `xlat run` with a
workload list, bad core counts and quanta, and a 4-core and a quantum sweep with its report."""

from __future__ import annotations

import json
from pathlib import Path

import xlat as api
from conftest import xlat

SMALL = ["--footprint", "16MiB", "--refs", "20000"]


def test_four_workloads_on_four_cores_run_from_the_cli_with_per_core_figures():
    proc = xlat(
        "run", "--workload", "gups,kv,bfs,xsbench", "--set", "sim.cores=4", *SMALL, "--json"
    )
    rec = json.loads(proc.stdout)
    if isinstance(rec, list):
        rec = rec[0]
    assert rec["workload"] == "gups,kv,bfs,xsbench"
    assert rec["refs"] == 4 * 20000
    # The warm-up's snapshot is taken when the cores together reach it: each core's measured
    # references are within a few of sim.refs, their sum exact (docs/results.md, "Warm-up").
    assert all(abs(c["refs"] - 20000) <= 400 for c in rec["cores"]), rec["cores"]
    assert [p["workload"] for p in rec["processes"]] == ["gups", "kv", "bfs", "xsbench"]
    assert rec["walk"]["count"] == sum(c["walk"]["count"] for c in rec["cores"])
    assert rec["oracle"]["mismatches"] == 0


def test_processes_time_share_one_core_and_count_their_switches():
    rec = api.run(
        workload="gups,kv",
        footprint="16MiB",
        refs=20000,
        set={"sim.quantum": "20000", "sim.flush_tlb_on_switch": True},
    )
    assert rec["machine"]["cores"] == 1
    assert rec["switch"]["count"] > 0
    assert rec["switch"]["tlb_misses_in_window"] > 0
    got = [p["refs"] for p in rec["processes"]]
    assert sum(got) == 40000 and all(abs(n - 20000) <= 400 for n in got), got


def test_bad_core_counts_and_quanta_exit_2_or_1_naming_the_key():
    proc = xlat("run", "--set", "sim.cores=0", *SMALL, check=False)
    assert proc.returncode == 2 and "sim.cores" in proc.stderr
    proc = xlat("run", "--set", "sim.quantum=0", *SMALL, check=False)
    assert proc.returncode == 2 and "sim.quantum" in proc.stderr
    proc = xlat("run", "--workload", "gups,kv", "--set", "sim.cores=4", *SMALL, check=False)
    assert proc.returncode != 0 and "sim.cores (4) exceeds" in proc.stderr


def test_a_sweep_over_cores_and_quanta_runs_and_reports(tmp_path: Path):
    spec = tmp_path / "cores.toml"
    spec.write_text(
        'designs = ["radix"]\n'
        'workloads = ["gups,kv,bfs,xsbench"]\n'
        'footprint = "16MiB"\n'
        'refs = "10000"\n'
        "[set]\n"
        '"sim.cores" = [1, 4]\n'
        '"sim.quantum" = ["20000", "1ms"]\n'
    )
    db = tmp_path / "r.duckdb"
    proc = xlat("sweep", str(spec), "--db", str(db), "--workers", "2")
    assert "4 ran ok, 0 failed" in proc.stderr, proc.stderr
    out = tmp_path / "report"
    xlat("report", str(db), "--out", str(out))
    assert (out / "report.html").is_file()
