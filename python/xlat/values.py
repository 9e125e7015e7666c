"""What a configuration may hold and what a result may store: the one place of the value rules.

Contract:

- :func:`check_inputs` reads the text of every override and preset value of an integer or float
  configuration key before the core does and raises :class:`xlat._core.XlatError` naming the
  key when the value is not one the key takes: an integer key takes a whole number (a count,
  with decimal suffixes ``k``, ``M``, ``G``, ``T``) or, for a size key (``*_bytes``,
  ``*footprint``), a size in binary units (``B``, ``KiB`` ... ``PiB``; ``K`` ... ``P`` alike;
  a key named ``bytes``, as ``os.swap.bytes``, reads a count first, as the core does);
  a float key takes a finite number within :data:`FLOAT_LIMIT` (:func:`check_float`).
- :func:`check_config` applies :func:`check_float` to every float of a resolved tree.
- :func:`bad_figures` lists the figures of a result record that are not finite numbers (a
  null is allowed only for a ratio, where it means "no events to divide by");
  :func:`check_record` raises naming them. A record failing it is never stored as data.

Nothing here changes a value: a value that passes is handed to the core as it was given.
Imports only :mod:`xlat.records` and the core.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from xlat import _core
from xlat.records import flatten

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

#: Largest magnitude of a float configuration value. Every float key is a share, a rate, a
#: cost per event or a scale factor; the largest default is 200 (``lvm.x3``). A value beyond
#: this bound multiplied by a run's counts (up to ~1e12 references) can leave the range of a
#: double (``timing.base_cpi = 1e308`` gave infinite cycles), so it is refused up front.
FLOAT_LIMIT = 1e9

#: Decimal count suffixes (``10M`` references) and binary size units (``64MiB``).
COUNT_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
SIZE_UNITS = {
    **{u: 1024**i for i, u in enumerate(["b", "kib", "mib", "gib", "tib", "pib"])},
    **{u: 1024**i for i, u in enumerate(["", "k", "m", "g", "t", "p"])},
}
#: Spellings the core would read as binary sizes but that mean powers of ten elsewhere
#: (``dd bs=1MB`` is 10^6 bytes): refused, so that nobody's 64 MB silently becomes 64 MiB.
AMBIGUOUS_UNITS = ("kb", "mb", "gb", "tb", "pb")

_NUMBER = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)$")

SIZE_HELP = "a size in bytes (a whole number of B, KiB, MiB, GiB, TiB or PiB, such as 4096, 64KiB)"
COUNT_HELP = "a whole number (a count such as 4, 1000, 5k, 10M, 1G; no byte units)"


def is_size_key(key: str) -> bool:
    """Whether an integer key is a size in bytes (its last part is ``bytes``, ends in
    ``_bytes``, or is ``footprint``): the keys that take units such as ``MiB``.

    Examples
    --------
    >>> is_size_key("workload.footprint"), is_size_key("os.swap.bytes"), is_size_key("sim.refs")
    (True, True, False)
    """
    last = key.rsplit(".", 1)[-1]
    return last == "bytes" or last.endswith("_bytes") or last.endswith("footprint")


def _scaled(text: str, units: Mapping[str, int]) -> int | None:
    t = text.strip().replace("_", "").lower()
    m = _NUMBER.match(t)
    if not m or m.group(2) not in units:
        return None
    scale = units[m.group(2)]
    if "." in m.group(1):
        # Exact, in integers: 33.2 x 10^6 is not a whole number in floating point.
        from fractions import Fraction

        value = Fraction(m.group(1)) * scale
        return int(value) if value.denominator == 1 else None
    return int(m.group(1)) * scale


def parse_count(text: str) -> int:
    """A count such as ``1000``, ``5k``, ``10M`` (decimal suffixes); ValueError otherwise.

    Examples
    --------
    >>> parse_count("10M"), parse_count("1.5k"), parse_count("4"), parse_count("33.2M")
    (10000000, 1500, 4, 33200000)
    >>> parse_count("2KiB")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: cannot read '2KiB' as a whole number (a count such as 4, 1000, 5k, 10M, 1G; no ...
    """
    value = _scaled(text, COUNT_UNITS)
    if value is None:
        raise ValueError(f"cannot read '{text}' as {COUNT_HELP}")
    return value


def parse_size(text: str) -> int:
    """A size in bytes such as ``4096``, ``64KiB``, ``1GiB`` (``K``, ``M``, ``G`` are binary as
    well); ``64MB`` and its kin are refused as ambiguous. ValueError otherwise.

    Examples
    --------
    >>> parse_size("64MiB"), parse_size("2M"), parse_size("4096")
    (67108864, 2097152, 4096)
    >>> parse_size("64MB")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: '64MB' is ambiguous (MB is 10^6 bytes to some, 2^20 to others): write 64MiB ...
    """
    t = text.strip().replace("_", "").lower()
    m = _NUMBER.match(t)
    if m and m.group(2) in AMBIGUOUS_UNITS:
        power = AMBIGUOUS_UNITS.index(m.group(2)) + 1
        raise ValueError(
            f"'{text}' is ambiguous ({m.group(2).upper()} is 10^{3 * power} bytes to some, "
            f"2^{10 * power} to others): write {m.group(1)}{m.group(2)[0].upper()}iB or the "
            "number of bytes"
        )
    value = _scaled(text, SIZE_UNITS)
    if value is None:
        raise ValueError(f"cannot read '{text}' as {SIZE_HELP}")
    return value


def check_float(key: str, value: float) -> None:
    """The one rule of every float configuration key: a finite number within
    :data:`FLOAT_LIMIT`. XlatError naming the key otherwise.

    Examples
    --------
    >>> check_float("timing.base_cpi", 0.5)
    >>> check_float("timing.base_cpi", float("inf"))
    Traceback (most recent call last):
    ...
    _core.XlatError: 'timing.base_cpi' must be a finite number within +-1e+09, got inf
    """
    if not math.isfinite(value) or abs(value) > FLOAT_LIMIT:
        raise _core.XlatError(
            f"'{key}' must be a finite number within +-{FLOAT_LIMIT:g}, got {value!r}"
        )


@lru_cache(maxsize=1)
def key_types() -> dict[str, type]:
    """The type of every configuration key's default value (``int``, ``float``, ``bool``,
    ``str``, ``list``), by dotted key.

    Examples
    --------
    >>> key_types()["radix.levels"], key_types()["timing.base_cpi"], key_types()["os.thp"]
    (<class 'int'>, <class 'float'>, <class 'str'>)
    """
    tree = tomllib.loads(_core.resolve_config(None, "defaults", []))
    return {k: type(v) for k, v in flatten(tree).items()}


def _literal(raw: str) -> Any:
    """An override's text as the core reads it: a TOML literal if it is one, else the text."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError, KeyError):
        return raw


