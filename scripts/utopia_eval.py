#!/usr/bin/env python3
"""Utopia evaluation at scaled-down footprints (docs/designs/utopia.md).

Runs the core crate's `run` example (build it first:
``cargo build --release -p xlat --example run``) once per design, workload and page-size
setting, one run at a time, and prints the figures of docs/designs/utopia.md as Markdown.

Scaling of the paper's Table 2 setup: footprints 8-10 GB -> ``--footprint`` (2 GiB), RestSegs
2 x 512 MiB -> 2 x 128 MiB (the same RestSeg / footprint ratio of 1/16), 500 M instructions
-> ``--refs`` references (no warm-up: the first touch of every page is in the run).

RMM runs as its paper and Utopia's Table 1 run it: eager paging and a 32-entry range TLB
(``os.policy=eager``, ``tlb.range.entries=32``), on the same machine otherwise.

Other tables (each a separate mode; every run ``nice``, records cached by command line):

- ``--fig9``: Fig. 9, swap accesses of ``restrictive_only`` vs radix on one machine of
  RestSeg + reserve bytes (``--ro-restseg``, ``--ro-reserve``), at footprints from
  ``--ro-ratios`` times the RestSeg, with swap on;
- ``--mix``: Table 2's page-size mixes: a ``/proc/buddyinfo``-style start state
  (``os.buddyinfo``) whose free memory is the two RestSegs' blocks, enough 2 MiB blocks for
  the target share of the footprint, and 1 MiB blocks (too small for a 2 MiB page) for the
  rest, with ``os.thp=always``; RestSegs are reserved from the large blocks at build, and
  faults take the 2 MiB blocks until they run out;
- ``--cores``: Fig. 22, radix vs Utopia on 2/4/8 cores, multi-programmed (gups and xsbench
  alternating, one process per core), with a warm-up;
- ``--quanta``: Fig. 31, radix vs Utopia with gups and xsbench time-sharing one core at
  several context-switch quanta;
- ``--tar``: the TAR-cache and walks-avoided investigation: radix and Utopia after a warm-up
  (``--warmup``), with Utopia's RSW figures, and, as a diagnostic only, the TAR cache hit
  rate and walks avoided with larger TAR caches (``--tar-cache-bytes``).

ECH is the paper's optimistic ECH (``ECH_OPTIMISTIC``); ``--ech-as-is`` runs ``ecpt`` with
its defaults instead (allocations charged, contiguous ways, 3 ways of 128 entries).

Examples
--------
>>> # python3 scripts/utopia_eval.py --refs 10M --footprint 2GiB > /tmp/utopia.md
>>> # python3 scripts/utopia_eval.py --fig9 --refs 2M
>>> # python3 scripts/utopia_eval.py --mix --refs 5M
>>> # python3 scripts/utopia_eval.py --cores --refs 2M --warmup 1M
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys

RUN = "target/release/examples/run"
DESIGNS = ["radix", "pom_tlb", "ecpt", "rmm", "utopia", "perfect_tlb"]
#: Settings a design runs with beyond the common ones: RMM with Table 1's eager paging and
#: RLB; ECH as the paper's optimistic ECH (§7: table allocations free and non-contiguous) with
#: Table 1's 4 ways of 8192 entries (as configs/ech-optimistic.toml).
ECH_OPTIMISTIC = [
    "ecpt.charge_allocations=false",
    "ecpt.contiguous_ways=false",
    "ecpt.ways=4",
    "ecpt.initial_entries=8192",
]
DESIGN_SET = {"rmm": ["os.policy=eager", "tlb.range.entries=32"], "ecpt": ECH_OPTIMISTIC}


def restsegs(seg_bytes):
    return (
        "utopia.restsegs=["
        f'{{bytes={seg_bytes},page_size="4KiB",ways=16}},'
        f'{{bytes={seg_bytes},page_size="2MiB",ways=16}}]'
    )


def run(design, workload, thp, args, extra=(), footprint=None, segs=True):
    cmd = [
        "nice",
        RUN,
        f"sim.design={design}",
        f"workload.name={workload}",
        f"workload.footprint={footprint or args.footprint}",
        f"sim.refs={args.refs}",
        f"os.thp={thp}",
        *([restsegs(args.restseg_bytes)] if segs else []),
        *DESIGN_SET.get(design, []),
        *extra,
    ]
    if args.warmup:
        cmd.append(f"sim.warmup_refs={args.warmup}")
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
    ap.add_argument("--warmup", default="", help="sim.warmup_refs (none by default)")
    ap.add_argument("--fig9", action="store_true", help="restrictive-only swap accesses")
    ap.add_argument("--ro-restseg", type=int, default=256 << 20)
    ap.add_argument("--ro-reserve", type=int, default=32 << 20)
    ap.add_argument("--ro-ratios", default="0.5,0.9,1.0,1.25,1.5")
    ap.add_argument("--ro-workloads", default="gups,xsbench,bfs")
    ap.add_argument("--mix", action="store_true", help="partial 2 MiB shares (Table 2)")
    ap.add_argument("--mix-shares", default="0.32,0.55")
    ap.add_argument("--mix-workloads", default="gups,xsbench")
    ap.add_argument("--cores", action="store_true", help="2/4/8 cores (Fig. 22)")
    ap.add_argument("--core-counts", default="2,4,8")
    ap.add_argument("--quanta", action="store_true", help="context-switch quanta (Fig. 31)")
    ap.add_argument("--quanta-cycles", default="250000,1000000,5000000,52000000")
    ap.add_argument("--tar", action="store_true", help="TAR cache / walks avoided, warmed")
    ap.add_argument("--tar-workloads", default="gups,bfs,xsbench")
    ap.add_argument("--tar-cache-bytes", default="2048,16384,131072")
    ap.add_argument("--ech-as-is", action="store_true", help="ecpt with its defaults as ECH")
    ap.add_argument("--ech", action="store_true", help="ECH optimistic vs as is, main rows")
    args = ap.parse_args()
    if args.ech_as_is:
        DESIGN_SET.pop("ecpt")
    for mode in ("fig9", "mix", "cores", "quanta", "tar", "ech"):
        if getattr(args, mode):
            return globals()[mode](args)
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
    "| THP | workload | speedup pom_tlb / ecpt / rmm / utopia (serial RSW) / perfect_tlb "
    "| xlat latency vs radix: pom / ecpt / rmm / utopia | translation mem refs vs radix "
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
        for d in ["pom_tlb", "ecpt", "rmm", "utopia"]
    )
    mem = f"{100 * (f['utopia']['walk_mem'] / max(b['walk_mem'], 1) - 1):+.0f} %"
    rsw = u["rsw_avg_cycles"] or 0
    ratio = f"{rsw:.0f} : {u['flex_walk_avg_cycles']:.0f}"
    rbc = f"{100 * (f['utopia']['row_conflicts'] / b['row_conflicts'] - 1):+.0f} %"
    return (
        f"| {thp} | {w} | {speed['pom_tlb']:.2f} / {speed['ecpt']:.2f} / {speed['rmm']:.2f} / "
        f"{speed['utopia']:.2f} ({serial:.2f}) / {speed['perfect_tlb']:.2f} | {lat} | {mem} "
        f"| {ratio} | {100 * u['tar_cache_hit_rate']:.0f} % / "
        f"{100 * u['sf_cache_hit_rate']:.0f} % | {100 * u['walks_avoided_share']:.0f} % "
        f"| {migrations_per_kilo_instr(u, f['utopia']['instructions'])} "
        f"| {u['stalled_walks']} | {rbc} |"
    )


def swap_accesses(r):
    """Swap-device accesses of a record: pages written out plus pages read back."""
    w = r["os"].get("swap", {})
    return w.get("swap_outs", 0) + w.get("swap_ins", 0)


def fig9(args):
    """Fig. 9: swap accesses of restrictive-only vs radix on the same machine."""
    seg, reserve = args.ro_restseg, args.ro_reserve
    machine = [
        f"os.phys_mem_bytes={seg + reserve}",
        "os.swap.bytes=8GiB",
        f"restrictive_only.restseg_bytes={seg}",
        f"restrictive_only.reserve_bytes={reserve}",
    ]
    print(
        "| workload | footprint / RestSeg | radix swap accesses | restrictive_only swap "
        "accesses | ratio | victims swapped out "
        "| core cycles restrictive_only / radix (OS time apart) |\n"
        "|---|---|---|---|---|---|---|",
        flush=True,
    )
    for w in args.ro_workloads.split(","):
        for x in args.ro_ratios.split(","):
            fp = int(seg * float(x)) // (2 << 20) * (2 << 20)
            r = run("radix", w, "never", args, machine, footprint=fp, segs=False)
            o = run("restrictive_only", w, "never", args, machine, footprint=fp, segs=False)
            assert r["oracle"]["mismatches"] == 0 and o["oracle"]["mismatches"] == 0
            a, b = swap_accesses(r), swap_accesses(o)
            ratio = f"{b / a:.2f}x" if a else "- (radix: none)"
            cyc = o["timing"]["cycles"] / r["timing"]["cycles"]
            print(
                f"| {w} | {float(x):.2f} | {a} | {b} | {ratio} "
                f"| {o['restrictive_only']['victims_swapped_out']} | {cyc:.2f} |",
                flush=True,
            )


def buddyinfo(path, footprint, share, restseg_bytes):
    """A buddyinfo snapshot: two RestSeg blocks, 2 MiB blocks for `share` of `footprint`,
    and 1 MiB blocks for the rest (plus slack for page tables)."""
    counts = [0] * 19
    counts[(restseg_bytes >> 12).bit_length() - 1] = 2
    counts[9] = int(footprint * share) >> 21
    counts[8] = (int(footprint * (1 - share)) >> 20) + 256
    with open(path, "w") as f:
        f.write("Node 0, zone   Normal " + " ".join(map(str, counts)) + "\n")


def parse_bytes(s):
    units = {"KiB": 10, "MiB": 20, "GiB": 30}
    for u, sh in units.items():
        if s.endswith(u):
            return int(float(s[: -len(u)]) * (1 << sh))
    return int(s)


def mix(args):
    """Table 2's page-size mixes: radix vs Utopia at a partial 2 MiB share."""
    fp = parse_bytes(args.footprint)
    os.makedirs(args.cache, exist_ok=True)
    print(
        "| workload | target 2 MiB share | 2 MiB share radix / utopia | speedup utopia "
        "| xlat latency vs radix | translation mem refs vs radix | walks avoided "
        "| 2 MiB RestSeg slots used | TAR / SF cache hit "
        "| migrations / kilo-instr (evict share) |\n|" + "---|" * 10,
        flush=True,
    )
    for w in args.mix_workloads.split(","):
        for share in map(float, args.mix_shares.split(",")):
            path = os.path.join(args.cache, f"buddyinfo-{fp}-{share}-{args.restseg_bytes}.txt")
            buddyinfo(path, fp, share, args.restseg_bytes)
            extra = [f"os.buddyinfo={path}", "os.phys_mem_bytes=16GiB"]
            rec = {d: run(d, w, "always", args, extra) for d in ("radix", "utopia")}
            f = {d: figures(r) for d, r in rec.items()}

            def share2m(r):
                o = r["os"]
                m2, m4 = o["mapped_2m"], o["mapped_4k"]
                return m2 * 512 / max(m2 * 512 + m4, 1)

            u = rec["utopia"]["utopia"]
            lat = f["utopia"]["xlat_per_l1_miss"] / f["radix"]["xlat_per_l1_miss"] - 1
            mem = f["utopia"]["walk_mem"] / max(f["radix"]["walk_mem"], 1) - 1
            used2m = u["restsegs"].get("1", {}).get("used_slots", 0)
            print(
                f"| {w} | {100 * share:.0f} % | {100 * share2m(rec['radix']):.0f} % / "
                f"{100 * share2m(rec['utopia']):.0f} % "
                f"| {f['radix']['cycles'] / f['utopia']['cycles']:.2f} | {100 * lat:+.0f} % "
                f"| {100 * mem:+.0f} % | {100 * u['walks_avoided_share']:.0f} % "
                f"| {used2m} slots | {100 * u['tar_cache_hit_rate']:.0f} % / "
                f"{100 * u['sf_cache_hit_rate']:.0f} % "
                f"| {migrations_per_kilo_instr(u, f['utopia']['instructions'])} |",
                flush=True,
            )


