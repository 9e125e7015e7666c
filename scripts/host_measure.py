"""Measure this machine's memory system and translation with tools/hostbench (docs/host.md).

Builds the C microbenchmarks (``make -C tools/hostbench``), records what the machine says of
itself (``lscpu``, the ``/proc/cpuinfo`` model name and flags, the THP settings, the kernel,
the cache hierarchy from sysfs, the TLB leaves of ``cpuid`` when the tool is installed), then
runs the set and writes one JSON line per measurement, after one ``"record": "host"`` line,
to a JSON-lines file.

The set (``--smoke``: the same shape with small regions and short runs):

- ``clock``: the core clock from a chain of dependent adds, on each CPU;
- ``bw``: streaming read and triad, 1 and 2 threads, 2 GiB arrays, best of 5;
- ``chase``: dependent chase over 1 GiB and 8 GiB, 4 KiB (``MADV_NOHUGEPAGE``) and 2 MiB
  (``MADV_HUGEPAGE``) pages, every line of the region (slot 64) and one line per 4 KiB page
  (slot 4096), each alone and beside one streaming thread (loaded latency);
- ``gups``: random updates over 1 GiB and 8 GiB, 4 KiB and 2 MiB pages;
- ``ladder``: chase over 16 KiB .. 64 MiB (2 MiB pages, every line): the cache latencies;
- ``reach``: chase with one line per 4 KiB page over 256 KiB .. 32 MiB, 4 KiB and 2 MiB
  pages: where the TLBs run out, and whether 2 MiB guest pages give 2 MiB TLB entries.

8 GiB regions run only if ``MemAvailable`` is at least 12 GiB. A busy machine (1-minute load
average above ``--max-load``) is refused unless ``--force``; the load average is recorded
beside every measurement either way.

Usage::

    python3 scripts/host_measure.py [--smoke] [--force] [--out FILE] [--only bw,chase,...]
    python3 scripts/host_measure.py --summarize FILE   # Markdown tables of a results file
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "tools" / "hostbench"
GIB = 1 << 30
STEPS = ("clock", "bw", "chase", "gups", "ladder", "reach", "mlp", "rob", "walks", "share")

# `chase --chains`: independent chases at once (memory-level parallelism; docs/host.md).
MLP_CHAINS = "1,2,3,4,6,8,12,16,24,32"

# The `share` step: chases through regions around the guest's L3 share with 1-16 chains. A line
# of a region is reused every (lines x ns per access); on the Zen 3 host whether it is still in
# the L3 depended on that time, not on the region's size (docs/host.md, "The share is a
# retention time").
SHARE_SIZES = ("2M", "4M", "8M", "16M")
SHARE_CHAINS = "1,2,4,8,16"


def sh(cmd: list[str]) -> str:
    """Run a command and return its stdout, or "" if it is missing or fails."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""


def read(path: str) -> str:
    """A small text file's content, stripped, or "" if unreadable."""
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def loadavg() -> list[float]:
    """The 1, 5 and 15-minute load averages."""
    return [float(x) for x in read("/proc/loadavg").split()[:3]]


def meminfo_kb(key: str) -> int:
    """One /proc/meminfo field in kB (0 if absent)."""
    m = re.search(rf"^{key}:\s+(\d+) kB", read("/proc/meminfo"), re.M)
    return int(m.group(1)) if m else 0


def bracketed(path: str) -> str:
    """The selected word of a sysfs choice file ("madvise" from "always [madvise] never")."""
    m = re.search(r"\[(\w[\w+]*)\]", read(path))
    return m.group(1) if m else read(path)


def caches() -> list[dict]:
    """cpu0's caches from /sys/devices/system/cpu/cpu0/cache (what the guest is told)."""
    out = []
    for d in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        out.append(
            {
                f: read(str(d / f))
                for f in (
                    "level",
                    "type",
                    "size",
                    "ways_of_associativity",
                    "number_of_sets",
                    "coherency_line_size",
                    "shared_cpu_list",
                )
            }
        )
    return out


# AMD's encoding of L2/L3 cache and TLB associativity (AMD64 APM vol. 3, CPUID Fn8000_0006).
AMD_ASSOC = {
    0: "disabled",
    1: "1-way",
    2: "2-way",
    3: "3-way",
    4: "4-way",
    5: "6-way",
    6: "8-way",
    8: "16-way",
    9: "see Fn8000_001D",
    10: "32-way",
    11: "48-way",
    12: "64-way",
    13: "96-way",
    14: "128-way",
    15: "fully associative",
}


