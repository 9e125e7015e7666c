//! LRU recency of one set, shared by the data caches and the TLB-like MMU caches.
//!
//! Two representations, both exact LRU (the victim is always the least recently used slot):
//! - [`NibbleOrder`], for sets of at most [`NIBBLE_MAX_WAYS`] ways: the whole recency order of a
//!   set in one u64, a 4-bit slot number per position (position 0 = most recent). A use and a
//!   victim choice are a few register operations, and entries never move, so a set costs 8
//!   bytes of recency state however often it is used. This is what keeps the simulator's own
//!   memory traffic low on TLB- and cache-missing workloads.
//! - [`move_to_front`] for the rare larger sets, kept in recency order (slot 0 most recent).

/// Largest associativity [`NibbleOrder`] handles (16 four-bit slot numbers fill a u64).
pub const NIBBLE_MAX_WAYS: usize = 16;

const NIBBLE_LO: u64 = 0x1111_1111_1111_1111;
const NIBBLE_HI: u64 = 0x8888_8888_8888_8888;

/// The recency order of one set of `ways <= 16` slots: nibble `p` is the slot used `p`-th most
/// recently. Positions `ways..16` hold 0xF (never a slot number when `ways < 16`).
///
/// Invariant: nibbles `0..ways` are a permutation of `0..ways`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NibbleOrder(u64);

impl NibbleOrder {
    /// Slots `0..ways` in order (slot 0 most recent); `1 <= ways <= 16`.
    pub fn new(ways: usize) -> NibbleOrder {
        debug_assert!((1..=NIBBLE_MAX_WAYS).contains(&ways));
        let mut o = u64::MAX;
        for p in 0..ways {
            o &= !(0xF << (4 * p));
            o |= (p as u64) << (4 * p);
        }
        NibbleOrder(o)
    }

    /// Recency position of `slot` (0 = most recent).
    #[inline(always)]
    pub fn position(self, slot: usize) -> usize {
        // Zero nibbles of `x` are where `slot` sits; the lowest flag of the classic
        // "has zero" expression is exact (borrows only create flags above it), and the
        // permutation invariant guarantees there is one.
        let x = self.0 ^ (slot as u64 * NIBBLE_LO);
        let zeros = x.wrapping_sub(NIBBLE_LO) & !x & NIBBLE_HI;
        zeros.trailing_zeros() as usize / 4
    }

    /// Make `slot` the most recent.
    #[inline(always)]
    pub fn touch(&mut self, slot: usize) {
        if self.0 & 0xF == slot as u64 {
            // Already the most recent: the common case of a hot entry used again.
            return;
        }
        let p = self.position(slot);
        // Positions 0..p move back by one; positions above p stay; `slot` goes to position 0.
        let below = (1u64 << (4 * p)) - 1;
        let keep = !(below | (0xF << (4 * p)));
        self.0 = (self.0 & keep) | ((self.0 & below) << 4) | slot as u64;
    }

    /// The least recently used of `ways` slots.
    #[inline(always)]
    pub fn lru(self, ways: usize) -> usize {
        ((self.0 >> (4 * (ways - 1))) & 0xF) as usize
    }
}

/// Move `s[i]` to `s[0]`, shifting `s[0..i]` back by one slot (order otherwise kept).
///
/// An open-coded loop rather than `copy_within`: sets hold at most a few dozen entries and hits
/// are usually near the front, where a `memmove` call costs more than the moves.
#[inline(always)]
pub fn move_to_front(s: &mut [u64], i: usize) {
    let s = &mut s[..=i];
    let x = s[i];
    let mut j = i;
    while j > 0 {
        s[j] = s[j - 1];
        j -= 1;
    }
    s[0] = x;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn moving_an_entry_to_the_front_keeps_the_others_in_order() {
        let mut s = [10, 11, 12, 13, 14];
        move_to_front(&mut s, 3);
        assert_eq!(s, [13, 10, 11, 12, 14]);
        move_to_front(&mut s, 0);
        assert_eq!(s, [13, 10, 11, 12, 14]);
        move_to_front(&mut s, 4);
        assert_eq!(s, [14, 13, 10, 11, 12]);
    }

    #[test]
    fn a_fresh_order_evicts_the_last_slot_first() {
        for ways in 1..=16 {
            let o = NibbleOrder::new(ways);
            assert_eq!(o.lru(ways), ways - 1);
            for slot in 0..ways {
                assert_eq!(o.position(slot), slot);
            }
        }
    }

    proptest! {
        /// Against a recency list, every use and every victim agree, for every set size.
        #[test]
        fn a_nibble_order_is_an_lru_list(
            ways in 1usize..=16,
            uses in prop::collection::vec(0usize..16, 1..200)
        ) {
            let mut o = NibbleOrder::new(ways);
            let mut list: Vec<usize> = (0..ways).collect(); // most recent first
            for u in uses {
                let slot = u % ways;
                o.touch(slot);
                list.retain(|s| *s != slot);
                list.insert(0, slot);
                prop_assert_eq!(o.lru(ways), *list.last().unwrap());
                for (p, s) in list.iter().enumerate() {
                    prop_assert_eq!(o.position(*s), p);
                }
            }
        }
    }
}
