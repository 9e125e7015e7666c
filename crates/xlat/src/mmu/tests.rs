//! Tests of the TLB hierarchy (`Mmu`): organizations, coalescing, range TLB, invalidation,
//! driven through a radix design as the engine drives it.

use super::*;
use crate::addr::Pfn;
use crate::designs::radix::{Radix, RadixConfig};
use crate::designs::{Design, PtFootprint, WalkResult};
use crate::mem::{MemConfig, MemSystem};
use crate::os::{OsError, PhysMem};
use proptest::prelude::*;
use std::collections::HashMap;

/// A radix design, its physical memory and a memory system to walk through.
struct Machine {
    mmu: Mmu,
    radix: Radix,
    phys: PhysMem,
    mem: MemSystem,
    walks: u64,
}

impl Machine {
    fn new(cfg: TlbConfig) -> Machine {
        cfg.validate().unwrap();
        let mut phys = PhysMem::new(1 << 30);
        let radix = Radix::new(&RadixConfig::default(), &mut phys).unwrap();
        Machine {
            mmu: Mmu::new(&cfg),
            radix,
            phys,
            mem: MemSystem::new(&MemConfig::default()),
            walks: 0,
        }
    }

    fn map(&mut self, m: Mapping) {
        self.radix.map(&mut self.phys, 0, m).unwrap();
    }

    fn unmap(&mut self, m: Mapping) {
        self.radix.unmap(&mut self.phys, 0, m);
        self.mmu.invalidate(0, m);
    }

    /// A data reference to `vpn` as the engine makes it: L1, L2 stage, else a walk whose
    /// result fills the TLBs. Returns the translation used (`None`: not mapped).
    fn access(&mut self, vpn: u64) -> Option<Mapping> {
        let vpn = Vpn(vpn);
        if let Some(m) = self.mmu.lookup_data_l1(0, vpn) {
            return Some(m);
        }
        match self.mmu.lookup_data_after_l1_miss(0, vpn) {
            TlbOutcome::L1Hit(m) | TlbOutcome::L2Hit(m) | TlbOutcome::RangeHit(m) => Some(m),
            TlbOutcome::Miss => {
                self.walks += 1;
                let m = self.radix.walk(0, vpn, &mut self.mem).mapping?;
                self.mmu.fill_walked(&self.radix, 0, vpn, m, false);
                Some(m)
            }
        }
    }
}

fn arm_l1(coalescing: Coalescing) -> TlbConfig {
    TlbConfig {
        l1_organization: L1Organization::AnySize,
        // No L2: the L1 alone must hold the pages.
        l2: TlbLevelConfig {
            entries: 0,
            ways: 1,
            latency_cycles: 12,
        },
        coalescing,
        ..TlbConfig::default()
    }
}

#[test]
fn a_contiguous_run_of_16_4k_pages_takes_one_entry_of_an_arm_l1_tlb() {
    // 48 entries x 16 pages: 768 pages in 48 aligned, physically contiguous 64 KiB runs.
    let pages = 48 * 16;
    for (coalescing, walks_second_pass) in
        [(Coalescing::ContiguousBit, 0), (Coalescing::None, pages)]
    {
        let mut x = Machine::new(arm_l1(coalescing));
        for v in 0..pages {
            x.map(Mapping::writable(0x1000 + v, 0x8000 + v, PageSize::Size4K));
        }
        for v in 0..pages {
            assert_eq!(x.access(0x1000 + v).unwrap().pfn, Pfn(0x8000 + v));
        }
        let first = x.walks;
        for v in 0..pages {
            assert_eq!(x.access(0x1000 + v).unwrap().pfn, Pfn(0x8000 + v));
        }
        assert_eq!(x.walks - first, walks_second_pass, "{coalescing:?}");
        if coalescing == Coalescing::ContiguousBit {
            // One walk per run, then every page of the run hits its one entry.
            assert_eq!(first, 48);
            assert_eq!(x.mmu.l1_any.as_ref().unwrap().occupancy(), 48);
            assert_eq!(x.mmu.l1_misses, 48);
            let mut out = Stats::new();
            x.mmu.stats(&mut out, 1000);
            assert_eq!(out["tlb"]["coalesced_fills"], 48);
            assert_eq!(out["tlb"]["l1_coalesced_hits_by_size"]["64k"], 2 * 768 - 48);
        }
    }
}

