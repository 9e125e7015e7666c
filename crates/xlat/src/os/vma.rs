//! Virtual memory areas of one process: sorted, non-overlapping ranges with protection and THP
//! advice, split and merged as mmap / munmap / mprotect / madvise demand.
//!
//! Contract: areas never overlap; `insert` over a range replaces whatever was there (as
//! `MAP_FIXED` does) and splits areas at the range's edges; all bounds are 4 KiB-aligned.
//! Adjacent areas with the same protection and advice are merged, as Linux's `vma_merge` does
//! for anonymous memory; this matters for THP, which needs a whole aligned 2 MiB range inside
//! one area (a heap grown by many small `brk` steps is one area, as on Linux).

use std::collections::BTreeMap;

/// One virtual memory area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vma {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// `prot` bits.
    pub prot: u32,
    /// THP advice: `Some(true)` after MADV_HUGEPAGE, `Some(false)` after MADV_NOHUGEPAGE.
    pub thp: Option<bool>,
}

/// The areas of one address space, keyed by start address.
#[derive(Clone, Debug, Default)]
pub struct VmaSet {
    areas: BTreeMap<u64, Vma>,
}

impl VmaSet {
    /// The area containing `addr`.
    pub fn find(&self, addr: u64) -> Option<&Vma> {
        self.areas
            .range(..=addr)
            .next_back()
            .map(|(_, v)| v)
            .filter(|v| addr < v.end)
    }

    /// The area nearest to `addr` (for error messages).
    pub fn nearest(&self, addr: u64) -> Option<&Vma> {
        let below = self.areas.range(..=addr).next_back().map(|(_, v)| v);
        let above = self.areas.range(addr..).next().map(|(_, v)| v);
        match (below, above) {
            (Some(b), Some(a)) => Some(if addr - b.end.min(addr) <= a.start - addr {
                b
            } else {
                a
            }),
            (b, a) => b.or(a),
        }
    }

    /// Cut `[start, end)` out of every area (splitting those that straddle an edge); returns the
    /// removed pieces.
    pub fn remove_range(&mut self, start: u64, end: u64) -> Vec<Vma> {
        let mut removed = Vec::new();
        let overlapping: Vec<u64> = self
            .areas
            .range(..end)
            .filter(|(_, v)| v.end > start)
            .map(|(k, _)| *k)
            .collect();
        for k in overlapping {
            let v = self.areas.remove(&k).expect("present");
            if v.start < start {
                self.areas.insert(v.start, Vma { end: start, ..v });
            }
            if v.end > end {
                self.areas.insert(end, Vma { start: end, ..v });
            }
            removed.push(Vma {
                start: v.start.max(start),
                end: v.end.min(end),
                ..v
            });
        }
        removed
    }

    /// Map `[start, end)` with `prot`, replacing anything there.
    pub fn insert(&mut self, start: u64, end: u64, prot: u32) {
        self.remove_range(start, end);
        self.areas.insert(
            start,
            Vma {
                start,
                end,
                prot,
                thp: None,
            },
        );
        self.merge_around(start, end);
    }

    /// Merge the areas touching `[start, end)` with their neighbours where contiguous and
    /// compatible (same protection and advice).
    fn merge_around(&mut self, start: u64, end: u64) {
        let first = self
            .areas
            .range(..start)
            .next_back()
            .map_or(start, |(k, _)| *k);
        let keys: Vec<u64> = self.areas.range(first..=end).map(|(k, _)| *k).collect();
        let mut current: Option<Vma> = None;
        for k in keys {
            let v = self.areas[&k];
            match current {
                Some(ref mut c) if c.end == v.start && c.prot == v.prot && c.thp == v.thp => {
                    c.end = v.end;
                    self.areas.remove(&k);
                    self.areas.insert(c.start, *c);
                }
                _ => current = Some(v),
            }
        }
    }

    /// Apply `f` to the parts of existing areas inside `[start, end)` (areas are split at the
    /// edges); gaps stay gaps. Returns how many bytes of the range were covered by areas.
    pub fn update_range(&mut self, start: u64, end: u64, f: impl Fn(&mut Vma)) -> u64 {
        let pieces = self.remove_range(start, end);
        let mut covered = 0;
        for mut p in pieces {
            f(&mut p);
            covered += p.end - p.start;
            self.areas.insert(p.start, p);
        }
        self.merge_around(start, end);
        covered
    }

    /// Number of areas.
    pub fn len(&self) -> usize {
        self.areas.len()
    }

    /// Whether there are no areas.
    pub fn is_empty(&self) -> bool {
        self.areas.is_empty()
    }

    /// All areas in address order.
    pub fn iter(&self) -> impl Iterator<Item = &Vma> {
        self.areas.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmapping_the_middle_of_an_area_splits_it_in_two() {
        let mut s = VmaSet::default();
        s.insert(0x1000, 0x9000, 3);
        let gone = s.remove_range(0x3000, 0x5000);
        assert_eq!(gone.len(), 1);
        let areas: Vec<(u64, u64)> = s.iter().map(|v| (v.start, v.end)).collect();
        assert_eq!(areas, vec![(0x1000, 0x3000), (0x5000, 0x9000)]);
        assert!(s.find(0x4000).is_none());
        assert_eq!(s.find(0x5000).unwrap().start, 0x5000);
    }

    #[test]
    fn mprotect_of_part_of_an_area_splits_it_and_changes_only_that_part() {
        let mut s = VmaSet::default();
        s.insert(0x0, 0x10000, 3);
        s.update_range(0x4000, 0x8000, |v| v.prot = 1);
        let prots: Vec<(u64, u32)> = s.iter().map(|v| (v.start, v.prot)).collect();
        assert_eq!(prots, vec![(0, 3), (0x4000, 1), (0x8000, 3)]);
    }

    #[test]
    fn a_fixed_mapping_replaces_what_was_there() {
        let mut s = VmaSet::default();
        s.insert(0x0, 0x10000, 3);
        s.insert(0x2000, 0x3000, 1);
        assert_eq!(s.len(), 3);
        assert_eq!(s.find(0x2800).unwrap().prot, 1);
    }

    #[test]
    fn adjacent_compatible_areas_merge_and_incompatible_ones_do_not() {
        let mut s = VmaSet::default();
        s.insert(0x0, 0x2000, 3);
        s.insert(0x2000, 0x5000, 3);
        s.insert(0x5000, 0x6000, 1);
        let areas: Vec<(u64, u64)> = s.iter().map(|v| (v.start, v.end)).collect();
        assert_eq!(areas, vec![(0, 0x5000), (0x5000, 0x6000)]);
        s.update_range(0x5000, 0x6000, |v| v.prot = 3);
        assert_eq!(
            s.len(),
            1,
            "restoring the protection merges the areas again"
        );
        s.update_range(0x1000, 0x2000, |v| v.thp = Some(true));
        assert_eq!(s.len(), 3, "different advice keeps areas apart");
    }
}
