"""The hostile suite as a test (issue 37): random command lines and random sweep specs.

Command lines are drawn from the argument grammar itself (``xlat.cli.build_parser()``: every
subcommand, its options, their choices), with values from pools of ordinary and hostile inputs
(non-finite numbers, negative and huge counts, wrong units, damaged and special files, read-only
and missing destinations). Each is run in this process through ``xlat.cli.main`` and must end
with exit code 0, 1 or 2 and no traceback, no internal error, and any record it prints holding
finite figures only. Sweep specs are drawn likewise; each must either be refused with a
``SpecError`` naming the spec, or expand, run (without Ray: in-process, committed with the
sweep's own code) and leave a store in which ``xlat results --check`` finds nothing: no
mislabelled row, no non-finite figure.

The seed is fixed (the cases are the same on every run); the number of cases is bounded so that
both tests take well under a minute in CI. What is left out, and why: ``trace record`` (runs
valgrind), ``corpus record`` and ``corpus measure`` (build inputs, run programs, and with
``--install`` install packages), live snapshots (read another process's memory), sweeps
without ``--dry-run`` and ``reproduce`` without ``--list`` (start Ray), reports to a writable
folder (seconds of plotting each; tests/test_report.py draws them); run and compare always get a
small ``--refs`` (drawn from a small pool) so that no case simulates for long.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import subprocess
import time
from pathlib import Path

import duckdb
import pytest
from conftest import ROOT
from test_integrity import META, write_champsim
from test_integrity_ii import write_champsim_without_memory
from xlat import _core, cli
from xlat.query import check_store
from xlat.store import Store
from xlat.sweeps import SpecError, execute, expand, make_row, parse_spec
from xlat.values import bad_figures, check_inputs, key_types

#: Cases of each test: fixed, so that the suite is the same everywhere (see the module doc).
CLI_CASES = 400
SPEC_CASES = 30
SEED = 37

SORT = str(ROOT / "tests" / "data" / "sort.xlat")
FLOAT_KEYS = sorted(k for k, t in key_types().items() if t is float)
INT_KEYS = sorted(k for k, t in key_types().items() if t is int)
HOSTILE = ["", "-1", "0", "inf", "-inf", "nan", "1e308", "abc", "2KiB", "64MB", "x" * 300, "🙂"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The files the value pools name: stores good and bad, specs, traces, presets, JSON."""
    d = tmp_path_factory.mktemp("fuzz")
    f: dict[str, str] = {"dir": str(d), "missing": str(d / "missing.toml")}
    good = d / "good.duckdb"
    runs = expand(parse_spec({"designs": ["radix", "ideal"], "workloads": ["gups"],
                              "footprint": "1MiB", "refs": "2000"}))  # fmt: skip
    Store(good).commit([make_row(r, execute(r.kwargs()), META) for r in runs])
    f["good_db"] = str(good)
    foreign = d / "foreign.duckdb"
    con = duckdb.connect(str(foreign))
    con.execute("CREATE TABLE runs (a INTEGER)")
    con.close()
    f["foreign_db"] = str(foreign)
    dup = d / "dup.duckdb"
    dup.write_bytes(good.read_bytes())
    con = duckdb.connect(str(dup))
    con.execute("CREATE TABLE r2 AS SELECT * FROM runs UNION ALL SELECT * FROM runs")
    con.execute("DROP TABLE runs")
    con.execute("ALTER TABLE r2 RENAME TO runs")
    con.close()
    f["dup_db"] = str(dup)
    (d / "garbage.duckdb").write_bytes(b"not a database\n" * 100)
    f["garbage"] = str(d / "garbage.duckdb")
    specs = {
        "spec_good": 'designs = ["radix"]\nworkloads = ["gups"]\nfootprint = "1MiB"\nrefs = "1k"\n',
        "spec_inf": 'designs = ["radix"]\nworkloads = ["gups"]\n[set]\n"lvm.x1" = [inf, 1.0]\n',
        "spec_big": 'designs = ["radix"]\nworkloads = ["gups"]\n[set]\n'
        + "".join(f'"{k}" = {list(range(1, 11))}\n' for k in INT_KEYS[10:19]),
        "spec_deep": 'designs = ["radix"]\nname = ' + "[" * 3000 + "]" * 3000 + "\n",
        "spec_trace": f'designs = ["radix"]\ntraces = ["{SORT}", "/dev/zero"]\n',
        "spec_grid_key": 'designs = ["radix"]\nworkloads = ["gups"]\n[set]\n"sim.seed" = [1]\n',
    }
    for name, text in specs.items():
        (d / f"{name}.toml").write_text(text)
        f[name] = str(d / f"{name}.toml")
    (d / "latin1.toml").write_bytes(b'designs = ["radix"]\nname = "\xff"\n')
    f["latin1"] = str(d / "latin1.toml")
    presets = {
        "preset_inf": "[timing]\nbase_cpi = inf\n",
        "preset_text": '[radix]\nlevels = "abc"\n',
        "preset_mb": '[workload]\nfootprint = "64MB"\n',
        "preset_bad": "[sim\n",
    }
    for name, text in presets.items():
        (d / f"{name}.toml").write_text(text)
        f[name] = str(d / f"{name}.toml")
    nomem = d / "nomem.champsim"
    write_champsim_without_memory(nomem, 32)
    f["nomem"] = str(nomem)
    mem = d / "mem.champsim"
    write_champsim(mem, list(range(16)))
    f["mem"] = str(mem)
    cut = d / "cut.xlat"
    cut.write_bytes(Path(SORT).read_bytes()[:5000])
    f["cut"] = str(cut)
    os.mkfifo(d / "fifo")
    f["fifo"] = str(d / "fifo")
    for name, text in {
        "json_list": "[1, 2]",
        "json_partial": '[{"design": "radix"}]',
        "json_snapshot_partial": '{"pid": 1, "vmas": [{"start": 5}]}',
        "json_bad": "{",
    }.items():
        (d / f"{name}.json").write_text(text)
        f[name] = str(d / f"{name}.json")
    (d / "afile").write_text("")
    f["afile"] = str(d / "afile")
    ro = d / "ro"
    ro.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(ro)], capture_output=True
    )
    f["ro"] = str(ro if mounted.returncode == 0 else d / "missing-folder")
    yield f
    if mounted.returncode == 0:
        subprocess.run(["umount", "-l", str(ro)], capture_output=True)