#[test]
fn a_run_that_is_not_physically_aligned_or_equally_protected_is_not_marked_contiguous() {
    let mut x = Machine::new(arm_l1(Coalescing::ContiguousBit));
    // Frames contiguous but not 64 KiB aligned.
    for v in 0..16 {
        x.map(Mapping::writable(0x1000 + v, 0x8001 + v, PageSize::Size4K));
    }
    // Aligned and contiguous, but one page read-only.
    for v in 0..16 {
        let mut m = Mapping::writable(0x2000 + v, 0x9000 + v, PageSize::Size4K);
        m.writable = v != 7;
        x.map(m);
    }
    for v in 0..16 {
        x.access(0x1000 + v);
        x.access(0x2000 + v);
    }
    assert_eq!(x.walks, 32);
    assert_eq!(x.mmu.coalesced_fills, 0);
}

#[test]
fn sixteen_contiguous_2m_pages_take_one_32m_entry() {
    let mut x = Machine::new(arm_l1(Coalescing::ContiguousBit));
    for i in 0..16 {
        x.map(Mapping::writable(
            (1 << 18) + i * 512,
            (1 << 20) + i * 512,
            PageSize::Size2M,
        ));
    }
    for i in 0..16 * 4 {
        let vpn = (1 << 18) + i * 128 + 3;
        let m = x.access(vpn).unwrap();
        assert_eq!(m.size, PageSize::Size2M);
        assert_eq!(m.pfn.0, (1 << 20) + (vpn - (1 << 18)) / 512 * 512);
    }
    assert_eq!(x.walks, 1);
    let mut out = Stats::new();
    x.mmu.stats(&mut out, 1);
    assert_eq!(out["tlb"]["l1_coalesced_hits_by_size"]["32m"], 63);
    // Unmapping one of the 16 removes the entry and the marks of the others.
    x.unmap(Mapping::writable(
        (1 << 18) + 5 * 512,
        (1 << 20) + 5 * 512,
        PageSize::Size2M,
    ));
    assert_eq!(x.access((1 << 18) + 5 * 512), None);
    x.access(1 << 18);
    x.access((1 << 18) + 512);
    assert_eq!(x.walks, 4, "each remaining page is its own entry now");
}

#[test]
fn a_colt_fill_of_8_contiguous_translations_serves_the_other_7_without_a_walk() {
    let cfg = TlbConfig {
        coalescing: Coalescing::Colt,
        ..TlbConfig::default()
    };
    let mut x = Machine::new(cfg);
    // Physically contiguous, not aligned to 8 frames (CoLT does not need it).
    for v in 0..8 {
        x.map(Mapping::writable(0x1008 + v, 0x7003 + v, PageSize::Size4K));
    }
    assert_eq!(x.access(0x100b).unwrap().pfn, Pfn(0x7006));
    assert_eq!(x.walks, 1);
    for v in 0..8 {
        assert_eq!(x.access(0x1008 + v).unwrap().pfn, Pfn(0x7003 + v));
    }
    assert_eq!(x.walks, 1, "the other 7 are served by the coalesced entry");
    let mut out = Stats::new();
    x.mmu.stats(&mut out, 1);
    assert_eq!(out["tlb"]["coalesced_fills"], 1);
    assert_eq!(out["tlb"]["coalesced_fill_pages"], 8);
    // The split L1 holds base pages: the 7 others came from the L2's coalesced entry.
    assert_eq!(out["tlb"]["l2_coalesced_hits_by_size"]["32k"], 7);
}

