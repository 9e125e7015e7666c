"""Reports: a self-contained HTML page, a Markdown page and PNG + PDF figures in the papers'
style, from result records (``xlat compare``) or from the result store (``xlat report``).

Both sources go through one path: records become the same rows the store holds
(:func:`frame_from_records`), and :func:`write_report` draws every figure from such a frame.
Rows are grouped into categories (the workload plus every swept configuration key) and, within
a category, bars per design; seeds are averaged (speedups: geometric mean).
"""

from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path
from typing import Any

from xlat.query import default_index, design_order, format_frame, geomean, pivot_table, with_speedup
from xlat.records import speedups
from xlat.run import version
from xlat.store import frame_from_records  # noqa: F401 - reports are drawn from such frames

APPROXIMATIONS = (
    "Cycle figures come from the core model each run's config names (timing.model): 'simple', "
    "a first-order formula (base CPI plus exposed translation and data latencies with fixed "
    "overlap factors; no pipeline or queueing), the default; or 'ooo', an out-of-order core at "
    "the granularity of memory references (ROB, queues, page walkers, MSHRs, dependences), not "
    "validated against a cycle-level simulator. Compare designs with them, do not read them as "
    "absolute times. Memory-reference and walk-access counts are exact for the modeled "
    "hardware. See docs/timing.md."
)

#: Colour-blind-safe palette (Paul Tol "bright"), one colour per design in registry order.
PALETTE = ["#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE", "#AA3377", "#BBBBBB", "#222255"]
#: Serving levels of page-walk references and their colours (light = close to the core).
SERVED = [
    ("l1", "L1D", "#DDDDDD"),
    ("l2", "L2", "#88CCEE"),
    ("llc", "LLC", "#4477AA"),
    ("dram", "DRAM", "#222255"),
]
CACHE_LEVELS = [("l1d", "L1D"), ("l2", "L2"), ("llc", "LLC")]


def table_rows(records: list[dict], baseline: str | None = None) -> list[dict[str, Any]]:
    """One row of headline figures per record (what the CLI table shows).

    Examples
    --------
    >>> from xlat.run import run
    >>> rows = table_rows([run("radix", "gups", "16MiB", 20000)])
    >>> rows[0]["design"], rows[0]["speedup"]
    ('radix', 1.0)
    """
    sp = speedups(records, baseline)
    rows = []
    for r in records:
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
                "max_contiguous_bytes": r["page_table"]["max_contiguous_bytes"],
                "speedup": sp[r["design"]],
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
    ("page_table_bytes", "page-table bytes", "{:,}"),
    ("speedup", "speedup", "{:.3f}"),
    ("mrefs_per_sec", "sim M refs/s", "{:.2f}"),
]


def format_table(rows: list[dict[str, Any]], markdown: bool = False) -> str:
    """Aligned text table (or a Markdown table) of :func:`table_rows` output.

    Examples
    --------
    >>> print(format_table([{"design": "x", "refs": 1, "l1_tlb_mpki": 0, "l2_tlb_mpki": 0,
    ...   "walks": 0, "walk_refs_per_walk": 0, "avg_walk_cycles": 0, "mmu_overhead_cycles": 0,
    ...   "page_table_bytes": 0, "speedup": 1, "mrefs_per_sec": 1}]).splitlines()[0].split()[0])
    design
    """
    header = [title for _, title, _ in COLUMNS]
    body = [[fmt.format(row[key]) for key, _, fmt in COLUMNS] for row in rows]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(cells) + " |" for cells in body]
        return "\n".join(lines)
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header)]
    fmt_row = lambda cells: "  ".join(  # noqa: E731
        c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
    )
    return "\n".join([fmt_row(header)] + [fmt_row(b) for b in body])


def _records(df) -> list[dict]:
    return [json.loads(x) for x in df["record_json"]]


