"""Running simulations from Python: presets, overrides, progress, and result records."""

from __future__ import annotations

import difflib
import json
import sys
import threading
import time
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from xlat import _core
from xlat._data import data_dir
from xlat.records import flatten, get_path, record_traces, speedups  # noqa: F401 - API names
from xlat.store import frame_from_records
from xlat.values import check_inputs, check_record

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

#: Chunk of references simulated between two progress updates.
STEP_REFS = 1_000_000

#: ``sim.refs`` of a trace run without ``refs``: no limit (the trace's end ends the run).
TRACE_NO_LIMIT = 1 << 62


def designs() -> list[str]:
    """Names of the registered designs, in registry order.

    Examples
    --------
    >>> designs()[:3]
    ['radix', 'ideal', 'perfect_tlb']
    """
    return [name for name, _ in _core.designs()]


def workloads() -> list[str]:
    """Names of the built-in workloads.

    Examples
    --------
    >>> "gups" in workloads()
    True
    """
    return [name for name, _ in _core.workloads()]


def version() -> str:
    """Version of the simulator core.

    Examples
    --------
    >>> version().count(".")
    2
    """
    return _core.version()


def model_version() -> int:
    """Version of the simulation model (``xlat::MODEL_VERSION``): builds of one model version
    give the same record for the same configuration; it changes with every CHANGELOG "Model
    changes" entry, and a sweep reruns stored runs of another model version (docs/sweeps.md,
    "Resuming").

    Examples
    --------
    >>> model_version() >= 1
    True
    """
    return _core.model_version()


def model_version_of(
    cores: int = 1, processes: int = 1, design: str | None = None, workload: str | None = None
) -> int:
    """The model version of a run of ``cores`` cores and ``processes`` processes of design
    ``design`` (``sim.design``) on ``workload`` (the record's ``workload``: a generator's name,
    the processes' names joined by commas, or a trace's name; ``None`` for either: one that no
    scoped change names): the record's ``model_version``. A model change may name the runs it
    can move (``xlat::MODEL_CHANGES``: every run, only those of several cores or processes, only
    multi-threaded traces on several cores, only one design's, or only one workload's); a run
    keeps the version of the latest change that can move it, and stored runs of that version
    stay reusable.

    Examples
    --------
    >>> model_version_of(1, 1)   # version 11 moved every run (the queued DRAM controller)
    11
    >>> model_version_of(1, 1, "lvm", "memcached")   # later than 6 (LVM's) and 7 (memcached's)
    11
    >>> model_version_of(4, 1, "radix", "memcached") == model_version()
    True
    """
    return _core.model_version_of(int(cores), int(processes), design or "", workload or "")


def preset_dirs() -> list[Path]:
    """Folders searched for preset names: ``./configs``, then the presets the package ships
    (:func:`xlat._data.data_dir`)."""
    return [Path.cwd() / "configs", data_dir() / "configs"]


def load_preset(preset: str | None) -> tuple[str | None, str]:
    """Return ``(toml_text, origin)`` for a preset name or path (``(None, "defaults")`` if none).

    A name is looked up as ``configs/NAME.toml``; anything with a slash or ending in ``.toml`` is
    a path.

    Examples
    --------
    >>> load_preset(None)
    (None, 'defaults')
    >>> text, origin = load_preset("test-small")
    >>> origin.endswith("test-small.toml")
    True
    """
    if preset is None:
        return None, "defaults"
    candidates: list[Path]
    if "/" in preset or preset.endswith(".toml"):
        candidates = [Path(preset)]
    else:
        candidates = [d / f"{preset}.toml" for d in preset_dirs()]
    for path in candidates:
        try:
            if path.is_dir():
                raise _core.XlatError(f"preset {path}: is a directory, not a TOML file")
            if path.is_file():
                return read_text(path, "preset"), str(path)
        except OSError as e:  # a name too long for the file system, a folder without access
            raise _core.XlatError(f"preset {path}: cannot read it: {e.strerror or e}") from None
    names = sorted({p.stem for d in preset_dirs() if d.is_dir() for p in d.glob("*.toml")})
    raise _core.XlatError(
        f"preset '{preset}' not found (looked for {', '.join(map(str, candidates))}); "
        f"available presets: {', '.join(names) or 'none'}"
    )


#: Sections a CPU preset may set: the machine, never the workload, the OS or the run.
CPU_SECTIONS = ("tlb", "mem", "core", "timing", "radix")


