//! A range TLB (RMM, Karakostas et al., ISCA 2015 §4.2): a small fully associative structure of
//! ASID-tagged virtual ranges, each mapping `[vpn_start, vpn_end)` to physical frames at a fixed
//! offset, looked up beside the L2 TLB.
//!
//! Contract: `lookup(asid, vpn)` returns a range only if one was filled for that ASID containing
//! `vpn` and no page inside it was invalidated since (nor its ASID); at most `capacity` ranges are
//! held; replacement is LRU (a lookup that hits and a fill both count as a use).

use crate::addr::{Asid, Mapping, PageSize, Pfn, Vpn};

/// A virtually and physically contiguous range of base pages with one permission, as a design
/// with range translations (RMM's range table) describes it.
///
/// Contract: `vpn_start < vpn_end`; every 4 KiB page `v` in `[vpn_start, vpn_end)` is mapped (by
/// pages of any size) to frame `pfn_start + (v - vpn_start)` with write permission `writable`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VaRange {
    /// First 4 KiB VPN of the range.
    pub vpn_start: Vpn,
    /// One past the last 4 KiB VPN of the range.
    pub vpn_end: Vpn,
    /// Frame of `vpn_start`.
    pub pfn_start: Pfn,
    /// Whether stores are allowed.
    pub writable: bool,
}

impl VaRange {
    /// Whether `vpn` lies inside the range.
    #[inline]
    pub fn contains(&self, vpn: Vpn) -> bool {
        vpn.0 >= self.vpn_start.0 && vpn.0 < self.vpn_end.0
    }

    /// Whether any base page of `m` lies inside the range.
    #[inline]
    pub fn overlaps(&self, m: &Mapping) -> bool {
        m.vpn.0 < self.vpn_end.0 && m.vpn.0 + m.size.base_pages() > self.vpn_start.0
    }

    /// The 4 KiB translation of `vpn` (inside the range) that the range implies. The range does
    /// not know the size of the OS page behind it, so this is a base page; the oracle compares
    /// its frame and permission with the OS page holding `vpn` (`Os::maps_base`).
    #[inline]
    pub fn base_of(&self, vpn: Vpn) -> Mapping {
        debug_assert!(self.contains(vpn));
        Mapping {
            vpn,
            pfn: Pfn(self.pfn_start.0 + (vpn.0 - self.vpn_start.0)),
            size: PageSize::Size4K,
            writable: self.writable,
        }
    }
}

/// The range TLB: fully associative, LRU (a range TLB has a few dozen entries). Entries stay
/// where they were filled and carry the time of their last use: a hit writes one stamp instead
/// of moving the entries in front of it, and the victim is the oldest stamp. Order never
/// matters for a lookup: the ranges of one ASID are disjoint (a fill removes those it
/// overlaps), so at most one entry holds a page.
#[derive(Clone, Debug)]
pub struct RangeTlb {
    capacity: usize,
    entries: Vec<RangeEntry>,
    /// Uses so far (the next stamp).
    clock: u64,
    /// Lookups that hit.
    pub hits: u64,
    /// Lookups that missed.
    pub misses: u64,
    /// Ranges installed.
    pub fills: u64,
}

/// One cached range and the time of its last use.
#[derive(Clone, Copy, Debug)]
struct RangeEntry {
    asid: Asid,
    range: VaRange,
    last_use: u64,
}

impl RangeTlb {
    /// A range TLB of `capacity` entries (0: never hits).
    pub fn new(capacity: usize) -> RangeTlb {
        RangeTlb {
            capacity,
            entries: Vec::with_capacity(capacity),
            clock: 0,
            hits: 0,
            misses: 0,
            fills: 0,
        }
    }

