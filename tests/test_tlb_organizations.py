"""End-to-end: the TLB organizations of `docs/machine.md` through the `xlat` command line."""

from __future__ import annotations

from conftest import xlat

# Walk counts over the whole run (one per 64 KiB folio includes the first touches): no warm-up.
GUPS = [
    "--design", "radix", "--workload", "gups", "--footprint", "64MiB", "--refs", "200k",
    "--warmup", "0",
]  # fmt: skip
MTHP_64K = ["--set", "os.policy=mthp", "--set", 'os.mthp.sizes=["64KiB"]']


def test_coalescing_runs_with_the_oracle_on_and_walks_less(run_json):
    none = run_json(*GUPS)
    colt = run_json(*GUPS, "--set", "tlb.coalescing=colt")
    contiguous = run_json(*GUPS, *MTHP_64K, "--set", "tlb.coalescing=contiguous_bit")
    for rec in (none, colt, contiguous):
        assert rec["oracle"]["enabled"] is True
        assert rec["oracle"]["mismatches"] == 0
    assert colt["walk"]["count"] < none["walk"]["count"]
    # 64 MiB of 64 KiB runs: one walk per run.
    assert contiguous["walk"]["count"] == 1024
    assert contiguous["tlb"]["l2_coalesced_hits_by_size"]["64k"] > 0
    assert "coalesced_fills" not in none["tlb"]


def test_a_bad_colt_size_is_refused_naming_the_key():
    proc = xlat(*["run", *GUPS, "--set", "tlb.colt_max_pages=3"], check=False)
    assert proc.returncode != 0
    assert "tlb.colt_max_pages" in proc.stderr
    assert "Traceback" not in proc.stderr
