#!/usr/bin/env python3
"""The perfect-TLB bound of each speedup claim: how much faster *any* translation design could
make the claim's baseline, on the claim's own runs (issue 41, item 4).

For every ``speedup`` claim of a paper, each of its baseline's runs in a result store (``xlat
reproduce PAPER [--paper-scale] --db DB``) gets a twin: the same stored configuration with
``sim.design = "perfect_tlb"`` (every translation an L1 TLB hit, nested ones included; the OS
model, its faults and their OS time unchanged). The claim's bound is the geometric mean over its
grid points of the baseline's time over the twin's, counted as the claim counts (``metric``):
no design can score more than it on the claim in xlat's configuration. Where the paper's figure
is above the bound, the gap is not in the design's mechanism but in how much time the baseline
spends on translation: ``1 - 1/bound`` of its time in xlat, against at least ``1 - 1/paper``
that the paper's figure needs.

Twins already in the store (a paper whose experiments run ``perfect_tlb``, e.g. Utopia) are
used as they are; the others are simulated here, one process per run (``--workers``), each
record written atomically to ``--out`` (``<key>.json``), so an interrupted run resumes.

Usage::

    python scripts/translation_bound.py --db STORE.duckdb --out DIR [--workers 2] \\
        [--claims id,id] [--bound-design perfect_tlb|ideal] [--full] [--per-point] \\
        [--dry-run] PAPER

prints one row per claim: the paper's figure, xlat's, the bound, the translation share the
paper's figure needs and the share xlat's baseline has, the baseline's walks per thousand
references and walk latency, the walks' latency summed over the baseline's core cycles and the
part of it the bound's design removes from the run time, and the number of grid points.
``--bound-design ideal`` bounds a page-table design instead: every walk one memory access.
``--full`` reads a store of the full runs (``xlat reproduce PAPER``). Results: docs/reproduction.md,
"Why the speedups fall short: each claim's perfect-TLB bound".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from xlat import reproduce  # noqa: E402

KEYS = ("workload", "config.workload.footprint", "seed")


def toml_value(v) -> str:
    """A TOML literal for a JSON value of a stored configuration.

    >>> toml_value(True), toml_value(3), toml_value("a"), toml_value([1, "b"])
    ('true', '3', '"a"', '[1, "b"]')
    >>> toml_value({"x": 1, "y": None})
    '{x = 1}'
    """
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        inner = ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items() if x is not None)
        return "{" + inner + "}"
    raise TypeError(f"no TOML form for {v!r}")


def config_toml(cfg: dict, prefix: str = "") -> str:
    """A stored configuration (``config_json``) as a preset: every key, nested tables as
    ``[section.sub]`` headers (the form `xlat run --preset` reads back to the same values).

    >>> print(config_toml({"sim": {"refs": 5, "sampling": {"window": 2}}}).strip())
    [sim]
    refs = 5
    [sim.sampling]
    window = 2
    """
    out: list[str] = []
    scalars = {k: v for k, v in cfg.items() if not isinstance(v, dict) and v is not None}
    if prefix and scalars:
        out.append(f"[{prefix}]")
    out += [f"{k} = {toml_value(v)}" for k, v in scalars.items()]
    for k, v in cfg.items():
        if isinstance(v, dict):
            out.append(config_toml(v, f"{prefix}.{k}" if prefix else k).rstrip("\n"))
    return "\n".join(x for x in out if x) + "\n"


def twin_config(config_json: str, design: str = "perfect_tlb") -> dict:
    """The stored configuration with the design replaced by ``design`` (a perfect TLB).

    >>> twin_config('{"sim": {"design": "radix", "refs": 5}}')["sim"]
    {'design': 'perfect_tlb', 'refs': 5}
    """
    cfg = json.loads(config_json)
    cfg["sim"]["design"] = design
    return cfg


def twin_key(cfg: dict) -> str:
    """A file name for a twin: the hash of its configuration (the same twin of two baselines
    whose configurations differ only in the design is run once)."""
    return hashlib.sha256(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[:20]


def run_twin(cfg: dict, path: str) -> str:
    """Simulate one twin and write its record to ``path`` atomically; returns ``path``."""
    import xlat

    with tempfile.TemporaryDirectory() as tmp:
        preset = Path(tmp) / "twin.toml"
        preset.write_text(config_toml(cfg))
        record = xlat.run(preset=str(preset), profile="none")
    part = f"{path}.part"
    with open(part, "w") as f:
        json.dump(record, f)
    os.replace(part, path)
    return path


def walk_latency(r) -> float:
    """A run's average walk latency in cycles: as the out-of-order core timed it (queueing
    included), or the walks' own (`walk.avg_cycles`) where the record has no timed figure (the
    idle DRAM model's runs)."""
    timed = r.get("timing.avg_walk_latency_cycles")
    if timed is not None and math.isfinite(float(timed)):
        return float(timed)
    return float(r["walk.avg_cycles"])


