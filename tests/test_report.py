"""`xlat report`: from the store and from `compare` output; the page checked in a real browser."""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import xlat as api
from conftest import SMALL, xlat

#: Figures of every report (a compare of radix and ideal under the default THP setting).
BASE_FIGURES = [
    "speedup",
    "translation_share",
    "mmu_overhead",
    "walks",
    "walk_latency",
    "walk_served_by",
    "walk_cycles_by_level",
    "walk_latency_distribution",
    "loaded_latency",
    "dram_latency_distribution",
    "pwc_hit_rate",
    "pt_cache_share",
    "page_table_memory",
    "tlb_mpki",
    "tlb_misses_by_page_size",
    "va_gap_coverage",
]
#: The store fixture's sweep adds: 2 MiB pages (THP axis) and a footprint axis.
FIGURES = [
    *BASE_FIGURES,
    "tlb_hits_by_page_size",
    "speedup_vs_footprint",
    "walk_cycles_vs_footprint",
    "thp_speedup",
    "va_gap_sizes",
]


@pytest.fixture(scope="module")
def store_report(tmp_path_factory):
    """A 2 designs x 2 workloads x 2 THP x 2 footprints sweep in a store, and its report."""
    tmp = tmp_path_factory.mktemp("report")
    db = tmp / "r.duckdb"
    api.sweep(
        {
            "designs": ["radix", "ideal"],
            "workloads": ["gups", "stream"],
            "footprint": ["8MiB", "16MiB"],
            "refs": "20000",
            # From the first reference: every panel then has walks and faults to draw (after
            # a warm-up, THP over 8 MiB walks no more).
            "warmup": "0",
            "set": {"os.thp": ["never", "always"]},
        },
        db,
        workers=2,
    )
    out = tmp / "report"
    proc = xlat("report", str(db), "--out", str(out))
    return db, out, proc


def test_report_from_the_store_writes_html_with_every_figure_as_png_and_pdf(store_report):
    _, out, proc = store_report
    assert "report.html" in proc.stderr
    for name in FIGURES:
        png, pdf = out / f"{name}.png", out / f"{name}.pdf"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png
        assert pdf.read_bytes()[:5] == b"%PDF-", pdf
    page = (out / "report.html").read_text()
    assert page.count("data:image/png;base64,") == len(FIGURES)
    assert 'src="http' not in page and '<link rel="stylesheet"' not in page  # self-contained
    assert f"xlat {api.version()}" in page  # version in the footer
    assert "os.thp" in page and "geomean" in page
    assert "first-order" in page  # the report says what is approximated


def _store_speedups(db) -> dict[tuple[str, int, str], float]:
    """ideal's speedup over radix per (THP, footprint, workload), from the store's cycles."""
    rows = api.results(db)
    cycles = {
        (r["config.os.thp"], int(r["config.workload.footprint"]), r["workload"], r["design"]): r[
            "timing.cycles"
        ]
        for _, r in rows.iterrows()
    }
    return {k[:3]: cycles[(*k[:3], "radix")] / v for k, v in cycles.items() if k[3] == "ideal"}


def test_speedup_geomeans_are_per_setting_of_every_axis_other_than_workload(store_report):
    db, out, _ = store_report
    sp = _store_speedups(db)
    table = list(csv.DictReader((out / "speedup.csv").open()))
    geo = {
        (r["thp"], int(r["footprint"])): float(r["ideal"])
        for r in table
        if r["workload"] == "geomean"
    }
    assert len(geo) == 4  # one per THP x footprint setting, none pooled over settings
    for (thp, foot), value in geo.items():
        want = math.sqrt(sp[(thp, foot, "gups")] * sp[(thp, foot, "stream")])
        assert value == pytest.approx(want, rel=1e-12), (thp, foot)
    assert len({round(v, 12) for v in geo.values()}) > 1  # the settings do differ
    figure = json.loads((out / "figures.json").read_text())["figures"]["speedup"]
    assert len(figure["panels"]) == 4  # one bar group per setting
    for panel in figure["panels"]:
        assert panel["x"] == ["gups", "stream", "geomean"]
        thp = re.search(r"thp=(\w+)", panel["title"]).group(1)
        foot = 8 * 2**20 if "8 MiB" in panel["title"] else 16 * 2**20
        assert panel["series"]["ideal"][2] == pytest.approx(geo[(thp, foot)], rel=1e-12)
    md = (out / "report.md").read_text()
    for value in geo.values():
        assert f"| {value:.3f} |" in md


