//! One set-associative cache level with LRU or SRRIP replacement, whose lines remember whether
//! they hold data or page-table entries.
//!
//! Contract: at most `ways` lines per set; `lookup` never changes which lines are present (only
//! recency and the dirty bit); `fill` is only called after a miss at this level; the kind of a line is
//! the kind of the access that filled it (a later access of the other kind does not change it).

use super::{CacheLevelConfig, ReplacementPolicy};
use crate::recency::move_to_front;

/// Line kind: program data.
pub const DATA: u8 = 0;
/// Line kind: page-table entries.
pub const PT: u8 = 1;
const RRPV_MAX: u64 = 3;

// One u64 per line keeps a whole set in one or two host cache lines (the simulator's own cache
// misses dominate its speed): bits 0..56 = line + 1 (0 = invalid), 56 = kind, 57 = dirty,
// 58..64 = replacement state (SRRIP: RRPV; unused under LRU).
//
// LRU keeps each set in recency order instead (slot 0 most recent, valid lines a prefix, so the
// victim is always the last slot): a hit moves its line to the front, a fill shifts the set by
// one. Both are one small memmove, where per-line recency ranks cost a pass of arithmetic over
// every way on every access (measured: the cache was half the simulator's instructions).
const TAG_MASK: u64 = (1 << 56) - 1;
const KIND_SHIFT: u32 = 56;
const DIRTY: u64 = 1 << 57;
const REPL_SHIFT: u32 = 58;
const REPL_MASK: u64 = 0x3f << REPL_SHIFT;

/// Largest associativity the packed replacement state supports.
pub const MAX_WAYS: u32 = 64;

#[inline]
fn repl(x: u64) -> u64 {
    (x & REPL_MASK) >> REPL_SHIFT
}

#[inline]
fn with_repl(x: u64, r: u64) -> u64 {
    (x & !REPL_MASK) | (r << REPL_SHIFT)
}

/// A line pushed out by a fill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Evicted {
    /// Line number (physical address >> 6).
    pub line: u64,
    /// Whether it was modified.
    pub dirty: bool,
    /// [`DATA`] or [`PT`].
    pub kind: u8,
}

/// Per-kind counters of one level.
#[derive(Clone, Copy, Debug, Default)]
pub struct LevelCounters {
    /// Accesses by kind (`[data, pt]`).
    pub accesses: [u64; 2],
    /// Misses by kind.
    pub misses: [u64; 2],
    /// Lines evicted.
    pub evictions: u64,
    /// Dirty lines evicted.
    pub writebacks: u64,
}

/// One cache level.
#[derive(Clone, Debug)]
pub struct Cache {
    ways: usize,
    sets: u64,
    set_mask: Option<u64>,
    policy: ReplacementPolicy,
    slots: Vec<u64>,
    /// Valid lines holding page-table entries (kept incrementally for cheap sampling).
    pub pt_lines: u64,
    /// Hit latency in cycles.
    pub latency_cycles: u32,
    /// Counters.
    pub c: LevelCounters,
}

impl Cache {
    /// An empty cache. `cfg.ways` must be at most [`MAX_WAYS`] (configs are validated).
    pub fn new(cfg: &CacheLevelConfig) -> Cache {
        let lines = (cfg.size_bytes / 64) as usize;
        let ways = cfg.ways as usize;
        assert!(ways as u32 <= MAX_WAYS && ways > 0);
        let sets = (lines / ways) as u64;
        Cache {
            ways,
            sets,
            set_mask: sets.is_power_of_two().then_some(sets - 1),
            policy: cfg.policy,
            slots: vec![0; lines],
            pt_lines: 0,
            latency_cycles: cfg.latency_cycles,
            c: LevelCounters::default(),
        }
    }

    /// Number of lines.
    pub fn lines(&self) -> u64 {
        self.slots.len() as u64
    }

    #[inline]
    fn set_base(&self, line: u64) -> usize {
        let set = match self.set_mask {
            Some(m) => line & m,
            None => line % self.sets,
        };
        set as usize * self.ways
    }

    /// Make way `i` of `set` the most recently used.
    #[inline]
    fn touch(policy: ReplacementPolicy, set: &mut [u64], i: usize) {
        match policy {
            ReplacementPolicy::Lru => {
                move_to_front(set, i);
            }
            ReplacementPolicy::Srrip => set[i] &= !REPL_MASK,
        }
    }

