//! Sampled simulation (`sim.sampling`): off leaves a run as it was, functional warming keeps
//! every functional count, the sampled IPC's interval holds the full run's, the interval
//! narrows with more windows, bad shapes are refused, and a sampled record is deterministic
//! however the run is chunked.

use super::*;

fn cfg(design: &str, workload: &str, extra: &[(&str, &str)]) -> Result<Config, String> {
    let o = |k: &str, v: &str| (k.to_string(), v.to_string());
    let mut set = vec![
        o("sim.design", design),
        o("workload.name", workload),
        o("workload.footprint", "64MiB"),
        o("os.phys_mem_bytes", "1GiB"),
        o("sim.refs", "200000"),
    ];
    set.extend(extra.iter().map(|(k, v)| o(k, v)));
    Config::resolve(None, &set).map_err(|e| e.0)
}

fn sampled(interval: &str) -> Vec<(&'static str, String)> {
    vec![
        ("sim.sampling.interval", interval.to_string()),
        ("sim.sampling.window", "1000".into()),
        ("sim.sampling.detailed_warmup", "1000".into()),
    ]
}

fn run_with(design: &str, workload: &str, extra: &[(&str, String)]) -> Value {
    let extra: Vec<(&str, &str)> = extra.iter().map(|(k, v)| (*k, v.as_str())).collect();
    run_workload(&cfg(design, workload, &extra).unwrap()).unwrap()
}

fn metric<'a>(r: &'a Value, key: &str) -> &'a Value {
    &r["sampling"]["metrics"][key]
}

#[test]
fn sampling_off_leaves_the_record_and_its_configuration_as_they_were() {
    let plain = without_wall_clock(run_with("radix", "gups", &[]));
    // A window and warm-up set while the interval is 0 change nothing either.
    let off = without_wall_clock(run_with(
        "radix",
        "gups",
        &[
            ("sim.sampling.interval", "0".into()),
            ("sim.sampling.window", "7".into()),
        ],
    ));
    assert_eq!(plain, off);
    assert!(plain.get("sampling").is_none());
    assert!(plain["config"]["sim"].get("sampling").is_none());
}

#[test]
fn functional_warming_keeps_every_count_but_the_cores_time_as_a_detailed_run_has_it() {
    for design in ["radix", "ecpt", "utopia"] {
        let full = run_with(design, "gups", &[]);
        let s = run_with(design, "gups", &sampled("10000"));
        for key in [
            "refs",
            "instructions",
            "tlb",
            "walk",
            "cache",
            "os",
            "page_table",
        ] {
            assert_eq!(full[key], s[key], "{design}: {key}");
        }
        // The memory system's DRAM model (its row buffers) is warmed too; the queued
        // controller's figures (`dram.queued`) are the core's, detailed references only.
        for key in ["accesses", "reads", "writes", "row_hits", "row_conflicts"] {
            assert_eq!(full["dram"][key], s["dram"][key], "{design}: dram.{key}");
        }
        assert_eq!(full[design], s[design], "{design}: its own section");
        assert_eq!(s["sampling"]["windows"], 20, "{design}");
        assert_eq!(s["sampling"]["measured_refs"], 20 * 1000, "{design}");
        // One cycles-per-reference figure per window, whose mean is the metric's.
        let per_window: Vec<f64> = s["sampling"]["window_cycles_per_ref"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(per_window.len(), 20, "{design}");
        let mean = per_window.iter().sum::<f64>() / 20.0;
        let recorded = s["sampling"]["metrics"]["cycles_per_ref"]["mean"]
            .as_f64()
            .unwrap();
        assert!((mean - recorded).abs() <= 1e-9 * recorded, "{design}");
    }
}

#[test]
fn the_sampled_ipc_of_a_steady_workload_lies_within_its_interval_of_the_full_run() {
    for design in ["radix", "ecpt"] {
        let full = run_with(design, "gups", &[]);
        let s = run_with(design, "gups", &sampled("5000"));
        let ipc = full["timing"]["ipc"].as_f64().unwrap();
        let e = &s["sampling"]["estimate"];
        let (lo, hi) = (
            e["ipc_ci95_low"].as_f64().unwrap(),
            e["ipc_ci95_high"].as_f64().unwrap(),
        );
        assert!(
            lo <= ipc && ipc <= hi,
            "{design}: {ipc} not in [{lo}, {hi}]"
        );
        assert_eq!(s["timing"]["ipc"], e["ipc"]);
        assert_eq!(s["sampling"]["windows"], 40);
        // The whole-run L1 TLB MPKI lies within the windows' interval as well.
        let mpki = full["tlb"]["l1_mpki"].as_f64().unwrap();
        let m = metric(&s, "l1_tlb_mpki");
        assert!(
            m["ci95_low"].as_f64().unwrap() <= mpki && mpki <= m["ci95_high"].as_f64().unwrap(),
            "{design}: {mpki} not in {m}"
        );
    }
}

#[test]
fn the_interval_narrows_with_more_windows() {
    let few = run_with("radix", "gups", &sampled("20000"));
    let many = run_with("radix", "gups", &sampled("5000"));
    assert_eq!(few["sampling"]["windows"], 10);
    assert_eq!(many["sampling"]["windows"], 40);
    let half = |r: &Value| {
        metric(r, "cycles_per_ref")["ci95_half_width"]
            .as_f64()
            .unwrap()
    };
    assert!(
        half(&many) < half(&few),
        "{} !< {}",
        half(&many),
        half(&few)
    );
}

/// The record of a sampled run of `workloads` (with `extra` settings), after checking that it
/// is the same run whole, run again, and run in steps of 777 references.
fn the_same_however_chunked(workloads: &str, extra: &[(&str, &str)]) -> Value {
    let mut set = vec![
        ("sim.sampling.interval", "10000"),
        ("sim.sampling.window", "1000"),
        ("sim.warmup_refs", "15000"),
    ];
    set.extend_from_slice(extra);
    let c = cfg("radix", workloads, &set).unwrap();
    let once = without_wall_clock(run_workload(&c).unwrap());
    assert_eq!(once, without_wall_clock(run_workload(&c).unwrap()));
    let sources =
        crate::workloads::create_all(&c.workload, c.sim.simulated_refs(), c.sim.seed).unwrap();
    let mut sim = Simulation::with_sources(&c, sources).unwrap();
    while !sim.step(777).unwrap() {}
    let chunked = without_wall_clock(sim.record());
    let mut differ = Vec::new();
    diff("", &once, &chunked, &mut differ);
    assert!(differ.is_empty(), "{differ:?}");
    once
}

#[test]
fn a_sampled_record_is_the_same_for_a_seed_however_the_run_is_chunked() {
    let once = the_same_however_chunked("btree", &[]);
    assert_eq!(once["sampling"]["windows"], 20);
    assert_eq!(once["refs"], 200000);
}

/// The paths at which `a` and `b` differ.
fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                diff(
                    &format!("{path}.{k}"),
                    v,
                    y.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        _ if a != b => out.push(format!("{path}: {a} vs {b}")),
        _ => {}
    }
}

