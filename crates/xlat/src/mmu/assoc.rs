//! A small set-associative cache of `u64` keys to `u64` values with LRU replacement: the building
//! block of TLBs and of design-owned MMU caches (page-walk caches, cuckoo walk caches, ...).
//!
//! Contract: `get(k)` returns the value of the last `insert(k, v)` unless `k` was removed or
//! evicted since; at most `ways` keys live in one set; eviction picks the least recently used key
//! of the set (`get` and `insert` both count as a use). Key `u64::MAX` is reserved.

use crate::aligned::{LineAligned, SetIndex};
use crate::recency::{move_to_front, LruWord, NIBBLE_MAX_WAYS};

/// Reserved key marking an empty slot.
pub const EMPTY: u64 = u64::MAX;

/// Set-associative LRU key/value store.
///
/// Sets of up to 16 ways keep their recency in one [`LruWord`] and never move
/// entries (moving keys and values on every insertion was a quarter of a GUPS run's
/// instructions); larger sets are kept in recency order (slot 0 most recent). Either way an
/// insertion takes the set's first empty slot if it has one, else its least recently used.
#[derive(Clone, Debug)]
pub struct AssocCache {
    sets: u64,
    ways: usize,
    /// Slots per set in `keys`/`vals`: `ways` rounded up to a multiple of 8 (up to 64 ways),
    /// so that a set is whole groups for the vector compare; padding slots hold [`EMPTY`] and
    /// are never filled.
    stride: usize,
    set_index: SetIndex,
    /// Whether [`AssocCache::get`] may take its inlined path (8-slot sets with an [`LruWord`]).
    fast8: bool,
    keys: LineAligned,
    vals: Vec<u64>,
    /// Recency of each set when `ways <= 16` (empty otherwise, and for a zero-entry cache);
    /// without it, sets are kept in recency order.
    order: Vec<LruWord>,
}

impl AssocCache {
    /// A cache of `entries` keys in sets of `ways` (fully associative when `ways >= entries`;
    /// `entries == 0` gives a cache that never hits).
    pub fn new(entries: usize, ways: usize) -> AssocCache {
        let ways = ways.clamp(1, entries.max(1));
        let sets = (entries / ways).max(1) as u64;
        let stride = if ways <= 64 {
            ways.div_ceil(8) * 8
        } else {
            ways
        };
        let slots = if entries == 0 {
            0
        } else {
            sets as usize * stride
        };
        AssocCache {
            sets,
            ways,
            stride,
            set_index: SetIndex::new(sets),
            fast8: stride == 8 && ways <= NIBBLE_MAX_WAYS && slots > 0,
            keys: LineAligned::new(slots, EMPTY),
            vals: vec![0; slots],
            order: if ways <= NIBBLE_MAX_WAYS && slots > 0 {
                vec![LruWord::new(ways); sets as usize]
            } else {
                Vec::new()
            },
        }
    }

    /// Number of slots.
    #[inline]
    pub fn capacity(&self) -> usize {
        if self.keys.is_empty() {
            0
        } else {
            self.sets as usize * self.ways
        }
    }

    #[inline]
    fn set_base(&self, k: u64) -> usize {
        self.set_of(k) * self.stride
    }

    #[inline]
    fn set_of(&self, k: u64) -> usize {
        // Mix high bits in so that keys carrying an ASID or a page size above the VPN spread.
        let h = k ^ (k >> 29) ^ (k >> 46);
        self.set_index.of(h)
    }

    /// Slot of `k` within its set.
    #[inline]
    fn position(set: &[u64], ways: usize, k: u64) -> Option<usize> {
        Self::positions(set, ways, k, k).0
    }

    /// Slots of `a` and of `b` within a set (its `stride` slots; only the first `ways` can
    /// match [`EMPTY`]), found without data-dependent branches: where a key sits is
    /// unpredictable, and an early-exit search mispredicted about three times per TLB-missing
    /// reference.
    #[inline(always)]
    fn positions(set: &[u64], ways: usize, a: u64, b: u64) -> (Option<usize>, Option<usize>) {
        if set.len() > 64 {
            return (
                set[..ways].iter().position(|x| *x == a),
                set[..ways].iter().position(|x| *x == b),
            );
        }
        let real = u64::MAX >> (64 - ways);
        let ma = crate::simd::eq_mask(set, u64::MAX, a) & real;
        let mb = if b == a {
            ma
        } else {
            crate::simd::eq_mask(set, u64::MAX, b) & real
        };
        let first = |m: u64| (m != 0).then(|| m.trailing_zeros() as usize);
        (first(ma), first(mb))
    }

    /// Record a use of slot `i` of the set at `base`; returns where that entry now is.
    #[inline(always)]
    fn touch(&mut self, set: usize, i: usize) -> usize {
        let base = set * self.stride;
        if self.order.is_empty() {
            move_to_front(&mut self.keys[base..], i);
            move_to_front(&mut self.vals[base..], i);
            base
        } else {
            self.order[set].touch(i, self.ways);
            base + i
        }
    }