#[test]
fn colt_coalesces_the_largest_aligned_contiguous_group_within_the_walked_line() {
    let cfg = TlbConfig {
        coalescing: Coalescing::Colt,
        ..TlbConfig::default()
    };
    let mut x = Machine::new(cfg);
    // Line of VPNs 0x1000..0x1008; page 5 breaks physical contiguity; the next line's
    // pages are contiguous with this line's but live in another line.
    for v in 0..16 {
        let pfn = if v == 5 { 0x9999 } else { 0x7000 + v };
        x.map(Mapping::writable(0x1000 + v, pfn, PageSize::Size4K));
    }
    let walked: Vec<u64> = (0..16)
        .filter(|v| {
            let before = x.walks;
            x.access(0x1000 + v);
            x.walks > before
        })
        .collect();
    // 0: group 0..4; 4 and 5 alone (the pair 4,5 is broken); 6: pair 6,7; 8: group 8..16
    // of at most 8 pages, one line.
    assert_eq!(walked, vec![0, 4, 5, 6, 8]);
    // A smaller cap coalesces less.
    let mut y = Machine::new(TlbConfig {
        coalescing: Coalescing::Colt,
        colt_max_pages: 2,
        ..TlbConfig::default()
    });
    for v in 0..8 {
        y.map(Mapping::writable(0x1000 + v, 0x7000 + v, PageSize::Size4K));
    }
    for v in 0..8 {
        y.access(0x1000 + v);
    }
    assert_eq!(y.walks, 4);
}

#[test]
fn invalidating_one_page_removes_the_coalesced_entry_from_every_level() {
    for org in [L1Organization::AnySize, L1Organization::Split] {
        let mut x = Machine::new(TlbConfig {
            l1_organization: org,
            coalescing: Coalescing::Colt,
            ..TlbConfig::default()
        });
        for v in 0..8 {
            x.map(Mapping::writable(0x1000 + v, 0x7000 + v, PageSize::Size4K));
        }
        x.access(0x1000);
        x.access(0x1003);
        x.unmap(Mapping::writable(0x1006, 0x7006, PageSize::Size4K));
        // The page itself and every page of the span that no other entry holds now need a
        // walk (the split L1 still holds the base page 0x1003 it was given, valid).
        assert_eq!(x.access(0x1006), None);
        let before = x.walks;
        assert_eq!(x.access(0x1004).unwrap().pfn, Pfn(0x7004));
        assert_eq!(x.walks, before + 1, "{org:?}");
        // Re-mapped elsewhere: the new frame, never the old one.
        x.map(Mapping::writable(0x1006, 0x5555, PageSize::Size4K));
        assert_eq!(x.access(0x1006).unwrap().pfn, Pfn(0x5555));
    }
}

#[test]
fn a_split_1g_l2_keeps_1g_pages_in_its_own_entries() {
    let cfg = |org| TlbConfig {
        l2_organization: org,
        l1_1g: TlbLevelConfig {
            entries: 0,
            ways: 1,
            latency_cycles: 1,
        },
        ..TlbConfig::default()
    };
    let g = |i: u64| Mapping::writable((i + 1) << 18, (i + 1) << 18, PageSize::Size1G);
    for (org, first_still_cached) in [
        (L2Organization::Unified, true),
        (L2Organization::Split1G, false),
    ] {
        let mut mmu = Mmu::new(&cfg(org));
        // 17 pages of 1 GiB: one more than the separate part's 16 entries.
        for i in 0..17 {
            mmu.fill(0, g(i), false);
        }
        mmu.fill(0, Mapping::writable(5, 5, PageSize::Size4K), false);
        let hit = |mmu: &mut Mmu, vpn| mmu.lookup_data_after_l1_miss(0, Vpn(vpn));
        assert_eq!(
            matches!(hit(&mut mmu, g(0).vpn.0 + 7), TlbOutcome::L2Hit(m) if m == g(0)),
            first_still_cached,
            "{org:?}"
        );
        assert_eq!(hit(&mut mmu, g(16).vpn.0), TlbOutcome::L2Hit(g(16)));
        assert!(matches!(hit(&mut mmu, 5), TlbOutcome::L2Hit(_)));
        let mut out = Stats::new();
        mmu.stats(&mut out, 1);
        if org == L2Organization::Split1G {
            assert_eq!(out["tlb"]["l2_1g_hits"], 1);
            assert_eq!(out["tlb"]["l2_hits_by_size"]["1g"], 1);
            assert_eq!(out["tlb"]["l2_hits_by_size"]["4k"], 1);
            mmu.invalidate(0, g(16));
            assert_eq!(hit(&mut mmu, g(16).vpn.0), TlbOutcome::Miss);
        } else {
            assert!(out["tlb"].get("l2_hits_by_size").is_none());
        }
    }
}

