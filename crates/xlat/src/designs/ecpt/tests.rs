//! Tests of the ECPT design: walks (parallel probes per table, CWT/CWC filtering), inserts,
//! removals, resizing and its statistics, against the formulas of the module doc.
//!
//! Contract: test code only; it may use every item of the design (`use super::*`).

use super::*;
use crate::mem::MemConfig;

fn m(vpn: u64, pfn: u64, size: PageSize) -> Mapping {
    Mapping::writable(vpn, pfn, size)
}

fn setup() -> (Ecpt, PhysMem, MemSystem) {
    let mut phys = PhysMem::new(4 << 30);
    let e = Ecpt::new(&EcptConfig::default(), &mut phys).unwrap();
    (e, phys, MemSystem::new(&MemConfig::default()))
}

#[test]
fn a_walk_with_cold_cwcs_issues_one_probe_per_way_per_candidate_size() {
    let (mut e, mut phys, mut mem) = setup();
    // Only 4 KiB pages: one candidate size, 3 probes, no CWT reads.
    e.map(&mut phys, 0, m(0x1234, 7, PageSize::Size4K)).unwrap();
    let w = e.walk(0, Vpn(0x1234), &mut mem);
    assert_eq!(w.mapping.unwrap().pfn, Pfn(7));
    assert_eq!((e.0.probes(), w.mem_accesses), (3, 3));
    // All three sizes: 3 ways x 3 sizes = 9 probes, plus one read per way of each CWT.
    let (mut e, mut phys, mut mem) = setup();
    e.map(&mut phys, 0, m(0x1234, 7, PageSize::Size4K)).unwrap();
    e.map(&mut phys, 0, m(512 * 9, 512, PageSize::Size2M))
        .unwrap();
    e.map(&mut phys, 0, m(1 << 20, 1 << 18, PageSize::Size1G))
        .unwrap();
    let w = e.walk(0, Vpn(512 * 9 + 3), &mut mem);
    assert_eq!(w.mapping.unwrap().size, PageSize::Size2M);
    assert_eq!(e.0.probes(), 9);
    assert_eq!(e.0.cwt_reads(), 4);
    assert_eq!(w.mem_accesses, 13);
    // A warm PMD-CWC entry rules out the other sizes and names the 2 MiB page's way: one
    // probe, no CWT read.
    let w = e.walk(0, Vpn(512 * 9 + 5), &mut mem);
    assert_eq!(w.mapping.unwrap().size, PageSize::Size2M);
    assert_eq!(w.mem_accesses, 1);
    assert_eq!(e.0.probes(), 10);
    // A 4 KiB region's CWC entry names the size only: every way of it is probed.
    let (mut e, mut phys, mut mem) = setup();
    e.map(&mut phys, 0, m(0x100, 7, PageSize::Size4K)).unwrap();
    e.map(&mut phys, 0, m(512 * 9, 512, PageSize::Size2M))
        .unwrap();
    e.walk(0, Vpn(0x100), &mut mem);
    let before = e.0.probes();
    let w = e.walk(0, Vpn(0x100), &mut mem);
    assert_eq!(w.mapping.unwrap().pfn, Pfn(7));
    assert_eq!(e.0.probes() - before, 3);
}

#[test]
fn cwc_lookups_are_not_counted_and_hit_rates_are_null_when_the_cwcs_cannot_be_used() {
    let (mut e, mut phys, mut mem) = setup();
    e.map(&mut phys, 0, m(0x100, 7, PageSize::Size4K)).unwrap();
    e.walk(0, Vpn(0x100), &mut mem);
    e.walk(0, Vpn(0x100), &mut mem);
    let mut out = Stats::new();
    e.stats(&mut out);
    let s = &out["ecpt"];
    assert_eq!(s["pmd_cwc_lookups"], 0);
    assert!(s["pmd_cwc_hit_rate"].is_null() && s["pud_cwc_hit_rate"].is_null());
    // With two page sizes the CWCs work: the second walk of a region hits.
    e.map(&mut phys, 0, m(512 * 9, 512, PageSize::Size2M))
        .unwrap();
    e.walk(0, Vpn(0x100), &mut mem);
    e.walk(0, Vpn(0x100), &mut mem);
    let mut out = Stats::new();
    e.stats(&mut out);
    let s = &out["ecpt"];
    assert_eq!(s["pmd_cwc_lookups"], 2);
    assert_eq!(s["pmd_cwc_hit_rate"], 0.5);
}

