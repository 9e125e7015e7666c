"""95 % intervals of speedups: from sampled runs (``sim.sampling``) or from seed replicates.

A speedup is a ratio of two times, ``S = T_base / T_design``. Every interval here is built on
the log scale, where a ratio is a difference: ``log S = log T_base - log T_design``. An
estimate of ``log S`` is carried as a :class:`LogEstimate` (the point, the variance of the
point and its degrees of freedom) and its interval is ``exp(log S ± t(0.975, df) · sqrt(var))``,
which is asymmetric around S, never below 0, and the reciprocal of the interval of ``1 / S``.

Three sources (docs/timing.md, "Intervals of speedups"):

- **Sampling, paired** (source ``"sampling (paired)"``; one seed per grid point, both runs
  sampled at the same references): a sampled run estimates its time as the windows' mean
  cycles per reference times the references measured, and the record keeps each window's
  figure (``sampling.window_cycles_per_ref``). When both runs keep them, have as many and
  agree on what places the windows (:data:`PAIRED_KEYS`: workload, seed, references, warm-up,
  the sampling unit), the i-th windows of the two runs cover the same references and the
  speedup is the ratio of two *correlated* means, ``S = mean(b) / mean(d)`` (times the
  references, equal). The delta method on ``log S`` keeps their covariance:
  ``var(log S) = [var(b)/mb² + var(d)/md² - 2 cov(b, d)/(mb md)] / n``, which is the sample
  variance over ``n`` of the per-window linearised terms ``b_i/mb - d_i/md``, with ``n - 1``
  degrees of freedom (:func:`paired_estimate`; the matched-pair comparison of Ekman and
  Stenström, ISPASS 2005). Positively correlated windows (a phase slow under both designs)
  make it narrower than the independent interval.
- **Sampling, independent** (source ``"sampling"``; the fallback: a run without per-window
  figures, windows that do not pair, or one side unsampled): each sampled run's standard error
  ``se = ci95_half_width / t(0.975, n - 1)`` of its mean (the record's
  ``sampling.metrics.cycles_per_ref``). The delta method gives ``var(log T) = (se / mean)²``;
  the two runs are treated as *independent samples*, so their variances add, and the degrees
  of freedom are Welch-Satterthwaite's (for windows that do pair: conservative when they are
  positively correlated, too narrow when negatively). An unsampled run's time has no sampling
  error (variance 0).

  Either way the interval says how precisely the two sampled runs estimate the speedup of the
  two full detailed runs of that seed, nothing about other seeds.
- **Seeds** (several seeds per grid point, the runs of one seed paired): Student's t on the
  per-seed log speedups, ``mean ± t(0.975, n - 1) · s / sqrt(n)``: a geometric interval around
  the geometric mean over the seeds (the point figure the tables show). Each seed's sampling
  error, if sampled, is part of the seed-to-seed spread.

A geometric mean over workloads (the ``geomean`` rows) averages the cells' ``log S``: its
variance is the sum of theirs over the count squared (the cells are independent runs), with
Welch-Satterthwaite degrees of freedom. It has an interval only when each of its cells does
(or is exact, such as the baseline itself).

Without any source (one unsampled run per side) there is no interval: the figure is a
single deterministic run's, and nothing is invented.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: Two-sided 97.5 % quantiles of Student's t for 1..=30 degrees of freedom (the table of
#: crates/xlat/src/sampling.rs, so that a record's half-width inverts exactly).
T_975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
)  # fmt: skip

#: The flattened keys of a sampled run's cycles-per-reference interval (``mean``, ``n``,
#: ``ci95_half_width``) that a time's standard error comes from.
CPR_KEY = "sampling.metrics.cycles_per_ref."

#: The flattened key of a sampled run's cycles per reference window by window, in order (a
#: list in a record, JSON text in a stored row; absent from records of cores before it).
WINDOWS_KEY = "sampling.window_cycles_per_ref"

#: What two sampled runs must agree on for their i-th windows to cover the same references:
#: the reference stream (workload, its footprint, seed, trace, cores), the references measured
#: and the warm-up before them, and the sampling unit. A key neither run has is no objection;
#: a key only one has is.
PAIRED_KEYS = (
    "workload",
    "seed",
    "trace.sha256",
    "config.workload.footprint",
    "config.sim.cores",
    "refs",
    "warmup.refs",
    "sampling.interval",
    "sampling.window",
    "sampling.detailed_warmup",
    "sampling.windows",
)

#: The sources of an estimate with sampling error: paired window by window, independent.
PAIRED, INDEPENDENT = "sampling (paired)", "sampling"

#: What a table says once when none of its figures has an interval.
NO_INTERVAL = "no interval: one unsampled run"

#: Where the method is written down (for the notes under tables).
METHOD_DOC = "docs/timing.md, 'Intervals of speedups'"


def t_975(df: float) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom, as the core computes
    it (a table to 30, then a Cornish-Fisher expansion good to 1e-3); a fractional ``df``
    (Welch-Satterthwaite's) is rounded down, which widens the interval a little.

    Examples
    --------
    >>> t_975(1), t_975(19), t_975(30)
    (12.706, 2.093, 2.042)
    >>> round(t_975(100), 3), round(t_975(float("inf")), 3), t_975(19.7)
    (1.984, 1.96, 2.093)
    >>> t_975(0.5)
    inf
    """
    if df == math.inf:
        return 1.959964
    k = int(math.floor(df))
    if k < 1:
        return math.inf
    if k <= 30:
        return T_975[k - 1]
    z, n = 1.959964, float(k)
    return z + (z**3 + z) / (4 * n) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * n * n)


