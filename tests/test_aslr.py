"""`os.aslr`: the OS model randomizes the layout; LVM removes the bases (docs/designs/lvm.md)."""

from __future__ import annotations

import json

from conftest import ROOT, xlat

SORT = str(ROOT / "tests" / "data" / "sort.xlat")
INDEX_KEYS = ["index_peak_bytes", "keys_trained", "retrains", "rebuilds", "collisions"]


def run(*sets: str) -> dict:
    args = ["run", "--design", "lvm", "--trace", SORT, "--json", "--set", "os.thp=always"]
    for s in sets:
        args += ["--set", s]
    return json.loads(xlat(*args).stdout)


def test_a_recorded_trace_under_aslr_passes_the_oracle_and_trains_the_same_lvm_index():
    plain = run()
    aslr = run("os.aslr=true")
    assert aslr["oracle"]["mismatches"] == 0 and aslr["oracle"]["checked"] > 0
    assert aslr["config"]["os"]["aslr"] is True
    assert {k: aslr["lvm"][k] for k in INDEX_KEYS} == {k: plain["lvm"][k] for k in INDEX_KEYS}
    # A built-in workload (one mmap region, moved down by the mmap gap) runs under ASLR too.
    proc = xlat(
        "run",
        "--design",
        "radix",
        "--workload",
        "gups",
        "--footprint",
        "16MiB",
        "--refs",
        "10k",
        "--set",
        "os.aslr=true",
        "--set",
        "sim.oracle=true",
        check=True,
    )
    assert proc.returncode == 0
