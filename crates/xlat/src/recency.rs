//! LRU recency of one set, shared by the data caches and the TLB-like MMU caches.
//!
//! Three representations, all exact LRU (the victim is always the least recently used slot):
//! - [`MatrixOrder`], for sets of at most [`MATRIX_MAX_WAYS`] ways: an 8 x 8 bit matrix in one
//!   u64 ("slot r was used after slot c"). A use is two register operations, so a loop that hits
//!   the same set on consecutive references (three arrays walked in step alias in one L1D set and
//!   one L1 TLB set) has a short dependency chain from one reference to the next.
//! - [`NibbleOrder`], for sets of at most [`NIBBLE_MAX_WAYS`] ways: the whole recency order of a
//!   set in one u64, a 4-bit slot number per position (position 0 = most recent). A use and a
//!   victim choice are a few register operations.
//! - [`move_to_front`] for the rare larger sets, kept in recency order (slot 0 most recent).
//!
//! [`LruWord`] picks the first or the second by the set's associativity. Either way a set costs
//! 8 bytes of recency state and entries never move, which keeps the simulator's own memory
//! traffic low on TLB- and cache-missing workloads.

/// Largest associativity [`MatrixOrder`] handles (an 8 x 8 bit matrix fills a u64).
pub const MATRIX_MAX_WAYS: usize = 8;

const BYTE_LO: u64 = 0x0101_0101_0101_0101;
const BYTE_HI: u64 = 0x8080_8080_8080_8080;

/// The recency of one set of `ways <= 8` slots as a bit matrix: for a real column `c < ways`,
/// bit `8 * r + c` is set when slot `r` was used after the last use of slot `c` (or `c` was
/// never used). Bits in columns `ways..8` are don't-care: a use sets its whole row, so the hot
/// operation needs no mask that depends on `ways`; [`MatrixOrder::lru`] masks them off.
///
/// Why the lowest all-zero row (over real columns) is the victim: a never-used slot's row is
/// all zero, and every used slot has the bit of each never-used column set, so while unused
/// slots remain they come first, lowest number first; once all are used, exactly the least
/// recently used slot has every real column clear (each other slot was used after it). Such a
/// row always exists among rows `0..ways`, so rows `ways..8` (which stand for no slot) never
/// come first whatever they hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixOrder(u64);

impl MatrixOrder {
    /// No slot used yet.
    pub fn new() -> MatrixOrder {
        MatrixOrder(0)
    }

    /// Make `slot` the most recent: its row becomes all ones, its column all zeros (which also
    /// clears the diagonal bit).
    #[inline(always)]
    pub fn touch(&mut self, slot: usize) {
        self.0 = (self.0 | (0xFF << (8 * slot))) & !(BYTE_LO << slot);
    }

    /// The least recently used of the set's `ways` slots (the lowest row that is zero over
    /// the real columns: the classic "has zero byte" expression is exact at its lowest flag).
    #[inline(always)]
    pub fn lru(self, ways: usize) -> usize {
        let m = self.0 & (BYTE_LO * (0xFF >> (8 - ways)));
        let zero_rows = m.wrapping_sub(BYTE_LO) & !m & BYTE_HI;
        zero_rows.trailing_zeros() as usize / 8
    }
}

impl Default for MatrixOrder {
    fn default() -> Self {
        MatrixOrder::new()
    }
}

/// Exact LRU recency of one set of at most [`NIBBLE_MAX_WAYS`] ways in one word: a
/// [`MatrixOrder`] for at most 8 ways, else a [`NibbleOrder`]. The representation depends only
/// on `ways`, which callers pass on every use (it is fixed per cache, so the choice is a
/// perfectly predicted branch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LruWord(u64);

impl LruWord {
    /// No slot used yet (`1 <= ways <= 16`).
    pub fn new(ways: usize) -> LruWord {
        if ways <= MATRIX_MAX_WAYS {
            LruWord(MatrixOrder::new().0)
        } else {
            LruWord(NibbleOrder::new(ways).0)
        }
    }

    /// Make `slot` the most recent.
    #[inline(always)]
    pub fn touch(&mut self, slot: usize, ways: usize) {
        if ways <= MATRIX_MAX_WAYS {
            let mut m = MatrixOrder(self.0);
            m.touch(slot);
            self.0 = m.0;
        } else {
            let mut n = NibbleOrder(self.0);
            n.touch(slot);
            self.0 = n.0;
        }
    }

    /// The least recently used slot.
    #[inline(always)]
    pub fn lru(self, ways: usize) -> usize {
        if ways <= MATRIX_MAX_WAYS {
            MatrixOrder(self.0).lru(ways)
        } else {
            NibbleOrder(self.0).lru(ways)
        }
    }
}

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

    #[test]
    fn a_fresh_matrix_order_hands_out_unused_slots_lowest_first() {
        for ways in 1..=MATRIX_MAX_WAYS {
            let mut o = MatrixOrder::new();
            for slot in 0..ways {
                assert_eq!(o.lru(ways), slot);
                o.touch(slot);
            }
            // All used once, in order: slot 0 is now the least recent.
            assert_eq!(o.lru(ways), 0);
        }
    }

    proptest! {
        /// Against a recency list (unused slots first, lowest first), every victim agrees.
        #[test]
        fn a_matrix_order_is_an_lru_list(
            ways in 1usize..=MATRIX_MAX_WAYS,
            uses in prop::collection::vec(0usize..8, 1..200)
        ) {
            let mut o = MatrixOrder::new();
            let mut unused: Vec<usize> = (0..ways).collect();
            let mut list: Vec<usize> = Vec::new(); // most recent first
            for u in uses {
                let slot = u % ways;
                o.touch(slot);
                unused.retain(|s| *s != slot);
                list.retain(|s| *s != slot);
                list.insert(0, slot);
                let want = unused.first().copied().unwrap_or(*list.last().unwrap());
                prop_assert_eq!(o.lru(ways), want);
            }
        }

        /// The word picks a representation by associativity; both behave as LRU.
        #[test]
        fn an_lru_word_is_an_lru_list_at_every_size(
            ways in 1usize..=NIBBLE_MAX_WAYS,
            uses in prop::collection::vec(0usize..16, 1..200)
        ) {
            let mut o = LruWord::new(ways);
            let mut list: Vec<usize> = Vec::new(); // most recent first
            for u in uses {
                let slot = u % ways;
                o.touch(slot, ways);
                list.retain(|s| *s != slot);
                list.insert(0, slot);
                if list.len() == ways {
                    prop_assert_eq!(o.lru(ways), *list.last().unwrap());
                }
            }
        }

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
