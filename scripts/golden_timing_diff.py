#!/usr/bin/env python3
"""Compare two sets of golden snapshots key by key: which keys moved, and only timing ones?

    scripts/golden_timing_diff.py OLD_DIR NEW_DIR [--allow PREFIX ...]

Flattens every ``*.json`` of both directories (``crates/xlat/tests/golden`` layout) into
dotted keys and compares them. Keys under an allowed prefix (default: ``timing.`` and the
``config.timing.``/``config.core.`` settings that name the model, plus per-core ``cores.N.timing.``)
may move, appear or disappear; any other difference is a violation. Prints the moved key
families (the key with list indices replaced by ``N``) with how many snapshots each moved in,
then the violations, and exits 1 when there is one.

Use it when a deliberate timing-model change regenerates the snapshots (``UPDATE_SNAPSHOT=1
cargo test -p xlat --release --test golden``): keep a copy of the old directory, regenerate,
and run this on the two.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

ALLOWED = ["timing.", "config.timing.", "config.core."]


def flatten(prefix: str, v, out: dict) -> None:
    if isinstance(v, dict):
        for k, c in v.items():
            flatten(f"{prefix}.{k}" if prefix else k, c, out)
    elif isinstance(v, list):
        for i, c in enumerate(v):
            flatten(f"{prefix}.{i}", c, out)
    else:
        out[prefix] = v


def family(key: str) -> str:
    return re.sub(r"\.\d+(?=\.|$)", ".N", key)


def allowed(key: str, prefixes: list[str]) -> bool:
    k = re.sub(r"^cores\.N\.", "", family(key))
    return any(k.startswith(p) for p in prefixes)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--allow", action="append", default=[], help="extra allowed key prefix")
    a = p.parse_args()
    prefixes = ALLOWED + a.allow
    old_files = {f.name for f in a.old.glob("*.json")}
    new_files = {f.name for f in a.new.glob("*.json")}
    violations = [f"{n}: only in {a.old}" for n in sorted(old_files - new_files)]
    violations += [f"{n}: only in {a.new}" for n in sorted(new_files - old_files)]
    moved: Counter = Counter()
    identical_non_timing = 0
    for name in sorted(old_files & new_files):
        fo: dict = {}
        fn: dict = {}
        flatten("", json.loads((a.old / name).read_text()), fo)
        flatten("", json.loads((a.new / name).read_text()), fn)
        for k in sorted(set(fo) | set(fn)):
            if fo.get(k, "<absent>") == fn.get(k, "<absent>"):
                if not allowed(k, prefixes):
                    identical_non_timing += 1
                continue
            if allowed(k, prefixes):
                moved[family(k)] += 1
            else:
                violations.append(
                    f"{name}: {k}: {fo.get(k, '<absent>')} -> {fn.get(k, '<absent>')}"
                )
    n = len(old_files & new_files)
    print(f"{n} snapshots compared; {identical_non_timing} non-timing values identical")
    print("moved key families (snapshots in which each moved):")
    for k, c in sorted(moved.items()):
        print(f"  {k}: {c}")
    if violations:
        print(f"{len(violations)} non-timing differences:")
        for v in violations[:50]:
            print(f"  {v}")
        return 1
    print("no non-timing key moved")
    return 0


if __name__ == "__main__":
    sys.exit(main())