def cpuid_raw(leaf: int) -> dict[str, int] | None:
    """Registers of one CPUID leaf (subleaf 0) on one CPU, via the ``cpuid`` tool."""
    text = sh(["cpuid", "-1", "-r", "-l", hex(leaf)])
    m = re.search(r"eax=(0x[0-9a-f]+) ebx=(0x[0-9a-f]+) ecx=(0x[0-9a-f]+) edx=(0x[0-9a-f]+)", text)
    if not m:
        return None
    return dict(zip(("eax", "ebx", "ecx", "edx"), (int(x, 16) for x in m.groups())))


def l1_tlb(reg: int) -> dict:
    """Fn8000_0005 EAX/EBX layout: data assoc 31:24, data entries 23:16, instr 15:8, 7:0."""
    return {
        "data_entries": (reg >> 16) & 0xFF,
        "data_assoc": "fully associative" if (reg >> 24) & 0xFF == 0xFF else (reg >> 24) & 0xFF,
        "instr_entries": reg & 0xFF,
        "instr_assoc": "fully associative" if (reg >> 8) & 0xFF == 0xFF else (reg >> 8) & 0xFF,
    }


def l2_tlb(reg: int) -> dict:
    """Fn8000_0006 EAX/EBX and Fn8000_0019 layout: data assoc 31:28, entries 27:16, instr."""
    return {
        "data_entries": (reg >> 16) & 0xFFF,
        "data_assoc": AMD_ASSOC.get((reg >> 28) & 0xF, "?"),
        "instr_entries": reg & 0xFFF,
        "instr_assoc": AMD_ASSOC.get((reg >> 12) & 0xF, "?"),
    }


def tlbs() -> dict:
    """The TLB and cache leaves of AMD's extended CPUID, raw and decoded (empty without cpuid)."""
    raw = {hex(leaf): cpuid_raw(leaf) for leaf in (0x80000005, 0x80000006, 0x80000019)}
    if not all(raw.values()):
        return {"error": "cpuid tool missing or leaves unavailable (apt-get install cpuid)"}
    l5, l6, l19 = raw["0x80000005"], raw["0x80000006"], raw["0x80000019"]
    return {
        "raw": {leaf: {r: f"0x{v:08x}" for r, v in regs.items()} for leaf, regs in raw.items()},
        "l1_4k": l1_tlb(l5["ebx"]),
        "l1_2m": l1_tlb(l5["eax"]),
        "l1_1g": l2_tlb(l19["eax"]),
        "l2_4k": l2_tlb(l6["ebx"]),
        "l2_2m": l2_tlb(l6["eax"]),
        "l2_1g": l2_tlb(l19["ebx"]),
        "l1d_kb": (l5["ecx"] >> 24) & 0xFF,
        "l2_kb": (l6["ecx"] >> 16) & 0xFFFF,
        "l2_assoc": AMD_ASSOC.get((l6["ecx"] >> 12) & 0xF, "?"),
        "l3_kb_package": ((l6["edx"] >> 18) & 0x3FFF) * 512,
    }


