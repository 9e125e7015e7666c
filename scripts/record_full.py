#!/usr/bin/env python3
"""Record the last full runs' figures in the claims files: every claim's and baseline
statistic's ``full`` and the paper's ``full_run``, from a result store that holds the full runs
(``xlat reproduce PAPER --db DB``; nothing is simulated here: a run missing from the store is an
error). The page docs/reproduction.md and ``xlat reproduce --recorded`` grade these figures.

Usage::

    xlat reproduce all --db out/full.duckdb            # the full runs (resumable)
    python scripts/record_full.py --db out/full.duckdb --commit "$(git rev-parse --short HEAD)" all

Figures are written with three decimals (claims, as docs/reproduction.md prints them) or four
significant digits (baseline statistics, e.g. 137.2 cycles). The file is edited in place, line
by block: comments and layout stay, a ``full`` line is replaced where it is, and a block
without one gets it after its ``id``.

The recorded real programs' figures of the headline claims (issue 39, item 4; the ledger's
column beside the generators'), from the runs of ``xlat reproduce PAPER --workloads real``::

    xlat reproduce all --workloads real --corpus-dir DIR --db out/full.duckdb
    python scripts/record_full.py --workloads real --corpus-dir DIR --db out/full.duckdb \
        --commit "$(git rev-parse --short HEAD)" all

write each headline claim's ``full_real`` and the paper's ``real_run`` (the command, commit,
date and each recording's scale, footprint and references); the generators' figures stay.

The paper-scale runs' figures (issue 36, item 4; ``xlat reproduce PAPER --paper-scale``)::

    xlat reproduce all --paper-scale --db out/paper.duckdb      # hours; resumable
    python scripts/record_full.py --paper-scale --db out/paper.duckdb --commit COMMIT all

write ``full_paper`` for each claim whose experiments all have a paper-scale form, and the
paper's ``paper_run``; the ledger's section "At the papers' scale" grades them. With
``--experiment NAME`` (one paper; the runs of ``xlat reproduce PAPER --paper-scale --experiment
NAME``) only the claims that read only those experiments get new figures, and ``paper_run``
keeps its text with the rerun experiments' commit and cost appended.
"""

from __future__ import annotations

import argparse
import datetime
import math
import re
import sys
from pathlib import Path

from xlat import reproduce as rp


def _fmt_claim(x: float) -> str:
    return f"{x:.3f}"


def _fmt_stat(x: float) -> str:
    return f"{x:.4g}" if abs(x) < 1e4 else f"{x:.0f}"


def rewrite(
    text: str,
    figures: dict[tuple[str, str], str],
    full_run: str,
    key: str = "full",
    run_key: str = "full_run",
) -> str:
    """``text`` (a claims file) with each ``[[claim]]`` / ``[[baseline]]`` block's ``full`` set
    from ``figures`` (keyed by block kind and id; a block not in it keeps its line) and the
    ``full_run`` line replaced (``key``, ``run_key``: other keys, e.g. ``full_real`` and
    ``real_run``; a missing ``run_key`` line is added after ``full_run``'s).

    >>> t = 'full_run = "old"\\n[[claim]]\\nid = "a"\\nfull = 1.0\\n'
    >>> t += '[[baseline]]\\nid = "b"\\nx = 1\\n'
    >>> print(rewrite(t, {("claim", "a"): "2.000", ("baseline", "b"): "137.2"}, "new"), end="")
    full_run = "new"
    [[claim]]
    id = "a"
    full = 2.000
    [[baseline]]
    id = "b"
    full = 137.2
    x = 1
    >>> print(rewrite(t, {("claim", "a"): "1.5"}, "r", "full_real", "real_run"), end="")
    full_run = "old"
    real_run = "r"
    [[claim]]
    id = "a"
    full_real = 1.5
    full = 1.0
    [[baseline]]
    id = "b"
    x = 1
    """
    if run_key != "full_run" and not re.search(rf"^{run_key} = ", text, re.M):
        text = re.sub(r"^(full_run = .*\n)", rf"\g<1>{run_key} = \n", text, count=1, flags=re.M)
    blocks: list[list[str]] = [[]]
    for line in text.splitlines(keepends=True):
        if re.match(r"\[\[\w+\]\]\s*$", line):
            blocks.append([])
        blocks[-1].append(line)
    out = []
    for block in blocks:
        head = re.match(r"\[\[(claim|baseline)\]\]", block[0]) if block else None
        ident = next((m.group(1) for ln in block if (m := re.match(r'id = "([^"]+)"', ln))), None)
        value = figures.get((head.group(1), ident)) if head else None
        if value is not None:
            at = [i for i, ln in enumerate(block) if ln.startswith(f"{key} = ")]
            if at:
                block[at[0]] = f"{key} = {value}\n"
            else:
                i = next(i for i, ln in enumerate(block) if ln.startswith("id = "))
                block.insert(i + 1, f"{key} = {value}\n")
        out += [f"{run_key} = {_toml_str(full_run)}\n" if ln.startswith(f"{run_key} = ") else ln
                for ln in block]  # fmt: skip
    return "".join(out)


