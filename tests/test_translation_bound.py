"""scripts/translation_bound.py: each speedup claim's perfect-TLB bound from twins of its
baseline runs (issue 41, item 4)."""

import doctest
import json

import pytest
import xlat
from conftest import load_script
from xlat import reproduce
from xlat.store import frame_from_records


@pytest.fixture(scope="module")
def tb():
    return load_script("scripts/translation_bound.py")


def test_the_scripts_examples_hold(tb):
    assert doctest.testmod(tb).failed == 0


def test_a_twin_runs_its_baselines_references_with_a_perfect_tlb_and_gives_the_bound(
    tb, tmp_path, monkeypatch
):
    base = xlat.run(design="radix", workload="gups", footprint="64MiB", refs=30000, seed=3)
    assert base["walk"]["count"] > 0
    frame = frame_from_records([base])
    claim = {"id": "d_over_radix", "kind": "speedup", "design": "ideal", "baseline": "radix",
             "experiment": "main", "paper": 1.5, "metric": "cycles", "full_paper": 1.1}  # fmt: skip
    result = {"simulated": 0, "frames": {"main": frame}, "paper": {"claim": [claim]}}
    monkeypatch.setattr(reproduce, "reproduce", lambda *a, **k: result)
    rows = tb.bound_rows("p", "db", tmp_path, workers=1, only=None, dry_run=False)
    (twin_file,) = tmp_path.glob("*.json")
    twin = json.loads(twin_file.read_text())
    assert twin["design"] == "perfect_tlb" and twin["walk"]["count"] == 0
    assert (twin["refs"], twin["instructions"]) == (base["refs"], base["instructions"])
    (row,) = rows
    assert row["points"] == "1/1"
    assert row["bound"] == pytest.approx(base["timing"]["cycles"] / twin["timing"]["cycles"])
    assert row["bound"] > 1.0 and row["xlat"] == 1.1
    # A rerun finds the twin and simulates nothing (a deleted record would be simulated again).
    mtime = twin_file.stat().st_mtime_ns
    again = tb.bound_rows("p", "db", tmp_path, workers=1, only=None, dry_run=False)
    assert again == rows and twin_file.stat().st_mtime_ns == mtime
    assert "| `d_over_radix` | radix | 1.500 | 1.100 |" in tb.table(rows)
    assert f"| `d_over_radix` | gups | {64 * 2**20} | {row['bound']:.3f} |" in tb.point_table(rows)


def test_a_missing_store_is_an_error_naming_it_not_a_new_grid_of_runs(tb, tmp_path, capsys):
    missing = tmp_path / "none.duckdb"
    assert tb.main(["--db", str(missing), "--out", str(tmp_path / "o"), "utopia"]) == 2
    assert f"no result store {missing}" in capsys.readouterr().err
    assert not missing.exists()
