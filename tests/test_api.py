"""Tests of the Python API and of figures that must follow from the model."""

from __future__ import annotations

import pytest
import xlat

SMALL = dict(workload="gups", footprint="16MiB", refs=20000)


def test_perfect_tlb_has_no_translation_overhead():
    rec = xlat.run("perfect_tlb", **SMALL)
    assert rec["mmu"]["overhead_cycles"] == 0
    assert rec["tlb"]["l1_misses"] == 0 and rec["walk"]["count"] == 0


def test_ideal_makes_at_most_one_reference_per_walk_and_radix_more():
    # The cold run (no warm-up): radix's cold 4-level walks are what this compares.
    ideal = xlat.run("ideal", warmup=0, **SMALL)
    radix = xlat.run("radix", warmup=0, **SMALL)
    assert ideal["walk"]["mem_accesses"] <= ideal["walk"]["count"]

    # On this tiny cold run a radix TLB-miss walk mostly hits the PDE cache (one reference, as
    # ideal); its cold 4-level walks come after the faults, so compare all walk references.
    def total(rec):
        return rec["walk"]["mem_accesses"] + rec["walk"]["post_fault_mem_accesses"]

    assert radix["walk"]["mem_accesses"] >= ideal["walk"]["mem_accesses"]
    assert total(radix) > total(ideal)
    assert radix["tlb"]["l1_misses"] == ideal["tlb"]["l1_misses"]  # same trace, same TLBs


def test_disabling_page_walk_caches_makes_every_radix_walk_four_references():
    rec = xlat.run("radix", set={"radix.pwc_entries": 0}, **SMALL)
    # walk.* counts TLB-miss walks: every one of a mapped page reads 4 entries; those that
    # fault read at most 4 (the repeat after the fault is counted apart, in post_fault_*).
    mapped_walks = rec["walk"]["count"] - rec["walk"]["fault_walks"]
    assert rec["walk"]["mem_accesses"] >= 4 * mapped_walks
    assert rec["walk"]["post_fault_mem_accesses"] == 4 * rec["walk"]["post_fault_count"]


def test_an_invalid_value_raises_xlat_error_with_the_key():
    with pytest.raises(xlat.XlatError, match="radix.levels"):
        xlat.run("radix", set={"radix.levels": 7}, **SMALL)


def test_flatten_and_get_path_agree():
    rec = xlat.run("radix", **SMALL)
    flat = xlat.flatten(rec)
    assert flat["tlb.l1_misses"] == xlat.get_path(rec, "tlb.l1_misses")


def test_every_record_carries_the_model_version_and_the_changelog_names_it():
    import re
    from pathlib import Path

    # A record carries its run's model version: one core keeps the version of the last change
    # that moved one-core runs of its design and workload (version 5 moved every run, version 6
    # LVM's, version 7 memcached's).
    assert xlat.run("radix", **SMALL)["model_version"] == xlat.model_version_of(1, 1) >= 1
    assert xlat.run("lvm", **SMALL)["model_version"] == xlat.model_version_of(1, 1, "lvm")
    mc = xlat.run("radix", **{**SMALL, "workload": "memcached"})
    assert mc["model_version"] == xlat.model_version_of(1, 1, "radix", "memcached")
    assert xlat.model_version_of(2, 1, "lvm", "memcached") == xlat.model_version()
    # Every "Model changes" heading newer than the entry that introduced model versions names
    # the version it introduces; the newest names the current one (version 1 until then).
    text = (Path(__file__).resolve().parents[1] / "CHANGELOG.md").read_text()
    intro = text.index("- The model version (`xlat::MODEL_VERSION`")
    newer = re.findall(r"^### Model changes.*$", text[:intro], flags=re.MULTILINE)
    versions = []
    for heading in newer:
        m = re.search(r"model version (\d+)", heading)
        assert m, f"CHANGELOG heading names no model version: {heading}"
        versions.append(int(m.group(1)))
    assert versions == sorted(versions, reverse=True), "newest first"
    assert (versions[0] if versions else 1) == xlat.model_version()
