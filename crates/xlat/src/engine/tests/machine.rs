//! Multi-core and multi-process runs: the oracle on every design, time sharing, context-switch
//! windows, shootdowns across cores, multi-threaded traces, determinism however chunked.

use super::*;
use crate::designs::radix::Radix;
use crate::designs::Design;
use crate::engine::sim::{Runner, Sim};
use crate::os::Os;

#[test]
fn every_design_passes_the_oracle_on_four_cores_running_four_workloads() {
    for info in crate::designs::REGISTRY {
        let cfg = multi(info.name, "gups,kv,bfs,xsbench", &[("sim.cores", "4")]);
        let r = run_workload(&cfg).unwrap_or_else(|e| panic!("{}: {e}", info.name));
        assert_eq!(r["oracle"]["mismatches"], 0);
        assert_eq!(r["refs"], 4 * 6000, "{}", info.name);
        assert_eq!(r["ended_by"], "refs_limit");
        assert_eq!(r["workload"], "gups,kv,bfs,xsbench");
        let cores = r["cores"].as_array().unwrap();
        assert_eq!(cores.len(), 4);
        for (k, core) in cores.iter().enumerate() {
            assert_eq!(core["refs"], 6000, "{} core {k}", info.name);
            assert!(core["oracle"]["checked"].as_u64().unwrap() >= 6000);
        }
        let procs = r["processes"].as_array().unwrap();
        for (j, p) in procs.iter().enumerate() {
            assert_eq!(p["core"], j as u64);
            assert_eq!(p["refs"], 6000);
        }
        // Totals are sums; the machine's cycles are its slowest core's.
        let sum = |path: &[&str]| -> u64 {
            cores
                .iter()
                .map(|c| path.iter().fold(c, |v, k| &v[*k]).as_u64().unwrap())
                .sum()
        };
        assert_eq!(
            r["walk"]["count"].as_u64().unwrap(),
            sum(&["walk", "count"])
        );
        assert_eq!(
            r["tlb"]["l1_misses"].as_u64().unwrap(),
            sum(&["tlb", "l1_misses"])
        );
        let max = cores
            .iter()
            .map(|c| c["timing"]["cycles"].as_f64().unwrap())
            .fold(0.0, f64::max);
        assert_eq!(r["timing"]["cycles"].as_f64().unwrap(), max);
    }
}

#[test]
fn every_design_passes_the_oracle_with_three_processes_time_sharing_one_core() {
    for info in crate::designs::REGISTRY {
        for flush in ["false", "true"] {
            let cfg = multi(
                info.name,
                "gups,kv,bfs",
                &[("sim.quantum", "20000"), ("sim.flush_tlb_on_switch", flush)],
            );
            let r =
                run_workload(&cfg).unwrap_or_else(|e| panic!("{} flush {flush}: {e}", info.name));
            assert_eq!(r["oracle"]["mismatches"], 0);
            assert_eq!(r["refs"], 3 * 6000);
            assert!(r["switch"]["count"].as_u64().unwrap() >= 3, "{}", info.name);
            for p in r["processes"].as_array().unwrap() {
                assert_eq!(p["refs"], 6000);
                assert_eq!(p["ended_by"], "refs_limit");
            }
        }
    }
}

#[test]
fn flushing_the_tlb_at_every_switch_costs_misses_after_the_switch() {
    let misses = |flush: &str| {
        let cfg = multi(
            "radix",
            "stream,stream",
            &[
                ("sim.refs", "60000"),
                ("sim.quantum", "20000"),
                ("sim.switch_window_refs", "200"),
                ("sim.flush_tlb_on_switch", flush),
            ],
        );
        let r = run_workload(&cfg).unwrap();
        let w = &r["switch"];
        assert!(w["count"].as_u64().unwrap() > 10);
        // A window ends early when the next switch (or the run's end) comes first.
        let refs = w["window_refs"].as_u64().unwrap();
        assert!(refs > 0 && refs <= 200 * w["windows"].as_u64().unwrap());
        (
            w["tlb_misses_in_window"].as_u64().unwrap(),
            w["mmu_cache_misses_in_window"].as_u64().unwrap(),
        )
    };
    let (kept, kept_pwc) = misses("false");
    let (flushed, flushed_pwc) = misses("true");
    assert!(flushed > kept, "flushed {flushed} kept {kept}");
    assert!(
        flushed_pwc > kept_pwc,
        "flushed {flushed_pwc} kept {kept_pwc}"
    );
}

