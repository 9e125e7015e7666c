"""`xlat snapshot`: a live process's VMAs, present pages and frames; the analyses; a snapshot as
a simulation's starting free-memory state."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import xlat
from xlat import snapshot

TOUCH = 32 << 20


@pytest.fixture
def victim():
    """A process that has touched TOUCH bytes of anonymous memory and waits."""
    code = (
        "import sys, time\n"
        f"b = bytearray({TOUCH})\n"
        "for i in range(0, len(b), 4096): b[i] = 1\n"
        "print('ready', flush=True)\n"
        "time.sleep(120)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    yield p.pid
    p.kill()
    p.wait()


def test_a_snapshot_records_every_vma_and_the_touched_pages(victim, tmp_path):
    out = tmp_path / "snap.json"
    proc = xlat("snapshot", str(victim), "-o", str(out), "--json")
    snap = json.loads(out.read_text())
    maps = snapshot.parse_maps(open(f"/proc/{victim}/maps").read())
    assert [(v["start"], v["end"]) for v in snap["vmas"]] == [(v["start"], v["end"]) for v in maps]
    present = sum(v["present_pages"] for v in snap["vmas"]) * 4096
    assert present >= TOUCH
    assert sum(r[2] for v in snap["vmas"] for r in v["runs"]) * 4096 == present
    assert "Node 0" in snap["buddyinfo"] and snap["meminfo"]["MemTotal"] > 0
    a = json.loads(proc.stdout)
    g = a["gap_coverage"]
    assert g["mapped_bytes"] + g["gap_bytes"] == g["span_bytes"]
    assert 0 < g["coverage"] <= g["coverage_without_largest_gaps"]["3"] <= 1
    c = a["contiguity"]
    assert c["present_bytes"] == present
    if os.geteuid() == 0:
        assert snap["pfns_known"] is True
        shares = [c["granules"][k] for k in ("64KiB", "2MiB", "32MiB")]
        assert all(0 <= s <= 1 for s in shares) and shares == sorted(shares, reverse=True)
        assert sum(c["run_histogram"].values()) == present


def test_a_snapshot_of_a_missing_process_is_an_error(tmp_path):
    proc = xlat("snapshot", "999999999", "-o", str(tmp_path / "s.json"), check=False)
    assert proc.returncode == 1 and "999999999" in proc.stderr


def test_a_snapshot_starts_a_simulation_from_its_free_memory_state(victim, tmp_path):
    out = tmp_path / "snap.json"
    xlat("snapshot", str(victim), "-o", str(out))
    rec = json.loads(
        xlat("run", "--design", "radix", "--workload", "gups", "--footprint", "16MiB",
             "--refs", "20k", "--snapshot", str(out), "--json").stdout
    )  # fmt: skip
    assert rec["config"]["os"]["buddyinfo"].endswith(".txt")
    free = snapshot.free_bytes(json.loads(out.read_text())["buddyinfo"])
    assert rec["config"]["os"]["phys_mem_bytes"] >= 2 * free
    assert rec["refs"] == 20000
