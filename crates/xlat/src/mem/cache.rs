//! One set-associative cache level with LRU or SRRIP replacement, whose lines remember whether
//! they hold data or page-table entries.
//!
//! Contract: at most `ways` lines per set; `lookup` never changes which lines are present (only
//! recency and the dirty bit); `fill` is only called after a miss at this level; the kind of a line is
//! the kind of the access that filled it (a later access of the other kind does not change it).
//!
//! Owns the shape of one level's configuration ([`CacheLevelConfig`], composed into `[mem]` by
//! `mem/mod.rs`); calls only the host-speed helpers (`aligned`, `recency`, `simd`, `prefetch`),
//! never the hierarchy around it.

use crate::aligned::{LineAligned, SetIndex};
use crate::recency::{move_to_front, LruWord, NIBBLE_MAX_WAYS};
use serde::{Deserialize, Serialize};

/// Replacement policy of a cache.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ReplacementPolicy {
    /// Least recently used.
    Lru,
    /// Static re-reference interval prediction (2-bit RRPV, insertion at 2).
    Srrip,
}

/// One cache level.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CacheLevelConfig {
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// Associativity.
    pub ways: u32,
    /// Hit latency in core cycles.
    pub latency_cycles: u32,
    /// Replacement policy.
    pub policy: ReplacementPolicy,
}

/// Line kind: program data.
pub const DATA: u8 = 0;
/// Line kind: page-table entries.
pub const PT: u8 = 1;
const RRPV_MAX: u64 = 3;

// One u64 per line keeps a whole set in one or two host cache lines (the simulator's own cache
// misses dominate its speed): bits 0..56 = line + 1 (0 = invalid), 56 = kind, 57 = dirty,
// 58..63 = replacement state (SRRIP: RRPV; unused under LRU), 63 = filled by the prefetcher and
// not yet demanded.
//
// LRU keeps the recency of a set of up to 16 ways in one `LruWord` beside the slots, so lines
// never move: a hit and a fill are a few register operations on that word, and the victim is
// its least recently used slot (invalid slots come before every valid one, because a cache
// never invalidates a line). Larger LRU sets are kept in recency order instead (slot 0
// most recent; a hit moves its line to the front, a fill shifts the set by one). Lookups
// compare a whole set at once without data-dependent branches: where a line sits is
// unpredictable, and early-exit searches cost several mispredictions per reference.
const TAG_MASK: u64 = (1 << 56) - 1;
const KIND_SHIFT: u32 = 56;
const DIRTY: u64 = 1 << 57;
const REPL_SHIFT: u32 = 58;
const REPL_MASK: u64 = 0x1f << REPL_SHIFT;
const PREFETCHED: u64 = 1 << 63;

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
    /// Lines dropped because their frame's contents moved.
    pub invalidations: u64,
    /// Lines the prefetcher filled.
    pub prefetch_fills: u64,
    /// Demand hits on lines the prefetcher filled (the first hit of each).
    pub prefetch_hits: u64,
    /// Prefetches that read DRAM.
    pub prefetch_dram_reads: u64,
}

/// Representation of the replacement state (a speed choice; decisions are the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// LRU, at most 16 ways: an [`LruWord`] per set.
    LruWord,
    /// LRU, more ways: sets kept in recency order.
    LruOrdered,
    /// SRRIP, at most 32 ways: a word of 2-bit RRPVs per set.
    SrripPacked,
    /// SRRIP, more ways: each slot's RRPV in its high bits.
    SrripSlots,
}

/// Ways of SRRIP sets kept as one word of 2-bit RRPVs.
const SRRIP_PACKED_MAX_WAYS: usize = 32;