@dataclass(frozen=True)
class LogEstimate:
    """An estimate of a positive ratio on the log scale: ``log`` of the point figure, the
    variance of that log (0: exact) and its degrees of freedom; ``source`` is ``"sampling"``
    (two runs' sampling errors taken as independent), ``"sampling (paired)"`` (paired window by
    window), ``"seeds"``, a geomean's mix of these (:func:`combine_sources`, such as ``"seeds
    and sampling"``), ``"exact"``
    (variance 0 that is known to be 0, such as the baseline over itself or a geomean of exact
    cells) or ``"none"`` (one unsampled run: the variance is unknown, there is no interval).

    Examples
    --------
    >>> e = LogEstimate(math.log(1.2), 0.01**2, 30, "sampling")
    >>> [round(x, 4) for x in e.bounds()]
    [1.2, 1.1757, 1.2248]
    >>> LogEstimate(0.0, 0.0, math.inf, "none").bounds()[1:]
    (nan, nan)
    """

    log: float
    var: float
    df: float
    source: str

    @property
    def point(self) -> float:
        """The point figure, ``exp(log)``."""
        return math.exp(self.log) if math.isfinite(self.log) else float("nan")

    @property
    def has_interval(self) -> bool:
        """Whether there is an interval to show (a finite point and a variance above 0)."""
        return (
            self.source not in ("none", "exact")
            and math.isfinite(self.log)
            and self.var > 0
            and math.isfinite(self.var)
        )

    def bounds(self) -> tuple[float, float, float]:
        """``(point, low, high)``; low and high are NaN without an interval."""
        if not self.has_interval:
            return self.point, float("nan"), float("nan")
        half = t_975(self.df) * math.sqrt(self.var)
        return self.point, math.exp(self.log - half), math.exp(self.log + half)


def exact(value: float) -> LogEstimate:
    """A ratio without error (the baseline over itself).

    Examples
    --------
    >>> exact(1.0).bounds()[0], exact(1.0).has_interval
    (1.0, False)
    """
    return LogEstimate(_log(value), 0.0, math.inf, "exact")


def none(value: float) -> LogEstimate:
    """A ratio of one unsampled run per side: no interval (:data:`NO_INTERVAL`)."""
    return LogEstimate(_log(value), 0.0, math.inf, "none")


def _log(x: float) -> float:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return float("nan")
    return math.log(x) if x > 0 and math.isfinite(x) else float("nan")


