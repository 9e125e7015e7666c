"""Make docs/figures/virt-walk-refs.png: page-walk references per TLB-miss walk by dimension,
native vs nested (radix guest on a radix host), 4 KiB and 2 MiB host pages.

Each bar is one run of the built-in gups workload through the Python front, equivalent to::

    xlat run --workload gups --footprint 256MiB --refs 2M \\
        --set os.phys_mem_bytes=4GiB --set virt.enabled=true \\
        --set virt.host_os.phys_mem_bytes=8GiB --set virt.host_os.thp=never|always --json

(the native run without the ``virt`` settings). The stacked parts are ``virt.guest_pt_refs``,
``virt.host_refs_for_guest_pt`` and ``virt.host_refs_for_data``, each divided by the walks'
count (TLB-miss plus post-fault walks, whose references they cover); the native bar is
``walk.mem_accesses`` per walk. The numbers are printed as well.

Usage: ``python scripts/virt_figure.py [OUT.png]`` (after ``make build``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from xlat.run import run

COMMON = {
    "workload": "gups",
    "footprint": "256MiB",
    "refs": "2M",
}
BASE_SET = {"os.phys_mem_bytes": "4GiB"}


def _runs() -> list[tuple[str, dict]]:
    nested = dict(BASE_SET, **{"virt.enabled": True, "virt.host_os.phys_mem_bytes": "8GiB"})
    return [
        ("native", run(**COMMON, set=BASE_SET)),
        ("nested, 4 KiB host", run(**COMMON, set=dict(nested, **{"virt.host_os.thp": "never"}))),
        ("nested, 2 MiB host", run(**COMMON, set=dict(nested, **{"virt.host_os.thp": "always"}))),
    ]


def main(out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, guest, host_pt, host_data = [], [], [], []
    for label, rec in _runs():
        w = rec["walk"]
        walks = w["count"] + w["post_fault_count"]
        labels.append(label)
        if "virt" in rec:
            v = rec["virt"]
            assert v["refs_total"] == w["mem_accesses"] + w["post_fault_mem_accesses"]
            guest.append(v["guest_pt_refs"] / walks)
            host_pt.append(v["host_refs_for_guest_pt"] / walks)
            host_data.append(v["host_refs_for_data"] / walks)
        else:
            guest.append((w["mem_accesses"] + w["post_fault_mem_accesses"]) / walks)
            host_pt.append(0.0)
            host_data.append(0.0)
        print(
            f"{label}: walks {walks}, refs/walk guest {guest[-1]:.3f}, host for guest PT "
            f"{host_pt[-1]:.3f}, host for data {host_data[-1]:.3f}, total "
            f"{guest[-1] + host_pt[-1] + host_data[-1]:.3f}; avg walk cycles "
            f"{w['avg_cycles']:.1f}"
        )
    fig, ax = plt.subplots(figsize=(6.0, 3.4))
    x = range(len(labels))
    ax.bar(x, guest, label="guest page-table reads", color="#4C72B0")
    ax.bar(x, host_pt, bottom=guest, label="host walk for guest PT pages", color="#DD8452")
    bottom = [a + b for a, b in zip(guest, host_pt)]
    ax.bar(x, host_data, bottom=bottom, label="host walk for the data page", color="#55A868")
    ax.set_xticks(list(x), [lbl.replace(", ", "\n") for lbl in labels])
    ax.set_ylabel("page-table references per walk")
    ax.set_title("gups 256 MiB, radix (on radix), default PWCs / nested TLB")
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", color="#DDDDDD", linewidth=0.6)
    ax.set_axisbelow(True)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=150, bbox_inches="tight")
    print(f"wrote {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/figures/virt-walk-refs.png"))