/// One cache level.
#[derive(Clone, Debug)]
pub struct Cache {
    ways: usize,
    sets: SetIndex,
    slots: LineAligned,
    /// How replacement state is kept (see the layout note above).
    mode: Mode,
    /// Per-set recency under [`Mode::LruWord`].
    order: Vec<LruWord>,
    /// Per-set RRPVs under [`Mode::SrripPacked`]: 2 bits per way, way 0 lowest.
    rrpv: Vec<u64>,
    /// Valid lines per set under [`Mode::SrripPacked`]: a cache never invalidates, and SRRIP
    /// fills the first invalid way, so the valid ways are always a prefix of the set.
    filled: Vec<u8>,
    /// Valid lines holding page-table entries (kept incrementally for cheap sampling).
    pub pt_lines: u64,
    /// Hit latency in cycles.
    pub latency_cycles: u32,
    /// Whether the last hit of [`Cache::lookup`] found a line the prefetcher filled (set
    /// only then; read and cleared by [`Cache::take_prefetched_hit`]).
    prefetched_hit: bool,
    /// Counters.
    pub c: LevelCounters,
}

/// SRRIP victim of a full set whose RRPVs are packed 2 bits per way in `state`: the first way
/// at the largest RRPV, after every way ages by the difference to the maximum (what the
/// paper's "increment all and retry" loop converges to). Branch-free.
#[inline(always)]
fn srrip_age_and_pick(state: &mut u64, ways: usize) -> usize {
    // The low bit of every way's field.
    let low = 0x5555_5555_5555_5555u64 & (u64::MAX >> (64 - 2 * ways));
    let x = *state;
    let at3 = x & (x >> 1) & low;
    let hi = (x >> 1) & low;
    let max = if hi != 0 {
        2 + (at3 != 0) as u64
    } else {
        (x & low != 0) as u64
    };
    // Fields are at most `max`, so adding `3 - max` to each never carries into the next.
    let x = x + (RRPV_MAX - max) * low;
    *state = x;
    ((x & (x >> 1) & low).trailing_zeros() / 2) as usize
}

impl Cache {
    /// An empty cache. `cfg.ways` must be at most [`MAX_WAYS`] (configs are validated).
    pub fn new(cfg: &CacheLevelConfig) -> Cache {
        let lines = (cfg.size_bytes / 64) as usize;
        let ways = cfg.ways as usize;
        assert!(ways as u32 <= MAX_WAYS && ways > 0);
        let sets = (lines / ways) as u64;
        let mode = match cfg.policy {
            ReplacementPolicy::Lru if ways <= NIBBLE_MAX_WAYS => Mode::LruWord,
            ReplacementPolicy::Lru => Mode::LruOrdered,
            ReplacementPolicy::Srrip if ways <= SRRIP_PACKED_MAX_WAYS => Mode::SrripPacked,
            ReplacementPolicy::Srrip => Mode::SrripSlots,
        };
        Cache {
            ways,
            sets: SetIndex::new(sets),
            slots: LineAligned::new(lines, 0),
            mode,
            order: if mode == Mode::LruWord {
                vec![LruWord::new(ways); sets as usize]
            } else {
                Vec::new()
            },
            rrpv: if mode == Mode::SrripPacked {
                vec![0; sets as usize]
            } else {
                Vec::new()
            },
            filled: if mode == Mode::SrripPacked {
                vec![0; sets as usize]
            } else {
                Vec::new()
            },
            pt_lines: 0,
            latency_cycles: cfg.latency_cycles,
            prefetched_hit: false,
            c: LevelCounters::default(),
        }
    }

    /// Number of lines.
    pub fn lines(&self) -> u64 {
        self.slots.len() as u64
    }

    /// The set `line` maps to.
    #[inline(always)]
    fn set_of(&self, line: u64) -> usize {
        self.sets.of(line)
    }

    /// The slots of set `s`. Unchecked: this slicing sits on every simulated access, and
    /// `s` always comes from [`Cache::set_of`], so `s < sets` and the set lies inside `slots`
    /// (`sets * ways` long); debug builds assert it.
    #[inline(always)]
    #[allow(unsafe_code)]
    fn set_slots(slots: &mut [u64], s: usize, ways: usize) -> &mut [u64] {
        debug_assert!((s + 1) * ways <= slots.len());
        // SAFETY: `(s + 1) * ways <= slots.len()` (see above).
        unsafe { slots.get_unchecked_mut(s * ways..(s + 1) * ways) }
    }

