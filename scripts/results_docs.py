#!/usr/bin/env python3
"""Regenerate the index of every result-record key, with its unit, at the end of
docs/results.md (`make results-docs`; tests/test_units.py fails while it is stale)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from xlat.units import docs_texts, index_markdown, index_records, key_index, strip_index  # noqa: E402


def main() -> int:
    path = ROOT / "docs" / "results.md"
    index = key_index(index_records())
    missing = [k for k, (unit, _) in index.items() if unit is None]
    if missing:
        print(f"no unit for: {', '.join(missing)} (add a rule in python/xlat/units.py)")
        return 1
    head = strip_index(path.read_text()).rstrip("\n")
    text = head + "\n\n" + index_markdown(index, docs_texts(ROOT))
    path.write_text(text)
    undocumented = sum(1 for line in text.splitlines() if line.endswith("| — |"))
    print(f"{path}: {len(index)} keys indexed, {undocumented} without a definition")
    return 0


if __name__ == "__main__":
    sys.exit(main())
