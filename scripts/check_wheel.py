"""Check a built wheel before it leaves the machine (run by `make wheel`).

Prints `auditwheel show` for the wheel and fails (exit 1) when the glibc tag auditwheel derives
from every library in the wheel (the three builds of the core included, which maturin's own
check does not look at) is newer than the tag the file name claims, or when the package data
(presets, CPU presets, claims, the recorder's source) is missing.

Usage: python scripts/check_wheel.py dist/xlat-*.whl
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

#: Files whose absence makes an installed wheel useless for part of the CLI.
DATA = (
    "xlat/data/configs/cpus/zen4.toml",
    "xlat/data/configs/demo.toml",
    "xlat/data/configs/papers/mehpt.toml",
    "xlat/data/configs/sweeps/demo.toml",
    "xlat/data/claims/mehpt.toml",
    "xlat/data/vgtool/build.sh",
    "xlat/data/vgtool/xl_main.c",
    "xlat/data/corpus/graph.c",
)
CORES = ("xlat/_core.abi3.so", "xlat/_core_v3.abi3.so", "xlat/_core_v4.abi3.so")


def glibc(tag: str) -> tuple[int, int]:
    """The glibc version a platform tag names.

    >>> glibc("manylinux2014_x86_64"), glibc("manylinux_2_34_x86_64")
    ((2, 17), (2, 34))
    """
    legacy = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
    for name, version in legacy.items():
        if tag.startswith(name + "_"):
            return version
    m = re.match(r"manylinux_(\d+)_(\d+)_", tag)
    if not m:
        raise ValueError(f"not a manylinux tag: {tag}")
    return int(m[1]), int(m[2])


def check(wheel: Path) -> list[str]:
    problems = []
    names = set(zipfile.ZipFile(wheel).namelist())
    problems += [f"missing from the wheel: {n}" for n in (*CORES, *DATA) if n not in names]
    platforms = wheel.name[: -len(".whl")].split("-")[-1].split(".")
    claimed = min(glibc(p) for p in platforms)
    show = subprocess.run(
        [sys.executable, "-m", "auditwheel", "show", str(wheel)], capture_output=True, text=True
    )
    print(show.stdout.strip() or show.stderr.strip())
    m = re.search(r'consistent with the following platform tag: "([^"]+)"', show.stdout)
    if show.returncode != 0 or not m:
        return [*problems, f"auditwheel show failed: {show.stderr.strip()}"]
    needed = glibc(m[1])
    if needed > claimed:
        problems.append(
            f"the file name claims glibc {claimed[0]}.{claimed[1]} but its libraries need "
            f"{needed[0]}.{needed[1]} ({m[1]}): were all three cores built by `make build`?"
        )
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    problems = check(Path(argv[0]))
    for p in problems:
        print(f"check_wheel: {p}", file=sys.stderr)
    if not problems:
        print(f"check_wheel: {Path(argv[0]).name}: tag, libraries and package data agree")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