#[test]
fn a_multi_core_run_is_identical_however_it_is_chunked() {
    for (workloads, cores) in [("gups,kv,bfs,xsbench", "4"), ("gups,kv,bfs", "2")] {
        let cfg = multi(
            "radix",
            workloads,
            &[("sim.cores", cores), ("sim.quantum", "30000")],
        );
        let whole = run_workload(&cfg).unwrap();
        for step in [1, 63, 1000] {
            let mut sim = Simulation::with_sources(&cfg, sources(&cfg)).unwrap();
            while !sim.step(step).unwrap() {}
            assert_eq!(
                without_wall_clock(whole.clone()),
                without_wall_clock(sim.record()),
                "{workloads} step {step}"
            );
        }
    }
}

#[test]
fn bad_core_counts_and_quanta_are_errors_naming_the_key() {
    let o = |k: &str, v: &str| (k.to_string(), v.to_string());
    let e = Config::resolve(None, &[o("sim.cores", "0")]).unwrap_err();
    assert!(e.0.contains("sim.cores must be in 1..=64"), "{e}");
    for q in ["0", "0ms", "soon"] {
        let e = Config::resolve(None, &[o("sim.quantum", q)]).unwrap_err();
        assert!(e.0.contains("sim.quantum"), "{e}");
    }
    let cfg = multi("radix", "gups,kv", &[("sim.cores", "4")]);
    match Simulation::with_sources(&cfg, sources(&cfg)) {
        Err(SimError::Config(e)) => assert!(e.contains("sim.cores (4) exceeds"), "{e}"),
        _ => panic!("expected a configuration error"),
    }
    let e = Config::resolve(None, &[o("workload.name", "gups,kvv")]).unwrap_err();
    assert!(e.0.contains("unknown workload 'kvv'"), "{e}");
}

#[test]
fn a_quantum_in_milliseconds_is_converted_at_the_core_clock() {
    let cfg = multi("radix", "gups", &[("sim.quantum", "20ms")]);
    assert_eq!(cfg.sim.quantum_cycles(2600).unwrap(), 52_000_000);
    assert_eq!(
        multi("radix", "gups", &[("sim.quantum", "500us")])
            .sim
            .quantum_cycles(2600)
            .unwrap(),
        1_300_000
    );
}