def cpu_dirs() -> list[Path]:
    """Folders searched for CPU presets: ``./configs/cpus``, then the package's."""
    return list(dict.fromkeys(d.resolve() / "cpus" for d in preset_dirs()))


def cpu_path(name: str) -> Path | None:
    """The file of CPU preset ``name`` (the first folder of :func:`cpu_dirs` holding it)."""
    for d in cpu_dirs():
        path = d / f"{name}.toml"
        try:
            if path.is_file():
                return path
        except OSError:  # a name too long for a file name cannot be a preset's
            return None
    return None


def cpus() -> list[str]:
    """Names of the CPU presets (``configs/cpus/*.toml``), sorted.

    Examples
    --------
    >>> {"skylake-sp", "neoverse-n1"} <= set(cpus())
    True
    """
    return sorted({p.stem for d in cpu_dirs() if d.is_dir() for p in d.glob("*.toml")})


def load_cpu(name: str) -> tuple[str, str]:
    """Return ``(toml_text, origin)`` of CPU preset ``name``; XlatError listing the valid names
    (and the closest one) if there is no such preset, or naming the file and the section if it
    sets anything but the machine (:data:`CPU_SECTIONS`).

    Examples
    --------
    >>> text, origin = load_cpu("neoverse-n1")
    >>> origin.endswith("cpus/neoverse-n1.toml")
    True
    >>> load_cpu("neoverse-m1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    _core.XlatError: unknown CPU preset 'neoverse-m1' (did you mean 'neoverse-n1'?); ...
    """
    path = cpu_path(name) if name and "/" not in name and not name.startswith(".") else None
    if path is None:
        names = cpus()
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise _core.XlatError(
            f"unknown CPU preset '{name}'{hint}; CPU presets: {', '.join(names) or 'none'} "
            f"(files in {', '.join(str(d) for d in cpu_dirs())})"
        )
    text = read_text(path, "CPU preset")
    try:
        sections = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return text, str(path)  # the core reports the syntax error with the file's name
    for section in sections:
        if section not in CPU_SECTIONS:
            raise _core.XlatError(
                f"CPU preset {path}: sets '{section}', but a CPU preset describes the machine "
                f"only (sections {', '.join(CPU_SECTIONS)}); put it in a --preset file"
            )
    return text, str(path)


def cpu_keys(name: str) -> set[str]:
    """The configuration keys CPU preset ``name`` sets (empty for an unknown name).

    Examples
    --------
    >>> "tlb.l1_organization" in cpu_keys("neoverse-n1")
    True
    """
    path = cpu_path(name) if name and "/" not in name else None
    if path is None:
        return set()
    try:
        tree = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return set()
    return set(flatten(tree))


def cpu_description(name: str) -> str:
    """The one-line description of a CPU preset: its file's first comment line.

    Examples
    --------
    >>> cpu_description("neoverse-n1").startswith("Arm Neoverse N1")
    True
    """
    path = cpu_path(name)
    if path is None:
        return ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
        if line.strip():
            break
    return ""


def select_cpu(
    cpu: str | None, preset_text: str | None, overrides: list[tuple[str, str]]
) -> tuple[str, list[tuple[str, str]], list[tuple[str, str]]]:
    """Which CPU preset a run uses, and the layers and overrides that apply it.

    The name comes from ``--set sim.cpu=NAME`` (an override), else ``cpu`` (``--cpu``), else
    the preset file's ``sim.cpu``; ``cpu`` and an override naming different CPUs is an error.
    Returns ``(name, base_layers, overrides)``: ``base_layers`` holds the CPU file (applied
    beneath the preset), and ``overrides`` records the name as ``sim.cpu``.

    Examples
    --------
    >>> name, layers, over = select_cpu("zen4", None, [("os.thp", "always")])
    >>> name, len(layers), over
    ('zen4', 1, [('sim.cpu', 'zen4'), ('os.thp', 'always')])
    >>> select_cpu(None, None, [])
    ('', [], [])
    >>> select_cpu("zen4", None, [("sim.cpu", "neoverse-n1")])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    _core.XlatError: the CPU is given twice: cpu='zen4' (--cpu) and sim.cpu='neoverse-n1' ...
    """
    from_set = [v for k, v in overrides if k.strip() == "sim.cpu"]
    name = from_set[-1].strip() if from_set else None
    if cpu is not None and name is not None and cpu != name:
        raise _core.XlatError(
            f"the CPU is given twice: cpu='{cpu}' (--cpu) and sim.cpu='{name}' (--set); "
            "give one of them"
        )
    if name is None and cpu is not None:
        name = cpu
        overrides = [("sim.cpu", cpu), *overrides]
    if name is None and preset_text is not None:
        try:
            name = tomllib.loads(preset_text).get("sim", {}).get("cpu")
        except (tomllib.TOMLDecodeError, AttributeError):
            name = None  # the core reports a malformed preset with its file's name
        name = name if isinstance(name, str) else None
    if not name:
        return "", [], overrides
    text, origin = load_cpu(name)
    return name, [(origin, text)], overrides


