#!/usr/bin/env python3
"""Compare xlat's core models with ChampSim on five ChampSim traces (docs/timing.md).

    scripts/champsim_validate.py [--out DIR] [--records N] [--footprint BYTES]

Writes the traces with ``tools/champsim_trace_writer.py`` (gups, stream, pointer_chase, graph,
hash), then for each trace runs xlat under ``simple`` and ``ooo`` in four configurations
(default; small and large L2 TLB; page-walk caches off) and prints, per trace: IPC, the ratio
IPC(large L2 TLB) / IPC(small L2 TLB), and IPC(page-walk caches on) / IPC(off).

ChampSim: set ``CHAMPSIM_DIR`` to a ChampSim checkout. If ``CHAMPSIM_DIR/bin/champsim_<cfg>``
binaries are missing, the script configures and builds them there (``./config.sh`` with a
configuration matched to xlat's defaults, then ``make``; ChampSim needs fmt, CLI11,
nlohmann-json, bzip2, lzma and zlib, e.g. Debian's libfmt-dev libcli11-dev nlohmann-json3-dev
libbz2-dev liblzma-dev zlib1g-dev). Without ``CHAMPSIM_DIR``, or when the build fails, the
ChampSim columns say "not run" and the script says why: it never invents a figure.

This script has not been run against ChampSim: ChampSim could not be obtained where it was
written (see docs/timing.md, "Validation against ChampSim"). The ChampSim configuration keys
follow ChampSim's ``champsim_config.json`` (2023-2024 ``develop`` branch); check them against
the checkout you use.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import champsim_trace_writer  # noqa: E402

PATTERNS = ["gups", "stream", "pointer_chase", "graph", "hash"]

# xlat overrides of each configuration (tlb.l2 has 12 ways; 96 = 1/16 and 12288 = 8x the
# default 1536 entries).
CONFIGS = {
    "default": [],
    "small_stlb": ["tlb.l2.entries=96"],
    "large_stlb": ["tlb.l2.entries=12288"],
    "no_pwc": ["radix.pwc_levels=0"],
}


def champsim_config(name: str) -> dict:
    """A ChampSim configuration matched to xlat's defaults (configuration ``name``)."""
    stlb_sets = {"small_stlb": 8, "large_stlb": 1024}.get(name, 128)
    pscl = {"pscl5_set": 1, "pscl5_way": 2, "pscl4_set": 1, "pscl4_way": 4}
    pscl.update({"pscl3_set": 2, "pscl3_way": 4, "pscl2_set": 4, "pscl2_way": 8})
    if name == "no_pwc":
        pscl = {k: (1 if k.endswith("set") else 0) for k in pscl}
    return {
        "executable_name": f"bin/champsim_{name}",
        "block_size": 64,
        "page_size": 4096,
        "num_cores": 1,
        "ooo_cpu": [
            {
                "frequency": 2600,
                "rob_size": 224,
                "lq_size": 72,
                "sq_size": 56,
                "fetch_width": 4,
                "decode_width": 4,
                "dispatch_width": 4,
                "execute_width": 8,
                "lq_width": 2,
                "sq_width": 1,
                "retire_width": 4,
                "branch_predictor": "bimodal",
                "btb": "basic_btb",
            }
        ],
        "L1D": {"sets": 64, "ways": 8, "latency": 4, "mshr_size": 10, "prefetcher": "no"},
        "L2C": {"sets": 1024, "ways": 16, "latency": 14, "mshr_size": 16, "prefetcher": "no"},
        "LLC": {"sets": 2048, "ways": 16, "latency": 40, "mshr_size": 32, "prefetcher": "no"},
        "DTLB": {"sets": 16, "ways": 4, "latency": 1},
        "STLB": {"sets": stlb_sets, "ways": 12, "latency": 12},
        "PTW": dict(pscl, mshr_size=2),
        "physical_memory": {"frequency": 3200, "channels": 2, "ranks": 1, "banks": 16},
    }


def run_xlat(trace: Path, model: str, overrides: list[str]) -> dict:
    cmd = ["xlat", "run", "--trace", str(trace), "--json", "--set", f"timing.model={model}"]
    for o in overrides:
        cmd += ["--set", o]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def build_champsim(root: Path, out: Path) -> tuple[dict[str, Path], str]:
    """Build one ChampSim binary per configuration; returns (binaries, why-not message)."""
    bins: dict[str, Path] = {}
    for name in CONFIGS:
        exe = root / "bin" / f"champsim_{name}"
        if not exe.exists():
            cfg = out / f"champsim_{name}.json"
            cfg.write_text(json.dumps(champsim_config(name), indent=2))
            try:
                subprocess.run(["./config.sh", str(cfg)], cwd=root, check=True)
                subprocess.run(["make", f"-j{os.cpu_count() or 1}"], cwd=root, check=True)
            except (OSError, subprocess.CalledProcessError) as e:
                return {}, f"ChampSim build failed in {root}: {e}"
        bins[name] = exe
    return bins, ""


def run_champsim(exe: Path, trace: Path, records: int) -> float:
    out = subprocess.run(
        [
            str(exe),
            "--warmup-instructions",
            "0",
            "--simulation-instructions",
            str(records),
            str(trace),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    m = re.search(r"CPU 0 cumulative IPC: ([0-9.]+)", out)
    if not m:
        raise RuntimeError(f"{exe}: no 'CPU 0 cumulative IPC' in its output")
    return float(m.group(1))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="out/champsim-validation")
    p.add_argument("--records", type=int, default=2_000_000)
    p.add_argument("--footprint", type=int, default=256 << 20)
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)

    why_not = ""
    bins: dict[str, Path] = {}
    cs = os.environ.get("CHAMPSIM_DIR")
    if not cs:
        why_not = "CHAMPSIM_DIR is not set (no ChampSim checkout to build)"
    elif not (Path(cs) / "config.sh").exists():
        why_not = f"CHAMPSIM_DIR={cs} is not a ChampSim checkout (no config.sh)"
    else:
        bins, why_not = build_champsim(Path(cs).resolve(), out.resolve())
    if why_not:
        print(f"ChampSim: not run: {why_not}. Printing the xlat columns only.", file=sys.stderr)

    rows = []
    for pat in PATTERNS:
        trace = out / f"{pat}.champsim"
        if not trace.exists():
            with open(trace, "wb") as f:
                champsim_trace_writer.write_trace(f, pat, a.records, a.footprint, seed=1)
        ipc: dict[tuple[str, str], float] = {}
        for model in ("simple", "ooo"):
            for name, overrides in CONFIGS.items():
                ipc[(model, name)] = run_xlat(trace, model, overrides)["timing"]["ipc"]
        for name, exe in bins.items():
            ipc[("champsim", name)] = run_champsim(exe, trace, a.records)
        rows.append((pat, ipc))

    def cell(ipc, model, what):
        try:
            if what == "ipc":
                return f"{ipc[(model, 'default')]:.3f}"
            if what == "stlb":
                return f"{ipc[(model, 'large_stlb')] / ipc[(model, 'small_stlb')]:.3f}"
            return f"{ipc[(model, 'default')] / ipc[(model, 'no_pwc')]:.3f}"
        except KeyError:
            return "not run"

    print(
        "| trace | IPC simple | IPC ooo | IPC ChampSim | large/small STLB simple | ooo | "
        "ChampSim | PWC on/off simple | ooo | ChampSim |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for pat, ipc in rows:
        cells = [
            cell(ipc, m, w) for w in ("ipc", "stlb", "pwc") for m in ("simple", "ooo", "champsim")
        ]
        print(f"| {pat} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