    #[inline]
    fn find(set: &[u64], tag: u64) -> Option<usize> {
        // Under LRU hits cluster at the front (sets are in recency order): look there first
        // with an early exit, then scan the rest branch-free (misses scan everything anyway).
        let head = set.len().min(4);
        if let Some(i) = set[..head].iter().position(|x| *x & TAG_MASK == tag) {
            return Some(i);
        }
        let mut mask = 0u64;
        for (j, x) in set[head..].iter().enumerate() {
            mask |= ((*x & TAG_MASK == tag) as u64) << j;
        }
        (mask != 0).then(|| head + mask.trailing_zeros() as usize)
    }

    /// Look `line` up for an access of `kind`; on a hit, update recency (and set dirty on a
    /// write). Counts the access.
    #[inline]
    pub fn lookup(&mut self, line: u64, kind: u8, write: bool) -> bool {
        self.c.accesses[kind as usize] += 1;
        let base = self.set_base(line);
        let set = &mut self.slots[base..base + self.ways];
        match Self::find(set, line + 1) {
            Some(i) => {
                // Mark before touching: under LRU the touch moves the line to slot 0.
                if write {
                    set[i] |= DIRTY;
                }
                Self::touch(self.policy, set, i);
                true
            }
            None => {
                self.c.misses[kind as usize] += 1;
                false
            }
        }
    }

    /// Mark `line` dirty if present (a write-back from the level above); true if it was present.
    #[inline]
    pub fn absorb_writeback(&mut self, line: u64) -> bool {
        let base = self.set_base(line);
        let set = &mut self.slots[base..base + self.ways];
        match Self::find(set, line + 1) {
            Some(i) => {
                set[i] |= DIRTY;
                true
            }
            None => false,
        }
    }

    /// Insert `line`, which must not be present (callers fill only after a miss at this
    /// level), evicting a victim chosen by the policy.
    #[inline]
    pub fn fill(&mut self, line: u64, kind: u8, dirty: bool) -> Option<Evicted> {
        let base = self.set_base(line);
        let ways = self.ways;
        let policy = self.policy;
        let set = &mut self.slots[base..base + ways];
        debug_assert!(
            Self::find(set, line + 1).is_none(),
            "fill of a present line"
        );
        let fresh = (line + 1) | ((kind as u64) << KIND_SHIFT) | if dirty { DIRTY } else { 0 };
        let old = match policy {
            ReplacementPolicy::Lru => {
                let old = set[ways - 1];
                set[ways - 1] = fresh;
                move_to_front(set, ways - 1);
                old
            }
            ReplacementPolicy::Srrip => {
                let v = Self::srrip_victim(set);
                let old = set[v];
                set[v] = with_repl(fresh, RRPV_MAX - 1);
                old
            }
        };
        let evicted = (old & TAG_MASK != 0).then(|| Evicted {
            line: (old & TAG_MASK) - 1,
            dirty: old & DIRTY != 0,
            kind: ((old >> KIND_SHIFT) & 1) as u8,
        });
        if let Some(e) = evicted {
            self.c.evictions += 1;
            self.c.writebacks += e.dirty as u64;
            self.pt_lines -= (e.kind == PT) as u64;
        }
        self.pt_lines += (kind == PT) as u64;
        evicted
    }

    /// The slot to fill: the first invalid one, else the policy's victim (SRRIP ages the set
    /// as many rounds as needed for some line to reach the distant re-reference value).
    #[inline]
    fn srrip_victim(set: &mut [u64]) -> usize {
        // Two branch-free passes (both vectorize): the highest key, then the first slot holding
        // it. An empty slot's key (64) beats every RRPV (< 64), so the first empty slot wins;
        // among full slots the first with the highest RRPV wins, after ageing the set so that
        // it reaches RRPV_MAX.
        #[inline]
        fn key(x: u64) -> u64 {
            if x & TAG_MASK == 0 {
                64
            } else {
                repl(x)
            }
        }
        let best_r = set.iter().fold(0, |m, x| m.max(key(*x)));
        let mut mask = 0u64;
        for (j, x) in set.iter().enumerate() {
            mask |= ((key(*x) == best_r) as u64) << j;
        }
        if best_r < RRPV_MAX {
            let bump = RRPV_MAX - best_r;
            for x in set.iter_mut() {
                *x += bump << REPL_SHIFT;
            }
        }
        mask.trailing_zeros() as usize
    }