def migrations_per_kilo_instr(u, instructions):
    """Utopia's migrations per 1000 instructions with the share that evicted a page (§8.3.2's
    0.8 and 82 %), as the main table's column."""
    per_k = u["migrations"] / max(instructions / 1000, 1e-9)
    share = u["migrations_eviction"] / max(u["migrations"], 1)
    return f"{per_k:.2f} ({100 * share:.0f} %)"


def cores(args):
    """Fig. 22: radix vs Utopia on 2/4/8 cores, one process per core."""
    print(
        "| cores | workloads | speedup utopia over radix (core cycles, slowest core) "
        "| walks avoided | TAR / SF cache hit | migrations |\n|---|---|---|---|---|---|",
        flush=True,
    )
    for n in map(int, args.core_counts.split(",")):
        ws = ",".join(["gups", "xsbench"] * (n // 2))
        extra = [f"sim.cores={n}"]
        rec = {d: run(d, ws, "never", args, extra) for d in ("radix", "utopia")}
        for r in rec.values():
            assert r["oracle"]["mismatches"] == 0
        u = rec["utopia"]["utopia"]
        sp = rec["radix"]["timing"]["cycles"] / rec["utopia"]["timing"]["cycles"]
        print(
            f"| {n} | {ws} | {sp:.2f} | {100 * u['walks_avoided_share']:.0f} % "
            f"| {100 * u['tar_cache_hit_rate']:.0f} % / {100 * u['sf_cache_hit_rate']:.0f} % "
            f"| {u['migrations']} |",
            flush=True,
        )


def quanta(args):
    """Fig. 31: radix vs Utopia, gups and xsbench time-sharing one core."""
    print(
        "| quantum (cycles) | switches | speedup utopia over radix | walks avoided "
        "| TAR / SF cache hit |\n|---|---|---|---|---|",
        flush=True,
    )
    for q in args.quanta_cycles.split(","):
        extra = [f"sim.quantum={q}"]
        rec = {d: run(d, "gups,xsbench", "never", args, extra) for d in ("radix", "utopia")}
        for r in rec.values():
            assert r["oracle"]["mismatches"] == 0
        u = rec["utopia"]["utopia"]
        sp = rec["radix"]["timing"]["cycles"] / rec["utopia"]["timing"]["cycles"]
        print(
            f"| {q} | {rec['utopia']['switch']['count']} | {sp:.2f} "
            f"| {100 * u['walks_avoided_share']:.0f} % "
            f"| {100 * u['tar_cache_hit_rate']:.0f} % / {100 * u['sf_cache_hit_rate']:.0f} % |",
            flush=True,
        )


def ech(args):
    """The ECH column of the main table: optimistic ECH and ``ecpt`` as is, vs radix."""
    DESIGN_SET.pop("ecpt", None)  # both variants given explicitly below
    print(
        "| THP | workload | speedup ECH optimistic / ecpt as is | xlat latency vs radix "
        "| translation mem refs vs radix | OS cycles optimistic / as is "
        "| largest contiguous table block optimistic / as is |\n|" + "---|" * 7,
        flush=True,
    )
    for thp_w in args.runs.split(","):
        thp, w = thp_w.split(":")
        base = run("radix", w, thp, args)
        opt = run("ecpt", w, thp, args, ECH_OPTIMISTIC)
        asis = run("ecpt", w, thp, args)
        f = {k: figures(r) for k, r in (("radix", base), ("opt", opt), ("asis", asis))}
        sp = [f["radix"]["cycles"] / f[k]["cycles"] for k in ("opt", "asis")]
        lat = [
            f[k]["xlat_per_l1_miss"] / f["radix"]["xlat_per_l1_miss"] - 1 for k in ("opt", "asis")
        ]
        mem = [f[k]["walk_mem"] / f["radix"]["walk_mem"] - 1 for k in ("opt", "asis")]
        print(
            f"| {thp} | {w} | {sp[0]:.2f} / {sp[1]:.2f} "
            f"| {100 * lat[0]:+.0f} % / {100 * lat[1]:+.0f} % "
            f"| {100 * mem[0]:+.0f} % / {100 * mem[1]:+.0f} % "
            f"| {opt['timing']['os_cycles']:.3g} / {asis['timing']['os_cycles']:.3g} "
            f"| {opt['ecpt']['largest_contiguous_bytes']} / "
            f"{asis['ecpt']['largest_contiguous_bytes']} |",
            flush=True,
        )


def tar(args):
    """TAR cache hit rate and walks avoided after a warm-up (docs/designs/utopia.md)."""
    sizes = [int(x) for x in args.tar_cache_bytes.split(",")]
    print(
        "| workload | speedup utopia over radix | RSW hits / RSWs | walks avoided "
        "| TAR / SF cache hit | TAR lookups per RSW | 4 KiB RestSeg occupancy | migrations "
        "| TAR cache hit / walks avoided at "
        + ", ".join(f"{b // 1024} KiB" for b in sizes[1:])
        + " (diagnostic) |\n|"
        + "---|" * 9,
        flush=True,
    )
    for w in args.tar_workloads.split(","):
        rec = {d: run(d, w, "never", args) for d in ("radix", "utopia")}
        bigger = [
            run("utopia", w, "never", args, [f"utopia.tar_cache_bytes={b}"]) for b in sizes[1:]
        ]
        for r in [*rec.values(), *bigger]:
            assert r["oracle"]["mismatches"] == 0
        u = rec["utopia"]["utopia"]
        sp = rec["radix"]["timing"]["cycles"] / rec["utopia"]["timing"]["cycles"]
        seg = u["restsegs"]["0"]
        diag = ", ".join(
            f"{100 * b['utopia']['tar_cache_hit_rate']:.0f} % / "
            f"{100 * b['utopia']['walks_avoided_share']:.0f} %"
            for b in bigger
        )
        print(
            f"| {w} | {sp:.2f} | {100 * u['rsw_hits'] / max(u['rsw_walks'], 1):.0f} % "
            f"| {100 * u['walks_avoided_share']:.0f} % "
            f"| {100 * u['tar_cache_hit_rate']:.0f} % / {100 * u['sf_cache_hit_rate']:.0f} % "
            f"| {u['tar_cache_lookups'] / max(u['rsw_walks'], 1):.2f} "
            f"| {100 * seg['occupancy']:.0f} % | {u['migrations']} | {diag} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