#[test]
fn bad_sampling_configurations_are_refused_with_the_key_named() {
    let err = |extra: &[(&str, &str)]| cfg("radix", "gups", extra).unwrap_err();
    let e = err(&[
        ("sim.sampling.interval", "1000"),
        ("sim.sampling.window", "2000"),
    ]);
    assert!(e.contains("sim.sampling.window (2000)"), "{e}");
    let e = err(&[
        ("sim.sampling.interval", "1000"),
        ("sim.sampling.window", "0"),
    ]);
    assert!(e.contains("sim.sampling.window must be at least 1"), "{e}");
    let e = err(&[("sim.sampling.interval", "1000000")]);
    assert!(e.contains("shorter than one sampling unit"), "{e}");
    let e = err(&[("sim.sampling.interval", "-5")]);
    assert!(e.contains("must not be negative"), "{e}");
    let e = err(&[("sim.sampling.windw", "5")]);
    assert!(
        e.contains("unknown configuration key 'sim.sampling.windw'"),
        "{e}"
    );
}

#[test]
fn the_default_auto_interval_leaves_short_runs_and_shared_cores_unsampled() {
    // 200000 references: below `AUTO_FROM_REFS`, a full detailed run with no sampling section.
    let r = run_with("radix", "gups", &[]);
    assert!(r.get("sampling").is_none(), "{}", r["sampling"]);
    // "auto" never refuses what sampling does not support (processes sharing a core); it
    // just does not sample it.
    cfg("radix", "gups,btree", &[("sim.refs", "30M")]).unwrap();
    let r = run_with("radix", "gups", &sampled("10000"));
    assert_eq!(r["sampling"]["automatic"], false);
}

#[test]
fn a_sampled_run_of_more_processes_than_cores_is_refused() {
    let c = cfg("radix", "gups,btree", &[("sim.sampling.interval", "10000")]).unwrap();
    let e = run_workload(&c).unwrap_err().to_string();
    assert!(
        e.contains("2 processes on 1 core(s) would share a core by time slices"),
        "{e}"
    );
}

fn two_cores(extra: &[(&str, String)]) -> Value {
    let mut set = vec![("sim.cores", "2".to_string())];
    set.extend(extra.iter().cloned());
    run_with("radix", "gups,btree", &set)
}

fn ipc_inside(what: &str, x: f64, e: &Value) {
    let (lo, hi) = (
        e["ipc_ci95_low"].as_f64().unwrap(),
        e["ipc_ci95_high"].as_f64().unwrap(),
    );
    assert!(lo <= x && x <= hi, "{what}: {x} not in [{lo}, {hi}]");
}

