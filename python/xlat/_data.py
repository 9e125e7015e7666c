"""Where the package's own files are: its data folder and the user's cache folder.

The data ships inside the package (``xlat/data/``, in the wheel and the sdist alike) and is
found through :mod:`importlib.resources`, never relative to a source tree:

- ``configs/``: presets (``xlat run --preset NAME``), CPU presets (``configs/cpus/``), the papers'
  presets (``configs/papers/``) and the sweep examples (``configs/sweeps/``);
- ``claims/``: the papers' claims and experiments (``xlat reproduce``);
- ``vgtool/``: the source of the valgrind recording tool (``xlat trace setup`` builds it into
  :func:`cache_dir`);
- ``corpus/``: the C kernels of ``xlat corpus`` (compiled into :func:`cache_dir` on first use);
- ``store/``: what the results store keeps fixed (the configuration keys a run's key covers,
  :data:`xlat.store.RUN_KEY_CONFIG_KEYS_FILE`).

In a clone, ``configs``, ``data`` and ``tools/xlat-vgtool`` at the repository's root are links to
these folders, so the paths the docs name work there too.

Contract: :func:`data_dir` is a real folder (a wheel installs unpacked); :func:`cache_dir`
follows the Rust core's rule (``crates/xlat/src/trace/open.rs``) and is not created here.
"""

from __future__ import annotations

import importlib.resources
import os
from pathlib import Path


def data_dir() -> Path:
    """The package's data folder (``xlat/data``).

    Examples
    --------
    >>> sorted(p.name for p in data_dir().iterdir() if p.is_dir())
    ['claims', 'configs', 'corpus', 'store', 'vgtool']
    """
    return Path(str(importlib.resources.files("xlat").joinpath("data")))


def cache_dir(environ: dict[str, str] | None = None) -> Path:
    """The user's cache folder for xlat: ``$XLAT_CACHE_DIR`` when set and not empty, else
    ``$XDG_CACHE_HOME/xlat``, else ``~/.cache/xlat``.

    Examples
    --------
    >>> cache_dir(environ={"XDG_CACHE_HOME": "/c"}), cache_dir(environ={"XLAT_CACHE_DIR": "/t"})
    (PosixPath('/c/xlat'), PosixPath('/t'))
    """
    for var, sub in (("XLAT_CACHE_DIR", ""), ("XDG_CACHE_HOME", "xlat")):
        value = (os.environ if environ is None else environ).get(var)
        if value:
            return Path(value) / sub if sub else Path(value)
    return Path.home() / ".cache" / "xlat"
