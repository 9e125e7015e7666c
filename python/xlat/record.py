"""``xlat trace record``: run a real program under Valgrind and write its references as a
native trace while it runs.

The program runs under our Valgrind tool (source in the package's data, ``vgtool/``; built into
the user's cache folder by ``xlat trace setup`` or the first recording, see :func:`build_tool`),
which writes binary records (accesses, mmap/munmap/brk/mprotect/madvise/mremap with results,
thread switches, exec and exit) into a pipe; the Rust core converts them to the native format as
they arrive, so no intermediate file is written. ``--trace-children=yes`` makes Valgrind follow
``execve`` (a ``python3`` wrapper script that execs the interpreter is followed into the
interpreter); children created by ``fork`` run but are not recorded.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
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
from xlat._data import cache_dir, data_dir

#: The tool's source (``build.sh``, ``xl_main.c``), shipped in the package.
TOOL_DIR = data_dir() / "vgtool"

#: Bytes of the tool's stream converted between two progress updates.
PUMP_BYTES = 16 << 20
#: Pipe buffer asked for (Linux F_SETPIPE_SZ; the default is 64 KiB).
PIPE_BYTES = 1 << 20
F_SETPIPE_SZ = 1031


class RecordError(Exception):
    """Recording cannot start (no valgrind, no tool); exit code 2. ``output``: a failed tool
    build's whole output (the message has its last line)."""

    output: str = ""


def tool_build_dir() -> Path:
    """Where :func:`build_tool` puts the tool: ``vgtool-KEY`` in the user's cache folder
    (:func:`xlat._data.cache_dir`), KEY a hash of the tool's source and of valgrind's version, so
    that a new xlat or a new valgrind builds it anew."""
    h = hashlib.sha256()
    for name in ("build.sh", "xl_main.c"):
        path = TOOL_DIR / name
        h.update(path.read_bytes() if path.is_file() else b"")
    try:
        h.update(valgrind_version().encode())
    except RecordError:
        pass
    return cache_dir() / f"vgtool-{h.hexdigest()[:12]}"


def tool_lib_dir() -> Path | None:
    """The VALGRIND_LIB directory holding our tool, or None when it is not built.

    ``XLAT_VGTOOL_LIB`` names another directory (a tool built by hand with ``build.sh``).
    """
    env = os.environ.get("XLAT_VGTOOL_LIB")
    lib = Path(env) if env else tool_build_dir() / "lib"
    return lib if (lib / "xlat-amd64-linux").is_file() else None


#: What building the tool needs, said whenever it cannot be built.
BUILD_HINT = (
    "it needs valgrind with its tool libraries (Debian's valgrind package), gcc and pkg-config: "
    "apt-get install valgrind gcc pkg-config libc6-dev, then `xlat trace setup`"
)


def build_tool() -> Path:
    """Build the tool into :func:`tool_build_dir` with the packaged ``build.sh``, saying so on
    stderr (once: later calls find it built); RecordError with the reason and what the build
    needs on failure."""
    script = TOOL_DIR / "build.sh"
    if not script.is_file():
        raise RecordError(
            f"the xlat valgrind tool's source is missing from this installation ({TOOL_DIR} "
            "has no build.sh): reinstall xlat"
        )
    if os.environ.get("XLAT_VGTOOL_LIB"):
        raise RecordError(
            f"XLAT_VGTOOL_LIB={os.environ['XLAT_VGTOOL_LIB']} holds no xlat-amd64-linux: "
            "unset it to build the tool into the cache folder (`xlat trace setup`)"
        )
    out = tool_build_dir()
    print(f"xlat: building the valgrind recording tool into {out} (once)", file=sys.stderr)
    proc = subprocess.run(["bash", str(script), str(out)], capture_output=True, text=True)
    lib = out / "lib"
    if proc.returncode != 0 or not (lib / "xlat-amd64-linux").is_file():
        output = proc.stderr.strip() or proc.stdout.strip() or f"exit status {proc.returncode}"
        # One line (a compiler's output can be long): build.sh's last line says why.
        why = output.splitlines()[-1]
        err = RecordError(f"cannot build the xlat valgrind tool: {why}; {BUILD_HINT}")
        err.output = output
        raise err
    return lib


