#!/usr/bin/env python3
"""xlat's prediction of each hostbench measurement (issue 35), beside the measurement.

Runs `xlat run --preset PRESET` (``--preset``: configs/host-kvm.toml, the `host-milan-kvm` CPU
preset, configs/host-kvm-turin.toml, `host-turin-kvm`, or configs/host-kvm-genoa.toml,
`host-genoa-kvm`; all nested, host pages 4 KiB) once per
measured case, one run at a time, and writes one JSON line per run (the command, the measured
figure it is compared with, and the record's figures that explain it) to ``--out``.
``--summarize FILE`` prints the Markdown tables of docs/host.md from such a file, each followed
by its tally (e.g. "**5 of 15** predicted figures within 25 %.").

The guest has run on more than one host CPU (docs/host.md): the measurements' CPU (family and
model, from the results file's host record) must be the one the preset describes, or the run
stops (``--any-cpu`` overrides, for a deliberate cross-comparison).

    python3 scripts/host_predict.py --measured tools/hostbench/results/quiet-20261128.jsonl \
        --out tools/hostbench/results/xlat-quiet-20261128.jsonl
    python3 scripts/host_predict.py --preset configs/host-kvm-turin.toml \
        --measured tools/hostbench/results/quiet-20261130.jsonl \
        --out tools/hostbench/results/xlat-turin-20261130.jsonl
    python3 scripts/host_predict.py --summarize tools/hostbench/results/xlat-quiet-20261128.jsonl

An ablation adds settings to every run (``--set KEY=VALUE``, repeatable; each line records
them in ``overrides`` and its ``command``), e.g. four page walkers on the chains' 16-chain points:

    python3 scripts/host_predict.py --measured tools/hostbench/results/quiet-20261201.jsonl \
        --only "mlp 16" --set core.page_walkers=4 --out out/host/walkers4.jsonl

Conversions: ns = cycles / GHz at the preset's `mem.dram.core_clock_mhz` (the measured clock);
a chase access is one load (`loads`), a gups update one load and one store (`loads`), a triad
element two loads and a store (24 bytes by STREAM's count, as hostbench's `bw`).
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRESET = "configs/host-kvm.toml"

#: The CPU each host preset describes: (`cpu family`, `model`) as /proc/cpuinfo gives them.
PRESET_CPU = {
    "host-milan-kvm": (25, 1),  # AMD EPYC 7003 "Milan" (Zen 3)
    "host-turin-kvm": (26, 2),  # AMD EPYC 9005 "Turin" (Zen 5)
    "host-genoa-kvm": (25, 17),  # AMD EPYC 9004 "Genoa" (Zen 4)
}
GIB = 1 << 30

#: (name, workload, footprint, guest pages, extra --set pairs, refs)
CASES = [
    ("chase", "pointer_chase", "1GiB", "4k", [], "1M"),
    ("chase", "pointer_chase", "1GiB", "2m", [], "1M"),
    # 8 GiB: the first-touch phase (2 M stores, one per 4 KiB page) is longer than --refs, so
    # the auto warm-up would stop inside it; warm up past it explicitly.
    ("chase", "pointer_chase", "8GiB", "4k", ["sim.warmup_refs=2200000"], "1M"),
    ("chase", "pointer_chase", "8GiB", "2m", ["sim.warmup_refs=2200000"], "1M"),
    ("gups", "gups", "1GiB", "4k", [], "2M"),
    ("gups", "gups", "1GiB", "2m", [], "2M"),
    ("gups", "gups", "8GiB", "4k", ["sim.warmup_refs=2200000"], "2M"),
    ("gups", "gups", "8GiB", "2m", ["sim.warmup_refs=2200000"], "2M"),
    # bw triad: three 2 GiB arrays, default pages (THP madvise, no madvise: 4 KiB), 1 thread.
    ("triad", "stream", "6GiB", "4k", [], "3M"),
    # Two threads need sim.cores = 2, which xlat refuses with virt.enabled: the same triad
    # natively (no nesting; a stream walks once per 512 references), on 1 and on 2 cores (two
    # processes of three 1 GiB arrays each, as bw's two threads split the 2 GiB arrays).
    ("triad native", "stream", "6GiB", "4k", ["virt.enabled=false"], "3M"),
    ("triad native x2", "stream,stream", "3GiB", "4k", ["virt.enabled=false", "sim.cores=2"], "3M"),
]

#: `chase --chains K` (the `mlp` step): `workload.chains = K`, every line of the region.
MLP_CHAINS = (1, 2, 4, 8, 16, 32)
for _fp, _warm in (("1GiB", []), ("8GiB", ["sim.warmup_refs=2200000"])):
    for _pages in ("4k", "2m"):
        for _k in MLP_CHAINS:
            CASES.append(
                (f"mlp {_k}", "pointer_chase", _fp, _pages, [f"workload.chains={_k}", *_warm], "1M")
            )


def measured_cpu(rows: list[dict]) -> tuple[int, int] | None:
    """(family, model) of the CPU a results file was measured on: its host record's fields, or
    (files of 2026-11-28) the `lscpu -J` it holds; None when neither says.

    >>> measured_cpu([{"record": "host", "cpu_family": "26", "cpu_model": "2"}])
    (26, 2)
    """
    host = next((r for r in rows if r.get("record") == "host"), {})
    if host.get("cpu_family") and host.get("cpu_model"):
        return int(host["cpu_family"]), int(host["cpu_model"])
    fields = {
        e.get("field"): e.get("data")
        for e in (host.get("lscpu") or {}).get("lscpu", [])
        if isinstance(e, dict)
    }
    if fields.get("CPU family:") and fields.get("Model:"):
        return int(fields["CPU family:"]), int(fields["Model:"])
    return None


def preset_cpu_name(preset: str) -> str:
    """The `sim.cpu` a study preset names ('' when none)."""
    import tomllib

    with open(ROOT / preset, "rb") as f:
        return tomllib.load(f).get("sim", {}).get("cpu", "")


def xlat_cmd(
    xlat: str, workload: str, footprint: str, pages: str, sets, refs: str, preset: str = PRESET
) -> list[str]:
    cmd = [xlat, "run", "--preset", preset, "--design", "radix", "--workload", workload]
    cmd += ["--footprint", footprint, "--refs", refs, "--seed", "1", "--json"]
    cmd += ["--set", f"workload.madvise_hugepage={'true' if pages == '2m' else 'false'}"]
    for kv in sets:
        cmd += ["--set", kv]
    return cmd


def measured_for(rows: list[dict], name: str, footprint: str, pages: str) -> list[dict]:
    size = int(footprint[:-3]) * GIB
    if name == "chase" or name.startswith("mlp "):
        # The `chase` step's runs are one chase each; the `mlp` step's have `chains`.
        step, k = ("chase", 1) if name == "chase" else ("mlp", int(name.split()[1]))
        return [
            r
            for r in rows
            if r.get("bench") == "chase"
            and r.get("step") == step
            and r["region_bytes"] == size
            and r["pages"] == pages
            and r.get("chains", 1) == k
        ]
    if name == "gups":
        return [
            r
            for r in rows
            if r.get("bench") == "gups" and r["table_bytes"] == size and r["pages"] == pages
        ]
    threads = 2 if name.endswith("x2") else 1
    if name == "triad":  # the nested run stands for both kernels' 1-thread figures
        return [r for r in rows if r.get("bench") == "bw" and r["threads"] == 1]
    return [
        r
        for r in rows
        if r.get("bench") == "bw" and r["kernel"] == "triad" and r["threads"] == threads
    ]


def pick(rec: dict) -> dict:
    """The record's figures that explain a prediction."""
    t, w, tlb, v = rec["timing"], rec["walk"], rec["tlb"], rec.get("virt", {})
    q = rec["dram"].get("queued", {})
    data_reads = t.get("data_dram_reads") or 0
    return {
        "refs": rec["refs"],
        "loads": rec["loads"],
        "stores": rec["stores"],
        "cycles": t["cycles"],
        "ipc": t["ipc"],
        "warmup": {k: rec["warmup"][k] for k in ("refs", "why")},
        "tlb_l1_miss_rate": tlb["l1_miss_rate"],
        "tlb_l2_misses": tlb["l2_misses"],
        "walks": w["count"],
        "walk_avg_cycles_functional": w["avg_cycles"],
        "walk_avg_mem_accesses": w["avg_mem_accesses"],
        "walk_by_page_size": w.get("by_page_size"),
        "timed_walk_avg_cycles": t.get("avg_walk_latency_cycles"),
        "walk_dram_reads": t.get("walk_dram_reads"),
        "data_dram_reads": data_reads,
        "data_dram_avg_cycles": (t["data_dram_cycles"] / data_reads) if data_reads else None,
        "dram_avg_read_latency_cycles": q.get("avg_read_latency_cycles"),
        "dram_avg_read_queue_cycles": q.get("avg_read_queue_cycles"),
        "dram_row_hit_rate": q.get("row_hit_rate"),
        "dram_bandwidth_bytes_per_cycle": q.get("bandwidth_bytes_per_cycle"),
        "avg_outstanding_misses": t.get("avg_outstanding_misses"),
        "avg_outstanding_walks": t.get("avg_outstanding_walks"),
        "avg_l1d_mshrs_data": t.get("avg_l1d_mshrs_data"),
        "llc_miss_rate": rec["cache"].get("llc", {}).get("miss_rate"),
        "virt": {
            k: v.get(k)
            for k in (
                "guest_pt_refs",
                "host_refs_for_guest_pt",
                "host_refs_for_data",
                "ntlb_hit_rate",
                "host_faults",
            )
        },
        "mhz": rec["config"]["mem"]["dram"]["core_clock_mhz"],
        "llc_bytes": rec["config"]["mem"]["llc"]["size_bytes"],
        "cpu": rec["config"]["sim"]["cpu"],
        "virt_enabled": rec["config"]["virt"]["enabled"],
        "host_thp": rec["config"]["virt"]["host_os"]["thp"],
    }


