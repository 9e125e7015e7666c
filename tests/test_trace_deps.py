"""Dependences in recorded traces (issue 39, item 3): xlat's valgrind tool records, per access,
how many accesses back is the load its address derives from (register dataflow); the native
format stores it; the ``ooo`` core honours it unless ``core.dependences = "ignore"``."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, xlat
from xlat import _core, record

SRC = ROOT / "tests" / "data" / "src"
ROB = 224  # core.rob_entries: a dependence further back constrains nothing

pytestmark = pytest.mark.skipif(
    shutil.which("valgrind") is None or shutil.which("gcc") is None,
    reason="recording needs valgrind and gcc (apt-get install valgrind gcc pkg-config libc6-dev)",
)


def _record(tmp: Path, name: str, *flags: str) -> tuple[Path, int, int]:
    """Compile tests/data/src/NAME.c, record it; the trace and the data range it prints."""
    exe = tmp / name
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(SRC / f"{name}.c")], check=True)
    out = tmp / f"{name}{'-'.join(flags)}.xlat"
    proc = xlat("trace", "record", "-o", str(out), "--quiet", *flags, "--", str(exe))
    lo, hi = (int(x, 16) for x in proc.stdout.split()[:2])
    return out, lo, hi


@pytest.fixture(scope="module")
def chase(tmp_path_factory):
    """A shuffled linked list of 131072 64-byte nodes (8 MiB) followed for 300,000 steps."""
    return _record(tmp_path_factory.mktemp("chase"), "chase")


@pytest.fixture(scope="module")
def indep(tmp_path_factory):
    """300,000 reads of an 8 MiB array at indices from a register-only generator."""
    return _record(tmp_path_factory.mktemp("indep"), "indep")


def _loads(trace: Path, lo: int, hi: int) -> list[int]:
    acc = _core.trace_deps(str(trace), lo, hi, limit=10**7)
    return [dep for kind, _, dep in acc if kind == "load"]


def test_every_step_of_a_recorded_pointer_chase_depends_on_the_previous_load(chase):
    trace, lo, hi = chase
    deps = _loads(trace, lo, hi)
    # The list is written once (stores) and then read by the chase only: 300,000 loads.
    assert len(deps) == 300_000
    assert sum(d == 1 for d in deps) / len(deps) > 0.99
    info = json.loads(_core.trace_info(str(trace)))
    assert info["trace"]["version"] == 4
    assert info["trace"]["dependences"] == record.DEPENDENCES_RECORDED
    assert "dependences   recorded (register dataflow" in xlat("trace", "info", str(trace)).stdout


def test_independent_reads_carry_no_dependence_the_rob_could_see(indep):
    trace, lo, hi = indep
    deps = _loads(trace, lo, hi)
    assert len(deps) == 300_000
    # Their base pointer came from malloc (a load inside it), so the first 65,535 accesses
    # after it depend on that load, far beyond the ROB; none depends on a recent load.
    assert sum(0 < d <= ROB for d in deps) / len(deps) < 0.001


def _ipc(trace: Path, *sets: str) -> dict:
    args = ["run", "--design", "radix", "--trace", str(trace), "--json"]
    for s in ("timing.model=ooo", *sets):
        args += ["--set", s]
    return json.loads(xlat(*args).stdout)


def test_honouring_a_recorded_chase_s_dependences_lowers_its_ipc(chase, indep):
    trace, _, _ = chase
    honoured = _ipc(trace)
    ignored = _ipc(trace, "core.dependences=ignore")
    assert honoured["trace"]["dependences"] == record.DEPENDENCES_RECORDED
    # The default is left out of the record's configuration; `ignore` is said.
    assert "dependences" not in honoured["config"]["core"]
    assert ignored["config"]["core"]["dependences"] == "ignore"
    assert honoured["refs"] == ignored["refs"]
    # Every functional figure is the same: only the core's timing moves.
    assert honoured["tlb"] == ignored["tlb"] and honoured["cache"] == ignored["cache"]
    assert honoured["timing"]["ipc"] < 0.7 * ignored["timing"]["ipc"]
    # Independent reads barely move.
    trace, _, _ = indep
    a, b = _ipc(trace)["timing"]["ipc"], _ipc(trace, "core.dependences=ignore")["timing"]["ipc"]
    assert a > 0.9 * b


def test_a_recording_without_dependences_says_so_and_carries_none(tmp_path):
    trace, lo, hi = _record(tmp_path, "chase", "--no-deps")
    assert set(_loads(trace, lo, hi)) == {0}
    info = json.loads(_core.trace_info(str(trace)))
    assert info["trace"]["dependences"].startswith("unknown: not recorded (--no-deps)")


def test_an_unknown_value_of_core_dependences_is_refused():
    proc = xlat("run", "--set", "core.dependences=sometimes", "--refs", "1k", check=False)
    assert proc.returncode != 0 and "dependences" in proc.stderr


def _stream(lib: Path, exe: Path, out: Path, inline: str) -> list[tuple[int, int, int]]:
    """The tool's raw stream for EXE as (type, instructions, dependence) per access."""
    subprocess.run(
        f"valgrind --tool=xlat -q --xlat-fd=3 --xlat-inline={inline} {exe} 3>{out} >/dev/null",
        shell=True, check=True, env=dict(os.environ, VALGRIND_LIB=str(lib)),
    )  # fmt: skip
    data = out.read_bytes()
    words = struct.unpack(f"<{len(data) // 8}Q", data)
    args = {0x10: 4, 0x11: 2, 0x12: 1, 0x13: 3, 0x14: 3, 0x21: 1, 0x30: 1, 0x31: 1}
    acc, i = [], 0
    while i < len(words):
        h = words[i]
        if h & 0xFF <= 2:
            acc.append((h & 0xFF, (h >> 16) & 0xFFFF_FFFF, h >> 48))
            i += 2
        else:
            i += 1 + args[h & 0xFF]
    return acc


def test_records_written_inline_and_by_the_helper_carry_the_same_dependences(tmp_path):
    # The helper path (--xlat-inline=no, and guarded accesses) counts accesses itself: a base
    # read before it must not be moved past it (VEX's tree builder did, off by one).
    lib = record.tool_lib_dir() or record.build_tool()
    exe = tmp_path / "chase"
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(SRC / "chase.c")], check=True)
    inline = _stream(lib, exe, tmp_path / "inline.bin", "yes")
    helper = _stream(lib, exe, tmp_path / "helper.bin", "no")
    assert len(inline) > 1_000_000 and inline == helper


def test_the_heat_of_a_recorded_chase_counts_its_dependent_loads(chase):
    trace, lo, hi = chase
    h = json.loads(xlat("analyze", "heat", "--trace", str(trace), "--warmup", "0", "--json").stdout)
    assert h["dependences"] == record.DEPENDENCES_RECORDED
    # Independent path: the trace's dependences through another binding, counted here.
    acc = _core.trace_deps(str(trace), 0, 2**64 - 1, limit=10**8)
    assert h["refs"] == len(acc)
    assert h["dependent_refs"] == sum(dep > 0 for _, _, dep in acc)
    assert h["dependent_within"][0] == sum(dep == 1 for _, _, dep in acc)
    # The 300,000 chase loads each depend on the load just before.
    assert h["dependent_within"][0] >= 0.99 * 300_000
