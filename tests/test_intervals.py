"""Error bars wherever a comparison is printed (issue 40, item 3): the interval math of
python/xlat/intervals.py against hand computations and Monte Carlo, and `xlat compare`,
`xlat results --speedup-over`, the report and the reproduce claims tables end to end."""

from __future__ import annotations

import csv
import json
import math
import random

import pytest
import xlat as api
from conftest import xlat
from xlat import intervals
from xlat.reproduce import claim_row, claims_table, interval_note

SAMPLED = [
    "--set",
    "sim.sampling.interval=5000",
    "--set",
    "sim.sampling.window=1000",
    "--set",
    "sim.sampling.detailed_warmup=1000",
]
SAMPLED_SET = {
    "sim.sampling.interval": 5000,
    "sim.sampling.window": 1000,
    "sim.sampling.detailed_warmup": 1000,
}


def _sampled_row(windows: list[float], refs: int = 100_000) -> dict:
    """A stored row of a sampled run whose windows measured ``windows`` cycles per reference,
    its interval computed as the core computes it (crates/xlat/src/sampling.rs)."""
    n = len(windows)
    mean = sum(windows) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in windows) / (n - 1))
    half = intervals.t_975(n - 1) * sd / math.sqrt(n)
    return {
        "timing.cycles": mean * refs,
        "sampling.windows": n,
        "sampling.metrics.cycles_per_ref.n": n,
        "sampling.metrics.cycles_per_ref.mean": mean,
        "sampling.metrics.cycles_per_ref.ci95_half_width": half,
    }


def test_the_delta_method_interval_of_a_ratio_is_the_hand_computed_one():
    base = _sampled_row([10.0, 12.0, 11.0, 13.0, 9.0])  # mean 11, sd 1.5811
    run = _sampled_row([8.0, 8.5, 9.0, 9.5, 10.0])  # mean 9, sd 0.7906
    e = intervals.ratio_estimate(intervals.time_error(base), intervals.time_error(run))
    vb = (1.5811388 / math.sqrt(5) / 11) ** 2
    vr = (0.7905694 / math.sqrt(5) / 9) ** 2
    df = (vb + vr) ** 2 / (vb**2 / 4 + vr**2 / 4)  # Welch-Satterthwaite: 6.28 -> t(6)
    half = 2.447 * math.sqrt(vb + vr)
    point, low, high = e.bounds()
    assert point == pytest.approx(11 / 9)
    assert e.df == pytest.approx(df) and 6 < df < 7
    assert (low, high) == pytest.approx((11 / 9 * math.exp(-half), 11 / 9 * math.exp(half)))
    # The interval of the inverse ratio is the reciprocal of this one.
    inv = intervals.ratio_estimate(intervals.time_error(run), intervals.time_error(base))
    assert inv.bounds()[1:] == pytest.approx((1 / high, 1 / low))


def test_the_sampling_interval_holds_the_true_ratio_in_95_percent_of_monte_carlo_runs():
    rng = random.Random(40)
    true_ratio = 12.0 / 10.0
    inside, reps = 0, 4000
    for _ in range(reps):
        base = _sampled_row([rng.gauss(12.0, 2.0) for _ in range(20)])
        run = _sampled_row([rng.gauss(10.0, 3.0) for _ in range(30)])
        e = intervals.ratio_estimate(intervals.time_error(base), intervals.time_error(run))
        _, low, high = e.bounds()
        inside += low <= true_ratio <= high
    assert 0.935 <= inside / reps <= 0.965, inside / reps


def _paired_rows(base: list[float], run: list[float], refs: int = 100_000) -> tuple[dict, dict]:
    """Stored rows of two runs sampled at the same references (one workload, seed, warm-up and
    sampling unit), their windows kept as the store keeps a list: JSON text."""
    same = {"workload": "gups", "seed": 1, "refs": refs, "warmup.refs": 65536,
            "sampling.interval": 10000, "sampling.window": 2000,
            "sampling.detailed_warmup": 2000}  # fmt: skip
    rows = []
    for windows in (base, run):
        rows.append({**_sampled_row(windows, refs), **same,
                     intervals.WINDOWS_KEY: json.dumps(windows)})  # fmt: skip
    return rows[0], rows[1]


def _phased_windows(rng: random.Random, n: int) -> tuple[list[float], list[float]]:
    """``n`` windows of two designs over the same references: a phase factor common to both
    (the workload's), and each design's own noise; the true ratio of their means is 1.2."""
    base, run = [], []
    for _ in range(n):
        phase = rng.gauss(0.0, 0.2)
        base.append(12.0 * (1 + phase) + rng.gauss(0.0, 0.2))
        run.append(10.0 * (1 + 0.7 * phase) + rng.gauss(0.0, 0.2))
    return base, run


