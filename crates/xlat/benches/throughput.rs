//! Throughput benchmark: simulated references per second, per design, on `gups` and `stream`,
//! with the full model (TLBs, design walk, caches, DRAM, timing) and the oracle on.
//!
//! The per-design rows and the `(oracle off)` row set `timing.model = "simple"` explicitly, so
//! that they measure the same thing as before `ooo` became the default model; the `(ooo)` rows
//! are the first design under `timing.model = "ooo"` with the configuration's grant (the
//! default, `core.resource_grant = "time_order"`, unless `XLAT_BENCH_GRANT` names another):
//! once with the core on a thread of its own (`XLAT_TIMING_THREAD` as set, `auto` by default:
//! the label says `thread` when it was), once on the engine's thread (`1 thread`); and both
//! again with `mem.dram.model = "idle"` (`idle DRAM`), to show what the queued DRAM controller,
//! which the `ooo` core drives by default, costs; and once sampled (`sampled 1/50, 1 thread`:
//! `sim.sampling` with one 2000-reference window, after 2000 of detailed warm-up, per 100000
//! references, the rest functionally warmed), whose rate over the detailed `1 thread` row is the
//! speedup of sampled simulation (issue 40); and once functionally warmed throughout
//! (`functional warming, 1 thread`: one unit of the whole run whose single detailed reference is
//! its last), the rate that bounds sampling's. Every other row pins `sim.sampling.interval = 0`,
//! so that `XLAT_BENCH_REFS` above the automatic sampling's threshold (20 M) keeps them detailed.
//!
//! Run with `make bench` (or `cargo bench -p xlat --bench throughput`). Knobs (environment):
//! `XLAT_BENCH_REFS` (default 10M), `XLAT_BENCH_FOOTPRINT` (default 1GiB),
//! `XLAT_BENCH_DESIGNS` (comma list, default all), `XLAT_BENCH_WORKLOADS` (default `gups,stream`), `XLAT_BENCH_WRITE` (path of the Markdown file
//! whose generated section is replaced; default `docs/performance.md`; empty = do not write),
//! `XLAT_BENCH_GRANT` (`core.resource_grant` of the `ooo` row; default: the configuration's).
//! Run benchmarks one at a time: the two cores of this machine share one physical core.

use std::time::Instant;
use xlat::addr::{format_bytes, parse_bytes, parse_count};
use xlat::designs::REGISTRY;
use xlat::{Config, Simulation};

/// As the Python extension installs it (`xlat::host_alloc`), so that the bench measures what
/// users run.
#[global_allocator]
static ALLOC: xlat::host_alloc::HugePageAdvising = xlat::host_alloc::HugePageAdvising;

const BEGIN: &str = "<!-- bench:begin -->";
const END: &str = "<!-- bench:end -->";

fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_string())
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// How a row's run is timed: in detail, sampled, or functionally warmed throughout.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Detailed,
    Sampled,
    Functional,
}

