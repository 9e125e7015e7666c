"""Design profiles (issue 34): naming a design applies the settings of its paper, with a
documented precedence (defaults < --cpu < profile < --preset < --set), provenance in every
record, `--profile none` for the bare mechanism, and a warning when an override defeats a
profile setting. Also the steady-state default (`sim.warmup_refs = "auto"`)."""

from __future__ import annotations

import json
import warnings

import pytest
import xlat as api
from conftest import SMALL, xlat
from xlat.run import ProfileWarning, resolve_config_sources


def _flat(record: dict, key: str):
    node = record["config"]
    for part in key.split("."):
        node = node[part]
    return node


def test_each_level_overrides_the_one_below_it(tmp_path):
    # defaults < cpu < profile: skylake-sp sets the L1 4 KiB TLB, tps's profile its any-size L1.
    _, src, _ = resolve_config_sources(design="tps", cpu="skylake-sp")
    assert src["tlb.l1_any.entries"] == "profile:tps"
    assert src["os.policy"] == "profile:tps"
    assert any(v == "cpu:skylake-sp" for v in src.values())
    # profile < preset: a preset file that sets the TPS TLB's size wins over the profile.
    preset = tmp_path / "p.toml"
    preset.write_text("[tlb.l1_any]\nentries = 16\nways = 16\n")
    text, src, warns = resolve_config_sources(design="tps", preset=str(preset))
    assert src["tlb.l1_any.entries"].startswith("preset:") and "entries = 16" in text
    assert any("tlb.l1_any.entries" in w for w in warns)
    # preset < set.
    text, src, _ = resolve_config_sources(
        design="tps", preset=str(preset), set={"tlb.l1_any.entries": 8, "tlb.l1_any.ways": 8}
    )
    assert src["tlb.l1_any.entries"] == "set" and "entries = 8" in text


def test_a_record_says_where_each_non_default_setting_came_from(run_json):
    rec = run_json("--design", "tps", "--workload", "gups", *SMALL)
    assert rec["config"]["sim"]["profile"] == "tps"
    assert rec["config_sources"]["os.policy"] == "profile:tps"
    assert rec["config_sources"]["sim.design"] == "set"
    assert _flat(rec, "tlb.l1_organization") == "split_any_size"


def test_profile_none_is_the_bare_mechanism_bit_for_bit():
    # tps with --profile none runs on the default OS and TLBs: the same figures as before
    # profiles existed, i.e. as a run that sets those defaults explicitly over profile none.
    bare = api.run(design="tps", workload="gups", footprint="16MiB", refs="20k", profile="none")
    assert bare["config"]["sim"]["profile"] == "none"
    assert bare["config"]["os"]["policy"] == "thp"
    assert bare["config"]["tlb"]["l1_organization"] != "split_any_size"
    # The profile changes the figures (its paper's design is not radix under another name).
    named = api.run(design="tps", workload="gups", footprint="16MiB", refs="20k")
    assert named["tlb"] != bare["tlb"]
    # And `none` is deterministic: the same record again.
    again = api.run(design="tps", workload="gups", footprint="16MiB", refs="20k", profile="none")
    bare.pop("sim"), again.pop("sim")
    assert bare == again


def test_an_override_that_defeats_a_profile_warns_once_naming_the_key():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            api.run(
                design="tps", workload="gups", footprint="16MiB", refs="20k",
                set={"os.policy": "thp"},
            )  # fmt: skip
    mine = [w for w in caught if issubclass(w.category, ProfileWarning)]
    assert len(mine) == 1, [str(w.message) for w in mine]
    assert "os.policy" in str(mine[0].message)


def test_designs_long_prints_each_profile_on_one_line():
    out = xlat("designs", "--long").stdout
    lines = out.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("tps "))
    # The design's line, then its profile on one line.
    assert "profile:" in lines[at + 1]
    assert 'os.policy="reservation"' in lines[at + 1].replace(" ", "")


def test_config_show_gives_the_provenance_of_a_design_on_a_cpu():
    out = xlat("config", "show", "--design", "et", "--cpu", "zen4").stdout
    assert "profile:et" in out and "coalescing" in out


def test_a_plain_run_warms_up_past_the_first_touch_phase_and_says_so(run_json):
    rec = run_json("--design", "radix", "--workload", "gups", *SMALL)
    warm = rec["warmup"]
    assert warm["why"] == "auto_first_touch_phase"
    # gups over 16 MiB first-touches its 4,096 pages (plus its allocation's events).
    assert 4096 <= warm["refs"] <= 4200
    assert rec["config"]["sim"]["warmup_refs"] == warm["refs"]
    assert rec["refs"] == 20000


def test_warmup_zero_keeps_the_first_touch_phase_measured(run_json):
    rec = run_json("--design", "radix", "--workload", "gups", *SMALL, "--warmup", "0")
    assert "warmup" not in rec and "warmup_refs" not in rec["config"]["sim"]


def test_a_sweep_can_take_profiles_as_an_axis(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(
        'designs = ["tps"]\nworkloads = ["gups"]\nfootprint = "16MiB"\nrefs = "20k"\n'
        'profiles = ["auto", "none"]\n'
    )
    db = tmp_path / "r.duckdb"
    xlat("sweep", str(spec), "--db", str(db), "--workers", "1", "-q")
    out = xlat(
        "results", "--db", str(db), "--format", "json", "--columns", "config.sim.profile"
    ).stdout
    got = sorted(r["config.sim.profile"] for r in json.loads(out))
    assert got == ["none", "tps"]


@pytest.mark.parametrize("value", ["auto", "0", "30k"])
def test_the_warmup_key_takes_auto_or_a_count(value):
    text, _, _ = resolve_config_sources(design="radix", set={"sim.warmup_refs": value})
    assert "warmup_refs" in text