#[test]
fn a_shootdown_on_one_core_reaches_the_tlbs_of_the_other_cores_that_ran_the_process() {
    let cfg = multi("radix", "gups,kv", &[("sim.cores", "2")]);
    let mut os = Os::new(&cfg.os, 1).unwrap();
    let design = Radix::new(&cfg.designs.radix, &mut os.phys).unwrap();
    let base = 0x7000_0000_0000u64;
    let program = |at: u64| -> Box<dyn EventSource> {
        Box::new(Events(
            vec![
                Event::Mmap {
                    addr: Vaddr(at),
                    len: 4096,
                    prot: RW,
                    flags: 0,
                },
                load(at + 8, 8),
            ]
            .into_iter(),
        ))
    };
    let mut sim = Sim::build(
        cfg,
        program(base),
        vec![program(base + (1 << 30))],
        None,
        design,
        os,
        false,
    )
    .unwrap();
    while !sim.step(1000).unwrap() {}
    // Process 0's page, as core 1 would hold it had a thread of process 0 run there.
    let asid = 0;
    let m = sim.os.translate(asid, Vaddr(base).vpn()).expect("mapped");
    let machine = sim.machine.as_deref_mut().unwrap();
    let running = machine.running;
    let other = 1 - running;
    machine.cores[other].mmu.fill(asid, m, false);
    machine.sched[other].asids.push(asid);
    assert!(machine.cores[other]
        .mmu
        .lookup_data_l1(asid, m.vpn)
        .is_some());
    // The core running now unmaps it (any core may start a shootdown).
    sim.os
        .munmap(asid, Vaddr(base), m.size.bytes(), &mut sim.changes)
        .unwrap();
    sim.apply_changes().unwrap();
    let machine = sim.machine.as_deref_mut().unwrap();
    assert!(machine.cores[other]
        .mmu
        .lookup_data_l1(asid, m.vpn)
        .is_none());
    assert_eq!(machine.sched[other].ipis_received, 1);
    assert_eq!(machine.sched[running].ipis_sent, 1);
    assert_eq!(machine.shootdown_rounds, 1);
    assert_eq!(
        machine.sched[other].ipi_cycles,
        sim.cfg.sim.shootdown_ipi_cycles
    );
}
#[test]
fn a_multi_threaded_trace_runs_each_thread_on_its_core_and_shootdowns_interrupt_them() {
    let mut cfg = small("radix");
    cfg.sim.cores = 2;
    let base = 0x7000_0000_0000u64;
    let mut events = vec![
        Event::Mmap {
            addr: Vaddr(base),
            len: 8 * 4096,
            prot: RW,
            flags: 0,
        },
        Event::Thread { tid: 4242 },
    ];
    for round in 0..3 {
        for p in 0..8 {
            events.push(load(base + p * 4096 + round * 8, 8));
        }
        events.push(Event::Thread {
            tid: if round % 2 == 0 { 4243 } else { 4242 },
        });
    }
    events.push(Event::Munmap {
        addr: Vaddr(base),
        len: 4096,
    });
    let r = run(&cfg, Box::new(Events(events.clone().into_iter()))).unwrap();
    for step in [1, 5] {
        let mut sim = Simulation::new(&cfg, Box::new(Events(events.clone().into_iter()))).unwrap();
        while !sim.step(step).unwrap() {}
        assert_eq!(
            without_wall_clock(r.clone()),
            without_wall_clock(sim.record()),
            "step {step}"
        );
    }
    assert_eq!(r["refs"], 24);
    let cores = r["cores"].as_array().unwrap();
    // Threads 4242 (first seen: core 0) and 4243 (core 1): rounds 0 and 2 on core 0.
    assert_eq!(cores[0]["refs"], 16);
    assert_eq!(cores[1]["refs"], 8);
    // Core 1 has its own TLBs: the pages core 0 already uses miss there again.
    assert_eq!(cores[1]["walk"]["count"], 8);
    // The munmap on core 1 interrupts core 0, which ran the process.
    assert_eq!(r["shootdown"]["rounds"], 1);
    assert_eq!(cores[0]["shootdown"]["ipis_received"], 1);
    assert_eq!(r["processes"].as_array().unwrap().len(), 1);
    assert_eq!(r["oracle"]["mismatches"], 0);
}

/// The OS clock of a multi-core run is the clock the scheduler balances: under `ooo` the cores'
/// own cycles. It once was the `simple` formula's, by which a GUPS core runs about 2.4x ahead
/// of its `ooo` cycles; when that core's process ended first the OS clock stood still for the
/// rest of the run (docs/designs/utopia.md: Utopia's migrations then never finished).
#[test]
fn the_os_clock_of_several_cores_follows_the_cores_that_are_still_running() {
    let cfg = multi(
        "radix",
        "gups,pointer_chase",
        &[
            ("sim.cores", "2"),
            ("sim.refs", "60000"),
            ("workload.footprint", "64MiB"),
            ("timing.model", "ooo"),
            // A daemon makes the engine read the OS clock at every chunk.
            ("os.khugepaged.enabled", "true"),
        ],
    );
    let r = crate::engine::run_workload(&cfg).unwrap();
    let clock = r["timing"]["os_clock_cycles"].as_u64().unwrap() as f64;
    let cycles = r["timing"]["cycles"].as_f64().unwrap();
    // Never ahead of the machine (the latest core's cycles), and read up to its last chunks.
    assert!(
        clock <= cycles,
        "OS clock {clock} past the machine's {cycles} cycles"
    );
    assert!(
        clock >= 0.9 * cycles,
        "OS clock {clock} stopped before {cycles} cycles"
    );
}