def welch_df(variances: Iterable[float], dfs: Iterable[float]) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of independent variance estimates
    (components of variance 0 carry none; infinite when there is none above 0).

    Examples
    --------
    >>> welch_df([1.0, 1.0], [19, 19])
    38.0
    >>> welch_df([1.0, 0.0], [19, math.inf]), welch_df([0.0], [5])
    (19.0, inf)
    """
    pairs = [(v, d) for v, d in zip(variances, dfs) if v > 0]
    if not pairs:
        return math.inf
    den = sum(v * v / d for v, d in pairs if math.isfinite(d))
    return (sum(v for v, _ in pairs) ** 2 / den) if den > 0 else math.inf


def time_error(row: Mapping[str, Any], metric: str = "cycles") -> tuple[float, float, float]:
    """A run's time (``metric`` ``cycles``: ``timing.cycles``; ``total``: plus
    ``timing.os_cycles``), the standard error of its sampling estimate and that error's degrees
    of freedom, from a flattened record or a stored row (dotted keys, :func:`xlat.flatten`).

    An unsampled run: error 0 (a full detailed run has no sampling error). A sampled run: its
    ``timing.cycles`` is the windows' mean cycles per reference ``m`` times the references, so
    its relative error is ``se(m) / m`` with ``se(m) = ci95_half_width / t(0.975, n - 1)``;
    ``os_cycles`` are counted over the whole run (exact). A sampled run without an interval
    (fewer than two windows) gives an infinite error.

    Examples
    --------
    >>> row = {"timing.cycles": 1000.0, "sampling.windows": 20,
    ...        "sampling.metrics.cycles_per_ref.mean": 5.0,
    ...        "sampling.metrics.cycles_per_ref.n": 20,
    ...        "sampling.metrics.cycles_per_ref.ci95_half_width": 0.2093}
    >>> [round(x, 6) for x in time_error(row)]
    [1000.0, 20.0, 19.0]
    >>> time_error({"timing.cycles": 1000.0})
    (1000.0, 0.0, inf)
    """
    cycles = _float(row.get("timing.cycles"))
    os_cycles = _float(row.get("timing.os_cycles")) if metric == "total" else 0.0
    time = cycles + (0.0 if os_cycles != os_cycles else os_cycles)
    if not is_sampled(row):
        return time, 0.0, math.inf
    key = CPR_KEY
    mean, n = _float(row.get(key + "mean")), _float(row.get(key + "n"))
    half = _float(row.get(key + "ci95_half_width"))
    if not (n >= 2 and mean > 0 and half == half):
        return time, math.inf, math.inf
    se_mean = half / t_975(n - 1)
    return time, cycles * se_mean / mean, n - 1


def is_sampled(row: Mapping[str, Any]) -> bool:
    """Whether a flattened record or stored row is of a sampled run (it has a ``sampling``
    section with windows).

    Examples
    --------
    >>> is_sampled({"sampling.windows": 40}), is_sampled({"sampling.windows": None}), is_sampled({})
    (True, False, False)
    """
    w = row.get("sampling.windows")
    return w is not None and w == w


def _float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def ratio_estimate(
    base: tuple[float, float, float], run: tuple[float, float, float]
) -> LogEstimate:
    """The speedup ``T_base / T_run`` of two independent runs, each ``(time, standard error,
    degrees of freedom)`` (:func:`time_error`), by the delta method on the log of the ratio:
    ``var(log S) = (se_base / T_base)² + (se_run / T_run)²`` with Welch-Satterthwaite degrees
    of freedom. Assumes the two estimates are independent (separately drawn windows); source
    ``"none"`` when neither run is sampled.

    Examples
    --------
    Two sampled runs, 20 windows each, 1 % and 2 % relative standard errors:

    >>> e = ratio_estimate((1200.0, 12.0, 19), (1000.0, 20.0, 19))
    >>> round(e.point, 4), round(e.var, 6), round(e.df, 2)
    (1.2, 0.0005, 27.94)

    By hand: var = 0.01² + 0.02² = 0.0005; df = 0.0005² / (0.01⁴/19 + 0.02⁴/19) = 27.94, so
    t(0.975, 27) = 2.052; 2.052 · sqrt(0.0005) = 0.04588 and 1.2 · exp(±0.04588) gives:

    >>> p, lo, hi = e.bounds(); round(lo, 4), round(hi, 4)
    (1.1462, 1.2563)
    >>> ratio_estimate((1000.0, 0.0, math.inf), (990.0, 0.0, math.inf)).source
    'none'
    """
    (tb, sb, db), (tr, sr, dr) = base, run
    log = _log(tb) - _log(tr)
    if sb == 0 and sr == 0:
        return LogEstimate(log, 0.0, math.inf, "none")
    vb = (sb / tb) ** 2 if tb > 0 else math.inf
    vr = (sr / tr) ** 2 if tr > 0 else math.inf
    return LogEstimate(log, vb + vr, welch_df([vb, vr], [db, dr]), "sampling")


def window_series(row: Mapping[str, Any]) -> list[float] | None:
    """A sampled run's cycles per reference window by window (:data:`WINDOWS_KEY`), from a
    flattened record (a list) or a stored row (JSON text); None when the run has none (an
    unsampled run, a record of an older core) or one is not a finite number.

    Examples
    --------
    >>> window_series({WINDOWS_KEY: [10.0, 12.5]}), window_series({WINDOWS_KEY: "[10, 12.5]"})
    ([10.0, 12.5], [10.0, 12.5])
    >>> window_series({}), window_series({WINDOWS_KEY: "[1.0, null]"})
    (None, None)
    """
    v = row.get(WINDOWS_KEY)
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except ValueError:
            return None
    if not isinstance(v, (list, tuple)):
        return None
    xs = [_float(x) for x in v]
    return xs if all(math.isfinite(x) for x in xs) else None


def _missing(v: Any) -> bool:
    if v is None:
        return True
    try:
        return bool(v != v)  # NaN
    except (TypeError, ValueError):  # pandas' NA has no truth value
        return True


def pairs_windows(base: Mapping[str, Any], run: Mapping[str, Any]) -> bool:
    """Whether two flattened records or stored rows were sampled at the same references, so
    that their i-th windows pair: both keep as many per-window figures (at least 2) and they
    agree on every key of :data:`PAIRED_KEYS` that either has.

    Examples
    --------
    >>> a = {"workload": "gups", "refs": 400000, "sampling.window": 2000,
    ...      WINDOWS_KEY: [10.0, 11.0, 12.0]}
    >>> pairs_windows(a, {**a, WINDOWS_KEY: [8.0, 9.0, 9.5]})
    True
    >>> pairs_windows(a, {**a, WINDOWS_KEY: [8.0, 9.0]})  # as many windows
    False
    >>> pairs_windows(a, {**a, "refs": 200000, WINDOWS_KEY: [8.0, 9.0, 9.5]})
    False
    """
    b, d = window_series(base), window_series(run)
    if b is None or d is None or len(b) != len(d) or len(b) < 2:
        return False
    for k in PAIRED_KEYS:
        x, y = base.get(k), run.get(k)
        if _missing(x) and _missing(y):
            continue
        if _missing(x) or _missing(y) or not _equal(x, y):
            return False
    return True


def _equal(x: Any, y: Any) -> bool:
    try:
        return bool(x == y)
    except (TypeError, ValueError):
        return False


def paired_estimate(
    base: Mapping[str, Any], run: Mapping[str, Any], metric: str = "cycles"
) -> LogEstimate | None:
    """The speedup ``T_base / T_run`` of two runs sampled at the same references
    (:func:`pairs_windows`), its variance from their windows paired; None when they do not
    pair. Each time is ``T = c · mean(w) [+ os]``, with ``w`` the run's per-window cycles per
    reference and ``c = timing.cycles / mean(w)`` its references; the delta method on
    ``log S`` with the two means' covariance is the sample variance of the per-window
    linearised terms ``z_i = (c_b/T_b) · b_i - (c_r/T_r) · r_i`` over ``n``, with ``n - 1``
    degrees of freedom (for ``metric`` ``cycles``: ``z_i = b_i/mb - r_i/mr``). Source
    ``"sampling (paired)"``. The point is the ratio of the runs' times, as without pairing.

    Examples
    --------
    Three windows where the design is 20 % faster in each (up to a little noise): the ratio is
    known well although each run's windows spread by 20 %:

    >>> base = {"timing.cycles": 1100.0, WINDOWS_KEY: [10.0, 12.0, 11.0]}
    >>> run = {"timing.cycles": 917.0, WINDOWS_KEY: [8.3, 10.0, 9.21]}
    >>> e = paired_estimate(base, run)
    >>> e.source, e.df, [round(x, 3) for x in e.bounds()]
    ('sampling (paired)', 2, [1.2, 1.187, 1.212])

    By hand: ``z = b/11 - r/9.17`` is (0.00397, 0.00040, -0.00436), whose sample variance
    over n = 3 is var(log S) = 5.82e-6; t(0.975, 2) = 4.303, so 1100/917 ·
    exp(±4.303 · 0.00241). The same windows taken as independent give [0.945, 1.523]
    (:func:`pair_estimate`).

    >>> paired_estimate(base, {**run, WINDOWS_KEY: [8.3, 10.0]}) is None
    True
    """
    if not pairs_windows(base, run):
        return None
    b, r = window_series(base), window_series(run)
    n = len(b)
    tb, tr = time_error(base, metric)[0], time_error(run, metric)[0]
    cb, cr = _float(base.get("timing.cycles")), _float(run.get("timing.cycles"))
    mb, mr = sum(b) / n, sum(r) / n
    if not (mb > 0 and mr > 0 and tb > 0 and tr > 0 and cb > 0 and cr > 0):
        return None
    # d log T / d mean(w): the share of the time the windows estimate, per unit of the mean.
    wb, wr = cb / mb / tb, cr / mr / tr
    z = [wb * x - wr * y for x, y in zip(b, r)]
    zbar = sum(z) / n
    var = sum((v - zbar) ** 2 for v in z) / (n - 1) / n
    return LogEstimate(_log(tb) - _log(tr), var, n - 1, PAIRED)


def pair_estimate(
    base: Mapping[str, Any], run: Mapping[str, Any], metric: str = "cycles"
) -> LogEstimate:
    """The speedup of ``run`` over ``base`` (flattened records or stored rows of the same grid
    point) with the best interval they allow: paired window by window when they were sampled
    at the same references (:func:`paired_estimate`), else the two runs' errors as independent
    (:func:`ratio_estimate`; source ``"sampling"``, or ``"none"`` when neither is sampled).

    Examples
    --------
    >>> base = {"timing.cycles": 1100.0, "sampling.windows": 3, WINDOWS_KEY: [10.0, 12.0, 11.0],
    ...         "sampling.metrics.cycles_per_ref.n": 3,
    ...         "sampling.metrics.cycles_per_ref.mean": 11.0,
    ...         "sampling.metrics.cycles_per_ref.ci95_half_width": 2.4843}
    >>> run = {**base, "timing.cycles": 917.0, WINDOWS_KEY: [8.3, 10.0, 9.21],
    ...        "sampling.metrics.cycles_per_ref.mean": 9.17,
    ...        "sampling.metrics.cycles_per_ref.ci95_half_width": 2.1134}
    >>> pair_estimate(base, run).source
    'sampling (paired)'
    >>> older = {k: v for k, v in run.items() if k != WINDOWS_KEY}  # a record of an older core
    >>> e = pair_estimate(base, older); e.source, [round(x, 3) for x in e.bounds()[1:]]
    ('sampling', [0.945, 1.523])
    """
    paired = paired_estimate(base, run, metric)
    if paired is not None:
        return paired
    return ratio_estimate(time_error(base, metric), time_error(run, metric))


def seed_estimate(speedups: Iterable[float]) -> LogEstimate:
    """The speedup of one grid point over its seeds: the geometric mean of the per-seed
    speedups with Student's t interval on their logs (``n - 1`` degrees of freedom). One seed:
    source ``"none"``.

    Examples
    --------
    >>> e = seed_estimate([1.10, 1.20, 1.15])
    >>> round(e.point, 4), e.df, [round(x, 3) for x in e.bounds()[1:]]
    (1.1493, 2, [1.032, 1.28])
    >>> seed_estimate([1.1]).source
    'none'
    """
    logs = [_log(s) for s in speedups]
    logs = [x for x in logs if math.isfinite(x)]
    if not logs:
        return LogEstimate(float("nan"), 0.0, math.inf, "none")
    n = len(logs)
    mean = sum(logs) / n
    if n < 2:
        return LogEstimate(mean, 0.0, math.inf, "none")
    var = sum((x - mean) ** 2 for x in logs) / (n - 1)
    return LogEstimate(mean, var / n, n - 1, "seeds" if var > 0 else "exact")


def geomean_estimate(cells: Iterable[LogEstimate]) -> LogEstimate:
    """The geometric mean of independent cells (workloads): the mean of their logs, the sum of
    their variances over the count squared, Welch-Satterthwaite degrees of freedom. Source
    ``"none"`` (no interval) when a cell has none; ``"exact"`` when every cell is exact.

    Examples
    --------
    >>> a = LogEstimate(math.log(1.2), 0.0004, 19, "sampling")
    >>> b = LogEstimate(math.log(0.9), 0.0004, 19, "sampling")
    >>> g = geomean_estimate([a, b])
    >>> round(g.point, 4), round(g.var, 6), g.df, g.source
    (1.0392, 0.0002, 38.0, 'sampling')
    >>> geomean_estimate([a, none(1.1)]).source
    'none'
    """
    cells = [c for c in cells if math.isfinite(c.log)]
    if not cells:
        return LogEstimate(float("nan"), 0.0, math.inf, "none")
    k = len(cells)
    log = sum(c.log for c in cells) / k
    if any(c.source == "none" or not math.isfinite(c.var) for c in cells):
        return LogEstimate(log, 0.0, math.inf, "none")
    sources = {c.source for c in cells if c.source != "exact"}
    if not sources:
        return LogEstimate(log, 0.0, math.inf, "exact")
    var = sum(c.var for c in cells) / k**2
    df = welch_df([c.var for c in cells], [c.df for c in cells])
    return LogEstimate(log, var, df, combine_sources(sources))


def source_kinds(source: str) -> set[str]:
    """The kinds of error an estimate's ``source`` holds: ``seeds``, ``paired`` (sampling,
    paired window by window), ``independent`` (sampling, independent samples).

    Examples
    --------
    >>> sorted(source_kinds("seeds and sampling")), sorted(source_kinds("sampling (paired)"))
    (['independent', 'seeds'], ['paired'])
    >>> sorted(source_kinds("sampling (paired and independent)")), source_kinds("none")
    (['independent', 'paired'], set())
    """
    kinds = set()
    if "seeds" in source:
        kinds.add("seeds")
    if "sampling" in source:
        if "paired" in source:
            kinds.add("paired")
        if "independent" in source or "(paired)" not in source:
            kinds.add("independent")
    return kinds


def combine_sources(sources: Iterable[str]) -> str:
    """The source of a geomean over cells of these sources (exact ones left out): each kind
    once, ``seeds`` first, then the sampling kinds.

    Examples
    --------
    >>> combine_sources(["sampling", "seeds"]), combine_sources(["sampling (paired)"] * 2)
    ('seeds and sampling', 'sampling (paired)')
    >>> combine_sources(["sampling (paired)", "sampling"])
    'sampling (paired and independent)'
    >>> combine_sources(["seeds", "sampling (paired)"])
    'seeds and sampling (paired)'
    """
    kinds = set().union(*(source_kinds(s) for s in sources))
    sampling = {
        frozenset({"independent"}): INDEPENDENT,
        frozenset({"paired"}): PAIRED,
        frozenset({"paired", "independent"}): "sampling (paired and independent)",
    }.get(frozenset(kinds - {"seeds"}), "")
    if "seeds" in kinds:
        return f"seeds and {sampling}" if sampling else "seeds"
    return sampling or "none"


def cell_estimate(speedups: list[float], errors: list[LogEstimate] | None = None) -> LogEstimate:
    """The estimate of one cell (a design at a grid point) from its runs: several seeds give
    :func:`seed_estimate`; one run gives its pair's sampling estimate ``errors[0]`` (from
    :func:`ratio_estimate`), or no interval.

    Examples
    --------
    >>> cell_estimate([1.1, 1.2]).source, cell_estimate([1.1]).source
    ('seeds', 'none')
    >>> cell_estimate([1.2], [ratio_estimate((1.2, 0.01, 19), (1.0, 0.01, 19))]).source
    'sampling'
    """
    finite = [s for s in speedups if s == s and s > 0]
    if len(finite) >= 2:
        return seed_estimate(finite)
    if len(finite) == 1 and errors:
        return errors[0]
    return none(finite[0] if finite else float("nan"))


def contains_one(low: float, high: float) -> bool:
    """Whether an interval contains 1.0 (the speedup is not distinguishable from none).

    Examples
    --------
    >>> contains_one(0.995, 1.030), contains_one(1.001, 1.2), contains_one(float("nan"), 1.0)
    (True, False, False)
    """
    return low == low and high == high and low <= 1.0 <= high


def interval_cell(point: float, low: float, high: float, digits: int = 3) -> str:
    """A table cell: the point figure, its interval in brackets and ``*`` when the interval
    contains 1.0; the point alone without an interval.

    Examples
    --------
    >>> interval_cell(1.0123, 0.995, 1.0301)
    '1.012 [0.995, 1.030]*'
    >>> interval_cell(0.75, 0.74, 0.76), interval_cell(1.5, float("nan"), float("nan"))
    ('0.750 [0.740, 0.760]', '1.500')
    """
    if point != point:
        return "n/a"
    text = f"{point:.{digits}f}"
    if low != low or high != high:
        return text
    star = "*" if contains_one(low, high) else ""
    return f"{text} [{low:.{digits}f}, {high:.{digits}f}]{star}"


def interval_text(point: float, low: float, high: float, digits: int = 3) -> str:
    """A speedup with its interval, saying so when the interval contains 1.0.

    Examples
    --------
    >>> interval_text(1.0123, 0.995, 1.0301)
    '1.012x [0.995, 1.030] — not distinguishable from 1.0'
    >>> interval_text(1.25, 1.2, 1.3), interval_text(1.25, float("nan"), float("nan"))
    ('1.250x [1.200, 1.300]', '1.250x')
    """
    text = f"{point:.{digits}f}x"
    if low != low or high != high:
        return text
    text += f" [{low:.{digits}f}, {high:.{digits}f}]"
    return text + (" — not distinguishable from 1.0" if contains_one(low, high) else "")


def method_text(sources: Iterable[str]) -> str:
    """How the intervals of a table were derived, from the sources of its estimates (one line,
    printed once under a table); empty when no estimate has an interval.

    Examples
    --------
    >>> print(method_text(["sampling", "none"])[:66])
    95 % intervals from sampling: delta method on the log of the ratio
    >>> method_text(["none", "exact"])
    ''
    """
    kinds = set().union(*(source_kinds(s) for s in sources))
    parts = []
    if {"paired", "independent"} <= kinds:
        parts.append(
            "from sampling: delta method on the log of the ratio of the two runs' estimated "
            "cycles, paired window by window where both runs were sampled at the same "
            "references (the i-th windows' covariance subtracted, t with windows - 1 degrees "
            "of freedom), else their window-to-window standard errors added (independent "
            "samples)"
        )
    elif "paired" in kinds:
        parts.append(
            "from sampling: delta method on the log of the ratio of the two runs' estimated "
            "cycles, paired window by window (both runs sampled at the same references: the "
            "i-th windows' covariance subtracted, t with windows - 1 degrees of freedom)"
        )
    elif "independent" in kinds:
        parts.append(
            "from sampling: delta method on the log of the ratio of the two runs' estimated "
            "cycles, their window-to-window standard errors added (independent samples)"
        )
    if "seeds" in kinds:
        parts.append(
            "from seeds: Student t on the per-seed log speedups (geometric interval around "
            "the geometric mean)"
        )
    if not parts:
        return ""
    return f"95 % intervals {'; '.join(parts)} ({METHOD_DOC})"


def notes(estimates: Mapping[str, LogEstimate], digits: int = 3, cells: bool = False) -> list[str]:
    """The lines printed once under a table of speedups: how its intervals were derived, each
    speedup whose interval contains 1.0 (``* NAME: 1.012x [0.995, 1.030] — not
    distinguishable from 1.0``), and :data:`NO_INTERVAL` for the figures without one (once,
    not per cell). ``estimates`` maps a label (a design, or ``design @ workload``) to its
    estimate; exact ones (the baseline) are silent. ``cells``: the table's cells carry their
    intervals (:func:`interval_cell`), so one line says what ``*`` means instead of a line per
    such figure.

    Examples
    --------
    >>> est = {"radix": exact(1.0), "ecpt": ratio_estimate((1.0, 0.01, 19), (0.99, 0.01, 19))}
    >>> for line in notes(est): print(line[:69])
    95 % intervals from sampling: delta method on the log of the ratio of
    * ecpt: 1.010x [0.981, 1.040] — not distinguishable from 1.0
    >>> notes({"radix": exact(1.0), "ideal": none(1.3)})
    ['no interval: one unsampled run']
    """
    lines = []
    method = method_text(e.source for e in estimates.values() if e.has_interval)
    if method:
        lines.append(method)
    spanning = [(k, e.bounds()) for k, e in estimates.items() if contains_one(*e.bounds()[1:])]
    if cells and spanning:
        lines.append("* the interval contains 1.0: not distinguishable from 1.0")
    elif spanning:
        lines += [f"* {k}: {interval_text(p, lo, hi, digits)}" for k, (p, lo, hi) in spanning]
    lacking = [k for k, e in estimates.items() if e.source == "none" and e.point == e.point]
    if lacking:
        if method and cells:
            lines.append(f"{NO_INTERVAL} for the figures shown without brackets")
        elif method:
            lines.append(f"{NO_INTERVAL} ({', '.join(lacking)})")
        else:
            lines.append(NO_INTERVAL)
    return lines


def record_estimates(
    records: list[Mapping[str, Any]], baseline: str | None = None, metric: str = "cycles"
) -> dict[str, LogEstimate]:
    """The speedup of each record's design over ``baseline`` (default: the first record's, as
    :func:`xlat.records.speedups` chooses it) as an estimate: the baseline itself is exact, a
    pair with a sampled run gets :func:`pair_estimate`'s interval (paired window by window
    when both were sampled at the same references), two unsampled runs none.

    Examples
    --------
    >>> base = {"design": "radix", "timing": {"cycles": 1200.0}}
    >>> ecpt = {"design": "ecpt", "timing": {"cycles": 1000.0}, "sampling": {"windows": 20,
    ...         "metrics": {"cycles_per_ref": {"n": 20, "mean": 10.0, "ci95_half_width": 0.4186}}}}
    >>> est = record_estimates([base, ecpt])
    >>> est["radix"].source, [round(x, 3) for x in est["ecpt"].bounds()]
    ('exact', [1.2, 1.151, 1.251])
    """
    from xlat.records import flatten, run_time

    if not records:
        return {}
    base = next((r for r in records if r["design"] == baseline), records[0])
    flat_base = flatten(base)
    out = {}
    for r in records:
        if r is base:
            out[r["design"]] = exact(1.0)
            continue
        t = run_time(r, metric)
        if not t:
            out[r["design"]] = none(float("nan"))
            continue
        out[r["design"]] = pair_estimate(flat_base, flatten(r), metric)
    return out


__all__ = [
    "LogEstimate",
    "NO_INTERVAL",
    "PAIRED_KEYS",
    "WINDOWS_KEY",
    "cell_estimate",
    "combine_sources",
    "geomean_estimate",
    "interval_cell",
    "interval_text",
    "notes",
    "pair_estimate",
    "paired_estimate",
    "pairs_windows",
    "record_estimates",
    "ratio_estimate",
    "seed_estimate",
    "source_kinds",
    "t_975",
    "time_error",
    "window_series",
]
