"""Units and definitions of every record key (docs/results.md's index) and the gem5-style
`--stats-format txt` dump."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import xlat
from xlat.units import (
    docs_texts,
    documented,
    index_markdown,
    index_records,
    key_index,
    unit_of,
)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def index():
    return key_index(index_records())


def test_every_figure_a_run_can_produce_has_a_unit(index):
    assert len(index) > 300  # every design, ooo, THP, nested, two cores
    assert [k for k, (unit, _) in index.items() if unit is None] == []


def test_every_figure_is_defined_in_the_docs(index):
    docs = docs_texts(ROOT)
    assert [k for k in index if documented(k, docs) is None] == []


def test_the_key_index_in_docs_results_md_is_current(index):
    text = (ROOT / "docs" / "results.md").read_text()
    expected = index_markdown(index, docs_texts(ROOT))
    assert expected in text, "docs/results.md's key index is stale: run `make results-docs`"


def test_a_name_no_doc_mentions_is_not_documented_and_doc_patterns_expand():
    docs = docs_texts(ROOT)
    assert documented("ecpt.no_such_figure", docs) is None
    assert documented("walk.no_such_figure", docs) is None
    assert documented("walk.count", docs) == "results.md"
    # `cache.<level>.invalidated_lines` and `{4k,2m,1g}_upsizes_per_way` are doc patterns.
    assert documented("cache.llc.invalidated_lines", docs) == "results.md"
    pages = {k: v for k, v in docs.items() if k != "results.md"}
    assert documented("ecpt.2m_upsizes_per_way[i]", pages) == "designs/ecpt.md"
    # mehpt's page says "every ecpt key plus ...": an ecpt key in the mehpt section.
    assert documented("mehpt.walks_during_resize_share", pages) == "designs/ecpt.md"
    assert documented("walk.latency_hist.<N>", docs) == "results.md"


def test_units_follow_the_naming_rules_and_unknown_floats_get_none():
    assert unit_of("walk.cycles", 5) == "cycles"
    assert unit_of("cache.l2.pt_line_share_avg", 0.1) == "fraction (0-1)"
    assert unit_of("virt.host_os.fmfi_end", 0.3) == "fraction (0-1)"
    assert unit_of("sim.setup_seconds", 0.2) == "seconds"
    assert unit_of("ecpt.probes_per_walk", 1.5) == "count per event"
    assert unit_of("walk.brand_new_float", 0.5) is None


def test_run_stats_format_txt_prints_every_figure_of_the_record_with_its_unit():
    args = ["run", "--design", "mehpt", "--workload", "gups", "--footprint", "16MiB"]
    args += ["--refs", "5k", "--seed", "3"]
    rec = json.loads(xlat(*args, "--json").stdout)
    out = xlat(*args, "--stats-format", "txt").stdout
    lines = [ln for ln in out.splitlines() if ln and not ln.startswith(("#", "-"))]
    parsed = {}
    for ln in lines:
        m = re.fullmatch(r"(\S+)\s+(\S+)\s+# (.+)", ln)
        assert m, ln
        assert m.group(3) != "?", ln
        parsed[m.group(1)] = m.group(2)
    assert parsed["walk.count"] == str(rec["walk"]["count"])
    assert float(parsed["walk.avg_cycles"]) == rec["walk"]["avg_cycles"]
    assert parsed["mehpt.4k_final_way_bytes::1"] == str(rec["mehpt"]["4k_final_way_bytes"][1])
    assert not any(k.startswith("config.") for k in parsed)
    assert out.count("Begin Simulation Statistics") == 1


def test_compare_stats_format_txt_prints_one_block_per_design_and_json_conflicts_exit_2():
    args = ["compare", "--designs", "radix,ideal", "--workload", "gups", "--footprint", "16MiB"]
    out = xlat(*args, "--refs", "5k", "--stats-format", "txt").stdout
    assert out.count("Begin Simulation Statistics") == 2
    assert "# xlat " in out and ": ideal on gups" in out
    proc = xlat(*args, "--json", "--stats-format", "txt", check=False)
    assert proc.returncode == 2 and "disagree" in proc.stderr
