"""``xlat reproduce PAPER``: a paper's experiments through the sweep machinery, and its headline
claims beside ours.

A paper is two files of the package's data (:func:`xlat._data.data_dir`; in a clone also at the
repository's root, ``configs/`` and ``data/claims/``):

- ``configs/papers/PAPER.toml``: the paper's table of parameters as a preset (the machine, the
  OS state), applied beneath every run of its experiments;
- ``claims/PAPER.toml``: ``title``, ``preset`` (the first file's path, relative to the data
  folder), ``scaling`` (how the experiments are
  scaled to this machine, printed in the report), then

  - ``[[experiment]]`` tables: ``name``, ``figure``, ``description`` and the keys of a sweep spec
    (docs/sweeps.md: ``designs``, ``workloads``, ``footprint``, ``warmup``, ``refs``, ``seeds``,
    ``set``; not ``preset``), with an ``[experiment.quick]`` table that derives the quick run
    from the full one (:func:`quick_spec`, :data:`QUICK_KEYS`; issue 36, item 3): factors of
    ``footprint``, ``refs`` and ``warmup`` (default the paper's ``quick_scale`` table, else 1),
    ``only`` (the full grid's points kept: a subset of ``workloads``, of a ``footprint`` list or
    of a swept ``set`` key's values), and nothing else: every other setting is the full run's,
    except the keys the paper lists in ``scale_with_footprint`` (sizes relative to the
    footprint: physical memory, Utopia's RestSegs), which are scaled by the footprint's factor
    so that their ratio to the footprint is the full run's (``skip = true``: ``--quick`` does
    not run the experiment, and no ``quick`` claim may use it), and optionally an
    ``[experiment.paper]`` table: the experiment at the paper's own scale, which
    ``--paper-scale`` runs (:data:`PAPER_KEYS`, :func:`paper_spec`; issue 36, item 4);
  - ``[[baseline]]`` tables (issue 36, item 5): statistics of the paper's own baseline shown
    beside xlat's before the claims (:func:`baseline_section`), not graded: ``id``, ``text``,
    ``ref``, ``paper`` (a number or ``[low, high]``), ``figure`` (optionally ``per`` another
    figure of the run, or a share of the figures in ``of``), ``experiment``, ``design``
    (default radix), ``set``, optionally ``derived``, ``note``, or ``kind = "speedup"`` with
    ``baseline_set`` (e.g. THP over 4 KiB pages);
  - ``[[claim]]`` tables: ``id``, ``text``, ``ref`` (section / table / figure), ``paper`` (the
    paper's number as a ratio: a speedup, or ``0.08`` for "-92 %"), ``kind`` = ``speedup``
    (time of ``baseline`` / time of ``design``, time by ``metric`` ``cycles`` or ``total``),
    ``ratio`` (``figure`` of ``design`` / of ``baseline``) or ``value`` (``figure`` of
    ``design`` itself, no baseline: e.g. L2P entries used), ``effect`` (how it is graded:
    ``speedup``, ``reduction``, ``increase`` or ``value``, :data:`EFFECTS`), ``counts`` (what the
    paper's figure counts: for a speedup ``core cycles``, ``core cycles + OS time`` or ``OS
    time``), ``full`` (the last full run's figure, recorded: what the page grades and what the
    quick smoke test's direction is checked against; the paper's ``full_run`` says when),
    optionally ``headline`` (a number of the paper's abstract) and ``derived`` (how a figure the
    paper does not print was derived), ``experiment``, ``set`` (the values
    of swept keys that select the runs) and optionally ``baseline_set`` (other values for the
    baseline's runs), ``baseline_experiment`` (the baseline's runs come from that experiment:
    for a design whose machine or OS policy differs from its baseline's), ``mean`` =
    ``"arithmetic"`` (average the per-workload ratios arithmetically, as papers average "misses
    eliminated"; a ratio may be 0; ``"max"``: the best grid point, for a paper's "up to";
    default geometric), ``quick`` (checked by ``--quick``), ``note`` (optional: the regime the
    figure is measured in and how it depends on it, e.g. the footprint; printed beneath the
    claims table). A ``set`` value of a size key (``workload.footprint``) is in bytes, as the
    store has it.
    ``experiment`` and ``baseline_experiment`` may also be lists of names: their runs are pooled
    (a geomean over stand-ins that need different footprints). ``kind`` = ``share``: ``figure``
    of ``design``'s own runs over the sum of the figures listed in ``of`` (the same runs), e.g.
    the share of memory mapped by 32 MiB translations; no baseline.
  - optionally ``claims_note`` / ``tables_note`` (the report's notes under the claims table
    and above the data tables; default ME-HPT's) and a ``[table]``: ``baseline`` (the design
    the data tables' speedups are over, default ``radix``) and ``columns`` (``[label, figure,
    scale, format]`` rows: a figure's column divided by ``scale``; default the page-table
    columns of ME-HPT; a fifth item, a list of figures, makes the column the figure's share of
    their sum, divided by ``scale``); an experiment's ``baseline_experiment`` names the
    experiment whose baseline rows its table divides by;
    ``axes``: more ``config`` keys shown as columns where they vary (e.g. ``os.fmfi_target``).

A design issue adds its paper by adding these two files: the command finds them by name.
Every experiment is a sweep stored in the result store (``--db``), so a second run resumes:
stored runs are skipped. Ours is the geometric mean over the workloads (and seeds) of the
experiment's runs that match ``set``; its *effect ratio* to the paper's figure
(:func:`effect_ratio`) gets a grade from :data:`GRADE_TABLE`, the one table of thresholds.

``--quick`` runs each experiment's ``quick`` variant as a smoke test: it grades nothing and
fails (exit 1) when a ``quick = true`` claim's figure lies on the other side of 1 than its
recorded ``full`` figure: the CI check (tests/test_reproduce.py). ``--recorded`` grades the
recorded ``full`` figures without running anything (docs/reproduction.md).

``--workloads real`` runs the experiments on the recorded real programs in the generators'
place, ``both`` on both (issue 39, item 4; :mod:`xlat.reproduce_real`, which owns the
substitution): the claims table then has a column of each, graded on the generators' only. A
claim's ``full_real`` is the recorded programs' figure of its last such run and the paper's
``real_run`` says which recordings it used (``scripts/record_full.py --workloads real``; the
ledger shows them beside ``full`` for the headline claims, :func:`headline_sources`).
"""

from __future__ import annotations

import math
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from xlat._data import data_dir
from xlat.sweeps import SpecError, frame_of, parse_spec, run_sweep

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

#: The package's data folder: claims in ``claims/``, the papers' presets in ``configs/papers/``.
DATA = data_dir()
CLAIMS_DIR = DATA / "claims"
#: Keys of an experiment that are not sweep-spec keys.
EXPERIMENT_META = (
    "name", "figure", "description", "quick", "paper", "baseline_experiment", "page_size_mix",
)  # fmt: skip
#: Keys of an experiment's ``[experiment.page_size_mix]`` table (:func:`page_size_mix_set`).
MIX_KEYS = ("shares", "extra_shares", "slack_share", "source")
CLAIM_KEYS = {
    "id", "text", "ref", "paper", "kind", "metric", "figure", "design", "baseline",
    "experiment", "set", "baseline_set", "baseline_experiment", "mean", "quick", "note", "of",
    "effect", "counts", "headline", "derived", "full", "full_ci95", "full_real", "full_paper",
    "full_paper_ci95",
}  # fmt: skip
#: What a speedup's paper figure may count (``counts``; issue 36, item 6).
TIME_COUNTS = ("core cycles", "core cycles + OS time", "OS time")


class ReproduceError(ValueError):
    """A paper file that cannot be used; the message names the file and the problem."""


def papers() -> list[str]:
    """Names of the papers with a claims file (``claims/*.toml`` in the package's data).

    Examples
    --------
    >>> "mehpt" in papers()
    True
    """
    return sorted(p.stem for p in CLAIMS_DIR.glob("*.toml"))


def no_papers_message() -> str:
    """What to say when no paper is installed (an installation without its data files)."""
    return (
        f"no papers found: {CLAIMS_DIR} has no claims files (*.toml); this installation of "
        "xlat lacks its data files: reinstall it from a wheel made by `make wheel`"
    )


