#!/usr/bin/env python3
"""Measure the TPS paper's comparison (Figs. 10, 11, 13) on xlat and print Markdown tables.

Runs the core crate's ``run`` example (the engine without the Python front; every run is the
same as ``xlat run --design D --workload W --footprint F --refs N --set k=v ...``) for the
reservation-THP baseline, CoLT, RMM and TPS (alias PTEs and copies) on GUPS, XSBench, BFS and a
recorded trace of a real program (``xz -9``, SPEC CPU2017's 657.xz_s program; run through
``xlat run --trace``), unfragmented and fragmented, one run at a time under ``nice``.

Examples
--------
>>> cfgs = dict(configs())
>>> cfgs["tps"]["sim.design"], cfgs["thp-res"]["os.reservation.max_bytes"]
('tps', '2MiB')
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "target" / "release" / "examples" / "run"

# Table I: Skylake's L1 DTLBs (64 x 4K, 32 x 2M, 4 x 1G) and STLB (1536 4K/2M + 16 x 1G).
TABLE1 = {"tlb.l2_organization": "split_1g"}
# The TPS TLB (§III-A2): a 32-entry fully associative any-size L1 beside the 64-entry 4K L1.
TPS_TLB = {
    "tlb.l1_organization": "split_any_size",
    "tlb.l1_any.entries": "32",
    "tlb.l1_any.ways": "32",
}

WORKLOADS = {
    # name: (footprint, refs). Each configuration runs twice, with refs and with 2 x refs (same
    # seed: the first run is a prefix of the second); the figures are the differences, i.e. the
    # second half, after the first touch of every page (warm-up by differencing).
    "gups": ("4GiB", 20_000_000),
    "xsbench": ("4GiB", 20_000_000),
    "bfs": ("8GiB", 20_000_000),
}

# Recorded traces of real programs: label -> (path, refs). The path comes from the environment
# (the traces are not in the repository): XZ_TRACE, recorded with
#   head -c 4194304 of the concatenated /usr/bin/* > xz-input.bin
#   xlat trace record -o xz9.xlat -- xz -9 -T1 -c -k xz-input.bin
# (1.87 G references; 101 MiB touched of 684 MiB mapped; xz is SPEC CPU2017's 657.xz_s).
TRACES = {"xz": ("XZ_TRACE", 150_000_000)}

STATES = {
    "unfragmented": {},
    # 8 GiB of memory, a pinned frame in 90 % of the free 2 MiB blocks: 0.8 GiB of whole 2 MiB
    # blocks for a 1-2 GiB footprint, the smaller blocks inside the others still free.
    "fragmented": {"os.phys_mem_bytes": "8GiB", "os.fmfi_target": "0.9"},
}

# The fragmented state runs smaller (the machine these figures were made on was shared):
# footprint and window per workload, and the configurations compared.
FRAGMENTED_WORKLOADS = {
    "gups": ("2GiB", 5_000_000),
    "xsbench": ("2GiB", 5_000_000),
    "bfs": ("2GiB", 5_000_000),
}
FRAGMENTED_CONFIGS = ("thp-res", "colt", "rmm", "tps")
# Configurations run on some workloads only (unfragmented).
ONLY_ON = {"tps-0.5": ("gups",)}


def configs() -> list[tuple[str, dict[str, str]]]:
    """The compared configurations, as (label, overrides).

    Examples
    --------
    >>> [label for label, _ in configs()]
    ['thp-res', 'colt', 'rmm', 'tps', 'tps-copies', 'tps-0.5']
    """
    res_thp = {"os.policy": "reservation", "os.reservation.max_bytes": "2MiB"}
    tps = {"sim.design": "tps", "os.policy": "reservation", **TPS_TLB}
    return [
        ("thp-res", {"sim.design": "radix", **res_thp}),
        ("colt", {"sim.design": "radix", **res_thp, "tlb.coalescing": "colt", **TPS_TLB}),
        ("rmm", {"sim.design": "rmm", "os.policy": "eager", "tlb.range.entries": "32"}),
        ("tps", tps),
        ("tps-copies", {**tps, "tps.ptes": "copies"}),
        ("tps-0.5", {**tps, "os.reservation.promotion_threshold": "0.5"}),
    ]


def run(overrides: dict[str, str], out: Path, trace: str | None = None) -> dict:
    """One run (cached in ``out``): the core crate's example, or ``xlat run --trace``."""
    if not out.exists():
        if trace is None:
            args = [f"{k}={v}" for k, v in overrides.items()]
            cmd = ["nice", str(RUN), *args]
        else:
            xlat = shutil.which("xlat") or str(ROOT / ".venv" / "bin" / "xlat")
            ov = {k: v for k, v in overrides.items() if not k.startswith("workload.")}
            refs = ov.pop("sim.refs")
            sets = [a for k, v in ov.items() for a in ("--set", f"{k}={v}")]
            cmd = ["nice", xlat, "run", "--trace", trace, "--refs", refs, "--json", *sets]
        text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        out.write_text(text)
    return json.loads(out.read_text())


