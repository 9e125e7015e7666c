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
import tarfile
import time
import venv
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, SMALL

MATURIN = Path(sys.executable).with_name("maturin")
need_valgrind = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("valgrind", "gcc", "pkg-config")),
    reason="valgrind, gcc or pkg-config not installed (.ci/run installs them)",
)


def _run(cmd: list[str], cwd: Path, env: dict | None = None, timeout: int = 900):
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel `make wheel` builds, packaged by `make package` into a temporary folder from
    the core `make build` compiled (nothing is compiled again: same target, same zig linker)."""
    if not MATURIN.exists() or shutil.which("make") is None:
        pytest.skip("maturin or make is missing (make setup installs maturin)")
    for level in ("v3", "v4"):
        if not (ROOT / "python" / "xlat" / f"_core_{level}.abi3.so").exists():
            pytest.skip(f"no x86-64-{level} build of the core (XLAT_NATIVE=1 builds make no wheel)")
    out = tmp_path_factory.mktemp("dist")
    start = time.monotonic()
    proc = _run(["make", "--no-print-directory", "package", f"DIST={out}"], cwd=ROOT)
    print(f"make package: {time.monotonic() - start:.1f}s")
    assert "tag, libraries and package data agree" in proc.stdout
    (whl,) = out.glob("xlat-*.whl")
    return whl


CORES = ("xlat/_core.abi3.so", "xlat/_core_v3.abi3.so", "xlat/_core_v4.abi3.so")


def test_the_wheel_is_abi3_manylinux2014_and_carries_the_three_cores_and_the_data(wheel, tmp_path):
    assert "-cp39-abi3-manylinux" in wheel.name and "manylinux2014_x86_64" in wheel.name, wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {*CORES, "xlat/_isa.py"} <= names
    assert not any(n.startswith(("tests/", "crates/")) for n in names)
    # Every file of the package's data folder is in the wheel (presets, claims, the recorder).
    data = ROOT / "python" / "xlat" / "data"
    shipped = {f"xlat/data/{p.relative_to(data)}" for p in data.rglob("*") if p.is_file()}
    assert shipped and shipped <= names, sorted(shipped - names)
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
        dyn = subprocess.run(["readelf", "-W", "--dyn-syms", str(path)], capture_output=True)
        symbols = dyn.stdout.decode()
        versions = {tuple(map(int, v.split("."))) for v in re.findall(r"@GLIBC_([\d.]+)", symbols)}
        assert max(versions) <= (2, 17), f"{so} needs glibc {max(versions)}"


def test_the_sdist_carries_the_package_data(tmp_path):
    if not MATURIN.exists():
        pytest.skip("maturin is not installed in this environment (make setup installs it)")
    _run([str(MATURIN), "sdist", "-o", str(tmp_path)], cwd=ROOT)
    (sdist,) = tmp_path.glob("xlat-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    data = ROOT / "python" / "xlat" / "data"
    shipped = {str(p.relative_to(ROOT)) for p in data.rglob("*") if p.is_file()}
    assert shipped and shipped <= names, sorted(shipped - names)


def test_the_wheel_installs_in_a_fresh_venv_and_everything_a_clone_does_works(
    wheel, tmp_path, mehpt_quick
):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    work = tmp_path / "work"  # away from the source tree: only the installed package exists
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}"
    env["XLAT_CACHE_DIR"] = str(tmp_path / "cache")  # the recorder is built here, once
    xlat = str(env_dir / "bin" / "xlat")
    times: dict[str, float] = {}

    def step(name: str, cmd: list[str], timeout: int = 600):
        start = time.monotonic()
        proc = _run(cmd, work, env, timeout)
        times[name] = round(time.monotonic() - start, 1)
        return proc

    # Without the ray extra first: a sweep says the exact pip command, which then works.
    # (--no-compile: pip does not byte-compile all of Ray, pandas and matplotlib up front.)
    pip = [str(py), "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check"]
    step("pip install", [*pip, str(wheel)])
    spec = work / "grid.toml"
    spec.write_text(
        'designs = ["radix", "ideal"]\nworkloads = ["gups"]\nfootprint = "16MiB"\nrefs = "20k"\n'
    )
    sweep = [xlat, "sweep", str(spec), "--db", "r.duckdb"]
    proc = subprocess.run(sweep, cwd=work, env=env, capture_output=True, text=True, timeout=120)
    hint = f'pip install "{wheel}[ray]"'
    assert proc.returncode == 2 and hint in proc.stderr, proc.stderr
    step("pip install [ray]", [*pip, f"{wheel}[ray]"])

    where = step("import", [str(py), "-c", "import xlat; print(xlat.__file__)"]).stdout
    assert str(env_dir) in where and str(ROOT) not in where
    # The core API imports without Ray, pandas or matplotlib (they load when used).
    heavy = "('ray', 'pandas', 'matplotlib')"
    code = f"import sys, xlat; print(sorted(m for m in {heavy} if m in sys.modules))"
    assert step("import light", [str(py), "-c", code]).stdout.strip() == "[]"

    assert "radix" in step("designs", [xlat, "designs"]).stdout.split()
    cpus = step("cpus", [xlat, "cpus"]).stdout
    assert {"zen4", "skylake-sp", "neoverse-n1"} <= {ln.split()[0] for ln in cpus.splitlines()[1:]}
    args = ["--design", "radix", "--workload", "gups", *SMALL, "--json"]
    rec = json.loads(step("run --cpu zen4", [xlat, "run", "--cpu", "zen4", *args]).stdout)
    assert rec["refs"] == 20000 and rec["oracle"]["mismatches"] == 0
    assert rec["config"]["sim"]["cpu"] == "zen4"
    assert "[tlb" in step("config show demo", [xlat, "config", "show", "demo"]).stdout
    listed = step("reproduce --list", [xlat, "reproduce", "--list"]).stdout
    papers = {ln.split(":")[0] for ln in listed.splitlines() if not ln.startswith(" ")}
    assert {"mehpt", "et", "lvm", "tps", "utopia"} <= papers
    # Resumed from the store this tree's run filled (tests/conftest.py): the installed package
    # finds the paper's claims and presets, recognizes every run as stored (the same resolved
    # configurations) and computes the same claims, without simulating them again.
    clone, store, _ = mehpt_quick
    assert clone.returncode == 0, clone.stderr
    shutil.copy(store, work / "rq.duckdb")
    quick = [xlat, "reproduce", "--quick", "mehpt", "--db", "rq.duckdb", "--out", "rq", "-q"]
    assert step("reproduce --quick mehpt", quick).stdout == clone.stdout
    assert (work / "rq" / "reproduce-mehpt-quick.md").exists()

    step("sweep", [xlat, "sweep", str(spec), "--db", "r.duckdb", "--workers", "2"])
    step("report", [xlat, "report", "r.duckdb", "--out", "rep"])
    assert (work / "rep" / "report.html").exists() and (work / "rep" / "speedup.pdf").exists()
    # The notebook example (docs/notebook.md, run as a doctest by the stdlib: no pytest here).
    shutil.copy(ROOT / "docs" / "notebook.md", work / "notebook.md")
    out = step("notebook", [str(py), "-m", "doctest", "notebook.md"]).stdout
    assert out == ""
    args = ["--design", "ideal", "--workload", "gups", *SMALL, "--stats-format", "txt"]
    txt = step("stats txt", [xlat, "run", *args]).stdout
    assert "walk.count" in txt and "# ?" not in txt
    if all(shutil.which(t) for t in ("valgrind", "gcc", "pkg-config")):
        record = [xlat, "trace", "record", "-o", "t.xlat", "--", "/bin/true"]
        first = step("trace record (builds the tool)", record).stderr
        assert "building the valgrind recording tool into" in first, first
        assert "lackey" not in first
        again = step("trace record", [xlat, "trace", "record", "-o", "t2.xlat", "--", "/bin/true"])
        assert "building" not in again.stderr and "recorded" in again.stderr
        info = json.loads(step("trace info", [xlat, "trace", "info", "t2.xlat", "--json"]).stdout)
        assert info["trace"]["meta"]["recorder"] == "xlat-vgtool"
    print("fresh-venv steps (s):", times)


def _record(isa: str) -> list[dict]:
    # Every registered design on a random and a pointer-chasing workload: the whole-set
    # compares of every TLB, cache and MMU cache the designs use, under each build (`make
    # test-isa` compiles the Rust tests for each level too).
    code = (
        "import json, xlat\n"
        "out = []\n"
        "for d in xlat.designs():\n"
        "    for w in ('gups', 'pointer_chase'):\n"
        "        r = xlat.run(design=d, workload=w, footprint='16MiB', refs=20000)\n"
        "        r.pop('sim')\n"
        "        out.append(r)\n"
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