def load_paper(name: str) -> dict[str, Any]:
    """The claims file of paper ``name``, checked (ReproduceError naming the file otherwise).

    Examples
    --------
    >>> p = load_paper("mehpt")
    >>> [e["name"] for e in p["experiment"]], p["claim"][0]["id"]
    (['main', 'footprint', 'scale'], 'contiguous')
    """
    path = CLAIMS_DIR / f"{name}.toml"
    if not path.is_file():
        known = ", ".join(papers())
        if not known:
            raise ReproduceError(no_papers_message())
        raise ReproduceError(f"no paper '{name}': known papers are {known}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ReproduceError(f"{path}: not valid TOML: {e}") from None
    for key in ("title", "preset", "scaling", "experiment", "claim"):
        if key not in data:
            raise ReproduceError(f"{path}: '{key}' is missing")
    if not (DATA / data["preset"]).is_file():
        raise ReproduceError(f"{path}: preset '{data['preset']}' not found")
    names = [e.get("name") for e in data["experiment"]]
    for e in data["experiment"]:
        _check_quick(path, data, e)
        _check_paper_scale(path, e)
        unknown = set(e.get("page_size_mix", {})) - set(MIX_KEYS)
        if unknown:
            raise ReproduceError(
                f"{path}: experiment {e.get('name')}: page_size_mix: unknown keys "
                f"{sorted(unknown)}; it takes {', '.join(MIX_KEYS)}"
            )
    if data.get("baseline") is not None:
        _check_baselines(path, data, names)
    for c in data["claim"]:
        unknown = set(c) - CLAIM_KEYS
        if unknown:
            raise ReproduceError(f"{path}: claim {c.get('id')}: unknown keys {sorted(unknown)}")
        for key in ("experiment", "baseline_experiment"):
            if key in c or key == "experiment":
                listed = c.get(key) if isinstance(c.get(key), list) else [c.get(key)]
                if not listed or any(e not in names for e in listed):
                    raise ReproduceError(
                        f"{path}: claim {c.get('id')}: {key} '{c.get(key)}' is not one of {names}"
                    )
        if c.get("mean", "geometric") not in ("geometric", "arithmetic", "max"):
            raise ReproduceError(
                f"{path}: claim {c.get('id')}: mean must be geometric, arithmetic or max"
            )
        skipped = {e["name"] for e in data["experiment"] if e.get("quick", {}).get("skip")}
        used = experiments_read(c)
        if c.get("quick") and skipped.intersection(used):
            raise ReproduceError(
                f"{path}: claim {c.get('id')}: quick, but its experiments "
                f"{sorted(skipped.intersection(used))} are skipped by --quick"
            )
        if c.get("kind") not in ("speedup", "ratio", "value", "share"):
            raise ReproduceError(
                f"{path}: claim {c.get('id')}: kind must be speedup, ratio, value or share"
            )
        if c["kind"] in ("speedup", "ratio") and "baseline" not in c:
            raise ReproduceError(f"{path}: claim {c.get('id')}: 'baseline' is missing")
        if c["kind"] != "speedup" and "figure" not in c:
            raise ReproduceError(f"{path}: claim {c.get('id')}: 'figure' is missing")
        if c.get("kind") == "share" and not (c.get("figure") and c.get("of")):
            raise ReproduceError(f"{path}: claim {c.get('id')}: a share needs figure and of")
        if not isinstance(c.get("paper"), (int, float)) or c["paper"] <= 0:
            raise ReproduceError(f"{path}: claim {c.get('id')}: 'paper' must be a positive ratio")
        _check_grading(path, c)
    data["path"] = str(path)
    data["name"] = name
    return data


def _check_quick(path: Path, paper: dict[str, Any], exp: dict[str, Any]) -> None:
    """An experiment's quick table (:data:`QUICK_KEYS`): factors in (0, 1], ``only`` a subset of
    the full run's grid; the paper's ``quick_scale`` and ``scale_with_footprint``."""
    where = f"{path}: experiment {exp.get('name')}: quick"
    quick = exp.get("quick", {})
    unknown = set(quick) - set(QUICK_KEYS)
    if unknown:
        raise ReproduceError(
            f"{where}: unknown keys {sorted(unknown)}; a quick run differs from the full run "
            f"only by {', '.join(QUICK_KEYS)} (issue 36: quick is derived from full)"
        )
    for table, label in ((quick, where), (paper.get("quick_scale", {}), f"{path}: quick_scale")):
        for k, v in table.items():
            if k in QUICK_FACTORS and not (isinstance(v, (int, float)) and 0 < v <= 1):
                raise ReproduceError(f"{label}: {k} must be a factor in (0, 1], got {v!r}")
        if table is not quick and set(table) - set(QUICK_FACTORS):
            raise ReproduceError(f"{label}: keys are {', '.join(QUICK_FACTORS)}")
    if not all(isinstance(k, str) for k in paper.get("scale_with_footprint", [])):
        raise ReproduceError(f"{path}: scale_with_footprint must list configuration keys")
    for key, keep in quick.get("only", {}).items():
        full = exp.get(key) if key in ("workloads", "footprint") else exp.get("set", {}).get(key)
        full = full if isinstance(full, list) else [full]
        if key == "footprint":
            from xlat.values import parse_size

            full = [parse_size(str(v)) for v in full]
            keep = [parse_size(str(v)) for v in keep]
        if not isinstance(keep, list) or not keep or any(v not in full for v in keep):
            raise ReproduceError(
                f"{where}: only.{key} = {keep!r} is not a subset of the full run's {full!r}"
            )


def _check_grading(path: Path, c: dict[str, Any]) -> None:
    """The keys that grade a claim: ``effect`` (one of :data:`EFFECTS`, consistent with ``kind``
    and with the side of ``paper``), ``counts`` (what the paper's figure counts; for a speedup one
    of :data:`TIME_COUNTS`), optionally ``full`` (the last full run's figure: the direction the
    quick smoke test checks), ``headline`` (a number of the paper's abstract) and ``derived`` (how
    a figure the paper does not print was derived from those it does)."""
    cid, effect, paper = c.get("id"), c.get("effect"), c["paper"]
    if effect not in EFFECTS:
        raise ReproduceError(f"{path}: claim {cid}: effect must be one of {', '.join(EFFECTS)}")
    expected = {"speedup": ("speedup",), "ratio": ("reduction", "increase"),
                "value": ("value",), "share": ("value",)}[c["kind"]]  # fmt: skip
    if effect not in expected:
        raise ReproduceError(
            f"{path}: claim {cid}: a {c['kind']} claim's effect is one of {expected}"
        )
    if (effect == "reduction" and paper >= 1) or (effect != "value" and paper == 1):
        raise ReproduceError(f"{path}: claim {cid}: paper {paper} has no {effect} to grade")
    if effect == "increase" and paper <= 1:
        raise ReproduceError(f"{path}: claim {cid}: paper {paper} is no increase")
    if not isinstance(c.get("counts"), str) or not c["counts"]:
        raise ReproduceError(f"{path}: claim {cid}: 'counts' (what the paper counts) is missing")
    if c["kind"] == "speedup" and c["counts"] not in TIME_COUNTS:
        raise ReproduceError(f"{path}: claim {cid}: counts must be one of {TIME_COUNTS}")
    if "full" in c and not isinstance(c["full"], (int, float)):
        raise ReproduceError(f"{path}: claim {cid}: 'full' must be the full run's figure")
    if "full_paper" in c and not isinstance(c["full_paper"], (int, float)):
        raise ReproduceError(
            f"{path}: claim {cid}: 'full_paper' must be the paper-scale run's figure"
        )
    for key in ("full_ci95", "full_paper_ci95"):
        ci = c.get(key)
        if ci is not None and not (
            isinstance(ci, list) and len(ci) == 2
            and all(isinstance(x, (int, float)) for x in ci) and ci[0] <= ci[1]
        ):  # fmt: skip
            raise ReproduceError(f"{path}: claim {cid}: '{key}' must be [low, high], got {ci!r}")
    if "full_paper_ci95" in c and "full_paper" not in c:
        raise ReproduceError(f"{path}: claim {cid}: 'full_paper_ci95' without 'full_paper'")
    if "full_real" in c and not isinstance(c["full_real"], (int, float)):
        raise ReproduceError(
            f"{path}: claim {cid}: 'full_real' must be the recorded programs' run's figure"
        )
    if c.get("quick") and "full" not in c:
        raise ReproduceError(
            f"{path}: claim {cid}: quick, but no 'full' figure to check its direction against"
        )


#: Keys of an experiment's ``[experiment.paper]`` table (issue 36, item 4): the experiment at
#: the paper's own scale, run by ``xlat reproduce PAPER --paper-scale``. ``source`` (required:
#: where in the paper each figure comes from), ``footprint`` (absolute: the paper's, or the
#: largest this machine's memory allows, which ``source`` then says), ``refs`` and ``warmup``
#: (the paper's length; 20 M measured references and more are sampled by default,
#: docs/timing.md "Sampled simulation"), ``workloads`` (the paper's workloads that xlat has a
#: generator for; every one of the full run's stays), ``set`` (single values of settings the
#: paper states for its machine, e.g. its physical memory, which then replace what
#: ``scale_with_footprint`` would make of the full run's; ``source`` says where the paper states
#: each), ``skip`` (no paper-scale form: the experiment is left out and the claims reading it
#: are not graded). Every other setting is the full run's; the paper's ``scale_with_footprint``
#: keys follow the footprint as in quick runs unless ``set`` names them.
PAPER_KEYS = ("source", "footprint", "refs", "warmup", "workloads", "set", "skip")


def _check_paper_scale(path: Path, exp: dict[str, Any]) -> None:
    """An experiment's ``[experiment.paper]`` table (:data:`PAPER_KEYS`): known keys, a
    ``source``, a footprint of the full run's shape (one size, or a list of as many), and
    ``workloads`` that keep every one of the full run's."""
    table = exp.get("paper")
    if table is None:
        return
    where = f"{path}: experiment {exp.get('name')}: paper"
    unknown = set(table) - set(PAPER_KEYS)
    if unknown:
        raise ReproduceError(
            f"{where}: unknown keys {sorted(unknown)}; a paper-scale run differs from the full "
            f"run only by {', '.join(PAPER_KEYS[1:])}"
        )
    if not isinstance(table.get("source"), str) or not table["source"].strip():
        raise ReproduceError(f"{where}: 'source' (where the paper states this scale) is missing")
    if table.get("skip"):
        return
    if "footprint" in table:
        full, ours = exp.get("footprint"), table["footprint"]
        if isinstance(full, list) != isinstance(ours, list) or (
            isinstance(full, list) and len(full) != len(ours)
        ):
            raise ReproduceError(
                f"{where}: footprint {ours!r} must have the full run's shape ({full!r}): the "
                "points pair up by position"
            )
    fixed = table.get("set", {})
    if not isinstance(fixed, dict) or any(
        not isinstance(k, str) or isinstance(v, (list, dict)) for k, v in fixed.items()
    ):
        raise ReproduceError(
            f"{where}: set must map configuration keys to single values (the paper's machine); "
            "a list would change the full run's grid"
        )
    swept = [k for k in fixed if isinstance(exp.get("set", {}).get(k), list)]
    if swept:
        raise ReproduceError(f"{where}: set names {swept}, which the full run sweeps")
    if "workloads" in table:
        full = exp.get("workloads", [])
        full = full if isinstance(full, list) else [full]
        missing = [w for w in full if w not in table["workloads"]]
        if missing:
            raise ReproduceError(
                f"{where}: workloads must keep the full run's; {missing} are missing"
            )


def at_paper_scale(exp: dict[str, Any]) -> bool:
    """Whether experiment ``exp`` has a paper-scale form (an ``[experiment.paper]`` table that
    does not skip it)."""
    return "paper" in exp and not exp["paper"].get("skip")


def paper_spec(paper: dict[str, Any], exp: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """The paper-scale variant of full spec ``spec`` (experiment ``exp``, see :data:`PAPER_KEYS`):
    its table's footprint, length and workloads; the paper's ``scale_with_footprint`` keys scaled
    by the footprint's factor (the first point's, when the footprint is a list: the factor must
    then be the same at every point), then its table's ``set`` (the paper's own machine: it
    replaces a scaled value). Every other setting is the full run's.

    Examples
    --------
    >>> p = load_paper("utopia")
    >>> e = {**p["experiment"][0], "paper": {"source": "s", "footprint": "8GiB", "refs": "200M",
    ...      "workloads": ["gups", "xsbench", "bfs"]}}
    >>> s = paper_spec(p, e, experiment_spec(p, p["experiment"][0], quick=False))
    >>> s["footprint"], s["workloads"], s["refs"], s["warmup"], s["set"]["os.thp"]
    ('8GiB', ['gups', 'xsbench', 'bfs'], '200M', '1M', 'always')
    >>> s["set"]["utopia.restsegs"][:22], s["set"]["os.phys_mem_bytes"]
    ('[{bytes = 536870912, p', '256GiB')
    >>> e["paper"]["set"] = {"os.phys_mem_bytes": "32GiB"}
    >>> s = paper_spec(p, e, experiment_spec(p, p["experiment"][0], quick=False))
    >>> s["set"]["os.phys_mem_bytes"]
    '32GiB'
    """
    from xlat.values import parse_size

    table = exp.get("paper", {})
    out = {**spec, "set": dict(spec.get("set", {}))}
    for key in ("refs", "warmup", "workloads"):
        if key in table:
            out[key] = table[key]
    if "footprint" in table:
        full, ours = spec["footprint"], table["footprint"]
        pairs = list(zip(full, ours)) if isinstance(full, list) else [(full, ours)]
        factors = {parse_size(str(b)) / parse_size(str(a)) for a, b in pairs}
        if len(factors) > 1 and paper.get("scale_with_footprint"):
            raise ReproduceError(
                f"{paper['name']}: experiment {exp['name']}: paper footprints {ours!r} scale the "
                f"full run's {full!r} by different factors, so the keys that follow the "
                f"footprint ({', '.join(paper['scale_with_footprint'])}) cannot follow it"
            )
        out["footprint"] = ours
        factor = factors.pop()
        if factor != 1.0:
            for key in paper.get("scale_with_footprint", []):
                out["set"][key] = _scale_size(_resolved(out, key), factor)
    out["set"].update(table.get("set", {}))
    return out


def experiment_spec(
    paper: dict[str, Any], exp: dict[str, Any], quick: bool, paper_scale: bool = False
) -> dict[str, Any]:
    """The sweep spec of experiment ``exp`` (its quick variant with ``quick``: derived from the
    full run's by :func:`quick_spec`; its paper-scale variant with ``paper_scale``, by
    :func:`paper_spec`, for an experiment that has one).

    Examples
    --------
    >>> p = load_paper("mehpt")
    >>> s = experiment_spec(p, p["experiment"][0], quick=True)
    >>> s["footprint"], s["workloads"], s["preset"].endswith("configs/papers/mehpt.toml")
    ('4GiB', ['gups'], True)
    """
    spec = {k: v for k, v in exp.items() if k not in EXPERIMENT_META}
    spec["preset"] = str(DATA / paper["preset"])
    suffix = ""
    if quick and not exp.get("quick", {}).get("skip"):
        spec = quick_spec(paper, exp, spec)
        suffix = "-quick"
    elif paper_scale and at_paper_scale(exp):
        spec = paper_spec(paper, exp, spec)
        suffix = "-paper"
    if not spec.get("set", True):
        del spec["set"]
    if "page_size_mix" in exp:
        spec["workload_set"] = page_size_mix_set(exp, spec)
    spec["name"] = f"{paper['name']}-{exp['name']}{suffix}"
    return spec


def page_size_mix_set(exp: dict[str, Any], spec: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Each workload's start state for experiment ``exp``'s page-size mix (its
    ``[experiment.page_size_mix]`` table, :data:`MIX_KEYS`), as the sweep's ``workload_set``:
    ``os.free_blocks`` (docs/os.md) with free 2 MiB blocks for ``shares[workload]`` of the
    footprint, 1 MiB blocks for the rest and ``slack_share`` of it more (page tables, the
    designs' own memory), and one free block of ``share`` x footprint per ``extra_shares``
    entry (e.g. Utopia's RestSegs, which the other designs get as more 2 MiB pages, as the
    paper's §7 gives them). Nothing else is free, and no block can merge into a larger one, so
    THP maps at most the share (plus the extra blocks) with 2 MiB pages. The footprint is
    ``spec``'s (after the quick or paper-scale scaling).

    A multi-programmed workload (``gups,xsbench``: one process each, every one of the
    footprint) pools its processes' blocks: the 2 MiB blocks of every process's share, the
    1 MiB blocks of every rest and slack, and the extra blocks once (they stand for memory the
    machine has once, like RestSegs shared by all processes). Which process maps which 2 MiB
    block follows the order of their faults, as from one free list in Linux: each process's
    own share is not enforced, only the machine's total.

    Examples
    --------
    >>> e = {"page_size_mix": {"shares": {"gups": 0.5, "xsbench": 0.25},
    ...      "extra_shares": [0.0625, 0.0625], "slack_share": 0.125}}
    >>> page_size_mix_set(e, {"footprint": "2GiB", "workloads": ["gups"]})
    {'gups': {'os.free_blocks': '128MiB*2,2MiB*512,1MiB*1280'}}
    >>> page_size_mix_set(e, {"footprint": "2GiB", "workloads": ["gups,xsbench"]})
    {'gups,xsbench': {'os.free_blocks': '128MiB*2,2MiB*768,1MiB*3072'}}
    """
    from xlat.values import parse_size

    table = exp["page_size_mix"]
    where = f"experiment {exp.get('name')}: page_size_mix"
    if isinstance(spec.get("footprint"), list):
        raise ReproduceError(f"{where} needs one footprint, got {spec['footprint']!r}")
    footprint = parse_size(str(spec["footprint"]))
    shares = table.get("shares", {})
    extra = [int(footprint * float(x)) for x in table.get("extra_shares", [])]
    slack = int(footprint * float(table.get("slack_share", 0.0)))
    out = {}
    for workload in spec["workloads"]:
        huge = small = 0
        for process in workload.split(","):
            if process not in shares:
                raise ReproduceError(f"{where}: no share for workload '{process}'")
            own = int(footprint * float(shares[process])) >> 21
            huge += own
            small += -(-(footprint - (own << 21) + slack) >> 20)
        items = [f"{_size_text(b)}*{extra.count(b)}" for b in sorted(set(extra), reverse=True)]
        items += [f"2MiB*{huge}", f"1MiB*{small}"]
        out[workload] = {"os.free_blocks": ",".join(items)}
    return out


#: Keys of an experiment's ``[experiment.quick]`` table (issue 36, item 3): the factors that
#: scale the full run's ``footprint``, ``refs`` and ``warmup`` (default the paper's
#: ``quick_scale``, else 1), ``only`` (grid points of the full run the quick run keeps: a subset
#: of its ``workloads``, ``footprint`` list or a swept ``set`` key's values; each kept point
#: runs with the full run's settings) and ``skip``. Nothing else can differ: quick is derived
#: from full (:func:`quick_spec`).
QUICK_KEYS = ("footprint", "refs", "warmup", "only", "skip")
#: The factors of a quick run: footprint, measured references, warm-up references.
QUICK_FACTORS = ("footprint", "refs", "warmup")


def quick_factors(paper: dict[str, Any], exp: dict[str, Any]) -> dict[str, float]:
    """The factors experiment ``exp``'s quick run scales its full run's footprint, references
    and warm-up by: its ``[experiment.quick]`` table's, else the paper's ``quick_scale``, else 1.

    Examples
    --------
    >>> p = load_paper("utopia")
    >>> quick_factors(p, p["experiment"][0])
    {'footprint': 0.5, 'refs': 0.1, 'warmup': 0.5}
    """
    table = {**paper.get("quick_scale", {}), **exp.get("quick", {})}
    return {k: float(table.get(k, 1.0)) for k in QUICK_FACTORS}


def _size_text(n: int) -> str:
    """A size in bytes as the largest binary unit that divides it.

    Examples
    --------
    >>> _size_text(2**30), _size_text(3 * 2**29), _size_text(4097)
    ('1GiB', '1536MiB', '4097')
    """
    for unit, name in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if n % unit == 0:
            return f"{n // unit}{name}"
    return str(n)


def _count_text(n: int) -> str:
    """A count in the sweep specs' notation: ``300k``, ``1.1M``, else the digits.

    Examples
    --------
    >>> _count_text(300000), _count_text(1100000), _count_text(287500)
    ('300k', '1100k', '287500')
    """
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def _scale_size(value: Any, factor: float) -> Any:
    """A size setting scaled by ``factor``: a size (``"20GiB"`` or bytes), a list of them (a
    swept key), or a list of tables with ``bytes`` (e.g. ``utopia.restsegs``; returned as the
    inline TOML text that ``--set`` takes).

    Examples
    --------
    >>> _scale_size("20GiB", 0.5), _scale_size(["72GiB", 80 * 2**30], 0.25)
    ('10GiB', ['18GiB', '20GiB'])
    >>> _scale_size([{"bytes": 2**27, "page_size": "4KiB", "ways": 16}], 0.5)
    '[{bytes = 67108864, page_size = "4KiB", ways = 16}]'
    """
    from xlat.values import parse_size

    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):

        def item(v: Any) -> str:
            return (
                f'"{v}"'
                if isinstance(v, str)
                else str(v).lower()
                if isinstance(v, bool)
                else str(v)
            )

        tables = []
        for t in value:
            t = {**t, "bytes": round(parse_size(str(t["bytes"])) * factor)}
            tables.append("{" + ", ".join(f"{k} = {item(v)}" for k, v in t.items()) + "}")
        return "[" + ", ".join(tables) + "]"
    if isinstance(value, list):
        return [_scale_size(v, factor) for v in value]
    return _size_text(round(parse_size(str(value)) * factor))


def _resolved(spec: dict[str, Any], key: str) -> Any:
    """The value of configuration ``key`` beneath an experiment: its ``set`` value, else the
    preset's (or the built-in default) as the resolved configuration has it."""
    if key in spec.get("set", {}):
        return spec["set"][key]
    from xlat.run import resolve_config_sources

    scalars = {k: v for k, v in spec.get("set", {}).items() if not isinstance(v, list)}
    text, _, _ = resolve_config_sources(preset=spec["preset"], set=scalars)
    node: Any = tomllib.loads(text)
    for part in key.split("."):
        node = node[part]
    return node


def quick_spec(paper: dict[str, Any], exp: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """The quick variant of full spec ``spec`` (experiment ``exp``): the grid points ``only``
    keeps, the footprint, ``refs`` and ``warmup`` scaled by :func:`quick_factors`, and the
    paper's ``scale_with_footprint`` keys (sizes relative to the footprint: physical memory, a
    RestSeg) scaled by the footprint's factor, so that their ratio to the footprint, which
    decides the outcome, is the full run's. Every other setting is the full run's.

    Examples
    --------
    >>> p = load_paper("utopia")
    >>> s = experiment_spec(p, p["experiment"][0], quick=True)
    >>> s["footprint"], s["workloads"], s["warmup"], s["refs"], s["set"]["os.thp"]
    ('1GiB', ['gups'], '500k', '300k', 'always')
    >>> s["set"]["os.phys_mem_bytes"], s["set"]["utopia.restsegs"][:22]
    ('32GiB', '[{bytes = 67108864, pa')
    """
    from xlat.values import parse_count, parse_size

    out = {**spec, "set": dict(spec.get("set", {}))}
    for key, keep in exp.get("quick", {}).get("only", {}).items():
        if key in ("workloads", "footprint"):
            full = out[key] if isinstance(out[key], list) else [out[key]]
            same = (lambda a, b: parse_size(str(a)) == parse_size(str(b))) if key == "footprint" \
                else (lambda a, b: a == b)  # fmt: skip
            out[key] = [v for v in full if any(same(v, k) for k in keep)]
        else:
            full = out["set"][key] if isinstance(out["set"][key], list) else [out["set"][key]]
            out["set"][key] = [v for v in full if v in keep]
    f = quick_factors(paper, exp)
    if "footprint" in out and f["footprint"] != 1.0:
        out["footprint"] = _scale_size(out["footprint"], f["footprint"])
    for key in ("refs", "warmup"):
        if key in out and f[key] != 1.0:
            out[key] = _count_text(round(parse_count(str(out[key])) * f[key]))
    if f["footprint"] != 1.0:
        for key in paper.get("scale_with_footprint", []):
            out["set"][key] = _scale_size(_resolved(out, key), f["footprint"])
    return out


def _select(df, design: str, values: dict[str, Any]):
    rows = df[(df["design"] == design) & (df["status"] == "ok")]
    for key, value in values.items():
        col = f"config.{key}"
        if col in rows.columns:
            rows = rows[rows[col].astype(str) == str(value)]
    return rows


def _time(rows, metric: str):
    t = rows["timing.cycles"].astype(float)
    if metric == "total":
        t = t + rows["timing.os_cycles"].astype(float)
    return t


def _geomean(values) -> float:
    values = [float(v) for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def _paired(d, b):
    """The design's runs ``d`` and the baseline's ``b`` at their common grid points (workload,
    footprint, seed; indexed by those of them both frames have), with the keys; None when they
    share none (e.g. the baseline's experiment was not run: its frame has no columns).

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame([{"workload": "gups", "seed": 1, "x": 1.0}])
    >>> _paired(d, pd.DataFrame()) is None
    True
    >>> _paired(d, d)[2]
    ['workload', 'seed']
    """
    keys = [k for k in ("workload", "config.workload.footprint", "seed")
            if k in d.columns and k in b.columns]  # fmt: skip
    if len(d) == 0 or len(b) == 0 or not keys:
        return None
    d, b = d.set_index(keys), b.set_index(keys)
    common = d.index.intersection(b.index)
    if len(common) == 0:
        return None
    return d.loc[common], b.loc[common], keys


def claim_value(df, claim: dict[str, Any], baseline_df=None) -> float:
    """Ours for ``claim`` from the runs of its experiment (frame ``df``; the baseline's from
    ``baseline_df``, the runs of its ``baseline_experiment``, when the two sides need machines
    that one grid cannot give both): the geometric mean over the grid points (workload,
    footprint, seed) of the per-point ratio; NaN without runs."""
    values = claim.get("set", {})
    d = _select(df, claim["design"], values)
    if len(d) == 0:  # e.g. an experiment --quick or `experiments` did not run
        return float("nan")
    if claim["kind"] == "value":
        return _geomean(d[claim["figure"]].astype(float).tolist())
    if claim["kind"] == "share":  # a figure's share of a total, within the design's own runs
        total = sum(d[f].astype(float).fillna(0.0) for f in claim["of"])
        shares = (d[claim["figure"]].astype(float).fillna(0.0) / total).tolist()
        if claim.get("mean") == "arithmetic":
            finite = [x for x in shares if math.isfinite(x)]
            return sum(finite) / len(finite) if finite else float("nan")
        return _geomean(shares)
    b = _select(df if baseline_df is None else baseline_df, claim["baseline"],
                claim.get("baseline_set", values))  # fmt: skip
    paired = _paired(d, b)
    if paired is None:
        return float("nan")
    d, b, _ = paired
    if claim["kind"] == "speedup":
        metric = claim.get("metric", "cycles")
        ratios = _time(b, metric) / _time(d, metric)
    else:
        fig = claim["figure"]
        ratios = d[fig].astype(float) / b[fig].astype(float)
    if claim.get("mean") == "max":  # the paper's "up to": the best grid point
        finite = [float(r) for r in ratios if math.isfinite(float(r))]
        return max(finite) if finite else float("nan")
    if claim.get("mean") == "arithmetic":  # e.g. "misses eliminated": a ratio can be 0
        finite = [float(r) for r in ratios if math.isfinite(float(r))]
        return sum(finite) / len(finite) if finite else float("nan")
    return _geomean(ratios.tolist())


def claim_estimate(df, claim: dict[str, Any], baseline_df=None):
    """The 95 % interval of ``claim``'s figure from its runs, as an
    :class:`xlat.intervals.LogEstimate` (source ``"none"``: no interval). Only ratios averaged
    geometrically have one (a ``speedup`` or a ``ratio`` claim without ``mean``): per grid
    point (workload, footprint), several seeds give Student's t on the log ratios; one seed of
    a speedup whose runs are sampled gives the delta method on the two runs' cycles, paired
    window by window when both were sampled at the same references
    (:func:`xlat.intervals.pair_estimate`); the points are then combined as the geometric
    mean is (:func:`xlat.intervals.geomean_estimate`). ``value`` and ``share`` claims, the
    "up to" (``mean = "max"``) and arithmetic means have none.

    Examples
    --------
    >>> import pandas as pd
    >>> rows = [{"design": d, "status": "ok", "workload": "gups", "seed": s,
    ...          "timing.cycles": c} for d, s, c in [("radix", 1, 120.0), ("x", 1, 100.0),
    ...          ("radix", 2, 130.0), ("x", 2, 100.0), ("radix", 3, 125.0), ("x", 3, 100.0)]]
    >>> c = {"kind": "speedup", "design": "x", "baseline": "radix"}
    >>> e = claim_estimate(pd.DataFrame(rows), c)
    >>> e.source, [round(v, 3) for v in e.bounds()]
    ('seeds', [1.249, 1.131, 1.38])
    >>> claim_estimate(pd.DataFrame(rows[:2]), c).source  # one unsampled run per side
    'none'
    """
    from xlat import intervals

    nothing = intervals.none(float("nan"))
    if claim["kind"] not in ("speedup", "ratio") or claim.get("mean") in ("max", "arithmetic"):
        return nothing
    values = claim.get("set", {})
    d = _select(df, claim["design"], values)
    b = _select(df if baseline_df is None else baseline_df, claim["baseline"],
                claim.get("baseline_set", values))  # fmt: skip
    paired = _paired(d, b)
    if paired is None:
        return nothing
    d, b, keys = paired
    metric = claim.get("metric", "cycles")
    if claim["kind"] == "speedup":
        ratios = _time(b, metric) / _time(d, metric)
    else:
        ratios = d[claim["figure"]].astype(float) / b[claim["figure"]].astype(float)
    point_keys = [k for k in keys if k != "seed"]
    cells = []
    groups = ratios.groupby(level=point_keys, sort=False) if point_keys else [((), ratios)]
    for _, r in groups:
        errors = None
        if claim["kind"] == "speedup" and len(r) == 1:
            at = r.index[0]
            pair = (b.loc[[at]].iloc[0].to_dict(), d.loc[[at]].iloc[0].to_dict())
            errors = [intervals.pair_estimate(*pair, metric)]
        cells.append(intervals.cell_estimate([float(v) for v in r], errors))
    return intervals.geomean_estimate(cells)


def interval_spans(effect: str, paper: float, low: float, high: float) -> str:
    """What a claim's 95 % interval ``[low, high]`` spans that its point figure hides: 1.0 (no
    effect; not for a ``value``) and grade boundaries (the grades of its two ends); empty when
    it spans neither or there is no interval. Grading stays on the point figure.

    Examples
    --------
    >>> interval_spans("speedup", 1.24, 0.99, 1.03)
    '1.0; grades contradicted to direction only'
    >>> interval_spans("speedup", 1.24, 1.15, 1.25), interval_spans("speedup", 1.24, 1.2, 1.25)
    ('grades partial to reproduced', '')
    """
    from xlat.intervals import contains_one

    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    parts = []
    if effect != "value" and contains_one(low, high):
        parts.append("1.0")
    ends = [grade(effect, paper, low), grade(effect, paper, high)]
    if ends[0] != ends[1]:
        order = sorted(ends, key=GRADES.index, reverse=True)
        parts.append(f"grades {order[0]} to {order[1]}")
    return "; ".join(parts)


def _empty_frame():
    """The runs of an experiment that ``--quick`` skips: none."""
    import pandas as pd

    return pd.DataFrame({"design": [], "status": [], "workload": [], "seed": []})


def _pooled(frames: dict[str, Any], names: str | list[str] | None):
    """The runs of experiment ``names`` (a list: their runs pooled); None for None."""
    if names is None:
        return None
    if isinstance(names, str):
        return frames[names]
    import pandas as pd

    return pd.concat([frames[n] for n in names], ignore_index=True)


def with_store(spec: dict[str, Any], db: str | Path) -> dict[str, Any]:
    """``spec`` with ``{store}`` in its string ``set`` values replaced by the result store's
    folder (absolute): where runs write files that later experiments read (Leshy's hint files).

    Examples
    --------
    >>> with_store({"set": {"et.leshy.hints_out": "{store}/h.txt"}}, "/tmp/r.duckdb")["set"]
    {'et.leshy.hints_out': '/tmp/h.txt'}
    """
    folder = str(Path(db).resolve().parent)

    def sub(v: Any) -> Any:
        if isinstance(v, str):
            return v.replace("{store}", folder)
        return [sub(x) for x in v] if isinstance(v, list) else v

    if "set" not in spec:
        return spec
    return {**spec, "set": {k: sub(v) for k, v in spec["set"].items()}}


#: THE grade table, the one place where grade thresholds live (docs/reproduction.md, "Grades";
#: nothing else in xlat, its claims files or its tests holds a threshold or tolerance). Rows
#: ``(grade, low, high)``: a claim whose effect ratio (:func:`effect_ratio`) lies in
#: ``[low, high]`` gets that grade, the first row that holds it winning. Outside every row: a
#: positive effect ratio of a speedup, reduction or increase is ``direction only`` (same side of
#: "no effect" as the paper, but too far from its size); zero or negative (no effect, or the
#: opposite side) is ``contradicted``; a ``value`` has no side, so outside the rows it is
#: ``contradicted`` too. A claim without xlat's figure is ``not run``.
GRADE_TABLE: tuple[tuple[str, float, float], ...] = (
    ("reproduced", 0.75, 1.33),
    ("partial", 0.4, 0.75),
    ("partial", 1.33, 2.5),
)
#: Every grade, best first (the order of the per-paper counts).
GRADES = ("reproduced", "partial", "direction only", "contradicted", "not run")
#: How a claim's effect is measured (its ``effect`` key): a ``speedup`` s (time of the baseline
#: over time of the design) has effect s - 1; a ``reduction`` (a figure of the design over the
#: baseline's, below 1: "-43 %" is 0.57) has effect 1 - ratio; an ``increase`` (such a ratio above
#: 1: "1.7x the requests") has effect ratio - 1; a ``value`` is compared as it is.
EFFECTS = ("speedup", "reduction", "increase", "value")


def effect_ratio(effect: str, paper: float, ours: float) -> float:
    """xlat's effect over the paper's (issue 36): for a speedup s, (s_xlat - 1) / (s_paper - 1);
    for a reduction r = 1 - ratio, r_xlat / r_paper; for an increase, (x_xlat - 1) /
    (x_paper - 1); for a value, xlat's over the paper's. NaN without xlat's figure.

    Examples
    --------
    >>> round(effect_ratio("speedup", 1.157, 1.017), 3)   # TPS: 1.7 % against 15.7 %
    0.108
    >>> round(effect_ratio("reduction", 0.634, 0.999), 3)  # CoLT: 0.1 % of misses against 36.6 %
    0.003
    >>> effect_ratio("value", 192, 96), effect_ratio("speedup", 1.24, 0.9) < 0
    (0.5, True)
    """
    if not math.isfinite(ours):
        return float("nan")
    if effect == "value":
        return ours / paper
    if effect == "reduction":
        return (1.0 - ours) / (1.0 - paper)
    return (ours - 1.0) / (paper - 1.0)  # speedup, increase


def grade(effect: str, paper: float, ours: float) -> str:
    """The grade of xlat's figure ``ours`` against the paper's, by :data:`GRADE_TABLE`.

    Examples
    --------
    >>> grade("speedup", 1.24, 1.24), grade("speedup", 1.24, 1.12), grade("speedup", 1.24, 1.01)
    ('reproduced', 'partial', 'direction only')
    >>> grade("speedup", 1.24, 0.98), grade("reduction", 0.37, 1.0), grade("value", 0.7, 0.37)
    ('contradicted', 'contradicted', 'partial')
    >>> grade("value", 192, 1000), grade("speedup", 1.24, float("nan"))
    ('contradicted', 'not run')
    """
    return grade_of_ratio(effect, effect_ratio(effect, paper, ours))


def grade_of_ratio(effect: str, e: float) -> str:
    """The grade of effect ratio ``e`` of a claim of kind ``effect`` (:data:`GRADE_TABLE`).

    Examples
    --------
    >>> grade_of_ratio("speedup", 0.4), grade_of_ratio("speedup", 0.39), grade_of_ratio("value", 3)
    ('partial', 'direction only', 'contradicted')
    """
    if not math.isfinite(e):
        return "not run"
    for name, low, high in GRADE_TABLE:
        if low <= e <= high:
            return name
    return "direction only" if e > 0 and effect != "value" else "contradicted"


def mutations(effect: str, paper: float) -> dict[str, float]:
    """Figures of xlat that must not grade as the paper's own figure does (the mutation test,
    tests/test_reproduce.py): no effect (1.0; a value: 0), the opposite side (1 / paper; a
    value, which has no side: 4x the paper's) and half the paper's effect.

    Examples
    --------
    >>> {k: round(v, 3) for k, v in mutations("speedup", 1.24).items()}
    {'none': 1.0, 'opposite': 0.806, 'half': 1.12}
    >>> mutations("value", 0.7)
    {'none': 0.0, 'opposite': 2.8, 'half': 0.35}
    """
    if effect == "value":
        return {"none": 0.0, "opposite": 4.0 * paper, "half": paper / 2.0}
    return {"none": 1.0, "opposite": 1.0 / paper, "half": 1.0 + (paper - 1.0) / 2.0}


def same_direction(effect: str, a: float, b: float) -> bool:
    """Whether two of xlat's figures of one claim lie on the same side of "no effect" (1.0): the
    quick smoke test's check against the full run's recorded figure. A value has no side: any
    two finite values agree.

    Examples
    --------
    >>> same_direction("speedup", 1.02, 1.3), same_direction("reduction", 0.9, 1.1)
    (True, False)
    >>> same_direction("value", 0.4, 900.0), same_direction("speedup", 1.0, float("nan"))
    (True, False)
    """
    if not (math.isfinite(a) and math.isfinite(b)):
        return False
    if effect == "value":
        return True
    return (a > 1 and b > 1) or (a < 1 and b < 1) or (a == 1 == b)


def xlat_counts(claim: dict[str, Any]) -> str:
    """What xlat's figure of ``claim`` counts: core cycles or core cycles + OS time for a
    speedup (its ``metric``), otherwise the figure's name.

    Examples
    --------
    >>> xlat_counts({"kind": "speedup", "metric": "total"})
    'core cycles + OS time'
    >>> xlat_counts({"kind": "ratio", "figure": "walk.mem_accesses"})
    'walk.mem_accesses'
    """
    if claim["kind"] == "speedup":
        return "core cycles + OS time" if claim.get("metric") == "total" else "core cycles"
    return claim["figure"]


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return "n/a"
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3f}"


def claim_row(
    paper: dict[str, Any],
    c: dict[str, Any],
    ours: float,
    quick: bool,
    ci95: tuple[float, float] | None = None,
    interval: str = "",
) -> dict[str, Any]:
    """One claim's row of the report and of ``--json``: the claim's id, text, place in the paper
    (``ref``, and ``derived`` when the paper does not print the figure), the paper's figure,
    xlat's (``ours``), the effect ratio and the grade (a quick run does not grade: ``smoke
    test``, with whether its direction matches the full run's recorded figure ``full``), what
    each side counts, and whether it is a headline claim. ``ci95`` is the 95 % interval of
    xlat's figure where its runs carry one (:func:`claim_estimate`; a recorded run's
    ``full_ci95``), ``interval`` its source; ``interval_spans`` says when it spans 1.0 or a
    grade boundary (:func:`interval_spans`; the grade stays the point figure's).

    Examples
    --------
    >>> c = {"id": "x", "text": "t", "ref": "§8.1, Fig. 18", "paper": 1.24, "kind": "speedup",
    ...      "effect": "speedup", "counts": "core cycles", "full": 1.01}
    >>> r = claim_row({"full_run": "2026-11-25"}, c, 1.01, quick=False)
    >>> r["grade"], round(r["effect_ratio"], 3), r["counts_differ"]
    ('direction only', 0.042, False)
    >>> q = claim_row({}, {**c, "quick": True}, 1.3, quick=True)
    >>> q["grade"], q["direction_as_full"]
    ('smoke test', True)
    """
    paper_fig = float(c["paper"])
    full = float(c["full"]) if "full" in c else float("nan")
    row = {
        "id": c["id"],
        "text": c["text"],
        "ref": c["ref"],
        "derived": c.get("derived", ""),
        "headline": bool(c.get("headline", False)),
        "effect": c["effect"],
        "paper": paper_fig,
        "ours": ours,
        "effect_ratio": effect_ratio(c["effect"], paper_fig, ours),
        "grade": "smoke test" if quick else grade(c["effect"], paper_fig, ours),
        "counts": c["counts"],
        "xlat_counts": xlat_counts(c),
        "counts_differ": c["kind"] == "speedup" and c["counts"] != xlat_counts(c),
        "full": full,
        "full_grade": grade(c["effect"], paper_fig, full),
        "full_run": paper.get("full_run", ""),
        "kind": c["kind"],
        "quick": bool(c.get("quick", False)),
        "note": " ".join(str(c.get("note", "")).split()),
    }
    low, high = ci95 if ci95 is not None else (float("nan"), float("nan"))
    row["ci95_low"], row["ci95_high"] = float(low), float(high)
    row["interval"] = interval if math.isfinite(row["ci95_low"]) else ""
    row["interval_spans"] = interval_spans(c["effect"], paper_fig, row["ci95_low"],
                                           row["ci95_high"])  # fmt: skip
    if quick:
        row["direction_as_full"] = same_direction(c["effect"], ours, full)
    return row


def reproduce(
    name: str,
    quick: bool = False,
    db: str | Path = "out/reproduce.duckdb",
    workers: int | None = None,
    progress: str = "lines",
    keep_ray: bool = False,
    overrides: dict[str, str] | None = None,
    experiments: list[str] | None = None,
    workloads: str = "generators",
    corpus_dir: str | Path | None = None,
    paper_scale: bool = False,
) -> dict[str, Any]:
    """Run (or resume) paper ``name``'s experiments and compute its claims (``keep_ray``: leave
    the Ray instance of the first sweep running for the next ones; the caller shuts it down;
    ``overrides``: ``--set`` keys applied to every run, over the experiments' own ``set``;
    ``experiments``: run only these, the others' frames are empty and a claim reading them is
    computed from what was run, so a caller recording figures keeps only the claims whose
    experiments were all run, as scripts/record_full.py does).

    ``workloads`` (issue 39, item 4; :mod:`xlat.reproduce_real`): ``"generators"`` (the
    built-in generators: the experiments as written), ``"real"`` (each generator replaced by the
    recording of the real program that stands for it, from ``corpus_dir``, default where ``xlat
    corpus record`` writes; those without one dropped; runs stored in
    :func:`xlat.reproduce_real.real_db` beside ``db``) or ``"both"``. A missing recording is a
    ReproduceError naming the command that records it, raised before anything runs.

    ``paper_scale`` (issue 36, item 4): each experiment at the paper's own scale, from its
    ``[experiment.paper]`` table (:func:`paper_spec`); one without a table runs as its full run,
    one whose table skips it is left out (its claims are not run). Graded as full runs. Not
    with ``quick`` or other ``workloads``.

    Returns ``{"paper", "claims": [rows], "frames": {experiment: DataFrame}, "failed": n,
    "simulated": runs not found in the store, "seconds", "quick", "scale", "cost"}`` (``scale``:
    ``quick``, ``full`` or ``paper``); each claim row is
    :func:`claim_row`'s. With ``"real"`` these are the recorded programs' (their rows not graded,
    with ``real_reason`` and ``real_used``: :func:`xlat.reproduce_real.claim_note`), and the
    result also has ``workloads``, ``recordings`` (:func:`xlat.reproduce_real.substitution_rows`)
    and ``db``; with ``"both"`` they are the generators' and ``real`` holds the recorded
    programs' result.
    """
    paper = load_paper(name)
    if paper_scale and (quick or workloads != "generators"):
        raise ReproduceError(
            "the paper's scale is a scale of the generators' experiments: it takes neither "
            "--quick nor --workloads real/both"
        )
    known = [e["name"] for e in paper["experiment"]]
    if experiments is not None and set(experiments) - set(known):
        raise ReproduceError(
            f"{name}: no experiment {sorted(set(experiments) - set(known))}; it has {known}"
        )
    plans = None
    if workloads != "generators":
        from xlat import corpus, reproduce_real

        corpus_dir = corpus.DEFAULT_OUT if corpus_dir is None else corpus_dir
        try:
            reproduce_real.check_source(workloads)
            plans = real_plans(paper, quick, corpus_dir, experiments)
            reproduce_real.check_traces(plans, corpus_dir)  # before anything runs
        except reproduce_real.RealWorkloadsError as e:
            raise ReproduceError(str(e)) from None
        if workloads == "real":
            return _reproduce_real(paper, quick, db, workers, progress, keep_ray, overrides,
                                   plans)  # fmt: skip
    frames, failed, simulated = {}, 0, 0
    t0 = time.monotonic()
    for exp in paper["experiment"]:
        skipped = experiments is not None and exp["name"] not in experiments
        skipped = skipped or (paper_scale and exp.get("paper", {}).get("skip", False))
        if skipped or (quick and exp.get("quick", {}).get("skip")):
            frames[exp["name"]] = _empty_frame()
            continue
        spec = _experiment_spec(paper, exp, quick, paper_scale)
        frame, n_failed, n_simulated = _sweep(spec, f"{paper['path']}:{exp['name']}", db,
                                              overrides, workers, progress, keep_ray)  # fmt: skip
        failed += n_failed
        simulated += n_simulated
        frames[exp["name"]] = frame
    result = {
        "paper": paper,
        "claims": _claim_rows(paper, frames, quick),
        "frames": frames,
        "failed": failed,
        "simulated": simulated,
        "seconds": time.monotonic() - t0,
        "quick": quick,
        "scale": "quick" if quick else "paper" if paper_scale else "full",
        "cost": run_cost(frames),
    }
    if plans is not None:  # both
        result["workloads"] = "both"
        result["real"] = _reproduce_real(paper, quick, db, workers, progress, keep_ray,
                                         overrides, plans)  # fmt: skip
    return result


def run_cost(frames: dict[str, Any]) -> dict[str, Any]:
    """What a paper's stored runs cost (issue 36, item 4): ``runs`` (finished ones),
    ``refs`` simulated (measured and warm-up references, every core's), ``seconds`` (the sum of
    each run's ``sim.wall_seconds`` and ``sim.setup_seconds``: the CPU time of the simulations,
    whatever the number of workers and whether they ran now or were stored before), and
    ``peak_rss_bytes`` (the largest ``sim.peak_rss_bytes``: the peak resident memory of a
    process that ran one; ``peak_runs`` counts the runs that carry the figure, as runs stored
    before it was recorded do not). Figures measured on the host: not deterministic.

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame({"status": ["ok", "ok", "failed"], "refs": [10, 20, 0],
    ...                   "warmup.refs": [5, None, None], "sim.wall_seconds": [1.0, 2.0, None],
    ...                   "sim.setup_seconds": [0.5, 0.5, None],
    ...                   "sim.peak_rss_bytes": [100, None, None]})
    >>> run_cost({"a": f}) == {"runs": 2, "refs": 35, "seconds": 4.0, "peak_rss_bytes": 100,
    ...                        "peak_runs": 1}
    True
    """
    runs, refs, seconds, peak, peak_runs = 0, 0, 0.0, 0, 0
    for df in frames.values():
        if df is None or len(df) == 0 or "status" not in df:
            continue
        ok = df[df["status"] == "ok"]
        runs += len(ok)
        summed = ("refs", "warmup.refs", "sim.wall_seconds", "sim.setup_seconds")
        sums = {c: float(ok[c].fillna(0).sum()) if c in ok else 0.0 for c in summed}
        refs += int(sums["refs"] + sums["warmup.refs"])
        seconds += sums["sim.wall_seconds"] + sums["sim.setup_seconds"]
        if "sim.peak_rss_bytes" in ok:
            known = ok["sim.peak_rss_bytes"].dropna()
            peak_runs += len(known)
            peak = max([peak, *(int(x) for x in known)])
    return {"runs": runs, "refs": refs, "seconds": seconds,
            "peak_rss_bytes": peak if peak_runs else None, "peak_runs": peak_runs}  # fmt: skip


def cost_text(cost: dict[str, Any]) -> str:
    """:func:`run_cost` as one sentence (the reproduce report's and the ledger's).

    Examples
    --------
    >>> text = cost_text({"runs": 3, "refs": 12_500_000, "seconds": 125.0,
    ...                   "peak_rss_bytes": 300 << 20, "peak_runs": 3})
    >>> text.split(", ")[:2]
    ['3 runs', '12.5 M references simulated (warm-up included)']
    >>> text.split(", ")[2]
    '125 s of simulation (2.1 min; the sum over the runs'
    >>> text.split("), ")[-1]
    'peak memory 300 MiB (the largest resident set of a process that ran them)'
    """
    seconds = cost["seconds"]
    text = (
        f"{cost['runs']} runs, {cost['refs'] / 1e6:.1f} M references simulated (warm-up "
        f"included), {seconds:.0f} s of simulation ({seconds / 60:.1f} min; the sum over the "
        f"runs, setup included)"
    )
    if cost.get("peak_rss_bytes") is None:
        return text + ", peak memory not recorded (runs stored before it was kept)"
    text += (
        f", peak memory {cost['peak_rss_bytes'] / 2**20:.0f} MiB (the largest resident set of a "
        f"process that ran them"
    )
    if cost["peak_runs"] < cost["runs"]:
        text += f"; {cost['runs'] - cost['peak_runs']} runs stored before it was kept not counted"
    return text + ")"


def real_plans(
    paper: dict[str, Any],
    quick: bool,
    corpus_dir: str | Path,
    experiments: list[str] | None = None,
) -> list:
    """Each experiment of ``paper`` (its quick variant with ``quick``) on the recorded programs
    of ``corpus_dir`` (:func:`xlat.reproduce_real.plan`): which recording stands for which of
    its generators, which are dropped, and whether it runs at all (``--quick`` may skip it,
    ``experiments`` leave it out). Reads no file.

    Examples
    --------
    >>> p = {x.name: x for x in real_plans(load_paper("mehpt"), False, "corpus")}
    >>> [s.program for s in p["scale"].stands], [w for w, _ in p["scale"].dropped]
    (['gups'], ['sysbench'])
    """
    from xlat import reproduce_real

    specs = []
    for exp in paper["experiment"]:
        left_out = experiments is not None and exp["name"] not in experiments
        run = not left_out and not (quick and exp.get("quick", {}).get("skip"))
        specs.append((exp["name"], run, _experiment_spec(paper, exp, quick)))
    return reproduce_real.plan(specs, corpus_dir)


def _experiment_spec(
    paper: dict[str, Any], exp: dict[str, Any], quick: bool, paper_scale: bool = False
) -> dict[str, Any]:
    """:func:`experiment_spec`, its SpecError as a ReproduceError."""
    try:
        return experiment_spec(paper, exp, quick, paper_scale)
    except SpecError as e:
        raise ReproduceError(str(e)) from None


def _sweep(
    spec: dict[str, Any],
    origin: str,
    db: str | Path,
    overrides: dict[str, str] | None,
    workers: int | None,
    progress: str,
    keep_ray: bool,
):
    """Run (or resume) one experiment's sweep ``spec`` (``--set`` ``overrides`` over its own
    ``set``) into ``db``: its runs' frame, the failed runs and the runs simulated now."""
    try:
        if overrides:
            spec["set"] = {**spec.get("set", {}), **overrides}
        parsed = parse_spec(with_store(spec, db), origin)
    except SpecError as e:
        raise ReproduceError(str(e)) from None
    summary = run_sweep(parsed, db, workers, None, False, progress, keep_ray)
    if summary["interrupted"]:
        raise KeyboardInterrupt(f"interrupted; finished runs are stored in {db}")
    for old, n in sorted(summary.get("outdated", {}).items()):
        # Never silent: a resumed reproduction reruns what an older model made.
        print(f"xlat reproduce: {origin}: {n} stored runs were made by model version {old} and "
              "were run again (docs/sweeps.md, 'Resume and crash safety')",
              file=sys.stderr)  # fmt: skip
    return (
        frame_of(db, summary["runs"]),
        summary["failed"],
        summary["total"] - summary["skipped"],
    )


def _claim_rows(paper: dict[str, Any], frames: dict[str, Any], quick: bool) -> list[dict]:
    """Every claim of ``paper`` computed from the runs ``frames`` (:func:`claim_row`)."""
    rows = []
    for c in paper["claim"]:
        runs = _pooled(frames, c["experiment"])
        base_runs = _pooled(frames, c.get("baseline_experiment"))
        ours = claim_value(runs, c, base_runs)
        est = claim_estimate(runs, c, base_runs) if len(runs) else None
        ci = est.bounds()[1:] if est is not None and est.has_interval else None
        rows.append(claim_row(paper, c, ours, quick, ci, est.source if ci else ""))
    return rows


def _reproduce_real(
    paper: dict[str, Any],
    quick: bool,
    db: str | Path,
    workers: int | None,
    progress: str,
    keep_ray: bool,
    overrides: dict[str, str] | None,
    plans: list,
) -> dict[str, Any]:
    """The experiments of ``paper`` on the recorded programs (``plans``,
    :func:`real_plans`): one sweep per recording of each experiment, stored in
    :func:`xlat.reproduce_real.real_db`; the claims computed from them, not graded."""
    import pandas as pd

    from xlat import reproduce_real as rr

    rdb = rr.real_db(db)
    frames, failed, simulated, specs, facts = {}, 0, 0, {}, {}
    t0 = time.monotonic()
    for exp, p in zip(paper["experiment"], plans):
        spec = _experiment_spec(paper, exp, quick)
        specs[exp["name"]] = spec
        if p.skipped:
            why = "; ".join(f"{w}: {r}" for w, r in p.dropped)
            print(f"xlat reproduce: {paper['name']}: experiment {exp['name']} skipped on the "
                  f"recorded programs: no workload of it has a recording ({why})",
                  file=sys.stderr)  # fmt: skip
        if not p.run or p.skipped:
            frames[exp["name"]] = _empty_frame()
            continue
        parts = []
        for s in p.stands:
            if s.program not in facts:
                facts[s.program] = rr.trace_facts(s.trace)
            origin = f"{paper['path']}:{exp['name']} (recorded {s.program}: {s.trace})"
            rspec = rr.real_spec(spec, s, facts[s.program])
            frame, n_failed, n_simulated = _sweep(rspec, origin, rdb, overrides, workers,
                                                  progress, keep_ray)  # fmt: skip
            failed += n_failed
            simulated += n_simulated
            parts.append(frame)
        frames[exp["name"]] = pd.concat(parts, ignore_index=True)
    rpaper = rr.real_paper(paper)
    rows = _claim_rows(rpaper, frames, False)
    for c, row in zip(paper["claim"], rows):
        reason, used = rr.claim_note(c, plans)
        row.update(grade="not graded", real_reason=reason, real_used=used)
    return {
        "paper": rpaper,
        "claims": rows,
        "frames": frames,
        "failed": failed,
        "simulated": simulated,
        "seconds": time.monotonic() - t0,
        "quick": quick,
        "cost": run_cost(frames),
        "workloads": "real",
        "recordings": rr.substitution_rows(plans, specs, facts),
        "db": str(rdb),
    }


def recorded(name: str) -> dict[str, Any]:
    """Paper ``name``'s claims graded from the figures of its last full run recorded in its
    claims file (``full``; ``full_run`` says when and how), without running anything: the page
    docs/reproduction.md and ``xlat reproduce --recorded``.

    Examples
    --------
    >>> r = recorded("mehpt")
    >>> r["claims"][0]["id"], r["claims"][0]["grade"]
    ('contiguous', 'reproduced')
    """
    paper = load_paper(name)
    rows = [
        claim_row(paper, c, float(c.get("full", float("nan"))), False,
                  tuple(c["full_ci95"]) if "full_ci95" in c else None, "recorded")
        for c in paper["claim"]
    ]  # fmt: skip
    return {"paper": paper, "claims": rows, "frames": {}, "failed": 0, "simulated": 0,
            "seconds": 0.0, "quick": False}  # fmt: skip


def ordered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Headline claims (the abstract's numbers) first, then the others, each in file order.

    Examples
    --------
    >>> [r["id"] for r in ordered([{"id": "a", "headline": False}, {"id": "b", "headline": True}])]
    ['b', 'a']
    """
    return [r for r in rows if r["headline"]] + [r for r in rows if not r["headline"]]


def grade_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many claims got each grade (:data:`GRADES` order; quick rows count as smoke tests).

    Examples
    --------
    >>> grade_counts([{"grade": "partial"}, {"grade": "partial"}, {"grade": "not run"}])
    {'reproduced': 0, 'partial': 2, 'direction only': 0, 'contradicted': 0, 'not run': 1}
    """
    out = {g: 0 for g in GRADES}
    for r in rows:
        out[r["grade"]] = out.get(r["grade"], 0) + 1
    return out


def counts_line(rows: list[dict[str, Any]]) -> str:
    """The per-paper count of grades as one line, headline claims' grades in brackets.

    Examples
    --------
    >>> counts_line([{"grade": "partial", "headline": True}, {"grade": "contradicted",
    ...              "headline": False}])
    '0 reproduced, 1 partial (headline 1), 0 direction only, 1 contradicted, 0 not run'
    """
    heads = grade_counts([r for r in rows if r["headline"]])
    return ", ".join(
        f"{n} {g}" + (f" (headline {heads[g]})" if heads.get(g) else "")
        for g, n in grade_counts(rows).items()
    )


def _fmt_ratio(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.2f}"


def claims_table(
    rows: list[dict[str, Any]], real: list[dict[str, Any]] | None = None, ours: str = "xlat"
) -> str:
    """The report's claims table (markdown), headline claims first: id, claim, place in the
    paper, the paper's figure, xlat's, effect ratio, grade, and what each counts. A quick run's
    rows (grade ``smoke test``) show the full run's recorded figure and whether the quick
    figure lies on its side instead of a grade. ``real`` (the recorded programs' rows of the
    same claims, ``--workloads both``) adds their figure beside xlat's, which becomes *xlat:
    generators* (:func:`real_cell`); effect ratio and grade stay the
    generators'. ``ours`` heads xlat's column (``--workloads real``: *xlat: real programs*).

    Examples
    --------
    >>> c = {"id": "x", "text": "t: 1.24x", "ref": "Fig. 18", "paper": 1.24, "kind": "speedup",
    ...      "effect": "speedup", "counts": "core cycles + OS time", "headline": True}
    >>> print(claims_table([claim_row({}, c, 1.01, False)]).splitlines()[2][:60])
    | **x** | t: 1.24x | Fig. 18 | 1.240 | 1.010 | 0.04 | direct
    >>> claims_table([claim_row({}, c, 1.01, False)]).endswith("xlat: core cycles (**differs**) |")
    True
    """
    quick = any(r["grade"] == "smoke test" for r in rows)
    spans = any(math.isfinite(r.get("ci95_low", float("nan"))) for r in rows)
    if real is not None:
        ours = "xlat: generators"
        real_by_id = {r["id"]: r for r in real}
    head = ["id", "claim", "place in the paper", "paper", ours, "effect ratio", "grade",
            "counted"]  # fmt: skip
    if quick:
        head[5:7] = ["full run (recorded)", "quick: smoke test"]
    if spans:
        head[4] = f"{ours} [95 % CI]"
        head.insert(len(head) - 1, "interval spans")
    if real is not None:
        head.insert(5, "xlat: real programs")
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in ordered(rows):
        place = r["ref"] + (f"; derived: {r['derived']}" if r["derived"] else "")
        counted = f"paper: {r['counts']}; xlat: {r['xlat_counts']}"
        if r["counts_differ"]:
            counted += " (**differs**)"
        # A recorded programs' row (--workloads real) says why it has no figure.
        figure = real_cell(r) if "real_reason" in r else _fmt(r["ours"])
        if math.isfinite(r.get("ci95_low", float("nan"))):
            figure += f" [{_fmt(r['ci95_low'])}, {_fmt(r['ci95_high'])}]"
        cells = [f"**{r['id']}**" if r["headline"] else r["id"], r["text"], place,
                 _fmt(r["paper"]), figure]  # fmt: skip
        if quick:
            if not r["quick"]:
                check = "not checked" if math.isfinite(r["ours"]) else "not run"
            else:
                check = "direction as full" if r["direction_as_full"] else "**direction flipped**"
            cells += [_fmt(r["full"]), check]
        else:
            cells += [_fmt_ratio(r["effect_ratio"]), r["grade"]]
        if spans:
            cells.append(r.get("interval_spans") or "")
        if real is not None:
            cells.insert(5, real_cell(real_by_id[r["id"]]))
        out.append("| " + " | ".join([*cells, counted]) + " |")
    return "\n".join(out)


def real_cell(row: dict[str, Any]) -> str:
    """A claims table's cell of the recorded programs' figure (a row with ``real_reason`` and
    ``real_used``, :func:`xlat.reproduce_real.claim_note`): the figure (with the programs it
    comes from when some generators had none), else a dash and why, else *not run*.

    Examples
    --------
    >>> real_cell({"ours": 1.0234, "real_reason": "", "real_used": "gups only"})
    '1.023 (gups only)'
    >>> real_cell({"ours": float("nan"), "real_reason": "no recording stands for sysbench"})
    '— (no recording stands for sysbench)'
    >>> real_cell({"ours": float("nan"), "real_reason": ""})
    'not run'
    """
    if math.isfinite(row["ours"]):
        used = row.get("real_used", "")
        return _fmt(row["ours"]) + (f" ({used})" if used.endswith(" only") else "")
    return f"— ({row['real_reason']})" if row.get("real_reason") else "not run"


def interval_note(rows: list[dict[str, Any]]) -> str:
    """The line under a claims table on its intervals, said once: how they were derived and
    that grades stay on the point figure, or that there are none (one unsampled run).

    Examples
    --------
    >>> print(interval_note([{"ci95_low": float("nan")}])[:60])
    Intervals: no interval: one unsampled run per grid point and
    """
    sources = {r.get("interval") for r in rows if math.isfinite(r.get("ci95_low", float("nan")))}
    if not sources:
        return (
            "Intervals: no interval: one unsampled run per grid point and one seed (xlat's "
            "figures carry 95 % intervals when the runs are sampled, `--set "
            "sim.sampling.interval=N`, or have several seeds; docs/timing.md, 'Intervals of "
            "speedups')."
        )
    from xlat.intervals import method_text

    method = method_text(s for s in sources if s != "recorded")
    method = method or "95 % intervals as recorded with the full runs (`full_ci95`)"
    return (
        f"Intervals: {method}. Grades stay on the point figure; *interval spans* names 1.0 "
        "(no effect) or the grades of the interval's two ends when they differ."
    )


def json_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The claims rows as ``--json`` prints them (NaN and infinities as null), headline claims
    first."""
    return [_json_safe(r) for r in ordered(rows)]


def json_paper(result: dict[str, Any]) -> dict[str, Any]:
    """One paper's ``--json`` object: its ``baseline`` statistics (:func:`baseline_rows`, the
    paper's figure as ``[low, high]``; xlat's null when not recorded) and its ``claims``
    (:func:`json_rows`).

    Examples
    --------
    >>> out = json_paper(recorded("utopia"))
    >>> [b["ours"] for b in out["baseline"] if b["id"] == "page_2m"], out["claims"][0]["headline"]
    ([0.5947], True)
    """
    base = baseline_rows(result["paper"], result["frames"] or None)
    out = {"baseline": [_json_safe(b) for b in base], "claims": json_rows(result["claims"])}
    if "cost" in result:
        out["cost"] = _json_safe(result["cost"])
    if "scale" in result:
        out["scale"] = result["scale"]
    source = result.get("workloads", "generators")
    if source != "generators":  # the recorded programs (issue 39, item 4)
        real = result["real"] if source == "both" else result
        out["workloads"] = source
        if source == "both":
            out["claims_real"] = json_rows(real["claims"])
        out["recordings"] = [_json_safe(r) for r in real["recordings"]]
        out["real_db"] = real["db"]
    return out


def _json_safe(v: Any) -> Any:
    """``v`` with every non-finite float (NaN; an open bound such as "above 5") as None, so that
    the output is strict JSON."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    return v


def claim_notes(rows: list[dict[str, Any]]) -> str:
    """The claims' notes (regime, footprint dependence) as a markdown list; empty without notes.

    Examples
    --------
    >>> claim_notes([{"text": "a: 2x", "note": "at 64 GiB"}, {"text": "b", "note": ""}])
    '- *a: 2x*: at 64 GiB'
    """
    return "\n".join(f"- *{r['text']}*: {r['note']}" for r in rows if r.get("note"))


#: The data tables' default columns (ME-HPT's): label, figure, divisor, format
#: (and optionally the figures whose sum the figure is a share of).
DEFAULT_COLUMNS = [
    ["walk refs / walk", "walk.avg_mem_accesses", 1, ".2f"],
    ["cycles / walk", "walk.avg_cycles", 1, ".1f"],
    ["page-table peak MiB", "page_table.peak_bytes", 2**20, ".2f"],
    ["largest contiguous KiB", "page_table.max_contiguous_bytes", 2**10, ".0f"],
    ["OS Mcycles", "timing.os_cycles", 1e6, ".1f"],
]


def _experiment_rows(result: dict[str, Any], exp: dict[str, Any]):
    """An experiment's successful runs with their speedups over the ``[table]`` baseline
    design on the same grid point (taken from ``baseline_experiment`` when it has one): the
    swept axes and a list of ``(run row, speedup by cycles, speedup by total time)``; None
    without successful runs."""
    table = result["paper"].get("table", {})
    base_design = table.get("baseline", "radix")
    axes = ["workload", "config.workload.footprint", "config.os.thp",
            *(f"config.{a}" for a in table.get("axes", []))]  # fmt: skip
    df = result["frames"][exp["name"]]
    df = df[df["status"] == "ok"]
    if df.empty:
        return None
    bdf = result["frames"][exp.get("baseline_experiment", exp["name"])]
    bdf = bdf[bdf["status"] == "ok"]
    swept = [c for c in axes if c in df.columns and df[c].astype(str).nunique() > 1]
    point = [c for c in (*axes, "seed") if c in df.columns and c in bdf.columns]
    base = bdf[bdf["design"] == base_design].set_index(point)
    rows = []
    for _, r in df.iterrows():
        key = tuple(r[c] for c in point)
        b = base.loc[key] if key in base.index else None
        if b is not None and not hasattr(b, "to_frame"):  # several rows: not one point
            b = None

        def sp(m: str, b=b, r=r) -> float:
            if b is None:
                return float("nan")
            return float(_time(b.to_frame().T, m).iloc[0]) / float(_time(r.to_frame().T, m).iloc[0])

        rows.append((r, sp("cycles"), sp("total")))
    return swept, rows


def figure_tables(result: dict[str, Any], figures: dict[str, str] | None = None) -> str:
    """Each experiment's data as tables: speedups over the baseline design (``[table]``
    ``baseline``, default radix; cycles and total) and the ``[table]`` ``columns`` (default:
    walk references and cycles, page-table memory and largest contiguous allocation, OS time)
    per design and grid point; ``figures`` (experiment name -> image file) puts each
    experiment's chart above its table."""
    columns = result["paper"].get("table", {}).get("columns", DEFAULT_COLUMNS)
    parts = []
    for exp in result["paper"]["experiment"]:
        got = _experiment_rows(result, exp)
        if got is None:
            continue
        swept, rows = got
        parts.append(f"### {exp['name']}: {exp['description']}\n\nPaper: {exp['figure']}.\n")
        if figures and exp["name"] in figures:
            parts.append(f"![{exp['name']}: speedup over the baseline]({figures[exp['name']]})\n")
        lines = [
            "| " + " | ".join([*(s.replace("config.", "") for s in swept), "design",
                               "speedup (cycles)", "speedup (total)",
                               *(c[0] for c in columns)]) + " |",
        ]  # fmt: skip
        lines.append("|" + "---|" * (len(swept) + 3 + len(columns)))
        for r, sp_cycles, sp_total in rows:

            def value(figure: str, r=r) -> float:
                v = r[figure] if figure in r.index else None
                try:
                    return math.nan if v is None else float(v)
                except TypeError:  # pandas' NA: a figure this run does not have
                    return math.nan

            def cell(figure: str, scale: float, fmt: str, of: list[str] | None = None) -> str:
                v = value(figure)
                if of is not None:  # a share of the sum of `of` (absent figures count 0)
                    total = sum(x for x in map(value, of) if math.isfinite(x))
                    v = v / total if total > 0 and math.isfinite(v) else math.nan
                return "n/a" if not math.isfinite(v) else format(v / scale, fmt)

            cells = [str(r[s]) for s in swept] + [
                r["design"],
                f"{sp_cycles:.3f}",
                f"{sp_total:.3f}",
                *(cell(*c[1:]) for c in columns),
            ]
            lines.append("| " + " | ".join(cells) + " |")
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def _point_label(r, swept: list[str]) -> str:
    """A grid point's label from its swept values (footprints in GiB/MiB); "all" for none."""
    out = []
    for s in swept:
        v = r[s]
        if s == "config.workload.footprint":
            v = float(v)
            v = f"{v / 2**30:g} GiB" if v >= 2**30 else f"{v / 2**20:g} MiB"
        name = s.rsplit(".", 1)[-1]  # footprint, thp, fmfi_target, ...
        out.append(str(v) if s == "workload" else f"{name}={v}")
    return ", ".join(out) or "all"


def experiment_figures(result: dict[str, Any], out: Path, stem: str) -> dict[str, str]:
    """Redraw each experiment as a chart from our runs: grouped bars of the speedup (by
    ``cycles``) of every design over the table's baseline design, one group per grid point
    (mean over seeds), with the baseline's 1.0 drawn as a line. Writes ``out/stem-NAME.png``
    and returns experiment name -> file name (relative to ``out``, as the report links it).

    Examples
    --------
    >>> import pandas as pd, tempfile
    >>> df = pd.DataFrame({"design": ["radix", "ecpt"], "status": ["ok", "ok"],
    ...     "workload": ["gups", "gups"], "seed": [1, 1], "timing.cycles": [120.0, 100.0],
    ...     "timing.os_cycles": [0.0, 0.0]})
    >>> result = {"paper": {"experiment": [{"name": "main", "description": "d", "figure": "F"}]},
    ...     "frames": {"main": df}}
    >>> experiment_figures(result, Path(tempfile.mkdtemp()), "reproduce-x")
    {'main': 'reproduce-x-main.png'}
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    base_design = result["paper"].get("table", {}).get("baseline", "radix")
    files = {}
    for exp in result["paper"]["experiment"]:
        got = _experiment_rows(result, exp)
        if got is None:
            continue
        swept, rows = got
        bars: dict[str, dict[str, list[float]]] = {}  # design -> point -> speedups (seeds)
        points: list[str] = []
        for r, sp_cycles, _ in rows:
            if r["design"] == base_design or not math.isfinite(sp_cycles):
                continue
            label = _point_label(r, swept)
            if label not in points:
                points.append(label)
            bars.setdefault(r["design"], {}).setdefault(label, []).append(sp_cycles)
        if not bars:
            continue
        fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(points) * len(bars) + 1.5), 3.2))
        width = 0.8 / len(bars)
        for i, (design, by_point) in enumerate(bars.items()):
            ys = [sum(by_point.get(p, [math.nan])) / len(by_point.get(p, [1])) for p in points]
            xs = [j + (i - (len(bars) - 1) / 2) * width for j in range(len(points))]
            # Bars grow from the baseline's 1.0 (up: faster, down: slower), so a few per cent
            # are visible; each is labelled with its value.
            drawn = ax.bar(xs, [y - 1.0 for y in ys], width, bottom=1.0, label=design)
            ax.bar_label(drawn, labels=[f"{y:.3f}" for y in ys], fontsize=6, padding=1)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(points)))
        ax.set_xticklabels(points, rotation=30, ha="right", rotation_mode="anchor", fontsize=7)
        ax.set_ylabel(f"speedup over {base_design}\n(timing.cycles)", fontsize=8)
        title = textwrap.fill(f"{exp['name']}: {exp['description']} (paper: {exp['figure']})", 70)
        ax.set_title(title, fontsize=7)
        ax.margins(y=0.25)
        ax.legend(fontsize=7)
        ax.grid(True, axis="y", linewidth=0.3)
        fig.tight_layout()
        name = f"{stem}-{exp['name']}.png"
        out.mkdir(parents=True, exist_ok=True)
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        files[exp["name"]] = name
    return files


#: Keys of a ``[[baseline]]`` entry: a statistic of the paper's baseline (issue 36, item 5).
BASELINE_KEYS = {"id", "text", "ref", "paper", "figure", "of", "per", "experiment", "design",
                 "set", "baseline_set", "kind", "derived", "note", "full"}  # fmt: skip


def _check_baselines(path: Path, paper: dict[str, Any], names: list[str]) -> None:
    """The ``[[baseline]]`` entries: known keys, a figure, an experiment of the paper, and the
    paper's figure as a positive number or a ``[low, high]`` range."""
    for b in paper["baseline"]:
        where = f"{path}: baseline {b.get('id')}"
        unknown = set(b) - BASELINE_KEYS
        if unknown:
            raise ReproduceError(f"{where}: unknown keys {sorted(unknown)}")
        listed = (
            b.get("experiment") if isinstance(b.get("experiment"), list) else [b.get("experiment")]
        )
        if not all(e in names for e in listed):
            raise ReproduceError(
                f"{where}: experiment '{b.get('experiment')}' is not one of {names}"
            )
        if b.get("kind", "value") not in ("value", "speedup"):
            raise ReproduceError(f"{where}: kind must be value or speedup")
        if b.get("kind", "value") == "value" and "figure" not in b:
            raise ReproduceError(f"{where}: 'figure' is missing")
        p = b.get("paper")
        low_high = p if isinstance(p, list) else [p, p]
        if len(low_high) != 2 or not all(isinstance(x, (int, float)) and x > 0 for x in low_high):
            raise ReproduceError(f"{where}: 'paper' must be a positive number or [low, high]")


def paper_range(b: dict[str, Any]) -> tuple[float, float]:
    """A baseline statistic's figure in the paper as ``(low, high)`` (equal for one number).

    Examples
    --------
    >>> paper_range({"paper": 137}), paper_range({"paper": [0.597, 0.996]})
    ((137.0, 137.0), (0.597, 0.996))
    """
    p = b["paper"]
    return (float(p[0]), float(p[1])) if isinstance(p, list) else (float(p), float(p))


def baseline_ratio(b: dict[str, Any], ours: float) -> float:
    """xlat's figure of baseline statistic ``b`` over the paper's: for a range, over its nearer
    end (1.0 inside it); for a speedup, the effect ratio (:func:`effect_ratio`).

    Examples
    --------
    >>> baseline_ratio({"paper": 137}, 68.5), baseline_ratio({"paper": [0.6, 0.99]}, 0.8)
    (0.5, 1.0)
    >>> baseline_ratio({"paper": [5, float("inf")]}, 1.0), baseline_ratio({"paper": 39}, math.nan)
    (0.2, nan)
    >>> round(baseline_ratio({"paper": 1.3, "kind": "speedup"}, 1.1), 3)
    0.333
    """
    if not math.isfinite(ours):
        return float("nan")
    low, high = paper_range(b)
    if b.get("kind") == "speedup":
        return effect_ratio("speedup", low, ours)
    if ours < low:
        return ours / low
    return ours / high if ours > high else 1.0


def baseline_standing(ratio: float) -> str:
    """How xlat's baseline statistic stands to the paper's, by :data:`GRADE_TABLE`'s bands: ``as
    the paper's`` (its ``reproduced`` band), ``within the partial band``, ``**differs**``
    (outside it: the design's comparison against this baseline cannot match the paper's) or
    ``not recorded``.

    Examples
    --------
    >>> baseline_standing(1.1), baseline_standing(0.5), baseline_standing(0.2)
    ("as the paper's", 'within the partial band', '**differs**')
    """
    g = grade_of_ratio("value", ratio)
    return {"reproduced": "as the paper's", "partial": "within the partial band",
            "not run": "not recorded"}.get(g, "**differs**")  # fmt: skip


def baseline_value(frames: dict[str, Any], b: dict[str, Any]) -> float:
    """xlat's figure of baseline statistic ``b`` from the runs of its experiment(s): the
    arithmetic mean over the runs of ``design`` (default radix) that match ``set`` of
    ``figure`` (divided by ``per``, a figure of the same run, or taken as a share of the sum of
    the figures in ``of``; an absent figure of ``of`` counts 0); for ``kind = "speedup"`` the
    geometric mean of the speedup of ``set`` over ``baseline_set``. NaN without runs."""
    df = _pooled(frames, b["experiment"])
    design = b.get("design", "radix")
    if b.get("kind") == "speedup":
        claim = {"kind": "speedup", "design": design, "baseline": design,
                 "set": b.get("set", {}), "baseline_set": b.get("baseline_set", {})}  # fmt: skip
        return claim_value(df, claim)
    rows = _select(df, design, b.get("set", {}))
    if rows.empty:
        return float("nan")

    def col(name: str, absent: float):
        if name in rows.columns:
            return rows[name].astype(float)
        return rows["seed"].astype(float) * 0 + absent

    v = col(b["figure"], 0.0 if "of" in b else math.nan)
    if "of" in b:
        v = v / sum(col(f, 0.0).fillna(0.0) for f in b["of"])
    if "per" in b:
        v = v / col(b["per"], math.nan)
    finite = [float(x) for x in v if math.isfinite(float(x))]
    return sum(finite) / len(finite) if finite else float("nan")


def baseline_rows(paper: dict[str, Any], frames: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Each baseline statistic of ``paper`` with the paper's figure, xlat's (from ``frames``;
    None: the last full runs' figure recorded in the claims file as ``full``, or not recorded),
    their ratio and how xlat's stands (:func:`baseline_standing`).

    Examples
    --------
    >>> rows = baseline_rows(load_paper("utopia"), None)  # the figures recorded as `full`
    >>> rows[0]["id"], rows[0]["paper"], rows[0]["ours"] > 0
    ('radix_walk_latency', (137.0, 137.0), True)
    >>> [r["id"] for r in rows if r["standing"] == "not recorded"]  # every one is recorded
    []
    """
    out = []
    for b in paper.get("baseline", []):
        if frames is None:
            ours = float(b.get("full", float("nan")))
        else:
            ours = baseline_value(frames, b)
        ratio = baseline_ratio(b, ours)
        out.append({"id": b["id"], "text": b["text"], "ref": b["ref"],
                    "derived": b.get("derived", ""), "paper": paper_range(b), "ours": ours,
                    "ratio": ratio, "standing": baseline_standing(ratio),
                    "kind": b.get("kind", "value"), "note": b.get("note", "")})  # fmt: skip
    return out


def _fmt_stat(x: float) -> str:
    if not math.isfinite(x):
        return "∞" if x > 0 else "n/a"
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.3g}"


def baseline_table(rows: list[dict[str, Any]]) -> str:
    """The baseline section (markdown): first, when a statistic differs from the paper's beyond
    the grade table's partial band, a sentence saying so; then the table of the paper's figure
    beside xlat's. Empty without baseline statistics.

    Examples
    --------
    >>> b = {"id": "w", "text": "radix cycles per walk", "ref": "§3", "paper": 137}
    >>> text = baseline_table([{**baseline_rows({"baseline": [b]}, None)[0]}])
    >>> "| w | radix cycles per walk | §3 | 137.0 | not recorded |  |  |" in text
    True
    """
    if not rows:
        return ""
    differs = [r for r in rows if r["standing"] == "**differs**"]
    lines = []
    if differs:
        what = "; ".join(
            f"{r['text']}: xlat {_fmt_stat(r['ours'])} against the paper's "
            f"{_paper_text(r)} ({_fmt_ratio(r['ratio'])}x)"
            for r in differs
        )
        lines += [
            f"**The baseline differs** from the paper's ({what}): where a design's gain "
            "comes from what these figures measure, its comparison against this baseline "
            "cannot match the paper's.",
            "",
        ]
    lines += [
        "| id | statistic of the baseline | place in the paper | paper | xlat | "
        "xlat / paper | standing |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        place = r["ref"] + (f"; derived: {r['derived']}" if r["derived"] else "")
        ours = "not recorded" if r["standing"] == "not recorded" else _fmt_stat(r["ours"])
        ratio = "" if r["standing"] == "not recorded" else _fmt_ratio(r["ratio"])
        cells = [r["id"], r["text"], place, _paper_text(r)]
        cells += [ours, ratio, "" if r["standing"] == "not recorded" else r["standing"]]
        lines.append("| " + " | ".join(cells) + " |")
    notes = [f"- *{r['id']}*: {' '.join(r['note'].split())}" for r in rows if r["note"]]
    return "\n".join(lines + ([""] + notes if notes else []))


def _paper_text(r: dict[str, Any]) -> str:
    low, high = r["paper"]
    if low == high:
        return _fmt_stat(low)
    return (
        f"> {_fmt_stat(low)}" if not math.isfinite(high) else f"{_fmt_stat(low)}-{_fmt_stat(high)}"
    )


#: What the baseline section says of its figures.
BASELINE_NOTE = (
    "The paper's own baseline (radix unless named) beside xlat's on the same workloads: "
    "statistics, not graded claims. xlat / paper: xlat's figure over the paper's (over the "
    "nearer end of a range, 1.0 inside it; for a speedup the effect ratio); standing by the "
    "bands of the grade table (`GRADE_TABLE`): as the paper's in its `reproduced` band, "
    "**differs** outside its `partial` band."
)


def latency_distribution(
    frames: dict[str, Any],
    experiment: str | list[str],
    design: str = "radix",
    values: dict[str, Any] | None = None,
) -> str:
    """xlat's walk-latency distribution of ``design``'s runs of ``experiment`` (their
    ``walk.latency_hist`` buckets pooled) as its median, 90th and 99th percentiles, each the
    log2 bucket it falls in; empty without a histogram.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"design": ["radix"], "status": ["ok"], "walk.latency_hist.64": [50],
    ...                    "walk.latency_hist.128": [45], "walk.latency_hist.512": [5]})
    >>> latency_distribution({"e": df}, "e")
    'median 64-127 cycles, 90th percentile 128-255, 99th percentile 512-1023 (100 walks)'
    """
    df = _select(_pooled(frames, experiment), design, values or {})
    cols = sorted((int(c.rsplit(".", 1)[1]), c) for c in df.columns
                  if c.startswith("walk.latency_hist."))  # fmt: skip
    counts = [(low, float(df[c].astype(float).fillna(0.0).sum())) for low, c in cols]
    total = sum(n for _, n in counts)
    if total <= 0:
        return ""

    def pct(q: float) -> str:
        seen = 0.0
        for low, n in counts:
            seen += n
            if seen >= q * total:
                return f"{low}-{max(1, 2 * low - 1)}"
        return "n/a"

    return (
        f"median {pct(0.5)} cycles, 90th percentile {pct(0.9)}, 99th percentile "
        f"{pct(0.99)} ({total:.0f} walks)"
    )


#: The report's note under the claims table, unless the claims file has ``claims_note``.
CLAIMS_NOTE = (
    "Ours: geometric mean over the experiment's workloads of the per-workload ratio. "
    "Speedups count core cycles (`timing.cycles`), or core cycles and OS time "
    "(`timing.cycles + timing.os_cycles`) where the claim's *counted* column says so, as "
    "the paper's figure does."
)
#: The report's note above the data tables, unless the claims file has ``tables_note``.
TABLES_NOTE = (
    "Speedups are over radix on the same grid point (radix with the same THP setting; "
    "the paper's Fig. 9 normalizes everything to radix without THP)."
)


#: What the report says of a quick run's claims, in place of grades.
QUICK_NOTE = (
    "A quick run (`--quick`: shorter runs at smaller footprints, for CI) is a smoke test and "
    "grades nothing: each claim marked `quick` in the claims file is checked only to lie on "
    "the same side of 1 as the figure of the last full run recorded in the claims file "
    "(`full`, shown beside it); the grades are the full runs' (docs/reproduction.md)."
)


def grades_note() -> str:
    """How grades are computed, with the one grade table (:data:`GRADE_TABLE`) quoted.

    Examples
    --------
    >>> "reproduced: effect ratio 0.75-1.33" in grades_note()
    True
    """
    bands = "; ".join(f"{g}: effect ratio {lo:g}-{hi:g}" for g, lo, hi in GRADE_TABLE)
    return (
        "Effect ratio: for a speedup s, (s_xlat - 1) / (s_paper - 1); for a reduction r (the "
        "share removed), r_xlat / r_paper; for an increase x, (x_xlat - 1) / (x_paper - 1); for "
        f"a value, xlat's over the paper's. Grades ({bands}; otherwise direction only when the "
        "effect ratio is positive, contradicted when it is zero or negative, or for a value "
        "outside the partial band; not run without xlat's figure) come from one table, "
        "`GRADE_TABLE` in python/xlat/reproduce.py. Headline claims (the abstract's numbers) "
        "are in bold and first. *Counted*: what the paper's figure counts and what xlat's does."
    )


def baseline_section(paper: dict[str, Any], frames: dict[str, Any] | None) -> str:
    """The page's baseline section (:func:`baseline_table` with :data:`BASELINE_NOTE` and, from
    runs, xlat's walk-latency distribution); empty for a paper without ``[[baseline]]``."""
    rows = baseline_rows(paper, frames)
    if not rows:
        return ""
    parts = [baseline_table(rows), BASELINE_NOTE]
    first = paper["baseline"][0]
    if frames is not None:
        dist = latency_distribution(frames, first["experiment"], first.get("design", "radix"),
                                    first.get("set"))  # fmt: skip
        if dist:
            parts.append(
                f"xlat's walk latency (`walk.latency_hist`, the runs of `{first['id']}` pooled; "
                f"the paper gives averages only): {dist}."
            )
    elif any(r["standing"] == "not recorded" for r in rows):
        parts.append(
            "xlat's figures marked not recorded were not kept from the last full runs: "
            f"`xlat reproduce {paper['name']}` (or `--quick`) shows them from its runs."
        )
    return "\n\n".join(parts)


def scale_note(paper: dict[str, Any]) -> str:
    """What a ``--paper-scale`` run ran (issue 36, item 4): each experiment at the paper's scale
    with its source, run as the full run (no paper-scale form), or left out.

    Examples
    --------
    >>> p = {"experiment": [
    ...     {"name": "a", "paper": {"source": "§7", "footprint": "8GiB"}},
    ...     {"name": "b"}, {"name": "c", "paper": {"source": "none given", "skip": True}}]}
    >>> for sentence in scale_note(p).split(". "):
    ...     print(sentence)
    At the paper's scale (`--paper-scale`): a (§7)
    As the full run (no paper-scale form): b
    Left out (its claims are not run): c (none given).
    """
    exps = paper["experiment"]
    at = [f"{e['name']} ({' '.join(e['paper']['source'].split())})" for e in exps
          if at_paper_scale(e)]  # fmt: skip
    full = [e["name"] for e in exps if "paper" not in e]
    left = [f"{e['name']} ({' '.join(e['paper']['source'].split())})" for e in exps
            if "paper" in e and not at_paper_scale(e)]  # fmt: skip
    parts = [f"At the paper's scale (`--paper-scale`): {'; '.join(at) or 'none'}."]
    if full:
        parts.append(f"As the full run (no paper-scale form): {', '.join(full)}.")
    if left:
        parts.append(f"Left out (its claims are not run): {'; '.join(left)}.")
    return " ".join(parts)


def report(result: dict[str, Any], command: str, figures: dict[str, str] | None = None) -> str:
    """The reproduction report (markdown): the count of grades, the baseline (the paper's
    statistics beside xlat's, :func:`baseline_section`), the claims table (headline claims
    first), scaling, then each experiment (its chart from ``figures``, see
    :func:`experiment_figures`, and its table). A run on the recorded programs
    (``--workloads real`` or ``both``) adds the table of recordings that stood for the
    generators before the claims, and their column (or their figures alone) in the claims table.
    """
    p = result["paper"]
    source = result.get("workloads", "generators")
    real = result.get("real") if source == "both" else result if source == "real" else None
    base = baseline_section(p, result["frames"])
    quick = result.get("quick", False)
    summary = (
        f"Quick run: smoke test, not graded. {QUICK_NOTE}"
        if quick
        else f"Grades: {counts_line(result['claims'])}."
    )
    if source == "real":
        summary = (
            "The recorded real programs in the generators' place (`--workloads real`): not "
            "graded; the grades are the generators' (`--workloads generators`, the ledger)."
        )
    if source == "both":
        summary += (
            " Beside them, the same experiments on the recorded real programs "
            "(`--workloads both`; not graded)."
        )
    if result.get("scale") == "paper":
        summary += " " + scale_note(p)
    if source == "generators":
        table = claims_table(result["claims"])
    elif source == "real":
        table = claims_table(result["claims"], ours="xlat: real programs")
    else:
        table = claims_table(result["claims"], real=real["claims"])
    recordings = []
    if real is not None:
        from xlat.reproduce_real import BOTH_NOTE, REAL_NOTE, substitution_table

        recordings = [
            "## The recorded programs in the generators' place",
            "",
            f"Runs stored in `{real['db']}` (apart from the generators' runs).",
            "",
            substitution_table(real["recordings"]),
            "",
        ]
        source_note = [REAL_NOTE if source == "real" else BOTH_NOTE, ""]
    else:
        source_note = []
    data = [
        "## Data (the paper's figures as "
        + ("charts and tables, redrawn from our runs)" if figures else "tables)"),
        "",
        " ".join(p.get("tables_note", TABLES_NOTE).split()),
        "",
        figure_tables(result, figures),
    ]
    if source == "both":
        data += ["## Data on the recorded programs", "", figure_tables(real)]
    return "\n".join(
        [
            f"# Reproduction: {p['title']}",
            "",
            summary,
            "",
            f"Generated by `{command}` from the result store "
            f"({result['seconds']:.0f} s for the runs not stored yet). Paper parameters: "
            f"`{p['preset']}`; claims and experiments: `data/claims/{p['name']}.toml`.",
            "",
            *(
                [f"What the runs cost: {cost_text(result['cost'])}.", ""]
                if "cost" in result
                else []
            ),  # fmt: skip
            *recordings,
            *(["## The baseline first", "", base, ""] if base else []),
            "## Claims",
            "",
            table,
            "",
            *source_note,
            interval_note(result["claims"]),
            "",
            grades_note(),
            "",
            " ".join(p.get("claims_note", CLAIMS_NOTE).split()),
            "",
            *([claim_notes(result["claims"]), ""] if claim_notes(result["claims"]) else []),
            "## How the experiments are scaled",
            "",
            " ".join(p["scaling"].split()),
            "",
            *data,
        ]
    )


def ledger(names: list[str]) -> str:
    """The opening of docs/reproduction.md: every paper's count of grades and its claims table,
    graded from the last full runs' figures recorded in the claims files (:func:`recorded`).

    Examples
    --------
    >>> text = ledger(["tps"])
    >>> text.splitlines()[0], "| tps |" in text
    ('## Grades', True)
    """
    results = {n: recorded(n) for n in names}
    lines = [
        "## Grades",
        "",
        "The full runs (`xlat reproduce PAPER`; each paper's claims table below):",
        "",
        "| paper | " + " | ".join(GRADES) + " | headline claims |",
        "|" + "---|" * (len(GRADES) + 2),
    ]
    for n, r in results.items():
        counts = grade_counts(r["claims"])
        heads = ", ".join(f"{x['id']}: {x['grade']}" for x in r["claims"] if x["headline"])
        heads = heads or "none marked"
        lines.append(f"| {n} | " + " | ".join(str(counts[g]) for g in GRADES) + f" | {heads} |")
    lines += ["", *paper_scale_counts(results), grades_note(), ""]
    lines += [headline_sources(results), ""]
    lines += [paper_scale_section(results), ""]
    every = [c for r in results.values() for c in r["claims"]]
    # Said once for the whole ledger when no recorded figure carries an interval, else per paper.
    once = not any(math.isfinite(c.get("ci95_low", float("nan"))) for c in every)
    if once:
        lines += [interval_note(every), ""]
    for r in results.values():
        p = r["paper"]
        base = baseline_section(p, None)
        note = [] if once else [interval_note(r["claims"]), ""]
        lines += [f"### {p['title']}", "", f"Figures: {p.get('full_run', 'not recorded')}.", "",
                  *(["#### The baseline first", "", base, ""] if base else []),
                  claims_table(r["claims"]), "", *note]  # fmt: skip
    return "\n".join(lines)


#: What the ledger says of its headline claims' two columns (issue 39, item 4).
HEADLINE_SOURCES_NOTE = (
    "Each headline claim on the built-in generators (the figure and grade above) and on the "
    "recorded real programs that stand for them (`xlat reproduce PAPER --workloads real`: each "
    "generator replaced by its program's recording, `COUNTERPARTS` in python/xlat/corpus.py; "
    "generators without one dropped). The real programs' figures are not graded: they come "
    "from recordings whose footprints are their own, named under the table, not the "
    "experiments'. '(P only)': the figure comes from P's recording, the claim's other "
    "generators have none; '—': none has, or the claim selects a generator footprint; "
    "*not run*: no figure recorded yet (the command under the table fills it)."
)


def headline_sources(results: dict[str, dict[str, Any]]) -> str:
    """The ledger's table of every paper's headline claims on both sources: the generators'
    recorded ``full`` figure and grade beside the recorded programs' ``full_real`` (written by
    ``scripts/record_full.py --workloads real``), or why there is none
    (:func:`xlat.reproduce_real.claim_note`), or *not run*; under it, per paper, the paper's
    ``real_run`` (which recordings, at which scale) or the commands that fill the column.

    Examples
    --------
    >>> text = headline_sources({"tps": recorded("tps")})
    >>> "| tps | **tps_walk_refs** |" in text
    True
    """
    from xlat import corpus, reproduce_real

    lines = [
        "### Headline claims on the generators and on the recorded programs",
        "",
        "| paper | id | claim | paper's figure | xlat: generators | grade | xlat: real programs |",
        "|---|---|---|---|---|---|---|",
    ]
    runs = []
    for n, r in results.items():
        p = r["paper"]
        plans = real_plans(p, False, corpus.DEFAULT_OUT)
        claims = {c["id"]: c for c in p["claim"]}
        heads = [row for row in ordered(r["claims"]) if row["headline"]]
        for row in heads:
            c = claims[row["id"]]
            reason, used = reproduce_real.claim_note(c, plans)
            real = {"ours": float(c.get("full_real", float("nan"))), "real_used": used,
                    "real_reason": reason}  # fmt: skip
            cells = [n, f"**{row['id']}**", row["text"], _fmt(row["paper"]), _fmt(row["ours"]),
                     row["grade"], real_cell(real)]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
        if not heads:
            continue
        if p.get("real_run"):
            runs.append(f"- {n}: {' '.join(p['real_run'].split())}")
        else:
            runs.append(
                f"- {n}: not run yet: `xlat reproduce {n} --workloads real --corpus-dir DIR "
                f"--db DB` (DIR: `xlat corpus record ... --out DIR`), then `python "
                f"scripts/record_full.py --workloads real --corpus-dir DIR --db DB --commit "
                f"COMMIT {n}`"
            )
    if len(lines) == 4:
        return ""
    return "\n".join([*lines, "", HEADLINE_SOURCES_NOTE, "", "Real programs' figures:", "",
                      *runs])  # fmt: skip


def experiments_read(block: dict[str, Any]) -> list[str]:
    """The experiments a claim or baseline block reads: its ``experiment`` and
    ``baseline_experiment``, each a name or a list of pooled names.

    Examples
    --------
    >>> experiments_read({"experiment": "main", "baseline_experiment": ["a", "b"]})
    ['main', 'a', 'b']
    >>> experiments_read({})
    []
    """
    names: list[str] = []
    for key in ("experiment", "baseline_experiment"):
        v = block.get(key)
        names += [v] if isinstance(v, str) else list(v or [])
    return names


def claim_at_paper_scale(paper: dict[str, Any], claim: dict[str, Any]) -> bool:
    """Whether every experiment ``claim`` reads (``experiment``, ``baseline_experiment``) has a
    paper-scale form (:func:`at_paper_scale`): only then is its ``--paper-scale`` figure one of
    the paper's scale.

    Examples
    --------
    >>> p = {"experiment": [{"name": "a", "paper": {"source": "s"}}, {"name": "b"}]}
    >>> claim_at_paper_scale(p, {"experiment": "a"})
    True
    >>> claim_at_paper_scale(p, {"experiment": ["a", "b"]})
    False
    """
    exps = {e["name"]: e for e in paper["experiment"]}
    names = experiments_read(claim)
    return bool(names) and all(at_paper_scale(exps[n]) for n in names)


def paper_scale_rows(result: dict[str, Any]) -> list[tuple[dict[str, Any], float, float, str]]:
    """One paper's claims that have a figure at the papers' scale (``full_paper``), in the
    ledger's order: (the claim's row as graded from its full run, the paper-scale figure, its
    effect ratio, its grade by the one grade table).

    Examples
    --------
    >>> rows = paper_scale_rows(recorded("tps"))
    >>> {g for *_, g in rows} <= set(GRADES), len(rows) > 0
    (True, True)
    """
    claims = {c["id"]: c for c in result["paper"]["claim"]}
    out = []
    for row in ordered(result["claims"]):
        if "full_paper" not in claims[row["id"]]:
            continue
        ours = float(claims[row["id"]]["full_paper"])
        e = effect_ratio(row["effect"], row["paper"], ours)
        out.append((row, ours, e, grade_of_ratio(row["effect"], e)))
    return out


def paper_scale_figure(row: dict[str, Any], claim: dict[str, Any], ours: float) -> str:
    """A paper-scale figure as the ledger prints it: with its 95 % interval where its runs
    were sampled (``full_paper_ci95``, written by ``scripts/record_full.py --paper-scale``) and
    what the interval spans that the point figure hides (:func:`interval_spans`).

    Examples
    --------
    >>> row = {"effect": "speedup", "paper": 1.24}
    >>> paper_scale_figure(row, {"full_paper_ci95": [0.995, 1.031]}, 1.013)
    '1.013 [0.995, 1.031] (spans 1.0; grades contradicted to direction only)'
    >>> paper_scale_figure(row, {"full_paper_ci95": [1.009, 1.017]}, 1.013)
    '1.013 [1.009, 1.017]'
    >>> paper_scale_figure(row, {}, 1.013)
    '1.013'
    """
    text = _fmt(ours)
    ci = claim.get("full_paper_ci95")
    if ci is None:
        return text
    low, high = float(ci[0]), float(ci[1])
    text += f" [{_fmt(low)}, {_fmt(high)}]"
    spans = interval_spans(row["effect"], row["paper"], low, high)
    return text + (f" (spans {spans})" if spans else "")


def paper_scale_counts(results: dict[str, dict[str, Any]]) -> list[str]:
    """The ledger's second count of grades: each paper's claims graded from the figures of its
    paper-scale runs (issue 36, acceptance); a claim without a paper-scale form counts as not
    run. Empty when no paper has such figures.

    Examples
    --------
    >>> paper_scale_counts({"tps": recorded("tps")})[0].startswith("At the papers' scale")
    True
    """
    rows = []
    for n, r in results.items():
        graded = paper_scale_rows(r)
        if not graded:
            continue
        counts = grade_counts([{"grade": g} for *_, g in graded])
        counts["not run"] += len(r["claims"]) - len(graded)
        heads = ", ".join(f"{row['id']}: {g}" for row, _, _, g in graded if row["headline"])
        rows.append(f"| {n} | " + " | ".join(str(counts[g]) for g in GRADES)
                    + f" | {heads or 'none marked'} |")  # fmt: skip
    if not rows:
        return []
    return [
        "At the papers' scale (`xlat reproduce PAPER --paper-scale`, the figures of the section "
        '"Figures at the papers\' scale" below; *not run*: a claim whose experiments have no '
        "paper-scale form):",
        "",
        "| paper | " + " | ".join(GRADES) + " | headline claims |",
        "|" + "---|" * (len(GRADES) + 2),
        *rows,
        "",
    ]


def paper_scale_section(results: dict[str, dict[str, Any]]) -> str:
    """The ledger's section of the figures recorded at the papers' scale (issue 36, item 4;
    ``full_paper``, written by ``scripts/record_full.py --paper-scale``): per paper, each claim
    with such a figure, graded by the one grade table beside its full run's figure and grade,
    then the paper's ``paper_run``; a paper without one says how to make them.

    Examples
    --------
    >>> text = paper_scale_section({"tps": recorded("tps")})
    >>> text.splitlines()[0]
    "### Figures at the papers' scale"
    """
    rows, runs, missing = [], [], []
    for n, r in results.items():
        p = r["paper"]
        recorded_rows = paper_scale_rows(r)
        if not recorded_rows:
            missing.append(n)
            continue
        claims = {c["id"]: c for c in p["claim"]}
        for row, ours, e, g in recorded_rows:
            cells = [n, f"**{row['id']}**" if row["headline"] else row["id"], _fmt(row["paper"]),
                     _fmt(row["ours"]), row["grade"],
                     paper_scale_figure(row, claims[row["id"]], ours), _fmt_ratio(e),
                     g]  # fmt: skip
            rows.append("| " + " | ".join(cells) + " |")
        runs.append(f"- {n}: {' '.join(p.get('paper_run', 'run text not recorded').split())}")
    lines = ["### Figures at the papers' scale", ""]
    if rows:
        lines += ["| paper | id | paper's figure | xlat: full run | grade | xlat: paper scale | "
                  "effect ratio | grade |", "|---|---|---|---|---|---|---|---|", *rows, "",
                  "xlat's paper-scale figure carries its 95 % interval where the runs were "
                  "sampled (delta method over the paired windows, docs/timing.md, 'Intervals "
                  "of speedups'; `full_paper_ci95` in the claims file), and *spans* names 1.0 "
                  "or the grades of the interval's two ends when they differ; the grade stays "
                  "the point figure's. A figure without an interval comes from unsampled runs "
                  "(one run per point, one seed).", "",
                  "Paper-scale figures:",
                  "", *runs, ""]  # fmt: skip
    if missing:
        lines.append(
            f"No figure at the paper's scale is recorded for {', '.join(missing)}: `xlat "
            f"reproduce PAPER --paper-scale --db DB` (hours on a 2-core machine; resumable), "
            f"then `python scripts/record_full.py --paper-scale --db DB --commit COMMIT PAPER`. "
            f"What each paper's scale is: docs/reproduction.md, \"At the papers' scale\"."
        )
    return "\n".join(lines)


def parse_overrides(items: list[str] | None) -> dict[str, str]:
    """``--set KEY=VALUE`` items as a table, each key checked against the configuration (a
    ReproduceError naming the item otherwise).

    Examples
    --------
    >>> parse_overrides(["timing.model=simple"])
    {'timing.model': 'simple'}
    >>> parse_overrides(["timing.modle=simple"])
    Traceback (most recent call last):
    ...
    xlat.reproduce.ReproduceError: --set timing.modle=simple: --set: unknown configuration key ...
    """
    from xlat import _core
    from xlat.run import resolve_config_sources

    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise ReproduceError(
                f"--set expects KEY=VALUE (e.g. timing.model=simple), got '{item}'"
            )
        try:
            resolve_config_sources(set={key: value})
        except (_core.XlatError, ValueError) as e:
            raise ReproduceError(f"--set {item}: {e}") from None  # names the key, or the value
        out[key] = value
    return out


def main(args) -> int:
    """``xlat reproduce`` (see ``commands.add_parsers``)."""
    paper = args.paper or ("all" if args.list else None)
    if paper is None:
        raise ReproduceError(
            f"name a paper ({', '.join(papers()) or 'none installed'}) or all; "
            "--list lists them with their experiments and claims"
        )
    names = papers() if paper == "all" else [paper]
    if not names:
        raise ReproduceError(no_papers_message())
    if args.list:
        for n in names:
            p = load_paper(n)
            print(f"{n}: {p['title']}")
            for e in p["experiment"]:
                print(f"  experiment {e['name']}: {e['description']} ({e['figure']})")
            for c in p["claim"]:
                q = " [quick]" if c.get("quick") else ""
                h = " [headline]" if c.get("headline") else ""
                print(f"  claim {c['id']}: {c['text']} ({c['ref']}){h}{q}")
        return 0
    if getattr(args, "recorded", False):
        if getattr(args, "paper_scale", False):
            raise ReproduceError(
                "--recorded grades the full runs' recorded figures; --paper-scale runs the "
                "experiments at the papers' scale: give one"
            )
        return _recorded(args, names)
    overrides = parse_overrides(getattr(args, "set", None))
    if getattr(args, "experiment", None) and len(names) > 1:
        raise ReproduceError(
            "--experiment names an experiment of one paper: give the paper's name, not all"
        )
    source = getattr(args, "workloads", "generators")
    if getattr(args, "corpus_dir", None) is not None and source == "generators":
        raise ReproduceError(
            "--corpus-dir names the folder of the recorded programs: it needs --workloads real "
            "or both"
        )
    try:
        return _reproduce_papers(args, names, overrides)
    finally:
        # One Ray instance served every experiment (starting one per experiment cost more than
        # the --quick simulations themselves).
        ray = sys.modules.get("ray")
        if ray is not None and ray.is_initialized():
            ray.shutdown()


def _recorded(args, names: list[str]) -> int:
    """``--recorded``: grade the claims from the full runs' figures in the claims files."""
    if args.quick or getattr(args, "set", None):
        raise ReproduceError("--recorded runs nothing: it takes neither --quick nor --set")
    if getattr(args, "workloads", "generators") != "generators":
        raise ReproduceError(
            "--recorded shows the recorded figures of both sources (the ledger's headline "
            "claims): it takes no --workloads"
        )
    if getattr(args, "json", False):
        import json

        out = {n: json_paper(recorded(n)) for n in names}
        print(json.dumps(out if len(names) > 1 else out[names[0]], indent=2))
    else:
        print(ledger(names))
    return 0


def _reproduce_papers(args, names: list[str], overrides: dict[str, str]) -> int:
    status = 0
    as_json = getattr(args, "json", False)
    source = getattr(args, "workloads", "generators")
    corpus_dir = getattr(args, "corpus_dir", None)
    everything = {}
    for n in names:
        progress = "errors" if args.quiet or as_json else "lines"
        paper_scale = getattr(args, "paper_scale", False)
        chosen = getattr(args, "experiment", None)
        result = reproduce(n, args.quick, args.db, args.workers, progress, keep_ray=True,
                           overrides=overrides, experiments=chosen, workloads=source,
                           corpus_dir=corpus_dir, paper_scale=paper_scale)  # fmt: skip
        command = f"xlat reproduce {n}" + (" --quick" if args.quick else "")
        command += " --paper-scale" if paper_scale else ""
        command += "".join(f" --experiment {e}" for e in chosen or [])
        command += "".join(f" --set {k}={v}" for k, v in overrides.items())
        if source != "generators":
            command += f" --workloads {source}"
            command += f" --corpus-dir {corpus_dir}" if corpus_dir is not None else ""
        real = result.get("real") if source == "both" else result if source == "real" else None
        if args.out:
            stem = f"reproduce-{n}{'-quick' if args.quick else ''}"
            stem += "-paper" if paper_scale else ""
            stem += f"-{source}" if source != "generators" else ""
            figures = experiment_figures(result, Path(args.out), stem)
            out = Path(args.out) / f"{stem}.md"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(report(result, command, figures) + "\n", encoding="utf-8")
            print(f"report written: {out}", file=sys.stderr)
        if as_json:
            everything[n] = json_paper(result)
        else:
            if real is not None:
                from xlat.reproduce_real import BOTH_NOTE, REAL_NOTE, substitution_table

                print(f"The recorded programs in the generators' place (runs stored in "
                      f"{real['db']}):\n")  # fmt: skip
                print(substitution_table(real["recordings"]) + "\n")
            base = baseline_section(result["paper"], result["frames"])
            if source == "both":
                table = claims_table(result["claims"], real=real["claims"])
            elif source == "real":
                table = claims_table(result["claims"], ours="xlat: real programs")
            else:
                table = claims_table(result["claims"])
            if result.get("scale") == "paper":
                print(scale_note(result["paper"]) + "\n")
            print((base + "\n\n" if base else "") + table)
            print()
            if real is not None:
                print((REAL_NOTE if source == "real" else BOTH_NOTE) + "\n")
            print(interval_note(result["claims"]))
            if "cost" in result:
                print(f"\nWhat the runs cost: {cost_text(result['cost'])}.")
        for r, db in ((result, args.db), (real if source == "both" else None, None)):
            if r is not None and r["failed"]:
                print(f"xlat: error: {r['failed']} runs failed (see xlat results --status "
                      f"failed --db {r.get('db', db)})", file=sys.stderr)  # fmt: skip
                status = 1
        if source == "real":
            continue  # the quick check is the generators' (their recorded full figures)
        flipped = [r["id"] for r in result["claims"] if r["quick"] and args.quick
                   and not r["direction_as_full"]]  # fmt: skip
        if flipped:
            print(f"xlat: error: {n}: quick direction differs from the full run's for "
                  f"{', '.join(flipped)}", file=sys.stderr)  # fmt: skip
            status = 1
    if as_json:
        import json

        print(json.dumps(everything if len(names) > 1 else everything[names[0]], indent=2))
    return status
