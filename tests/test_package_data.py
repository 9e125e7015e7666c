"""What the package finds by itself: its data (presets, CPU presets, claims, sweep examples,
the recorder's source) inside the package, an empty list as an error, and a run the host cannot
hold refused before it starts."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from conftest import ROOT
from xlat import _core, cli, record, reproduce
from xlat._data import data_dir

run_module = importlib.import_module("xlat.run")


def test_the_data_is_found_inside_the_package_and_the_clones_paths_link_to_it():
    data = data_dir()
    assert data == Path(importlib.import_module("xlat").__file__).parent / "data"
    assert run_module.preset_dirs()[-1] == data / "configs"
    assert reproduce.CLAIMS_DIR == data / "claims" and record.TOOL_DIR == data / "vgtool"
    for link, target in (("configs", "configs"), ("data/claims", "claims")):
        assert (ROOT / link).resolve() == (data / target).resolve()
    assert (ROOT / "tools" / "xlat-vgtool").resolve() == (data / "vgtool").resolve()


def test_cpus_without_presets_is_an_error_naming_where_it_looked(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(run_module, "preset_dirs", lambda: [tmp_path])
    assert cli.main(["cpus"]) == 1
    err = capsys.readouterr().err
    assert "no CPU presets found" in err and str(tmp_path / "cpus") in err


def test_a_shipped_sweep_example_is_found_by_name():
    from xlat.sweeps import load_spec

    spec = load_spec("demo")
    assert Path(spec.origin).resolve() == (data_dir() / "configs" / "sweeps" / "demo.toml")


def test_a_run_the_host_cannot_hold_is_refused_before_it_starts(monkeypatch, capsys):
    monkeypatch.setattr(run_module, "host_memory_bytes", lambda: 1 << 30)
    args = ["run", "--design", "radix", "--workload", "gups", "--footprint", "64GiB"]
    # 10 M references plus 5 M of warm-up may map 15 M pages: about 1.4 GiB of the simulator's.
    assert cli.main([*args, "--refs", "10M", "--warmup", "5M"]) == 1
    err = capsys.readouterr().err
    assert "sim.warmup_refs = 5,000,000" in err and "memory plus swap (1.0 GiB)" in err
    # The footprint bounds it too: 1 GiB is 262,144 pages whatever the references.
    config = {
        "sim": {"refs": 10**7, "warmup_refs": 0},
        "workload": {"name": "gups", "footprint": 1 << 30},
    }
    with pytest.raises(_core.XlatError, match="may map 262,144 pages"):
        run_module.check_host_memory(config, 1 << 20)
    run_module.check_host_memory(config, 1 << 30)
