//! **Leshy**: Elastic Translations' translation-size selection. It samples the memory
//! references that cause a TLB-miss walk (as Arm SPE does, 1 in 1024 with jitter), counts the
//! samples per aligned 4 KiB region, and chooses greedily which aligned 64 KiB / 2 MiB /
//! 32 MiB ranges should be mapped with larger translations so that the sampled misses fit in
//! the TLB-entry budget. Its output — *hints*, aligned ranges with a size, hottest first —
//! steers CoalaPaging's placement (offline mode, hints from a profiling run's file) or
//! CoalaKhugepaged's promotions (online mode, every epoch).
//!
//! The selection ([`select`]), following `elastic-translations-facts.md` ("Leshy"):
//! 1. Per size (4 KiB, 64 KiB, 2 MiB, 32 MiB) the *candidate regions*: every aligned region of
//!    that size holding samples, where a region above 4 KiB that holds fewer than 2 sampled
//!    regions of the next smaller size stands for that one sub-region instead (a larger entry
//!    would cover nothing more: "a region above 4 KiB needs at least 2 sampled sub-regions").
//! 2. The smallest size whose hottest candidates reach the target share of the samples
//!    (`coverage`, 100 %) within the budget (TLB entries x slack) is chosen; if that is 4 KiB,
//!    no hint is emitted. When no size fits, the 32 MiB candidates are taken hottest first up
//!    to the budget.
//! 3. Trade-down: while the selection holds a region above 4 KiB, the cheapest trade of one of
//!    the largest-size regions (the one whose replacement by its sub-regions' candidates adds
//!    the fewest entries; ties: the coldest, then the lowest address) is made if the selection
//!    still fits the budget; the first trade that does not fit ends the search. Coverage is
//!    unchanged by a trade (a region's samples are its sub-regions' samples).
//! 4. Hints: the selected regions above 4 KiB, hottest first.

use crate::addr::{Asid, Vpn};
use std::collections::BTreeMap;

/// Region sizes Leshy aggregates at, in 4 KiB pages: 4 KiB, 64 KiB, 2 MiB, 32 MiB.
pub const LEVEL_PAGES: [u64; 4] = [1, 16, 512, 8192];

/// Names of the levels (statistics, hint files).
pub const LEVEL_NAMES: [&str; 4] = ["4k", "64k", "2m", "32m"];

/// One aligned region: `level` indexes [`LEVEL_PAGES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Region {
    /// Address space.
    pub asid: Asid,
    /// First 4 KiB page (aligned to the level's size).
    pub vpn: u64,
    /// Index into [`LEVEL_PAGES`].
    pub level: u8,
}

impl Region {
    /// Pages the region spans.
    pub fn pages(&self) -> u64 {
        LEVEL_PAGES[self.level as usize]
    }

    /// Bytes the region spans.
    pub fn bytes(&self) -> u64 {
        self.pages() << 12
    }

    /// Whether the region holds `vpn` of `asid`.
    pub fn contains(&self, asid: Asid, vpn: Vpn) -> bool {
        self.asid == asid && vpn.0 >= self.vpn && vpn.0 < self.vpn + self.pages()
    }
}

/// A hint: a region and the samples it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hint {
    /// The range and its translation size.
    pub region: Region,
    /// Sampled walk-causing references inside it.
    pub samples: u64,
}

/// Sample counts per 4 KiB page (`(asid, vpn)` -> samples). A `BTreeMap`: iteration order is
/// part of the result (determinism).
pub type Samples = BTreeMap<(Asid, u64), u64>;

