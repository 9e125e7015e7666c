"""Reports: a self-contained HTML page, a Markdown page, PNG + PDF figures sized for papers and
the tables behind them, from result records (``xlat compare``) or from the result store
(``xlat report``).

Both sources go through one path: records become the same rows the store holds
(:func:`frame_from_records`), and :func:`write_report` draws every figure from such a frame.

How runs are grouped (what every caption says again):

- The grid's *axes* are the configuration keys that vary between runs (``os.thp``,
  ``workload.footprint``, ...) other than the design, the workload and the seed. A *setting* is
  one combination of axis values; figures draw one panel (one bar group) per setting, and the
  speedup geomeans are per setting, never pooled over settings.
- Seeds are averaged: arithmetic mean of counts and shares, geometric mean of speedups.
- A footprint or fragmentation (``os.fmfi_target``) axis also gets line plots over that axis.

Figures are drawn at a paper's column (3.33 in) or page (7 in) width with 7-9 pt text and never
wider than a page (many workloads wrap into rows); PDFs embed TrueType (Type 42) fonts. The data
drawn in each figure is written to ``figures.json`` beside them.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import math
import os
from pathlib import Path
from typing import Any

from xlat import intervals
from xlat.query import (
    design_order,
    geomean,
    interval_display,
    varying_params,
    with_speedup,
    with_speedup_estimates,
)
from xlat.records import speedups
from xlat.run import designs as registered_designs
from xlat.run import version
from xlat.store import frame_from_records  # noqa: F401 - reports are drawn from such frames

APPROXIMATIONS = (
    "Cycle figures come from the core model each run's config names (timing.model): 'ooo', "
    "the default, an out-of-order core at the granularity of memory references (ROB, queues, "
    "page walkers, MSHRs, dependences; no front end, execution ports or wrong-path execution), "
    "within 10 % of ChampSim's IPC and translation effects on five synthetic traces with "
    "core.resource_grant = 'time_order' (the default); or 'simple', a first-order formula "
    "(base CPI plus exposed translation and data latencies with fixed overlap factors; no "
    "pipeline or queueing). Compare designs with them, do not read them as absolute times. "
    "Memory-reference and walk-access counts are exact for the modeled hardware. See "
    "docs/timing.md."
)

#: Figure widths of the ACM/IEEE two-column formats, inches.
COLUMN_IN = 3.33
PAGE_IN = 7.0

#: Colour-blind-safe palette (Paul Tol "bright", then white), one colour per design in registry
#: order; each design also gets a hatch so that the bars read in grayscale.
PALETTE = ["#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE", "#AA3377", "#BBBBBB", "#FFFFFF"]
HATCHES = ["", "//////", "\\\\\\\\\\\\", "xxxxx", ".....", "-----", "+++++", "ooo"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def _profile_summaries() -> dict[str, str]:
    """Each profile's one-line summary by name (designs' and baselines'), as the core has them."""
    from . import _core

    try:
        rows = [*_core.design_profiles(), *_core.baseline_profiles()]
    except AttributeError:  # a core built before profiles
        return {}
    out = {}
    for row in rows:
        name, summary = (row["name"], row["summary"]) if isinstance(row, dict) else row[:2]
        out[str(name)] = str(summary)
    return out


def short_count(n: int) -> str:
    """A power-of-two bucket bound in a few characters (binary prefixes, as the buckets are).

    Examples
    --------
    >>> [short_count(n) for n in (0, 64, 512, 1024, 65536, 1 << 20, 3 << 30)]
    ['0', '64', '512', '1k', '64k', '1M', '3G']
    """
    for shift, unit in ((30, "G"), (20, "M"), (10, "k")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def style_slots(i: int) -> tuple[int, int]:
    """The colour and the hatch (or marker) of the ``i``-th design: the colour cycles every
    eight designs and the hatch shifts by one each cycle, so 64 designs never share both (13
    registered designs used to: the ninth repeated the first).

    Examples
    --------
    >>> [style_slots(i) for i in (0, 1, 8, 9)]
    [(0, 0), (1, 1), (0, 1), (1, 2)]
    >>> len({style_slots(i) for i in range(64)})
    64
    """
    return i % len(PALETTE), (i + i // len(PALETTE)) % len(HATCHES)


LINESTYLES = ["-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 2)), "-"]
#: Serving levels of page-walk references: (record suffix, label, colour, hatch).
SERVED = [
    ("l1", "L1D", "#EEEEEE", ""),
    ("l2", "L2", "#88CCEE", "//////"),
    ("llc", "LLC", "#4477AA", "....."),
    ("dram", "DRAM", "#222255", ""),
]
CACHE_LEVELS = [("l1d", "L1D"), ("l2", "L2"), ("llc", "LLC")]
#: Radix page-walk-cache levels, deepest first (the order a walk's lookup resolves them).
PWC_LEVELS = [("pde", "PDE"), ("pdpte", "PDPTE"), ("pml4e", "PML4E")]
#: Axes that become the x axis of line plots (numeric, how the papers show scaling).
LINE_AXES = ("config.workload.footprint", "config.os.fmfi_target")


#: One line per figure on how to read it (docs/report.md is generated with these).
HOW_TO_READ = {
    "speedup": "Bars above the line at 1 are faster than the baseline; compare designs within "
    "a panel (one setting), and the geomean group for the summary a paper quotes.",
    "translation_share": "How much of the run address translation costs at all: a design can "
    "only win what this share leaves; near 0 means translation does not matter there.",
    "mmu_overhead": "Below 1: the design spends fewer cycles translating than the baseline on "
    "the same workload and setting (the baseline's bar is 1).",
    "walks": "Below 1: fewer page-walk cycles in total than the baseline (fewer walks or "
    "cheaper ones); see walk_latency for the cost of one walk.",
    "walk_latency": "The cost of one TLB miss in cycles: the figure to compare with the "
    "papers' walk latencies.",
    "walk_served_by": "Bar height is page-walk memory traffic; the colours say where it was "
    "served: the higher in the stack (LLC, DRAM), the more each reference costs.",
    "walk_cycles_by_level": "Why one design's walk costs more than another's: the DRAM part "
    "is what page-table lines missing the caches cost; hashed designs show more reference "
    "cycles than walk latency because their probes overlap.",
    "walk_latency_distribution": "The shape behind the average: a design whose walks cluster "
    "in a low bucket has predictable misses; a second peak at DRAM latency (128+) is walks "
    "whose entries missed every cache.",
    "fault_latency_distribution": "What a page fault costs the OS: 4 KiB faults sit near "
    "the fixed fault cost, a 2 MiB fault adds about 1 M cycles of zeroing and a 1 GiB fault "
    "0.5 G; a tail beyond a policy's page size is direct compaction or copying.",
    "pwc_hit_rate": "A high PDE hit rate means most radix walks need one memory access; a "
    "level whose bar says n/a was never reached (a deeper PWC always hit).",
    "pt_cache_share": "How much cache capacity page-table entries take from data; designs "
    "with larger page tables (or worse locality) show higher bars.",
    "page_table_memory": "Memory the page table needed at its largest; hashed designs "
    "allocate whole tables, radix allocates 4 KiB nodes on demand.",
    "tlb_mpki": "The workload's TLB pressure, the same for every design: a design can only "
    "help where the L2 TLB misses (walks) are frequent.",
    "tlb_misses_by_page_size": "Which pages the L2 TLB fails to hold: 4 KiB misses are what "
    "huge pages or coalescing remove; fault bars are first touches (demand paging), not reuse.",
    "tlb_hits_by_page_size": "Whether huge pages were used: the 2 MiB share grows when THP "
    "gave the workload huge pages.",
    "thp_speedup": "How much each design gains from huge pages on its own: a design that "
    "already translates cheaply gains less than radix (bars nearer 1).",
    "speedup_vs_footprint": "How a design's advantage scales with the footprint: rising lines "
    "gain as the page table outgrows the caches; error bars, when the runs are sampled or have "
    "several seeds, are 95 % intervals.",
    "walk_cycles_vs_footprint": "Translation cost per kilo-instruction as the footprint grows; "
    "the gap between lines is what the designs save.",
    "va_gap_coverage": "How regular the address space is (LVM §3): near 100 % a few linear "
    "models index it; low coverage means many holes for a learned index to skip.",
    "va_gap_sizes": "Where the irregularity is: many small holes (sparse touches) versus a "
    "few large ones (separate VMAs: heap, mmap areas, stack).",
    "speedup_vs_fmfi_target": "How a design's advantage changes as free memory is fragmented "
    "(FMFI 0: none, 1: no free huge block).",
    "walk_cycles_vs_fmfi_target": "Translation cost per kilo-instruction as free memory is "
    "fragmented (fewer huge pages, more walks).",
}


def table_rows(
    records: list[dict], baseline: str | None = None, metric: str = "cycles"
) -> list[dict[str, Any]]:
    """One row of headline figures per record (what the CLI table shows); ``speedup`` is the
    ratio of ``metric`` (``cycles`` or ``total``, see ``xlat.records.SPEEDUP_METRICS``).

    Examples
    --------
    >>> from xlat.run import run
    >>> rows = table_rows([run("radix", "gups", "16MiB", 20000)])
    >>> rows[0]["design"], rows[0]["speedup"]
    ('radix', 1.0)

    ``speedup_ci95_low`` and ``speedup_ci95_high`` bound the speedup's 95 % interval where the
    runs carry one (sampled runs, :func:`xlat.intervals.record_estimates`), NaN otherwise.
    """
    from xlat.intervals import record_estimates

    sp = speedups(records, baseline, metric)
    est = record_estimates(records, baseline, metric)
    rows = []
    for r in records:
        _, low, high = est[r["design"]].bounds()
        instr = max(r["instructions"], 1)
        walks = r["walk"]["count"]
        rows.append(
            {
                "design": r["design"],
                "workload": r["workload"],
                "refs": r["refs"],
                "instructions": r["instructions"],
                "l1_tlb_mpki": r["tlb"]["l1_misses"] * 1000 / instr,
                "l2_tlb_mpki": r["tlb"]["l2_misses"] * 1000 / instr,
                "walks": walks,
                "walk_refs_per_walk": r["walk"]["mem_accesses"] / walks if walks else 0.0,
                "walk_refs_pki": r["walk"]["mem_accesses"] * 1000 / instr,
                "avg_walk_cycles": r["walk"]["cycles"] / walks if walks else 0.0,
                "mmu_overhead_cycles": r["mmu"]["overhead_cycles"],
                "page_table_bytes": r["page_table"]["bytes"],
                "page_table_peak_bytes": r["page_table"]["peak_bytes"],
                "max_contiguous_bytes": r["page_table"]["max_contiguous_bytes"],
                "speedup": sp[r["design"]],
                "speedup_ci95_low": low,
                "speedup_ci95_high": high,
                "mrefs_per_sec": r["sim"]["refs_per_sec"] / 1e6,
            }
        )
    return rows


def core_table(record: dict) -> str:
    """Per-core figures of a multi-core or multi-process record (empty for one core).

    Examples
    --------
    >>> from xlat.run import run
    >>> rec = run("radix", "gups,kv", "16MiB", 20000, set={"sim.cores": 2})
    >>> core_table(rec).splitlines()[0].split()[:3]
    ['core', 'processes', 'refs']
    >>> len(core_table(rec).splitlines())
    3
    """
    if "cores" not in record:
        return ""
    names: dict[int, list[str]] = {}
    for p in record["processes"]:
        names.setdefault(p["core"], []).append(p["workload"])
    header = [
        "core",
        "processes",
        "refs",
        "L1 TLB MPKI",
        "walks",
        "cycles",
        "IPC",
        "switches",
        "IPIs received",
    ]
    body = []
    for k, c in enumerate(record["cores"]):
        instr = max(c["instructions"], 1)
        body.append(
            [
                str(k),
                ",".join(names.get(k, [])),
                f"{c['refs']:,}",
                f"{c['tlb']['l1_misses'] * 1000 / instr:.2f}",
                f"{c['walk']['count']:,}",
                f"{c['timing']['cycles']:,.0f}",
                f"{c['timing']['ipc']:.3f}",
                f"{c['switch']['count']:,}",
                f"{c['shootdown']['ipis_received']:,}",
            ]
        )
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header)]
    fmt_row = lambda cells: "  ".join(  # noqa: E731
        c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
    )
    return "\n".join([fmt_row(header)] + [fmt_row(b) for b in body])


COLUMNS = [
    ("design", "design", "{}"),
    ("refs", "refs", "{:,}"),
    ("l1_tlb_mpki", "L1 TLB MPKI", "{:.2f}"),
    ("l2_tlb_mpki", "L2 TLB MPKI", "{:.2f}"),
    ("walks", "walks", "{:,}"),
    ("walk_refs_per_walk", "PT refs/walk", "{:.2f}"),
    ("avg_walk_cycles", "cycles/walk", "{:.1f}"),
    ("mmu_overhead_cycles", "MMU overhead cycles", "{:,}"),
    ("page_table_peak_bytes", "peak page-table bytes", "{:,}"),
    ("speedup", "speedup", "{:.3f}"),
    ("mrefs_per_sec", "sim M refs/s", "{:.2f}"),
]


def format_table(rows: list[dict[str, Any]], markdown: bool = False) -> str:
    """Aligned text table (or a Markdown table) of :func:`table_rows` output. When a row's
    speedup has a 95 % interval (``speedup_ci95_low`` / ``_high``), a column ``speedup 95 % CI``
    follows the speedup, ``*`` marking an interval that contains 1.0.

    Examples
    --------
    >>> row = {"design": "x", "refs": 1, "l1_tlb_mpki": 0, "l2_tlb_mpki": 0,
    ...   "walks": 0, "walk_refs_per_walk": 0, "avg_walk_cycles": 0, "mmu_overhead_cycles": 0,
    ...   "page_table_peak_bytes": 0, "speedup": 1, "mrefs_per_sec": 1}
    >>> print(format_table([row]).split()[0])
    design
    >>> text = format_table([{**row, "speedup": 1.01, "speedup_ci95_low": 0.99,
    ...                       "speedup_ci95_high": 1.03}])
    >>> text.splitlines()[1].split()[-3:-1]
    ['[0.990,', '1.030]*']
    """
    columns = list(COLUMNS)
    if any(
        row.get("speedup_ci95_low", float("nan")) == row.get("speedup_ci95_low") for row in rows
    ):
        at = [key for key, _, _ in columns].index("speedup") + 1
        columns.insert(at, ("_ci95", "speedup 95 % CI", "{}"))
        rows = [{**row, "_ci95": _ci_cell(row)} for row in rows]
    header = [title for _, title, _ in columns]
    body = [[fmt.format(row[key]) for key, _, fmt in columns] for row in rows]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
        lines += ["| " + " | ".join(cells) + " |" for cells in body]
        return "\n".join(lines)
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header)]
    fmt_row = lambda cells: "  ".join(  # noqa: E731
        c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
    )
    return "\n".join([fmt_row(header)] + [fmt_row(b) for b in body])


