//! # tps — Tailored Page Sizes: pages of every power of two in an x86 radix table
//!
//! ## Model
//! The x86-64 radix table of [`crate::designs::radix`] (same nodes, same walk, same page-walk
//! caches) whose leaves may also be *tailored pages*: any power of two from 8 KiB to 512 MiB
//! besides 4 KiB, 2 MiB and 1 GiB. A tailored page is a leaf at the level of the largest x86 size
//! not above it (8 KiB .. 1 MiB in a page table, 4 MiB .. 512 MiB in a page directory), written
//! in each of the `2^r` aligned entries an address in it can index. Each carries the T bit and
//! the size NAPOT-like in the PFN bits the larger page leaves unused (§III-A1, Fig. 5). Two ways
//! to write the entries other than the first (`tps.ptes`):
//! - `alias` (default): alias PTEs carry the T bit and the size only; a walk that reads one
//!   makes one more dependent access, to the true PTE (the entry with the page-offset index bits
//!   zeroed, Fig. 6). Counted in `tps.alias_accesses` and in `walk.mem_refs`.
//! - `copies`: every entry is a full copy of the true PTE; no extra access.
//!
//! The design declares every size (`page_sizes` = 4 KiB .. 1 GiB), so the OS model's policies
//! build tailored pages: `os.policy = "reservation"` (§III-B1: a buddy block of the tailored size
//! reserved at a region's first fault, base pages mapped from it, promoted in place when
//! `os.reservation.promotion_threshold` of the larger page is touched; `os.reservation.rule`
//! `exact` is the conservative split 28 KiB -> 16 + 8 + 4, `next_pow2` the aggressive one; smaller
//! blocks when fragmentation leaves no block of the size) or `os.policy = "eager"`. The TLB of
//! Table I is `tlb.l1_organization = "split_any_size"` with `tlb.l1_any` = 32 entries, fully
//! associative, and `tlb.l2_organization = "split_1g"`
//! (`--cpu skylake-sp --preset configs/tps-table1.toml`); any TLB organization works (with the
//! default split L1, tailored pages are cached in the L2 only).
//!
//! Statistics (`tps.*`): the radix walk figures (`levels`, `pwc_*`), `ptes` (the variant),
//! `pte_writes` (leaf entries set or cleared by maps and unmaps), `pte_updates` (maps and unmaps
//! of leaves), `pte_writes_per_update`, `tailored_pte_writes` / `tailored_updates` (the same for
//! tailored pages only) and `alias_accesses`.
//!
//! ## Configuration
//! `[tps]`: `ptes` (`alias` | `copies`), and `[tps.radix]` with the fields of `[radix]` (levels,
//! page-walk caches; defaults as radix's).
//!
//! ## Deviations from the paper
//! - Maps and unmaps write every entry of a tailored page in both variants (an alias PTE holds
//!   the size, so it is written when the page is made, grown or removed): the variants differ in
//!   walk accesses, not in `pte_writes`. The paper's costlier updates of copies are in-place PTE
//!   changes (accessed / dirty bits, permission changes) that the model does not make: the walker
//!   sets no A/D bit, and `mprotect` is an unmap and a map in the OS model. One in-place update of
//!   a tailored page of `2^r` entries would write 1 entry with aliases and `2^r` with copies.
//! - A promotion is reported by the OS model as unmaps of the smaller pages and a map of the
//!   larger one, so its PTE writes count the clearing as well as the writing of the entries.
//! - The A/D bit vector in alias PTEs (§III-C1) is not modeled.
//! - The PTE's T bit is bit 4 of the entry (an ignored bit), not a reserved bit of real hardware.
//!
//! ## References
//! Guvenilir and Patt, "Tailored Page Sizes", ISCA 2020: §III-A1 (PTE encoding, alias PTEs),
//! §III-A2 (TPS TLB), §III-B (reservations, promotion threshold, fragmentation), Table I.

use crate::addr::{Asid, Mapping, PageSizeSet};
use crate::designs::radix::{Radix, RadixConfig, RadixTable, TailoredPtes};
use crate::designs::Design;
use crate::os::{OsError, PhysMem};
use crate::stats::{ratio, Stats, StatsExt};
use serde::{Deserialize, Serialize};

/// `[tps]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TpsConfig {
    /// How a tailored page's entries other than the first are written: `alias` or `copies`.
    pub ptes: TailoredPtes,
    /// The radix table and its page-walk caches.
    pub radix: RadixConfig,
}

impl Default for TpsConfig {
    fn default() -> Self {
        TpsConfig {
            ptes: TailoredPtes::Alias,
            radix: RadixConfig::default(),
        }
    }
}

impl TpsConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        self.radix.validate().map_err(|e| format!("radix.{e}"))
    }
}

/// TPS: a radix table with tailored pages, walked as radix walks it.
pub struct Tps {
    radix: Radix,
}

impl Design for Tps {
    type Config = TpsConfig;
    crate::designs::radix::forward_to_inner_radix!();

    fn new(cfg: &TpsConfig, _phys: &mut PhysMem) -> Result<Self, OsError> {
        let table = RadixTable::with_tailored(cfg.radix.levels, cfg.ptes);
        Ok(Tps {
            radix: Radix::with_table(&cfg.radix, table),
        })
    }

    fn page_sizes(&self) -> PageSizeSet {
        PageSizeSet::ALL
    }

    fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
        self.radix.map(phys, asid, m)
    }

    fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
        self.radix.unmap(phys, asid, m)
    }

    fn stats(&self, out: &mut Stats) {
        let s = out.section("tps");
        self.radix.write_stats(s);
        let t = self.radix.table();
        let ptes = match t.tailored() {
            Some(TailoredPtes::Copies) => "copies",
            _ => "alias",
        };
        s.put_str("ptes", ptes);
        s.put_u64("pte_writes", t.leaf_writes());
        s.put_u64("pte_updates", t.leaf_updates());
        s.put_f64(
            "pte_writes_per_update",
            ratio(t.leaf_writes(), t.leaf_updates()),
        );
        s.put_u64("tailored_pte_writes", t.tailored_writes());
        s.put_u64("tailored_updates", t.tailored_updates());
        s.put_u64("alias_accesses", self.radix.alias_accesses());
    }
}

#[cfg(test)]
mod tests;