#[test]
fn a_cwc_hit_on_a_2m_page_probes_the_way_that_holds_it_after_cuckoo_moves() {
    // Many 2 MiB pages (and one 4 KiB page, so that the CWTs are used): lines are kicked
    // between ways as the 2 MiB table fills and resizes; every walk must still find its
    // page with one probe once the CWC is warm (the oracle of the walk is the mapping).
    let (mut e, mut phys, mut mem) = setup();
    e.map(&mut phys, 0, m(0x1, 7, PageSize::Size4K)).unwrap();
    let regions: Vec<u64> = (0..3000u64).map(|i| (i * 7919 % 100_000) + 16).collect();
    for (i, r) in regions.iter().enumerate() {
        e.map(
            &mut phys,
            0,
            m(r * 512, (i as u64 + 1) * 512, PageSize::Size2M),
        )
        .unwrap();
    }
    for (i, r) in regions.iter().enumerate() {
        e.walk(0, Vpn(r * 512), &mut mem);
        let before = e.0.probes();
        let w = e.walk(0, Vpn(r * 512 + 1), &mut mem);
        assert_eq!(
            w.mapping.unwrap().pfn,
            Pfn((i as u64 + 1) * 512),
            "region {r}"
        );
        assert_eq!(e.0.probes() - before, 1, "region {r}");
    }
}

#[test]
fn a_4_way_table_issues_4_parallel_probes_costing_the_slowest() {
    let cfg = EcptConfig {
        ways: 4,
        ..EcptConfig::default()
    };
    let mut phys = PhysMem::new(4 << 30);
    let mut e = Ecpt::new(&cfg, &mut phys).unwrap();
    let mut mem = MemSystem::new(&MemConfig::default());
    e.map(&mut phys, 0, m(0x777, 3, PageSize::Size4K)).unwrap();
    let w = e.walk(0, Vpn(0x777), &mut mem);
    assert_eq!(w.mem_accesses, 4);
    // The same 4 lines again, now cached: the walk costs the CWC lookup plus one (parallel)
    // cache hit, not four.
    let again = e.walk(0, Vpn(0x777), &mut mem);
    let hit = mem.pt_access(e.0.table(0, 0).unwrap().probe(0, 0x777 >> 3).0);
    assert_eq!(
        again.latency_cycles,
        cfg.cwc_latency_cycles + hit.latency_cycles
    );
    assert!(again.latency_cycles < w.latency_cycles);
}

#[test]
fn a_cwc_entry_is_invalidated_when_its_region_gains_a_page_size() {
    let (mut e, mut phys, mut mem) = setup();
    e.map(&mut phys, 0, m(0x1234, 7, PageSize::Size4K)).unwrap();
    e.map(&mut phys, 0, m(1 << 20, 1 << 18, PageSize::Size1G))
        .unwrap();
    // Warm the PMD-CWC for the 2 MiB region of 0x1234 (4 KiB only), then map a 2 MiB page in
    // another region of the same 1 GiB region and walk it.
    e.walk(0, Vpn(0x1234), &mut mem);
    e.map(&mut phys, 0, m(0x1400, 1024, PageSize::Size2M))
        .unwrap();
    assert_eq!(
        e.walk(0, Vpn(0x1401), &mut mem).mapping.unwrap().size,
        PageSize::Size2M
    );
    assert_eq!(
        e.walk(0, Vpn(0x1234), &mut mem).mapping.unwrap().pfn,
        Pfn(7)
    );
    e.unmap(&mut phys, 0, m(0x1400, 1024, PageSize::Size2M));
    assert_eq!(e.walk(0, Vpn(0x1401), &mut mem).mapping, None);
}