def per_op_ns(name: str, fig: dict) -> float:
    ghz = fig["mhz"] / 1000
    if name.startswith("triad"):  # GB/s, not ns
        elems = fig["loads"] / 2
        return 24 * elems / (fig["cycles"] / ghz)
    return fig["cycles"] / fig["loads"] / ghz


def run(args) -> int:
    rows = [json.loads(line) for line in open(args.measured) if line.startswith("{")]
    cpu_name = preset_cpu_name(args.preset)
    want, got = PRESET_CPU.get(cpu_name), measured_cpu(rows)
    if want != got and not args.any_cpu:
        print(
            f"error: {args.preset} describes {cpu_name} (family/model {want}), but "
            f"{args.measured} was measured on family/model {got}: compare a preset with "
            "measurements of its own CPU (or pass --any-cpu)",
            file=sys.stderr,
        )
        return 2
    out = open(args.out, "a")
    for name, workload, footprint, pages, sets, refs in CASES:
        if args.only and not any(o in f"{name} {footprint} {pages}" for o in args.only):
            continue
        meas = measured_for(rows, name, footprint, pages)
        if name.startswith("mlp ") and not meas:
            continue  # a results file without the `mlp` step (the Zen 3 host's of 2026-11-28)
        cmd = xlat_cmd(args.xlat, workload, footprint, pages, [*sets, *args.set], refs, args.preset)
        print("$", shlex.join(cmd), flush=True)
        t0 = time.time()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1
        rec = json.loads(proc.stdout)
        rec = rec[0] if isinstance(rec, list) else rec
        fig = pick(rec)
        pred = per_op_ns(name, fig)
        line = {
            "case": name,
            "workload": workload,
            "footprint": footprint,
            "pages": pages,
            "command": shlex.join(["xlat", *cmd[1:]]),
            "overrides": list(args.set),
            "seconds": round(time.time() - t0, 1),
            "xlat": round(pred, 3),
            "unit": "GB/s" if name.startswith("triad") else "ns",
            "measured": [
                {
                    k: m.get(k)
                    for k in (
                        "slot_bytes",
                        "chains",
                        "load_threads",
                        "ns_per_access",
                        "ns_per_access_cpu",
                        "ns_per_update",
                        "ns_per_update_cpu",
                        "kernel",
                        "threads",
                        "gbs",
                        "huge_share",
                    )
                    if k in m
                }
                for m in meas
            ],
            "figures": fig,
            "measured_cpu": got,
        }
        out.write(json.dumps(line) + "\n")
        out.flush()
        print(
            f"   {name} {footprint} {pages}: xlat {pred:.1f} {line['unit']} ({line['seconds']} s)"
        )
    return 0


