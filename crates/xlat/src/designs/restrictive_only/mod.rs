//! # restrictive_only — all of memory set-associative (Utopia's §3 baseline)
//!
//! ## Model
//! The restrictive-only system Utopia §3 measures (after Picorel et al., PACT 2017): every
//! data page lives in one set-associative segment of 4 KiB pages, a page whose VPN hashes to
//! set `s` only in a way of `s`, at frame `base + (s x ways + way) x 4 KiB`. There is no
//! flexible segment to fall back on: a page that faults on a full set takes the slot of the
//! set's SRRIP victim, and the victim goes to the swap device (`Os::swap_out_page`); touching
//! it again is a major fault (`os.swap.swap_ins`) that brings it back into its set, evicting
//! again. Fig. 9's quantity is the swap accesses, `os.swap.swap_outs + os.swap.swap_ins`,
//! against a conventional (radix) system on the same machine.
//!
//! It is [`Utopia`] with one 4 KiB RestSeg, no PTW-tracking migration, and victims sent to
//! swap instead of the FlexSeg (the same code: RestSeg walk with TAR/SF caches, placement,
//! SRRIP, TAR/SF in memory). The RestSeg is the largest power of two of at most
//! `restseg_bytes` that leaves `reserve_bytes` of memory outside it. That reserve holds the
//! per-process TAR and SF and the one page in flight: a page faulting on a full set is first
//! installed in the reserve and moved into its victim's slot right after the fault (before
//! its access completes; no copy), exactly as Utopia's fault fill. Those moments are the only
//! time a data page is outside the RestSeg; the reserve's small radix table translates it.
//! "All of memory" therefore needs `os.phys_mem_bytes` = RestSeg + reserve (e.g. 1 GiB +
//! 32 MiB): on a larger machine the rest of memory stays unused by data.
//!
//! Statistics: every `utopia.*` key, under `restrictive_only.*`, plus `victims_swapped_out`
//! (full-set victims written to swap; reclaim's own victims are in `os.swap.swap_outs` too).
//!
//! ## Configuration
//! `[restrictive_only]`: `restseg_bytes` (1 GiB, a power of two of at most 1 GiB: one buddy
//! block), `ways` (16), `hash` (`modulo` | `prime_displacement` | `xor` | `mersenne`),
//! `reserve_bytes` (32 MiB). Swap must be on (`os.swap.bytes > 0`) once a set overflows: the
//! run stops with an error naming the set otherwise.
//!
//! ## Deviations from the paper
//! - The paper does not give the restrictive-only system's associativity, hash or
//!   replacement: Utopia's (16-way, modulo, SRRIP) are used.
//! - 4 KiB pages only (the design declares only 4 KiB): a THP policy's 2 MiB blocks cannot be
//!   placed (`place_no_restseg`) and are mapped as 4 KiB pages in the reserve; run it with
//!   `os.thp = "never"`, as the measurements in docs/designs/utopia.md do.
//! - A page in flight sits in the reserve for the rest of its fault (see Model).
//!
//! ## References
//! Kanellopoulos et al., "Utopia", MICRO 2023, §3 (Fig. 9: 2.2x swap accesses of a
//! restrictive-only system), §5.1 (RestSeg, TAR, SF); Picorel et al., "Near-Memory Address
//! Translation", PACT 2017 (the restrictive mapping across all of memory).

use crate::addr::{Asid, Mapping, PageSize, PageSizeSet, Pfn, Vpn};
use crate::designs::utopia::restseg::RestSegHash;
use crate::designs::utopia::{RestSegConfig, Utopia, UtopiaConfig};
use crate::designs::{Design, PtFootprint, WalkResult};
use crate::mem::MemSystem;
use crate::os::{MapChange, Os, OsError, PhysMem, PlaceRequest};
use crate::stats::{Stats, StatsExt};
use serde::{Deserialize, Serialize};

/// `[restrictive_only]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RestrictiveOnlyConfig {
    /// Largest size of the set-associative segment (a power of two of at most 1 GiB).
    pub restseg_bytes: u64,
    /// Associativity (a power of two).
    pub ways: u32,
    /// Set-index function.
    pub hash: RestSegHash,
    /// Memory kept outside the segment (TAR, SF, the page in flight at a fault).
    pub reserve_bytes: u64,
}

impl Default for RestrictiveOnlyConfig {
    fn default() -> Self {
        RestrictiveOnlyConfig {
            restseg_bytes: 1 << 30,
            ways: 16,
            hash: RestSegHash::Modulo,
            reserve_bytes: 32 << 20,
        }
    }
}

