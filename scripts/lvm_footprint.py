#!/usr/bin/env python3
"""Walk cycles of radix, fpt, lvm and ideal as a function of the footprint (GUPS, 4 KiB pages),
measured after a warm-up that covers the setup's first touches (LVM §7.1-§7.2 regime study).

Runs the ``run`` example of the xlat crate once per point (sequentially, ``nice``) and prints a
Markdown table. Usage::

    cargo build --release -p xlat --example run
    python3 scripts/lvm_footprint.py [--footprints 1,4,16,32] [--refs 4M] [--thp] > out/x.md

The warm-up is ``footprint / 4 KiB`` references (gups touches every page once at setup) plus
``--extra-warmup`` (2M) to warm the TLBs, PWCs, LWC and caches; ``--refs`` are then measured.
"""

import argparse
import json
import os
import subprocess
import sys

RUN = os.path.join(os.path.dirname(__file__), "..", "target", "release", "examples", "run")
DESIGNS = ["radix", "fpt", "lvm", "ideal"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--footprints", default="1,4,16,32", help="GiB, comma list")
    p.add_argument("--refs", default="4M")
    p.add_argument("--extra-warmup", type=int, default=2_000_000)
    p.add_argument("--workload", default="gups")
    p.add_argument("--thp", action="store_true", help="os.thp = always")
    a = p.parse_args()
    print(
        "| footprint | design | walk cycles | vs radix | vs ideal | refs / walk | walks / kref "
        "| radix PDE-PWC miss | radix PDPTE-PWC miss | lvm LWC hit | lvm index B |"
    )
    print("|" + "---|" * 11)
    for gib in a.footprints.split(","):
        pages = (int(gib) << 30) // 4096
        rows = {}
        for d in DESIGNS:
            cmd = [
                "nice",
                RUN,
                f"sim.design={d}",
                f"workload.name={a.workload}",
                f"workload.footprint={gib}GiB",
                f"sim.warmup_refs={pages + a.extra_warmup}",
                f"sim.refs={a.refs}",
                f"os.phys_mem_bytes={max(16, 2 * int(gib))}GiB",
            ]
            if a.thp:
                cmd.append("os.thp=always")
            rows[d] = json.loads(subprocess.run(cmd, check=True, capture_output=True).stdout)
            print(d, gib, "done", file=sys.stderr, flush=True)
        base, ideal = rows["radix"]["walk"]["avg_cycles"], rows["ideal"]["walk"]["avg_cycles"]
        for d, r in rows.items():
            w = r["walk"]
            rx, lv = r.get("radix", {}), r.get("lvm", {})
            cells = [
                f"{gib} GiB",
                d,
                f"{w['avg_cycles']:.1f}",
                f"{100 * (w['avg_cycles'] / base - 1):+.1f} %",
                f"{100 * (w['avg_cycles'] / ideal - 1):+.1f} %",
                f"{w['avg_mem_accesses']:.3f}",
                f"{1000 * w['count'] / r['refs']:.1f}",
                f"{rx['pwc_pde_miss_rate']:.3f}" if rx else "",
                f"{rx['pwc_pdpte_miss_rate']:.3f}" if rx else "",
                f"{lv['lwc_hit_rate']:.4f}" if lv else "",
                str(lv.get("index_bytes", "")),
            ]
            print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
