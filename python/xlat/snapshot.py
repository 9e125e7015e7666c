"""Address-space and memory snapshots of a live process (``xlat snapshot``) and their analyses.

A snapshot records a process's VMAs (``/proc/PID/maps``), its present pages and their physical
frames (``/proc/PID/pagemap``; frames need root, they read as 0 otherwise), transparent huge
pages where ``/proc/kpageflags`` is readable, and the machine's ``/proc/buddyinfo`` and
``/proc/meminfo``. Present pages are stored as runs: ``[vaddr, pfn, pages, huge]`` where
consecutive virtual pages map consecutive frames.

Analyses (what the LVM, TPS and Elastic Translations papers report):

- virtual-memory gap coverage: the span from the lowest to the highest VMA, the bytes mapped,
  the gaps between VMAs, and how much of the span the VMAs cover once the k largest gaps are
  left out (k = 0..3: the canonical layout has a few huge holes between text/heap, mmap area and
  stack);
- physical contiguity at 64 KiB, 2 MiB and 32 MiB: the share of present memory lying in
  naturally aligned virtual blocks of that size that are wholly present and map one physically
  contiguous, equally aligned block (so one translation of that size could map them), plus the
  histogram of contiguous-run sizes weighted by bytes.

A snapshot can start a simulation: ``xlat run --snapshot snap.json`` replays its buddyinfo as
the free-memory state of the OS model (``os.buddyinfo``).
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PAGE = 4096
GRANULES = {"64KiB": 64 << 10, "2MiB": 2 << 20, "32MiB": 32 << 20}
KPF_THP = 1 << 22
KPF_HUGE = 1 << 17
PRESENT = 1 << 63
PFN_MASK = (1 << 55) - 1
#: Pagemap entries read per system call.
CHUNK_PAGES = 1 << 16


def parse_maps(text: str) -> list[dict]:
    """VMAs of a ``/proc/PID/maps`` text.

    Examples
    --------
    >>> parse_maps("00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/dbus\\n")[0]["prot"]
    'r-xp'
    """
    vmas = []
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 5:
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        vmas.append(
            {"start": lo, "end": hi, "prot": parts[1], "path": parts[5] if len(parts) > 5 else ""}
        )
    return vmas


def _runs(entries: list[tuple[int, int, bool]]) -> list[list[int]]:
    """Group (vaddr, pfn, huge) of present pages into runs of consecutive pages and frames.

    Examples
    --------
    >>> _runs([(0x1000, 7, False), (0x2000, 8, False), (0x3000, 20, False)])
    [[4096, 7, 2, 0], [12288, 20, 1, 0]]
    """
    runs: list[list[int]] = []
    for va, pfn, huge in entries:
        r = runs[-1] if runs else None
        if r and r[0] + r[2] * PAGE == va and r[1] + r[2] == pfn and r[3] == int(huge):
            r[2] += 1
        else:
            runs.append([va, pfn, 1, int(huge)])
    return runs


def take(pid: int) -> dict:
    """Snapshot process ``pid`` (PFNs and page flags need root)."""
    proc = Path(f"/proc/{pid}")
    try:
        maps = parse_maps((proc / "maps").read_text())
    except OSError as e:
        raise OSError(f"cannot read /proc/{pid}/maps: {e.strerror}") from None
    try:
        kflags = open("/proc/kpageflags", "rb")  # noqa: SIM115
    except OSError:
        kflags = None
    pfns_known = False
    with open(proc / "pagemap", "rb") as pm:
        for vma in maps:
            entries = []
            va = vma["start"]
            while va < vma["end"]:
                n = min(CHUNK_PAGES, (vma["end"] - va) // PAGE)
                pm.seek(va // PAGE * 8)
                try:
                    data = pm.read(n * 8)
                except OSError:
                    data = b""  # [vsyscall] and similar areas have no pagemap
                for i, (e,) in enumerate(struct.iter_unpack("<Q", data)):
                    if e & PRESENT:
                        pfn = e & PFN_MASK
                        huge = False
                        if pfn and kflags is not None:
                            kflags.seek(pfn * 8)
                            f = kflags.read(8)
                            huge = bool(
                                len(f) == 8 and struct.unpack("<Q", f)[0] & (KPF_THP | KPF_HUGE)
                            )
                        pfns_known = pfns_known or pfn != 0
                        entries.append((va + i * PAGE, pfn, huge))
                va += n * PAGE
            vma["present_pages"] = len(entries)
            vma["runs"] = _runs(entries)
    if kflags is not None:
        kflags.close()
    meminfo = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if fields:
            meminfo[key] = int(fields[0]) * (1024 if len(fields) > 1 else 1)
    cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    return {
        "format": "xlat-snapshot-1",
        "pid": pid,
        "command": cmdline.strip(),
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "kernel": os.uname().release,
        "page_size": PAGE,
        "pfns_known": pfns_known,
        "page_flags_known": kflags is not None,
        "vmas": maps,
        "buddyinfo": Path("/proc/buddyinfo").read_text(),
        "meminfo": meminfo,
    }


def gap_coverage(snap: dict) -> dict:
    """Virtual-memory gap coverage of a snapshot (``[vsyscall]`` excluded).

    Examples
    --------
    >>> s = {"vmas": [{"start": 0, "end": 4096, "path": ""},
    ...               {"start": 8192, "end": 16384, "path": ""}]}
    >>> g = gap_coverage(s)
    >>> g["span_bytes"], g["mapped_bytes"], g["gap_bytes"], g["coverage"]
    (16384, 12288, 4096, 0.75)
    >>> g["coverage_without_largest_gaps"][1]
    1.0
    """
    vmas = sorted(
        (v for v in snap["vmas"] if v.get("path") != "[vsyscall]"), key=lambda v: v["start"]
    )
    if not vmas:
        return {"vmas": 0, "span_bytes": 0, "mapped_bytes": 0, "gap_bytes": 0, "coverage": 0.0}
    span = vmas[-1]["end"] - vmas[0]["start"]
    mapped = sum(v["end"] - v["start"] for v in vmas)
    gaps = sorted(
        (b["start"] - a["end"] for a, b in zip(vmas, vmas[1:]) if b["start"] > a["end"]),
        reverse=True,
    )
    hist: dict[str, int] = {}
    for g in gaps:
        bucket = 1 << (g.bit_length() - 1)
        hist[_size(bucket)] = hist.get(_size(bucket), 0) + 1
    without = {}
    for k in range(4):
        rest = span - sum(gaps[:k])
        without[k] = mapped / rest if rest else 1.0
    return {
        "vmas": len(vmas),
        "span_bytes": span,
        "mapped_bytes": mapped,
        "gap_bytes": span - mapped,
        "gaps": len(gaps),
        "largest_gaps_bytes": gaps[:3],
        "coverage": mapped / span if span else 1.0,
        "coverage_without_largest_gaps": without,
        "gap_histogram": hist,
    }


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"


def contiguity(snap: dict) -> dict:
    """Physical contiguity of the present pages at 64 KiB, 2 MiB and 32 MiB.

    For each granule G: the share of present bytes inside G-aligned virtual blocks that are
    fully present and map one G-aligned physically contiguous block. Needs PFNs (root).

    Examples
    --------
    >>> # 2 MiB at VA 2 MiB mapped to frames 512.. (aligned), plus one stray 4 KiB page.
    >>> s = {"pfns_known": True, "vmas": [{"runs": [[2 << 20, 512, 512, 0], [8 << 20, 3, 1, 0]]}]}
    >>> c = contiguity(s)
    >>> round(c["granules"]["2MiB"], 4), round(c["granules"]["32MiB"], 4)
    (0.9981, 0.0)
    >>> c["run_histogram"]["2MiB"]
    2097152
    """
    runs = [r for v in snap["vmas"] for r in v.get("runs", [])]
    present = sum(r[2] for r in runs) * PAGE
    out: dict = {"pfns_known": bool(snap.get("pfns_known")), "present_bytes": present}
    if not out["pfns_known"] or present == 0:
        out["granules"] = {name: None for name in GRANULES}
        out["run_histogram"] = {}
        return out
    granules = {}
    for name, g in GRANULES.items():
        covered = 0
        for va, pfn, n, _ in runs:
            end = va + n * PAGE
            start = (va + g - 1) // g * g  # first aligned block inside the run
            pa0 = pfn * PAGE - va  # physical = virtual + pa0 throughout the run
            while start + g <= end:
                if (start + pa0) % g == 0:
                    covered += g
                start += g
        granules[name] = covered / present
    hist: dict[str, int] = {}
    for _, _, n, _ in runs:
        b = 1 << ((n * PAGE).bit_length() - 1)
        hist[_size(b)] = hist.get(_size(b), 0) + n * PAGE
    out["granules"] = granules
    out["run_histogram"] = dict(sorted(hist.items(), key=lambda kv: _bytes(kv[0])))
    out["huge_bytes"] = sum(r[2] for r in runs if r[3]) * PAGE
    return out


def _bytes(label: str) -> int:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10), ("B", 0)):
        if label.endswith(unit):
            return int(label[: -len(unit)]) << shift
    return 0


def snapshot_problem(snap: Any) -> str | None:
    """Why ``snap`` (parsed JSON) is not a snapshot :func:`analyze` can read, or None: it
    needs ``vmas``, a list of objects with whole-number ``start`` <= ``end`` and optional
    ``runs`` of ``[va, pfn, pages, huge]``.

    Examples
    --------
    >>> snapshot_problem([1, 2])
    'the file holds a list, not a snapshot object'
    >>> snapshot_problem({"pid": 1})
    "no 'vmas' list"
    >>> snapshot_problem({"vmas": [{"start": 0}]})
    "vmas[0] has no whole-number 'start' and 'end'"
    >>> snapshot_problem({"vmas": [{"start": 0, "end": 4096, "runs": [[0, 1, 1, 0]]}]}) is None
    True
    """

    def whole(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    if not isinstance(snap, dict):
        return f"the file holds a {type(snap).__name__}, not a snapshot object"
    if not isinstance(snap.get("vmas"), list):
        return "no 'vmas' list"
    for i, vma in enumerate(snap["vmas"]):
        if not isinstance(vma, dict):
            return f"vmas[{i}] is not an object"
        if not (whole(vma.get("start")) and whole(vma.get("end"))):
            return f"vmas[{i}] has no whole-number 'start' and 'end'"
        if vma["end"] < vma["start"]:
            return f"vmas[{i}] ends before it starts"
        runs = vma.get("runs", [])
        if not isinstance(runs, list) or not all(
            isinstance(r, list) and len(r) == 4 and all(whole(x) for x in r) and r[2] > 0
            for r in runs
        ):
            return f"vmas[{i}].runs is not a list of [va, pfn, pages, huge] (pages at least 1)"
    if not isinstance(snap.get("command", ""), str):
        return f"'command' is a {type(snap['command']).__name__}, not text"
    return None


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (beside it, then renamed): a full disk
    leaves an earlier file as it was."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


def analyze(snap: dict) -> dict:
    """Both analyses of a snapshot."""
    return {"gap_coverage": gap_coverage(snap), "contiguity": contiguity(snap)}


def free_bytes(buddyinfo: str) -> int:
    """Free bytes in a buddyinfo text.

    Examples
    --------
    >>> free_bytes("Node 0, zone Normal 2 1\\n")
    16384
    """
    total = 0
    for line in buddyinfo.splitlines():
        if "zone" not in line:
            continue
        counts = line.split("zone", 1)[1].split()[1:]
        total += sum(int(c) << order for order, c in enumerate(counts)) * PAGE
    return total


def snapshot_overrides(path: str) -> list[tuple[str, str]]:
    """Overrides that make a simulation start from a snapshot's free-memory state: its
    buddyinfo (written to a temporary file) as ``os.buddyinfo``, and ``os.phys_mem_bytes`` large
    enough for the layout (the next power of two of twice the free memory, at least MemTotal)."""
    snap = json.loads(Path(path).read_text())
    if not isinstance(snap, dict) or not isinstance(snap.get("buddyinfo"), str):
        raise ValueError(f"{path}: not an xlat snapshot (no buddyinfo)")
    if not isinstance(snap.get("meminfo", {}), dict):
        raise ValueError(f"{path}: not an xlat snapshot ('meminfo' is not an object)")
    fd, tmp = tempfile.mkstemp(prefix="xlat-buddyinfo-", suffix=".txt")
    with os.fdopen(fd, "w") as f:
        f.write(snap["buddyinfo"])
    total = snap.get("meminfo", {}).get("MemTotal", 0)
    if not isinstance(total, int) or isinstance(total, bool):
        raise ValueError(f"{path}: not an xlat snapshot (meminfo.MemTotal is not a number)")
    need = max(2 * free_bytes(snap["buddyinfo"]), total, 1)
    phys = 1 << (need - 1).bit_length()
    return [("os.buddyinfo", tmp), ("os.phys_mem_bytes", str(phys))]


def format_analysis(snap: dict, a: dict) -> str:
    """Readable summary of :func:`analyze`."""
    g, c = a["gap_coverage"], a["contiguity"]
    lines = [
        f"process       {snap.get('pid')} {' '.join(snap.get('command', '').split())[:60]}",
        f"VMAs          {g['vmas']} spanning {_mib(g['span_bytes'])}, {_mib(g['mapped_bytes'])} "
        f"mapped, {g.get('gaps', 0)} gaps",
        "gap coverage  "
        + ", ".join(
            f"{v:.2e} (k={k})" if v < 0.01 else f"{v:.3f} (k={k})"
            for k, v in g.get("coverage_without_largest_gaps", {}).items()
        )
        + "  [mapped / span without the k largest gaps]",
        f"present       {_mib(c['present_bytes'])}"
        + (f", {_mib(c.get('huge_bytes', 0))} in huge pages" if c["pfns_known"] else ""),
    ]
    if c["pfns_known"]:
        lines.append(
            "contiguity    "
            + ", ".join(f"{name} {share:.3f}" for name, share in c["granules"].items())
            + "  [share of present memory mappable by one page of that size]"
        )
        lines.append(
            "runs          " + ", ".join(f"{k}: {_mib(v)}" for k, v in c["run_histogram"].items())
        )
    else:
        lines.append("contiguity    unknown: physical frames need root (/proc/PID/pagemap)")
    return "\n".join(lines)


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``xlat snapshot``."""
    p = sub.add_parser(
        "snapshot",
        help="record a live process's VMAs, present pages and frames, and buddyinfo (root)",
        description="xlat snapshot PID -o snap.json records; xlat snapshot --analyze snap.json "
        "prints the gap-coverage and contiguity analyses of a saved snapshot.",
    )
    p.add_argument("target", help="PID of a live process (or a snapshot file with --analyze)")
    p.add_argument("-o", "--output", help="snapshot file to write (JSON)")
    p.add_argument("--analyze", action="store_true", help="TARGET is a snapshot file to analyze")
    p.add_argument("--json", action="store_true", help="print the analyses as JSON")