#[test]
fn tables_upsize_at_the_threshold_and_all_entries_stay_reachable() {
    let (mut e, mut phys, mut mem) = setup();
    // 128 entries x 3 ways x 0.6 = 230.4 lines of 8 PTEs: 2000 lines force upsizes.
    let n = 16_000u64;
    for v in 0..n {
        e.map(&mut phys, 0, m(v * 3, v, PageSize::Size4K)).unwrap();
    }
    for v in 0..n {
        assert_eq!(
            e.walk(0, Vpn(v * 3), &mut mem).mapping.unwrap().pfn,
            Pfn(v),
            "vpn {}",
            v * 3
        );
    }
    let t = e.0.table(0, 0).unwrap();
    let cap: u64 = t.way_bytes().sum::<u64>() / 64;
    assert!(t.clusters() as f64 <= 0.6 * cap as f64 + 1.0);
    assert!(t.stats.upsizes[0] >= 3, "{:?}", t.stats);
    // ECPT resizes all ways together: equal sizes.
    let sizes: Vec<u64> = t.way_bytes().collect();
    assert!(sizes.iter().all(|s| *s == sizes[0]), "{sizes:?}");
    // Each way is one allocation: the largest is one way (or the new table's way).
    assert!(e.footprint().max_contiguous_bytes >= sizes[0]);
}

#[test]
fn unmapping_everything_downsizes_and_frees_the_tables() {
    let (mut e, mut phys, _) = setup();
    let ms: Vec<Mapping> = (0..20_000u64).map(|v| m(v, v, PageSize::Size4K)).collect();
    for x in &ms {
        e.map(&mut phys, 0, *x).unwrap();
    }
    let full = e.footprint().bytes;
    for x in &ms[..18_000] {
        e.unmap(&mut phys, 0, *x);
    }
    let t = e.0.table(0, 0).unwrap();
    assert!(t.stats.downsizes[0] >= 1);
    assert!(e.footprint().bytes < full);
    for x in &ms[18_000..] {
        e.unmap(&mut phys, 0, *x);
    }
    assert_eq!(e.footprint().bytes, 0);
    assert_eq!(phys.bytes_in_use(crate::os::FrameUse::PageTable), 0);
}

#[test]
fn the_allocation_cost_is_the_work_physical_memory_reports() {
    // Unfragmented: every allocation is zeroed and nothing else, 0.5 cycle per byte.
    let (mut e, mut phys, _) = setup();
    for v in 0..2000 {
        e.map(&mut phys, 0, m(v * 8, v, PageSize::Size4K)).unwrap();
    }
    assert!(e.0.alloc_cycles() > 0);
    assert_eq!(e.0.alloc_cycles(), phys.alloc_work_cycles());
    assert_eq!(phys.compaction_stats().compaction_cycles, 0);
    assert_eq!(
        e.0.alloc_cycles(),
        phys.compaction_stats().zero_cycles,
        "only zeroing"
    );
    // No free 8 KiB block (every other frame holds movable data): direct compaction runs
    // and its work is charged too.
    let mut phys = PhysMem::new(64 << 20);
    let mut held = Vec::new();
    while let Ok(p) = phys.alloc(0, crate::os::FrameUse::Data) {
        let owner = crate::os::DataOwner {
            asid: 0,
            vpn: Vpn(p.0),
        };
        phys.set_owner(p, 0, owner);
        held.push(p);
    }
    for p in held.iter().step_by(2) {
        phys.free(*p, 0, crate::os::FrameUse::Data);
    }
    assert!(!phys.can_alloc(1), "no 8 KiB block is free");
    let work_before = phys.alloc_work_cycles();
    let mut e = Ecpt::new(&EcptConfig::default(), &mut phys).unwrap();
    e.map(&mut phys, 0, m(5, 1, PageSize::Size4K)).unwrap();
    let c = phys.compaction_stats().clone();
    assert!(c.direct_successes > 0 && c.compaction_cycles > 0, "{c:?}");
    assert_eq!(e.0.alloc_cycles(), phys.alloc_work_cycles() - work_before);
    assert!(!phys.take_relocations().is_empty(), "owned data was moved");
}

