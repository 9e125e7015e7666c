"""``xlat reproduce PAPER --workloads real|both``: a paper's experiments on the recorded real
programs in the place of the built-in generators (issue 39, item 4).

What this module owns: turning an experiment's sweep spec (:func:`xlat.reproduce.experiment_spec`)
into trace-file sweeps, one per recorded program, and saying what stood for what.

- **Which recording stands for which generator:** :data:`xlat.corpus.COUNTERPARTS`, one row per
  program, only where the generator models the program's own kernel. A workload without one (a
  generator no program is recorded for, e.g. ``sysbench``, ``btree``, ``pointer_chase``; a
  multi-programmed mix such as ``gups,xsbench``) is dropped from the experiment; an experiment
  left without a workload is skipped (:func:`plan`).
- **Where the recordings are:** ``CORPUS_DIR/PROGRAM.xlat``, as ``xlat corpus record --out
  CORPUS_DIR`` writes them (default :data:`xlat.corpus.DEFAULT_OUT`). A missing one is an error
  naming the program and the command that records it (:func:`check_traces`), raised before
  anything runs.
- **Footprint and run length:** a recording has its own footprint (the program at the
  ``--scale`` it was recorded at), which labels its runs; the experiment's ``footprint`` (its
  generators') does not apply, and a footprint axis collapses to the recording's one point.
  Settings sized for the generators' footprint (the paper's ``scale_with_footprint`` keys:
  physical memory, Utopia's RestSegs) are kept as they are. The warm-up is the recording's own
  first-touch phase (:func:`first_touch_refs`), or none where the experiment measures from the
  first reference (``warmup = "0"``); ``refs`` is the experiment's, and a recording that ends
  first ends the run (:func:`substitution_table` shows each one's numbers).
- **Keeping the two apart:** the runs go to their own store, ``real/`` beside the generators'
  (:func:`real_db`), so that a rerun of either resumes and each source's claims are computed from
  its own runs; the ``{store}`` files of an experiment (Leshy's hints) are kept apart with them.
- **Claims:** a claim is computed from the recorded programs' runs as from the generators'
  (:func:`real_paper` renames a ``workload.name`` selection to the recording's file name);
  :func:`claim_note` says why a claim has no figure (no counterpart, or a selection of the
  generators' footprint) or which recordings its figure comes from. Grades stay the generators'.

May call: :mod:`xlat.corpus` (the counterparts), :mod:`xlat.values`, :mod:`xlat.trace_cli`
(sizes), the core's trace summary; never :mod:`xlat.reproduce`, which calls it (the experiments'
specs come in as arguments). Contract: with ``workloads = "generators"`` nothing here is called,
and ``xlat reproduce`` runs and prints as before.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlat import corpus


class RealWorkloadsError(ValueError):
    """A run on the recorded programs that cannot start (a missing recording, a bad source);
    ``xlat reproduce`` reports it as its own error (exit code 2)."""


#: The values of ``xlat reproduce --workloads`` (and of ``reproduce(workloads=...)``).
SOURCES = ("generators", "real", "both")
#: The share of a trace's pages by which its first-touch phase is over, and the most of its
#: references that phase may take: ``sim.warmup_refs = "auto"``'s rule for a trace
#: (crates/xlat/src/trace/summary.rs, ``WARMUP_FOOTPRINT_SHARE``, ``WARMUP_MAX_TRACE_SHARE``).
WARMUP_FOOTPRINT_SHARE = 0.9
WARMUP_MAX_TRACE_SHARE = 0.5


@dataclass(frozen=True)
class Stand:
    """A recorded program standing for a generator in one experiment."""

    generator: str
    program: str
    #: ``CORPUS_DIR/PROGRAM.xlat`` as the user named the folder.
    trace: Path


@dataclass
class ExperimentPlan:
    """What runs of experiment ``name`` on the recorded programs: ``stands`` (one sweep each),
    ``dropped`` (workload, why); ``run`` False when the experiment is not run at all (``--quick``
    skips it, or ``experiments`` leaves it out), whatever the source."""

    name: str
    run: bool
    workloads: list[str]
    footprint: Any
    stands: list[Stand] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def skipped(self) -> bool:
        """Run, but no workload of it has a recording to stand for it."""
        return self.run and not self.stands


def check_source(workloads: str) -> str:
    """``workloads`` when it is one of :data:`SOURCES`; a RealWorkloadsError otherwise.

    Examples
    --------
    >>> check_source("both")
    'both'
    """
    if workloads not in SOURCES:
        raise RealWorkloadsError(
            f"--workloads must be one of {', '.join(SOURCES)}, got {workloads!r}"
        )
    return workloads


def real_db(db: str | Path) -> Path:
    """The store of the recorded programs' runs: ``real/`` beside the generators' store, same
    file name (kept apart so that each source resumes and its claims read its own runs).

    Examples
    --------
    >>> str(real_db("out/reproduce.duckdb"))
    'out/real/reproduce.duckdb'
    """
    db = Path(db)
    return db.parent / "real" / db.name


def drop_reason(workload: str) -> str | None:
    """Why ``workload`` (an experiment's entry) has no recording to stand for it; None when it
    has one.

    Examples
    --------
    >>> drop_reason("gups") is None, drop_reason("sysbench")
    (True, 'no recorded program stands for the sysbench generator')
    >>> drop_reason("gups,xsbench")
    'a multi-programmed mix: a trace run replays one recording'
    """
    if "," in workload:
        return "a multi-programmed mix: a trace run replays one recording"
    if corpus.counterpart_of(workload) is None:
        return f"no recorded program stands for the {workload} generator"
    return None


def plan(
    specs: list[tuple[str, bool, dict[str, Any]]], corpus_dir: str | Path
) -> list[ExperimentPlan]:
    """Each experiment on the recorded programs of ``corpus_dir``: ``specs`` holds, per
    experiment, its name, whether it runs at all and its generators' sweep spec
    (:func:`xlat.reproduce.experiment_spec`); which recording stands for which of its workloads
    and which are dropped. Reads no file.

    Examples
    --------
    >>> spec = {"workloads": ["gups", "sysbench"], "footprint": ["32GiB", "64GiB"]}
    >>> (p,) = plan([("scale", True, spec)], "corpus")
    >>> [(s.generator, str(s.trace)) for s in p.stands], p.footprint
    ([('gups', 'corpus/gups.xlat')], ['32GiB', '64GiB'])
    >>> p.dropped
    [('sysbench', 'no recorded program stands for the sysbench generator')]
    """
    out = []
    for name, run, spec in specs:
        workloads = list(spec.get("workloads", []))
        p = ExperimentPlan(name, run, workloads, spec.get("footprint"))
        for w in workloads:
            reason = drop_reason(w)
            if reason is not None:
                p.dropped.append((w, reason))
                continue
            program = corpus.counterpart_of(w)
            p.stands.append(Stand(w, program, Path(corpus_dir) / f"{program}.xlat"))
        out.append(p)
    return out


def check_traces(plans: list[ExperimentPlan], corpus_dir: str | Path) -> None:
    """Return when every recording the run plans need is there; a ReproduceError naming each
    missing program, what it stands for, and the one command that records them otherwise."""
    missing: dict[str, Stand] = {}
    for p in plans:
        for s in p.stands if p.run else []:
            if not s.trace.is_file():
                missing.setdefault(s.program, s)
    if not missing:
        return
    what = "; ".join(
        f"{s.program} (for the {s.generator} generator): {s.trace} is missing"
        for s in missing.values()
    )
    command = f"xlat corpus record {' '.join(missing)} --out {corpus_dir}"
    raise RealWorkloadsError(
        f"no recording of {what}; record {'it' if len(missing) == 1 else 'them'}"
        f" with `{command}` (default --scale {corpus.DEFAULT_SCALE}, the test size; add --scale "
        "SIZE for a larger footprint), or name another folder with --corpus-dir"
    )


@dataclass(frozen=True)
class TraceFacts:
    """What a recording holds: references, footprint, first-touch phase, and (from
    ``NAME.json`` beside it, when there) the scale and seed it was recorded at."""

    refs: int
    footprint_bytes: int
    first_touch_refs: int
    scale: int | None = None
    seed: int | None = None


def first_touch_refs(summary: dict[str, Any]) -> int:
    """The references of a trace's first-touch phase, from its summary's ``touch_curve``: the
    first point where 90 % of its pages were touched, at most half of its references (the rule
    of ``sim.warmup_refs = "auto"`` for a trace, without ``auto``'s cap at ``sim.refs``, which
    on a recording longer than the experiment's ``refs`` would warm up only part of the phase).
    0 for a summary without a curve.

    Examples
    --------
    >>> s = {"refs": 1000, "footprint_pages": 10,
    ...      "touch_curve": {"refs": [100, 200, 400], "pages": [5, 9, 10]}}
    >>> first_touch_refs(s), first_touch_refs({**s, "refs": 300})
    (200, 150)
    """
    curve = summary.get("touch_curve")
    if not curve:
        return 0
    total = int(summary["refs"])
    want = math.ceil(int(summary["footprint_pages"]) * WARMUP_FOOTPRINT_SHARE)
    at = next((int(r) for r, n in zip(curve["refs"], curve["pages"]) if int(n) >= want), total)
    return min(at, int(total * WARMUP_MAX_TRACE_SHARE))


def trace_facts(path: str | Path) -> TraceFacts:
    """The :class:`TraceFacts` of recording ``path`` (its stored summary; ``NAME.json``)."""
    from xlat import _core

    path = Path(path)
    text = _core.trace_stored_summary(str(path), None) or _core.trace_info(str(path), None)
    summary = json.loads(text)
    meta: dict[str, Any] = {}
    try:
        meta = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    return TraceFacts(
        int(summary["refs"]),
        int(summary["footprint_bytes"]),
        first_touch_refs(summary),
        meta.get("scale"),
        meta.get("seed"),
    )


def warmup_refs(spec: dict[str, Any], facts: TraceFacts) -> int:
    """The warm-up of a recording's runs in an experiment of spec ``spec``: none when the
    experiment measures from the first reference (``warmup = "0"``), else the recording's
    first-touch phase (the experiment's own warm-up covers its generators' first touches at its
    footprint, which says nothing of a recording's).

    Examples
    --------
    >>> f = TraceFacts(refs=1000, footprint_bytes=4096, first_touch_refs=300)
    >>> warmup_refs({"warmup": "0"}, f), warmup_refs({"warmup": "1M"}, f), warmup_refs({}, f)
    (0, 300, 300)
    """
    from xlat.values import parse_count

    w = spec.get("warmup")
    if w is not None and not isinstance(w, list) and parse_count(str(w)) == 0:
        return 0
    return facts.first_touch_refs


def real_spec(spec: dict[str, Any], stand: Stand, facts: TraceFacts) -> dict[str, Any]:
    """The sweep spec of ``stand``'s recording in an experiment of generators' spec ``spec``:
    every key but the workloads, the footprint, the warm-up and the per-workload start states
    (``workload_set``: a page-size mix sized for the generator's footprint, not the
    recording's) kept; the trace in their place, and the spec's name marked with the program.

    Examples
    --------
    >>> spec = {"name": "tps-thp_res", "designs": ["radix"], "workloads": ["gups"],
    ...         "footprint": "4GiB", "warmup": "1.2M", "refs": "4M"}
    >>> f = TraceFacts(refs=10**6, footprint_bytes=1 << 20, first_touch_refs=1234)
    >>> s = real_spec(spec, Stand("gups", "gups", Path("/c/gups.xlat")), f)
    >>> s["traces"], s["warmup"], s["refs"], "footprint" in s, s["name"]
    (['/c/gups.xlat'], '1234', '4M', False, 'tps-thp_res-real-gups')
    """
    dropped = ("workloads", "footprint", "warmup", "workload_set")
    out = {k: v for k, v in spec.items() if k not in dropped}
    out["traces"] = [str(stand.trace.resolve())]
    out["warmup"] = str(warmup_refs(spec, facts))
    out["name"] = f"{spec.get('name', 'experiment')}-real-{stand.program}"
    return out


def trace_name(generator: str) -> str | None:
    """The ``workload`` (and ``workload.name``) of the runs of the recording standing for
    ``generator``: the trace's file name. None without a counterpart.

    Examples
    --------
    >>> trace_name("kmer"), trace_name("sysbench")
    ('jellyfish.xlat', None)
    """
    program = corpus.counterpart_of(generator)
    return None if program is None else f"{program}.xlat"


def _renamed(values: dict[str, Any] | None) -> dict[str, Any] | None:
    """A claim's or baseline's ``set`` with a ``workload.name`` selection renamed to the
    recording's file name (unchanged without a counterpart: it then selects no run)."""
    if not values or "workload.name" not in values:
        return values
    name = trace_name(str(values["workload.name"]))
    return {**values, "workload.name": name or values["workload.name"]}


def real_paper(paper: dict[str, Any]) -> dict[str, Any]:
    """``paper`` with the selections of its claims and baseline statistics read on the
    recorded programs' runs: ``workload.name`` renamed (:func:`_renamed`). A selection of
    ``workload.footprint`` is kept: it selects none of them (:func:`claim_note` says why)."""
    out = dict(paper)
    for key in ("claim", "baseline"):
        if key in paper:
            out[key] = [
                {**c, **{k: _renamed(c[k]) for k in ("set", "baseline_set") if k in c}}
                for c in paper[key]
            ]
    return out


def _sides(block: dict[str, Any]) -> list[list[str]]:
    """The experiments a claim reads, per side: its ``experiment`` and, when it has one, its
    ``baseline_experiment`` (each a name or a list of pooled names)."""
    out = []
    for key in ("experiment", "baseline_experiment"):
        v = block.get(key)
        if v:
            out.append([v] if isinstance(v, str) else list(v))
    return out


def claim_note(block: dict[str, Any], plans: list[ExperimentPlan]) -> tuple[str, str]:
    """``(reason, used)`` for a claim (or a baseline statistic) computed on the recorded
    programs: ``reason`` why it can have no figure (empty when it can), ``used`` the programs
    its figure comes from (those both its sides ran), with ``only`` when some of its
    generators had none.

    Examples
    --------
    >>> plans = plan([("main", True, {"workloads": ["gups", "xsbench"]}),
    ...               ("scale", True, {"workloads": ["gups", "sysbench"]}),
    ...               ("tree", True, {"workloads": ["btree"]})], "corpus")
    >>> claim_note({"experiment": "main"}, plans), claim_note({"experiment": "scale"}, plans)
    (('', 'gups, xsbench'), ('', 'gups only'))
    >>> claim_note({"experiment": "main", "baseline_experiment": "tree"}, plans)
    ('no recording stands for btree', '')
    >>> claim_note({"experiment": ["main", "tree"]}, plans)  # pooled: main's recordings
    ('', 'gups, xsbench only')
    >>> claim_note({"experiment": "scale", "set": {"workload.footprint": 2**35}}, plans)[0]
    "selects the generators' footprint, 32.0 GiB: a recording has its own"
    """
    from xlat.trace_cli import human_bytes

    for key in ("set", "baseline_set"):
        size = (block.get(key) or {}).get("workload.footprint")
        if size is not None:
            size = human_bytes(int(size))
            return f"selects the generators' footprint, {size}: a recording has its own", ""
    by_name = {p.name: p for p in plans}
    sides = [[by_name[e] for e in side if e in by_name and by_name[e].run]
             for side in _sides(block)]  # fmt: skip
    if not all(sides):
        return "", ""  # not run at all (--quick, experiments): "not run", as for the generators
    for side in sides:
        if all(p.skipped for p in side):
            dropped = sorted({w for p in side for w, _ in p.dropped})
            return f"no recording stands for {', '.join(dropped)}", ""
    selected = (block.get("set") or {}).get("workload.name")
    if selected is not None:
        program = corpus.counterpart_of(str(selected))
        return ("", program) if program else (f"no recording stands for {selected}", "")
    programs = set.intersection(*({s.program for p in side for s in p.stands} for side in sides))
    partial = any(p.dropped for side in sides for p in side)
    return "", ", ".join(sorted(programs)) + (" only" if partial else "")


def _count_text(n: int) -> str:
    """A count of references, short.

    Examples
    --------
    >>> _count_text(1221826), _count_text(123456), _count_text(999)
    ('1.22 M', '123 k', '999')
    """
    if n >= 10**6:
        return f"{n / 10**6:.2f} M"
    return f"{n / 10**3:.0f} k" if n >= 10**3 else str(n)


def substitution_rows(
    plans: list[ExperimentPlan], specs: dict[str, dict[str, Any]], facts: dict[str, TraceFacts]
) -> list[dict[str, Any]]:
    """One row per workload of each experiment run: what stood for it (the recording, its
    footprint, references, warm-up and the most references measured) or why it was dropped;
    ``specs`` are the generators' specs by experiment, ``facts`` the recordings' by program."""
    from xlat.values import parse_count

    rows = []
    for p in plans:
        if not p.run:
            continue
        spec = specs[p.name]
        for s in p.stands:
            f = facts[s.program]
            warm = warmup_refs(spec, f)
            left = max(0, f.refs - warm)
            refs = spec.get("refs")
            measured = min(left, parse_count(str(refs))) if refs is not None else left
            rows.append({"experiment": p.name, "generator": s.generator,
                         "footprint": p.footprint, "program": s.program, "trace": str(s.trace),
                         "scale": f.scale, "seed": f.seed,
                         "trace_footprint_bytes": f.footprint_bytes, "trace_refs": f.refs,
                         "warmup_refs": warm, "measured_refs": measured,
                         "dropped": ""})  # fmt: skip
        for w, why in p.dropped:
            rows.append({"experiment": p.name, "generator": w, "footprint": p.footprint,
                         "program": None, "dropped": why})  # fmt: skip
        if p.skipped:
            rows.append({"experiment": p.name, "generator": None, "footprint": p.footprint,
                         "program": None, "dropped": "experiment skipped: no workload of it "
                         "has a recording"})  # fmt: skip
    return rows


#: What the substitution table's note says of footprints, warm-ups and the store.
SUBSTITUTION_NOTE = (
    "Each recording has its own footprint (the program at the `--scale` it was recorded at, "
    "here the trace's pages): the experiment's footprint is its generators' and does not apply "
    "(a footprint axis collapses to the recording's one point), and settings sized for it "
    "(physical memory, Utopia's RestSegs: the paper's `scale_with_footprint`) are kept as they "
    "are. Warm-up: the recording's first-touch phase (90 % of its pages touched, at most half "
    'of it: the rule of `sim.warmup_refs = "auto"` for a trace), or none where the experiment '
    "measures from the first reference; then at most the experiment's `refs`, fewer when the "
    "recording ends first. Which program stands for which generator, and why: "
    "`COUNTERPARTS` in python/xlat/corpus.py (docs/workloads.md, 'Real programs')."
)


def substitution_table(rows: list[dict[str, Any]]) -> str:
    """The table of :func:`substitution_rows` (markdown), then :data:`SUBSTITUTION_NOTE`.

    Examples
    --------
    >>> rows = [{"experiment": "main", "generator": "gups", "footprint": "8GiB",
    ...          "program": "gups", "trace": "c/gups.xlat", "scale": 1048576, "seed": 1,
    ...          "trace_footprint_bytes": 1400832, "trace_refs": 1221826, "warmup_refs": 300000,
    ...          "measured_refs": 921826, "dropped": ""},
    ...         {"experiment": "main", "generator": "sysbench", "footprint": "8GiB",
    ...          "program": None, "dropped": "no recorded program stands for it"}]
    >>> print(substitution_table(rows).splitlines()[2])  # doctest: +NORMALIZE_WHITESPACE
    | main | gups (8GiB) | gups: c/gups.xlat (--scale 1.0 MiB, seed 1) | 1.3 MiB | 1.22 M
      | 300 k | 922 k |
    >>> print(substitution_table(rows).splitlines()[3])
    | main | sysbench (8GiB) | dropped: no recorded program stands for it |  |  |  |  |
    """
    from xlat.trace_cli import human_bytes

    lines = [
        "| experiment | generator (its footprint) | recorded program: trace | trace footprint "
        "| trace references | warm-up | measured, at most |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        fp = r["footprint"]
        fp = ", ".join(map(str, fp)) if isinstance(fp, list) else fp
        gen = f"{r['generator']} ({fp})" if r["generator"] and fp else (r["generator"] or "")
        if r["program"] is None:
            lines.append(f"| {r['experiment']} | {gen} | dropped: {r['dropped']} |  |  |  |  |")
            continue
        made = []
        if r.get("scale"):
            made.append(f"--scale {human_bytes(r['scale'])}")
        if r.get("seed") is not None:
            made.append(f"seed {r['seed']}")
        where = f"{r['program']}: {r['trace']}" + (f" ({', '.join(made)})" if made else "")
        cells = [r["experiment"], gen, where, human_bytes(r["trace_footprint_bytes"]),
                 _count_text(r["trace_refs"]), _count_text(r["warmup_refs"]),
                 _count_text(r["measured_refs"])]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + ["", SUBSTITUTION_NOTE])


#: The note under a claims table with the recorded programs' column (``--workloads both``).
BOTH_NOTE = (
    "*xlat: generators*: the experiments on the built-in generators, as the ledger runs them; "
    "*xlat: real programs*: the same experiments with each generator replaced by the recording "
    "of the real program that stands for it (the table of recordings above), computed the same "
    "way. Effect ratios and grades are the generators' column's: the real programs' figures are "
    "not graded (their footprints are the recordings', not the experiments'). '(P only)': some "
    "of the claim's generators have no recording, the figure comes from P's; '—': none has, or "
    "the claim selects the generators' footprint."
)
#: The note under a claims table of the recorded programs alone (``--workloads real``).
REAL_NOTE = (
    "*xlat: real programs*: the experiments with each generator replaced by the recording of "
    "the real program that stands for it (the table of recordings above). Not graded: grades "
    "are the generators' (`--workloads generators`, the ledger); the effect ratio is shown "
    "for reading. '(P only)': some of the claim's generators have no recording, the figure "
    "comes from P's; '—': none has, or the claim selects the generators' footprint."
)
