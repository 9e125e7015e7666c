//! The PTW-tracking counters of FlexSeg pages (Utopia §5.5: two small counters per PTE, in its
//! unused bits): (walks, DRAM accesses) by page key, in an open-addressing table whose slot for
//! a key can be prefetched into the host's caches ahead of the walk that updates it.
//!
//! Why not a `HashMap`: every FlexSeg walk updates one entry at a random place in a table of up
//! to every FlexSeg page; the host's cache miss on it was about 13 % of Utopia's time on gups
//! (perf, 2026-11-29), and a std map gives no way to start that miss early. A map and this
//! table hold the same contents after the same operations (nothing iterates over them), so the
//! simulated figures do not depend on the choice.
//!
//! What must stay true: linear probing without tombstones (removal shifts the entries after
//! the hole back), so a key is found by probing from its home slot up to the first empty slot;
//! at most half the slots are full.

/// Slots a new table starts with (a power of two).
const MIN_SLOTS: usize = 1024;

/// One slot: `tag` is the key plus one (0: empty), `counts` the key's counters.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    tag: u64,
    counts: (u8, u8),
}

/// (walks, DRAM accesses) per key (`Utopia::ptw_key`: keys below `u64::MAX`).
#[derive(Clone, Debug)]
pub struct PtwCounters {
    slots: Vec<Slot>,
    /// `64 - log2(slots.len())`: a key's home is the top bits of its multiplicative hash.
    shift: u32,
    len: usize,
}

impl Default for PtwCounters {
    fn default() -> Self {
        PtwCounters::with_slots(MIN_SLOTS)
    }
}

impl PtwCounters {
    fn with_slots(n: usize) -> PtwCounters {
        debug_assert!(n.is_power_of_two());
        PtwCounters {
            slots: vec![Slot::default(); n],
            shift: 64 - n.trailing_zeros(),
            len: 0,
        }
    }

    /// Keys held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn home(&self, tag: u64) -> usize {
        (tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// The slot holding `tag`, if any.
    #[inline]
    fn find(&self, tag: u64) -> Option<usize> {
        let mut i = self.home(tag);
        loop {
            match self.slots[i].tag {
                0 => return None,
                t if t == tag => return Some(i),
                _ => i = (i + 1) & self.mask(),
            }
        }
    }

    /// Hint the host to bring `key`'s home slot into its caches (no other effect).
    #[inline]
    pub fn prefetch(&self, key: u64) {
        crate::prefetch::host_prefetch(&self.slots[self.home(key + 1)]);
    }

    /// `key`'s counters, if it has any.
    #[cfg(test)]
    pub fn get(&self, key: u64) -> Option<(u8, u8)> {
        self.find(key + 1).map(|i| self.slots[i].counts)
    }

    /// `key`'s counters, inserted as (0, 0) when it has none.
    #[inline]
    pub fn get_or_insert(&mut self, key: u64) -> &mut (u8, u8) {
        let tag = key + 1;
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mut i = self.home(tag);
        loop {
            match self.slots[i].tag {
                0 => {
                    self.slots[i] = Slot {
                        tag,
                        counts: (0, 0),
                    };
                    self.len += 1;
                    break;
                }
                t if t == tag => break,
                _ => i = (i + 1) & self.mask(),
            }
        }
        &mut self.slots[i].counts
    }

    /// Drop `key` (its counters go back to zero).
    pub fn remove(&mut self, key: u64) {
        let Some(mut hole) = self.find(key + 1) else {
            return;
        };
        let mask = self.mask();
        let mut j = (hole + 1) & mask;
        while self.slots[j].tag != 0 {
            // The entry at `j` may fill the hole when the hole lies on its probe path, i.e.
            // between its home and `j` (cyclically).
            let h = self.home(self.slots[j].tag);
            if (hole.wrapping_sub(h) & mask) < (j.wrapping_sub(h) & mask) {
                self.slots[hole] = self.slots[j];
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.slots[hole] = Slot::default();
        self.len -= 1;
    }

    #[cold]
    fn grow(&mut self) {
        let old = std::mem::replace(self, PtwCounters::with_slots(self.slots.len() * 2));
        for s in old.slots.into_iter().filter(|s| s.tag != 0) {
            *self.get_or_insert(s.tag - 1) = s.counts;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn a_new_key_starts_at_zero_and_keeps_its_updates() {
        let mut t = PtwCounters::default();
        assert!(t.is_empty());
        t.get_or_insert(7).0 += 3;
        assert_eq!(t.get(7), Some((3, 0)));
        t.get_or_insert(0).1 = 2;
        assert_eq!(t.get(0), Some((0, 2)));
        assert_eq!(t.len(), 2);
        t.remove(7);
        assert_eq!(t.get(7), None);
        assert_eq!(t.get(0), Some((0, 2)));
        t.remove(7);
        assert_eq!(t.len(), 1);
    }

    proptest! {
        /// Any sequence of updates and removals leaves the table holding what a `HashMap`
        /// holds, across growth and the backward shifts of removal (keys drawn from a small
        /// range so that they collide and repeat).
        #[test]
        fn the_table_holds_what_a_hash_map_holds(
            ops in prop::collection::vec((0u64..3000, any::<bool>(), 0u8..4), 0..6000),
        ) {
            let mut t = PtwCounters::default();
            let mut m: HashMap<u64, (u8, u8)> = HashMap::new();
            for (key, insert, d) in ops {
                if insert {
                    let e = t.get_or_insert(key);
                    e.0 = e.0.wrapping_add(1);
                    e.1 = e.1.wrapping_add(d);
                    let f = m.entry(key).or_insert((0, 0));
                    f.0 = f.0.wrapping_add(1);
                    f.1 = f.1.wrapping_add(d);
                } else {
                    t.remove(key);
                    m.remove(&key);
                }
            }
            prop_assert_eq!(t.len(), m.len());
            for key in 0..3000 {
                prop_assert_eq!(t.get(key), m.get(&key).copied());
            }
        }
    }
}
