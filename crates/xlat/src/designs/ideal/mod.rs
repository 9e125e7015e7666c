//! # ideal — one memory access per TLB miss
//!
//! ## Model
//! The page table is the ordinary radix tree (so page-table memory and the placement of leaf
//! entries in physical memory are realistic), but the hardware reaches the leaf entry with
//! exactly one memory reference, as if every upper level were always cached at no cost. The one
//! reference goes through the cache hierarchy like any page-table read.
//!
//! ## Configuration
//! `[ideal]`: `levels` of the underlying radix tree (4 or 5; only affects page-table memory).
//!
//! ## Deviations from the paper
//! LVM §6.3 defines the ideal design only by its one access; where the leaf entry lives is our
//! choice (the radix leaf), which decides its cache behaviour.
//!
//! ## References
//! LVM (MICRO'25) §6.3, "Ideal" baseline.

use crate::addr::{Asid, Mapping, Vpn};
use crate::designs::radix::RadixTable;
use crate::designs::{Design, PtFootprint, WalkResult};
use crate::mem::MemSystem;
use crate::os::{OsError, PhysMem};
use crate::stats::{Stats, StatsExt};
use serde::{Deserialize, Serialize};

/// `[ideal]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct IdealConfig {
    /// Levels of the radix tree that stores the entries (4 or 5).
    pub levels: u32,
}

impl Default for IdealConfig {
    fn default() -> Self {
        IdealConfig { levels: 4 }
    }
}

impl IdealConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.levels == 4 || self.levels == 5) {
            return Err(format!("levels must be 4 or 5, got {}", self.levels));
        }
        Ok(())
    }
}

/// One-access walks.
pub struct Ideal {
    table: RadixTable,
    walks: u64,
}

impl Design for Ideal {
    type Config = IdealConfig;

    fn va_bits(&self) -> Option<u32> {
        Some(crate::addr::BASE_PAGE_SHIFT + 9 * self.table.levels())
    }

    fn new(cfg: &IdealConfig, _phys: &mut PhysMem) -> Result<Self, OsError> {
        Ok(Ideal {
            table: RadixTable::new(cfg.levels),
            walks: 0,
        })
    }

    fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
        self.table.map(phys, asid, m)
    }

    fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
        self.table.unmap(phys, asid, m, |_| {});
    }

    #[inline]
    fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
        self.walks += 1;
        // One access to the last entry the lookup reads: the leaf, or for an unmapped page the
        // empty entry that proves it (nothing at all before the address space has a table).
        let (mapping, entry) = self.table.lookup_entry(asid, vpn);
        match entry {
            Some(entry) => WalkResult {
                mapping,
                latency_cycles: mem.pt_access(entry).latency_cycles,
                mem_accesses: 1,
            },
            None => WalkResult {
                mapping,
                latency_cycles: 0,
                mem_accesses: 0,
            },
        }
    }

    /// The walk reads one entry, the one radix's walk ends at: prefetch it as radix does.
    #[inline]
    fn prefetch(&self, asid: Asid, vpn: Vpn, mem: &MemSystem) {
        if let Some(pa) = self.table.prefetch(asid, vpn) {
            mem.prefetch(pa);
        }
    }

    fn prefetch_early(&self, asid: Asid, vpn: Vpn) {
        self.table.prefetch_upper(asid, vpn);
    }

    fn footprint(&self) -> PtFootprint {
        self.table.footprint()
    }

    fn stats(&self, out: &mut Stats) {
        out.section("ideal").put_u64("walks", self.walks);
    }
}

/// This design's profile (`profile.toml` beside this file): the settings its paper assumes
/// around it, applied when the design is named (format and rules: `crate::profiles`).
pub const PROFILE: &str = include_str!("profile.toml");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::{PageSize, Pfn};
    use crate::mem::MemConfig;

    #[test]
    fn every_walk_of_a_mapped_page_makes_exactly_one_reference() {
        let mut phys = PhysMem::new(1 << 30);
        let mut d = Ideal::new(&IdealConfig::default(), &mut phys).unwrap();
        let mut mem = MemSystem::new(&MemConfig::default());
        for (vpn, size) in [(0x1234u64, PageSize::Size4K), (0x200, PageSize::Size2M)] {
            let m = Mapping {
                vpn: Vpn(vpn),
                pfn: Pfn(vpn),
                size,
                writable: true,
            };
            d.map(&mut phys, 0, m).unwrap();
            let w = d.walk(0, Vpn(vpn + size.base_pages() - 1), &mut mem);
            assert_eq!(w.mem_accesses, 1);
            assert_eq!(w.mapping, Some(m));
        }
    }

    #[test]
    fn a_walk_that_finds_nothing_mapped_also_makes_exactly_one_reference() {
        let mut phys = PhysMem::new(1 << 30);
        let mut d = Ideal::new(&IdealConfig::default(), &mut phys).unwrap();
        let mut mem = MemSystem::new(&MemConfig::default());
        let m = Mapping {
            vpn: Vpn(0x1234),
            pfn: Pfn(9),
            size: PageSize::Size4K,
            writable: true,
        };
        d.map(&mut phys, 0, m).unwrap();
        for unmapped in [0x1235u64, 0x7_0000_0000] {
            let w = d.walk(0, Vpn(unmapped), &mut mem);
            assert_eq!((w.mapping, w.mem_accesses), (None, 1));
        }
    }
}