def _ci_cell(row: dict[str, Any]) -> str:
    """``[low, high]`` of a row's speedup interval, ``*`` when it contains 1.0; empty without."""
    from xlat.intervals import contains_one

    low, high = row.get("speedup_ci95_low", float("nan")), row.get("speedup_ci95_high")
    if low != low or high is None or high != high:
        return ""
    return f"[{low:.3f}, {high:.3f}]" + ("*" if contains_one(low, high) else "")


def figure_width(value: str | float | None) -> float:
    """Figure width in inches from ``column`` (3.33), ``page`` (7) or a number of inches.

    Examples
    --------
    >>> figure_width("column"), figure_width("page"), figure_width("5")
    (3.33, 7.0, 5.0)
    >>> figure_width("9")
    Traceback (most recent call last):
    ...
    ValueError: --figure-width 9: wider than a page (7 in); use page, column or 2..7 inches
    """
    if value is None or value == "column":
        return COLUMN_IN
    if value == "page":
        return PAGE_IN
    try:
        inches = float(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"--figure-width {value}: not column, page or a number of inches"
        ) from None
    if not 2.0 <= inches <= PAGE_IN:
        what = "wider than a page (7 in)" if inches > PAGE_IN else "narrower than 2 in"
        raise ValueError(f"--figure-width {value}: {what}; use page, column or 2..7 inches")
    return inches


def page_size_bytes(label: str) -> int:
    """Bytes of a page-size label as the records write them.

    Examples
    --------
    >>> page_size_bytes("4k"), page_size_bytes("2m"), page_size_bytes("1g"), page_size_bytes("1t")
    (4096, 2097152, 1073741824, 1099511627776)
    """
    return int(label[:-1]) << {"k": 10, "m": 20, "g": 30, "t": 40}[label[-1]]


def bytes_text(n: float) -> str:
    """Bytes with a binary unit.

    Examples
    --------
    >>> bytes_text(16 * 2**20), bytes_text(573440), bytes_text(100)
    ('16 MiB', '560 KiB', '100 B')
    """
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


def _short(axis: str) -> str:
    return axis.split(".")[-1]


def _axis_value_text(axis: str, value: str) -> str:
    if axis.endswith("footprint") or axis.endswith("_bytes"):
        try:
            return bytes_text(float(value))
        except ValueError:
            return value
    return value


def _sort_key(value: str) -> tuple:
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


def _num(v: float) -> float | None:
    return None if v != v else float(v)


def _design_index(design: str, present: list[str]) -> int:
    order = design_order([*registered_designs(), *present])
    return order.index(design) if design in order else 0


class _Data:
    """The runs of a report, grouped as workload x setting x design, seeds aggregated."""

    def __init__(self, df, baseline: str) -> None:
        df = with_speedup(df, baseline)
        self.axes = varying_params(df)
        for a in self.axes:
            df[a] = df[a].astype(str)
        df = with_speedup_estimates(df, baseline)
        self.df = df
        self.baseline = baseline
        self.workloads = sorted(df["workload"].astype(str).unique())
        self.designs = design_order(df["design"].unique())
        combos = {tuple(r) for r in df[self.axes].values} if self.axes else {()}
        self.settings = sorted(combos, key=lambda t: tuple(_sort_key(v) for v in t))
        keys = ["workload", *self.axes, "design"]
        self._groups = {
            (k if isinstance(k, tuple) else (k,)): g
            for k, g in df.groupby(keys, sort=False, dropna=False)
        }
        self.seeds = sorted({int(s) for s in df["seed"]})

    def rows(self, workload: str, setting: tuple, design: str):
        return self._groups.get((workload, *setting, design))

    def cell(self, workload: str, setting: tuple, design: str, column, agg: str = "mean") -> float:
        """``column`` (a name, or a function of the rows) aggregated over seeds."""
        g = self.rows(workload, setting, design)
        if g is None or g.empty:
            return float("nan")
        if callable(column):
            vals = [float(v) for v in column(g)]
        else:
            if column not in g.columns:
                return float("nan")
            # Missing values: None, NaN, or pandas' NA of nullable integer columns (a key some
            # runs lack, such as an empty histogram class).
            vals = [float(v) for v in g[column].dropna()]
        if not vals:
            return float("nan")
        return geomean(vals) if agg == "geomean" else sum(vals) / len(vals)

    def speedup_estimate(self, workload: str, setting: tuple, design: str):
        """The speedup of one cell over the baseline with its 95 % interval where the runs
        carry one (:func:`xlat.intervals.cell_estimate`: seeds, or one sampled pair); the
        ``geomean`` workload combines the setting's workloads."""
        if workload == "geomean":
            parts = [self.speedup_estimate(w, setting, design) for w in self.workloads]
            if not all(p.point == p.point for p in parts):
                return intervals.none(float("nan"))
            return intervals.geomean_estimate(parts)
        g = self.rows(workload, setting, design)
        if g is None or g.empty:
            return intervals.none(float("nan"))
        return intervals.cell_estimate(
            [float(v) for v in g["speedup"]], list(g["speedup_estimate"])
        )

    def ratio_estimate(self, workload: str, base: tuple, run: tuple, design: str):
        """One design's speedup from setting ``base`` to setting ``run`` (its time under
        ``base`` over its time under ``run``, e.g. THP off over on) with its 95 % interval:
        the runs of each seed paired (:func:`xlat.intervals.pair_estimate`: window by window
        when both were sampled at the same references), the seeds combined as a cell's are
        (:func:`xlat.intervals.cell_estimate`); ``geomean`` combines the workloads."""
        if workload == "geomean":
            parts = [self.ratio_estimate(w, base, run, design) for w in self.workloads]
            if not all(p.point == p.point for p in parts):
                return intervals.none(float("nan"))
            return intervals.geomean_estimate(parts)
        ga, gb = self.rows(workload, base, design), self.rows(workload, run, design)
        if ga is None or gb is None or ga.empty or gb.empty:
            return intervals.none(float("nan"))
        by_seed = {int(r["seed"]): r for r in gb.to_dict("records")}
        speedups, errors = [], []
        for a in ga.to_dict("records"):
            b = by_seed.get(int(a["seed"]))
            if b is None or not float(b["timing.cycles"]) > 0:
                continue
            speedups.append(float(a["timing.cycles"]) / float(b["timing.cycles"]))
            errors.append(intervals.pair_estimate(a, b))
        if not speedups:
            return intervals.none(float("nan"))
        return intervals.cell_estimate(speedups, errors)

    def speedup_estimates(self) -> dict[str, Any]:
        """Every cell's speedup estimate (geomean rows included), labelled ``design @ workload
        (setting)``, for the notes under a table or caption."""
        out = {}
        for setting in self.settings:
            for w in [*self.workloads, "geomean"]:
                for d in self.designs:
                    label = f"{d} @ {w}" + (
                        f" ({self.setting_label(setting)})" if self.axes else ""
                    )
                    out[label] = self.speedup_estimate(w, setting, d)
        return out

    def setting_label(self, setting: tuple, skip: str | None = None) -> str:
        return ", ".join(
            f"{_short(a)}={_axis_value_text(a, v)}" for a, v in zip(self.axes, setting) if a != skip
        )

    def walkers(self) -> list[str]:
        """Designs that made a page walk in some run (perfect_tlb never does)."""
        df = self.df
        return [
            d for d in self.designs if float(df.loc[df["design"] == d, "walk.count"].max()) > 0
        ] or self.designs

    def non_walkers_note(self) -> str:
        none = [d for d in self.designs if d not in self.walkers()]
        return f"; not drawn: {', '.join(none)} (no page walk in any run)" if none else ""

    def scope(self) -> str:
        """Which runs a figure is drawn over (for captions)."""

        def n(count: int, what: str) -> str:
            return f"{count} {what}{'s' if count != 1 else ''}"

        parts = [
            f"{n(len(self.df), 'run')}: {n(len(self.designs), 'design')} x "
            f"{n(len(self.workloads), 'workload')}"
        ]
        if self.axes:
            parts.append(
                f" x {n(len(self.settings), 'setting')} of "
                f"{', '.join(_short(a) for a in self.axes)}"
            )
        parts.append(f"; {run_size_text(self.df)}")
        profiles = self.profiles_text()
        if profiles:
            parts.append(f"; {profiles}")
        return "".join(parts)

    def profiles_text(self) -> str:
        """The settings each design ran under (its profile, ``config.sim.profile``), for
        captions: ``profiles: tps = tps (reservation THP, any-size L1), radix = none``; empty
        for records from before profiles existed."""
        col = "config.sim.profile"
        if col not in self.df.columns:
            return ""
        summaries = _profile_summaries()
        named = []
        for d in self.designs:
            used = sorted(set(self.df.loc[self.df["design"] == d, col].dropna().astype(str)))
            if not used:
                continue
            texts = [
                p if p == "none" or not summaries.get(p) else f"{p} ({summaries[p]})" for p in used
            ]
            named.append(f"{d}: {' / '.join(texts)}")
        return "profiles (the settings of each design's paper) " + "; ".join(named) if named else ""

    def seed_agg(self, geo: bool = False) -> str:
        seeds = ",".join(map(str, self.seeds))
        if len(self.seeds) == 1:
            return f"seed {seeds}"
        return f"{'geometric' if geo else 'arithmetic'} mean over seeds {seeds}"