def pools(f: dict[str, str]) -> dict[str, list[str]]:
    """Values of each option (by its dest) and positional; others draw from HOSTILE."""
    sets = [
        "os.thp=always",
        "timing.base_cpi=inf",
        "timing.model=simple",
        "timing.data_overlap=nan",
        "radix.levels=abc",
        "radix.levels=5",
        "sim.refs=2KiB",
        "sim.cores=0",
        "tlb.l2.entries=-1",
        "workload.footprint=64MB",
        "os.swap.bytes=8GiB",
        "no.such=1",
        "=",
        "radix=1",
        "sim.seed=99999999999999999999",
        "lvm.x1=1e308",
        "os.hugetlb.share=1e999",
    ]
    sets += [f"{k}=inf" for k in FLOAT_KEYS[::5]]
    dbs = [f["good_db"], f["foreign_db"], f["dup_db"], f["garbage"], f["missing"], f["dir"]]
    traces = [SORT, "/dev/zero", f["fifo"], f["dir"], f["missing"], f["nomem"], f["mem"], f["cut"]]
    outs = [f["afile"], "/proc/nope", f"{f['ro']}/x", f"{f['dir']}/no/such/dir/x"]
    specs = [f[k] for k in f if k.startswith("spec_")] + [f["latin1"], f["missing"], f["dir"]]
    return {
        "design": ["radix", "ideal", "ecpt", "nosuch", ""],
        "designs": ["radix", "radix,ideal", "", ",", "radix,nosuch", "ecpt,lvm"],
        "baseline": ["radix", "ideal", "nosuch"],
        "cpu": ["zen4", "neoverse-n1", "nosuch", "../etc", "a" * 300],
        "preset": ["test-small", "nosuch", f["dir"], "a" * 300]
        + [f[k] for k in f if k.startswith("preset_")],
        "workload": ["gups", "stream", "kv", "gups,stream", "nosuch", ""],
        "footprint": ["1MiB", "2M", "4KiB", "64MB", "-1MiB", "1PiB", "0", "abc", "1.5MiB"],
        "refs": ["1k", "2000", "500", "0", "-5", "abc", "2KiB", "1.5k", "inf", "", "1e30"],
        "warmup": ["500", "0", "-1", "2KiB", "abc"],
        "seed": ["1", "0", "-1", "abc", "18446744073709551616", "9223372036854775807"],
        "set": sets,
        "trace": traces,
        "snapshot": [f["json_list"], f["json_snapshot_partial"], f["missing"], f["json_bad"]],
        "report": outs,
        "figure_width": ["column", "page", "3", "9", "inf", "nan", "-1", "abc"],
        "preset_pos": ["default", "test-small", "nosuch", f["preset_inf"], f["preset_text"]],
        "file": traces + [f["json_list"]],
        "target": ["abc", "99999999", "-1", "", f["json_list"], f["json_snapshot_partial"]],
        "output": outs,
        "format": ["text", "json", "csv", "nosuch"],
        "spec": specs,
        "db": dbs,
        "workers": ["1", "0", "-1", "abc", "99999999999999999999"],
        "max_runs": ["0", "5", "-1", "abc"],
        "address": ["ray://127.0.0.1:1", "nohost", ""],
        "paper": ["mehpt", "nosuch", "all", ""],
        "out": outs,
        "where": ["design=radix", "tlb.l2_mpki>5", "nosuch=1", "levels=4", "x<abc", "=", ""],
        "columns": ["design,timing.cycles", "nosuch", ",", ""],
        "speedup_over": ["radix", "nosuch"],
        "by": ["design", "design,design", "nosuch", "workload"],
        "pivot": ["design", "nosuch"],
        "value": ["timing.cycles", "design", "os.thp", "nosuch"],
        "source": [
            f["good_db"],
            f["json_list"],
            f["json_partial"],
            f["json_bad"],
            f["garbage"],
            f["missing"],
            f["dup_db"],
            f["foreign_db"],
        ],  # fmt: skip
    }