def _pdf_box(pdf: Path) -> tuple[float, float]:
    box = re.search(rb"/MediaBox \[ ?0 0 ([\d.]+) ([\d.]+) ?\]", pdf.read_bytes())
    return float(box.group(1)) / 72, float(box.group(2)) / 72


def test_report_pdfs_are_column_wide_with_truetype_fonts_and_never_wider_than_a_page(
    store_report, tmp_path
):
    db, out, _ = store_report
    for name in FIGURES:
        pdf = (out / f"{name}.pdf").read_bytes()
        assert b"/Type3" not in pdf, name  # camera-ready checkers reject Type 3 fonts
        assert b"/FontFile2" in pdf, name  # TrueType (Type 42) embedded
        width, _ = _pdf_box(out / f"{name}.pdf")
        assert width == pytest.approx(3.33, abs=0.01), name  # default: one column
    page = tmp_path / "page"
    xlat("report", str(db), "--out", str(page), "--figure-width", "page", "--latex")
    for pdf in page.glob("*.pdf"):
        width, _ = _pdf_box(pdf)
        assert width == pytest.approx(7.0, abs=0.01), pdf.name
        assert b"/Type3" not in pdf.read_bytes()
    tex = (page / "speedup.tex").read_text()
    assert "\\begin{tabular}" in tex and "\\textit{geomean}" in tex and "8 MiB" in tex
    proc = xlat("report", str(db), "--out", str(page), "--figure-width", "16", check=False)
    assert proc.returncode == 2 and "wider than a page" in proc.stderr