def test_a_paired_interval_of_correlated_windows_is_narrower_than_the_independent_one():
    base, run = _phased_windows(random.Random(7), 20)
    b, r = _paired_rows(base, run)
    paired = intervals.pair_estimate(b, r)
    independent = intervals.ratio_estimate(intervals.time_error(b), intervals.time_error(r))
    assert paired.source == "sampling (paired)" and independent.source == "sampling"
    # The same point (the ratio of the runs' times), a variance from the per-window terms.
    assert paired.point == pytest.approx(independent.point)
    assert paired.point == pytest.approx(sum(base) / sum(run))
    mb, mr = sum(base) / 20, sum(run) / 20
    z = [x / mb - y / mr for x, y in zip(base, run)]
    zbar = sum(z) / 20
    assert paired.var == pytest.approx(sum((v - zbar) ** 2 for v in z) / 19 / 20)
    assert paired.df == 19
    _, lo, hi = paired.bounds()
    _, ilo, ihi = independent.bounds()
    assert ilo < lo < paired.point < hi < ihi
    assert (hi - lo) < 0.5 * (ihi - ilo), ((lo, hi), (ilo, ihi))


def test_the_paired_interval_holds_the_true_ratio_in_95_percent_of_correlated_monte_carlo_runs():
    rng = random.Random(42)
    inside = inside_independent = 0
    width = width_independent = 0.0
    reps = 4000
    for _ in range(reps):
        b, r = _paired_rows(*_phased_windows(rng, 20))
        _, low, high = intervals.pair_estimate(b, r).bounds()
        inside += low <= 1.2 <= high
        width += high - low
        e = intervals.ratio_estimate(intervals.time_error(b), intervals.time_error(r))
        _, low, high = e.bounds()
        inside_independent += low <= 1.2 <= high
        width_independent += high - low
    assert 0.935 <= inside / reps <= 0.965, inside / reps
    # Independent samples are conservative on such windows: wider, and cover almost always.
    assert inside_independent / reps > 0.99 and width_independent > 2 * width


def test_windows_that_do_not_pair_fall_back_to_the_independent_interval():
    base, run = _phased_windows(random.Random(3), 10)
    b, r = _paired_rows(base, run)
    independent = intervals.ratio_estimate(intervals.time_error(b), intervals.time_error(r))
    unpaired = {
        "a run of an older core (no per-window figures)": (
            b, {k: v for k, v in r.items() if k != intervals.WINDOWS_KEY}),
        "as many windows in neither": (b, {**r, intervals.WINDOWS_KEY: json.dumps(run[:9])}),
        "another sampling unit": (b, {**r, "sampling.window": 1000}),
        "another warm-up": (b, {**r, "warmup.refs": 0}),
        "another seed": (b, {**r, "seed": 2}),
        "a key only one run has": ({k: v for k, v in b.items() if k != "refs"}, r),
    }  # fmt: skip
    for why, (x, y) in unpaired.items():
        e = intervals.pair_estimate(x, y)
        assert e.source == "sampling", why
        assert e.bounds() == pytest.approx(independent.bounds()), why
    # A list (a flattened record) pairs as its JSON text (a stored row) does.
    listed = {**r, intervals.WINDOWS_KEY: run}
    assert intervals.pair_estimate(b, listed) == intervals.pair_estimate(b, r)
    assert intervals.pair_estimate(b, listed).source == "sampling (paired)"
    # One side unsampled: only the sampled side has an error, as before.
    full = {"timing.cycles": 1.0e6, "workload": "gups", "seed": 1, "refs": 100_000}
    assert intervals.pair_estimate(full, r).source == "sampling"


def test_a_geomean_over_paired_and_independent_cells_says_both_methods():
    paired = intervals.LogEstimate(math.log(1.2), 0.0001, 19, "sampling (paired)")
    independent = intervals.LogEstimate(math.log(0.9), 0.0004, 19, "sampling")
    g = intervals.geomean_estimate([paired, independent])
    assert g.source == "sampling (paired and independent)" and g.has_interval
    assert intervals.geomean_estimate([paired, paired]).source == "sampling (paired)"
    assert intervals.geomean_estimate([paired, intervals.seed_estimate([1.1, 1.2])]).source == (
        "seeds and sampling (paired)"
    )
    text = intervals.method_text([g.source])
    assert "paired window by window where both runs were sampled" in text
    assert "(independent samples)" in text
    only_paired = intervals.method_text(["sampling (paired)", "exact"])
    assert only_paired.startswith("95 % intervals from sampling: delta method")
    assert "paired window by window" in only_paired and "independent" not in only_paired


