//! # perfect_tlb — every translation hits the L1 TLB
//!
//! ## Model
//! An upper bound: translation costs nothing beyond an L1 TLB hit. The OS still maintains an
//! ordinary radix tree (its memory is counted), which is consulted only to discover unmapped
//! pages at first touch, at no cost.
//!
//! ## Configuration
//! `[perfect_tlb]`: `levels` of the underlying radix tree (only affects page-table memory).
//!
//! ## Deviations from the paper
//! None: Utopia §3 uses it only as the bound on translation overhead.
//!
//! ## References
//! Utopia (MICRO'23) §3, "Perfect TLB".

use crate::addr::{Asid, Mapping, Vpn};
use crate::designs::radix::RadixTable;
use crate::designs::{Design, PtFootprint, WalkResult};
use crate::mem::MemSystem;
use crate::os::{OsError, PhysMem};
use crate::stats::Stats;
use serde::{Deserialize, Serialize};

/// `[perfect_tlb]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PerfectTlbConfig {
    /// Levels of the radix tree the OS maintains (4 or 5).
    pub levels: u32,
}

impl Default for PerfectTlbConfig {
    fn default() -> Self {
        PerfectTlbConfig { levels: 4 }
    }
}

impl PerfectTlbConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.levels == 4 || self.levels == 5) {
            return Err(format!("levels must be 4 or 5, got {}", self.levels));
        }
        Ok(())
    }
}

/// Free translations.
pub struct PerfectTlb {
    table: RadixTable,
}

impl Design for PerfectTlb {
    type Config = PerfectTlbConfig;
    const PERFECT_TLB: bool = true;

    fn va_bits(&self) -> Option<u32> {
        Some(crate::addr::BASE_PAGE_SHIFT + 9 * self.table.levels())
    }

    fn new(cfg: &PerfectTlbConfig, _phys: &mut PhysMem) -> Result<Self, OsError> {
        Ok(PerfectTlb {
            table: RadixTable::new(cfg.levels),
        })
    }

    fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
        self.table.map(phys, asid, m)
    }

    fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
        self.table.unmap(phys, asid, m, |_| {});
    }

    #[inline]
    fn walk(&mut self, asid: Asid, vpn: Vpn, _mem: &mut MemSystem) -> WalkResult {
        WalkResult {
            mapping: self.table.lookup(asid, vpn).map(|(m, _)| m),
            latency_cycles: 0,
            mem_accesses: 0,
        }
    }

    fn footprint(&self) -> PtFootprint {
        self.table.footprint()
    }

    fn stats(&self, _out: &mut Stats) {}
}

/// This design's profile (`profile.toml` beside this file): the settings its paper assumes
/// around it, applied when the design is named (format and rules: `crate::profiles`).
pub const PROFILE: &str = include_str!("profile.toml");