#[test]
fn a_sampled_run_of_two_cores_holds_the_full_runs_ipc_in_its_intervals_machine_and_cores() {
    // Per core under the idle DRAM model: under the queued one a full run's core whose process
    // ends first settles its last references on the shared controller at the end of the run,
    // so its recorded time is about the machine's (docs/timing.md, "Sampling several cores").
    let idle = [("mem.dram.model", "idle".to_string())];
    let full = two_cores(&idle);
    let s = two_cores(&[&idle[..], &sampled("10000")].concat());
    // 2 x 200000 references in units of 10000 (both cores' references counted together).
    assert_eq!(s["sampling"]["windows"], 40);
    let machine = |r: &Value| r["timing"]["ipc"].as_f64().unwrap();
    ipc_inside("machine", machine(&full), &s["sampling"]["estimate"]);
    assert_eq!(s["timing"]["ipc"], s["sampling"]["estimate"]["ipc"]);
    for k in 0..2 {
        let e = &s["sampling"]["cores"][k]["estimate"];
        let ipc = full["cores"][k]["timing"]["ipc"].as_f64().unwrap();
        ipc_inside(&format!("core {k}"), ipc, e);
        assert_eq!(s["cores"][k]["timing"]["ipc"], e["ipc"], "core {k}");
    }
    // The same references in all (how the warm-up's end splits them between the cores
    // follows the turns, which functional warming takes by another clock).
    assert_eq!(full["refs"], s["refs"]);
    let keys = s["sampling"]["estimated_keys"].as_array().unwrap();
    assert!(keys.contains(&Value::from("cores.timing.ipc")), "{keys:?}");
    // The machine's IPC under the queued controller as well.
    let full = two_cores(&[]);
    let s = two_cores(&sampled("10000"));
    ipc_inside(
        "machine, queued",
        machine(&full),
        &s["sampling"]["estimate"],
    );
}

#[test]
fn a_sampled_run_of_two_cores_is_the_same_for_a_seed_however_it_is_chunked() {
    let once = the_same_however_chunked("gups,btree", &[("sim.cores", "2")]);
    assert!(once["sampling"]["windows"].as_u64().unwrap() >= 35);
}

#[test]
fn a_trace_that_ends_within_the_first_unit_reports_no_window_and_no_estimate() {
    let base = 0x7000_0000_0000u64;
    let mut events = vec![Event::Mmap {
        addr: Vaddr(base),
        len: 1 << 20,
        prot: RW,
        flags: 0,
    }];
    events.extend((0..3000u64).map(|i| load(base + (i * 4096) % (1 << 20), 8)));
    let mut c = small("radix");
    c.sim.sampling = crate::sampling::SamplingConfig {
        interval: crate::sampling::SamplingInterval::Refs(10000),
        window: 1000,
        detailed_warmup: 1000,
    };
    let r = run(&c, Box::new(Events(events.into_iter()))).unwrap();
    assert_eq!(r["refs"], 3000);
    assert_eq!(r["sampling"]["windows"], 0);
    assert!(r["sampling"]["estimate"]
        .as_str()
        .unwrap()
        .starts_with("none"));
    assert!(r["sampling"]["metrics"]["ipc"].get("ci95_low").is_none());
}

/// A trace file as the engine sees one: it describes itself, and may know its length.
struct TraceLike(Events, Option<u64>);

impl EventSource for TraceLike {
    fn fill(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, SourceError> {
        self.0.fill(out, max)
    }
    fn name(&self) -> String {
        "trace-like".into()
    }
    fn describe(&self) -> Option<Value> {
        Some(serde_json::json!({"path": "trace-like"}))
    }
    fn total_refs(&self) -> Option<u64> {
        self.1
    }
}

#[test]
fn auto_does_not_sample_a_trace_file_of_unknown_or_short_length_run_whole() {
    // A whole-trace run is given a huge `sim.refs`; "auto" must go by the trace's own length.
    let base = 0x7000_0000_0000u64;
    let events = || {
        let mut v = vec![Event::Mmap {
            addr: Vaddr(base),
            len: 1 << 20,
            prot: RW,
            flags: 0,
        }];
        v.extend((0..3000u64).map(|i| load(base + (i * 4096) % (1 << 20), 8)));
        v
    };
    let mut c = small("radix");
    c.sim.refs = u64::MAX / 4;
    for total in [None, Some(3001)] {
        let source = TraceLike(Events(events().into_iter()), total);
        let r = run(&c, Box::new(source)).unwrap();
        assert_eq!(r["refs"], 3000, "{total:?}");
        assert!(r.get("sampling").is_none(), "{total:?}: {}", r["sampling"]);
    }
}