def drop_key(text: str, key: str, ids: set[str]) -> str:
    """``text`` (a claims file) without the ``key`` line of each ``[[claim]]`` block whose id
    is in ``ids`` (a figure whose new runs carry no interval loses the old one).

    >>> t = '[[claim]]\\nid = "a"\\nfull_paper_ci95 = [1.0, 1.1]\\n[[claim]]\\nid = "b"\\n'
    >>> print(drop_key(t, "full_paper_ci95", {"a"}), end="")
    [[claim]]
    id = "a"
    [[claim]]
    id = "b"
    """
    out, ident = [], None
    for line in text.splitlines(keepends=True):
        if re.match(r"\[\[\w+\]\]\s*$", line):
            ident = None
        if m := re.match(r'id = "([^"]+)"', line):
            ident = m.group(1)
        if ident in ids and line.startswith(f"{key} = "):
            continue
        out.append(line)
    return "".join(out)


def _reads_only(block: dict, ran: set[str]) -> bool:
    """Whether a claim or baseline block reads only experiments in ``ran`` (its ``experiment``
    and ``baseline_experiment``, each a name or a list).

    >>> _reads_only({"experiment": "main", "baseline_experiment": ["main"]}, {"main"})
    True
    >>> _reads_only({"experiment": ["main", "scale"]}, {"main"})
    False
    """
    names = set(rp.experiments_read(block))
    return bool(names) and names <= ran


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("papers", nargs="+", help="paper names, or all")
    ap.add_argument("--db", required=True, help="result store holding the full runs")
    ap.add_argument("--commit", required=True, help="the commit the runs were made at")
    ap.add_argument("--note", default="", help="appended to each paper's full_run text")
    ap.add_argument(
        "--experiment",
        action="append",
        metavar="NAME",
        help="rerun and record only this experiment (repeatable; one paper): the claims and "
        "baseline statistics that read only these experiments get new figures, the others keep "
        "theirs, and full_run says which experiments were recorded at --commit",
    )
    ap.add_argument(
        "--workloads",
        choices=["generators", "real"],
        default="generators",
        help="record the generators' figures (full, default) or the recorded programs' of the "
        "headline claims (full_real; the runs of `xlat reproduce --workloads real`)",
    )
    ap.add_argument("--corpus-dir", help="with --workloads real: the recordings' folder")
    ap.add_argument(
        "--paper-scale",
        action="store_true",
        help="record the paper-scale runs' figures (full_paper) of the claims whose experiments "
        "all have a paper-scale form (the runs of `xlat reproduce PAPER --paper-scale`)",
    )
    args = ap.parse_args()
    names = rp.papers() if args.papers == ["all"] else args.papers
    if args.experiment and len(names) != 1:
        ap.error("--experiment needs exactly one paper")
    if args.paper_scale:
        if args.workloads != "generators":
            ap.error("--paper-scale takes no --workloads real")
        return record_paper(names, args)
    if args.workloads == "real":
        if args.experiment or not args.corpus_dir:
            ap.error("--workloads real needs --corpus-dir and takes no --experiment")
        return record_real(names, args)
    today = datetime.date.today().isoformat()
    for name in names:
        # The figures must come from runs made at the commit named: a run missing from the
        # store is simulated by the resumed sweep (at this tree), and then nothing is written.
        result = _stored(name, args, f"xlat reproduce {name} --db {args.db}",
                         experiments=args.experiment)  # fmt: skip
        if isinstance(result, int):
            return result
        ran = set(args.experiment or [e["name"] for e in result["paper"]["experiment"]])
        figures = {}
        for c, row in zip(result["paper"]["claim"], result["claims"]):
            if math.isfinite(row["ours"]) and _reads_only(c, ran):
                figures[("claim", row["id"])] = _fmt_claim(row["ours"])
        blocks = {b["id"]: b for b in result["paper"].get("baseline", [])}
        for b in rp.baseline_rows(result["paper"], result["frames"]):
            if math.isfinite(b["ours"]) and _reads_only(blocks.get(b["id"], {}), ran):
                figures[("baseline", b["id"])] = _fmt_stat(b["ours"])
        if args.experiment:
            # Only some experiments were rerun: the earlier full_run text stays, with these.
            run = (f"{result['paper'].get('full_run', '')}; experiments "
                   f"{', '.join(sorted(ran))} rerun at commit {args.commit}, {today}"
                   + (f" ({args.note})" if args.note else ""))  # fmt: skip
        else:
            run = (f"the last full runs' figures: `xlat reproduce {name}` at commit "
                   f"{args.commit}, {today}, {models_text(result['frames'])} "
                   f"(claims to 3 decimals)" + (f"; {args.note}" if args.note else ""))  # fmt: skip
        # The cost of the runs read (issue 36, item 4): the ledger prints it with the figures.
        which = "the rerun experiments" if args.experiment else "the runs"
        run += f"; what {which} cost: {rp.cost_text(result['cost'])}"
        _write(result, figures, run, "full", "full_run", "full-run")
    return 0