def _count(tally: list[int], verdict: str) -> None:
    """Adds one verdict ("pass" or "**fail**") to a ``[passed, compared]`` tally."""
    tally[0] += verdict == "pass"
    tally[1] += 1


def _tally_line(what: str, tally: list[int]) -> str:
    """The sentence under a table: ``_tally_line("x", [5, 14])`` is ``"**5 of 14** x."``."""
    return f"**{tally[0]} of {tally[1]}** {what}."


def summarize(path: str) -> None:
    lines = [json.loads(x) for x in open(path)]
    print("| measurement | region | pages | measured | xlat | xlat / measured | within 25 % |")
    print("|---|---|---|---|---|---|---|")
    by = {}
    tally = {"figures": [0, 0], "ratios": [0, 0], "chains": [0, 0]}  # [passed, compared]
    mlp = [ln for ln in lines if ln["case"].startswith("mlp ")]
    lines = [ln for ln in lines if not ln["case"].startswith("mlp ")]
    for ln in lines:
        for m in ln["measured"]:
            if ln["case"] == "chase":
                label = f"chase slot {m['slot_bytes']}, {m['load_threads']} load"
                meas = m["ns_per_access"]
            elif ln["case"] == "gups":
                label, meas = "gups", m["ns_per_update"]
            else:
                if ln["case"] == "triad" and m["threads"] != 1:
                    continue  # the nested run is one core: compared with 1-thread figures only
                label, meas = f"bw {m['kernel']}, {m['threads']} thread(s)", m["gbs"]
                if ln["case"] != "triad":
                    label += " (xlat native, not nested)"
                if m["kernel"] != "triad":
                    print(f"| {label} | 2 GiB arrays | default | {meas} GB/s | not modelled | | |")
                    continue
            unit = ln["unit"]
            r = ln["xlat"] / meas
            modelled = not (ln["case"] == "chase" and m["load_threads"])
            # xlat's chase visits every line; one line per page is the same run only when those
            # lines do not fit the LLC either (they do at 1 GiB on the Zen 5 host: 16 MiB).
            size = int(ln["footprint"][:-3]) * GIB
            llc = ln["figures"].get("llc_bytes") or 0
            if ln["case"] == "chase" and m["slot_bytes"] == 4096 and size // 64 <= 2 * llc:
                print(
                    f"| {label} | {ln['footprint']} | {ln['pages']} | {meas} {unit} | "
                    f"not modelled (its {size // 64 >> 20} MiB of lines fit the LLC; "
                    f"every-line run: {ln['xlat']:.1f}) | {r:.2f} | |"
                )
                continue
            if not modelled:
                print(
                    f"| {label} | {ln['footprint']} | {ln['pages']} | {meas} {unit} | "
                    f"not modelled (0-load run: {ln['xlat']:.1f}) | {r:.2f} | |"
                )
                continue
            ok = "pass" if abs(r - 1) <= 0.25 else "**fail**"
            _count(tally["figures"], ok)
            print(
                f"| {label} | {ln['footprint']} | {ln['pages']} | {meas} {unit} | "
                f"{ln['xlat']:.1f} {unit} | {r:.2f} | {ok} |"
            )
            by[(label, ln["footprint"], ln["pages"])] = (meas, ln["xlat"])
    print()
    print(_tally_line("predicted figures within 25 %", tally["figures"]))
    print()
    print(
        "| measurement | region | 4 KiB / 2 MiB measured | xlat | xlat / measured | within 15 % |"
    )
    print("|---|---|---|---|---|---|")
    for (label, fp, pages), (m4, x4) in by.items():
        if pages != "4k" or (label, fp, "2m") not in by:
            continue
        m2, x2 = by[(label, fp, "2m")]
        rm, rx = m4 / m2, x4 / x2
        ok = "pass" if abs(rx / rm - 1) <= 0.15 else "**fail**"
        _count(tally["ratios"], ok)
        print(f"| {label} | {fp} | {rm:.2f} | {rx:.2f} | {rx / rm:.2f} | {ok} |")
    print()
    print(_tally_line("4 KiB / 2 MiB ratios within 15 %", tally["ratios"]))
    if mlp:
        print()
        print(
            "| chains (mlp) | region | pages | measured ns | xlat ns | xlat / measured | "
            "within 25 % | in flight measured / xlat | xlat outstanding misses / walks |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        one = {
            (ln["footprint"], ln["pages"]): ln
            for ln in mlp
            if ln["case"] == "mlp 1" and ln["measured"]
        }
        for ln in mlp:
            if not ln["measured"]:
                continue
            meas, f = ln["measured"][0]["ns_per_access"], ln["figures"]
            r = ln["xlat"] / meas
            ok = "pass" if abs(r - 1) <= 0.25 else "**fail**"
            _count(tally["chains"], ok)
            base = one.get((ln["footprint"], ln["pages"]))
            flight = (
                f"{base['measured'][0]['ns_per_access'] / meas:.1f} / "
                f"{base['xlat'] / ln['xlat']:.1f}"
                if base
                else ""
            )
            print(
                f"| {ln['case'].split()[1]} | {ln['footprint']} | {ln['pages']} | {meas} | "
                f"{ln['xlat']:.1f} | {r:.2f} | {ok} | {flight} | "
                f"{f['avg_outstanding_misses'] or 0:.1f} / {f['avg_outstanding_walks'] or 0:.1f} |"
            )
        print()
        print(_tally_line("chain points within 25 %", tally["chains"]))
    print()
    print(
        "| run | cycles/op | L2 TLB misses/op | walk cycles (functional / timed) | walk refs | "
        "walk DRAM reads/op | data DRAM cycles | DRAM read latency (queue) | LLC miss rate | "
        "outstanding misses / walks |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for ln in lines:
        f = ln["figures"]
        llc = f["llc_miss_rate"]
        llc = "" if llc is None else round(llc, 3)
        lat, queue = f["dram_avg_read_latency_cycles"] or 0, f["dram_avg_read_queue_cycles"] or 0
        ops = f["loads"] / (2 if ln["case"].startswith("triad") else 1)
        print(
            f"| {ln['case']} {ln['footprint']} {ln['pages']} | {f['cycles'] / ops:.0f} | "
            f"{f['tlb_l2_misses'] / ops:.3f} | {f['walk_avg_cycles_functional']:.0f} / "
            f"{f['timed_walk_avg_cycles'] or 0:.0f} | {f['walk_avg_mem_accesses']:.2f} | "
            f"{(f['walk_dram_reads'] or 0) / ops:.2f} | {f['data_dram_avg_cycles'] or 0:.0f} | "
            f"{lat:.0f} ({queue:.0f}) | {llc} | "
            f"{f['avg_outstanding_misses'] or 0:.2f} / {f['avg_outstanding_walks'] or 0:.2f} |"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measured", default="tools/hostbench/results/quiet-20261128.jsonl")
    ap.add_argument("--out", default="out/host/xlat-predictions.jsonl")
    ap.add_argument("--xlat", default="xlat", help="the xlat command (default: xlat on PATH)")
    ap.add_argument("--preset", default=PRESET, help=f"the study preset (default {PRESET})")
    ap.add_argument(
        "--any-cpu",
        action="store_true",
        help="compare even when the measurements come from another CPU than the preset's",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an xlat setting added to every run, after the case's own (an ablation)",
    )
    ap.add_argument("--summarize", metavar="FILE")
    ap.add_argument(
        "--only", action="append", help="run only cases whose 'name size pages' holds this"
    )
    args = ap.parse_args(argv)
    bad = [kv for kv in args.set if "=" not in kv or kv.startswith("=")]
    if bad:
        print(f"error: --set takes KEY=VALUE, got {bad[0]!r}", file=sys.stderr)
        return 2
    if args.summarize:
        summarize(args.summarize)
        return 0
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
