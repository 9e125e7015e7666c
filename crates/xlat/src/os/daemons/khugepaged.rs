//! khugepaged (`os.khugepaged.*`; Linux `mm/khugepaged.c`): the background daemon that
//! collapses 2 MiB ranges of base pages into 2 MiB pages. Every `interval_cycles` it scans up
//! to `pages_to_scan` pages in 2 MiB ranges inside VMAs, round robin over processes, resuming
//! where the last wake-up stopped, and collapses each eligible range.
//!
//! Owns the collapse (`Os::try_collapse`, Linux's `collapse_huge_page`), which HawkEye's and
//! Trident's promoters and CoalaKhugepaged reuse: a range with at most `max_ptes_none`
//! unmapped pages, no page of 2 MiB or more, one protection, no reservation and no HugeTLB
//! pool page becomes one 2 MiB page, in place when its frames already form the aligned block
//! (holes allocated), else in a new block (allocate, compacting if needed; copy the mapped
//! pages; free the old frames).
//!
//! Contract: a collapse unmaps the old pages (one shootdown each) before mapping the new one,
//! all reported as [`MapChange`]s; a collapse whose allocation made compaction move pages is
//! abandoned (the range is tried again at a later scan); scans are charged to
//! `daemon_cycles`, copies and shootdowns to the migration costs (`os.migration.*`).
//!
//! Calls: the allocator (`phys.rs`), the promotion and copy primitives (`migrate.rs`), the
//! fault path's install (`fault.rs`), the HugeTLB pool's ownership check.

use crate::addr::{Asid, Mapping, PageSize, Pfn, Vpn};
use crate::os::{FrameUse, MapChange, Os};

impl Os {
    /// Run khugepaged's wake-ups due at `now_cycles` (none unless `os.khugepaged.enabled`).
    pub(in crate::os) fn khugepaged_tick(&mut self, now_cycles: u64, changes: &mut Vec<MapChange>) {
        while self.cfg.khugepaged.enabled && now_cycles >= self.khugepaged_next {
            self.khugepaged_next += self.cfg.khugepaged.interval_cycles;
            self.khugepaged_scan(changes);
        }
    }

    /// One khugepaged wake-up: scan up to `pages_to_scan` pages in 2 MiB ranges (resuming
    /// where the last wake-up stopped) and collapse each eligible range.
    fn khugepaged_scan(&mut self, changes: &mut Vec<MapChange>) {
        self.c.khugepaged_wakeups += 1;
        let huge = PageSize::Size2M.bytes();
        let mut budget = self.cfg.khugepaged.pages_to_scan;
        let mut laps = 0;
        while budget >= 512 && !self.procs.is_empty() {
            let (pi, addr) = self.khugepaged_cursor;
            if pi >= self.procs.len() {
                self.khugepaged_cursor = (0, 0);
                laps += 1;
                if laps > 1 {
                    return; // nothing left to scan anywhere
                }
                continue;
            }
            // The next 2 MiB range at or after `addr` that lies inside a VMA.
            let next = self.procs[pi]
                .vmas
                .iter()
                .filter(|v| v.end >= addr.next_multiple_of(huge) + huge)
                .find_map(|v| {
                    let lo = v.start.max(addr).next_multiple_of(huge);
                    (lo + huge <= v.end).then_some(lo)
                });
            let Some(lo) = next else {
                self.khugepaged_cursor = (pi + 1, 0);
                continue;
            };
            self.khugepaged_cursor = (pi, lo + huge);
            budget -= 512;
            self.c.khugepaged_pages_scanned += 512;
            self.c.daemon_cycles += 512 * self.cfg.khugepaged.scan_cycles_per_page;
            self.try_collapse(pi as Asid, Vpn(lo >> 12), changes);
        }
    }

    /// Collapse the 2 MiB range at `first` into one 2 MiB page if it has at most
    /// `max_ptes_none` unmapped pages, no page of 2 MiB or more, and one protection: in place
    /// when its frames already form the aligned block (holes allocated), else into a new block
    /// (allocate, copy the mapped pages, free the old frames).
    pub(in crate::os) fn try_collapse(
        &mut self,
        asid: Asid,
        first: Vpn,
        changes: &mut Vec<MapChange>,
    ) {
        let p = &self.procs[asid as usize];
        let old = p.pages.in_range(first, Vpn(first.0 + 512));
        if old.is_empty() || old.iter().any(|m| m.size >= PageSize::Size2M) {
            return;
        }
        let mapped: u64 = old.iter().map(|m| m.size.base_pages()).sum();
        if 512 - mapped > self.cfg.khugepaged.max_ptes_none as u64 {
            return;
        }
        let writable = old[0].writable;
        if old.iter().any(|m| m.writable != writable) {
            return;
        }
        if p.reservations.overlaps(first, 512) {
            return; // the reservation promotes it itself
        }
        if self.hugetlb_holds_any(&old) {
            return; // HugeTLB pool pages are never collapsed
        }
        // In place: every page at block + offset, and every hole's frame free.
        let base = old[0].pfn.0.wrapping_sub(old[0].vpn.0 - first.0);
        let aligned = base.is_multiple_of(512)
            && old
                .iter()
                .all(|m| m.pfn.0 == base.wrapping_add(m.vpn.0 - first.0));
        let mut holes: Vec<Pfn> = Vec::new();
        let mut in_place = aligned;
        if aligned {
            let mut v = first.0;
            for m in &old {
                while v < m.vpn.0 {
                    holes.push(Pfn(base + (v - first.0)));
                    v += 1;
                }
                v = m.vpn.0 + m.size.base_pages();
            }
            while v < first.0 + 512 {
                holes.push(Pfn(base + (v - first.0)));
                v += 1;
            }
            let mut taken = Vec::new();
            for h in &holes {
                match self.phys.alloc_at(*h, 0, FrameUse::Data) {
                    Some(_) => taken.push(*h),
                    None => {
                        in_place = false;
                        break;
                    }
                }
            }
            if !in_place {
                for h in taken {
                    self.phys.free(h, 0, FrameUse::Data);
                }
            }
        }
        let pfn = if in_place {
            self.c.collapses_in_place += 1;
            Pfn(base)
        } else {
            let Ok(pfn) = self.phys.alloc(PageSize::Size2M.order(), FrameUse::Data) else {
                self.c.collapse_no_block += 1;
                return;
            };
            if self.phys_relocated(changes) {
                // Compaction moved pages, possibly of this range: collapse it another time.
                self.phys
                    .free(pfn, PageSize::Size2M.order(), FrameUse::Data);
                return;
            }
            self.count_copy(mapped);
            pfn
        };
        self.unmap_for_promotion(asid, &old, in_place, changes);
        self.c.collapses += 1;
        self.install(
            asid,
            Mapping {
                vpn: first,
                pfn,
                size: PageSize::Size2M,
                writable,
            },
            changes,
        );
    }
}
