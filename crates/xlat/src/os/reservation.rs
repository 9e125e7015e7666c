//! Reservations (FreeBSD superpage reservations, TPS §III-B): a naturally aligned block of
//! frames held for one aligned virtual region, from which base pages are mapped at
//! `frame = block + (vpn - region start)`, so that a fully (or sufficiently) touched aligned
//! part can be promoted in place to one larger page without copying.
//!
//! Contract: a reservation tracks which of its base pages are mapped and, per aligned
//! sub-block at every level, how many; `mapped_in(level, vpn)` is exact after any sequence of
//! `mark` calls; reservations of one process never overlap (the OS model checks before it
//! creates one).

use crate::addr::{Pfn, Vpn};
use std::collections::BTreeMap;

/// One reservation.
#[derive(Clone, Debug)]
pub struct Reservation {
    /// First VPN of the reserved region.
    pub vpn: Vpn,
    /// First frame of the reserved block.
    pub pfn: Pfn,
    /// log2 of the region's base pages.
    pub order: u8,
    /// Mapped base pages per aligned sub-block, level by level: level `k` (sub-blocks of `2^k`
    /// pages) starts at `offsets[k]` and has `2^(order - k)` counters.
    counts: Vec<u32>,
    offsets: Vec<usize>,
}

impl Reservation {
    /// A reservation of `2^order` pages at `vpn` backed by the block at `pfn`, nothing mapped.
    pub fn new(vpn: Vpn, pfn: Pfn, order: u8) -> Reservation {
        let mut offsets = Vec::with_capacity(order as usize + 1);
        let mut total = 0;
        for k in 0..=order {
            offsets.push(total);
            total += 1usize << (order - k);
        }
        Reservation {
            vpn,
            pfn,
            order,
            counts: vec![0; total],
            offsets,
        }
    }

    /// Base pages in the region.
    pub fn pages(&self) -> u64 {
        1 << self.order
    }

    /// Whether `vpn` lies in the region.
    pub fn contains(&self, vpn: Vpn) -> bool {
        vpn.0 >= self.vpn.0 && vpn.0 < self.vpn.0 + self.pages()
    }

    /// The frame reserved for `vpn` (inside the region).
    pub fn frame_of(&self, vpn: Vpn) -> Pfn {
        Pfn(self.pfn.0 + (vpn.0 - self.vpn.0))
    }

    /// Whether base page `vpn` is mapped.
    pub fn is_mapped(&self, vpn: Vpn) -> bool {
        self.counts[(vpn.0 - self.vpn.0) as usize] != 0
    }

    /// Record base page `vpn` as mapped; returns false if it already was.
    pub fn mark(&mut self, vpn: Vpn) -> bool {
        let i = vpn.0 - self.vpn.0;
        if self.counts[i as usize] != 0 {
            return false;
        }
        for k in 0..=self.order {
            self.counts[self.offsets[k as usize] + (i >> k) as usize] += 1;
        }
        true
    }

    /// Mapped base pages in the aligned sub-block of `2^level` pages containing `vpn`.
    pub fn mapped_in(&self, level: u8, vpn: Vpn) -> u64 {
        let i = (vpn.0 - self.vpn.0) >> level;
        self.counts[self.offsets[level as usize] + i as usize] as u64
    }

    /// Mapped base pages in the whole region.
    pub fn mapped(&self) -> u64 {
        self.counts[self.offsets[self.order as usize]] as u64
    }

    /// The largest aligned runs of unmapped base pages, as (first frame, order): what must go
    /// back to the allocator when the reservation is broken.
    pub fn unmapped_blocks(&self) -> Vec<(Pfn, u8)> {
        let mut out = Vec::new();
        self.collect_unmapped(self.order, 0, &mut out);
        out
    }

    fn collect_unmapped(&self, level: u8, index: u64, out: &mut Vec<(Pfn, u8)>) {
        let n = self.counts[self.offsets[level as usize] + index as usize];
        if n == 0 {
            out.push((Pfn(self.pfn.0 + (index << level)), level));
        } else if n < 1 << level {
            self.collect_unmapped(level - 1, index * 2, out);
            self.collect_unmapped(level - 1, index * 2 + 1, out);
        }
    }
}

/// The reservations of one process, by first VPN.
#[derive(Clone, Debug, Default)]
pub struct Reservations {
    by_vpn: BTreeMap<u64, Reservation>,
}

impl Reservations {
    /// The reservation whose region contains `vpn`.
    pub fn covering(&mut self, vpn: Vpn) -> Option<&mut Reservation> {
        self.by_vpn
            .range_mut(..=vpn.0)
            .next_back()
            .map(|(_, r)| r)
            .filter(|r| r.contains(vpn))
    }