def delta(r: dict, half: dict, sec: str, key: str) -> int:
    """``r[sec][key]`` minus the same figure of the first half (the measured window)."""
    return r[sec][key] - half[sec][key]


def main(
    outdir: str = "/tmp/tps-figures",
    extra: list[str] | None = None,
    skip: tuple[str, ...] = (),
) -> None:
    """Run every configuration (but the workloads in ``skip``) and print the tables."""
    base_extra = dict(a.split("=", 1) for a in (extra or []))
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    for state, st in STATES.items():
        print(f"\n### {state}\n")
        print(
            "| workload | config | L1 DTLB misses | eliminated | walks | walk refs | eliminated "
            "| speedup | faults in window | mapped by size | bloat MiB "
            "| res. made / promoted / broken | PTE writes per update | oracle |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        workloads = dict(WORKLOADS if state == "unfragmented" else FRAGMENTED_WORKLOADS)
        traces = {}
        for label, (env, refs) in TRACES.items():
            if os.environ.get(env) and label not in skip:
                traces[label] = os.environ[env]
                workloads[label] = ("trace", refs)
        for w, (fp, refs) in workloads.items():
            if w in skip:
                continue
            trace = traces.get(w)
            base = None
            for label, cfg in configs():
                if state != "unfragmented" and label not in FRAGMENTED_CONFIGS:
                    continue
                if state == "unfragmented" and w not in ONLY_ON.get(label, (w,)):
                    continue
                ov = {
                    "workload.name": w,
                    "workload.footprint": fp,
                    **TABLE1,
                    **cfg,
                    **st,
                    **base_extra,
                }
                stem = f"{state}-{w}-{fp}-{label}"
                half = run({**ov, "sim.refs": str(refs)}, out / f"{stem}-1.json", trace)
                r = run({**ov, "sim.refs": str(2 * refs)}, out / f"{stem}-2.json", trace)
                os_ = r["os"]
                nf = delta(r, half, "tlb", "l1_misses")
                walks = delta(r, half, "walk", "count")
                refs_ = delta(r, half, "walk", "mem_accesses")
                faults = delta(r, half, "walk", "fault_walks")
                cycles = r["timing"]["cycles"] - half["timing"]["cycles"]
                if base is None:
                    base = (nf, refs_, cycles)

                def pct(x: int, b: int) -> str:
                    return f"{100 * (1 - x / b):.1f} %" if b else "-"

                sizes = os_["mapped_bytes_by_size"]
                top = sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
                dist = ", ".join(f"{k} {v / 2**30:.2f}G" for k, v in top)
                if len(sizes) > 3:
                    dist += f" (+{len(sizes) - 3} sizes)"
                bloat = os_.get("promotion_bloat_bytes", 0) / 2**20
                resv = (
                    f"{os_['reservations']} / {os_['promotions']} / {os_['reservations_broken']}"
                    if "reservations" in os_
                    else "-"
                )
                pw = r.get("tps", {}).get("pte_writes_per_update")
                oracle = r["oracle"]["mismatches"] + half["oracle"]["mismatches"]
                pws = "-" if pw is None else f"{pw:.2f}"
                print(
                    f"| {w} {fp} | {label} | {nf} | {pct(nf, base[0])} | {walks} | {refs_} "
                    f"| {pct(refs_, base[1])} | {base[2] / cycles:.3f} | {faults} | {dist} "
                    f"| {bloat:.1f} | {resv} | {pws} | {oracle} |"
                )
            sys.stdout.flush()


if __name__ == "__main__":
    # Arguments: key=value overrides for every run, or --skip=WORKLOAD.
    args = sys.argv[1:]
    skipped = tuple(a.split("=", 1)[1] for a in args if a.startswith("--skip="))
    main(extra=[a for a in args if not a.startswith("--skip=")], skip=skipped)