def grammar(parser: argparse.ArgumentParser, path=()) -> list[tuple[tuple[str, ...], list]]:
    """Every command path of the parser with its actions (subparsers walked)."""
    out = []
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [(path, [a for a in parser._actions if not isinstance(a, argparse._HelpAction)])]
    for sub in subs:
        for name, child in sub.choices.items():
            out += grammar(child, (*path, name))
    return out


#: Commands the fuzz leaves out (see the module doc).
LEFT_OUT = {("trace", "record"), ("corpus", "record"), ("corpus", "measure")}


def draw(rng: random.Random, path: tuple[str, ...], actions, pool) -> list[str]:
    """One command line for ``path`` from its actions and the value pools."""
    argv = list(path)
    given: set[str] = set()
    positionals = []
    for a in actions:
        if not a.option_strings:
            if a.nargs == "?" and rng.random() < 0.3:
                continue
            key = "preset_pos" if a.dest == "preset" else a.dest
            positionals.append(rng.choice(pool.get(key, HOSTILE)))
            continue
        if rng.random() > 0.35:
            continue
        opt = rng.choice(a.option_strings)
        given.add(a.dest)
        if a.nargs == 0:
            argv.append(opt)
            continue
        repeat = rng.randint(1, 3) if isinstance(a, argparse._AppendAction) else 1
        for _ in range(repeat):
            if a.choices and rng.random() < 0.9:
                value = rng.choice(list(a.choices))
            else:
                value = rng.choice(pool.get(a.dest, HOSTILE))
            argv += [opt, value]
    # Bounds that keep every case short (module doc): small runs, no Ray, no plotting.
    if path[0] in ("run", "compare") or path == ("analyze", "gaps"):
        if "refs" not in given:
            argv += ["--refs", rng.choice(["1k", "2000"])]
        if "footprint" not in given and "trace" not in given:
            argv += ["--footprint", "1MiB"]
    if path[0] == "compare" and "designs" not in given:
        argv += ["--designs", "radix,ideal"]
    if path[0] == "sweep":
        argv.append("--dry-run")
    if path[0] == "reproduce":
        argv.append("--list")
    if rng.random() < 0.1:
        argv.insert(rng.randint(0, len(argv)), "--debug")
    return argv + positionals


