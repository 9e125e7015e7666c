"""``xlat corpus``: the papers' workloads as real programs (python/xlat/corpus.py).

The recorded traces of tests/data/corpus/ (tests/data/corpus/README.md says how they were made)
let every test but the end-to-end recording run without valgrind or any of the programs."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import ROOT, xlat
from xlat import _core, cli, corpus
from xlat.values import parse_size

SHIPPED = sorted((ROOT / "tests" / "data" / "corpus").glob("*.xlat"))


def test_list_names_every_program_with_what_it_installs_and_its_inputs():
    text = xlat("corpus", "list").stdout
    for name in corpus.PROGRAMS:
        assert f"\n{name} " in "\n" + text
    assert "installs: redis-server, redis-tools" in text
    rows = json.loads(xlat("corpus", "list", "--json").stdout)
    assert [r["name"] for r in rows] == list(corpus.PROGRAMS)
    generators = {name for name, _ in _core.workloads()}
    stands = {g.strip() for r in rows for g in r["stands_for"].split("/")}
    assert len(stands & generators) >= 8, stands & generators


def test_every_program_is_sized_to_reach_a_scale_of_1_gib_and_the_default_is_small():
    for p in corpus.PROGRAMS.values():
        assert p.estimate(1 << 30) >= 1 << 30, p.name
        assert p.estimate(parse_size(corpus.DEFAULT_SCALE)) <= 4 << 20, p.name


def test_a_missing_program_without_install_is_an_error_naming_the_command_to_run(
    monkeypatch, capsys, tmp_path
):
    real = shutil.which
    monkeypatch.setattr(
        corpus.shutil, "which", lambda cmd: None if cmd == "jellyfish" else real(cmd)
    )
    assert cli.main(["corpus", "record", "jellyfish", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "missing jellyfish (Debian package jellyfish)" in err
    assert "run `apt-get install -y jellyfish` (as root), or rerun with --install" in err
    assert not list(tmp_path.iterdir())


def test_install_runs_one_apt_get_for_what_is_missing_and_checks_again(monkeypatch):
    installed = set()
    ran = []
    monkeypatch.setattr(corpus.os, "geteuid", lambda: 0)
    monkeypatch.setattr(corpus.shutil, "which", lambda cmd: cmd if cmd in installed else None)

    def run(cmd, env=None):
        ran.append(cmd)
        installed.update(["jellyfish", "valgrind"])
        return corpus.subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(corpus.subprocess, "run", run)
    corpus.ensure(corpus.needs_of(corpus.program("jellyfish")), install=True)
    assert ran == [["apt-get", "install", "-y", "jellyfish", "valgrind"]]


def test_install_without_root_says_to_run_apt_get_with_sudo(monkeypatch):
    monkeypatch.setattr(corpus.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(corpus.shutil, "which", lambda cmd: None)
    with pytest.raises(corpus.CorpusError, match="needs root for apt-get: run `sudo apt-get"):
        corpus.ensure([corpus.Need("jellyfish", apt="jellyfish")], install=True)


def test_an_unknown_program_is_an_error_naming_the_known_ones(capsys, tmp_path):
    assert cli.main(["corpus", "record", "nope", "--out", str(tmp_path)]) == 2
    assert "unknown corpus program 'nope' (known: gups, bfs," in capsys.readouterr().err


@pytest.mark.parametrize("name", ["bfs", "dlrm", "redis", "jellyfish", "sqlite"])
def test_the_same_seed_builds_identical_input_files_and_another_seed_different_ones(
    name, tmp_path, monkeypatch
):
    monkeypatch.setattr(corpus, "binary", lambda kernel: f"/bin/{kernel}")
    digests = []
    for run, seed in (("a", 1), ("b", 1), ("c", 2)):
        plan = corpus.build_inputs(name, "64KiB", seed, tmp_path / run)
        assert plan.inputs
        digests.append([corpus.sha256_file(f) for f in plan.inputs])
    assert digests[0] == digests[1]
    assert digests[0] != digests[2]


@pytest.mark.parametrize("trace", SHIPPED, ids=[t.stem for t in SHIPPED])
def test_a_shipped_trace_reads_and_simulates_on_radix(trace):
    meta = json.loads(trace.with_suffix(".json").read_text())
    info = json.loads(xlat("trace", "info", "--verify", "--json", str(trace)).stdout)
    assert info["refs"] == meta["refs"] and info["refs_outside_vmas"] == 0
    run = ["run", "--design", "radix", "--trace", str(trace), "--warmup", "0", "--json"]
    rec = json.loads(xlat(*run).stdout)
    assert rec["ended_by"] == "end_of_trace" and rec["refs"] == info["refs"]
    assert rec["tlb"]["l1_misses"] > 0


def test_the_shipped_traces_cover_at_least_eight_of_the_papers_workloads():
    names = {t.stem for t in SHIPPED}
    assert len(names) >= 8, names
    assert all(t.stat().st_size < 5 << 20 for t in SHIPPED)


@pytest.mark.skipif(
    shutil.which("valgrind") is None or shutil.which("gcc") is None,
    reason="recording needs valgrind and gcc (apt-get install valgrind gcc pkg-config libc6-dev)",
)
def test_recording_gups_writes_the_trace_its_summary_and_what_was_run(tmp_path):
    out = tmp_path / "out"
    proc = xlat("corpus", "record", "gups", "--scale", "256KiB", "--out", str(out), "--json")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["params"] == {"logn": 15, "updates": 131072}
    assert result["footprint_bytes"] >= 256 << 10
    assert "footprint" in (out / "gups.txt").read_text()
    assert json.loads((out / "gups.json").read_text()) == result
    assert [p.name for p in out.iterdir() if p.is_dir()] == []  # the inputs are removed
    run = ["run", "--design", "radix", "--trace", str(out / "gups.xlat"), "--warmup", "0"]
    rec = json.loads(xlat(*run, "--json").stdout)
    assert rec["refs"] == result["refs"]