def read_text(path: str | Path, what: str) -> str:
    """The UTF-8 text of a configuration file; XlatError naming the file, offset and problem.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "p.toml")
    >>> _ = open(p, "wb").write(b"[sim]\\n# \\xff\\n")
    >>> read_text(p, "preset")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    _core.XlatError: preset .../p.toml: not UTF-8 text (byte 0xff at offset 8)
    """
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _core.XlatError(
            f"{what} {path}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})"
        ) from None


def build_overrides(
    design: str | None = None,
    workload: str | None = None,
    footprint: str | int | None = None,
    refs: str | int | None = None,
    seed: int | None = None,
    set: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None,
    warmup: str | int | None = None,
    profile: str | None = None,
) -> list[tuple[str, str]]:
    """Turn keyword arguments into ``(key, value)`` overrides, applied after the preset.

    Examples
    --------
    >>> build_overrides(design="ideal", refs="1M", set={"os.thp": "always"})
    [('sim.design', 'ideal'), ('sim.refs', '1M'), ('os.thp', 'always')]
    >>> build_overrides(refs="1M", warmup="500k")
    [('sim.refs', '1M'), ('sim.warmup_refs', '500k')]
    >>> build_overrides(design="tps", profile="none")
    [('sim.design', 'tps'), ('sim.profile', 'none')]
    """
    out: list[tuple[str, str]] = []
    for key, value in (
        ("sim.design", design),
        ("sim.profile", profile),
        ("workload.name", workload),
        ("workload.footprint", footprint),
        ("sim.refs", refs),
        ("sim.warmup_refs", warmup),
        ("sim.seed", seed),
    ):
        if value is not None:
            out.append((key, str(value)))
    items = set.items() if isinstance(set, Mapping) else (set or [])
    for key, value in items:
        if isinstance(value, bool):
            value = "true" if value else "false"
        out.append((str(key), str(value)))
    return out


def resolve_config(preset: str | None = None, cpu: str | None = None, **kwargs: Any) -> str:
    """The resolved configuration tree as TOML text (raises XlatError on a bad key or value).

    Layers, each over the one before: built-in defaults < CPU preset ``cpu`` (a name from
    :func:`cpus`) < ``preset`` < the keyword arguments and ``set`` overrides.

    Examples
    --------
    >>> "levels = 5" in resolve_config(set={"radix.levels": 5})
    True
    >>> 'l1_organization = "any_size"' in resolve_config(cpu="neoverse-n1")
    True
    """
    text, origin = load_preset(preset)
    _, layers, overrides = select_cpu(cpu, text, build_overrides(**kwargs))
    return checked_config(text, origin, overrides, layers)


def resolve_config_sources(
    preset: str | None = None, cpu: str | None = None, **kwargs: Any
) -> tuple[str, dict[str, str], list[str]]:
    """:func:`resolve_config` with provenance: ``(toml_text, sources, warnings)``.

    ``sources`` maps every key whose value differs from the built-in default to the layer that
    set it: ``cpu:<name>``, ``profile:<name>`` (the design's paper's settings, see
    :func:`design_profiles`), ``preset:<name>``, ``set`` or ``derived``; ``warnings`` names each
    profile setting that a preset or override replaced (and what that turns off).

    Examples
    --------
    >>> text, sources, warns = resolve_config_sources(design="tps")
    >>> sources["os.policy"], sources["tlb.l1_any.entries"]
    ('profile:tps', 'profile:tps')
    >>> _, sources, warns = resolve_config_sources(design="tps", set={"os.policy": "mthp"})
    >>> sources["os.policy"], len(warns)
    ('set', 1)
    >>> _, sources, _ = resolve_config_sources(design="tps", profile="none")
    >>> "os.policy" in sources
    False
    """
    text, origin = load_preset(preset)
    _, layers, overrides = select_cpu(cpu, text, build_overrides(**kwargs))
    check_inputs(overrides, [*layers, (origin, text)])
    toml_text, sources, warns = _core.resolve_config_sources(text, origin, overrides, layers)
    return toml_text, dict(sources), list(warns)