    /// Whether any reservation overlaps the `pages` pages from `start`.
    pub fn overlaps(&self, start: Vpn, pages: u64) -> bool {
        let end = start.0 + pages;
        let before = self
            .by_vpn
            .range(..=start.0)
            .next_back()
            .is_some_and(|(_, r)| r.vpn.0 + r.pages() > start.0);
        before || self.by_vpn.range(start.0..end).next().is_some()
    }

    /// Add a reservation (which overlaps none).
    pub fn insert(&mut self, r: Reservation) {
        debug_assert!(!self.overlaps(r.vpn, r.pages()));
        self.by_vpn.insert(r.vpn.0, r);
    }

    /// Remove and return every reservation overlapping the `pages` pages from `start`.
    pub fn take_overlapping(&mut self, start: Vpn, pages: u64) -> Vec<Reservation> {
        let end = start.0.saturating_add(pages);
        let keys: Vec<u64> = self
            .by_vpn
            .range(..end)
            .rev()
            // Disjoint and sorted: ends grow with starts, so the first one ending at or before
            // `start` ends the overlapping run.
            .take_while(|(_, r)| r.vpn.0 + r.pages() > start.0)
            .map(|(k, _)| *k)
            .collect();
        keys.iter().filter_map(|k| self.by_vpn.remove(k)).collect()
    }

    /// Remove the reservation starting at `vpn`.
    pub fn remove(&mut self, vpn: Vpn) -> Option<Reservation> {
        self.by_vpn.remove(&vpn.0)
    }

    /// Remove and return all reservations.
    pub fn take_all(&mut self) -> Vec<Reservation> {
        std::mem::take(&mut self.by_vpn).into_values().collect()
    }

    /// The reservations, in address order.
    pub fn by_vpn_values(&self) -> impl Iterator<Item = &Reservation> {
        self.by_vpn.values()
    }

    /// Number of reservations.
    pub fn len(&self) -> usize {
        self.by_vpn.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_vpn.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sub_block_counts_follow_the_marked_pages() {
        let mut r = Reservation::new(Vpn(1024), Pfn(4096), 4);
        for v in [1024, 1025, 1026, 1027, 1031] {
            assert!(r.mark(Vpn(v)));
        }
        assert!(!r.mark(Vpn(1025)), "already mapped");
        assert_eq!(r.mapped_in(2, Vpn(1024)), 4);
        assert_eq!(r.mapped_in(2, Vpn(1030)), 1);
        assert_eq!(r.mapped_in(4, Vpn(1039)), 5);
        assert_eq!(r.frame_of(Vpn(1031)), Pfn(4103));
        let mut free = r.unmapped_blocks();
        free.sort();
        assert_eq!(free, vec![(Pfn(4100), 1), (Pfn(4102), 0), (Pfn(4104), 3)]);
    }

    #[test]
    fn overlapping_reservations_are_found_and_taken() {
        let mut rs = Reservations::default();
        rs.insert(Reservation::new(Vpn(0), Pfn(0), 4));
        rs.insert(Reservation::new(Vpn(32), Pfn(64), 5));
        assert!(rs.overlaps(Vpn(15), 1));
        assert!(!rs.overlaps(Vpn(16), 16));
        assert!(rs.overlaps(Vpn(16), 17));
        assert!(rs.covering(Vpn(40)).is_some() && rs.covering(Vpn(20)).is_none());
        let taken = rs.take_overlapping(Vpn(10), 30);
        assert_eq!(taken.len(), 2);
        assert!(rs.is_empty());
    }

    proptest! {
        /// The unmapped blocks plus the mapped pages are exactly the region, without overlap.
        #[test]
        fn unmapped_blocks_are_exactly_the_pages_not_mapped(
            marks in prop::collection::vec(0u64..64, 0..64)
        ) {
            let mut r = Reservation::new(Vpn(64), Pfn(128), 6);
            for m in &marks { r.mark(Vpn(64 + m)); }
            let mut covered = [false; 64];
            for (pfn, order) in r.unmapped_blocks() {
                prop_assert_eq!(pfn.0 % (1 << order), 0);
                for f in pfn.0..pfn.0 + (1 << order) {
                    let i = (f - 128) as usize;
                    prop_assert!(!covered[i]);
                    covered[i] = true;
                }
            }
            for i in 0..64u64 {
                prop_assert_eq!(covered[i as usize], !r.is_mapped(Vpn(64 + i)));
            }
            prop_assert_eq!(r.mapped(), 64 - covered.iter().filter(|c| **c).count() as u64);
        }
    }
}
