"""Which build of the Rust core this process loads.

The core is built twice (``make build``, ``make wheel``): ``xlat._core`` for any x86-64 CPU
and ``xlat._core_v3`` for x86-64-v3 (AVX2, BMI2, FMA, ... : Intel since Haswell, AMD since
Excavator), whose whole-set compares use AVX2. Both give bit-identical results (the test suite
runs the golden snapshots under every path); the faster one is loaded when the CPU runs it.
``XLAT_ISA=portable`` or ``XLAT_ISA=v3`` forces a choice (``auto``, the default, decides from
``/proc/cpuinfo``). A build made with ``XLAT_NATIVE=1 make build`` has no ``_core_v3``: its
``_core`` is tuned for the host.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from types import ModuleType

#: CPU flags (as /proc/cpuinfo names them) that x86-64-v3 code may use.
V3_FLAGS = frozenset({"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"})
CHOICES = ("auto", "portable", "v3")


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


def choose(forced: str, flags: frozenset[str], have_v3: bool) -> str:
    """The build to load: ``v3`` when present and runnable (or forced), else ``portable``.

    Examples
    --------
    >>> choose("auto", V3_FLAGS, True), choose("auto", frozenset({"sse2"}), True)
    ('v3', 'portable')
    >>> choose("auto", V3_FLAGS, False), choose("portable", V3_FLAGS, True)
    ('portable', 'portable')
    """
    if forced not in CHOICES:
        raise ImportError(f"XLAT_ISA={forced!r}: expected one of {', '.join(CHOICES)}")
    if forced == "v3":
        if not have_v3:
            raise ImportError(
                "XLAT_ISA=v3 but this installation has no x86-64-v3 build (xlat._core_v3); "
                "`make build` makes one"
            )
        if not V3_FLAGS <= flags:
            missing = ", ".join(sorted(V3_FLAGS - flags))
            raise ImportError(f"XLAT_ISA=v3 but this CPU lacks {missing}")
        return "v3"
    if forced == "auto" and have_v3 and V3_FLAGS <= flags:
        return "v3"
    return "portable"


def load_core() -> ModuleType:
    """Import the chosen build and register it as ``xlat._core`` (what the package imports)."""
    have_v3 = importlib.util.find_spec("xlat._core_v3") is not None
    which = choose(os.environ.get("XLAT_ISA", "auto"), cpu_flags(), have_v3)
    core = importlib.import_module("xlat._core_v3" if which == "v3" else "xlat._core")
    sys.modules["xlat._core"] = core
    return core
