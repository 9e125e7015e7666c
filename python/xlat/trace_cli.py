"""The ``xlat trace`` commands (``info``, ``record``) and the ``--trace`` option of run/compare.

Kept apart from :mod:`xlat.cli`, which only registers them::

    xlat run --design radix --trace tests/data/hello.xlat --json
    xlat trace info tests/data/hello.xlat
    xlat trace record -o out.xlat -- python3 -c "d = {i: i for i in range(10**5)}"
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from xlat import _core

FORMATS = ("auto", "native", "champsim", "cloudsuite")


def add_trace_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``--trace`` and ``--trace-format`` to a run/compare parser."""
    p.add_argument(
        "--trace",
        metavar="FILE",
        help="simulate a trace file (native .xlat, or ChampSim) instead of a built-in workload",
    )
    p.add_argument(
        "--trace-format",
        choices=FORMATS,
        default=None,
        help="format of --trace (default auto: native by its magic, ChampSim by its name)",
    )
    p.add_argument(
        "--snapshot",
        metavar="SNAP.json",
        help="start from the free-memory state (buddyinfo) of an `xlat snapshot` file",
    )


def snapshot_overrides(args: argparse.Namespace) -> list[tuple[str, str]]:
    """Overrides of ``--snapshot FILE`` (the snapshot's free-memory state), or none."""
    if getattr(args, "snapshot", None) is None:
        return []
    from xlat import snapshot

    try:
        return snapshot.snapshot_overrides(args.snapshot)
    except (OSError, ValueError) as e:
        raise ValueError(f"--snapshot {args.snapshot}: {e}") from None


def trace_kwargs(args: argparse.Namespace) -> dict:
    """The ``trace``/``trace_format`` keyword arguments of :func:`xlat.run` from parsed args.

    ``--trace a.xlat,b.xlat`` (when no file has that whole name) is a list: one process per
    trace (a multi-programmed run, see ``sim.cores``).
    """
    return dict(trace=split_traces(args.trace), trace_format=args.trace_format)


def split_traces(trace: str | None) -> str | list[str] | None:
    """One trace path, or the list a comma-separated ``--trace`` value names.

    Examples
    --------
    >>> split_traces("a.xlat,b.xlat")
    ['a.xlat', 'b.xlat']
    >>> split_traces("a.xlat")
    'a.xlat'
    """
    if trace is None or "," not in trace or Path(trace).is_file():
        return trace
    return [t for t in trace.split(",") if t]


def check_trace_kwargs(trace: str | list[str] | None, trace_format: str | None) -> None:
    """Raise ValueError when a trace option cannot work (a missing file, a stray format).

    Examples
    --------
    >>> check_trace_kwargs(None, None)
    >>> check_trace_kwargs("/no/such/file.xlat", None)
    Traceback (most recent call last):
    ValueError: --trace /no/such/file.xlat: no such file
    """
    if trace is None:
        if trace_format is not None:
            raise ValueError("--trace-format needs --trace FILE")
        return
    if isinstance(trace, list):
        for t in trace:
            check_trace_kwargs(t, trace_format)
        return
    if Path(trace).is_dir():
        raise ValueError(f"--trace {trace}: is a directory, not a trace file")
    if not Path(trace).is_file():
        raise ValueError(f"--trace {trace}: no such file")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``xlat trace`` and its subcommands."""
    p = sub.add_parser("trace", help="trace files: summarize, record real programs")
    tsub = p.add_subparsers(dest="trace_command", required=True)
    i = tsub.add_parser(
        "info", help="counts, instructions, footprint, VMAs and read/write mix of a trace"
    )
    i.add_argument("file", help="trace file (native .xlat or ChampSim)")
    i.add_argument("--trace-format", choices=FORMATS, default=None, help="format (default auto)")
    i.add_argument("--json", action="store_true", help="print the summary as JSON")
    from xlat import record

    record.add_parser(tsub)


def human_bytes(n: float) -> str:
    """Bytes in binary units.

    Examples
    --------
    >>> human_bytes(3 * 2**20)
    '3.0 MiB'
    >>> human_bytes(512)
    '512 B'
    """
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def format_info(info: dict, max_vmas: int = 20) -> str:
    """A readable summary of ``_core.trace_info`` output."""
    t = info.get("trace", {})
    refs = info["refs"]
    lines = [
        f"trace         {t.get('path', '?')} ({t.get('format', '?')}, "
        f"{human_bytes(t.get('bytes', 0))})",
        f"sha256        {t.get('sha256', '?')}",
        f"events        {info['events']:,}",
        f"references    {refs:,} (loads {info['loads']:,} = {100 * info['load_share']:.1f}%, "
        f"stores {info['stores']:,} = {100 * info['store_share']:.1f}%, "
        f"ifetches {info['ifetches']:,})",
        f"instructions  {info['instructions']:,}",
        f"footprint     {human_bytes(info['footprint_bytes'])} "
        f"({info['footprint_pages']:,} pages touched, {info['written_pages']:,} written)",
        f"threads       {info['threads']}",
        "syscalls      " + (", ".join(f"{k} {v:,}" for k, v in info["syscalls"].items()) or "none"),
    ]
    if info["refs_outside_vmas"]:
        lines.append(f"WARNING       {info['refs_outside_vmas']:,} references outside every VMA")
    if t.get("vmas_inferred"):
        lines.append(f"VMAs          inferred: {t.get('vma_heuristic', '')}")
    meta = t.get("meta") or {}
    if meta.get("command"):
        lines.append(
            f"recorded from {' '.join(meta['command'])} (exit status "
            f"{meta.get('exit_status', '?')}, recorder {meta.get('recorder', '?')})"
        )
    for proc in info["processes"]:
        when = "at exit" if proc["exited"] else "at the end of the trace"
        lines.append(
            f"process {proc['pid']}: {proc['vma_count']} VMAs {when}, "
            f"{human_bytes(proc['mapped_bytes'])} mapped "
            f"(peak {human_bytes(proc['peak_mapped_bytes'])})"
        )
        for v in proc["vmas"][:max_vmas]:
            lines.append(f"  {v['start']:>16}-{v['end']:<16} {v['prot']} {human_bytes(v['bytes'])}")
        if proc["vma_count"] > max_vmas:
            lines.append(f"  ... {proc['vma_count'] - max_vmas} more (--json lists up to 64)")
    return "\n".join(lines)


def cmd_info(args: argparse.Namespace) -> int:
    info = json.loads(_core.trace_info(args.file, args.trace_format))
    if args.json:
        print(json.dumps(info))
    else:
        print(format_info(info))
    return 0


def main(args: argparse.Namespace) -> int:
    """Dispatch ``xlat trace SUBCOMMAND``; returns the exit code."""
    if args.trace_command == "info":
        if not Path(args.file).is_file():
            print(f"xlat: error: {args.file}: no such file", file=sys.stderr)
            return 2
        return cmd_info(args)
    from xlat import record

    return record.main(args)
