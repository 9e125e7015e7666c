#!/usr/bin/env python3
"""Write small ChampSim-format traces of ten access patterns, with register dependences.

The traces feed both ChampSim and xlat (``xlat run --trace FILE.champsim``), so the two can be
compared on the same instruction stream (see ``scripts/champsim_validate.py`` and
``docs/timing.md``, "Validation against ChampSim").

Each record is ChampSim's 64-byte ``input_instr``: ip, is_branch, branch_taken, 2 destination
and 4 source register numbers, 2 destination and 4 source memory addresses. Dependences are
expressed the way a compiled loop would: a load writes a register, and a later instruction whose
address is computed from that register lists it as a source. Register numbers avoid ChampSim's
special registers (6 stack pointer, 25 flags, 26 instruction pointer), and no record is a
branch (the loops' branches would be perfectly predictable and only add records). The
instruction pointers repeat with each iteration of the pattern's loop body (``LOOP_BODY``
records), as a compiled loop's do: ChampSim fetches every instruction through its ITLB and L1I,
and an ever-growing code footprint would make it miss there on every 16th instruction, which
xlat (which does not fetch the instructions of a ChampSim trace) would not see.

Patterns (``--pattern``):

``gups``
    HPCC RandomAccess: an xorshift index (two ALU instructions), a load of the table entry, an
    xor, a store back. Loads are independent of each other.
``stream``
    STREAM triad over three arrays: two loads, an ALU op, a store, an index increment.
``pointer_chase``
    One random cycle over 64-byte nodes: each load's address is the previous load's value.
``graph``
    CSR traversal (BFS-like): the vertex id from a work list, its offsets, its neighbour ids,
    and a visited-flag load per neighbour, each address computed from the previous load.
``hash``
    Hash-table lookups: a hash of a random key (ALU), a bucket load, and the item load through
    the pointer the bucket holds.
``random_chase``
    A dependent chain of random 64-byte nodes: each load's address is the previous load's
    value, and each next node is drawn at random over the footprint (a walk, not a cycle: with a
    few ten thousand steps over millions of nodes a revisit is rare, and no permutation of the
    whole footprint has to be built, which ``pointer_chase`` does and which is too slow at
    1 GiB).
``page_stride``
    A sweep with one 8-byte load every 4 KiB (``STRIDE``), in ascending address order and
    wrapping at the footprint: the loads are independent (their address comes from the loop
    index), so they are all in flight at once, and every one touches a new page. The stride is
    chosen from ChampSim's DRAM address mapping (``scripts/champsim_validate.py``: 64-byte
    lines, 1 channel bit, 2 bank-group bits, 2 bank bits, then 7 column bits, i.e. bits 11-17,
    then the row): 4 KiB changes only column bit 12, so while the physical pages are
    consecutive, 64 successive loads (256 KiB) fall in one channel, bank group, bank and row;
    then the row changes and ChampSim's XOR of the row into the bank moves the sweep to
    another bank.
``zipf``
    Skewed random loads: an item rank drawn from a Zipf distribution of exponent
    ``ZIPF_S`` (0.99, as YCSB) over the footprint's 64-byte items, scattered over the footprint
    by an odd multiplier (rank -> rank x ``SCATTER`` mod items, a bijection), two ALU
    instructions (the random number and the hash) and the load. Loads are independent.
``random_update``
    Random read-modify-write updates ``a[idx[i]] += v``: a sequential load of the index array,
    the load of the 8-byte entry it names (random over the footprint), an add, the store back.
    The updates are independent of each other, so with one new page per update the two page
    walkers are the bottleneck at large footprints.
``chase_with_loads``
    A dependent chain (as ``random_chase``, over half the footprint) interleaved with two
    independent random loads per step (over the other half; their addresses come from an ALU
    recurrence, not from the chain), so each step's chain miss overlaps two independent misses.

Examples
--------
>>> import io
>>> buf = io.BytesIO()
>>> write_trace(buf, "pointer_chase", records=8, footprint=1 << 20, seed=1)
0
>>> len(buf.getvalue())
512
"""

from __future__ import annotations

import argparse
import lzma
import random
import struct
import sys
from collections.abc import Iterator
from typing import BinaryIO

