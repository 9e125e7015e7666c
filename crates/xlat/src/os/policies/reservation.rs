//! Reservation-based paging (`os.policy = "reservation"`, `os.reservation.*`; FreeBSD superpage
//! reservations, Navarro et al. OSDI'02; TPS §III-B): the first fault in a region reserves a
//! naturally aligned block of frames (the rule's target size, smaller when fragmentation leaves
//! no such block), base pages are mapped from it at their offset, and a part whose touched
//! share reaches `promotion_threshold` is promoted in place to one larger page.
//!
//! Contract: a reservation's unmapped frames are counted as `FrameUse::Reserved` and return to
//! the allocator when it is broken (munmap, mprotect, a moved or evicted page inside it) or
//! released under memory pressure; promotion never copies (the frames are already the aligned
//! block) and counts the untouched pages it maps as bloat. The reservation data structure is
//! `os/reservation.rs`.

use super::FaultPolicy;
use crate::addr::{Asid, Mapping, PageSize, Vaddr, Vpn, BASE_PAGE_BYTES};
use crate::os::phys::FrameUse;
use crate::os::policy::ReservationRule;
use crate::os::reservation::Reservation;
use crate::os::vma::Vma;
use crate::os::{MapChange, Os, OsError, Placer};
use crate::stats::{Stats, StatsExt};

/// `os.policy = "reservation"`.
pub struct Policy;

impl FaultPolicy for Policy {
    fn fault(
        os: &mut Os,
        asid: Asid,
        va: Vaddr,
        vma: &Vma,
        writable: bool,
        placer: &mut dyn Placer,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        os.fault_reservation(asid, va, vma, writable, placer, changes)
    }

    fn stats_into(os: &Os, s: &mut Stats) {
        let c = &os.c;
        s.put_u64("reservations", c.reservations_made);
        s.put_u64("reservations_broken", c.reservations_broken);
        s.put_u64(
            "reservations_released_for_memory",
            c.reservations_released_for_memory,
        );
        s.put_u64("promotions", c.promotions);
        s.put_u64("promotion_bloat_bytes", c.promotion_bloat_bytes);
    }
}

impl Os {
    /// Reservation-based paging: map the base page from the reservation covering `va` (making
    /// one at the region's first fault), then promote in place as far as the threshold allows.
    pub(in crate::os) fn fault_reservation(
        &mut self,
        asid: Asid,
        va: Vaddr,
        vma: &Vma,
        writable: bool,
        placer: &mut dyn Placer,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        let vpn = va.vpn();
        let covered = self.procs[asid as usize]
            .reservations
            .covering(vpn)
            .is_some();
        if !covered && !self.reserve(asid, vpn, vma) {
            return self.fault_base(asid, va, writable, placer, changes);
        }
        let r = self.procs[asid as usize]
            .reservations
            .covering(vpn)
            .expect("reservation covers the fault");
        let (first, order) = (r.vpn, r.order);
        let m = Mapping {
            vpn,
            pfn: r.frame_of(vpn),
            size: PageSize::Size4K,
            writable,
        };
        r.mark(vpn);
        self.phys
            .transfer(BASE_PAGE_BYTES, FrameUse::Reserved, FrameUse::Data);
        self.install(asid, m, changes);
        self.promote(asid, first, order, vpn, vma, changes);
        Ok(self.procs[asid as usize]
            .pages
            .get(vpn)
            .expect("just mapped"))
    }

    /// Make a reservation for the region around `vpn` (the rule's target size, falling back to
    /// smaller ones when no block is free). Returns whether one was made.
    pub(in crate::os) fn reserve(&mut self, asid: Asid, vpn: Vpn, vma: &Vma) -> bool {
        let max = PageSize::from_bytes(self.cfg.reservation.max_bytes)
            .expect("validated")
            .order();
        let p = &self.procs[asid as usize];
        // The largest aligned block around the fault that the rule allows for the VMA, not
        // overlapping mappings or other reservations.
        let target = (1..=max).rev().find(|&order| {
            let first = vpn.0 & !((1u64 << order) - 1);
            self.block_fits(asid, vma, Vpn(first), order)
                && !p.reservations.overlaps(Vpn(first), 1 << order)
                && !p.pages.range_in_use(Vpn(first), 1 << order)
        });
        let Some(target) = target else {
            return false;
        };
        // Fragmentation: fall back to the largest smaller block that is free.
        let Some(order) = (1..=target).rev().find(|o| self.phys.can_alloc(*o)) else {
            return false;
        };
        let Ok(pfn) = self.phys.alloc(order, FrameUse::Reserved) else {
            return false;
        };
        let first = Vpn(vpn.0 & !((1u64 << order) - 1));
        self.c.reservations_made += 1;
        self.procs[asid as usize]
            .reservations
            .insert(Reservation::new(first, pfn, order));
        true
    }

