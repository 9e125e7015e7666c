"""Per-workload table of LVM's paper-scale runs (docs/designs/lvm.md, "At the papers' scale"),
read from the result store of ``xlat reproduce lvm --paper-scale --db DB``.

Usage::

    python scripts/lvm_paper_scale_table.py DB

Columns, each a ratio on the same grid point (workload and ``os.thp``): LVM over radix with
4 KiB pages, in core cycles (``timing.cycles``) and with OS time (``timing.os_cycles`` added,
as the recorded claims count it); an ideal one-access table over LVM (core cycles); LVM's walk
cycles over radix's (``walk.cycles``); the two designs' ``timing.avg_walk_latency_cycles``;
with THP, LVM over radix (core cycles), LVM's walk references over radix's
(``walk.mem_accesses``), and LVM's ``lvm.collision_rate`` and
``lvm.extra_accesses_per_collision``.
"""

import json
import sys

import duckdb
from xlat.records import get_path

ORDER = ["bfs", "cc", "dc", "dfs", "pagerank", "sssp", "gups", "mummer", "memcached", "xsbench"]
COLUMNS = ["workload", "4 KiB: LVM over radix", "with OS time", "ideal over LVM",
           "LVM walk cycles / radix's", "radix / LVM walk latency", "THP: LVM over radix",
           "THP: LVM walk references / radix's",
           "THP: LVM collision rate, extra lines per collision"]  # fmt: skip


def get(record: dict, path: str, default=None):
    """The value at a dotted path of a record, or ``default``."""
    try:
        return get_path(record, path)
    except KeyError:
        return default


def total(record: dict) -> float:
    """Core cycles plus OS cycles, the claims' ``metric = "total"``."""
    return get(record, "timing.cycles") + get(record, "timing.os_cycles", 0)


def row(workload: str, small: dict, huge: dict) -> list[str]:
    """One workload's cells from its 4 KiB (``small``) and THP (``huge``) runs by design."""
    radix, lvm, ideal = small["radix"], small["lvm"], small["ideal"]
    collisions = get(huge["lvm"], "lvm.collision_rate", 0.0)
    extra = get(huge["lvm"], "lvm.extra_accesses_per_collision", 0.0)
    return [
        workload,
        f"{get(radix, 'timing.cycles') / get(lvm, 'timing.cycles'):.3f}",
        f"{total(radix) / total(lvm):.3f}",
        f"{get(lvm, 'timing.cycles') / get(ideal, 'timing.cycles'):.3f}",
        f"{get(lvm, 'walk.cycles') / get(radix, 'walk.cycles'):.3f}",
        f"{get(radix, 'timing.avg_walk_latency_cycles'):.1f} / "
        f"{get(lvm, 'timing.avg_walk_latency_cycles'):.1f}",
        f"{get(huge['radix'], 'timing.cycles') / get(huge['lvm'], 'timing.cycles'):.3f}",
        f"{get(huge['lvm'], 'walk.mem_accesses') / get(huge['radix'], 'walk.mem_accesses'):.2f}",
        f"{100 * collisions:.1f} %, {extra:.1f}" if collisions else "0",
    ]


def main() -> None:
    con = duckdb.connect(sys.argv[1], read_only=True)
    by_point: dict[tuple[str, str], dict[str, dict]] = {}
    for design, workload, record_json in con.execute(
        "SELECT design, workload, record_json FROM runs WHERE status = 'ok'"
    ).fetchall():
        record = json.loads(record_json)
        thp = get(record, "config.os.thp", "never")
        by_point.setdefault((workload, thp), {})[design] = record
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for w in ORDER:
        small, huge = by_point.get((w, "never"), {}), by_point.get((w, "always"), {})
        if {"radix", "lvm", "ideal"} <= small.keys() and {"radix", "lvm"} <= huge.keys():
            print("| " + " | ".join(row(w, small, huge)) + " |")


if __name__ == "__main__":
    main()
