"""Warm-up (`sim.warmup_refs`) end to end: the CLI option, the API, sweeps, the warning."""

from __future__ import annotations

import json
import warnings

import pytest
import xlat as api
from conftest import xlat
from xlat.run import FirstTouchWarning
from xlat.sweeps import expand, parse_spec, sweep


def test_run_with_warmup_reports_exactly_the_measured_references():
    proc = xlat(
        "run",
        "--design",
        "mehpt",
        "--workload",
        "gups",
        "--footprint",
        "16MiB",
        "--refs",
        "20k",
        "--warmup",
        "30k",
        "--json",
    )
    rec = json.loads(proc.stdout)
    assert rec["refs"] == 20000
    assert rec["tlb"]["l1_lookups"] == 20000
    assert rec["warmup"]["refs"] == 30000
    assert rec["config"]["sim"]["warmup_refs"] == 30000
    misses = rec["tlb"]["l2_misses"] + rec["tlb"]["itlb_l2_misses"]
    assert rec["walk"]["count"] == misses
    # 30k references cover the 4,096-page setup of a 16 MiB gups: no first touch is measured.
    assert rec["warmup"]["first_touch_pages"] == 0
    assert "first touched a page" not in proc.stderr


def test_a_run_measuring_the_setup_warns_on_the_command_line_and_in_the_api():
    proc = xlat(
        "run", "--design", "radix", "--workload", "gups", "--footprint", "1GiB", "--refs", "20k"
    )
    assert "xlat: warning: radix on gups: 100 % of the measured references" in proc.stderr
    with pytest.warns(FirstTouchWarning, match="first-touch phase"):
        api.run(design="radix", workload="gups", footprint="1GiB", refs=20000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FirstTouchWarning)
        api.run(design="radix", workload="gups", footprint="16MiB", refs=20000, warmup=10000)


def test_warm_up_records_are_deterministic():
    kw = dict(design="ecpt", workload="kv", footprint="16MiB", refs=20000, warmup=15000)
    a, b = api.run(**kw), api.run(**kw)
    a.pop("sim"), b.pop("sim")
    assert a == b


def test_a_sweep_spec_takes_warmup_as_a_grid_axis(tmp_path):
    spec = parse_spec(
        {
            "designs": ["radix"],
            "workloads": ["gups"],
            "footprint": "16MiB",
            "refs": "20k",
            "warmup": ["0", "10k"],
        }
    )
    runs = expand(spec)
    assert [r.label() for r in runs] == [
        "radix gups footprint=16MiB refs=20k warmup=0 seed=1",
        "radix gups footprint=16MiB refs=20k warmup=10k seed=1",
    ]
    df = sweep(
        {
            "designs": ["radix"],
            "workloads": ["gups"],
            "footprint": "16MiB",
            "refs": "20k",
            "warmup": "10k",
        },
        tmp_path / "w.duckdb",
        workers=1,
    )
    assert df["refs"].tolist() == [20000]
    assert df["warmup.refs"].tolist() == [10000]


def test_a_sweep_spec_refuses_warmup_in_set():
    with pytest.raises(ValueError, match="use the top-level 'warmup' key"):
        parse_spec({"workloads": ["gups"], "set": {"sim.warmup_refs": [1000]}})
