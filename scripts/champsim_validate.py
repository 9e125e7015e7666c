#!/usr/bin/env python3
"""Validate xlat's core models against ChampSim on twelve ChampSim traces (docs/timing.md).

    scripts/champsim_validate.py [--champsim-src DIR] [--out DIR] [--records N]
                                 [--footprint BYTES] [--patterns P,P,...] [--models M,M,...]
                                 [--jobs N] [--extra-patch FILE]

Writes the traces (``TRACES``: name -> writer pattern, footprint, instructions) with
``tools/champsim_trace_writer.py``: gups, stream, pointer_chase, graph, hash at 256 MiB; gups_1g
and random_chase_1g (1 GiB working sets); page_stride (a sweep that stays on one DRAM bank for
64 loads at a time); zipf_1g (skewed random loads); random_update and random_update_1g
(walker-saturating read-modify-write updates); chase_with_loads (a dependent chain mixed with
independent loads). Each is a *prologue* (one store to every page the pattern touches) followed
by ``--records`` instructions of the pattern. The prologue is the warm-up of both simulators and
the pattern is measured, so that neither measures page faults (see docs/timing.md, "Validation
against ChampSim", for why). Each trace runs in four machine configurations (default; a small and a
large L2 TLB; page-walk caches off) under xlat ``simple``, xlat ``ooo`` (walkers and MSHRs
granted in program order; in idle gaps: ``ooo_gaps``; first come, first served in request
time: ``ooo_time``, the grant validated) and ChampSim, and the
script prints, per trace: IPC, the ratio IPC(large L2 TLB) / IPC(small L2 TLB), the ratio
IPC(page-walk caches on) / IPC(off), and the TLB, walk and cache counters of both simulators;
then the comparison of the default grant (``ooo_time``) with ChampSim in per cent against the
10 % criterion, and the DRAM and walk figures of both (read row-buffer hit rate, ChampSim's LLC
and STLB miss latencies, xlat's ``dram.queued`` read latency and queueing, timed walks).
``--models`` picks the xlat models run (all four by default); ``--extra-patch FILE`` applies a
further patch to ChampSim after the xlat-match patch (e.g.
``scripts/champsim/srrip-long-insertion.patch``: ChampSim's SRRIP inserting fills at RRPV 2;
``scripts/champsim/column-pipelining.patch``: a ChampSim bank issuing row hits tCCD_L apart
instead of one request at a time; both repeatable, see docs/timing.md).

xlat: IPC of the measured part = (instructions(full) - instructions(prologue)) /
(cycles(full) - cycles(prologue)), from a run of the whole trace and a run stopped after the
prologue (``--refs``): xlat has no warm-up of its own here.

ChampSim: ``--champsim-src DIR`` (or ``CHAMPSIM_DIR``) names a ChampSim source tree or git
repository (https://github.com/ChampSim/ChampSim, tested at 2ff25011, May 2025). The script
clones or copies it to ``OUT/champsim``, applies ``scripts/champsim/xlat-match.patch`` (ChampSim's
page-table walker made to walk like x86 hardware and xlat's radix, and write-backs that miss
not allocated, as in xlat's caches; see docs/timing.md), writes
the four configurations (``champsim_config`` below), and builds them with ``make``; it rebuilds
only when the source, the patch or the configurations change. ChampSim needs fmt, CLI11,
nlohmann-json, bzip2, lzma and zlib: ChampSim's vcpkg, or Debian's libfmt-dev libcli11-dev
nlohmann-json3-dev libbz2-dev liblzma-dev zlib1g-dev (then the script builds against the system
libraries; Debian's CLI11 is header-only, so an empty ``libCLI11.a`` stands in for the library
ChampSim's Makefile links). ChampSim runs with ``--warmup-instructions <prologue>
--simulation-instructions <records>``.

Without a ChampSim source, or when the build fails, the ChampSim columns say "not run" and the
script says why on stderr: it never invents a figure. CI does not run this script.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import champsim_trace_writer  # noqa: E402

MIB, GIB = 1 << 20, 1 << 30

# The traces: name -> (writer pattern, footprint in bytes, measured instructions). The
# instructions (``--records`` overrides them all) are sized so that each ChampSim run simulates a
# few million cycles at most (ChampSim runs at roughly 0.1 M cycles/s here); ``--footprint``
# overrides every footprint.
TRACES = {
    "gups": ("gups", 256 * MIB, 200_000),
    "stream": ("stream", 256 * MIB, 400_000),
    "pointer_chase": ("pointer_chase", 256 * MIB, 20_000),
    "graph": ("graph", 256 * MIB, 100_000),
    "hash": ("hash", 256 * MIB, 60_000),
    "gups_1g": ("gups", GIB, 200_000),
    "random_chase_1g": ("random_chase", GIB, 20_000),
    "page_stride": ("page_stride", 256 * MIB, 150_000),
    "zipf_1g": ("zipf", GIB, 200_000),
    "random_update": ("random_update", 256 * MIB, 200_000),
    "random_update_1g": ("random_update", GIB, 200_000),
    "chase_with_loads": ("chase_with_loads", 256 * MIB, 50_000),
}
PATTERNS = list(TRACES)
PATCH = ROOT / "scripts" / "champsim" / "xlat-match.patch"

# xlat overrides of each configuration (tlb.l2 has 12 ways; 96 = 1/16 and 12288 = 8x the
# default 1536 entries).
CONFIGS = {
    "default": [],
    "small_stlb": ["tlb.l2.entries=96"],
    "large_stlb": ["tlb.l2.entries=12288"],
    "no_pwc": ["radix.pwc_levels=0"],
}


# xlat settings of every run that match ChampSim where xlat's default differs and ChampSim's
# cannot be set to xlat's (docs/timing.md):
# - ChampSim's DRAM address mapping at 2ff25011 (src/dram_controller.cc: offset, channel, bank
#   group, bank, column, rank, row from the low bits up, and ``swizzle_bits`` XORing the row into
#   channel, bank group and bank): xlat's ``champsim`` mapping (mem/dram/mapping.rs);
# - ChampSim's write-drain watermarks (``DRAM_CHANNEL::swap_write_mode``: a drain starts at 7/8
#   of the write queue and stops below 6/8; 28 and 24 of the 32 entries set in
#   ``champsim_config``), which are constants in ChampSim's source.
XLAT_MATCH = [
    "mem.dram.address_mapping=champsim",
    "mem.dram.write_high_watermark_entries=28",
    "mem.dram.write_low_watermark_entries=24",
]

# The xlat timing models compared: name -> settings. ``ooo`` grants walkers and MSHRs in
# program order (the default grant until 2026-11-25, pinned so that the column keeps its
# meaning), ``ooo_gaps`` in idle intervals, ``ooo_time`` in the time order of the requests (the
# default) (``core.resource_grant``, docs/timing.md).
MODELS = {
    "simple": ["timing.model=simple"],
    "ooo": ["timing.model=ooo", "core.resource_grant=program_order"],
    "ooo_gaps": ["timing.model=ooo", "core.resource_grant=idle_gaps"],
    "ooo_time": ["timing.model=ooo", "core.resource_grant=time_order"],
}


def champsim_config(name: str) -> dict:
    """A ChampSim configuration matched to xlat's default machine (configuration ``name``).

    Keys follow ChampSim's ``champsim_config.json`` (``master``, 2025). Latencies are given as
    ``hit_latency`` with ``fill_latency`` 0 so that they add up along a miss as xlat's do
    (L1D 4, L2 +14, LLC +40); the LLC's fill latency of 40 stands for xlat's
    ``mem.dram.controller_cycles``, which every DRAM read pays once. Parameters xlat does not
    model (scheduler, register file, issue ports) are set so that they do not bind. What cannot
    be matched is listed in docs/timing.md.
    """
    stlb_sets = {"small_stlb": 8, "large_stlb": 1024}.get(name, 128)
    # xlat radix: PDE, PDPTE and PML4E caches of 32 entries, 4-way. ChampSim's pscl<N> caches
    # the level-N entry (pscl2 = PDE); with the x86-walk patch a PSC of 0 ways is absent.
    ways = 0 if name == "no_pwc" else 4
    ptw: dict = {f"pscl{n}_{k}": v for n in (4, 3, 2) for k, v in (("set", 8), ("way", ways))}
    ptw.update(pscl5_set=0, pscl5_way=0, lower_level="cpu0_L2C")  # mem.walk_entry = "l2"

    def cache(sets: int, ways: int, hit: int, mshrs: int, fill: int = 0, **extra) -> dict:
        return dict(
            sets=sets,
            ways=ways,
            hit_latency=hit,
            fill_latency=fill,
            mshr_size=mshrs,
            prefetcher="no",
            **extra,
        )

    def tlb(sets: int, ways: int, hit: int, mshrs: int) -> dict:
        return dict(sets=sets, ways=ways, hit_latency=hit, fill_latency=0, mshr_size=mshrs)

    return {
        "executable_name": f"champsim_{name}",
        "block_size": 64,
        "page_size": 4096,
        "heartbeat_frequency": 100_000_000,
        "num_cores": 1,
        "ooo_cpu": [
            {
                "frequency": 2600,  # mem.dram.core_clock_mhz
                "rob_size": 224,  # core.rob_entries
                "lq_size": 72,  # core.lq_entries
                "sq_size": 56,  # core.sq_entries
                "fetch_width": 4,
                "decode_width": 4,
                "dispatch_width": 4,  # core.dispatch_width
                "retire_width": 4,  # core.retire_width
                # Not modeled by xlat, so set not to bind:
                "execute_width": 8,
                "lq_width": 4,
                "sq_width": 4,
                "scheduler_size": 224,
                "register_file_size": 512,
                "ifetch_buffer_size": 64,
                "decode_buffer_size": 32,
                "dispatch_buffer_size": 32,
                "branch_predictor": "bimodal",
                "btb": "basic_btb",
            }
        ],
        "L1I": cache(64, 8, 4, 8),
        "L1D": cache(64, 8, 4, 10),  # mem.l1d 32 KiB 8-way 4 cycles; core.l1d_mshrs
        "L2C": cache(1024, 16, 14, 16),  # mem.l2 1 MiB 16-way +14; core.l2_mshrs
        "LLC": cache(2048, 16, 40, 32, fill=40, frequency=2600, replacement="srrip"),
        "ITLB": tlb(16, 8, 1, 8),  # tlb.itlb 128 x 8
        "DTLB": tlb(16, 4, 1, 16),  # tlb.l1_4k 64 x 4, latency 1 (hidden)
        # tlb.l2 1536 x 12, 12 cycles. Its MSHRs bound the outstanding STLB misses, i.e. the
        # concurrent walks: ChampSim's PTW never enforces its own mshr_size.
        "STLB": tlb(stlb_sets, 12, 12, 2),  # core.page_walkers = 2
        "PTW": ptw,
        "physical_memory": {
            "data_rate": 3200,  # mem.dram.dram_clock_mhz = 1600
            "channels": 2,
            "ranks": 1,
            "bankgroups": 4,
            "banks": 4,  # 16 banks per channel
            "bank_columns": 1024,  # 8 KiB rows with channel_width 8
            "channel_width": 8,
            "tCAS": 22,  # mem.dram.t_cl (DDR4-3200AA, 22-22-22)
            "tRCD": 22,
            "tRP": 22,
            "tRAS": 52,  # DDR4_3200AA.t_ras (ChampSim's default is 52 as well)
            "bank_rows": 65536,  # ChampSim's default (16 row bits above the column)
            # mem.dram.read_queue_entries / write_queue_entries (ChampSim's default is 64).
            "rq_size": 32,
            "wq_size": 32,
            # 8192 refreshes in 64 ms: tREFI 7.8 us, DDR4_3200AA.t_refi (ChampSim's default
            # period of 32 ms is tREFI 3.9 us). ChampSim's tRFC is its own formula
            # (dram_controller.cc: sqrt(8 x GiB per channel) x tRAS).
            "refresh_period": 64,
            "refreshes_per_period": 8192,
        },
        "virtual_memory": {
            "pte_page_size": 4096,
            "num_levels": 4,  # radix.levels
            "minor_fault_penalty": 0,  # xlat keeps OS time out of timing.cycles
            "randomization": False,  # frames in first-touch order, as xlat's buddy allocator
        },
    }


# ---------------------------------------------------------------------------------------------
# Building ChampSim


def _run(cmd: list[str], cwd: Path, log: Path) -> None:
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}  (in {cwd})\n")
        f.flush()
        subprocess.run(cmd, cwd=cwd, check=True, stdout=f, stderr=subprocess.STDOUT)


def build_champsim(
    src: Path, out: Path, jobs: int, extra_patches: tuple[Path, ...] = ()
) -> tuple[dict[str, Path], str]:
    """Build one ChampSim binary per configuration from the source ``src`` in ``out/champsim``.

    ``extra_patches`` are applied after ``PATCH`` (``--extra-patch``; e.g.
    ``scripts/champsim/srrip-long-insertion.patch``, docs/timing.md).

    Returns (binaries by configuration, why-not message); the build log is
    ``out/champsim-build.log``.
    """
    log = out / "champsim-build.log"
    build = out / "champsim"
    configs = [champsim_config(n) for n in CONFIGS]
    cfg_text = json.dumps(configs, indent=2)
    try:
        head = subprocess.run(
            ["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        stamp = hashlib.sha256(
            (head or str(src)).encode()
            + b"".join(p.read_bytes() for p in (PATCH, *extra_patches))
            + cfg_text.encode()
        ).hexdigest()
        bins = {n: build / "bin" / f"champsim_{n}" for n in CONFIGS}
        stamp_file = build / ".xlat-build-stamp"
        if (
            stamp_file.exists()
            and stamp_file.read_text() == stamp
            and all(b.exists() for b in bins.values())
        ):
            return bins, ""
        log.write_text("")
        if build.exists():
            shutil.rmtree(build)
        if head:
            _run(["git", "clone", "--quiet", str(src), str(build)], out, log)
        else:
            shutil.copytree(
                src, build, ignore=shutil.ignore_patterns("bin", ".csconfig", ".git", "*.o")
            )
        for patch in (PATCH, *extra_patches):
            _run(["patch", "-p1", "-i", str(patch.resolve())], build, log)
        (build / "xlat_configs.json").write_text(cfg_text)
        _run([str(Path(sys.executable).resolve()), "config.sh", "xlat_configs.json"], build, log)
        make = ["make", f"-j{jobs}"]
        if not (build / "vcpkg_installed").exists():
            # System libraries: Debian's CLI11 is header-only; ChampSim's Makefile links
            # -lCLI11 and adds -isystem <triplet>/include, so give it an empty stand-in.
            deps = out / "champsim-deps"
            (deps / "include").mkdir(parents=True, exist_ok=True)
            (deps / "lib").mkdir(parents=True, exist_ok=True)
            if not (deps / "lib" / "libCLI11.a").exists():
                _run(["ar", "rcs", str(deps / "lib" / "libCLI11.a")], out, log)
            make.append(f"TRIPLET_DIR={deps.resolve()}")
        for n in CONFIGS:
            _run(make + [f"bin/champsim_{n}"], build, log)
        stamp_file.write_text(stamp)
        return bins, ""
    except (OSError, subprocess.CalledProcessError) as e:
        return {}, f"ChampSim build from {src} failed ({e}); see {log}"


# ---------------------------------------------------------------------------------------------
# Running


def run_xlat(trace: Path, model: str, overrides: list[str], refs: int) -> dict:
    """xlat's record of ``trace`` (the first ``refs`` references) under ``MODELS[model]``."""
    cmd = ["xlat", "run", "--trace", str(trace), "--json", "--refs", str(refs)]
    for o in XLAT_MATCH + MODELS[model] + overrides:
        cmd += ["--set", o]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