class _Grid:
    """Categories (workload + swept parameters) x designs of a frame, and helpers to draw
    grouped bar charts over them."""

    def __init__(self, df, baseline: str) -> None:

        self.df = with_speedup(df, baseline) if baseline in set(df["design"]) else df
        self.baseline = baseline
        self.keys = default_index(df)
        self.designs = design_order(df["design"].unique())
        cats = self.df[self.keys].astype(str).drop_duplicates()
        self.categories = [tuple(row) for row in cats.sort_values(self.keys).values]

    def label(self, cat: tuple) -> str:
        parts = [cat[0]] + [f"{k.split('.')[-1]}={v}" for k, v in zip(self.keys[1:], cat[1:])]
        return "\n".join(parts)

    def cell(self, cat: tuple, design: str, column: str, agg: str = "mean") -> float:

        df = self.df
        mask = df["design"] == design
        for k, v in zip(self.keys, cat):
            mask &= df[k].astype(str) == v
        vals = df.loc[mask, column].astype(float)
        if vals.empty:
            return float("nan")
        return geomean(vals) if agg == "geomean" else float(vals.mean())

    def values(
        self, column: str, agg: str = "mean", normalize: bool = False, scale: float = 1.0
    ) -> dict[str, list[float]]:
        out = {}
        for d in self.designs:
            vals = []
            for c in self.categories:
                v = self.cell(c, d, column, agg) * scale
                if normalize:
                    base = self.cell(c, self.baseline, column, agg) * scale
                    v = v / base if base else float("nan")
                vals.append(v)
            out[d] = vals
        return out


def _style(plt) -> None:
    plt.rcParams.update(
        {
            "font.size": 9,
            "axes.titlesize": 10,
            "axes.labelsize": 9,
            "legend.fontsize": 8,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "axes.grid.axis": "y",
            "grid.color": "#DDDDDD",
            "grid.linewidth": 0.6,
            "axes.axisbelow": True,
            "savefig.bbox": "tight",
            "pdf.fonttype": 42,
        }
    )


def _bars(
    ax,
    grid: _Grid,
    series: dict[str, list[float]],
    labels: list[str],
    ylabel: str,
    ref_line: float | None = None,
    fmt: str | None = None,
) -> None:
    """Grouped bars: one group per label, one bar per design (colour = design)."""
    n = max(len(grid.designs), 1)
    width = 0.8 / n
    for i, d in enumerate(grid.designs):
        xs = [g + (i - (n - 1) / 2) * width for g in range(len(labels))]
        vals = [0.0 if (v != v) else v for v in series[d]]
        bars = ax.bar(
            xs,
            vals,
            width * 0.95,
            label=d,
            color=PALETTE[i % len(PALETTE)],
            edgecolor="black",
            linewidth=0.4,
        )
        if fmt and len(labels) * n <= 40:
            for b, v in zip(bars, series[d]):
                text = "n/a" if v != v else fmt.format(v)
                ax.annotate(
                    text,
                    (b.get_x() + b.get_width() / 2, b.get_height()),
                    ha="center",
                    va="bottom",
                    fontsize=6,
                    rotation=90,
                    xytext=(0, 2),
                    textcoords="offset points",
                )
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels)
    ax.set_ylabel(ylabel)
    if ref_line is not None:
        ax.axhline(ref_line, color="black", linewidth=0.8, zorder=0.5)
    ax.margins(y=0.15)
    ax.set_ylim(bottom=0)


def _size_unit(max_bytes: float) -> tuple[str, float]:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if max_bytes >= 2 * scale:
            return unit, scale
    return "bytes", 1


