"""`xlat trace info` end to end: the summary stored at record time, the scan of older traces with
progress, and `--verify` on sound, flipped and truncated files."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest
from conftest import ROOT, xlat
from xlat import _core

DATA = ROOT / "tests" / "data"
COMMITTED = DATA / "sort.xlat"

need_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None or shutil.which("gcc") is None,
    reason="valgrind or gcc not installed (.ci/run installs both)",
)


def without_source(info: dict) -> dict:
    return {k: v for k, v in info.items() if k not in ("trace", "summary_from", "verify")}


def scan(path) -> dict:
    task = _core.TraceTask.scan(str(path))
    while not task.wait(1.0):
        pass
    return json.loads(task.result())


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A real program (sort -n over 3000 numbers) recorded with xlat's valgrind tool."""
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind not installed")
    d = tmp_path_factory.mktemp("rec")
    nums = d / "nums.txt"
    nums.write_text("".join(f"{(i * 7919) % 3001}\n" for i in range(3000)))
    out = d / "sort.xlat"
    xlat("trace", "record", "-o", str(out), "--quiet", "--", "sort", "-n", str(nums))
    return out


@need_valgrind
def test_a_recorded_trace_carries_its_summary_and_it_equals_the_scan(recorded):
    proc = xlat("trace", "info", str(recorded), "--json")
    info = json.loads(proc.stdout)
    assert info["summary_from"] == "trailer"
    assert info["trace"]["version"] == 4
    assert info["trace"]["dependences"] == "recorded (register dataflow, window 65535 accesses)"
    assert info["trace"]["meta"]["command"][0] == "sort"
    scanned = scan(recorded)
    assert scanned["summary_from"] == "scan"
    assert without_source(info) == without_source(scanned)
    assert info["refs"] > 100_000 and info["refs_outside_vmas"] == 0
    text = xlat("trace", "info", str(recorded)).stdout
    assert "stored in the trace at record time" in text


def test_an_old_trace_without_a_summary_is_scanned_with_progress_on_stderr():
    assert _core.trace_stored_summary(str(COMMITTED)) is None
    proc = xlat("trace", "info", str(COMMITTED), "--json", "--progress")
    info = json.loads(proc.stdout)
    assert info["summary_from"] == "scan" and info["events"] == 1_951_848
    # The progress line names the phase and counts events against the end record's total.
    assert "scanning" in proc.stderr and "M events" in proc.stderr
    assert "/2.0 M events" in proc.stderr
    quiet = xlat("trace", "info", str(COMMITTED), "--json", "--quiet")
    assert quiet.stderr == ""


def test_verify_checks_every_chunk_hashes_the_file_and_prints_the_rate():
    proc = xlat("trace", "info", str(COMMITTED), "--verify", "--json")
    v = json.loads(proc.stdout)["verify"]
    assert v["ok"] and v["events"] == 1_951_848 and v["chunks"] == 30
    assert v["sha256"] == hashlib.sha256(COMMITTED.read_bytes()).hexdigest()
    assert v["summary"] == "absent"
    text = xlat("trace", "info", str(COMMITTED), "--verify").stdout
    assert "verified      OK: 30 chunks" in text and "M events/s" in text


@need_valgrind
def test_verify_checks_the_stored_summary_of_a_recorded_trace(recorded):
    v = json.loads(xlat("trace", "info", str(recorded), "--verify", "--json").stdout)["verify"]
    assert v["summary"] == "checked" and v["version"] == 4


def test_verify_fails_on_a_flipped_byte_naming_file_offset_and_problem(tmp_path):
    data = bytearray(COMMITTED.read_bytes())
    data[len(data) // 2] ^= 0x01
    bad = tmp_path / "flipped.xlat"
    bad.write_bytes(bytes(data))
    proc = xlat("trace", "info", str(bad), "--verify", check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert str(bad) in proc.stderr and "at byte offset" in proc.stderr
    assert "chunk" in proc.stderr and "Traceback" not in proc.stderr


def test_verify_fails_on_a_truncated_file_naming_where_it_ends(tmp_path):
    data = COMMITTED.read_bytes()
    cut = tmp_path / "cut.xlat"
    cut.write_bytes(data[:700_000])
    proc = xlat("trace", "info", str(cut), "--verify", check=False)
    assert proc.returncode == 2
    assert f"{cut}: at byte offset 700000: truncated" in proc.stderr, proc.stderr


@need_valgrind
def test_a_truncated_recorded_trace_is_refused_at_once_without_verify(recorded, tmp_path):
    cut = tmp_path / "cut3.xlat"
    data = recorded.read_bytes()
    cut.write_bytes(data[: len(data) - 10])
    proc = xlat("trace", "info", str(cut), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert str(cut) in proc.stderr and "truncated" in proc.stderr