def design_profiles() -> list[dict[str, Any]]:
    """Each registered design's profile: the settings its paper assumes around it (OS policy,
    TLB organization, companion structures, the host side when nested), applied when the
    design is named (``sim.profile = "auto"``); ``keys`` lists the keys it sets.

    Examples
    --------
    >>> tps = next(p for p in design_profiles() if p["name"] == "tps")
    >>> sorted(tps["keys"])
    ['os.policy', 'tlb.l1_any.entries', 'tlb.l1_any.ways', 'tlb.l1_organization']
    >>> next(p for p in design_profiles() if p["name"] == "radix")["keys"]
    []
    """
    return [
        {"name": n, "summary": s, "paper": p, "settings": line, "keys": list(keys)}
        for n, s, p, line, keys in _core.design_profiles()
    ]


def baseline_profiles() -> list[dict[str, str]]:
    """The named baseline profiles (``sim.profile = NAME``): the papers' baselines.

    Examples
    --------
    >>> [p["name"] for p in baseline_profiles()]
    ['4k', 'thp', 'thp_res']
    """
    return [
        {"name": n, "summary": s, "paper": p, "settings": line}
        for n, s, p, line in _core.baseline_profiles()
    ]


class ProfileWarning(UserWarning):
    """A preset or ``--set`` replaced a setting of the design's profile (its paper's design)."""


#: Profile warnings already shown in this process (each is shown once).
_PROFILE_WARNED: set[str] = set()


def warn_profile_overrides(label: str, messages: Iterable[str]) -> None:
    """Emit each :class:`ProfileWarning` once per process."""
    for message in messages:
        text = f"{label}: {message}" if label else message
        if text not in _PROFILE_WARNED:
            _PROFILE_WARNED.add(text)
            warnings.warn(text, ProfileWarning, stacklevel=3)


def checked_config(
    text: str | None,
    origin: str,
    overrides: list[tuple[str, str]],
    layers: list[tuple[str, str]],
) -> str:
    """The resolved configuration of a preset ``text``, its ``overrides`` and base ``layers``,
    after the value rules of :mod:`xlat.values` (every value one its key takes, every float
    finite and bounded) have passed every layer and override: XlatError naming the key
    otherwise. (The defaults pass them: tests/test_values.py.)"""
    check_inputs(overrides, [*layers, (origin, text)])
    return _core.resolve_config(text, origin, overrides, layers)


#: Host memory the simulator holds per mapped page (the OS model's page tables, mapping and
#: frame state), a little under what was measured (113-129 bytes: radix, ideal and ecpt,
#: 1 M pages of gups at 16 GiB; docs/performance.md).
HOST_BYTES_PER_PAGE = 100


def host_memory_bytes(meminfo: str = "/proc/meminfo") -> int | None:
    """This machine's physical memory plus swap (``MemTotal`` + ``SwapTotal``), or None when
    unknown (not Linux).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix="meminfo", delete=False) as f:
    ...     _ = f.write("MemTotal: 1024 kB\\nMemFree: 5 kB\\nSwapTotal: 1024 kB\\n")
    >>> host_memory_bytes(f.name)
    2097152
    """
    try:
        with open(meminfo) as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return sum(int(fields[k].split()[0]) * 1024 for k in ("MemTotal", "SwapTotal"))
    except (OSError, KeyError, ValueError):
        return None


def peak_rss_bytes() -> int | None:
    """This process's peak resident memory so far (``getrusage``'s ``ru_maxrss``), or None
    where unknown (not Unix). A process that ran several simulations (a sweep's worker) reports
    its high-water mark over all of them: an upper bound on the last run's own peak.

    Examples
    --------
    >>> peak_rss_bytes() > 1 << 20
    True
    """
    try:
        import resource
    except ImportError:
        return None
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux counts KiB; macOS counts bytes.
    return int(kib) if sys.platform == "darwin" else int(kib) * 1024


