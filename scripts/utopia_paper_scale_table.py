"""Per-workload table of Utopia's paper-scale runs (docs/designs/utopia.md, "At the papers'
scale with Table 2's page-size mix"), read from the result store of
``xlat reproduce utopia --paper-scale --db DB``.

Usage::

    python scripts/utopia_paper_scale_table.py DB

Columns: radix's share of memory in 2 MiB pages (``os.mapped_bytes_by_size``), Utopia's
``utopia.walks_avoided_share``, Utopia, a perfect TLB and RMM over radix (``timing.cycles``),
Utopia with its OS time (``timing.os_cycles``), Utopia's migrations per kilo-instruction and
radix's ``timing.avg_walk_latency_cycles``.
"""

import json
import sys

import duckdb
from xlat.records import get_path

ORDER = ["bc", "bfs", "cc", "gc", "pagerank", "tc", "sssp", "xsbench", "gups", "dlrm", "kmer",
         "gups,xsbench,gups,xsbench"]  # fmt: skip
COLUMNS = ["workload", "radix: 2 MiB share", "walks avoided", "Utopia over radix (core cycles)",
           "with OS time", "perfect TLB over radix", "RMM over radix",
           "migrations per kilo-instruction", "radix walk latency"]  # fmt: skip


def get(record: dict, path: str, default=None):
    """The value at a dotted path of a record, or ``default``."""
    try:
        return get_path(record, path)
    except KeyError:
        return default


def row(workload: str, radix: dict, utopia: dict, perfect: dict, rmm: dict | None) -> list[str]:
    """One workload's cells."""
    cycles = get(radix, "timing.cycles")
    mine = get(utopia, "timing.cycles")
    huge = get(radix, "os.mapped_bytes_by_size.2m", 0)
    small = get(radix, "os.mapped_bytes_by_size.4k", 0)
    avoided = get(utopia, "utopia.walks_avoided_share", float("nan"))
    migrations = get(utopia, "utopia.migrations", 0) / get(utopia, "instructions", 1) * 1000
    return [
        "4 cores (gups, xsbench x 2)" if "," in workload else workload,
        f"{100 * huge / (huge + small):.1f} %",
        f"{100 * avoided:.1f} %",
        f"{cycles / mine:.3f}",
        f"{cycles / (mine + get(utopia, 'timing.os_cycles', 0)):.3f}",
        f"{cycles / get(perfect, 'timing.cycles'):.3f}",
        f"{cycles / get(rmm, 'timing.cycles'):.3f}" if rmm else "—",
        f"{migrations:.2f}",
        f"{get(radix, 'timing.avg_walk_latency_cycles'):.1f}",
    ]


def main() -> None:
    con = duckdb.connect(sys.argv[1], read_only=True)
    records = {
        (d, w): json.loads(r)
        for d, w, r in con.execute(
            "SELECT design, workload, record_json FROM runs WHERE status = 'ok'"
        ).fetchall()
    }
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for w in ORDER:
        radix, utopia, perfect = (records.get((d, w)) for d in ("radix", "utopia", "perfect_tlb"))
        if radix and utopia and perfect:
            print("| " + " | ".join(row(w, radix, utopia, perfect, records.get(("rmm", w)))) + " |")


if __name__ == "__main__":
    main()
