#!/usr/bin/env python3
"""DRAM anchor: latency-vs-bandwidth curves of Ramulator 2 on request streams (docs/timing.md).

    scripts/ramulator_validate.py [--source DIR|URL] [--commit REV] [--out DIR]
                                  [--kinds K,K,...] [--intervals N,N,...] [--requests N]
                                  [--seed N] [--jobs N] [--json FILE] [--streams-only]
                                  [--compare-xlat]

Streams. The script writes its own request streams (``--streams-only`` stops there): text files
of one request a line, ``<arrival_cycle> <hex byte address> <R|W>``, arrival cycles counted in
cycles of a 2600 MHz core (xlat's ``mem.dram.core_clock_mhz``), one 64-byte line each. Three
kinds, each at every injection interval of ``--intervals`` (core cycles between two requests,
fixed; 1..64 by default) with ``--requests`` requests (150 000) and the same address sequence
at every interval (``--seed``, 1):

- ``random_read``: reads of uniformly random lines in 1 GiB;
- ``stream_read``: reads of consecutive lines from address 0 (wrapping at 1 GiB);
- ``mix_2r1w``: random lines in 1 GiB, two reads then one write, repeated;
- ``triad_2r1w``: STREAM's triad ``a[i] = b[i] + s * c[i]`` line by line over three arrays of a
  third of 1 GiB each, allocated one after the other (a, b, c): read b's line, read c's line,
  write a's line, repeated (a streaming 2:1 read/write mix).

They are ``OUT/streams/<kind>_i<interval>_n<requests>_s<seed>.txt``; an existing file is
reused. The offered bandwidth of interval i is 64 B x 2600 MHz / i = 166.4 / i GB/s.

Ramulator 2. ``--source`` (or ``RAMULATOR2_SRC``) names a Ramulator 2 git repository, a git URL,
or a plain source tree (https://github.com/CMU-SAFARI/ramulator2, tested at c5b1c3a4, Ramulator
2.1, 2026-06-29; ``--commit`` checks out another revision). The script clones it into
``OUT/ramulator2`` (Ramulator's CMake writes ``libramulator.so`` into its source directory, so
never into yours), configures it out of source in ``OUT/ramulator2-build`` with CMake, and
builds the library with ``make``. Ramulator's CMake fetches yaml-cpp and fmt with FetchContent
from the network (Ramulator 2.0 fetched spdlog; 2.1 replaced it with fmt): the script points
``FETCHCONTENT_SOURCE_DIR_YAML-CPP`` and ``FETCHCONTENT_SOURCE_DIR_FMT`` at the stand-ins in
``scripts/ramulator/deps/``, which use Debian's packages through ``find_package`` (``apt-get
install cmake g++ libyaml-cpp-dev libfmt-dev``), with ``FETCHCONTENT_FULLY_DISCONNECTED=ON``
and the Python bindings off (they would fetch nanobind). No Ramulator file is patched. Then it
compiles ``scripts/ramulator/xlat_dram_driver.cpp`` against the library. A second run reuses
the clone, the build and the driver while the source revision, the stand-ins and the driver
are unchanged (a stamp in ``OUT/ramulator2-build``).

Driver and configuration. ``xlat_dram_driver`` loads ``scripts/ramulator/ddr4_3200aa.yaml``
(exported by Ramulator's own exporter from ``ddr4_3200aa.py`` beside it: one channel of
DDR4-3200AA 22-22-22, one rank of 8 Gb x8 devices, generic DDR controller, FR-FCFS, open
rows, all-bank refresh, RoBaRaCoCh mapping), ticks the memory system once per DRAM clock
(1600 MHz) and sends each request at the first DRAM cycle at or after its arrival (core cycle
c is DRAM cycle ceil(c x 8 / 13)), retrying every DRAM cycle while the controller's queue is
full (in stream order). A read's latency is its completion (its burst's end) minus its arrival,
in ns. The driver's header comment says the rest.

Output: per stream kind a table of injection interval, offered GB/s, delivered GB/s (all
requests' bytes over first arrival to last completion; ``*`` where it falls below 97 % of the
offered one), read latency mean / p50 / p99 in ns, and the row-buffer hit rate; and the kind's
saturation bandwidth (the highest delivered bandwidth over the intervals) beside the
theoretical peak, 1 channel x 3200 MT/s x 8 B = 25.6 GB/s.
``--json FILE`` writes all of it. Each run's figures are kept in ``OUT/results/`` and reused
while newer than the driver and the stream.

xlat side (``--compare-xlat``). After Ramulator's figures, the script builds xlat's
``crates/xlat/examples/dram_curve.rs`` (``cargo build --release -p xlat --example dram_curve``;
set ``CARGO_BUILD_JOBS`` to limit it) and replays the very same stream files through xlat's
queued DRAM model (``dram_curve --stream-in FILE --json``) configured as Ramulator is: DDR4-3200AA,
1 channel, 1 rank, 4 bank groups x 4 banks, 8 KiB rows, read and write queues of 32, write
watermarks 26 / 6 entries (0.8 / 0.2 x 32), refresh on, 2600 MHz core, ``controller_cycles``
0, ``address_mapping = "ro_ba_ra_co_ch"`` (Ramulator's RoBaRaCoCh). xlat reports a read's
latency to its first data beat; Ramulator to the end of its burst, so the comparison adds the
burst, nBL = 4 DRAM cycles = 2.5 ns, to xlat's read latencies (said in the table's header).
Each xlat run's figures are kept in ``OUT/xlat-results/`` and reused while newer than the
example binary and the stream. Then, per stream kind, a side-by-side table: interval, offered
GB/s, delivered GB/s of both, read average latency of both and their difference in %, and the
verdict against issue 35's criteria: read latency within 10 % at every interval offering less
than 80 % of the 25.6 GB/s peak, and saturation bandwidth (highest delivered) within 5 %.

Without a Ramulator source, or when a tool is missing or the build fails, the script writes the
streams, says on stderr what is missing and why Ramulator was not run, and exits 0 without
figures: it never invents one. CI does not run this script and no test depends on Ramulator.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "scripts" / "ramulator"
CONFIG_PY = HERE / "ddr4_3200aa.py"
CONFIG_YAML = HERE / "ddr4_3200aa.yaml"
DRIVER_SRC = HERE / "xlat_dram_driver.cpp"
DEPS = HERE / "deps"  # FetchContent stand-ins: deps/<name>/CMakeLists.txt
TESTED_COMMIT = "c5b1c3a478b68853a61a0b8f99510d0dde7e6fd0"
APT = "apt-get install cmake make g++ git libyaml-cpp-dev libfmt-dev"

CORE_MHZ = 2600  # xlat's mem.dram.core_clock_mhz
LINE = 64  # bytes per request (one DDR4 x64 burst of 8)
FOOTPRINT = 1 << 30
CHANNELS, MTPS, BUS_BYTES = 1, 3200, 8
PEAK_GBPS = CHANNELS * MTPS * BUS_BYTES / 1000  # 25.6
# A stream is saturated when its delivered bandwidth falls below this share of the offered one.
SATURATED = 0.97
# Issue 35's criteria for the xlat comparison.
LATENCY_TOLERANCE = 0.10  # read latency, at offered loads below LATENCY_SCOPE x the peak
LATENCY_SCOPE = 0.80
SATURATION_TOLERANCE = 0.05  # saturation (highest delivered) bandwidth
# xlat's dram_curve configuration matching ddr4_3200aa.yaml (its other settings are the
# example's fixed DDR4-3200AA 1 x 1 x 4 x 4 system with queues of 32, watermarks 26 / 6).
XLAT_ARGS = ["--mapping", "ro_ba_ra_co_ch", "--refresh", "on", "--core-mhz", str(CORE_MHZ)]
KINDS = ["random_read", "stream_read", "mix_2r1w", "triad_2r1w"]
INTERVALS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 20, 24, 32, 48, 64]


# ---------------------------------------------------------------------------------------------
# Streams


def stream_path(out: Path, kind: str, interval: int, n: int, seed: int) -> Path:
    """Where the stream of ``kind`` at ``interval`` is written."""
    return out / "streams" / f"{kind}_i{interval}_n{n}_s{seed}.txt"


def stream_requests(kind: str, n: int, seed: int) -> list[tuple[int, str]]:
    """The ``n`` (line address, R|W) of ``kind``: the same for every injection interval.

    >>> stream_requests("stream_read", 3, 1)
    [(0, 'R'), (64, 'R'), (128, 'R')]
    >>> [k for _, k in stream_requests("mix_2r1w", 6, 1)]
    ['R', 'R', 'W', 'R', 'R', 'W']
    >>> [(hex(a), k) for a, k in stream_requests("triad_2r1w", 4, 1)]
    [('0x15555540', 'R'), ('0x2aaaaa80', 'R'), ('0x0', 'W'), ('0x15555580', 'R')]
    """
    lines = FOOTPRINT // LINE
    if kind == "stream_read":
        return [((i % lines) * LINE, "R") for i in range(n)]
    if kind == "triad_2r1w":
        array = lines // 3
        a, b, c = 0, array, 2 * array
        out = []
        for i in range(n):
            line, k = divmod(i, 3)
            line %= array
            out.append(
                ((b + line) * LINE, "R")
                if k == 0
                else ((c + line) * LINE, "R")
                if k == 1
                else ((a + line) * LINE, "W")
            )
        return out
    rng = random.Random(f"{kind}/{seed}")
    if kind == "random_read":
        return [(rng.randrange(lines) * LINE, "R") for _ in range(n)]
    if kind == "mix_2r1w":
        return [(rng.randrange(lines) * LINE, "W" if i % 3 == 2 else "R") for i in range(n)]
    raise ValueError(f"unknown stream kind {kind!r} (known: {', '.join(KINDS)})")


def write_stream(path: Path, reqs: list[tuple[int, str]], interval: int) -> None:
    """Write ``reqs`` to ``path``, request i arriving at core cycle i x ``interval``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        f.writelines(f"{i * interval} {a:#x} {k}\n" for i, (a, k) in enumerate(reqs))
    tmp.replace(path)


