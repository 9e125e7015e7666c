"""The ``xlat`` command line.

Forms scripts rely on (kept exactly so)::

    xlat run --design radix --workload gups --footprint 1GiB --refs 10M --seed 1 --json
    xlat compare --designs radix,ideal --workload bfs --footprint 512MiB --refs 5M --json
    xlat run --cpu neoverse-n1 --design radix --workload gups
    xlat designs
    xlat workloads
    xlat cpus
    xlat sweep SPEC.toml [--workers N] [--db PATH] [--address ray://HOST:PORT] [--dry-run]
    xlat results [--db PATH] [--where design=radix] [--speedup-over radix] [--format csv]
    xlat report [results.duckdb | compare.json] [--out DIR]

Exit codes: 0 success, 1 simulation error (trace, OS model, oracle) or a system problem (a full
disk), 2 bad usage or configuration, 3 an internal error (a bug; ``--debug`` prints the traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from typing import Any

from xlat import _core, analyze, commands, corpus, snapshot, trace_cli
from xlat.report import core_table, figure_width, format_table, table_rows, write_report
from xlat.run import (
    baseline_profiles,
    compare,
    cpu_description,
    cpu_dirs,
    cpus,
    design_profiles,
    designs,
    load_preset,
    resolve_config,
    resolve_config_sources,
    run,
)

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]


class UsageError(Exception):
    """A problem with the command line or the configuration (exit code 2)."""


def version_text() -> str:
    """``xlat VERSION`` plus the git commit when run from a clone (what ``--version`` prints).

    Examples
    --------
    >>> version_text().startswith("xlat ")
    True
    """
    from xlat.sweeps import git_commit

    commit = git_commit()
    return f"xlat {_core.version()}" + (f" (git {commit})" if commit else "")


class _VersionAction(argparse.Action):
    """``--version``: computed only when asked (the commit needs a git call)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(version_text())
        parser.exit()


def _parse_set(items: list[str] | None) -> list[tuple[str, str]]:
    out = []
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--set expects key=value (e.g. os.thp=always), got '{item}'")
        out.append((key.strip(), value.strip()))
    return out


CPU_HELP = (
    "CPU preset (see `xlat cpus`): its TLBs, caches, DRAM and core, beneath --preset and --set"
)


