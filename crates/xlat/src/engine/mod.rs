//! The simulation loop: event -> OS model -> MMU (TLBs, design walk) -> oracle -> memory ->
//! timing -> stats.
//!
//! Contract: given the same config and event stream, a run produces bit-identical statistics
//! (wall-clock fields aside), however it is chunked by [`Simulation::step`]. Any disagreement
//! between a design's translation and the OS model's mapping aborts the run with
//! [`SimError::Oracle`]: a mismatch is a bug, never a statistic.
//!
//! # What the engine owns
//! The per-reference loop (one reference through the TLBs, the design's walk, the oracle, the
//! caches and DRAM, the core model), the OS events of a trace (system calls, faults, daemons)
//! and the mapping changes they make, the scheduling of a multi-core or multi-process run, the
//! result record's engine sections and the assembly of the record, and the public entry points
//! [`Simulation`], [`run`] and [`run_workload`].
//!
//! It may call: `addr`, `config`, `designs`, `mem`, `mmu`, `os`, `simd`, `stats`, `timing`,
//! `trace`, `virt`, `warmup`, `workloads` (and the crate's `VERSION`). None of them calls the
//! engine.
//!
//! # Parts
//! From the bottom up; a part names items only of the parts before it (and its own children):
//! - `error`: [`SimError`].
//! - `counters`: the loop's per-core counters and the record sections written from them.
//! - `stream`: how a process's events are read (the chunk, the host-memory prefetch).
//! - `placement`: the design's placement hook at a fault; a broken contiguous group's TLB
//!   invalidation.
//! - `machine`: the parked cores and processes of a multi-core or multi-process run, their
//!   scheduling state, [`INTERLEAVE_REFS`].
//! - `sim`: `Sim<D>`, the loop monomorphized per design: `sim/mod.rs` (its state, construction,
//!   event loop), `sim/translate.rs` (one reference), `sim/os_events.rs` (OS events and mapping
//!   changes), `sim/sched.rs` (the turns of cores and processes), `sim/record.rs` (the record).
//! - `builder`: [`Simulation`] (construction, stepping, warm-up), [`run`], [`run_workload`].
//!
//! This file only declares the parts and re-exports the public paths.

mod builder;
mod counters;
mod error;
mod machine;
mod placement;
mod sim;
mod stream;

pub use builder::{run, run_workload, Simulation};
pub use error::SimError;
pub use machine::INTERLEAVE_REFS;
// The designs' tests break contiguous groups as the engine does.
#[cfg(test)]
pub(crate) use placement::invalidate_group_members;

#[cfg(test)]
mod tests {
    use super::counters::{walk_hist_bucket, WALK_HIST_BUCKETS};
    use super::sim::{MakeSim, Runner, Sim};
    use super::*;
    use crate::addr::{Asid, Mapping, Vaddr, Vpn};
    use crate::config::Config;
    use crate::designs::radix::{Radix, RadixConfig};
    use crate::designs::{Design, DesignVisitor, PtFootprint, WalkResult};
    use crate::mem::MemSystem;
    use crate::os::{Os, OsError, PhysMem, ThpPolicy};
    use crate::stats::{ratio, Stats};
    use crate::trace::{AccessKind, Event, EventSource, SourceError};
    use serde_json::Value;

    fn small(design: &str) -> Config {
        let o = |k: &str, v: &str| (k.to_string(), v.to_string());
        Config::resolve(
            None,
            &[
                o("sim.design", design),
                o("sim.refs", "20000"),
                o("workload.footprint", "16MiB"),
                o("os.phys_mem_bytes", "1GiB"),
            ],
        )
        .unwrap()
    }

    fn without_wall_clock(mut v: Value) -> Value {
        v.as_object_mut().unwrap().remove("sim");
        v
    }

    #[test]
    fn the_same_seed_gives_identical_records_however_the_run_is_chunked() {
        for design in ["radix", "ideal", "perfect_tlb", "ecpt", "mehpt"] {
            let cfg = small(design);
            let whole = run_workload(&cfg).unwrap();
            let source =
                crate::workloads::create(&cfg.workload, cfg.sim.refs, cfg.sim.seed).unwrap();
            let mut sim = Simulation::new(&cfg, source).unwrap();
            while !sim.step(777).unwrap() {}
            assert_eq!(
                without_wall_clock(whole),
                without_wall_clock(sim.record()),
                "{design}"
            );
        }
    }

