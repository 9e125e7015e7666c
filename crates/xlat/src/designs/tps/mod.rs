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
//! **Accessed bits, in place** (§III-A1, §III-C1). A walk that reaches a page whose accessed
//! bit is clear sets it in the page table, an in-place PTE update (sticky: once per page until
//! the page is unmapped). With `copies` every entry of a tailored page holds the bit and all
//! `2^r` are written; with `alias` only the true PTE is (1 write). With `alias` and
//! `tps.ad_vector_bits = B > 0`, the unused bits of the alias PTEs hold a bit vector of the
//! tailored page's accessed state at the granularity `size / min(B, 4 KiB pages)` (the paper's
//! example: B = 16): the first walk into each chunk sets its bit, one entry written each.
//!
//! Statistics (`tps.*`): the radix walk figures (`levels`, `pwc_*`), `ptes` (the variant),
//! `pte_writes` (leaf entries set or cleared by maps and unmaps), `pte_updates` (maps and unmaps
//! of leaves), `pte_writes_per_update`, `tailored_pte_writes` / `tailored_updates` (the same for
//! tailored pages only), `alias_accesses`, and the in-place accessed-bit updates: `ad_updates`
//! (bits set by walks), `ad_pte_writes` (entries they wrote), `ad_pte_writes_per_ad_update`,
//! `tailored_ad_updates` / `tailored_ad_pte_writes` (tailored pages only).
//!
//! ## Configuration
//! `[tps]`: `ptes` (`alias` | `copies`), `ad_vector_bits` (0: no bit vector, the default; a
//! power of two up to 256 with `alias`: the A/D bit vector of §III-C1), and `[tps.radix]` with
//! the fields of `[radix]` (levels, page-walk caches; defaults as radix's).
//!
//! ## Deviations from the paper
//! - Maps and unmaps write every entry of a tailored page in both variants (an alias PTE holds
//!   the size, so it is written when the page is made, grown or removed): the variants differ in
//!   walk accesses and in the in-place accessed-bit updates (`ad_pte_writes`), not in
//!   `pte_writes`. Permission changes are not in-place updates here: `mprotect` is an unmap and a
//!   map in the OS model.
//! - Only the accessed bit is modelled. The dirty bit needs the access kind, which a walk does
//!   not receive (`Design::walk` takes a VPN); a store's dirty-bit update would write the same
//!   entries as an accessed-bit update (1 with aliases or the vector's chunk, `2^r` with copies).
//! - The bit updates happen on walks only. With the bit vector, the paper caches the vector
//!   with the TLB and sets a chunk's bit on a TLB *hit* as well; here a chunk first touched
//!   while its page is already cached is not counted until a later walk reaches it, so
//!   `ad_updates` with a vector is a lower bound. The updates cost no walk latency or memory
//!   traffic (the walker's locked write to a line it has just read): counts only.
//! - A promotion is reported by the OS model as unmaps of the smaller pages and a map of the
//!   larger one, so its PTE writes count the clearing as well as the writing of the entries.
//! - The PTE's T bit is bit 4 of the entry (an ignored bit), not a reserved bit of real hardware.
//!
//! ## References
//! Guvenilir and Patt, "Tailored Page Sizes", ISCA 2020: §III-A1 (PTE encoding, alias PTEs),
//! §III-A2 (TPS TLB), §III-B (reservations, promotion threshold, fragmentation), Table I.

use crate::addr::{Asid, Mapping, PageSizeSet, Vpn};
use crate::designs::radix::{Radix, RadixConfig, RadixTable, TailoredPtes};
use crate::designs::{Design, WalkResult};
use crate::mem::MemSystem;
use crate::os::{OsError, PhysMem};
use crate::stats::{ratio, Stats, StatsExt};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// `[tps]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TpsConfig {
    /// How a tailored page's entries other than the first are written: `alias` or `copies`.
    pub ptes: TailoredPtes,
    /// Bits of the accessed-state vector kept in a tailored page's alias PTEs (§III-C1): 0 for
    /// none (one accessed bit per page, in the true PTE), else a power of two up to 256 (alias
    /// PTEs only).
    pub ad_vector_bits: u32,
    /// The radix table and its page-walk caches.
    pub radix: RadixConfig,
}

impl Default for TpsConfig {
    fn default() -> Self {
        TpsConfig {
            ptes: TailoredPtes::Alias,
            ad_vector_bits: 0,
            radix: RadixConfig::default(),
        }
    }
}

impl TpsConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        if self.ad_vector_bits != 0 {
            if !self.ad_vector_bits.is_power_of_two() || self.ad_vector_bits > 256 {
                return Err(format!(
                    "ad_vector_bits must be 0 or a power of two up to 256, got {}",
                    self.ad_vector_bits
                ));
            }
            if self.ptes != TailoredPtes::Alias {
                return Err(
                    "ad_vector_bits needs ptes = \"alias\" (the vector lives in the alias PTEs)"
                        .into(),
                );
            }
        }
        self.radix.validate().map_err(|e| format!("radix.{e}"))
    }
}

