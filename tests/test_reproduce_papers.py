"""`xlat reproduce PAPER --quick` for every paper besides mehpt (tests/test_reproduce.py runs
that one): each finishes in CI time (a smoke test: no grades) and every claim its claims file
marks `quick` lies on the side of its full run's recorded figure."""

from __future__ import annotations

import pytest
from conftest import xlat
from xlat import reproduce

OTHERS = [p for p in reproduce.papers() if p != "mehpt"]


@pytest.mark.parametrize("paper", OTHERS)
def test_reproduce_quick_of_each_paper_keeps_its_checked_directions(paper, tmp_path):
    proc = xlat(
        "reproduce", paper, "--quick", "--db", str(tmp_path / "r.duckdb"),
        "--out", str(tmp_path), "-q", check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    checked = [c for c in reproduce.load_paper(paper)["claim"] if c.get("quick")]
    assert checked, f"{paper}: no claim is checked by --quick"
    report = (tmp_path / f"reproduce-{paper}-quick.md").read_text()
    # A smoke test: no grade, only the direction of the full run recorded in the claims file.
    assert "| reproduced |" not in report and "| contradicted |" not in report
    for c in checked:
        row = next(line for line in report.splitlines()
                   if line.startswith((f"| {c['id']} |", f"| **{c['id']}** |")))  # fmt: skip
        assert "| direction as full |" in row, row
    # The paper's baseline statistics come first, with xlat's from the quick runs.
    assert report.index("## The baseline first") < report.index("## Claims")
    for b in reproduce.load_paper(paper)["baseline"]:
        row = next(line for line in report.splitlines() if line.startswith(f"| {b['id']} |"))
        assert "not recorded" not in row and "| n/a |" not in row, row


def test_the_lvm_paper_has_its_claims_and_quick_variant():
    paper = reproduce.load_paper("lvm")
    ids = {c["id"] for c in paper["claim"]}
    assert {
        "lvm_over_radix",
        "ideal_over_lvm",
        "walk_cycles",
        "walk_traffic",
        "ecpt_traffic",
    } <= ids
    assert all("quick" in e for e in paper["experiment"])


def test_the_et_paper_has_its_headline_claims_each_with_a_figure_reference():
    paper = reproduce.load_paper("et")
    claims = {c["id"]: c for c in paper["claim"]}
    assert {"native", "native_max", "virt", "virt_gups", "frag_50", "frag_99", "leshy_50",
            "leshy_99", "walks_cut", "mix_32m", "mix_64k"} <= set(claims)  # fmt: skip
    assert all(c["ref"] for c in claims.values())
    assert claims["native_max"]["mean"] == "max" and claims["native"]["paper"] == 1.04
    # Offline Leshy's profiles sample densely (docs/designs/et.md: "Leshy's sample density").
    profiles = [e for e in paper["experiment"] if e["name"].startswith("leshy-profile")]
    assert profiles and all(e["set"]["et.leshy.sample_period"] < 1024 for e in profiles)


def _resolved(preset: str) -> dict:
    """The resolved configuration of a paper's preset (built-in defaults beneath it)."""
    import tomllib
    from xlat.run import resolve_config

    return tomllib.loads(resolve_config(preset=str(reproduce.DATA / "configs" / "papers" / preset)))


def test_the_lvm_preset_is_the_papers_table_1():
    # Table 1 (§6.1) gives round trips from the core: L1-D 1, L2 20, L3 56 cycles; xlat charges
    # each level it looks up in turn, so the levels' latencies must add up to them.
    c = _resolved("lvm.toml")
    l1, l2, llc = (c["mem"][k] for k in ("l1d", "l2", "llc"))
    assert l1["latency_cycles"] == 1
    assert l1["latency_cycles"] + l2["latency_cycles"] == 20
    assert l1["latency_cycles"] + l2["latency_cycles"] + llc["latency_cycles"] == 56
    assert (l2["size_bytes"], l2["ways"], llc["size_bytes"], llc["ways"]) == (2**20, 8, 2**21, 16)
    assert (c["tlb"]["l2"]["entries"], c["tlb"]["l2"]["ways"]) == (2040, 12)
    dram = c["mem"]["dram"]
    assert (dram["channels"], dram["banks_per_channel"], dram["timing"]) == (4, 8, "ddr4_3200")
    assert dram["core_clock_mhz"] == 2000
    assert (c["ecpt"]["cwc_latency_cycles"], c["ecpt"]["initial_entries"]) == (2, 16384)
    assert (c["lvm"]["lwc_entries"], c["lvm"]["lwc_latency_cycles"]) == (16, 2)


def test_the_utopia_preset_has_the_papers_table_1_caches():
    # Table 1: L2 2 MB 16-way 16 cycles SRRIP, L3 2 MB per core 16-way 35 cycles (Sniper's
    # per-level latencies, which add up as xlat's do); L1-D 32 KB 8-way 4 cycles.
    c = _resolved("utopia.toml")
    l1, l2, llc = (c["mem"][k] for k in ("l1d", "l2", "llc"))
    assert (l1["size_bytes"], l1["ways"], l1["latency_cycles"]) == (32768, 8, 4)
    assert (l2["size_bytes"], l2["ways"], l2["latency_cycles"], l2["policy"]) == (
        2**21,
        16,
        16,
        "srrip",
    )
    assert (llc["size_bytes"], llc["ways"], llc["latency_cycles"]) == (2**21, 16, 35)


def test_lvm_and_utopia_run_at_their_papers_scale_on_table_1s_physical_memory():
    # LVM Table 1: 128 GB; Utopia Table 1: 32 GB (its four-core runs, 4 x 8 GiB, cannot fit
    # there and keep the footprint's ratio). Read as GiB, as the footprints are.
    def memory(paper: str, name: str) -> str:
        p = reproduce.load_paper(paper)
        exp = next(e for e in p["experiment"] if e["name"] == name)
        return reproduce.experiment_spec(p, exp, quick=False, paper_scale=True)["set"][
            "os.phys_mem_bytes"
        ]

    assert memory("lvm", "main") == "128GiB"
    assert memory("utopia", "main") == memory("utopia", "rmm") == "32GiB"
    assert memory("utopia", "cores4") == "256GiB"
