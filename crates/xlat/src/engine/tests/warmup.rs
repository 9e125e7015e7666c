//! Warm-up (`sim.warmup_refs`): the measured region's counts, its determinism, its errors, and
//! that every figure is a count, a state or a fraction recomputed as the engine computes it.

use super::*;
use crate::stats::ratio;

fn with(cfg: &Config, extra: &[(&str, &str)]) -> Config {
    let mut t = toml::Value::try_from(cfg).unwrap();
    for (k, v) in extra {
        let (section, key) = k.split_once('.').unwrap();
        let value = v
            .parse::<i64>()
            .map(toml::Value::Integer)
            .unwrap_or_else(|_| toml::Value::String(v.to_string()));
        t[section].as_table_mut().unwrap().insert(key.into(), value);
    }
    let c: Config = t.try_into().unwrap();
    c.validate().unwrap();
    c
}

#[test]
fn a_run_with_warm_up_measures_exactly_the_configured_references_after_it() {
    for design in ["radix", "ecpt", "mehpt", "perfect_tlb"] {
        let cfg = with(
            &small(design),
            &[("sim.warmup_refs", "30000"), ("sim.refs", "20000")],
        );
        let r = run_workload(&cfg).unwrap();
        assert_eq!(r["refs"], 20000, "{design}");
        assert_eq!(r["tlb"]["l1_lookups"], 20000, "{design}");
        assert_eq!(r["warmup"]["refs"], 30000, "{design}");
        assert_eq!(r["warmup"]["method"], "snapshot_subtract");
        assert_eq!(r["config"]["sim"]["refs"], 20000);
        assert_eq!(r["config"]["sim"]["warmup_refs"], 30000);
        // After the reset the counters still agree with each other.
        let tlb = &r["tlb"];
        let misses = tlb["l2_misses"].as_u64().unwrap() + tlb["itlb_l2_misses"].as_u64().unwrap();
        let walk = &r["walk"];
        assert_eq!(walk["count"].as_u64().unwrap(), misses, "{design}");
        let hist: u64 = walk["latency_hist"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(hist, misses, "{design}");
        let avg = walk["avg_cycles"].as_f64().unwrap();
        assert_eq!(avg, ratio(walk["cycles"].as_u64().unwrap(), misses));
        let c = &r["cache"]["l1d"];
        assert_eq!(
            c["accesses"].as_u64().unwrap(),
            c["hits"].as_u64().unwrap() + c["misses"].as_u64().unwrap()
        );
        let ipc = r["timing"]["ipc"].as_f64().unwrap();
        let want =
            r["instructions"].as_u64().unwrap() as f64 / r["timing"]["cycles"].as_f64().unwrap();
        assert_eq!(ipc, want, "{design}");
    }
}

#[test]
fn the_measured_counts_are_those_of_a_longer_run_less_those_of_the_warm_up_alone() {
    let base = small("mehpt");
    let warm = run_workload(&with(&base, &[("sim.refs", "15000")])).unwrap();
    let full = run_workload(&with(&base, &[("sim.refs", "35000")])).unwrap();
    let measured = run_workload(&with(
        &base,
        &[("sim.warmup_refs", "15000"), ("sim.refs", "20000")],
    ))
    .unwrap();
    for path in [
        "refs",
        "instructions",
        "tlb.l1_misses",
        "walk.count",
        "walk.cycles",
        "cache.l2.pt_misses",
        "dram.reads",
        "os.page_faults",
        "mehpt.probes",
        "mehpt.reinsertions",
    ] {
        let get = |r: &Value| crate::stats::get_path(r, path).unwrap().as_u64().unwrap();
        assert_eq!(get(&measured), get(&full) - get(&warm), "{path}");
    }
    let cycles = |r: &Value| r["timing"]["cycles"].as_f64().unwrap();
    assert!((cycles(&measured) - (cycles(&full) - cycles(&warm))).abs() < 1e-6);
    // States are those of the end of the run.
    assert_eq!(measured["page_table"], full["page_table"]);
    assert_eq!(measured["mehpt"]["4k_entries"], full["mehpt"]["4k_entries"]);
}

#[test]
fn a_warmed_up_run_is_deterministic_however_it_is_chunked() {
    let cfg = with(&small("ecpt"), &[("sim.warmup_refs", "12345")]);
    let whole = run_workload(&cfg).unwrap();
    let mut sim = Simulation::with_sources(&cfg, sources(&cfg)).unwrap();
    while !sim.step(777).unwrap() {}
    let chunked = sim.record();
    let strip = |mut v: Value| {
        v.as_object_mut().unwrap().remove("sim");
        v
    };
    assert_eq!(strip(whole), strip(chunked));
}

#[test]
fn without_warm_up_the_record_has_no_warmup_key_in_its_config() {
    let r = run_workload(&small("radix")).unwrap();
    assert!(r.get("warmup").is_none());
    assert!(r["config"]["sim"].get("warmup_refs").is_none());
}

#[test]
fn a_trace_that_ends_within_the_warm_up_is_an_error_naming_the_key() {
    let cfg = with(&small("radix"), &[("sim.warmup_refs", "1000")]);
    let base = 0x7000_0000_0000u64;
    let mut events = vec![Event::Mmap {
        addr: Vaddr(base),
        len: 4096,
        prot: RW,
        flags: 0,
    }];
    events.extend(vec![load(base, 8); 10]);
    let source = Box::new(Events(events.into_iter()));
    let mut sim = Simulation::new(&cfg, source).unwrap();
    let err = loop {
        match sim.step(u64::MAX) {
            Ok(true) => panic!("a run shorter than its warm-up must not finish"),
            Ok(false) => continue,
            Err(e) => break e.to_string(),
        }
    };
    assert!(err.contains("sim.warmup_refs"), "{err}");
}

#[test]
fn a_multi_process_run_warms_up_each_process_and_measures_each_core() {
    let cfg = multi(
        "mehpt",
        "gups,kv",
        &[("sim.cores", "2"), ("sim.warmup_refs", "4000")],
    );
    let r = run_workload(&cfg).unwrap();
    assert_eq!(r["refs"], 2 * 6000);
    assert_eq!(r["warmup"]["refs"], 2 * 4000);
    let cores = r["cores"].as_array().unwrap();
    let per_core: u64 = cores.iter().map(|c| c["refs"].as_u64().unwrap()).sum();
    assert_eq!(per_core, 2 * 6000);
    let slowest = cores
        .iter()
        .map(|c| c["timing"]["cycles"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert_eq!(r["timing"]["cycles"].as_f64().unwrap(), slowest);
    for c in cores {
        let misses =
            c["tlb"]["l2_misses"].as_u64().unwrap() + c["tlb"]["itlb_l2_misses"].as_u64().unwrap();
        assert_eq!(c["walk"]["count"].as_u64().unwrap(), misses);
    }
}

#[test]
fn every_figure_of_every_design_is_a_count_a_state_or_a_fraction_after_warm_up() {
    for info in crate::designs::REGISTRY {
        for workload in ["gups", "kv", "bfs"] {
            for thp in ["never", "always"] {
                let cfg = with(
                    &small(info.name),
                    &[
                        ("sim.warmup_refs", "10000"),
                        ("workload.name", workload),
                        ("os.thp", thp),
                    ],
                );
                let r = run_workload(&cfg).unwrap();
                let whole = r["warmup"]["whole_run_keys"].as_array().unwrap();
                let unexpected: Vec<&Value> = whole
                    .iter()
                    .filter(|k| !KNOWN_WHOLE_RUN_KEYS.contains(&k.as_str().unwrap()))
                    .collect();
                assert!(
                    unexpected.is_empty(),
                    "{} {workload} thp={thp}: {unexpected:?}",
                    info.name
                );
            }
        }
    }
}

fn zeroed(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, c)| {
                    let keep = ["config", "sim", "trace"].contains(&k.as_str());
                    (k.clone(), if keep { c.clone() } else { zeroed(c) })
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(zeroed).collect()),
        Value::Number(n) if n.is_u64() => Value::from(0u64),
        Value::Number(_) => Value::from(0.0),
        other => other.clone(),
    }
}

fn floats(prefix: &str, v: &Value, out: &mut Vec<(String, f64)>) {
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                if prefix.is_empty() && ["config", "sim", "warmup"].contains(&k.as_str()) {
                    continue;
                }
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                floats(&p, c, out);
            }
        }
        Value::Array(a) => {
            for c in a.iter().filter(|c| c.is_object()) {
                floats(&format!("{prefix}[]"), c, out);
            }
        }
        Value::Number(n) if !n.is_u64() => out.push((prefix.into(), n.as_f64().unwrap())),
        _ => {}
    }
}

