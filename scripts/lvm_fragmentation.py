#!/usr/bin/env python3
"""LVM under limited physical contiguity (LVM §7.3): radix, fpt and lvm (GPT blocks up to
1 GiB, and capped at 256 KiB with ``lvm.max_gpt_order = 6``) at FMFI 0 / 0.8 / 0.85 / 0.9.

Runs the ``run`` example of the xlat crate once per point (sequentially, ``nice``) and prints a
Markdown table. Usage::

    cargo build --release -p xlat --example run
    python3 scripts/lvm_fragmentation.py [--workloads gups,kv] [--footprint 4GiB] \
        [--warmup 2M] [--refs 6M] > out/lvm-fragmentation.md
"""

import argparse
import json
import os
import subprocess
import sys

RUN = os.path.join(os.path.dirname(__file__), "..", "target", "release", "examples", "run")
VARIANTS = [
    ("radix", ["sim.design=radix"]),
    ("fpt", ["sim.design=fpt"]),
    ("lvm", ["sim.design=lvm"]),
    ("lvm 256K", ["sim.design=lvm", "lvm.max_gpt_order=6"]),
]


def run(args, workload, fmfi, extra):
    cmd = [
        "nice",
        RUN,
        f"workload.name={workload}",
        f"workload.footprint={args.footprint}",
        f"sim.warmup_refs={args.warmup}",
        f"sim.refs={args.refs}",
        f"os.phys_mem_bytes={args.phys}",
        f"os.fmfi_target={fmfi}",
        *extra,
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", default="gups,kv")
    p.add_argument("--footprint", default="4GiB")
    p.add_argument("--warmup", default="2M")
    p.add_argument("--refs", default="6M")
    p.add_argument("--phys", default="16GiB")
    p.add_argument("--fmfi", default="0,0.8,0.85,0.9")
    a = p.parse_args()
    print(
        "| workload | FMFI (target / measured) | design | walk cycles | refs / walk "
        "| lvm leaves | index B | LWC hit | single-access | collision rate "
        "| retrains / rebuilds | fpt flattened / fallbacks | largest PT block |"
    )
    print("|" + "---|" * 13)
    for w in a.workloads.split(","):
        for f in a.fmfi.split(","):
            for name, extra in VARIANTS:
                r = run(a, w, f, extra)
                wk, os_ = r["walk"], r["os"]
                lv = r.get("lvm", {})
                fp = r.get("fpt", {})
                cells = [
                    w,
                    f"{f} / {os_['fmfi_before']:.3f}",
                    name,
                    f"{wk['avg_cycles']:.1f}",
                    f"{wk['avg_mem_accesses']:.3f}",
                    str(lv.get("leaves", "")),
                    str(lv.get("index_bytes", "")),
                    f"{lv['lwc_hit_rate']:.4f}" if lv else "",
                    f"{lv['single_access_walk_share']:.4f}" if lv else "",
                    f"{lv['collision_rate']:.5f}" if lv else "",
                    f"{lv['retrains']} / {lv['rebuilds']}" if lv else "",
                    f"{fp['flattened_tables']} / {fp['lower_fallbacks'] + fp['upper_fallbacks']}"
                    if fp
                    else "",
                    f"{r['page_table']['max_contiguous_bytes'] >> 10} KiB",
                ]
                print("| " + " | ".join(cells) + " |", flush=True)
                print(name, w, f, "done", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