fn main() {
    // `cargo bench` passes `--bench`; ignore arguments.
    let refs = parse_count(&env_or("XLAT_BENCH_REFS", "10M")).expect("XLAT_BENCH_REFS");
    let footprint =
        parse_bytes(&env_or("XLAT_BENCH_FOOTPRINT", "1GiB")).expect("XLAT_BENCH_FOOTPRINT");
    let designs_env = env_or("XLAT_BENCH_DESIGNS", "");
    let designs: Vec<&str> = if designs_env.is_empty() {
        REGISTRY.iter().map(|d| d.name).collect()
    } else {
        designs_env.split(',').collect()
    };
    let workloads_env = env_or("XLAT_BENCH_WORKLOADS", "gups,stream");
    let workloads: Vec<&str> = workloads_env.split(',').collect();
    let mut rows = Vec::new();
    println!(
        "{:<14} {:<8} {:>12} {:>10} {:>12}",
        "design", "workload", "refs", "seconds", "Mrefs/s"
    );
    for workload in workloads {
        // The first design runs once more with the oracle off, to measure what the oracle costs,
        // and once more under the out-of-order timing model (`timing.model = "ooo"`). Every
        // other row pins `simple` (no longer the default) so its figures stay comparable.
        let variants = designs
            .iter()
            .map(|d| (*d, true, "simple", true, None, Mode::Detailed))
            .chain(
                designs
                    .first()
                    .map(|d| (*d, false, "simple", true, None, Mode::Detailed)),
            )
            .chain(
                designs
                    .first()
                    .map(|d| (*d, true, "ooo", true, None, Mode::Detailed)),
            )
            .chain(
                designs
                    .first()
                    .map(|d| (*d, true, "ooo", false, None, Mode::Detailed)),
            )
            // The same two under the idle DRAM model: what the queued controller (the `ooo`
            // core's default, `mem.dram.model = "auto"`) costs.
            .chain(
                designs
                    .first()
                    .map(|d| (*d, true, "ooo", true, Some("idle"), Mode::Detailed)),
            )
            .chain(
                designs
                    .first()
                    .map(|d| (*d, true, "ooo", false, Some("idle"), Mode::Detailed)),
            )
            // Sampled simulation (issue 40): functional warming between windows of 2000
            // detailed references (each after 2000 of detailed warm-up), one unit per 100000
            // references, docs/timing.md "Sampled simulation"; its rate over the detailed
            // `1 thread` row is the sampling speedup.
            .chain(
                designs
                    .first()
                    .map(|d| (*d, true, "ooo", false, None, Mode::Sampled)),
            )
            // Functional warming alone: what bounds the sampled rate (issue 40 item 1).
            .chain(
                designs
                    .first()
                    .map(|d| (*d, true, "ooo", false, None, Mode::Functional)),
            );
        for (design, oracle, model, may_thread, dram, mode) in variants {
            // Read when the simulation is built; otherwise `XLAT_TIMING_THREAD` decides.
            xlat::timing::set_timing_thread((!may_thread).then_some(false));
            let mut overrides = vec![
                ("timing.model".to_string(), model.to_string()),
                ("sim.oracle".to_string(), oracle.to_string()),
                ("sim.design".to_string(), design.to_string()),
                ("sim.refs".to_string(), refs.to_string()),
                ("workload.name".to_string(), workload.to_string()),
                ("workload.footprint".to_string(), footprint.to_string()),
            ];
            if design == "restrictive_only" {
                // It swaps a full set's victim out (without swap it stops with an error, as
                // `make demo`'s sweep says). Only there, so that the other rows stay comparable
                // with the earlier tables (configured swap used to slow every design down; since
                // 2026-11-28 it costs little, docs/performance.md).
                overrides.push(("os.swap.bytes".to_string(), "8GiB".to_string()));
            }
            let grant = env_or("XLAT_BENCH_GRANT", "");
            if model == "ooo" && !grant.is_empty() {
                overrides.push(("core.resource_grant".to_string(), grant));
            }
            if let Some(dram) = dram {
                overrides.push(("mem.dram.model".to_string(), dram.to_string()));
            }
            let whole_run = refs.to_string();
            let sampling: &[(&str, &str)] = match mode {
                Mode::Detailed => &[("sim.sampling.interval", "0")],
                Mode::Sampled => &[
                    ("sim.sampling.interval", "100000"),
                    ("sim.sampling.window", "2000"),
                    ("sim.sampling.detailed_warmup", "2000"),
                ],
                // One unit as long as the run, its window the last reference.
                Mode::Functional => &[
                    ("sim.sampling.interval", whole_run.as_str()),
                    ("sim.sampling.window", "1"),
                    ("sim.sampling.detailed_warmup", "0"),
                ],
            };
            for (key, value) in sampling {
                overrides.push((key.to_string(), value.to_string()));
            }
            let cfg = match Config::resolve(None, &overrides) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("skipping {design}/{workload}: {e}");
                    continue;
                }
            };
            let source = xlat::workloads::create(&cfg.workload, cfg.sim.refs, cfg.sim.seed)
                .expect("workload");
            let t = Instant::now();
            let mut sim = Simulation::new(&cfg, source).expect("simulation");
            let setup = t.elapsed().as_secs_f64();
            let run = loop {
                match sim.step(u64::MAX) {
                    Ok(true) => break Ok(()),
                    Ok(false) => {}
                    Err(e) => break Err(e),
                }
            };
            if let Err(e) = run {
                // A row that cannot run is reported, not a reason to lose the others.
                eprintln!("{design}/{workload} failed: {e}");
                continue;
            }
            let record = sim.record();
            let threaded = record["sim"]["timing_thread"].as_bool().unwrap_or(false);
            let label = match (oracle, model) {
                (true, "simple") => design.to_string(),
                (false, _) => format!("{design} (oracle off)"),
                _ => {
                    let grant = env_or("XLAT_BENCH_GRANT", "");
                    let how = if threaded { "thread" } else { "1 thread" };
                    let how = match (dram, mode) {
                        (Some(d), _) => format!("{d} DRAM, {how}"),
                        (None, Mode::Sampled) => format!("sampled 1/50, {how}"),
                        (None, Mode::Functional) => format!("functional warming, {how}"),
                        (None, Mode::Detailed) => how.to_string(),
                    };
                    match grant {
                        g if g.is_empty() => format!("{design} ({model}, {how})"),
                        g => format!("{design} ({model}, {g}, {how})"),
                    }
                }
            };
            let secs = record["sim"]["wall_seconds"].as_f64().unwrap_or(0.0);
            let done = record["refs"].as_u64().unwrap_or(0);
            let rate = done as f64 / secs / 1e6;
            println!("{label:<22} {workload:<8} {done:>12} {secs:>10.3} {rate:>12.2}   (setup {setup:.2}s)");
            rows.push((label, workload, done, secs, rate, setup));
        }
    }
    let rss = peak_rss_kib();
    println!("peak RSS of the benchmark process: {} MiB", rss / 1024);
    // The `ooo` rows' rates over the first design's (`simple`) in the same run.
    let mut ratios = Vec::new();
    for (label, workload, _, _, rate, _) in &rows {
        if !label.contains("(ooo") {
            continue;
        }
        let base = rows
            .iter()
            .find(|r| r.1 == *workload && designs.first().is_some_and(|d| r.0 == *d));
        if let Some(base) = base {
            let line = format!("{label} / {} on {workload}: {:.2}", base.0, rate / base.4);
            println!("{line}");
            ratios.push(line);
        }
        // A sampled or functional row over its detailed twin: the sampling speedup and the
        // functional rate that bounds it.
        if let Some(tag) = ["sampled 1/50, ", "functional warming, "]
            .into_iter()
            .find(|t| label.contains(t))
        {
            let detailed = label.replace(tag, "");
            if let Some(full) = rows.iter().find(|r| r.1 == *workload && r.0 == detailed) {
                let line = format!("{label} / {detailed} on {workload}: {:.2}", rate / full.4);
                println!("{line}");
                ratios.push(line);
            }
            continue;
        }
        // A queued-DRAM row over its idle-DRAM twin: the cost of the contention model.
        if !label.contains("DRAM") {
            let twin = match label.rfind(", ") {
                Some(i) => format!("{}, idle DRAM, {}", &label[..i], &label[i + 2..]),
                None => String::new(),
            };
            if let Some(idle) = rows.iter().find(|r| r.1 == *workload && r.0 == twin) {
                let line = format!("{label} / {twin} on {workload}: {:.2}", rate / idle.4);
                println!("{line}");
                ratios.push(line);
            }
        }
    }

    let target = env_or("XLAT_BENCH_WRITE", "docs/performance.md");
    if target.is_empty() {
        return;
    }
    // cargo runs benches from the crate directory; the docs live at the workspace root.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(&target);
    let mut section = String::new();
    section.push_str(BEGIN);
    section.push_str(&format!(
        "\nGenerated by `make bench` (xlat {}, release build, one engine thread, oracle on, footprint {}, {} references per run, `os.swap.bytes = 8GiB` for `restrictive_only` only; simulation time only, workload setup excluded; every row under `timing.model = \"simple\"` except the `(ooo, …)` rows, `\"ooo\"` with the default `core.resource_grant` (`time_order`) unless the label names another: `thread` with the core on a thread of its own, `1 thread` on the engine's thread, see docs/timing.md, \"Speed\"; the `ooo` core drives the queued DRAM controller (`mem.dram.model = \"auto\"`) except in the rows labelled `idle DRAM`).\n\n",
        xlat::VERSION,
        format_bytes(footprint),
        refs
    ));
    section.push_str("| design | workload | refs | seconds | M refs/s | setup s |\n|---|---|---:|---:|---:|---:|\n");
    for (d, w, n, s, r, setup) in &rows {
        section.push_str(&format!(
            "| {d} | {w} | {n} | {s:.3} | {r:.2} | {setup:.2} |\n"
        ));
    }
    if !ratios.is_empty() {
        section.push_str(
            "\nRates of the `ooo` rows over the `simple` row of the same design, of the queued-DRAM `ooo` rows over their `idle DRAM` twins, and of the sampled row (`sim.sampling` interval 100000, window 2000, detailed warm-up 2000) and the functional-warming row (`sim.sampling` interval = the run's references, window 1, detailed warm-up 0: every reference but the last functionally warmed) over their detailed twin, same run:\n\n",
        );
        for line in &ratios {
            section.push_str(&format!("- {line}\n"));
        }
    }
    section.push_str(&format!(
        "\nPeak resident memory of the whole benchmark process: {} MiB.\n",
        rss / 1024
    ));
    section.push_str(END);
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    let new = match (old.find(BEGIN), old.find(END)) {
        (Some(a), Some(b)) if b > a => format!("{}{}{}", &old[..a], section, &old[b + END.len()..]),
        _ => format!("{old}\n{section}\n"),
    };
    std::fs::write(&path, new).expect("write performance doc");
    println!("wrote {}", path.display());
}