#[test]
fn a_core_whose_process_ends_first_keeps_its_own_time_under_the_shared_dram_controller() {
    // bfs runs about six times faster than kv. Before model version 2 bfs's core settled its
    // last references (a ROB's worth) on a copy of the shared queued controller at the end of
    // the run, after every request of kv's, and its recorded time was kv's.
    let cfg = multi(
        "radix",
        "bfs,kv",
        &[
            ("sim.cores", "2"),
            ("sim.refs", "200000"),
            ("workload.footprint", "64MiB"),
            ("mem.dram.model", "queued"),
        ],
    );
    let r = run_workload(&cfg).unwrap();
    let cycles = |k: usize| r["cores"][k]["timing"]["cycles"].as_f64().unwrap();
    assert!(
        cycles(0) < 0.5 * cycles(1),
        "bfs {} against kv {}",
        cycles(0),
        cycles(1)
    );
    // The machine's time is still its slowest core's.
    assert_eq!(r["timing"]["cycles"].as_f64().unwrap(), cycles(1));
}

#[test]
fn a_record_carries_the_model_version_of_its_run_one_core_or_a_machine() {
    use crate::stats::model_version_of as of;
    let one = run_workload(&multi("radix", "gups", &[])).unwrap();
    assert_eq!(one["model_version"], of(1, 1, "radix", "gups"));
    let two = run_workload(&multi("radix", "gups,kv", &[("sim.cores", "2")])).unwrap();
    assert_eq!(two["model_version"], of(2, 2, "radix", "gups,kv"));
    let shared = run_workload(&multi("radix", "gups,kv", &[])).unwrap();
    assert_eq!(shared["model_version"], of(1, 2, "radix", "gups,kv"));
    // Version 2 moved machines only: a one-core run has the latest change that moved every
    // run (version 3), not version 2.
    use crate::stats::{ModelScope, MODEL_CHANGES};
    let latest_for_all = MODEL_CHANGES
        .iter()
        .filter(|(_, scope)| *scope == ModelScope::All)
        .map(|(v, _)| *v)
        .max()
        .unwrap_or(1);
    assert_eq!(of(1, 1, "radix", "gups"), latest_for_all);
    assert!(MODEL_CHANGES.contains(&(2, ModelScope::Machines)));
    // As of version 8: versions 4 and 8 moved multi-threaded traces on several cores only;
    // version 5 every run; version 6 LVM's runs only; version 7 memcached's only.
    let at8 = |c, p, d, w| crate::stats::model_version_as_of(c, p, d, w, 8);
    assert_eq!(at8(2, 2, "radix", "gups,kv"), 5);
    assert_eq!(at8(1, 2, "radix", "gups,kv"), 5);
    assert_eq!(at8(2, 1, "radix", "gups"), 8);
    assert_eq!(at8(2, 1, "lvm", "gups"), 8);
    assert_eq!(at8(1, 1, "lvm", "gups"), 6);
    assert_eq!(at8(1, 1, "lvm", "memcached"), 7);
    assert_eq!(at8(2, 2, "radix", "kv,memcached"), 7);
    // Versions 9 (the DRAM address mapping), 10 and 11 (the queued DRAM controller) moved
    // every run.
    assert_eq!(of(2, 1, "radix", "app.xlat"), crate::stats::MODEL_VERSION);
    assert_eq!(of(1, 1, "lvm", "gups"), 11);
    assert_eq!(of(2, 2, "radix", "kv,memcached"), 11);
    assert_eq!(crate::stats::model_version_as_of(1, 1, "lvm", "gups", 9), 9);
    assert_eq!(
        crate::stats::model_version_as_of(1, 1, "lvm", "gups", 10),
        10
    );
    let lvm = run_workload(&multi("lvm", "gups", &[])).unwrap();
    assert_eq!(lvm["model_version"], 11);
    let mc = run_workload(&multi("radix", "kv,memcached", &[])).unwrap();
    assert_eq!(mc["model_version"], 11);
}

/// Two threads of 100 000 random loads each over 256 MiB, in recorded stretches of 20 000.
fn two_threads_of_random_loads() -> Vec<Event> {
    let base = 0x7000_0000_0000u64;
    let len = 256u64 << 20;
    let mut x = 12345u64;
    let mut events = vec![Event::Mmap {
        addr: Vaddr(base),
        len,
        prot: RW,
        flags: 0,
    }];
    for stretch in 0..10u32 {
        events.push(Event::Thread {
            tid: 100 + stretch % 2,
        });
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            events.push(load(base + (((x >> 20) % len) & !7), 8));
        }
    }
    events
}