def speedup_table(data: _Data):
    """Speedup of every design over the baseline: one row per setting x workload, then one
    ``geomean`` row per setting (geometric mean over that setting's workloads). Where some
    cell has a 95 % interval (seeds or sampled runs, :meth:`_Data.speedup_estimate`), each
    design's column is followed by ``DESIGN.ci95_low`` and ``DESIGN.ci95_high``."""
    import pandas as pd

    rows, bounds = [], []
    for setting in data.settings:
        per = {d: [] for d in data.designs}
        for w in [*data.workloads, "geomean"]:
            row = dict(zip((_short(a) for a in data.axes), setting))
            row["workload"] = w
            ci = {}
            for d in data.designs:
                if w == "geomean":
                    v = geomean(per[d])
                else:
                    v = data.cell(w, setting, d, "speedup", "geomean")
                    per[d].append(v)
                row[d] = v
                _, low, high = data.speedup_estimate(w, setting, d).bounds()
                ci[f"{d}.ci95_low"], ci[f"{d}.ci95_high"] = low, high
            rows.append(row)
            bounds.append(ci)
    table = pd.DataFrame(rows)
    if not any(v == v for ci in bounds for v in ci.values()):
        return table
    cols = {c: table[c] for c in table.columns if c not in data.designs}
    for d in data.designs:
        cols[d] = table[d]
        cols[f"{d}.ci95_low"] = [ci[f"{d}.ci95_low"] for ci in bounds]
        cols[f"{d}.ci95_high"] = [ci[f"{d}.ci95_high"] for ci in bounds]
    return pd.DataFrame(cols)


#: matplotlib style of every figure (8 pt text at a 3.33 in column; TrueType fonts in PDFs).
STYLE = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "figure.titlesize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.grid.axis": "y",
    "grid.color": "#DDDDDD",
    "grid.linewidth": 0.5,
    "axes.linewidth": 0.6,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "axes.axisbelow": True,
    "axes.formatter.useoffset": False,
    "hatch.linewidth": 0.5,
    "savefig.bbox": None,  # the figure is exactly the asked width
    "pdf.fonttype": 42,  # TrueType, not Type 3 (ACM/IEEE checkers reject Type 3)
    "ps.fonttype": 42,
}


def error_bars_text(sources: set[str], lacking: bool = False) -> str:
    """What a speedup figure's caption says of its error bars: the method of the intervals
    drawn (``sources``: the sources of the estimates that have one), and ``lacking``: some
    drawn points have none; or that there are no error bars and why.

    Examples
    --------
    >>> error_bars_text(set())
    ' No error bars (no interval: one unsampled run per point).'
    >>> error_bars_text({"sampling (paired)"})[:60]
    ' Error bars: 95 % intervals from sampling: delta method on t'
    >>> error_bars_text({"seeds"}, lacking=True).endswith(
    ...     "Points without a bar: no interval: one unsampled run.")
    True
    """
    method = intervals.method_text(sources)
    if not method:
        return f" No error bars ({intervals.NO_INTERVAL} per point)."
    text = f" Error bars: {method[0].lower()}{method[1:]}."
    return text + (f" Points without a bar: {intervals.NO_INTERVAL}." if lacking else "")


