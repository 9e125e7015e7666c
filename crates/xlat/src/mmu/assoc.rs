//! A small set-associative cache of `u64` keys to `u64` values with LRU replacement: the building
//! block of TLBs and of design-owned MMU caches (page-walk caches, cuckoo walk caches, ...).
//!
//! Contract: `get(k)` returns the value of the last `insert(k, v)` unless `k` was removed or
//! evicted since; at most `ways` keys live in one set; eviction picks the least recently used key
//! of the set (`get` and `insert` both count as a use). Key `u64::MAX` is reserved.

/// Reserved key marking an empty slot.
pub const EMPTY: u64 = u64::MAX;

/// Set-associative LRU key/value store.
#[derive(Clone, Debug)]
pub struct AssocCache {
    sets: u64,
    ways: usize,
    set_mask: Option<u64>,
    keys: Vec<u64>,
    vals: Vec<u64>,
    stamps: Vec<u32>,
    clock: u32,
}

impl AssocCache {
    /// `entries` slots in sets of `ways` (`ways >= entries` is fully associative; 0 entries is a
    /// cache that never hits).
    pub fn new(entries: usize, ways: usize) -> AssocCache {
        let ways = ways.clamp(1, entries.max(1));
        let sets = (entries / ways).max(1) as u64;
        let entries = if entries == 0 {
            0
        } else {
            sets as usize * ways
        };
        AssocCache {
            sets,
            ways,
            set_mask: sets.is_power_of_two().then_some(sets - 1),
            keys: vec![EMPTY; entries],
            vals: vec![0; entries],
            stamps: vec![0; entries],
            clock: 0,
        }
    }

    /// Number of slots.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.keys.len()
    }

    #[inline]
    fn set_base(&self, k: u64) -> usize {
        // Fold high bits (ASID, size, level tags) into the index so tagged keys spread out.
        let h = k ^ (k >> 29) ^ (k >> 46);
        let set = match self.set_mask {
            Some(m) => h & m,
            None => h % self.sets,
        };
        set as usize * self.ways
    }

    #[inline]
    fn find(&self, k: u64) -> Option<usize> {
        if self.keys.is_empty() {
            return None;
        }
        let base = self.set_base(k);
        (base..base + self.ways).find(|&i| self.keys[i] == k)
    }

    /// The value stored for `k`, refreshing its recency.
    #[inline]
    pub fn get(&mut self, k: u64) -> Option<u64> {
        let i = self.find(k)?;
        self.clock = self.clock.wrapping_add(1);
        self.stamps[i] = self.clock;
        Some(self.vals[i])
    }

    /// Whether `k` is present, without touching recency.
    #[inline]
    pub fn contains(&self, k: u64) -> bool {
        self.find(k).is_some()
    }

    /// Store `v` for `k`; returns the evicted key, if a valid one was evicted.
    #[inline]
    pub fn insert(&mut self, k: u64, v: u64) -> Option<u64> {
        debug_assert_ne!(k, EMPTY);
        if self.keys.is_empty() {
            return None;
        }
        self.clock = self.clock.wrapping_add(1);
        let base = self.set_base(k);
        // One pass over the set: the key itself, else the first empty slot, else the LRU slot.
        let mut victim = base;
        let mut victim_age = 0u32;
        let mut found_empty = false;
        for i in base..base + self.ways {
            let key = self.keys[i];
            if key == k {
                self.vals[i] = v;
                self.stamps[i] = self.clock;
                return None;
            }
            if found_empty {
                continue;
            }
            if key == EMPTY {
                victim = i;
                found_empty = true;
                continue;
            }
            // Ages relative to the clock stay correct when the clock wraps.
            let age = self.clock.wrapping_sub(self.stamps[i]);
            if age > victim_age {
                victim = i;
                victim_age = age;
            }
        }
        let evicted = self.keys[victim];
        self.keys[victim] = k;
        self.vals[victim] = v;
        self.stamps[victim] = self.clock;
        (evicted != EMPTY).then_some(evicted)
    }

    /// Remove `k` if present.
    #[inline]
    pub fn remove(&mut self, k: u64) {
        if let Some(i) = self.find(k) {
            self.keys[i] = EMPTY;
        }
    }

    /// Remove every key for which `pred` holds.
    pub fn remove_if(&mut self, mut pred: impl FnMut(u64) -> bool) {
        for k in self.keys.iter_mut() {
            if *k != EMPTY && pred(*k) {
                *k = EMPTY;
            }
        }
    }

    /// Number of keys present.
    pub fn len(&self) -> usize {
        self.keys.iter().filter(|k| **k != EMPTY).count()
    }

    /// Whether no key is present.
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
            ops in prop::collection::vec((0u64..12, any::<bool>()), 1..300)
        ) {
            let mut c = AssocCache::new(4, 4);
            let mut lru: Vec<u64> = Vec::new(); // most recent last
            let mut vals: HashMap<u64, u64> = HashMap::new();
            for (step, (k, write)) in ops.into_iter().enumerate() {
                if write {
                    c.insert(k, step as u64);
                    lru.retain(|x| *x != k);
                    lru.push(k);
                    if lru.len() > 4 { let gone = lru.remove(0); vals.remove(&gone); }
                    vals.insert(k, step as u64);
                } else {
                    let got = c.get(k);
                    prop_assert_eq!(got, vals.get(&k).copied());
                    if got.is_some() { lru.retain(|x| *x != k); lru.push(k); }
                }
                prop_assert!(c.len() <= 4);
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