    /// Value of `k`, counting as a use.
    #[inline(always)]
    pub fn get(&mut self, k: u64) -> Option<u64> {
        // The common case — sets of at most 8 ways (the L1 TLBs, the PWCs) — is a handful of
        // instructions inlined into the caller: one fixed-size compare, no stride dispatch
        // (an out-of-line general version cost a call and six register saves per L1 TLB hit).
        // Everything else takes the out-of-line path.
        if !self.fast8 {
            return self.get_slow(k);
        }
        let set = self.set_of(k);
        debug_assert!(set < self.order.len() && (set + 1) * 8 <= self.keys.len());
        let base = set * 8;
        // SAFETY: `set_of` returns `set < sets`; with `stride == 8`, `keys` and `vals` hold
        // `sets * 8` slots and `order` one word per set. Unchecked because this is every L1
        // TLB and PWC probe.
        #[allow(unsafe_code)]
        let keys: &[u64; 8] = unsafe { &*self.keys.as_ptr().add(base).cast::<[u64; 8]>() };
        let m = crate::simd::eq_mask8(keys, u64::MAX, k);
        if m == 0 {
            return None;
        }
        let i = m.trailing_zeros() as usize;
        // SAFETY: as above (`i < 8`).
        #[allow(unsafe_code)]
        unsafe {
            self.order.get_unchecked_mut(set).touch(i, self.ways);
            Some(*self.vals.get_unchecked(base + i))
        }
    }

    #[cold]
    #[inline(never)]
    fn get_slow(&mut self, k: u64) -> Option<u64> {
        if self.keys.is_empty() {
            return None;
        }
        let set = self.set_of(k);
        let base = set * self.stride;
        let i = Self::position(&self.keys[base..base + self.stride], self.ways, k)?;
        let slot = self.touch(set, i);
        Some(self.vals[slot])
    }

    /// Whether the cache is one set (fully associative, or empty).
    #[inline]
    pub fn is_one_set(&self) -> bool {
        self.sets == 1
    }

    /// For a cache of one set: the value of the present key of least `rank` among those `rank`
    /// accepts, with that rank, counting as a use of that key (`None`, and no use, when `rank`
    /// accepts none). What [`AssocCache::get`] of every accepted key in increasing rank would
    /// return at its first hit, in one pass over the set; ranks must be distinct.
    pub fn get_least_ranked(&mut self, rank: impl Fn(u64) -> Option<u32>) -> Option<(u32, u64)> {
        debug_assert!(self.sets == 1, "one pass over one set");
        if self.keys.is_empty() {
            return None;
        }
        // Branch-free: the least (rank, way) packed in one word; `u64::MAX` for no match.
        let mut best = u64::MAX;
        for (i, &k) in self.keys[..self.ways].iter().enumerate() {
            let r = if k == EMPTY { None } else { rank(k) };
            let packed = r.map_or(u64::MAX, |r| (u64::from(r) << 32) | i as u64);
            best = best.min(packed);
        }
        if best == u64::MAX {
            return None;
        }
        let (r, i) = ((best >> 32) as u32, (best & 0xffff_ffff) as usize);
        let slot = self.touch(0, i);
        Some((r, self.vals[slot]))
    }

    /// Whether `k` is present (not a use).
    #[inline]
    pub fn contains(&self, k: u64) -> bool {
        if self.keys.is_empty() {
            return false;
        }
        let base = self.set_base(k);
        Self::position(&self.keys[base..base + self.stride], self.ways, k).is_some()
    }

    /// Insert or update `k` (a use); returns the key evicted to make room, if any.
    #[inline]
    pub fn insert(&mut self, k: u64, v: u64) -> Option<u64> {
        debug_assert_ne!(k, EMPTY);
        // Sets of 8 and 16 slots (up to 16 ways) get fixed-size compares; the general compare
        // of a runtime-length set made every insertion a large function with register saves.
        match (self.stride, self.order.is_empty()) {
            (8, false) => self.insert_fixed::<8>(k, v),
            (16, false) => self.insert_fixed::<16>(k, v),
            _ => self.insert_slow(k, v),
        }
    }

    /// [`AssocCache::insert`] for sets of `N` slots (8 or 16) with an [`LruWord`].
    #[inline(always)]
    fn insert_fixed<const N: usize>(&mut self, k: u64, v: u64) -> Option<u64> {
        let ways = self.ways;
        let set = self.set_of(k);
        let base = set * N;
        let keys: &[u64; N] = self.keys[base..base + N].try_into().expect("N slots");
        let (lo, hi) = keys.split_at(8);
        let lo: &[u64; 8] = lo.try_into().expect("8 slots");
        let mut present = crate::simd::eq_mask8(lo, u64::MAX, k);
        let mut empty = crate::simd::eq_mask8(lo, u64::MAX, EMPTY);
        if N == 16 {
            let hi: &[u64; 8] = hi.try_into().expect("8 slots");
            present |= crate::simd::eq_mask8(hi, u64::MAX, k) << 8;
            empty |= crate::simd::eq_mask8(hi, u64::MAX, EMPTY) << 8;
        }
        // Present: update in place. Absent: the first empty slot, else the least recently used.
        // (Padding slots beyond `ways` hold EMPTY too and must not be chosen.)
        empty &= u64::MAX >> (64 - ways);
        let i = if present != 0 {
            present.trailing_zeros() as usize
        } else if empty != 0 {
            empty.trailing_zeros() as usize
        } else {
            self.order[set].lru(ways)
        };
        self.order[set].touch(i, ways);
        let evicted = std::mem::replace(&mut self.keys[base + i], k);
        self.vals[base + i] = v;
        (evicted != EMPTY && evicted != k).then_some(evicted)
    }

