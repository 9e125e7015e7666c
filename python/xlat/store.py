"""The result store: one DuckDB table with one row per run (see docs/sweeps.md).

Contract:

- A row is keyed by ``config_hash`` (see :func:`config_hash`); there is never more than one row
  per key. Writing a run that is already stored replaces its row in the same transaction.
- Each call of :meth:`Store.commit` is one transaction: after it returns the rows are on disk,
  and a process killed at any point leaves either all of them or none.
- ``status`` is ``'ok'`` or ``'failed'``. A failed row has ``error`` set and no figures (its
  figure columns are NULL): a failure is never data. It keeps its ``config.*`` columns, which
  say which grid point failed.
- Figures of the result record are columns named by their dotted path (``tlb.l1_mpki``,
  ``cache.llc.pt_line_share_avg``, ``config.os.thp``), as :func:`xlat.flatten` names them. A key
  that a later version of xlat adds becomes a new column (``ALTER TABLE ADD COLUMN``); older rows
  hold NULL there. Lists (``os.free_blocks_end``) are stored as JSON text.

The database is opened for the duration of one operation and closed again, so that another
process (``xlat results`` during a sweep) can open it in between; opening retries while another
process holds the lock.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from xlat.records import flatten, label_columns

#: Default database file of ``xlat sweep`` / ``xlat results`` / ``xlat report``.
DEFAULT_DB = "results.duckdb"
TABLE = "runs"
SCHEMA_VERSION = 1

#: Columns every row has, in table order, with their SQL types. The flattened figures follow.
META_COLUMNS: list[tuple[str, str]] = [
    ("config_hash", "VARCHAR PRIMARY KEY"),
    ("point_hash", "VARCHAR"),
    ("status", "VARCHAR NOT NULL"),
    ("error", "VARCHAR"),
    ("design", "VARCHAR"),
    ("workload", "VARCHAR"),
    ("trace", "VARCHAR"),
    ("trace_sha256", "VARCHAR"),
    ("seed", "BIGINT"),
    ("params", "VARCHAR"),
    ("spec", "VARCHAR"),
    ("xlat_version", "VARCHAR"),
    ("git_commit", "VARCHAR"),
    ("started_at", "TIMESTAMP"),
    ("finished_at", "TIMESTAMP"),
    ("config_json", "VARCHAR"),
    ("record_json", "VARCHAR"),
]
META_NAMES = {name for name, _ in META_COLUMNS}

#: Record keys measured on the host (its clock, the process's resident memory): they differ
#: between two runs of the same config.
WALL_CLOCK_KEYS = (
    "sim.wall_seconds",
    "sim.refs_per_sec",
    "sim.setup_seconds",
    "sim.peak_rss_bytes",
)


class StoreError(Exception):
    """The database cannot be opened or does not hold an xlat result table."""


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal values give equal text.

    Examples
    --------
    >>> canonical_json({"b": 1, "a": [1, 2]})
    '{"a":[1,2],"b":1}'
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


#: The configuration keys that a run's key covered when the rule below was made (2026-11-30,
#: model version 6, 484 keys). Never edit it: a stored run's key was computed with it.
RUN_KEY_CONFIG_KEYS_FILE = "store/run_key_config_keys.txt"


@functools.cache
def _run_key_keys() -> frozenset[str]:
    from xlat._data import data_dir

    text = (data_dir() / RUN_KEY_CONFIG_KEYS_FILE).read_text()
    return frozenset(line for line in text.splitlines() if line)


@functools.cache
def _default_values() -> dict[str, Any]:
    import tomllib

    from xlat import _core

    return flatten(tomllib.loads(_core.resolve_config(None, "", [])))


def run_key_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The part of a fully resolved configuration that a run's key covers: every key of
    :data:`RUN_KEY_CONFIG_KEYS_FILE`, and each key added since only where its value differs from
    its built-in default.

    Why: a key added with a default that keeps the model's behaviour must not change the key of
    every stored run (a resume would rerun them all). A change of behaviour is caught by the
    model version each run records, not by its key.

    Examples
    --------
    >>> import tomllib
    >>> from xlat import _core
    >>> default = tomllib.loads(_core.resolve_config(None, "", []))
    >>> set(flatten(run_key_config(default))) == set(flatten(default)) & _run_key_keys()
    True
    >>> "utopia.rsw_beside_l2_tlb_hit" in flatten(run_key_config(default))  # added at its default
    False
    >>> run_key_config({"sim": {"design": "radix", "a_key_from_the_future": 1}})
    {'sim': {'design': 'radix', 'a_key_from_the_future': 1}}
    """
    known = _run_key_keys()
    flat = flatten(config)
    if all(key in known for key in flat):
        return config
    defaults = _default_values()
    kept: dict[str, Any] = {}
    for key, value in flat.items():
        if key not in known and key in defaults and defaults[key] == value:
            continue
        node = kept
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return kept