/// A radix design that also has one range translation (as RMM's range table would).
struct Ranged {
    radix: Radix,
    range: Option<VaRange>,
}

impl Design for Ranged {
    type Config = RadixConfig;
    fn new(cfg: &RadixConfig, phys: &mut PhysMem) -> Result<Self, OsError> {
        Ok(Ranged {
            radix: Radix::new(cfg, phys)?,
            range: None,
        })
    }
    fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
        self.radix.map(phys, asid, m)
    }
    fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
        self.radix.unmap(phys, asid, m)
    }
    fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
        self.radix.walk(asid, vpn, mem)
    }
    fn range(&self, _asid: Asid, vpn: Vpn) -> Option<VaRange> {
        self.range.filter(|r| r.contains(vpn))
    }
    fn footprint(&self) -> PtFootprint {
        self.radix.footprint()
    }
    fn stats(&self, _out: &mut Stats) {}
}

#[test]
fn a_range_hit_refills_the_l1_with_a_4k_entry_that_leaves_with_the_page_holding_it() {
    for org in [
        L1Organization::Split,
        L1Organization::AnySize,
        L1Organization::SplitAnySize,
    ] {
        let mut mmu = Mmu::new(&TlbConfig {
            l1_organization: org,
            range: TlbLevelConfig {
                entries: 4,
                ways: 0,
                latency_cycles: 12,
            },
            ..TlbConfig::default()
        });
        let mut phys = PhysMem::new(1 << 30);
        let mut mem = MemSystem::new(&MemConfig::default());
        let mut d = Ranged::new(&RadixConfig::default(), &mut phys).unwrap();
        let huge = Mapping::writable(0x200, 0x4000, PageSize::Size2M);
        d.map(&mut phys, 0, huge).unwrap();
        d.range = Some(VaRange {
            vpn_start: Vpn(0x200),
            vpn_end: Vpn(0x400),
            pfn_start: Pfn(0x4000),
            writable: true,
        });
        let m = d.walk(0, Vpn(0x250), &mut mem).mapping.unwrap();
        mmu.fill_walked(&d, 0, Vpn(0x250), m, false);
        // Evict the 2 MiB entry from nowhere: look up another page of the range.
        let four_k = Mapping::writable(0x201, 0x4001, PageSize::Size4K);
        assert_eq!(mmu.lookup_data_l1(0, Vpn(0x201)), Some(huge), "{org:?}");
        mmu.l1[1].invalidate(0, huge);
        if let Some(any) = mmu.l1_any.as_mut() {
            any.invalidate(0, huge);
        }
        mmu.l2.invalidate(0, huge);
        assert_eq!(mmu.lookup_data_l1(0, Vpn(0x201)), None, "{org:?}");
        assert_eq!(
            mmu.lookup_data_after_l1_miss(0, Vpn(0x201)),
            TlbOutcome::RangeHit(four_k)
        );
        // The refill: the next access hits the L1 with the range's 4 KiB entry.
        assert_eq!(mmu.lookup_data_l1(0, Vpn(0x201)), Some(four_k), "{org:?}");
        // Unmapping the 2 MiB page holding it removes it.
        mmu.invalidate(0, huge);
        assert_eq!(mmu.lookup_data_l1(0, Vpn(0x201)), None, "{org:?}");
    }
}

