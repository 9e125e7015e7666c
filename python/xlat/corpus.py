"""``xlat corpus``: the papers' workloads as real programs, recorded as native traces.

Each program of :data:`PROGRAMS` is a real implementation of a workload the papers evaluate:
a Debian package (``sqlite3``, ``redis-server``, ``jellyfish``), the Python interpreter, or a
short C program of the textbook kernel shipped in the package (``xlat/data/corpus/*.c``: GUPS,
graph BFS / PageRank / connected components over CSR, an XSBench-like lookup kernel, DLRM's
SparseLengthsSum, a no-partitioning hash join), compiled with ``gcc -O2`` into the user's cache
folder. For each, the command

1. checks what the program needs (its executables on ``PATH``, valgrind to record, gcc for the C
   kernels) and, with ``--install``, installs what is missing (``apt-get`` as root; ``pip`` into
   the running interpreter's environment), else names the one command to run;
2. builds its inputs deterministically from ``--seed`` (:func:`build_inputs`: RMAT graphs, reads
   drawn from a random genome, Zipf-skewed embedding lookups, key-value loads, an SQLite
   database) sized so that the program's footprint reaches ``--scale`` (a size such as
   ``1GiB``; the test-size default is ``1MiB``);
3. runs the program under the recorder (:func:`xlat.record.record`; a server is started under it,
   driven by its client, and stopped), and writes ``NAME.xlat``, its ``xlat trace info`` summary
   ``NAME.txt`` and ``NAME.json`` (what was run, from which inputs, and the recording's figures).

``xlat corpus measure`` runs the same command natively (no valgrind) and reports its peak RSS:
how a ``--scale`` is checked at sizes too large to record here.

Contract: the inputs of (program, scale, seed) are byte-identical on every run with the same
numpy version (``numpy.random.PCG64``); the C kernels and the servers draw nothing at random
beyond their seed argument. Footprints are estimates before the run (``estimate_bytes``), and
measured by ``measure`` and by the trace's summary.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from xlat._data import cache_dir, data_dir

#: The C kernels' sources.
SOURCE_DIR = data_dir() / "corpus"
#: The scale of ``xlat corpus record`` without ``--scale``: the test size.
DEFAULT_SCALE = "1MiB"
#: Where ``xlat corpus record`` writes without ``--out`` (and where ``xlat reproduce --workloads
#: real`` looks without ``--corpus-dir``).
DEFAULT_OUT = "corpus"
#: Port of the servers started under the recorder (bound to 127.0.0.1 only).
PORT = 16379


class CorpusError(Exception):
    """A program cannot be recorded (a missing dependency, a bad name); exit code 2."""


@dataclass(frozen=True)
class Need:
    """An executable a program needs, and where it comes from (a Debian or a pip package)."""

    command: str
    apt: str | None = None
    pip: str | None = None


@dataclass
class Plan:
    """What to run for one program: its command, and for a server the client that drives it."""

    command: list[str]
    params: dict
    inputs: list[Path] = field(default_factory=list)
    #: A server: the client commands run once it listens on :data:`PORT`, then the stop command.
    driver: list[list[str]] | None = None
    stop: list[str] | None = None


@dataclass(frozen=True)
class Program:
    """One program of the corpus (see :data:`PROGRAMS`)."""

    name: str
    stands_for: str
    what: str
    inputs: str
    needs: tuple[Need, ...]
    source: str | None
    plan: Callable[[Path, int, int], Plan]
    #: Bytes of footprint the parameters chosen for a scale should reach (before the run).
    estimate: Callable[[int], int]
    papers: str


GCC = Need("gcc", apt="gcc")
VALGRIND = Need("valgrind", apt="valgrind")


def _rng(seed: int, stream: int):
    import numpy as np

    return np.random.Generator(np.random.PCG64([seed, stream]))


def _ceil_log2(x: float) -> int:
    """The smallest k with 2^k >= x (0 for x <= 1).

    Examples
    --------
    >>> _ceil_log2(1), _ceil_log2(1024), _ceil_log2(1025)
    (0, 10, 11)
    """
    return max(0, math.ceil(math.log2(x))) if x > 1 else 0


def binary(name: str) -> str:
    """The compiled C kernel ``name`` (built from :data:`SOURCE_DIR` into the cache folder with
    ``gcc -O2`` on first use; the folder's name hashes the source and gcc's version)."""
    src = SOURCE_DIR / f"{name}.c"
    gcc = subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout
    key = hashlib.sha256(src.read_bytes() + gcc.encode()).hexdigest()[:12]
    out = cache_dir() / f"corpus-{name}-{key}" / name
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        proc = subprocess.run(
            ["gcc", "-O2", "-o", str(tmp), str(src)], capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise CorpusError(f"cannot compile {src}: {proc.stderr.strip()}")
        tmp.replace(out)
    return str(out)


# --- the programs: parameters for a scale, and their inputs ---------------------------------


def gups_params(scale: int) -> dict:
    """HPCC RandomAccess: a table of 2^logn u64 at least ``scale`` bytes, 4 updates per entry.

    Examples
    --------
    >>> gups_params(1 << 30)
    {'logn': 27, 'updates': 536870912}
    """
    logn = max(10, _ceil_log2(scale / 8))
    return {"logn": logn, "updates": 4 << logn}


def _gups(work: Path, scale: int, seed: int) -> Plan:
    p = gups_params(scale)
    return Plan([binary("gups"), str(p["logn"]), str(p["updates"])], p)


#: Bytes per vertex of the graph programs: the edge list (16 edges of 8 B), the symmetric CSR's
#: neighbours (32 of 4 B), offsets, the build's cursor and the kernel's arrays (8 + 8 + 8).
GRAPH_BYTES_PER_VERTEX = 16 * 8 + 32 * 4 + 24
#: RMAT quadrant probabilities (Graph500's Kronecker generator: A, B, C; D = 0.05).
RMAT = (0.57, 0.19, 0.19)


def graph_params(scale: int) -> dict:
    """An RMAT graph of 2^s vertices and 16 edges per vertex (Graph500's edge factor) whose
    program footprint is at least ``scale``.

    Examples
    --------
    >>> graph_params(1 << 30)
    {'scale': 22, 'edge_factor': 16, 'vertices': 4194304, 'edges': 67108864}
    """
    s = max(8, _ceil_log2(scale / GRAPH_BYTES_PER_VERTEX))
    return {"scale": s, "edge_factor": 16, "vertices": 1 << s, "edges": 16 << s}


def write_rmat(path: Path, scale: int, edges: int, seed: int) -> None:
    """An RMAT edge list (u32 n, u32 0, u64 m, m pairs of u32) with Graph500's probabilities and
    vertex labels scrambled by a seeded permutation, written in blocks (bounded memory).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "g.el"
    >>> write_rmat(p, 4, 64, seed=1)
    >>> p.stat().st_size == 16 + 64 * 8
    True
    """
    import numpy as np

    n = 1 << scale
    rng = _rng(seed, 1)
    perm = rng.permutation(n).astype(np.uint32)
    a, b, c = RMAT
    with open(path, "wb") as f:
        f.write(np.array([n, 0], dtype=np.uint32).tobytes())
        f.write(np.array([edges], dtype=np.uint64).tobytes())
        block = 1 << 22
        for start in range(0, edges, block):
            k = min(block, edges - start)
            src = np.zeros(k, dtype=np.uint32)
            dst = np.zeros(k, dtype=np.uint32)
            for bit in range(scale):
                r = rng.random(k)
                src_bit = r >= a + b
                dst_bit = ((r >= a) & (r < a + b)) | (r >= a + b + c)
                src |= src_bit.astype(np.uint32) << bit
                dst |= dst_bit.astype(np.uint32) << bit
            pairs = np.empty(2 * k, dtype=np.uint32)
            pairs[0::2] = perm[src]
            pairs[1::2] = perm[dst]
            f.write(pairs.tobytes())


def _graph(kernel: str, extra: list[str]):
    def plan(work: Path, scale: int, seed: int) -> Plan:
        p = graph_params(scale)
        el = work / f"rmat-s{p['scale']}.el"
        write_rmat(el, p["scale"], p["edges"], seed)
        return Plan([binary("graph"), kernel, str(el), *extra], p, [el])

    return plan


#: XSBench's "small" problem: 68 nuclides; bytes per grid point per nuclide: 48 (the nuclide
#: grid) + 16 (the unionized grid entry) + 68 * 4 (its index-grid row).
XS_NUCLIDES = 68
XS_BYTES_PER_POINT = XS_NUCLIDES * (48 + 16 + XS_NUCLIDES * 4)


def xsbench_params(scale: int) -> dict:
    """Grid points per nuclide for ``scale`` bytes (68 nuclides), and one lookup per 64 bytes
    (16.8 M at 1 GiB, about XSBench's default of 17 M: the lookups, not the set-up, are most of
    the references, as in XSBench).

    Examples
    --------
    >>> xsbench_params(1 << 30)
    {'nuclides': 68, 'gridpoints': 46996, 'lookups': 16777216}
    """
    g = max(20, math.ceil(scale / XS_BYTES_PER_POINT))
    return {"nuclides": XS_NUCLIDES, "gridpoints": g, "lookups": max(1000, scale // 64)}


def _xsbench(work: Path, scale: int, seed: int) -> Plan:
    p = xsbench_params(scale)
    cmd = [binary("xsbench"), str(p["nuclides"]), str(p["gridpoints"]), str(p["lookups"])]
    return Plan([*cmd, str(seed)], p)


def hashjoin_params(scale: int) -> dict:
    """|R| = |S| tuples for ``scale`` bytes: 16 B per tuple in each relation and 24 B of buckets
    (48 B per two tuples).

    Examples
    --------
    >>> hashjoin_params(1 << 30)
    {'tuples': 19173962}
    """
    return {"tuples": max(1024, math.ceil(scale / 56))}


def _hashjoin(work: Path, scale: int, seed: int) -> Plan:
    p = hashjoin_params(scale)
    return Plan([binary("hashjoin"), str(p["tuples"]), str(seed)], p)


#: DLRM's embedding tables as `dlrm` models them: 8 tables of 64 fp32 per row, 32 lookups per
#: bag; popularity Zipf with this exponent over a random order of the rows.
SLS_TABLES, SLS_DIM, SLS_POOLING, SLS_ZIPF = 8, 64, 32, 1.05


def sls_params(scale: int) -> dict:
    """Rows per table for ``scale`` bytes of tables; as many lookups as rows (one bag of 32 per
    32 rows of each table).

    Examples
    --------
    >>> sls_params(1 << 30)["rows"], sls_params(1 << 30)["bags"]
    (524288, 16384)
    """
    rows = max(256, math.ceil(scale / (SLS_TABLES * SLS_DIM * 4)))
    return {
        "tables": SLS_TABLES,
        "rows": rows,
        "dim": SLS_DIM,
        "pooling": SLS_POOLING,
        "bags": max(8, rows // SLS_POOLING),
        "zipf": SLS_ZIPF,
    }


def zipf_indices(rng, rows: int, count: int, exponent: float):
    """``count`` row indices in ``0..rows`` with Zipf popularity (rank k has weight
    1/k^exponent), the ranks scattered over the rows by a random permutation.

    Examples
    --------
    >>> import numpy as np
    >>> ix = zipf_indices(np.random.default_rng(1), 1000, 10000, 1.05)
    >>> int(ix.min()) >= 0 and int(ix.max()) < 1000, len(set(ix.tolist())) < 1000
    (True, True)
    """
    import numpy as np

    weights = 1.0 / np.arange(1, rows + 1, dtype=np.float64) ** exponent
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    ranks = np.minimum(np.searchsorted(cdf, rng.random(count)), rows - 1)
    return rng.permutation(rows).astype(np.uint32)[ranks]


def _sls(work: Path, scale: int, seed: int) -> Plan:
    import numpy as np

    p = sls_params(scale)
    path = work / "sls-indices.bin"
    rng = _rng(seed, 2)
    with open(path, "wb") as f:
        head = [p["tables"], p["rows"], p["dim"], p["pooling"], p["bags"]]
        f.write(np.array(head, dtype=np.uint32).tobytes())
        for _ in range(p["tables"]):
            count = p["bags"] * p["pooling"]
            f.write(zipf_indices(rng, p["rows"], count, p["zipf"]).tobytes())
    return Plan([binary("sls"), str(path)], p, [path])


#: Bytes per row of the SQLite table (a 100-character text, the integer columns, the record
#: header and the b-tree cell) and per entry of its index on ``k``: 140 gave 0.99 GiB of peak
#: RSS for 1 GiB (7.67 M rows: 139 B per row), so fewer are assumed, to reach the scale.
SQLITE_ROW_BYTES = 128


def sqlite_params(scale: int) -> dict:
    """Rows of ``t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT)``; the query table ``q`` holds
    half as many keys, looked up through the rowid b-tree.

    Examples
    --------
    >>> sqlite_params(1 << 30)
    {'rows': 8388608, 'lookups': 4194304}
    """
    rows = max(1000, math.ceil(scale / SQLITE_ROW_BYTES))
    return {"rows": rows, "lookups": rows // 2}


def _sqlite(work: Path, scale: int, seed: int) -> Plan:
    import sqlite3

    p = sqlite_params(scale)
    db = work / "corpus.sqlite"
    db.unlink(missing_ok=True)
    rng = _rng(seed, 3)
    con = sqlite3.connect(db)
    con.executescript(
        "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
        "CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT);"
        "CREATE TABLE q(k INTEGER);"
    )
    block = 1 << 16
    letters = "abcdefghijklmnopqrstuvwxyz0123456789"
    for start in range(0, p["rows"], block):
        k = min(block, p["rows"] - start)
        ks = rng.integers(0, 1000, size=k).tolist()
        chars = rng.integers(0, len(letters), size=(k, 100))
        vs = ["".join(letters[c] for c in row) for row in chars.tolist()]
        con.executemany("INSERT INTO t VALUES (?, ?, ?)", zip(range(start, start + k), ks, vs))
    keys = rng.integers(0, p["rows"], size=p["lookups"]).tolist()
    con.executemany("INSERT INTO q VALUES (?)", ((x,) for x in keys))
    con.executescript("CREATE INDEX tk ON t(k);")
    con.commit()
    con.close()
    cache_kib = db.stat().st_size // 1024 + 1024
    sql = (
        f"PRAGMA cache_size=-{cache_kib};"
        "SELECT count(*), sum(length(v)) FROM t;"
        "SELECT count(*), sum(length(t.v)) FROM q JOIN t ON t.id = q.k;"
        "SELECT k, count(*), max(v) FROM t GROUP BY k ORDER BY 2 DESC LIMIT 5;"
    )
    return Plan(["sqlite3", str(db), sql], {**p, "cache_kib": cache_kib}, [db])


#: Bytes per key of the Redis load: a 1000-byte value (YCSB's 10 fields of 100 B) in jemalloc's
#: 1 KiB class, the key, the dict entry and the object headers.
REDIS_VALUE_BYTES = 1000
REDIS_KEY_BYTES = 1150


def redis_params(scale: int) -> dict:
    """Keys loaded (SET) and then read (GET, YCSB's zipfian constant 0.99).

    Examples
    --------
    >>> redis_params(1 << 30)
    {'keys': 933689, 'gets': 933689, 'value_bytes': 1000, 'zipf': 0.99}
    """
    keys = max(256, math.ceil(scale / REDIS_KEY_BYTES))
    return {"keys": keys, "gets": keys, "value_bytes": REDIS_VALUE_BYTES, "zipf": 0.99}


def _resp(*args: bytes) -> bytes:
    """One command in Redis's protocol.

    Examples
    --------
    >>> _resp(b"GET", b"k1")
    b'*2\\r\\n$3\\r\\nGET\\r\\n$2\\r\\nk1\\r\\n'
    """
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


#: The Redis load's client: sends the file's commands pipelined (one thread) while reading and
#: counting the replies (``redis-cli --pipe`` took over 14 minutes on a 1 GiB load whose GETs
#: return 1000-byte values; this client is not recorded, only the server is).
PIPE_CLIENT = """
import socket, sys, threading
port, path, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port))
def send():
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            s.sendall(block)
t = threading.Thread(target=send, daemon=True)
t.start()
buf, pos, n = b"", 0, 0
while n < count:
    data = s.recv(1 << 20)
    if not data:
        sys.exit(f"the server closed the connection after {n} of {count} replies")
    buf, pos = buf[pos:] + data, 0
    while n < count:
        end = buf.find(b"\\r\\n", pos)
        if end < 0:
            break
        kind = buf[pos : pos + 1]
        if kind == b"-":
            sys.exit(buf[pos:end].decode())
        if kind == b"$" and int(buf[pos + 1 : end]) >= 0:
            stop = end + 2 + int(buf[pos + 1 : end]) + 2
            if len(buf) < stop:
                break
            pos = stop
        else:
            pos = end + 2
        n += 1
