"""Reports: a Markdown page, a self-contained HTML page and PNG figures from result records."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

from xlat.run import flatten, speedups, version

APPROXIMATIONS = (
    "Cycle figures come from a first-order core model (base CPI plus exposed translation and "
    "data latencies with fixed overlap factors; no pipeline or queueing): compare designs with "
    "them, do not read them as absolute times. Memory-reference and walk-access counts are exact "
    "for the modeled hardware. See docs/timing.md."
)


def table_rows(records: list[dict], baseline: str | None = None) -> list[dict[str, Any]]:
    """One row of headline figures per record (what the CLI table and the report show).

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


def _figures(records: list[dict], rows: list[dict], out: Path, baseline: str) -> list[tuple]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["design"] for r in rows]
    workload = rows[0]["workload"] if rows else ""
    footer = f"xlat {version()} · workload {workload} · seed {records[0]['seed']}"
    figs = []

    def save(fig, name: str, caption: str) -> None:
        fig.text(0.99, 0.01, footer, ha="right", va="bottom", fontsize=7, color="gray")
        fig.tight_layout(rect=(0, 0.03, 1, 1))
        png = out / f"{name}.png"
        fig.savefig(png, dpi=120)
        fig.savefig(out / f"{name}.pdf")
        plt.close(fig)
        figs.append((png, caption))

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(names, [r["speedup"] for r in rows], color="#4477aa")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_ylabel(f"speedup over {baseline} (×)")
    ax.set_title("Speedup (first-order timing model)")
    save(fig, "speedup", f"Speedup over {baseline} (cycles ratio; see docs/timing.md).")

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.5))
    a1.bar(names, [r["walk_refs_pki"] for r in rows], color="#66ccee")
    a1.set_ylabel("page-walk memory refs per kilo-instruction")
    a1.set_title("Page-walk traffic")
    a2.bar(names, [r["avg_walk_cycles"] for r in rows], color="#228833")
    a2.set_ylabel("average walk latency (cycles)")
    a2.set_title("Walk latency")
    for a in (a1, a2):
        a.tick_params(axis="x", rotation=20)
    save(fig, "walks", "Page-walk memory references per kilo-instruction and average walk latency.")

    base_row = next((r for r in rows if r["design"] == baseline), rows[0])
    base_ovh = base_row["mmu_overhead_cycles"] or 1
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(names, [r["mmu_overhead_cycles"] / base_ovh for r in rows], color="#ee6677")
    ax.set_ylabel(f"MMU overhead cycles (normalized to {baseline})")
    ax.set_title("Translation overhead")
    save(fig, "mmu_overhead", "MMU overhead cycles (L2 TLB + walks), normalized to the baseline.")

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(names, [r["page_table_bytes"] / 2**20 for r in rows], color="#aa3377")
    ax.set_ylabel("page-table memory (MiB)")
    ax.set_title("Page-table memory at the end of the run")
    save(fig, "page_table_memory", "Page-table memory held at the end of the run.")

    served = ["l1", "l2", "llc", "dram"]
    flat = [flatten(r) for r in records]
    if all(f"cache.pt_served_{s}" in f for f in flat for s in served):
        fig, ax = plt.subplots(figsize=(6, 3.5))
        bottom = [0.0] * len(names)
        for s, color in zip(served, ["#bbbbbb", "#66ccee", "#4477aa", "#222255"]):
            vals = [
                f[f"cache.pt_served_{s}"] * 1000 / max(r["instructions"], 1)
                for f, r in zip(flat, records)
            ]
            ax.bar(names, vals, bottom=bottom, label=s.upper(), color=color)
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_ylabel("page-walk refs per kilo-instruction")
        ax.set_title("Where page-walk references were served")
        ax.legend(fontsize=8)
        save(fig, "walk_served_by", "Page-walk memory references by the level that served them.")
    return figs


def write_report(
    records: list[dict], out_dir: str | Path, baseline: str | None = None
) -> dict[str, Path]:
    """Write ``report.md``, ``report.html``, figures (PNG + PDF) and ``results.json``.

    Returns the paths written, by kind.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    baseline = baseline or records[0]["design"]
    rows = table_rows(records, baseline)
    figs = _figures(records, rows, out, baseline)
    (out / "results.json").write_text(json.dumps(records, indent=1))
    first = records[0]
    cfg = first["config"]
    summary = (
        f"Workload **{first['workload']}**, footprint {cfg['workload']['footprint']:,} bytes, "
        f"{first['refs']:,} references, seed {first['seed']}, THP `{cfg['os']['thp']}`, "
        f"physical memory {cfg['os']['phys_mem_bytes']:,} bytes. Oracle: "
        f"{sum(r['oracle']['checked'] for r in records):,} translations checked, "
        f"{sum(r['oracle']['mismatches'] for r in records)} mismatches."
    )
    md = [
        "# xlat comparison report",
        "",
        summary,
        "",
        format_table(rows, markdown=True),
        "",
        f"Speedup and normalized figures are relative to `{baseline}`.",
        "",
    ]
    for png, caption in figs:
        md += [f"![{caption}]({png.name})", "", f"*{caption}*", ""]
    md += ["## Approximations", "", APPROXIMATIONS, "", f"xlat {version()}", ""]
    md_path = out / "report.md"
    md_path.write_text("\n".join(md))

    def img(png: Path) -> str:
        data = base64.b64encode(png.read_bytes()).decode()
        return f'<img alt="{html.escape(png.stem)}" src="data:image/png;base64,{data}">'

    head = "".join(f"<th>{html.escape(t)}</th>" for _, t, _ in COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(f.format(r[k]))}</td>" for k, _, f in COLUMNS) + "</tr>"
        for r in rows
    )
    figures = "".join(
        f"<figure>{img(p)}<figcaption>{html.escape(c)}</figcaption></figure>" for p, c in figs
    )
    summary_html = html.escape(summary).replace("**", "")
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>xlat report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; max-width: 70em; }}
table {{ border-collapse: collapse; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
figure {{ display: inline-block; margin: 1em; }} img {{ max-width: 100%; }}
footer {{ color: #666; font-size: 0.85em; margin-top: 2em; }}
</style></head><body>
<h1>xlat comparison report</h1>
<p>{summary_html}</p>
<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>
<p>Speedup and normalized figures are relative to <code>{html.escape(baseline)}</code>.</p>
{figures}
<h2>Approximations</h2><p>{html.escape(APPROXIMATIONS)}</p>
<footer>xlat {html.escape(version())} · configuration in results.json</footer>
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
