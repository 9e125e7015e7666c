"""Units of the result record's figures, and the flat ``key value # unit`` text dump.

The record's keys follow naming rules (``_cycles`` are core cycles, ``_bytes`` bytes, ``_rate``
and ``_share`` fractions, ...; docs/results.md), so a key's unit follows from its name. The
rules below are applied in order; integer figures that match no rule are counts, and a float
that matches none has no unit here — ``tests/test_units.py`` fails for such a key, so every
figure a run can produce has a unit. ``docs/results.md`` ends with the index of every key and
its unit, generated from these rules (``make results-docs``).

Examples
--------
>>> unit_of("walk.avg_cycles"), unit_of("page_table.peak_bytes"), unit_of("tlb.l2_mpki")
('cycles per event', 'bytes', 'per 1000 instructions')
>>> unit_of("cache.l2.miss_rate"), unit_of("walk.count", 7)
('fraction (0-1)', 'count')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: Keys whose unit the naming rules do not give (checked before the rules).
EXPLICIT = {
    "seed": "identifier",
    "model_version": "identifier",
    "timing.ipc": "instructions per cycle",
    "sim.refs_per_sec": "references per second",
    "lvm.depth": "levels",
    "radix.levels": "levels",
    "os.fmfi_order": "buddy order",
    "os.fmfi_before": "fraction (0-1)",
    "os.fmfi_end": "fraction (0-1)",
    "os.fmfi_target": "fraction (0-1)",
    "os.va_gaps.coverage": "fraction (0-1)",
    "lvm.gpt_block_overhead": "ratio",
    "lvm.gpt_slot_overhead": "ratio",
    "timing.avg_outstanding_misses": "misses (time average)",
    "timing.avg_outstanding_walks": "walks (time average)",
}

#: Sampled simulation (``sampling.*``): each window rate's mean and interval bounds have the
#: rate's unit; the relative half-width is a fraction of the mean.
_SAMPLED_RATES = {
    "cycles_per_ref": "cycles per event",
    "cpi": "cycles per instruction",
    "ipc": "instructions per cycle",
    "l1_tlb_mpki": "per 1000 instructions",
    "l2_tlb_mpki": "per 1000 instructions",
    "avg_walk_cycles": "cycles per event",
    "mmu_overhead_share": "fraction (0-1)",
}
for _rate, _unit in _SAMPLED_RATES.items():
    for _stat in ("mean", "ci95_low", "ci95_high", "ci95_half_width"):
        EXPLICIT[f"sampling.metrics.{_rate}.{_stat}"] = _unit
    EXPLICIT[f"sampling.metrics.{_rate}.ci95_relative"] = "ratio"
EXPLICIT["sampling.window_cycles_per_ref"] = "cycles per event"
EXPLICIT["sampling.estimate.ipc_ci95_low"] = "instructions per cycle"
EXPLICIT["sampling.estimate.ipc_ci95_high"] = "instructions per cycle"

#: (pattern on the key's last component, unit); first match wins.
RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"_seconds$"), "seconds"),
    (re.compile(r"(^|_)(avg_.*cycles|avg_cycles)$|^avg_.*_cycles$"), "cycles per event"),
    (re.compile(r"^cycles_per_"), "cycles per event"),
    (re.compile(r"(^|_)cycles(_|$)"), "cycles"),
    (re.compile(r"(^|_)bytes(_|$)"), "bytes"),
    (re.compile(r"mpki$"), "per 1000 instructions"),
    (
        re.compile(r"(_rate|_share|_share_avg|^share|_fraction|fraction_per_.*|occupancy)$"),
        "fraction (0-1)",
    ),
    (re.compile(r"(^|_)speedup(_|$)"), "ratio"),
    (re.compile(r"(_per_|^avg_)"), "count per event"),
    (re.compile(r"^ipc$"), "instructions per cycle"),
]

#: Key components that are indices, not names (cache levels and histogram buckets stay).
_INDEX = re.compile(r"^\d+$")


def pattern_of(key: str) -> str:
    """The key with its numeric components (core numbers, histogram buckets) generalized.

    >>> pattern_of("walk.latency_hist.16"), pattern_of("cores.1.tlb.l1_misses")
    ('walk.latency_hist.<N>', 'cores.<N>.tlb.l1_misses')
    """
    return ".".join("<N>" if _INDEX.match(p) else p for p in key.split("."))


def unit_of(key: str, value: Any = 0.0) -> str | None:
    """The unit of figure ``key`` (a dotted record path) whose value is ``value``; None when
    no rule gives one (a float matching no rule).

    Text and flags have the units ``text`` and ``flag``; list elements (``mehpt.4k_final_way_
    bytes::0``) and per-core copies (``cores.0.walk.count``) have their key's unit.

    >>> unit_of("design", "radix"), unit_of("oracle.enabled", True)
    ('text', 'flag')
    >>> unit_of("walk.latency_hist.16", 3), unit_of("cores.0.timing.ipc", 1.5)
    ('count', 'instructions per cycle')
    >>> unit_of("some.new_float", 0.5) is None
    True
    """
    if isinstance(value, bool):
        return "flag"
    if isinstance(value, str):
        return "text"
    key = key.split("::")[0]
    for alias, repl in _ALIASES:  # per-core copies and the nested host side: the same figures
        key = alias.sub(repl, key)
    parts = [p for p in key.split(".") if not _INDEX.match(p)]
    key = ".".join(parts)
    if key in EXPLICIT:
        return EXPLICIT[key]
    last = parts[-1] if parts else key
    for pattern, unit in RULES:
        if pattern.search(last):
            return unit
    if isinstance(value, int):
        return "count"
    return None


def _items(record: Mapping[str, Any], prefix: str = ""):
    """(key, value) of every figure in record order; lists become ``key::i`` (gem5's vector
    notation) and lists of objects ``key.i.sub``."""
    for key, value in record.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            yield from _items(value, path)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                if isinstance(v, Mapping):
                    yield from _items(v, f"{path}.{i}")
                else:
                    yield f"{path}::{i}", v
        else:
            yield path, value


def stats_text(record: Mapping[str, Any], config: bool = False) -> str:
    """One run's record as gem5-style ``stats.txt`` lines: ``key value # unit``, one figure per
    line, so that ``grep`` finds any figure; the configuration (``config.*``) only with
    ``config`` (it is in the JSON record in any case).

    Examples
    --------
    >>> print(stats_text({"design": "radix", "walk": {"count": 3, "avg_cycles": 41.5}}))
    ---------- Begin Simulation Statistics ----------
    design                                                      radix  # text
    walk.count                                                      3  # count
    walk.avg_cycles                                              41.5  # cycles per event
    ---------- End Simulation Statistics   ----------
    <BLANKLINE>
    """
    lines = ["---------- Begin Simulation Statistics ----------"]
    for key, value in _items(record):
        if key.startswith("config.") and not config:
            continue
        if isinstance(value, float):
            text = repr(value)
        elif isinstance(value, bool):
            text = "true" if value else "false"
        elif value is None:
            text = "null"
        else:
            text = str(value)
        unit = unit_of(key, value) or "?"
        lines.append(f"{key:<50} {text:>14}  # {unit}")
    lines.append("---------- End Simulation Statistics   ----------")
    return "\n".join(lines) + "\n"


#: Runs whose records together hold every figure a run can produce (each design under the
#: default ooo core, the simple core, THP, nested translation, two processes on two cores,
#: warm-up, coalescing, range and any-size TLBs, reservations, sampling); small, so the index
#: builds in seconds.
INDEX_RUNS: list[dict[str, Any]] = [
    {"set": {"timing.model": "simple"}},
    {"set": {"os.thp": "always"}},
    {"set": {"virt.enabled": True}},
    {"workload": "gups,stream", "set": {"sim.cores": 2}},
    {"set": {"sim.warmup_refs": 2000}},
    {"set": {"tlb.coalescing": "colt", "tlb.l1_organization": "split_any_size"}},
    {"set": {"tlb.range.entries": 32, "tlb.l1_organization": "any_size"}},
    {"set": {"os.policy": "reservation", "tlb.l2_organization": "split_1g"}},
    {"set": {"os.policy": "hawkeye", "os.hawkeye.interval_cycles": 100000}},
    {"set": {"os.policy": "trident", "os.thp": "always", "os.trident.interval_cycles": 100000}},
    {"set": {"os.hugetlb.pages": 4, "os.hugetlb.size": "2MiB"}},
    # Elastic Translations' Leshy and CoalaKhugepaged sections (et.leshy.*, et.khugepaged.*).
    {"design": "et", "set": {"et.leshy.mode": "online", "et.khugepaged.enabled": True}},
    # Sampled simulation's section (sampling.*).
    {
        "set": {
            "sim.sampling.interval": 1000,
            "sim.sampling.window": 200,
            "sim.sampling.detailed_warmup": 200,
        }
    },
]

#: Where the index of keys lives in docs/results.md (generated between these lines).
INDEX_BEGIN = "<!-- key index: generated by `make results-docs`, do not edit by hand -->"
INDEX_END = "<!-- end of key index -->"


def index_records() -> list[dict[str, Any]]:
    """The records of :data:`INDEX_RUNS` plus one run of every registered design."""
    import warnings

    from xlat.run import designs, run

    base = {"workload": "gups", "footprint": "16MiB", "refs": "5k"}
    specs = [{"design": d} for d in designs()] + [{"design": "radix", **r} for r in INDEX_RUNS]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [run(**{**base, **s}) for s in specs]


def key_index(records: list[Mapping[str, Any]]) -> dict[str, tuple[str | None, Any]]:
    """Every figure key pattern of ``records`` (``config.*`` left out: `xlat config keys`
    documents those) with its unit and an example value, sorted."""
    out: dict[str, tuple[str | None, Any]] = {}
    for rec in records:
        for key, value in _items(rec):
            if key.startswith("config."):
                continue
            pat = pattern_of(key.split("::")[0]) + ("[i]" if "::" in key else "")
            if pat not in out or out[pat][0] is None:
                out[pat] = (unit_of(key, value), value)
    return dict(sorted(out.items()))


#: Doc pages (under docs/) that define the figures of a record section, beside results.md and
#: a design's own page designs/<section>.md.
SECTION_PAGES = {
    "os": ["os-model.md"],
    "virt": ["machine.md"],
    "processes": ["machine.md"],
    "timing": ["timing.md"],
}

#: Designs whose section repeats another design's keys (documented on that design's page).
DESIGN_BASES = {"mehpt": "ecpt", "fpt": "radix", "tps": "radix", "rmm": "radix", "et": "radix"}

#: Record sections that repeat another section's keys (nested runs' host side, per-core copies).
_ALIASES = [
    (re.compile(r"^cores\.\d+\."), ""),
    (re.compile(r"^virt\.host_os\."), "os."),
    (re.compile(r"^virt\.host_page_table\."), "page_table."),
    (re.compile(r"^virt\.host\."), ""),
    (re.compile(r"^processes\.\d+\."), "processes."),
    # One entry per configuration key (dotted itself): defined once as `config_sources.<key>`.
    (re.compile(r"^config_sources\..*"), "config_sources.key"),
]


def _token_regex(token: str) -> re.Pattern[str] | None:
    """A doc's backticked name as a pattern: ``<level>`` and ``*`` stand for any name,
    ``{a,b}`` for a or b, ``(x)`` for an optional x, ``...`` and a leading ``_`` for any prefix."""
    if not re.fullmatch(r"[A-Za-z0-9_.<>{},()*]+|\.\.\.[A-Za-z0-9_.]+", token):
        return None
    if "." not in token and not re.sub(r"<[^>]*>|\*", "", token):
        return None  # `<name>`, `*`: a placeholder, not a definition
    out, i = "", 0
    if token.startswith("..."):
        out, i = r"[A-Za-z0-9_.]*", 3
    elif token.startswith("_"):
        out = r"[A-Za-z0-9]+"
    while i < len(token):
        c = token[i]
        if c == "<":
            j = token.index(">", i) if ">" in token[i:] else len(token)
            out, i = out + r"[A-Za-z0-9_]+", j + 1
            continue
        if c == "{":
            j = token.index("}", i) if "}" in token[i:] else len(token)
            out, i = out + "(" + "|".join(map(re.escape, token[i + 1 : j].split(","))) + ")", j + 1
            continue
        if c == "(":
            j = token.index(")", i) if ")" in token[i:] else len(token)
            out, i = out + "(" + re.escape(token[i + 1 : j]) + ")?", j + 1
            continue
        out += r"[A-Za-z0-9_.]*" if c == "*" else re.escape(c)
        i += 1
    try:
        return re.compile(out)
    except re.error:
        return None


def documented(pattern: str, docs: Mapping[str, str]) -> str | None:
    """The doc page (a key of ``docs``, a path under docs/) that defines figure ``pattern``,
    or None. Defined means: a backticked name on a page matches the dotted key (doc names may
    be patterns: ``cache.<level>.hits``, ``os.thp_fallback_{unaligned,no_block}``); or one
    matches its last component on the page of its section (``designs/<section>.md``, the pages
    of :data:`SECTION_PAGES`) or in a results.md section about that prefix."""
    key = pattern.replace("[i]", "").replace("<N>", "0")
    for alias, repl in _ALIASES:
        key = alias.sub(repl, key)
    parts = key.split(".")
    # A histogram bucket or a by-size entry (`walk.by_page_size.4k`) is defined with its figure.
    keys = [key, ".".join(parts[:-1])] if len(parts) > 2 else [key]
    head = parts[0]
    pages = [f"designs/{head}.md", *SECTION_PAGES.get(head, [])]
    if head in DESIGN_BASES:
        pages.append(f"designs/{DESIGN_BASES[head]}.md")
    tails = {".".join(parts[i:]) for i in range(1, len(parts))}
    for page, text in docs.items():
        chunks = re.split(r"\n## ", text) if page == "results.md" else [text]
        for chunk in chunks:
            own = page in pages or (page == "results.md" and f"{head}." in chunk)
            for token in re.findall(r"`([^`\n]+(?:\n[^`\n]+)?)`", chunk):
                token = re.sub(r",\s+", ",", token)  # `restsegs.<i>.{page_size, ways}`
                if token == f"{head}.*":
                    continue  # `walk.*` names the section (a heading), it defines no key
                rx = _token_regex(token)
                if rx is None:
                    continue
                if any(rx.fullmatch(k) for k in keys) or (
                    own and any(rx.fullmatch(t) for t in tails)
                ):
                    return page
    return None


def index_markdown(index: Mapping[str, tuple[str | None, Any]], docs: Mapping[str, str]) -> str:
    """The generated index section of docs/results.md."""
    lines = [
        INDEX_BEGIN,
        "",
        "## Index of every key, with its unit",
        "",
        "Generated from the records of every design and of the runs of "
        "`xlat.units.INDEX_RUNS` (every design under the default ooo core, the simple core, "
        "THP, nested, two cores, warm-up, TLB organizations, reservations); `<N>` is a number "
        "(core, histogram bucket), "
        "`[i]` a list element (`key::i` in `--stats-format txt`). Units follow the naming "
        "rules in `python/xlat/units.py`; the definition is in the section or page named.",
        "",
        "| key | unit | defined in |",
        "|---|---|---|",
    ]
    for pat, (unit, _) in index.items():
        page = documented(pat, docs)
        where = f"[{page}]({page})" if page and page != "results.md" else ("above" if page else "—")
        lines.append(f"| `{pat}` | {unit or '?'} | {where} |")
    lines += ["", INDEX_END, ""]
    return "\n".join(lines)


def docs_texts(root) -> dict[str, str]:
    """The pages :func:`documented` reads, under the repository ``root``: docs/results.md
    (without its generated index), the pages of :data:`SECTION_PAGES`, docs/designs/*.md."""
    from pathlib import Path

    root = Path(root) / "docs"
    texts = {"results.md": strip_index((root / "results.md").read_text())}
    for page in sorted({p for ps in SECTION_PAGES.values() for p in ps}):
        texts[page] = (root / page).read_text()
    for p in sorted((root / "designs").glob("*.md")):
        texts[f"designs/{p.name}"] = p.read_text()
    return texts


def strip_index(text: str) -> str:
    """``text`` without the generated index section."""
    if INDEX_BEGIN in text:
        text = text[: text.index(INDEX_BEGIN)].rstrip("\n") + "\n"
    return text