    /// The range of `asid` holding `vpn`, if cached (a use); counts a hit or a miss.
    pub fn lookup(&mut self, asid: Asid, vpn: Vpn) -> Option<VaRange> {
        match self
            .entries
            .iter_mut()
            // `&`, not `&&`: see `fill`.
            .find(|e| {
                (e.asid == asid) & (vpn.0 >= e.range.vpn_start.0) & (vpn.0 < e.range.vpn_end.0)
            }) {
            Some(e) => {
                self.hits += 1;
                self.clock += 1;
                e.last_use = self.clock;
                Some(e.range)
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    /// Install `r` for `asid` (replacing cached ranges of `asid` that overlap it), evicting the
    /// least recently used range when full.
    pub fn fill(&mut self, asid: Asid, r: VaRange) {
        if self.capacity == 0 || r.vpn_start.0 >= r.vpn_end.0 {
            return;
        }
        self.fills += 1;
        // Non-short-circuit `&`: the comparisons are unpredictable, branches would mispredict.
        let overlaps = |e: &RangeEntry| {
            (e.asid == asid)
                & (e.range.vpn_start.0 < r.vpn_end.0)
                & (r.vpn_start.0 < e.range.vpn_end.0)
        };
        // One pass finds both whether a cached range overlaps `r` (rare: the range table's
        // ranges are disjoint) and the least recently used entry.
        let (mut any_overlap, mut lru, mut oldest) = (false, 0, u64::MAX);
        for (i, e) in self.entries.iter().enumerate() {
            any_overlap |= overlaps(e);
            let older = e.last_use < oldest;
            lru = if older { i } else { lru };
            oldest = oldest.min(e.last_use);
        }
        if any_overlap {
            self.entries.retain(|e| !overlaps(e));
        }
        if self.entries.len() == self.capacity {
            if any_overlap {
                lru = (0..self.entries.len())
                    .min_by_key(|&i| self.entries[i].last_use)
                    .expect("a full range TLB holds entries");
            }
            self.entries.swap_remove(lru);
        }
        self.clock += 1;
        self.entries.push(RangeEntry {
            asid,
            range: r,
            last_use: self.clock,
        });
    }

    /// Remove every range of `asid` holding any base page of `m` (a shootdown of `m`).
    pub fn invalidate(&mut self, asid: Asid, m: &Mapping) {
        if self
            .entries
            .iter()
            .any(|e| e.asid == asid && e.range.overlaps(m))
        {
            self.entries
                .retain(|e| !(e.asid == asid && e.range.overlaps(m)));
        }
    }

    /// Remove every range of `asid`.
    pub fn invalidate_asid(&mut self, asid: Asid) {
        self.entries.retain(|e| e.asid != asid);
    }

    /// Ranges held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no range is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: u64, end: u64, pfn: u64) -> VaRange {
        VaRange {
            vpn_start: Vpn(start),
            vpn_end: Vpn(end),
            pfn_start: Pfn(pfn),
            writable: true,
        }
    }

    #[test]
    fn a_range_translates_every_page_inside_it_at_a_fixed_offset() {
        let mut t = RangeTlb::new(2);
        t.fill(1, range(100, 1000, 5000));
        let r = t.lookup(1, Vpn(999)).unwrap();
        assert_eq!(r.base_of(Vpn(999)).pfn, Pfn(5899));
        assert!(t.lookup(1, Vpn(1000)).is_none());
        assert!(t.lookup(2, Vpn(500)).is_none(), "another ASID must not hit");
        assert_eq!((t.hits, t.misses), (1, 2));
    }

    #[test]
    fn invalidating_any_page_inside_a_range_removes_the_range() {
        let mut t = RangeTlb::new(4);
        t.fill(1, range(100, 1000, 5000));
        t.fill(1, range(2000, 3000, 9000));
        t.invalidate(1, &Mapping::writable(512, 5412, PageSize::Size2M));
        assert!(t.lookup(1, Vpn(100)).is_none());
        assert!(t.lookup(1, Vpn(2000)).is_some());
        t.invalidate_asid(1);
        assert!(t.is_empty());
    }

    /// The recency-ordered list a range TLB is specified as (most recent first).
    struct ReferenceRangeTlb {
        capacity: usize,
        entries: Vec<(Asid, VaRange)>,
    }

    impl ReferenceRangeTlb {
        fn lookup(&mut self, asid: Asid, vpn: Vpn) -> Option<VaRange> {
            let i = self
                .entries
                .iter()
                .position(|(a, r)| *a == asid && r.contains(vpn))?;
            let e = self.entries.remove(i);
            self.entries.insert(0, e);
            Some(e.1)
        }

        fn fill(&mut self, asid: Asid, r: VaRange) {
            if self.capacity == 0 || r.vpn_start.0 >= r.vpn_end.0 {
                return;
            }
            self.entries.retain(|(a, e)| {
                !(*a == asid && e.vpn_start.0 < r.vpn_end.0 && r.vpn_start.0 < e.vpn_end.0)
            });
            if self.entries.len() == self.capacity {
                self.entries.pop();
            }
            self.entries.insert(0, (asid, r));
        }

        fn invalidate(&mut self, asid: Asid, m: &Mapping) {
            self.entries.retain(|(a, r)| !(*a == asid && r.overlaps(m)));
        }
    }

    proptest::proptest! {
        #[test]
        fn every_lookup_answers_as_a_recency_ordered_list_would(
            capacity in 0usize..6,
            ops in proptest::collection::vec((0u8..3, 0u16..2, 0u64..64, 1u64..12), 1..300),
        ) {
            let mut t = RangeTlb::new(capacity);
            let mut reference = ReferenceRangeTlb { capacity, entries: Vec::new() };
            for (op, asid, start, len) in ops {
                match op {
                    0 => {
                        let r = range(start, start + len, start * 7);
                        t.fill(asid, r);
                        reference.fill(asid, r);
                    }
                    1 => proptest::prop_assert_eq!(
                        t.lookup(asid, Vpn(start)),
                        reference.lookup(asid, Vpn(start))
                    ),
                    _ => {
                        let m = Mapping::writable(start, start, PageSize::Size4K);
                        t.invalidate(asid, &m);
                        reference.invalidate(asid, &m);
                    }
                }
                proptest::prop_assert_eq!(t.len(), reference.entries.len());
            }
        }
    }

    #[test]
    fn the_least_recently_used_range_is_evicted() {
        let mut t = RangeTlb::new(2);
        t.fill(0, range(0, 10, 0));
        t.fill(0, range(10, 20, 100));
        t.lookup(0, Vpn(5));
        t.fill(0, range(20, 30, 200));
        assert!(t.lookup(0, Vpn(15)).is_none());
        assert!(t.lookup(0, Vpn(5)).is_some());
        assert_eq!(t.len(), 2);
    }
}
