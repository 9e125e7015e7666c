"""Elastic Translations baselines: the measured tables of docs/designs/et.md's "Baselines"
section (4 KiB, THP, mTHP, ET, HugeTLB at 64 KiB / 2 MiB / 32 MiB / 1 GiB, HawkEye, Trident).

Every run is the built-in workload through the Python front on the ``neoverse-n1`` CPU preset
(as ``scripts/et_eval.py``), 2 M references, 16 GiB of memory:

    xlat run --cpu neoverse-n1 --design radix|et --workload W --footprint F --refs 2M \\
        --set os.phys_mem_bytes=16GiB --set ... --json

Configurations (settings in ``configs()``):

- ``4k``, ``thp``: radix, ``tlb.coalescing=none`` (Linux 5.18 sets no contiguous bit);
- ``mthp``: radix, ``os.policy=mthp`` (2 MiB -> 64 KiB -> 4 KiB), contiguous bit on;
- ``et``: the ``et`` design (CoalaPaging, contiguous bit), ``os.thp=always`` (``never`` for
  the 64 KiB-friendly stand-in, as the paper);
- ``htlb64k``, ``htlb2m``, ``htlb32m``, ``htlb1g``: radix, ``os.thp=never``, a HugeTLB pool
  (``os.hugetlb.*``) large enough for the footprint; 64 KiB and 32 MiB with the contiguous bit
  (arm64's CONT_PTE / CONT_PMD hugetlb sizes), 2 MiB and 1 GiB without;
- ``hawkeye``: radix, ``os.policy=hawkeye``, ``os.thp=always``, ``tlb.coalescing=none``;
  ``hawkeye_nothp`` the same with ``os.thp=never`` (promotion by the daemon only);
- ``trident``: radix, ``os.policy=trident``, ``os.thp=always``, ``tlb.coalescing=none``;
- ``@0.99``: ``thp``, ``et``, ``hawkeye``, ``trident`` after the authors' fragmenter at FMFI
  0.99 (``os.fragmenter.mode=alternating``).

Speedup = ``timing.cycles`` of 4 KiB / of the configuration (core cycles; fault and other OS
time is in ``timing.os_cycles``). Also printed: TLB-miss walks, and the page-fault latency
percentiles (``os.fault_latency.p50_cycles`` / ``p99_cycles``). Every run is checked by the
oracle (the script asserts ``oracle.mismatches == 0``).

Usage: ``python scripts/et_baselines.py`` (after ``make build``), under ``nice``.
"""

from __future__ import annotations

import sys

from et_common import NO_CONTIGUOUS_BIT, core_configs, print_speedups, print_walks, run_n1

WORKLOADS = [
    ("64 KiB-friendly", "pointer_chase", "48MiB"),
    ("2 MiB is enough", "xsbench", "512MiB"),
    # 3 GiB: the workloads place large mappings on 2 MiB boundaries, so a VMA needs more
    # than 2 GiB to hold an aligned 1 GiB range (HugeTLB 1 GiB, Trident).
    ("32 MiB helps", "gups", "3GiB"),
]
SCALE = {"refs": "2M"}
BASE = {"os.phys_mem_bytes": "16GiB"}
SIZES = {"64k": 64 << 10, "2m": 2 << 20, "32m": 32 << 20, "1g": 1 << 30}
SIZE_NAMES = {"64k": "64KiB", "2m": "2MiB", "32m": "32MiB", "1g": "1GiB"}


def _bytes(text: str) -> int:
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for u, m in units.items():
        if text.endswith(u):
            return int(text[: -len(u)]) * m
    return int(text)