def time_of(cycles: float, os_cycles: float, metric: str) -> float:
    return cycles + (os_cycles if metric == "total" else 0.0)


def bound_rows(
    paper: str,
    db: str,
    out: Path,
    workers: int,
    only: set[str] | None,
    dry_run: bool,
    paper_scale: bool = True,
    bound_design: str = "perfect_tlb",
) -> list[dict]:
    """One row per speedup claim of ``paper`` (those in ``only``, if given): its bound, the
    bound design's time over the baseline's on the claim's grid points (see the module doc),
    with the twins simulated into ``out`` unless ``dry_run``."""
    result = reproduce.reproduce(paper, db=db, progress="errors", paper_scale=paper_scale)
    if result["simulated"]:
        print(f"{paper}: {result['simulated']} runs were not in {db} and were simulated now",
              file=sys.stderr)  # fmt: skip
    frames = result["frames"]
    claims = [c for c in result["paper"]["claim"] if c["kind"] == "speedup"]
    if only:
        claims = [c for c in claims if c["id"] in only]
    plans: dict[str, dict] = {}
    per_claim: list[tuple[dict, list[tuple[object, str]]]] = []
    for c in claims:
        exp = c.get("baseline_experiment") or c["experiment"]
        rows = reproduce._pooled(frames, exp)
        if rows is None or len(rows) == 0:
            continue
        base = reproduce._select(rows, c["baseline"], c.get("baseline_set", c.get("set", {})))
        own = reproduce._select(rows, bound_design, c.get("baseline_set", c.get("set", {})))
        stored = {tuple(r[k] for k in KEYS if k in rows.columns): r for _, r in own.iterrows()}
        pairs = []
        for _, r in base.iterrows():
            point = tuple(r[k] for k in KEYS if k in rows.columns)
            if point in stored:  # the experiment ran the bound's design itself
                pairs.append((r, stored[point]))
                continue
            cfg = twin_config(r["config_json"], bound_design)
            key = twin_key(cfg)
            plans.setdefault(key, cfg)
            pairs.append((r, key))
        per_claim.append((c, pairs))
    out.mkdir(parents=True, exist_ok=True)
    todo = {k: cfg for k, cfg in plans.items() if not (out / f"{k}.json").exists()}
    print(f"{paper}: {len(plans)} twins, {len(todo)} to simulate", file=sys.stderr)
    if todo and not dry_run and workers <= 1:  # in this process, one after the other
        for n, (k, cfg) in enumerate(todo.items(), 1):
            print(f"  {n}/{len(todo)} {run_twin(cfg, str(out / f'{k}.json'))}", file=sys.stderr)
    elif todo and not dry_run:
        with ProcessPoolExecutor(max_workers=workers, initializer=os.nice, initargs=(10,)) as pool:
            futs = [pool.submit(run_twin, cfg, str(out / f"{k}.json")) for k, cfg in todo.items()]
            for n, f in enumerate(as_completed(futs), 1):
                print(f"  {n}/{len(futs)} {f.result()}", file=sys.stderr)
    rows = []
    for c, pairs in per_claim:
        metric = c.get("metric", "cycles")
        ratios, walks_pkr, lat, serial, exposed = [], [], [], [], []
        per_point: list[tuple[str, str, float]] = []
        for r, key in pairs:
            if isinstance(key, str):
                path = out / f"{key}.json"
                if not path.exists():
                    continue
                rec = json.loads(path.read_text())
                t = rec["timing"]
                twin = time_of(t["cycles"], t.get("os_cycles", 0.0), metric)
                same = (rec["refs"], rec["instructions"]) == (
                    int(r["refs"]),
                    int(r["instructions"]),
                )
            else:  # the experiment's own run of the bound's design
                twin = time_of(float(key["timing.cycles"]), float(key["timing.os_cycles"]), metric)
                same = (int(key["refs"]), int(key["instructions"])) == (
                    int(r["refs"]),
                    int(r["instructions"]),
                )
            # The twin must run the baseline's references, no more, no fewer (several processes
            # on several cores split them by time, so there only the design differs).
            if not same and "," not in str(r["workload"]):
                raise SystemExit(
                    f"{c['id']}: the {bound_design} twin of {r['workload']} ran other "
                    "references than its baseline"
                )
            base = time_of(float(r["timing.cycles"]), float(r["timing.os_cycles"]), metric)
            ratios.append(base / twin)
            per_point.append((str(r["workload"]), str(r.get("config.workload.footprint", "")),
                              base / twin))  # fmt: skip
            # Walk latency summed over the walks, as a share of the baseline's core cycles, and
            # the part of it the perfect TLB removes (the rest overlapped other work).
            walk_sum = float(r["walk.count"]) * walk_latency(r)
            core = float(r["timing.cycles"])
            core_twin = (rec["timing"]["cycles"] if isinstance(key, str)
                         else float(key["timing.cycles"]))  # fmt: skip
            serial.append((walk_sum, core))
            exposed.append(core - core_twin)
            walks_pkr.append(1000.0 * float(r["walk.count"]) / float(r["refs"]))
            lat.append(walk_latency(r))
        gm = reproduce._geomean(ratios)
        rows.append(
            {
                "id": c["id"],
                "baseline": c["baseline"],
                "paper": float(c["paper"]),
                "xlat": c.get("full_paper" if paper_scale else "full"),
                "bound": gm,
                "points": f"{len(ratios)}/{len(pairs)}",
                "per_point": per_point,
                "needed_share": 1 - 1 / float(c["paper"]),
                "share": 1 - 1 / gm if math.isfinite(gm) else float("nan"),
                "walks_per_kref": sum(walks_pkr) / len(walks_pkr) if walks_pkr else float("nan"),
                "walk_latency": sum(lat) / len(lat) if lat else float("nan"),
                # Pooled over the points (sums, not a mean of per-point ratios: a point with
                # few walks would dominate one).
                "serial_share": _ratio(sum(w for w, _ in serial), sum(k for _, k in serial)),
                "exposed": _ratio(sum(exposed), sum(w for w, _ in serial)),
            }
        )
    return rows