def check_value(key: str, value: Any, origin: str | None = None) -> None:
    """Check one configuration value (an override's literal or a value of the preset file
    ``origin``) by the type of its key; keys the configuration lacks are left to the core
    (it names the closest)."""
    where = f"{origin}: " if origin else ""
    kind = key_types().get(key)
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            check_float(key, float(value))
        except _core.XlatError as e:
            raise _core.XlatError(f"{where}{e}") from None
        except OverflowError:  # an integer beyond a double
            raise _core.XlatError(
                f"{where}'{key}' must be a finite number within +-{FLOAT_LIMIT:g}, got {value}"
            ) from None
    elif kind is int and isinstance(value, str) and not value.strip().startswith("-"):
        # A negative text and an out-of-range number are the core's to report (by key).
        try:
            if key.rsplit(".", 1)[-1] == "bytes":
                # The core reads these as a count first (2G = 2,000,000,000), then as a size.
                try:
                    parse_count(value)
                except ValueError:
                    parse_size(value)
            elif is_size_key(key):
                parse_size(value)
            else:
                parse_count(value)
        except ValueError as e:
            raise _core.XlatError(f"{where}'{key}': {e}") from None


def check_inputs(
    overrides: Iterable[tuple[str, str]], layers: Iterable[tuple[str, str | None]] = ()
) -> None:
    """Check every override ``(key, text)`` and every value of the TOML ``layers``
    (``(origin, text)``, presets) with :func:`check_value`, before the core reads them.

    Examples
    --------
    >>> check_inputs([("radix.levels", "5"), ("sim.refs", "10M")])
    >>> check_inputs([("radix.levels", "abc")])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    _core.XlatError: 'radix.levels': cannot read 'abc' as a whole number (a count such as 4, ...
    >>> check_inputs([], [("p.toml", "[timing]\\nbase_cpi = inf\\n")])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    _core.XlatError: p.toml: 'timing.base_cpi' must be a finite number within +-1e+09, got inf
    """
    for origin, text in layers:
        if text is None:
            continue
        try:
            tree = tomllib.loads(text)
        except (tomllib.TOMLDecodeError, RecursionError):
            continue  # the core reports a malformed layer with its origin and position
        for key, value in flatten(tree).items():
            check_value(key, value, origin)
    for key, raw in overrides:
        check_value(str(key).strip(), _literal(str(raw)))