def test_results_speedup_estimates_pair_stored_runs_window_by_window():
    import pandas as pd
    from xlat.query import with_speedup, with_speedup_estimates

    base, run = _phased_windows(random.Random(5), 20)
    b, r = _paired_rows(base, run)
    df = pd.DataFrame([{**b, "design": "radix", "point_hash": "p"},
                       {**r, "design": "ecpt", "point_hash": "p"}])  # fmt: skip
    est = with_speedup_estimates(with_speedup(df, "radix"), "radix")["speedup_estimate"]
    assert est[0].source == "exact"
    assert est[1] == intervals.pair_estimate(b, r) and est[1].source == "sampling (paired)"


def test_the_seed_interval_holds_the_true_geometric_speedup_in_95_percent_of_runs():
    rng = random.Random(41)
    inside, reps = 0, 4000
    for _ in range(reps):
        speedups = [math.exp(rng.gauss(math.log(1.1), 0.05)) for _ in range(5)]
        _, low, high = intervals.seed_estimate(speedups).bounds()
        inside += low <= 1.1 <= high
    assert 0.935 <= inside / reps <= 0.965, inside / reps


def test_a_geomean_interval_averages_the_cells_logs_and_needs_every_cell_to_have_one():
    a = intervals.LogEstimate(math.log(1.2), 0.0004, 19, "sampling")
    b = intervals.LogEstimate(math.log(0.8), 0.0009, 9, "sampling")
    g = intervals.geomean_estimate([a, b])
    assert g.point == pytest.approx(math.sqrt(1.2 * 0.8))
    assert g.var == pytest.approx((0.0004 + 0.0009) / 4)
    assert g.df == pytest.approx(0.0013**2 / (0.0004**2 / 19 + 0.0009**2 / 9))
    assert not intervals.geomean_estimate([a, intervals.none(1.0)]).has_interval
    assert intervals.geomean_estimate([intervals.exact(1.0)] * 3).source == "exact"


def _table(stdout: str) -> tuple[list[str], dict[str, str], list[str]]:
    """compare's table: header, each design's line, and the note lines under it."""
    table, _, notes = stdout.strip().partition("\n\n")
    lines = table.splitlines()
    return lines[0], {ln.split()[0]: ln for ln in lines[1:]}, notes.splitlines()


def test_compare_of_sampled_runs_prints_each_speedups_interval_and_says_when_1_is_inside():
    out = xlat(
        "compare", "--designs", "radix,ideal,ecpt", "--workload", "gups",
        "--footprint", "16MiB", "--refs", "20k", *SAMPLED,
    ).stdout  # fmt: skip
    header, rows, notes = _table(out)
    assert "speedup 95 % CI" in header
    assert "[" not in rows["radix"]  # the baseline is exact
    recs = json.loads(
        xlat(
            "compare", "--designs", "radix,ideal,ecpt", "--workload", "gups",
            "--footprint", "16MiB", "--refs", "20k", *SAMPLED, "--json",
        ).stdout
    )  # fmt: skip
    est = intervals.record_estimates(recs)
    assert notes[0].startswith("95 % intervals from sampling: delta method")
    spanning = []
    for d in ("ideal", "ecpt"):
        p, low, high = est[d].bounds()
        assert f"[{low:.3f}, {high:.3f}]" in rows[d]
        if intervals.contains_one(low, high):
            spanning.append(d)
            assert f"[{low:.3f}, {high:.3f}]*" in rows[d]
            assert (
                f"* {d}: {p:.3f}x [{low:.3f}, {high:.3f}] — not distinguishable from 1.0" in notes
            )
    assert spanning, "3 windows a run: at least one of these intervals holds 1.0"
    assert len(notes) == 1 + len(spanning)


def test_compare_of_unsampled_runs_says_no_interval_once_and_keeps_its_table():
    out = xlat(
        "compare", "--designs", "radix,ideal,ecpt", "--workload", "gups", "--footprint", "16MiB",
        "--refs", "20k",
    ).stdout  # fmt: skip
    header, rows, notes = _table(out)
    assert "CI" not in header and not any("[" in r for r in rows.values())
    assert notes == ["no interval: one unsampled run"]


