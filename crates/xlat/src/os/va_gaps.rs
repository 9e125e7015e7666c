//! Virtual-address-space regularity (LVM, MICRO 2025, §3.1): the *gap coverage* of the pages
//! mapped in each address space when its process exits (or at the end of the run for a process
//! still running) and the distribution of the holes between them, reported in
//! the record as `os.va_gaps` so that `xlat report` can draw the paper's §3 figure for every
//! run (`xlat analyze gaps` computes the same figure from a workload, trace or snapshot).
//!
//! Definitions (what must stay equal to `python/xlat/analyze.py`'s `gap_analysis`): within one
//! address space, the mapped 4 KiB VPNs sorted; a *pair* is two consecutive ones, its *gap* the
//! difference of their VPNs; `coverage = pairs with gap 1 / pairs` (1.0 with fewer than two
//! pages). Over several processes the pairs of each address space are summed (no pair spans
//! two processes). A *hole* is the run of unmapped pages inside a gap above 1, counted by its
//! power-of-two size class: class `k` holds holes of `2^k .. 2^(k+1) - 1` pages, labelled by the
//! bytes of `2^k` pages (`4k`, `8k`, ..., `1m`, ..., `1g`, ...).

use crate::stats::{Stats, StatsExt};
use serde_json::Value;

/// Gap statistics of one or more address spaces (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct VaGaps {
    /// Mapped 4 KiB pages (a larger page counts as all its 4 KiB pages).
    pub mapped_pages: u64,
    /// Consecutive mapped pairs (pages - 1 per address space with at least one page).
    pub pairs: u64,
    /// Pairs whose gap is 1.
    pub gap1_pairs: u64,
    /// Pairs whose gap is above 1 (holes).
    pub gaps: u64,
    /// The largest hole, in pages.
    pub largest_gap_pages: u64,
    /// Holes per power-of-two size class (index = log2 of the hole's pages, rounded down).
    pub holes_by_log2: [u64; 64],
}

impl Default for VaGaps {
    fn default() -> Self {
        VaGaps {
            mapped_pages: 0,
            pairs: 0,
            gap1_pairs: 0,
            gaps: 0,
            largest_gap_pages: 0,
            holes_by_log2: [0; 64],
        }
    }
}

impl VaGaps {
    /// Adds one address space given as runs `(first VPN, pages)`: sorted, disjoint and not
    /// touching (as [`crate::os::pagemap::PageMap::mapped_runs`] returns them).
    pub fn add_address_space(&mut self, runs: &[(u64, u64)]) {
        let pages: u64 = runs.iter().map(|r| r.1).sum();
        if pages == 0 {
            return;
        }
        self.mapped_pages += pages;
        self.pairs += pages - 1;
        self.gap1_pairs += runs.iter().map(|r| r.1 - 1).sum::<u64>();
        for w in runs.windows(2) {
            let hole = w[1].0 - (w[0].0 + w[0].1);
            debug_assert!(hole > 0, "runs must be sorted and not touch");
            self.gaps += 1;
            self.largest_gap_pages = self.largest_gap_pages.max(hole);
            self.holes_by_log2[hole.ilog2() as usize] += 1;
        }
    }

    /// The share of consecutive mapped pairs whose gap is 1 (1.0 with no pair).
    pub fn coverage(&self) -> f64 {
        if self.pairs == 0 {
            1.0
        } else {
            self.gap1_pairs as f64 / self.pairs as f64
        }
    }

    /// The record section `os.va_gaps`.
    pub fn stats(&self) -> Stats {
        let mut s = Stats::new();
        s.put_u64("mapped_pages", self.mapped_pages);
        s.put_u64("pairs", self.pairs);
        s.put_u64("gap1_pairs", self.gap1_pairs);
        s.put_f64("coverage", self.coverage());
        s.put_u64("gaps", self.gaps);
        s.put_u64("largest_gap_pages", self.largest_gap_pages);
        let mut holes = Stats::new();
        for (k, n) in self.holes_by_log2.iter().enumerate() {
            if *n > 0 {
                holes.put_u64(&class_label(k as u32), *n);
            }
        }
        s.insert("holes_by_size".into(), Value::Object(holes));
        s
    }
}

/// The label of hole class `k`: the bytes of `2^k` 4 KiB pages (`4k`, `2m`, `1g`, `16t`).
pub fn class_label(k: u32) -> String {
    let bytes = 4096u128 << k;
    for (unit, shift) in [("t", 40), ("g", 30), ("m", 20)] {
        if bytes >= 1u128 << shift {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{}k", bytes >> 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_counts_pairs_with_gap_one_and_classes_the_holes_as_the_analysis_does() {
        // The example of analyze.py's gap_analysis: runs (10, 3), (14, 2), (100, 1).
        let mut g = VaGaps::default();
        g.add_address_space(&[(10, 3), (14, 2), (100, 1)]);
        assert_eq!(
            (g.mapped_pages, g.pairs, g.gap1_pairs, g.gaps),
            (6, 5, 3, 2)
        );
        assert!((g.coverage() - 0.6).abs() < 1e-12);
        assert_eq!(g.largest_gap_pages, 84);
        // Holes of 1 page (4k) and 84 pages (class 64 pages = 256k).
        assert_eq!(g.holes_by_log2[0], 1);
        assert_eq!(g.holes_by_log2[6], 1);
        let s = g.stats();
        assert_eq!(s["holes_by_size"]["4k"], 1);
        assert_eq!(s["holes_by_size"]["256k"], 1);
    }

    #[test]
    fn no_pair_spans_two_address_spaces() {
        let mut g = VaGaps::default();
        g.add_address_space(&[(0, 4)]);
        g.add_address_space(&[(4, 4)]);
        assert_eq!((g.pairs, g.gap1_pairs, g.gaps), (6, 6, 0));
        g.add_address_space(&[]);
        assert_eq!(g.mapped_pages, 8);
        assert_eq!(VaGaps::default().coverage(), 1.0);
    }

    #[test]
    fn class_labels_name_the_bytes_of_the_class_size() {
        let labels: Vec<String> = [0, 1, 8, 9, 18, 28, 35].map(class_label).to_vec();
        assert_eq!(labels, ["4k", "8k", "1m", "2m", "1g", "1t", "128t"]);
    }
}