def check_host_memory(config: Mapping[str, Any], available: int | None) -> None:
    """Refuse, before it starts, a run whose mapped pages cannot fit this machine's memory plus
    swap (``available`` bytes; None: no check). A run maps at most one new page per reference,
    the warm-up's included (``sim.refs`` + ``sim.warmup_refs``), and at most its processes'
    footprints; each costs the simulator about :data:`HOST_BYTES_PER_PAGE` bytes. Without this
    the host would run out of memory partway through (the simulated machine's own limit,
    ``os.phys_mem_bytes`` + ``os.swap.bytes``, is the core's check).

    Examples
    --------
    >>> cfg = {"sim": {"refs": 10**9, "warmup_refs": 10**9},
    ...        "workload": {"name": "gups", "footprint": 16 << 40}}
    >>> check_host_memory(cfg, 64 << 30)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    _core.XlatError: the run may map 2,000,000,000 pages (sim.refs = 1,000,000,000 ...
    >>> check_host_memory(cfg, 256 << 30)
    >>> check_host_memory({"sim": {"refs": 10**9, "warmup_refs": "auto"},
    ...                    "workload": {"name": "gups", "footprint": 16 << 40}}, 256 << 30)
    """
    sim, workload = config.get("sim", {}), config.get("workload", {})
    if available is None:
        return
    processes = len([n for n in str(workload.get("name", "")).split(",") if n]) or 1
    footprint_pages = int(workload.get("footprint", 0)) // 4096 * processes
    refs = int(sim.get("refs", 0))
    # "auto" warms up at most `refs` (the core's cap: a run simulates at most twice its refs).
    warmup = sim.get("warmup_refs", 0)
    warmup = refs if warmup == "auto" else int(warmup)
    pages = min(footprint_pages, refs + warmup)
    need = pages * HOST_BYTES_PER_PAGE
    if need > available:
        gib = 1 << 30
        raise _core.XlatError(
            f"the run may map {pages:,} pages (sim.refs = {refs:,} plus sim.warmup_refs = "
            f"{warmup:,} references, workload.footprint = "
            f"{int(workload.get('footprint', 0)) / gib:g} GiB x {processes} process(es)), and "
            "the simulator holds about "
            f"{HOST_BYTES_PER_PAGE} bytes per mapped page: {need / gib:.1f} GiB, more than this "
            f"machine's memory plus swap ({available / gib:.1f} GiB); lower the references, "
            "the warm-up or the footprint"
        )


class SetupNotice:
    """While a run is set up (a workload built, traces opened: the core releases the GIL),
    a line on stderr naming the phase and the seconds so far, so a long setup shows life.

    Examples
    --------
    >>> with SetupNotice("radix", "building the workload", enabled=False):
    ...     pass
    """

    def __init__(self, label: str, what: str, enabled: bool) -> None:
        self.label, self.what, self.enabled = label, what, enabled
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _tick(self) -> None:
        start = time.monotonic()
        while not self._stop.wait(0.5):
            sys.stderr.write(
                f"\r{self.label:<14} setup: {self.what} {time.monotonic() - start:5.0f}s"
            )
            sys.stderr.flush()

    def __enter__(self) -> SetupNotice:
        if self.enabled:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            sys.stderr.write("\r\033[K")  # the progress bar takes the line over
            sys.stderr.flush()


class Progress:
    """A one-line progress display on stderr: references done, rate and ETA."""

    def __init__(self, label: str, total: int, enabled: bool) -> None:
        self.label, self.total, self.enabled = label, max(total, 1), enabled
        self.start = time.monotonic()

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = done / elapsed
        if self.total >= TRACE_NO_LIMIT:
            sys.stderr.write(
                f"\r{self.label:<14} {done / 1e6:8.2f} M refs {rate / 1e6:6.2f} M/s {elapsed:6.0f}s"
            )
            sys.stderr.flush()
            return
        frac = min(done / self.total, 1.0)
        eta = (self.total - done) / rate if rate > 0 else float("inf")
        bar = "#" * int(frac * 30)
        sys.stderr.write(
            f"\r{self.label:<14} [{bar:<30}] {done / 1e6:8.2f}/{self.total / 1e6:.2f} M refs "
            f"{rate / 1e6:6.2f} M/s ETA {eta:5.0f}s"
        )
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