def config_hash(
    config: Mapping[str, Any],
    design: str,
    workload: str | None,
    trace_sha256: str | None,
    seed: int,
) -> str:
    """Key of one run: sha256 of the fully resolved configuration (:func:`run_key_config`:
    keys added after 2026-11-30 count only when set away from their default), design, workload
    or trace content hash, and seed.

    Examples
    --------
    >>> a = config_hash({"os": {"thp": "never"}}, "radix", "gups", None, 1)
    >>> a == config_hash({"os": {"thp": "never"}}, "radix", "gups", None, 1), len(a)
    (True, 64)
    >>> a == config_hash({"os": {"thp": "always"}}, "radix", "gups", None, 1)
    False
    """
    key = canonical_json(
        {
            "config": run_key_config(config),
            "design": design,
            "workload": workload,
            "trace_sha256": trace_sha256,
            "seed": seed,
        }
    )
    return hashlib.sha256(key.encode()).hexdigest()


#: Provenance layers (a record's ``config_sources``) that make a grid point: what the user
#: chose. A design's profile (``profile:NAME``) and values derived from others are not.
USER_LAYERS = ("cpu:", "preset:", "set")


def point_hash(
    config: Mapping[str, Any],
    trace_sha256: str | None,
    sources: Mapping[str, str] | None = None,
) -> str:
    """Key of a grid point regardless of design (plus the trace hash). Runs of different
    designs on the same point share it, which is what speedups pair on.

    With ``sources`` (a record's ``config_sources``: each key that differs from the built-in
    default, and the layer that set it), the point is the keys the user's layers set (a CPU
    preset, a preset file, ``set`` and the named options) and the profile choice, without
    ``sim.design``: so ``tps`` under its profile (reservation paging, its TLB) and ``radix``
    under Linux's defaults are the same point, as a sweep over ``designs`` means. Without
    ``sources`` (records from before profiles): the whole configuration but ``sim.design``.

    Examples
    --------
    >>> point_hash({"sim": {"design": "radix", "seed": 1}}, None) == point_hash(
    ...     {"sim": {"design": "ideal", "seed": 1}}, None)
    True
    >>> radix = {"sim": {"design": "radix", "profile": "radix"}, "os": {"policy": "thp"}}
    >>> tps = {"sim": {"design": "tps", "profile": "tps"}, "os": {"policy": "reservation"}}
    >>> point_hash(radix, None, {"sim.design": "set"}) == point_hash(
    ...     tps, None, {"sim.design": "set", "os.policy": "profile:tps"})
    True
    >>> point_hash(radix, None, {"sim.design": "set"}) == point_hash(
    ...     {**tps, "sim": {"design": "tps", "profile": "none"}}, None, {"sim.profile": "set"})
    False
    """
    if sources is None:
        cfg = json.loads(json.dumps(config))
        cfg.get("sim", {}).pop("design", None)
        return hashlib.sha256(canonical_json([cfg, trace_sha256]).encode()).hexdigest()
    sim = config.get("sim", {})
    point: dict[str, Any] = {}
    for key, layer in sources.items():
        if key in ("sim.design", "sim.profile") or not layer.startswith(USER_LAYERS):
            continue
        node: Any = config
        for part in key.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        point[key] = node
    # `auto` resolves to the design's own name: the same choice for every design.
    profile = sim.get("profile", "auto")
    point["sim.profile"] = "auto" if profile in ("auto", sim.get("design")) else profile
    return hashlib.sha256(canonical_json([point, trace_sha256]).encode()).hexdigest()