/// 64 MiB in which every other 4 KiB frame is taken: no free block of 8 KiB or more.
fn memory_without_a_free_8k_block() -> PhysMem {
    let mut phys = PhysMem::new(64 << 20);
    let mut held = Vec::new();
    while let Ok(p) = phys.alloc(0, crate::os::FrameUse::Data) {
        held.push(p);
    }
    for p in held.iter().step_by(2) {
        phys.free(*p, 0, crate::os::FrameUse::Data);
    }
    phys
}

#[test]
fn an_unsatisfiable_way_allocation_is_an_error_naming_ecpt_and_the_size() {
    let mut phys = memory_without_a_free_8k_block();
    let mut e = Ecpt::new(&EcptConfig::default(), &mut phys).unwrap();
    let err = e.map(&mut phys, 0, m(5, 1, PageSize::Size4K)).unwrap_err();
    assert!(err.0.contains("ecpt") && err.0.contains("8KiB"), "{err}");
}

fn optimistic() -> EcptConfig {
    EcptConfig {
        charge_allocations: false,
        contiguous_ways: false,
        ..EcptConfig::default()
    }
}

#[test]
fn the_optimistic_ech_needs_no_contiguous_block_and_charges_no_allocation() {
    // Memory with no free 8 KiB block (as in the test above, where ECPT must stop): the
    // optimistic ECH builds its ways of single frames, resizes, and finds every page.
    let mut phys = memory_without_a_free_8k_block();
    let mut e = Ecpt::new(&optimistic(), &mut phys).unwrap();
    let mut mem = MemSystem::new(&MemConfig::default());
    let n = 16_000u64;
    for v in 0..n {
        e.map(&mut phys, 0, m(v * 3, v, PageSize::Size4K)).unwrap();
    }
    for v in 0..n {
        let w = e.walk(0, Vpn(v * 3), &mut mem);
        assert_eq!(w.mapping.unwrap().pfn, Pfn(v), "vpn {}", v * 3);
        assert_eq!(w.mem_accesses, 3, "one probe per way, resizing or not");
    }
    let t = e.0.table(0, 0).unwrap();
    assert!(t.stats.upsizes[0] >= 3, "{:?}", t.stats);
    assert_eq!(e.footprint().max_contiguous_bytes, 4096);
    assert!(
        e.0.cost.allocations > 0 && e.0.cost.cycles > 0,
        "work was done"
    );
    assert_eq!(
        (e.0.alloc_cycles(), e.os_cycles()),
        (0, 0),
        "but not charged"
    );
    let mut out = Stats::new();
    e.stats(&mut out);
    assert_eq!(out["ecpt"]["alloc_cycles"], 0);
    assert!(out["ecpt"].get("l2p_entries_used").is_none());
}

#[test]
fn uncharged_allocations_leave_the_walks_unchanged_and_os_time_at_zero() {
    let run = |cfg: &EcptConfig| {
        let mut phys = PhysMem::new(4 << 30);
        let mut e = Ecpt::new(cfg, &mut phys).unwrap();
        let mut mem = MemSystem::new(&MemConfig::default());
        let mut walks = Vec::new();
        for v in 0..5000u64 {
            e.map(&mut phys, 0, m(v * 5, v, PageSize::Size4K)).unwrap();
            let w = e.walk(0, Vpn(v * 5 / 2), &mut mem);
            walks.push((w.mapping, w.latency_cycles, w.mem_accesses));
        }
        (walks, e.os_cycles())
    };
    let (charged, os) = run(&EcptConfig::default());
    let uncharged = EcptConfig {
        charge_allocations: false,
        ..EcptConfig::default()
    };
    let (free, os_free) = run(&uncharged);
    assert!(os > 0);
    assert_eq!(os_free, 0);
    assert_eq!(charged, free);
}

#[test]
fn a_bad_configuration_is_rejected_with_a_message() {
    let bad = EcptConfig {
        ways: 5,
        ..EcptConfig::default()
    };
    assert!(bad.validate().unwrap_err().contains("ways"));
    let bad = EcptConfig {
        initial_entries: 100,
        ..EcptConfig::default()
    };
    assert!(bad.validate().unwrap_err().contains("initial_entries"));
    let bad = EcptConfig {
        upsize_occupancy: 0.3,
        ..EcptConfig::default()
    };
    assert!(bad.validate().is_err());
}
