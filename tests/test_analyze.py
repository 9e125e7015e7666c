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


def _hottest_share(counts: list[int], percent: int) -> float:
    """The share of the accesses held by the hottest ceil(percent % of the pages)."""
    ranked = sorted(counts, reverse=True)
    k = max(1, -(-len(ranked) * percent // 100))
    return sum(ranked[:k]) / sum(ranked)


def test_the_heat_of_a_trace_matches_its_accesses_counted_here():
    # Independent path: every access of the trace through another binding, ranked here.
    accesses = _core.trace_accesses(SORT, 0, 2**64 - 1, limit=10**9)
    per_page: dict[int, int] = {}
    per_region: dict[int, int] = {}
    for _, va, _, _ in accesses:
        per_page[va >> 12] = per_page.get(va >> 12, 0) + 1
        per_region[va >> 21] = per_region.get(va >> 21, 0) + 1
    out = json.loads(xlat("analyze", "heat", "--trace", SORT, "--warmup", "0", "--json").stdout)
    assert out["refs"] == len(accesses) and out["skipped_refs"] == 0
    assert out["loads"] == sum(1 for k, *_ in accesses if k == "load")
    assert out["pages_4k"]["pages"] == len(per_page)
    assert out["regions_2m"]["pages"] == len(per_region)
    for i, p in enumerate(out["hot_percents"]):
        for key, counts in (("pages_4k", per_page), ("regions_2m", per_region)):
            want = _hottest_share(list(counts.values()), p)
            assert abs(out[key]["hottest_share"][i] - want) < 1e-12
    # sort.xlat was recorded before dependences were kept: its dependent share is not reported.
    assert out["dependences"].startswith("unknown")
    text = xlat("analyze", "heat", "--trace", SORT, "--warmup", "0").stdout
    assert "dependent       unknown" in text


def test_uniform_updates_spread_their_accesses_and_a_chase_depends_on_every_load():
    def heat(workload: str) -> dict:
        args = ("--workload", workload, "--footprint", "16MiB", "--refs", "200k", "--json")
        return json.loads(xlat("analyze", "heat", *args).stdout)

    gups = heat("gups")
    # The first-touch phase (one store per page) is skipped; uniform random updates then give
    # the hottest 10 % of the 4096 pages little more than 10 % of the accesses.
    assert gups["warmup_why"] == "auto_first_touch_phase" and gups["skipped_refs"] >= 4096
    assert gups["refs"] == 200_000 and gups["pages_4k"]["pages"] == 4096
    assert 0.10 <= gups["pages_4k"]["hottest_share"][1] < 0.15
    assert gups["dependent_refs"] == 0
    chase = heat("pointer_chase")
    # Every chase load depends on the one just before: all within every distance bound.
    assert chase["dependent_refs"] / chase["refs"] > 0.9
    assert chase["dependent_within"] == [chase["dependent_refs"]] * 4
    assert chase["dependence_distances"] == [1, 16, 256, 65535]
    assert chase["dependences"] == "modelled by the generator"


def test_heat_of_a_missing_trace_is_a_clear_error(tmp_path):
    r = xlat("analyze", "heat", "--trace", str(tmp_path / "none.xlat"), check=False)
    assert r.returncode == 2
    assert "none.xlat" in r.stderr


def test_a_warm_up_past_the_end_of_the_trace_is_a_clear_error():
    r = xlat("analyze", "heat", "--trace", SORT, "--warmup", "1G", check=False)
    assert r.returncode == 2
    assert "no reference left to measure" in r.stderr and "sort.xlat" in r.stderr
    assert r.stdout == ""
