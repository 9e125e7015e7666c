"""`xlat reproduce --workloads generators|real|both` (issue 39, item 4): a paper's experiments on
the recorded real programs in the generators' place (python/xlat/reproduce_real.py), the
counterparts table (python/xlat/corpus.py) and the ledger's two columns.

The end-to-end test runs a small paper of its own against the shipped recordings
(tests/data/corpus: gups, 1.2 M references) with short runs, on one Ray instance."""

from __future__ import annotations

import math

import pytest
from conftest import ROOT
from xlat import _core, cli, corpus, reproduce, reproduce_real

CORPUS = ROOT / "tests" / "data" / "corpus"

#: A small paper: `main` has a generator with a recording (gups) and one without (sysbench);
#: `tree` has only btree, which no recording stands for.
SMALL_PAPER = """
title = "A small paper (test)"
preset = "configs/papers/tps.toml"
scaling = "test sizes"
full_run = "not recorded"

[[experiment]]
name = "main"
figure = "Fig. 1"
description = "radix and ideal on gups and sysbench"
designs = ["radix", "ideal"]
workloads = ["gups", "sysbench"]
footprint = "16MiB"
warmup = "20k"
refs = "50k"

[[experiment]]
name = "tree"
figure = "Fig. 2"
description = "radix and ideal on btree"
designs = ["radix", "ideal"]
workloads = ["btree"]
footprint = "16MiB"
warmup = "20k"
refs = "50k"

[[claim]]
id = "ideal_over_radix"
text = "ideal over radix: 1.2x"
ref = "Fig. 1"
paper = 1.2
kind = "speedup"
effect = "speedup"
counts = "core cycles"
headline = true
design = "ideal"
baseline = "radix"
experiment = "main"

[[claim]]
id = "tree"
text = "ideal over radix on a tree: 1.1x"
ref = "Fig. 2"
paper = 1.1
kind = "speedup"
effect = "speedup"
counts = "core cycles"
design = "ideal"
baseline = "radix"
experiment = "tree"

[[claim]]
id = "at_16mib"
text = "ideal over radix at 16 MiB: 1.2x"
ref = "Fig. 1"
paper = 1.2
kind = "speedup"
effect = "speedup"
counts = "core cycles"
design = "ideal"
baseline = "radix"
experiment = "main"
set = { "workload.footprint" = 16777216 }
"""


@pytest.fixture
def small_paper(tmp_path, monkeypatch):
    claims = tmp_path / "claims"
    claims.mkdir()
    (claims / "small.toml").write_text(SMALL_PAPER)
    monkeypatch.setattr(reproduce, "CLAIMS_DIR", claims)
    return "small"


def test_every_program_has_one_counterpart_row_naming_a_real_generator_or_none_and_why():
    generators = {name for name, _ in _core.workloads()}
    assert list(corpus.COUNTERPARTS) == list(corpus.PROGRAMS)
    for name, row in corpus.COUNTERPARTS.items():
        assert row.program == name and len(row.why) > 40, name
        assert row.generator is None or row.generator in generators, name
    paired = [r.generator for r in corpus.COUNTERPARTS.values() if r.generator]
    assert len(paired) == len(set(paired))  # one recording per generator at most
    assert corpus.counterpart_of("gups") == "gups" and corpus.counterpart_of("btree") is None


