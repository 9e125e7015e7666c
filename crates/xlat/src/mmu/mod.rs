//! The MMU's TLB hierarchy: an L1 DTLB per page size, a unified L2 TLB, and an ITLB for
//! instruction fetches. Design-specific MMU caches (PWCs, CWCs, ...) live in the designs.
//!
//! Contract: a translation is looked up in the L1 TLB of every size (in parallel, as hardware
//! does), then in the L2 TLB; an L2 hit refills the L1; a walk result fills both. Invalidation
//! removes the translation from every level. Pages of a size other than 4 KiB / 2 MiB / 1 GiB
//! (which an x86 design never declares) have no L1 here and are cached in the L2 TLB only.

pub mod assoc;
pub mod tlb;

use crate::addr::{Asid, Mapping, PageSize, Vpn};
use crate::stats::{ratio, Stats, StatsExt};
use serde::{Deserialize, Serialize};
pub use tlb::Tlb;

/// One TLB structure.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TlbLevelConfig {
    /// Entries (0 disables the structure).
    pub entries: u32,
    /// Associativity (`ways == entries` is fully associative).
    pub ways: u32,
    /// Lookup latency in core cycles.
    pub latency_cycles: u32,
}

/// How the L1 data TLB is organized.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum L1Organization {
    /// x86: one L1 DTLB per page size (`l1_4k`, `l1_2m`, `l1_1g`), probed in parallel.
    Split,
    /// One L1 DTLB (`l1_any`) whose entries carry their page size (a page mask): any power of
    /// two shares the same entries, as in Arm cores and the TPS TLB.
    AnySize,
}

/// The TLB hierarchy.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TlbConfig {
    /// Organization of the L1 DTLB.
    pub l1_organization: L1Organization,
    /// The any-size L1 DTLB (`l1_organization = "any_size"`; `ways == entries` is fully
    /// associative, the usual design since a set index would depend on the page size).
    pub l1_any: TlbLevelConfig,
    /// L1 DTLB for 4 KiB pages.
    pub l1_4k: TlbLevelConfig,
    /// L1 DTLB for 2 MiB pages.
    pub l1_2m: TlbLevelConfig,
    /// L1 DTLB for 1 GiB pages.
    pub l1_1g: TlbLevelConfig,
    /// Unified L2 TLB (all page sizes share it).
    pub l2: TlbLevelConfig,
    /// Instruction TLB (used only by instruction fetches).
    pub itlb: TlbLevelConfig,
}

impl Default for TlbConfig {
    fn default() -> Self {
        let level = |entries, ways, latency_cycles| TlbLevelConfig {
            entries,
            ways,
            latency_cycles,
        };
        TlbConfig {
            l1_organization: L1Organization::Split,
            // Arm Neoverse N1's L1 DTLB: 48 entries, fully associative, all sizes.
            l1_any: level(48, 48, 1),
            l1_4k: level(64, 4, 1),
            l1_2m: level(32, 4, 1),
            l1_1g: level(4, 4, 1),
            l2: level(1536, 12, 12),
            itlb: level(128, 8, 1),
        }
    }
}

impl TlbConfig {
    /// Check that every structure is a whole number of sets.
    pub fn validate(&self) -> Result<(), String> {
        for (name, l) in [
            ("l1_any", &self.l1_any),
            ("l1_4k", &self.l1_4k),
            ("l1_2m", &self.l1_2m),
            ("l1_1g", &self.l1_1g),
            ("l2", &self.l2),
            ("itlb", &self.itlb),
        ] {
            if l.entries > 0 && (l.ways == 0 || l.entries % l.ways != 0) {
                return Err(format!(
                    "tlb.{name}: {} entries is not a whole number of {}-way sets",
                    l.entries, l.ways
                ));
            }
        }
        Ok(())
    }
}