/// A run of `events` under `timing.model = "ooo"` on `cores` cores with `mem.dram.model = dram`.
fn threaded_run(events: Vec<Event>, cores: &str, dram: &str) -> serde_json::Value {
    let o = |k: &str, v: &str| (k.to_string(), v.to_string());
    let cfg = Config::resolve(
        None,
        &[
            o("sim.design", "radix"),
            o("sim.refs", "1000000"),
            o("os.phys_mem_bytes", "2GiB"),
            o("sim.warmup_refs", "0"),
            o("sim.cores", cores),
            o("timing.model", "ooo"),
            o("mem.dram.model", dram),
        ],
    )
    .unwrap();
    run(&cfg, Box::new(Events(events.into_iter()))).unwrap()
}

#[test]
fn a_multi_threaded_trace_runs_its_threads_in_parallel_under_the_queued_dram_model() {
    // Run in the trace's order under the queued model (before model version 4; versions 4-7
    // took the idle model instead), the second thread's requests reached the shared controller
    // a stretch behind the first's and queued behind them: two cores took 5.58 M cycles against
    // 5.77 M on one. Run in the cores' time order they overlap.
    let events = two_threads_of_random_loads();
    let one = threaded_run(events.clone(), "1", "queued");
    let two = threaded_run(events, "2", "auto");
    assert_eq!(two["config"]["mem"]["dram"]["model"], "queued");
    let cycles = |r: &serde_json::Value| r["timing"]["cycles"].as_f64().unwrap();
    assert!(
        cycles(&two) < 0.6 * cycles(&one),
        "two cores {} against one {}",
        cycles(&two),
        cycles(&one)
    );
    // The cores' requests reach the controller in time order. A few are moved up to its
    // reorder window (213 of 212 853, all in the first 70 000 cycles): there nearly every load
    // faults, and a turn of 64 faulting references puts its core thousands of cycles ahead.
    let late = two["dram"]["queued"]["late_arrivals"].as_u64().unwrap();
    let reads = two["dram"]["queued"]["reads"].as_u64().unwrap();
    assert!(late * 200 < reads, "{late} late arrivals of {reads} reads");
    assert_eq!(two["refs"], 200_000);
    assert_eq!(two["oracle"]["mismatches"], 0);
}

#[test]
fn threads_sharing_the_dram_contend_for_it() {
    // The same two threads under the idle model (every request sees an idle channel) and the
    // queued one: queueing behind the other core's requests makes each read slower.
    let events = two_threads_of_random_loads();
    let idle = threaded_run(events.clone(), "2", "idle");
    let queued = threaded_run(events.clone(), "2", "queued");
    let alone = threaded_run(events[..20_002].to_vec(), "1", "queued");
    let latency = |r: &serde_json::Value| {
        r["dram"]["queued"]["avg_read_latency_cycles"]
            .as_f64()
            .unwrap()
    };
    assert!(idle["dram"]["queued"].is_null());
    assert!(
        latency(&queued) > latency(&alone),
        "two threads {} against one alone {}",
        latency(&queued),
        latency(&alone)
    );
}

#[test]
fn a_thread_runs_past_another_threads_mmap_only_after_it() {
    // Thread 2 touches a region that thread 1 maps in the trace before: however the cores'
    // clocks fall, the mmap runs first (a barrier) and the oracle sees no unmapped access.
    let base = 0x7000_0000_0000u64;
    let mut events = vec![Event::Thread { tid: 1 }];
    // Thread 1 is slow (pointer-chase-like loads over its own region) before its mmap.
    events.push(Event::Mmap {
        addr: Vaddr(base),
        len: 64 << 20,
        prot: RW,
        flags: 0,
    });
    let mut x = 7u64;
    for _ in 0..5_000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        events.push(load(base + (((x >> 20) % (64 << 20)) & !7), 8));
    }
    events.push(Event::Mmap {
        addr: Vaddr(base + (1 << 30)),
        len: 1 << 20,
        prot: RW,
        flags: 0,
    });
    events.push(Event::Thread { tid: 2 });
    for i in 0..2_000u64 {
        events.push(load(base + (1 << 30) + (i * 64) % (1 << 20), 8));
    }
    for cores in ["2", "3"] {
        let r = threaded_run(events.clone(), cores, "auto");
        assert_eq!(r["refs"], 7_000, "{cores} cores");
        assert_eq!(r["oracle"]["mismatches"], 0);
        assert_eq!(r["cores"][1]["refs"], 2_000);
    }
}

