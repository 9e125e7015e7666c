//! The L2 stream prefetcher (`[mem.l2_prefetcher]`): which lines to fetch ahead of a stream of
//! demand accesses that reach the L2. Off by default.
//!
//! Owns [`PrefetcherConfig`] and [`StreamPrefetcher`]; calls nothing. `mem/mod.rs` trains it on
//! every data access that looks up the L2 (L1D misses; page-walk reads do not train it) and
//! fills the lines it names into the L2 (and the LLC on the way) as [`crate::mem::MemEvent`]s
//! of kind `Prefetch`, which the out-of-order core times.
//!
//! Contract: [`StreamPrefetcher::train`] is a pure function of the sequence of lines it was
//! given (deterministic); the lines it returns lie in the 4 KiB physical page of the access
//! (a prefetcher sees physical addresses and cannot know the next frame), ahead of the access
//! in the stream's direction, never the accessed line itself, each at most once per stream
//! until the stream turns.
//!
//! ## Model
//! A table of `streams` trackers (4-way set-associative by page, LRU; a power of two of at
//! least 4), one per 4 KiB page: the last line offset seen, the direction (+1 or -1) of the
//! last step, how many steps in a row went that way, and the furthest line already prefetched.
//! A first access to a page allocates a tracker; each access that moves within the page in the
//! same direction as the step before raises the count; a step the other way restarts it. From
//! `confirm_steps` steps in a row on, each access issues up to `degree` lines from just beyond
//! the furthest line already prefetched (or the access), as long as they lie within
//! `distance_lines` of the access and inside the page.
//!
//! With `next_line`, an access that misses the L2 also names the next line of its page, first
//! (the stream's lines follow; a line both name is named once).
//!
//! This is the classic sequential stream prefetcher (Chen and Baer's stream buffers as a
//! per-page detector with a degree and a distance; Srinath et al. describe the same knobs).
//!
//! ## Deviations
//! No IP-indexed stride detection (traces carry no instruction address), no cross-page
//! streams, no throttling by accuracy, no prefetch queue: a prefetch is issued at its trigger
//! and waits for a free L2 (and LLC) MSHR like a demand miss (`timing/ooo/memory.rs`).
//!
//! ## References
//! T.-F. Chen and J.-L. Baer, "Effective hardware-based data prefetching for high-performance
//! processors", IEEE TC 1995; S. Srinath, O. Mutlu, H. Kim, Y. N. Patt, "Feedback directed
//! prefetching", HPCA 2007 (stream prefetcher: trackers, degree, distance).

use serde::{Deserialize, Serialize};

/// Which prefetcher a cache level runs.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PrefetcherKind {
    /// None (the default).
    None,
    /// The stream prefetcher of this module.
    Stream,
}

/// `[mem.l2_prefetcher]`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PrefetcherConfig {
    /// `none` or `stream`.
    pub kind: PrefetcherKind,
    /// Also fetch the next line (in the same 4 KiB page) of every access that misses the L2
    /// (with `kind = "stream"` only).
    pub next_line: bool,
    /// Trackers (pages followed at once); a power of two, at least 4.
    pub streams: u32,
    /// Steps in one direction before the tracker prefetches.
    pub confirm_steps: u32,
    /// Lines issued per trained access at most.
    pub degree: u32,
    /// How far ahead of the access (in lines) the prefetcher runs at most.
    pub distance_lines: u32,
}

impl Default for PrefetcherConfig {
    fn default() -> Self {
        PrefetcherConfig {
            kind: PrefetcherKind::None,
            next_line: false,
            streams: 64,
            confirm_steps: 2,
            degree: 2,
            distance_lines: 16,
        }
    }
}

