"""``xlat analyze gaps``: virtual-address-space regularity (LVM, MICRO 2025, §3.1).

The *gap coverage* is the share of consecutive mapped virtual pages (4 KiB VPNs, sorted) whose
gap is 1: 1.0 means every mapped page follows the previous one, so one linear function describes
the address space. The command prints it with the distribution of the gaps, for a built-in
workload (the pages its first ``--refs`` references touch), a trace (every page it touches) or a
snapshot (its present pages, ``xlat snapshot``)::

    xlat analyze gaps --workload kv --footprint 4GiB --refs 10M
    xlat analyze gaps --trace tests/data/sort.xlat
    xlat analyze gaps --snapshot snap.json [--json]

Under demand paging with 4 KiB pages the touched pages are the mapped pages.

``xlat analyze heat``: how concentrated a workload's or a trace's accesses are (issue 39 item
2): over ``--refs`` references after the warm-up (``--warmup``, default ``auto``: the first-touch
phase, as a run resolves it), the share of the accesses that go to the hottest 1 % and 10 % of
the 4 KiB pages and of the 2 MiB regions the window touches, and the share of accesses whose
address depends on an earlier load (where the source records dependences)::

    xlat analyze heat --workload gups --footprint 256MiB --refs 20M
    xlat analyze heat --trace corpus/gups.xlat --warmup 35M --refs 20M [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from xlat import _core

PAGE = 4096


def _label(pages: int) -> str:
    b = pages * PAGE
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift:
            return f"{b >> shift}{unit}"
    return f"{b}B"


def gap_analysis(runs: list[tuple[int, int]]) -> dict:
    """Gap coverage and gap distribution of runs ``(first VPN, pages)`` of mapped 4 KiB pages.

    Parameters
    ----------
    runs
        Runs of consecutive mapped VPNs, sorted by VPN and disjoint (adjacent runs allowed).

    Returns
    -------
    dict
        ``pages``, ``pairs`` (consecutive mapped pairs: pages - 1), ``gap1_pairs``,
        ``gap_coverage`` (gap1_pairs / pairs; 1.0 for fewer than two pages), ``gaps`` (pairs
        with a gap above 1) and ``gap_histogram``: count of gaps by power-of-two size of the
        hole between the pages (``"4KiB"`` = one unmapped page, ...), and ``largest_gap_pages``.

    Examples
    --------
    >>> g = gap_analysis([(10, 3), (14, 2), (100, 1)])
    >>> g["pages"], g["pairs"], g["gap1_pairs"], round(g["gap_coverage"], 3)
    (6, 5, 3, 0.6)
    >>> g["gap_histogram"]
    {'4KiB': 1, '256KiB': 1}
    """
    pages = sum(n for _, n in runs)
    gap1 = sum(n - 1 for _, n in runs)
    holes = []
    for (a, n), (b, _) in zip(runs, runs[1:]):
        if b < a + n:
            raise ValueError(f"runs overlap or are unsorted at VPN {b:#x}")
        if b == a + n:
            gap1 += 1
        else:
            holes.append(b - (a + n))
    hist: dict[str, int] = {}
    for h in sorted(holes):
        key = _label(1 << (h.bit_length() - 1))
        hist[key] = hist.get(key, 0) + 1
    pairs = max(pages - 1, 0)
    return {
        "pages": pages,
        "pairs": pairs,
        "gap1_pairs": gap1,
        "gap_coverage": gap1 / pairs if pairs else 1.0,
        "gaps": len(holes),
        "largest_gap_pages": max(holes, default=0),
        "gap_histogram": hist,
    }


def snapshot_runs(snap: dict) -> list[tuple[int, int]]:
    """Runs ``(first VPN, pages)`` of a snapshot's present pages (its VMAs' ``runs``).

    Examples
    --------
    >>> snapshot_runs({"vmas": [{"runs": [[8192, 7, 2, 0]]}, {"runs": [[4096, 0, 1, 0]]}]})
    [(1, 1), (2, 2)]
    """
    runs = [(r[0] // PAGE, r[2]) for v in snap.get("vmas", []) for r in v.get("runs", [])]
    if not runs and snap.get("vmas"):
        raise ValueError("the snapshot has no present-page runs (record it as root)")
    return sorted(runs)


def format_gaps(source: str, g: dict) -> str:
    """Readable summary of :func:`gap_analysis`."""
    lines = [
        f"source        {source}",
        f"mapped pages  {g['pages']} ({_label(g['pages'])})",
        f"gap coverage  {g['gap_coverage']:.6f}  ({g['gap1_pairs']} of {g['pairs']} consecutive "
        "mapped pairs have gap 1)",
        f"gaps > 1      {g['gaps']}, largest {_label(g['largest_gap_pages'])} unmapped",
    ]
    for k, n in g["gap_histogram"].items():
        lines.append(f"  hole >= {k:<8} {n}")
    return "\n".join(lines)


def format_heat(h: dict) -> str:
    """Readable summary of a page-heat analysis (``_core.page_heat``'s JSON).

    Examples
    --------
    >>> spread = {"pages": 100, "hottest_share": [0.5, 0.8], "accesses_per_page": 10.0}
    >>> print(format_heat({"source": "gups", "skipped_refs": 5, "warmup_why": "set",
    ...     "refs": 1000, "loads": 600, "stores": 400, "dependent_refs": 0, "dependent_within": [],
    ...     "dependences": "modelled by the generator", "hot_percents": [1, 10],
    ...     "pages_4k": spread, "regions_2m": {**spread, "pages": 2}}))
    source          gups
    warm-up         5 references skipped (set)
    window          1000 references (600 loads, 400 stores)
    4 KiB pages     100 touched, 10.0 accesses each; hottest 1 %: 50.0 % of accesses, 10 %: 80.0 %
    2 MiB regions   2 touched, 10.0 accesses each; hottest 1 %: 50.0 % of accesses, 10 %: 80.0 %
    dependent       0.0 % of accesses (modelled by the generator)
    """
    refs = h["refs"]

    def line(name: str, s: dict) -> str:
        shares = ", ".join(
            f"{p} %: {100 * x:.1f} %" + (" of accesses" if i == 0 else "")
            for i, (p, x) in enumerate(zip(h["hot_percents"], s["hottest_share"]))
        )
        return (
            f"{name:<15} {s['pages']} touched, {s['accesses_per_page']:.1f} accesses each; "
            f"hottest {shares}"
        )

    dep = h["dependences"]
    known = not dep.startswith("unknown")
    share = f"{100 * h['dependent_refs'] / refs:.1f} %" if refs and known else "unknown"
    if refs and known and h.get("dependent_within"):
        near = ", ".join(
            f"<= {d}: {100 * n / refs:.1f} %"
            for d, n in zip(h["dependence_distances"][:-1], h["dependent_within"][:-1])
        )
        share += f" (on a load {near} accesses back)"
    return "\n".join(
        [
            f"{'source':<15} {h['source']}",
            f"{'warm-up':<15} {h['skipped_refs']} references skipped ({h['warmup_why']})",
            f"{'window':<15} {refs} references ({h['loads']} loads, {h['stores']} stores)",
            line("4 KiB pages", h["pages_4k"]),
            line("2 MiB regions", h["regions_2m"]),
            f"{'dependent':<15} {share} of accesses ({dep})",
        ]
    )


def _source_args(g: argparse.ArgumentParser, snapshot: bool) -> None:
    src = g.add_mutually_exclusive_group(required=True)
    src.add_argument("--workload", help="built-in workload (xlat workloads)")
    src.add_argument("--trace", help="trace file")
    if snapshot:
        src.add_argument("--snapshot", help="snapshot file (xlat snapshot -o)")
    g.add_argument("--footprint", help="workload footprint (workload.footprint), e.g. 4GiB")
    g.add_argument("--refs", help="references of the workload to read (sim.refs), e.g. 10M")
    g.add_argument("--seed", help="sim.seed")
    g.add_argument("--format", dest="trace_format", help="trace format (default: auto)")
    g.add_argument("--json", action="store_true", help="print the analysis as JSON")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``xlat analyze``."""
    p = sub.add_parser(
        "analyze",
        help="address-space analyses (gaps: LVM's gap coverage; heat: hot-page shares)",
    )
    asub = p.add_subparsers(dest="analyze_command", required=True)
    g = asub.add_parser(
        "gaps",
        help="gap coverage of the mapped pages of a workload, a trace or a snapshot",
        description=__doc__.split("\n\n")[1],
    )
    _source_args(g, snapshot=True)
    h = asub.add_parser(
        "heat",
        help="share of accesses to the hottest 1 %% / 10 %% of pages, and dependent loads",
        description=__doc__.split("\n\n")[3],
    )
    _source_args(h, snapshot=False)
    h.add_argument(
        "--warmup",
        help="references to skip first (sim.warmup_refs; default auto: the first-touch phase)",
    )


def _overrides(args: argparse.Namespace, extra: tuple = ()) -> list[tuple[str, str]] | None:
    """The configuration overrides of a workload or trace source; None after printing why the
    input is refused."""
    overrides = []
    if args.workload:
        overrides.append(("workload.name", args.workload))
    for key, value in (
        ("workload.footprint", args.footprint),
        ("sim.refs", args.refs),
        ("sim.seed", args.seed),
        *extra,
    ):
        if value is not None:
            overrides.append((key, value))
    from xlat.trace_cli import file_problem
    from xlat.values import check_inputs

    problem = file_problem(args.trace) if args.trace else None
    if problem:
        print(f"xlat: error: --trace {args.trace}: {problem}", file=sys.stderr)
        return None
    try:
        check_inputs(overrides)
    except _core.XlatError as e:
        print(f"xlat: error: {e}", file=sys.stderr)
        return None
    return overrides


def main(args: argparse.Namespace) -> int:
    """Run ``xlat analyze gaps`` or ``xlat analyze heat``."""
    if args.analyze_command == "heat":
        return _heat(args)
    if args.snapshot:
        from xlat.snapshot import snapshot_problem

        try:
            snap = json.loads(Path(args.snapshot).read_text())
            problem = snapshot_problem(snap)
            if problem:
                raise ValueError(f"not an xlat snapshot: {problem}")
            runs = snapshot_runs(snap)
        except (OSError, ValueError) as e:
            print(f"xlat: error: {args.snapshot}: {e}", file=sys.stderr)
            return 2
        source = args.snapshot
    else:
        overrides = _overrides(args)
        if overrides is None:
            return 2
        runs = _core.touched_page_runs(overrides, args.trace, args.trace_format)
        source = args.trace or f"workload {args.workload}"
    g = gap_analysis(runs)
    print(json.dumps(g, indent=2) if args.json else format_gaps(source, g))
    return 0


def _heat(args: argparse.Namespace) -> int:
    """Run ``xlat analyze heat``: a trace without ``--refs`` is read to its end."""
    from xlat.run import TRACE_NO_LIMIT

    if args.trace and args.refs is None:
        args.refs = str(TRACE_NO_LIMIT)
    overrides = _overrides(args, (("sim.warmup_refs", args.warmup),))
    if overrides is None:
        return 2
    try:
        h = json.loads(_core.page_heat(overrides, args.trace, args.trace_format))
    except _core.XlatError as e:
        print(f"xlat: error: {e}", file=sys.stderr)
        return 2
    if h["refs"] == 0:
        print(
            f"xlat: error: {h['source']}: no reference left to measure: it ended after "
            f"{h['skipped_refs']} references, within the warm-up ({h['warmup_why']}); "
            "give a smaller --warmup",
            file=sys.stderr,
        )
        return 2
    print(json.dumps(h, indent=2) if args.json else format_heat(h))
    return 0