def point_table(rows: list[dict]) -> str:
    """Each claim's bound per grid point (workload, footprint), as a Markdown table: which
    workloads leave room for a design and which none."""
    lines = ["| claim | workload | footprint | bound at the point |", "|---|---|---|---|"]
    for r in rows:
        for workload, footprint, ratio in r["per_point"]:
            lines.append(f"| `{r['id']}` | {workload} | {footprint} | {ratio:.3f} |")
    return "\n".join(lines)


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def table(rows: list[dict], bound_design: str = "perfect_tlb") -> str:
    """The rows of :func:`bound_rows` as a Markdown table."""
    head = (
        f"| claim | baseline | paper | xlat | `{bound_design}` bound | paper's figure above the "
        "bound | translation share the paper needs | xlat's baseline's | baseline walks per "
        "1000 refs | baseline walk latency, cycles | walks' latency summed / baseline's "
        f"core cycles | of it removed by `{bound_design}` | points |"
    )
    lines = [head, "|" + "---|" * 13]
    for r in rows:
        xl = "—" if r["xlat"] is None else f"{float(r['xlat']):.3f}"
        above = "yes" if r["paper"] > r["bound"] else "no"
        lines.append(
            f"| `{r['id']}` | {r['baseline']} | {r['paper']:.3f} | {xl} | {r['bound']:.3f} | "
            f"{above} | {100 * r['needed_share']:.1f} % | {100 * r['share']:.1f} % | "
            f"{r['walks_per_kref']:.1f} | {r['walk_latency']:.1f} | "
            f"{100 * r['serial_share']:.0f} % | {100 * r['exposed']:.0f} % | {r['points']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paper")
    ap.add_argument("--db", required=True, help="result store of the paper's runs")
    ap.add_argument("--out", required=True, type=Path, help="folder of the twins' records")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--claims", help="comma-separated claim ids (default: every speedup)")
    ap.add_argument("--dry-run", action="store_true", help="count the twins, simulate none")
    ap.add_argument(
        "--full",
        action="store_true",
        help="the store holds the full runs (`xlat reproduce PAPER`), not the paper-scale ones",
    )
    ap.add_argument(
        "--bound-design",
        default="perfect_tlb",
        help="the design whose time bounds the claim: perfect_tlb (any translation design) or "
        "ideal (any page table: one access per walk)",
    )
    ap.add_argument("--per-point", action="store_true", help="also the bound at each grid point")
    a = ap.parse_args(argv)
    only = set(a.claims.split(",")) if a.claims else None
    if not Path(a.db).is_file():
        # `xlat reproduce` would start the paper's whole grid in a new store: refuse instead.
        scale = "" if a.full else "--paper-scale "
        print(f"translation_bound: no result store {a.db} (run `xlat reproduce {a.paper} "
              f"{scale}--db {a.db}` first)", file=sys.stderr)  # fmt: skip
        return 2
    try:
        rows = bound_rows(a.paper, a.db, a.out, a.workers, only, a.dry_run, not a.full,
                          a.bound_design)  # fmt: skip
    except reproduce.ReproduceError as e:
        print(f"translation_bound: {e}", file=sys.stderr)
        return 2
    print(table(rows, a.bound_design))
    if a.per_point:
        print()
        print(point_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
