//! Page heat of a reference stream (`xlat analyze heat`; issue 39 item 2): over a window of
//! references, how concentrated the accesses are on few pages, and how many of them depend on
//! an earlier load.
//!
//! The figures set a generator against the real program it models: a workload whose hottest 1 %
//! of pages take most of its accesses keeps those translations in the TLB, where one spreading
//! its accesses evenly misses on nearly every one. For each granularity (4 KiB pages and 2 MiB
//! regions) the pages the window touches are ranked by their accesses; the *share of the
//! hottest k %* is the fraction of the window's accesses that go to the top `ceil(k % of the
//! touched pages)` of them. The shares are of the pages the window touches, not of the
//! footprint: a window that touches a tenth of the footprint is judged on that tenth.
//!
//! Contract: the source is read from its start; the first `skip_refs` accesses (the warm-up:
//! the first-touch phase) are read and not counted, then at most `refs` accesses are counted.
//! Memory grows with the pages the window touches (its footprint), never with its length.
//! Non-access events (system calls, thread switches) are skipped.

use super::{AccessKind, Event, EventSource, SourceError};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Percentages of the touched pages whose share of the accesses is reported.
pub const HOT_PERCENTS: [u32; 2] = [1, 10];

/// Upper bounds of the dependence distances counted in [`PageHeat::dependent_within`]: on the
/// access just before, within 16, within 256 (about an out-of-order core's reorder buffer), and
/// within the format's window (every recorded dependence).
pub const DEPENDENCE_DISTANCES: [u16; 4] = [1, 16, 256, u16::MAX];

/// A multiplicative hash for page numbers (dense, small integers: the default SipHash spends
/// more time hashing than the count costs).
#[derive(Default)]
struct PageHasher(u64);

impl Hasher for PageHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type PageCounts = HashMap<u64, u64, BuildHasherDefault<PageHasher>>;

/// How the accesses of one granularity spread over its pages.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Spread {
    /// Page size of this granularity in bytes.
    pub page_bytes: u64,
    /// Distinct pages the window touched.
    pub pages: u64,
    /// For each of [`HOT_PERCENTS`]: the share of the window's accesses to the hottest that
    /// many percent of its touched pages (at least one page).
    pub hottest_share: Vec<f64>,
    /// Mean accesses per touched page.
    pub accesses_per_page: f64,
}

/// The page heat of a window of references.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PageHeat {
    /// Accesses read and not counted (the warm-up).
    pub skipped_refs: u64,
    /// Accesses counted (fewer than asked when the source ended first).
    pub refs: u64,
    /// Loads among them.
    pub loads: u64,
    /// Stores among them.
    pub stores: u64,
    /// Accesses whose address depends on an earlier load (`Event::Access::dep` > 0). Meaningful
    /// only when the source records dependences (see the caller's `dependences`).
    pub dependent_refs: u64,
    /// For each of [`DEPENDENCE_DISTANCES`]: the accesses whose dependence is at most that many
    /// accesses back (the last equals `dependent_refs`).
    pub dependent_within: Vec<u64>,
    /// 4 KiB pages.
    pub pages_4k: Spread,
    /// 2 MiB regions.
    pub regions_2m: Spread,
}

/// The share of `total` accesses held by the hottest `ceil(percent % of counts)` entries.
fn hottest_share(sorted_desc: &[u64], percent: u32, total: u64) -> f64 {
    if sorted_desc.is_empty() || total == 0 {
        return 0.0;
    }
    let n = sorted_desc.len();
    let k = (n * percent as usize).div_ceil(100).clamp(1, n);
    sorted_desc[..k].iter().sum::<u64>() as f64 / total as f64
}

fn spread(counts: PageCounts, page_bytes: u64, total: u64) -> Spread {
    let mut v: Vec<u64> = counts.into_values().collect();
    v.sort_unstable_by(|a, b| b.cmp(a));
    Spread {
        page_bytes,
        pages: v.len() as u64,
        hottest_share: HOT_PERCENTS
            .iter()
            .map(|&p| hottest_share(&v, p, total))
            .collect(),
        accesses_per_page: if v.is_empty() {
            0.0
        } else {
            total as f64 / v.len() as f64
        },
    }
}