def test_a_small_experiment_runs_on_the_shipped_recordings_and_says_what_stood_for_what(
    small_paper, tmp_path, capsys
):
    db = tmp_path / "store" / "r.duckdb"
    kw = {"db": db, "workers": 1, "progress": "errors", "keep_ray": True}
    try:
        result = reproduce.reproduce(small_paper, workloads="both", corpus_dir=CORPUS, **kw)
        again = reproduce.reproduce(small_paper, workloads="real", corpus_dir=CORPUS, **kw)
    finally:
        import ray

        ray.shutdown()
    real = result["real"]
    # Kept apart: the recorded programs' runs in real/ beside the generators' store.
    assert real["db"] == str(tmp_path / "store" / "real" / "r.duckdb")
    assert (tmp_path / "store" / "real" / "r.duckdb").is_file()
    assert set(real["frames"]["main"]["workload"]) == {"gups.xlat"}
    assert set(result["frames"]["main"]["workload"]) == {"gups", "sysbench"}
    assert again["simulated"] == 0  # a rerun resumes from the real store
    # What stood for what: the recording's own footprint, not the experiment's 16 MiB.
    (gups, sysbench) = [r for r in real["recordings"] if r["experiment"] == "main"]
    assert gups["trace"] == str(CORPUS / "gups.xlat") and gups["trace_footprint_bytes"] == 1400832
    assert gups["warmup_refs"] > 0 and gups["measured_refs"] == 50_000
    assert sysbench["program"] is None and "sysbench" in sysbench["dropped"]
    assert "experiment tree skipped on the recorded programs" in capsys.readouterr().err
    # Every claim twice: the generators' graded, the recorded programs' not, with reasons.
    gen = {r["id"]: r for r in result["claims"]}
    rows = {r["id"]: r for r in real["claims"]}
    assert gen["ideal_over_radix"]["grade"] != "not graded" and math.isfinite(
        gen["ideal_over_radix"]["ours"]
    )
    assert math.isfinite(rows["ideal_over_radix"]["ours"])
    assert rows["ideal_over_radix"]["real_used"] == "gups only"
    assert rows["ideal_over_radix"]["grade"] == "not graded"
    assert math.isnan(rows["tree"]["ours"]) and rows["tree"]["real_reason"] == (
        "no recording stands for btree"
    )
    assert (
        math.isnan(rows["at_16mib"]["ours"])
        and "footprint, 16.0 MiB" in rows["at_16mib"]["real_reason"]
    )
    assert again["claims"][0]["ours"] == rows["ideal_over_radix"]["ours"]
    table = reproduce.claims_table(result["claims"], real=real["claims"]).splitlines()
    assert table[0].startswith("| id | claim | place in the paper | paper | xlat: generators | "
                               "xlat: real programs | effect ratio | grade |")  # fmt: skip
    assert "| — (no recording stands for btree) |" in table[3] + table[4]
    text = reproduce.report(result, "xlat reproduce small --workloads both")
    assert "## The recorded programs in the generators' place" in text
    assert "gups: " + str(CORPUS / "gups.xlat") in text and "| 1.3 MiB |" in text


def test_a_missing_recording_is_an_error_naming_the_program_and_the_record_command(
    tmp_path, monkeypatch, capsys
):
    def no_runs(*a, **k):
        raise AssertionError("nothing may run before the recordings are checked")

    monkeypatch.setattr(reproduce, "run_sweep", no_runs)
    empty = tmp_path / "recs"
    with pytest.raises(reproduce.ReproduceError) as e:
        reproduce.reproduce("tps", workloads="both", corpus_dir=empty, db=tmp_path / "r.duckdb")
    text = str(e.value)
    assert f"gups (for the gups generator): {empty / 'gups.xlat'} is missing" in text
    assert f"`xlat corpus record gups xsbench --out {empty}`" in text
    assert cli.main(["reproduce", "utopia", "--workloads", "real", "--corpus-dir", str(empty),
                     "--db", str(tmp_path / "r.duckdb")]) == 2  # fmt: skip
    assert "`xlat corpus record gups xsbench --out" in capsys.readouterr().err