    #[test]
    fn every_design_passes_the_oracle_under_every_policy_with_khugepaged() {
        let o = |k: &str, v: &str| (k.to_string(), v.to_string());
        for info in crate::designs::REGISTRY {
            if info.name == "restrictive_only" {
                // 4 KiB pages only: khugepaged is refused up front with a clear error.
                continue;
            }
            for policy in ["thp", "mthp", "reservation", "eager"] {
                for workload in ["gups", "kv", "bfs"] {
                    let cfg = Config::resolve(
                        None,
                        &[
                            o("sim.design", info.name),
                            o("sim.refs", "30000"),
                            o("workload.name", workload),
                            o("workload.footprint", "24MiB"),
                            o("os.phys_mem_bytes", "1GiB"),
                            o("os.thp", "always"),
                            o("os.policy", policy),
                            o("os.reservation.promotion_threshold", "0.5"),
                            o("os.khugepaged.enabled", "true"),
                            o("os.khugepaged.interval_cycles", "20000"),
                            o("os.khugepaged.max_ptes_none", "256"),
                            o(
                                "tlb.l1_organization",
                                if workload == "kv" {
                                    "any_size"
                                } else {
                                    "split"
                                },
                            ),
                        ],
                    )
                    .unwrap();
                    let r = run_workload(&cfg)
                        .unwrap_or_else(|e| panic!("{} {policy} {workload}: {e}", info.name));
                    assert_eq!(r["oracle"]["mismatches"], 0);
                    assert_eq!(r["os"]["policy"], policy);
                    assert!(r["os"]["khugepaged"]["wakeups"].as_u64().unwrap() > 0);
                }
            }
        }
    }

    #[test]
    fn every_design_passes_the_oracle_when_memory_is_overcommitted_to_swap() {
        let o = |k: &str, v: &str| (k.to_string(), v.to_string());
        for info in crate::designs::REGISTRY {
            for thp in ["never", "always"] {
                let cfg = Config::resolve(
                    None,
                    &[
                        o("sim.design", info.name),
                        o("sim.refs", "60000"),
                        o("workload.name", "gups"),
                        o("workload.footprint", "96MiB"),
                        o("os.phys_mem_bytes", "64MiB"),
                        o("os.thp", thp),
                        o("os.swap.bytes", "256MiB"),
                    ],
                )
                .unwrap();
                let r =
                    run_workload(&cfg).unwrap_or_else(|e| panic!("{} thp {thp}: {e}", info.name));
                let swap = &r["os"]["swap"];
                assert!(swap["swap_outs"].as_u64().unwrap() > 0, "{}", info.name);
                if info.name != "perfect_tlb" {
                    assert!(swap["major_faults"].as_u64().unwrap() > 0, "{}", info.name);
                }
            }
        }
    }

    #[test]
    fn fill_fragmented_memory_with_kcompactd_keeps_the_oracle() {
        let o = |k: &str, v: &str| (k.to_string(), v.to_string());
        for design in ["ecpt", "mehpt", "radix"] {
            let cfg = Config::resolve(
                None,
                &[
                    o("sim.design", design),
                    o("sim.refs", "200000"),
                    o("workload.name", "gups"),
                    o("workload.footprint", "1GiB"),
                    o("os.phys_mem_bytes", "8GiB"),
                    o("os.fmfi_target", "0.7"),
                    o("os.fragmenter.mode", "fill"),
                    o("os.kcompactd.enabled", "true"),
                    o("os.kcompactd.interval_cycles", "100000"),
                ],
            )
            .unwrap();
            let r = run_workload(&cfg).unwrap_or_else(|e| panic!("{design}: {e}"));
            assert_eq!(r["oracle"]["mismatches"], 0);
            assert!(r["os"]["kcompactd_wakeups"].as_u64().unwrap() > 0);
        }
    }

