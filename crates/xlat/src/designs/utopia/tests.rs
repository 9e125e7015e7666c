use super::restseg::{set_index, RestSegHash};
use super::*;
use crate::mem::{MemConfig, MemSystem};
use crate::os::pagemap::PageMap;
use proptest::prelude::*;

fn small_cfg() -> UtopiaConfig {
    UtopiaConfig {
        restsegs: vec![
            RestSegConfig {
                bytes: 1 << 20, // 256 slots: 64 sets of 4 ways
                page_size: PageSize::Size4K,
                ways: 4,
            },
            RestSegConfig {
                bytes: 16 << 20, // 8 slots: 2 sets of 4 ways
                page_size: PageSize::Size2M,
                ways: 4,
            },
        ],
        ..UtopiaConfig::default()
    }
}

fn setup(cfg: &UtopiaConfig) -> (Utopia, PhysMem, MemSystem) {
    let mut phys = PhysMem::new(4 << 30);
    let u = Utopia::new(cfg, &mut phys).unwrap();
    (u, phys, MemSystem::new(&MemConfig::default()))
}

/// What the OS model does at a fault: ask the hook, else take a block from the buddy allocator.
fn fault(u: &mut Utopia, phys: &mut PhysMem, asid: Asid, vpn: Vpn, size: PageSize) -> Mapping {
    let pages = PageMap::default();
    let req = PlaceRequest {
        asid,
        vpn,
        size,
        pages: &pages,
    };
    let pfn = u
        .place(phys, &req)
        .unwrap_or_else(|| phys.alloc(size.order(), FrameUse::Data).unwrap());
    let m = Mapping {
        vpn,
        pfn,
        size,
        writable: true,
    };
    u.map(phys, asid, m).unwrap();
    m
}

#[test]
fn a_faulting_page_is_placed_in_its_set_and_translated_by_the_restseg_walk() {
    let (mut u, mut phys, mut mem) = setup(&small_cfg());
    let m = fault(&mut u, &mut phys, 0, Vpn(0x1_2345), PageSize::Size4K);
    let seg = &u.restsegs()[0];
    let set = 0x1_2345 % 64;
    assert_eq!(m.pfn, Pfn(seg.base.0 + set * 4));
    let w = u.walk(0, Vpn(0x1_2345), &mut mem);
    assert_eq!(w.mapping, Some(m));
    // Cold TAR/SF caches: one TAR line and one SF line, fetched in parallel; no radix walk.
    assert_eq!(w.mem_accesses, 2);
    assert_eq!(u.c.rsw_hits, 1);
    assert_eq!(u.c.flex_walks, 0);
}

#[test]
fn an_rsw_that_hits_the_tar_and_sf_caches_costs_the_2_cycle_cache_latency() {
    let cfg = UtopiaConfig {
        rsw_parallel_with_l2_tlb: false,
        ..UtopiaConfig::default()
    };
    let mut phys = PhysMem::new(8 << 30);
    let mut u = Utopia::new(&cfg, &mut phys).unwrap();
    let mut mem = MemSystem::new(&MemConfig::default());
    let m = fault(&mut u, &mut phys, 0, Vpn(0x4_0000), PageSize::Size4K);
    u.walk(0, m.vpn, &mut mem); // fills the TAR and SF caches
    let w = u.walk(0, m.vpn, &mut mem);
    assert_eq!(w.mapping, Some(m));
    assert_eq!((w.latency_cycles, w.mem_accesses), (2, 0));
    // Started with the L2 TLB lookup (12 cycles), it is hidden behind it.
    u.parallel = true;
    u.set_l2_tlb_latency(12);
    let w = u.walk(0, m.vpn, &mut mem);
    assert_eq!((w.latency_cycles, w.mem_accesses), (0, 0));
}

