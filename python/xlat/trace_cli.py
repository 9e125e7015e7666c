"""The ``xlat trace`` commands (``info``, ``record``, ``setup``) and the ``--trace`` option of
run/compare.

Kept apart from :mod:`xlat.cli`, which only registers them::

    xlat run --design radix --trace tests/data/hello.xlat --json
    xlat trace info tests/data/hello.xlat
    xlat trace record -o out.xlat -- python3 -c "d = {i: i for i in range(10**5)}"
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
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
    try:
        if Path(trace).is_dir():
            raise ValueError(f"--trace {trace}: is a directory, not a trace file")
    except OSError:
        pass  # file_problem names it
    problem = file_problem(trace)
    if problem:
        raise ValueError(f"--trace {trace}: {problem}")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``xlat trace`` and its subcommands."""
    p = sub.add_parser(
        "trace", help="trace files: summarize, record real programs (setup: build the recorder)"
    )
    tsub = p.add_subparsers(dest="trace_command", required=True)
    i = tsub.add_parser(
        "info", help="counts, instructions, footprint, VMAs and read/write mix of a trace"
    )
    i.add_argument("file", help="trace file (native .xlat or ChampSim)")
    i.add_argument("--trace-format", choices=FORMATS, default=None, help="format (default auto)")
    i.add_argument("--json", action="store_true", help="print the summary as JSON")
    i.add_argument(
        "--verify",
        action="store_true",
        help="read every chunk and check it (checksums, records, totals, stored summary) on "
        "two worker threads, and hash the file; exit code 2 if anything is wrong",
    )
    i.add_argument(
        "--progress", action="store_true", help="progress on stderr even if not a terminal"
    )
    i.add_argument("--quiet", action="store_true", help="no progress on stderr")
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
        f"sha256        {t.get('sha256', '(not computed: --verify hashes the file)')}",
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
    if info.get("summary_from") == "trailer":
        lines.append(
            "summary       stored in the trace at record time (chunks not read; --verify "
            "checks them)"
        )
    v = info.get("verify")
    if v and "chunks" in v:
        lines.append(
            f"verified      OK: {v['chunks']:,} chunks, {v['events']:,} events checked in "
            f"{v['seconds']:.1f}s ({v['events_per_second'] / 1e6:.0f} M events/s); "
            f"stored summary {v['summary']}"
        )
    elif v:
        lines.append(f"verified      OK: read whole, {v['events']:,} events")
    if info["refs_outside_vmas"]:
        lines.append(f"WARNING       {info['refs_outside_vmas']:,} references outside every VMA")
    if t.get("vmas_inferred"):
        lines.append(f"VMAs          inferred: {t.get('vma_heuristic', '')}")
    if t.get("dependences"):
        lines.append(f"dependences   {t['dependences']}")
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


#: Seconds between two progress updates of a scan or a verification.
TICK = 0.25


def run_task(task, label: str, show: bool) -> str:
    """Wait for a ``_core.TraceTask``, drawing its progress on stderr when ``show``; its JSON.

    Raises ``_core.XlatError`` when the task failed.
    """
    start = time.monotonic()
    drawn = False
    finished = False
    while not finished:
        finished = task.wait(TICK)
        if not show:
            continue
        # Drawn at least once (the final state), so a fast task still says what it did.
        done, total, unit = task.progress
        elapsed = max(time.monotonic() - start, 1e-9)
        if unit == "bytes":
            amount = f"{human_bytes(done)}/{human_bytes(total)} {done / elapsed / 2**20:7.1f} MiB/s"
        else:
            amount = f"{done / 1e6:9.1f}" + (f"/{total / 1e6:.1f}" if total else "")
            amount += f" M events {done / elapsed / 1e6:6.1f} M/s"
        if total:
            frac = min(done / total, 1.0)
            eta = (total - done) / (done / elapsed) if done else float("inf")
            line = f"\r{label} [{'#' * int(frac * 30):<30}] {amount} ETA {eta:5.0f}s"
        else:
            line = f"\r{label} {amount} {elapsed:6.0f}s"
        sys.stderr.write(line)
        sys.stderr.flush()
        drawn = True
    if drawn:
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()
    return task.result()


def cmd_info(args: argparse.Namespace) -> int:
    """``xlat trace info``: the stored summary (constant time) or a scan (with progress);
    ``--verify`` checks every chunk first (exit code 2 when the file is damaged)."""
    show = not args.quiet and (args.progress or sys.stderr.isatty())
    verified = scanned = None
    if args.verify:
        fmt = args.trace_format
        try:
            with open(args.file, "rb") as f:
                native = f.read(8) == b"XLATTRC\0"
        except OSError as e:
            print(f"xlat: error: {args.file}: {e}", file=sys.stderr)
            return 2
        if fmt not in (None, "native") or not native:
            # Other formats have no chunks to check: reading them whole is the check.
            try:
                scanned = json.loads(run_task(_core.TraceTask.scan(args.file, fmt), "verify", show))
            except _core.XlatError as e:
                print(f"xlat: error: verify failed: {e}", file=sys.stderr)
                return 2
            verified = {"ok": True, "events": scanned["events"], "summary": "scanned"}
        else:
            try:
                verified = json.loads(run_task(_core.TraceTask.verify(args.file), "verify", show))
            except _core.XlatError as e:
                print(f"xlat: error: verify failed: {e}", file=sys.stderr)
                return 2
    stored = _core.trace_stored_summary(args.file, args.trace_format)
    if stored is not None:
        info = json.loads(stored)
    elif scanned is not None:
        info = scanned
    else:
        info = json.loads(
            run_task(_core.TraceTask.scan(args.file, args.trace_format), "scanning", show)
        )
    if verified is not None:
        info["verify"] = verified
        if "sha256" in verified:
            info.setdefault("trace", {})["sha256"] = verified["sha256"]
    if args.json:
        print(json.dumps(info))
    else:
        print(format_info(info))
    return 0


def file_problem(path: str) -> str | None:
    """Why ``path`` cannot be read as a trace file, or None: a trace is a regular file (a
    device such as /dev/zero never ends; a named pipe cannot be read twice).

    Examples
    --------
    >>> file_problem("/nonexistent/t.xlat"), file_problem("/dev/zero")
    ('no such file', 'not a regular file (a character device): a trace is a file')
    """
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as e:
        return f"cannot read it: {e.strerror or e}"
    if stat.S_ISREG(mode):
        return None
    kind = (
        "a directory"
        if stat.S_ISDIR(mode)
        else "a named pipe"
        if stat.S_ISFIFO(mode)
        else "a character device"
        if stat.S_ISCHR(mode)
        else "a block device"
        if stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "not a file"
    )
    return f"not a regular file ({kind}): a trace is a file"


def main(args: argparse.Namespace) -> int:
    """Dispatch ``xlat trace SUBCOMMAND``; returns the exit code."""
    if args.trace_command == "info":
        problem = file_problem(args.file)
        if problem:
            print(f"xlat: error: {args.file}: {problem}", file=sys.stderr)
            return 2
        return cmd_info(args)
    from xlat import record

    return record.main(args)
