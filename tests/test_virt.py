"""End-to-end tests of nested (virtualized) translation through the `xlat` command line."""

from __future__ import annotations

import json

from conftest import SMALL, xlat

NESTED = [
    "--set",
    "virt.enabled=true",
    "--set",
    "os.phys_mem_bytes=256MiB",
    "--set",
    "virt.host_os.phys_mem_bytes=512MiB",
]


def test_a_nested_gups_run_reports_walk_references_by_dimension():
    # The host faults guest memory in during the first-touch phase: measure from the start.
    proc = xlat("run", "--workload", "gups", *SMALL, *NESTED, "--warmup", "0", "--json")
    rec = json.loads(proc.stdout)
    v, w = rec["virt"], rec["walk"]
    assert rec["oracle"]["mismatches"] == 0 and rec["oracle"]["checked"] >= rec["refs"]
    assert v["enabled"] is True and v["host_design"] == "radix"
    assert v["host_faults"] > 0 and v["guest_pt_refs"] > 0 and v["host_refs_for_data"] > 0
    parts = v["guest_pt_refs"] + v["host_refs_for_guest_pt"] + v["host_refs_for_data"]
    assert parts == v["refs_total"] == w["mem_accesses"] + w["post_fault_mem_accesses"]
    assert rec["config"]["virt"]["enabled"] is True


def test_a_native_run_has_no_virt_section():
    rec = json.loads(xlat("run", "--workload", "gups", *SMALL, "--json").stdout)
    assert "virt" not in rec and rec["config"]["virt"]["enabled"] is False


def test_a_host_smaller_than_the_guest_exits_2_naming_both_keys():
    proc = xlat(
        "run",
        *SMALL,
        *NESTED,
        "--set",
        "virt.host_os.phys_mem_bytes=128MiB",
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "virt.host_os.phys_mem_bytes" in proc.stderr and "os.phys_mem_bytes" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_host_design_without_a_table_is_refused_naming_the_key():
    proc = xlat("run", *SMALL, *NESTED, "--set", "virt.host_design=perfect_tlb", check=False)
    assert proc.returncode in (1, 2), proc.stderr
    assert "virt.host_design" in proc.stderr and "cannot be a host" in proc.stderr
    assert "Traceback" not in proc.stderr
