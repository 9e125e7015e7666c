"""xlat: a fast, checked simulator of virtual-memory address translation.

The simulation runs in the Rust core (``xlat._core``); this package is the front: the
:func:`run` and :func:`compare` API, sweeps on Ray with a DuckDB result store (:func:`sweep`,
:func:`results`, both returning pandas DataFrames), the ``xlat`` command line, presets and
reports.

Examples
--------
>>> import xlat
>>> "radix" in xlat.designs()
True
>>> rec = xlat.run(design="radix", workload="gups", footprint="16MiB", refs="20k")
>>> rec["refs"], rec["oracle"]["mismatches"]
(20000, 0)
"""

from xlat._isa import load_core

_core = load_core()  # the portable, x86-64-v3 or x86-64-v4 build of the core (see xlat._isa)

from xlat._core import XlatError  # noqa: E402
from xlat.query import export, results  # noqa: E402
from xlat.records import flatten, get_path, speedups  # noqa: E402
from xlat.run import (  # noqa: E402
    compare,
    cpus,
    designs,
    model_version,
    model_version_of,
    run,
    version,
    workloads,
)
from xlat.sweeps import sweep  # noqa: E402

__all__ = [
    "XlatError",
    "compare",
    "cpus",
    "designs",
    "export",
    "flatten",
    "get_path",
    "results",
    "run",
    "speedups",
    "sweep",
    "version",
    "model_version",
    "model_version_of",
    "workloads",
]
__version__ = version()