#[test]
fn every_fraction_recomputed_from_an_empty_snapshot_equals_the_records_own() {
    // With a snapshot of zeros the measured region is the whole run: every fraction the
    // warm-up recomputes must come out as the engine computed it (a wrong formula fails).
    let mut cases: Vec<Config> = Vec::new();
    for info in crate::designs::REGISTRY {
        for workload in ["gups", "kv", "bfs"] {
            for thp in ["never", "always"] {
                cases.push(with(
                    &small(info.name),
                    &[("workload.name", workload), ("os.thp", thp)],
                ));
            }
        }
    }
    cases.push(with(&small("radix"), &[("timing.model", "ooo")]));
    cases.push(multi("ecpt", "gups,kv", &[("sim.cores", "2")]));
    for cfg in cases {
        let r = run_workload(&cfg).unwrap();
        let (m, whole) = crate::warmup::measured(&r, &zeroed(&r), cfg.timing.translation_overlap);
        let (mut want, mut got) = (Vec::new(), Vec::new());
        floats("", &r, &mut want);
        floats("", &m, &mut got);
        assert_eq!(want.len(), got.len());
        for ((key, w), (_, g)) in want.iter().zip(&got) {
            if whole.iter().any(|k| k == key) {
                continue;
            }
            let tol = 1e-9 * w.abs().max(1.0);
            assert!(
                (w - g).abs() <= tol,
                "{} {}: {key} is {w} in the record, {g} recomputed",
                cfg.sim.design,
                cfg.workload.name
            );
        }
    }
}

/// Figures that still cover the whole run after a warm-up (see `crate::warmup`): averages
/// over samples the record does not count.
const KNOWN_WHOLE_RUN_KEYS: &[&str] = &[
    "timing.avg_walker_queue_cycles",
    "lvm.collision_rate",
    "lvm.single_access_walk_share",
    "ecpt.moved_fraction_per_upsize",
    "ecpt.moved_fraction_per_in_place_upsize",
    "mehpt.moved_fraction_per_upsize",
    "mehpt.moved_fraction_per_in_place_upsize",
    "cache.l1d.pt_line_share_avg",
    "cache.l2.pt_line_share_avg",
    "cache.llc.pt_line_share_avg",
    "utopia.rsw_speedup_over_flex_walk",
    "restrictive_only.rsw_speedup_over_flex_walk",
];