/// TPS: a radix table with tailored pages, walked as radix walks it.
pub struct Tps {
    radix: Radix,
    ptes: TailoredPtes,
    ad_vector_bits: u32,
    /// Accessed state of every mapped page that a walk has reached, by (ASID, first VPN): one
    /// bit per vector chunk (bit 0 only without a vector). Removed when the page is unmapped.
    accessed: HashMap<(Asid, u64), u64>,
    ad: AdCounts,
}

/// In-place accessed-bit updates made by walks.
#[derive(Clone, Copy, Debug, Default)]
struct AdCounts {
    updates: u64,
    pte_writes: u64,
    tailored_updates: u64,
    tailored_pte_writes: u64,
}

/// Entries a page of `m`'s size takes in its radix level: `2^r` for a tailored page, 1 for an
/// x86 size (4 KiB, 2 MiB, 1 GiB).
fn entries_of(m: &Mapping) -> u64 {
    1 << (m.size.order() % 9)
}

impl Tps {
    /// Set the accessed bit (or vector chunk) of the page a walk of `vpn` reached, counting
    /// the entries the in-place update writes.
    #[inline]
    fn mark_accessed(&mut self, asid: Asid, vpn: Vpn, w: &WalkResult) {
        let Some(m) = w.mapping else { return };
        let entries = entries_of(&m);
        let base_pages = m.size.base_pages();
        let vector = self.ad_vector_bits > 0 && entries > 1;
        let bit = if vector {
            let chunks = (self.ad_vector_bits as u64).min(base_pages);
            (vpn.0 - m.vpn.0) * chunks / base_pages
        } else {
            0
        };
        let state = self.accessed.entry((asid, m.vpn.0)).or_insert(0);
        if *state >> bit & 1 == 1 {
            return;
        }
        *state |= 1 << bit;
        let writes = match self.ptes {
            TailoredPtes::Copies => entries,
            TailoredPtes::Alias => 1,
        };
        self.ad.updates += 1;
        self.ad.pte_writes += writes;
        if entries > 1 {
            self.ad.tailored_updates += 1;
            self.ad.tailored_pte_writes += writes;
        }
    }
}

impl Design for Tps {
    type Config = TpsConfig;

    fn new(cfg: &TpsConfig, _phys: &mut PhysMem) -> Result<Self, OsError> {
        let table = RadixTable::with_tailored(cfg.radix.levels, cfg.ptes);
        Ok(Tps {
            radix: Radix::with_table(&cfg.radix, table),
            ptes: cfg.ptes,
            ad_vector_bits: cfg.ad_vector_bits,
            accessed: HashMap::new(),
            ad: AdCounts::default(),
        })
    }

    // Radix's forwarding (`forward_to_inner_radix!`), but walks set accessed bits.
    fn va_bits(&self) -> Option<u32> {
        self.radix.va_bits()
    }

    fn coalesced(
        &self,
        asid: Asid,
        m: Mapping,
        req: crate::mmu::CoalesceRequest,
    ) -> Option<crate::mmu::CoalescedSpan> {
        self.radix.coalesced(asid, m, req)
    }

    #[inline]
    fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
        let w = self.radix.walk(asid, vpn, mem);
        self.mark_accessed(asid, vpn, &w);
        w
    }

    fn walk_after_fault(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
        let w = self.radix.walk_after_fault(asid, vpn, mem);
        self.mark_accessed(asid, vpn, &w);
        w
    }

    #[inline]
    fn prefetch(&self, asid: Asid, vpn: Vpn, mem: &MemSystem) {
        self.radix.prefetch(asid, vpn, mem)
    }

    #[inline]
    fn prefetch_early(&self, asid: Asid, vpn: Vpn) {
        self.radix.prefetch_early(asid, vpn)
    }

    fn footprint(&self) -> crate::designs::PtFootprint {
        self.radix.footprint()
    }

    fn set_cores(&mut self, n: usize) {
        self.radix.set_cores(n)
    }

    fn select_core(&mut self, core: usize) {
        self.radix.select_core(core)
    }

    fn flush_mmu_caches(&mut self) {
        self.radix.flush_mmu_caches()
    }

    fn mmu_cache_misses(&self) -> u64 {
        self.radix.mmu_cache_misses()
    }

    fn page_sizes(&self) -> PageSizeSet {
        PageSizeSet::ALL
    }

    fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
        self.radix.map(phys, asid, m)
    }

    fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
        // The entries are cleared: a page mapped here again starts with its bits clear.
        self.accessed.remove(&(asid, m.vpn.0));
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
        s.put_u64("ad_updates", self.ad.updates);
        s.put_u64("ad_pte_writes", self.ad.pte_writes);
        s.put_f64(
            "ad_pte_writes_per_ad_update",
            ratio(self.ad.pte_writes, self.ad.updates),
        );
        s.put_u64("tailored_ad_updates", self.ad.tailored_updates);
        s.put_u64("tailored_ad_pte_writes", self.ad.tailored_pte_writes);
    }
}

/// This design's profile (`profile.toml` beside this file): the settings its paper assumes
/// around it, applied when the design is named (format and rules: `crate::profiles`).
pub const PROFILE: &str = include_str!("profile.toml");

#[cfg(test)]
mod tests;