/// The candidate regions of every level: for each level, candidate -> samples.
fn candidates(samples: &Samples) -> Vec<BTreeMap<Region, u64>> {
    let mut levels: Vec<BTreeMap<Region, u64>> = Vec::with_capacity(4);
    let mut base = BTreeMap::new();
    for (&(asid, vpn), &n) in samples {
        if n > 0 {
            base.insert(
                Region {
                    asid,
                    vpn,
                    level: 0,
                },
                n,
            );
        }
    }
    levels.push(base);
    // `raw[l]`: every sampled region of level l -> (samples, sampled sub-regions of level
    // l - 1, the level-(l-1) candidates standing for it when it has fewer than 2).
    let mut sampled_prev: BTreeMap<Region, u64> = levels[0].clone();
    for level in 1..LEVEL_PAGES.len() as u8 {
        let pages = LEVEL_PAGES[level as usize];
        let mut agg: BTreeMap<Region, (u64, Vec<Region>)> = BTreeMap::new();
        for (r, &n) in &sampled_prev {
            let parent = Region {
                asid: r.asid,
                vpn: r.vpn & !(pages - 1),
                level,
            };
            let e = agg.entry(parent).or_default();
            e.0 += n;
            e.1.push(*r);
        }
        let prev_cands = &levels[level as usize - 1];
        let mut cands = BTreeMap::new();
        let mut sampled = BTreeMap::new();
        for (parent, (n, subs)) in agg {
            sampled.insert(parent, n);
            if subs.len() >= 2 {
                cands.insert(parent, n);
            } else {
                // Stands for its one sub-region's candidates (those inside it).
                for (c, &cn) in prev_cands.range(
                    Region {
                        asid: parent.asid,
                        vpn: parent.vpn,
                        level: 0,
                    }..,
                ) {
                    if c.asid != parent.asid || c.vpn >= parent.vpn + pages {
                        break;
                    }
                    cands.insert(*c, cn);
                }
            }
        }
        levels.push(cands);
        sampled_prev = sampled;
    }
    levels
}

/// Hottest first: more samples first, then the larger region, then the lower address.
fn hotter(a: &(Region, u64), b: &(Region, u64)) -> std::cmp::Ordering {
    b.1.cmp(&a.1)
        .then(b.0.level.cmp(&a.0.level))
        .then(a.0.asid.cmp(&b.0.asid))
        .then(a.0.vpn.cmp(&b.0.vpn))
}

/// Leshy's greedy size selection over `samples` under `budget` TLB entries, to cover
/// `coverage` (0..=1) of the samples (see the module doc). Returns the hints, hottest first
/// (empty when 4 KiB entries already fit, or when nothing was sampled).
pub fn select(samples: &Samples, budget: u64, coverage: f64) -> Vec<Hint> {
    let total: u64 = samples.values().sum();
    if total == 0 || budget == 0 {
        return Vec::new();
    }
    let target = coverage.clamp(0.0, 1.0) * total as f64;
    let levels = candidates(samples);
    // Step 2: the smallest level whose hottest candidates reach the target within budget.
    let prefix = |level: usize| -> Vec<(Region, u64)> {
        let mut v: Vec<(Region, u64)> = levels[level].iter().map(|(r, n)| (*r, *n)).collect();
        v.sort_by(hotter);
        let mut covered = 0u64;
        let mut out = Vec::new();
        for (r, n) in v {
            if covered as f64 >= target {
                break;
            }
            covered += n;
            out.push((r, n));
        }
        out
    };
    let mut chosen = None;
    for level in 0..LEVEL_PAGES.len() {
        let p = prefix(level);
        if p.len() as u64 <= budget {
            chosen = Some((level, p));
            break;
        }
    }
    let (level, mut sel) = match chosen {
        Some(c) => c,
        None => {
            let mut p = prefix(LEVEL_PAGES.len() - 1);
            p.truncate(budget as usize);
            (LEVEL_PAGES.len() - 1, p)
        }
    };
    if level == 0 {
        return Vec::new();
    }
    // Step 3: trade the largest regions down while the budget holds.
    while let Some(top) = sel.iter().map(|(r, _)| r.level).max() {
        if top == 0 {
            break;
        }
        // The replacement of each top-level region: the candidates of level top-1 inside it.
        let below = &levels[top as usize - 1];
        let mut best: Option<(usize, Vec<(Region, u64)>)> = None;
        for (i, (r, n)) in sel.iter().enumerate() {
            if r.level != top {
                continue;
            }
            let subs: Vec<(Region, u64)> = below
                .range(
                    Region {
                        asid: r.asid,
                        vpn: r.vpn,
                        level: 0,
                    }..,
                )
                .take_while(|(c, _)| c.asid == r.asid && c.vpn < r.vpn + r.pages())
                .map(|(c, n)| (*c, *n))
                .collect();
            let better = match &best {
                None => true,
                Some((j, bs)) => {
                    let (bn, br) = (sel[*j].1, sel[*j].0);
                    (subs.len(), *n, r.asid, r.vpn) < (bs.len(), bn, br.asid, br.vpn)
                }
            };
            if better {
                best = Some((i, subs));
            }
        }
        let Some((i, subs)) = best else { break };
        if (sel.len() - 1 + subs.len()) as u64 > budget {
            break;
        }
        sel.swap_remove(i);
        sel.extend(subs);
    }
    let mut hints: Vec<(Region, u64)> = sel.into_iter().filter(|(r, _)| r.level > 0).collect();
    hints.sort_by(hotter);
    hints
        .into_iter()
        .map(|(region, samples)| Hint { region, samples })
        .collect()
}

