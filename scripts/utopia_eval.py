#!/usr/bin/env python3
"""Utopia evaluation at scaled-down footprints (docs/designs/utopia.md).

Runs the core crate's `run` example (build it first:
``cargo build --release -p xlat --example run``) once per design, workload and page-size
setting, one run at a time, and prints the figures of docs/designs/utopia.md as Markdown.

Scaling of the paper's Table 2 setup: footprints 8-10 GB -> ``--footprint`` (2 GiB), RestSegs
2 x 512 MiB -> 2 x 128 MiB (the same RestSeg / footprint ratio of 1/16), 500 M instructions
-> ``--refs`` references (no warm-up: the first touch of every page is in the run).

Examples
--------
>>> # python3 scripts/utopia_eval.py --refs 10M --footprint 2GiB > /tmp/utopia.md
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys

RUN = "target/release/examples/run"
DESIGNS = ["radix", "pom_tlb", "ecpt", "utopia", "perfect_tlb"]


def restsegs(seg_bytes):
    return (
        "utopia.restsegs=["
        f'{{bytes={seg_bytes},page_size="4KiB",ways=16}},'
        f'{{bytes={seg_bytes},page_size="2MiB",ways=16}}]'
    )


def run(design, workload, thp, args, extra=()):
    cmd = [
        "nice",
        RUN,
        f"sim.design={design}",
        f"workload.name={workload}",
        f"workload.footprint={args.footprint}",
        f"sim.refs={args.refs}",
        f"os.thp={thp}",
        restsegs(args.restseg_bytes),
        *extra,
    ]
    # Records are cached by command line (deterministic runs), so an interrupted sweep resumes.
    key = hashlib.sha1(" ".join(cmd).encode()).hexdigest()[:16]
    path = os.path.join(args.cache, f"{design}-{workload}-{thp}-{key}.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    os.makedirs(args.cache, exist_ok=True)
    with open(path, "w") as f:
        f.write(out)
    return json.loads(out)


def figures(r):
    """Translation figures of one record (TLB-miss walks only)."""
    l2 = r["config"]["tlb"]["l2"]["latency_cycles"]
    t = r["tlb"]
    xlat = t["l2_lookups"] * l2 + r["walk"]["cycles"]
    return {
        "cycles": r["timing"]["cycles"],
        "xlat_per_l1_miss": xlat / max(t["l1_misses"], 1),
        "walk_mem": r["walk"]["mem_accesses"],
        "walk_dram": r["cache"]["pt_served_dram"],
        "row_conflicts": r["dram"]["row_conflicts"],
        "instructions": r["instructions"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refs", default="10M")
    ap.add_argument("--footprint", default="2GiB")
    ap.add_argument("--restseg-bytes", type=int, default=128 << 20)
    ap.add_argument("--runs", default="never:gups,never:bfs,never:xsbench,always:gups")
    ap.add_argument("--cache", default="/tmp/utopia_eval")
    args = ap.parse_args()
    print(HEADER, flush=True)
    for thp_w in args.runs.split(","):
        thp, w = thp_w.split(":")
        rec = {d: run(d, w, thp, args) for d in DESIGNS}
        serial = run("utopia", w, thp, args, ["utopia.rsw_parallel_with_l2_tlb=false"])
        f = {d: figures(r) for d, r in rec.items()}
        base = f["radix"]
        speed = {d: base["cycles"] / f[d]["cycles"] for d in DESIGNS}
        serial = base["cycles"] / serial["timing"]["cycles"]
        print(row(thp, w, f, rec["utopia"]["utopia"], speed, serial), flush=True)
        print(f"done {thp} {w}", file=sys.stderr)


HEADER = (
    "| THP | workload | speedup pom_tlb / ecpt / utopia (serial RSW) / perfect_tlb "
    "| xlat latency vs radix: pom / ecpt / utopia | translation mem refs vs radix "
    "| RSW : FlexSeg walk cycles | TAR / SF cache hit | walks avoided "
    "| migrations / kilo-instr (evict share) | stalled walks | DRAM row conflicts vs radix |\n"
    + "|"
    + "---|" * 11
)


def row(thp, w, f, u, speed, serial):
    """One Markdown row of the table."""
    b = f["radix"]
    lat = " / ".join(
        f"{100 * (f[d]['xlat_per_l1_miss'] / b['xlat_per_l1_miss'] - 1):+.0f} %"
        for d in ["pom_tlb", "ecpt", "utopia"]
    )
    mem = f"{100 * (f['utopia']['walk_mem'] / max(b['walk_mem'], 1) - 1):+.0f} %"
    rsw = u["rsw_avg_cycles"] or 0
    ratio = f"{rsw:.0f} : {u['flex_walk_avg_cycles']:.0f}"
    migr = u["migrations"] / (f["utopia"]["instructions"] / 1000)
    share = u["migrations_eviction"] / max(u["migrations"], 1)
    rbc = f"{100 * (f['utopia']['row_conflicts'] / b['row_conflicts'] - 1):+.0f} %"
    return (
        f"| {thp} | {w} | {speed['pom_tlb']:.2f} / {speed['ecpt']:.2f} / "
        f"{speed['utopia']:.2f} ({serial:.2f}) / {speed['perfect_tlb']:.2f} | {lat} | {mem} "
        f"| {ratio} | {100 * u['tar_cache_hit_rate']:.0f} % / "
        f"{100 * u['sf_cache_hit_rate']:.0f} % | {100 * u['walks_avoided_share']:.0f} % "
        f"| {migr:.2f} ({100 * share:.0f} %) | {u['stalled_walks']} | {rbc} |"
    )


if __name__ == "__main__":
    main()
