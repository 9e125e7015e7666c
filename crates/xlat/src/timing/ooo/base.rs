//! What every part of the core model uses: the larger and smaller of two times (never NaN, so
//! without `f64::max`'s NaN handling) and [`Ring`], the fixed ring of the last values indexed by
//! a running counter.
//!
//! Contract: `Ring::get(i)` returns what `set(i, ..)` stored as long as fewer than the ring's
//! length of later indices were set since. It calls nothing.

/// The larger of two times. Times are never NaN, so this skips `f64::max`'s NaN handling
/// (three host instructions instead of one, on every reference).
#[inline(always)]
pub(super) fn fmax(a: f64, b: f64) -> f64 {
    if a > b {
        a
    } else {
        b
    }
}

/// The smaller of two times (never NaN; see [`fmax`]).
#[inline(always)]
pub(super) fn fmin(a: f64, b: f64) -> f64 {
    if a < b {
        a
    } else {
        b
    }
}

/// A fixed ring of the last `len` (a power of two) values, indexed by a running counter.
#[derive(Clone, Debug)]
pub(super) struct Ring<T> {
    v: Vec<T>,
    mask: u64,
}

impl<T: Copy + Default> Ring<T> {
    pub(super) fn new(at_least: usize) -> Self {
        let len = at_least.max(1).next_power_of_two();
        Ring {
            v: vec![T::default(); len],
            mask: len as u64 - 1,
        }
    }
    #[inline(always)]
    pub(super) fn get(&self, i: u64) -> T {
        self.v[(i & self.mask) as usize]
    }
    #[inline(always)]
    pub(super) fn set(&mut self, i: u64, x: T) {
        self.v[(i & self.mask) as usize] = x;
    }
    pub(super) fn len(&self) -> u64 {
        self.mask + 1
    }
}