def test_the_new_figures_draw_the_stores_numbers(store_report):
    db, out, _ = store_report
    rows = api.results(db)
    figures = json.loads((out / "figures.json").read_text())["figures"]

    def store(design, workload, thp, foot, key):
        (value,) = rows[
            (rows["design"] == design)
            & (rows["workload"] == workload)
            & (rows["config.os.thp"] == thp)
            & (rows["config.workload.footprint"] == foot)
        ][key]
        return float(value)

    def panels(name):
        for p in figures[name]["panels"]:
            thp = re.search(r"thp=(\w+)", p["title"]).group(1)
            foot = 8 * 2**20 if "8 MiB" in p["title"] else 16 * 2**20
            yield thp, foot, p

    for thp, foot, p in panels("translation_share"):
        for i, w in enumerate(p["x"]):
            for d in ("radix", "ideal"):
                want = store(d, w, thp, foot, "timing.mmu_overhead_share") * 100
                assert p["series"][d][i] == pytest.approx(want, rel=1e-12)
    assert "KiB" in figures["page_table_memory"]["ylabel"]
    assert "peak" in figures["page_table_memory"]["caption"].lower()
    for thp, foot, p in panels("page_table_memory"):
        for i, w in enumerate(p["x"]):
            want = store("radix", w, thp, foot, "page_table.peak_bytes") / 1024
            assert p["series"]["radix"][i] == pytest.approx(want, rel=1e-12)
    for thp, foot, p in panels("pwc_hit_rate"):
        for i, w in enumerate(p["x"]):
            lookups = store("radix", w, thp, foot, "radix.pwc_lookups")
            pde = store("radix", w, thp, foot, "radix.pwc_pde_hits")
            assert p["series"]["PDE"][i] == pytest.approx(100 * pde / lookups, rel=1e-12)
    for thp, foot, p in panels("tlb_mpki"):
        assert set(p["series"]) == {"L1 TLB", "L2 TLB"}  # once per workload, not per design
        for i, w in enumerate(p["x"]):
            want = store("radix", w, thp, foot, "tlb.l2_mpki")
            assert p["series"]["L2 TLB"][i] == pytest.approx(want, rel=1e-12)
    for thp, foot, p in panels("tlb_misses_by_page_size"):
        for i, w in enumerate(p["x"]):
            instr = store("radix", w, thp, foot, "instructions")
            try:  # a size no walk found has no key in the record
                found = store("radix", w, thp, foot, "walk.by_page_size.4k")
            except TypeError:
                found = 0.0
            want = found * 1000 / instr
            assert p["series"]["4\u00a0KiB"][i] == pytest.approx(want, rel=1e-12)
            faults = store("radix", w, thp, foot, "walk.fault_walks") * 1000 / instr
            assert p["series"]["fault"][i] == pytest.approx(faults, rel=1e-12)
    for thp, foot, p in panels("walk_latency_distribution"):
        w = p["title"].split(",")[0]
        walks = store("radix", w, thp, foot, "walk.count")
        for i, low in enumerate(p["x"]):
            n = store("radix", w, thp, foot, f"walk.latency_hist.{low}")
            assert p["series"]["radix"][i] == pytest.approx(100 * n / walks, rel=1e-12)
        assert sum(p["series"]["radix"]) <= 100 + 1e-9
    for thp, foot, p in panels("walk_cycles_by_level"):
        w = p["title"].split(",")[0]
        i = p["x"].index("radix")
        walks = store("radix", w, thp, foot, "walk.count") + store(
            "radix", w, thp, foot, "walk.post_fault_count"
        )
        dram = store("radix", w, thp, foot, "cache.pt_served_cycles_dram")
        assert p["series"]["DRAM"][i] == pytest.approx(dram / walks, rel=1e-12)
    for p in figures["thp_speedup"]["panels"]:  # THP off/on as grouped bars
        foot = 8 * 2**20 if "8 MiB" in p["title"] else 16 * 2**20
        for i, w in enumerate(p["x"][:-1]):
            for d in ("radix", "ideal"):
                off = store(d, w, "never", foot, "timing.cycles")
                on = store(d, w, "always", foot, "timing.cycles")
                assert p["series"][d][i] == pytest.approx(off / on, rel=1e-12)
    line = figures["speedup_vs_footprint"]["panels"]
    assert all(p["x"] == [str(8 * 2**20), str(16 * 2**20)] for p in line)
    sp = _store_speedups(db)
    gups_never = next(p for p in line if p["title"].startswith("gups") and "never" in p["title"])
    assert gups_never["series"]["ideal"] == pytest.approx(
        [sp[("never", 8 * 2**20, "gups")], sp[("never", 16 * 2**20, "gups")]], rel=1e-12
    )


def test_the_runs_table_has_one_row_per_run_sorted_by_workload_then_design(store_report):
    db, out, _ = store_report
    table = list(csv.DictReader((out / "results.csv").open()))
    assert len(table) == len(api.results(db)) == 16
    keys = [(r["workload"], ["radix", "ideal"].index(r["design"])) for r in table]
    assert keys == sorted(keys)
    assert "peak page table (KiB)" in table[0] and "end-of-run page table (KiB)" in table[0]
    assert "seed" not in table[0]  # one seed: not a varying column
    md = (out / "report.md").read_text()
    # workload, design (left), footprint (right), thp (left), numbers right-aligned
    assert "| workload | design | footprint | thp | cycles |" in md
    assert "|---|---|---:|---|---:|" in md


