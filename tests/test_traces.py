"""Trace files end to end: `xlat run --trace`, `xlat trace info`, `xlat trace record`."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, xlat
from xlat import _core, record

DATA = ROOT / "tests" / "data"
COMMITTED = DATA / "sort.xlat"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_run_on_the_committed_real_trace_carries_its_sha256_and_path():
    proc = xlat("run", "--design", "radix", "--trace", str(COMMITTED), "--json")
    rec = json.loads(proc.stdout)
    assert rec["trace"]["sha256"] == sha256(COMMITTED)
    assert rec["trace"]["path"] == str(COMMITTED)
    assert rec["trace"]["format"] == "native" and rec["trace"]["vmas_inferred"] is False
    assert rec["ended_by"] == "end_of_trace"
    info = json.loads(_core.trace_info(str(COMMITTED)))
    assert rec["refs"] == info["refs"] > 100_000
    assert rec["oracle"]["mismatches"] == 0 and rec["oracle"]["checked"] >= rec["refs"]


def test_refs_limits_a_trace_run():
    rec = json.loads(
        xlat(
            "run", "--design", "ideal", "--trace", str(COMMITTED), "--refs", "5000", "--json"
        ).stdout
    )
    assert rec["refs"] == 5000 and rec["ended_by"] == "refs_limit"


def test_trace_info_prints_counts_footprint_vmas_and_mix():
    out = xlat("trace", "info", str(COMMITTED)).stdout
    for word in ["references", "instructions", "footprint", "VMAs", "loads", "stores", "sha256"]:
        assert word in out, word
    info = json.loads(xlat("trace", "info", str(COMMITTED), "--json").stdout)
    assert info["refs"] == info["loads"] + info["stores"] + info["ifetches"]
    assert info["refs_outside_vmas"] == 0
    assert info["processes"][0]["vma_count"] > 5
    assert abs(info["load_share"] + info["store_share"] - 1.0) < 1e-9


def test_a_corrupted_trace_fails_the_run_naming_file_offset_and_problem(tmp_path):
    bad = tmp_path / "bad.xlat"
    data = bytearray(COMMITTED.read_bytes())
    data[len(data) // 2] ^= 0x40
    bad.write_bytes(bytes(data))
    proc = xlat("run", "--design", "radix", "--trace", str(bad), "--json", check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert str(bad) in proc.stderr and "at byte offset" in proc.stderr
    assert "Traceback" not in proc.stderr
    cut = tmp_path / "cut.xlat"
    cut.write_bytes(COMMITTED.read_bytes()[:1000])
    proc = xlat("trace", "info", str(cut), check=False)
    assert proc.returncode == 1 and "truncated" in proc.stderr


def test_a_missing_trace_is_a_usage_error():
    proc = xlat("run", "--design", "radix", "--trace", "no/such.xlat", check=False)
    assert proc.returncode == 2 and "no/such.xlat" in proc.stderr


need_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None or shutil.which("gcc") is None,
    reason="valgrind or gcc not installed (.ci/run installs both)",
)


@need_valgrind
@pytest.mark.parametrize("tool", ["xlat", "lackey"])
def test_recording_a_ten_line_c_program_gives_exactly_its_loop_loads_and_stores(tmp_path, tool):
    exe = tmp_path / "loop10"
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(DATA / "src" / "loop10.c")], check=True)
    out = tmp_path / "loop10.xlat"
    proc = xlat("trace", "record", "-o", str(out), "--quiet", "--tool", tool, "--", str(exe))
    a = int(proc.stdout.strip(), 16)
    n = 1000
    acc = _core.trace_accesses(str(out), a, a + 8 * n)
    want = [("store", a + 8 * i, 8) for i in range(n)] + [("load", a + 8 * i, 8) for i in range(n)]
    assert [(k, va, size) for k, va, size, _ in acc] == want
    # Every iteration of a loop retires the same number of instructions.
    assert len({instrs for _, _, _, instrs in acc[1:n]}) == 1
    assert len({instrs for _, _, _, instrs in acc[n + 1 :]}) == 1
    info = json.loads(_core.trace_info(str(out)))
    assert info["trace"]["meta"]["exit_status"] == 0
    assert info["trace"]["meta"]["recorder"] == ("lackey" if tool == "lackey" else "xlat-vgtool")
    assert info["refs_outside_vmas"] == 0
    # Every load and store of the program, its first touches included: no warm-up.
    rec = json.loads(
        xlat("run", "--design", "radix", "--trace", str(out), "--warmup", "0", "--json").stdout
    )
    assert rec["refs"] == info["refs"]


@need_valgrind
def test_record_reports_the_program_exit_status_and_follows_exec(tmp_path):
    out = tmp_path / "sh.xlat"
    # sh execs the real `true`... then exits 3 via a second shell: two images, status 3.
    proc = xlat("trace", "record", "-o", str(out), "--", "sh", "-c", "exec sh -c 'exit 3'")
    assert "exit status 3" in proc.stderr
    info = json.loads(_core.trace_info(str(out)))
    assert info["trace"]["meta"]["exit_status"] == 3
    assert info["syscalls"]["exit"] == 2  # one per program image
    assert info["refs_outside_vmas"] == 0


def test_record_without_a_program_is_a_usage_error(tmp_path):
    proc = xlat("trace", "record", "-o", str(tmp_path / "x.xlat"), check=False)
    assert proc.returncode == 2 and "PROGRAM" in proc.stderr


def test_the_tool_is_found_or_its_absence_is_explained():
    lib = record.tool_lib_dir()
    assert lib is None or (lib / "xlat-amd64-linux").is_file()


@need_valgrind
def test_recording_without_the_tools_source_says_the_installation_lacks_it(tmp_path, monkeypatch):
    # An installation whose package data is gone: no built tool, no source to build it from.
    monkeypatch.delenv("XLAT_VGTOOL_LIB", raising=False)
    monkeypatch.setenv("XLAT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(record, "TOOL_DIR", tmp_path / "no-source")
    with pytest.raises(record.RecordError) as e:
        record.record(["true"], str(tmp_path / "t.xlat"), tool="xlat")
    msg = str(e.value)
    assert "missing from this installation" in msg and "reinstall" in msg
    assert not (tmp_path / "t.xlat").exists()


def _failing_source(tmp_path: Path, lines: int) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    body = "".join(f"echo 'compiler line {i}' >&2\n" for i in range(lines))
    (src / "build.sh").write_text(
        f"{body}echo 'valgrind.pc not found: no tool libraries' >&2\nexit 1\n"
    )
    return src


@need_valgrind
def test_a_failed_tool_build_gives_its_reason_and_what_the_build_needs(tmp_path, monkeypatch):
    monkeypatch.delenv("XLAT_VGTOOL_LIB", raising=False)
    monkeypatch.setenv("XLAT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(record, "TOOL_DIR", _failing_source(tmp_path, 0))
    with pytest.raises(record.RecordError) as e:
        record.record(["true"], str(tmp_path / "t.xlat"), tool="xlat")
    msg = str(e.value)
    assert "valgrind.pc not found" in msg and "apt-get install valgrind" in msg
    assert "xlat trace setup" in msg


@need_valgrind
def test_the_lackey_fallback_warns_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("XLAT_VGTOOL_LIB", raising=False)
    monkeypatch.setenv("XLAT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(record, "TOOL_DIR", _failing_source(tmp_path, 6))
    summary = record.record(["true"], str(tmp_path / "t.xlat"), tool="auto")
    assert summary["exit_status"] == 0
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    warning = [ln for ln in err if ln.startswith("xlat: warning:")]
    assert len(warning) == 1 and "valgrind.pc not found" in warning[0] and "lackey" in warning[0]
    assert not any("compiler line" in ln for ln in err)


@need_valgrind
def test_the_first_recording_builds_the_tool_into_the_cache_and_says_so_once(tmp_path, monkeypatch):
    monkeypatch.delenv("XLAT_VGTOOL_LIB", raising=False)
    monkeypatch.setenv("XLAT_CACHE_DIR", str(tmp_path / "cache"))
    first = xlat("trace", "record", "-o", str(tmp_path / "a.xlat"), "--", "/bin/true").stderr
    assert f"building the valgrind recording tool into {tmp_path / 'cache'}" in first
    again = xlat("trace", "record", "-o", str(tmp_path / "b.xlat"), "--", "/bin/true").stderr
    assert "building" not in again
    setup = xlat("trace", "setup").stderr
    assert "the recording tool is built" in setup and str(tmp_path / "cache") in setup
    info = json.loads(_core.trace_info(str(tmp_path / "b.xlat")))
    assert info["trace"]["meta"]["recorder"] == "xlat-vgtool"


@need_valgrind
def test_ifetch_recording_gives_one_fetch_per_instruction(tmp_path):
    exe = tmp_path / "loop10"
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(DATA / "src" / "loop10.c")], check=True)
    out = tmp_path / "if.xlat"
    xlat("trace", "record", "-o", str(out), "--quiet", "--ifetch", "--", str(exe))
    info = json.loads(_core.trace_info(str(out)))
    assert info["ifetches"] == info["instructions"] > 10_000
    assert info["refs_outside_vmas"] == 0


@need_valgrind
def test_recording_a_missing_program_fails_and_leaves_no_trace(tmp_path):
    out = tmp_path / "none.xlat"
    proc = xlat("trace", "record", "-o", str(out), "--", str(tmp_path / "no-such-program"),
                check=False)  # fmt: skip
    assert proc.returncode == 2 and "before the program started" in proc.stderr
    assert not out.exists()


@need_valgrind
def test_lackey_records_a_threaded_program(tmp_path):
    exe, out = tmp_path / "threads", tmp_path / "threads.xlat"
    src = DATA / "src" / "threads.c"
    subprocess.run(["gcc", "-O1", "-pthread", "-o", str(exe), str(src)], check=True)
    proc = xlat("trace", "record", "--tool", "lackey", "-o", str(out), "--", str(exe), check=False)
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(xlat("run", "--trace", str(out), "--json").stdout)
    assert rec["refs"] > 1000 and rec["oracle"]["mismatches"] == 0


@need_valgrind
def test_a_thread_that_reuses_an_exited_threads_slot_is_recorded_as_a_new_thread(tmp_path):
    exe, out = tmp_path / "threads_in_turn", tmp_path / "threads_in_turn.xlat"
    src = DATA / "src" / "threads_in_turn.c"
    subprocess.run(["gcc", "-O1", "-pthread", "-o", str(exe), str(src)], check=True)
    xlat("trace", "record", "--quiet", "-o", str(out), "--", str(exe))
    info = json.loads(xlat("trace", "info", str(out), "--json").stdout)
    # main and two workers (Valgrind numbers both workers 2).
    assert info["threads"] == 3
    # On three cores each runs on its own, every reference checked.
    rec = json.loads(
        xlat("run", "--trace", str(out), "--set", "sim.cores=3", "--warmup", "0", "--json").stdout
    )
    assert rec["oracle"]["mismatches"] == 0
    assert all(core["refs"] > 1 << 14 for core in rec["cores"][1:])