impl PrefetcherConfig {
    /// Check the knobs (whatever `kind`, so that a preset is valid before it is switched on).
    pub fn validate(&self, name: &str) -> Result<(), String> {
        if self.next_line && self.kind != PrefetcherKind::Stream {
            return Err(format!(
                "mem.{name}.next_line needs mem.{name}.kind = \"stream\" (it is part of that prefetcher)"
            ));
        }
        if self.streams < 4 || !self.streams.is_power_of_two() {
            return Err(format!(
                "mem.{name}.streams ({}) must be a power of two of at least 4",
                self.streams
            ));
        }
        if self.confirm_steps == 0 {
            return Err(format!("mem.{name}.confirm_steps must be at least 1"));
        }
        if self.degree == 0 || self.degree > MAX_DEGREE {
            return Err(format!(
                "mem.{name}.degree ({}) must be 1..={MAX_DEGREE}",
                self.degree
            ));
        }
        if self.distance_lines == 0 || self.distance_lines > LINES_PER_PAGE as u32 - 1 {
            return Err(format!(
                "mem.{name}.distance_lines ({}) must be 1..={} (a prefetch stays in its 4 KiB page)",
                self.distance_lines,
                LINES_PER_PAGE - 1
            ));
        }
        Ok(())
    }
}

/// Largest `degree` (the lines one access may issue are returned in a fixed array, which also
/// holds the next line).
pub const MAX_DEGREE: u32 = 8;
const LINES_PER_PAGE: i64 = 64;
const WAYS: usize = 4;

#[derive(Clone, Copy, Debug, Default)]
struct Tracker {
    /// Page number + 1 (0: free).
    page: u64,
    last: i8,
    dir: i8,
    steps: u8,
    /// Furthest offset prefetched in `dir` (the access's own offset when none).
    front: i8,
    stamp: u64,
}

/// Lines to prefetch, returned by [`StreamPrefetcher::train`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Prefetches {
    lines: [u64; MAX_DEGREE as usize + 1],
    n: usize,
}

impl Prefetches {
    /// The lines, in issue order.
    pub fn lines(&self) -> &[u64] {
        &self.lines[..self.n]
    }
}

/// One core's stream prefetcher state.
#[derive(Clone, Debug)]
pub struct StreamPrefetcher {
    trackers: Vec<Tracker>,
    set_mask: u64,
    confirm: u8,
    degree: usize,
    distance: i64,
    next_line: bool,
    clock: u64,
}

impl StreamPrefetcher {
    /// An empty table for `cfg` (validated).
    pub fn new(cfg: &PrefetcherConfig) -> Self {
        StreamPrefetcher {
            trackers: vec![Tracker::default(); cfg.streams as usize],
            set_mask: (cfg.streams as u64 / WAYS as u64) - 1,
            confirm: cfg.confirm_steps.min(u8::MAX as u32) as u8,
            degree: cfg.degree as usize,
            distance: cfg.distance_lines as i64,
            next_line: cfg.next_line,
            clock: 0,
        }
    }

