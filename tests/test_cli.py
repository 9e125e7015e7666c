"""End-to-end tests of the `xlat` command line (the forms scripts depend on)."""

from __future__ import annotations

import json

import xlat as api
from conftest import ROOT, SMALL, xlat

REQUIRED_KEYS = [
    "refs",
    "instructions",
    "tlb.l1_misses",
    "tlb.l2_misses",
    "walk.count",
    "walk.mem_accesses",
    "walk.cycles",
    "mmu.overhead_cycles",
    "page_table.bytes",
    "page_table.max_contiguous_bytes",
    "oracle.checked",
    "oracle.mismatches",
    "sim.refs_per_sec",
    "sim.wall_seconds",
    "sim.setup_seconds",
    "design",
    "workload",
    "seed",
    "version",
    "config",
]


def without_wall_clock(rec: dict) -> dict:
    return {k: v for k, v in rec.items() if k != "sim"}


def test_run_json_prints_one_json_object_with_the_required_keys():
    proc = xlat("run", "--design", "radix", "--workload", "gups", *SMALL, "--seed", "1", "--json")
    rec = json.loads(proc.stdout)  # the whole of stdout is one JSON object
    assert isinstance(rec, dict)
    for key in REQUIRED_KEYS:
        api.get_path(rec, key)
    assert rec["design"] == "radix" and rec["workload"] == "gups" and rec["seed"] == 1
    assert rec["refs"] == 20000
    assert rec["oracle"]["checked"] >= rec["refs"] and rec["oracle"]["mismatches"] == 0


def test_a_long_setup_is_named_on_stderr_while_it_lasts(capsys):
    import time

    from xlat.run import SetupNotice

    with SetupNotice("radix", "building the workload", enabled=True):
        time.sleep(1.3)  # the notice ticks every 0.5 s
    err = capsys.readouterr().err
    assert "radix" in err and "setup: building the workload" in err
    with SetupNotice("radix", "building the workload", enabled=False):
        time.sleep(0.6)
    assert capsys.readouterr().err == ""


def test_compare_json_prints_a_list_of_records_in_the_order_asked():
    proc = xlat("compare", "--designs", "radix,ideal", "--workload", "gups", *SMALL, "--json")
    recs = json.loads(proc.stdout)
    assert [r["design"] for r in recs] == ["radix", "ideal"]
    assert all(r["workload"] == "gups" for r in recs)


def test_designs_and_workloads_print_one_name_per_line():
    assert xlat("designs").stdout.split("\n")[:3] == ["radix", "ideal", "perfect_tlb"]
    names = xlat("workloads").stdout.strip().split("\n")
    assert "gups" in names and all(" " not in n for n in names)


def test_an_unknown_set_key_exits_2_naming_the_closest_key():
    proc = xlat("run", "--design", "radix", *SMALL, "--set", "radix.levls=5", check=False)
    assert proc.returncode == 2
    assert "radix.levls" in proc.stderr and "radix.levels" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_an_unknown_design_exits_2_with_a_suggestion():
    proc = xlat("run", "--design", "radx", *SMALL, check=False)
    assert proc.returncode == 2 and "radix" in proc.stderr


def test_set_overrides_reach_the_resolved_config(run_json):
    rec = run_json("--design", "radix", *SMALL, "--set", "radix.levels=5", "--set", "os.thp=always")
    assert rec["config"]["radix"]["levels"] == 5
    assert rec["config"]["os"]["thp"] == "always"


def test_the_same_seed_gives_identical_records_apart_from_wall_clock(run_json):
    a = run_json("--design", "radix", *SMALL, "--seed", "3")
    b = run_json("--design", "radix", *SMALL, "--seed", "3")
    c = run_json("--design", "radix", *SMALL, "--seed", "4")
    assert without_wall_clock(a) == without_wall_clock(b)
    assert without_wall_clock(a) != without_wall_clock(c)


def test_config_show_prints_the_resolved_tree_with_overrides():
    out = xlat("config", "show", "default", "--set", "radix.levels=5").stdout
    assert "[radix]" in out and "levels = 5" in out


def test_a_missing_preset_is_a_usage_error():
    proc = xlat("run", "--preset", "no-such-preset", check=False)
    assert proc.returncode == 2 and "no-such-preset" in proc.stderr


def test_compare_report_writes_markdown_html_json_and_valid_pngs(tmp_path):
    out = tmp_path / "report"
    xlat("compare", "--preset", "test-small", "--report", str(out))
    for name in ["report.md", "report.html", "results.json", "speedup.png", "walks.png"]:
        assert (out / name).is_file(), name
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 4
    md = (out / "report.md").read_text()
    for design in api.designs():
        assert f"| {design} |" in md
    assert "first-order" in md  # the report says what is approximated