def configs(kind: str, footprint: str) -> dict[str, tuple[str, dict]]:
    """The configurations of one workload (name -> design, settings)."""
    off = NO_CONTIGUOUS_BIT
    out = core_configs(kind)
    fp = _bytes(footprint)
    for name, size in SIZES.items():
        # Enough pages for the footprint and the workload's other VMAs (rounded up, + 2).
        pages = -(-fp // size) + 2
        sets = {
            "os.thp": "never",
            "os.hugetlb.size": SIZE_NAMES[name],
            "os.hugetlb.pages": pages,
        }
        if name in ("2m", "1g"):
            sets.update(off)
        out[f"htlb{name}"] = ("radix", sets)
    out["hawkeye"] = ("radix", dict(off, **{"os.policy": "hawkeye", "os.thp": "always"}))
    # HawkEye's promotion alone: no huge page at fault time.
    out["hawkeye_nothp"] = ("radix", dict(off, **{"os.policy": "hawkeye", "os.thp": "never"}))
    out["trident"] = ("radix", dict(off, **{"os.policy": "trident", "os.thp": "always"}))
    frag = {"os.fragmenter.mode": "alternating", "os.fmfi_target": "0.99"}
    for name in ("thp", "et", "hawkeye", "trident"):
        design, sets = out[name]
        out[f"{name}@0.99"] = (design, dict(sets, **frag))
    return out


def _run(design: str, workload: str, footprint: str, **sets) -> dict:
    return run_n1(design, workload, footprint, BASE, SCALE, **sets)


def main() -> None:
    rows = []
    for kind, workload, footprint in WORKLOADS:
        recs = {}
        for name, (design, sets) in configs(kind, footprint).items():
            r = _run(design, workload, footprint, **sets)
            assert r["oracle"]["mismatches"] == 0, (workload, name)
            recs[name] = r
            print(f"ran {workload} {name}", file=sys.stderr, flush=True)
        rows.append((kind, workload, footprint, recs))
    names = list(configs("x", "1GiB").keys())
    print_speedups(
        ["stand-in"],
        [
            ([f"{workload} {footprint}"], {n: r["timing"]["cycles"] for n, r in recs.items()})
            for _, workload, footprint, recs in rows
        ],
        names,
    )
    print()
    walks = [(w, {n: r["walk"]["count"] for n, r in recs.items()}) for _, w, _, recs in rows]
    print_walks(walks, names)
    print()
    print("OS time, millions of cycles (timing.os_cycles + os.compaction.alloc_work_cycles:")
    print("faults, daemons, copies, shootdowns + zeroing and direct compaction):")
    print()
    print("| stand-in | " + " | ".join(names) + " |")
    print("|---" * (1 + len(names)) + "|")
    for _, workload, _, recs in rows:
        cells = []
        for n in names:
            r = recs[n]
            os_c = r["timing"]["os_cycles"] + r["os"]["compaction"]["alloc_work_cycles"]
            cells.append(f"{os_c / 1e6:.0f}")
        print(f"| {workload} | " + " | ".join(cells) + " |")
    print()
    print("Page-fault latency, p50 / p99 / max (OS cycles, os.fault_latency):")
    print()
    print("| stand-in | " + " | ".join(names) + " |")
    print("|---" * (1 + len(names)) + "|")
    for _, workload, _, recs in rows:
        cells = []
        for n in names:
            f = recs[n]["os"].get("fault_latency", {})
            cells.append(
                f"{f.get('p50_cycles', 0)} / {f.get('p99_cycles', 0)} / {f.get('max_cycles', 0)}"
            )
        print(f"| {workload} | " + " | ".join(cells) + " |")
    print()
    print("Mapped bytes by page size at the end (os.mapped_bytes_by_size) and daemon work:")
    print()
    for _, workload, _, recs in rows:
        for n in names:
            o = recs[n]["os"]
            total = sum(o["mapped_bytes_by_size"].values()) or 1
            mix = ", ".join(
                f"{k} {100 * v / total:.1f} %" for k, v in o["mapped_bytes_by_size"].items()
            )
            extra = []
            if "hugetlb" in o:
                h = o["hugetlb"]
                extra.append(
                    f"hugetlb faults {h['faults']}, pool empty {h['fallback_pool_empty']}, "
                    f"outside {h['fallback_outside']}"
                )
            if "hawkeye" in o:
                h = o["hawkeye"]
                extra.append(
                    f"hawkeye wakeups {h['wakeups']}, promotions {h['promotions']}, "
                    f"failures {h['promotion_failures']}"
                )
            if "trident" in o:
                t = o["trident"]
                extra.append(
                    f"trident faults_1g {t['faults_1g']}, promotions_1g {t['promotions_1g']}, "
                    f"collapses_2m {t['collapses_2m']}"
                )
            print(f"- {workload} {n}: {mix}" + ("; " + "; ".join(extra) if extra else ""))


if __name__ == "__main__":
    main()
