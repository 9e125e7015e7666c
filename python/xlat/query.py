"""Querying the result store: filters, grouping, pivots and speedup tables as DataFrames.

Column names are the store's (docs/sweeps.md): metadata columns (``design``, ``workload``,
``seed``, ``status``, ...) and the record's figures by dotted path (``tlb.l2_mpki``,
``config.os.thp``). Where a name is not a column, ``config.NAME`` is tried, so ``os.thp`` and
``radix.levels`` name the configuration keys as ``--set`` does.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from xlat import _core
from xlat.run import cpu_keys
from xlat.run import designs as registered_designs
from xlat.store import DEFAULT_DB, META_NAMES, TABLE, Store, StoreError, quote
from xlat.sweeps import expand, load_spec, parse_spec

#: Columns ``xlat results`` shows when none are asked for (figures after the grid keys).
HEADLINE = [
    "timing.cycles",
    "tlb.l1_mpki",
    "tlb.l2_mpki",
    "walk.mem_accesses",
    "walk.cycles",
    "mmu.overhead_cycles",
    "page_table.bytes",
]

#: Aggregations accepted by ``--agg``.
AGGS = ("mean", "geomean", "median", "min", "max", "sum", "count")

_FILTER = re.compile(r"^\s*([^!<>=]+?)\s*(!=|<=|>=|=|<|>)\s*(.*)$")


class QueryError(ValueError):
    """A query naming an unknown column, a bad filter or an empty result where one is needed."""


def resolve_column(name: str, columns: Iterable[str], prefer: str = "figure") -> str:
    """The store column a user-facing name refers to.

    A metadata column (``design``, ``seed``, ...) is itself. Otherwise ``prefer`` decides
    between a figure column ``NAME`` and the configuration column ``config.NAME`` when both
    exist: ``"config"`` for filters and grouping (``radix.levels`` names the configuration key,
    as ``--set`` does, which every row has, not the radix-only figure of the same name),
    ``"figure"`` for values and shown columns. A name that is neither is matched against the
    columns' dotted suffixes (``l2_mpki`` -> ``tlb.l2_mpki``); a suffix that several columns
    share is ambiguous, and an error lists them.

    Examples
    --------
    >>> cols = ["design", "radix.levels", "config.radix.levels", "config.ideal.levels"]
    >>> resolve_column("radix.levels", cols, prefer="config")
    'config.radix.levels'
    >>> resolve_column("radix.levels", cols)
    'radix.levels'
    >>> resolve_column("levels", cols)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    xlat.query.QueryError: column name 'levels' is ambiguous: it could be radix.levels, ...
    >>> resolve_column("desgn", ["design", "workload"])
    Traceback (most recent call last):
    ...
    xlat.query.QueryError: no column 'desgn' in the store (did you mean 'design'?)
    """
    cols = list(columns)
    config_name = f"config.{name}"
    if name in META_NAMES and name in cols:
        return name
    if prefer == "config" and config_name in cols:
        return config_name
    if name in cols:
        return name
    if config_name in cols:
        return config_name
    suffix = [c for c in cols if c.endswith("." + name)]
    if len(suffix) == 1:
        return suffix[0]
    if suffix:
        raise QueryError(f"column name '{name}' is ambiguous: it could be {', '.join(suffix)}")
    close = difflib.get_close_matches(name, cols, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    raise QueryError(f"no column '{name}' in the store{hint}")


def parse_filters(where: Mapping[str, Any] | Iterable[str] | None) -> list[tuple[str, str, Any]]:
    """Filters as ``(column, operator, value)``: from ``{"design": "radix"}`` (a list value means
    any of them) or from strings ``KEY=VALUE``, ``KEY!=VALUE``, ``KEY<VALUE`` ... where a
    comma-separated VALUE after ``=`` means any of them.

    Examples
    --------
    >>> parse_filters(["design=radix,ideal", "tlb.l2_mpki>5"])
    [('design', 'in', ['radix', 'ideal']), ('tlb.l2_mpki', '>', '5')]
    >>> parse_filters({"os.thp": "always"})
    [('os.thp', 'in', ['always'])]
    """
    out: list[tuple[str, str, Any]] = []
    if where is None:
        return out
    if isinstance(where, Mapping):
        for key, value in where.items():
            values = value if isinstance(value, (list, tuple, set)) else [value]
            out.append((str(key), "in", [_text(v) for v in values]))
        return out
    for item in where:
        m = _FILTER.match(item)
        if not m:
            raise QueryError(f"filter '{item}' is not KEY=VALUE (or !=, <, <=, >, >=)")
        key, op, value = m.groups()
        if op == "=":
            out.append((key, "in", [v.strip() for v in value.split(",")]))
        elif op == "!=":
            out.append((key, "not in", [v.strip() for v in value.split(",")]))
        else:
            out.append((key, op, value.strip()))
    return out


def _text(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def load_rows(
    db: str | Path = DEFAULT_DB,
    where: Mapping[str, Any] | Iterable[str] | None = None,
    status: str | None = "ok",
    hashes: Iterable[str] | None = None,
    columns: Iterable[str] | None = None,
):
    """Rows of the store as a DataFrame: every column, or ``columns`` (resolved as in
    :func:`resolve_column`); ``status`` None keeps failed runs too."""
    store = Store(db)
    all_cols = store.columns()
    clauses, params = [], []
    if status is not None:
        clauses.append("status = ?")
        params.append(status)
    for key, op, value in parse_filters(where):
        col = quote(resolve_column(key, all_cols, prefer="config"))
        if op in ("in", "not in"):
            marks = ", ".join("?" * len(value))
            clauses.append(f"CAST({col} AS VARCHAR) {op.upper()} ({marks})")
            params += value
        else:
            try:
                params.append(float(value))
            except ValueError:
                raise QueryError(f"filter {key}{op}{value}: '{value}' is not a number") from None
            clauses.append(f"{col} {op} ?")
    if hashes is not None:
        hashes = list(hashes)
        if not hashes:
            hashes = [""]
        clauses.append(f"config_hash IN ({', '.join('?' * len(hashes))})")
        params += hashes
    select = "*"
    if columns is not None:
        select = ", ".join(quote(resolve_column(c, all_cols)) for c in columns)
    sql = f"SELECT {select} FROM {TABLE}"
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    return store.query(sql + " ORDER BY workload, design, seed, config_hash", params)


def varying_params(df) -> list[str]:
    """Configuration columns (``config.*``) whose value differs between rows, other than the
    design and the seed: the grid's swept parameters.

    A CPU preset (``config.sim.cpu``, see docs/machine.md) sets many keys at once: when the
    CPU varies, a key its preset file sets is listed only if it also varies among the rows of
    one CPU (swept on top of the presets), else the ``sim.cpu`` column says it all.

    Examples
    --------
    >>> import pandas as pd
    >>> varying_params(pd.DataFrame({"config.os.thp": ["never", "always"],
    ...     "config.sim.design": ["radix", "ideal"], "config.radix.levels": [4, 4]}))
    ['config.os.thp']
    >>> varying_params(pd.DataFrame({"config.sim.cpu": ["zen4", "neoverse-n1"],
    ...     "config.tlb.l2.entries": [3072, 1280], "config.os.thp": ["never", "always"]}))
    ['config.sim.cpu', 'config.os.thp']

    Likewise a design's profile (docs/profiles.md): a key whose value a profile set in some
    rows (the record's ``config_sources``) is listed only if it varies among the other rows;
    ``sim.profile`` only if it varies among the rows of one design (a ``profiles`` axis); and
    ``sim.warmup_refs`` not at all when every row chose it by ``"auto"`` (it follows the
    workload's setup):

    >>> varying_params(pd.DataFrame({"config.sim.design": ["radix", "tps"],
    ...     "config.sim.profile": ["radix", "tps"], "config.os.policy": ["thp", "reservation"],
    ...     "config_sources.os.policy": [None, "profile:tps"],
    ...     "config.sim.warmup_refs": [4098, 4104], "warmup.why": ["auto_first_touch_phase"] * 2}))
    []
    """
    skip = {"config.sim.design", "config.sim.seed", "config.workload.name"}
    why = df["warmup.why"].astype(str) if "warmup.why" in df.columns else None
    if why is not None and why.str.startswith("auto").all():
        skip.add("config.sim.warmup_refs")
    out = [
        c
        for c in df.columns
        if c.startswith("config.") and c not in skip and df[c].astype(str).nunique() > 1
    ]
    design = "config.sim.design"
    if "config.sim.profile" in out and design in df.columns:
        if not (df.astype(str).groupby(design)["config.sim.profile"].nunique() > 1).any():
            out.remove("config.sim.profile")

    def set_by_a_profile(c: str):
        source = df.get("config_sources." + c.removeprefix("config."))
        return None if source is None else source.astype(str).str.startswith("profile:")

    kept = []
    for c in out:
        by_profile = set_by_a_profile(c)
        if by_profile is None or not by_profile.any():
            kept.append(c)
        elif df.loc[~by_profile, c].astype(str).nunique() > 1:
            kept.append(c)
    out = kept
    cpu = "config.sim.cpu"
    if cpu in out:
        implied = set()
        for name in df[cpu].astype(str).unique():
            implied |= {f"config.{k}" for k in cpu_keys(name)} if name else set()
        by_cpu = df.astype({c: str for c in out}).groupby(cpu)
        out = [c for c in out if c not in implied or (by_cpu[c].nunique() > 1).any()]
    return out


def default_index(df) -> list[str]:
    """What a table is indexed by when no ``by`` is given: workload plus the swept parameters."""
    return ["workload"] + varying_params(df)


def design_order(names: Iterable[str]) -> list[str]:
    """Designs in registry order (unknown names last, alphabetically).

    Examples
    --------
    >>> design_order(["ideal", "zz", "radix"])
    ['radix', 'ideal', 'zz']
    """
    reg = registered_designs()
    names = set(names)
    return [d for d in reg if d in names] + sorted(names - set(reg))


def geomean(values) -> float:
    """Geometric mean of positive values (NaN if any is not positive or there are none).

    Examples
    --------
    >>> geomean([1.0, 4.0])
    2.0
    """
    vals = [float(v) for v in values if v == v]
    if not vals or any(v <= 0 for v in vals):
        return float("nan")
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def _agg(agg: str):
    if agg not in AGGS:
        raise QueryError(f"unknown aggregation '{agg}'; use one of {', '.join(AGGS)}")
    return geomean if agg == "geomean" else agg


def with_speedup(df, baseline: str, metric: str = "cycles"):
    """``df`` plus a column ``speedup``: the baseline design's time on the same grid point
    (``point_hash``) divided by the row's. Rows without a baseline run get NaN.

    ``metric`` is ``cycles`` (``timing.cycles``), ``total`` (``timing.cycles +
    timing.os_cycles``: OS time included, see ``xlat.records.SPEEDUP_METRICS``) or any numeric
    column (a time: smaller is faster)."""
    if baseline not in set(df["design"]):
        raise QueryError(
            f"no stored run of baseline design '{baseline}' among the selected rows "
            f"(designs: {', '.join(design_order(df['design']))})"
        )
    if metric in ("cycles", "timing.cycles"):
        time = df["timing.cycles"].astype(float)
    elif metric == "total":
        time = df["timing.cycles"].astype(float) + df["timing.os_cycles"].astype(float).fillna(0)
    elif metric in df.columns:
        time = df[metric].astype(float)
    else:
        raise QueryError(f"unknown speedup metric '{metric}'; use cycles or total")
    df = df.assign(_time=time)
    base = df[df["design"] == baseline].drop_duplicates("point_hash").set_index("point_hash")
    ref = df["point_hash"].map(base["_time"])
    return df.assign(speedup=ref.astype(float) / df["_time"]).drop(columns="_time")


def with_speedup_estimates(df, baseline: str, metric: str = "cycles"):
    """``df`` (with its ``speedup`` column, :func:`with_speedup`) plus a column
    ``speedup_estimate``: each run's speedup over the baseline's run of the same grid point as
    an :class:`xlat.intervals.LogEstimate` (the baseline's own runs exact; a pair with a
    sampled run with its sampling interval, paired window by window when both runs were
    sampled at the same references, :func:`xlat.intervals.pair_estimate`; two unsampled runs
    without an interval)."""
    from xlat import intervals

    total = "total" if metric == "total" else "cycles"
    wanted = ["design", "point_hash", "speedup", "timing.cycles", "timing.os_cycles"]
    wanted += ["sampling.windows"] + [c for c in df.columns if c.startswith(intervals.CPR_KEY)]
    wanted += [intervals.WINDOWS_KEY, *intervals.PAIRED_KEYS]
    rows = df[list(dict.fromkeys(c for c in wanted if c in df.columns))].to_dict("records")
    base = {}
    for r in rows:
        if r["design"] == baseline:
            base.setdefault(r["point_hash"], r)
    est = []
    for r in rows:
        sp = r.get("speedup")
        if r["design"] == baseline:
            est.append(intervals.exact(1.0))
        elif r["point_hash"] not in base or not (sp == sp) or metric not in ("cycles", "total"):
            est.append(intervals.none(sp if sp == sp else float("nan")))
        else:
            est.append(intervals.pair_estimate(base[r["point_hash"]], r, total))
    out = df.copy()  # one block per dtype: a wide stored frame would warn of fragmentation
    out["speedup_estimate"] = est
    return out


def speedup_estimates(df, index: list[str], table) -> dict:
    """The estimate of every cell of :func:`speedup_table`'s ``table`` (built from ``df`` with
    :func:`with_speedup_estimates`), keyed ``(row key, design)``: a cell's seeds give Student's
    t interval, one run its sampling interval (:func:`xlat.intervals.cell_estimate`); a
    geomean row combines its workloads' cells (:func:`xlat.intervals.geomean_estimate`)."""
    from xlat import intervals

    cells: dict[tuple, dict[str, Any]] = {}
    for key, g in df.groupby([*index, "design"], sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        cells.setdefault(tuple(key[:-1]), {})[key[-1]] = intervals.cell_estimate(
            [float(v) for v in g["speedup"]], list(g["speedup_estimate"])
        )
    pos = index.index("workload") if "workload" in index else None
    per_setting = pos is not None and len(index) > 1

    def others(k: tuple) -> tuple:
        return k[:pos] + k[pos + 1 :] if per_setting else ()

    out = {}
    for row in table.index:
        k = row if isinstance(row, tuple) else (row,)
        for d in table.columns:
            if k in cells:
                e = cells[k].get(d)
            else:  # a geomean row: its setting's workloads (or every row)
                members = [m for m in cells if others(m) == others(k)]
                parts = [cells[m].get(d) for m in members]
                e = (
                    intervals.geomean_estimate(parts)
                    if parts and all(p is not None and p.point == p.point for p in parts)
                    else None
                )
            out[(row, d)] = e if e is not None else intervals.none(float("nan"))
    return out


def with_intervals(table, estimates: dict):
    """``table`` (:func:`speedup_table`) with columns ``DESIGN.ci95_low`` and
    ``DESIGN.ci95_high`` after each design's when some cell has an interval (the table
    unchanged otherwise), and in ``attrs["speedup_notes"]`` the lines to print once under it
    (:func:`xlat.intervals.notes`).

    Examples
    --------
    >>> import pandas as pd
    >>> from xlat import intervals
    >>> t = pd.DataFrame({"radix": [1.0], "ecpt": [1.01]}, index=pd.Index(["gups"], name="w"))
    >>> est = {("gups", "radix"): intervals.exact(1.0),
    ...        ("gups", "ecpt"): intervals.seed_estimate([0.99, 1.02, 1.02])}
    >>> out = with_intervals(t, est)
    >>> list(out.columns)
    ['radix', 'radix.ci95_low', 'radix.ci95_high', 'ecpt', 'ecpt.ci95_low', 'ecpt.ci95_high']
    >>> out.attrs["speedup_notes"][-1]
    '* the interval contains 1.0: not distinguishable from 1.0'
    """
    from xlat import intervals

    labels = {f"{d} @ {row}": e for (row, d), e in estimates.items()}
    lines = intervals.notes(labels, cells=True)
    if not any(e.has_interval for e in estimates.values()):
        table.attrs["speedup_notes"] = lines
        return table
    cols = {}
    for d in table.columns:
        cols[d] = table[d]
        bounds = [estimates[(row, d)].bounds() for row in table.index]
        cols[f"{d}.ci95_low"] = [b[1] for b in bounds]
        cols[f"{d}.ci95_high"] = [b[2] for b in bounds]
    import pandas as pd

    out = pd.DataFrame(cols, index=table.index)
    out.columns.name = table.columns.name
    out.attrs["speedup_notes"] = lines
    return out


def interval_display(table):
    """A speedup table with intervals (:func:`with_intervals`) for the screen: each design's
    cell as ``1.012 [0.995, 1.030]*`` (:func:`xlat.intervals.interval_cell`), the bound
    columns folded into it; a table without them is returned as it is.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"ecpt": [1.01], "ecpt.ci95_low": [0.99], "ecpt.ci95_high": [1.03]})
    >>> interval_display(t)["ecpt"].tolist()
    ['1.010 [0.990, 1.030]*']
    """
    from xlat.intervals import interval_cell

    lows = [c for c in table.columns if str(c).endswith(".ci95_low")]
    if not lows:
        return table
    out = table.copy()
    for c in lows:
        d = str(c)[: -len(".ci95_low")]
        out[d] = [
            interval_cell(p, lo, hi)
            for p, lo, hi in zip(table[d], table[c], table[f"{d}.ci95_high"])
        ]
        out = out.drop(columns=[c, f"{d}.ci95_high"])
    return out


def _strip(name: str) -> str:
    return name[len("config.") :] if name.startswith("config.") else name


def pivot_table(
    df, by: list[str], pivot: str, value: str, agg: str = "mean", total: str | None = None
):
    """``value`` aggregated by ``by`` (rows) x ``pivot`` (columns); ``total`` adds a last row
    aggregating each column with that aggregation (e.g. ``"geomean"``)."""
    import pandas as pd

    table = df.pivot_table(index=by, columns=pivot, values=value, aggfunc=_agg(agg), sort=True)
    if pivot == "design":
        table = table[design_order(table.columns)]
    if total:
        row = table.apply(
            lambda col: _agg(total)(col.dropna()) if total != "geomean" else geomean(col)
        )
        key = (total,) + ("",) * (len(by) - 1) if len(by) > 1 else total
        extra = pd.DataFrame(
            [row.values],
            columns=table.columns,
            index=pd.MultiIndex.from_tuples([key], names=table.index.names)
            if len(by) > 1
            else pd.Index([key], name=table.index.name),
        )
        table = pd.concat([table, extra])
    table.columns.name = _strip(pivot)
    table.index.names = [_strip(n) for n in table.index.names]
    return table


def speedup_table(df, index: list[str]):
    """Speedups (column ``speedup``) by ``index`` x design, geometric mean over seeds, with
    geomean rows over the workloads: one for each setting of the other ``index`` keys (a
    geomean never pools two THP settings or footprints), keyed ``geomean`` in the workload
    place; a single ``geomean`` row when the workload is the only key or not a key.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"workload": ["a", "b"] * 2, "config.os.thp": ["never"] * 2
    ...     + ["always"] * 2, "design": ["x"] * 4, "speedup": [1.0, 4.0, 2.0, 2.0]})
    >>> speedup_table(df, ["workload", "config.os.thp"])["x"].round(3).to_dict()
    {('a', 'always'): 2.0, ('a', 'never'): 1.0, ('b', 'always'): 2.0, ('b', 'never'): 4.0, \
('geomean', 'always'): 2.0, ('geomean', 'never'): 2.0}
    """
    import pandas as pd

    others = [k for k in index if k != "workload"]
    if "workload" not in index or not others:
        return pivot_table(df, index, "design", "speedup", "geomean", total="geomean")
    table = pivot_table(df, index, "design", "speedup", "geomean")
    names = list(table.index.names)
    pos = names.index("workload")
    rows, keys = [], []
    for setting, part in table.groupby(level=[n for n in names if n != "workload"], sort=True):
        setting = setting if isinstance(setting, tuple) else (setting,)
        rows.append(part.apply(geomean).values)
        keys.append(setting[:pos] + ("geomean",) + setting[pos:])
    extra = pd.DataFrame(
        rows, columns=table.columns, index=pd.MultiIndex.from_tuples(keys, names=names)
    )
    return pd.concat([table, extra])


def results(
    db: str | Path = DEFAULT_DB,
    where: Mapping[str, Any] | Iterable[str] | None = None,
    status: str | None = "ok",
    columns: Iterable[str] | None = None,
    by: Iterable[str] | None = None,
    pivot: str | None = None,
    value: str | None = None,
    agg: str = "mean",
    speedup_over: str | None = None,
    spec: str | Path | Mapping[str, Any] | None = None,
    metric: str = "cycles",
    intervals: bool = False,
):
    """Query the result store; returns a pandas DataFrame.

    ``spec`` (a sweep spec file or mapping) keeps only the runs of that sweep.

    - Plain: one row per stored run (``status`` ``"ok"`` by default, ``"failed"``, or None for
      all), every column or ``columns``; ``where`` filters (``{"design": "radix"}`` or strings
      ``"design=radix"``, ``"tlb.l2_mpki>5"``).
    - ``speedup_over=DESIGN``: the speedup of every design over DESIGN (ratio of ``metric`` on
      the same grid point: ``cycles``, the core's time, or ``total``, OS time included), rows
      ``by`` (default: workload and every swept parameter) x designs, geometric mean over seeds
      and a final ``geomean`` row. With ``intervals``, each design's 95 % interval follows
      it as ``DESIGN.ci95_low`` and ``DESIGN.ci95_high`` where the runs carry one (from
      several seeds per point, or from sampled runs; docs/timing.md, "Intervals of
      speedups"), and ``attrs["speedup_notes"]`` holds the lines to print once under it.
    - ``value`` with ``by`` (and optionally ``pivot``): ``value`` aggregated with ``agg``.

    Examples
    --------
    >>> import tempfile, os, xlat
    >>> db = os.path.join(tempfile.mkdtemp(), "r.duckdb")
    >>> _ = xlat.sweep({"designs": ["radix", "perfect_tlb"], "workloads": ["gups", "stream"],
    ...                 "footprint": "16MiB", "refs": "20k"}, db, workers=1)
    >>> results(db, where={"design": "radix"})[["design", "workload"]]
      design workload
    0  radix     gups
    1  radix   stream
    >>> t = results(db, speedup_over="radix")
    >>> list(t.columns), list(t.index)
    (['radix', 'perfect_tlb'], ['gups', 'stream', 'geomean'])
    >>> t["radix"].tolist()
    [1.0, 1.0, 1.0]
    >>> results(db, speedup_over="radix", metric="total")["radix"].tolist()
    [1.0, 1.0, 1.0]
    >>> int(results(db, by=["design"], value="walk.count", agg="sum").loc["perfect_tlb"])
    0
    """
    hashes = None
    if spec is not None:
        parsed = parse_spec(spec) if isinstance(spec, Mapping) else load_spec(spec)
        hashes = [r.config_hash for r in expand(parsed)]
    if speedup_over is not None:
        df = load_rows(db, where, "ok", hashes)
        if df.empty:
            raise QueryError("no stored run matches the filters")
        _one_model(df)
        df = with_speedup(df, speedup_over, metric)
        index = _index(by, df)
        if "design" in index:
            raise QueryError(
                "--by design: a speedup table has one column per design; "
                "group its rows by other keys (workload, a swept parameter, seed)"
            )
        table = speedup_table(df, index)
        if not intervals:
            return table
        df = with_speedup_estimates(df, speedup_over, metric)
        return with_intervals(table, speedup_estimates(df, index, table))
    if value is not None:
        df = load_rows(db, where, status, hashes)
        if df.empty:
            raise QueryError("no stored run matches the filters")
        val = resolve_column(value, df.columns)
        index = _index(by, df)
        piv = resolve_column(pivot, df.columns, prefer="config") if pivot is not None else None
        _check_grouping(df, index, piv, val, agg)
        if piv is not None:
            return pivot_table(df, index, piv, val, agg)
        out = df.groupby(index)[val].agg(_agg(agg))
        out.index.names = [_strip(n) for n in out.index.names]
        return out
    if by or pivot:
        raise QueryError("grouping (by/pivot) needs a value to aggregate (--value COLUMN)")
    if columns is None:
        return load_rows(db, where, status, hashes)
    return load_rows(db, where, status, hashes, columns=columns)


def _one_model(df) -> None:
    """Refuse speedups between runs of different models (``model_version``; rows made before
    records carried it are not counted): they compare two simulators, not two designs. Rows are
    of one model when each has its run's version as of the newest among them
    (``xlat.model_version_as_of``): a change that moved one design's runs (version 6, LVM) or
    one workload's (version 7, memcached) leaves the others at version 5, the same model.

    Examples
    --------
    >>> import pandas as pd
    >>> _one_model(pd.DataFrame({"model_version": [1, 1, None]}))
    >>> _one_model(pd.DataFrame({"model_version": [5, 6], "design": ["radix", "lvm"]}))
    >>> _one_model(pd.DataFrame({"model_version": [1, 2]}))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    xlat.query.QueryError: the selected runs come from model versions 1, 2: a speedup ...
    """
    if "model_version" not in df.columns:
        return
    rows = df[df["model_version"].notna()]
    versions = sorted({int(v) for v in rows["model_version"]})
    if len(versions) > 1 and all(
        int(r["model_version"]) == _core.model_version_as_of(*_run_shape(r), versions[-1])
        for _, r in rows.iterrows()
    ):
        return
    if len(versions) > 1:
        raise QueryError(
            f"the selected runs come from model versions {', '.join(map(str, versions))}: a "
            "speedup between two models compares two simulators; rerun the sweep (it reruns "
            "the older rows) or select one version with --where model_version=N"
        )


def _run_shape(row) -> tuple[int, int, str, str]:
    """(cores, processes, design, workload) of a stored run's row, as ``model_version_of``
    takes them: cores from ``config.sim.cores``, processes from ``machine.processes``, else one
    for a trace and one per comma-separated workload.

    >>> _run_shape({"design": "radix", "workload": "gups,kv"})
    (1, 2, 'radix', 'gups,kv')
    """

    def known(key):
        v = row.get(key)
        return v is not None and v == v  # not None, not NaN

    cores = int(row["config.sim.cores"]) if known("config.sim.cores") else 1
    if known("machine.processes"):
        processes = int(row["machine.processes"])
    elif known("trace"):
        processes = 1
    else:
        processes = len(str(row.get("workload") or "").split(","))
    return cores, processes, str(row.get("design") or ""), str(row.get("workload") or "")


def _index(by: Iterable[str] | None, df) -> list[str]:
    """The row keys of a table: ``by`` resolved as configuration-first names, or the default."""
    if not by:
        return default_index(df)
    index = [resolve_column(b, df.columns, prefer="config") for b in by]
    if len(set(index)) != len(index):
        raise QueryError(f"--by names a column twice: {', '.join(index)}")
    return index


def _check_grouping(df, index: list[str], pivot: str | None, value: str, agg: str) -> None:
    """Reject a table whose keys overlap or whose value cannot be aggregated, naming them."""
    import pandas as pd

    keys = index + ([pivot] if pivot else [])
    if pivot is not None and pivot in index:
        raise QueryError(f"--pivot {_strip(pivot)} is also a --by column; name each column once")
    if value in keys:
        raise QueryError(
            f"--value {_strip(value)} is also a --by/--pivot column; aggregate another column"
        )
    column = df[value]
    if agg != "count" and not (
        pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)
    ):
        raise QueryError(
            f"--value {value} is not numeric (values such as {column.dropna().iloc[0]!r}) and "
            f"cannot be aggregated with {agg}; --agg count counts rows"
            if column.notna().any()
            else f"--value {value} holds no values among the selected rows"
        )


def default_columns(df) -> list[str]:
    """The columns ``xlat results`` prints by default for plain rows: the grid keys, and for
    failed rows also the point's footprint, refs and ``[set]`` keys (which point failed)."""
    params = varying_params(df)
    cols = ["design", "workload"] + params + ["seed", "status"]
    if "error" in df.columns and df["status"].ne("ok").any():
        import json

        keys = ["workload.footprint", "sim.refs"]
        for text in df.loc[df["status"].ne("ok"), "params"].dropna():
            keys += [k for k in json.loads(text) if k not in keys]
        point = [f"config.{k}" for k in keys if f"config.{k}" in df.columns]
        cols[2:2] = [c for c in point if c not in params]
        cols.append("error")
    return cols + [c for c in HEADLINE if c in df.columns]


def format_frame(obj, fmt: str = "table") -> str:
    """Render a query result as an aligned text table, CSV or JSON (a list of row objects).

    Examples
    --------
    >>> import pandas as pd
    >>> print(format_frame(pd.DataFrame({"design": ["radix"], "x": [1.23456]}), "csv"))
    design,x
    radix,1.23456
    <BLANKLINE>
    >>> format_frame(pd.DataFrame({"design": ["radix"], "x": [1.5]}), "json")
    '[{"design":"radix","x":1.5}]'
    """
    import pandas as pd

    df = obj.to_frame() if isinstance(obj, pd.Series) else obj
    if not isinstance(df.index, pd.RangeIndex):
        df = df.reset_index()
    df.columns = [str(c) for c in df.columns]
    if fmt == "csv":
        return df.to_csv(index=False)
    if fmt == "json":
        return df.to_json(orient="records", date_format="iso")
    if fmt != "table":
        raise QueryError(f"unknown format '{fmt}' (table, csv or json)")
    if df.empty:
        return "(no rows)"
    return df.to_string(index=False, float_format=lambda v: f"{v:.4g}")


#: File formats ``export`` and ``xlat results --output`` write, by suffix.
FILE_FORMATS = {".parquet": "parquet", ".csv": "csv", ".json": "json"}


def write_frame(df, path: str | Path, fmt: str | None = None) -> int:
    """Write a query result to ``path`` as Parquet, CSV or JSON (``fmt``, else from the
    suffix); returns the number of rows. The file appears whole or not at all (written beside
    it, then renamed). Parquet is written by DuckDB, so no pyarrow is needed; its columns keep
    their types (integers stay integers) and dotted names.

    Examples
    --------
    >>> import os, tempfile, duckdb, pandas as pd
    >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
    >>> write_frame(pd.DataFrame({"design": ["radix"], "walk.count": [7]}), path)
    1
    >>> duckdb.sql(f"SELECT * FROM '{path}'").fetchall()
    [('radix', 7)]
    >>> write_frame(pd.DataFrame({"a": [1]}), os.path.join(tempfile.mkdtemp(), "t.xlsx"))
    Traceback (most recent call last):
    ...
    xlat.query.QueryError: ...t.xlsx: cannot tell the format from the suffix ...
    """
    import os

    import pandas as pd

    path = Path(path)
    fmt = fmt or FILE_FORMATS.get(path.suffix.lower())
    if fmt not in ("parquet", "csv", "json"):
        raise QueryError(
            f"{path}: cannot tell the format from the suffix (.parquet, .csv or .json, or "
            "give the format)"
            if fmt is None
            else f"{path}: unknown format '{fmt}' (parquet, csv or json)"
        )
    df = df.to_frame() if isinstance(df, pd.Series) else df
    if not isinstance(df.index, pd.RangeIndex):
        df = df.reset_index()
    df.columns = [str(c) for c in df.columns]
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if fmt == "parquet":
            import duckdb

            con = duckdb.connect()
            try:
                con.register("frame", df)
                con.execute(f"COPY frame TO '{tmp.as_posix()}' (FORMAT parquet)")
            finally:
                con.close()
        else:
            tmp.write_text(format_frame(df, fmt))
        os.replace(tmp, path)
    except OSError as e:
        raise QueryError(f"{path}: cannot write: {e.strerror or e}") from None
    except duckdb_errors() as e:  # DuckDB writing the Parquet file: a full disk, a read-only one
        raise QueryError(f"{path}: cannot write: {str(e).strip().splitlines()[0]}") from None
    finally:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only folder refuses even to look: nothing was written there
    return len(df)


def duckdb_errors() -> tuple[type[BaseException], ...]:
    """DuckDB's base exception class (for ``except``), without importing DuckDB twice."""
    import duckdb

    return (duckdb.Error,)


def export(
    db: str | Path,
    path: str | Path,
    where: Mapping[str, Any] | Iterable[str] | None = None,
    status: str | None = "ok",
    fmt: str | None = None,
) -> int:
    """Write the stored runs (one row per run, every column of :func:`results`) to a Parquet,
    CSV or JSON file; returns the number of runs written. ``where``/``status`` filter as in
    :func:`results`.

    Examples
    --------
    >>> import tempfile, os, xlat
    >>> db = os.path.join(tempfile.mkdtemp(), "r.duckdb")
    >>> _ = xlat.sweep({"designs": ["radix"], "workloads": ["gups"], "footprint": "16MiB",
    ...                 "refs": "20k"}, db, workers=1)
    >>> xlat.export(db, os.path.join(os.path.dirname(db), "runs.parquet"))
    1
    """
    return write_frame(load_rows(db, where, status), path, fmt)


#: Columns a store check compares with what the row's record says (:func:`label_columns`).
CHECKED_LABELS = (
    "design",
    "workload",
    "seed",
    "trace",
    "trace_sha256",
    "config.workload.name",
    "config.workload.footprint",
)


def _same(a: Any, b: Any) -> bool:
    """Equal as stored values: NULL and NaN are one, numbers compare by value."""

    def norm(v: Any) -> Any:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return None
        if hasattr(v, "item"):  # numpy scalars
            v = v.item()
        if isinstance(v, float) and v.is_integer():
            return int(v)
        return v

    return norm(a) == norm(b)


def check_store(db: str | Path = DEFAULT_DB) -> tuple[int, list[str]]:
    """Check every stored row against its record; returns (rows checked, problems).

    A problem is a line naming the row (its key's first 12 characters and its labels) and what
    is wrong: a run stored more than once; a successful row without its record, or whose
    label columns (:data:`CHECKED_LABELS`) disagree with what the record says
    (:func:`xlat.records.label_columns`: a trace run labelled with the built-in workload's
    name or footprint, say); a figure of its record that is not a finite number
    (:func:`xlat.values.bad_figures`); or a key that is not the hash of its configuration and
    labels. ``xlat results --check`` prints them.

    Examples
    --------
    >>> import tempfile, os, xlat
    >>> db = os.path.join(tempfile.mkdtemp(), "r.duckdb")
    >>> _ = xlat.sweep({"designs": ["radix"], "workloads": ["gups"], "footprint": "1MiB",
    ...                 "refs": "2000"}, db, workers=1)
    >>> check_store(db)
    (1, [])
    """
    import json

    from xlat.records import label_columns
    from xlat.store import config_hash
    from xlat.values import bad_figures

    store = Store(db)
    cols = store.columns(duplicates_ok=True)  # StoreError for a missing or foreign database
    wanted = ["config_hash", "status", "config_json", "record_json"]
    wanted += [c for c in CHECKED_LABELS if c in cols and c not in wanted]
    df = store.query(
        f"SELECT {', '.join(map(quote, wanted))} FROM {TABLE} ORDER BY config_hash",
        duplicates_ok=True,
    )
    problems = []
    counts = df["config_hash"].value_counts()
    for key, n in counts[counts > 1].items():
        problems.append(f"{str(key)[:12]}: stored {n} times (one run, one row)")
    for row in df.to_dict("records"):
        name = f"{str(row['config_hash'])[:12]} ({row.get('design')} on {row.get('workload')})"
        if row["status"] != "ok":
            continue
        if row["record_json"] is None:
            problems.append(f"{name}: status ok but no record")
            continue
        rec = json.loads(row["record_json"])
        labels = label_columns(rec)
        for col in CHECKED_LABELS:
            if col in labels and col in row and not _same(row[col], labels[col]):
                problems.append(f"{name}: {col} is {row[col]!r}, its record says {labels[col]!r}")
        bad = bad_figures(rec)
        if bad:
            problems.append(f"{name}: figures that are not finite numbers: {', '.join(bad[:5])}")
        if row["config_json"] is not None:
            trace_sha = labels["trace_sha256"]
            key = config_hash(
                json.loads(row["config_json"]),
                labels["design"],
                None if trace_sha else labels["workload"],
                trace_sha,
                labels["seed"],
            )
            if key != row["config_hash"]:
                problems.append(f"{name}: its key is not the hash of its configuration and labels")
    return len(df), problems


__all__ = [
    "QueryError",
    "check_store",
    "StoreError",
    "export",
    "format_frame",
    "load_rows",
    "results",
    "write_frame",
]