/// Where a TLB lookup was satisfied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlbOutcome {
    /// Hit in an L1 TLB (or the ITLB).
    L1Hit(Mapping),
    /// Missed L1, hit the L2 TLB.
    L2Hit(Mapping),
    /// Missed everywhere: a walk is needed.
    Miss,
}

/// The TLB hierarchy.
pub struct Mmu {
    /// The per-size L1 DTLBs (split organization).
    l1: [Tlb; 3],
    /// The any-size L1 DTLB (any-size organization; then `l1` is unused).
    l1_any: Option<Tlb>,
    l2: Tlb,
    itlb: Tlb,
    /// L1 hit latency in cycles (the cost every translation pays, not counted as overhead).
    pub l1_latency_cycles: u32,
    /// L2 TLB lookup latency in cycles.
    pub l2_latency_cycles: u32,
    /// Data-side L1 misses.
    pub l1_misses: u64,
    /// Data-side L2 misses.
    pub l2_misses: u64,
    /// Instruction-side ITLB misses.
    pub itlb_misses: u64,
    /// Instruction-side L2 misses.
    pub itlb_l2_misses: u64,
    /// Translations invalidated because the OS changed a mapping.
    pub invalidations: u64,
}

impl Mmu {
    /// Build cold TLBs from the config.
    pub fn new(cfg: &TlbConfig) -> Mmu {
        let t = |l: &TlbLevelConfig| Tlb::new(l.entries, l.ways.max(1));
        let any = cfg.l1_organization == L1Organization::AnySize;
        Mmu {
            l1: [t(&cfg.l1_4k), t(&cfg.l1_2m), t(&cfg.l1_1g)],
            l1_any: any.then(|| t(&cfg.l1_any)),
            l2: t(&cfg.l2),
            itlb: t(&cfg.itlb),
            l1_latency_cycles: if any {
                cfg.l1_any.latency_cycles
            } else {
                cfg.l1_4k.latency_cycles
            },
            l2_latency_cycles: cfg.l2.latency_cycles,
            l1_misses: 0,
            l2_misses: 0,
            itlb_misses: 0,
            itlb_l2_misses: 0,
            invalidations: 0,
        }
    }

    /// A data translation from the L1 DTLBs, if one holds it. A miss must be followed by
    /// [`Mmu::lookup_data_after_l1_miss`] (which counts it and goes on to the L2 TLB).
    #[inline(always)]
    pub fn lookup_data_l1(&mut self, asid: Asid, vpn: Vpn) -> Option<Mapping> {
        if let Some(any) = self.l1_any.as_mut() {
            return any.lookup(asid, vpn);
        }
        // Hardware probes the per-size L1s in parallel; at most one can hold the page.
        // Unrolled: a loop over the three cost more than the probes on TLB-hitting streams.
        let [l1_4k, l1_2m, l1_1g] = &mut self.l1;
        if l1_4k.ever_filled() {
            if let Some(m) = l1_4k.lookup_sized(asid, vpn, PageSize::Size4K) {
                return Some(m);
            }
        }
        if l1_2m.ever_filled() {
            if let Some(m) = l1_2m.lookup_sized(asid, vpn, PageSize::Size2M) {
                return Some(m);
            }
        }
        if l1_1g.ever_filled() {
            if let Some(m) = l1_1g.lookup_sized(asid, vpn, PageSize::Size1G) {
                return Some(m);
            }
        }
        None
    }

    /// The data side after an L1 miss: out of line, so that the L1 hit path inlined into the
    /// engine stays small.
    #[inline(never)]
    pub fn lookup_data_after_l1_miss(&mut self, asid: Asid, vpn: Vpn) -> TlbOutcome {
        self.l1_misses += 1;
        match self.l2.lookup(asid, vpn) {
            Some(m) => {
                self.fill_l1(asid, m);
                TlbOutcome::L2Hit(m)
            }
            None => {
                self.l2_misses += 1;
                TlbOutcome::Miss
            }
        }
    }

