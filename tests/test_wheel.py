"""The installable package: a wheel in a fresh virtual environment, away from the source tree,
and the two builds of the core it carries (portable and x86-64-v3) giving identical results."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, SMALL

MATURIN = Path(sys.executable).with_name("maturin")


def _run(cmd: list[str], cwd: Path, env: dict | None = None, timeout: int = 900):
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel `make wheel` builds (built here into a temporary folder)."""
    if not MATURIN.exists():
        pytest.skip("maturin is not installed in this environment (make setup installs it)")
    if not (ROOT / "python" / "xlat" / "_core_v3.abi3.so").exists():
        pytest.skip("no x86-64-v3 build of the core (an XLAT_NATIVE=1 build makes no wheel)")
    out = tmp_path_factory.mktemp("dist")
    _run([str(MATURIN), "build", "--release", "--quiet", "-o", str(out)], cwd=ROOT)
    (whl,) = out.glob("xlat-*.whl")
    return whl


def test_the_wheel_is_abi3_manylinux_and_carries_both_builds_of_the_core(wheel, tmp_path):
    assert "-cp39-abi3-manylinux" in wheel.name, wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert {"xlat/_core.abi3.so", "xlat/_core_v3.abi3.so", "xlat/_isa.py"} <= set(names)
    assert not any(n.startswith(("tests/", "crates/")) for n in names)
    if shutil.which("readelf") is None:
        return
    system = {"libc.so.6", "libm.so.6", "libgcc_s.so.1", "libpthread.so.0", "libdl.so.2"}
    system |= {"librt.so.1", "ld-linux-x86-64.so.2"}
    for so in ("xlat/_core.abi3.so", "xlat/_core_v3.abi3.so"):
        path = tmp_path / so.replace("/", "_")
        path.write_bytes(zipfile.ZipFile(wheel).read(so))
        dynamic = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True)
        needed = set(re.findall(r"\(NEEDED\).*\[(.+?)\]", dynamic.stdout))
        assert needed and needed <= system, f"{so} needs {sorted(needed - system)}"


def test_the_wheel_installs_in_a_fresh_venv_and_runs_designs_run_sweep_and_report(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    # The ray extra for the sweep; pip's cache serves what `make setup` downloaded.
    _run([str(py), "-m", "pip", "install", "--quiet", f"{wheel}[ray]"], cwd=tmp_path)
    work = tmp_path / "work"  # away from the source tree: only the installed package exists
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}"
    xlat = str(env_dir / "bin" / "xlat")

    where = _run([str(py), "-c", "import xlat; print(xlat.__file__)"], work, env).stdout
    assert str(env_dir) in where and str(ROOT) not in where
    # The core API imports without Ray, pandas or matplotlib (they load when used).
    heavy = _run(
        [
            str(py),
            "-c",
            "import sys, xlat; print(sorted(m for m in ('ray', 'pandas', 'matplotlib') "
            "if m in sys.modules))",
        ],
        work,
        env,
    ).stdout
    assert heavy.strip() == "[]"

    assert "radix" in _run([xlat, "designs"], work, env).stdout.split()
    rec = json.loads(
        _run(
            [xlat, "run", "--design", "radix", "--workload", "gups", *SMALL, "--json"], work, env
        ).stdout
    )
    assert rec["refs"] == 20000 and rec["oracle"]["mismatches"] == 0
    spec = work / "grid.toml"
    spec.write_text(
        'designs = ["radix", "ideal"]\nworkloads = ["gups"]\nfootprint = "16MiB"\nrefs = "20k"\n'
    )
    _run([xlat, "sweep", str(spec), "--db", "r.duckdb", "--workers", "2"], work, env)
    _run([xlat, "report", "r.duckdb", "--out", "rep"], work, env)
    assert (work / "rep" / "report.html").exists() and (work / "rep" / "speedup.pdf").exists()
    # The notebook API and the exports work from the installed package too.
    _run([xlat, "results", "--db", "r.duckdb", "--output", "runs.parquet"], work, env)
    code = (
        "import duckdb, xlat, xlat.plot\n"
        "n = duckdb.sql(\"SELECT count(*) FROM 'runs.parquet'\").fetchall()[0][0]\n"
        "fig = xlat.plot.speedup(xlat.results('r.duckdb'))\n"
        "fig.savefig('speedup.png')\n"
        "print(n, len(fig.axes))\n"
    )
    assert _run([str(py), "-c", code], work, env).stdout.split() == ["2", "1"]
    txt = _run(
        [xlat, "run", "--design", "ideal", "--workload", "gups", *SMALL, "--stats-format", "txt"],
        work,
        env,
    ).stdout
    assert "walk.count" in txt and "# ?" not in txt


def _record(isa: str) -> list[dict]:
    code = (
        "import json, xlat\n"
        "out = []\n"
        "for d in ('radix', 'ecpt', 'lvm'):\n"
        "    r = xlat.run(design=d, workload='gups', footprint='16MiB', refs=20000)\n"
        "    r.pop('sim')\n"
        "    out.append(r)\n"
        "print(json.dumps([xlat._core.SIMD_PATH, out]))\n"
    )
    env = dict(os.environ, XLAT_ISA=isa)
    return json.loads(_run([sys.executable, "-c", code], ROOT, env).stdout)


def test_the_portable_and_the_v3_build_of_the_core_give_identical_records():
    from xlat import _isa

    if not (ROOT / "python" / "xlat" / "_core_v3.abi3.so").exists():
        pytest.skip("no x86-64-v3 build of the core here (XLAT_NATIVE=1 build)")
    if not _isa.V3_FLAGS <= _isa.cpu_flags():
        pytest.skip("this CPU cannot run the x86-64-v3 build")
    portable_path, portable = _record("portable")
    v3_path, v3 = _record("v3")
    assert (portable_path, v3_path) == ("portable", "avx2")
    assert portable == v3


def test_an_unknown_isa_choice_is_a_clear_import_error():
    env = dict(os.environ, XLAT_ISA="sse9")
    proc = subprocess.run(
        [sys.executable, "-c", "import xlat"], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert proc.returncode != 0
    assert "XLAT_ISA='sse9': expected one of auto, portable, v3" in proc.stderr
