"""Elastic Translations with Leshy and CoalaKhugepaged, fragmented and virtualized: the second
measured table of docs/designs/et.md.

Every run is the built-in workload through the Python front on the ``neoverse-n1`` CPU preset
(``cpu="neoverse-n1"``), ``REFS`` references of which the first ``WARMUP`` are a warm-up
(``sim.warmup_refs``), with ``os.phys_mem_bytes=20GiB`` natively. Configurations per workload:

- fragmented (``os.fragmenter.mode=alternating`` at ``os.fmfi_target`` 0.5 and 0.99):
  ``thp`` (radix, ``os.thp=always``, ``tlb.coalescing=none``), ``et`` (CoalaPaging alone),
  ``et+leshy`` (offline Leshy: the hints of a profiling run steer CoalaPaging) and
  ``et+online`` (online Leshy steering CoalaKhugepaged, wake-up and epoch scaled to the run:
  ``et.khugepaged.sleep_cycles=20M``, ``et.leshy.epoch_cycles=100M``);
- the profiling run: ``et`` with ``et.leshy.mode=profile``, unfragmented, 4 KiB pages only
  (``os.thp=never``, ``et.coala_paging=false``, ``tlb.coalescing=none``: the walks of base
  pages show where larger translations pay), writing the hint file the ``et+leshy`` runs read;
- virtualized (``virt.enabled``, guest 8 GiB on a 10 GiB host, unfragmented): ``thp-virt``
  (radix in guest and host, THP in both, no contiguous bit) and ``et-virt`` (``et`` in guest
  and host, THP in both, ``tlb.coalescing=contiguous_bit``).

The 64 KiB-friendly stand-in runs ET with ``os.thp=never`` as the paper runs that trio.
Speedup = ``timing.cycles`` of the baseline / of the configuration (core cycles).

Usage: ``python scripts/et_leshy_eval.py`` (after ``make build``; about 10 minutes, run it
``nice``); prints markdown tables.
"""

from __future__ import annotations

import math
import os
import tempfile

from xlat.run import run

WORKLOADS = [
    ("64 KiB-friendly", "pointer_chase", "48MiB"),
    ("2 MiB is enough", "bfs", "512MiB"),
    ("2 MiB is enough", "xsbench", "512MiB"),
    ("32 MiB helps", "gups", "4GiB"),
    ("32 MiB helps", "kv", "4GiB"),
]
REFS = "6M"
WARMUP = "3M"
NATIVE = {"os.phys_mem_bytes": "20GiB"}
VIRT = {
    "virt.enabled": True,
    "os.phys_mem_bytes": "8GiB",
    "virt.host_os.phys_mem_bytes": "10GiB",
    "virt.host_os.thp": "always",
}
ONLINE = {
    "et.leshy.mode": "online",
    "et.khugepaged.enabled": True,
    "et.khugepaged.sleep_cycles": 20_000_000,
    "et.leshy.epoch_cycles": 100_000_000,
}


def _run(design: str, workload: str, footprint: str, sets: dict) -> dict:
    r = run(
        design=design,
        workload=workload,
        footprint=footprint,
        cpu="neoverse-n1",
        refs=REFS,
        set=dict({"sim.warmup_refs": WARMUP}, **sets),
    )
    assert r["oracle"]["mismatches"] == 0, (design, workload, sets)
    return r


def geomean(v: list[float]) -> float:
    return math.exp(sum(map(math.log, v)) / len(v))


