"""scripts/host_predict.py: a host preset is compared only with measurements of its own CPU
(issue 35; docs/host.md, "The Zen 5 host"), and its tables hold the chains (`mlp`) step."""

import doctest
import json
from pathlib import Path

import pytest
from conftest import load_script

RESULTS = Path("tools/hostbench/results")


@pytest.fixture(scope="module")
def hp():
    return load_script("scripts/host_predict.py")


def rows(name):
    return [json.loads(x) for x in (RESULTS / name).read_text().splitlines() if x.startswith("{")]


def test_the_scripts_examples_hold(hp):
    assert doctest.testmod(hp).failed == 0


def test_each_results_file_names_the_cpu_it_was_measured_on(hp):
    # 2026-11-28: the Zen 3 host (its record keeps lscpu -J); 2026-11-30: the Zen 5 host (its
    # record and every line carry cpu_family / cpu_model).
    assert hp.measured_cpu(rows("quiet-20261128.jsonl")) == (25, 1)
    assert hp.measured_cpu(rows("quiet-20261130.jsonl")) == (26, 2)
    lines = [r for r in rows("quiet-20261130.jsonl") if "bench" in r]
    assert lines and all((r["cpu_family"], r["cpu_model"]) == (26, 2) for r in lines)
    assert hp.measured_cpu([{"record": "host"}]) is None


def test_each_host_preset_names_the_cpu_its_file_describes(hp):
    assert hp.preset_cpu_name("configs/host-kvm.toml") == "host-milan-kvm"
    assert hp.preset_cpu_name("configs/host-kvm-turin.toml") == "host-turin-kvm"
    assert hp.preset_cpu_name("configs/host-kvm-genoa.toml") == "host-genoa-kvm"
    assert set(hp.PRESET_CPU) == {"host-milan-kvm", "host-turin-kvm", "host-genoa-kvm"}


def test_a_preset_is_refused_against_another_cpus_measurements_unless_asked(hp, tmp_path, capsys):
    out = tmp_path / "p.jsonl"
    args = ["--preset", "configs/host-kvm-turin.toml", "--xlat", "/nonexistent/xlat"]
    args += ["--measured", str(RESULTS / "quiet-20261128.jsonl"), "--out", str(out)]
    assert hp.main(args) == 2
    err = capsys.readouterr().err
    assert "host-turin-kvm" in err and "(25, 1)" in err and "--any-cpu" in err
    assert not out.exists(), "nothing is run or written"


def test_the_committed_predictions_summarize_with_the_chains_table(hp, capsys):
    hp.summarize(str(RESULTS / "xlat-turin-20261130.jsonl"))
    table = capsys.readouterr().out
    chains = table[table.index("| chains (mlp) |") :].split("\n\n")[0].splitlines()[2:]
    assert len(chains) == 24
    assert sum("| pass |" in ln for ln in chains) == 20


@pytest.mark.parametrize("name", ["xlat-turin-20261130.jsonl", "xlat-genoa-20261202.jsonl"])
def test_each_table_ends_with_the_tally_of_its_own_verdicts(hp, capsys, name):
    hp.summarize(str(RESULTS / name))
    blocks = capsys.readouterr().out.split("\n\n")
    tallies = [(i, b.strip()) for i, b in enumerate(blocks) if b.startswith("**")]
    assert len(tallies) == 3
    for i, line in tallies:
        rows = blocks[i - 1].splitlines()
        passed = sum("| pass |" in r for r in rows)
        failed = sum("| **fail** |" in r for r in rows)
        assert line.startswith(f"**{passed} of {passed + failed}** "), (line, passed, failed)
    if name.startswith("xlat-genoa"):
        assert [t for _, t in tallies] == [
            "**7 of 15** predicted figures within 25 %.",
            "**5 of 6** 4 KiB / 2 MiB ratios within 15 %.",
            "**16 of 24** chain points within 25 %.",
        ]


def test_an_ablation_adds_its_settings_after_each_cases_own(hp, tmp_path, monkeypatch):
    seen = []

    class Stop(Exception):
        pass

    def fake_run(cmd, **_kw):
        seen.append(cmd)
        raise Stop

    monkeypatch.setattr(hp.subprocess, "run", fake_run)
    args = ["--measured", str(RESULTS / "quiet-20261201.jsonl"), "--out", str(tmp_path / "a")]
    args += ["--xlat", "xlat", "--only", "mlp 16 1GiB 4k", "--set", "core.page_walkers=4"]
    with pytest.raises(Stop):
        hp.main(args)
    cmd = seen[0]
    assert cmd[-4:] == ["--set", "workload.chains=16", "--set", "core.page_walkers=4"]


def test_a_setting_without_a_value_is_refused(hp, tmp_path, capsys):
    args = ["--measured", str(RESULTS / "quiet-20261201.jsonl"), "--out", str(tmp_path / "a")]
    assert hp.main([*args, "--set", "core.page_walkers"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
