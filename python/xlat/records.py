"""Result records: the one place that says what a record is called and how it is keyed.

A result record is the nested dict a simulation returns (docs/results.md). This module holds
what every other part of the front derives from it — dotted-path access (:func:`flatten`,
:func:`get_path`), the label columns (:func:`config_labels`, :func:`record_labels`) and
speedups — and imports nothing else of xlat.

Module order of the Python front (each imports only from those before it):
``records`` -> ``store`` -> ``run`` -> ``sweeps`` -> ``query`` -> ``report`` -> ``commands`` /
``cli``. A test checks it (tests/test_integrity.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def flatten(record: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten a nested record into dotted keys (``{"tlb": {"l1_misses": 3}}`` becomes
    ``tlb.l1_misses``).

    Examples
    --------
    >>> flatten({"tlb": {"l1_misses": 3}, "refs": 10})
    {'tlb.l1_misses': 3, 'refs': 10}
    """
    out: dict[str, Any] = {}
    for key, value in record.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping):
            out.update(flatten(value, path))
        else:
            out[path] = value
    return out


def get_path(record: Mapping[str, Any], path: str) -> Any:
    """Value at a dotted path of a nested record (KeyError naming the path if absent).

    Examples
    --------
    >>> get_path({"walk": {"count": 4}}, "walk.count")
    4
    """
    node: Any = record
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(path)
        node = node[part]
    return node


def config_labels(config: Mapping[str, Any], trace: str | None) -> tuple[str, str, int]:
    """The label columns (design, workload, seed) of a run with this resolved configuration:
    the one place labels come from. A trace run's workload is the trace file's name.

    Examples
    --------
    >>> config_labels({"sim": {"design": "ecpt", "seed": 2}, "workload": {"name": "stream"}}, None)
    ('ecpt', 'stream', 2)
    """
    sim = config["sim"]
    workload = Path(trace).name if trace else config["workload"]["name"]
    return str(sim["design"]), str(workload), int(sim["seed"])


def record_labels(record: Mapping[str, Any]) -> tuple[str, str, int]:
    """The label columns (design, workload, seed) of a result record, from its resolved
    configuration (a trace run's workload is the trace file's name).

    Examples
    --------
    >>> record_labels({"config": {"sim": {"design": "radix", "seed": 1},
    ...     "workload": {"name": "gups"}}, "trace": {"path": "/t/sort.xlat"}})
    ('radix', 'sort.xlat', 1)
    """
    trace = record.get("trace", {}).get("path")
    return config_labels(record["config"], trace)


#: What a speedup is a ratio of: ``cycles`` = ``timing.cycles`` (the core's time; OS time
#: excluded), ``total`` = ``timing.cycles + timing.os_cycles`` (page faults, page-table
#: allocation and resizing, compaction: the time a design costs the OS as well).
SPEEDUP_METRICS = ("cycles", "total")


def run_time(record: Mapping[str, Any], metric: str = "cycles") -> float:
    """The time of a record that speedups compare (see :data:`SPEEDUP_METRICS`).

    Examples
    --------
    >>> r = {"timing": {"cycles": 100.0, "os_cycles": 20.0}}
    >>> run_time(r), run_time(r, "total")
    (100.0, 120.0)
    """
    if metric not in SPEEDUP_METRICS:
        raise ValueError(f"unknown speedup metric '{metric}'; use one of {SPEEDUP_METRICS}")
    t = record["timing"]
    return float(t["cycles"]) + (float(t.get("os_cycles") or 0.0) if metric == "total" else 0.0)


def speedups(
    records: list[dict], baseline: str | None = None, metric: str = "cycles"
) -> dict[str, float]:
    """Speedup of each design over ``baseline`` (default: the first record): ratio of
    :func:`run_time` (``metric`` ``cycles`` or ``total``, OS time included).

    Examples
    --------
    >>> recs = [{"design": "a", "timing": {"cycles": 200.0, "os_cycles": 0.0}},
    ...         {"design": "b", "timing": {"cycles": 100.0, "os_cycles": 300.0}}]
    >>> speedups(recs)
    {'a': 1.0, 'b': 2.0}
    >>> speedups(recs, metric="total")
    {'a': 1.0, 'b': 0.5}
    """
    if not records:
        return {}
    base = next((r for r in records if r["design"] == baseline), records[0])
    base_time = run_time(base, metric)
    return {
        r["design"]: (base_time / run_time(r, metric)) if run_time(r, metric) else 0.0
        for r in records
    }