#[test]
fn a_range_tlb_beside_the_l2_serves_every_page_of_a_range_after_one_walk() {
    let cfg = TlbConfig {
        range: TlbLevelConfig {
            entries: 4,
            ways: 0,
            latency_cycles: 20,
        },
        ..TlbConfig::default()
    };
    cfg.validate().unwrap();
    let mut mmu = Mmu::new(&cfg);
    assert_eq!(
        mmu.l2_latency_cycles, 20,
        "the L2 stage waits for the slower probe"
    );
    let mut phys = PhysMem::new(1 << 30);
    let mut mem = MemSystem::new(&MemConfig::default());
    let mut d = Ranged::new(&RadixConfig::default(), &mut phys).unwrap();
    // A 4 MiB range mapped by one 2 MiB page and 512 4 KiB pages.
    d.map(
        &mut phys,
        0,
        Mapping::writable(0x200, 0x4000, PageSize::Size2M),
    )
    .unwrap();
    for v in 0..512 {
        d.map(
            &mut phys,
            0,
            Mapping::writable(0x400 + v, 0x4200 + v, PageSize::Size4K),
        )
        .unwrap();
    }
    d.range = Some(VaRange {
        vpn_start: Vpn(0x200),
        vpn_end: Vpn(0x600),
        pfn_start: Pfn(0x4000),
        writable: true,
    });
    assert_eq!(
        mmu.lookup_data_after_l1_miss(0, Vpn(0x450)),
        TlbOutcome::Miss
    );
    let m = d.walk(0, Vpn(0x450), &mut mem).mapping.unwrap();
    mmu.fill_walked(&d, 0, Vpn(0x450), m, false);
    // Another page of the range: not in the L1/L2, served by the range as a 4 KiB page.
    let got = mmu.lookup_data_after_l1_miss(0, Vpn(0x201));
    assert_eq!(
        got,
        TlbOutcome::RangeHit(Mapping::writable(0x201, 0x4001, PageSize::Size4K))
    );
    assert_eq!(
        mmu.lookup_data_after_l1_miss(0, Vpn(0x5ff)),
        TlbOutcome::RangeHit(Mapping::writable(0x5ff, 0x43ff, PageSize::Size4K))
    );
    // Another ASID does not hit.
    assert_eq!(
        mmu.lookup_data_after_l1_miss(1, Vpn(0x201)),
        TlbOutcome::Miss
    );
    // Invalidating one page inside removes the whole range.
    mmu.invalidate(0, Mapping::writable(0x5ff, 0x43ff, PageSize::Size4K));
    assert_eq!(
        mmu.lookup_data_after_l1_miss(0, Vpn(0x201)),
        TlbOutcome::Miss
    );
    let mut out = Stats::new();
    mmu.stats(&mut out, 1);
    let t = &out["tlb"];
    assert_eq!(
        (t["range_hits"].clone(), t["range_fills"].clone()),
        (2.into(), 1.into())
    );
    assert_eq!(t["range_lookups"], 5);
}

#[test]
fn the_new_organizations_are_validated_naming_their_key() {
    let bad = |cfg: TlbConfig, key: &str| {
        let e = cfg.validate().unwrap_err();
        assert!(e.contains(key), "{e}");
    };
    for pages in [0, 1, 3, 12, 128] {
        bad(
            TlbConfig {
                colt_max_pages: pages,
                ..TlbConfig::default()
            },
            "tlb.colt_max_pages",
        );
    }
    bad(
        TlbConfig {
            l2_1g: TlbLevelConfig {
                entries: 18,
                ways: 4,
                latency_cycles: 1,
            },
            ..TlbConfig::default()
        },
        "tlb.l2_1g",
    );
    bad(
        TlbConfig {
            range: TlbLevelConfig {
                entries: 32,
                ways: 4,
                latency_cycles: 1,
            },
            ..TlbConfig::default()
        },
        "tlb.range.ways",
    );
}

/// One step of the coalescing property test.
#[derive(Clone, Debug)]
enum Op {
    /// Map VPN `vpn` (if free) to frame `vpn + 16 * shift`, read-only when `ro`.
    Map { vpn: u64, shift: u64, ro: bool },
    /// Map every free VPN of the aligned group of 16 holding `vpn`, as `Map` does (whole
    /// contiguous runs are rare from single maps).
    MapRun { vpn: u64, shift: u64 },
    /// Unmap VPN `vpn` (if mapped).
    Unmap { vpn: u64 },
    /// A reference to `vpn`.
    Access { vpn: u64 },
}

