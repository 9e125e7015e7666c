"""`--metric cycles|total`: speedups with and without OS time."""

from __future__ import annotations

import json

from conftest import SMALL, xlat
from xlat.query import results
from xlat.records import speedups
from xlat.sweeps import sweep


def test_compare_metric_total_counts_os_time_in_the_speedup():
    # OS time is the first touches' faults: measure from the first reference.
    cold = [*SMALL, "--warmup", "0"]
    proc = xlat("compare", "--designs", "radix,ecpt", "--workload", "gups", *cold, "--json")
    recs = json.loads(proc.stdout)
    total = speedups(recs, "radix", "total")
    by_cycles = speedups(recs, "radix", "cycles")
    radix, ecpt = recs
    want = (radix["timing"]["cycles"] + radix["timing"]["os_cycles"]) / (
        ecpt["timing"]["cycles"] + ecpt["timing"]["os_cycles"]
    )
    assert total["ecpt"] == want
    assert by_cycles["ecpt"] == radix["timing"]["cycles"] / ecpt["timing"]["cycles"]
    assert total["ecpt"] != by_cycles["ecpt"]
    table = xlat(
        "compare", "--designs", "radix,ecpt", "--workload", "gups", *cold, "--metric", "total"
    ).stdout
    assert f"{want:.3f}" in table


def test_results_speedup_over_with_metric_total_divides_cycles_plus_os_cycles(tmp_path):
    db = tmp_path / "m.duckdb"
    spec = {"designs": ["radix", "mehpt"], "workloads": ["kv"], "footprint": "16MiB", "refs": "20k"}
    df = sweep(spec, db, workers=1)
    t = lambda d: float(  # noqa: E731
        df.loc[df.design == d, "timing.cycles"].iloc[0]
        + df.loc[df.design == d, "timing.os_cycles"].iloc[0]
    )
    table = results(db, speedup_over="radix", metric="total")
    assert abs(table.loc["kv", "mehpt"] - t("radix") / t("mehpt")) < 1e-12
    out = xlat("results", "--db", str(db), "--speedup-over", "radix", "--metric", "total").stdout
    # The table prints up to four decimals, trailing zeros dropped (0.9710 shows as 0.971).
    kv = next(line for line in out.splitlines() if line.split()[0] == "kv")
    assert abs(float(kv.split()[-1]) - t("radix") / t("mehpt")) < 5e-5, kv