/// SPE-like sampler of walk-causing references: one sample every `period` walks, the
/// interval drawn uniformly from `[period - period/8, period + period/8)` when `jitter` is on
/// (SPE randomizes the low bits of its interval counter; the mean stays `period`).
#[derive(Clone, Debug)]
pub struct Sampler {
    period: u64,
    jitter: bool,
    countdown: u64,
    rng: crate::rng::Rng,
}

impl Sampler {
    /// A sampler with the given mean interval; the jitter's sequence depends only on `seed`.
    pub fn new(period: u64, jitter: bool, seed: u64) -> Sampler {
        let mut s = Sampler {
            period: period.max(1),
            jitter,
            countdown: 0,
            rng: crate::rng::Rng::new(seed, 0x1e54),
        };
        s.countdown = s.interval();
        s
    }

    fn interval(&mut self) -> u64 {
        let spread = self.period / 8;
        if self.jitter && spread > 0 {
            self.period - spread + self.rng.below(2 * spread)
        } else {
            self.period
        }
    }

    /// One walk-causing reference: whether it is sampled.
    #[inline]
    pub fn tick(&mut self) -> bool {
        self.countdown -= 1;
        if self.countdown == 0 {
            self.countdown = self.interval();
            true
        } else {
            false
        }
    }
}

/// Parse a size name of a hint file (`64k`, `2m`, `32m`, case-insensitive) into a level.
fn parse_level(s: &str) -> Option<u8> {
    LEVEL_NAMES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(s))
        .filter(|&l| l > 0)
        .map(|l| l as u8)
}

/// The text of a hint file: one hint a line, `asid start_address size samples`, hottest first
/// (`#` starts a comment).
pub fn format_hints(hints: &[Hint]) -> String {
    let mut s =
        String::from("# Leshy hints (xlat et.leshy): asid start size samples, hottest first\n");
    for h in hints {
        s.push_str(&format!(
            "{} {:#x} {} {}\n",
            h.region.asid,
            h.region.vpn << 12,
            LEVEL_NAMES[h.region.level as usize],
            h.samples
        ));
    }
    s
}

/// Parse a hint file (see [`format_hints`]); `what` names the file in errors. Hints must be
/// aligned to their size and must not overlap.
pub fn parse_hints(text: &str, what: &str) -> Result<Vec<Hint>, String> {
    let mut hints = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let err = |msg: &str| format!("{what}, line {}: {msg} (in {line:?})", i + 1);
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 4 {
            return Err(err("expected `asid start size samples`"));
        }
        let asid: Asid = f[0].parse().map_err(|_| err("bad asid"))?;
        let start = match f[1].strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16),
            None => f[1].parse(),
        }
        .map_err(|_| err("bad start address"))?;
        let level = parse_level(f[2]).ok_or_else(|| err("size must be 64k, 2m or 32m"))?;
        let samples: u64 = f[3].parse().map_err(|_| err("bad sample count"))?;
        let region = Region {
            asid,
            vpn: start >> 12,
            level,
        };
        if start % region.bytes() != 0 {
            return Err(err("start is not aligned to the size"));
        }
        hints.push(Hint { region, samples });
    }
    let mut sorted: Vec<Region> = hints.iter().map(|h| h.region).collect();
    sorted.sort();
    for w in sorted.windows(2) {
        if w[0].asid == w[1].asid && w[0].vpn + w[0].pages() > w[1].vpn {
            return Err(format!(
                "{what}: hints overlap at {:#x} (asid {})",
                w[1].vpn << 12,
                w[1].asid
            ));
        }
    }
    Ok(hints)
}