    /// Whether the aligned block of `2^order` pages at `first` may be reserved (and mapped as
    /// one page) for `vma` under `os.reservation.rule`: inside the VMA (`exact`), or starting
    /// inside it and reaching at most the VMA's size rounded up to a power of two past its start,
    /// over no other VMA (`next_pow2`).
    pub(in crate::os) fn block_fits(&self, asid: Asid, vma: &Vma, first: Vpn, order: u8) -> bool {
        let (lo, hi) = (first.addr().0, first.addr().0 + (BASE_PAGE_BYTES << order));
        if lo < vma.start {
            return false;
        }
        if hi <= vma.end {
            return true;
        }
        match self.cfg.reservation.rule {
            ReservationRule::Exact => false,
            ReservationRule::NextPow2 => {
                let rounded = (vma.end - vma.start).next_power_of_two();
                hi - lo <= rounded
                    && !self.procs[asid as usize]
                        .vmas
                        .iter()
                        .any(|v| v.start < hi && v.end > lo && v.start != vma.start)
            }
        }
    }

    /// Promote the reservation at `first` around `vpn` to the largest page the design
    /// translates whose touched share reaches the threshold (in place: the frames are already
    /// the aligned block). Untouched pages it maps are counted as bloat.
    pub(in crate::os) fn promote(
        &mut self,
        asid: Asid,
        first: Vpn,
        order: u8,
        vpn: Vpn,
        vma: &Vma,
        changes: &mut Vec<MapChange>,
    ) {
        let threshold = self.cfg.reservation.promotion_threshold;
        // Per level: may the block be one page, and how many of its pages lie in the VMA (the
        // threshold counts those: pages past the VMA's end are never touched).
        let mut fits = [false; PageSize::MAX_ORDER as usize + 1];
        let mut inside = [0u64; PageSize::MAX_ORDER as usize + 1];
        for k in 0..=order {
            let block = Vpn(vpn.0 & !((1u64 << k) - 1));
            fits[k as usize] = self.block_fits(asid, vma, block, k);
            let end = (block.0 + (1 << k)).min(vma.end >> 12);
            inside[k as usize] = end.saturating_sub(block.0);
        }
        let p = &mut self.procs[asid as usize];
        let current = p.pages.get(vpn).expect("mapped").size.order();
        let r = p.reservations.covering(vpn).expect("reservation");
        let Some(level) = (current + 1..=order).rev().find(|&k| {
            let size = PageSize::from_order(k).expect("order");
            self.sizes.contains(size)
                && fits[k as usize]
                && r.mapped_in(k, vpn) as f64 >= threshold * inside[k as usize] as f64
        }) else {
            return;
        };
        let size = PageSize::from_order(level).expect("order");
        let block = vpn.align_down(size);
        let old = p.pages.in_range(block, Vpn(block.0 + size.base_pages()));
        // Pages of one protection only (mprotect breaks reservations, so this holds).
        let writable = old[0].writable;
        let pfn = r.frame_of(block);
        // In place only: every page already on its reserved frame, with one protection.
        if old
            .iter()
            .any(|m| m.writable != writable || m.pfn.0 != pfn.0 + (m.vpn.0 - block.0))
        {
            return;
        }
        let mut bloat = 0;
        for v in block.0..block.0 + size.base_pages() {
            if r.mark(Vpn(v)) {
                bloat += 1;
            }
        }
        let done = r.mapped() == r.pages() && level == order;
        for m in &old {
            debug_assert_eq!(
                m.pfn.0,
                pfn.0 + (m.vpn.0 - block.0),
                "not the reserved frames"
            );
            p.pages.remove(*m);
            changes.push(MapChange::Unmap(asid, *m));
        }
        if done {
            p.reservations.remove(first);
        }
        self.phys
            .transfer(bloat * BASE_PAGE_BYTES, FrameUse::Reserved, FrameUse::Data);
        self.c.promotions += 1;
        self.c.promotion_bloat_bytes += bloat * BASE_PAGE_BYTES;
        self.count_shootdowns(old.len() as u64);
        self.install(
            asid,
            Mapping {
                vpn: block,
                pfn,
                size,
                writable,
            },
            changes,
        );
    }

    /// Break the reservations overlapping `pages` pages from `start`: their unmapped frames go
    /// back to the allocator (mapped pages stay as they are).
    pub(in crate::os) fn break_reservations(&mut self, asid: Asid, start: Vpn, pages: u64) {
        let p = &mut self.procs[asid as usize];
        if p.reservations.is_empty() {
            return;
        }
        for r in p.reservations.take_overlapping(start, pages) {
            self.c.reservations_broken += 1;
            for (pfn, order) in r.unmapped_blocks() {
                self.phys.free(pfn, order, FrameUse::Reserved);
            }
        }
    }

    /// Memory pressure: break every reservation to free its unmapped frames. Returns whether
    /// any frame was freed.
    pub(in crate::os) fn release_reservations_for_memory(&mut self) -> bool {
        let mut freed = false;
        for p in &mut self.procs {
            for r in p.reservations.take_all() {
                self.c.reservations_released_for_memory += 1;
                for (pfn, order) in r.unmapped_blocks() {
                    self.phys.free(pfn, order, FrameUse::Reserved);
                    freed = true;
                }
            }
        }
        freed
    }
}