@pytest.fixture(scope="module")
def seeds_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("seeds") / "r.duckdb"
    api.sweep({"designs": ["radix", "ideal"], "workloads": ["gups", "kv"], "footprint": "16MiB",
               "refs": "20k", "seeds": [1, 2, 3]}, db, workers=1)  # fmt: skip
    return db


def test_results_speedup_over_several_seeds_prints_student_t_intervals_on_log_speedups(seeds_db):
    runs = api.results(seeds_db)
    per_seed = {}
    for w in ("gups", "kv"):
        sel = runs[runs.workload == w]
        base = sel[sel.design == "radix"].set_index("seed")["timing.cycles"]
        ideal = sel[sel.design == "ideal"].set_index("seed")["timing.cycles"]
        per_seed[w] = [float(base[s] / ideal[s]) for s in (1, 2, 3)]
    want = {w: intervals.seed_estimate(v).bounds() for w, v in per_seed.items()}
    table = api.results(seeds_db, speedup_over="radix", intervals=True)
    for w, (p, low, high) in want.items():
        assert table.loc[w, "ideal"] == pytest.approx(p)
        assert table.loc[w, "ideal.ci95_low"] == pytest.approx(low)
        assert table.loc[w, "ideal.ci95_high"] == pytest.approx(high)
    geo = intervals.geomean_estimate(intervals.seed_estimate(v) for v in per_seed.values())
    assert table.loc["geomean", "ideal.ci95_low"] == pytest.approx(geo.bounds()[1])
    assert api.results(seeds_db, speedup_over="radix").columns.tolist() == ["radix", "ideal"]

    out = xlat("results", "--db", str(seeds_db), "--speedup-over", "radix").stdout
    p, low, high = want["gups"]
    gups = next(ln for ln in out.splitlines() if ln.split()[:1] == ["gups"])
    assert f"{p:.3f} [{low:.3f}, {high:.3f}]" in gups
    assert "95 % intervals from seeds: Student t on the per-seed log speedups" in out
    rows = list(csv.DictReader(
        xlat("results", "--db", str(seeds_db), "--speedup-over", "radix", "--format", "csv")
        .stdout.splitlines()
    ))  # fmt: skip
    assert float(rows[0]["ideal.ci95_high"]) == pytest.approx(want[rows[0]["workload"]][2])


def test_results_speedup_over_one_unsampled_seed_says_no_interval_once(seeds_db):
    out = xlat(
        "results", "--db", str(seeds_db), "--speedup-over", "radix", "--where", "seed=1"
    ).stdout
    assert "[" not in out
    assert out.rstrip().endswith("\n\nno interval: one unsampled run")
    assert out.count("no interval") == 1


def test_the_report_draws_error_bars_on_the_speedup_chart_from_sampled_runs(tmp_path):
    from xlat.report import write_report

    recs = api.compare(["radix", "ideal"], "gups", "16MiB", "20k", set=SAMPLED_SET)
    paths = write_report(recs, tmp_path)
    numbers = json.loads(paths["figures_json"].read_text())["figures"]["speedup"]
    ci = numbers["panels"][0]["ci95"]["ideal"]
    _, low, high = intervals.record_estimates(recs)["ideal"].bounds()
    assert ci[0] == pytest.approx([low, high])
    assert "Error bars: 95 % intervals from sampling" in numbers["caption"]
    md = paths["markdown"].read_text()
    assert f"[{low:.3f}, {high:.3f}]" in md
    assert "ideal.ci95_low" in (tmp_path / "speedup.csv").read_text()


def test_the_report_of_unsampled_runs_says_it_has_no_error_bars(tmp_path):
    from xlat.report import write_report

    paths = write_report(api.compare(["radix", "ideal"], "gups", "16MiB", "20k"), tmp_path)
    numbers = json.loads(paths["figures_json"].read_text())["figures"]["speedup"]
    assert "ci95" not in numbers["panels"][0]
    assert "No error bars (no interval: one unsampled run per point)." in numbers["caption"]
    md = paths["markdown"].read_text()
    table = md[md.index("## Speedup over") : md.index("## Figures")]
    assert table.count("no interval: one unsampled run") == 1  # once, not per cell


def _footprint_sweep(sampled: bool) -> list[dict]:
    """radix and ideal on gups at two footprints (a footprint axis: the report's line plots)."""
    extra = {"set": SAMPLED_SET} if sampled else {}
    return [
        r
        for foot in ("8MiB", "16MiB")
        for r in api.compare(["radix", "ideal"], "gups", foot, "20k", **extra)
    ]