t.join()
print(n, "replies")
"""


def _redis(work: Path, scale: int, seed: int) -> Plan:
    p = redis_params(scale)
    rng = _rng(seed, 4)
    path = work / "redis-load.resp"
    with open(path, "wb") as f:
        for i in range(p["keys"]):
            value = rng.integers(97, 123, size=p["value_bytes"], dtype="uint8").tobytes()
            f.write(_resp(b"SET", b"key:%010d" % i, value))
        for i in zipf_indices(rng, p["keys"], p["gets"], p["zipf"]).tolist():
            f.write(_resp(b"GET", b"key:%010d" % i))
    server = [
        "redis-server", "--port", str(PORT), "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "no", "--daemonize", "no", "--maxmemory", "0",
    ]  # fmt: skip
    count = p["keys"] + p["gets"]
    pipe = [sys.executable, "-c", PIPE_CLIENT, str(PORT), str(path), str(count)]
    stop = ["redis-cli", "-p", str(PORT), "shutdown", "nosave"]
    return Plan(server, p, [path], driver=[pipe], stop=stop)


#: jellyfish's memory per hash entry for k = 31 (``jellyfish mem -m 31``: 6.5-7.4 B).
JELLYFISH_ENTRY_BYTES = 6.5


def jellyfish_params(scale: int) -> dict:
    """A hash of 2^h entries (at least ``scale`` bytes), a genome of a quarter as many bases,
    reads of 100 bases covering it twice with 1 % substitutions (about 0.4 distinct 31-mers per
    entry).

    Examples
    --------
    >>> jellyfish_params(1 << 30)
    {'k': 31, 'hash_entries': 268435456, 'genome': 67108864, 'reads': 1342177}
    """
    h = max(12, _ceil_log2(scale / JELLYFISH_ENTRY_BYTES))
    genome = (1 << h) // 4
    return {"k": 31, "hash_entries": 1 << h, "genome": genome, "reads": 2 * genome // 100}


def _jellyfish(work: Path, scale: int, seed: int) -> Plan:
    import numpy as np

    p = jellyfish_params(scale)
    rng = _rng(seed, 5)
    acgt = np.frombuffer(b"ACGT", dtype=np.uint8)
    genome = acgt[rng.integers(0, 4, size=p["genome"] + 100)]
    path = work / "reads.fa"
    with open(path, "wb") as f:
        block = 1 << 14
        for start in range(0, p["reads"], block):
            k = min(block, p["reads"] - start)
            starts = rng.integers(0, p["genome"], size=k)
            reads = genome[starts[:, None] + np.arange(100)]
            errors = rng.random(reads.shape) < 0.01
            reads[errors] = acgt[rng.integers(0, 4, size=int(errors.sum()))]
            for i, read in enumerate(reads):
                f.write(b">r%d\n%s\n" % (start + i, read.tobytes()))
    out = work / "mers.jf"
    cmd = ["jellyfish", "count", "-m", "31", "-s", str(p["hash_entries"]), "-t", "1", "-C"]
    return Plan([*cmd, "-o", str(out), str(path)], p, [path])


#: Bytes per entry of ``{i: str(i)}`` in CPython 3.11 (measured: 143 MB of peak RSS for 10^6).
PYDICT_ENTRY_BYTES = 135


def pydict_params(scale: int) -> dict:
    """Entries of the dictionary.

    Examples
    --------
    >>> pydict_params(1 << 30)
    {'entries': 7953644}
    """
    return {"entries": max(1000, math.ceil(scale / PYDICT_ENTRY_BYTES))}


def python3() -> str:
    """The system's Python (Debian's ``/usr/bin/python3``) when there is one: a ``python3`` on
    ``PATH`` may be a shell shim (pyenv) that the recording would follow into."""
    return "/usr/bin/python3" if Path("/usr/bin/python3").exists() else "python3"


def _pydict(work: Path, scale: int, seed: int) -> Plan:
    p = pydict_params(scale)
    code = f"d = {{i: str(i) for i in range({p['entries']})}}; print(len(d))"
    return Plan([python3(), "-S", "-c", code], p)


PROGRAMS: dict[str, Program] = {
    p.name: p
    for p in [
        Program(
            "gups", "gups", "HPCC RandomAccess in C (xlat/data/corpus/gups.c)",
            "none: HPCC's shift-register update stream",
            (GCC,), "gups", _gups, lambda s: 8 << gups_params(s)["logn"],
            "--scale 64GiB (a 2^33-entry table)",
        ),
        Program(
            "bfs", "bfs", "top-down BFS over CSR in C (graph.c bfs, 4 roots)",
            "RMAT edge list (Graph500 A,B,C = .57,.19,.19), edge factor 16",
            (GCC,), "graph", _graph("bfs", ["4"]),
            lambda s: GRAPH_BYTES_PER_VERTEX * graph_params(s)["vertices"],
            "--scale 64GiB (RMAT scale 28: a 32 GiB edge list on disk)",
        ),
        Program(
            "pagerank", "pagerank", "pull PageRank over CSR in C (graph.c pr, 10 iterations)",
            "RMAT edge list, edge factor 16", (GCC,), "graph", _graph("pr", ["10"]),
            lambda s: GRAPH_BYTES_PER_VERTEX * graph_params(s)["vertices"],
            "--scale 64GiB (RMAT scale 28)",
        ),
        Program(
            "cc", "cc", "Shiloach-Vishkin connected components over CSR in C (graph.c cc)",
            "RMAT edge list, edge factor 16", (GCC,), "graph", _graph("cc", []),
            lambda s: GRAPH_BYTES_PER_VERTEX * graph_params(s)["vertices"],
            "--scale 64GiB (RMAT scale 28)",
        ),
        Program(
            "xsbench", "xsbench", "XSBench-like unionized-grid lookups in C (xsbench.c)",
            "in the program from --seed: 68 nuclides' grids, 12 materials",
            (GCC,), "xsbench", _xsbench,
            lambda s: XS_BYTES_PER_POINT * xsbench_params(s)["gridpoints"],
            "--scale 5.6GiB (XSBench 'large' has 355 nuclides x 11303 points: 5.6 GB)",
        ),
        Program(
            "dlrm", "dlrm", "DLRM SparseLengthsSum in C (sls.c: 8 tables, 64 fp32 rows)",
            "Zipf(1.05)-skewed row indices, 32 per bag",
            (GCC,), "sls", _sls,
            lambda s: SLS_TABLES * SLS_DIM * 4 * sls_params(s)["rows"],
            "--scale 64GiB (8 tables of 32 M rows)",
        ),
        Program(
            "hashjoin", "hashjoin", "no-partitioning hash join in C (hashjoin.c)",
            "in the program from --seed: shuffled dense keys, foreign keys",
            (GCC,), "hashjoin", _hashjoin,
            lambda s: 56 * hashjoin_params(s)["tuples"],
            "--scale 64GiB (|R| = |S| = 1.2 G tuples)",
        ),
        Program(
            "sqlite", "btree", "SQLite 3 (Debian sqlite3): scan, rowid b-tree join, GROUP BY",
            "a database of 100-character rows and a table of uniform lookup keys",
            (Need("sqlite3", apt="sqlite3"),), None, _sqlite,
            lambda s: SQLITE_ROW_BYTES * sqlite_params(s)["rows"],
            "--scale 64GiB (537 M rows; building the database takes hours in Python)",
        ),
        Program(
            "redis", "kv / memcached", "Redis 7 (Debian redis-server) fed a pipelined load",
            "SET of every key (1000-byte values), then zipfian (0.99) GETs",
            (Need("redis-server", apt="redis-server"), Need("redis-cli", apt="redis-tools")),
            None, _redis, lambda s: REDIS_KEY_BYTES * redis_params(s)["keys"],
            "--scale 64GiB (60 M keys; the load file is as large)",
        ),
        Program(
            "jellyfish", "kmer", "jellyfish 2 count -m 31 (Debian jellyfish), one thread",
            "100-base reads, coverage 2, 1 % errors, from a random genome",
            (Need("jellyfish", apt="jellyfish"),), None, _jellyfish,
            lambda s: int(JELLYFISH_ENTRY_BYTES * jellyfish_params(s)["hash_entries"]),
            "--scale 64GiB (a 2^34-entry hash)",
        ),
        Program(
            "python-dict", "(none: an interpreter's heap)", "CPython building {i: str(i)}",
            "none", (Need("python3", apt="python3"),), None, _pydict,
            lambda s: PYDICT_ENTRY_BYTES * pydict_params(s)["entries"],
            "--scale 64GiB (500 M entries)",
        ),
    ]
}  # fmt: skip


@dataclass(frozen=True)
class Counterpart:
    """Which built-in generator a recorded program stands in for in ``xlat reproduce
    --workloads real`` (:data:`COUNTERPARTS`): ``generator`` None when none truly models it,
    ``why`` the reason either way."""

    program: str
    generator: str | None
    why: str


#: One row per program of :data:`PROGRAMS`: the built-in generator whose place its recording
#: takes when ``xlat reproduce --workloads real`` runs an experiment on the recorded programs
#: (issue 39, item 4). A pairing holds only where the generator models the program's own kernel
#: over the same data structures (docs/workloads.md, "The workloads"); ``Program.stands_for``
#: says what the program was written for, this table what it may replace. The differences that
#: remain are the generators' documented approximations (docs/workloads.md, "Approximations" and
#: "Generators set against the programs").
COUNTERPARTS: dict[str, Counterpart] = {
    c.program: c
    for c in [
        Counterpart(
            "gups", "gups",
            "both are HPCC RandomAccess: one table of u64, a read-modify-write of a random entry "
            "per update (the program's stream is HPCC's shift register, the generator's a hash)",
        ),
        Counterpart(
            "bfs", "bfs",
            "both are top-down BFS over a CSR of an RMAT graph (Graph500's A, B, C, edge factor "
            "16): offsets, neighbours, a parent array and a queue; the program also builds its "
            "CSR from the edge list first",
        ),
        Counterpart(
            "pagerank", "pagerank",
            "both are pull PageRank (GAP pr) over a CSR of an RMAT graph: per vertex its "
            "in-neighbours' contributions, then a contribution pass",
        ),
        Counterpart(
            "cc", "cc",
            "both sweep a CSR of an RMAT graph reading each neighbour's component label (a "
            "dependent load into a u32 array per vertex) until no label changes; the program "
            "hooks and pointer-jumps (Shiloach-Vishkin, GAP cc_sv) where the generator "
            "propagates labels, one more dependent label load per edge",
        ),
        Counterpart(
            "xsbench", "xsbench",
            "both are XSBench's event-based lookups on the small problem's 68 nuclides: a "
            "binary search of the unionized grid, then per nuclide of the material the "
            "index-grid and the nuclide-grid loads",
        ),
        Counterpart(
            "dlrm", "dlrm",
            "both are DLRM's SparseLengthsSum: 8 tables of 64-fp32 rows, bags of 32 lookups "
            "summed (the program's indices are Zipf-skewed, the generator's uniform)",
        ),
        Counterpart(
            "hashjoin", "hashjoin",
            "both are the no-partitioning hash join of Balkesen et al. (ICDE 2013): R and S of "
            "16-byte tuples, |R|/2 buckets of 48 B, build on R, probe with S",
        ),
        Counterpart(
            "sqlite", None,
            "the btree generator is point lookups in a bulk-loaded B+tree of u64 keys; most of "
            "SQLite's references here are a full table scan and a GROUP BY over an index, "
            "through its page cache: not the generator's kernel",
        ),
        Counterpart(
            "redis", None,
            "kv models a linear-probing index of 64-byte items and memcached a slab store with "
            "LRU links; Redis is a chained dict of 1000-byte values loaded by SETs and, at 1 GiB, "
            "mostly the reply buffers of pipelined GETs: neither generator's structure",
        ),
        Counterpart(
            "jellyfish", "kmer",
            "the generator models jellyfish-like k-mer counting (GenomicsBench kmer-cnt, k = "
            "31): reads streamed into a hash of probed buckets; the program's genome is random "
            "as the generator assumes, its hash entries are packed (6.5 B, not 16 B)",
        ),
        Counterpart(
            "python-dict", None, "an interpreter's heap: it stands for no paper workload"
        ),
    ]
}  # fmt: skip


def counterpart_of(generator: str) -> str | None:
    """The program whose recording stands for built-in ``generator`` (:data:`COUNTERPARTS`),
    None when no program truly models it.

    Examples
    --------
    >>> counterpart_of("gups"), counterpart_of("kmer"), counterpart_of("btree")
    ('gups', 'jellyfish', None)
    """
    return next((c.program for c in COUNTERPARTS.values() if c.generator == generator), None)


def program(name: str) -> Program:
    """The program called ``name``; CorpusError naming the known ones otherwise.

    Examples
    --------
    >>> program("gups").stands_for
    'gups'
    >>> program("nope")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    xlat.corpus.CorpusError: unknown corpus program 'nope' (known: gups, bfs, ...)
    """
    if name not in PROGRAMS:
        raise CorpusError(f"unknown corpus program '{name}' (known: {', '.join(PROGRAMS)})")
    return PROGRAMS[name]


def needs_of(p: Program, recording: bool = True) -> list[Need]:
    """What ``p`` needs: its executables, gcc for a C kernel, valgrind to record.

    Examples
    --------
    >>> [n.command for n in needs_of(program("redis"))]
    ['redis-server', 'redis-cli', 'valgrind']
    >>> [n.command for n in needs_of(program("gups"), recording=False)]
    ['gcc']
    """
    needs = list(p.needs)
    return needs + [VALGRIND] if recording else needs


def missing(needs: list[Need]) -> list[Need]:
    """The needs whose command is not on ``PATH`` (each named once)."""
    seen: dict[str, Need] = {}
    for n in needs:
        if n.command not in seen and shutil.which(n.command) is None:
            seen[n.command] = n
    return list(seen.values())


def install_command(needs: list[Need]) -> list[list[str]]:
    """The commands that install ``needs``: one ``apt-get install`` of the Debian packages, one
    ``pip install`` (into this interpreter's environment) of the pip packages.

    Examples
    --------
    >>> cmds = install_command([Need("jellyfish", apt="jellyfish"), VALGRIND])
    >>> cmds
    [['apt-get', 'install', '-y', 'jellyfish', 'valgrind']]
    """
    apt = sorted({n.apt for n in needs if n.apt})
    pip = sorted({n.pip for n in needs if n.pip and not n.apt})
    cmds = []
    if apt:
        cmds.append(["apt-get", "install", "-y", *apt])
    if pip:
        cmds.append([sys.executable, "-m", "pip", "install", *pip])
    return cmds


def ensure(needs: list[Need], install: bool) -> None:
    """Return when every need is met; with ``install``, install the missing ones first (apt-get
    needs root); CorpusError naming what is missing and the one command to run otherwise."""
    lack = missing(needs)
    if not lack:
        return
    cmds = install_command(lack)
    text = " && ".join(" ".join(c) for c in cmds)
    what = ", ".join(
        f"{n.command} (" + (f"Debian package {n.apt}" if n.apt else f"pip package {n.pip}") + ")"
        for n in lack
    )
    if not install:
        raise CorpusError(f"missing {what}: run `{text}` (as root), or rerun with --install")
    if any(c[0] == "apt-get" for c in cmds) and os.geteuid() != 0:
        raise CorpusError(f"missing {what}: --install needs root for apt-get: run `sudo {text}`")
    for c in cmds:
        print(f"xlat corpus: installing: {' '.join(c)}", file=sys.stderr)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        if subprocess.run(c, env=env).returncode != 0:
            raise CorpusError(f"`{' '.join(c)}` failed")
    still = missing(lack)
    if still:
        raise CorpusError(f"still missing after installing: {', '.join(n.command for n in still)}")


def build_inputs(name: str, scale: int | str, seed: int, work: Path) -> Plan:
    """Write the inputs of ``name`` at ``scale`` (bytes, or a size such as ``"1MiB"``) from
    ``seed`` into ``work``; the plan of the run (command, parameters, input files).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> plan = build_inputs("bfs", "1MiB", 1, pathlib.Path(tempfile.mkdtemp()))
    >>> plan.params["scale"], [p.name for p in plan.inputs], plan.command[1]
    (12, ['rmat-s12.el'], 'bfs')
    """
    from xlat.values import parse_size

    size = parse_size(scale) if isinstance(scale, str) else int(scale)
    work.mkdir(parents=True, exist_ok=True)
    return program(name).plan(work, size, seed)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _wait_port(port: int, seconds: float = 1800.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.1)
    return False


def _drive(plan: Plan, errors: list[str], server_alive: Callable[[], bool]) -> None:
    """Run a server's client commands once it listens, then stop it (in a thread)."""
    try:
        if not _wait_port(PORT):
            errors.append(f"the server never listened on 127.0.0.1:{PORT}")
        else:
            for cmd in plan.driver or []:
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0:
                    errors.append(f"`{' '.join(cmd)}` failed: {proc.stderr.strip()}")
                    break
    finally:
        # Until the server has gone: a stop sent while it starts (slowly, under valgrind with a
        # slow converter) is lost, and a server left running is recorded forever.
        while plan.stop and server_alive() and not port_free():
            subprocess.run(plan.stop, capture_output=True)
            time.sleep(1.0)


def port_free(port: int = PORT) -> bool:
    """Whether nothing listens on 127.0.0.1:``port`` (a server of ours must bind it)."""
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) != 0