XLAT_COUNTERS = {
    "DTLB misses": lambda r: r["tlb"]["l1_misses"],
    "STLB misses": lambda r: r["tlb"]["l2_misses"],
    "walk PT reads": lambda r: r["walk"]["mem_accesses"] + r["walk"]["post_fault_mem_accesses"],
    "L2 PT misses": lambda r: r["cache"]["l2"]["pt_misses"],
    "LLC PT misses": lambda r: r["cache"]["llc"]["pt_misses"],
    "L1D misses": lambda r: r["cache"]["l1d"]["misses"],
    "L2 misses": lambda r: r["cache"]["l2"]["misses"],
    "LLC misses": lambda r: r["cache"]["llc"]["misses"],
}


def xlat_measured(trace: Path, model: str, overrides: list[str], prologue: int) -> dict:
    """IPC and counters of the part of ``trace`` after its prologue (full run - prologue run)."""
    full = run_xlat(trace, model, overrides, 1 << 40)
    head = run_xlat(trace, model, overrides, prologue) if prologue else None

    def diff(f):
        return f(full) - (f(head) if head else 0)

    instrs = diff(lambda r: r["instructions"])
    cycles = diff(lambda r: r["timing"]["cycles"])
    out = {"ipc": instrs / cycles, "instructions": instrs}
    out.update({k: diff(f) for k, f in XLAT_COUNTERS.items()})
    out["page faults"] = diff(lambda r: r["walk"]["fault_walks"])
    # The queued DRAM controller's figures (absent under the idle model), as totals.
    for k in DRAM_KEYS:
        out[f"dram.{k}"] = diff(lambda r, k=k: r["dram"].get("queued", {}).get(k, 0))
    for k in TIMING_KEYS:
        out[f"timing.{k}"] = diff(lambda r, k=k: r["timing"].get(k, 0))
    return out