#[test]
fn an_empty_set_in_the_cached_sf_skips_the_tar_and_the_flexseg_walk_follows() {
    let mut cfg = small_cfg();
    cfg.rsw_parallel_with_l2_tlb = false;
    let (mut u, mut phys, mut mem) = setup(&cfg);
    // Fill a set's SF line (64 sets x 3 bits share one line) with one placed page.
    let placed = fault(&mut u, &mut phys, 0, Vpn(64 * 7), PageSize::Size4K);
    u.walk(0, placed.vpn, &mut mem);
    // A page of another set that the OS put in the FlexSeg (no placement asked).
    u.place_on_fault = false;
    let flex = fault(&mut u, &mut phys, 0, Vpn(64 * 7 + 1), PageSize::Size4K);
    let skips = u.c.sf_empty_skips;
    let w = u.walk(0, flex.vpn, &mut mem);
    assert_eq!(w.mapping, Some(flex));
    assert_eq!(u.c.sf_empty_skips, skips + 1);
    // 2 cycles of RSW (SF cache hit, set empty), then the 4-level radix walk.
    assert_eq!(w.mem_accesses, 4);
    assert_eq!(u.c.flex_walks, 1);
}

#[test]
fn a_full_set_sends_the_next_page_to_the_flexseg() {
    let (mut u, mut phys, mut mem) = setup(&small_cfg());
    let ms: Vec<Mapping> = (0..5)
        .map(|i| fault(&mut u, &mut phys, 0, Vpn(3 + 64 * i), PageSize::Size4K))
        .collect();
    assert_eq!(u.c.placed, 4);
    assert_eq!(u.c.place_set_full, 1);
    assert!(u.restsegs()[0].slot_of_pfn(ms[4].pfn).is_none());
    for m in &ms {
        assert_eq!(u.walk(0, m.vpn, &mut mem).mapping, Some(*m));
    }
    // Unmapping a RestSeg page frees its slot for the next fault and reserves its frames.
    phys.free(ms[1].pfn, 0, FrameUse::Data);
    u.unmap(&mut phys, 0, ms[1]);
    assert!(u.restsegs()[0].slots[(3 * 4 + 1) as usize].reserved);
    let again = fault(&mut u, &mut phys, 0, Vpn(3 + 64 * 9), PageSize::Size4K);
    assert_eq!(again.pfn, ms[1].pfn);
}

#[test]
fn tar_and_sf_are_allocated_per_process_and_freed_with_its_last_restseg_page() {
    // 8 GiB of memory: the default 512 MiB RestSegs are not shrunk.
    let mut phys = PhysMem::new(8 << 30);
    let mut u = Utopia::new(&UtopiaConfig::default(), &mut phys).unwrap();
    let pt_before = phys.bytes_in_use(FrameUse::PageTable);
    let a = fault(&mut u, &mut phys, 0, Vpn(0x10), PageSize::Size4K);
    let b = fault(&mut u, &mut phys, 1, Vpn(0x10), PageSize::Size4K);
    // Two processes share a set, each with its own TAR (528 KiB) and SF (5 KiB -> 2 frames).
    assert_eq!(a.pfn.0 + 1, b.pfn.0);
    let per_process = (528 << 10) + 2 * 4096;
    assert_eq!(
        phys.bytes_in_use(FrameUse::PageTable) - pt_before,
        2 * per_process
    );
    for (asid, m) in [(0, a), (1, b)] {
        phys.free(m.pfn, 0, FrameUse::Data);
        u.unmap(&mut phys, asid, m);
    }
    assert_eq!(phys.bytes_in_use(FrameUse::PageTable), pt_before);
    assert_eq!(u.footprint().bytes, 0);
}

#[test]
fn restsegs_are_reserved_at_boot_and_shrunk_to_the_memory_share() {
    let mut phys = PhysMem::new(1 << 30);
    let u = Utopia::new(&UtopiaConfig::default(), &mut phys).unwrap();
    // 1 GiB of memory: each RestSeg at most 1/16 of it.
    assert_eq!(u.restsegs().len(), 2);
    assert!(u.restsegs().iter().all(|s| s.frames() == 16384));
    assert_eq!(phys.bytes_in_use(FrameUse::Reserved), 128 << 20);
    let mut phys = PhysMem::new(64 << 20);
    let u = Utopia::new(&UtopiaConfig::default(), &mut phys).unwrap();
    // 64 MiB: the 2 MiB RestSeg cannot hold two 16-way sets and is left out.
    assert_eq!(u.restsegs().len(), 1);
}