def main() -> None:
    tmp = tempfile.mkdtemp(prefix="et-leshy-")
    off = {"tlb.coalescing": "none"}
    frag_rows, virt_rows, leshy_rows = [], [], []
    for kind, workload, footprint in WORKLOADS:
        et_thp = "never" if kind.startswith("64") else "always"
        et = {"os.thp": et_thp, "et.pwc_latency_cycles": 3}
        hints = os.path.join(tmp, f"{workload}.hints")
        prof = _run(
            "et",
            workload,
            footprint,
            dict(
                NATIVE,
                **{"os.thp": "never", "et.pwc_latency_cycles": 3},
                **{"et.coala_paging": False, "tlb.coalescing": "none"},
                **{"et.leshy.mode": "profile", "et.leshy.hints_out": hints},
            ),
        )
        leshy_rows.append((workload, prof["et"]["leshy"]))
        cyc = {}
        extra = {}
        for fmfi in ("0.5", "0.99"):
            frag = {"os.fragmenter.mode": "alternating", "os.fmfi_target": fmfi}
            confs = {
                "thp": ("radix", dict(NATIVE, **off, **{"os.thp": "always"}, **frag)),
                "et": ("et", dict(NATIVE, **et, **frag)),
                "et+leshy": (
                    "et",
                    dict(
                        NATIVE,
                        **et,
                        **frag,
                        **{"et.leshy.mode": "offline", "et.leshy.hints_file": hints},
                    ),
                ),
                "et+online": ("et", dict(NATIVE, **et, **frag, **ONLINE)),
            }
            for name, (design, sets) in confs.items():
                r = _run(design, workload, footprint, sets)
                cyc[f"{name}@{fmfi}"] = r["timing"]["cycles"]
                if name == "et+online":
                    extra[fmfi] = r["et"]["khugepaged"]
        frag_rows.append((kind, workload, footprint, cyc, extra))
        v_thp = _run("radix", workload, footprint, dict(VIRT, **off, **{"os.thp": "always"}))
        v_et = _run(
            "et",
            workload,
            footprint,
            dict(
                VIRT,
                **et,
                **{"virt.host_design": "et", "tlb.coalescing": "contiguous_bit"},
            ),
        )
        virt_rows.append(
            (
                kind,
                workload,
                footprint,
                v_thp["timing"]["cycles"] / v_et["timing"]["cycles"],
                v_thp["walk"]["count"],
                v_et["walk"]["count"],
            )
        )
        print(f"done {workload}", flush=True)

    names = ["et", "et+leshy", "et+online"]
    print(
        "\n| kind | stand-in | footprint | "
        + " | ".join(f"{n} / thp @{f}" for f in ("0.5", "0.99") for n in names)
        + " |"
    )
    print("|---" * (3 + 2 * len(names)) + "|")
    geo = {}
    for kind, workload, footprint, cyc, _ in frag_rows:
        cells = []
        for f in ("0.5", "0.99"):
            for n in names:
                s = cyc[f"thp@{f}"] / cyc[f"{n}@{f}"]
                geo.setdefault((f, n), []).append(s)
                cells.append(f"{s:.2f}")
        print(f"| {kind} | {workload} | {footprint} | " + " | ".join(cells) + " |")
    print(
        "| geomean | | | "
        + " | ".join(f"{geomean(geo[(f, n)]):.2f}" for f in ("0.5", "0.99") for n in names)
        + " |"
    )

    print("\n| stand-in | samples | hints | 64 KiB hinted | 2 MiB hinted | 32 MiB hinted |")
    print("|---|---|---|---|---|---|")
    for workload, ls in leshy_rows:
        print(
            f"| {workload} | {ls['samples']} | {ls['hint_entries']} | "
            f"{ls['hinted_64k_bytes'] >> 20} MiB | {ls['hinted_2m_bytes'] >> 20} MiB | "
            f"{ls['hinted_32m_bytes'] >> 20} MiB |"
        )

    print("\n| stand-in | FMFI | wake-ups | 2 MiB collapses | 32 MiB promotions | copied |")
    print("|---|---|---|---|---|---|")
    for _, workload, _, _, extra in frag_rows:
        for f, k in extra.items():
            print(
                f"| {workload} | {f} | {k['wakeups']} | {k['promotions_2m']} | "
                f"{k['promotions_32m']} | {k['bytes_copied'] >> 20} MiB |"
            )

    print("\n| kind | stand-in | footprint | et-virt / thp-virt | walks thp-virt | walks et-virt |")
    print("|---|---|---|---|---|---|")
    for kind, workload, footprint, s, w_thp, w_et in virt_rows:
        print(f"| {kind} | {workload} | {footprint} | {s:.2f} | {w_thp} | {w_et} |")
    print(f"| geomean | | | {geomean([r[3] for r in virt_rows]):.2f} | | |")


if __name__ == "__main__":
    main()