proptest! {
    /// Under random map / unmap / reference sequences, a TLB hierarchy with coalescing never
    /// returns a translation other than the one mapped now (the base page truth), and a page
    /// unmapped is never translated again (invalidation is exact).
    #[test]
    fn a_coalescing_tlb_never_returns_a_translation_the_page_table_does_not_hold(
        ops in prop::collection::vec(prop_oneof![
            4 => (0u64..96, 0u64..2, prop::bool::weighted(0.1))
                .prop_map(|(vpn, shift, ro)| Op::Map { vpn, shift, ro }),
            1 => (0u64..96, 0u64..2).prop_map(|(vpn, shift)| Op::MapRun { vpn, shift }),
            2 => (0u64..96).prop_map(|vpn| Op::Unmap { vpn }),
            6 => (0u64..96).prop_map(|vpn| Op::Access { vpn }),
        ], 1..300),
        coalescing in prop::sample::select(vec![Coalescing::ContiguousBit, Coalescing::Colt]),
        any_size in any::<bool>(),
        colt_max_pages in prop::sample::select(vec![2u32, 4, 8, 64]),
    ) {
        // Small TLBs, so that entries are evicted as well as invalidated.
        let small = |entries, ways| TlbLevelConfig { entries, ways, latency_cycles: 1 };
        let mut x = Machine::new(TlbConfig {
            l1_organization: if any_size { L1Organization::AnySize } else { L1Organization::Split },
            l1_any: small(4, 4),
            l1_4k: small(4, 2),
            l2: small(8, 2),
            coalescing,
            colt_max_pages,
            ..TlbConfig::default()
        });
        let base = 0x3_0000u64;
        let mut truth: HashMap<u64, Mapping> = HashMap::new();
        for op in ops {
            match op {
                Op::Map { vpn, shift, ro } => {
                    if let std::collections::hash_map::Entry::Vacant(e) = truth.entry(vpn) {
                        let mut m = Mapping::writable(base + vpn, 0x10_0000 + vpn + 16 * shift, PageSize::Size4K);
                        m.writable = !ro;
                        x.map(m);
                        e.insert(m);
                    }
                }
                Op::MapRun { vpn, shift } => {
                    for v in vpn & !15..(vpn & !15) + 16 {
                        if let std::collections::hash_map::Entry::Vacant(e) = truth.entry(v) {
                            let m = Mapping::writable(base + v, 0x10_0000 + v + 16 * shift, PageSize::Size4K);
                            x.map(m);
                            e.insert(m);
                        }
                    }
                }
                Op::Unmap { vpn } => {
                    if let Some(m) = truth.remove(&vpn) {
                        x.unmap(m);
                        prop_assert_eq!(x.access(base + vpn), None);
                    }
                }
                Op::Access { vpn } => {
                    prop_assert_eq!(x.access(base + vpn), truth.get(&vpn).copied());
                }
            }
        }
        // Finally every page, from whatever entries are left.
        for vpn in 0..96 {
            prop_assert_eq!(x.access(base + vpn), truth.get(&vpn).copied());
        }
    }
}

fn any_size_mmu(entries: u32) -> Mmu {
    Mmu::new(&TlbConfig {
        l1_organization: L1Organization::AnySize,
        l1_any: TlbLevelConfig {
            entries,
            ways: entries,
            latency_cycles: 1,
        },
        ..TlbConfig::default()
    })
}

#[test]
fn an_any_size_l1_holds_pages_of_every_size_in_shared_entries() {
    let mut mmu = any_size_mmu(4);
    let k64 = PageSize::from_order(4).unwrap();
    let m32 = PageSize::from_order(13).unwrap();
    let pages = [
        Mapping::writable(0x10, 0x90, PageSize::Size4K),
        Mapping::writable(0x20, 0xa0, k64),
        Mapping::writable(0x200, 0x400, PageSize::Size2M),
        Mapping::writable(0x4000, 0x8000, m32),
    ];
    for m in pages {
        mmu.fill(0, m, false);
    }
    for m in pages {
        // Any VPN inside the page hits, from the L1.
        let inside = Vpn(m.vpn.0 + m.size.base_pages() - 1);
        assert_eq!(mmu.lookup_data_l1(0, inside), Some(m), "{m:?}");
    }
    assert_eq!(mmu.lookup_data_l1(0, Vpn(0x30)), None);
    // A fifth page evicts the least recently used (the 4 KiB one was used first).
    mmu.fill(0, Mapping::writable(0x11, 0x91, PageSize::Size4K), false);
    assert_eq!(mmu.lookup_data_l1(0, Vpn(0x10)), None);
    assert!(mmu.lookup_data_l1(0, Vpn(0x20)).is_some());
    mmu.invalidate(0, pages[1]);
    assert_eq!(mmu.lookup_data_l1(0, Vpn(0x20)), None);
    let hits = mmu.l1_any.as_ref().unwrap().hits_by_order();
    assert_eq!((hits[0], hits[4], hits[9], hits[13]), (1, 2, 1, 1));
    let mut out = Stats::new();
    mmu.stats(&mut out, 1000);
    assert_eq!(out["tlb"]["l1_any_hits_by_size"]["64k"], 2);
    // Misses are counted by the L2 step the engine takes after an L1 miss (not made here).
    assert_eq!(out["tlb"]["l1_lookups"], 5);
}

