use super::*;
use crate::addr::Vaddr;
use crate::os::{OsConfig, Placer};
use crate::trace::{prot, AccessKind};
use proptest::prelude::*;

/// The design as the OS model's placement hook (the engine's `DesignPlacer`).
struct Hook<'a>(&'a mut RestrictiveOnly);

impl Placer for Hook<'_> {
    fn place(&mut self, phys: &mut PhysMem, req: &PlaceRequest) -> Option<Pfn> {
        self.0.place(phys, req)
    }
}

/// What the engine does with OS changes: hand them to the design in order.
fn apply(d: &mut RestrictiveOnly, os: &mut Os, changes: &mut Vec<MapChange>) {
    for c in changes.drain(..) {
        match c {
            MapChange::Map(a, m) => d.map(&mut os.phys, a, m).unwrap(),
            MapChange::Unmap(a, m) => d.unmap(&mut os.phys, a, m),
        }
    }
}

/// A 1 MiB segment of 4-way sets (64 sets) on a 3 MiB machine with swap.
fn small() -> (RestrictiveOnly, Os) {
    let os_cfg = OsConfig {
        phys_mem_bytes: 3 << 20,
        swap: crate::os::swap::SwapConfig {
            bytes: 64 << 20,
            min_free_bytes: 256 << 10,
            ..Default::default()
        },
        ..OsConfig::default()
    };
    let mut os = Os::new(&os_cfg, 0).unwrap();
    let cfg = RestrictiveOnlyConfig {
        restseg_bytes: 1 << 20,
        ways: 4,
        reserve_bytes: 1 << 20,
        ..Default::default()
    };
    let d = RestrictiveOnly::new(&cfg, &mut os.phys).unwrap();
    (d, os)
}

/// Touch `vpn` of `asid` the way the engine does: walk, fault if unmapped, then the OS work
/// the design queued; returns the translation.
fn touch(d: &mut RestrictiveOnly, os: &mut Os, mem: &mut MemSystem, asid: Asid, vpn: u64) {
    let mut changes = Vec::new();
    if d.walk(asid, Vpn(vpn), mem).mapping.is_none() {
        let va = Vaddr(vpn << 12);
        os.fault_with(asid, va, AccessKind::Store, &mut changes, &mut Hook(d))
            .unwrap();
        apply(d, os, &mut changes);
        while d.wants_os_work() && !d.inner.requests_is_empty() {
            d.os_work(os, 0, &mut changes).unwrap();
            apply(d, os, &mut changes);
        }
    }
    let got = d.walk(asid, Vpn(vpn), mem).mapping;
    assert_eq!(got, os.translate(asid, Vpn(vpn)), "oracle");
}

#[test]
fn a_fault_on_a_full_set_swaps_the_victim_out_and_takes_its_slot() {
    let (mut d, mut os) = small();
    let mut mem = MemSystem::new(&crate::mem::MemConfig::default());
    let asid = os.process(1);
    let mut changes = Vec::new();
    os.mmap(
        asid,
        Vaddr(0x4000_0000),
        64 << 20,
        prot::READ | prot::WRITE,
        0,
        &mut changes,
    )
    .unwrap();
    let base = 0x4000_0000u64 >> 12;
    // Five pages of set 0 (64 sets): the fifth evicts one of the first four to swap.
    for k in 0..5 {
        touch(&mut d, &mut os, &mut mem, asid, base + k * 64);
    }
    assert_eq!(d.inner.victims_swapped_out(), 1);
    let seg = &d.inner().restsegs()[0];
    let in_set: Vec<u64> = (0..5)
        .filter(|k| os.translate(asid, Vpn(base + k * 64)).is_some())
        .collect();
    assert_eq!(in_set.len(), 4, "one page is in swap");
    for k in &in_set {
        let m = os.translate(asid, Vpn(base + k * 64)).unwrap();
        assert_eq!((m.pfn.0 - seg.base.0) / 4, seg.set_of(m.vpn), "in its set");
    }
    // Touching the swapped page again is a major fault that evicts another.
    let gone = (0..5).find(|k| !in_set.contains(k)).unwrap();
    touch(&mut d, &mut os, &mut mem, asid, base + gone * 64);
    assert_eq!(d.inner.victims_swapped_out(), 2);
    let mut rec = Stats::new();
    os.stats(&mut rec);
    assert_eq!(rec["os"]["swap"]["swap_ins"], 1);
    assert_eq!(rec["os"]["swap"]["swap_outs"], 2);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random touches of two processes over a region larger than the segment: every mapped
    /// page is in a slot of its own set, no two pages share a slot, and walks match the OS.
    #[test]
    fn no_two_pages_ever_share_a_slot_and_every_page_lives_in_its_set(
        touches in prop::collection::vec((0u32..2, 0u64..600), 1..400)
    ) {
        let (mut d, mut os) = small();
        let mut mem = MemSystem::new(&crate::mem::MemConfig::default());
        let mut changes = Vec::new();
        let asids: Vec<Asid> = (0..2).map(|p| os.process(p + 1)).collect();
        for &a in &asids {
            os.mmap(a, Vaddr(0x4000_0000), 8 << 20, prot::READ | prot::WRITE, 0, &mut changes)
                .unwrap();
        }
        let base = 0x4000_0000u64 >> 12;
        for (p, page) in touches {
            touch(&mut d, &mut os, &mut mem, asids[p as usize], base + page);
        }
        let seg = &d.inner().restsegs()[0];
        let mut frames = std::collections::HashSet::new();
        for &a in &asids {
            for page in 0..600 {
                let Some(m) = os.translate(a, Vpn(base + page)) else { continue };
                let slot = seg.slot_of_pfn(m.pfn);
                prop_assert!(slot.is_some(), "{m:?} outside the segment");
                prop_assert_eq!(slot.unwrap() as u64 / 4, seg.set_of(m.vpn));
                prop_assert!(frames.insert(m.pfn), "two pages in one slot");
            }
        }
    }
}