def offered_gbps(interval: int) -> float:
    """Offered bandwidth of one 64-byte request every ``interval`` core cycles, in GB/s.

    >>> round(offered_gbps(1), 1), round(offered_gbps(64), 2)
    (166.4, 2.6)
    """
    return LINE * CORE_MHZ / interval / 1000


# ---------------------------------------------------------------------------------------------
# Building Ramulator 2 and the driver


def _run(cmd: list[str], cwd: Path, log: Path) -> None:
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}  (in {cwd})\n")
        f.flush()
        subprocess.run(cmd, cwd=cwd, check=True, stdout=f, stderr=subprocess.STDOUT)


def _git(*args: str) -> str:
    r = subprocess.run(["git", *args], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else ""


def missing_tools() -> list[str]:
    """The build tools this script needs and cannot find on PATH."""
    return [t for t in ("git", "cmake", "make", "c++") if shutil.which(t) is None]


def get_source(source: str, commit: str, out: Path, log: Path) -> Path:
    """A clone of ``source`` (a repository, a URL or a plain tree) in ``OUT/ramulator2``.

    An existing clone of the same source at the wanted revision is reused as it is (no fetch).
    """
    dest = out / "ramulator2"
    local = Path(source).expanduser()
    is_tree = local.is_dir() and not _git("-C", str(local), "rev-parse", "--git-dir")
    if dest.exists():
        same = _git("-C", str(dest), "config", "remote.origin.url") == (
            str(local.resolve()) if local.exists() else source
        )
        if is_tree:
            same = (dest / ".xlat-copied-from").exists() and (
                dest / ".xlat-copied-from"
            ).read_text() == str(local.resolve())
        head = _git("-C", str(dest), "rev-parse", "HEAD")
        want = _git("-C", str(dest), "rev-parse", f"{commit}^{{commit}}") if commit else head
        if same and (is_tree or (head and head == want)):
            return dest
        shutil.rmtree(dest)
    if is_tree:
        shutil.copytree(local, dest, ignore=shutil.ignore_patterns("build", "*.so", ".git"))
        (dest / ".xlat-copied-from").write_text(str(local.resolve()))
        return dest
    origin = str(local.resolve()) if local.exists() else source
    _run(["git", "clone", "--quiet", origin, str(dest)], out, log)
    if commit:
        _run(["git", "-c", "advice.detachedHead=false", "checkout", "--quiet", commit], dest, log)
    return dest


def build(source: str, commit: str, out: Path, jobs: int) -> tuple[Path | None, str, str]:
    """Build Ramulator 2 and the driver; (driver binary, Ramulator revision, why-not message).

    The build log is ``OUT/ramulator2-build.log``.
    """
    log = out / "ramulator2-build.log"
    bdir = out / "ramulator2-build"
    driver = bdir / "xlat_dram_driver"
    try:
        log.write_text("")
        src = get_source(source, commit, out, log)
        rev = _git("-C", str(src), "rev-parse", "HEAD") or f"(plain tree {source})"
        if not (src / "src" / "ramulator" / "frontend" / "impl" / "external.cpp").exists():
            return (
                None,
                rev,
                f"{src} is not Ramulator 2.1 (no src/ramulator/frontend/impl/external.cpp); "
                f"the driver is written for 2.1 (tested at {TESTED_COMMIT[:8]}); Ramulator 2.0 "
                "(tag v2.0a, yaml-cpp + spdlog) has another API",
            )
        stand_ins = sorted(DEPS.glob("*/CMakeLists.txt"))
        digest = hashlib.sha256(rev.encode())
        for p in [*stand_ins, DRIVER_SRC]:
            digest.update(p.read_bytes())
        stamp = digest.hexdigest()
        stamp_file = bdir / ".xlat-build-stamp"
        lib = src / "libramulator.so"
        if (
            stamp_file.exists()
            and stamp_file.read_text() == stamp
            and lib.exists()
            and driver.exists()
        ):
            return driver, rev, ""
        bdir.mkdir(parents=True, exist_ok=True)
        cmake = [
            "cmake",
            "-S",
            str(src),
            "-B",
            str(bdir),
            "-DCMAKE_BUILD_TYPE=Release",
            "-DRAMULATOR_PYTHON_BINDINGS=OFF",
            "-DFETCHCONTENT_FULLY_DISCONNECTED=ON",
        ]
        # FetchContent_MakeAvailable(<name>) adds FETCHCONTENT_SOURCE_DIR_<NAME> instead of a
        # clone when that is set: each stand-in finds Debian's package.
        cmake += [
            f"-DFETCHCONTENT_SOURCE_DIR_{p.parent.name.upper()}={p.parent}" for p in stand_ins
        ]
        try:
            _run(cmake, out, log)
        except subprocess.CalledProcessError as e:
            raise RuntimeError(
                f"CMake configuration failed ({e}); are Debian's packages there? {APT}"
            ) from e
        _run(["make", "-C", str(bdir), f"-j{jobs}", "ramulator"], out, log)
        _run(
            [
                "c++",
                "-std=c++20",
                "-O2",
                "-Wall",
                f"-I{src / 'src'}",
                str(DRIVER_SRC),
                "-o",
                str(driver),
                f"-L{src}",
                "-lramulator",
                "-lyaml-cpp",
                "-lfmt",
                f"-Wl,-rpath,{src}",
            ],
            out,
            log,
        )
        stamp_file.write_text(stamp)
        return driver, rev, ""
    except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
        return None, "", f"Ramulator 2 build from {source} failed ({e}); see {log}"


def check_exported_config(src: Path, out: Path) -> str:
    """Re-export ``ddr4_3200aa.py`` with the source's own exporter; a warning if it differs."""
    got = out / "ddr4_3200aa.exported.yaml"
    env = dict(os.environ, PYTHONPATH=str(src / "python"))
    r = subprocess.run(
        [sys.executable, "-m", "ramulator", "export", str(CONFIG_PY), "-o", str(got)],
        cwd=out,
        env=env,
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        return f"could not re-export {CONFIG_PY.name} with {src}/python: {r.stderr.strip()}"

    def body(p: Path) -> list[str]:
        return [ln for ln in p.read_text().splitlines() if not ln.startswith("#")]

    if body(got) != body(CONFIG_YAML):
        return (
            f"{CONFIG_YAML.name} differs from what this Ramulator exports from "
            f"{CONFIG_PY.name} ({got}): the committed YAML is used"
        )
    return ""


# ---------------------------------------------------------------------------------------------
# Running


def run_driver(driver: Path, stream: Path, out: Path) -> dict:
    """The driver's figures for ``stream`` (kept in ``OUT/results`` and reused while newer)."""
    res = out / "results" / (stream.stem + ".json")
    stats = out / "results" / (stream.stem + ".stats.yaml")
    res.parent.mkdir(parents=True, exist_ok=True)
    newest = max(driver.stat().st_mtime, stream.stat().st_mtime, CONFIG_YAML.stat().st_mtime)
    if res.exists() and res.stat().st_mtime > newest:
        return json.loads(res.read_text())
    text = subprocess.run(
        [str(driver), str(CONFIG_YAML), str(stream), "--core-mhz", str(CORE_MHZ)]
        + ["--stats", str(stats)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    fig = json.loads(text)
    res.write_text(json.dumps(fig, indent=1))
    return fig


def row(interval: int, fig: dict) -> dict:
    """One table row from the driver's figures of the stream at ``interval``."""
    span = fig["last_completion_ns"] - fig["first_arrival_ns"]
    accesses = fig["row_hits"] + fig["row_misses"] + fig["row_conflicts"]
    return {
        "interval": interval,
        "offered_gbps": offered_gbps(interval),
        "delivered_gbps": fig["bytes"] / span,
        "read_lat_avg_ns": fig["read_lat_avg_ns"],
        "read_lat_p50_ns": fig["read_lat_p50_ns"],
        "read_lat_p99_ns": fig["read_lat_p99_ns"],
        "row_hit_rate": fig["row_hits"] / accesses if accesses > 0 else 0.0,
        "saturated": fig["bytes"] / span < SATURATED * offered_gbps(interval),
        "driver": fig,
    }


def print_table(kind: str, rows: list[dict]) -> None:
    """The markdown table of one stream kind and its saturation bandwidth."""
    sat = max(r["delivered_gbps"] for r in rows)
    print(
        f"\n{kind}: saturation {sat:.2f} GB/s = {100 * sat / PEAK_GBPS:.1f} % of the peak, "
        f"{PEAK_GBPS:.1f} GB/s ({CHANNELS} channel x {MTPS} MT/s x {BUS_BYTES} B)\n"
    )
    print(
        "| interval (core cycles) | offered GB/s | delivered GB/s | read avg ns | p50 ns "
        "| p99 ns | row hits |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['interval']} | {r['offered_gbps']:.2f} | {r['delivered_gbps']:.2f}"
            f"{' *' if r['saturated'] else ''} "
            f"| {r['read_lat_avg_ns']:.1f} | {r['read_lat_p50_ns']:.1f} "
            f"| {r['read_lat_p99_ns']:.1f} | {100 * r['row_hit_rate']:.0f} % |"
        )
    if any(r["saturated"] for r in rows):
        print(
            f"\n\\* saturated (delivered < {SATURATED:.0%} of offered): the open-loop stream "
            "outruns the memory, its backlog grows\nfor the whole run, and the latencies measure "
            "that backlog (they grow with --requests)."
        )


# ---------------------------------------------------------------------------------------------
# The xlat side


def build_xlat() -> tuple[Path | None, str]:
    """Build xlat's dram_curve example; (binary, why-not message)."""
    if shutil.which("cargo") is None:
        return None, "cargo not found"
    cmd = ["cargo", "build", "--release", "--quiet", "-p", "xlat", "--example", "dram_curve"]
    r = subprocess.run(cmd, cwd=ROOT)
    if r.returncode != 0:
        return None, f"{' '.join(cmd)} failed"
    meta = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    binary = Path(json.loads(meta.stdout)["target_directory"]) / "release/examples/dram_curve"
    return (binary, "") if binary.exists() else (None, f"{binary} not built")


def run_xlat(binary: Path, stream: Path, out: Path) -> dict:
    """dram_curve's figures for ``stream`` (kept in ``OUT/xlat-results``, reused while newer)."""
    res = out / "xlat-results" / (stream.stem + ".json")
    res.parent.mkdir(parents=True, exist_ok=True)
    newest = max(binary.stat().st_mtime, stream.stat().st_mtime)
    if res.exists() and res.stat().st_mtime > newest:
        return json.loads(res.read_text())
    text = subprocess.run(
        [str(binary), "--stream-in", str(stream), "--json", *XLAT_ARGS],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    fig = json.loads(text.strip().splitlines()[-1])
    res.write_text(json.dumps(fig, indent=1))
    return fig


def compare_rows(rows: list[dict], xfigs: list[dict]) -> dict:
    """Side by side: Ramulator's rows and xlat's figures of the same streams, with verdicts.

    xlat's read latencies run to the first data beat: the burst (``burst_ns``) is added to
    compare with Ramulator's, which run to the end of the burst.
    """
    out = []
    for r, x in zip(rows, xfigs):
        x_lat = x["read_lat_avg_ns"] + x["burst_ns"]
        diff = (x_lat - r["read_lat_avg_ns"]) / r["read_lat_avg_ns"]
        in_scope = r["offered_gbps"] < LATENCY_SCOPE * PEAK_GBPS
        x_sat = x["delivered_gbps"] < SATURATED * r["offered_gbps"]
        out.append(
            {
                "interval": r["interval"],
                "offered_gbps": r["offered_gbps"],
                "ramulator_delivered_gbps": r["delivered_gbps"],
                "xlat_delivered_gbps": x["delivered_gbps"],
                "ramulator_saturated": r["saturated"],
                "xlat_saturated": x_sat,
                "ramulator_read_avg_ns": r["read_lat_avg_ns"],
                "xlat_read_avg_ns": x_lat,
                "ramulator_read_p50_ns": r["read_lat_p50_ns"],
                "xlat_read_p50_ns": x["read_lat_p50_ns"] + x["burst_ns"],
                "latency_diff": diff,
                "in_latency_scope": in_scope,
                "latency_ok": abs(diff) <= LATENCY_TOLERANCE if in_scope else None,
                "xlat": x,
            }
        )
    r_sat = max(r["delivered_gbps"] for r in rows)
    x_sat = max(x["delivered_gbps"] for x in xfigs)
    sat_diff = (x_sat - r_sat) / r_sat
    scoped = [c for c in out if c["in_latency_scope"]]
    unsat = [c for c in scoped if not (c["ramulator_saturated"] or c["xlat_saturated"])]
    worst = lambda cs: max((abs(c["latency_diff"]) for c in cs), default=None)  # noqa: E731
    return {
        "rows": out,
        "ramulator_saturation_gbps": r_sat,
        "xlat_saturation_gbps": x_sat,
        "saturation_diff": sat_diff,
        "saturation_ok": abs(sat_diff) <= SATURATION_TOLERANCE,
        "latency_ok": all(c["latency_ok"] for c in scoped),
        "worst_latency_diff_in_scope": worst(scoped),
        "worst_latency_diff_unsaturated": worst(unsat),
    }


def print_comparison(kind: str, cmp: dict) -> None:
    """The side-by-side markdown table of one stream kind, with its verdicts."""
    ok = lambda b: "pass" if b else "FAIL"  # noqa: E731
    print(
        f"\n{kind}: saturation Ramulator {cmp['ramulator_saturation_gbps']:.2f} GB/s, xlat "
        f"{cmp['xlat_saturation_gbps']:.2f} GB/s ({100 * cmp['saturation_diff']:+.1f} %, "
        f"criterion 5 %: {ok(cmp['saturation_ok'])}); read latency below "
        f"{LATENCY_SCOPE:.0%} of the peak (offered < {LATENCY_SCOPE * PEAK_GBPS:.2f} GB/s), "
        f"criterion 10 %: {ok(cmp['latency_ok'])}, worst "
        f"{100 * (cmp['worst_latency_diff_in_scope'] or 0):.1f} %"
        + (
            f" (unsaturated rows only: {100 * cmp['worst_latency_diff_unsaturated']:.1f} %)"
            if cmp["worst_latency_diff_unsaturated"] is not None
            else ""
        )
        + "\n"
    )
    print(
        "| interval | offered GB/s | delivered GB/s Ramulator | delivered GB/s xlat "
        "| read avg ns Ramulator | read avg ns xlat (+nBL) | diff | verdict |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for c in cmp["rows"]:
        verdict = "(above 80 % of peak)" if c["latency_ok"] is None else ok(c["latency_ok"])
        print(
            f"| {c['interval']} | {c['offered_gbps']:.2f} "
            f"| {c['ramulator_delivered_gbps']:.2f}{' *' if c['ramulator_saturated'] else ''} "
            f"| {c['xlat_delivered_gbps']:.2f}{' *' if c['xlat_saturated'] else ''} "
            f"| {c['ramulator_read_avg_ns']:.1f} | {c['xlat_read_avg_ns']:.1f} "
            f"| {100 * c['latency_diff']:+.1f} % | {verdict} |"
        )


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="See the module docstring (and docs/timing.md, 'DRAM anchor: Ramulator 2').",
    )
    p.add_argument(
        "--source",
        default=os.environ.get("RAMULATOR2_SRC", ""),
        help="Ramulator 2 git repository, git URL or source tree (default: $RAMULATOR2_SRC)",
    )
    p.add_argument("--commit", default="", help="revision to check out (default: its HEAD)")
    p.add_argument("--out", default="out/ramulator-validation", help="work directory")
    p.add_argument("--kinds", default=",".join(KINDS), help="stream kinds (%(default)s)")
    p.add_argument(
        "--intervals",
        default=",".join(map(str, INTERVALS)),
        help="injection intervals in core cycles (%(default)s)",
    )
    p.add_argument("--requests", type=int, default=150_000, help="requests per stream")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="parallel runs")
    p.add_argument("--json", metavar="FILE", help="write every figure to FILE")
    p.add_argument("--streams-only", action="store_true", help="write the streams and stop")
    p.add_argument(
        "--compare-xlat",
        action="store_true",
        help="also replay the streams through xlat's queued DRAM model and compare",
    )
    a = p.parse_args()
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    kinds = a.kinds.split(",")
    intervals = _ints(a.intervals)
    for k in kinds:
        if k not in KINDS:
            p.error(f"unknown stream kind {k!r} (known: {', '.join(KINDS)})")

    streams: dict[tuple[str, int], Path] = {}
    for kind in kinds:
        reqs = None
        for i in intervals:
            path = stream_path(out, kind, i, a.requests, a.seed)
            if not path.exists():
                reqs = reqs or stream_requests(kind, a.requests, a.seed)
                write_stream(path, reqs, i)
            streams[(kind, i)] = path
    print(f"streams: {out / 'streams'}", file=sys.stderr)
    if a.streams_only:
        return 0

    why_not = ""
    driver, rev = None, ""
    if not a.source:
        why_not = "no Ramulator 2 source given (--source or RAMULATOR2_SRC)"
    elif missing := missing_tools():
        why_not = f"missing {', '.join(missing)} ({APT})"
    else:
        driver, rev, why_not = build(a.source, a.commit, out, a.jobs)
    if why_not:
        print(f"Ramulator 2: not run: {why_not}.", file=sys.stderr)
        return 0
    assert driver is not None
    warn = check_exported_config(out / "ramulator2", out)
    if warn:
        print(f"warning: {warn}", file=sys.stderr)
    print(f"Ramulator 2 at {rev}; driver {driver}", file=sys.stderr)

    jobs = [(kind, i) for kind in kinds for i in intervals]
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        figs = dict(zip(jobs, pool.map(lambda j: run_driver(driver, streams[j], out), jobs)))

    report = {
        "ramulator_commit": rev,
        "config": str(CONFIG_YAML.relative_to(ROOT)),
        "core_mhz": CORE_MHZ,
        "peak_gbps": PEAK_GBPS,
        "requests": a.requests,
        "seed": a.seed,
        "kinds": {},
    }
    print(f"Ramulator 2 ({rev[:8]}), {CONFIG_YAML.name}, {a.requests} requests per stream")
    for kind in kinds:
        rows = [row(i, figs[(kind, i)]) for i in intervals]
        print_table(kind, rows)
        report["kinds"][kind] = {
            "saturation_gbps": max(r["delivered_gbps"] for r in rows),
            "rows": rows,
        }
    if a.compare_xlat:
        binary, why = build_xlat()
        if binary is None:
            print(f"xlat: not run: {why}.", file=sys.stderr)
        else:
            with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
                xfigs = dict(zip(jobs, pool.map(lambda j: run_xlat(binary, streams[j], out), jobs)))
            print(
                f"\nxlat queued DRAM model against Ramulator 2 on the same streams: "
                f"dram_curve --stream-in STREAM --json {' '.join(XLAT_ARGS)}; xlat's read "
                f"latencies + nBL (burst, {xfigs[jobs[0]]['burst_ns']:.2f} ns) to end of burst "
                f"as Ramulator's; * saturated"
            )
            report["xlat"] = {"args": XLAT_ARGS, "kinds": {}}
            for kind in kinds:
                rows = report["kinds"][kind]["rows"]
                cmp = compare_rows(rows, [xfigs[(kind, i)] for i in intervals])
                print_comparison(kind, cmp)
                report["xlat"]["kinds"][kind] = cmp
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