#[test]
fn the_2_mib_restseg_holds_thp_pages_and_the_rsws_run_in_parallel() {
    let mut cfg = small_cfg();
    cfg.rsw_parallel_with_l2_tlb = false;
    let (mut u, mut phys, mut mem) = setup(&cfg);
    let small = fault(&mut u, &mut phys, 0, Vpn(0x77), PageSize::Size4K);
    let huge = fault(&mut u, &mut phys, 0, Vpn(3 << 9), PageSize::Size2M);
    let seg = &u.restsegs()[1];
    assert_eq!(huge.pfn, seg.slot_pfn(1, 0));
    assert_eq!(u.walk(0, Vpn((3 << 9) + 17), &mut mem).mapping, Some(huge));
    // Both RestSegs are walked for every translation: two TAR + SF fetches when cold.
    let w = u.walk(0, small.vpn, &mut mem);
    assert_eq!(w.mapping, Some(small));
    assert_eq!(u.c.rsw_walks, 2);
}

/// One step of a random RestSeg sequence.
#[derive(Clone, Debug)]
enum Op {
    Fault { asid: Asid, vpn: u64, huge: bool },
    Unmap { nth: usize },
    Walk { nth: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u16..2, 0u64..4096, prop::bool::weighted(0.2))
            .prop_map(|(asid, vpn, huge)| Op::Fault { asid, vpn, huge }),
        2 => any::<usize>().prop_map(|nth| Op::Unmap { nth }),
        3 => any::<usize>().prop_map(|nth| Op::Walk { nth }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn no_two_pages_ever_share_a_restseg_slot_and_every_restseg_translation_is_base_plus_set_way(
        ops in prop::collection::vec(op(), 1..400),
        hash in prop_oneof![
            Just(RestSegHash::Modulo),
            Just(RestSegHash::PrimeDisplacement),
            Just(RestSegHash::Xor),
            Just(RestSegHash::Mersenne),
        ],
    ) {
        let cfg = UtopiaConfig { hash, ..small_cfg() };
        let (mut u, mut phys, mut mem) = setup(&cfg);
        let mut live: Vec<(Asid, Mapping)> = Vec::new();
        for op in ops {
            match op {
                Op::Fault { asid, vpn, huge } => {
                    let size = if huge { PageSize::Size2M } else { PageSize::Size4K };
                    let vpn = if huge { Vpn((vpn % 64) << 9) } else { Vpn(vpn + (1 << 20)) };
                    let overlaps = live.iter().any(|(a, m)| *a == asid
                        && m.vpn.0 < vpn.0 + size.base_pages()
                        && vpn.0 < m.vpn.0 + m.size.base_pages());
                    if !overlaps {
                        live.push((asid, fault(&mut u, &mut phys, asid, vpn, size)));
                    }
                }
                Op::Unmap { nth } if !live.is_empty() => {
                    let (asid, m) = live.swap_remove(nth % live.len());
                    // As the OS model does it: the frames are freed before the design's unmap.
                    phys.free(m.pfn, m.size.order(), FrameUse::Data);
                    u.unmap(&mut phys, asid, m);
                }
                Op::Walk { nth } if !live.is_empty() => {
                    let (asid, m) = live[nth % live.len()];
                    prop_assert_eq!(u.walk(asid, m.vpn, &mut mem).mapping, Some(m));
                }
                _ => {}
            }
            // Invariants over every slot and every live page.
            let mut seen = std::collections::HashSet::new();
            for seg in u.restsegs() {
                for (k, s) in seg.slots.iter().enumerate() {
                    if let Some(o) = s.occupant {
                        prop_assert!(!s.reserved);
                        prop_assert!(seen.insert((o.asid, o.vpn)), "page in two slots");
                        let m = live.iter().find(|(a, m)| *a == o.asid && m.vpn == o.vpn);
                        prop_assert!(m.is_some(), "slot {} holds a page not mapped", k);
                        let (set, way) = (k as u64 / seg.ways as u64, k as u64 % seg.ways as u64);
                        // Independent computation of the set and of the frame.
                        let page_no = o.vpn.0 >> seg.page.order();
                        prop_assert_eq!(set, set_index(hash, page_no, seg.sets));
                        let want = seg.base.0
                            + (set * seg.ways as u64 + way) * seg.page.base_pages();
                        prop_assert_eq!(m.unwrap().1.pfn.0, want);
                    }
                }
            }
            // Distinct live pages never share a frame (RestSeg or not).
            let mut frames = std::collections::HashSet::new();
            for (_, m) in &live {
                prop_assert!(frames.insert(m.pfn));
            }
        }
        for (asid, m) in &live {
            prop_assert_eq!(u.walk(*asid, m.vpn, &mut mem).mapping, Some(*m));
        }
    }
}

/// A run of `workloads` on utopia with small RestSegs (so sets fill up), oracle on.
fn run(workloads: &str, extra: &[(&str, &str)]) -> serde_json::Value {
    let o = |k: &str, v: &str| (k.to_string(), v.to_string());
    let mut set = vec![
        o("sim.design", "utopia"),
        o("sim.refs", "40000"),
        o("workload.name", workloads),
        o("workload.footprint", "64MiB"),
        o("os.phys_mem_bytes", "1GiB"),
        // Placement and evictions happen at faults, in the first-touch phase.
        o("sim.warmup_refs", "0"),
        o(
            "utopia.restsegs",
            r#"[{bytes = 1048576, page_size = "4KiB", ways = 4}, {bytes = 16777216, page_size = "2MiB", ways = 4}]"#,
        ),
    ];
    set.extend(extra.iter().map(|(k, v)| o(k, v)));
    let cfg = crate::config::Config::resolve(None, &set).unwrap();
    crate::engine::run_workload(&cfg).unwrap()
}

fn n(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap()
}

#[test]
fn a_fault_on_a_full_set_evicts_the_srrip_victim_to_the_flexseg_and_takes_its_slot() {
    for thp in ["never", "always"] {
        let r = run("gups", &[("os.thp", thp)]);
        let u = &r["utopia"];
        assert_eq!(r["oracle"]["mismatches"], 0);
        assert!(n(&u["place_set_full"]) > 0, "thp {thp}");
        assert!(n(&u["migrations_eviction"]) > 0, "thp {thp}");
        assert!(n(&u["migrations_fault_fill"]) > 0, "thp {thp}");
        // Evictions and promotions are the OS model's migrations (fault fills copy nothing).
        assert_eq!(r["os"]["migrations"], u["migrations"], "thp {thp}");
        if thp == "never" {
            assert!(n(&u["rsw_hits"]) > 0);
        }
    }
}

#[test]
fn the_restseg_shapes_and_occupancy_after_a_warm_up_are_those_at_the_end_of_the_run() {
    let plain = run("gups", &[("sim.refs", "60000")]);
    let warmed = run(
        "gups",
        &[("sim.refs", "40000"), ("sim.warmup_refs", "20000")],
    );
    for section in ["restsegs", "restseg_layout"] {
        let (p, w) = (&plain["utopia"][section], &warmed["utopia"][section]);
        assert!(n(&p["0"]["bytes"]) > 0);
        assert_eq!(p, w, "{section}");
    }
    assert!(n(&warmed["utopia"]["restsegs"]["0"]["sets"]) > 0);
    assert!(n(&warmed["utopia"]["restsegs"]["0"]["used_slots"]) > 0);
}

#[test]
fn ptw_tracking_migrates_pages_whose_walks_reach_both_thresholds() {
    let r = run(
        "gups",
        &[
            ("utopia.place_on_fault", "false"),
            ("utopia.promote_walks", "2"),
            ("utopia.promote_dram_accesses", "0"),
        ],
    );
    let u = &r["utopia"];
    assert_eq!(r["oracle"]["mismatches"], 0);
    assert_eq!(n(&u["placed"]), 0);
    assert!(n(&u["migrations_promotion"]) > 0);
    assert!(n(&u["rsw_hits"]) > 0);
    // Off, nothing moves and every walk is a FlexSeg walk.
    let r = run(
        "gups",
        &[
            ("utopia.place_on_fault", "false"),
            ("utopia.ptw_tracking", "false"),
        ],
    );
    assert_eq!(r["utopia"]["migrations"], 0);
    assert_eq!(r["utopia"]["rsw_hits"], 0);
    assert_eq!(r["utopia"]["flex_walks"], r["utopia"]["walks"]);
}

#[test]
fn utopia_keeps_the_oracle_on_four_cores_and_under_context_switches_with_full_sets() {
    for thp in ["never", "always"] {
        let r = run(
            "gups,kv,bfs,xsbench",
            &[
                ("sim.cores", "4"),
                ("os.thp", thp),
                ("utopia.promote_walks", "2"),
            ],
        );
        assert_eq!(r["oracle"]["mismatches"], 0);
        assert!(n(&r["utopia"]["migrations_eviction"]) > 0);
        for flush in ["false", "true"] {
            let r = run(
                "gups,kv,bfs",
                &[
                    ("sim.quantum", "20000"),
                    ("sim.flush_tlb_on_switch", flush),
                    ("os.thp", thp),
                    ("utopia.promote_walks", "2"),
                ],
            );
            assert_eq!(r["oracle"]["mismatches"], 0);
            assert!(n(&r["switch"]["count"]) >= 3);
            if thp == "never" {
                // (2 MiB pages all fit the L2 TLB: no walk but the first.)
                assert!(n(&r["utopia"]["rsw_hits"]) > 0);
            }
        }
    }
}

#[test]
fn a_walk_to_a_page_being_migrated_waits_for_the_copy() {
    let (mut u, mut phys, mut mem) = setup(&small_cfg());
    u.set_l2_tlb_latency(12);
    let m = fault(&mut u, &mut phys, 0, Vpn(0x99), PageSize::Size4K);
    u.now = 5_000;
    u.in_flight.push(InFlight {
        asid: 0,
        vpn: m.vpn,
        size: m.size,
        done: 5_800,
    });
    u.walk(0, m.vpn, &mut mem); // warm the TAR/SF caches
    let w = u.walk(0, m.vpn, &mut mem);
    assert_eq!(w.latency_cycles, 800); // the RSW itself is hidden behind the L2 TLB lookup
    assert_eq!(u.c.stalled_walks, 2);
    u.now = 6_000;
    assert_eq!(u.walk(0, m.vpn, &mut mem).latency_cycles, 0);
}

#[test]
fn an_rsw_beside_every_l2_tlb_hit_fills_the_tar_and_sf_caches_and_changes_no_translation() {
    // btree: L1 TLB misses that the L2 TLB answers, in numbers.
    let base = [("sim.refs", "60000"), ("utopia.promote_walks", "31")];
    let off = run("btree", &base);
    let mut with = base.to_vec();
    with.push(("utopia.rsw_beside_l2_tlb_hit", "true"));
    let on = run("btree", &with);
    for r in [&off, &on] {
        assert_eq!(r["oracle"]["mismatches"], 0);
    }
    let l2_hits = n(&on["tlb"]["l2_lookups"]) - n(&on["tlb"]["l2_misses"]);
    assert!(l2_hits > 1000, "{l2_hits} L2 TLB hits");
    // One RSW beside each L2 TLB hit, and only when asked for.
    assert_eq!(n(&on["utopia"]["rsw_beside_l2_tlb_hits"]), l2_hits);
    assert!(off["utopia"].get("rsw_beside_l2_tlb_hits").is_none());
    // Their lookups reach the SF cache; TLB-miss walks are as many as before.
    assert!(n(&on["utopia"]["sf_cache_lookups"]) > n(&off["utopia"]["sf_cache_lookups"]));
    assert_eq!(on["utopia"]["walks"], off["utopia"]["walks"]);
}