    #[test]
    fn a_run_stops_after_exactly_the_configured_references() {
        let r = run_workload(&small("radix")).unwrap();
        assert_eq!(r["refs"], 20000);
        assert_eq!(r["ended_by"], "refs_limit");
        assert!(r["oracle"]["checked"].as_u64().unwrap() >= 20000);
    }

    /// A design that returns the right page but the wrong frame for VPNs with bit 3 set.
    struct Broken(Radix);

    impl Design for Broken {
        type Config = RadixConfig;
        fn new(cfg: &RadixConfig, phys: &mut PhysMem) -> Result<Self, OsError> {
            Ok(Broken(Radix::new(cfg, phys)?))
        }
        fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
            self.0.map(phys, asid, m)
        }
        fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
            self.0.unmap(phys, asid, m)
        }
        fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
            let mut w = self.0.walk(asid, vpn, mem);
            if let Some(m) = w.mapping.as_mut() {
                if vpn.0 & 8 != 0 {
                    m.pfn.0 += 1;
                }
            }
            w
        }
        fn footprint(&self) -> PtFootprint {
            self.0.footprint()
        }
        fn stats(&self, _out: &mut Stats) {}
    }

    #[test]
    fn the_oracle_aborts_a_run_whose_design_returns_a_wrong_frame() {
        let cfg = small("radix");
        let mut os = Os::new(&cfg.os, 1).unwrap();
        let design = Broken::new(&cfg.designs.radix, &mut os.phys).unwrap();
        let source = crate::workloads::create(&cfg.workload, cfg.sim.refs, cfg.sim.seed).unwrap();
        let mut runner = MakeSim {
            cfg,
            source,
            more: Vec::new(),
            nested: None,
            timing_thread: false,
        }
        .visit(design)(os)
        .unwrap();
        let err = runner.step(u64::MAX).unwrap_err();
        match err {
            SimError::Oracle(msg) => assert!(msg.contains("the OS model maps"), "{msg}"),
            other => panic!("expected an oracle error, got {other}"),
        }
    }

    /// Radix plus one range translation per page it maps (as RMM's range table would give),
    /// optionally off by one frame (a broken design the oracle must catch).
    struct RangedRadix {
        radix: Radix,
        pages: std::collections::BTreeMap<u64, Mapping>,
        frame_error: u64,
    }

    impl Design for RangedRadix {
        type Config = RadixConfig;
        fn new(cfg: &RadixConfig, phys: &mut PhysMem) -> Result<Self, OsError> {
            Ok(RangedRadix {
                radix: Radix::new(cfg, phys)?,
                pages: Default::default(),
                frame_error: 0,
            })
        }
        fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
            self.pages.insert(m.vpn.0, m);
            self.radix.map(phys, asid, m)
        }
        fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
            self.pages.remove(&m.vpn.0);
            self.radix.unmap(phys, asid, m)
        }
        fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
            self.radix.walk(asid, vpn, mem)
        }
        fn range(&self, _asid: Asid, vpn: Vpn) -> Option<crate::mmu::VaRange> {
            let (_, m) = self.pages.range(..=vpn.0).next_back()?;
            m.contains(vpn).then(|| crate::mmu::VaRange {
                vpn_start: m.vpn,
                vpn_end: Vpn(m.vpn.0 + m.size.base_pages()),
                pfn_start: crate::addr::Pfn(m.pfn.0 + self.frame_error),
                writable: m.writable,
            })
        }
        fn footprint(&self) -> PtFootprint {
            self.radix.footprint()
        }
        fn stats(&self, _out: &mut Stats) {}
    }

    #[test]
    fn range_tlb_hits_are_checked_by_the_oracle_frame_by_frame() {
        let o = |k: &str, v: &str| (k.to_string(), v.to_string());
        // 2 MiB pages, no L2 and no 2 MiB L1: every L1 miss is served by the range TLB, with
        // 4 KiB translations inside 2 MiB OS pages.
        let cfg = Config::resolve(
            None,
            &[
                o("sim.refs", "20000"),
                o("workload.footprint", "16MiB"),
                o("os.phys_mem_bytes", "1GiB"),
                o("os.thp", "always"),
                o("tlb.l2.entries", "0"),
                o("tlb.l1_2m.entries", "0"),
                o("tlb.range.entries", "16"),
            ],
        )
        .unwrap();
        for frame_error in [0, 1] {
            let mut os = Os::new(&cfg.os, 1).unwrap();
            let mut design = RangedRadix::new(&cfg.designs.radix, &mut os.phys).unwrap();
            design.frame_error = frame_error;
            let source =
                crate::workloads::create(&cfg.workload, cfg.sim.refs, cfg.sim.seed).unwrap();
            let mut runner = MakeSim {
                cfg: cfg.clone(),
                source,
                more: Vec::new(),
                nested: None,
                timing_thread: false,
            }
            .visit(design)(os)
            .unwrap();
            let r = runner.step(u64::MAX);
            if frame_error == 0 {
                r.unwrap();
                let rec = runner.record(0.0);
                let hits = rec["tlb"]["range_hits"].as_u64().unwrap();
                assert!(hits > 1000, "{hits}");
                assert!(rec["walk"]["count"].as_u64().unwrap() < 100);
            } else {
                match r.unwrap_err() {
                    SimError::Oracle(msg) => assert!(msg.contains("range TLB entry"), "{msg}"),
                    other => panic!("expected an oracle error, got {other}"),
                }
            }
        }
    }

    /// Events from a list (the engine's input without a trace file).
    struct Events(std::vec::IntoIter<Event>);

    impl EventSource for Events {
        fn fill(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, SourceError> {
            let before = out.len();
            out.extend(self.0.by_ref().take(max));
            Ok(out.len() - before)
        }
        fn name(&self) -> String {
            "events".into()
        }
    }

    fn run_events(design: &str, events: Vec<Event>) -> Result<Value, SimError> {
        run(&small(design), Box::new(Events(events.into_iter())))
    }

    fn load(va: u64, size: u8) -> Event {
        Event::Access {
            kind: AccessKind::Load,
            va: Vaddr(va),
            size,
            instrs: 1,
            dep: 0,
        }
    }

    const RW: u32 = crate::trace::prot::READ | crate::trace::prot::WRITE;

    #[test]
    fn an_instruction_fetch_after_execute_permission_is_removed_is_a_protection_violation() {
        use crate::trace::prot;
        let base = 0x40_0000u64;
        let fetch = Event::Access {
            kind: AccessKind::IFetch,
            va: Vaddr(base + 64),
            size: 4,
            instrs: 1,
            dep: 0,
        };
        let events = vec![
            Event::Mmap {
                addr: Vaddr(base),
                len: 4096,
                prot: prot::READ | prot::EXEC,
                flags: 0,
            },
            fetch,
            fetch,
            Event::Mprotect {
                addr: Vaddr(base),
                len: 4096,
                prot: prot::READ,
            },
            fetch,
        ];
        for design in ["radix", "ecpt"] {
            match run_events(design, events.clone()) {
                Err(SimError::Os { event: 4, error }) => {
                    assert!(
                        error.0.contains("protection violation"),
                        "{design}: {error}"
                    )
                }
                other => {
                    panic!("{design}: expected a protection violation at event 4, got {other:?}")
                }
            }
        }
        // Without the downgrade the same fetches run, from the ITLB.
        let r = run_events("radix", events[..3].to_vec()).unwrap();
        assert_eq!(r["tlb"]["itlb_misses"], 1);
    }

    #[test]
    fn an_access_crossing_into_an_unmapped_page_faults_like_hardware() {
        // One mapped page, then a 64-byte load whose last 8 bytes lie in the next (unmapped)
        // page: hardware translates both pages and faults on the second.
        let base = 0x7000_0000_0000u64;
        let events = vec![
            Event::Mmap {
                addr: Vaddr(base),
                len: 4096,
                prot: RW,
                flags: 0,
            },
            load(base + 4096 - 56, 64),
        ];
        for design in ["radix", "perfect_tlb", "ecpt"] {
            match run_events(design, events.clone()) {
                Err(SimError::Os { event: 1, .. }) => {}
                other => panic!("{design}: expected an OS error at event 1, got {other:?}"),
            }
        }
    }

    #[test]
    fn the_walk_latency_histogram_counts_every_tlb_miss_walk_in_its_log2_bucket() {
        assert_eq!(
            [0, 1, 2, 3, 4, 7, 8, 100, 40_000, u32::MAX].map(walk_hist_bucket),
            [0, 0, 1, 1, 2, 2, 3, 6, 15, 15]
        );
        for design in ["radix", "ecpt"] {
            let r = run_workload(&small(design)).unwrap();
            let hist = r["walk"]["latency_hist"].as_object().unwrap();
            assert_eq!(hist.len(), WALK_HIST_BUCKETS);
            let total: u64 = hist.values().map(|v| v.as_u64().unwrap()).sum();
            assert_eq!(total, r["walk"]["count"].as_u64().unwrap(), "{design}");
            // The buckets' weighted lower bounds cannot exceed the walks' total cycles.
            let floor: u64 = hist
                .iter()
                .map(|(low, n)| low.parse::<u64>().unwrap() * n.as_u64().unwrap())
                .sum();
            assert!(floor <= r["walk"]["cycles"].as_u64().unwrap(), "{design}");
        }
    }

    #[test]
    fn the_setup_time_is_recorded_only_when_the_caller_measured_it() {
        let cfg = small("radix");
        let build = || {
            let source = crate::workloads::create(&cfg.workload, cfg.sim.refs, cfg.sim.seed);
            let mut sim = Simulation::new(&cfg, source.unwrap()).unwrap();
            while !sim.step(1 << 20).unwrap() {}
            sim
        };
        assert!(build().record()["sim"].get("setup_seconds").is_none());
        let mut sim = build();
        sim.set_setup_seconds(1.5);
        assert_eq!(sim.record()["sim"]["setup_seconds"], 1.5);
    }

    #[test]
    fn walks_by_page_size_and_faulting_walks_add_up_to_the_tlb_miss_walks() {
        for (design, thp) in [("radix", "never"), ("radix", "always"), ("ecpt", "always")] {
            let mut cfg = small(design);
            cfg.os.thp = if thp == "always" {
                ThpPolicy::Always
            } else {
                ThpPolicy::Never
            };
            // 64 MiB of 2 MiB pages overflow an 8-entry L2 TLB, so walks find 2 MiB pages.
            cfg.workload.footprint = 64 << 20;
            cfg.tlb.l1_2m.entries = 4;
            cfg.tlb.l1_2m.ways = 4;
            cfg.tlb.l2.entries = 8;
            cfg.tlb.l2.ways = 8;
            let r = run_workload(&cfg).unwrap();
            let by = r["walk"]["by_page_size"].as_object().unwrap();
            let found: u64 = by.values().map(|v| v.as_u64().unwrap()).sum();
            let walk = &r["walk"];
            assert_eq!(
                found + walk["fault_walks"].as_u64().unwrap(),
                walk["count"].as_u64().unwrap(),
                "{design} thp={thp}"
            );
            // Without THP every page is 4 KiB.
            let sizes: Vec<&str> = by.keys().map(String::as_str).collect();
            if thp == "never" {
                assert_eq!(sizes, ["4k"], "{design}");
            } else {
                assert!(sizes.contains(&"2m"), "{design}: {sizes:?}");
            }
        }
    }

    #[test]
    fn page_walk_reference_cycles_by_serving_level_are_at_least_that_levels_hit_latency() {
        let r = run_workload(&small("radix")).unwrap();
        let cache = &r["cache"];
        let cfg = small("radix");
        let floors = [
            ("l1", cfg.mem.l1d.latency_cycles),
            ("l2", cfg.mem.l2.latency_cycles),
            ("llc", cfg.mem.llc.latency_cycles),
        ];
        let mut total_refs = 0;
        for (level, latency) in floors {
            let n = cache[format!("pt_served_{level}")].as_u64().unwrap();
            let cycles = cache[format!("pt_served_cycles_{level}")].as_u64().unwrap();
            assert!(
                cycles >= n * latency as u64,
                "{level}: {cycles} cycles for {n} refs"
            );
            total_refs += n;
        }
        let dram = cache["pt_served_dram"].as_u64().unwrap();
        assert!(dram > 0 && total_refs > 0);
        // A DRAM-served reference costs more than any cache hit.
        assert!(
            cache["pt_served_cycles_dram"].as_u64().unwrap()
                > dram * cfg.mem.llc.latency_cycles as u64
        );
    }

    #[test]
    fn an_address_beyond_the_paging_modes_width_is_an_input_error_naming_the_event() {
        // X and X + 2^48 would alias in a 4-level table: the OS model must refuse the second
        // mapping (before, it was accepted and the run ended in an oracle mismatch).
        let x = 0x1000_0000u64;
        let map = |addr| Event::Mmap {
            addr: Vaddr(addr),
            len: 4096,
            prot: RW,
            flags: 0,
        };
        let events = vec![
            map(x),
            load(x, 8),
            map(x + (1 << 48)),
            load(x + (1 << 48), 8),
        ];
        for design in [
            "radix",
            "ideal",
            "perfect_tlb",
            "ecpt",
            "mehpt",
            "fpt",
            "lvm",
        ] {
            match run_events(design, events.clone()) {
                Err(SimError::Os { event: 2, error }) => {
                    assert!(error.0.contains("48-bit"), "{design}: {error}")
                }
                other => panic!("{design}: expected an OS error at event 2, got {other:?}"),
            }
        }
        // With 5-level paging the same trace runs (except on fpt, a 4-level design).
        let mut cfg = small("radix");
        cfg.designs.radix.levels = 5;
        cfg.designs.ideal.levels = 5;
        cfg.designs.perfect_tlb.levels = 5;
        for design in ["radix", "ideal", "perfect_tlb", "ecpt", "mehpt", "lvm"] {
            cfg.sim.design = design.into();
            let r = run(&cfg, Box::new(Events(events.clone().into_iter())))
                .unwrap_or_else(|e| panic!("{design}: {e}"));
            assert_eq!(r["refs"], 2, "{design}");
        }
        cfg.sim.design = "fpt".into();
        assert!(matches!(
            run(&cfg, Box::new(Events(events.into_iter()))),
            Err(SimError::Os { event: 2, .. })
        ));
    }

    #[test]
    fn every_fault_is_in_the_fault_latency_histogram_with_its_zeroing_cost() {
        let mut cfg = small("radix");
        cfg.os.thp = crate::os::ThpPolicy::Always;
        let r = run_workload(&cfg).unwrap();
        let f = &r["os"]["fault_latency"];
        let faults = r["os"]["page_faults"].as_u64().unwrap();
        assert!(faults > 0);
        assert_eq!(f["count"].as_u64().unwrap(), faults);
        let in_buckets: u64 = f["hist"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(in_buckets, faults);
        // A 2 MiB fault zeroes 2 MiB at 0.5 cycles per byte on top of the fixed fault cost.
        assert!(r["os"]["faults_2m"].as_u64().unwrap() > 0);
        let fixed = cfg.timing.page_fault_cycles;
        assert!(f["max_cycles"].as_u64().unwrap() >= fixed + (1 << 20));
        assert!(f["p50_cycles"].as_u64().unwrap() >= fixed);
        assert!(f["cycles"].as_u64().unwrap() >= faults * fixed);
    }

    #[test]
    fn a_hashed_designs_table_allocations_count_once_in_fault_latency() {
        // 4 KiB pages, no daemons: every OS cycle after the design's first tables is a fault's
        // (data-page zeroing and table growth), so the faults' work is physical memory's whole
        // work less the tables allocated before the first fault, and never more.
        for design in ["ecpt", "mehpt"] {
            let mut cfg = small(design);
            cfg.sim.refs = 60_000;
            let r = run_workload(&cfg).unwrap();
            let f = &r["os"]["fault_latency"];
            let faults = f["count"].as_u64().unwrap();
            let work = f["cycles"].as_u64().unwrap() - faults * cfg.timing.page_fault_cycles;
            let phys_work = r["os"]["compaction"]["alloc_work_cycles"].as_u64().unwrap();
            let tables = r[design]["alloc_cycles"].as_u64().unwrap();
            // The design's other OS cycles (ME-HPT's L2P updates on re-insertion).
            let os = r["timing"]["os_cycles"].as_f64().unwrap() as u64;
            let other = os - faults * cfg.timing.page_fault_cycles - tables;
            assert!(tables > 0, "{design}");
            assert!(
                work <= phys_work + other,
                "{design}: {work} > {phys_work} + {other}"
            );
            assert!(work + tables >= phys_work + other, "{design}");
        }
    }

    #[test]
    fn an_access_crossing_two_mapped_pages_translates_both() {
        let base = 0x7000_0000_0000u64;
        let events = vec![
            Event::Mmap {
                addr: Vaddr(base),
                len: 2 * 4096,
                prot: RW,
                flags: 0,
            },
            load(base + 4096 - 8, 16),
        ];
        let r = run_events("radix", events).unwrap();
        assert_eq!(r["refs"], 1);
        assert_eq!(r["page_crossing_refs"], 1);
        // Both pages were faulted in and walked after a TLB miss each.
        assert_eq!(r["os"]["page_faults"], 2);
        assert_eq!(r["walk"]["count"], 2);
    }

    #[test]
    fn hashed_designs_count_post_fault_walks_apart_from_their_per_walk_figures() {
        for design in ["ecpt", "mehpt"] {
            let r = run_workload(&small(design)).unwrap();
            let (walk, own) = (&r["walk"], &r[design]);
            assert_eq!(own["walks"], walk["count"], "{design}");
            assert_eq!(
                own["post_fault_walks"], walk["post_fault_count"],
                "{design}"
            );
            assert!(walk["post_fault_count"].as_u64().unwrap() > 0, "{design}");
        }
    }

    #[test]
    fn walk_counts_and_averages_cover_tlb_miss_walks_and_post_fault_walks_are_apart() {
        let r = run_workload(&small("radix")).unwrap();
        let walk = &r["walk"];
        let tlb = &r["tlb"];
        let misses = tlb["l2_misses"].as_u64().unwrap() + tlb["itlb_l2_misses"].as_u64().unwrap();
        assert_eq!(walk["count"].as_u64().unwrap(), misses);
        assert!(walk["fault_walks"].as_u64().unwrap() > 0);
        // Every demand fault is followed by one repeated walk.
        assert_eq!(walk["post_fault_count"], walk["fault_walks"]);
        let avg = walk["avg_mem_accesses"].as_f64().unwrap();
        let want = walk["mem_accesses"].as_f64().unwrap() / misses as f64;
        assert_eq!(avg, want);
        // Every TLB-miss walk probes the PWCs except the very first, made before the process
        // has a page table.
        assert_eq!(r["radix"]["pwc_lookups"].as_u64().unwrap(), misses - 1);
        assert_eq!(
            r["radix"]["pwc_post_fault_lookups"],
            walk["post_fault_count"]
        );
    }
    fn multi(design: &str, workloads: &str, extra: &[(&str, &str)]) -> Config {
        let o = |k: &str, v: &str| (k.to_string(), v.to_string());
        let mut set = vec![
            o("sim.design", design),
            o("sim.refs", "6000"),
            o("workload.name", workloads),
            o("workload.footprint", "4MiB"),
            o("os.phys_mem_bytes", "1GiB"),
        ];
        set.extend(extra.iter().map(|(k, v)| o(k, v)));
        Config::resolve(None, &set).unwrap()
    }

    fn sources(cfg: &Config) -> Vec<Box<dyn EventSource>> {
        crate::workloads::create_all(&cfg.workload, cfg.sim.simulated_refs(), cfg.sim.seed).unwrap()
    }

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
                let r = run_workload(&cfg)
                    .unwrap_or_else(|e| panic!("{} flush {flush}: {e}", info.name));
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
            let mut sim =
                Simulation::new(&cfg, Box::new(Events(events.clone().into_iter()))).unwrap();
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
            let misses =
                tlb["l2_misses"].as_u64().unwrap() + tlb["itlb_l2_misses"].as_u64().unwrap();
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
            let want = r["instructions"].as_u64().unwrap() as f64
                / r["timing"]["cycles"].as_f64().unwrap();
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
            let misses = c["tlb"]["l2_misses"].as_u64().unwrap()
                + c["tlb"]["itlb_l2_misses"].as_u64().unwrap();
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
            let (m, whole) =
                crate::warmup::measured(&r, &zeroed(&r), cfg.timing.translation_overlap);
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
}
