//! [`Window`]: a sorted log that drops entries at its front, held contiguously.
//!
//! The calendar and the queues of the queued DRAM model keep time-sorted logs that grow at or
//! near their back and shrink at their front, and search them by binary search many times per
//! request. A `VecDeque` would do, but its two-slice layout makes every search and index pay
//! for the wrap; this keeps one slice (it dereferences to `[T]`) and drops the front lazily.
//!
//! What must stay true: the live entries are `items[head..]`, in the order they were placed;
//! dropping the front costs amortized O(1) (the dead prefix is removed only once it is at least
//! as long as the live part and at least `COMPACT_MIN` entries).

use std::ops::{Deref, DerefMut};

/// Dead entries tolerated at the front before the storage is compacted.
const COMPACT_MIN: usize = 32;

/// A contiguous log whose front entries can be dropped (see the module doc).
#[derive(Clone, Debug)]
pub struct Window<T> {
    items: Vec<T>,
    head: usize,
}

impl<T> Default for Window<T> {
    fn default() -> Self {
        Window {
            items: Vec::new(),
            head: 0,
        }
    }
}

impl<T> Window<T> {
    /// An empty window.
    pub fn new() -> Self {
        Self::default()
    }

    /// Drop the first live entry (nothing if empty).
    #[inline]
    pub fn pop_front(&mut self) {
        if self.head < self.items.len() {
            self.head += 1;
            if self.head >= COMPACT_MIN && 2 * self.head >= self.items.len() {
                self.items.drain(..self.head);
                self.head = 0;
            }
        }
    }

    /// Drop the first live entries while `dead` holds for them.
    #[inline]
    pub fn drop_front_while(&mut self, mut dead: impl FnMut(&T) -> bool) {
        while self.first().is_some_and(&mut dead) {
            self.pop_front();
        }
    }

    /// Insert `x` before the live entry at index `i` (`i == len()`: at the back).
    #[inline]
    pub fn insert(&mut self, i: usize, x: T) {
        self.items.insert(self.head + i, x);
    }

    /// [`slice::partition_point`], searching from the back: O(log k) for a partition point
    /// k entries before the end. The logs are searched mostly for recent ticks, near their end.
    #[inline]
    pub fn partition_point_from_back(&self, pred: impl Fn(&T) -> bool) -> usize {
        let live: &[T] = self;
        let n = live.len();
        // Invariant: every entry at or after `hi` fails `pred`.
        let (mut hi, mut step) = (n, 1);
        while hi > 0 {
            let probe = hi.saturating_sub(step);
            if pred(&live[probe]) {
                // The partition point is in (probe, hi].
                return probe + 1 + live[probe + 1..hi].partition_point(&pred);
            }
            hi = probe;
            step *= 2;
        }
        0
    }
}

impl<T> Deref for Window<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        &self.items[self.head..]
    }
}

impl<T> DerefMut for Window<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.items[self.head..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_behaves_like_a_deque_under_front_drops_and_inserts() {
        let mut w = Window::new();
        let mut d = std::collections::VecDeque::new();
        let mut s = 7u64;
        for step in 0..10_000u64 {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = s >> 33;
            if r.is_multiple_of(3) && !d.is_empty() {
                d.pop_front();
                w.pop_front();
            } else {
                let i = (r as usize / 3) % (d.len() + 1);
                d.insert(i, step);
                w.insert(i, step);
            }
            assert_eq!(w.len(), d.len());
            assert!(w.iter().eq(d.iter()), "step {step}");
            if !step.is_multiple_of(16) {
                continue;
            }
            let k = r % (step + 2);
            let v: Vec<u64> = w.iter().copied().collect();
            let mut sorted = v.clone();
            sorted.sort_unstable();
            let mut sw = Window::new();
            for (i, x) in sorted.iter().enumerate() {
                sw.insert(i, *x);
            }
            assert_eq!(
                sw.partition_point_from_back(|&x| x < k),
                sorted.partition_point(|&x| x < k)
            );
        }
        // Compaction kept the storage bounded by the live entries.
        while !d.is_empty() {
            d.pop_front();
            w.pop_front();
        }
        assert!(w.is_empty());
        assert_eq!(w.partition_point_from_back(|&x| x < 5), 0);
        assert!(w.items.len() < COMPACT_MIN);
    }
}
