#!/usr/bin/env python3
"""Sampled against full detailed runs of several cores (issue 40): does each sampled run's 95 %
interval hold the full run's IPC, for the machine and for every core?

Runs the `run` example (``cargo build --release -p xlat --example run``) twice per row: a full
detailed run (``sim.sampling.interval = 0``) and the same run sampled with the given unit, and
prints a Markdown table (docs/timing.md, "Sampling several cores"). Nothing here runs in CI.

Usage::

    python scripts/sampling_cores_validate.py [--refs 1M] [--footprint 1GiB]
        [--interval 10000] [--window 2000] [--warmup 2000] [--dram queued,idle]
        [--sets gups,btree gups,stream ...] [--design radix] [--bin PATH]

Example (a quick check)::

    python scripts/sampling_cores_validate.py --refs 200000 --footprint 64MiB --sets gups,btree
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SETS = [
    "gups,btree",
    "gups,stream",
    "bfs,kv",
    "xsbench,pagerank",
    "gups,btree,stream,kv",
    "bfs,pagerank,xsbench,gups",
]


def run(binary: Path, keys: list[str]) -> tuple[dict, float]:
    """One run of the example: its record and its wall seconds."""
    t = time.monotonic()
    env = {**os.environ, "XLAT_TIMING_THREAD": "off"}
    out = subprocess.run([str(binary), *keys], check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout), time.monotonic() - t


def inside(x: float, est: dict) -> str:
    lo, hi = est.get("ipc_ci95_low"), est.get("ipc_ci95_high")
    if lo is None or hi is None:
        return "no interval"
    return "yes" if lo <= x <= hi else "**no**"


def interval(est: dict) -> str:
    lo, hi = est.get("ipc_ci95_low", float("nan")), est.get("ipc_ci95_high", float("nan"))
    return f"{est['ipc']:.4f} [{lo:.4f}, {hi:.4f}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--refs", default="1M", help="sim.refs per process")
    ap.add_argument("--footprint", default="1GiB")
    ap.add_argument("--interval", default="10000")
    ap.add_argument("--window", default="2000")
    ap.add_argument("--warmup", default="2000", help="sim.sampling.detailed_warmup")
    ap.add_argument("--dram", default="queued,idle", help="mem.dram.model values, comma-separated")
    ap.add_argument("--design", default="radix")
    ap.add_argument(
        "--sets", nargs="*", default=DEFAULT_SETS, help="workload lists, one process each"
    )
    ap.add_argument("--bin", type=Path, default=ROOT / "target/release/examples/run")
    a = ap.parse_args()
    if not a.bin.exists():
        sys.exit(f"{a.bin} not found: build it with `cargo build --release -p xlat --example run`")
    print(
        "| DRAM | workloads | full IPC (machine) | sampled [95 % CI] | inside "
        "| per core: full IPC, sampled [95 % CI], inside | wall s full / sampled |"
    )
    print("|---|---|---|---|---|---|---|")
    held = total = 0
    for dram in a.dram.split(","):
        for ws in a.sets:
            n = len(ws.split(","))
            base = [
                f"sim.design={a.design}",
                f"sim.cores={n}",
                f"workload.name={ws}",
                f"workload.footprint={a.footprint}",
                f"os.phys_mem_bytes={4 * n}GiB",
                f"sim.refs={a.refs}",
                f"mem.dram.model={dram}",
            ]
            full, tf = run(a.bin, base + ["sim.sampling.interval=0"])
            samp, ts = run(
                a.bin,
                base
                + [
                    f"sim.sampling.interval={a.interval}",
                    f"sim.sampling.window={a.window}",
                    f"sim.sampling.detailed_warmup={a.warmup}",
                ],
            )
            s = samp["sampling"]
            ipc = full["timing"]["ipc"]
            ok = inside(ipc, s["estimate"])
            held += ok == "yes"
            total += 1
            cores = []
            for k, c in enumerate(full["cores"]):
                est = s["cores"][k].get("estimate")
                if est is None:
                    cores.append(f"{k}: no window")
                    continue
                ck = inside(c["timing"]["ipc"], est)
                held += ck == "yes"
                total += 1
                cores.append(f"{k}: {c['timing']['ipc']:.4f}, {interval(est)}, {ck}")
            print(
                f"| {dram} | {ws} | {ipc:.4f} | {interval(s['estimate'])} | {ok} | "
                f"{'<br>'.join(cores)} | {tf:.1f} / {ts:.1f} |",
                flush=True,
            )
    print(f"\nThe full run's IPC inside the sampled run's interval: {held} of {total}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
