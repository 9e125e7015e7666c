"""The Elastic Translations baselines from the Python front: HugeTLB, HawkEye, Trident settings,
the page-fault latency keys and their figure in the report."""

from __future__ import annotations

import pytest
import xlat as api


def _hist_total(rec):
    return sum(rec["os"]["fault_latency"]["hist"].values())


@pytest.mark.parametrize(
    "sets",
    [
        {"os.policy": "hawkeye", "os.hawkeye.interval_cycles": 100000},
        {"os.policy": "trident", "os.thp": "always"},
        {"os.hugetlb.pages": 8, "os.hugetlb.size": "2MiB"},
        {"os.hugetlb.pages": 256, "os.hugetlb.size": "64KiB", "tlb.coalescing": "contiguous_bit"},
    ],
)
def test_every_baseline_runs_with_the_oracle_and_counts_every_fault_in_the_histogram(sets):
    # The faults are the first touches: measure from the first reference.
    rec = api.run(
        design="radix", workload="gups", footprint="16MiB", refs="20k", warmup=0, set=sets
    )
    assert rec["oracle"]["mismatches"] == 0
    assert _hist_total(rec) == rec["os"]["page_faults"] == rec["os"]["fault_latency"]["count"]
    if "os.hugetlb.pages" in sets:
        assert rec["os"]["hugetlb"]["faults"] > 0


def test_a_bad_hugetlb_setting_is_an_error_naming_the_key():
    with pytest.raises(Exception, match="os.hugetlb.share"):
        api.run(design="radix", workload="gups", refs="1k", set={"os.hugetlb.share": 2})


def test_the_fault_latency_figure_is_drawn_for_et_runs_only_with_the_records_shares():
    import xlat.plot

    recs = api.compare(
        ["radix", "et"], "gups", footprint="16MiB", refs="20k", warmup=0, set={"os.thp": "always"}
    )
    figs = xlat.plot.figures(recs, names=["fault_latency_distribution"])
    assert list(figs) == ["fault_latency_distribution"]
    numbers = figs["fault_latency_distribution"]._xlat_numbers
    (panel,) = numbers["panels"]
    by_design = {r["design"]: r for r in recs}
    for design, shares in panel["series"].items():
        hist = by_design[design]["os"]["fault_latency"]["hist"]
        total = sum(hist.values())
        expected = [100 * hist[lo] / total for lo in panel["x"]]
        assert shares == pytest.approx(expected), design
        assert sum(shares) == pytest.approx(100)
    # Runs without ET or its baselines do not get the figure.
    plain = api.compare(
        ["radix", "ecpt"], "gups", footprint="16MiB", refs="20k", set={"os.thp": "always"}
    )
    assert xlat.plot.figures(plain, names=["fault_latency_distribution"]) == {}