PROFILE_HELP = (
    "the settings around the design: auto (default: its paper's OS policy, TLB organization and "
    "companion structures; `xlat designs --long`), none (the bare mechanism on the default OS "
    "and TLBs), or a baseline profile (4k, thp, thp_res) instead"
)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cpu", metavar="NAME", help=CPU_HELP)
    p.add_argument("--profile", metavar="NAME", help=PROFILE_HELP)
    p.add_argument("--preset", help="preset name in configs/ or path to a TOML file")
    p.add_argument("--workload", help="built-in workload (see `xlat workloads`)")
    p.add_argument("--footprint", help="workload footprint, e.g. 256MiB, 1GiB")
    p.add_argument("--refs", help="memory references to simulate, e.g. 1M, 10M")
    p.add_argument("--seed", help="seed of every random choice (0..2^63-1)")
    p.add_argument(
        "--warmup",
        metavar="REFS",
        help="references simulated before the statistics restart from zero (sim.warmup_refs), "
        "e.g. 1M; --refs are then measured after them. Default auto: until the workload's "
        "first-touch phase is over, at most --refs; 0 measures from the first reference",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override any configuration key, e.g. --set os.thp=always (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print the result record(s) as JSON")
    p.add_argument(
        "--stats-format",
        choices=["table", "json", "txt"],
        help="table (default: the summary), json (the whole record, as --json) or txt (every "
        "figure as a gem5-style 'key value # unit' line, one block per run)",
    )
    p.add_argument("--progress", action="store_true", help="show a progress bar on stderr")
    trace_cli.add_trace_arguments(p)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    parser = argparse.ArgumentParser(
        prog="xlat", description="Fast, checked simulator of virtual-memory address translation."
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="print the version (and git commit) and exit"
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="print the Python traceback of an unexpected error (anywhere on the command line)",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="simulate one design on one workload")
    p.add_argument("--design", help="design to simulate (see `xlat designs`)")
    _common(p)

    p = sub.add_parser("compare", help="simulate several designs on the same workload")
    p.add_argument("--designs", help="comma-separated designs (default: all registered)")
    p.add_argument("--baseline", help="design the speedups are relative to (default: first)")
    commands.add_metric(p)
    p.add_argument(
        "--report",
        nargs="?",
        const="out",
        metavar="DIR",
        help="write report.md, report.html, figures and results.json to DIR (default out/)",
    )
    commands.add_figure_width(p)
    _common(p)

    p = sub.add_parser("designs", help="list registered designs, one per line")
    p.add_argument("--verbose", "-v", action="store_true", help="with one-line summaries")
    p.add_argument(
        "--long",
        "-l",
        action="store_true",
        help="with summaries and each design's profile (the settings its paper assumes), then "
        "the baseline profiles",
    )
    p = sub.add_parser("workloads", help="list built-in workloads, one per line")
    p.add_argument("--verbose", "-v", action="store_true", help="with one-line descriptions")
    p = sub.add_parser("cpus", help="list CPU presets (configs/cpus/) with their key figures")
    p.add_argument("--names", action="store_true", help="names only, one per line")

    p = sub.add_parser("config", help="configuration tools")
    csub = p.add_subparsers(dest="config_command", required=True)
    c = csub.add_parser("show", help="print the resolved configuration tree as TOML")
    c.add_argument("preset", nargs="?", help="preset name in configs/ or path to a TOML file")
    c.add_argument("--cpu", metavar="NAME", help=CPU_HELP)
    c.add_argument("--design", help="the design (its profile applies; see `xlat designs --long`)")
    c.add_argument("--profile", metavar="NAME", help=PROFILE_HELP)
    c.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a key")
    c = csub.add_parser("keys", help="list every configuration key")
    trace_cli.add_parser(sub)
    corpus.add_parser(sub)
    snapshot.add_parser(sub)
    analyze.add_parser(sub)
    commands.add_parsers(sub)
    return parser


def _snapshot_overrides(args: argparse.Namespace) -> list[tuple[str, str]]:
    try:
        return trace_cli.snapshot_overrides(args)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _kwargs(args: argparse.Namespace) -> dict:
    return dict(
        workload=args.workload,
        footprint=args.footprint,
        refs=args.refs,
        warmup=args.warmup,
        seed=args.seed,
        preset=args.preset,
        cpu=args.cpu,
        profile=args.profile,
        set=_snapshot_overrides(args) + _parse_set(args.set),
        **trace_cli.trace_kwargs(args),
    )


def _validate(args: argparse.Namespace, design_names: list[str]) -> None:
    """Resolve the configuration once per design before running, so that configuration
    problems exit with code 2 and nothing is simulated."""
    kw = _kwargs(args)
    preset = kw.pop("preset")
    cpu = kw.pop("cpu")
    trace = kw.pop("trace")
    try:
        trace_cli.check_trace_kwargs(trace, kw.pop("trace_format"))
    except ValueError as e:
        raise UsageError(str(e)) from None
    for option in ("workload", "footprint"):
        if trace is not None and kw[option] is not None:
            raise UsageError(
                f"--{option} cannot be given with --trace: the references come from the trace file"
            )
    for d in design_names:
        try:
            resolve_config(preset, cpu, design=d, **kw)
        except _core.XlatError as e:
            raise UsageError(str(e)) from None


def _stats_format(args: argparse.Namespace) -> str:
    """The output format of run/compare: --stats-format, else json with --json, else table."""
    if args.json and args.stats_format not in (None, "json"):
        raise UsageError(f"--json and --stats-format {args.stats_format} disagree; give one")
    return args.stats_format or ("json" if args.json else "table")


def _progress(args: argparse.Namespace) -> bool:
    return args.progress or (_stats_format(args) == "table" and sys.stderr.isatty())


def _print_stats_text(recs: list[dict]) -> None:
    from xlat.units import stats_text

    for rec in recs:
        print(f"# xlat {rec.get('version', '')}: {rec['design']} on {rec['workload']}")
        print(stats_text(rec))


def cmd_run(args: argparse.Namespace) -> int:
    _validate(args, [args.design])
    fmt = _stats_format(args)
    rec = run(design=args.design, progress=_progress(args), **_kwargs(args))
    if fmt == "json":
        print(json.dumps(rec))
    elif fmt == "txt":
        _print_stats_text([rec])
    else:
        print(format_table(table_rows([rec])))
        if "cores" in rec:
            print()
            print(core_table(rec))
        if "sampling" in rec:
            print()
            print(sampling_line(rec))
    return 0


def sampling_line(rec: dict) -> str:
    """The estimate of a sampled run (``sim.sampling``) with its 95 % interval, as one line.

    >>> rec = {"sampling": {"windows": 40, "interval": 5000, "window": 1000,
    ...        "estimate": {"ipc": 0.25, "ipc_ci95_low": 0.24, "ipc_ci95_high": 0.26}}}
    >>> sampling_line(rec)[:60]
    'sampled: IPC 0.2500 [0.2400, 0.2600] (95 % CI, 40 windows of'
    >>> sampling_line({"sampling": {"windows": 0, "interval": 5000, "window": 1000,
    ...                "estimate": "none: no window was completed"}})
    'sampled: no estimate (none: no window was completed)'
    >>> rec["sampling"]["automatic"] = True
    >>> sampling_line(rec)[-48:]
    'sim.sampling.interval = 0 runs it all in detail)'

    Several cores: each core's cycles and IPC are estimates too.

    >>> rec["sampling"]["cores"] = [{}, {}]
    >>> "each core's cycles and IPC are estimated too" in sampling_line(rec)
    True
    """
    s = rec["sampling"]
    e = s["estimate"]
    if not isinstance(e, dict):
        return f"sampled: no estimate ({e})"
    high = e.get("ipc_ci95_high")
    high_text = f"{high:.4f}" if high is not None else "unbounded"
    low = e.get("ipc_ci95_low")
    interval = f" [{low:.4f}, {high_text}]" if low is not None else ""
    why = (
        "; sampled because the run is long: sim.sampling.interval = 0 runs it all in detail"
        if s.get("automatic")
        else ""
    )
    cores = (
        "; each core's cycles and IPC are estimated too, from its part of the windows "
        "(sampling.cores)"
        if s.get("cores")
        else ""
    )
    return (
        f"sampled: IPC {e['ipc']:.4f}{interval} (95 % CI, {s['windows']} windows of "
        f"{s['window']:,} per {s['interval']:,} refs; TLB, walk and cache figures cover every "
        f"reference{cores}{why})"
    )


def cmd_compare(args: argparse.Namespace) -> int:
    if args.designs is None:
        names = designs()
    else:
        names = [d.strip() for d in args.designs.split(",") if d.strip()]
        if not names:
            raise UsageError(f"--designs names no design (got '{args.designs}'); omit it for all")
    if args.report:
        try:
            figure_width(args.figure_width)
        except ValueError as e:
            raise UsageError(str(e)) from None
    if args.baseline and args.baseline not in names:
        raise UsageError(f"--baseline {args.baseline} is not among the compared designs {names}")
    _validate(args, names)
    fmt = _stats_format(args)
    recs = compare(names, progress=_progress(args), **_kwargs(args))
    if fmt == "json":
        print(json.dumps(recs))
    elif fmt == "txt":
        _print_stats_text(recs)
    else:
        print(format_table(table_rows(recs, args.baseline, args.metric)))
        if len(recs) > 1:
            print()
            print("\n".join(speedup_notes(recs, args.baseline, args.metric)))
    if args.report:
        try:
            paths = write_report(recs, args.report, args.baseline, width=args.figure_width)
        except OSError as e:
            message = commands.report_dir_error(args.report, e)
            raise UsageError(message.replace("--out", "--report", 1)) from None
        print(f"report written: {paths['html']} and {paths['markdown']}", file=sys.stderr)
    return 0


def speedup_notes(recs: list[dict], baseline: str | None, metric: str) -> list[str]:
    """The lines under ``xlat compare``'s table, printed once: how the speedups' 95 % intervals
    were derived and each speedup whose interval contains 1.0, or ``no interval: one unsampled
    run`` (:func:`xlat.intervals.notes`).

    >>> recs = [{"design": "radix", "timing": {"cycles": 10.0}},
    ...         {"design": "ideal", "timing": {"cycles": 8.0}}]
    >>> speedup_notes(recs, None, "cycles")
    ['no interval: one unsampled run']
    """
    from xlat.intervals import notes, record_estimates

    return notes(record_estimates(recs, baseline, metric))


def cmd_config(args: argparse.Namespace) -> int:
    if args.config_command == "keys":
        print("\n".join(_core.config_keys()))
        return 0
    try:
        text, sources, warns = resolve_config_sources(
            args.preset,
            args.cpu,
            design=args.design,
            profile=args.profile,
            set=_parse_set(args.set),
        )
    except _core.XlatError as e:
        raise UsageError(str(e)) from None
    print(text, end="")
    print(config_sources_text(text, sources), end="")
    for w in warns:
        print(f"xlat: warning: {w}", file=sys.stderr)
    return 0


def config_sources_text(toml_text: str, sources: dict[str, str]) -> str:
    """The trailer of ``xlat config show``: every key that differs from the built-in default,
    its value and where it came from, as TOML comments (the output stays valid TOML).

    Examples
    --------
    >>> print(config_sources_text('[os]\\npolicy = "eager"\\n', {"os.policy": "profile:rmm"}))
    <BLANKLINE>
    # Settings that differ from the built-in defaults, and where each came from
    # (cpu: --cpu preset; profile: the design's paper's settings; preset; set: --set):
    #   os.policy = "eager"  <- profile:rmm
    <BLANKLINE>
    """
    if not sources:
        return "\n# Every setting is the built-in default.\n"
    tree = tomllib.loads(toml_text)
    lines = [
        "",
        "# Settings that differ from the built-in defaults, and where each came from",
        "# (cpu: --cpu preset; profile: the design's paper's settings; preset; set: --set):",
    ]
    for key, source in sources.items():
        node: Any = tree
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        value = json.dumps(node) if node is not None else "?"
        lines.append(f"#   {key} = {value}  <- {source}")
    return "\n".join(lines) + "\n"


def print_designs(verbose: bool, long: bool) -> None:
    """``xlat designs``: names; ``-v`` with summaries; ``--long`` with each design's profile."""
    if not long:
        for name, summary in _core.designs():
            print(f"{name:<16} {summary}" if verbose else name)
        return
    summaries = dict(_core.designs())
    for p in design_profiles():
        print(f"{p['name']:<16} {summaries[p['name']]}")
        print(f"{'':<16} profile: {p['settings']}")
        print(f"{'':<16}   ({p['summary']}; {p['paper']})")
    print()
    print("Baseline profiles (--profile NAME / sim.profile; --profile none: no profile):")
    for p in baseline_profiles():
        print(f"{p['name']:<16} {p['settings']}")
        print(f"{'':<16}   ({p['summary']}; {p['paper']})")


def _size(n: int) -> str:
    """Bytes as the largest whole binary unit, e.g. ``32MiB``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"


def cpu_rows() -> list[dict[str, str]]:
    """One row per CPU preset: name, L1 DTLB, L2 TLB, LLC, core clock and description, read
    from the configuration each preset resolves to (what a run would use)."""
    rows = []
    for name in cpus():
        cfg = tomllib.loads(resolve_config(cpu=name))
        tlb, mem = cfg["tlb"], cfg["mem"]
        if tlb["l1_organization"] in ("any_size", "split_any_size"):
            a = tlb["l1_any"]
            assoc = "fully assoc." if a["ways"] >= a["entries"] else f"{a['ways']}-way"
            l1 = f"{a['entries']} any-size, {assoc}"
            if tlb["l1_organization"] == "split_any_size":
                l1 = f"{tlb['l1_4k']['entries']}x4K + {l1}"
        else:
            l1 = "+".join(
                f"{tlb[k]['entries']}x{size}"
                for k, size in (("l1_4k", "4K"), ("l1_2m", "2M"), ("l1_1g", "1G"))
                if tlb[k]["entries"]
            )
        l2 = tlb["l2"]
        llc = mem["llc"]
        rows.append(
            {
                "name": name,
                "l1_dtlb": l1,
                "l2_tlb": f"{l2['entries']}, {l2['ways']}-way",
                "llc": f"{_size(llc['size_bytes'])}, {llc['ways']}-way",
                "clock": f"{mem['dram']['core_clock_mhz'] / 1000:g} GHz",
                "description": cpu_description(name),
            }
        )
    return rows


def cmd_cpus(args: argparse.Namespace) -> int:
    if not cpus():
        raise _core.XlatError(
            f"no CPU presets found (looked for *.toml in {', '.join(map(str, cpu_dirs()))}); this "
            "installation of xlat lacks its data files: reinstall it from a wheel made by "
            "`make wheel`"
        )
    if args.names:
        print("\n".join(cpus()))
        return 0
    try:
        rows = cpu_rows()
    except _core.XlatError as e:
        raise UsageError(str(e)) from None
    head = {
        "name": "NAME",
        "l1_dtlb": "L1 DTLB",
        "l2_tlb": "L2 TLB",
        "llc": "LLC",
        "clock": "CLOCK",
        "description": "DESCRIPTION",
    }
    keys = list(head)
    widths = {k: max(len(r[k]) for r in [head, *rows]) for k in keys[:-1]}
    for r in [head, *rows]:
        print("  ".join(r[k].ljust(widths[k]) for k in keys[:-1]) + "  " + r["description"])
    return 0


#: Options whose value may start with '-' (a negative number is an error the configuration
#: reports by key; argparse would otherwise take ``-1MiB`` for an option and print its usage).
VALUE_OPTIONS = ("--footprint", "--refs", "--seed", "--warmup")


def _join_dash_values(argv: list[str]) -> list[str]:
    """``--footprint -1MiB`` as ``--footprint=-1MiB``.

    Examples
    --------
    >>> _join_dash_values(["run", "--footprint", "-1MiB", "--refs", "1k"])
    ['run', '--footprint=-1MiB', '--refs', '1k']
    """
    out: list[str] = []
    for arg in argv:
        if out and out[-1] in VALUE_OPTIONS and arg.startswith("-") and arg[1:2].isdigit():
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def _show_warnings_as_xlat_lines() -> None:
    """Print the runs' warnings (:class:`xlat.run.FirstTouchWarning`) as ``xlat: warning: ...``
    lines on stderr, each time (a compare warns once per design)."""
    import warnings

    from xlat.run import FirstTouchWarning

    warnings.simplefilter("always", FirstTouchWarning)

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"xlat: warning: {message}", file=file or sys.stderr)

    warnings.showwarning = show


def _take_debug(argv: list[str]) -> tuple[list[str], bool]:
    """``argv`` without ``--debug`` (wherever it stands before a ``--``), and whether it was there.

    Examples
    --------
    >>> _take_debug(["run", "--debug", "--json"])
    (['run', '--json'], True)
    >>> _take_debug(["trace", "record", "--", "prog", "--debug"])
    (['trace', 'record', '--', 'prog', '--debug'], False)
    """
    end = argv.index("--") if "--" in argv else len(argv)
    head = [a for a in argv[:end] if a != "--debug"]
    return head + argv[end:], len(head) != end


#: Exit code of an unexpected error (a bug in xlat; ``--debug`` prints its traceback).
EXIT_INTERNAL = 3


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``xlat`` command; returns the exit code.

    No Python traceback reaches the user: an error the commands do not turn into their own
    message is one ``xlat: error:`` line (exit code 1 for a system problem such as a full disk,
    :data:`EXIT_INTERNAL` for a bug), with the traceback only under ``--debug``."""
    argv, debug = _take_debug(sys.argv[1:] if argv is None else list(argv))
    try:
        return _main(_join_dash_values(argv))
    except Exception as e:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        if debug:
            traceback.print_exc()
        code, text = unexpected_error(e)
        hint = "" if debug else " (--debug prints the traceback)"
        print(f"xlat: error: {text}{hint}", file=sys.stderr)
        return code


def unexpected_error(e: BaseException) -> tuple[int, str]:
    """Exit code and message of an error no command turned into its own message.

    Examples
    --------
    >>> unexpected_error(OSError(28, "No space left on device", "/d/x.json"))
    (1, '/d/x.json: No space left on device')
    >>> unexpected_error(KeyError("vmas"))  # doctest: +ELLIPSIS
    (3, "internal error (a bug in xlat, please report it): KeyError: 'vmas'")
    """
    if isinstance(e, OSError):
        where = f"{e.filename}: " if e.filename else ""
        return 1, f"{where}{e.strerror or e}"
    if isinstance(e, MemoryError):
        return 1, "out of memory"
    if isinstance(e, RecursionError):
        return 2, "the input is nested too deeply to read"
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return EXIT_INTERNAL, (
        f"internal error (a bug in xlat, please report it): {type(e).__name__}"
        + (f": {first}" if first else "")
    )


def _main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    _show_warnings_as_xlat_lines()
    try:
        if args.command == "designs":
            print_designs(args.verbose, args.long)
            return 0
        if args.command == "workloads":
            for name, summary in _core.workloads():
                print(f"{name:<14} {summary}" if args.verbose else name)
            return 0
        if args.command == "config":
            return cmd_config(args)
        if args.command == "cpus":
            return cmd_cpus(args)
        if args.command == "trace":
            return trace_cli.main(args)
        if args.command == "corpus":
            return corpus.main(args)
        if args.command == "snapshot":
            return snapshot.main(args)
        if args.command == "analyze":
            return analyze.main(args)
        if args.command in commands.COMMANDS:
            return commands.COMMANDS[args.command](args)
        if args.preset is not None:
            try:
                load_preset(args.preset)
            except _core.XlatError as e:
                raise UsageError(str(e)) from None
        if args.command == "run":
            return cmd_run(args)
        return cmd_compare(args)
    except (UsageError, *commands.USAGE_ERRORS) as e:
        print(f"xlat: error: {e}", file=sys.stderr)
        return 2
    except _core.XlatError as e:
        print(f"xlat: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("xlat: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