def record_one(
    name: str,
    scale: int | str,
    seed: int,
    out: Path,
    zstd_level: int = 1,
    keep_inputs: bool = False,
    progress: bool = False,
) -> dict:
    """Build ``name``'s inputs, record it into ``out/NAME.xlat`` and write ``NAME.txt`` (its
    ``trace info``) and ``NAME.json`` (this function's result: program, scale, seed, parameters,
    command, inputs' sha256, recording figures, footprint)."""
    from xlat import _core, record, trace_cli
    from xlat.values import parse_size

    p = program(name)
    size = parse_size(scale) if isinstance(scale, str) else int(scale)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"xlat-corpus-{name}-", dir=out))
    trace = out / f"{name}.xlat"
    try:
        t0 = time.monotonic()
        plan = p.plan(work, size, seed)
        inputs_seconds = time.monotonic() - t0
        if plan.driver and not port_free():
            raise CorpusError(f"127.0.0.1:{PORT} is in use: {name} needs it (stop what holds it)")
        errors: list[str] = []
        driver = None
        if plan.driver:
            driver = threading.Thread(target=_drive, args=(plan, errors, lambda: True))
            driver.start()
        try:
            with open(out / f"{name}.stdout", "wb") as stdout:
                s = record.record(
                    plan.command, str(trace), zstd_level=zstd_level, progress=progress,
                    stdout=stdout,
                )  # fmt: skip
        finally:
            if driver:
                driver.join()
        if errors:
            raise CorpusError(f"{name}: " + "; ".join(errors))
        if s["exit_status"] != 0:
            raise CorpusError(f"{name}: the program exited with status {s['exit_status']}")
        info = json.loads(_core.trace_stored_summary(str(trace), None) or "{}")
        info.setdefault("trace", {}).update(path=str(trace), format="native")
        info["trace"]["bytes"] = trace.stat().st_size
        (out / f"{name}.txt").write_text(trace_cli.format_info(info) + "\n")
        result = {
            "program": name,
            "stands_for": p.stands_for,
            "scale": size,
            "seed": seed,
            "params": plan.params,
            "command": plan.command,
            "driver": plan.driver,
            "inputs": {f.name: sha256_file(f) for f in plan.inputs},
            "inputs_seconds": round(inputs_seconds, 2),
            "record_seconds": round(s["seconds"], 2),
            "refs": s["refs"],
            "instructions": s["instructions"],
            "footprint_bytes": info.get("footprint_bytes"),
            "estimate_bytes": p.estimate(size),
            "trace_bytes": trace.stat().st_size,
        }
        (out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
        return result
    finally:
        if keep_inputs:
            dest = out / f"{name}.inputs"
            shutil.rmtree(dest, ignore_errors=True)
            work.rename(dest)
        else:
            shutil.rmtree(work, ignore_errors=True)


def measure_one(name: str, scale: int | str, seed: int, work_parent: Path | None = None) -> dict:
    """Run ``name`` natively (no recorder) at ``scale``: its peak RSS and time (how a scale is
    checked when recording it would take too long)."""
    from xlat.values import parse_size

    p = program(name)
    size = parse_size(scale) if isinstance(scale, str) else int(scale)
    work = Path(tempfile.mkdtemp(prefix=f"xlat-corpus-{name}-", dir=work_parent))
    try:
        plan = p.plan(work, size, seed)
        if plan.driver and not port_free():
            raise CorpusError(f"127.0.0.1:{PORT} is in use: {name} needs it")
        t0 = time.monotonic()
        proc = subprocess.Popen(plan.command, stdout=subprocess.DEVNULL)
        errors: list[str] = []
        driver = None
        if plan.driver:
            driver = threading.Thread(
                target=_drive, args=(plan, errors, lambda: proc.poll() is None)
            )
            driver.start()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if driver:
            driver.join()
        if errors or proc.returncode != 0:
            raise CorpusError(f"{name}: exit status {proc.returncode}; {'; '.join(errors)}")
        return {
            "program": name,
            "scale": size,
            "params": plan.params,
            "estimate_bytes": p.estimate(size),
            "peak_rss_bytes": usage.ru_maxrss * 1024,
            "seconds": round(time.monotonic() - t0, 2),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --- the command ------------------------------------------------------------------------------


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``xlat corpus`` (``list``, ``record``, ``measure``)."""
    p = sub.add_parser(
        "corpus",
        help="the papers' workloads as real programs: list, record (valgrind), measure",
        description="Real programs standing for the papers' workloads, recorded as native traces "
        "from seeded inputs (docs/workloads.md, 'Real programs').",
    )
    csub = p.add_subparsers(dest="corpus_command", required=True)
    lst = csub.add_parser("list", help="the programs, what each needs, and its inputs")
    lst.add_argument("--json", action="store_true", help="as JSON")
    for verb, text in (
        ("record", "build the inputs, record each program, write NAME.xlat/.txt/.json"),
        ("measure", "build the inputs and run each program natively: peak RSS and time"),
    ):
        r = csub.add_parser(verb, help=text, description=text)
        r.add_argument("names", nargs="+", metavar="NAME", help="programs (`xlat corpus list`)")
        r.add_argument(
            "--scale",
            default=DEFAULT_SCALE,
            help=f"footprint to reach, e.g. 64MiB, 1GiB (default {DEFAULT_SCALE}, the test size)",
        )
        r.add_argument("--seed", type=int, default=1, help="seed of the inputs (default 1)")
        r.add_argument(
            "--install",
            action="store_true",
            help="install what is missing (apt-get as root, pip into this environment)",
        )
        if verb == "record":
            r.add_argument(
                "--out", default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT}/)"
            )
            r.add_argument(
                "--zstd-level", type=int, default=1, help="zstd level of the trace (default 1)"
            )
            r.add_argument(
                "--keep-inputs", action="store_true", help="keep the inputs in OUT/NAME.inputs/"
            )
        r.add_argument("--json", action="store_true", help="print each result as JSON")


def list_rows() -> list[dict]:
    """One row per program for ``xlat corpus list``.

    Examples
    --------
    >>> rows = list_rows()
    >>> rows[0]["name"], rows[0]["installs"]
    ('gups', 'gcc')
    >>> len(rows) >= 8
    True
    """
    return [
        {
            "name": p.name,
            "stands_for": p.stands_for,
            "program": p.what,
            "installs": ", ".join(n.apt or f"pip:{n.pip}" for n in p.needs),
            "inputs": p.inputs,
            "scale_1GiB": p.estimate(1 << 30),
            "papers": p.papers,
        }
        for p in PROGRAMS.values()
    ]


def main(args: argparse.Namespace) -> int:
    """Dispatch ``xlat corpus SUBCOMMAND``; exit code 2 for a missing dependency or bad name,
    1 when a program fails."""
    from xlat.trace_cli import human_bytes
    from xlat.values import parse_size

    if args.corpus_command == "list":
        rows = list_rows()
        if args.json:
            print(json.dumps(rows, indent=2))
            return 0
        for r in rows:
            print(f"{r['name']:<12} stands for {r['stands_for']}: {r['program']}")
            print(f"{'':<12} installs: {r['installs']} (recording: valgrind)")
            print(f"{'':<12} inputs: {r['inputs']}")
            print(
                f"{'':<12} --scale 1GiB: {human_bytes(r['scale_1GiB'])} estimated; papers' "
                f"sizes: {r['papers']}"
            )
        return 0
    try:
        size = parse_size(args.scale)
        progs = [program(n) for n in args.names]
        recording = args.corpus_command == "record"
        ensure([n for p in progs for n in needs_of(p, recording)], args.install)
    except (CorpusError, ValueError) as e:
        print(f"xlat: error: {e}", file=sys.stderr)
        return 2
    failed = 0
    for p in progs:
        try:
            if recording:
                print(f"xlat corpus: recording {p.name} at {args.scale} ...", file=sys.stderr)
                r = record_one(
                    p.name,
                    size,
                    args.seed,
                    Path(args.out),
                    args.zstd_level,
                    args.keep_inputs,
                    sys.stderr.isatty(),
                )
                line = (
                    f"{p.name}: {r['refs']:,} refs, footprint "
                    f"{human_bytes(r['footprint_bytes'] or 0)} (estimated "
                    f"{human_bytes(r['estimate_bytes'])}), recorded in {r['record_seconds']}s, "
                    f"{Path(args.out) / (p.name + '.xlat')} ({human_bytes(r['trace_bytes'])})"
                )
            else:
                r = measure_one(p.name, size, args.seed)
                line = (
                    f"{p.name}: peak RSS {human_bytes(r['peak_rss_bytes'])} (estimated "
                    f"{human_bytes(r['estimate_bytes'])}) in {r['seconds']}s natively"
                )
            print(json.dumps(r) if args.json else line)
        except CorpusError as e:
            print(f"xlat: error: {e}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0
