"""Sweeps: a TOML grid of designs x workloads x parameters x seeds, run on Ray, stored in DuckDB.

Spec format, store schema and resume semantics: docs/sweeps.md.

Contract:

- :func:`expand` is deterministic: the same spec gives the same runs in the same order, each
  with the same ``config_hash``.
- A run executes in a Ray task that calls :func:`xlat.run` (the Rust core releases the GIL); the
  driver commits each finished run to the store in its own transaction, so killing a worker or
  the driver loses at most the runs in flight.
- A run whose ``config_hash`` is stored with status ``ok`` is skipped (unless ``force``); a
  stored failure is retried.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from xlat import _core
from xlat.records import config_labels
from xlat.run import (
    TRACE_NO_LIMIT,
    baseline_profiles,
    model_version_of,
    resolve_config_sources,
    trace_footprint,
    version,
)
from xlat.run import cpus as cpu_presets
from xlat.run import designs as registered_designs
from xlat.run import workloads as builtin_workloads
from xlat.store import (
    DEFAULT_DB,
    TABLE,
    Store,
    StoreError,
    config_hash,
    figure_columns,
    point_hash,
)
from xlat.values import bad_figures, check_config

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

#: Keys a sweep spec may hold at its top level (besides the ``[set]`` table).
SPEC_KEYS = (
    "designs",
    "workloads",
    "traces",
    "footprint",
    "refs",
    "warmup",
    "seeds",
    "cpus",
    "profiles",
    "preset",
    "name",
    "max_runs",
    "set",
    "workload_set",
)

#: Configuration keys that the grid itself sets: ``[set]`` may not override them (the stored
#: labels would then disagree with the runs), so each maps to the spec key to use instead.
GRID_KEYS = {
    "sim.design": "designs",
    "workload.name": "workloads",
    "sim.seed": "seeds",
    "workload.footprint": "footprint",
    "sim.refs": "refs",
    "sim.warmup_refs": "warmup",
}

#: Times Ray re-executes a task whose worker died: zero. A run that kills its worker (out of
#: memory, a crash) would most likely do it again, so it is stored as failed with the reason
#: after one attempt instead of being retried for minutes.
TASK_RETRIES = 0
#: Connection attempts to an existing cluster (``--address``) before giving up.
CONNECT_ATTEMPTS = 3


class SpecError(ValueError):
    """A sweep spec that cannot be expanded; the message names the file and the problem."""


class SweepError(RuntimeError):
    """The sweep cannot start: Ray cannot be started or the cluster cannot be reached."""


@dataclass(frozen=True)
class Run:
    """One point of the grid: everything :func:`xlat.run` needs, plus its keys."""

    design: str
    workload: str
    footprint: str | None
    refs: str | None
    seed: int
    params: tuple[tuple[str, Any], ...]
    preset: str | None
    config: dict = field(compare=False, repr=False, hash=False, default_factory=dict)
    config_hash: str = ""
    point_hash: str = ""
    #: Trace file (absolute path) when the run replays a trace; ``workload`` is then its name.
    trace: str | None = None
    trace_sha256: str | None = None
    #: Warm-up references (``sim.warmup_refs``) when the spec sets ``warmup``.
    warmup: str | None = None
    #: Where each non-default key of ``config`` came from (``config_sources`` of a record).
    sources: dict = field(compare=False, repr=False, hash=False, default_factory=dict)

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`xlat.run` for this run."""
        kw = dict(
            design=self.design,
            workload=None if self.trace else self.workload,
            footprint=self.footprint,
            refs=self.refs,
            warmup=self.warmup,
            seed=self.seed,
            preset=self.preset,
            set=list(self.params),
        )
        if self.trace:
            kw["trace"] = self.trace
        return kw

    def label(self) -> str:
        """Short human-readable name naming every grid coordinate, e.g.
        ``radix gups footprint=16MiB refs=20k os.thp=always seed=1`` (footprint and refs only
        when the spec sets them)."""
        parts = [self.design, self.workload]
        if self.footprint is not None:
            parts.append(f"footprint={self.footprint}")
        if self.refs is not None:
            parts.append(f"refs={self.refs}")
        if self.warmup is not None:
            parts.append(f"warmup={self.warmup}")
        parts += [f"{k}={v}" for k, v in self.params]
        return " ".join(parts + [f"seed={self.seed}"])


@dataclass
class Spec:
    """A parsed sweep spec (see :func:`load_spec`)."""

    designs: list[str]
    workloads: list[str]
    footprints: list[str | None]
    refs: list[str | None]
    seeds: list[int]
    params: dict[str, list[Any]]
    preset: str | None = None
    name: str = "sweep"
    origin: str = "<dict>"
    #: (absolute path, sha256) of every trace in the spec's ``traces`` list.
    traces: list[tuple[str, str]] = field(default_factory=list)
    #: Warm-up references of every run (``sim.warmup_refs``), one grid axis like ``refs``.
    warmups: list[str | None] = field(default_factory=lambda: [None])
    #: Most runs the grid may have (None: :data:`MAX_RUNS`; 0: no limit).
    max_runs: int | None = None
    #: ``workload_set``: keys set for one workload's runs only (workload -> key -> one value),
    #: after the ``[set]`` grid's keys, e.g. each workload's own page-size mix.
    workload_set: dict[str, dict[str, Any]] = field(default_factory=dict)


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, list) else [value]


