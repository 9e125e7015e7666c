"""CPU presets (configs/cpus/*.toml): `--cpu`, `xlat cpus`, the layering and the record's name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import xlat as api
from conftest import ROOT, SMALL, xlat
from xlat import _core
from xlat.query import varying_params
from xlat.run import CPU_SECTIONS, cpu_keys, load_cpu, resolve_config
from xlat.sweeps import SpecError, expand, parse_spec

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

CPU_DIR = ROOT / "configs" / "cpus"
FILES = sorted(CPU_DIR.glob("*.toml"))
NAMES = [p.stem for p in FILES]
#: The presets issue 13 asks for.
REQUIRED = ["skylake-sp", "golden-cove", "zen4", "neoverse-n1", "neoverse-v2"]
#: How every value line says where its value comes from (docs/machine.md).
PROVENANCE = re.compile(r"#\s*(source|unverified|assumed):")


def resolved(cpu: str | None = None, preset: str | None = None, **kw) -> dict:
    return tomllib.loads(resolve_config(preset, cpu, **kw))


def test_the_required_presets_exist():
    assert set(REQUIRED) <= set(NAMES), NAMES
    assert api.cpus() == NAMES


@pytest.mark.parametrize("path", FILES, ids=NAMES)
def test_every_preset_resolves_to_a_valid_config_that_sets_the_machine_only(path):
    tree = tomllib.loads(path.read_text())
    assert set(tree) <= set(CPU_SECTIONS), f"{path.name} sets {set(tree) - set(CPU_SECTIONS)}"
    cfg = resolved(path.stem)
    assert cfg["sim"]["cpu"] == path.stem
    # Every key the file sets reaches the resolved configuration unchanged.
    for key in cpu_keys(path.stem):
        node_file, node_cfg = tree, cfg
        for part in key.split("."):
            node_file, node_cfg = node_file[part], node_cfg[part]
        assert node_cfg == node_file, key


@pytest.mark.parametrize("path", FILES, ids=NAMES)
def test_every_value_in_a_preset_says_where_it_comes_from(path):
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# ") and len(lines[0]) > 10, "first line: one-line description"
    for n, line in enumerate(lines, 1):
        code = line.split("#", 1)[0].strip()
        if "=" in code and not code.startswith("["):
            assert PROVENANCE.search(line), f"{path.name}:{n}: no source/unverified/assumed: {line}"
        if line.lstrip().startswith("#") and "=" in line and "lead: enable" not in line:
            # A commented-out key is only allowed as a marked key for the lead to enable.
            assert not re.match(r"#\s*[a-z_0-9]+\s*=", line.strip()), f"{path.name}:{n}: {line}"


def test_every_preset_sets_the_keys_that_define_a_machine_so_none_inherits_a_default():
    keys = {name: cpu_keys(name) for name in NAMES}
    must = {
        "tlb.l1_organization",
        "tlb.l2.entries",
        "tlb.l2.ways",
        "tlb.l2.latency_cycles",
        "tlb.itlb.entries",
        "radix.pwc_entries",
        "radix.pwc_latency_cycles",
        "mem.l1d.size_bytes",
        "mem.l2.size_bytes",
        "mem.llc.size_bytes",
        "mem.llc.latency_cycles",
        "mem.dram.channels",
        "mem.dram.core_clock_mhz",
        "core.rob_entries",
        "core.page_walkers",
    }
    for name, k in keys.items():
        assert must <= k, f"{name} leaves {must - k} at the defaults"


def test_presets_differ_from_the_defaults_where_the_cpu_differs():
    default = resolved()
    n1, v2, zen4 = resolved("neoverse-n1"), resolved("neoverse-v2"), resolved("zen4")
    gc, skl = resolved("golden-cove"), resolved("skylake-sp")
    assert default["tlb"]["l1_organization"] == "split"
    for cfg, l1 in ((n1, 48), (v2, 48), (zen4, 72)):
        assert cfg["tlb"]["l1_organization"] == "any_size"
        assert cfg["tlb"]["l1_any"]["entries"] == cfg["tlb"]["l1_any"]["ways"] == l1
    assert (n1["tlb"]["l2"]["entries"], n1["tlb"]["l2"]["ways"]) == (1280, 5)
    assert n1["mem"]["l1d"]["size_bytes"] == 64 << 10 != default["mem"]["l1d"]["size_bytes"]
    assert (zen4["tlb"]["l2"]["entries"], gc["tlb"]["l2"]["entries"]) == (3072, 2048)
    assert gc["tlb"]["l1_4k"]["entries"] == 96 and gc["core"]["rob_entries"] == 512
    # Skylake-SP is what the defaults approximate: its TLBs are the defaults' but for the
    # separate 1 GiB L2 entries (the defaults keep one unified L2); its LLC is not.
    assert skl["tlb"]["l2_organization"] == "split_1g" != default["tlb"]["l2_organization"]
    assert (skl["tlb"]["l2_1g"]["entries"], skl["tlb"]["l2_1g"]["ways"]) == (16, 4)
    drop = {"l2_organization"}
    assert {k: v for k, v in skl["tlb"].items() if k not in drop} == {
        k: v for k, v in default["tlb"].items() if k not in drop
    }
    for arm in (n1, v2):
        assert arm["tlb"]["coalescing"] == "contiguous_bit"
    assert skl["mem"]["llc"] != default["mem"]["llc"]
    # No two presets describe the same machine.
    machines = [json.dumps({s: resolved(n)[s] for s in CPU_SECTIONS}) for n in NAMES]
    assert len(set(machines)) == len(NAMES)


def test_xlat_cpus_lists_every_file_with_its_figures():
    out = xlat("cpus").stdout.splitlines()
    assert out[0].split()[:3] == ["NAME", "L1", "DTLB"]
    rows = {line.split()[0]: line for line in out[1:]}
    assert sorted(rows) == NAMES
    assert (
        "48 any-size, fully assoc." in rows["neoverse-n1"] and "1280, 5-way" in rows["neoverse-n1"]
    )
    assert "64x4K+32x2M+4x1G" in rows["skylake-sp"] and "2.5 GHz" in rows["skylake-sp"]
    assert "Neoverse N1" in rows["neoverse-n1"]  # the file's one-line description
    assert xlat("cpus", "--names").stdout.split() == NAMES


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--cpu", "neoverse-m1", "--workload", "gups", *SMALL],
        ["compare", "--designs", "radix,ideal", "--cpu", "neoverse-m1", *SMALL],
        ["config", "show", "--cpu", "neoverse-m1"],
        ["run", "--set", "sim.cpu=neoverse-m1", *SMALL],
    ],
    ids=["run", "compare", "config", "set"],
)
def test_an_unknown_cpu_exits_2_listing_the_valid_ones_and_the_closest(args):
    proc = xlat(*args, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "unknown CPU preset 'neoverse-m1' (did you mean 'neoverse-n1'?)" in proc.stderr
    assert ", ".join(NAMES) in proc.stderr
    assert proc.stdout == ""


def test_a_skylake_run_end_to_end_names_its_cpu_in_the_record_and_uses_its_machine():
    rec = json.loads(
        xlat(
            "run",
            "--cpu",
            "skylake-sp",
            "--design",
            "radix",
            "--workload",
            "gups",
            *SMALL,
            "--json",
        ).stdout
    )
    assert rec["config"]["sim"]["cpu"] == "skylake-sp"
    assert rec["config"]["mem"]["llc"]["size_bytes"] == 1441792
    assert rec["config"]["mem"]["dram"]["core_clock_mhz"] == 2500
    assert rec["oracle"]["mismatches"] == 0 and rec["oracle"]["checked"] > 0
    # The same run through the Python API gives the same figures.
    same = api.run(design="radix", workload="gups", footprint="16MiB", refs="20k", cpu="skylake-sp")
    drop = ("sim", "version")
    assert {k: v for k, v in same.items() if k not in drop} == {
        k: v for k, v in rec.items() if k not in drop
    }


def test_an_arm_preset_changes_the_tlb_figures_of_a_run():
    kw = dict(design="radix", workload="gups", footprint="64MiB", refs="50k")
    base, n1 = api.run(**kw), api.run(cpu="neoverse-n1", **kw)
    assert n1["config"]["tlb"]["l1_organization"] == "any_size"
    assert n1["tlb"] != base["tlb"]
    assert n1["oracle"]["mismatches"] == 0


def test_set_beats_preset_beats_cpu_beats_defaults(tmp_path):
    preset = tmp_path / "mine.toml"
    preset.write_text("[tlb.l2]\nentries = 2560\n[radix]\npwc_entries = 16\n")
    cfg = resolved("neoverse-n1", str(preset), set={"radix.pwc_entries": 8})
    assert cfg["tlb"]["l2"]["entries"] == 2560, "the preset file beats the CPU"
    assert cfg["tlb"]["l2"]["ways"] == 5, "keys the preset does not set stay the CPU's"
    assert cfg["radix"]["pwc_entries"] == 8, "--set beats the preset and the CPU"
    assert cfg["tlb"]["l1_organization"] == "any_size", "the CPU beats the defaults"
    # Through the command line: --set beats --cpu, and the record carries what ran.
    rec = json.loads(
        xlat("run", "--cpu", "neoverse-n1", "--set", "tlb.l2.entries=2560", *SMALL, "--json").stdout
    )
    assert rec["config"]["tlb"]["l2"]["entries"] == 2560
    assert rec["config"]["tlb"]["l2"]["ways"] == 5
    assert rec["config"]["sim"]["cpu"] == "neoverse-n1"


def test_a_preset_file_may_name_its_cpu_and_the_command_line_may_change_it(tmp_path):
    preset = tmp_path / "study.toml"
    preset.write_text('[sim]\ncpu = "zen4"\n[tlb.l2]\nlatency_cycles = 9\n')
    cfg = resolved(preset=str(preset))
    assert cfg["sim"]["cpu"] == "zen4" and cfg["tlb"]["l1_any"]["entries"] == 72
    assert cfg["tlb"]["l2"]["latency_cycles"] == 9
    other = resolved("neoverse-n1", str(preset))
    assert other["sim"]["cpu"] == "neoverse-n1" and other["tlb"]["l1_any"]["entries"] == 48
    assert other["tlb"]["l2"]["latency_cycles"] == 9


def test_naming_two_different_cpus_is_an_error_and_the_same_one_twice_is_not():
    with pytest.raises(_core.XlatError, match="the CPU is given twice"):
        resolve_config(cpu="zen4", set={"sim.cpu": "neoverse-n1"})
    assert resolved("zen4", set={"sim.cpu": "zen4"})["sim"]["cpu"] == "zen4"


def test_a_new_cpu_is_a_file_and_a_bad_one_is_named_with_its_problem(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # ./configs/cpus is searched first
    cpus = tmp_path / "configs" / "cpus"
    cpus.mkdir(parents=True)
    (cpus / "tiny.toml").write_text(
        "# A tiny test core\n[tlb.l2]\nentries = 64  # assumed: test\nways = 4  # assumed: test\n"
    )
    assert "tiny" in api.cpus()
    assert resolved("tiny")["tlb"]["l2"]["entries"] == 64
    (cpus / "bad.toml").write_text("[os]\nthp = 'always'\n")
    with pytest.raises(_core.XlatError, match=r"bad.toml: sets 'os', but a CPU preset"):
        load_cpu("bad")
    (cpus / "typo.toml").write_text("[tlb.l2]\nentires = 64\n")
    with pytest.raises(
        _core.XlatError, match=r"typo.toml: unknown configuration key 'tlb.l2.entires'"
    ):
        resolve_config(cpu="typo")
    (cpus / "odd.toml").write_text("[tlb.l2]\nentries = 1000\nways = 3\n")
    with pytest.raises(_core.XlatError, match="tlb.l2: 1000 entries is not a whole number"):
        resolve_config(cpu="odd")
    with pytest.raises(_core.XlatError, match="unknown CPU preset '../x'"):
        load_cpu("../x")


def test_a_sweep_takes_cpus_as_an_axis_and_labels_runs_by_cpu():
    spec = parse_spec({"designs": ["radix"], "workloads": ["gups"], "cpus": ["zen4", "skylake-sp"]})
    runs = expand(spec)
    assert [r.label() for r in runs] == [
        "radix gups sim.cpu=zen4 seed=1",
        "radix gups sim.cpu=skylake-sp seed=1",
    ]
    assert [r.config["sim"]["cpu"] for r in runs] == ["zen4", "skylake-sp"]
    assert runs[0].config["tlb"]["l1_organization"] == "any_size"
    assert len({r.config_hash for r in runs}) == 2
    same = expand(
        parse_spec(
            {
                "designs": ["radix"],
                "workloads": ["gups"],
                "set": {"sim.cpu": ["zen4", "skylake-sp"]},
            }
        )
    )
    assert [r.config_hash for r in same] == [r.config_hash for r in runs]
    with pytest.raises(
        SpecError, match="unknown cpu 'zen5' in 'cpus' \\(did you mean 'zen4'\\?\\)"
    ):
        parse_spec({"workloads": ["gups"], "cpus": ["zen5"]})
    with pytest.raises(SpecError, match="'cpus' and \\[set\\] 'sim.cpu'"):
        parse_spec({"workloads": ["gups"], "cpus": ["zen4"], "set": {"sim.cpu": ["zen4"]}})
    with pytest.raises(SpecError, match="unknown CPU preset 'zen5'"):
        expand(parse_spec({"workloads": ["gups"], "set": {"sim.cpu": ["zen5"]}}))


def test_result_tables_show_the_cpu_not_every_key_its_preset_sets():
    import pandas as pd

    df = pd.DataFrame(
        [
            {f"config.{k}": v for k, v in api.flatten(resolved(cpu, set={"os.thp": thp})).items()}
            for cpu in ("zen4", "neoverse-n1")
            for thp in ("never", "always")
        ]
    )
    assert varying_params(df) == ["config.sim.cpu", "config.os.thp"]
    # A key swept on top of the presets stays visible.
    df2 = pd.DataFrame(
        [
            {
                f"config.{k}": v
                for k, v in api.flatten(resolved(cpu, set={"tlb.l2.latency_cycles": lat})).items()
            }
            for cpu in ("zen4", "neoverse-n1")
            for lat in (3, 9)
        ]
    )
    assert "config.tlb.l2.latency_cycles" in varying_params(df2)
    assert "config.tlb.l2.entries" not in varying_params(df2)


def test_the_defaults_record_an_empty_cpu():
    assert resolved()["sim"]["cpu"] == ""
    rec = api.run(design="radix", workload="gups", footprint="16MiB", refs="5k")
    assert rec["config"]["sim"]["cpu"] == ""


def test_the_docs_list_every_preset():
    doc = (ROOT / "docs" / "machine.md").read_text()
    for name in NAMES:
        assert f"`{name}`" in doc, name
    assert Path(ROOT / "docs" / "cli.md").read_text().count("--cpu") >= 1
