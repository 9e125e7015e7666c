"""The installable package: a wheel in a fresh virtual environment, away from the source tree,
and the three builds of the core it carries (portable, x86-64-v3 and x86-64-v4) giving identical
results."""

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
    for level in ("v3", "v4"):
        if not (ROOT / "python" / "xlat" / f"_core_{level}.abi3.so").exists():
            pytest.skip(f"no x86-64-{level} build of the core (XLAT_NATIVE=1 builds make no wheel)")
    out = tmp_path_factory.mktemp("dist")
    _run([str(MATURIN), "build", "--release", "--quiet", "-o", str(out)], cwd=ROOT)
    (whl,) = out.glob("xlat-*.whl")
    return whl


CORES = ("xlat/_core.abi3.so", "xlat/_core_v3.abi3.so", "xlat/_core_v4.abi3.so")


def test_the_wheel_is_abi3_manylinux_and_carries_all_three_builds_of_the_core(wheel, tmp_path):
    assert "-cp39-abi3-manylinux" in wheel.name, wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert {*CORES, "xlat/_isa.py"} <= set(names)
    assert not any(n.startswith(("tests/", "crates/")) for n in names)
    if shutil.which("readelf") is None:
        return
    system = {"libc.so.6", "libm.so.6", "libgcc_s.so.1", "libpthread.so.0", "libdl.so.2"}
    system |= {"librt.so.1", "ld-linux-x86-64.so.2"}
    for so in CORES:
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


@pytest.mark.parametrize(("level", "simd_path"), [("v3", "avx2"), ("v4", "avx512")])
def test_the_portable_and_each_optimized_build_of_the_core_give_identical_records(level, simd_path):
    from xlat import _isa

    if not (ROOT / "python" / "xlat" / f"_core_{level}.abi3.so").exists():
        pytest.skip(f"no x86-64-{level} build of the core here (XLAT_NATIVE=1 build)")
    if not dict(_isa.LEVELS)[level] <= _isa.cpu_flags():
        pytest.skip(f"this CPU cannot run the x86-64-{level} build")
    portable_path, portable = _record("portable")
    optimized_path, optimized = _record(level)
    assert (portable_path, optimized_path) == ("portable", simd_path)
    assert portable == optimized


def test_the_package_loads_the_best_build_this_cpu_runs():
    from xlat import _isa

    if not all((ROOT / "python" / "xlat" / f"_core_{lv}.abi3.so").exists() for lv in ("v3", "v4")):
        pytest.skip("no optimized builds of the core here (XLAT_NATIVE=1 build)")
    expected = {"v4": "avx512", "v3": "avx2", "portable": "portable"}[
        _isa.choose("auto", _isa.cpu_flags(), frozenset({"v3", "v4"}))
    ]
    code = "import xlat; print(xlat._core.SIMD_PATH)"
    assert _run([sys.executable, "-c", code], ROOT).stdout.strip() == expected


def test_an_unknown_isa_choice_is_a_clear_import_error():
    env = dict(os.environ, XLAT_ISA="sse9")
    proc = subprocess.run(
        [sys.executable, "-c", "import xlat"], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert proc.returncode != 0
    assert "XLAT_ISA='sse9': expected one of auto, portable, v3, v4" in proc.stderr


def _rustc_features(*flags: str) -> set[str]:
    out = subprocess.run(
        ["rustc", "--print", "cfg", *flags], capture_output=True, text=True, check=True
    ).stdout
    return set(re.findall(r'^target_feature="([^"]+)"$', out, flags=re.M))


@pytest.mark.skipif(shutil.which("rustc") is None, reason="rustc not installed")
@pytest.mark.parametrize("level", ["v3", "v4"])
def test_each_optimized_build_enables_exactly_the_instructions_of_its_level(level):
    # The v4 build is scheduled for another CPU (scripts/isa_rustflags.sh): it must still use
    # x86-64-v4's instructions and no others, or the wheel would fault on other v4 CPUs.
    flags = subprocess.run(
        ["bash", str(ROOT / "scripts" / "isa_rustflags.sh"), level],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert _rustc_features(*flags) == _rustc_features("-C", f"target-cpu=x86-64-{level}")