    #[cold]
    #[inline(never)]
    fn insert_slow(&mut self, k: u64, v: u64) -> Option<u64> {
        if self.keys.is_empty() {
            return None;
        }
        let set = self.set_of(k);
        let base = set * self.stride;
        let keys = &self.keys[base..base + self.stride];
        let (present, empty) = Self::positions(keys, self.ways, k, EMPTY);
        let i = present.or(empty).unwrap_or(self.ways - 1);
        let evicted = self.keys[base + i];
        self.keys[base + i] = k;
        self.vals[base + i] = v;
        self.touch(set, i);
        (evicted != EMPTY && evicted != k).then_some(evicted)
    }

    /// Remove `k` if present.
    #[inline]
    pub fn remove(&mut self, k: u64) {
        if self.keys.is_empty() {
            return;
        }
        let base = self.set_base(k);
        if let Some(i) = Self::position(&self.keys[base..base + self.stride], self.ways, k) {
            self.keys[base + i] = EMPTY;
        }
    }

    /// Remove every key for which `pred` holds (used for ASID and range shootdowns).
    pub fn remove_if(&mut self, mut pred: impl FnMut(u64) -> bool) {
        for k in self.keys.iter_mut() {
            if *k != EMPTY && pred(*k) {
                *k = EMPTY;
            }
        }
    }

    /// Number of keys held.
    pub fn len(&self) -> usize {
        self.keys.iter().filter(|k| **k != EMPTY).count()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn a_zero_entry_cache_never_hits() {
        let mut c = AssocCache::new(0, 4);
        c.insert(1, 2);
        assert_eq!(c.get(1), None);
    }

    #[test]
    fn the_least_recently_used_key_of_a_full_set_is_evicted() {
        let mut c = AssocCache::new(3, 3);
        c.insert(1, 10);
        c.insert(2, 20);
        c.insert(3, 30);
        c.get(1);
        assert_eq!(c.insert(4, 40), Some(2));
        assert_eq!(c.get(2), None);
        assert_eq!(c.get(1), Some(10));
    }

    proptest! {
        /// Against a reference model: a fully associative LRU list.
        #[test]
        fn a_fully_associative_cache_behaves_as_an_lru_list(
            ops in prop::collection::vec((0u64..40, 0u8..5), 1..300),
            // 4 ways: a bit-matrix word in 8-slot sets; 12: a nibble word in 16-slot sets;
            // 24: sets kept in recency order.
            ways in prop::sample::select(vec![4usize, 12, 24]),
        ) {
            let mut c = AssocCache::new(ways, ways);
            let mut lru: Vec<u64> = Vec::new(); // most recent last
            let mut vals: HashMap<u64, u64> = HashMap::new();
            for (step, (k, op)) in ops.into_iter().enumerate() {
                if op == 0 {
                    c.remove(k);
                    lru.retain(|x| *x != k);
                    vals.remove(&k);
                } else if op <= 2 {
                    let evicted = c.insert(k, step as u64);
                    let want = (!lru.contains(&k) && lru.len() == ways).then(|| lru[0]);
                    prop_assert_eq!(evicted, want);
                    lru.retain(|x| *x != k);
                    lru.push(k);
                    if lru.len() > ways { let gone = lru.remove(0); vals.remove(&gone); }
                    vals.insert(k, step as u64);
                } else {
                    let got = c.get(k);
                    prop_assert_eq!(got, vals.get(&k).copied());
                    if got.is_some() { lru.retain(|x| *x != k); lru.push(k); }
                }
                prop_assert!(c.len() <= ways);
            }
        }

        /// In a set-associative cache a key is either absent or holds its last value.
        #[test]
        fn a_set_associative_cache_never_returns_a_stale_value(
            ops in prop::collection::vec((0u64..200, 0u64..1000), 1..500)
        ) {
            let mut c = AssocCache::new(32, 4);
            let mut last: HashMap<u64, u64> = HashMap::new();
            for (k, v) in ops {
                c.insert(k, v);
                last.insert(k, v);
                for probe in 0..200 {
                    if let Some(got) = c.get(probe) { prop_assert_eq!(Some(&got), last.get(&probe)); }
                }
            }
        }
    }
}
