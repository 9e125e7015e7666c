"""`xlat report`: from the store and from `compare` output; the page checked in a real browser."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import xlat as api
from conftest import SMALL, xlat

FIGURES = [
    "speedup",
    "mmu_overhead",
    "walks",
    "walk_served_by",
    "pt_cache_share",
    "page_table_memory",
    "tlb_mpki",
]


@pytest.fixture(scope="module")
def store_report(tmp_path_factory):
    """A 2 designs x 2 workloads x 2 THP sweep in a store, and its report."""
    tmp = tmp_path_factory.mktemp("report")
    db = tmp / "r.duckdb"
    api.sweep(
        {
            "designs": ["radix", "ideal"],
            "workloads": ["gups", "stream"],
            "footprint": "16MiB",
            "refs": "20000",
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


def test_the_speedup_table_of_the_report_matches_xlat_results(store_report):
    db, out, _ = store_report
    table = api.results(db, speedup_over="radix")
    md = (out / "report.md").read_text()
    geo = table.loc[("geomean", ""), "ideal"]
    assert f"{geo:.4g}" in md


def test_report_from_compare_json_uses_the_same_figures(tmp_path):
    recs = xlat(
        "compare", "--designs", "radix,ideal,perfect_tlb", "--workload", "gups", *SMALL, "--json"
    ).stdout
    src = tmp_path / "compare.json"
    src.write_text(recs)
    out = tmp_path / "report"
    xlat("report", str(src), "--out", str(out), "--baseline", "radix")
    assert sorted(p.stem for p in out.glob("*.png")) == sorted(FIGURES)
    assert json.loads((out / "results.json").read_text())[0]["design"] == "radix"


def test_report_with_an_unknown_baseline_exits_2_naming_the_designs(store_report, tmp_path):
    db, _, _ = store_report
    proc = xlat("report", str(db), "--baseline", "radx", "--out", str(tmp_path), check=False)
    assert proc.returncode == 2 and "radx" in proc.stderr and "radix, ideal" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_report_of_an_empty_or_missing_store_exits_2(tmp_path):
    proc = xlat("report", str(tmp_path / "none.duckdb"), "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2 and "none.duckdb" in proc.stderr


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(
    _chromium() is None,
    reason="Debian's chromium is not installed (make test "
    "installs it with apt-get where apt is available)",
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