    /// Prefetch (host caches) the set `line` maps to.
    #[inline]
    pub fn prefetch(&self, line: u64) {
        let base = self.set_base(line);
        let set = &self.slots[base..base + self.ways];
        crate::prefetch::host_prefetch(&set[0]);
        // A set of more than 8 ways spans a second host line.
        crate::prefetch::host_prefetch(&set[self.ways - 1]);
    }

    /// Whether `line` is present (no side effects).
    pub fn contains(&self, line: u64) -> bool {
        let base = self.set_base(line);
        Self::find(&self.slots[base..base + self.ways], line + 1).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cache(sets: u64, ways: u32, policy: ReplacementPolicy) -> Cache {
        Cache::new(&CacheLevelConfig {
            size_bytes: sets * ways as u64 * 64,
            ways,
            latency_cycles: 1,
            policy,
        })
    }

    #[test]
    fn a_line_evicted_by_lru_misses_on_the_next_access() {
        let mut c = cache(1, 2, ReplacementPolicy::Lru);
        for l in [1, 2] {
            assert!(!c.lookup(l, DATA, false));
            c.fill(l, DATA, false);
        }
        assert!(c.lookup(1, DATA, false));
        let ev = c.fill(3, DATA, false).unwrap();
        assert_eq!(ev.line, 2, "2 was least recently used");
        assert!(!c.lookup(2, DATA, false));
        assert!(c.lookup(1, DATA, false));
    }

    #[test]
    fn srrip_evicts_a_line_never_reused_before_one_that_was() {
        let mut c = cache(1, 2, ReplacementPolicy::Srrip);
        c.fill(1, DATA, false);
        c.fill(2, DATA, false);
        assert!(c.lookup(1, DATA, false)); // RRPV 0
        let ev = c.fill(3, DATA, false).unwrap();
        assert_eq!(ev.line, 2);
    }

    #[test]
    fn page_table_lines_are_counted_until_evicted_and_dirty_victims_are_written_back() {
        let mut c = cache(1, 2, ReplacementPolicy::Lru);
        c.fill(1, PT, false);
        c.fill(2, DATA, true);
        assert_eq!(c.pt_lines, 1);
        let ev = c.fill(3, DATA, false).unwrap();
        assert_eq!(
            ev,
            Evicted {
                line: 1,
                dirty: false,
                kind: PT
            }
        );
        assert_eq!(c.pt_lines, 0);
        let ev = c.fill(4, DATA, false).unwrap();
        assert!(ev.dirty);
        assert_eq!(c.c.writebacks, 1);
    }

    #[test]
    fn a_write_hit_dirties_the_line_written_and_no_other() {
        for policy in [ReplacementPolicy::Lru, ReplacementPolicy::Srrip] {
            let mut c = cache(1, 3, policy);
            for l in [1, 2, 3] {
                c.fill(l, DATA, false);
            }
            assert!(c.lookup(2, DATA, true));
            let mut dirty_victims = Vec::new();
            for l in 4..20 {
                if let Some(e) = c.fill(l, DATA, false) {
                    if e.dirty {
                        dirty_victims.push(e.line);
                    }
                }
            }
            assert_eq!(dirty_victims, vec![2], "{policy:?}");
        }
    }

    proptest! {
        /// Against a reference model (a recency list per set), an LRU cache hits exactly when
        /// the reference does, and counters add up.
        #[test]
        fn an_lru_cache_matches_a_reference_model(lines in prop::collection::vec(0u64..64, 1..500)) {
            let (sets, ways) = (4u64, 3usize);
            let mut c = cache(sets, ways as u32, ReplacementPolicy::Lru);
            let mut model: Vec<Vec<u64>> = vec![Vec::new(); sets as usize];
            for l in lines {
                let set = &mut model[(l % sets) as usize];
                let want = set.contains(&l);
                let got = c.lookup(l, DATA, false);
                prop_assert_eq!(got, want);
                if !got { c.fill(l, DATA, false); }
                set.retain(|x| *x != l);
                set.push(l);
                if set.len() > ways { set.remove(0); }
                for s in 0..sets {
                    let n = (0..64).filter(|x| x % sets == s && c.contains(*x)).count();
                    prop_assert!(n <= ways);
                }
            }
            prop_assert!(c.c.misses[0] <= c.c.accesses[0]);
        }
    }
}