#: Share of a run's measured references that are first touches of a page above which
#: :func:`run` warns that it measured the program's setup (``xlat::warmup``'s
#: ``FIRST_TOUCH_WARN_SHARE``).
FIRST_TOUCH_WARN_SHARE = 0.1


class FirstTouchWarning(UserWarning):
    """A run whose measured region is (mostly) the program's first touches of its memory."""


def first_touch_share(record: Mapping[str, Any]) -> float:
    """Share of a record's references that first touched a page: 4 KiB page faults count one
    page, 2 MiB faults 512 (an initialization loop stores to each 4 KiB page), at most 1.

    Examples
    --------
    >>> first_touch_share({"refs": 1000, "os": {"page_faults": 100, "faults_2m": 0}})
    0.1
    >>> first_touch_share({"refs": 1000, "os": {"page_faults": 3, "faults_2m": 2}})
    1.0
    """
    if "warmup" in record:
        return float(record["warmup"]["first_touch_share"])
    refs = int(record.get("refs") or 0)
    faults = int(record.get("os", {}).get("page_faults") or 0)
    faults_2m = int(record.get("os", {}).get("faults_2m") or 0)
    pages = max(faults - faults_2m, 0) + 512 * faults_2m
    return min(pages / refs, 1.0) if refs else 0.0


def first_touch_warning(record: Mapping[str, Any]) -> str | None:
    """The warning for a record whose measured region is still the first-touch phase (None
    when it is not): more than :data:`FIRST_TOUCH_WARN_SHARE` of its references first touched
    a page.

    Examples
    --------
    >>> rec = {"design": "radix", "workload": "gups", "refs": 1000,
    ...        "os": {"page_faults": 900, "faults_2m": 0}}
    >>> print(first_touch_warning(rec))  # doctest: +NORMALIZE_WHITESPACE
    radix on gups: 90 % of the measured references first touched a page: the run measured the
    program's setup (its first-touch phase), not its steady state; warm up with at least about
    900 references (--warmup / sim.warmup_refs) or simulate more
    >>> first_touch_warning({"refs": 1000, "os": {"page_faults": 10, "faults_2m": 0}}) is None
    True
    """
    share = first_touch_share(record)
    if share <= FIRST_TOUCH_WARN_SHARE:
        return None
    warm = record.get("warmup", {})
    refs = int(record.get("refs") or 0)
    suggest = int(warm.get("refs", 0)) + int(round(share * refs))
    return (
        f"{record.get('design', '?')} on {record.get('workload', '?')}: {share:.0%} of the "
        "measured references first touched a page: the run measured the program's setup (its "
        "first-touch phase), not its steady state; warm up with "
        f"{'more than' if share >= 1.0 else 'at least about'} "
        f"{suggest} references (--warmup / sim.warmup_refs) or simulate more"
    ).replace("%", " %", 1)


