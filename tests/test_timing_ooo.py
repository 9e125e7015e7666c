"""End-to-end tests of the out-of-order timing model and the ChampSim trace writer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import SMALL, load_script, xlat

ROOT = Path(__file__).resolve().parent.parent
WRITER = ROOT / "tools" / "champsim_trace_writer.py"

OOO_KEYS = [
    "rob_full_stall_cycles",
    "head_stall_translation_cycles",
    "head_stall_data_cycles",
    "avg_outstanding_misses",
    "avg_outstanding_walks",
    "walker_queue_cycles",
]


def test_set_timing_model_ooo_reports_the_core_figures_and_keeps_every_other_counter():
    run = ("run", "--workload", "bfs", *SMALL)
    simple = json.loads(xlat(*run, "--set", "timing.model=simple", "--json").stdout)
    ooo = json.loads(xlat(*run, "--set", "timing.model=ooo", "--json").stdout)
    default = json.loads(xlat(*run, "--json").stdout)
    assert ooo["timing"]["model"] == "ooo" and "model" not in simple["timing"]
    # ooo with walkers and MSHRs granted in request time is the default (issue 23, Scope 4).
    assert default["config"]["timing"]["model"] == "ooo"
    assert default["config"]["core"]["resource_grant"] == "time_order"
    assert default["timing"] == ooo["timing"]
    for key in OOO_KEYS:
        assert ooo["timing"][key] >= 0, key
    assert ooo["config"]["core"]["rob_entries"] == 224
    for section in ("tlb", "walk", "cache", "dram", "mmu", "os"):
        # The queued DRAM model's own figures (dram.queued) exist only under ooo, which gives
        # requests their times; the functional DRAM counters are the same under both.
        ours = {k: v for k, v in ooo[section].items() if k != "queued"}
        assert simple[section] == ours, section
    assert "queued" in ooo["dram"] and "queued" not in simple["dram"]
    assert simple["config"]["mem"]["dram"].get("model") is None  # idle: keys left out
    assert ooo["config"]["mem"]["dram"]["model"] == "queued"


def test_a_zero_core_parameter_exits_2_naming_the_key():
    proc = xlat("run", *SMALL, "--set", "core.page_walkers=0", check=False)
    assert proc.returncode == 2
    assert "core.page_walkers" in proc.stderr


def write_trace(tmp_path: Path, pattern: str) -> Path:
    out = tmp_path / f"{pattern}.champsim"
    subprocess.run(
        [sys.executable, str(WRITER), "--pattern", pattern, "--out", str(out)]
        + ["--records", "60000", "--footprint", str(64 << 20)],
        check=True,
        capture_output=True,
    )
    return out


def test_written_champsim_traces_carry_dependences_the_ooo_model_sees(tmp_path):
    ipc = {}
    for pattern in ("pointer_chase", "gups"):
        trace = write_trace(tmp_path, pattern)
        rec = json.loads(
            xlat("run", "--trace", str(trace), "--set", "timing.model=ooo", "--json").stdout
        )
        assert rec["instructions"] >= 59000
        ipc[pattern] = rec["timing"]["ipc"], rec["timing"]["avg_outstanding_misses"]
    # The chase's loads wait for each other: at most one miss in flight; GUPS overlaps them.
    assert ipc["pointer_chase"][1] <= 1.0 + 1e-9
    assert ipc["gups"][1] > 2.0
    assert ipc["gups"][0] > ipc["pointer_chase"][0]


def test_the_trace_writer_rejects_an_unknown_pattern(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(WRITER), "--pattern", "nope", "--out", str(tmp_path / "x")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


def test_the_trace_writers_issue_35_patterns_are_seeded_and_shaped_as_documented():
    import collections
    import io

    w = load_script(WRITER)

    def loads(pattern, records=3000, footprint=1 << 30):
        buf = io.BytesIO()
        w.write_trace(buf, pattern, records, footprint, seed=1)
        data = buf.getvalue()
        again = io.BytesIO()
        w.write_trace(again, pattern, records, footprint, seed=1)
        assert again.getvalue() == data  # deterministic
        recs = [w.RECORD.unpack_from(data, i) for i in range(0, len(data), w.RECORD.size)]
        return [a for r in recs for a in r[-4:] if a]

    for pattern in ("random_chase", "random_update", "chase_with_loads"):
        assert len(set(loads(pattern))) > 500
    # One load every 4 KiB, ascending.
    stride = loads("page_stride")
    assert {b - a for a, b in zip(stride, stride[1:])} == {w.STRIDE}
    # Zipf: the hottest 64-byte item takes a few per cent of the loads.
    hot = collections.Counter(loads("zipf", records=40000)).most_common(1)[0][1]
    assert 0.02 < hot / 10000 < 0.06