# ``timing`` totals kept of each xlat run: timed walks and their cycles (walker busy), and the
# DRAM reads of data and of walks with their cycles under load.
TIMING_KEYS = [
    "walks_timed",
    "walk_busy_cycles",
    "data_dram_reads",
    "data_dram_cycles",
    "walk_dram_reads",
    "walk_dram_cycles",
]

# ``dram.queued`` totals kept of each xlat run (the measured part is a difference of totals).
DRAM_KEYS = [
    "reads",
    "writes",
    "pt_reads",
    "read_latency_cycles",
    "read_queue_cycles",
    "pt_read_latency_cycles",
    "pt_read_queue_cycles",
    "row_hits",
    "row_empty",
    "row_conflicts",
    "watermark_drains",
]


def run_champsim(exe: Path, trace: Path, warmup: int, records: int, out: Path) -> dict:
    """ChampSim's IPC and counters of the simulated part (after ``warmup`` instructions)."""
    stats = out / f"{trace.stem}.{exe.name}.json"
    saved = out / f"{trace.stem}.{exe.name}.txt"
    # ChampSim's output is kept and reused while it is newer than the binary and the trace.
    if saved.exists() and saved.stat().st_mtime > max(exe.stat().st_mtime, trace.stat().st_mtime):
        return _champsim_figures(exe, saved.read_text())
    text = subprocess.run(
        [
            str(exe),
            "--warmup-instructions",
            str(warmup),
            "--simulation-instructions",
            str(records),
            "--json",
            str(stats),
            str(trace),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    saved.write_text(text)
    return _champsim_figures(exe, text)


def _champsim_figures(exe: Path, text: str) -> dict:
    m = re.search(r"CPU 0 cumulative IPC: ([0-9.]+)", text)
    if not m:
        raise RuntimeError(f"{exe}: no 'CPU 0 cumulative IPC' in its output")
    ipc = float(m.group(1))

    def count(cache: str, what: str) -> int:
        m = re.search(
            rf"cpu0_{cache} {what}\s+ACCESS:\s+(\d+)\s+HIT:\s+(\d+)\s+MISS:\s+(\d+)", text
        )
        return int(m.group(3)) if m else -1

    def total(cache: str, name: str = "") -> int:
        m = re.search(
            rf"{name or 'cpu0_' + cache} TOTAL\s+ACCESS:\s+\d+\s+HIT:\s+\d+\s+MISS:\s+(\d+)", text
        )
        return int(m.group(1)) if m else -1

    def avg_latency(cache: str) -> float:
        m = re.search(rf"{cache} AVERAGE MISS LATENCY: ([0-9.]+) cycles", text)
        return float(m.group(1)) if m else -1.0

    # DRAM channels: read and write row-buffer hits and misses, summed over the channels
    # (``DRAM_CHANNEL::populate_dbus``; printed by ``plain_printer``).
    dram = {"rq_hits": 0, "rq_misses": 0, "wq_hits": 0, "wq_misses": 0}
    for m in re.finditer(
        r"RQ ROW_BUFFER_HIT:\s+(\d+)\s+ROW_BUFFER_MISS:\s+(\d+).*?"
        r"AVG DBUS CONGESTED CYCLE:\s+([0-9.-]+|-).*?"
        r"WQ ROW_BUFFER_HIT:\s+(\d+)\s+ROW_BUFFER_MISS:\s+(\d+)",
        text,
        re.S,
    ):
        dram["rq_hits"] += int(m.group(1))
        dram["rq_misses"] += int(m.group(2))
        dram["wq_hits"] += int(m.group(4))
        dram["wq_misses"] += int(m.group(5))
    return {
        "ipc": ipc,
        "LLC miss latency": avg_latency("LLC"),
        "L2 miss latency": avg_latency("cpu0_L2C"),
        "L1D miss latency": avg_latency("cpu0_L1D"),
        "STLB miss latency": avg_latency("cpu0_STLB"),
        **{f"champsim.{k}": v for k, v in dram.items()},
        "DTLB misses": total("DTLB"),
        "STLB misses": total("STLB"),
        "walk PT reads": _translation_accesses(text),
        "L2 PT misses": count("L2C", "TRANSLATION"),
        "LLC PT misses": _llc_translation_misses(text),
        "L1D misses": total("L1D"),
        "L2 misses": total("L2C"),
        "LLC misses": total("LLC", "LLC"),
    }


def _llc_translation_misses(text: str) -> int:
    m = re.search(r"LLC TRANSLATION\s+ACCESS:\s+\d+\s+HIT:\s+\d+\s+MISS:\s+(\d+)", text)
    return int(m.group(1)) if m else -1


def _translation_accesses(text: str) -> int:
    m = re.search(r"cpu0_L2C TRANSLATION\s+ACCESS:\s+(\d+)", text)
    return int(m.group(1)) if m else -1


def _pct(x: float, ref: float) -> float:
    return 100.0 * (x / ref - 1.0)


def _ratios(res: dict, model: str) -> dict | None:
    try:
        ipc = {c: res[(model, c)]["ipc"] for c in CONFIGS}
    except KeyError:
        return None
    return {
        "ipc": ipc["default"],
        "stlb": ipc["large_stlb"] / ipc["small_stlb"],
        "pwc": ipc["default"] / ipc["no_pwc"],
    }


def _per(total: float, n: float) -> str:
    return f"{total / n:.1f}" if n > 0 else "-"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--champsim-src", default=os.environ.get("CHAMPSIM_DIR", ""))
    p.add_argument("--out", default="out/champsim-validation")
    p.add_argument("--records", type=int, default=0, help="measured instructions (TRACES)")
    p.add_argument("--footprint", type=int, default=0, help="bytes of every trace (TRACES)")
    p.add_argument("--patterns", default=",".join(PATTERNS), help="traces (TRACES) to run")
    p.add_argument("--models", default=",".join(MODELS), help="xlat models (MODELS) to run")
    p.add_argument(
        "--xlat-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra xlat setting for every xlat run (e.g. core.lq_entries=224)",
    )
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="make -j for ChampSim")
    p.add_argument(
        "--extra-patch",
        action="append",
        default=[],
        metavar="FILE",
        help="a further patch for ChampSim, applied after scripts/champsim/xlat-match.patch",
    )
    a = p.parse_args()
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    models = [m for m in a.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS] + [
        t for t in a.patterns.split(",") if t not in TRACES
    ]
    if unknown:
        p.error(f"unknown model or trace: {', '.join(unknown)}")
    if shutil.which("xlat") is None:
        print("xlat: not found on PATH (activate the project's .venv)", file=sys.stderr)
        return 1

    why_not = ""
    bins: dict[str, Path] = {}
    src = Path(a.champsim_src) if a.champsim_src else None
    if src is None:
        why_not = "no ChampSim source given (--champsim-src or CHAMPSIM_DIR)"
    elif not (src / "config.sh").exists() and not (src / "HEAD").exists():
        why_not = f"{src} is not a ChampSim source tree or git repository (no config.sh)"
    else:
        extra = tuple(Path(f) for f in a.extra_patch)
        bins, why_not = build_champsim(src.resolve(), out, a.jobs, extra)
    if why_not:
        print(f"ChampSim: not run: {why_not}. Printing the xlat columns only.", file=sys.stderr)

    rows = []
    for pat in a.patterns.split(","):
        writer, footprint, records = TRACES[pat]
        records = a.records or records
        footprint = a.footprint or footprint
        trace = out / f"{pat}.champsim"
        meta = out / f"{pat}.champsim.prologue"
        key = f"{records} {footprint} {writer}"
        if not (trace.exists() and meta.exists() and meta.read_text().split()[1:] == key.split()):
            with open(trace, "wb") as f:
                prologue = champsim_trace_writer.write_trace(
                    f, writer, records, footprint, seed=1, prologue=True
                )
            meta.write_text(f"{prologue} {key}")
        prologue = int(meta.read_text().split()[0])
        res: dict[tuple[str, str], dict] = {}
        for model in models:
            for name, overrides in CONFIGS.items():
                res[(model, name)] = xlat_measured(trace, model, a.xlat_set + overrides, prologue)
        for name, exe in bins.items():
            res[("champsim", name)] = run_champsim(exe, trace, prologue, records, out)
        rows.append((pat, res))
        print(f"{pat}: done", file=sys.stderr)
    (out / "results.json").write_text(
        json.dumps([[pat, {f"{m}/{c}": v for (m, c), v in res.items()}] for pat, res in rows])
    )

    def cell(res, model, what):
        r = _ratios(res, model)
        return "not run" if r is None else f"{r[what]:.3f}"

    cols = [*models, "champsim"]
    print(
        "| trace | "
        + " | ".join(f"{w} {m}" for w in ("IPC", "large/small STLB", "PWC on/off") for m in cols)
        + " |"
    )
    print("|---|" + "---|" * (3 * len(cols)))
    for pat, res in rows:
        cells = [cell(res, m, w) for w in ("ipc", "stlb", "pwc") for m in cols]
        print(f"| {pat} | " + " | ".join(cells) + " |")

    # The default grant against ChampSim, and the 10 % criterion on all three figures.
    main_model = "ooo_time" if "ooo_time" in models else models[-1]
    print()
    print(f"{main_model} against ChampSim (criterion: every figure within 10 %):")
    print()
    print("| trace | IPC | large/small STLB | PWC on/off | verdict |")
    print("|---|---|---|---|---|")
    for pat, res in rows:
        x, c = _ratios(res, main_model), _ratios(res, "champsim")
        if x is None or c is None:
            print(f"| {pat} | not run | not run | not run | - |")
            continue
        d = {w: _pct(x[w], c[w]) for w in ("ipc", "stlb", "pwc")}
        bad = [w for w, v in d.items() if abs(v) > 10.0]
        cells = [f"{x[w]:.3f} vs {c[w]:.3f} ({d[w]:+.1f} %)" for w in ("ipc", "stlb", "pwc")]
        verdict = "pass" if not bad else "FAIL (" + ", ".join(bad) + ")"
        print(f"| {pat} | " + " | ".join(cells) + f" | {verdict} |")

    print()
    print(f"Counters of the measured part, default configuration ({main_model} | ChampSim):")
    print()
    print("| trace | " + " | ".join(XLAT_COUNTERS) + " |")
    print("|---|" + "---|" * len(XLAT_COUNTERS))
    for pat, res in rows:
        x = res[(main_model, "default")]
        c = res.get(("champsim", "default"), {})
        cells = [f"{x[k]} \\| {c.get(k, 'not run')}" for k in XLAT_COUNTERS]
        print(f"| {pat} | " + " | ".join(cells) + " |")

    print()
    print(f"DRAM and walks of the measured part, default configuration ({main_model} | ChampSim):")
    print()
    print(
        "| trace | DRAM reads | read row-hit rate | xlat DRAM read latency (of it queued) | "
        "xlat data DRAM read / walk DRAM read (cycles) | ChampSim LLC miss latency | "
        "xlat timed walk / ChampSim STLB miss latency | write drains xlat |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for pat, res in rows:
        x = res[(main_model, "default")]
        c = res.get(("champsim", "default"), {})
        xr = x["dram.reads"]
        xhit = x["dram.row_hits"] / xr if xr else 0.0
        c_rq = c.get("champsim.rq_hits", 0) + c.get("champsim.rq_misses", 0)
        chit = f"{c['champsim.rq_hits'] / c_rq:.3f}" if c_rq else "not run"
        lat = f"{_per(x['dram.read_latency_cycles'], xr)} ({_per(x['dram.read_queue_cycles'], xr)})"
        dw = (
            f"{_per(x['timing.data_dram_cycles'], x['timing.data_dram_reads'])} / "
            f"{_per(x['timing.walk_dram_cycles'], x['timing.walk_dram_reads'])}"
        )
        walk = (
            f"{_per(x['timing.walk_busy_cycles'], x['timing.walks_timed'])} \\| "
            f"{c.get('STLB miss latency', 'not run')}"
        )
        print(
            f"| {pat} | {xr} \\| {c_rq or 'not run'} | {xhit:.3f} \\| {chit} | {lat} | {dw} | "
            f"{c.get('LLC miss latency', 'not run')} | {walk} | {x['dram.watermark_drains']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