def main(args: argparse.Namespace) -> int:
    """``xlat snapshot``; returns the exit code."""
    if args.analyze:
        try:
            snap = json.loads(Path(args.target).read_text())
        except (OSError, ValueError) as e:
            print(f"xlat: error: {args.target}: {e}", file=sys.stderr)
            return 2
        problem = snapshot_problem(snap)
        if problem:
            print(f"xlat: error: {args.target}: not an xlat snapshot: {problem}", file=sys.stderr)
            return 2
    else:
        if not args.target.isdigit():
            print(f"xlat: error: '{args.target}' is not a PID (use --analyze for a file)",
                  file=sys.stderr)  # fmt: skip
            return 2
        if not args.output:
            print("xlat: error: -o snap.json is required", file=sys.stderr)
            return 2
        try:
            snap = take(int(args.target))
        except OSError as e:
            print(f"xlat: error: snapshot of {args.target}: {e}", file=sys.stderr)
            return 1
        try:
            write_atomic(Path(args.output), json.dumps(snap))
        except OSError as e:
            print(f"xlat: error: {args.output}: cannot write: {e.strerror or e}", file=sys.stderr)
            return 2
        print(f"snapshot written: {args.output}", file=sys.stderr)
    a = analyze(snap)
    print(json.dumps(a) if args.json else format_analysis(snap, a))
    return 0