/// A run of gups on restrictive_only with a 16 MiB segment of 4-way sets (more pages than
/// the L2 TLB holds), oracle on.
fn run(extra: &[(&str, &str)]) -> Result<serde_json::Value, String> {
    let o = |k: &str, v: &str| (k.to_string(), v.to_string());
    let mut set = vec![
        o("sim.design", "restrictive_only"),
        o("sim.refs", "40000"),
        o("workload.name", "gups"),
        o("workload.footprint", "24MiB"),
        o("os.phys_mem_bytes", "20MiB"),
        o("os.swap.min_free_bytes", "1MiB"),
        o("restrictive_only.restseg_bytes", "16777216"),
        o("restrictive_only.reserve_bytes", "4194304"),
        o("restrictive_only.ways", "4"),
        // Swapping happens while the footprint is first touched.
        o("sim.warmup_refs", "0"),
    ];
    set.extend(extra.iter().map(|(k, v)| o(k, v)));
    let cfg = crate::config::Config::resolve(None, &set).map_err(|e| e.to_string())?;
    crate::engine::run_workload(&cfg).map_err(|e| e.to_string())
}

#[test]
fn a_footprint_beyond_the_segment_swaps_under_the_oracle_and_every_page_stays_in_it() {
    let r = run(&[("os.swap.bytes", "64MiB")]).unwrap();
    let s = &r["restrictive_only"];
    assert_eq!(r["oracle"]["mismatches"], 0);
    let swapped = s["victims_swapped_out"].as_u64().unwrap();
    assert!(swapped > 0);
    let swap = &r["os"]["swap"];
    assert!(swap["swap_outs"].as_u64().unwrap() >= swapped);
    assert!(swap["swap_ins"].as_u64().unwrap() > 0);
    // At the end every mapped page is in the segment.
    assert_eq!(s["restsegs"]["0"]["used_slots"], r["os"]["mapped_4k"]);
    // (FlexSeg walks are the walks that precede a fault: an unmapped page misses the RSW.)
    assert!(s["rsw_hits"].as_u64().unwrap() > 0);
}

#[test]
fn a_full_set_without_swap_stops_the_run_with_an_error_naming_the_key() {
    // The footprint fits the machine (the check of the configuration passes) but not the
    // segment.
    // No swap: the design's profile gives it 8 GiB, so the test takes it away.
    let e = run(&[
        ("os.phys_mem_bytes", "48MiB"),
        ("restrictive_only.reserve_bytes", "33554432"),
        ("os.swap.bytes", "0"),
    ])
    .unwrap_err();
    assert!(
        e.contains("restrictive_only") && e.contains("os.swap.bytes"),
        "{e}"
    );
}
