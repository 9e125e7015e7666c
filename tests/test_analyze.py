"""`xlat analyze gaps`: LVM's virtual-memory gap coverage of a workload, a trace or a snapshot."""

from __future__ import annotations

import json

from conftest import ROOT, xlat
from xlat import _core
from xlat.analyze import gap_analysis

SORT = str(ROOT / "tests" / "data" / "sort.xlat")


def test_the_gap_coverage_counts_consecutive_mapped_pairs_with_gap_one():
    g = gap_analysis([(10, 3), (13, 1), (20, 2)])
    # Pages 10..13 (3 pairs of gap 1, one across adjacent runs), then a hole of 6 pages.
    assert (g["pages"], g["pairs"], g["gap1_pairs"], g["gaps"]) == (6, 5, 4, 1)
    assert g["gap_coverage"] == 4 / 5
    assert g["gap_histogram"] == {"16KiB": 1}
    assert g["largest_gap_pages"] == 6


def test_a_trace_touches_the_same_pages_as_its_accesses_say():
    # Independent path: the trace's accesses through another binding, pages computed here.
    accesses = _core.trace_accesses(SORT, 0, 2**64 - 1, limit=10**9)
    pages = set()
    for _, va, size, _ in accesses:
        pages.add(va // 4096)
        pages.add((va + max(size, 1) - 1) // 4096)
    runs = _core.touched_page_runs([], SORT)
    assert sum(n for _, n in runs) == len(pages)
    assert {v + i for v, n in runs for i in range(n)} == pages
    out = json.loads(xlat("analyze", "gaps", "--trace", SORT, "--json").stdout)
    assert out == gap_analysis(runs)
    assert 0.0 < out["gap_coverage"] <= 1.0


def test_a_dense_workload_region_has_gap_coverage_near_one():
    out = json.loads(
        xlat(
            "analyze",
            "gaps",
            "--workload",
            "stream",
            "--footprint",
            "8MiB",
            "--refs",
            "2M",
            "--json",
        ).stdout
    )
    # stream sweeps its arrays: every page touched, arrays placed back to back.
    assert out["pages"] >= 2048
    assert out["gap_coverage"] > 0.99
    text = xlat("analyze", "gaps", "--workload", "stream", "--footprint", "8MiB").stdout
    assert "gap coverage" in text


def test_a_snapshot_is_analyzed_from_its_present_page_runs(tmp_path):
    snap = {
        "vmas": [
            {"start": 0x1000, "end": 0x9000, "runs": [[0x1000, 5, 4, 0]]},
            {"start": 0x100000, "end": 0x102000, "runs": [[0x100000, 9, 2, 0]]},
        ]
    }
    p = tmp_path / "snap.json"
    p.write_text(json.dumps(snap))
    out = json.loads(xlat("analyze", "gaps", "--snapshot", str(p), "--json").stdout)
    assert (out["pages"], out["gap1_pairs"], out["gaps"]) == (6, 4, 1)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"vmas": [{"start": 0, "end": 4096}]}))
    proc = xlat("analyze", "gaps", "--snapshot", str(bad), check=False)
    assert proc.returncode == 2 and "no present-page runs" in proc.stderr


def _holes_by_size(histogram: dict[str, int]) -> dict[str, int]:
    """analyze's ``gap_histogram`` labels (``256KiB``) as the record's (``256k``)."""
    units = {"KiB": "k", "MiB": "m", "GiB": "g", "TiB": "t"}
    return {k[:-3] + units[k[-3:]]: v for k, v in histogram.items()}


def test_every_run_records_the_gap_coverage_analyze_computes_for_its_pages():
    # Under demand paging with 4 KiB pages and no munmap the mapped pages are the touched
    # pages, so the record's os.va_gaps (from the OS model's page map) equals analyze's (from
    # the accesses).
    source = ["--workload", "bfs", "--footprint", "64MiB", "--refs", "200000"]
    rec = json.loads(xlat("run", "--design", "radix", *source, "--json").stdout)
    g = rec["os"]["va_gaps"]
    out = json.loads(xlat("analyze", "gaps", *source, "--json").stdout)
    assert (g["mapped_pages"], g["pairs"], g["gap1_pairs"], g["gaps"]) == (
        out["pages"],
        out["pairs"],
        out["gap1_pairs"],
        out["gaps"],
    )
    assert g["coverage"] == out["gap_coverage"] and g["gaps"] > 0
    assert g["largest_gap_pages"] == out["largest_gap_pages"]
    assert g["holes_by_size"] == _holes_by_size(out["gap_histogram"])


def test_a_trace_records_the_pages_mapped_at_its_exit_not_those_it_unmapped_before():
    # sort.xlat munmaps buffers before it exits: the record counts what was mapped at exit
    # (taken before the exit unmapped everything), analyze every page ever touched.
    rec = json.loads(xlat("run", "--design", "radix", "--trace", SORT, "--json").stdout)
    g = rec["os"]["va_gaps"]
    out = json.loads(xlat("analyze", "gaps", "--trace", SORT, "--json").stdout)
    assert 0 < g["mapped_pages"] < out["pages"]
    assert g["pairs"] == g["mapped_pages"] - 1 and 0.0 < g["coverage"] < 1.0
    assert rec["os"]["mapped_4k"] == 0  # the exit did unmap them