def test_the_speedup_line_plot_draws_each_points_interval_as_an_error_bar():
    import xlat.plot
    from matplotlib.container import ErrorbarContainer

    recs = _footprint_sweep(sampled=True)
    fig = xlat.plot.figure("speedup_vs_footprint", recs)
    numbers = fig._xlat_numbers
    assert "Error bars: 95 % intervals from sampling: delta method" in numbers["caption"]
    want = [intervals.record_estimates(recs[i : i + 2])["ideal"].bounds() for i in (0, 2)]
    panels = {p["title"]: p for p in numbers["panels"]}
    got = [b for pair in panels["gups"]["ci95"]["ideal"] for b in pair]
    assert got == pytest.approx([b for _, lo, hi in want for b in (lo, hi)])
    for ax in fig.axes:  # the gups panel and the geomean panel: one bar per footprint
        bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        assert len(bars) == 1 and len(bars[0].lines[2][0].get_segments()) == 2
    # The walk-cycles line plot is not a comparison: no error bars, nothing said of them.
    walks = xlat.plot.figure("walk_cycles_vs_footprint", recs)
    assert not any(ax.containers for ax in walks.axes)
    assert "error bars" not in walks._xlat_numbers["caption"].lower()


def test_the_speedup_line_plot_of_unsampled_runs_says_it_has_no_error_bars():
    import xlat.plot

    fig = xlat.plot.figure("speedup_vs_footprint", _footprint_sweep(sampled=False))
    assert not any(ax.containers for ax in fig.axes)
    assert fig._xlat_numbers["caption"].endswith(
        "No error bars (no interval: one unsampled run per point)."
    )
    assert "ci95" not in fig._xlat_numbers["panels"][0]


def test_the_thp_speedup_bars_carry_each_designs_paired_interval():
    import xlat.plot
    from xlat.records import flatten

    recs = {
        thp: api.compare(["radix", "ideal"], "gups", "16MiB", "20k", set={**SAMPLED_SET,
                         "os.thp": thp})
        for thp in ("never", "always")
    }  # fmt: skip
    fig = xlat.plot.figure("thp_speedup", recs["never"] + recs["always"])
    numbers = fig._xlat_numbers
    assert "Error bars: 95 % intervals from sampling" in numbers["caption"]
    (panel,) = numbers["panels"]
    for i, d in enumerate(("radix", "ideal")):
        # Independent path: the two runs of the design, THP off over on, paired here.
        off, on = flatten(recs["never"][i]), flatten(recs["always"][i])
        want = intervals.pair_estimate(off, on)
        assert want.source == "sampling (paired)"
        assert panel["ci95"][d][0] == pytest.approx(want.bounds()[1:])
        assert panel["series"][d][0] == pytest.approx(want.point)
        low, high = panel["ci95"][d][0]
        assert low < panel["series"][d][0] < high


CLAIM = {"id": "x", "text": "t: 1.24x", "ref": "Fig. 18", "paper": 1.24, "kind": "speedup",
         "effect": "speedup", "counts": "core cycles", "headline": False}  # fmt: skip


def test_a_claim_row_shows_its_interval_and_when_it_spans_1_or_a_grade_boundary():
    row = claim_row({}, CLAIM, 1.01, False, (0.99, 1.03), "sampling")
    assert row["grade"] == "direction only"  # graded on the point figure
    assert row["interval_spans"] == "1.0; grades contradicted to direction only"
    table = claims_table([row, claim_row({}, {**CLAIM, "id": "y"}, 1.2, False, (1.19, 1.22))])
    head, _, first, second = table.splitlines()
    assert "xlat [95 % CI]" in head and "interval spans" in head
    assert "| 1.010 [0.990, 1.030] |" in first
    assert "| 1.0; grades contradicted to direction only |" in first
    assert second.split(" | ")[-2] == ""  # inside one grade and above 1.0: nothing to say
    assert "Grades stay on the point figure" in interval_note([row])


def test_a_claims_table_without_intervals_is_unchanged_and_says_so_once():
    rows = [claim_row({}, CLAIM, 1.01, False), claim_row({}, {**CLAIM, "id": "y"}, 1.2, False)]
    assert "interval spans" not in claims_table(rows)
    assert interval_note(rows).startswith("Intervals: no interval: one unsampled run")


def test_results_speedup_over_grouped_by_design_is_a_clear_error(seeds_db):
    proc = xlat(
        "results", "--db", str(seeds_db), "--speedup-over", "radix", "--by", "design", check=False
    )
    assert proc.returncode != 0
    assert "--by design: a speedup table has one column per design" in proc.stderr
    assert "Traceback" not in proc.stderr