/// TPS Table I: 64 x 4-way 4 KiB L1 beside a 32-entry fully associative any-size L1.
fn tps_mmu() -> Mmu {
    Mmu::new(&TlbConfig {
        l1_organization: L1Organization::SplitAnySize,
        l1_any: TlbLevelConfig {
            entries: 32,
            ways: 32,
            latency_cycles: 1,
        },
        ..TlbConfig::default()
    })
}

#[test]
fn the_tps_any_size_l1_hits_every_address_of_a_cached_tailored_page() {
    let mut mmu = tps_mmu();
    // One page of every size from 8 KiB to 1 GiB, each in its own 1 GiB region.
    let pages: Vec<Mapping> = (1..=18u8)
        .map(|o| {
            let size = PageSize::from_order(o).unwrap();
            Mapping::writable((o as u64) << 18, (o as u64) << 18, size)
        })
        .collect();
    for m in &pages {
        mmu.fill(0, *m, false);
    }
    for m in &pages {
        // Every 4 KiB page of it (every address: the offset inside a 4 KiB page is not
        // looked at), sampled for the largest sizes.
        let step = (m.size.base_pages() / 4096).max(1);
        for v in (m.vpn.0..m.vpn.0 + m.size.base_pages()).step_by(step as usize) {
            assert_eq!(mmu.lookup_data_l1(0, Vpn(v)), Some(*m), "{m:?} at {v:#x}");
        }
        let last = Vpn(m.vpn.0 + m.size.base_pages() - 1);
        assert_eq!(mmu.lookup_data_l1(0, last), Some(*m));
        assert_eq!(
            mmu.lookup_data_l1(0, Vpn(m.vpn.0 + m.size.base_pages())),
            None
        );
    }
    // 4 KiB pages go to the 4 KiB L1 and take no any-size entry.
    for i in 0..64 {
        mmu.fill(
            0,
            Mapping::writable(0x100 + i, 0x900 + i, PageSize::Size4K),
            false,
        );
    }
    assert_eq!(mmu.l1_any.as_ref().unwrap().occupancy(), 18);
    assert_eq!(mmu.lookup_data_l1(0, Vpn(0x13f)).unwrap().pfn, Pfn(0x93f));
    assert!(mmu.lookup_data_l1(0, Vpn(1 << 18)).is_some());
    // Shootdowns reach both.
    mmu.invalidate(0, Mapping::writable(0x13f, 0x93f, PageSize::Size4K));
    mmu.invalidate(0, pages[0]);
    assert_eq!(mmu.lookup_data_l1(0, Vpn(0x13f)), None);
    assert_eq!(mmu.lookup_data_l1(0, Vpn(1 << 18)), None);
    let mut out = Stats::new();
    mmu.stats(&mut out, 1000);
    assert!(out["tlb"]["l1_4k_hits"].as_u64().unwrap() >= 1);
    assert!(out["tlb"]["l1_any_hits_by_size"]["8k"].as_u64().unwrap() >= 2);
}

#[test]
fn the_split_organization_keeps_pages_of_other_sizes_in_the_l2_only() {
    let mut mmu = Mmu::new(&TlbConfig::default());
    let m = Mapping {
        vpn: Vpn(0x20),
        pfn: Pfn(0xa0),
        size: PageSize::from_order(4).unwrap(),
        writable: false,
    };
    mmu.fill(0, m, false);
    assert_eq!(mmu.lookup_data_l1(0, Vpn(0x21)), None);
    assert_eq!(
        mmu.lookup_data_after_l1_miss(0, Vpn(0x21)),
        TlbOutcome::L2Hit(m)
    );
}
