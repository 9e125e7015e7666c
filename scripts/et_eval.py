"""Elastic Translations: the measured table of docs/designs/et.md.

Every run is the built-in workload through the Python front on the ``neoverse-n1`` CPU preset
(Ampere Altra, the paper's machine), scaled down to finish in seconds (see ``SCALE``):

    xlat run --cpu neoverse-n1 --design et|radix --workload W --footprint F --refs R \\
        --set os.phys_mem_bytes=40GiB --set os.thp=... [--set tlb.coalescing=none] --json

Configurations (one row per workload):

- ``4k``: radix, ``os.thp=never``, ``tlb.coalescing=none`` (Linux 5.18 sets no contiguous
  bit on user pages: the paper's baselines run without it);
- ``thp``: radix, ``os.thp=always``, ``tlb.coalescing=none``;
- ``mthp``: radix, ``os.policy=mthp`` (2 MiB -> 64 KiB -> 4 KiB) with the contiguous bit on
  (64 KiB folios are 16 marked PTEs, as arm64's contpte maps them);
- ``et``: the ``et`` design (CoalaPaging, contiguous bit) with ``os.thp=always``, except the
  64 KiB-friendly stand-ins, which run with ``os.thp=never`` as the paper runs that trio;
- fragmented: ``thp`` and ``et`` again after ``os.fragmenter.mode=alternating`` at
  ``os.fmfi_target`` 0.5 and 0.99.

Speedup = ``timing.cycles`` of 4 KiB / of the configuration (core cycles; page-fault and
other OS time is in ``timing.os_cycles``, not in ``timing.cycles``).

Usage: ``python scripts/et_eval.py`` (after ``make build``); prints a markdown table and the
translation-size mix of the ET runs.
"""

from __future__ import annotations

from et_common import NO_CONTIGUOUS_BIT, core_configs, print_speedups, print_walks, run_n1

# Stand-ins for the paper's three kinds of workload (kind, workload, footprint).
WORKLOADS = [
    ("64 KiB-friendly", "pointer_chase", "48MiB"),
    ("64 KiB-friendly", "stream", "48MiB"),
    ("2 MiB is enough", "bfs", "512MiB"),
    ("2 MiB is enough", "xsbench", "512MiB"),
    ("32 MiB helps", "gups", "8GiB"),
    ("32 MiB helps", "kv", "8GiB"),
]
SCALE = {"refs": "2M"}
BASE = {"os.phys_mem_bytes": "40GiB"}


def _run(design: str, workload: str, footprint: str, **sets) -> dict:
    return run_n1(design, workload, footprint, BASE, SCALE, **sets)


def configs(kind: str) -> dict[str, tuple[str, dict]]:
    """The configurations of one workload kind (name -> design, settings)."""
    off = NO_CONTIGUOUS_BIT
    et_thp = "never" if kind.startswith("64") else "always"
    out = core_configs(kind)
    for fmfi in ("0.5", "0.99"):
        # The fragmenter leaves 25 % of the 40 GiB free (10 GiB): the 8 GiB footprints fit.
        frag = {"os.fragmenter.mode": "alternating", "os.fmfi_target": fmfi}
        out[f"thp@{fmfi}"] = ("radix", dict(off, **{"os.thp": "always"}, **frag))
        out[f"et@{fmfi}"] = ("et", dict(frag, **{"os.thp": et_thp, "et.pwc_latency_cycles": 3}))
    return out


def main() -> None:
    rows = []
    mixes = []
    for kind, workload, footprint in WORKLOADS:
        recs = {
            name: _run(design, workload, footprint, **sets)
            for name, (design, sets) in configs(kind).items()
        }
        for name, r in recs.items():
            assert r["oracle"]["mismatches"] == 0, (workload, name)
        cyc = {name: r["timing"]["cycles"] for name, r in recs.items()}
        walks = {name: r["walk"]["count"] for name, r in recs.items()}
        rows.append((kind, workload, footprint, cyc, walks))
        et = recs["et"]["et"]["mapped_bytes_by_translation"]
        total = sum(et.values()) or 1
        mixes.append((workload, {k: v / total for k, v in et.items()}))
    names = list(configs("x").keys())
    print_speedups(
        ["kind", "stand-in", "footprint"],
        [([kind, workload, footprint], cyc) for kind, workload, footprint, cyc, _ in rows],
        names,
        header=lambda n: f"{n} speedup",
    )
    print()
    print_walks([(workload, walks) for _, workload, _, _, walks in rows], names)
    print()
    print("| stand-in (et) | 4 KiB | 64 KiB | 2 MiB | 32 MiB | 1 GiB |")
    print("|---|---|---|---|---|---|")
    for workload, mix in mixes:
        cells = [f"{100 * mix.get(k, 0):.1f} %" for k in ("4k", "64k", "2m", "32m", "1g")]
        print(f"| {workload} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