def host_record(args: argparse.Namespace) -> dict:
    """Everything the machine says of itself, as one JSON object."""
    cpuinfo = read("/proc/cpuinfo")
    model = re.search(r"^model name\s*:\s*(.*)$", cpuinfo, re.M)
    mhz = re.search(r"^cpu MHz\s*:\s*(.*)$", cpuinfo, re.M)
    flags = re.search(r"^flags\s*:\s*(.*)$", cpuinfo, re.M)
    ident = {}
    for key, field in (
        ("cpu_family", "cpu family"),
        ("cpu_model", "model"),
        ("cpu_stepping", "stepping"),
        ("microcode", "microcode"),
    ):
        m = re.search(rf"^{field}\s*:\s*(.*)$", cpuinfo, re.M)
        ident[key] = m.group(1).strip() if m else ""
    flag_set = set(flags.group(1).split()) if flags else set()
    lscpu_json = sh(["lscpu", "-J"])
    lscpu_text = sh(["lscpu"])
    vendor = re.search(r"Hypervisor vendor:\s*(\S+)", lscpu_text)
    thp = "/sys/kernel/mm/transparent_hugepage"
    return {
        "record": "host",
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "git_commit": sh(["git", "-C", str(ROOT), "rev-parse", "HEAD"]).strip(),
        "smoke": args.smoke,
        "kernel": platform.uname()._asdict(),
        "cmdline": read("/proc/cmdline"),
        "model_name": model.group(1) if model else "",
        # The hypervisor hides the model string; family / model / stepping still tell the
        # core apart (25 / 1: Zen 3 Milan; 26 / 2: Zen 5 Turin), and a guest can move between
        # hosts from one boot to the next: every prediction must be compared with measurements
        # of the same CPU (docs/host.md).
        **ident,
        "cpu_mhz": float(mhz.group(1)) if mhz else None,
        "hypervisor_flag": "hypervisor" in flag_set,
        "flags_of_interest": sorted(
            flag_set & {"hypervisor", "svm", "npt", "pdpe1gb", "pcid", "invpcid", "pse"}
        ),
        "hypervisor_vendor": vendor.group(1) if vendor else "",
        "lscpu": json.loads(lscpu_json) if lscpu_json else lscpu_text,
        "caches_sysfs": caches(),
        "cpuid": tlbs(),
        "thp_enabled": bracketed(f"{thp}/enabled"),
        "thp_defrag": bracketed(f"{thp}/defrag"),
        "thp_khugepaged_defrag": read(f"{thp}/khugepaged/defrag"),
        "mem_total_kb": meminfo_kb("MemTotal"),
        "mem_available_kb": meminfo_kb("MemAvailable"),
        "loadavg_start": loadavg(),
        "nproc": os.cpu_count(),
    }


def plan(args: argparse.Namespace, big_ok: bool) -> list[tuple[str, list[str]]]:
    """The (step, command) list for the chosen set."""
    sec = str(args.seconds)
    cmds: list[tuple[str, list[str]]] = []
    if args.smoke:
        regions = ["64M"]
        bw = ["--size", "256M", "--reps", "3"]
        load_size = "64M"
        ladder = ["16K", "256K", "4M", "64M"]
        reach = ["256K", "16M"]
    else:
        regions = ["1G"] + (["8G"] if big_ok else [])
        bw = ["--size", "2G", "--reps", "5"]
        load_size = "512M"
        ladder = ["16K", "32K", "64K", "256K", "512K", "1M", "2M", "4M", "8M", "12M", "16M", "20M"]
        ladder += ["24M", "32M", "64M"]
        reach = ["256K", "1M", "4M", "8M", "12M", "16M", "32M"]
    if "clock" in args.only:
        cmds += [("clock", ["./clock", "--cpu", str(c)]) for c in range(os.cpu_count() or 1)]
    if "bw" in args.only:
        cmds.append(("bw", ["./bw", "--kernel", "all", "--threads", "1,2", *bw]))
    for size in regions:
        for pages in ("4k", "2m"):
            if "chase" in args.only:
                cmds.append(
                    (
                        "chase",
                        [
                            "./chase",
                            "--size",
                            size,
                            "--pages",
                            pages,
                            "--slot",
                            "64,4096",
                            "--load",
                            "0,1",
                            "--load-size",
                            load_size,
                            "--seconds",
                            sec,
                        ],
                    )
                )
            if "gups" in args.only:
                cmds.append(
                    ("gups", ["./gups", "--size", size, "--pages", pages, "--seconds", sec])
                )
    short = str(min(args.seconds, 1.0))
    if "ladder" in args.only:
        for size in ladder:
            cmds.append(
                ("ladder", ["./chase", "--size", size, "--pages", "2m", "--seconds", short])
            )
    if "mlp" in args.only:
        for size in regions:
            for pages in ("4k", "2m"):
                cmds.append(
                    (
                        "mlp",
                        ["./chase", "--size", size, "--pages", pages, "--chains", MLP_CHAINS]
                        + ["--seconds", short],
                    )
                )
    if "share" in args.only:
        for size in SHARE_SIZES[:2] if args.smoke else SHARE_SIZES:
            cmds.append(
                (
                    "share",
                    ["./chase", "--size", size, "--pages", "2m", "--chains", SHARE_CHAINS]
                    + ["--seconds", short],
                )
            )
    if "rob" in args.only:
        # The window: NOPs (the reorder buffer) and register-writing LEAs (the register file).
        for filler in ("nop", "lea"):
            cmds.append(("rob", ["./robprobe", "--filler", filler, "--seconds", "0.5"]))
    if "walks" in args.only:
        # TLB misses overlapped: a dependent chase against random loads, one line per page,
        # over regions past the TLB's reach whose lines and page tables stay cached.
        for size in ["8M"] + (["64M"] if args.smoke else ["64M", "128M"]):
            for pages in ("4k", "2m"):
                cmds.append(
                    (
                        "walks",
                        ["./chase", "--size", size, "--pages", pages, "--slot", "4096"]
                        + ["--seconds", short],
                    )
                )
                if size != "8M":
                    cmds.append(
                        (
                            "walks",
                            ["./gups", "--size", size, "--pages", pages, "--op", "gather"]
                            + ["--slot", "4096", "--seconds", short],
                        )
                    )
    if "reach" in args.only:
        for pages in ("4k", "2m"):
            for size in reach:
                cmds.append(
                    (
                        "reach",
                        ["./chase", "--size", size, "--pages", pages, "--slot", "4096"]
                        + ["--seconds", short],
                    )
                )
    return cmds


