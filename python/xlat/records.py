"""Result records: the one place that says what a record is called and how it is keyed.

A result record is the nested dict a simulation returns (docs/results.md). This module holds
what every other part of the front derives from it — dotted-path access (:func:`flatten`,
:func:`get_path`), the label columns (:func:`config_labels`, :func:`record_labels`) and
speedups — and imports nothing else of xlat.

Module order of the Python front (each imports only from those before it):
``records`` -> ``values`` -> ``store`` -> ``run`` -> ``sweeps`` -> ``query`` -> ``report`` ->
``commands`` / ``cli``. A test checks it (tests/test_integrity.py).
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


def record_traces(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The trace sections of a record: its ``trace`` (a run of one trace) or each process's
    (a multi-programmed run of several traces); empty for a built-in workload.

    Examples
    --------
    >>> record_traces({"processes": [{"trace": {"path": "a.xlat"}}, {"trace": {"path": "b"}}]})
    [{'path': 'a.xlat'}, {'path': 'b'}]
    >>> record_traces({"workload": "gups"})
    []
    """
    trace = record.get("trace")
    if isinstance(trace, Mapping):
        return [trace]
    processes = record.get("processes")
    if not isinstance(processes, list):
        return []
    return [
        p["trace"]
        for p in processes
        if isinstance(p, Mapping) and isinstance(p.get("trace"), Mapping)
    ]


def record_labels(record: Mapping[str, Any]) -> tuple[str, str, int]:
    """The label columns (design, workload, seed) of a result record, from its resolved
    configuration (a trace run's workload is the trace file's name; several traces' names are
    joined by commas).

    Examples
    --------
    >>> record_labels({"config": {"sim": {"design": "radix", "seed": 1},
    ...     "workload": {"name": "gups"}}, "trace": {"path": "/t/sort.xlat"}})
    ('radix', 'sort.xlat', 1)
    """
    traces = record_traces(record)
    names = ",".join(Path(str(t.get("path", ""))).name for t in traces) if traces else None
    return config_labels(record["config"], names)


def label_columns(record: Mapping[str, Any]) -> dict[str, Any]:
    """Every column of a stored row that labels what was run, from its record: ``design``,
    ``workload``, ``seed``, ``trace`` and ``trace_sha256``, and for a trace run the workload
    columns ``config.workload.name`` (the trace's name, not the built-in workload the unused
    ``[workload]`` defaults name) and ``config.workload.footprint`` (the trace's own footprint,
    ``trace.footprint_bytes``: the bytes of the pages it touches, the same for every design and
    setting; several traces: their sum). A store row agrees with these or is reported by
    ``xlat results --check``.

    Examples
    --------
    >>> rec = {"config": {"sim": {"design": "radix", "seed": 1},
    ...        "workload": {"name": "gups", "footprint": 1 << 30}},
    ...        "trace": {"path": "/t/sort.xlat", "sha256": "ab", "footprint_bytes": 8192}}
    >>> label_columns(rec)["config.workload.name"], label_columns(rec)["config.workload.footprint"]
    ('sort.xlat', 8192)
    """
    design, workload, seed = record_labels(record)
    traces = record_traces(record)
    out: dict[str, Any] = {
        "design": design,
        "workload": workload,
        "seed": seed,
        "trace": ",".join(str(t.get("path")) for t in traces) if traces else None,
        "trace_sha256": ",".join(str(t.get("sha256")) for t in traces) if traces else None,
    }
    if traces:
        feet = [t.get("footprint_bytes") for t in traces]
        whole = all(isinstance(f, int) and not isinstance(f, bool) for f in feet)
        out["config.workload.name"] = workload
        out["config.workload.footprint"] = sum(feet) if whole else None
    return out


#: What a speedup is a ratio of: ``cycles`` = ``timing.cycles`` (the core's time; OS time
#: excluded), ``total`` = ``timing.cycles + timing.os_cycles`` (page faults with the zeroing of
#: the pages they allocate, page-table allocation and resizing, compaction: the time a design
#: costs the OS as well).
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