def sql_type(value: Any) -> str | None:
    """The column type a record value is stored as (None for a null, which adds no column).

    Examples
    --------
    >>> [sql_type(v) for v in (True, 3, 2**64, 2.5, "x", [1], None)]
    ['BOOLEAN', 'BIGINT', 'HUGEINT', 'DOUBLE', 'VARCHAR', 'VARCHAR', None]
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "BIGINT" if -(2**63) <= value < 2**63 else "HUGEINT"
    if isinstance(value, float):
        return "DOUBLE"
    return "VARCHAR"


def quote(name: str) -> str:
    """A SQL identifier for a column name (dotted names need quoting).

    Examples
    --------
    >>> quote("tlb.l1_mpki")
    '"tlb.l1_mpki"'
    """
    return '"' + name.replace('"', '""') + '"'


def figure_columns(record: Mapping[str, Any]) -> dict[str, Any]:
    """The flattened record as stored: dotted keys, lists as JSON text, and the keys that
    duplicate a metadata column (``design``, ``workload``, ``seed``) left out.

    Examples
    --------
    >>> figure_columns({"design": "radix", "tlb": {"l1_mpki": 1.5}, "os": {"free": [1, 2]}})
    {'tlb.l1_mpki': 1.5, 'os.free': '[1, 2]'}
    """
    out = {}
    for key, value in flatten(record).items():
        if key in META_NAMES:
            continue
        out[key] = json.dumps(value) if isinstance(value, (list, dict)) else value
    if "config" in record:
        # A trace run's workload columns name the trace, never the unused [workload] defaults.
        out.update({k: v for k, v in label_columns(record).items() if k.startswith("config.")})
    return out


# Widening order when a column meets a value of a wider type (an int column receiving floats).
_WIDER = {"BOOLEAN": 0, "BIGINT": 1, "HUGEINT": 2, "DOUBLE": 3, "VARCHAR": 4}


class Store:
    """An xlat result database (DuckDB file).

    Examples
    --------
    >>> import tempfile, os
    >>> db = Store(os.path.join(tempfile.mkdtemp(), "r.duckdb"))
    >>> db.commit([{"config_hash": "h1", "status": "failed", "error": "boom", "design": "radix"}])
    >>> db.stored_hashes(), db.stored_hashes(status=None)
    (set(), {'h1'})
    """

    def __init__(self, path: str | Path, lock_timeout: float = 60.0) -> None:
        self.path = Path(path)
        self.lock_timeout = lock_timeout

    def connect(self, read_only: bool = False, duplicates_ok: bool = False):
        """Open the database, waiting up to ``lock_timeout`` s while another process holds it.

        A table that lost its primary key (a copy made with ``CREATE TABLE AS``) and holds a
        run twice is refused (StoreError): every query would count that run twice. Only the
        store check (``duplicates_ok``) opens it, to list them."""
        import duckdb

        if read_only and not self.path.exists():
            raise StoreError(f"no result database at {self.path} (run `xlat sweep` first)")
        if not read_only:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StoreError(f"cannot create {self.path}: {e.strerror or e}") from None
        deadline = time.monotonic() + self.lock_timeout
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=read_only)
                break
            except duckdb.IOException as e:
                if "lock" not in str(e).lower() or time.monotonic() > deadline:
                    raise StoreError(f"cannot open {self.path}: {e}") from None
                time.sleep(0.05)
            except duckdb.Error as e:
                raise StoreError(f"cannot open {self.path}: {e}") from None
        if not read_only:
            try:
                self._ensure_schema(con)
            except duckdb.Error as e:
                _close(con)
                raise StoreError(f"cannot open {self.path}: {_first_line(e)}") from None
        elif not self._has_table(con):
            con.close()
            raise StoreError(f"{self.path} holds no xlat result table '{TABLE}'")
        missing = [n for n, _ in META_COLUMNS if n not in self._columns(con)]
        if missing:
            con.close()
            raise StoreError(
                f"{self.path}: its table '{TABLE}' is not an xlat result table (no column "
                f"{', '.join(missing[:4])}{', ...' if len(missing) > 4 else ''}); use another --db"
            )
        twice = 0 if duplicates_ok else self._duplicated(con)
        if twice:
            con.close()
            raise StoreError(
                f"{self.path}: {twice} run(s) are stored more than once: its table '{TABLE}' has "
                "lost its primary key on config_hash (a copy made with CREATE TABLE AS?), and "
                "every query would count them twice. `xlat results --check` lists them; keep "
                'one row per config_hash (docs/results.md, "Checking a store")'
            )
        return con

    @staticmethod
    def _duplicated(con) -> int:
        """Keys stored more than once (0 at once when config_hash is the primary key)."""
        keyed = con.execute(
            "SELECT count(*) FROM duckdb_constraints() WHERE table_name = ? "
            "AND constraint_type = 'PRIMARY KEY'",
            [TABLE],
        ).fetchone()[0]
        if keyed:
            return 0
        return con.execute(
            f"SELECT count(*) FROM (SELECT config_hash FROM {TABLE} GROUP BY config_hash "
            "HAVING count(*) > 1)"
        ).fetchone()[0]

    @staticmethod
    def _has_table(con) -> bool:
        return bool(
            con.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [TABLE]
            ).fetchone()[0]
        )

    def _ensure_schema(self, con) -> None:
        if not self._has_table(con):
            cols = ", ".join(f"{quote(n)} {t}" for n, t in META_COLUMNS)
            con.execute(f"CREATE TABLE {TABLE} ({cols})")
            con.execute(
                "CREATE TABLE IF NOT EXISTS xlat_meta (key VARCHAR PRIMARY KEY, value VARCHAR)"
            )
            con.execute(
                "INSERT OR REPLACE INTO xlat_meta VALUES ('schema_version', ?)",
                [str(SCHEMA_VERSION)],
            )

    @staticmethod
    def _columns(con) -> dict[str, str]:
        rows = con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = ? ORDER BY ordinal_position",
            [TABLE],
        ).fetchall()
        return dict(rows)

    def _evolve(self, con, rows: list[dict[str, Any]]) -> None:
        """Add a column for every new key and widen a column that meets a wider value."""
        cols = self._columns(con)
        wanted: dict[str, str] = {}
        for row in rows:
            for key, value in row.items():
                t = sql_type(value)
                if t is None:
                    continue
                prev = wanted.get(key) or cols.get(key)
                if prev is None or (prev in _WIDER and _WIDER[t] > _WIDER[prev]):
                    wanted[key] = t
        for key, t in wanted.items():
            if key not in cols:
                con.execute(f"ALTER TABLE {TABLE} ADD COLUMN {quote(key)} {t}")
            elif cols[key] != t and key not in META_NAMES:
                con.execute(f"ALTER TABLE {TABLE} ALTER COLUMN {quote(key)} TYPE {t}")

    def commit(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Store rows (dicts of column -> value) in one transaction, replacing stored rows with
        the same ``config_hash``."""
        import duckdb

        rows = [dict(r) for r in rows]
        if not rows:
            return
        con = self.connect()
        try:
            con.execute("BEGIN TRANSACTION")
            self._evolve(con, rows)
            cols = self._columns(con)
            for row in rows:
                con.execute(f"DELETE FROM {TABLE} WHERE config_hash = ?", [row["config_hash"]])
                # A null adds no column (`sql_type`): where none exists the value is left out
                # (it reads as NULL).
                names = [n for n in row if row[n] is not None or n in cols]
                con.execute(
                    f"INSERT INTO {TABLE} ({', '.join(map(quote, names))}) "
                    f"VALUES ({', '.join('?' * len(names))})",
                    [row[n] for n in names],
                )
            con.execute("COMMIT")
        except BaseException as e:
            try:
                con.execute("ROLLBACK")
            except duckdb.Error:
                pass  # a COMMIT that failed (a full disk) has ended the transaction itself
            finally:
                _close(con)
            if isinstance(e, duckdb.Error):
                raise StoreError(
                    f"{self.path}: cannot store {len(rows)} run(s): {_first_line(e)}; the runs "
                    "stored before are kept"
                ) from None
            raise
        _close(con)

    def merge(self, other: str | Path) -> dict[str, int]:
        """Copy into this store the runs of the store ``other`` that this one lacks: a run it
        does not hold, or holds only as failed where ``other`` has it ok. A run stored ok here
        is never replaced, and a failed run of ``other`` is copied only where this store has
        none. Counts of what happened, by ``added``, ``kept`` (already here) and ``skipped``
        (failed in ``other`` while stored here). Stores filled on different machines, or a
        partial store carried to another, combine into one that ``xlat sweep`` and ``xlat
        reproduce`` resume from (the run keys are the same everywhere).

        Examples
        --------
        >>> import tempfile, os
        >>> d = tempfile.mkdtemp()
        >>> a, b = Store(os.path.join(d, "a.duckdb")), Store(os.path.join(d, "b.duckdb"))
        >>> a.commit([{"config_hash": "h1", "status": "ok", "design": "radix"},
        ...           {"config_hash": "h2", "status": "failed", "design": "lvm"}])
        >>> b.commit([{"config_hash": "h2", "status": "ok", "design": "lvm"},
        ...           {"config_hash": "h3", "status": "ok", "design": "ecpt"},
        ...           {"config_hash": "h1", "status": "failed", "design": "radix"}])
        >>> a.merge(b.path)
        {'added': 2, 'kept': 0, 'skipped': 1}
        >>> sorted(a.stored_hashes())
        ['h1', 'h2', 'h3']
        """
        source = Store(other, self.lock_timeout)
        if Path(other).resolve() == self.path.resolve():
            raise StoreError(f"cannot merge {other} into itself")
        con = source.connect(read_only=True)
        try:
            cursor = con.execute(f"SELECT * FROM {TABLE}")
            names = [d[0] for d in cursor.description]
            rows = [dict(zip(names, values)) for values in cursor.fetchall()]
        finally:
            con.close()
        here = self.stored()
        counts = {"added": 0, "kept": 0, "skipped": 0}
        take = []
        for row in rows:
            mine = here.get(row["config_hash"])
            if mine is None or (mine["status"] != "ok" and row["status"] == "ok"):
                take.append({k: v for k, v in row.items() if v is not None})
                counts["added"] += 1
            elif mine["status"] == "ok" and row["status"] == "ok":
                counts["kept"] += 1
            else:
                counts["skipped"] += 1
        self.commit(take)
        return counts

    def stored(self, hashes: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        """``config_hash -> {status, xlat_version, git_commit, model_version}`` of stored rows
        (all, or those among ``hashes``); ``model_version`` is None for rows made before records
        carried it (and for failed runs, which have no record)."""
        if not self.path.exists():
            return {}
        con = self.connect(read_only=True)
        try:
            model = "model_version" if "model_version" in self._columns(con) else "NULL"
            rows = con.execute(
                f"SELECT config_hash, status, xlat_version, git_commit, {model} FROM {TABLE}"
            ).fetchall()
        finally:
            con.close()
        wanted = set(hashes) if hashes is not None else None
        return {
            h: {
                "status": s,
                "xlat_version": v,
                "git_commit": g,
                "model_version": None if m is None else int(m),
            }
            for h, s, v, g, m in rows
            if wanted is None or h in wanted
        }

    def stored_hashes(self, status: str | None = "ok") -> set[str]:
        """Keys of the stored rows with that status (every row when None)."""
        return {h for h, m in self.stored().items() if status is None or m["status"] == status}

    def query(self, sql: str, params: list[Any] | None = None, duplicates_ok: bool = False):
        """Run a read-only SQL query and return a pandas DataFrame."""
        con = self.connect(read_only=True, duplicates_ok=duplicates_ok)
        try:
            return con.execute(sql, params or []).df()
        finally:
            con.close()

    def columns(self, duplicates_ok: bool = False) -> list[str]:
        """Column names of the result table, in table order."""
        con = self.connect(read_only=True, duplicates_ok=duplicates_ok)
        try:
            return list(self._columns(con))
        finally:
            con.close()


def _close(con) -> None:
    """Close a connection whose database may be in trouble (a full disk): closing checkpoints,
    which may fail again; the error that matters was raised already."""
    import duckdb

    try:
        con.close()
    except duckdb.Error:
        pass


def _first_line(e: BaseException) -> str:
    """An exception's message without DuckDB's multi-line context."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def frame_from_records(records: list[dict]):
    """Result records (``xlat compare`` output) as a frame with the store's columns.

    Examples
    --------
    >>> from xlat.run import compare
    >>> df = frame_from_records(compare(["radix", "ideal"], "gups", "16MiB", 20000))
    >>> df[["design", "workload", "status"]].values.tolist()
    [['radix', 'gups', 'ok'], ['ideal', 'gups', 'ok']]
    >>> df["point_hash"].nunique(), int(df["walk.count"].iloc[0]) > 0
    (1, True)
    """
    import pandas as pd

    rows = []
    for r in records:
        cfg = r.get("config", {})
        labels = label_columns(r)
        design, workload, seed = labels["design"], labels["workload"], labels["seed"]
        trace_sha = labels["trace_sha256"]
        rows.append(
            {
                "config_hash": config_hash(
                    cfg, design, None if trace_sha else workload, trace_sha, seed
                ),
                "point_hash": point_hash(cfg, trace_sha, r.get("config_sources")),
                "status": "ok",
                "error": None,
                "design": design,
                "workload": workload,
                "trace": labels["trace"],
                "trace_sha256": trace_sha,
                "seed": seed,
                "xlat_version": r.get("version"),
                "git_commit": None,
                "config_json": json.dumps(cfg, sort_keys=True),
                "record_json": json.dumps(r),
                **figure_columns(r),
            }
        )
    return pd.DataFrame(rows)