impl RestrictiveOnlyConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        self.utopia().validate().map_err(|e| {
            e.replace("restsegs[0].bytes", "restseg_bytes")
                .replace("restsegs[0].ways", "ways")
        })?;
        if !self.reserve_bytes.is_multiple_of(4096) {
            return Err(format!(
                "reserve_bytes must be a multiple of 4 KiB, got {}",
                self.reserve_bytes
            ));
        }
        Ok(())
    }

    /// The Utopia configuration this system is.
    fn utopia(&self) -> UtopiaConfig {
        UtopiaConfig {
            restsegs: vec![RestSegConfig {
                bytes: self.restseg_bytes,
                page_size: PageSize::Size4K,
                ways: self.ways,
            }],
            hash: self.hash,
            place_on_fault: true,
            evict_on_full_set: true,
            ptw_tracking: false,
            max_memory_share: 1.0,
            ..UtopiaConfig::default()
        }
    }
}

/// The restrictive-only design.
pub struct RestrictiveOnly {
    inner: Utopia,
}

impl RestrictiveOnly {
    /// The Utopia machinery underneath (its single RestSeg).
    pub fn inner(&self) -> &Utopia {
        &self.inner
    }
}

impl Design for RestrictiveOnly {
    type Config = RestrictiveOnlyConfig;

    fn new(cfg: &RestrictiveOnlyConfig, phys: &mut PhysMem) -> Result<Self, OsError> {
        let cap = phys.total_bytes().saturating_sub(cfg.reserve_bytes);
        let mut inner = Utopia::with_cap(&cfg.utopia(), phys, cap, "restrictive_only")?;
        if inner.restsegs().is_empty() {
            return Err(OsError(format!(
                "restrictive_only: {} of memory less restrictive_only.reserve_bytes ({}) \
                 cannot hold two sets of {} ways",
                crate::addr::format_bytes(phys.total_bytes()),
                crate::addr::format_bytes(cfg.reserve_bytes),
                cfg.ways
            )));
        }
        inner.evict_to_swap();
        Ok(RestrictiveOnly { inner })
    }

    fn page_sizes(&self) -> PageSizeSet {
        PageSizeSet::EMPTY.with(PageSize::Size4K)
    }

    fn va_bits(&self) -> Option<u32> {
        self.inner.va_bits()
    }

    const OVERLAPS_L2_TLB_LOOKUP: bool = true;

    fn set_l2_tlb_latency(&mut self, cycles: u32) {
        self.inner.set_l2_tlb_latency(cycles);
    }

    fn place(&mut self, phys: &mut PhysMem, req: &PlaceRequest) -> Option<Pfn> {
        self.inner.place(phys, req)
    }

    fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
        self.inner.map(phys, asid, m)
    }

    fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
        self.inner.unmap(phys, asid, m);
    }

    #[inline]
    fn wants_os_work(&self) -> bool {
        self.inner.wants_os_work()
    }

    fn os_work(
        &mut self,
        os: &mut Os,
        now_cycles: u64,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        self.inner.os_work(os, now_cycles, changes)
    }

    #[inline]
    fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
        self.inner.walk(asid, vpn, mem)
    }

    fn walk_after_fault(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
        self.inner.walk_after_fault(asid, vpn, mem)
    }

    #[inline]
    fn prefetch(&self, asid: Asid, vpn: Vpn, mem: &MemSystem) {
        self.inner.prefetch(asid, vpn, mem);
    }

    fn footprint(&self) -> PtFootprint {
        self.inner.footprint()
    }

    fn set_cores(&mut self, n: usize) {
        self.inner.set_cores(n);
    }

    fn select_core(&mut self, core: usize) {
        self.inner.select_core(core);
    }

    fn flush_mmu_caches(&mut self) {
        self.inner.flush_mmu_caches();
    }

    fn mmu_cache_misses(&self) -> u64 {
        self.inner.mmu_cache_misses()
    }

    fn stats(&self, out: &mut Stats) {
        let mut own = Stats::new();
        self.inner.stats(&mut own);
        let mut section = match own.remove("utopia") {
            Some(serde_json::Value::Object(m)) => m,
            _ => Stats::new(),
        };
        section.put_u64("victims_swapped_out", self.inner.victims_swapped_out());
        out.insert(
            "restrictive_only".into(),
            serde_json::Value::Object(section),
        );
    }
}

/// This design's profile (`profile.toml` beside this file): the settings its paper assumes
/// around it, applied when the design is named (format and rules: `crate::profiles`).
pub const PROFILE: &str = include_str!("profile.toml");

#[cfg(test)]
mod tests;
