"""scripts/host_measure.py: the `share` step (docs/host.md, "The share is a retention time")
plans its chases and summarizes them as latency in flight and reuse time."""

import argparse
import doctest
import json

import pytest
from conftest import load_script


@pytest.fixture(scope="module")
def hm():
    return load_script("scripts/host_measure.py")


def test_the_scripts_examples_hold(hm):
    assert doctest.testmod(hm).failed == 0


def test_the_share_step_chases_each_region_with_several_chains(hm):
    args = argparse.Namespace(only={"share"}, smoke=False, seconds=2.0)
    cmds = [c for step, c in hm.plan(args, big_ok=True) if step == "share"]
    assert [c[c.index("--size") + 1] for c in cmds] == ["2M", "4M", "8M", "16M"]
    assert all(c[c.index("--chains") + 1] == "1,2,4,8,16" and "2m" in c for c in cmds)
    smoke = argparse.Namespace(only={"share"}, smoke=True, seconds=0.5)
    assert len([s for s, _ in hm.plan(smoke, big_ok=False) if s == "share"]) == 2


def test_the_summary_gives_each_lines_reuse_time(hm, tmp_path):
    lines = [{"record": "host", "time": "t"}]
    for chains, ns in ((1, 152.0), (4, 5.0)):
        lines.append({"bench": "chase", "step": "share", "region_bytes": 4 << 20})
        lines[-1].update(chains=chains, ns_per_access=ns, pages="2m")
    f = tmp_path / "r.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    text = hm.summarize(f)
    # 65536 lines x 152 ns = 9.96 ms one chain; 4 x 5 ns = 20 ns in flight with four.
    assert "| 4 MiB | 1 | 152.0 | 152.0 | 9.96 |" in text
    assert "| 4 MiB | 4 | 5.0 | 20.0 | 0.33 |" in text
