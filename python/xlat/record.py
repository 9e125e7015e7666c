"""``xlat trace record``: run a real program under Valgrind and write its references as a
native trace while it runs.

The program runs under our Valgrind tool (``tools/xlat-vgtool``, built by ``make vgtool``),
which writes binary records (accesses, mmap/munmap/brk/mprotect/madvise/mremap with results,
thread switches, exec and exit) into a pipe; the Rust core converts them to the native format as
they arrive, so no intermediate file is written. ``--trace-children=yes`` makes Valgrind follow
``execve`` (a ``python3`` wrapper script that execs the interpreter is followed into the
interpreter); children created by ``fork`` run but are not recorded.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from xlat import _core

ROOT = Path(__file__).resolve().parents[2]
TOOL_DIR = ROOT / "tools" / "xlat-vgtool"

#: Bytes of the tool's stream converted between two progress updates.
PUMP_BYTES = 16 << 20
#: Pipe buffer asked for (Linux F_SETPIPE_SZ; the default is 64 KiB).
PIPE_BYTES = 1 << 20
F_SETPIPE_SZ = 1031


class RecordError(Exception):
    """Recording cannot start (no valgrind, no tool); exit code 2."""


def tool_lib_dir() -> Path | None:
    """The VALGRIND_LIB directory holding our tool, or None when it is not built.

    ``XLAT_VGTOOL_LIB`` overrides the location (``tools/xlat-vgtool/build/lib``).
    """
    env = os.environ.get("XLAT_VGTOOL_LIB")
    lib = Path(env) if env else TOOL_DIR / "build" / "lib"
    return lib if (lib / "xlat-amd64-linux").is_file() else None


#: How to build the tool by hand, said whenever it is missing.
BUILD_HINT = (
    "build it from an xlat source tree with `make vgtool` (or `bash tools/xlat-vgtool/build.sh`; "
    "needs Debian's valgrind package, which has the tool libraries, gcc and pkg-config), then "
    "run from that tree or set XLAT_VGTOOL_LIB=<tree>/tools/xlat-vgtool/build/lib"
)


def build_tool() -> Path:
    """Build the tool (``tools/xlat-vgtool/build.sh``); RecordError with the reason and how to
    build it by hand on failure (e.g. an installed wheel has no tool source to build)."""
    script = TOOL_DIR / "build.sh"
    if not script.is_file():
        raise RecordError(
            f"the xlat valgrind tool is not built and its source is not in this installation "
            f"({TOOL_DIR} does not exist); {BUILD_HINT}"
        )
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    lib = tool_lib_dir()
    if proc.returncode != 0 or lib is None:
        reason = proc.stderr.strip() or proc.stdout.strip() or f"exit status {proc.returncode}"
        raise RecordError(f"cannot build the xlat valgrind tool ({script}): {reason}; {BUILD_HINT}")
    return lib


def valgrind_version() -> str:
    try:
        out = subprocess.run(["valgrind", "--version"], capture_output=True, text=True)
    except FileNotFoundError:
        raise RecordError("valgrind is not installed (apt-get install valgrind)") from None
    return out.stdout.strip()


def add_parser(tsub: argparse._SubParsersAction) -> None:
    """Register ``xlat trace record``."""
    r = tsub.add_parser(
        "record",
        help="record a real program's references and memory system calls (valgrind)",
        description="Run PROGRAM under valgrind with xlat's recording tool and write a native "
        "trace. Example: xlat trace record -o out.xlat -- ./gups 20",
    )
    r.add_argument("-o", "--output", required=True, help="trace file to write (.xlat)")
    r.add_argument(
        "--ifetch", action="store_true", help="also record one instruction fetch per instruction"
    )
    r.add_argument(
        "--zstd-level",
        type=int,
        default=1,
        help="zstd level: 1..19, or negative for zstd's faster modes (default 1)",
    )
    r.add_argument("--progress", action="store_true", help="progress on stderr even if not a tty")
    r.add_argument("--quiet", action="store_true", help="no progress and no summary")
    r.add_argument(
        "--tool",
        choices=("auto", "xlat", "lackey"),
        default="auto",
        help="recorder: xlat's valgrind tool, or lackey (slow text fallback); auto uses lackey "
        "only when the tool cannot be built",
    )
    r.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS...")


#: Accepted ``--zstd-level`` values: 0 (chunks stored uncompressed), zstd's levels 1..22, and
#: its fast modes down to -131072.
ZSTD_LEVELS = range(-131072, 23)


def check_zstd_level(level: int) -> None:
    """Raise :class:`RecordError` for a level zstd does not have.

    Examples
    --------
    >>> check_zstd_level(3)
    >>> check_zstd_level(40)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    xlat.record.RecordError: --zstd-level 40 is outside zstd's range: 1..22, -1..-131072 ...
    """
    if level not in ZSTD_LEVELS:
        raise RecordError(
            f"--zstd-level {level} is outside zstd's range: 1..22, -1..-131072 for its faster "
            "modes, or 0 for no compression"
        )


def record(
    command: list[str],
    output: str,
    ifetch: bool = False,
    zstd_level: int = 1,
    progress: bool = False,
    tool: str = "auto",
) -> dict:
    """Record ``command`` into the native trace ``output``; returns a summary dict with the
    program's ``exit_status`` (negative: killed by that signal), ``refs``, ``seconds``.

    ``tool`` is ``xlat`` (our valgrind tool, built on first use if needed), ``lackey`` (valgrind's
    stock text tool: about 1 M refs/s, exec not followed, start-up areas inferred page by page),
    or ``auto`` (xlat, lackey when the tool cannot be built)."""
    check_zstd_level(zstd_level)
    if not command:
        raise RecordError("no program given: xlat trace record -o OUT -- PROGRAM ARGS...")
    vg_version = valgrind_version()
    lib = None
    if tool in ("auto", "xlat"):
        try:
            lib = tool_lib_dir() or build_tool()
        except RecordError as e:
            if tool == "xlat":
                raise
            print(f"xlat: warning: {e}; recording with lackey (slow)", file=sys.stderr)
    meta = {
        "recorder": "xlat-vgtool" if lib else "lackey",
        "valgrind": vg_version,
        "command": command,
        "cwd": os.getcwd(),
        "ifetch": ifetch,
        "recorded_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "exit_status": None,
    }
    rfd, wfd = os.pipe()
    ino = os.fstat(wfd).st_ino
    try:  # a larger pipe means fewer context switches between valgrind and the converter
        fcntl.fcntl(wfd, F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:
        pass
    if lib:
        argv = [
            "valgrind", "--tool=xlat", "-q", "--trace-children=yes",
            "--child-silent-after-fork=yes", f"--xlat-fd={wfd}", f"--xlat-ino={ino}",
            f"--xlat-ifetch={'yes' if ifetch else 'no'}", "--", *command,
        ]  # fmt: skip
        env = dict(os.environ, VALGRIND_LIB=str(lib))
    else:
        if ifetch:
            raise RecordError("--ifetch needs xlat's valgrind tool, not lackey")
        argv = [
            "valgrind", "--tool=lackey", "--trace-mem=yes", "--trace-syscalls=yes",
            f"--log-fd={wfd}", "--", *command,
        ]  # fmt: skip
        env = dict(os.environ)
    try:
        rec = _core.Recorder(
            f"/proc/self/fd/{rfd}", output, json.dumps(meta), zstd_level, lib is None
        )
    finally:
        os.close(rfd)
    start = time.monotonic()
    self_cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    child_cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        proc = subprocess.Popen(argv, env=env, pass_fds=(wfd,))
    except OSError as e:
        os.close(wfd)
        raise RecordError(f"cannot start valgrind: {e}") from None
    os.close(wfd)
    last = 0.0
    try:
        while not rec.pump(PUMP_BYTES):
            now = time.monotonic()
            if progress and now - last > 0.5:
                last = now
                rate = rec.refs / max(now - start, 1e-9)
                sys.stderr.write(
                    f"\rrecording {rec.refs / 1e6:10.2f} M refs {rate / 1e6:6.2f} M/s "
                    f"{now - start:6.0f}s"
                )
                sys.stderr.flush()
    except BaseException:
        # Interrupted or failed: no half-written trace is left behind.
        proc.kill()
        proc.wait()
        Path(output).unlink(missing_ok=True)
        raise
    status = proc.wait()
    seconds = time.monotonic() - start
    self_cpu = resource.getrusage(resource.RUSAGE_SELF)
    child_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    if progress:
        sys.stderr.write("\n")
    meta["exit_status"] = status
    counts = json.loads(rec.finish(json.dumps(meta)))
    if counts["images"] == 0:
        Path(output).unlink(missing_ok=True)
        raise RecordError(
            f"valgrind exited with status {status} before the program started "
            f"(is '{command[0]}' a program on PATH?)"
        )
    counts.update(exit_status=status, seconds=seconds, output=output)
    # CPU time of valgrind (the program) and of the converter (this process): on an idle
    # machine with two cores the wall time approaches the larger of the two.
    counts["valgrind_cpu_seconds"] = (child_cpu.ru_utime + child_cpu.ru_stime) - (
        child_cpu0.ru_utime + child_cpu0.ru_stime
    )
    counts["converter_cpu_seconds"] = (self_cpu.ru_utime + self_cpu.ru_stime) - (
        self_cpu0.ru_utime + self_cpu0.ru_stime
    )
    counts["refs_per_sec"] = counts["refs"] / seconds if seconds > 0 else 0.0
    return counts


def main(args: argparse.Namespace) -> int:
    """``xlat trace record``: exit code 0 when the trace was written (the program's own exit
    status is printed and stored in the trace's metadata), 2 when recording could not start."""
    command = list(args.program)
    if command and command[0] == "--":
        command = command[1:]
    try:
        check_zstd_level(args.zstd_level)
    except RecordError as e:
        print(f"xlat: error: {e}", file=sys.stderr)
        return 2
    if shutil.which("valgrind") is None:
        print("xlat: error: valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    show = not args.quiet and (args.progress or sys.stderr.isatty())
    try:
        s = record(command, args.output, args.ifetch, args.zstd_level, show, args.tool)
    except RecordError as e:
        print(f"xlat: error: {e}", file=sys.stderr)
        return 2
    if not args.quiet:
        status = s["exit_status"]
        how = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
        print(
            f"recorded {s['refs']:,} references, {s['instructions']:,} instructions, "
            f"{s['syscalls']:,} memory system calls in {s['seconds']:.1f}s "
            f"({s['refs_per_sec'] / 1e6:.1f} M refs/s; CPU: valgrind "
            f"{s['valgrind_cpu_seconds']:.1f}s, converter {s['converter_cpu_seconds']:.1f}s); "
            f"program {how}; "
            f"wrote {s['output']} ({Path(s['output']).stat().st_size:,} bytes)",
            file=sys.stderr,
        )
    return 0