def test_the_table_output_lists_every_compared_design():
    out = xlat("compare", "--designs", "radix,perfect_tlb", *SMALL).stdout
    table, _, notes = out.strip().partition("\n\n")  # then the notes on speedup intervals
    lines = table.split("\n")
    assert lines[0].startswith("design")
    assert [ln.split()[0] for ln in lines[1:]] == ["radix", "perfect_tlb"]
    assert notes == "no interval: one unsampled run"


def test_version_prints_the_version_and_the_git_commit_of_a_clone():
    proc = xlat("--version")
    assert proc.stdout.startswith(f"xlat {api.version()}"), proc.stdout
    assert "usage" not in proc.stdout
    if (ROOT / ".git").exists():
        assert "(git " in proc.stdout


def test_compare_report_rejects_a_figure_wider_than_a_page(tmp_path):
    proc = xlat(
        "compare",
        "--designs",
        "radix",
        *SMALL,
        "--report",
        str(tmp_path),
        "--figure-width",
        "9",
        check=False,
    )
    assert proc.returncode == 2 and "wider than a page" in proc.stderr


def test_run_with_sampling_set_gives_the_sampling_section_and_refuses_a_window_beyond_its_unit(
    run_json,
):
    args = ["--design", "radix", "--workload", "gups", "--refs", "60k", "--footprint", "16MiB"]
    unit = ["--set", "sim.sampling.interval=5000", "--set", "sim.sampling.window=500"]
    rec = run_json(*args, *unit, "--set", "sim.sampling.detailed_warmup=500")
    s = rec["sampling"]
    assert s["windows"] == 12 and s["interval_method"] == "student_t_95"
    assert rec["config"]["sim"]["sampling"] == {
        "interval": 5000,
        "window": 500,
        "detailed_warmup": 500,
    }
    e = s["estimate"]
    assert e["ipc_ci95_low"] <= rec["timing"]["ipc"] == e["ipc"] <= e["ipc_ci95_high"]
    table = xlat("run", *args, *unit).stdout
    assert "sampled: IPC" in table and "12 windows" in table
    bad = xlat(
        "run",
        *args,
        "--set",
        "sim.sampling.interval=1000",
        "--set",
        "sim.sampling.window=2000",
        check=False,
    )
    assert bad.returncode == 2 and "sim.sampling.window (2000)" in bad.stderr, bad.stderr


def test_large_arrays_on_host_huge_pages_give_the_record_of_4k_host_pages():
    """The allocator of `xlat::host_alloc` (advises huge pages, copies a large block when it
    grows) never changes a figure: gups's first touch of 8 GiB (in its warm-up) grows the
    page map and the radix table past the 4 MiB from which it acts."""
    import os
    import subprocess
    import sys

    def record(huge: str) -> dict:
        proc = subprocess.run(
            [sys.executable, "-m", "xlat", "run", "--design", "radix", "--workload", "gups"]
            + ["--footprint", "8GiB", "--warmup", "2200k", "--refs", "20k", "--json"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "XLAT_HOST_HUGE_PAGES": huge},
            check=True,
        )
        return without_wall_clock(json.loads(proc.stdout))

    advised, plain = record("1"), record("0")
    assert advised["page_table"]["bytes"] > 8 << 20, "the radix table outgrows 4 MiB"
    assert advised == plain


def test_the_l2_prefetcher_is_switched_on_by_a_key_and_reports_its_figures(run_json):
    on = run_json(
        "--design",
        "radix",
        "--workload",
        "stream",
        *SMALL,
        "--set",
        "mem.l2_prefetcher.kind=stream",
    )
    assert on["cache"]["l2"]["prefetch_fills"] > 0
    assert 0.9 < on["cache"]["l2"]["prefetch_accuracy"] <= 1.0
    assert on["timing"]["prefetches"] == on["cache"]["l2"]["prefetch_fills"]
    off = run_json("--design", "radix", "--workload", "stream", *SMALL)
    assert "prefetch_fills" not in off["cache"]["l2"]
    assert on["timing"]["cycles"] < off["timing"]["cycles"]


def test_a_prefetcher_distance_beyond_a_page_exits_2_naming_the_key():
    proc = xlat(
        "run",
        "--design",
        "radix",
        *SMALL,
        "--set",
        "mem.l2_prefetcher.distance_lines=64",
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "mem.l2_prefetcher.distance_lines" in proc.stderr and "Traceback" not in proc.stderr
