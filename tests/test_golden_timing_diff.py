"""scripts/golden_timing_diff.py: timing keys may move between two snapshot sets, nothing else."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "golden_timing_diff.py"


def _write(d: Path, name: str, record: dict) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(json.dumps(record))


def _run(old: Path, new: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(old), str(new)], capture_output=True, text=True
    )


def test_moved_timing_keys_are_listed_and_pass(tmp_path):
    old = {"timing": {"cycles": 10.0}, "cache": {"l1d": {"misses": 3}}, "config": {}}
    new = {
        "timing": {"cycles": 7.5, "model": "ooo"},
        "cache": {"l1d": {"misses": 3}},
        "config": {"timing": {"model": "ooo"}},
    }
    _write(tmp_path / "a", "x.json", old)
    _write(tmp_path / "b", "x.json", new)
    r = _run(tmp_path / "a", tmp_path / "b")
    assert r.returncode == 0, r.stdout
    assert "timing.cycles: 1" in r.stdout and "timing.model: 1" in r.stdout
    assert "config.timing.model: 1" in r.stdout
    assert "no non-timing key moved" in r.stdout


def test_a_moved_non_timing_counter_fails_naming_the_key(tmp_path):
    old = {"timing": {"cycles": 10.0}, "walk": {"mem_accesses": 5}, "cores": [{"x": 1}]}
    new = {"timing": {"cycles": 9.0}, "walk": {"mem_accesses": 6}, "cores": [{"x": 1}]}
    _write(tmp_path / "a", "x.json", old)
    _write(tmp_path / "b", "x.json", new)
    r = _run(tmp_path / "a", tmp_path / "b")
    assert r.returncode == 1
    assert "x.json: walk.mem_accesses: 5 -> 6" in r.stdout


def test_a_snapshot_missing_on_one_side_fails(tmp_path):
    _write(tmp_path / "a", "x.json", {"timing": {}})
    _write(tmp_path / "a", "y.json", {"timing": {}})
    _write(tmp_path / "b", "x.json", {"timing": {}})
    r = _run(tmp_path / "a", tmp_path / "b")
    assert r.returncode == 1 and "y.json: only in" in r.stdout