def valgrind_version() -> str:
    try:
        out = subprocess.run(["valgrind", "--version"], capture_output=True, text=True)
    except FileNotFoundError:
        raise RecordError("valgrind is not installed (apt-get install valgrind)") from None
    return out.stdout.strip()


def add_parser(tsub: argparse._SubParsersAction) -> None:
    """Register ``xlat trace record`` and ``xlat trace setup``."""
    tsub.add_parser(
        "setup",
        help="build the valgrind recording tool into the user's cache folder (once)",
        description="Build xlat's valgrind tool from the source the package ships into the "
        "user's cache folder ($XLAT_CACHE_DIR, else $XDG_CACHE_HOME/xlat, else ~/.cache/xlat), "
        "or say where it is when already built. `xlat trace record` does it on first use; "
        "building needs valgrind with its tool libraries, gcc and pkg-config.",
    )
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
        "--no-deps",
        action="store_true",
        help="do not record dependences (each access's distance to the load its address "
        "derives from: the recorder runs about 45 %% longer with them)",
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


#: What a trace's metadata says of its dependences (``dependences``; ``xlat trace info`` and a
#: run's ``trace.dependences`` print it): xlat's tool derives them from register dataflow, as
#: the ChampSim reader does (docs/timing.md, "Dependences").
DEPENDENCES_RECORDED = "recorded (register dataflow, window 65535 accesses)"
#: ... when they were not recorded (``--no-deps``, or lackey, which has no dataflow).
DEPENDENCES_OFF = (
    "unknown: not recorded ({why}); timing.model = ooo treats every access as independent"
)

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
    stdout=None,
    deps: bool = True,
) -> dict:
    """Record ``command`` into the native trace ``output``; returns a summary dict with the
    program's ``exit_status`` (negative: killed by that signal), ``refs``, ``seconds``.

    ``tool`` is ``xlat`` (our valgrind tool, built on first use if needed), ``lackey`` (valgrind's
    stock text tool: about 1 M refs/s, exec not followed, start-up areas inferred page by page),
    or ``auto`` (xlat, lackey when the tool cannot be built). ``stdout``: where the program's
    standard output goes (as :class:`subprocess.Popen`'s; default: ours). ``deps``: record each
    access's dependence on an earlier load (xlat's tool only; ``dependences`` in the metadata
    says what the trace holds)."""
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
            print(
                f"xlat: warning: {e}; recording with valgrind's lackey instead (slow)",
                file=sys.stderr,
            )
    meta = {
        "recorder": "xlat-vgtool" if lib else "lackey",
        "valgrind": vg_version,
        "command": command,
        "cwd": os.getcwd(),
        "ifetch": ifetch,
        "dependences": (
            DEPENDENCES_RECORDED
            if lib and deps
            else DEPENDENCES_OFF.format(why="--no-deps" if lib else "lackey has no dataflow")
        ),
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
            f"--xlat-ifetch={'yes' if ifetch else 'no'}", f"--xlat-deps={'yes' if deps else 'no'}",
            "--", *command,
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
        proc = subprocess.Popen(argv, env=env, pass_fds=(wfd,), stdout=stdout)
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


def setup() -> int:
    """``xlat trace setup``: exit code 0 when the tool is built (now or before), 2 otherwise
    (with the build's whole output)."""
    try:
        valgrind_version()
        lib = tool_lib_dir()
        if lib is None:
            lib = build_tool()
            print(f"built {lib / 'xlat-amd64-linux'}", file=sys.stderr)
        else:
            print(f"the recording tool is built: {lib / 'xlat-amd64-linux'}", file=sys.stderr)
    except RecordError as e:
        if e.output and "\n" in e.output:
            print(e.output, file=sys.stderr)
        print(f"xlat: error: {e}", file=sys.stderr)
        return 2
    return 0


def main(args: argparse.Namespace) -> int:
    """``xlat trace record``: exit code 0 when the trace was written (the program's own exit
    status is printed and stored in the trace's metadata), 2 when recording could not start.
    ``xlat trace setup`` too (:func:`setup`)."""
    if args.trace_command == "setup":
        return setup()
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
        s = record(
            command, args.output, args.ifetch, args.zstd_level, show, args.tool,
            deps=not args.no_deps,
        )  # fmt: skip
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