/// Hinted ranges for lookups by address (offline placement).
#[derive(Clone, Debug, Default)]
pub struct HintIndex {
    by_start: BTreeMap<(Asid, u64), Region>,
}

impl HintIndex {
    /// Index non-overlapping hints.
    pub fn new(hints: &[Hint]) -> HintIndex {
        HintIndex {
            by_start: hints
                .iter()
                .map(|h| ((h.region.asid, h.region.vpn), h.region))
                .collect(),
        }
    }

    /// The hinted region holding `vpn` of `asid`.
    pub fn find(&self, asid: Asid, vpn: Vpn) -> Option<Region> {
        self.by_start
            .range(..=(asid, vpn.0))
            .next_back()
            .map(|(_, r)| *r)
            .filter(|r| r.contains(asid, vpn))
    }

    /// Whether any hinted region of `asid` of level >= `level` overlaps `[vpn, vpn + pages)`.
    pub fn overlaps_at_least(&self, asid: Asid, vpn: Vpn, pages: u64, level: u8) -> bool {
        // A region starting before `vpn` that reaches into the range, or one starting inside.
        self.find(asid, vpn).is_some_and(|r| r.level >= level)
            || self
                .by_start
                .range((asid, vpn.0)..(asid, vpn.0 + pages))
                .any(|(_, r)| r.level >= level)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(v: &[(u64, u64)]) -> Samples {
        v.iter().map(|&(vpn, n)| ((0, vpn), n)).collect()
    }

    fn r(vpn: u64, level: u8) -> Region {
        Region {
            asid: 0,
            vpn,
            level,
        }
    }

    fn regions(h: &[Hint]) -> Vec<(Region, u64)> {
        h.iter().map(|h| (h.region, h.samples)).collect()
    }

    /// The hand-computed example (docs/designs/et.md, "Leshy"): 17 samples in 6 pages.
    /// 4 KiB: 6 entries; 64 KiB: {64K@0: 8, 4K@528: 2, 4K@544: 2, 64K@8192: 5} = 4;
    /// 2 MiB: {64K@0 (2M@0 has one sampled 64 KiB region), 2M@512: 4, 64K@8192} = 3;
    /// 32 MiB: {32M@0: 12, 64K@8192 (32M@8192 has one sampled 2 MiB region)} = 2.
    fn example() -> Samples {
        samples(&[(0, 5), (1, 3), (528, 2), (544, 2), (8192, 4), (8193, 1)])
    }

    #[test]
    fn greedy_selection_picks_the_smallest_size_that_fits_the_budget() {
        let s = example();
        // Budget 2: only 32 MiB fits; trading 32M@0 for {64K@0, 2M@512} would need 3.
        assert_eq!(
            regions(&select(&s, 2, 1.0)),
            vec![(r(0, 3), 12), (r(8192, 1), 5)]
        );
        // Budget 3: 2 MiB fits; trading 2M@512 for two 4 KiB pages would need 4.
        assert_eq!(
            regions(&select(&s, 3, 1.0)),
            vec![(r(0, 1), 8), (r(8192, 1), 5), (r(512, 2), 4)]
        );
        // Budget 4: 64 KiB fits (the two single pages stay 4 KiB: no hint).
        assert_eq!(
            regions(&select(&s, 4, 1.0)),
            vec![(r(0, 1), 8), (r(8192, 1), 5)]
        );
        // Budget 6: 4 KiB entries fit every sampled page: no hint at all.
        assert!(select(&s, 6, 1.0).is_empty());
        assert!(select(&Samples::new(), 6, 1.0).is_empty());
    }

    #[test]
    fn greedy_selection_trades_the_coldest_largest_region_down_while_the_budget_holds() {
        // Two 32 MiB regions, each of two 2 MiB regions of two 4 KiB pages in different
        // 64 KiB regions; the first 2 MiB region is hotter. Candidates: 2 MiB: 4 entries,
        // 32 MiB: {32M@0: 8, 32M@8192: 4}. Budget 3: 32 MiB is chosen, then 32M@8192 (the
        // colder of two equally cheap trades) becomes its two 2 MiB regions (3 entries);
        // trading 32M@0 too would need 4.
        let s = samples(&[
            (0, 3),
            (16, 3),
            (512, 1),
            (528, 1),
            (8192, 1),
            (8208, 1),
            (8704, 1),
            (8720, 1),
        ]);
        assert_eq!(
            regions(&select(&s, 3, 1.0)),
            vec![(r(0, 3), 8), (r(8192, 2), 2), (r(8704, 2), 2)]
        );
        // Budget 4: 2 MiB fits at once.
        assert_eq!(select(&s, 4, 1.0).len(), 4);
        // A smaller coverage target needs fewer entries: the hottest 2 MiB region (6 of 12
        // samples) and one more reach 2/3 with budget 2.
        assert_eq!(
            regions(&select(&s, 2, 0.6)),
            vec![(r(0, 2), 6), (r(512, 2), 2)]
        );
    }

    #[test]
    fn with_no_size_fitting_the_hottest_32m_regions_fill_the_budget() {
        // Three 32 MiB regions of two sampled 2 MiB regions each, budget 2.
        let s = samples(&[
            (0, 1),
            (512, 1),
            (8192, 5),
            (8704, 5),
            (16384, 2),
            (16896, 2),
        ]);
        assert_eq!(
            regions(&select(&s, 2, 1.0)),
            vec![(r(8192, 3), 10), (r(16384, 3), 4)]
        );
    }

    #[test]
    fn the_sampler_takes_one_walk_in_period_on_average_and_jitters_the_interval() {
        let mut s = Sampler::new(1024, true, 7);
        let taken = (0..1024 * 1000).filter(|_| s.tick()).count();
        assert!((990..=1010).contains(&taken), "{taken}");
        let mut fixed = Sampler::new(1024, false, 7);
        let idx: Vec<usize> = (0..4096).filter(|_| fixed.tick()).collect::<Vec<_>>();
        assert_eq!(idx.len(), 4);
        // With jitter the intervals differ.
        let mut s = Sampler::new(1024, true, 7);
        let mut gaps = Vec::new();
        let mut last = 0;
        for i in 1..=20_000 {
            if s.tick() {
                gaps.push(i - last);
                last = i;
            }
        }
        assert!(gaps.iter().any(|&g| g != gaps[0]));
        assert!(gaps.iter().all(|&g| (896..1152).contains(&g)), "{gaps:?}");
    }

    #[test]
    fn hint_files_round_trip_and_bad_lines_are_errors_naming_the_line() {
        let h = select(&example(), 3, 1.0);
        let text = format_hints(&h);
        assert_eq!(parse_hints(&text, "f").unwrap(), h);
        let e = parse_hints("0 0x1000 64k 3\n", "hints.txt").unwrap_err();
        assert!(
            e.contains("hints.txt, line 1") && e.contains("aligned"),
            "{e}"
        );
        let e = parse_hints("# c\n0 0x0 4k 3\n", "f").unwrap_err();
        assert!(e.contains("line 2") && e.contains("64k, 2m or 32m"), "{e}");
        let e = parse_hints("0 0x0 2m 3\n0 0x10000 64k 1\n", "f").unwrap_err();
        assert!(e.contains("overlap"), "{e}");
    }

    #[test]
    fn the_hint_index_finds_the_region_holding_a_page() {
        let idx = HintIndex::new(&select(&example(), 3, 1.0));
        assert_eq!(idx.find(0, Vpn(5)), Some(r(0, 1)));
        assert_eq!(idx.find(0, Vpn(600)), Some(r(512, 2)));
        assert_eq!(idx.find(0, Vpn(16)), None);
        assert_eq!(idx.find(1, Vpn(5)), None);
        assert!(idx.overlaps_at_least(0, Vpn(512), 512, 2));
        assert!(!idx.overlaps_at_least(0, Vpn(0), 512, 2));
        assert!(idx.overlaps_at_least(0, Vpn(0), 8192, 2));
    }
}
