//! Arrays of `u64` that start on a host cache-line boundary.
//!
//! Cache and TLB sets are scanned with one vector load per 8 slots (see [`crate::simd`]). A
//! heap `Vec<u64>` is only 16-byte aligned (and large ones sit 16 bytes past a page boundary),
//! so most 64-byte groups straddle two host cache lines: every scan then pays a split load,
//! and a load that overlaps a recent store to the set cannot take the forwarded data.
//! Measured on STREAM: forcing the misaligned layout cost 13 %, aligning gained 4 % over the
//! allocator's accidental layout.

#![allow(unsafe_code)]

use std::ops::{Deref, DerefMut};

/// `u64`s per host cache line.
const LINE_WORDS: usize = 8;

/// A fixed-length `[u64]` whose element 0 is 64-byte aligned. Derefs to the slice.
///
/// Safe code only: the buffer is over-allocated by 7 words and the slice starts at the first
/// aligned word. The buffer never reallocates, so the offset stays valid; a clone computes its
/// own.
#[derive(Debug)]
pub struct LineAligned {
    buf: Vec<u64>,
    off: usize,
    len: usize,
}

impl LineAligned {
    /// `len` copies of `value`.
    pub fn new(len: usize, value: u64) -> LineAligned {
        let buf = vec![value; len + LINE_WORDS - 1];
        let misalign = buf.as_ptr() as usize % 64;
        // u64s are 8-aligned, so the distance to the next line is a whole number of words.
        let off = ((64 - misalign) % 64) / 8;
        LineAligned { buf, off, len }
    }
}

impl Clone for LineAligned {
    fn clone(&self) -> Self {
        let mut c = LineAligned::new(self.len, 0);
        c.copy_from_slice(self);
        c
    }
}

impl Deref for LineAligned {
    type Target = [u64];
    #[inline(always)]
    fn deref(&self) -> &[u64] {
        // SAFETY: `new` made `off + len <= buf.len()` and the buffer never changes length.
        // Unchecked because this slicing sits on every simulated cache and TLB access.
        unsafe { self.buf.get_unchecked(self.off..self.off + self.len) }
    }
}

impl DerefMut for LineAligned {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [u64] {
        // SAFETY: as in `deref`.
        unsafe { self.buf.get_unchecked_mut(self.off..self.off + self.len) }
    }
}

/// Which of `sets` sets a number (line or key hash) falls in: a mask when `sets` is a power of
/// two, else `%`. The mask is a plain word with a sentinel rather than an `Option` (one load
/// less on every simulated access).
#[derive(Clone, Copy, Debug)]
pub struct SetIndex {
    sets: u64,
    /// `sets - 1`, or [`SetIndex::NO_MASK`] when `sets` is not a power of two.
    mask: u64,
}

impl SetIndex {
    const NO_MASK: u64 = u64::MAX;

    /// Index into `sets >= 1` sets.
    pub fn new(sets: u64) -> SetIndex {
        debug_assert!(sets >= 1);
        SetIndex {
            sets,
            mask: if sets.is_power_of_two() {
                sets - 1
            } else {
                Self::NO_MASK
            },
        }
    }

    /// The set `x` falls in (below `sets`).
    #[inline(always)]
    pub fn of(self, x: u64) -> usize {
        (if self.mask != Self::NO_MASK {
            x & self.mask
        } else {
            x % self.sets
        }) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_index_is_the_remainder_for_every_number_of_sets() {
        for sets in [1u64, 2, 3, 12, 16, 1536, 1 << 20] {
            let ix = SetIndex::new(sets);
            for x in [0u64, 1, 5, 1535, 1536, 123_456_789, u64::MAX - 1] {
                assert_eq!(ix.of(x) as u64, x % sets, "{x} into {sets} sets");
            }
        }
    }

    #[test]
    fn the_slice_starts_on_a_cache_line_and_a_clone_does_too() {
        for len in [0, 1, 8, 100, 4096] {
            let mut a = LineAligned::new(len, 7);
            assert_eq!(a.len(), len);
            assert!(a.iter().all(|x| *x == 7));
            if len > 0 {
                assert_eq!(a.as_ptr() as usize % 64, 0);
                a[len - 1] = 9;
            }
            let b = a.clone();
            assert_eq!(&*a, &*b);
            if len > 0 {
                assert_eq!(b.as_ptr() as usize % 64, 0);
            }
        }
    }
}