def fmt_size(b: int) -> str:
    """Bytes as KiB / MiB / GiB."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def table(head: list[str], rows: list[list]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def share_table(runs: list[dict]) -> str:
    """The `share` step's table: per region and chain count, the latency each load had in flight
    (chains x ns per access: every chain has one load outstanding) and how long a line waited
    between two uses (the region's lines x ns per access).

    >>> print(share_table([{"region_bytes": 4 << 20, "chains": 2, "ns_per_access": 10.0}]))
    | region (2 MiB pages) | chains | ns/access | latency in flight, ns | line reused every, ms |
    |---|---|---|---|---|
    | 4 MiB | 2 | 10.0 | 20.0 | 0.66 |
    """
    rows = [
        [
            fmt_size(r["region_bytes"]),
            r.get("chains", 1),
            r["ns_per_access"],
            f"{r.get('chains', 1) * r['ns_per_access']:.1f}",
            f"{r['region_bytes'] // 64 * r['ns_per_access'] / 1e6:.2f}",
        ]
        for r in sorted(runs, key=lambda r: (r["region_bytes"], r.get("chains", 1)))
    ]
    head = ["region (2 MiB pages)", "chains", "ns/access"]
    return table(head + ["latency in flight, ns", "line reused every, ms"], rows)


def summarize(path: Path) -> str:
    """Markdown tables of every measurement in a results file (for docs/host.md).

    Time per access is given twice: by the wall clock and by the measuring thread's own CPU
    time (which leaves out the time other jobs ran on its CPU; see tools/hostbench/README.md).
    """
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    host = next((r for r in recs if r.get("record") == "host"), {})
    end = next((r for r in recs if r.get("record") == "end"), {})
    ms = [r for r in recs if "bench" in r]
    by = {k: [r for r in ms if r.get("step") == k] for k in STEPS}
    clock = [r["ghz_median"] for r in by["clock"]]
    ghz = sum(clock) / len(clock) if clock else None
    out = [
        f"Results file `{path.name}`: {host.get('time', '?')}, commit "
        f"{host.get('git_commit', '?')[:10]}, load average at start "
        f"{host.get('loadavg_start')}, at end {end.get('loadavg_end')}, "
        f"{end.get('seconds', '?')} s in all."
    ]
    if by["clock"]:
        out.append(
            table(
                ["CPU", "GHz (median of 9)", "max", "min", "load avg"],
                [
                    [r["cpu"], r["ghz_median"], r["ghz_max"], r["ghz_min"], r["loadavg1"]]
                    for r in by["clock"]
                ],
            )
        )
    if by["bw"]:
        out.append(
            table(
                ["kernel", "threads", "array", "best GB/s", "mean GB/s", "load avg"],
                [
                    [
                        r["kernel"],
                        r["threads"],
                        fmt_size(r["array_bytes"]),
                        r["gbs"],
                        r["gbs_mean"],
                        r["loadavg1"],
                    ]
                    for r in by["bw"]
                ],
            )
        )
    if by["chase"]:
        out.append(
            table(
                [
                    "region",
                    "pages",
                    "huge share",
                    "slot",
                    "load threads",
                    "ns/access (wall)",
                    "ns/access (thread CPU)",
                    "load GB/s",
                    "load avg",
                ],
                [
                    [
                        fmt_size(r["region_bytes"]),
                        r["pages"],
                        f"{100 * r['huge_share']:.1f} %",
                        r["slot_bytes"],
                        r["load_threads"],
                        r["ns_per_access"],
                        r["ns_per_access_cpu"],
                        r["load_gbs"] if r["load_threads"] else "",
                        r["loadavg1"],
                    ]
                    for r in by["chase"]
                ],
            )
        )
    if by["gups"]:
        out.append(
            table(
                [
                    "table",
                    "pages",
                    "huge share",
                    "ns/update (wall)",
                    "ns/update (thread CPU)",
                    "M updates/s (wall)",
                    "load avg",
                ],
                [
                    [
                        fmt_size(r["table_bytes"]),
                        r["pages"],
                        f"{100 * r['huge_share']:.1f} %",
                        r["ns_per_update"],
                        r["ns_per_update_cpu"],
                        r["mups"],
                        r["loadavg1"],
                    ]
                    for r in by["gups"]
                ],
            )
        )
    rows = []
    for size in sorted({r["region_bytes"] for r in by["chase"]}):
        for slot in (64, 4096):
            for loads in (0, 1):
                pair = {
                    r["pages"]: r
                    for r in by["chase"]
                    if r["region_bytes"] == size
                    and r["slot_bytes"] == slot
                    and r["load_threads"] == loads
                }
                if {"4k", "2m"} <= pair.keys():
                    a, b = pair["4k"], pair["2m"]
                    rows.append(
                        [
                            f"chase slot {slot}, {loads} load",
                            fmt_size(size),
                            f"{a['ns_per_access'] / b['ns_per_access']:.2f}",
                            f"{a['ns_per_access_cpu'] / b['ns_per_access_cpu']:.2f}",
                        ]
                    )
    for size in sorted({r["table_bytes"] for r in by["gups"]}):
        pair = {r["pages"]: r for r in by["gups"] if r["table_bytes"] == size}
        if {"4k", "2m"} <= pair.keys():
            a, b = pair["4k"], pair["2m"]
            rows.append(
                [
                    "gups",
                    fmt_size(size),
                    f"{a['ns_per_update'] / b['ns_per_update']:.2f}",
                    f"{a['ns_per_update_cpu'] / b['ns_per_update_cpu']:.2f}",
                ]
            )
    if rows:
        out.append(table(["measurement", "region", "4 KiB / 2 MiB (wall)", "(thread CPU)"], rows))
    if by["ladder"]:
        out.append(
            table(
                ["region (2 MiB pages, every line)", "ns (wall)", "ns (thread CPU)", "cycles"],
                [
                    [
                        fmt_size(r["region_bytes"]),
                        r["ns_per_access"],
                        r["ns_per_access_cpu"],
                        f"{r['ns_per_access_cpu'] * ghz:.0f}" if ghz else "",
                    ]
                    for r in by["ladder"]
                ],
            )
        )
    if by["mlp"]:
        rows = []
        for size in sorted({r["region_bytes"] for r in by["mlp"]}):
            for pages in ("4k", "2m"):
                runs = sorted(
                    (r for r in by["mlp"] if r["region_bytes"] == size and r["pages"] == pages),
                    key=lambda r: r.get("chains", 1),
                )
                one = next((r for r in runs if r.get("chains", 1) == 1), None)
                for r in runs:
                    rows.append(
                        [
                            fmt_size(size),
                            pages,
                            r.get("chains", 1),
                            r["ns_per_access"],
                            f"{one['ns_per_access'] / r['ns_per_access']:.2f}" if one else "",
                        ]
                    )
        out.append(
            table(
                [
                    "region (every line)",
                    "pages",
                    "chains",
                    "ns/access (wall)",
                    "accesses in flight (ns at 1 chain / ns)",
                ],
                rows,
            )
        )
    if by["share"]:
        out.append(share_table(by["share"]))
    if by["rob"]:
        out.append(
            table(
                ["filler", "fillers between the two loads", "ns per iteration"],
                [[r["filler"], r["fillers"], r["ns_per_iteration"]] for r in by["rob"]],
            )
        )
    if by["walks"]:
        chase = {(r["region_bytes"], r["pages"]): r for r in by["walks"] if r["bench"] == "chase"}
        gather = {(r["table_bytes"], r["pages"]): r for r in by["walks"] if r["bench"] == "gups"}
        rows = []
        for (size, pages), g in sorted(gather.items()):
            c, hit = chase.get((size, pages)), chase.get((8 << 20, pages))
            if c and hit:
                lat = c["ns_per_access"] - hit["ns_per_access"]
                rows.append(
                    [
                        fmt_size(size),
                        pages,
                        c["ns_per_access"],
                        hit["ns_per_access"],
                        g["ns_per_update"],
                        f"{lat / g['ns_per_update']:.1f}",
                    ]
                )
        out.append(
            table(
                [
                    "region (one line per page)",
                    "pages",
                    "chase ns",
                    "chase at 8 MiB (TLB hits)",
                    "gather ns",
                    "TLB misses overlapped",
                ],
                rows,
            )
        )
    if by["reach"]:
        rows = []
        for size in sorted({r["region_bytes"] for r in by["reach"]}):
            pair = {r["pages"]: r for r in by["reach"] if r["region_bytes"] == size}
            rows.append(
                [fmt_size(size), size // 4096]
                + [
                    f"{pair[p]['ns_per_access']} / {pair[p]['ns_per_access_cpu']}"
                    if p in pair
                    else ""
                    for p in ("4k", "2m")
                ]
            )
        out.append(
            table(
                [
                    "region (one line per 4 KiB page)",
                    "4 KiB pages touched",
                    "4 KiB pages: ns wall / CPU",
                    "2 MiB pages: ns wall / CPU",
                ],
                rows,
            )
        )
    return "\n\n".join(out) + "\n"


def main() -> int:
    """Parse arguments, check the machine is quiet and large enough, build, run, record."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="small regions, short runs")
    ap.add_argument("--force", action="store_true", help="run even if the machine is busy")
    ap.add_argument(
        "--max-load",
        type=float,
        default=0.5,
        help="refuse above this 1-minute load average (default 0.5)",
    )
    ap.add_argument("--seconds", type=float, default=2.0, help="timed seconds per measurement")
    ap.add_argument("--only", default=",".join(STEPS), help=f"steps, from {','.join(STEPS)}")
    ap.add_argument("--out", type=Path, help="JSON-lines file (default out/host/<time>.jsonl)")
    ap.add_argument(
        "--summarize", type=Path, metavar="FILE", help="print Markdown tables of a results file"
    )
    args = ap.parse_args()
    if args.summarize:
        print(summarize(args.summarize), end="")
        return 0
    args.only = set(args.only.split(","))
    if not args.only <= set(STEPS):
        ap.error(f"--only: unknown step(s) {sorted(args.only - set(STEPS))}")

    load = loadavg()
    if load[0] > args.max_load:
        msg = (
            f"the machine is busy: load average {load[0]:.2f} (1 min), {load[1]:.2f} (5 min) "
            f"above --max-load {args.max_load}; figures would be noisy"
        )
        if not args.force:
            print(f"refusing: {msg}. Use --force to measure anyway.", file=sys.stderr)
            return 1
        print(f"warning: {msg} (--force: measuring anyway)", file=sys.stderr)

    avail_gib = meminfo_kb("MemAvailable") / (1 << 20)
    big_ok = avail_gib >= 12
    if not big_ok and not args.smoke:
        print(
            f"skipping 8 GiB regions: MemAvailable is {avail_gib:.1f} GiB (< 12 GiB)",
            file=sys.stderr,
        )

    subprocess.run(["make", "-C", str(BENCH)], check=True)
    if not shutil.which("cpuid"):
        print("note: cpuid not installed; TLB sizes not recorded (apt-get install cpuid)")

    out = args.out or ROOT / "out" / "host" / time.strftime("hostbench-%Y%m%d-%H%M%S.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()
    with out.open("w") as f:
        rec = host_record(args)
        rec["busy"] = load[0] > args.max_load
        rec["big_regions"] = big_ok
        f.write(json.dumps(rec) + "\n")
        for i, (step, cmd) in enumerate(plan(args, big_ok)):
            before = loadavg()
            print(f"== [{i}] {step}: {' '.join(cmd)}  (load {before[0]:.2f})", flush=True)
            t0 = time.monotonic()
            proc = subprocess.run(cmd, cwd=BENCH, capture_output=True, text=True)
            for line in proc.stdout.splitlines():
                if line.startswith("{"):
                    m = json.loads(line)
                    m.update(step=step, index=i, command=" ".join(cmd), loadavg_before=before)
                    f.write(json.dumps(m) + "\n")
                else:
                    print(line)
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                f.write(json.dumps({"record": "error", "command": " ".join(cmd)}) + "\n")
            print(f"   ({time.monotonic() - t0:.1f} s)", flush=True)
            f.flush()
        f.write(
            json.dumps(
                {
                    "record": "end",
                    "loadavg_end": loadavg(),
                    "seconds": round(time.monotonic() - t_start, 1),
                }
            )
            + "\n"
        )
    print(f"wrote {out} ({time.monotonic() - t_start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