def run(
    design: str | None = None,
    workload: str | None = None,
    footprint: str | int | None = None,
    refs: str | int | None = None,
    seed: int | None = None,
    preset: str | None = None,
    set: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None,
    progress: bool = False,
    trace: str | list[str] | None = None,
    trace_format: str | None = None,
    as_frame: bool = False,
    cpu: str | None = None,
    warmup: str | int | None = None,
    profile: str | None = None,
):
    """Run one simulation and return its result record (a nested dict; see docs/results.md).

    Naming a design applies its **profile**: the settings its paper assumes around it (TPS's
    reservation paging and any-size L1 TLB, RMM's eager paging and range TLB, ET's THP and
    contiguous bit, ...; :func:`design_profiles`), on top of ``cpu`` and beneath ``preset`` and
    ``set``. ``profile="none"`` runs the bare mechanism on the default OS and TLBs;
    ``profile="thp_res"`` (or another of :func:`baseline_profiles`) applies that baseline
    instead. The record's ``config_sources`` says where every non-default setting came from; a
    preset or override that replaces a profile setting draws one :class:`ProfileWarning`.

    ``warmup`` (``sim.warmup_refs``) references are simulated first and then the statistics
    restart from zero: the record's figures cover the ``refs`` references after the warm-up,
    and its ``warmup`` section says how (docs/results.md). A run whose measured references are
    mostly first touches of pages (the program's setup) emits a :class:`FirstTouchWarning`.

    Arguments left as None take the preset's (or the built-in default) value; ``set`` holds
    any further ``section.field`` overrides. With ``trace`` (a native ``.xlat`` file or a
    ChampSim trace; ``trace_format`` auto, native, champsim or cloudsuite) the references come
    from the file instead of a workload generator, the whole trace unless ``refs`` limits it,
    and the record's ``trace`` section carries the file's path, format and sha256. With
    ``as_frame=True`` the result is a one-row pandas DataFrame with the result store's columns
    (figures by dotted path, see docs/sweeps.md) instead of the dict.

    ``cpu`` names a CPU preset (:func:`cpus`, files ``configs/cpus/NAME.toml``): its TLBs,
    page-walk caches, caches, DRAM and core are applied beneath ``preset``, whose keys and
    then ``set`` override it; the record's ``config.sim.cpu`` names it.

    Several processes: ``workload="gups,kv"`` (a comma list) or a list of traces runs one
    process per workload or trace, on ``sim.cores`` cores (``set={"sim.cores": 2}``); more
    processes than cores time-share them (``sim.quantum``). The record then has a ``cores``
    and a ``processes`` list besides the totals (docs/machine.md).

    Examples
    --------
    >>> rec = run(design="ideal", workload="gups", footprint="16MiB", refs=20000)
    >>> rec["walk"]["mem_accesses"] <= rec["walk"]["count"]
    True
    >>> df = run(design="ideal", workload="gups", footprint="16MiB", refs=20000, as_frame=True)
    >>> int(df.loc[0, "walk.mem_accesses"]) == rec["walk"]["mem_accesses"]
    True
    >>> n1 = run(design="radix", workload="gups", footprint="16MiB", refs=20000,
    ...          cpu="neoverse-n1")
    >>> n1["config"]["sim"]["cpu"], n1["config"]["tlb"]["l1_organization"]
    ('neoverse-n1', 'any_size')
    >>> w = run(design="radix", workload="gups", footprint="16MiB", refs=20000, warmup=10000)
    >>> w["refs"], w["warmup"]["refs"], w["tlb"]["l1_lookups"]
    (20000, 10000, 20000)
    """
    if trace is not None and (workload is not None or footprint is not None):
        given = "workload" if workload is not None else "footprint"
        raise _core.XlatError(
            f"{given} cannot be given with a trace: the references come from the trace file "
            f"{trace} (it would be recorded in the configuration without effect)"
        )
    text, origin = load_preset(preset)
    overrides = build_overrides(design, workload, footprint, refs, seed, set, warmup, profile)
    if trace is not None and refs is None:
        overrides.insert(0, ("sim.refs", str(TRACE_NO_LIMIT)))
    _, layers, overrides = select_cpu(cpu, text, overrides)
    resolved_text = checked_config(text, origin, overrides, layers)
    if trace is None:
        check_host_memory(tomllib.loads(resolved_text), host_memory_bytes())
    label = design or dict(overrides).get("sim.design", "")
    what = "opening the trace" if trace is not None else "building the workload"
    with SetupNotice(label, what, progress):
        if isinstance(trace, (list, tuple)):
            # One process per trace (a multi-programmed run, see ``sim.cores``).
            traces = [str(t) for t in trace]
            sim = _core.Simulation(text, origin, overrides, None, trace_format, layers, traces)
        else:
            sim = _core.Simulation(text, origin, overrides, trace, trace_format, layers)
    warn_profile_overrides(label, sim.warnings)
    bar = Progress(label, sim.total_refs, progress)
    try:
        while not sim.step(STEP_REFS):
            bar.update(sim.refs)
        bar.update(sim.refs)
    finally:
        bar.close()
    record = json.loads(sim.record())
    peak = peak_rss_bytes()
    if peak is not None:
        record.setdefault("sim", {})["peak_rss_bytes"] = peak
    for section in record_traces(record):
        # The trace's own footprint: what labels the run (xlat.records.label_columns).
        if isinstance(section.get("sha256"), str) and "footprint_bytes" not in section:
            section["footprint_bytes"] = trace_footprint(
                str(section.get("path")), section["sha256"], section.get("format")
            )
    check_record(record)
    if not record.get("refs"):
        source = f"trace {trace}" if trace is not None else "the workload"
        raise _core.XlatError(
            f"{source} produced no memory reference (a ChampSim trace without memory operands?): "
            "a run of 0 references has no figures"
        )
    message = first_touch_warning(record)
    if message is not None:
        warnings.warn(message, FirstTouchWarning, stacklevel=2)
    if as_frame:
        return frame_from_records([record])
    return record