#[test]
fn a_multi_threaded_run_is_the_same_however_it_is_stepped() {
    let events = two_threads_of_random_loads();
    let mut cfg = small("radix");
    cfg.sim.cores = 2;
    cfg.timing.model = crate::timing::TimingModel::Ooo;
    let whole = run(&cfg, Box::new(Events(events.clone().into_iter()))).unwrap();
    let mut sim = Simulation::new(&cfg, Box::new(Events(events.into_iter()))).unwrap();
    while !sim.step(997).unwrap() {}
    assert_eq!(without_wall_clock(whole), without_wall_clock(sim.record()));
}

/// A multi-threaded trace from `ops`: `(thread, op, value)` with op 0 = map a region of 1-4
/// pages, 1 = unmap the oldest region, else a reference into one of the regions mapped at that
/// point of the trace (`value` picks the region and the offset; every fourth depends on a
/// recent reference). Returns the events and how many references they hold.
fn threaded_trace(ops: &[(u8, u8, u32)]) -> (Vec<Event>, u64) {
    let mut events = Vec::new();
    let mut mapped: std::collections::VecDeque<(u64, u64)> = Default::default();
    let mut next = 0x7000_0000_0000u64;
    let mut refs = 0;
    for &(thread, op, value) in ops {
        events.push(Event::Thread {
            tid: 1000 + thread as u32,
        });
        match op {
            0 => {
                let len = (1 + value as u64 % 4) * 4096;
                events.push(Event::Mmap {
                    addr: Vaddr(next),
                    len,
                    prot: RW,
                    flags: 0,
                });
                mapped.push_back((next, len));
                next += len + 4096;
            }
            1 if mapped.len() > 1 => {
                let (addr, len) = mapped.pop_front().unwrap();
                events.push(Event::Munmap {
                    addr: Vaddr(addr),
                    len,
                });
            }
            _ if !mapped.is_empty() => {
                let (addr, len) = mapped[value as usize % mapped.len()];
                let mut ev = load(addr + (value as u64 * 8) % len, 8);
                if let Event::Access { dep, .. } = &mut ev {
                    *dep = if value % 4 == 0 {
                        (value as u64 % 7).min(refs) as u16
                    } else {
                        0
                    };
                }
                events.push(ev);
                refs += 1;
            }
            _ => {}
        }
    }
    (events, refs)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Whatever the cores' clocks, a thread never runs a reference outside the regions its
    /// trace had mapped at that point (the oracle and the OS model would stop the run), every
    /// reference runs once, and the run does not depend on how it is stepped.
    #[test]
    fn a_multi_threaded_run_keeps_the_traces_mappings_in_order_on_any_number_of_cores(
        ops in proptest::collection::vec((0u8..5, 0u8..12, proptest::prelude::any::<u32>()), 1..300),
        cores in 1u32..5,
        step in 1u64..200,
    ) {
        let (events, refs) = threaded_trace(&ops);
        let mut cfg = small("radix");
        cfg.sim.cores = cores;
        cfg.timing.model = crate::timing::TimingModel::Ooo;
        let whole = run(&cfg, Box::new(Events(events.clone().into_iter()))).unwrap();
        proptest::prop_assert_eq!(whole["refs"].as_u64().unwrap(), refs);
        proptest::prop_assert_eq!(&whole["oracle"]["mismatches"], 0);
        let mut sim = Simulation::new(&cfg, Box::new(Events(events.into_iter()))).unwrap();
        while !sim.step(step).unwrap() {}
        proptest::prop_assert_eq!(without_wall_clock(whole), without_wall_clock(sim.record()));
    }
}