/// Read `source` from its start, skip `skip_refs` accesses, and measure the heat of the next
/// `refs` (or to the end of the source). Errors are the source's, unchanged.
pub fn page_heat(
    source: &mut dyn EventSource,
    skip_refs: u64,
    refs: u64,
) -> Result<PageHeat, SourceError> {
    let mut pages: PageCounts = HashMap::default();
    let mut regions: PageCounts = HashMap::default();
    let (mut skipped, mut counted) = (0u64, 0u64);
    let (mut loads, mut stores) = (0u64, 0u64);
    let mut within = [0u64; DEPENDENCE_DISTANCES.len()];
    let mut buf = Vec::with_capacity(4096);
    'read: loop {
        buf.clear();
        if source.fill(&mut buf, 4096)? == 0 {
            break;
        }
        for ev in &buf {
            let Event::Access { kind, va, dep, .. } = *ev else {
                continue;
            };
            if skipped < skip_refs {
                skipped += 1;
                continue;
            }
            if counted >= refs {
                break 'read;
            }
            counted += 1;
            match kind {
                AccessKind::Load => loads += 1,
                AccessKind::Store => stores += 1,
                AccessKind::IFetch => {}
            }
            if dep > 0 {
                for (n, &bound) in within.iter_mut().zip(&DEPENDENCE_DISTANCES) {
                    *n += u64::from(dep <= bound);
                }
            }
            *pages.entry(va.0 >> 12).or_insert(0) += 1;
            *regions.entry(va.0 >> 21).or_insert(0) += 1;
        }
    }
    Ok(PageHeat {
        skipped_refs: skipped,
        refs: counted,
        loads,
        stores,
        dependent_refs: within[DEPENDENCE_DISTANCES.len() - 1],
        dependent_within: within.to_vec(),
        pages_4k: spread(pages, 4096, counted),
        regions_2m: spread(regions, 2 << 20, counted),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Vaddr;

    /// A source of the given accesses (loads, `dep` as given), in order.
    struct Listed(std::vec::IntoIter<(u64, u16)>);

    impl EventSource for Listed {
        fn fill(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, SourceError> {
            let mut n = 0;
            for (va, dep) in self.0.by_ref().take(max) {
                out.push(Event::Access {
                    kind: AccessKind::Load,
                    va: Vaddr(va),
                    size: 8,
                    instrs: 1,
                    dep,
                });
                n += 1;
            }
            Ok(n)
        }
        fn name(&self) -> String {
            "listed".into()
        }
    }

    fn heat(accesses: Vec<(u64, u16)>, skip: u64, refs: u64) -> PageHeat {
        page_heat(&mut Listed(accesses.into_iter()), skip, refs).unwrap()
    }

    #[test]
    fn one_hot_page_among_a_hundred_takes_its_share_of_the_accesses() {
        // Page 0 gets 901 accesses, pages 1..=99 one each: 1000 accesses over 100 pages.
        let mut a: Vec<(u64, u16)> = (0..901).map(|_| (0x40, 0)).collect();
        a.extend((1..100u64).map(|p| (p << 12, 0)));
        let h = heat(a, 0, u64::MAX);
        assert_eq!(h.refs, 1000);
        assert_eq!(h.pages_4k.pages, 100);
        // The hottest 1 % is one page (901 / 1000); the hottest 10 % ten pages (910 / 1000).
        assert_eq!(h.pages_4k.hottest_share, vec![0.901, 0.91]);
        // All 100 pages lie in the first 2 MiB region.
        assert_eq!(h.regions_2m.pages, 1);
        assert_eq!(h.regions_2m.hottest_share, vec![1.0, 1.0]);
    }

    #[test]
    fn uniform_accesses_give_each_percentile_its_own_share() {
        let a: Vec<(u64, u16)> = (0..1000u64).map(|p| (p << 12, 0)).collect();
        let h = heat(a, 0, u64::MAX);
        assert_eq!(h.pages_4k.hottest_share, vec![0.01, 0.1]);
        assert_eq!(h.pages_4k.accesses_per_page, 1.0);
    }

    #[test]
    fn the_warm_up_is_skipped_and_the_window_is_bounded() {
        // 10 accesses to page 7 (skipped), then pages 0..20, of which 5 are counted.
        let mut a: Vec<(u64, u16)> = (0..10).map(|_| (7 << 12, 0)).collect();
        a.extend((0..20u64).map(|p| (p << 12, u16::from(p % 2 == 1))));
        let h = heat(a, 10, 5);
        assert_eq!((h.skipped_refs, h.refs, h.loads, h.stores), (10, 5, 5, 0));
        assert_eq!(h.pages_4k.pages, 5);
        // Pages 1 and 3 carry a dependence on the access just before.
        assert_eq!(h.dependent_refs, 2);
        assert_eq!(h.dependent_within, vec![2, 2, 2, 2]);
    }

    #[test]
    fn dependences_are_counted_by_distance() {
        let a = vec![
            (0, 0),
            (0, 1),
            (0, 2),
            (0, 16),
            (0, 17),
            (0, 300),
            (0, u16::MAX),
        ];
        let h = heat(a, 0, u64::MAX);
        assert_eq!(h.dependent_refs, 6);
        assert_eq!(h.dependent_within, vec![1, 3, 4, 6]);
    }

    #[test]
    fn an_empty_window_reports_zeros_not_a_division_by_zero() {
        let h = heat(vec![(0, 0)], 5, 10);
        assert_eq!((h.skipped_refs, h.refs), (1, 0));
        assert_eq!(h.pages_4k.hottest_share, vec![0.0, 0.0]);
        assert_eq!(h.pages_4k.accesses_per_page, 0.0);
    }
}