def run_main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as e:  # argparse: usage errors (2), --help and --version (0)
            code = e.code if isinstance(e.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def finite_json(text: str) -> list[str]:
    """Problems of records printed as JSON: NaN/Infinity tokens, non-finite figures."""

    def no_constant(name):
        raise ValueError(f"{name} in the JSON output")

    data = json.loads(text, parse_constant=no_constant)
    recs = data if isinstance(data, list) else [data]
    return [k for r in recs if isinstance(r, dict) and "config" in r for k in bad_figures(r)]


def test_random_command_lines_never_end_in_a_traceback_or_a_non_finite_figure(files):
    rng = random.Random(SEED)
    pool = pools(files)
    paths = [(p, a) for p, a in grammar(cli.build_parser()) if p not in LEFT_OUT]
    start = time.monotonic()
    codes: dict[int, int] = {}
    failures = []
    for i in range(CLI_CASES):
        path, actions = rng.choice(paths)
        argv = draw(rng, path, actions, pool)
        code, out, err = run_main(argv)
        codes[code] = codes.get(code, 0) + 1
        problem = None
        if code not in (0, 1, 2):
            problem = f"exit code {code}"
        elif "Traceback" in err and "--debug" not in argv:
            problem = "a traceback"
        elif "internal error" in err:
            problem = "an internal error"
        elif code == 0 and ("--json" in argv or "json" in argv) and out.lstrip()[:1] in ("{", "["):
            try:
                bad = finite_json(out)
            except ValueError as e:
                bad = [str(e)]
            problem = f"non-finite figures {bad}" if bad else None
        if problem:
            failures.append(f"case {i}: xlat {' '.join(argv)}: {problem}\n{err[-2000:]}")
    seconds = time.monotonic() - start
    print(f"{CLI_CASES} command lines in {seconds:.1f} s; exit codes {sorted(codes.items())}")
    assert not failures, "\n\n".join(failures[:10])
    assert codes.get(0, 0) > CLI_CASES // 10 and codes.get(2, 0) > CLI_CASES // 10  # both kinds


def draw_spec(rng: random.Random, files: dict[str, str]) -> dict:
    """A random sweep spec (as parsed TOML): small, valid keys, and in about half of the specs
    one or two hostile values (a value the key does not take, a grid key in [set], a
    non-finite float, an unknown key)."""
    spec: dict = {
        "designs": rng.sample(["radix", "ideal", "ecpt", "lvm", "fpt"], rng.randint(1, 2)),
        "refs": rng.choice(["1000", 2000, ["1k", "1500"]]),
    }
    source = rng.random()
    if source < 0.75:
        spec["workloads"] = rng.sample(["gups", "stream", "kv", "bfs"], 1)
        spec["footprint"] = rng.choice(["1MiB", "2MiB", ["1MiB", "2M"]])
    if source > 0.6:
        spec["traces"] = rng.sample([SORT, files["mem"], files["nomem"]], 1)
    if rng.random() < 0.3:
        spec["seeds"] = rng.choice([[1, 2], [0], [3]])
    table: dict = {}
    for _ in range(rng.randint(0, 2)):
        kind = rng.random()
        if kind < 0.4:
            table[rng.choice(FLOAT_KEYS)] = [rng.choice([0.1, 0.5, 1.0])]
        elif kind < 0.7:
            table[rng.choice(["radix.pwc_entries", "tlb.l2.entries"])] = [16, 32][
                : rng.randint(1, 2)
            ]
        else:
            table["os.thp"] = rng.sample(["never", "always"], rng.randint(1, 2))
    if table:
        spec["set"] = table
    for _ in range(rng.choice([0, 0, 1, 2])):
        key, value = rng.choice(HOSTILE_SPEC)
        if key.startswith("set."):
            spec.setdefault("set", {})[key[4:]] = value
        else:
            spec[key] = value
    return spec


#: Hostile spec entries: (spec key, or "set." + a [set] key; value).
HOSTILE_SPEC = [
    ("designs", []),
    ("designs", ["nosuch"]),
    ("designs", [["radix"]]),
    ("workloads", ["nosuch"]),
    ("workloads", "gups"),
    ("traces", ["/dev/zero"]),
    ("traces", ["/nonexistent.xlat"]),
    ("footprint", "64MB"),
    ("footprint", "-1MiB"),
    ("footprint", "1PiB"),
    ("refs", "0"),
    ("refs", "2KiB"),
    ("refs", "inf"),
    ("seeds", [-1]),
    ("seeds", [1, 1]),
    ("seeds", [True]),
    ("warmup", "2KiB"),
    ("max_runs", -1),
    ("max_runs", "x"),
    ("name", [1]),
    ("desings", ["radix"]),
    ("set.timing.base_cpi", [float("inf"), 1.0]),
    ("set.lvm.x1", [1e308]),
    ("set.os.fmfi_target", [float("nan")]),
    ("set.radix.levels", ["abc"]),
    ("set.sim.refs", ["1k"]),
    ("set.workload.name", ["stream"]),
    ("set.sim.seed", [2]),
    ("set.no.such", [1]),
    ("set.os.thp", [[1]]),
    ("set.radix.pwc_entries", []),
]


def test_random_sweep_specs_are_refused_cleanly_or_store_only_true_rows(files, tmp_path):
    rng = random.Random(SEED)
    start = time.monotonic()
    refused = stored = 0
    failures = []
    for i in range(SPEC_CASES):
        spec = draw_spec(rng, files)
        origin = f"fuzz{i}.toml"
        try:
            runs = expand(parse_spec(spec, origin), max_runs=4)
        except SpecError as e:
            assert str(e).startswith(origin), e
            refused += 1
            continue
        except Exception as e:  # noqa: BLE001 - any other exception is what this test looks for
            failures.append(f"spec {i} {spec!r}: {type(e).__name__}: {e}")
            continue
        db = tmp_path / f"r{i}.duckdb"
        Store(db).commit([make_row(r, execute(r.kwargs()), META) for r in runs])
        n, problems = check_store(db)
        if n != len(runs) or problems:
            failures.append(f"spec {i} {spec!r}: {n} rows for {len(runs)} runs; {problems}")
        stored += n
    seconds = time.monotonic() - start
    print(f"{SPEC_CASES} specs in {seconds:.1f} s: {refused} refused, {stored} rows stored")
    assert not failures, "\n".join(failures[:10])
    assert refused and stored


def test_a_value_the_front_lets_pass_is_one_the_core_reads():
    """The value rules run before the core parses: whatever they let pass, the core reads as
    the rules describe (it may still refuse it for range or a cross-key check, naming the key)."""
    rng = random.Random(SEED)
    texts = ["5", "1k", "2M", "2G", "64MiB", "1.5k", "4KiB", "4096", "abc", "2KiB", "64MB"]
    checked = 0
    for key in rng.sample(INT_KEYS, 40) + ["os.swap.bytes", "workload.footprint"]:
        for text in texts:
            try:
                check_inputs([(key, text)])
            except _core.XlatError as e:
                assert f"'{key}'" in str(e)
                continue
            checked += 1
            try:
                _core.resolve_config(None, "x", [(key, text)])
            except _core.XlatError as e:
                assert "cannot read" not in str(e) and key.split(".")[-1] in str(e), (key, text, e)
    assert checked > 100
