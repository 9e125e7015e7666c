"""Shared helpers for the end-to-end tests: run the real `xlat` command in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--footprint", "16MiB", "--refs", "20k"]

# Trace-derived caches (ChampSim VMA inference) go to a directory of this test session, not
# the user's ~/.cache: every test starts from the same state and leaves nothing behind.
os.environ.setdefault("XLAT_CACHE_DIR", tempfile.mkdtemp(prefix="xlat-test-cache-"))


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``make test`` runs two workers, ``--dist loadgroup``), keep each
    file's tests on one worker, as its module fixtures are built once per worker, and every test
    of the session fixture ``mehpt_quick`` on the same one, so that its quick runs are simulated
    once. Without xdist the marks do nothing."""
    groups = {}
    for item in items:
        group = "mehpt_quick" if "mehpt_quick" in item.fixturenames else item.path.name
        item.add_marker(pytest.mark.xdist_group(group))
        groups[item.nodeid] = group
    # The longest groups first (the workers take groups in collection order): the mehpt_quick
    # chain (the quick runs, then the wheel test) alone took about ten minutes of a 21-minute
    # CI run when it came last. Order within a group is kept.
    first = ["mehpt_quick", "test_reproduce_papers.py", "test_report.py", "test_cores.py"]
    rank = {g: i for i, g in enumerate(first)}
    items.sort(key=lambda item: rank.get(groups[item.nodeid], len(first)))


def xlat(*args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run `python -m xlat ARGS` from the repository root and capture its output (``timeout``:
    seconds before the run counts as hung)."""
    proc = subprocess.run(
        [sys.executable, "-m", "xlat", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"xlat {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
    return proc


def load_script(path: str | Path, name: str | None = None):
    """The module of the Python file at `path` (relative to the repository root), loaded by
    path: the scripts under scripts/ and tools/ are not a package. `name` (default: the file's
    stem) is also registered in `sys.modules`, so that dataclasses and pickling inside it work.

    >>> load_script("scripts/host_predict.py").__name__
    'host_predict'
    """
    import importlib.util

    path = ROOT / path
    name = name or path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def run_json():
    """Run `xlat run ... --json` and return the parsed record."""

    def go(*args: str) -> dict:
        return json.loads(xlat("run", *args, "--json").stdout)

    return go


@pytest.fixture(scope="session")
def mehpt_quick(tmp_path_factory):
    """`xlat reproduce mehpt --quick` run once per session from this tree: ``(process, store,
    report folder)``. The wheel test resumes from a copy of the store (its runs are keyed by the
    resolved configuration, not by where the package is installed), so the quick runs are
    simulated once, not once per installation."""
    out = tmp_path_factory.mktemp("reproduce-mehpt")
    db = out / "r.duckdb"
    # About a minute alone on the slowest host seen, but it runs first, beside the Rust tests'
    # build, and took 597 s there in one CI run (2026-12-02, Zen 3): the hang guard is wider.
    proc = xlat(
        "reproduce",
        "mehpt",
        "--quick",
        "--db",
        str(db),
        "--out",
        str(out),
        "-q",
        check=False,
        timeout=1800,
    )
    return proc, db, out