def cache_dir() -> Path | None:
    """Where facts derived from traces are cached, as the core caches them (``XLAT_CACHE_DIR``,
    empty for none; else ``$XDG_CACHE_HOME/xlat``; else ``~/.cache/xlat``)."""
    import os

    if "XLAT_CACHE_DIR" in os.environ:
        return Path(os.environ["XLAT_CACHE_DIR"]) if os.environ["XLAT_CACHE_DIR"] else None
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "xlat"
    return Path.home() / ".cache" / "xlat" if os.environ.get("HOME") else None


_FOOTPRINTS: dict[str, int | None] = {}


def trace_footprint(path: str, sha256: str, trace_format: str | None = None) -> int | None:
    """The footprint of the trace whose content hash is ``sha256``: the bytes of the 4 KiB
    pages its references touch (``xlat trace info``), a property of the file alone (no design,
    THP setting or reference limit changes it). Read from the trace's stored summary or by a
    scan, once per content: cached in memory and under :func:`cache_dir`. None when the file
    can no longer be read as that content.

    Examples
    --------
    >>> import hashlib
    >>> p = "tests/data/sort.xlat"
    >>> trace_footprint(p, hashlib.sha256(open(p, "rb").read()).hexdigest())
    581632
    """
    if sha256 in _FOOTPRINTS:
        return _FOOTPRINTS[sha256]
    cache = cache_dir()
    cached = cache / "trace-footprint" / f"{sha256}.json" if cache else None
    value: int | None = None
    try:
        value = int(json.loads(cached.read_text())["footprint_bytes"]) if cached else None
    except (OSError, ValueError, KeyError, TypeError):
        value = None
    if value is None:
        try:
            info = json.loads(_core.trace_info(path, trace_format))
        except (_core.XlatError, OSError, ValueError):
            return None
        if info.get("trace", {}).get("sha256") not in (None, sha256):
            return None  # the file changed since the run read it
        value = int(info["footprint_bytes"])
        if cached is not None:
            try:
                cached.parent.mkdir(parents=True, exist_ok=True)
                tmp = cached.with_name(f".{cached.name}.tmp{id(value)}")
                tmp.write_text(json.dumps({"footprint_bytes": value}))
                tmp.replace(cached)
            except OSError:
                pass  # a cache that cannot be written only costs a scan next time
    _FOOTPRINTS[sha256] = value
    return value


def compare(
    designs: Iterable[str] | None = None,
    workload: str | None = None,
    footprint: str | int | None = None,
    refs: str | int | None = None,
    seed: int | None = None,
    preset: str | None = None,
    set: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None,
    progress: bool = False,
    trace: str | None = None,
    trace_format: str | None = None,
    as_frame: bool = False,
    cpu: str | None = None,
    warmup: str | int | None = None,
    profile: str | None = None,
):
    """Run the same workload on several designs (all registered ones when None).

    Returns the list of result records, or with ``as_frame=True`` a pandas DataFrame with one
    row per design (the result store's columns). ``cpu`` names a CPU preset, ``warmup`` the
    warm-up references and ``profile`` the profile (default: each design's own), as in
    :func:`run`.

    Examples
    --------
    >>> recs = compare(["radix", "perfect_tlb"], workload="gups", footprint="16MiB", refs=20000)
    >>> [r["design"] for r in recs]
    ['radix', 'perfect_tlb']
    >>> recs[1]["mmu"]["overhead_cycles"]
    0
    >>> df = compare(["radix", "ideal"], workload="gups", footprint="16MiB", refs=20000,
    ...              as_frame=True)
    >>> df[["design", "workload"]].values.tolist()
    [['radix', 'gups'], ['ideal', 'gups']]
    >>> recs = compare(["radix", "ideal"], workload="gups", footprint="16MiB", refs=20000,
    ...                cpu="zen4")
    >>> {r["config"]["sim"]["cpu"] for r in recs}
    {'zen4'}
    """
    names = list(designs) if designs is not None else globals()["designs"]()
    records = [
        run(
            d,
            workload,
            footprint,
            refs,
            seed,
            preset,
            set,
            progress,
            trace,
            trace_format,
            cpu=cpu,
            warmup=warmup,
            profile=profile,
        )
        for d in names
    ]
    if as_frame:
        return frame_from_records(records)
    return records