def models_text(frames: dict) -> str:
    """The timing and DRAM models the stored runs used, as the records say (``timing.model``;
    the resolved ``config.mem.dram.model`` is ``queued`` in a queued run's record, and not in
    an idle one's;
    ``timing.model`` is ``ooo`` in an out-of-order run's and absent in a ``simple`` one's).

    >>> import pandas as pd
    >>> f = pd.DataFrame({"status": ["ok", "ok"], "timing.model": ["ooo", "ooo"],
    ...                   "config.mem.dram.model": [None, None]})
    >>> models_text({"main": f})
    'timing.model = ooo with the idle DRAM model'
    >>> models_text({"main": f.assign(**{"config.mem.dram.model": ["queued", None]})})
    'timing.model = ooo with the queued and the idle DRAM model'
    >>> models_text({"main": f.assign(model_version=[1, 1])})
    'timing.model = ooo with the idle DRAM model, model version 1'

    (Runs made before records carried ``model_version`` name none.)
    """
    timing, dram, versions = set(), set(), set()
    for df in frames.values():
        if df is None or len(df) == 0:
            continue
        ok = df[df["status"] == "ok"]
        # `timing.model` is written by the out-of-order core only.
        col = ok["timing.model"] if "timing.model" in ok else [None] * len(ok)
        timing |= {"ooo" if v == "ooo" else "simple" for v in col}
        key = "config.mem.dram.model"
        col = ok[key] if key in ok else [None] * len(ok)
        dram |= {"queued" if v == "queued" else "idle" for v in col}
        if "model_version" in ok:
            versions |= {int(v) for v in ok["model_version"].dropna()}
    kinds = " and the ".join(sorted(dram, reverse=True)) or "no"
    text = f"timing.model = {', '.join(sorted(timing)) or 'unknown'} with the {kinds} DRAM model"
    if versions:
        text += f", model version {', '.join(map(str, sorted(versions)))}"
    return text


def _stored(name: str, args, rerun: str, **kwargs) -> dict | int:
    """Paper ``name``'s result from the runs stored in ``args.db`` (``rp.reproduce`` with
    ``kwargs``), or the exit status when it cannot be recorded: 2 on a bad paper file, 1 when a
    run failed or was not in the store (it was simulated now, at this tree, not at the commit
    named; ``rerun`` is the command that stores it)."""
    try:
        result = rp.reproduce(name, db=args.db, progress="errors", **kwargs)
    except rp.ReproduceError as e:
        print(e, file=sys.stderr)
        return 2
    if result["failed"] or result["simulated"]:
        print(f"{name}: {result['failed']} runs failed and {result['simulated']} were not in "
              f"{result.get('db', args.db)} (simulated now, at this tree): nothing written; run "
              f"`{rerun}` first and name its commit", file=sys.stderr)  # fmt: skip
        return 1
    return result


def _write(result: dict, figures: dict, run: str, key: str, run_key: str, what: str) -> None:
    """Write ``figures`` (as ``key``) and ``run`` (as ``run_key``) into the paper's file."""
    path = Path(result["paper"]["path"])
    path.write_text(rewrite(path.read_text(encoding="utf-8"), figures, run, key, run_key),
                    encoding="utf-8")  # fmt: skip
    print(f"{result['paper']['name']}: {len(figures)} {what} figures written to {path}")