def check_config(config: str | Mapping[str, Any]) -> None:
    """Apply :func:`check_float` to every float of a resolved configuration (TOML text or the
    parsed tree).

    Examples
    --------
    >>> check_config({"timing": {"base_cpi": 0.5}, "sim": {"refs": 10}})
    >>> check_config({"timing": {"base_cpi": float("nan")}})
    Traceback (most recent call last):
    ...
    _core.XlatError: 'timing.base_cpi' must be a finite number within +-1e+09, got nan
    """
    tree = tomllib.loads(config) if isinstance(config, str) else config
    for key, value in flatten(tree).items():
        if isinstance(value, float):
            check_float(key, value)


#: Units (:func:`xlat.units.unit_of`) of the figures that may be null: ratios, whose
#: denominator may be zero (a hit rate with no lookups has no value, not 0 %).
NULLABLE_UNITS = (
    "fraction (0-1)",
    "cycles per event",
    "count per event",
    "ratio",
    "instructions per cycle",
    "per 1000 instructions",
    "misses (time average)",
    "walks (time average)",
)


def bad_figures(record: Mapping[str, Any]) -> list[str]:
    """Keys of the figures of ``record`` that are not finite numbers: a NaN or an infinity,
    or a null where no ratio is (the core writes a non-finite number as null). The resolved
    configuration (``config``) is checked too: a float there must pass :func:`check_float`.

    Examples
    --------
    >>> bad_figures({"timing": {"cycles": None, "ipc": None}, "walk": {"avg_cycles": None}})
    ['timing.cycles']
    >>> bad_figures({"tlb": {"l1_mpki": float("inf")}, "os": {"free": [1.0, float("nan")]}})
    ['tlb.l1_mpki', 'os.free']
    """
    from xlat.units import _items, unit_of

    out: list[str] = []
    for key, v in _items(record):
        key = key.split("::")[0]
        if key in out:
            continue
        if isinstance(v, float) and (
            not math.isfinite(v) or (key.startswith("config.") and abs(v) > FLOAT_LIMIT)
        ):
            out.append(key)
        elif v is None and not key.startswith(METADATA) and unit_of(key) not in NULLABLE_UNITS:
            out.append(key)
    return out


#: Record sections that are not figures (a trace's recorder metadata may hold nulls).
METADATA = ("config.", "trace.")


def check_record(record: Mapping[str, Any]) -> None:
    """XlatError naming the figures of ``record`` that are not finite (:func:`bad_figures`)."""
    bad = bad_figures(record)
    if bad:
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        raise _core.XlatError(
            f"the run produced figures that are not finite numbers: {', '.join(bad[:3])}{more} "
            "(a configuration value too large for the run's counts?); nothing of it is stored "
            "or shown"
        )
