"""Which build of the Rust core this process loads.

The core is built three times (``make build``, ``make wheel``): ``xlat._core`` for any x86-64
CPU, ``xlat._core_v3`` for x86-64-v3 (AVX2, BMI2, FMA, ... : Intel since Haswell, AMD since
Excavator) and ``xlat._core_v4`` for x86-64-v4 (v3 plus AVX-512 F/BW/CD/DQ/VL: Intel Skylake-SP
and later server parts, AMD since Zen 4), whose whole-set compares use AVX2 and AVX-512 (the v4
build is scheduled for Zen 5 but uses only the level's instructions:
``scripts/isa_rustflags.sh``). All give bit-identical results (the test suite runs the golden
snapshots under every path, and the wheel test compares the records of the three builds); the
fastest one the CPU runs is loaded. ``XLAT_ISA=portable``, ``v3`` or ``v4`` forces a choice
(``auto``, the default, decides from ``/proc/cpuinfo``). A build made with ``XLAT_NATIVE=1 make
build`` has neither ``_core_v3`` nor ``_core_v4``: its ``_core`` is tuned for the host.

Run as a script (``python3 python/xlat/_isa.py``) it prints the level this CPU would load
(``make bench`` benchmarks that build).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from types import ModuleType

#: CPU flags (as /proc/cpuinfo names them) that x86-64-v3 code may use.
V3_FLAGS = frozenset({"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"})
#: CPU flags that x86-64-v4 code may use: v3's plus the AVX-512 subsets of the level.
V4_FLAGS = V3_FLAGS | frozenset({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"})
#: The optimized builds, best first, with the flags each needs.
LEVELS = (("v4", V4_FLAGS), ("v3", V3_FLAGS))
CHOICES = ("auto", "portable", "v3", "v4")


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU's feature flags (empty when the file is not readable, e.g. not on Linux).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix="cpuinfo", delete=False) as f:
    ...     _ = f.write("processor : 0\\nflags : fpu sse2 avx2\\n")
    >>> sorted(cpu_flags(f.name))
    ['avx2', 'fpu', 'sse2']
    """
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def choose(forced: str, flags: frozenset[str], available: frozenset[str]) -> str:
    """The build to load: the best of ``available`` the CPU runs (or the forced one).

    ``available`` names the optimized builds this installation has (``"v3"``, ``"v4"``); the
    portable build is always there.

    Examples
    --------
    >>> both = frozenset({"v3", "v4"})
    >>> choose("auto", V4_FLAGS, both), choose("auto", V3_FLAGS, both)
    ('v4', 'v3')
    >>> choose("auto", frozenset({"sse2"}), both), choose("auto", V4_FLAGS, frozenset({"v3"}))
    ('portable', 'v3')
    >>> choose("auto", V4_FLAGS, frozenset()), choose("portable", V4_FLAGS, both)
    ('portable', 'portable')
    """
    if forced not in CHOICES:
        raise ImportError(f"XLAT_ISA={forced!r}: expected one of {', '.join(CHOICES)}")
    if forced == "portable":
        return "portable"
    needs = dict(LEVELS)
    if forced != "auto":
        if forced not in available:
            raise ImportError(
                f"XLAT_ISA={forced} but this installation has no x86-64-{forced} build "
                f"(xlat._core_{forced}); `make build` makes one"
            )
        if not needs[forced] <= flags:
            missing = ", ".join(sorted(needs[forced] - flags))
            raise ImportError(f"XLAT_ISA={forced} but this CPU lacks {missing}")
        return forced
    for level, required in LEVELS:
        if level in available and required <= flags:
            return level
    return "portable"


def load_core() -> ModuleType:
    """Import the chosen build and register it as ``xlat._core`` (what the package imports)."""
    available = frozenset(
        level for level, _ in LEVELS if importlib.util.find_spec(f"xlat._core_{level}") is not None
    )
    which = choose(os.environ.get("XLAT_ISA", "auto"), cpu_flags(), available)
    core = importlib.import_module("xlat._core" if which == "portable" else f"xlat._core_{which}")
    sys.modules["xlat._core"] = core
    return core


if __name__ == "__main__":
    print(choose("auto", cpu_flags(), frozenset(level for level, _ in LEVELS)))