RECORD = struct.Struct("<QBB2B4B2Q4Q")
"""ChampSim ``input_instr``: 64 bytes, little-endian."""

BASE = 0x7F00_0000_0000
"""Virtual address of the first array (each array starts on a 1 GiB boundary after it)."""

IP0 = 0x40_1000

Rec = tuple[list[int], list[int], list[int], list[int]]
"""(destination registers, source registers, store addresses, load addresses)."""


def _array(i: int) -> int:
    return BASE + (i << 30)


def _gups(footprint: int, rng: random.Random) -> Iterator[Rec]:
    entries = max(footprint // 8, 1)
    while True:
        yield [3], [3], [], []  # r3 = xorshift(r3)
        yield [3], [3], [], []
        idx = rng.randrange(entries)
        yield [4], [3], [], [_array(0) + idx * 8]  # r4 = table[r3]
        yield [4], [4, 3], [], []  # r4 ^= r3
        yield [], [3, 4], [_array(0) + idx * 8], []  # table[r3] = r4


def _stream(footprint: int, rng: random.Random) -> Iterator[Rec]:
    n = max(footprint // 24, 1)
    i = 0
    while True:
        yield [4], [1], [], [_array(1) + i * 8]  # r4 = b[r1]
        yield [5], [1], [], [_array(2) + i * 8]  # r5 = c[r1]
        yield [4], [4, 5], [], []  # r4 += s * r5
        yield [], [1, 4], [_array(0) + i * 8], []  # a[r1] = r4
        yield [1], [1], [], []  # r1++
        i = (i + 1) % n


def _pointer_chase(footprint: int, rng: random.Random) -> Iterator[Rec]:
    nodes = max(footprint // 64, 2)
    order = list(range(nodes))
    # Sattolo: one cycle through every node.
    for i in range(nodes - 1, 0, -1):
        j = rng.randrange(i)
        order[i], order[j] = order[j], order[i]
    nxt = [0] * nodes
    for i in range(nodes):
        nxt[order[i]] = order[(i + 1) % nodes]
    cur = 0
    while True:
        yield [1], [1], [], [_array(0) + cur * 64]  # r1 = r1->next
        yield [2], [2], [], []  # loop counter
        cur = nxt[cur]


def _graph(footprint: int, rng: random.Random) -> Iterator[Rec]:
    degree = 8
    vertices = max(footprint // (8 + 4 * degree + 4 + 4), 16)
    worklist, offsets, neighbours, visited = (_array(i) for i in range(4))
    w = 0
    while True:
        v = rng.randrange(vertices)
        yield [2], [1], [], [worklist + (w % vertices) * 4]  # r2 = worklist[r1]
        yield [1], [1], [], []  # r1++
        yield [3], [2], [], [offsets + v * 8]  # r3 = offsets[r2]
        yield [4], [3], [], []  # r4 = r3 * 4 (address arithmetic)
        for e in range(degree):
            edge = v * degree + e
            yield [5], [4], [], [neighbours + edge * 4]  # r5 = neighbours[r4]
            yield [4], [4], [], []  # r4 += 4
            yield [7], [5], [], [visited + rng.randrange(vertices) * 4]  # r7 = visited[r5]
        w += 1


def _hash(footprint: int, rng: random.Random) -> Iterator[Rec]:
    items = max(footprint // (64 + 16), 2)
    buckets, slab = _array(0), _array(1)
    while True:
        key = rng.randrange(items)
        yield [1], [1], [], []  # r1 = next key
        yield [2], [1], [], []  # r2 = hash(r1)
        yield [2], [2], [], []
        yield [3], [2], [], [buckets + (key * 2654435761 % (2 * items)) * 16]  # r3 = bucket
        yield [4], [3], [], [slab + key * 64]  # r4 = r3->item


def _random_chase(footprint: int, rng: random.Random) -> Iterator[Rec]:
    nodes = max(footprint // 64, 2)
    cur = 0
    while True:
        yield [1], [1], [], [_array(0) + cur * 64]  # r1 = r1->next
        yield [2], [2], [], []  # loop counter
        cur = rng.randrange(nodes)


STRIDE = 4096
"""``page_stride``'s stride: column bit 12 of ChampSim's mapping (see the pattern's doc)."""


def _page_stride(footprint: int, rng: random.Random) -> Iterator[Rec]:
    steps = max(footprint // STRIDE, 1)
    i = 0
    while True:
        yield [4], [1], [], [_array(0) + i * STRIDE]  # r4 = a[r1]
        yield [5], [5, 4], [], []  # r5 += r4
        yield [1], [1], [], []  # r1 += STRIDE / 8
        i = (i + 1) % steps


ZIPF_S = 0.99
"""Zipf exponent of ``zipf`` (YCSB's default)."""

SCATTER = 0x9E37_79B9_7F4A_7C15
"""Odd multiplier that scatters ``zipf``'s ranks over the items (bijective modulo 2^k)."""


def zipf_rank(u: float, n: int, s: float = ZIPF_S) -> int:
    """The rank (0-based) of a uniform ``u`` in [0, 1) under Zipf(``s``) over ``n`` items.

    The inverse of the continuous approximation of Zipf's CDF, P(rank < k) = (k^(1-s) - 1) /
    (n^(1-s) - 1) for k in [1, n]; close enough for a skew (at n = 2^24, rank 0 takes 3.8 % of
    the draws and the first 1000 ranks 39 %).

    Examples
    --------
    >>> zipf_rank(0.0, 1 << 24), zipf_rank(0.999999, 1 << 24) > 1 << 23
    (0, True)
    """
    a = 1.0 - s
    k = ((n**a - 1.0) * u + 1.0) ** (1.0 / a)
    return min(int(k) - 1, n - 1)


def _zipf(footprint: int, rng: random.Random) -> Iterator[Rec]:
    items = max(footprint // 64, 1)
    while True:
        rank = zipf_rank(rng.random(), items)
        pos = rank * SCATTER % items if items & (items - 1) == 0 else rank
        yield [1], [1], [], []  # r1 = next random number
        yield [2], [1], [], []  # r2 = hash(r1)
        yield [3], [2], [], [_array(0) + pos * 64]  # r3 = table[r2]
        yield [4], [4, 3], [], []  # r4 += r3


def _random_update(footprint: int, rng: random.Random) -> Iterator[Rec]:
    entries = max(footprint // 8, 1)
    table, index = _array(0), _array(1)
    i = 0
    while True:
        idx = rng.randrange(entries)
        yield [2], [1], [], [index + i * 4]  # r2 = idx[r1]
        yield [3], [2], [], [table + idx * 8]  # r3 = a[r2]
        yield [3], [3], [], []  # r3 += v
        yield [], [2, 3], [table + idx * 8], []  # a[r2] = r3
        yield [1], [1], [], []  # r1++
        i += 1


def _chase_with_loads(footprint: int, rng: random.Random) -> Iterator[Rec]:
    nodes = max(footprint // 128, 2)
    chain, other = _array(0), _array(1)
    cur = 0
    while True:
        yield [1], [1], [], [chain + cur * 64]  # r1 = r1->next
        yield [9], [9], [], []  # r9 = next random index
        yield [5], [9], [], [other + rng.randrange(nodes) * 64]  # r5 = b[r9]
        yield [6], [9], [], [other + rng.randrange(nodes) * 64]  # r6 = b[r9 >> 32]
        yield [7], [7, 5, 6], [], []  # r7 += r5 + r6
        cur = rng.randrange(nodes)


LOOP_BODY = {
    "gups": 5,
    "stream": 5,
    "pointer_chase": 2,
    "graph": 4 + 3 * 8,
    "hash": 5,
    "random_chase": 2,
    "page_stride": 3,
    "zipf": 4,
    "random_update": 5,
    "chase_with_loads": 5,
}
"""Records per iteration of each pattern's loop (the period of its instruction pointers)."""

PATTERNS = {
    "gups": _gups,
    "stream": _stream,
    "pointer_chase": _pointer_chase,
    "graph": _graph,
    "hash": _hash,
    "random_chase": _random_chase,
    "page_stride": _page_stride,
    "zipf": _zipf,
    "random_update": _random_update,
    "chase_with_loads": _chase_with_loads,
}


def touched_pages(pattern: str, records: int, footprint: int, seed: int) -> list[int]:
    """The 4 KiB pages the first ``records`` records of ``pattern`` touch, in address order.

    Examples
    --------
    >>> touched_pages("stream", records=10, footprint=1 << 20, seed=1) == [
    ...     _array(i) >> 12 for i in range(3)]
    True
    """
    gen = PATTERNS[pattern](footprint, random.Random(seed))
    pages: set[int] = set()
    for _ in range(records):
        _, _, stores, loads = next(gen)
        pages.update(a >> 12 for a in stores + loads)
    return sorted(pages)


def write_trace(
    out: BinaryIO, pattern: str, records: int, footprint: int, seed: int, prologue: bool = False
) -> int:
    """Write ``records`` ChampSim records of ``pattern`` to ``out``.

    Parameters
    ----------
    out : binary file
        Destination (plain bytes; wrap it in ``lzma.open`` for ``.xz``).
    pattern : str
        One of ``PATTERNS``.
    records : int
        Instructions to write.
    footprint : int
        Bytes of the pattern's data structures.
    seed : int
        Seed of the random choices.
    prologue : bool
        Precede the pattern with one store to every page it touches, in address order (an
        initialization loop), so that a simulation can warm up over it: with the prologue as
        warm-up, the measured part takes no page faults and starts with warm page tables.

    Returns
    -------
    int
        Records written before the pattern (the prologue's length; 0 without one). The
        pattern's ``records`` follow.

    Examples
    --------
    >>> import io
    >>> write_trace(io.BytesIO(), "gups", records=10, footprint=1 << 20, seed=1)
    0
    >>> buf = io.BytesIO()
    >>> write_trace(buf, "gups", records=10, footprint=1 << 20, seed=1, prologue=True)
    2
    >>> len(buf.getvalue()) // RECORD.size
    12
    """
    if pattern not in PATTERNS:
        raise ValueError(f"unknown pattern {pattern!r}; patterns: {', '.join(PATTERNS)}")
    if records < 1 or footprint < 4096:
        raise ValueError("records must be >= 1 and footprint >= 4096 bytes")
    first = 0
    if prologue:
        # r8 holds the page address; no record depends on these stores. The instruction pointers
        # sit apart from the pattern's loop.
        for page in touched_pages(pattern, records, footprint, seed):
            out.write(RECORD.pack(IP0 - 64, 0, 0, 0, 0, 8, 0, 0, 0, page << 12, 0, 0, 0, 0, 0))
            first += 1
    rng = random.Random(seed)
    gen = PATTERNS[pattern](footprint, rng)
    period = LOOP_BODY[pattern]
    for n in range(records):
        ip = IP0 + 4 * (n % period)
        dst, src, stores, loads = next(gen)
        dst_r = (dst + [0, 0])[:2]
        src_r = (src + [0, 0, 0, 0])[:4]
        st = (stores + [0, 0])[:2]
        ld = (loads + [0, 0, 0, 0])[:4]
        out.write(RECORD.pack(ip, 0, 0, *dst_r, *src_r, *st, *ld))
    return first


def main(argv: list[str] | None = None) -> int:
    """Command line: ``champsim_trace_writer.py --pattern gups --out gups.champsim.xz``."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pattern", required=True, choices=sorted(PATTERNS))
    p.add_argument("--out", required=True, help="output file; .xz compresses")
    p.add_argument("--records", type=int, default=2_000_000, help="instructions (2M)")
    p.add_argument("--footprint", type=int, default=256 << 20, help="bytes (256 MiB)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--prologue",
        action="store_true",
        help="precede the pattern with one store to each page it touches (a warm-up part)",
    )
    a = p.parse_args(argv)
    try:
        opener = lzma.open if a.out.endswith(".xz") else open
        with opener(a.out, "wb") as f:
            first = write_trace(f, a.pattern, a.records, a.footprint, a.seed, a.prologue)
    except (OSError, ValueError) as e:
        print(f"champsim_trace_writer: {a.out}: {e}", file=sys.stderr)
        return 1
    head = f"{first} prologue records, then " if a.prologue else ""
    print(f"{a.out}: {head}{a.records} records ({a.pattern}, footprint {a.footprint} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