def _figures(df, out: Path, baseline: str, footer: str) -> list[tuple[Path, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _style(plt)
    grid = _Grid(df, baseline)
    labels = [grid.label(c) for c in grid.categories]
    width = min(max(4.5, 0.45 * len(labels) * len(grid.designs) + 2.0), 16)
    figs: list[tuple[Path, str]] = []

    def save(fig, name: str, caption: str) -> None:
        handles, names = fig.axes[0].get_legend_handles_labels()
        if handles:
            fig.legend(
                handles,
                names,
                loc="upper center",
                ncol=min(len(names), 6),
                frameon=False,
                bbox_to_anchor=(0.5, 1.0),
            )
        fig.tight_layout(rect=(0, 0.05, 1, 0.92))
        fig.text(0.01, 0.005, footer, ha="left", va="bottom", fontsize=6.5, color="#555555")
        png = out / f"{name}.png"
        fig.savefig(png, dpi=150)
        fig.savefig(out / f"{name}.pdf")
        plt.close(fig)
        figs.append((png, caption))

    if "speedup" in grid.df.columns:
        sp = grid.values("speedup", agg="geomean")
        for d in grid.designs:
            sp[d] = sp[d] + [geomean(sp[d])]
        fig, ax = plt.subplots(figsize=(width + 0.6, 3.2))
        _bars(ax, grid, sp, labels + ["geomean"], f"speedup over {baseline} (×)", 1.0, "{:.2f}")
        ax.axvline(len(labels) - 0.5, color="#888888", linewidth=0.6, linestyle=":")
        save(
            fig,
            "speedup",
            f"Speedup over {baseline} per workload (cycles ratio under the runs' "
            "timing model, see Approximations) with the geometric mean.",
        )

    fig, ax = plt.subplots(figsize=(width, 3.2))
    _bars(
        ax,
        grid,
        grid.values("mmu.overhead_cycles", normalize=True),
        labels,
        f"MMU overhead cycles\n(normalized to {baseline})",
        1.0,
        "{:.2f}",
    )
    save(
        fig,
        "mmu_overhead",
        f"Address-translation (MMU) overhead cycles — L2 TLB plus page "
        f"walks — normalized to {baseline} on the same workload.",
    )

    fig, ax = plt.subplots(figsize=(width, 3.2))
    _bars(
        ax,
        grid,
        grid.values("walk.cycles", normalize=True),
        labels,
        f"page-walk cycles\n(normalized to {baseline})",
        1.0,
        "{:.2f}",
    )
    save(
        fig,
        "walks",
        f"Total page-walk cycles normalized to {baseline} on the same workload "
        "(n/a: the baseline makes no walks).",
    )

    if all(f"cache.pt_served_{s}" in df.columns for s, _, _ in SERVED):
        fig, ax = plt.subplots(figsize=(width, 3.4))
        n = len(grid.designs)
        bw = 0.8 / n
        ticks, ticklabels = [], []
        for i, d in enumerate(grid.designs):
            xs = [g + (i - (n - 1) / 2) * bw for g in range(len(labels))]
            bottom = [0.0] * len(labels)
            for s, name, color in SERVED:
                per_ki = [
                    grid.cell(c, d, f"cache.pt_served_{s}")
                    * 1000
                    / max(grid.cell(c, d, "instructions"), 1)
                    for c in grid.categories
                ]
                per_ki = [0.0 if v != v else v for v in per_ki]
                ax.bar(
                    xs,
                    per_ki,
                    bw * 0.95,
                    bottom=bottom,
                    color=color,
                    edgecolor="black",
                    linewidth=0.4,
                    label=name if i == 0 else None,
                )
                bottom = [b + v for b, v in zip(bottom, per_ki)]
            ticks += xs
            ticklabels += [d] * len(xs)
        ax.set_xticks(ticks)
        ax.set_xticklabels(ticklabels, rotation=90, fontsize=7)
        for g, lab in enumerate(labels):
            ax.annotate(
                lab,
                (g, 0),
                xytext=(0, -48),
                textcoords="offset points",
                ha="center",
                va="top",
                fontsize=8,
                annotation_clip=False,
            )
        ax.set_ylabel("page-walk memory accesses\nper kilo-instruction")
        save(
            fig,
            "walk_served_by",
            "Page-walk memory accesses per kilo-instruction by the level "
            "of the hierarchy that served them.",
        )

    levels = [
        (c, n)
        for c, n in CACHE_LEVELS
        if f"cache.{c}.pt_line_share_avg" in df.columns
        and float(df[f"cache.{c}.pt_line_share_avg"].max()) > 0
    ]
    if levels:
        omitted = [n for c, n in CACHE_LEVELS if (c, n) not in levels]
        fig, axes = plt.subplots(
            len(levels), 1, figsize=(width, 2.4 * len(levels) + 0.6), squeeze=False
        )
        for ax, (c, name) in zip(axes[:, 0], levels):
            _bars(
                ax,
                grid,
                grid.values(f"cache.{c}.pt_line_share_avg", scale=100.0),
                labels,
                f"{name}: page-table\nshare of lines (%)",
            )
        note = (
            f" {', '.join(omitted)} held no page-table line in any run (not shown)."
            if omitted
            else ""
        )
        save(
            fig,
            "pt_cache_share",
            "Share of each cache's capacity holding page-table lines "
            "(time average over the run, %)." + note,
        )

    fig, (a1, a2) = plt.subplots(2, 1, figsize=(width, 5.4))
    unit, scale = _size_unit(float(df["page_table.bytes"].max()))
    _bars(
        a1,
        grid,
        grid.values("page_table.bytes", scale=1 / scale),
        labels,
        f"page-table memory\n({unit})",
    )
    unit, scale = _size_unit(float(df["page_table.max_contiguous_bytes"].max()))
    _bars(
        a2,
        grid,
        grid.values("page_table.max_contiguous_bytes", scale=1 / scale),
        labels,
        f"largest contiguous\nallocation ({unit})",
    )
    save(
        fig,
        "page_table_memory",
        "Top: page-table memory held at the end of the run. Bottom: "
        "the largest physically contiguous block a page table needed.",
    )

    fig, (a1, a2) = plt.subplots(2, 1, figsize=(width, 5.4))
    _bars(a1, grid, grid.values("tlb.l1_mpki"), labels, "L1 TLB misses\nper kilo-instruction")
    _bars(a2, grid, grid.values("tlb.l2_mpki"), labels, "L2 TLB misses\nper kilo-instruction")
    save(fig, "tlb_mpki", "TLB misses per kilo-instruction: L1 TLB (top) and L2 TLB (bottom).")
    return figs


def _common_config(df) -> dict[str, Any]:
    """Configuration keys with one value over every run (the rest are swept)."""
    common = {}
    for c in df.columns:
        if c.startswith("config.") and c not in ("config.sim.design", "config.workload.name"):
            vals = df[c].astype(str).unique()
            if len(vals) == 1:
                common[c[len("config.") :]] = df[c].iloc[0]
    return common


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "n/a"
        return f"{v:.4g}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def write_report(
    data, out_dir: str | Path, baseline: str | None = None, source: str | None = None
) -> dict[str, Any]:
    """Write ``report.html`` (self-contained), ``report.md``, figures (PNG + PDF) and
    ``results.json`` from result records or a frame of stored runs; returns the paths by kind.

    ``baseline`` defaults to ``radix`` when present, else the first design.

    Examples
    --------
    >>> import tempfile
    >>> from xlat.run import compare
    >>> out = tempfile.mkdtemp()
    >>> paths = write_report(compare(["radix", "ideal"], "gups", "16MiB", 20000), out)
    >>> sorted(p.name for p in paths["figures"])[:3]
    ['mmu_overhead.png', 'page_table_memory.png', 'pt_cache_share.png']
    >>> "<figure>" in paths["html"].read_text()
    True
    """
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        df = data
    else:
        data = list(data)
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
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    records = _records(df)
    (out / "results.json").write_text(json.dumps(records, indent=1))

    versions = sorted({str(v) for v in df.get("xlat_version", pd.Series([version()])).dropna()})
    commits = sorted(
        {
            str(v)[:12] + ("-dirty" if str(v).endswith("-dirty") else "")
            for v in df.get("git_commit", pd.Series([])).dropna()
        }
    )
    common = _common_config(df)
    swept = [k[len("config.") :] for k in default_index(df)[1:]]
    seeds = sorted({int(s) for s in df["seed"]})
    footprint = common.get("workload.footprint")
    if footprint is not None:
        unit, scale = next(
            (u, k)
            for u, k in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("B", 1))
            if int(footprint) % k == 0 or k == 1
        )
        foot_txt = f"footprint {int(footprint) / scale:g} {unit}"
    else:
        foot_txt = "footprints vary"
    refs = common.get("sim.refs")
    refs_txt = f"{_fmt(refs)} refs" if refs is not None else "refs vary"
    footer = (
        f"xlat {', '.join(versions) or version()}"
        + (f" ({', '.join(commits)})" if commits else "")
        + f" · {refs_txt} · {foot_txt} · THP {common.get('os.thp', 'swept')} · seeds "
        + ",".join(map(str, seeds))
        + f" · baseline {baseline}"
    )
    figs = _figures(df, out, baseline, footer)

    speed = pivot_table(
        with_speedup(df, baseline),
        default_index(df),
        "design",
        "speedup",
        "geomean",
        total="geomean",
    )
    per_run = pd.DataFrame(
        {
            "design": df["design"],
            "workload": df["workload"],
            **{k.split(".", 1)[1]: df[k] for k in default_index(df)[1:]},
            "seed": df["seed"],
            "L1 TLB MPKI": df["tlb.l1_mpki"],
            "L2 TLB MPKI": df["tlb.l2_mpki"],
            "walks": df["walk.count"],
            "walk mem accesses": df["walk.mem_accesses"],
            "walk cycles": df["walk.cycles"],
            "MMU overhead cycles": df["mmu.overhead_cycles"],
            "cycles": df["timing.cycles"],
            "page-table bytes": df["page_table.bytes"],
            "max contiguous bytes": df["page_table.max_contiguous_bytes"],
            "speedup": with_speedup(df, baseline)["speedup"],
        }
    )
    order = {d: i for i, d in enumerate(designs)}
    per_run = (
        per_run.assign(_o=per_run["design"].map(order))
        .sort_values([c for c in per_run.columns if c in ("workload", *swept, "seed")] + ["_o"])
        .drop(columns="_o")
    )

    oracle_checked = int(df["oracle.checked"].sum())
    mismatches = int(df["oracle.mismatches"].sum())
    summary = (
        f"{len(df)} runs: designs {', '.join(designs)}; workloads "
        f"{', '.join(sorted(df['workload'].unique()))}"
        + (f"; swept {', '.join(swept)}" if swept else "")
        + f"; {refs_txt}, {foot_txt}, seeds {', '.join(map(str, seeds))}. Oracle: "
        f"{oracle_checked:,} translations checked, {mismatches} mismatches."
    )

    speed_md = format_frame(speed, "table")
    md = [
        "# xlat report",
        "",
        summary,
        "",
        f"## Speedup over {baseline} (geometric mean over seeds)",
        "",
        "```",
        speed_md,
        "```",
        "",
        "## Runs",
        "",
        "| " + " | ".join(per_run.columns) + " |",
        "|" + "---|" * len(per_run.columns),
    ]
    md += ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in per_run.itertuples(False)]
    md.append("")
    for png, caption in figs:
        md += [f"![{caption}]({png.name})", "", f"*{caption}* ([PDF]({png.stem}.pdf))", ""]
    md += ["## Approximations", "", APPROXIMATIONS, "", footer, ""]
    md_path = out / "report.md"
    md_path.write_text("\n".join(md))

    def img(png: Path) -> str:
        data = base64.b64encode(png.read_bytes()).decode()
        return (
            f'<img alt="{html.escape(png.stem)}" id="fig-{html.escape(png.stem)}" '
            f'src="data:image/png;base64,{data}">'
        )

    def table_html(frame) -> str:
        frame = frame if isinstance(frame.index, pd.RangeIndex) else frame.reset_index()
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>"
            for row in frame.itertuples(False)
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    figures = "".join(
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
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
figure {{ margin: 1.5em 0; }} img {{ max-width: 100%; }}
figcaption {{ font-size: 0.9em; color: #333; }}
footer {{ color: #555; font-size: 0.85em; margin-top: 2em; border-top: 1px solid #ccc; }}
</style></head><body>
<h1>xlat report</h1>
<p id="summary">{html.escape(summary)}</p>
<h2>Speedup over {html.escape(baseline)}</h2>
<p>Cycles of {html.escape(baseline)} divided by the design's cycles on the same workload and
configuration; geometric mean over seeds, last row over workloads.</p>
{table_html(speed)}
<h2>Figures</h2>
{figures}
<h2>Runs</h2>
{table_html(per_run)}
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
        "figures": [p for p, _ in figs],
    }


__all__ = ["core_table", "format_table", "frame_from_records", "table_rows", "write_report"]