def test_generators_the_default_gives_exactly_the_runs_and_claims_it_gave_without_the_keyword(
    monkeypatch, tmp_path
):
    import pandas as pd

    specs = []

    def run_sweep(spec, db, *a, **k):
        specs.append((spec, str(db)))
        return {"interrupted": False, "failed": 0, "runs": [spec], "total": 1, "skipped": 0}

    def frame_of(db, runs):
        (spec,) = runs
        rows = []
        for i, (w, d) in enumerate((w, d) for w in spec.workloads for d in spec.designs):
            for params in [dict(zip(spec.params, v)) for v in _grid(spec.params)]:
                row = {"design": d, "status": "ok", "workload": w, "seed": 1,
                       "timing.cycles": 1000.0 + 37 * i + len(d), "timing.os_cycles": 5.0 * i,
                       "walk.mem_accesses": 10.0 + i, "tlb.l1_misses": 3.0 + i}  # fmt: skip
                rows.append({**row, **{f"config.{k}": v for k, v in params.items()}})
        return pd.DataFrame(rows)

    monkeypatch.setattr(reproduce, "run_sweep", run_sweep)
    monkeypatch.setattr(reproduce, "frame_of", frame_of)
    db = tmp_path / "r.duckdb"
    before = reproduce.reproduce("tps", db=db)
    n = len(specs)
    after = reproduce.reproduce("tps", db=db, workloads="generators")
    assert [(repr(s), d) for s, d in specs[:n]] == [(repr(s), d) for s, d in specs[n:]]
    assert all(d == str(db) for _, d in specs)  # nothing went to the real store
    assert set(before) == set(after) and "workloads" not in after and "real" not in after
    assert _same(before["claims"], after["claims"])
    assert reproduce.claims_table(before["claims"]) == reproduce.claims_table(after["claims"])
    assert reproduce.json_paper(before) == reproduce.json_paper(after)
    assert "real programs" not in reproduce.report(after, "xlat reproduce tps")
    assert not (tmp_path / "real").exists()


def test_the_workloads_option_takes_its_three_values_and_refuses_others(capsys):
    parser = cli.build_parser()
    for value in reproduce_real.SOURCES:
        args = parser.parse_args(["reproduce", "tps", "--workloads", value, "--corpus-dir", "d"])
        assert args.workloads == value and args.corpus_dir == "d"
    args = parser.parse_args(["reproduce", "tps"])
    assert args.workloads == "generators" and args.corpus_dir is None
    with pytest.raises(SystemExit) as e:
        parser.parse_args(["reproduce", "tps", "--workloads", "programs"])
    assert e.value.code == 2 and "invalid choice: 'programs'" in capsys.readouterr().err
    assert cli.main(["reproduce", "tps", "--corpus-dir", "d"]) == 2
    assert "--corpus-dir names the folder of the recorded programs" in capsys.readouterr().err
    assert cli.main(["reproduce", "tps", "--recorded", "--workloads", "real"]) == 2
    with pytest.raises(reproduce.ReproduceError, match="--workloads must be one of"):
        reproduce.reproduce("tps", workloads="programs")


def test_the_ledger_shows_each_headline_claim_on_both_sources_or_why_not():
    text = reproduce.ledger(reproduce.papers())
    head = text.index("### Headline claims on the generators and on the recorded programs")
    table = text[head:].split("\n\n")[1].splitlines()
    assert table[0] == ("| paper | id | claim | paper's figure | xlat: generators | grade | "
                        "xlat: real programs |")  # fmt: skip
    heads = [(n, c) for n in reproduce.papers() for c in reproduce.load_paper(n)["claim"]
             if c.get("headline")]  # fmt: skip
    assert len(table) == 2 + len(heads)
    cells = {tuple(x.strip("*") for x in line.strip("| ").split(" | ")[:2]): line
             for line in table[2:]}  # fmt: skip
    for name, c in heads:
        cell = cells[(name, c["id"])].rstrip(" |").rsplit(" | ", 1)[1]
        if "full_real" in c:
            assert cell.startswith(reproduce._fmt(c["full_real"])), (name, c["id"], cell)
        else:
            assert cell.startswith("—") or cell == "not run", (name, c["id"], cell)
    gups_contiguous = next(line for line in table if "**gups_contiguous**" in line)
    assert "— (selects the generators' footprint, 32.0 GiB" in gups_contiguous
    assert "tests/data/corpus/gups.xlat (--scale 1.0 MiB" in text[head:]


def _grid(params):
    from itertools import product

    return list(product(*params.values())) if params else [()]


def _same(a, b) -> bool:
    """Two lists of claim rows are equal, NaN equal to NaN."""

    def key(v):
        return "nan" if isinstance(v, float) and math.isnan(v) else v

    return [{k: key(v) for k, v in r.items()} for r in a] == [
        {k: key(v) for k, v in r.items()} for r in b
    ]
