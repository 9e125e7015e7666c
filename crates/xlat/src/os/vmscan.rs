//! Reclaim (Linux `mm/vmscan.c`): evict base pages to the swap device (`swap.rs`) when memory
//! runs short, chosen by the clock, and the bounded swap-out of one page a design asks for.
//!
//! Contract: reclaim never evicts beyond the swap device's size; a huge page the clock picks is
//! split into 4 KiB pages first; every evicted page is unmapped (reported, one shootdown), its
//! frame freed and its reservation broken; a later access brings it back through a major
//! fault (`fault.rs`).
//!
//! Calls: `migrate.rs` (split, shootdown costs), `policies/reservation.rs` (break and release
//! reservations).

use super::phys::FrameUse;
use super::{MapChange, Os, OsError};
use crate::addr::{Asid, Mapping, PageSize, Vpn, BASE_PAGE_BYTES};

impl Os {
    /// Reclaim until `os.swap.min_free_bytes` are free (kswapd's watermark), so that page-table
    /// allocations made while a design installs a mapping find memory.
    pub(super) fn keep_free_memory(&mut self, changes: &mut Vec<MapChange>) {
        while self.phys.free_bytes() < self.cfg.swap.min_free_bytes {
            if self.release_reservations_for_memory() {
                continue;
            }
            if self.reclaim(self.cfg.swap.batch_pages, changes) == 0 {
                break;
            }
        }
    }

    /// Evict up to `pages` base pages to swap, chosen by the clock; huge pages the hand picks
    /// are split first. Returns the pages evicted.
    pub(super) fn reclaim(&mut self, pages: u64, changes: &mut Vec<MapChange>) -> u64 {
        self.swap.reclaims += 1;
        let mut evicted = 0;
        while evicted < pages && self.swap.used_pages * BASE_PAGE_BYTES < self.cfg.swap.bytes {
            let procs = &self.procs;
            let Some((asid, vpn)) = self.swap.victim(|a, v| {
                procs[a as usize]
                    .pages
                    .get(v)
                    .filter(|m| m.vpn == v)
                    .map(|m| m.pfn)
            }) else {
                break;
            };
            let m = self.procs[asid as usize]
                .pages
                .get(vpn)
                .expect("victim mapped");
            // The frame leaves its reservation's block.
            self.break_reservations(asid, vpn, m.size.base_pages());
            if m.size > PageSize::Size4K {
                self.swap.forget(asid, vpn);
                self.split(asid, m, PageSize::Size4K, changes)
                    .expect("4 KiB pieces of a mapped page");
            }
            let piece = self.procs[asid as usize].pages.get(vpn).expect("piece");
            self.swap.forget(asid, vpn);
            self.procs[asid as usize].pages.remove(piece);
            changes.push(MapChange::Unmap(asid, piece));
            self.phys.free(piece.pfn, 0, FrameUse::Data);
            self.swap.swap_out(asid, vpn);
            self.count_shootdowns(1);
            evicted += 1;
        }
        evicted
    }

    /// Swap out the page `m` of `asid`, which a design chose (the restrictive-only system of
    /// Utopia §3 evicts the victim of a full set this way): the page is unmapped (its
    /// translation appended to `changes`, one shootdown), its frames go back to the buddy
    /// allocator, and each of its base pages is written to the swap device (counted in
    /// `os.swap.swap_outs`, charged `os.swap.swap_out_cycles`; an access brings it back as a
    /// base page through a major fault, as for reclaim's victims).
    ///
    /// Bounded: one page per call, no reclaim, no compaction. Errors (nothing changed): swap
    /// is off (`os.swap.bytes = 0`), the swap device has no room for the page, or `m` is not
    /// mapped in `asid` as given.
    pub fn swap_out_page(
        &mut self,
        asid: Asid,
        m: Mapping,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        if !self.swap_on {
            return Err(OsError(format!(
                "swap out of {m:?} (ASID {asid}) asked for with os.swap.bytes = 0: this \
                 design evicts to swap; set os.swap.bytes"
            )));
        }
        let pages = m.size.base_pages();
        if (self.swap.used_pages + pages) * BASE_PAGE_BYTES > self.cfg.swap.bytes {
            return Err(OsError(format!(
                "swap out of {m:?} (ASID {asid}): swap is full ({} of {} used)",
                crate::addr::format_bytes(self.swap.used_pages * BASE_PAGE_BYTES),
                crate::addr::format_bytes(self.cfg.swap.bytes)
            )));
        }
        let p = self.procs.get_mut(asid as usize);
        if p.as_ref().and_then(|p| p.pages.get(m.vpn)) != Some(m) {
            return Err(OsError(format!(
                "swap out: {m:?} is not mapped in ASID {asid}"
            )));
        }
        // The frames leave their reservation's block.
        self.break_reservations(asid, m.vpn, pages);
        self.procs[asid as usize].pages.remove(m);
        changes.push(MapChange::Unmap(asid, m));
        self.phys.free(m.pfn, m.size.order(), FrameUse::Data);
        self.swap.forget(asid, m.vpn);
        for i in 0..pages {
            self.swap.swap_out(asid, Vpn(m.vpn.0 + i));
        }
        self.count_shootdowns(1);
        Ok(())
    }
}