def record_paper(names: list[str], args) -> int:
    """``--paper-scale``: each claim's ``full_paper`` and the paper's ``paper_run`` (command,
    commit, date, what the runs cost) from the stored runs of ``xlat reproduce PAPER
    --paper-scale``; a claim reading an experiment without a paper-scale form gets none."""
    today = datetime.date.today().isoformat()
    for name in names:
        only = "".join(f" --experiment {e}" for e in args.experiment or [])
        result = _stored(name, args, f"xlat reproduce {name} --paper-scale{only} --db {args.db}",
                         paper_scale=True, experiments=args.experiment)  # fmt: skip
        if isinstance(result, int):
            return result
        ran = set(args.experiment or [e["name"] for e in result["paper"]["experiment"]])
        figures, intervals, no_interval = {}, {}, set()
        for c, row in zip(result["paper"]["claim"], result["claims"]):
            if (math.isfinite(row["ours"]) and rp.claim_at_paper_scale(result["paper"], c)
                    and _reads_only(c, ran)):  # fmt: skip
                figures[("claim", row["id"])] = _fmt_claim(row["ours"])
                # Sampled runs give the figure a 95 % interval (issue 40, item 3).
                low, high = row["ci95_low"], row["ci95_high"]
                if math.isfinite(low) and math.isfinite(high):
                    intervals[("claim", row["id"])] = f"[{_fmt_claim(low)}, {_fmt_claim(high)}]"
                else:
                    no_interval.add(row["id"])
        if args.experiment:
            # Only some experiments were rerun: the earlier paper_run text stays, with these.
            run = (f"{result['paper'].get('paper_run', '')}; experiments "
                   f"{', '.join(sorted(ran))} rerun at commit {args.commit}, {today}, "
                   f"{models_text(result['frames'])}; what the rerun experiments cost: "
                   f"{rp.cost_text(result['cost'])}"
                   + (f" ({args.note})" if args.note else ""))  # fmt: skip
        else:
            run = (f"the paper-scale runs' figures: `xlat reproduce {name} --paper-scale` at "
                   f"commit {args.commit}, {today}, {models_text(result['frames'])}; what the "
                   f"runs cost: {rp.cost_text(result['cost'])}"
                   + (f"; {args.note}" if args.note else ""))  # fmt: skip
        _write(result, figures, run, "full_paper", "paper_run", "paper-scale")
        path = Path(result["paper"]["path"])
        text = drop_key(path.read_text(encoding="utf-8"), "full_paper_ci95", no_interval)
        text = rewrite(text, intervals, run, "full_paper_ci95", "paper_run")
        path.write_text(text, encoding="utf-8")
        if intervals:
            print(f"{name}: {len(intervals)} paper-scale 95 % intervals written to {path}")
    return 0


def recordings_text(rows: list[dict]) -> str:
    """The recordings a real-programs run used, once each: trace, scale, seed, footprint and
    references (``xlat.reproduce_real.substitution_rows``).

    >>> recordings_text([{"program": "gups", "trace": "c/gups.xlat", "scale": 1048576,
    ...     "seed": 1, "trace_footprint_bytes": 1400832, "trace_refs": 1221826}])
    'c/gups.xlat (--scale 1.0 MiB, seed 1: footprint 1.3 MiB, 1,221,826 references)'
    """
    from xlat.trace_cli import human_bytes

    seen = {}
    for r in rows:
        if r.get("program") and r["program"] not in seen:
            scale = f"--scale {human_bytes(r['scale'])}, " if r.get("scale") else ""
            seed = f"seed {r['seed']}: " if r.get("seed") is not None else ""
            seen[r["program"]] = (
                f"{r['trace']} ({scale}{seed}footprint {human_bytes(r['trace_footprint_bytes'])}"
                f", {r['trace_refs']:,} references)"
            )
    return "; ".join(seen[k] for k in sorted(seen))


def record_real(names: list[str], args) -> int:
    """``--workloads real``: each headline claim's ``full_real`` and the paper's ``real_run``,
    from the stored runs of ``xlat reproduce PAPER --workloads real`` (a run missing from the
    store is an error, as for the generators)."""
    today = datetime.date.today().isoformat()
    for name in names:
        rerun = (f"xlat reproduce {name} --workloads real --corpus-dir {args.corpus_dir} --db "
                 f"{args.db}")  # fmt: skip
        result = _stored(name, args, rerun, workloads="real", corpus_dir=args.corpus_dir)
        if isinstance(result, int):
            return result
        figures = {("claim", row["id"]): _fmt_claim(row["ours"]) for row in result["claims"]
                   if row["headline"] and math.isfinite(row["ours"])}  # fmt: skip
        run = (f"the recorded programs' figures of the headline claims: `xlat reproduce {name} "
               f"--workloads real --corpus-dir {args.corpus_dir}` at commit {args.commit}, "
               f"{today}, timing.model = ooo; recordings: "
               f"{recordings_text(result['recordings'])}"
               + (f"; {args.note}" if args.note else ""))  # fmt: skip
        _write(result, figures, run, "full_real", "real_run", "real-program")
    return 0


if __name__ == "__main__":
    sys.exit(main())