class _Figures:
    """Draws the figures at one width and records the numbers each one shows."""

    def __init__(
        self,
        data: _Data,
        out: Path | None,
        width: float,
        provenance: str,
        only: set[str] | None = None,
    ) -> None:
        """``out`` None: keep the figures as objects (``self.objects``, for :mod:`xlat.plot`)
        instead of writing files, and leave matplotlib's backend and global style alone (the
        caller draws inside ``rc_context(STYLE)``); ``only``: draw just the figures named."""
        import matplotlib

        if out is not None:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        self.plt = plt
        self.data = data
        self.out = out
        self.only = only
        self.width = width
        self.provenance = provenance
        self.figs: list[tuple[Path, str]] = []
        self.objects: dict[str, Any] = {}
        self.numbers: dict[str, Any] = {}
        narrow = width < 5
        self.row_h = 1.25 if narrow else 1.45
        if out is not None:
            plt.rcParams.update(STYLE)

    def wants(self, *names: str) -> bool:
        """Whether any of the figures ``names`` is to be drawn."""
        return self.only is None or any(n in self.only for n in names)

    # -- helpers ---------------------------------------------------------------------------

    def _save(self, fig, name: str, caption: str, panels: list[dict], ylabel: str) -> None:
        # Closed in every case: a closed figure still draws, saves and shows as a notebook
        # cell's value, and pyplot neither shows it a second time nor keeps it alive.
        self.plt.close(fig)
        if not self.wants(name):
            return
        self.numbers[name] = {
            "caption": caption,
            "ylabel": ylabel,
            "panels": [
                {
                    "title": p["title"],
                    "x": list(p["x"]),
                    "series": {k: [_num(v) for v in vs] for k, vs in p["series"].items()},
                    **(
                        {
                            "ci95": {
                                k: [[_num(lo), _num(hi)] for lo, hi in vs]
                                for k, vs in p["ci95"].items()
                            }
                        }
                        if p.get("ci95")
                        else {}
                    ),
                }
                for p in panels
            ],
        }
        if self.out is None:
            self.objects[name] = fig
            return
        png = self.out / f"{name}.png"
        fig.savefig(png, dpi=200)
        fig.savefig(
            self.out / f"{name}.pdf",
            metadata={"Title": f"xlat {name}", "Subject": caption, "Keywords": self.provenance},
        )
        self.figs.append((png, caption))

    def _legend(self, fig, handles, names, title: str | None = None) -> None:
        longest = max((len(n) for n in names), default=1)
        entry_in = 0.45 + 0.06 * longest
        ncol = max(1, min(len(names), int(self.width // entry_in)))
        fig.legend(
            handles,
            names,
            loc="outside upper center",
            ncol=ncol,
            frameon=False,
            handlelength=1.6,
            columnspacing=1.0,
            title=title,
        )

    def _xlabels(self, ax, labels: list[str], ngroups_per_in: float) -> None:
        ax.set_xticks(range(len(labels)))
        longest = max((len(s) for s in labels), default=1)
        if longest * 0.055 > 0.9 / ngroups_per_in:
            ax.set_xticklabels(labels, rotation=30, ha="right", rotation_mode="anchor")
        else:
            ax.set_xticklabels(labels)

    def bars(
        self,
        name: str,
        caption: str,
        panels: list[dict],
        series: list[str],
        ylabel: str,
        styles: dict[str, tuple[str, str]] | None = None,
        ref_line: float | None = None,
        legend_title: str | None = None,
        stacked: bool = False,
        log: bool = False,
    ) -> None:
        """Grouped (or ``stacked``) bars: one panel per entry of ``panels`` (``title``, ``x``
        labels, ``series`` values). Groups that do not fit the width wrap into more rows; more
        than four panels that each fit half the width go two per row (a figure stays shorter
        than a page)."""
        if not self.wants(name):
            return
        plt = self.plt
        n = 1 if stacked else max(len(series), 1)

        def fit(width_in: float) -> int:
            return max(1, int((width_in - 0.65) / (n * 0.05 / 0.8 + 0.02)))

        ncols = 1
        if len(panels) > 4 and all(len(p["x"]) <= fit(self.width / 2) for p in panels):
            ncols = 2
        max_groups = fit(self.width / ncols)
        plot_in = self.width / ncols - 0.65
        rows = []
        for p in panels:
            x = p["x"]
            for start in range(0, len(x), max_groups):
                rows.append(
                    {
                        "title": p["title"],
                        "x": x[start : start + max_groups],
                        "series": {
                            k: v[start : start + max_groups] for k, v in p["series"].items()
                        },
                        "ci95": {
                            k: v[start : start + max_groups] for k, v in p.get("ci95", {}).items()
                        },
                    }
                )
        longest = max((len(s) for r in rows for s in r["x"]), default=1)
        nrows = math.ceil(len(rows) / ncols)
        fig, axes = plt.subplots(
            nrows,
            ncols,
            figsize=(self.width, self.row_h * nrows + 0.35 + 0.04 * longest),
            squeeze=False,
            layout="constrained",
        )
        flat = list(axes.flat)
        for ax in flat[len(rows) :]:
            ax.remove()  # no empty panels
        self.title_chars = max(12, int((self.width / ncols - 0.6) / 0.06))
        bw = 0.8 / n if not stacked else 0.6
        handles = []
        for ax, row in zip(flat, rows):
            ngroups = max(len(row["x"]), 1)
            bottom = [0.0] * len(row["x"])
            for i, s in enumerate(series):
                slot = style_slots(i)
                color, hatch = (styles or {}).get(s, (PALETTE[slot[0]], HATCHES[slot[1]]))
                offset = 0 if stacked else (i - (n - 1) / 2) * bw
                xs = [g + offset for g in range(len(row["x"]))]
                # NaN (no value) draws no bar; a log axis cannot draw 0 either.
                vals = [float("nan") if v != v or (log and v <= 0) else v for v in row["series"][s]]
                vals = vals if log else [0.0 if v != v else v for v in vals]
                h = ax.bar(
                    xs,
                    vals,
                    bw,
                    bottom=bottom if stacked else None,
                    label=s,
                    color=color,
                    hatch=hatch,
                    edgecolor="black",
                    linewidth=0.4,
                )
                ci = row["ci95"].get(s)
                if ci and not stacked:
                    # 95 % intervals (xlat.intervals): a black whisker over each bar that has one
                    self._errors(ax, xs, row["series"][s], ci, "black", 0.6, 1.2, 3)
                if not stacked:
                    for x, v in zip(xs, row["series"][s]):
                        if v != v:  # no value (e.g. no walk reached that PWC level)
                            ax.text(
                                x,
                                0.02,
                                "n/a",
                                rotation=90,
                                ha="center",
                                va="bottom",
                                fontsize=7,
                                transform=ax.get_xaxis_transform(),
                            )
                if stacked:
                    bottom = [b + v for b, v in zip(bottom, vals)]
                if ax is flat[0]:
                    handles.append(h)
            self._xlabels(ax, row["x"], ngroups / plot_in)
            ax.set_xlim(-0.5, max(ngroups, 1) - 0.5)
            if ref_line is not None:
                ax.axhline(ref_line, color="black", linewidth=0.7, zorder=0.5)
            if "geomean" in row["x"]:
                ax.axvline(row["x"].index("geomean") - 0.5, color="#888888", lw=0.6, ls=":")
            if row["title"]:
                self.title(ax, row["title"])
            if log:
                from matplotlib.ticker import FuncFormatter, NullFormatter

                ax.set_yscale("log")
                ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.6g}"))
                ax.yaxis.set_minor_formatter(NullFormatter())
            else:
                ax.set_ylim(bottom=0)
            ax.margins(y=0.08)
            if len(rows) == 1:
                ax.set_ylabel(ylabel)
        positive = [v for r in rows for vs in r["series"].values() for v in vs if v == v and v > 0]
        if log and positive:  # one scale for every panel: decades are labelled on each
            for ax in flat[: len(rows)]:
                ax.set_ylim(min(positive) / 1.5, max(positive) * 1.5)
        if len(rows) > 1:
            fig.supylabel(ylabel, fontsize=8)
        self._legend(fig, handles, series, legend_title)
        self._save(fig, name, caption, panels, ylabel)

    def facets(self, n: int, panel_h: float | None = None):
        ncols = max(1, min(n, int(self.width // 1.65)))
        nrows = math.ceil(n / ncols)
        fig, axes = self.plt.subplots(
            nrows,
            ncols,
            figsize=(self.width, (panel_h or self.row_h + 0.25) * nrows + 0.35),
            squeeze=False,
            layout="constrained",
        )
        flat = list(axes.flat)
        for ax in flat[n:]:
            ax.remove()  # no empty panels
        self.title_chars = max(12, int((self.width / ncols - 0.6) / 0.06))
        return fig, flat[:n]

    def title(self, ax, text: str) -> None:
        """A panel title wrapped to the panel's width."""
        import re
        import textwrap

        text = re.sub(r"(\d) ([KMG]?i?B)\b", "\\1\u00a0\\2", text)  # keep "8 MiB" together
        ax.set_title(
            "\n".join(textwrap.wrap(text, self.title_chars)), loc="left", pad=2, fontsize=7
        )

    # -- the figures -----------------------------------------------------------------------

    def per_setting_bars(
        self,
        name: str,
        what: str,
        column,
        ylabel: str,
        agg: str = "mean",
        normalize: bool = False,
        scale: float = 1.0,
        ref_line: float | None = None,
        geo_group: bool = False,
        designs: list[str] | None = None,
        log: bool = False,
        speedup_errors: bool = False,
    ) -> None:
        """One panel per setting: workloads on x, a bar per design (``log``: a log y axis;
        ``speedup_errors``: the bars are speedups, drawn with their 95 % intervals as error
        bars where the runs carry one)."""
        if not self.wants(name):
            return
        data = self.data
        designs = designs or data.designs
        panels = []
        sources = set()
        lacking = False
        for setting in data.settings:
            series = {}
            errors = {}
            if speedup_errors:
                x = data.workloads + (["geomean"] if geo_group else [])
                for d in designs:
                    est = [data.speedup_estimate(w, setting, d) for w in x]
                    sources |= {e.source for e in est if e.has_interval}
                    lacking |= any(e.source == "none" and e.point == e.point for e in est)
                    errors[d] = [e.bounds()[1:] for e in est]
            for d in designs:
                vals = []
                for w in data.workloads:
                    v = data.cell(w, setting, d, column, agg) * scale
                    if normalize:
                        base = data.cell(w, setting, data.baseline, column, agg) * scale
                        v = v / base if base else float("nan")
                    vals.append(v)
                if geo_group:
                    vals.append(geomean(vals))
                series[d] = vals
            x = data.workloads + (["geomean"] if geo_group else [])
            panel = {"title": data.setting_label(setting), "x": x, "series": series}
            if sources:
                panel["ci95"] = errors
            panels.append(panel)
        styles = {d: self.design_style(d) for d in designs}
        agg_txt = data.seed_agg(geo=agg == "geomean")
        caption = f"{what} Over {data.scope()}; {agg_txt}" + (
            "; one panel per setting." if data.axes else "."
        )
        if speedup_errors:
            caption += error_bars_text(sources, lacking)
        self.bars(name, caption, panels, designs, ylabel, styles, ref_line, log=log)

    def design_style(self, design: str) -> tuple[str, str]:
        """Colour and hatch of a design: by its place in the registry, so that a design looks
        the same in every report (a design not registered here takes a place after them)."""
        colour, hatch = style_slots(_design_index(design, self.data.designs))
        return PALETTE[colour], HATCHES[hatch]

    def served_by(self, cycles: bool = False) -> None:
        """Stacked bars per design, by the level that served each page-walk reference:
        references per kilo-instruction, or (``cycles``) the latency those references add up
        to per walk."""
        if not self.wants("walk_cycles_by_level" if cycles else "walk_served_by"):
            return
        data = self.data
        walkers = data.walkers()
        panels_spec = [(w, s) for s in data.settings for w in data.workloads]
        fig, axes = self.facets(len(panels_spec), panel_h=self.row_h + 0.45)
        panels = []
        handles = []

        def per_ki(g, col):
            return g[col].astype(float) * 1000 / g["instructions"].clip(lower=1)

        def per_walk(g, col):
            walks = g["walk.count"].astype(float) + g["walk.post_fault_count"].astype(float)
            return g[col].astype(float) / walks.clip(lower=1)

        for ax, (w, setting) in zip(axes, panels_spec):
            bottom = [0.0] * len(walkers)
            series = {}
            for suffix, label, color, hatch in SERVED:
                col = f"cache.pt_served_{'cycles_' if cycles else ''}{suffix}"
                fn = per_walk if cycles else per_ki
                vals = [
                    data.cell(w, setting, d, lambda g, col=col, fn=fn: fn(g, col)) for d in walkers
                ]
                vals = [0.0 if v != v else v for v in vals]
                series[label] = vals
                h = ax.bar(
                    range(len(walkers)),
                    vals,
                    0.7,
                    bottom=bottom,
                    color=color,
                    hatch=hatch,
                    edgecolor="black",
                    linewidth=0.4,
                    label=label,
                )
                if len(handles) < len(SERVED):
                    handles.append(h)
                bottom = [b + v for b, v in zip(bottom, vals)]
            ax.set_xticks(range(len(walkers)))
            ax.set_xticklabels(walkers, rotation=45, ha="right", rotation_mode="anchor")
            title = w + (f", {data.setting_label(setting)}" if data.axes else "")
            self.title(ax, title)
            panels.append({"title": title, "x": walkers, "series": series})
        ylabel = (
            "page-walk reference cycles\nper walk"
            if cycles
            else "page-walk memory references\nper kilo-instruction"
        )
        fig.supylabel(ylabel, fontsize=8)
        self._legend(fig, handles, [label for _, label, _, _ in SERVED])
        where = (
            "; one panel per workload"
            + (" and setting" if data.axes else "")
            + data.non_walkers_note()
            + f". Over {data.scope()}; {data.seed_agg()}."
        )
        if cycles:
            caption = (
                "Where a page walk's time goes: the latency of its page-table references "
                "(cache.pt_served_cycles_*), summed per walk (TLB-miss and post-fault walks) "
                "and stacked by the level that served them. A design that probes in parallel "
                "waits only for its slowest probe, so its bar can exceed its walk latency; "
                "page-walk-cache lookups are not included" + where
            )
            name = "walk_cycles_by_level"
        else:
            caption = (
                "Page-walk memory references per kilo-instruction (TLB-miss and post-fault "
                "walks), stacked by the level of the hierarchy that served them" + where
            )
            name = "walk_served_by"
        self._save(fig, name, caption, panels, ylabel.replace("\n", " "))

    def latency_distribution(self) -> None:
        """The distribution of TLB-miss walk latency (walk.latency_hist): a panel per workload
        and setting, a line per design over log2 latency buckets."""
        data = self.data
        if not self.wants("walk_latency_distribution"):
            return
        self._log2_histogram(
            "walk_latency_distribution",
            prefix="walk.latency_hist.",
            count_col="walk.count",
            designs=data.walkers(),
            ylabel="TLB-miss walks (%)",
            xlabel="walk latency (cycles, log2 bucket's lower bound)",
            caption_head=(
                "Distribution of TLB-miss page-walk latency (walk.latency_hist): the share of a "
                "design's walks in each log2 latency bucket, labelled by its lowest cycle count "
                "(bucket 64 holds 64-127 cycles)"
            ),
            note=data.non_walkers_note(),
        )

    def fault_latency_distribution(self) -> None:
        """The distribution of page-fault latency (os.fault_latency.hist): a panel per workload
        and setting, a line per design over log2 latency buckets. Drawn when the runs have
        the histogram and include Elastic Translations runs (design ``et``, or a baseline of
        its evaluation: ``os.policy`` mthp / hawkeye / trident, a HugeTLB pool)."""
        data = self.data
        df = data.df
        if not self.wants("fault_latency_distribution"):
            return
        et_runs = "et" in data.designs
        if "config.os.policy" in df.columns:
            et_runs |= bool(df["config.os.policy"].isin(["mthp", "hawkeye", "trident"]).any())
        if "config.os.hugetlb.pages" in df.columns:
            et_runs |= bool((df["config.os.hugetlb.pages"].fillna(0).astype(float) > 0).any())
        if not et_runs:
            return
        self._log2_histogram(
            "fault_latency_distribution",
            prefix="os.fault_latency.hist.",
            count_col="os.fault_latency.count",
            designs=data.designs,
            ylabel="page faults (%)",
            xlabel="fault latency (OS cycles, log2 bucket's lower bound)",
            caption_head=(
                "Distribution of page-fault latency (os.fault_latency.hist): the share of a run's "
                "page faults in each log2 bucket of the OS cycles the fault cost (the fixed "
                "timing.page_fault_cycles, zeroing, direct compaction, copies), labelled by its "
                "lowest cycle count"
            ),
        )

    def _log2_histogram(
        self,
        name: str,
        *,
        prefix: str,
        count_col: str,
        designs: list[str],
        ylabel: str,
        xlabel: str,
        caption_head: str,
        note: str = "",
    ) -> None:
        """A figure of log2-bucket histograms (columns ``prefix + lower bound``, as shares of
        ``count_col``): a panel per workload and setting, a line per design, over the buckets
        from the first to the last that some run uses. Nothing is drawn when no run has the
        columns or none uses a bucket."""
        data = self.data
        lows = sorted(int(c.rsplit(".", 1)[1]) for c in data.df.columns if c.startswith(prefix))
        used = [lo for lo in lows if float(data.df[f"{prefix}{lo}"].fillna(0).max()) > 0]
        if not used:
            return
        lows = [lo for lo in lows if used[0] <= lo <= used[-1]]
        specs = [(w, s) for s in data.settings for w in data.workloads]
        fig, axes = self.facets(len(specs))
        panels, handles = [], []
        for ax, (w, setting) in zip(axes, specs):
            series = {}
            for d in designs:

                def share(g, lo):
                    total = g[count_col].fillna(0).astype(float).clip(lower=1)
                    return g[f"{prefix}{lo}"].fillna(0).astype(float) * 100 / total

                ys = [data.cell(w, setting, d, lambda g, lo=lo: share(g, lo)) for lo in lows]
                series[d] = ys
                (h,) = ax.plot(range(len(lows)), ys, **self.line_style(d), label=d)
                if len(handles) < len(designs):
                    handles.append(h)
            # Short labels (1k, 64k, 1M), every other one when there are many: the full
            # numbers of a dozen buckets ran into each other.
            step = 2 if len(lows) > 10 else 1
            ax.set_xticks(range(0, len(lows), step))
            ax.set_xticklabels(
                [short_count(lo) for lo in lows[::step]],
                rotation=45,
                ha="right",
                rotation_mode="anchor",
            )
            ax.grid(True, axis="both")
            title = w + (f", {data.setting_label(setting)}" if data.axes else "")
            self.title(ax, title)
            panels.append({"title": title, "x": [str(lo) for lo in lows], "series": series})
        fig.supylabel(ylabel, fontsize=8)
        fig.supxlabel(xlabel, fontsize=8)
        self._legend(fig, handles, designs)
        caption = (
            caption_head
            + "; a panel per workload"
            + (" and setting" if data.axes else "")
            + ", a line per design"
            + note
            + f". Over {data.scope()}; {data.seed_agg()}."
        )
        self._save(fig, name, caption, panels, ylabel)

    def dram_latency_distribution(self) -> None:
        """The distribution of DRAM read latency under the queued model
        (dram.queued.read_latency_hist): a panel per workload and setting, a line per design."""
        if not self.wants("dram_latency_distribution"):
            return
        self._log2_histogram(
            "dram_latency_distribution",
            prefix="dram.queued.read_latency_hist.",
            count_col="dram.queued.reads",
            designs=self.data.designs,
            ylabel="DRAM reads (%)",
            xlabel="DRAM read latency (core cycles, log2 bucket's lower bound)",
            caption_head=(
                "Distribution of DRAM read latency under the queued DRAM model "
                "(dram.queued.read_latency_hist: arrival at the controller to first data, "
                "queueing, bank and bus waits included), the share of a run's DRAM reads in each "
                "log2 bucket labelled by its lowest cycle count"
            ),
        )

    def loaded_latency(self) -> None:
        """Loaded latency: each run's average DRAM read latency against the DRAM bandwidth it
        used (dram.queued), a panel per setting, a marker per design, beside the peak. Drawn
        when the runs used the queued DRAM model."""
        data = self.data
        df = data.df
        cols = [
            "dram.queued.avg_read_latency_cycles",
            "dram.queued.bandwidth_bytes_per_cycle",
            "dram.queued.peak_bandwidth_bytes_per_cycle",
        ]
        if not self.wants("loaded_latency") or not all(c in df.columns for c in cols):
            return
        if float(df[cols[0]].fillna(0).max()) <= 0:
            return
        mhz = (
            df["config.mem.dram.core_clock_mhz"].astype(float)
            if "config.mem.dram.core_clock_mhz" in df.columns
            else None
        )
        fig, axes = self.facets(len(data.settings))
        panels, handles = [], []
        for ax, setting in zip(axes, data.settings):
            series = {}
            for d in data.designs:
                xs, ys = [], []
                for w in data.workloads:
                    g = data.rows(w, setting, d)
                    if g is None or g.empty:
                        xs.append(float("nan"))
                        ys.append(float("nan"))
                        continue
                    clock = mhz.loc[g.index].mean() / 1000 if mhz is not None else 2.6
                    xs.append(float(g[cols[1]].mean()) * clock)
                    ys.append(float(g[cols[0]].mean()))
                style = self.line_style(d)
                h = ax.scatter(
                    xs,
                    ys,
                    marker=style.get("marker", "o"),
                    color=style.get("color"),
                    s=18,
                    label=d,
                )
                if len(handles) < len(data.designs):
                    handles.append(h)
                series[d] = ys
                series[f"{d} GB/s"] = xs
            peak = df[cols[2]].astype(float).max() * (
                float(mhz.max()) / 1000 if mhz is not None else 2.6
            )
            ax.axvline(peak, color="0.4", linestyle="--", linewidth=0.8)
            ax.grid(True, axis="both")
            label = data.setting_label(setting)
            self.title(ax, label or "all runs")
            panels.append({"title": label or "all runs", "x": data.workloads, "series": series})
        fig.supylabel("average DRAM read latency (core cycles)", fontsize=8)
        fig.supxlabel("DRAM bandwidth used (GB/s; dashed: peak)", fontsize=8)
        self._legend(fig, handles, data.designs)
        caption = (
            "Loaded latency: each run's average DRAM read latency under the queued DRAM model "
            "(dram.queued.avg_read_latency_cycles, arrival at the controller to first data) "
            "against the DRAM bandwidth it used (dram.queued.bandwidth_bytes_per_cycle x the "
            "core clock), one marker per design and workload, the dashed line at the "
            "configuration's peak (channels x one 64-byte burst per tBL). Latency rising "
            "toward the peak is queueing; page-table reads share these queues with data"
            + (" (a panel per setting)" if data.axes else "")
            + f". Over {data.scope()}; {data.seed_agg()}."
        )
        self._save(fig, "loaded_latency", caption, panels, "average DRAM read latency (cycles)")

    def line_style(self, design: str) -> dict[str, Any]:
        """Marker, dash, colour of a design's line (by its place in the registry, as bars)."""
        colour, second = style_slots(_design_index(design, self.data.designs))
        color = PALETTE[colour]
        return {
            "marker": MARKERS[second],
            "linestyle": LINESTYLES[second % len(LINESTYLES)],
            "color": color if color != "#FFFFFF" else "black",
            "markersize": 3.5,
            "linewidth": 1.0,
            "markeredgecolor": "black",
            "markeredgewidth": 0.3,
        }

    def pwc_hit_rate(self) -> None:
        """Radix page-walk-cache hit rate per level: hits over the lookups that reached it."""
        data = self.data
        if "radix" not in data.designs or "radix.pwc_lookups" not in data.df.columns:
            return
        panels = []
        for setting in data.settings:
            series = {}
            for i, (lvl, label) in enumerate(PWC_LEVELS):
                deeper = [f"radix.pwc_{lv}_hits" for lv, _ in PWC_LEVELS[:i]]

                def rate(g, lvl=lvl, deeper=deeper):
                    reached = g["radix.pwc_lookups"].astype(float)
                    for c in deeper:
                        reached = reached - g[c].astype(float)
                    hits = g[f"radix.pwc_{lvl}_hits"].astype(float)
                    return [h / r * 100 if r > 0 else float("nan") for h, r in zip(hits, reached)]

                series[label] = [data.cell(w, setting, "radix", rate) for w in data.workloads]
            panels.append(
                {"title": data.setting_label(setting), "x": data.workloads, "series": series}
            )
        styles = {label: (PALETTE[i], HATCHES[i]) for i, (_, label) in enumerate(PWC_LEVELS)}
        caption = (
            "Radix page-walk-cache hit rate per level (%): walks whose deepest PWC hit was at "
            "that level, over the TLB-miss walks that reached it (missed every deeper PWC); "
            "an empty bar: no walk reached it. "
            f"Over the radix runs of {data.scope()}; {data.seed_agg()}."
        )
        self.bars(
            "pwc_hit_rate",
            caption,
            panels,
            [lb for _, lb in PWC_LEVELS],
            "hit rate (%)",
            styles,
            legend_title=None,
        )

    def tlb(self) -> None:
        """TLB misses once per workload (the TLBs are the same for every design)."""
        data = self.data
        panels, differ = [], set()
        for setting in data.settings:
            series: dict[str, list[float]] = {"L1 TLB": [], "L2 TLB": []}
            for w in data.workloads:
                for label, col in (("L1 TLB", "tlb.l1_mpki"), ("L2 TLB", "tlb.l2_mpki")):
                    vals = {d: data.cell(w, setting, d, col) for d in data.designs}
                    known = [v for v in vals.values() if v == v]
                    if not known:
                        series[label].append(float("nan"))
                        continue
                    # The value most designs share (all but designs that change the TLBs, such
                    # as perfect_tlb); the others are named in the caption.
                    common = max(set(known), key=known.count)
                    differ |= {d for d, v in vals.items() if v == v and v != common}
                    series[label].append(common)
            panels.append(
                {"title": data.setting_label(setting), "x": data.workloads, "series": series}
            )
        styles = {"L1 TLB": ("#DDDDDD", ""), "L2 TLB": ("#4477AA", "//////")}
        note = (
            f" Not drawn: {', '.join(design_order(differ))}, whose TLB misses differ by "
            "construction (see the runs table)."
            if differ
            else ""
        )
        caption = (
            "TLB misses per kilo-instruction, once per workload: the TLBs are the same for "
            "every design, so the value is the workload's (L1: data-side L1 TLBs; L2: unified "
            f"L2 TLB, each miss a page walk).{note} Over {data.scope()}; {data.seed_agg()}."
        )
        self.bars(
            "tlb_mpki",
            caption,
            panels,
            ["L1 TLB", "L2 TLB"],
            "misses per\nkilo-instruction",
            styles,
        )
        self.misses_by_page_size()
        sizes = [("4k", "4 KiB"), ("2m", "2 MiB"), ("1g", "1 GiB")]
        if not all(f"tlb.l1_{s}_hits" in data.df.columns for s, _ in sizes):
            return
        if not any(float(data.df[f"tlb.l1_{s}_hits"].max()) > 0 for s, _ in sizes[1:]):
            return
        panels = []
        for setting in data.settings:
            series = {lab: [] for _, lab in sizes}
            for w in data.workloads:
                ref = data.baseline
                total = sum(data.cell(w, setting, ref, f"tlb.l1_{s}_hits") for s, _ in sizes)
                for s, lab in sizes:
                    v = data.cell(w, setting, ref, f"tlb.l1_{s}_hits")
                    series[lab].append(v * 100 / total if total else float("nan"))
            panels.append(
                {"title": data.setting_label(setting), "x": data.workloads, "series": series}
            )
        styles = {lab: (PALETTE[i], HATCHES[i]) for i, (_, lab) in enumerate(sizes)}
        used = [lab for s, lab in sizes if float(data.df[f"tlb.l1_{s}_hits"].max()) > 0]
        unused = [lab for _, lab in sizes if lab not in used]
        caption = (
            "L1 TLB hits by the size of the page they translated (% of L1 hits, stacked), per "
            f"workload, from the {data.baseline} runs"
            + (f"; no hit on {', '.join(unused)} pages in any run" if unused else "")
            + f". Over {data.scope()}; {data.seed_agg()}."
        )
        self.bars(
            "tlb_hits_by_page_size",
            caption,
            panels,
            used,
            "share of L1\nTLB hits (%)",
            styles,
            stacked=True,
        )

    def va_gaps(self) -> None:
        """Virtual-address-space regularity (LVM §3.1), once per workload: the gap coverage of
        the mapped pages at the end of the run and the holes between them by size."""
        data = self.data
        if "os.va_gaps.coverage" not in data.df.columns:
            return
        hole_cols = sorted(
            (c for c in data.df.columns if c.startswith("os.va_gaps.holes_by_size.")),
            key=lambda c: page_size_bytes(c.rsplit(".", 1)[1]),
        )
        # Classes as in the paper's discussion: one page, below 64 KiB, below 2 MiB, larger.
        classes = [("4 KiB", 0, 4096), ("8-60 KiB", 8192, 65536)]
        classes += [("64 KiB-2 MiB", 65536, 2 << 20), ("≥ 2 MiB", 2 << 20, 1 << 62)]
        panels, hole_panels, differ = [], [], set()
        for setting in data.settings:
            cover, holes = [], {lab: [] for lab, _, _ in classes}
            for w in data.workloads:
                vals = {d: data.cell(w, setting, d, "os.va_gaps.coverage") for d in data.designs}
                known = [v for v in vals.values() if v == v]
                if not known:
                    cover.append(float("nan"))
                else:
                    # The address space is the OS model's, the same for every design unless
                    # a design changes what is mapped (named in the caption).
                    common = max(set(known), key=known.count)
                    differ |= {d for d, v in vals.items() if v == v and v != common}
                    cover.append(common * 100)
                ref = next((d for d, v in vals.items() if v == v), data.baseline)
                for lab, lo, hi in classes:
                    n = 0.0
                    for c in hole_cols:
                        size = page_size_bytes(c.rsplit(".", 1)[1])
                        if lo <= size < hi:
                            v = data.cell(w, setting, ref, c)
                            n += v if v == v else 0.0
                    holes[lab].append(n)
            title = data.setting_label(setting)
            panels.append({"title": title, "x": data.workloads, "series": {"coverage": cover}})
            hole_panels.append({"title": title, "x": data.workloads, "series": holes})
        note = (
            f" Not drawn: {', '.join(design_order(differ))}, whose address spaces differ."
            if differ
            else ""
        )
        self.bars(
            "va_gap_coverage",
            "Virtual-address gap coverage of the mapped pages at each process's exit or the end "
            "of the run (os.va_gaps.coverage, %): the share of consecutive mapped 4 KiB pages "
            "whose virtual page numbers differ by 1, as LVM's §3.1 measures it (100 %: one "
            "linear function describes the address space); once per workload, the OS model's "
            f"address space being the same for every design.{note} Over {data.scope()}; "
            f"{data.seed_agg()}.",
            panels,
            ["coverage"],
            "gap coverage (%)",
            {"coverage": (PALETTE[0], "")},
        )
        if hole_cols:
            self.bars(
                "va_gap_sizes",
                "Holes between mapped virtual pages (at exit or the end of the run), by size "
                "(count of os.va_gaps.holes_by_size classes, stacked), once per workload. Over "
                f"{data.scope()}; {data.seed_agg()}.",
                hole_panels,
                [lab for lab, _, _ in classes],
                "holes in the\naddress space",
                {lab: (PALETTE[i], HATCHES[i]) for i, (lab, _, _) in enumerate(classes)},
                stacked=True,
            )

    def misses_by_page_size(self) -> None:
        """L2 TLB misses per kilo-instruction stacked by the size of the page the walk found
        (walk.by_page_size), page faults apart, from the baseline's runs."""
        data = self.data
        prefix = "walk.by_page_size."
        keys = [c[len(prefix) :] for c in data.df.columns if c.startswith(prefix)]
        if not keys or "walk.fault_walks" not in data.df.columns:
            return
        keys.sort(key=page_size_bytes)
        ref = data.baseline if data.baseline in data.walkers() else data.walkers()[0]
        labels = [bytes_text(page_size_bytes(k)).replace(" ", "\u00a0") for k in keys]
        cats = list(zip([prefix + k for k in keys], labels)) + [("walk.fault_walks", "fault")]
        panels = []
        for setting in data.settings:
            series: dict[str, list[float]] = {lab: [] for _, lab in cats}
            for w in data.workloads:
                for col, lab in cats:

                    def mpki(g, col=col):
                        return (
                            g[col].fillna(0).astype(float) * 1000 / g["instructions"].clip(lower=1)
                        )

                    series[lab].append(data.cell(w, setting, ref, mpki))
            panels.append(
                {"title": data.setting_label(setting), "x": data.workloads, "series": series}
            )
        styles = {lab: (PALETTE[i], HATCHES[i]) for i, (_, lab) in enumerate(cats[:-1])}
        styles["fault"] = ("#FFFFFF", "xxxxx")
        caption = (
            "L2 TLB misses per kilo-instruction by the size of the page the walk found "
            "(walk.by_page_size; fault: the walk found no translation and a page fault "
            f"followed), stacked, per workload, from the {ref} runs. Over {data.scope()}; "
            f"{data.seed_agg()}."
        )
        self.bars(
            "tlb_misses_by_page_size",
            caption,
            panels,
            [lab for _, lab in cats],
            "L2 TLB misses per\nkilo-instruction",
            styles,
            stacked=True,
        )

    def thp_effect(self) -> None:
        """With THP off and on in the grid: each design's speedup from huge pages (its cycles
        with THP off over its cycles with THP on), bars grouped by workload, a panel per
        setting of the other axes."""
        data = self.data
        axis = "config.os.thp"
        if axis not in data.axes:
            return
        idx = data.axes.index(axis)
        values = {s[idx] for s in data.settings}
        if "never" not in values:
            return
        ons = sorted(values - {"never"}, key=_sort_key)
        rest = sorted(
            {tuple(v for j, v in enumerate(s) if j != idx) for s in data.settings},
            key=lambda t: tuple(_sort_key(v) for v in t),
        )

        def setting(r: tuple, v: str) -> tuple:
            return tuple(list(r[:idx]) + [v] + list(r[idx:]))

        others = [a for a in data.axes if a != axis]
        panels = []
        sources: set[str] = set()
        lacking = False
        for on in ons:
            for r in rest:
                series, errors = {}, {}
                for d in data.designs:
                    vals = []
                    for w in data.workloads:
                        off_c = data.cell(w, setting(r, "never"), d, "timing.cycles")
                        on_c = data.cell(w, setting(r, on), d, "timing.cycles")
                        vals.append(off_c / on_c if on_c else float("nan"))
                    series[d] = vals + [geomean(vals)]
                    est = [
                        data.ratio_estimate(w, setting(r, "never"), setting(r, on), d)
                        for w in [*data.workloads, "geomean"]
                    ]
                    sources |= {e.source for e in est if e.has_interval}
                    lacking |= any(e.source == "none" and e.point == e.point for e in est)
                    errors[d] = [e.bounds()[1:] for e in est]
                label = ", ".join(
                    _axis_value_text(a, v) if a.endswith("footprint") else f"{_short(a)}={v}"
                    for a, v in zip(others, r)
                )
                title = f"thp={on} over never" + (f", {label}" if label else "")
                panel = {"title": title, "x": [*data.workloads, "geomean"], "series": series}
                if any(e == e for b in errors.values() for e, _ in b):
                    panel["ci95"] = errors
                panels.append(panel)
        caption = (
            "Speedup each design gets from transparent huge pages: its cycles with os.thp=never "
            "over its cycles with THP on, on the same workload"
            + (f" and {', '.join(_short(a) for a in others)}" if others else "")
            + "; geomean: geometric mean over the workloads. "
            f"Over {data.scope()}; cycles: {data.seed_agg()}." + error_bars_text(sources, lacking)
        )
        self.bars(
            "thp_speedup",
            caption,
            panels,
            data.designs,
            "speedup from\nhuge pages (×)",
            {d: self.design_style(d) for d in data.designs},
            ref_line=1.0,
        )

    def lines(self, axis: str) -> None:
        """Speedup and page-walk cycles over a numeric axis: a panel per workload (and per
        setting of the other axes), a line per design. The speedup's points carry their 95 %
        intervals as error bars where the runs have one (:meth:`_Data.speedup_estimate`), and
        the caption says how they were derived, or that there are none."""
        data = self.data
        others = [a for a in data.axes if a != axis]
        idx = data.axes.index(axis)
        rest = sorted(
            {tuple(v for j, v in enumerate(s) if j != idx) for s in data.settings},
            key=lambda t: tuple(_sort_key(v) for v in t),
        )
        xvals = sorted({s[idx] for s in data.settings}, key=_sort_key)
        xnum = [float(v) for v in xvals]
        is_bytes = axis.endswith("footprint")

        def setting(r: tuple, xv: str) -> tuple:
            return tuple(list(r[:idx]) + [xv] + list(r[idx:]))

        def label_rest(r: tuple) -> str:
            return ", ".join(f"{_short(a)}={_axis_value_text(a, v)}" for a, v in zip(others, r))

        for name, what, column, agg, designs, ylabel in (
            (
                f"speedup_vs_{_short(axis)}",
                f"Speedup over {data.baseline} (cycles ratio; geomean panel: geometric mean over "
                "the workloads)",
                "speedup",
                "geomean",
                [d for d in data.designs if d != data.baseline],
                f"speedup over\n{data.baseline} (×)",
            ),
            (
                f"walk_cycles_vs_{_short(axis)}",
                "Page-walk cycles per kilo-instruction (TLB-miss walks)",
                lambda g: g["walk.cycles"].astype(float) * 1000 / g["instructions"].clip(lower=1),
                "mean",
                data.designs,
                "walk cycles per\nkilo-instruction",
            ),
        ):
            if not self.wants(name):
                continue
            wl = data.workloads + (["geomean"] if agg == "geomean" else [])
            specs = [(w, r) for r in rest for w in wl]
            fig, axes = self.facets(len(specs))
            panels, handles = [], []
            speedup = column == "speedup"
            sources: set[str] = set()
            lacking = False
            for ax, (w, r) in zip(axes, specs):
                series = {}
                errors = {}
                for d in designs:
                    if w == "geomean":
                        ys = [
                            geomean(
                                data.cell(x, setting(r, xv), d, column, agg) for x in data.workloads
                            )
                            for xv in xvals
                        ]
                    else:
                        ys = [data.cell(w, setting(r, xv), d, column, agg) for xv in xvals]
                    series[d] = ys
                    style = self.line_style(d)
                    (h,) = ax.plot(xnum, ys, **style, label=d)
                    if len(handles) < len(designs):
                        handles.append(h)
                    if speedup:
                        est = [data.speedup_estimate(w, setting(r, xv), d) for xv in xvals]
                        sources |= {e.source for e in est if e.has_interval}
                        lacking |= any(e.source == "none" and e.point == e.point for e in est)
                        errors[d] = [e.bounds()[1:] for e in est]
                        # zorder 1.9: under the line's markers
                        self._errors(ax, xnum, ys, errors[d], style["color"], 0.7, 2.0, 1.9)
                if is_bytes:
                    ax.set_xscale("log", base=2)
                    ax.set_xticks(xnum)
                    ax.set_xticklabels(
                        [bytes_text(v).replace(" ", "") for v in xnum],
                        rotation=30,
                        ha="right",
                        rotation_mode="anchor",
                    )
                    ax.minorticks_off()
                else:
                    ax.set_xticks(xnum)
                    ax.set_xticklabels([f"{v:g}" for v in xnum])
                if column == "speedup":
                    ax.axhline(1.0, color="black", linewidth=0.6, zorder=0.5)
                title = w + (f", {label_rest(r)}" if others else "")
                self.title(ax, title)
                ax.grid(True, axis="both")
                ax.margins(x=0.12)  # end labels stay inside the panel
                panels.append({"title": title, "x": xvals, "series": series, "ci95": errors})
            if not sources:
                for p in panels:
                    p.pop("ci95")
            fig.supylabel(ylabel.replace("\n", " "), fontsize=8)
            fig.supxlabel(_short(axis) + (" (log scale)" if is_bytes else ""), fontsize=8)
            self._legend(fig, handles, designs)
            caption = (
                f"{what} over {_short(axis)}; a panel per workload"
                + (f" and setting of {', '.join(_short(a) for a in others)}" if others else "")
                + f", a line per design. Over {data.scope()}; "
                f"{data.seed_agg(geo=agg == 'geomean')}."
                + (error_bars_text(sources, lacking) if speedup else "")
            )
            self._save(fig, name, caption, panels, ylabel.replace("\n", " "))

    @staticmethod
    def _errors(
        ax,
        xs: list[float],
        ys: list[float],
        bounds: list,
        color: str,
        width: float,
        cap: float,
        zorder: float,
    ) -> None:
        """95 % intervals as error bars on the points ``(xs, ys)``, ``bounds`` their ``(low,
        high)``; a point without an interval (NaN) gets none. Bars' whiskers and lines' bars
        differ only in colour, width, cap and layer."""
        pts = [
            (x, y, lo, hi)
            for x, y, (lo, hi) in zip(xs, ys, bounds)
            if y == y and lo == lo and hi == hi
        ]
        if pts:
            ax.errorbar(
                [p[0] for p in pts],
                [p[1] for p in pts],
                yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                fmt="none",
                ecolor=color,
                elinewidth=width,
                capsize=cap,
                capthick=width,
                zorder=zorder,
            )


def _draw(
    data: _Data, out: Path | None, width: float, provenance: str, only: set[str] | None = None
) -> _Figures:
    """Draw every figure the runs support (``only``: just those named) into ``out``, or, with
    ``out`` None, keep them as matplotlib figures in the result's ``objects``."""
    f = _Figures(data, out, width, provenance, only)
    df, base = data.df, data.baseline
    f.per_setting_bars(
        "speedup",
        f"Speedup over {base} per workload (cycles ratio under the runs' timing model, see "
        "Approximations), with the geometric mean over the workloads of each setting "
        f"(geomean group; {base} itself is the line at 1).",
        "speedup",
        f"speedup over\n{base} (×)",
        agg="geomean",
        ref_line=1.0,
        geo_group=True,
        designs=[d for d in data.designs if d != base] or data.designs,
        speedup_errors=True,
    )
    if "timing.mmu_overhead_share" in df.columns:
        f.per_setting_bars(
            "translation_share",
            "Share of the run's cycles in which the oldest instruction waited for its "
            "translation (timing.mmu_overhead_share, %: under the ooo core, ROB-head stall "
            "cycles behind a translation / total cycles; under simple, exposed translation "
            "cycles). It counts only the stalls the core could not hide, not the whole cost: "
            "translation also delays the loads behind a walk, so removing it can save far "
            "more (perfect_tlb's speedup over the baseline is that whole cost).",
            "timing.mmu_overhead_share",
            "cycles on\ntranslation (%)",
            scale=100.0,
        )
    f.per_setting_bars(
        "mmu_overhead",
        "Address-translation (MMU) overhead cycles (L2 TLB plus page walks, "
        f"mmu.overhead_cycles) normalized to {base} on the same workload and setting.",
        "mmu.overhead_cycles",
        f"MMU overhead cycles\n(normalized to {base})",
        normalize=True,
        ref_line=1.0,
    )
    f.per_setting_bars(
        "walks",
        f"Total page-walk cycles (walk.cycles) normalized to {base} on the same workload and "
        "setting (empty: the baseline makes no walks).",
        "walk.cycles",
        f"page-walk cycles\n(normalized to {base})",
        normalize=True,
        ref_line=1.0,
    )
    if "walk.avg_cycles" in df.columns:
        f.per_setting_bars(
            "walk_latency",
            "Average latency of a TLB-miss page walk in cycles (walk.avg_cycles; dependent "
            "accesses add up, parallel probes cost their slowest)" + data.non_walkers_note() + ".",
            "walk.avg_cycles",
            "cycles per walk",
            designs=data.walkers(),
        )
    if all(f"cache.pt_served_{s}" in df.columns for s, _, _, _ in SERVED):
        f.served_by()
    if all(f"cache.pt_served_cycles_{s}" in df.columns for s, _, _, _ in SERVED):
        f.served_by(cycles=True)
    f.latency_distribution()
    f.fault_latency_distribution()
    f.loaded_latency()
    f.dram_latency_distribution()
    f.pwc_hit_rate()
    levels = [
        (c, n)
        for c, n in CACHE_LEVELS
        if f"cache.{c}.pt_line_share_avg" in df.columns
        and float(df[f"cache.{c}.pt_line_share_avg"].max()) > 0
    ]
    if levels:
        omitted = [nm for cc, nm in CACHE_LEVELS if (cc, nm) not in levels]
        panels = []
        for c, n in levels:
            for setting in data.settings:
                label = data.setting_label(setting)
                panels.append(
                    {
                        "title": n + (f", {label}" if label else ""),
                        "x": data.workloads,
                        "series": {
                            d: [
                                data.cell(w, setting, d, f"cache.{c}.pt_line_share_avg") * 100
                                for w in data.workloads
                            ]
                            for d in data.designs
                        },
                    }
                )
        f.bars(
            "pt_cache_share",
            "Share of each cache level's lines holding page-table entries (time average over "
            "the run, cache.<level>.pt_line_share_avg, %); one panel per level"
            + (" and setting" if data.axes else "")
            + (f"; {', '.join(omitted)} held none in any run (not drawn)" if omitted else "")
            + f". Over {data.scope()}; {data.seed_agg()}.",
            panels,
            data.designs,
            "lines holding page-table entries (%)",
            {d: f.design_style(d) for d in data.designs},
        )
    peaks = [float(v) for v in df["page_table.peak_bytes"] if v == v and v > 0]
    log = bool(peaks) and max(peaks) / min(peaks) > 30
    f.per_setting_bars(
        "page_table_memory",
        "Peak page-table memory (page_table.peak_bytes: the most the design held at any "
        "time, KiB"
        + (", log scale" if log else "")
        + "; the end-of-run value is in the runs table).",
        "page_table.peak_bytes",
        "peak page-table\nmemory (KiB)",
        scale=1 / 1024,
        log=log,
    )
    f.tlb()
    for axis in data.axes:
        if axis in LINE_AXES and len({s[data.axes.index(axis)] for s in data.settings}) > 1:
            try:
                [float(s[data.axes.index(axis)]) for s in data.settings]
            except ValueError:
                continue
            f.lines(axis)
    f.thp_effect()
    f.va_gaps()
    return f


#: Runs-table columns after the grid keys: (header with unit, function of the frame, format).
RUN_METRICS = [
    ("cycles", lambda df: df["timing.cycles"], "{:,.0f}"),
    ("speedup (×)", lambda df: df["speedup"], "{:.3f}"),
    ("cycles on translation (%)", lambda df: df["timing.mmu_overhead_share"] * 100, "{:.2f}"),
    ("L1 TLB MPKI", lambda df: df["tlb.l1_mpki"], "{:.2f}"),
    ("L2 TLB MPKI", lambda df: df["tlb.l2_mpki"], "{:.2f}"),
    ("walks", lambda df: df["walk.count"], "{:,.0f}"),
    ("walk latency (cycles)", lambda df: df["walk.avg_cycles"], "{:,.1f}"),
    ("PT refs per walk", lambda df: df["walk.avg_mem_accesses"], "{:.2f}"),
    ("peak page table (KiB)", lambda df: df["page_table.peak_bytes"] / 1024, "{:,.0f}"),
    ("end-of-run page table (KiB)", lambda df: df["page_table.bytes"] / 1024, "{:,.0f}"),
    ("largest PT block (KiB)", lambda df: df["page_table.max_contiguous_bytes"] / 1024, "{:,.0f}"),
]


def runs_table(data: _Data):
    """One row per run, sorted by workload then design (then settings, seed): the grid keys
    that vary, then the key metrics with units in the headers (raw values)."""
    import pandas as pd

    df = data.df
    cols: dict[str, Any] = {"workload": df["workload"].astype(str), "design": df["design"]}
    for a in data.axes:
        unit = " (bytes)" if a.endswith("footprint") else ""
        cols[_short(a) + unit] = df[a]
    if len(data.seeds) > 1:
        cols["seed"] = df["seed"]
    if df["refs"].nunique() > 1:
        cols["refs"] = df["refs"]
    for header, fn, _ in RUN_METRICS:
        try:
            cols[header] = fn(df)
        except KeyError:
            continue
    table = pd.DataFrame(cols)
    order = {d: i for i, d in enumerate(data.designs)}
    sort = ["workload", "_o"] + [k for k in table.columns if k not in ("workload", "design")][
        : len(data.axes) + (len(data.seeds) > 1)
    ]
    return (
        table.assign(_o=table["design"].map(order))
        .sort_values(
            sort, kind="stable", key=lambda s: s.map(_sort_key) if s.dtype == object else s
        )
        .drop(columns="_o")
        .reset_index(drop=True)
    )


def _cell_text(header: str, v: Any) -> str:
    fmt = {h: f for h, _, f in RUN_METRICS}.get(header)
    if v is None or (isinstance(v, float) and v != v):
        return "n/a"
    if fmt is not None:
        return fmt.format(float(v))
    if header.endswith("(bytes)"):
        try:
            return bytes_text(float(v))
        except ValueError:
            return str(v)
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def _is_text_column(header: str) -> bool:
    return (
        header in ("workload", "design")
        or header not in {h for h, _, _ in RUN_METRICS}
        and (header not in ("seed", "refs"))
        and not header.endswith("(bytes)")
    )


def _speedup_latex(table, baseline: str) -> str:
    """A LaTeX ``tabular`` (booktabs) of the speedup table."""

    def esc(s: Any) -> str:
        return str(s).replace("\\", r"\textbackslash{}").replace("_", r"\_").replace("%", r"\%")

    keys = [c for c in table.columns if not _is_design_col(c, table)]
    designs = [c for c in table.columns if c not in keys]
    lines = [
        f"% Speedup over {esc(baseline)} (cycles ratio); geomean rows: geometric mean over the",
        "% workloads of each setting. Needs \\usepackage{booktabs}. Written by xlat report.",
        "\\begin{tabular}{" + "l" * len(keys) + "r" * len(designs) + "}",
        "\\toprule",
        " & ".join(esc(c) for c in keys + designs) + " \\\\",
        "\\midrule",
    ]
    prev = None
    for row in table.itertuples(index=False):
        vals = dict(zip(table.columns, row))
        setting = tuple(vals[k] for k in keys if k != "workload")
        if prev is not None and setting != prev:
            lines.append("\\midrule")
        prev = setting
        cells = [esc(_axis_value_text(f".{k}", str(vals[k]))) for k in keys] + [
            vals[d]
            if isinstance(vals[d], str)
            else ("--" if vals[d] != vals[d] else f"{vals[d]:.3f}")
            for d in designs
        ]
        if vals["workload"] == "geomean":
            cells = [f"\\textit{{{c}}}" for c in cells]
        lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", ""]
    return "\n".join(lines)


def _is_design_col(c: str, table) -> bool:
    return c not in ("workload",) and table.columns.get_loc("workload") < table.columns.get_loc(c)


def _common_config(df) -> dict[str, Any]:
    """Configuration keys with one value over every run (the rest are swept). When every run
    reads a trace, the built-in workload's keys (unused) are left out and the reference limit
    says that there was none rather than showing its sentinel."""
    from xlat.run import TRACE_NO_LIMIT

    all_traces = "trace" in df.columns and bool(df["trace"].notna().all())
    common: dict[str, Any] = {}
    for c in df.columns:
        if c.startswith("config.") and c not in ("config.sim.design", "config.workload.name"):
            if all_traces and c.startswith("config.workload."):
                continue
            vals = df[c].astype(str).unique()
            if len(vals) == 1:
                common[c[len("config.") :]] = df[c].iloc[0]
    if common.get("sim.refs") is not None and int(common["sim.refs"]) >= TRACE_NO_LIMIT:
        common["sim.refs"] = "no limit (each trace to its end)"
    return common


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "n/a"
        return f"{v:.4g}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def run_size_text(df) -> str:
    """What was simulated, per kind of workload: a trace's name, the references it had and its
    measured footprint (peak data mapped); a built-in workload's references and footprint.

    Examples
    --------
    >>> from xlat.run import compare
    >>> run_size_text(frame_from_records(compare(["radix"], "gups", "16MiB", 20000)))
    '20,000 refs, footprint 16 MiB'
    """
    parts = []
    is_trace = df["trace"].notna() if "trace" in df.columns else df["workload"].isna()
    traces = df[is_trace]
    for name, g in traces.groupby("workload", sort=True):
        refs = sorted({int(v) for v in g["refs"]})
        refs_txt = f"{refs[0]:,} refs" if len(refs) == 1 else f"{refs[0]:,}-{refs[-1]:,} refs"
        foot = float(g["os.data_peak_bytes"].max()) if "os.data_peak_bytes" in g else float("nan")
        foot_txt = f", measured footprint {bytes_text(foot)}" if foot == foot else ""
        parts.append(f"trace {name} ({refs_txt}{foot_txt})")
    built = df[~is_trace]
    if not built.empty:
        refs = sorted({int(v) for v in built["refs"]})
        refs_txt = f"{refs[0]:,} refs" if len(refs) == 1 else f"{refs[0]:,}-{refs[-1]:,} refs"
        feet = sorted({int(v) for v in built["config.workload.footprint"]})
        foot_txt = (
            f"footprint {bytes_text(feet[0])}"
            if len(feet) == 1
            else f"footprints {', '.join(bytes_text(v) for v in feet)}"
        )
        parts.append(
            f"{refs_txt}, {foot_txt}" if not parts else f"built-in: {refs_txt}, {foot_txt}"
        )
    return "; ".join(parts)


def runs_frame(data, baseline: str | None = None):
    """The successful runs of ``data`` (a frame of stored runs as :func:`xlat.results` returns
    it, or result records as :func:`xlat.compare` returns them) as a frame, and the baseline:
    ``baseline``, else ``radix`` when present, else the first records' design. Raises
    ``ValueError`` when no run succeeded or the baseline has no run."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        df = data
    else:
        data = [data] if isinstance(data, dict) else list(data)
        df = frame_from_records(data)
        baseline = baseline or (data[0]["design"] if data else None)
    if "status" in df.columns:
        df = df[df["status"] == "ok"]
    if df.empty:
        raise ValueError("no successful runs to report")
    df = df.reset_index(drop=True)
    designs = design_order(df["design"].unique())
    baseline = baseline or ("radix" if "radix" in designs else designs[0])
    if baseline not in designs:
        raise ValueError(
            f"baseline design '{baseline}' has no run here (designs: {', '.join(designs)})"
        )
    return df, baseline


def write_report(
    data,
    out_dir: str | Path,
    baseline: str | None = None,
    source: str | None = None,
    width: str | float | None = None,
    latex: bool = False,
) -> dict[str, Any]:
    """Write ``report.html`` (self-contained), ``report.md``, figures (PNG + PDF, with the
    numbers drawn in ``figures.json``), ``results.json``, the runs table as ``results.csv`` and
    the speedup table as ``speedup.csv`` (and ``speedup.tex`` with ``latex``) from result
    records or a frame of stored runs; returns the paths by kind.

    ``baseline`` defaults to ``radix`` when present, else the first design; ``width`` is the
    figures' width: ``"column"`` (3.33 in, the default), ``"page"`` (7 in) or inches.

    The files appear whole or not at all: they are written into a temporary folder inside
    ``out_dir`` and renamed into place once every one is written, so a full disk or an error
    raises (OSError) and leaves the files of an earlier report as they were.

    Examples
    --------
    >>> import tempfile
    >>> from xlat.run import compare
    >>> out = tempfile.mkdtemp()
    >>> paths = write_report(compare(["radix", "ideal"], "gups", "16MiB", 20000), out)
    >>> sorted(p.name for p in paths["figures"])[:3]
    ['dram_latency_distribution.png', 'loaded_latency.png', 'mmu_overhead.png']
    >>> "<figure>" in paths["html"].read_text()
    True
    """
    import shutil
    import tempfile

    inches = figure_width(width)
    df, baseline = runs_frame(data, baseline)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".xlat-report-", dir=out))
    try:
        paths = _write_report_files(df, baseline, stage, inches, source, latex)
        for f in sorted(stage.iterdir()):
            os.replace(f, out / f.name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return {
        k: [out / p.name for p in v] if isinstance(v, list) else out / v.name
        for k, v in paths.items()
    }


def _write_report_files(
    df, baseline: str, out: Path, inches: float, source: str | None, latex: bool
) -> dict[str, Any]:
    """The files of :func:`write_report`, written into the folder ``out``."""
    import pandas as pd

    designs = design_order(df["design"].unique())
    records = [json.loads(x) for x in df["record_json"]]
    (out / "results.json").write_text(json.dumps(records, indent=1))

    versions = sorted({str(v) for v in df.get("xlat_version", pd.Series([version()])).dropna()})
    commits = sorted(
        {
            str(v)[:12] + ("-dirty" if str(v).endswith("-dirty") else "")
            for v in df.get("git_commit", pd.Series([])).dropna()
        }
    )
    common = _common_config(df)
    grid = _Data(df, baseline)
    swept = [a[len("config.") :] for a in grid.axes]
    seeds = grid.seeds
    size_txt = run_size_text(df)
    footer = (
        f"xlat {', '.join(versions) or version()}"
        + (f" ({', '.join(commits)})" if commits else "")
        + f" · {size_txt} · THP {common.get('os.thp', 'swept')} · seeds "
        + ",".join(map(str, seeds))
        + f" · baseline {baseline}"
    )
    figures = _draw(grid, out, inches, footer)
    figs = figures.figs
    (out / "figures.json").write_text(
        json.dumps({"width_in": inches, "figures": figures.numbers}, indent=1)
    )

    speed = speedup_table(grid)
    speed.to_csv(out / "speedup.csv", index=False)
    speed = interval_display(speed)  # the tables show each interval in its speedup's cell
    speed_notes = intervals.notes(
        {k: e for k, e in grid.speedup_estimates().items() if e.point == e.point}, cells=True
    )
    paths_extra = {}
    if latex:
        tex = out / "speedup.tex"
        tex.write_text(_speedup_latex(speed, baseline))
        paths_extra["latex"] = tex
    per_run = runs_table(grid)
    per_run.to_csv(out / "results.csv", index=False, quoting=csv.QUOTE_MINIMAL)

    oracle_checked = int(df["oracle.checked"].sum())
    mismatches = int(df["oracle.mismatches"].sum())
    summary = (
        f"{len(df)} runs: designs {', '.join(designs)}; workloads "
        f"{', '.join(grid.workloads)}"
        + (f"; swept {', '.join(swept)}" if swept else "")
        + f"; {size_txt}; seeds {', '.join(map(str, seeds))}. Oracle: "
        f"{oracle_checked:,} translations checked, {mismatches} mismatches."
    )

    def speed_cell(c: str, v: Any) -> str:
        if isinstance(v, str) and c in designs:
            return v
        if c in designs:
            return "n/a" if v != v else f"{v:.3f}"
        return _axis_value_text(f".{c}", str(v)) if c != "workload" else str(v)

    speed_head = list(speed.columns)
    speed_body = [[speed_cell(c, v) for c, v in zip(speed_head, row)] for row in speed.values]
    md_speed_body = [[cell.replace("*", "\\*") for cell in row] for row in speed_body]

    def md_table(head: list[str], body: list[list[str]], numeric: list[bool]) -> list[str]:
        return [
            "| " + " | ".join(head) + " |",
            "|" + "".join("---:|" if n else "---|" for n in numeric),
            *("| " + " | ".join(r) + " |" for r in body),
        ]

    run_head = list(per_run.columns)
    run_body = [[_cell_text(c, v) for c, v in zip(run_head, row)] for row in per_run.values]
    run_numeric = [not _is_text_column(c) for c in run_head]
    run_head = [c.replace(" (bytes)", "") for c in run_head]  # cells carry their unit
    md = [
        "# xlat report",
        "",
        summary,
        "",
        f"## Speedup over {baseline}",
        "",
        f"Cycles of {baseline} divided by the design's cycles on the same workload and setting; "
        f"{grid.seed_agg(geo=True)}; the geomean rows are the geometric mean over the workloads "
        "of each setting (never pooled over settings). Also in speedup.csv"
        + (" and speedup.tex." if latex else "."),
        "",
        *md_table(speed_head, md_speed_body, [c in designs for c in speed_head]),
        "",
        *(x for line in speed_notes for x in (line.replace("*", "\\*"), "")),
        "## Figures",
        "",
    ]
    for png, caption in figs:
        md += [f"![{caption}]({png.name})", "", f"*{caption}* ([PDF]({png.stem}.pdf))", ""]
    md += [
        "## Runs",
        "",
        "One row per run (also in results.csv).",
        "",
        *md_table(run_head, run_body, run_numeric),
        "",
        "## Approximations",
        "",
        APPROXIMATIONS,
        "",
        footer,
        "",
    ]
    md_path = out / "report.md"
    md_path.write_text("\n".join(md))

    def img(png: Path) -> str:
        b64 = base64.b64encode(png.read_bytes()).decode()
        return (
            f'<img alt="{html.escape(png.stem)}" id="fig-{html.escape(png.stem)}" '
            f'style="width:{inches * 1.5:.2f}in" src="data:image/png;base64,{b64}">'
        )

    def table_html(head: list[str], body: list[list[str]], numeric: list[bool]) -> str:
        th = "".join(
            f'<th class="{"num" if n else "txt"}">{html.escape(c)}</th>'
            for c, n in zip(head, numeric)
        )
        rows = "".join(
            "<tr>"
            + "".join(
                f'<td class="{"num" if n else "txt"}">{html.escape(v)}</td>'
                for v, n in zip(r, numeric)
            )
            + "</tr>"
            for r in body
        )
        return f"<table><thead><tr>{th}</tr></thead><tbody>{rows}</tbody></table>"

    figures_html = "".join(
        f"<figure>{img(p)}<figcaption>{html.escape(c)} "
        f'<a href="{html.escape(p.stem)}.pdf">PDF</a></figcaption></figure>'
        for p, c in figs
    )
    config_rows = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{html.escape(_fmt(v))}</td></tr>"
        for k, v in sorted(common.items())
    )
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>xlat report</title>
<link rel="icon" href="data:,">
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; max-width: 80em; }}
table {{ border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.6em; }}
.num {{ text-align: right; font-variant-numeric: tabular-nums; }} .txt {{ text-align: left; }}
figure {{ margin: 1.5em 0; }} img {{ max-width: 100%; }} /* figures at 1.5x their printed size */
figcaption {{ font-size: 0.9em; color: #333; max-width: 45em; }}
footer {{ color: #555; font-size: 0.85em; margin-top: 2em; border-top: 1px solid #ccc; }}
</style></head><body>
<h1>xlat report</h1>
<p id="summary">{html.escape(summary)}</p>
<h2>Speedup over {html.escape(baseline)}</h2>
<p>Cycles of {html.escape(baseline)} divided by the design's cycles on the same workload and
setting; {html.escape(grid.seed_agg(geo=True))}; the geomean rows are the geometric mean over the
workloads of each setting.</p>
{table_html(speed_head, speed_body, [c in designs for c in speed_head])}
{"<p>" + "<br>".join(map(html.escape, speed_notes)) + "</p>" if speed_notes else ""}
<h2>Figures</h2>
{figures_html}
<h2>Runs</h2>
{table_html(run_head, run_body, run_numeric)}
<h2>Approximations</h2><p>{html.escape(APPROXIMATIONS)}</p>
<footer>
<p>{html.escape(footer)}{" · source " + html.escape(source) if source else ""}</p>
<details><summary>Configuration shared by every run ({len(common)} keys;
swept: {html.escape(", ".join(swept) or "none")})</summary>
<table><thead><tr><th>key</th><th>value</th></tr></thead><tbody>{config_rows}</tbody></table>
</details>
</footer>
<script>
// Marks the page once every figure has decoded; a figure that did not is a console error.
window.addEventListener("load", function () {{
  var imgs = document.querySelectorAll("figure img"), ok = 0;
  imgs.forEach(function (img) {{
    if (img.complete && img.naturalWidth > 0) ok++;
    else console.error("figure did not load: " + img.alt);
  }});
  document.body.setAttribute("data-figures-loaded", ok + "/" + imgs.length);
}});
</script>
</body></html>
"""
    html_path = out / "report.html"
    html_path.write_text(page)
    return {
        "markdown": md_path,
        "html": html_path,
        "json": out / "results.json",
        "csv": out / "results.csv",
        "speedup_csv": out / "speedup.csv",
        "figures_json": out / "figures.json",
        "figures": [p for p, _ in figs],
        **paths_extra,
    }


__all__ = [
    "core_table",
    "figure_width",
    "format_table",
    "frame_from_records",
    "run_size_text",
    "speedup_table",
    "table_rows",
    "write_report",
]