    /// An access to `line` reached the L2 (and missed it: `l2_missed`): update the stream of
    /// its page and return the lines to prefetch (see the module doc): the next line first,
    /// when `next_line` is on and the access missed, then the stream's.
    pub fn train(&mut self, line: u64, l2_missed: bool) -> Prefetches {
        self.clock += 1;
        let mut out = Prefetches::default();
        if self.next_line && l2_missed && line % LINES_PER_PAGE as u64 != LINES_PER_PAGE as u64 - 1
        {
            out.lines[0] = line + 1;
            out.n = 1;
        }
        let issued_before = out.n; // 0 or 1 (the next line)
        let page = line / LINES_PER_PAGE as u64;
        let off = (line % LINES_PER_PAGE as u64) as i8;
        let set = ((page ^ (page >> 7)) & self.set_mask) as usize * WAYS;
        let ways = &mut self.trackers[set..set + WAYS];
        let Some(t) = ways.iter_mut().find(|t| t.page == page + 1) else {
            let victim = ways
                .iter_mut()
                .min_by_key(|t| (t.page != 0, t.stamp))
                .expect("a set has ways");
            *victim = Tracker {
                page: page + 1,
                last: off,
                dir: 0,
                steps: 0,
                front: off,
                stamp: self.clock,
            };
            return out;
        };
        t.stamp = self.clock;
        let step = off as i64 - t.last as i64;
        if step == 0 {
            return out;
        }
        let dir = step.signum() as i8;
        if dir == t.dir {
            t.steps = t.steps.saturating_add(1);
        } else {
            t.dir = dir;
            t.steps = 1;
            t.front = off;
        }
        t.last = off;
        if t.steps < self.confirm {
            return out;
        }
        let d = dir as i64;
        // Beyond both the furthest prefetched line and the access, in the stream's direction.
        let mut next = if (t.front as i64 - off as i64) * d > 0 {
            t.front as i64 + d
        } else {
            off as i64 + d
        };
        let mut issued = 0;
        while issued < self.degree
            && (next - off as i64) * d <= self.distance
            && (0..LINES_PER_PAGE).contains(&next)
        {
            let l = page * LINES_PER_PAGE as u64 + next as u64;
            // The stream's line may be the next line already named: it counts, once.
            if !(issued_before == 1 && out.lines[0] == l) {
                out.lines[out.n] = l;
                out.n += 1;
            }
            issued += 1;
            t.front = next as i8;
            next += d;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on() -> PrefetcherConfig {
        PrefetcherConfig {
            kind: PrefetcherKind::Stream,
            ..PrefetcherConfig::default()
        }
    }

    #[test]
    fn an_ascending_stream_is_confirmed_then_prefetched_ahead_up_to_the_distance() {
        let mut p = StreamPrefetcher::new(&on());
        let base = 100 * 64;
        assert!(p.train(base, false).lines().is_empty(), "allocates");
        assert!(p.train(base + 1, false).lines().is_empty(), "one step");
        assert_eq!(p.train(base + 2, false).lines(), &[base + 3, base + 4]);
        assert_eq!(p.train(base + 3, false).lines(), &[base + 5, base + 6]);
        // Runs ahead by the degree each access until it is `distance_lines` ahead.
        let mut front = base + 6;
        for k in 4..20 {
            for &l in p.train(base + k, false).lines() {
                assert_eq!(l, front + 1, "in order, never twice");
                front = l;
                assert!(l - (base + k) <= 16);
            }
        }
        assert_eq!(front, base + 19 + 16);
    }

    #[test]
    fn prefetches_stay_in_the_page_and_a_descending_stream_goes_down() {
        let mut p = StreamPrefetcher::new(&on());
        let base = 7 * 64;
        for k in [63, 62, 61] {
            let got = p.train(base + k, false);
            if k == 61 {
                assert_eq!(got.lines(), &[base + 60, base + 59]);
            }
        }
        let mut q = StreamPrefetcher::new(&on());
        let mut all = Vec::new();
        for k in 50..64 {
            all.extend_from_slice(q.train(base + k, false).lines());
        }
        assert!(all.iter().all(|&l| l / 64 == 7 && l % 64 > 50), "{all:?}");
        assert_eq!(*all.last().unwrap(), base + 63);
    }

    #[test]
    fn a_turn_restarts_the_confirmation_and_random_lines_issue_nothing() {
        let mut p = StreamPrefetcher::new(&on());
        let base = 3 * 64;
        for k in [10, 11, 12] {
            p.train(base + k, false);
        }
        assert!(
            p.train(base + 5, false).lines().is_empty(),
            "turned: one step down"
        );
        let mut x = 12345u64;
        let mut issued = 0;
        for _ in 0..10_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            issued += p.train((x >> 20) % (1 << 24), false).lines().len();
        }
        assert!(issued < 50, "{issued} prefetches on random lines");
    }

    #[test]
    fn trackers_follow_as_many_pages_as_configured_and_forget_the_least_recent() {
        let cfg = PrefetcherConfig { streams: 4, ..on() };
        let mut p = StreamPrefetcher::new(&cfg);
        // Five interleaved streams over a 4-tracker table: none stays long enough to confirm.
        let mut issued = 0;
        for k in 0..10 {
            for page in 0..5u64 {
                issued += p.train(page * 64 + k, false).lines().len();
            }
        }
        assert_eq!(issued, 0);
        let mut p = StreamPrefetcher::new(&cfg);
        let mut issued = 0;
        for k in 0..10 {
            for page in 0..4u64 {
                issued += p.train(page * 64 + k, false).lines().len();
            }
        }
        assert!(issued > 0);
    }

    proptest::proptest! {
        /// Whatever the lines, every prefetch lies in the accessed page, ahead of the access in
        /// the direction it names, within the distance, and is never the accessed line; no line
        /// is prefetched twice while its page's stream keeps its direction.
        #[test]
        fn prefetches_stay_in_the_page_ahead_within_the_distance_and_are_not_repeated(
            lines in proptest::collection::vec(0u64..(4 * 64), 1..400),
            degree in 1u32..=MAX_DEGREE,
            distance in 1u32..64,
        ) {
            let cfg = PrefetcherConfig { degree, distance_lines: distance, streams: 4, ..on() };
            let mut p = StreamPrefetcher::new(&cfg);
            // Per page: the last offset, the stream's direction, the lines it prefetched since
            // it last turned. Four pages on four trackers (one set): no tracker is forgotten,
            // so no stream starts over behind the check's back.
            let mut state: std::collections::HashMap<u64, (i64, i64, Vec<u64>)> = Default::default();
            for &line in &lines {
                let got = p.train(line, false);
                let (page, off) = (line / 64, (line % 64) as i64);
                let dir = match state.get(&page) {
                    Some(&(prev, _, _)) => (off - prev).signum(),
                    None => 0,
                };
                let e = state.entry(page).or_insert((off, 0, Vec::new()));
                e.0 = off;
                if dir != 0 && dir != e.1 {
                    e.1 = dir;
                    e.2.clear();
                }
                proptest::prop_assert!(got.lines().len() <= degree as usize);
                for &l in got.lines() {
                    proptest::prop_assert_eq!(l / 64, page);
                    let ahead = ((l % 64) as i64 - off) * dir;
                    proptest::prop_assert!(ahead >= 1 && ahead <= distance as i64, "{} from {}", l, line);
                    proptest::prop_assert!(!e.2.contains(&l), "{} twice", l);
                    e.2.push(l);
                }
            }
        }
    }

    #[test]
    fn the_next_line_is_fetched_on_an_l2_miss_only_within_the_page_and_before_the_streams_lines() {
        let cfg = PrefetcherConfig {
            next_line: true,
            ..on()
        };
        let mut p = StreamPrefetcher::new(&cfg);
        let base = 9 * 64;
        assert_eq!(p.train(base + 6, true).lines(), &[base + 7]);
        assert!(
            p.train(base + 64 * 5 + 63, true).lines().is_empty(),
            "not into the next page"
        );
        assert_eq!(p.train(base + 7, false).lines(), &[] as &[u64], "an L2 hit");
        assert_eq!(
            p.train(base + 8, true).lines(),
            &[base + 9, base + 10],
            "the stream's first line is the next line: named once"
        );
        // Off: nothing on the first miss.
        let mut q = StreamPrefetcher::new(&on());
        assert!(q.train(base + 6, true).lines().is_empty());
        let bad = PrefetcherConfig {
            next_line: true,
            ..PrefetcherConfig::default()
        };
        assert!(bad
            .validate("l2_prefetcher")
            .unwrap_err()
            .contains("mem.l2_prefetcher.next_line"));
    }

    #[test]
    fn bad_knobs_are_refused_with_their_names() {
        let bad = PrefetcherConfig { streams: 6, ..on() };
        assert!(bad
            .validate("l2_prefetcher")
            .unwrap_err()
            .contains("mem.l2_prefetcher.streams"));
        let bad = PrefetcherConfig {
            distance_lines: 64,
            ..on()
        };
        assert!(bad
            .validate("l2_prefetcher")
            .unwrap_err()
            .contains("distance_lines"));
        let bad = PrefetcherConfig { degree: 0, ..on() };
        assert!(bad.validate("l2_prefetcher").is_err());
        assert!(on().validate("l2_prefetcher").is_ok());
    }
}