    /// Look up an instruction-fetch translation.
    #[inline]
    pub fn lookup_ifetch(&mut self, asid: Asid, vpn: Vpn) -> TlbOutcome {
        if let Some(m) = self.itlb.lookup(asid, vpn) {
            return TlbOutcome::L1Hit(m);
        }
        self.itlb_misses += 1;
        match self.l2.lookup(asid, vpn) {
            Some(m) => {
                self.itlb.fill(asid, m);
                TlbOutcome::L2Hit(m)
            }
            None => {
                self.itlb_l2_misses += 1;
                TlbOutcome::Miss
            }
        }
    }

    /// Install a walked translation in the L2 and the right L1 (ITLB for fetches).
    #[inline]
    pub fn fill(&mut self, asid: Asid, m: Mapping, ifetch: bool) {
        self.l2.fill(asid, m);
        if ifetch {
            self.itlb.fill(asid, m);
        } else {
            self.fill_l1(asid, m);
        }
    }

    /// Install `m` in the L1 DTLB that holds its size (none in the split organization for a
    /// size other than 4 KiB / 2 MiB / 1 GiB).
    #[inline]
    fn fill_l1(&mut self, asid: Asid, m: Mapping) {
        if let Some(any) = self.l1_any.as_mut() {
            any.fill(asid, m);
        } else if let Some(i) = m.size.x86_index() {
            self.l1[i].fill(asid, m);
        }
    }

    /// Remove a translation from every level (TLB shootdown for one page).
    pub fn invalidate(&mut self, asid: Asid, m: Mapping) {
        self.invalidations += 1;
        if let Some(any) = self.l1_any.as_mut() {
            any.invalidate(asid, m);
        } else if let Some(i) = m.size.x86_index() {
            self.l1[i].invalidate(asid, m);
        }
        self.l2.invalidate(asid, m);
        self.itlb.invalidate(asid, m);
    }

    /// Remove every translation of `asid`.
    pub fn invalidate_asid(&mut self, asid: Asid) {
        for t in self.l1.iter_mut().chain(self.l1_any.as_mut()) {
            t.invalidate_asid(asid);
        }
        self.l2.invalidate_asid(asid);
        self.itlb.invalidate_asid(asid);
    }

    /// Write the `tlb` section of the result record.
    pub fn stats(&self, out: &mut Stats, instructions: u64) {
        let s = out.section("tlb");
        let l1_lookups: u64 = self.l1_misses
            + self
                .l1
                .iter()
                .chain(self.l1_any.as_ref())
                .map(|t| t.hits)
                .sum::<u64>();
        s.put_u64("l1_lookups", l1_lookups);
        s.put_u64("l1_misses", self.l1_misses);
        s.put_u64("l2_lookups", self.l2.hits + self.l2.misses);
        s.put_u64("l2_misses", self.l2_misses);
        s.put_u64("itlb_misses", self.itlb_misses);
        s.put_u64("itlb_l2_misses", self.itlb_l2_misses);
        s.put_f64("l1_miss_rate", ratio(self.l1_misses, l1_lookups));
        s.put_f64("l1_mpki", ratio(self.l1_misses * 1000, instructions));
        s.put_f64("l2_mpki", ratio(self.l2_misses * 1000, instructions));
        s.put_u64("invalidations", self.invalidations);
        for size in PageSize::X86 {
            s.put_u64(
                &format!("l1_{}_hits", size.label()),
                self.l1[size.index()].hits,
            );
        }
        if let Some(any) = &self.l1_any {
            // Hits of the any-size L1 by the size of the entry that hit.
            let mut by = Stats::new();
            for (o, n) in any.hits_by_order().iter().enumerate() {
                if *n > 0 {
                    by.put_u64(&PageSize::from_order(o as u8).expect("order").label(), *n);
                }
            }
            s.insert("l1_any_hits_by_size".into(), serde_json::Value::Object(by));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Pfn;

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
}