def test_report_from_compare_json_uses_the_same_figures(tmp_path):
    recs = xlat(
        "compare", "--designs", "radix,ideal,perfect_tlb", "--workload", "gups", *SMALL, "--json"
    ).stdout
    src = tmp_path / "compare.json"
    src.write_text(recs)
    out = tmp_path / "report"
    xlat("report", str(src), "--out", str(out), "--baseline", "radix")
    assert sorted(p.stem for p in out.glob("*.png")) == sorted(BASE_FIGURES)
    assert json.loads((out / "results.json").read_text())[0]["design"] == "radix"


def test_report_with_an_unknown_baseline_exits_2_naming_the_designs(store_report, tmp_path):
    db, _, _ = store_report
    proc = xlat("report", str(db), "--baseline", "radx", "--out", str(tmp_path), check=False)
    assert proc.returncode == 2 and "radx" in proc.stderr and "radix, ideal" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_report_of_an_empty_or_missing_store_exits_2(tmp_path):
    proc = xlat("report", str(tmp_path / "none.duckdb"), "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2 and "none.duckdb" in proc.stderr


def _kib(n: int) -> str:
    return f"{n / 1024:.3g} KiB"


def test_a_trace_report_shows_the_traces_name_refs_and_measured_footprint(tmp_path):
    out = tmp_path / "report"
    xlat(
        "compare",
        "--designs",
        "radix,ecpt",
        "--trace",
        "tests/data/sort.xlat",
        "--report",
        str(out),
    )
    records = json.loads((out / "results.json").read_text())
    refs = records[0]["refs"]
    footprint = max(r["os"]["data_peak_bytes"] for r in records)
    for page in ("report.md", "report.html"):
        text = (out / page).read_text()
        assert str(records[0]["config"]["sim"]["refs"]) not in text  # not the no-limit sentinel
        assert "footprint 1 GiB" not in text  # not the default footprint of built-ins
        assert f"trace sort.xlat ({refs:,} refs, measured footprint {_kib(footprint)})" in text
    # Page-table memory is the peak: the recorded program unmapped everything before exiting.
    figure = json.loads((out / "figures.json").read_text())["figures"]["page_table_memory"]
    drawn = figure["panels"][0]["series"]
    for r in records:
        assert r["page_table"]["peak_bytes"] > r["page_table"]["bytes"]
        assert drawn[r["design"]] == [r["page_table"]["peak_bytes"] / 1024]
    runs = {r["design"]: r for r in csv.DictReader((out / "results.csv").open())}
    for r in records:
        row = runs[r["design"]]
        assert float(row["peak page table (KiB)"]) == r["page_table"]["peak_bytes"] / 1024
        assert float(row["end-of-run page table (KiB)"]) == r["page_table"]["bytes"] / 1024


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(
    _chromium() is None,
    reason="chromium is not installed: `make test-browser` installs Debian's chromium (as "
    "root, about 350 MB) and runs this test; .ci/run installs it for CI",
)
def test_the_report_renders_in_headless_chromium_with_every_figure_and_no_console_error(
    store_report, tmp_path
):
    _, out, _ = store_report
    url = (out / "report.html").resolve().as_uri()
    base = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
    ]
    proc = subprocess.run([*base, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln]
    assert console == [], console
    dom = proc.stdout
    n = len(FIGURES)
    assert f'data-figures-loaded="{n}/{n}"' in dom  # the page's own check: every image decoded
    for name in FIGURES:
        assert f'id="fig-{name}"' in dom
    shot = tmp_path / "page.png"
    subprocess.run(
        [*base, f"--screenshot={shot}", "--window-size=1200,1600", url],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    Path(out / "page-screenshot.png").write_bytes(shot.read_bytes())


def test_docs_report_md_shows_every_figure_the_report_draws(store_report):
    """docs/report.md is generated (make report-docs); a figure added since must be there too."""
    _, out, _ = store_report
    docs = (Path(__file__).resolve().parents[1] / "docs" / "report.md").read_text()
    for name in FIGURES:
        assert f"## `{name}`" in docs and f"report/{name}.png" in docs, name


# -- xlat.plot: the report's figures as objects (one implementation, two entry points) --------


def test_xlat_plot_draws_the_same_figures_with_the_same_numbers_as_the_report(store_report):
    import xlat.plot

    db, out, _ = store_report
    report_numbers = json.loads((out / "figures.json").read_text())["figures"]
    figs = xlat.plot.figures(api.results(db))
    assert sorted(figs) == sorted(report_numbers)
    for name, fig in figs.items():
        assert fig._xlat_numbers == report_numbers[name], name
        assert xlat.plot.caption(fig) == report_numbers[name]["caption"]
        assert math.isclose(fig.get_figwidth(), 3.33), name


def test_xlat_plot_leaves_matplotlibs_global_style_and_backend_alone(store_report):
    import matplotlib
    import xlat.plot

    db, _, _ = store_report
    matplotlib.rcParams["font.size"] = 13.0
    matplotlib.rcParams["pdf.fonttype"] = 3
    backend = matplotlib.get_backend()
    try:
        fig = xlat.plot.speedup(api.results(db))
        assert matplotlib.rcParams["font.size"] == 13.0
        assert matplotlib.rcParams["pdf.fonttype"] == 3
        assert matplotlib.get_backend() == backend
        # ...while the figure itself was drawn in the report's style (7 pt tick labels).
        assert fig.axes[0].get_xticklabels()[0].get_fontsize() == 7.0
    finally:
        matplotlib.rcdefaults()


def test_xlat_plot_names_draw_only_those_figures_and_unknown_names_are_refused(store_report):
    import xlat.plot

    db, _, _ = store_report
    df = api.results(db)
    assert sorted(xlat.plot.figures(df, names=["thp_speedup", "tlb_mpki"])) == [
        "thp_speedup",
        "tlb_mpki",
    ]
    with pytest.raises(ValueError, match="unknown figure nope.*speedup"):
        xlat.plot.figures(df, names=["nope"])
    radix_only = df[df["design"] == "ideal"]
    with pytest.raises(ValueError, match="no 'pwc_hit_rate' figure"):
        xlat.plot.figure("pwc_hit_rate", radix_only)


def test_results_output_writes_every_stored_column_to_parquet_csv_and_json(store_report, tmp_path):
    import duckdb

    db, _, _ = store_report
    stored = api.results(db)
    pq = tmp_path / "runs.parquet"
    proc = xlat("results", "--db", str(db), "--output", str(pq))
    assert f"{len(stored)} rows" in proc.stderr
    con = duckdb.connect()
    back = con.execute(f"SELECT * FROM '{pq}'").df()
    assert len(back) == len(stored) and set(back.columns) == set(stored.columns)
    assert back["walk.count"].sum() == stored["walk.count"].sum()
    assert str(back["walk.count"].dtype).startswith(("int", "uint", "Int", "UInt"))
    csv_path = tmp_path / "speedups.csv"
    xlat("results", "--db", str(db), "--speedup-over", "radix", "-o", str(csv_path))
    rows = list(csv.DictReader(csv_path.open()))
    assert {r["workload"] for r in rows} >= {"gups", "stream", "geomean"}
    js = tmp_path / "out.dat"
    xlat("results", "--db", str(db), "--format", "json", "-o", str(js))
    assert len(json.loads(js.read_text())) == len(stored)


def test_results_parquet_without_an_output_file_or_an_unknown_suffix_exits_2(
    store_report, tmp_path
):
    db, _, _ = store_report
    proc = xlat("results", "--db", str(db), "--format", "parquet", check=False)
    assert proc.returncode == 2 and "--output PATH" in proc.stderr
    proc = xlat("results", "--db", str(db), "-o", str(tmp_path / "x.xlsx"), check=False)
    assert proc.returncode == 2 and "x.xlsx: cannot tell the format" in proc.stderr
    assert not (tmp_path / "x.xlsx").exists()
