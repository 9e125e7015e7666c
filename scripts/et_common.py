"""What ``scripts/et_eval.py`` and ``scripts/et_baselines.py`` share: the run on the
``neoverse-n1`` preset, the four core configurations (4 KiB, THP, mTHP, ET), and the markdown
tables of speedups over the first configuration (with a geometric-mean row) and of TLB-miss
walks per configuration.

Both print to stdout; the scripts import this module from their own folder (``python
scripts/et_eval.py`` puts ``scripts/`` on the path).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from xlat.run import run

#: Baselines run without the contiguous bit: Linux 5.18 (the paper's kernel) sets none on user
#: pages.
NO_CONTIGUOUS_BIT = {"tlb.coalescing": "none"}


def run_n1(design: str, workload: str, footprint: str, base: dict, scale: dict, **sets) -> dict:
    """``xlat.run`` of a built-in workload on the ``neoverse-n1`` preset with ``base`` beneath
    ``sets`` and ``scale`` (``refs``, ...) as keyword arguments."""
    return run(
        design=design,
        workload=workload,
        footprint=footprint,
        cpu="neoverse-n1",
        set=dict(base, **sets),
        **scale,
    )


def core_configs(kind: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """4 KiB, THP and mTHP on radix, and ET (THP never for the 64 KiB-friendly kind, as the
    paper runs that trio): name -> (design, settings).

    Examples
    --------
    >>> core_configs("64 KiB-friendly")["et"]
    ('et', {'os.thp': 'never', 'et.pwc_latency_cycles': 3})
    """
    off = NO_CONTIGUOUS_BIT
    et_thp = "never" if kind.startswith("64") else "always"
    return {
        "4k": ("radix", dict(off, **{"os.thp": "never"})),
        "thp": ("radix", dict(off, **{"os.thp": "always"})),
        "mthp": ("radix", {"os.policy": "mthp", "os.thp": "always"}),
        # The preset's page-walk caches are radix's; et has its own keys: the same values.
        "et": ("et", {"os.thp": et_thp, "et.pwc_latency_cycles": 3}),
    }


def geomean(values: list[float]) -> float:
    """Geometric mean.

    Examples
    --------
    >>> round(geomean([1.0, 4.0]), 6)
    2.0
    """
    return math.exp(sum(map(math.log, values)) / len(values))


def print_speedups(
    labels: list[str],
    rows: list[tuple[list[str], dict[str, float]]],
    names: list[str],
    header: Callable[[str], str] = str,
) -> None:
    """A table of speedups over ``names[0]`` (its cycles / each other configuration's), one row
    per ``(label cells, cycles by configuration)``, then a ``geomean`` row.

    Examples
    --------
    >>> print_speedups(["stand-in"], [(["gups"], {"4k": 2.0, "thp": 1.0})], ["4k", "thp"])
    | stand-in | thp |
    |---|---|
    | gups | 2.00 |
    | geomean | 2.00 |
    """
    print("| " + " | ".join(labels) + " | " + " | ".join(header(n) for n in names[1:]) + " |")
    print("|---" * (len(labels) + len(names) - 1) + "|")
    geo: dict[str, list[float]] = {n: [] for n in names}
    for cells_in, cyc in rows:
        cells = []
        for n in names[1:]:
            s = cyc[names[0]] / cyc[n]
            geo[n].append(s)
            cells.append(f"{s:.2f}")
        print("| " + " | ".join(cells_in) + " | " + " | ".join(cells) + " |")
    blanks = "| " * (len(labels) - 1)
    print(f"| geomean | {blanks}" + " | ".join(f"{geomean(geo[n]):.2f}" for n in names[1:]) + " |")


def print_walks(rows: list[tuple[str, dict[str, int]]], names: list[str]) -> None:
    """A table of TLB-miss walks, one row per ``(stand-in, walks by configuration)``.

    Examples
    --------
    >>> print_walks([("gups", {"4k": 10, "thp": 1})], ["4k", "thp"])
    | stand-in | walks 4k | walks thp |
    |---|---|---|
    | gups | 10 | 1 |
    """
    print("| stand-in | " + " | ".join(f"walks {n}" for n in names) + " |")
    print("|---" * (1 + len(names)) + "|")
    for workload, walks in rows:
        print(f"| {workload} | " + " | ".join(str(walks[n]) for n in names) + " |")