def parse_spec(data: Mapping[str, Any], origin: str = "<dict>") -> Spec:
    """Validate a spec given as a mapping (the parsed TOML) and return a :class:`Spec`.

    Examples
    --------
    >>> s = parse_spec({"designs": ["radix"], "workloads": ["gups"], "set": {"os.thp": ["never"]}})
    >>> s.designs, s.seeds, s.params
    (['radix'], [1], {'os.thp': ['never']})
    >>> parse_spec({"workloads": ["gups"], "desings": ["radix"]}, "my.toml")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    xlat.sweeps.SpecError: my.toml: unknown key 'desings' (did you mean 'designs'?); ...
    """
    import difflib

    def fail(msg: str) -> SpecError:
        return SpecError(f"{origin}: {msg}")

    for key in data:
        if key not in SPEC_KEYS:
            close = difflib.get_close_matches(key, SPEC_KEYS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise fail(f"unknown key '{key}'{hint}; a spec holds {', '.join(SPEC_KEYS)}")

    def names(key: str, known: list[str], default: list[str] | None) -> list[str]:
        if key not in data:
            if default is None:
                raise fail(f"'{key}' is missing (a list such as {key} = {known[:2]!r})")
            return default
        value = data[key]
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise fail(f"'{key}' must be a non-empty list of names, got {value!r}")
        for v in value:
            # A workload entry may be a comma list: a multi-programmed run (see sim.cores).
            for part in v.split(",") if key == "workloads" else [v]:
                if part.strip() not in known:
                    close = difflib.get_close_matches(part, known, n=1)
                    hint = f" (did you mean '{close[0]}'?)" if close else ""
                    raise fail(
                        f"unknown {key[:-1]} '{part}' in '{key}'{hint}; known: {', '.join(known)}"
                    )
        if len(set(value)) != len(value):
            raise fail(f"'{key}' lists a name twice: {value!r}")
        return list(value)

    designs = names("designs", registered_designs(), registered_designs())
    traces = _trace_files(data.get("traces"), origin, fail)
    workloads = names("workloads", builtin_workloads(), [] if traces else None)
    if traces and not workloads and "footprint" in data:
        raise fail(
            "'footprint' applies to built-in workloads only (a trace's references come from "
            "the file); remove it or add 'workloads'"
        )

    def sizes(key: str) -> list[str | None]:
        if key not in data:
            return [None]
        values = _as_list(data[key])
        if not values or not all(
            isinstance(v, (str, int)) and not isinstance(v, bool) for v in values
        ):
            raise fail(
                f'\'{key}\' must be a size such as "256MiB" / "1M" or a list of them, '
                f"got {data[key]!r}"
            )
        if len({str(v) for v in values}) != len(values):
            raise fail(f"'{key}' lists a value twice: {data[key]!r}")
        return [str(v) for v in values]

    seeds = _as_list(data.get("seeds", [1]))
    if not seeds or not all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds
    ):
        raise fail(f"'seeds' must be a non-empty list of non-negative integers, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise fail(f"'seeds' lists a value twice: {seeds!r}")
    table = data.get("set", {})
    if not isinstance(table, Mapping):
        raise fail("'set' must be a table of \"section.field\" = [values] (write [set])")
    params: dict[str, list[Any]] = {}
    for key, values in table.items():
        grid_key = GRID_KEYS.get(str(key).strip().lower())
        if grid_key is not None:
            raise fail(
                f"[set] '{key}' is set by the grid: use the top-level '{grid_key}' key instead "
                f"(the stored runs are labelled by {', '.join(sorted(set(GRID_KEYS.values())))})"
            )
        values = _as_list(values)
        if not values:
            raise fail(f"[set] '{key}' has an empty list of values")
        if any(isinstance(v, (list, dict)) for v in values):
            raise fail(f"[set] '{key}' values must be scalars, got {values!r}")
        if len({_value_text(v) for v in values}) != len(values):
            raise fail(f"[set] '{key}' lists a value twice: {values!r}")
        params[str(key)] = values
    if "cpus" in data:
        # A grid axis over CPU presets: the `sim.cpu` parameter, swept before the [set] keys.
        if any(str(k).strip() == "sim.cpu" for k in params):
            raise fail("'cpus' and [set] 'sim.cpu' both name the CPU presets; keep one of them")
        params = {"sim.cpu": names("cpus", cpu_presets(), None), **params}
    if "profiles" in data:
        # A grid axis over profiles (`sim.profile`): each design's own (`auto`), `none`, a
        # baseline's name (xlat.run.baseline_profiles) or a design's name.
        if any(str(k).strip() == "sim.profile" for k in params):
            raise fail("'profiles' and [set] 'sim.profile' both name the profiles; keep one")
        known = ["auto", "none", *(p["name"] for p in baseline_profiles()), *registered_designs()]
        params = {"sim.profile": names("profiles", known, None), **params}
    per_workload = _workload_set(data.get("workload_set", {}), workloads, params, fail)
    preset = data.get("preset")
    if preset is not None and not isinstance(preset, str):
        raise fail(f"'preset' must be a preset name or path, got {preset!r}")
    name = data.get("name", Path(origin).stem if origin != "<dict>" else "sweep")
    if not isinstance(name, str):
        raise fail(f"'name' must be a string, got a {type(name).__name__}")
    max_runs = data.get("max_runs")
    if max_runs is not None and (
        not isinstance(max_runs, int) or isinstance(max_runs, bool) or max_runs < 0
    ):
        raise fail(f"'max_runs' must be a non-negative integer (0: no limit), got {max_runs!r}")
    return Spec(
        designs,
        workloads,
        sizes("footprint"),
        sizes("refs"),
        seeds,
        params,
        preset,
        str(name),
        origin,
        traces,
        sizes("warmup"),
        max_runs,
        per_workload,
    )


def _workload_set(
    table: Any, workloads: list[str], params: dict[str, list[Any]], fail
) -> dict[str, dict[str, Any]]:
    """The spec's ``workload_set`` (``{workload = {"section.field" = value}}``): each named
    workload must be in ``workloads``, each value a scalar, no key a grid key or a ``[set]``
    key (a run would then have two values for it).

    >>> _workload_set({"gups": {"os.thp": "always"}}, ["gups", "bfs"], {}, ValueError)
    {'gups': {'os.thp': 'always'}}
    """
    if not isinstance(table, Mapping):
        raise fail("'workload_set' must be a table of workload = {\"section.field\" = value}")
    out: dict[str, dict[str, Any]] = {}
    for workload, keys in table.items():
        if workload not in workloads:
            raise fail(f"workload_set names '{workload}', which is not among the workloads "
                       f"{workloads!r}")  # fmt: skip
        if not isinstance(keys, Mapping) or not keys:
            raise fail(f'workload_set.{workload} must be a table of "section.field" = value')
        for key, value in keys.items():
            if str(key).strip().lower() in GRID_KEYS or key in params:
                raise fail(f"workload_set.{workload} sets '{key}', which the grid or [set] sets")
            if isinstance(value, (list, dict)):
                raise fail(f"workload_set.{workload} '{key}' must be one scalar, got {value!r}")
        out[str(workload)] = dict(keys)
    return out


def _value_text(v: Any) -> str:
    """A ``[set]`` value as the override text it becomes (``True`` and ``"true"`` are one)."""
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def _trace_files(value: Any, origin: str, fail) -> list[tuple[str, str]]:
    """Resolve the spec's ``traces`` (paths relative to the working directory, else to the
    spec's folder) to (absolute path, sha256) pairs; a missing file is a spec error."""
    if value is None:
        return []
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise fail(f"'traces' must be a non-empty list of trace file paths, got {value!r}")
    spec_dir = Path(origin).parent if origin != "<dict>" else Path.cwd()
    out = []
    for v in value:
        try:
            path = next((p for p in (Path(v), spec_dir / v) if p.is_file()), None)
            there = next((p for p in (Path(v), spec_dir / v) if p.exists()), None)
        except OSError as e:
            raise fail(f"trace file '{v}': {e.strerror or e}") from None
        if path is None and there is not None:
            raise fail(f"trace '{v}' is not a regular file (a folder, a device or a pipe)")
        if path is None:
            raise fail(
                f"trace file '{v}' not found (relative paths: working directory, then {spec_dir})"
            )
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        out.append((str(path.resolve()), digest.hexdigest()))
        # Once here rather than in every worker's first run: the trace's own footprint, which
        # labels its runs (cached under the hash; see xlat.run.trace_footprint).
        trace_footprint(out[-1][0], out[-1][1])
    if len({p for p, _ in out}) != len(out):
        raise fail(f"'traces' lists a file twice: {value!r}")
    return out


def load_spec(path: str | Path) -> Spec:
    """Read and validate a sweep spec file.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "s.toml")
    >>> _ = open(p, "w").write('designs = ["radix"]\\nworkloads = ["gups"]\\nseeds = "one"\\n')
    >>> load_spec(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    xlat.sweeps.SpecError: .../s.toml: 'seeds' must be a non-empty list of non-negative ...

    A bare name that is no file (``demo``) is a sweep example: ``configs/sweeps/NAME.toml`` in
    this folder, else in the package's data.

    >>> load_spec("demo").origin.endswith("configs/sweeps/demo.toml")
    True
    """
    path = Path(path)
    if not path.exists() and "/" not in str(path) and not str(path).endswith(".toml"):
        from xlat.run import preset_dirs

        found = [d / "sweeps" / f"{path}.toml" for d in preset_dirs()]
        path = next((p for p in found if p.is_file()), path)
    if path.is_dir():
        raise SpecError(f"{path}: is a directory, not a sweep spec (a TOML file)")
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except OSError as e:
        raise SpecError(f"{path}: cannot read the sweep spec: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise SpecError(
            f"{path}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})"
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{path}: not valid TOML: {e}") from None
    except RecursionError:
        raise SpecError(f"{path}: not valid TOML: nested too deeply") from None
    return parse_spec(data, str(path))


#: Most runs a spec's grid may have unless it says otherwise (``max_runs`` in the spec, or
#: ``xlat sweep --max-runs N``; 0 means no limit). The grid is counted before any run is
#: built, so a spec whose keys multiply to millions of runs is refused at once with its size
#: instead of filling the memory while it is expanded.
MAX_RUNS = 10_000


def grid_size(spec: Spec) -> int:
    """How many runs ``spec``'s grid has, computed from the lengths of its axes (nothing is
    built).

    Examples
    --------
    >>> grid_size(parse_spec({"designs": ["radix", "ideal"], "workloads": ["gups"],
    ...                       "seeds": [1, 2, 3], "set": {"os.thp": ["never", "always"]}}))
    12
    """
    sources = len(spec.workloads) * len(spec.footprints) + len(spec.traces)
    n = sources * len(spec.refs) * len(spec.warmups) * len(spec.seeds) * len(spec.designs)
    for values in spec.params.values():
        n *= len(values)
    return n


def grid_text(spec: Spec) -> str:
    """The factors of :func:`grid_size`, as a user reads them (``2 designs x 1 workload x
    3 seeds x 2 os.thp``)."""
    axes = [
        (len(spec.designs), "design"),
        (len(spec.workloads) * len(spec.footprints) + len(spec.traces), "workload/trace"),
        (len(spec.refs), "refs"),
        (len(spec.warmups), "warmup"),
        (len(spec.seeds), "seed"),
        *((len(v), k) for k, v in spec.params.items()),
    ]
    return " x ".join(f"{n} {name}" for n, name in axes if n != 1) or "1 run"


def check_grid(spec: Spec, max_runs: int | None = None) -> int:
    """The grid size of ``spec``; SpecError with the size when it exceeds ``max_runs``
    (default: the spec's ``max_runs``, else :data:`MAX_RUNS`; 0: no limit)."""
    limit = spec.max_runs if max_runs is None else max_runs
    limit = MAX_RUNS if limit is None else limit
    n = grid_size(spec)
    if limit and n > limit:
        raise SpecError(
            f"{spec.origin}: the grid has {n:,} runs ({grid_text(spec)}), more than the limit "
            f"of {limit:,}; narrow it, or raise the limit with max_runs = {n} in the spec or "
            "`xlat sweep --max-runs N` (docs/sweeps.md)"
        )
    return n


def iter_runs(spec: Spec, max_runs: int | None = None) -> Iterator[Run]:
    """The runs of a spec one at a time, in the order of :func:`expand`, each resolved as it
    is reached (what ``xlat sweep --dry-run`` prints as it goes). The grid is counted first
    (:func:`check_grid`); two runs resolving to one configuration raise SpecError when the
    second is reached."""
    check_grid(spec, max_runs)
    keys = list(spec.params)
    # The footprint axis applies to workloads only: a trace's references come from the file.
    sources = [(w, None, None, f) for w in spec.workloads for f in spec.footprints]
    sources += [(Path(path).name, path, sha, None) for path, sha in spec.traces]
    seen: dict[str, str] = {}
    for (workload, trace, sha, footprint), refs, warmup, seed in itertools.product(
        sources, spec.refs, spec.warmups, spec.seeds
    ):
        # Not itertools.product over the [set] values: it would build every combination first.
        own = tuple(spec.workload_set.get(workload, {}).items()) if trace is None else ()
        for values in _combinations([spec.params[k] for k in keys]):
            for design in spec.designs:
                run = _resolve_run(
                    spec, design, workload, footprint, refs, seed,
                    tuple(zip(keys, values)) + own, trace, sha, warmup,
                )  # fmt: skip
                other = seen.setdefault(run.config_hash, run.label())
                if other != run.label():
                    raise SpecError(
                        f"{spec.origin}: runs '{other}' and '{run.label()}' resolve to the same "
                        "configuration (a value listed twice under another spelling?)"
                    )
                yield run


def _combinations(axes: list[list[Any]]) -> Iterator[tuple[Any, ...]]:
    """Every combination of one value per axis, the last axis varying fastest, made lazily.

    >>> list(_combinations([[1, 2], ["a", "b"]]))
    [(1, 'a'), (1, 'b'), (2, 'a'), (2, 'b')]
    """
    if not axes:
        yield ()
        return
    for head in axes[0]:
        for tail in _combinations(axes[1:]):
            yield (head, *tail)


def _resolve_run(
    spec: Spec,
    design: str,
    workload: str,
    footprint: str | None,
    refs: str | None,
    seed: int,
    params: tuple[tuple[str, Any], ...],
    trace: str | None,
    sha: str | None,
    warmup: str | None,
) -> Run:
    """One grid point with its resolved configuration, labels and keys."""
    run = Run(
        design, workload, footprint, refs, seed, params, spec.preset, trace=trace, warmup=warmup
    )
    try:
        kw = {k: v for k, v in run.kwargs().items() if k not in ("preset", "trace")}
        if trace and refs is None:
            kw["refs"] = TRACE_NO_LIMIT  # what xlat.run sets: the whole trace
        text, sources, _ = resolve_config_sources(spec.preset, **kw)
    except _core.XlatError as e:
        raise SpecError(f"{spec.origin}: run '{run.label()}': {e}") from None
    config = tomllib.loads(text)
    try:
        check_config(config)
    except _core.XlatError as e:
        raise SpecError(f"{spec.origin}: run '{run.label()}': {e}") from None
    # Labels come from the resolved configuration, never from the grid alone.
    design_, workload_, seed_ = config_labels(config, trace)
    return Run(
        design_,
        workload_,
        footprint,
        refs,
        seed_,
        params,
        spec.preset,
        config,
        config_hash(config, design_, None if trace else workload_, sha, seed_),
        point_hash(config, sha, sources),
        trace,
        sha,
        warmup,
        sources,
    )


def expand(spec: Spec, max_runs: int | None = None) -> list[Run]:
    """The runs of a spec, in grid order (designs vary fastest, then [set] keys, seeds,
    warm-ups, refs, footprints, workloads), each with its resolved configuration and keys.

    Raises :class:`SpecError` naming the spec and the run when a configuration does not
    resolve, and with the grid's size when it has more than ``max_runs`` runs (default: the
    spec's ``max_runs``, else :data:`MAX_RUNS`), before anything is built.

    Examples
    --------
    >>> spec = parse_spec({"designs": ["radix", "ideal"], "workloads": ["gups"],
    ...                    "set": {"os.thp": ["never", "always"]}})
    >>> [r.label() for r in expand(spec)]  # doctest: +NORMALIZE_WHITESPACE
    ['radix gups os.thp=never seed=1', 'ideal gups os.thp=never seed=1',
     'radix gups os.thp=always seed=1', 'ideal gups os.thp=always seed=1']
    >>> len({r.config_hash for r in expand(spec)}), len({r.point_hash for r in expand(spec)})
    (4, 2)
    >>> expand(spec, max_runs=3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    xlat.sweeps.SpecError: <dict>: the grid has 4 runs (2 design x 2 os.thp), more than ...
    """
    return list(iter_runs(spec, max_runs))


def git_commit() -> str | None:
    """Commit of the xlat checkout this package runs from (``-dirty`` if tracked files changed),
    or None outside a git checkout."""
    repo = Path(__file__).resolve().parents[2]
    if not (repo / ".git").exists():
        return None
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("-dirty" if dirty else "")


def _now() -> str:
    return datetime.now(timezone.utc).replace(tzinfo=None).isoformat(sep=" ")


def execute(kwargs: dict[str, Any], timing_thread: str | None = None) -> dict[str, Any]:
    """Run one simulation (what a Ray task does): the record, or the error as text.

    ``timing_thread`` (``"on"``/``"off"``), when given, sets ``XLAT_TIMING_THREAD`` for the
    run: whether its out-of-order core may take a CPU of its own (results do not depend on it).

    >>> execute({"design": "nonexistent"}, timing_thread="off")["error"].split(":")[0]
    'XlatError'
    """
    from xlat.run import run

    before = os.environ.get("XLAT_TIMING_THREAD")
    if timing_thread is not None:
        os.environ["XLAT_TIMING_THREAD"] = timing_thread
    started = _now()
    try:
        record, error = run(**kwargs), None
    except Exception as e:  # noqa: BLE001 - any failure is stored as the run's error
        record, error = None, f"{type(e).__name__}: {e}"
    finally:
        if before is None:
            os.environ.pop("XLAT_TIMING_THREAD", None)
        else:
            os.environ["XLAT_TIMING_THREAD"] = before
    return {"record": record, "error": error, "started_at": started, "finished_at": _now()}


def make_row(run: Run, result: dict[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    """The store row of a finished (or failed) run.

    The label columns (``design``, ``workload``, ``seed``) and ``trace_sha256`` come from the
    record: a trace run is keyed by the hash of the content it read (a trace file changed
    during the sweep is stored under its new hash, so a rerun neither skips nor mislabels it).
    A record whose labels disagree with its grid point, or with a figure that is not a finite
    number, is stored as a failure, never as data.
    A failed row keeps the run's ``config.*`` columns, so it shows which point failed.
    """
    record = result.get("record")
    error = result.get("error")
    design, workload, seed = run.design, run.workload, run.seed
    trace_sha = run.trace_sha256
    key, point = run.config_hash, run.point_hash
    if record is not None:
        if run.trace:
            trace_sha = record.get("trace", {}).get("sha256", trace_sha)
        got = config_labels(record["config"], run.trace)
        if got != (design, workload, seed):
            error = (
                f"LabelMismatch: the run of '{run.label()}' produced a record of design "
                f"{got[0]}, workload {got[1]}, seed {got[2]} (xlat bug)"
            )
            record = None
        elif bad_figures(record):
            bad = bad_figures(record)
            error = (
                f"XlatError: the run produced figures that are not finite numbers: "
                f"{', '.join(bad[:3])}{' ...' if len(bad) > 3 else ''}"
            )
            record = None
        elif trace_sha != run.trace_sha256:
            key = config_hash(run.config, design, None, trace_sha, seed)
            point = point_hash(run.config, trace_sha, run.sources)
    row = {
        "config_hash": key,
        "point_hash": point,
        "status": "ok" if record is not None else "failed",
        "error": error,
        "design": design,
        "workload": workload,
        "trace": run.trace,
        "trace_sha256": trace_sha,
        "seed": seed,
        "params": json.dumps(dict(run.params), sort_keys=True),
        "spec": meta.get("spec"),
        "xlat_version": meta.get("xlat_version"),
        "git_commit": meta.get("git_commit"),
        "started_at": result.get("started_at"),
        "finished_at": result.get("finished_at"),
        "config_json": json.dumps(run.config, sort_keys=True),
        "record_json": json.dumps(record) if record is not None else None,
    }
    if record is not None:
        row.update(figure_columns(record))
    else:
        row.update(figure_columns({"config": run.config}))
        if run.trace:  # the trace's name; its footprint is what a finished run measures
            row.update({"config.workload.name": workload, "config.workload.footprint": None})
    return row


def _duration(seconds: float) -> str:
    """A duration for a progress line.

    >>> _duration(42.0), _duration(754.0), _duration(9000.0)
    ('42 s', '12.6 min', '2.5 h')
    """
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


class SweepProgress:
    """Progress on stderr: a live bar (tqdm) on a terminal, else one line per finished run,
    with the time since the sweep started and the time left at the mean so far (the rate of
    the runs finished by this process: a resumed sweep's stored runs are not counted)."""

    def __init__(self, total: int, mode: str) -> None:
        self.total, self.mode, self.ok, self.failed = total, mode, 0, 0
        self.started = time.monotonic()
        self.bar = None
        if mode == "bar":
            from tqdm import tqdm

            self.bar = tqdm(
                total=total,
                file=sys.stderr,
                desc="sweep",
                unit="run",
                dynamic_ncols=True,
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}]{postfix}",
            )
            self._postfix()

    def _postfix(self, refresh: bool = True) -> None:
        if self.bar is not None:
            left = self.total - self.ok - self.failed
            self.bar.set_postfix_str(
                f"done {self.ok}, failed {self.failed}, remaining {left}", refresh=refresh
            )

    def finished(self, run: Run, ok: bool, seconds: float, error: str | None) -> None:
        self.ok += ok
        self.failed += not ok
        if self.bar is not None:
            self._postfix(refresh=False)
            self.bar.update(1)
        elif self.mode == "lines" or (self.mode == "errors" and not ok):
            n = self.ok + self.failed
            what = "ok" if ok else f"FAILED: {error}"
            elapsed = time.monotonic() - self.started
            left = elapsed / n * (self.total - n)
            when = f"{_duration(elapsed)} elapsed, about {_duration(left)} left"
            sys.stderr.write(f"[{n}/{self.total}] {run.label()} {what} ({seconds:.1f} s; {when})\n")
            sys.stderr.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast (instead of Ray's long retries) when nothing listens at a Ray address.

    Examples
    --------
    >>> _check_reachable("ray://127.0.0.1:1")
    Traceback (most recent call last):
    ...
    xlat.sweeps.SweepError: cannot reach the Ray cluster at ray://127.0.0.1:1 (connection refused)
    """
    import socket

    hostport = address.split("://", 1)[-1].rsplit("/", 1)[0]
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise SweepError(f"--address {address}: expected ray://HOST:PORT or HOST:PORT")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except ConnectionRefusedError:
        raise SweepError(
            f"cannot reach the Ray cluster at {address} (connection refused)"
        ) from None
    except OSError as e:
        raise SweepError(f"cannot reach the Ray cluster at {address} ({e})") from None


#: The ``ray`` extra's requirement (pyproject.toml), for when the package metadata is absent.
RAY_REQUIREMENT = "ray[client]>=2.9"


def ray_install_hint(direct_url: str | None = None, requirement: str | None = None) -> str:
    """The pip command that installs Ray for sweeps: the wheel this package was installed from
    with its ``ray`` extra (pip records the file in ``direct_url.json``), else Ray itself.
    ``xlat`` is no package name on any index, so ``pip install 'xlat[ray]'`` is never said.

    Examples
    --------
    >>> url = '{"url": "file:///tmp/dist/xlat-0.1.0-cp39-abi3-linux_x86_64.whl"}'
    >>> ray_install_hint(url, "ray[client]>=2.9")
    'pip install "/tmp/dist/xlat-0.1.0-cp39-abi3-linux_x86_64.whl[ray]"'
    >>> ray_install_hint('{"url": "file:///src/xlat", "dir_info": {"editable": true}}', "ray>=2")
    'pip install "ray>=2"'
    """
    from urllib.parse import unquote, urlparse

    if direct_url is None or requirement is None:
        import importlib.metadata as md

        try:
            dist = md.distribution("xlat")
            direct_url = dist.read_text("direct_url.json") if direct_url is None else direct_url
            is_ray = re.compile(r"extra\s*==\s*['\"]ray['\"]").search
            extra = [r for r in dist.requires or [] if is_ray(r)]
            requirement = requirement or (extra[0].split(";")[0].strip() if extra else None)
        except md.PackageNotFoundError:
            pass
    url = json.loads(direct_url).get("url", "") if direct_url else ""
    if url.startswith("file://") and url.endswith(".whl"):
        return f'pip install "{unquote(urlparse(url).path)}[ray]"'
    return f'pip install "{requirement or RAY_REQUIREMENT}"'


def _import_ray():
    """Ray, or a clear error: single runs need no Ray, sweeps do (the ``ray`` extra)."""
    try:
        import ray
    except ImportError:
        raise SweepError(
            f"sweeps run on Ray, which is not installed here: {ray_install_hint()} "
            "(single runs, compare, results and reports work without it)"
        ) from None
    return ray


def _init_ray(address: str | None, workers: int | None) -> int:
    """Start (or connect to) Ray; returns how many runs to keep in flight."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    ray = _import_ray()

    opts: dict[str, Any] = dict(
        logging_level=logging.ERROR, log_to_driver=False, configure_logging=True
    )
    if address:
        _check_reachable(address)
        for attempt in range(CONNECT_ATTEMPTS):
            try:
                ray.init(address=address, **opts)
                break
            except Exception as e:  # noqa: BLE001 - Ray raises many types; the user needs the text
                # A Ray client proxy sometimes fails to start the per-client server on a busy
                # head node ("Starting Ray client server failed"); a new connection usually works.
                if attempt + 1 == CONNECT_ATTEMPTS:
                    raise SweepError(
                        f"cannot connect to the Ray cluster at {address} "
                        f"({CONNECT_ATTEMPTS} attempts): {e}"
                    ) from None
                first_line = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
                print(
                    f"xlat: connecting to {address} failed ({first_line}); retrying",
                    file=sys.stderr,
                )
                ray.shutdown()
                time.sleep(2.0)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        return workers or max(cpus, 1)
    n = workers or os.cpu_count() or 1
    ray.init(
        address="local",
        num_cpus=n,
        include_dashboard=False,
        object_store_memory=128 * 2**20,
        **opts,
    )
    return n


def _timing_thread(ray: Any, window: int) -> str | None:
    """``XLAT_TIMING_THREAD`` for the runs of a sweep keeping ``window`` runs in flight:
    ``"off"`` when the runs alone fill the CPUs (a second thread per run would only compete
    with the other runs), else ``None`` (each run decides, see docs/timing.md, "Speed"). An
    explicit ``XLAT_TIMING_THREAD`` in the environment is left to the runs.

    >>> class Cluster:
    ...     def cluster_resources(self):
    ...         return {"CPU": 4.0}
    >>> _timing_thread(Cluster(), 4), _timing_thread(Cluster(), 2)
    ('off', None)
    """
    if "XLAT_TIMING_THREAD" in os.environ:
        return None
    cpus = int(ray.cluster_resources().get("CPU", 1))
    return "off" if 2 * window > cpus else None


def run_model_version(run: Run) -> int:
    """The model version a run gets from this build (:func:`xlat.model_version_of`): from its
    cores (``sim.cores``), its processes (one per comma-separated workload; one trace is one
    process), its design and its workload.

    Examples
    --------
    >>> one = run_model_version(Run("radix", "gups", None, None, 1, (), None, config={}))
    >>> one == model_version_of(1, 1, "radix", "gups"), one >= 3   # version 3 moved every run
    (True, True)
    """
    sim = run.config.get("sim", {}) if run.config else {}
    processes = 1 if run.trace else len(str(run.workload).split(","))
    cores = int(sim.get("cores", 1) or 1)
    return model_version_of(cores, processes, run.design, str(run.workload))


def plan_reuse(
    runs: list[Run],
    stored: dict[str, dict[str, Any]],
    current_model: int | Callable[[Run], int],
    force: bool = False,
) -> tuple[list[Run], dict[int, int], int]:
    """Which of ``runs`` to run, given the store's rows ``stored`` (:meth:`Store.stored`): a
    run is reused when its row is ``ok`` and was made by the model version this build gives the
    run (``current_model``: one for all, or per run, :func:`run_model_version`), or by no
    recorded version when the run's current version is 1 (rows older than ``model_version``
    were made by version 1's model or an earlier one: reused, and counted, so that the caller
    can say so; under a later version they are outdated, counted as version 1); every other
    run runs (all of them with ``force``). Returns the runs to run, the count of ``ok`` rows
    run again per older model version, and the legacy count.

    Examples
    --------
    >>> runs = [Run("radix", "gups", None, None, 1, (), None, config_hash=h) for h in "abcd"]
    >>> stored = {"a": {"status": "ok", "model_version": 2},
    ...           "b": {"status": "ok", "model_version": 1},
    ...           "c": {"status": "ok", "model_version": None},
    ...           "d": {"status": "failed", "model_version": None}}
    >>> todo, outdated, legacy = plan_reuse(runs, stored, 2)
    >>> [r.config_hash for r in todo], outdated, legacy
    (['b', 'c', 'd'], {1: 2}, 0)

    Per run: a change that moved only machines leaves a one-core run's version 1 current.

    >>> todo, outdated, legacy = plan_reuse(runs, stored, lambda run: 1)
    >>> [r.config_hash for r in todo], outdated, legacy
    (['a', 'd'], {2: 1}, 1)
    """
    todo, outdated, legacy = [], {}, 0
    for run in runs:
        row = stored.get(run.config_hash, {})
        version = row.get("model_version")
        current = current_model(run) if callable(current_model) else current_model
        if force or row.get("status") != "ok":
            todo.append(run)
        elif (version or 1) != current:  # no recorded version: version 1's model
            outdated[version or 1] = outdated.get(version or 1, 0) + 1
            todo.append(run)
        elif version is None:
            legacy += 1
    return todo, outdated, legacy


def run_sweep(
    spec: Spec,
    db: str | Path = DEFAULT_DB,
    workers: int | None = None,
    address: str | None = None,
    force: bool = False,
    progress: str = "none",
    keep_ray: bool = False,
    max_runs: int | None = None,
) -> dict[str, Any]:
    """Run the runs of ``spec`` not yet stored in ``db`` on Ray; returns counts and the runs.

    ``progress`` is ``"bar"``, ``"lines"``, ``"errors"`` (a line per failed run only) or
    ``"none"``. Interrupting (Ctrl-C) stops with
    ``summary["interrupted"]`` set: what finished is stored, the runs in flight are dropped and
    run next time. Ray is started (or connected) here and shut down at the end, unless
    ``keep_ray`` (the caller shuts it down: ``xlat reproduce`` runs many small sweeps on one
    Ray) or Ray was already running in this process (then it is used as it is and left running).
    ``max_runs`` overrides the spec's grid limit (:func:`check_grid`).
    """
    runs = expand(spec, max_runs)
    store = Store(db)
    stored = store.stored(r.config_hash for r in runs)
    todo, outdated, legacy = plan_reuse(runs, stored, run_model_version, force)
    meta = {"spec": spec.origin, "xlat_version": version(), "git_commit": git_commit()}
    todo_hashes = {r.config_hash for r in todo}
    # Rows are keyed by configuration: say when reused rows come from other code (of the same
    # model version, or of none recorded).
    stale = sum(
        1
        for h, m in stored.items()
        if h not in todo_hashes
        and (m["xlat_version"], m["git_commit"]) != (meta["xlat_version"], meta["git_commit"])
    )
    summary = {
        "runs": runs,
        "total": len(runs),
        "skipped": len(runs) - len(todo),
        "stale": stale,
        "outdated": outdated,
        "legacy": legacy,
        "ok": 0,
        "failed": 0,
        "trace_changed": 0,
        "interrupted": False,
    }
    if not todo:
        return summary
    ray = _import_ray()
    reuse = ray.is_initialized()
    if reuse:
        window = workers or max(int(ray.cluster_resources().get("CPU", 1)), 1)
    else:
        window = _init_ray(address, workers)
    task = ray.remote(max_retries=TASK_RETRIES)(execute)
    threads = _timing_thread(ray, window)
    bar = SweepProgress(len(todo), progress)
    inflight: dict[Any, tuple[Run, float]] = {}
    queue = iter(todo)
    exhausted = False
    # Ctrl-C sets a flag that the loop checks between waits instead of raising wherever the
    # signal lands: inside a DuckDB commit, DuckDB turns the interrupt into its own exception and
    # the sweep would go on (seen under load). The waits time out so the flag is seen soon.
    interrupted = _SigintFlag()
    try:
        while inflight or not exhausted:
            if interrupted.is_set():
                raise KeyboardInterrupt
            while not exhausted and len(inflight) < window:
                run = next(queue, None)
                if run is None:
                    exhausted = True
                    break
                inflight[task.remote(run.kwargs(), threads)] = (run, time.monotonic())
            if not inflight:
                break
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=0.5)
            if not ready:
                continue
            more, _ = ray.wait(
                [r for r in inflight if r not in ready],
                num_returns=len(inflight) - len(ready),
                timeout=0,
            )
            finished = []
            for ref in ready + more:
                run, t0 = inflight.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayError as e:
                    result = {
                        "record": None,
                        "error": f"{type(e).__name__}: {e}",
                        "started_at": None,
                        "finished_at": _now(),
                    }
                finished.append((run, result, time.monotonic() - t0))
            rows = [make_row(run, result, meta) for run, result, _ in finished]
            try:
                store.commit(rows)
            except StoreError as e:  # a full disk: stop, keep what is stored, say so
                raise StoreError(
                    f"{e}; {summary['ok'] + summary['failed']} runs of this sweep were stored "
                    "before; the runs in flight were dropped. Free space (or use another --db) "
                    "and rerun the same command to run the rest."
                ) from None
            summary["trace_changed"] += sum(
                row["trace_sha256"] != run.trace_sha256 for (run, _, _), row in zip(finished, rows)
            )
            for (run, _, secs), row in zip(finished, rows):
                ok = row["status"] == "ok"
                summary["ok" if ok else "failed"] += 1
                bar.finished(run, ok, secs, row["error"])
    except KeyboardInterrupt:
        summary["interrupted"] = True
    finally:
        interrupted.restore()
        bar.close()
        if not (reuse or keep_ray):
            ray.shutdown()
    summary["interrupted"] = summary["interrupted"] or interrupted.is_set()
    return summary


class _SigintFlag:
    """While alive, SIGINT sets a flag instead of raising (main thread only; elsewhere the
    default behaviour stays). ``restore()`` puts the previous handler back."""

    def __init__(self) -> None:
        import signal
        import threading

        self._set = False
        self._previous = None
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)

    def _on_sigint(self, signum, frame) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set

    def restore(self) -> None:
        import signal

        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None


def sweep(
    spec: str | Path | Mapping[str, Any],
    db: str | Path = DEFAULT_DB,
    workers: int | None = None,
    address: str | None = None,
    dry_run: bool = False,
    force: bool = False,
    progress: bool = False,
    max_runs: int | None = None,
):
    """Run a sweep and return its runs as a pandas DataFrame (one row per run, from the store).

    ``spec`` is a TOML file or a mapping with the same keys. Runs already stored with status
    ``ok`` are not rerun (``force=True`` reruns them). With ``dry_run`` nothing runs: the frame
    lists the planned runs and whether each is stored. ``max_runs`` overrides the grid limit
    (the spec's ``max_runs``, else :data:`MAX_RUNS`; 0: none).

    Examples
    --------
    >>> import tempfile, os
    >>> db = os.path.join(tempfile.mkdtemp(), "r.duckdb")
    >>> spec = {"designs": ["radix", "ideal"], "workloads": ["gups"], "footprint": "16MiB",
    ...         "refs": "20k", "set": {"os.thp": ["never", "always"]}}
    >>> sweep(spec, db, dry_run=True)[["design", "os.thp", "stored"]]
      design  os.thp stored
    0  radix   never   None
    1  ideal   never   None
    2  radix  always   None
    3  ideal  always   None
    >>> df = sweep(spec, db, workers=1)
    >>> len(df), set(df["status"]), int(df["oracle.mismatches"].sum())
    (4, {'ok'}, 0)
    >>> sweep(spec, db, dry_run=True)["stored"].tolist()
    ['ok', 'ok', 'ok', 'ok']
    """
    import pandas as pd

    if isinstance(spec, Mapping):
        parsed = parse_spec(spec)
    else:
        parsed = load_spec(spec)
    if dry_run:
        runs = expand(parsed, max_runs)
        stored = Store(db).stored(r.config_hash for r in runs)
        return pd.DataFrame(
            [
                {
                    "design": r.design,
                    "workload": r.workload,
                    "footprint": r.footprint,
                    "refs": r.refs,
                    **({"warmup": r.warmup} if r.warmup is not None else {}),
                    "seed": r.seed,
                    **dict(r.params),
                    "config_hash": r.config_hash,
                    "stored": stored.get(r.config_hash, {}).get("status"),
                }
                for r in runs
            ]
        )
    summary = run_sweep(
        parsed, db, workers, address, force, "bar" if progress else "none", max_runs=max_runs
    )
    if summary["interrupted"]:
        raise KeyboardInterrupt(f"sweep interrupted; the finished runs are stored in {db}")
    return frame_of(db, summary["runs"])


def frame_of(db: str | Path, runs: list[Run]):
    """The stored rows of ``runs`` as a DataFrame, in grid order."""
    hashes = [r.config_hash for r in runs] or [""]
    df = Store(db).query(
        f"SELECT * FROM {TABLE} WHERE config_hash IN ({', '.join('?' * len(hashes))})", hashes
    )
    order = {r.config_hash: i for i, r in enumerate(runs)}
    df = df.assign(_order=df["config_hash"].map(order)).sort_values("_order")
    return df.drop(columns="_order").reset_index(drop=True)
