"""The ``xlat sweep``, ``xlat results`` and ``xlat report`` subcommands (registered in cli.py).

Forms (see docs/sweeps.md)::

    xlat sweep SPEC.toml [--workers N] [--db PATH] [--address ray://HOST:PORT] [--dry-run]
    xlat results [--db PATH] [--where KEY=VALUE ...] [--speedup-over DESIGN] [--format csv]
                 [--output runs.parquet]
    xlat report [SOURCE] [--out DIR] [--baseline DESIGN] [--where KEY=VALUE ...]
                [--figure-width column|page|INCHES] [--latex]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from xlat.query import (
    AGGS,
    QueryError,
    default_columns,
    design_order,
    format_frame,
    interval_display,
    results,
    varying_params,
    write_frame,
)
from xlat.run import model_version
from xlat.store import DEFAULT_DB, Store, StoreError
from xlat.sweeps import MAX_RUNS, SpecError, SweepError, iter_runs, load_spec, run_sweep

#: Exceptions of these commands that are the user's to fix (exit code 2).
USAGE_ERRORS = (SpecError, SweepError, QueryError, StoreError)


def add_parsers(sub) -> None:
    """Register the subcommands on the ``xlat`` subparsers object."""
    p = sub.add_parser("sweep", help="run a grid of designs x workloads x parameters on Ray")
    p.add_argument(
        "spec", help="sweep spec: a TOML file (docs/sweeps.md), or a shipped example's name (demo)"
    )
    p.add_argument("--db", default=DEFAULT_DB, help=f"result database (default {DEFAULT_DB})")
    p.add_argument("--workers", type=int, help="parallel runs (default: cores, or cluster CPUs)")
    p.add_argument(
        "--address",
        metavar="ray://HOST:PORT",
        help="run on an existing Ray cluster instead of a local Ray instance",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="list the runs and whether each is stored"
    )
    p.add_argument("--force", action="store_true", help="rerun runs already stored")
    p.add_argument(
        "--max-runs",
        type=int,
        metavar="N",
        help=f"most runs the grid may have (default: the spec's max_runs, else {MAX_RUNS:,}; "
        "0: no limit); a larger grid is refused with its size before anything runs",
    )
    p.add_argument("--progress", action="store_true", help="live progress bar even if not a tty")
    p.add_argument(
        "--quiet", "-q", action="store_true", help="no progress output; failed runs still print"
    )

    p = sub.add_parser(
        "reproduce", help="run a paper's experiments and compare its claims (data/claims/)"
    )
    p.add_argument("paper", nargs="?", help="paper name (mehpt, ...) or all")
    p.add_argument(
        "--list",
        action="store_true",
        help="list the paper's experiments and claims (every paper's without a name)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke test for CI, not graded: fails if a checked claim's direction differs from "
        "its full run's recorded figure",
    )
    p.add_argument(
        "--paper-scale",
        action="store_true",
        help="each experiment at the paper's own scale (its [experiment.paper] table: the "
        "paper's footprints, lengths and workloads; hours on a small machine, resumable), graded",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a configuration key in every run, e.g. --set timing.model=simple "
        "(repeatable)",
    )
    p.add_argument(
        "--experiment",
        action="append",
        metavar="NAME",
        help="run only this experiment of the paper (repeatable; --list names them): a claim "
        "that reads another is computed without it, 'not run' when it reads no experiment run",
    )
    p.add_argument(
        "--recorded",
        action="store_true",
        help="run nothing: grade the claims from the last full runs' figures in data/claims",
    )
    p.add_argument(
        "--workloads",
        choices=["generators", "real", "both"],
        default="generators",
        help="run the experiments on the built-in generators (default), on the recorded real "
        "programs that stand for them (`xlat corpus record`; generators without one are "
        "dropped), or both (the claims table then has a column of each; grades stay the "
        "generators')",
    )
    p.add_argument(
        "--corpus-dir",
        metavar="DIR",
        help="folder of the recorded programs, NAME.xlat (default corpus/, where `xlat corpus "
        "record` writes)",
    )
    p.add_argument("--json", action="store_true", help="the claims rows as JSON on stdout")
    p.add_argument(
        "--db",
        default="out/reproduce.duckdb",
        help="result store (resumable; default %(default)s; runs on the recorded programs go "
        "to real/ beside it)",
    )
    p.add_argument("--out", default="out", help="folder of the report (reproduce-PAPER.md)")
    p.add_argument("--workers", type=int, help="parallel runs (default: cores)")
    p.add_argument(
        "--quiet", "-q", action="store_true", help="no progress lines; failed runs still print"
    )

    p = sub.add_parser("results", help="query the result database")
    p.add_argument("--db", default=DEFAULT_DB, help=f"result database (default {DEFAULT_DB})")
    p.add_argument(
        "--where",
        action="append",
        metavar="KEY=VALUE",
        help="filter: KEY=V1,V2 (any of), KEY!=V, KEY<N, KEY>N ... (repeatable)",
    )
    p.add_argument(
        "--status", default="ok", choices=["ok", "failed", "all"], help="runs to show (default ok)"
    )
    p.add_argument("--columns", help="comma-separated columns to show (default: headline figures)")
    p.add_argument(
        "--speedup-over",
        metavar="DESIGN",
        help="table of speedups (cycles ratio) of every design over DESIGN",
    )
    add_metric(p)
    p.add_argument(
        "--by",
        help="comma-separated row keys of a table (default: workload and the swept parameters)",
    )
    p.add_argument("--pivot", metavar="COLUMN", help="column whose values become table columns")
    p.add_argument("--value", metavar="COLUMN", help="figure to aggregate in a --by/--pivot table")
    p.add_argument("--agg", default="mean", choices=AGGS, help="aggregation (default mean)")
    p.add_argument(
        "--format",
        choices=["table", "csv", "json", "parquet"],
        help="table (default on screen), csv or json; parquet needs --output",
    )
    p.add_argument(
        "--output",
        "-o",
        metavar="PATH",
        help="write the result to PATH (.parquet, .csv or .json, or as --format says) instead of "
        "printing it; plain queries write every column unless --columns names some",
    )
    p.add_argument("--spec", help="only the runs of this sweep spec (TOML)")
    p.add_argument(
        "--check",
        action="store_true",
        help="check every stored row against its record (labels, finite figures, one row per "
        "run); exit 1 listing the rows that disagree",
    )
    p.add_argument(
        "--merge",
        action="append",
        metavar="OTHER",
        help="copy into --db the runs of the store OTHER that --db lacks (or holds only as "
        "failed); a run stored ok is never replaced. Combines stores filled on several "
        "machines, which sweeps and `xlat reproduce` then resume from (repeatable)",
    )

    p = sub.add_parser("report", help="HTML page + PNG/PDF figures from the store or compare JSON")
    p.add_argument(
        "source",
        nargs="?",
        default=DEFAULT_DB,
        help=f"result database, or a JSON file of `xlat compare --json` (default {DEFAULT_DB})",
    )
    p.add_argument("--out", default="out", help="output folder (default out/)")
    p.add_argument(
        "--baseline", help="design speedups are normalized to (default: radix, or the first design)"
    )
    p.add_argument(
        "--where",
        action="append",
        metavar="KEY=VALUE",
        help="only runs matching (as in `xlat results`)",
    )
    p.add_argument("--spec", help="only the runs of this sweep spec (TOML)")
    add_figure_width(p)
    p.add_argument(
        "--latex", action="store_true", help="also write the speedup table as LaTeX (speedup.tex)"
    )


def add_figure_width(p: argparse.ArgumentParser) -> None:
    """The ``--figure-width`` option of ``report`` and ``compare --report``."""
    p.add_argument(
        "--figure-width",
        default="column",
        metavar="column|page|INCHES",
        help="figure width: column (3.33 in, default), page (7 in) or inches (2..7)",
    )


def _csv(text: str | None) -> list[str] | None:
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


def cmd_sweep(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    check_workers(args.workers)
    if args.max_runs is not None and args.max_runs < 0:
        raise SpecError(f"--max-runs must be 0 (no limit) or more, got {args.max_runs}")
    if args.dry_run:
        from xlat.store import Store

        stored = Store(args.db).stored()
        total = todo = 0
        # One line per run as it is resolved: a large grid shows at once and holds no list.
        for r in iter_runs(spec, args.max_runs):
            state = stored.get(r.config_hash, {}).get("status") or "new"
            print(f"{r.config_hash[:12]}  {state:<6}  {r.label()}", flush=total < 100)
            total += 1
            todo += state != "ok" or args.force
        print(f"{total} runs, {todo} to run", file=sys.stderr)
        return 0
    if args.quiet:
        mode = "errors"  # --quiet: no progress, but every failed run is named with its error
    elif args.progress or sys.stderr.isatty():
        mode = "bar"
    else:
        mode = "lines"
    where = f" on {args.address}" if args.address else ""
    summary = run_sweep(
        spec, args.db, args.workers, args.address, args.force, mode, max_runs=args.max_runs
    )
    if summary["interrupted"]:
        print(
            f"xlat: interrupted: {summary['ok'] + summary['failed']} runs finished and were "
            f"stored in {args.db}; the runs in flight were dropped. Rerun the same command to "
            "run the rest.",
            file=sys.stderr,
        )
        return 130
    if not args.quiet:
        print(
            f"sweep {spec.name}: {summary['total']} runs, {summary['skipped']} already stored, "
            f"{summary['ok']} ran ok{where}, {summary['failed']} failed -> {args.db}",
            file=sys.stderr,
        )
        if summary["trace_changed"]:
            print(
                f"warning: {summary['trace_changed']} runs read a trace file whose content "
                "changed after the sweep started; they are stored under the sha256 of what they "
                "read (column trace_sha256), not under the spec's",
                file=sys.stderr,
            )
        print_reuse_notes(summary)
    return 1 if summary["failed"] else 0


def print_reuse_notes(summary: dict) -> None:
    """What a sweep's summary (:func:`xlat.sweeps.run_sweep`) says about the stored runs it
    reused or ran again, on stderr: rows of an older model version run again, rows made before
    records carried a model version are reused, rows of other code of the same model."""
    for old, n in sorted(summary.get("outdated", {}).items()):
        print(
            f"note: {n} stored runs were made by model version {old} (this xlat's is "
            f"{model_version()}; a run gets the latest that moved runs of its shape, "
            "xlat.model_version_of) and were run again: results of two models are never mixed "
            "(docs/sweeps.md, 'Resuming')",
            file=sys.stderr,
        )
    if summary.get("legacy"):
        print(
            f"note: {summary['legacy']} stored runs predate recorded model versions (no "
            "model_version column) and were reused as they are; --force reruns them",
            file=sys.stderr,
        )
    if summary.get("stale"):
        print(
            f"note: {summary['stale']} of the stored runs were made by another xlat version "
            "or git commit (columns xlat_version, git_commit); --force reruns them",
            file=sys.stderr,
        )


#: Most runs in flight ``--workers`` may ask for (Ray refuses absurd CPU counts with a traceback).
MAX_WORKERS = 100_000


def check_workers(workers: int | None) -> None:
    """``--workers`` of ``sweep`` and ``reproduce``: at least 1, at most :data:`MAX_WORKERS`."""
    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        raise SpecError(f"--workers must be at least 1 and at most {MAX_WORKERS:,}, got {workers}")


def add_metric(p: argparse.ArgumentParser) -> None:
    """The ``--metric`` option of the commands that show speedups."""
    p.add_argument(
        "--metric",
        default="cycles",
        choices=["cycles", "total"],
        help="what speedups are a ratio of: cycles = timing.cycles (the core's time, default); "
        "total = timing.cycles + timing.os_cycles (page faults with the zeroing of the pages they "
        "allocate, page-table allocation and resizing, compaction included)",
    )


def cmd_results(args: argparse.Namespace) -> int:
    if args.check:
        return _check(args)
    if args.merge:
        return _merge(args)
    status = None if args.status == "all" else args.status
    out = results(
        args.db,
        where=args.where,
        status=status,
        columns=_csv(args.columns),
        by=_csv(args.by),
        pivot=args.pivot,
        value=args.value,
        agg=args.agg,
        speedup_over=args.speedup_over,
        spec=args.spec,
        metric=args.metric,
        intervals=args.speedup_over is not None,
    )
    notes = out.attrs.get("speedup_notes", []) if args.speedup_over is not None else []
    if args.output is not None:
        fmt = None if args.format in (None, "table") else args.format
        if args.format == "table":
            raise QueryError("--output writes parquet, csv or json, not an aligned table")
        n = write_frame(out, args.output, fmt)
        print(f"{args.output}: {n} rows", file=sys.stderr)
        return 0
    if args.format == "parquet":
        raise QueryError("--format parquet writes a file: give it with --output PATH")
    if args.speedup_over is None and args.value is None and args.columns is None:
        if not out.empty:
            keys = ["workload", *varying_params(out), "seed"]
            rank = out["design"].map({d: i for i, d in enumerate(design_order(out["design"]))})
            out = out.assign(_rank=rank).sort_values([*keys, "_rank"], kind="stable")
            out = out[default_columns(out)].reset_index(drop=True)
            out.columns = [
                c[len("config.") :] if c.startswith("config.") else c for c in out.columns
            ]
    table_format = (args.format or "table") == "table"
    if table_format and args.speedup_over is not None:
        out = interval_display(out)
    try:
        print(format_frame(out, args.format or "table").rstrip("\n"))
        if table_format and notes:
            print()
            print("\n".join(notes))
        sys.stdout.flush()
    except BrokenPipeError:  # `xlat results | head`: the reader is gone, which is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _merge(args: argparse.Namespace) -> int:
    """``xlat results --merge OTHER``: copy the runs of other stores into ``--db``."""
    store = Store(args.db)
    for other in args.merge:
        if not Path(other).exists():
            raise StoreError(f"--merge: no result database at {other}")
        n = store.merge(other)
        print(
            f"{other} -> {args.db}: {n['added']} run(s) added, {n['kept']} already stored, "
            f"{n['skipped']} failed there and stored here (kept)",
            file=sys.stderr,
        )
    return 0


def _check(args: argparse.Namespace) -> int:
    """``xlat results --check``: one line per problem on stdout, a summary on stderr."""
    from xlat.query import check_store

    n, problems = check_store(args.db)
    for line in problems:
        print(line)
    if problems:
        print(f"{args.db}: {n} rows checked, {len(problems)} problems", file=sys.stderr)
        return 1
    print(
        f"{args.db}: {n} rows checked: one row per run, every label agrees with its record, "
        "every figure is a finite number",
        file=sys.stderr,
    )
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from xlat.report import figure_width, write_report
    from xlat.store import frame_from_records

    try:
        figure_width(args.figure_width)
    except ValueError as e:
        raise QueryError(str(e)) from None
    source = Path(args.source)
    if source.suffix == ".json":
        try:
            records = json.loads(source.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise QueryError(f"{source}: cannot read compare output: {e}") from None
        if isinstance(records, dict):
            records = [records]
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise QueryError(f"{source}: expected the JSON of `xlat compare --json` (a list)")
        for i, rec in enumerate(records):
            missing = [k for k in RECORD_KEYS if k not in rec]
            if missing:
                raise QueryError(
                    f"{source}: record {i} lacks {', '.join(missing)}; expected result records "
                    "as `xlat compare --json` writes them"
                )
        df = frame_from_records(records)
        origin = str(source)
    else:
        df = results(source, where=args.where, spec=args.spec)
        origin = str(source)
    if df.empty:
        raise QueryError(f"{source}: no successful runs to report")
    try:
        paths = write_report(
            df, args.out, args.baseline, source=origin, width=args.figure_width, latex=args.latex
        )
    except ValueError as e:  # an unknown baseline, or no successful run
        raise QueryError(f"{source}: {e}") from None
    except OSError as e:
        raise QueryError(report_dir_error(args.out, e)) from None
    print(f"report written: {paths['html']} ({len(paths['figures'])} figures)", file=sys.stderr)
    return 0


#: Top-level keys every result record has (what a report reads).
RECORD_KEYS = ("design", "workload", "seed", "config", "timing", "tlb", "walk", "mmu", "page_table")


def report_dir_error(out: str, e: OSError) -> str:
    """The message for a report folder that cannot be written."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        return f"--out {out}: is a file, not a folder (the report writes several files into it)"
    return f"--out {out}: cannot write the report there: {e.strerror or e}"


def cmd_reproduce(args: argparse.Namespace) -> int:
    from xlat import reproduce

    check_workers(args.workers)
    try:
        return reproduce.main(args)
    except reproduce.ReproduceError as e:
        raise SpecError(str(e)) from None


COMMANDS = {
    "sweep": cmd_sweep,
    "results": cmd_results,
    "report": cmd_report,
    "reproduce": cmd_reproduce,
}