    /// The recency word of set `s` under [`Mode::LruWord`]; unchecked for the reason and
    /// with the guarantee of [`Cache::set_slots`] (`order` has one word per set).
    #[inline(always)]
    #[allow(unsafe_code)]
    fn order_of(order: &mut [LruWord], s: usize) -> &mut LruWord {
        debug_assert!(s < order.len());
        // SAFETY: `s < sets == order.len()` (see above).
        unsafe { order.get_unchecked_mut(s) }
    }

    /// The slot of `tag` in `set` (the set's slots), if present.
    #[inline(always)]
    fn find(set: &[u64], tag: u64) -> Option<usize> {
        let mask = crate::simd::eq_mask(set, TAG_MASK, tag);
        (mask != 0).then(|| mask.trailing_zeros() as usize)
    }

    /// Look up `line`; on a hit update recency (and set dirty when `write`). Returns hit/miss.
    /// `kind` is [`DATA`] or [`PT`] (for per-kind counters only).
    #[inline(always)]
    pub fn lookup(&mut self, line: u64, kind: u8, write: bool) -> bool {
        self.c.accesses[kind as usize] += 1;
        let s = self.set_of(line);
        let set = Self::set_slots(&mut self.slots, s, self.ways);
        match Self::find(set, line + 1) {
            Some(i) => {
                // Write the slot only when its dirty bit changes: an unconditional store makes
                // the next lookup of this set (a wider vector load) wait for the store to
                // retire — store forwarding cannot feed a wider load — and stream-like loops
                // look up the same set on consecutive references (+6 % stream).
                if write && set[i] & DIRTY == 0 {
                    set[i] |= DIRTY;
                }
                if set[i] & PREFETCHED != 0 {
                    Self::first_use_of_prefetched(
                        &mut set[i],
                        &mut self.c,
                        &mut self.prefetched_hit,
                    );
                }
                match self.mode {
                    Mode::LruWord => Self::order_of(&mut self.order, s).touch(i, self.ways),
                    Mode::LruOrdered => move_to_front(set, i),
                    Mode::SrripPacked => self.rrpv[s] &= !(3 << (2 * i)),
                    Mode::SrripSlots => set[i] &= !REPL_MASK,
                }
                true
            }
            None => {
                self.c.misses[kind as usize] += 1;
                false
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn first_use_of_prefetched(slot: &mut u64, c: &mut LevelCounters, flag: &mut bool) {
        *slot &= !PREFETCHED;
        c.prefetch_hits += 1;
        *flag = true;
    }

    /// Whether the last hit found a line the prefetcher filled, not demanded before; clears it.
    #[inline(always)]
    pub fn take_prefetched_hit(&mut self) -> bool {
        std::mem::take(&mut self.prefetched_hit)
    }

    /// Install `line` for the prefetcher (after [`Cache::contains`] found it absent): as
    /// [`Cache::fill`] of a clean data line, marked so that its first demand hit is counted.
    pub fn fill_prefetched(&mut self, line: u64) -> Option<Evicted> {
        let ev = self.fill(line, DATA, false);
        let s = self.set_of(line);
        let set = Self::set_slots(&mut self.slots, s, self.ways);
        if let Some(i) = Self::find(set, line + 1) {
            set[i] |= PREFETCHED;
        }
        self.c.prefetch_fills += 1;
        ev
    }

    /// Mark `line` dirty if present, without touching recency (a write-back from the level
    /// above). Returns whether the line was present.
    #[inline(always)]
    pub fn absorb_writeback(&mut self, line: u64) -> bool {
        let s = self.set_of(line);
        let set = Self::set_slots(&mut self.slots, s, self.ways);
        match Self::find(set, line + 1) {
            Some(i) => {
                set[i] |= DIRTY;
                true
            }
            None => false,
        }
    }

    /// Install `line` (after a miss), returning the victim if a valid line was evicted.
    #[inline(always)]
    pub fn fill(&mut self, line: u64, kind: u8, dirty: bool) -> Option<Evicted> {
        let s = self.set_of(line);
        let ways = self.ways;
        let set = Self::set_slots(&mut self.slots, s, ways);
        debug_assert!(
            Self::find(set, line + 1).is_none(),
            "fill of a present line"
        );
        let fresh = (line + 1) | ((kind as u64) << KIND_SHIFT) | if dirty { DIRTY } else { 0 };
        let old = match self.mode {
            Mode::LruWord => {
                let order = Self::order_of(&mut self.order, s);
                let v = order.lru(ways);
                order.touch(v, ways);
                std::mem::replace(&mut set[v], fresh)
            }
            Mode::LruOrdered => {
                let old = set[ways - 1];
                set[ways - 1] = fresh;
                move_to_front(set, ways - 1);
                old
            }
            Mode::SrripPacked => {
                let filled = &mut self.filled[s];
                let v = if (*filled as usize) < ways {
                    *filled += 1;
                    *filled as usize - 1
                } else {
                    srrip_age_and_pick(&mut self.rrpv[s], ways)
                };
                let r = &mut self.rrpv[s];
                *r = (*r & !(3 << (2 * v))) | ((RRPV_MAX - 1) << (2 * v));
                std::mem::replace(&mut set[v], fresh)
            }
            Mode::SrripSlots => {
                let v = Self::srrip_victim(set);
                let old = set[v];
                set[v] = with_repl(fresh, RRPV_MAX - 1);
                old
            }
        };
        self.pt_lines += (kind == PT) as u64;
        if old & TAG_MASK == 0 {
            return None;
        }
        let e = Evicted {
            line: (old & TAG_MASK) - 1,
            dirty: old & DIRTY != 0,
            kind: ((old >> KIND_SHIFT) & 1) as u8,
        };
        self.c.evictions += 1;
        self.c.writebacks += e.dirty as u64;
        self.pt_lines -= (e.kind == PT) as u64;
        Some(e)
    }

    /// Drop every line of `first..first + count` (`count <= 64`) that is present, in that
    /// order, as [`Cache::invalidate`] one by one; returns the dirty ones as a mask (bit `i`:
    /// line `first + i`). A migrated page's 64 lines are probed in every level, and most are
    /// absent: one tight loop per cache keeps that probing cheap (Utopia migrates hundreds of
    /// thousands of pages a run).
    pub fn invalidate_run(&mut self, first: u64, count: u32) -> u64 {
        debug_assert!(count <= 64);
        let mut dirty = 0u64;
        for i in 0..count {
            let line = first + i as u64;
            // Most lines are absent: look before paying for the invalidation's bookkeeping.
            let s = self.set_of(line);
            let set = Self::set_slots(&mut self.slots, s, self.ways);
            if Self::find(set, line + 1).is_none() {
                continue;
            }
            if self.invalidate(line) == Some(true) {
                dirty |= 1 << i;
            }
        }
        dirty
    }

    /// Drop `line` if present (its frame's contents moved), leaving its way the next one
    /// filled. Returns `Some(dirty)` when the line was present. Rare (page migrations), so
    /// clarity over speed.
    pub fn invalidate(&mut self, line: u64) -> Option<bool> {
        let s = self.set_of(line);
        let ways = self.ways;
        let set = Self::set_slots(&mut self.slots, s, ways);
        let i = Self::find(set, line + 1)?;
        let old = set[i];
        match self.mode {
            Mode::LruWord => {
                set[i] = 0;
                // Make way `i` the least recent, the others keeping their order: make it the
                // most recent, then cycle every other way through the front in LRU order.
                let order = Self::order_of(&mut self.order, s);
                order.touch(i, ways);
                for _ in 1..ways {
                    let v = order.lru(ways);
                    order.touch(v, ways);
                }
            }
            Mode::LruOrdered => {
                // Ordered most recent first: the invalid slot goes to the back.
                set[i..].rotate_left(1);
                set[ways - 1] = 0;
            }
            Mode::SrripPacked => {
                // Valid ways stay a prefix: the last valid way takes the freed place.
                let last = self.filled[s] as usize - 1;
                set[i] = set[last];
                set[last] = 0;
                let r = &mut self.rrpv[s];
                let moved = (*r >> (2 * last)) & 3;
                *r = (*r & !(3 << (2 * i))) | (moved << (2 * i));
                *r &= !(3 << (2 * last));
                self.filled[s] -= 1;
            }
            Mode::SrripSlots => set[i] = 0,
        }
        let kind = ((old >> KIND_SHIFT) & 1) as u8;
        self.pt_lines -= (kind == PT) as u64;
        self.c.invalidations += 1;
        Some(old & DIRTY != 0)
    }

    /// SRRIP victim: the first invalid way, else the first way at the largest RRPV; if that is
    /// below the maximum, every line ages by the difference first (what the paper's
    /// "increment all and retry" loop converges to). Branch-free: an invalid way counts as RRPV
    /// 64, above every real one.
    #[inline(always)]
    fn srrip_victim(set: &mut [u64]) -> usize {
        #[inline(always)]
        fn key(x: u64) -> u64 {
            repl(x) | (((x & TAG_MASK == 0) as u64) << 6)
        }
        let best_r = set.iter().fold(0, |m, x| m.max(key(*x)));
        let mut mask = 0u64;
        for (j, x) in set.iter().enumerate() {
            mask |= ((key(*x) == best_r) as u64) << j;
        }
        if best_r < RRPV_MAX {
            let bump = (RRPV_MAX - best_r) << REPL_SHIFT;
            for x in set.iter_mut() {
                *x += bump;
            }
        }
        mask.trailing_zeros() as usize
    }

    /// Prefetch (host caches) the set `line` maps to.
    #[inline]
    pub fn prefetch(&self, line: u64) {
        let base = self.set_of(line) * self.ways;
        let set = &self.slots[base..base + self.ways];
        crate::prefetch::host_prefetch(&set[0]);
        // A set of more than 8 ways spans a second host line.
        crate::prefetch::host_prefetch(&set[self.ways - 1]);
    }

    /// The dirty line a fill into `line`'s set would evict under LRU, if any: a hint for
    /// prefetching where its write-back will go (no simulated effect).
    #[inline(always)]
    pub fn dirty_victim(&self, line: u64) -> Option<u64> {
        if self.mode != Mode::LruWord {
            return None;
        }
        let s = self.set_of(line);
        let old = self.slots[s * self.ways + self.order[s].lru(self.ways)];
        (old & DIRTY != 0 && old & TAG_MASK != 0).then(|| (old & TAG_MASK) - 1)
    }

    /// Whether `line` is present (no side effects).
    pub fn contains(&self, line: u64) -> bool {
        let base = self.set_of(line) * self.ways;
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

    proptest! {
        /// Under every replacement representation (LRU word / ordered, SRRIP packed / slots):
        /// an invalidated line misses, reports whether it was dirty, leaves the other lines of
        /// its set alone, and its way is the next one filled (no valid line is evicted for it).
        #[test]
        fn an_invalidated_line_misses_and_its_way_is_refilled_first(
            ways in prop::sample::select(vec![4u32, 8, 12, 48]),
            srrip in any::<bool>(),
            victim in 0u64..48,
            touches in prop::collection::vec(0u64..48, 0..40),
        ) {
            let policy = if srrip { ReplacementPolicy::Srrip } else { ReplacementPolicy::Lru };
            let mut c = cache(1, ways, policy);
            let n = ways as u64;
            for l in 0..n {
                c.fill(l, if l.is_multiple_of(2) { DATA } else { PT }, l.is_multiple_of(3));
            }
            for t in touches {
                c.lookup(t % n, DATA, false);
            }
            let victim = victim % n;
            let pt_before = c.pt_lines;
            prop_assert_eq!(c.invalidate(victim), Some(victim.is_multiple_of(3)));
            prop_assert_eq!(c.invalidate(victim), None);
            prop_assert_eq!(c.pt_lines, pt_before - (victim % 2 == 1) as u64);
            prop_assert!(!c.contains(victim));
            for l in (0..n).filter(|l| *l != victim) {
                prop_assert!(c.contains(l), "line {} lost", l);
            }
            prop_assert!(c.fill(1000, DATA, false).is_none(), "the free way is filled first");
            for l in (0..n).filter(|l| *l != victim) {
                prop_assert!(c.contains(l));
            }
        }
    }

    proptest! {
        /// A run invalidated at once leaves the cache as the same lines invalidated one by one
        /// in order (same lines present, same counters, same victims afterwards), and its mask
        /// names exactly the lines that were dirty.
        #[test]
        fn invalidating_a_run_equals_invalidating_its_lines_one_by_one(
            sets in prop::sample::select(vec![1u64, 3, 16, 64]),
            ways in prop::sample::select(vec![2u32, 8, 16, 48]),
            srrip in any::<bool>(),
            fills in prop::collection::vec((0u64..256, any::<bool>()), 0..300),
            first in 0u64..200,
            count in 0u32..=64,
        ) {
            let policy = if srrip { ReplacementPolicy::Srrip } else { ReplacementPolicy::Lru };
            let mut a = cache(sets, ways, policy);
            for (l, dirty) in fills {
                if !a.lookup(l, DATA, dirty) {
                    a.fill(l, if l % 3 == 0 { PT } else { DATA }, dirty);
                }
            }
            let mut b = a.clone();
            let mask = a.invalidate_run(first, count);
            let mut expected = 0u64;
            for i in 0..count {
                if b.invalidate(first + i as u64) == Some(true) {
                    expected |= 1 << i;
                }
            }
            prop_assert_eq!(mask, expected);
            prop_assert_eq!(a.pt_lines, b.pt_lines);
            prop_assert_eq!(a.c.invalidations, b.c.invalidations);
            for l in 0..400u64 {
                prop_assert_eq!(a.contains(l), b.contains(l), "line {}", l);
            }
            for l in 300..300 + sets * ways as u64 {
                prop_assert_eq!(a.fill(l, DATA, false), b.fill(l, DATA, false));
            }
        }
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
        /// Against the textbook SRRIP (insert at RRPV 2, hit to 0, evict the first way at 3
        /// after aging everyone until one is), an SRRIP cache hits and evicts exactly alike,
        /// in both representations.
        #[test]
        fn an_srrip_cache_matches_a_reference_model(
            lines in prop::collection::vec(0u64..400, 1..600),
            // 5 ways: RRPVs packed in a word per set; 40: kept in each slot.
            ways in prop::sample::select(vec![5usize, 40]),
        ) {
            let sets = 2u64;
            let mut c = cache(sets, ways as u32, ReplacementPolicy::Srrip);
            // Per set: (line, rrpv) by way; `None` = invalid.
            let mut model: Vec<Vec<Option<(u64, u64)>>> = vec![vec![None; ways]; sets as usize];
            for l in lines {
                let set = &mut model[(l % sets) as usize];
                let hit_way = set.iter().position(|e| matches!(e, Some((x, _)) if *x == l));
                let got = c.lookup(l, DATA, false);
                prop_assert_eq!(got, hit_way.is_some());
                match hit_way {
                    Some(w) => set[w].as_mut().unwrap().1 = 0,
                    None => {
                        let v = match set.iter().position(|e| e.is_none()) {
                            Some(v) => v,
                            None => loop {
                                if let Some(v) = set.iter().position(|e| e.unwrap().1 == 3) {
                                    break v;
                                }
                                for e in set.iter_mut() {
                                    e.as_mut().unwrap().1 += 1;
                                }
                            },
                        };
                        let want = set[v].map(|(x, _)| x);
                        set[v] = Some((l, 2));
                        let ev = c.fill(l, DATA, false).map(|e| e.line);
                        prop_assert_eq!(ev, want);
                    }
                }
            }
        }

        /// Against a reference model (a recency list per set), an LRU cache hits exactly when
        /// the reference does, and counters add up.
        #[test]
        fn an_lru_cache_matches_a_reference_model(
            lines in prop::collection::vec(0u64..160, 1..500),
            // 3 ways: the bit-matrix word; 12: the nibble word; 20: sets kept in recency order.
            ways in prop::sample::select(vec![3usize, 12, 20]),
        ) {
            let sets = 4u64;
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
                    let n = (0..160).filter(|x| x % sets == s && c.contains(*x)).count();
                    prop_assert!(n <= ways);
                }
            }
            prop_assert!(c.c.misses[0] <= c.c.accesses[0]);
        }
    }
}
