//! Buddy allocator over physical memory: orders 0..=18 (4 KiB .. 1 GiB), naturally aligned
//! blocks, splitting on allocation and coalescing on free.
//!
//! Contract: a block handed out by `alloc(order)` is `2^order` frames, aligned to `2^order`,
//! and overlaps no other live block; `free` accepts any aligned sub-block of allocated memory
//! (so a 2 MiB page split into 4 KiB pages can be returned piece by piece) and coalesces it with
//! free buddies; `free_pages() + used_pages() == total_pages()` at all times. Allocation is
//! deterministic: per-order LIFO free lists, initially ordered so the lowest address comes first.
//!
//! Representation: one byte per frame (`head[pfn]` = order of the free block starting there, or
//! `NOT_FREE`) plus per-order stacks of candidate block starts with lazy deletion (an entry is
//! valid only while `head` still says the block is free at that order). That is 1 byte of
//! metadata per 4 KiB frame (16 MiB for 64 GiB) and O(1) amortized operations.

use std::collections::VecDeque;

/// Highest order (2^18 frames = 1 GiB).
pub const MAX_ORDER: u8 = 18;
/// Number of orders.
pub const ORDERS: usize = MAX_ORDER as usize + 1;
const NOT_FREE: u8 = u8::MAX;

/// The allocator.
#[derive(Clone, Debug)]
pub struct Buddy {
    head: Vec<u8>,
    /// Per-order candidate block starts: `alloc` pops the back (the head of Linux's free
    /// lists); [`Buddy::alloc_soft`] puts the rest of its block at the front (the tail).
    stacks: Vec<VecDeque<u32>>,
    free_blocks: [u64; ORDERS],
    free_pages: u64,
    total_pages: u64,
}

impl Buddy {
    /// All of `total_pages` frames free (the tail that is not a whole max-order block is split
    /// into the largest aligned blocks that fit).
    pub fn new(total_pages: u64) -> Buddy {
        assert!(
            total_pages < u32::MAX as u64,
            "physical memory above 16 TiB is not supported"
        );
        let mut b = Buddy {
            head: vec![NOT_FREE; total_pages as usize],
            stacks: vec![VecDeque::new(); ORDERS],
            free_blocks: [0; ORDERS],
            free_pages: 0,
            total_pages,
        };
        // Push from the top so that the lowest address is popped first.
        let mut blocks = Vec::new();
        let mut pfn = 0;
        while pfn < total_pages {
            let mut order = MAX_ORDER;
            while pfn % (1 << order) != 0 || pfn + (1 << order) > total_pages {
                order -= 1;
            }
            blocks.push((pfn, order));
            pfn += 1 << order;
        }
        for (pfn, order) in blocks.into_iter().rev() {
            b.insert(pfn, order);
        }
        b
    }

    /// All of `total_pages` frames allocated (a starting point for fillers that then free
    /// chosen blocks; `free` coalesces them as usual).
    pub fn new_full(total_pages: u64) -> Buddy {
        assert!(
            total_pages < u32::MAX as u64,
            "physical memory above 16 TiB is not supported"
        );
        Buddy {
            head: vec![NOT_FREE; total_pages as usize],
            stacks: vec![VecDeque::new(); ORDERS],
            free_blocks: [0; ORDERS],
            free_pages: 0,
            total_pages,
        }
    }

    /// Take the free block of `order` that starts at `pfn` off the free lists (it becomes
    /// allocated). Returns false if no such free block exists.
    pub fn take_free_block(&mut self, pfn: u64, order: u8) -> bool {
        if pfn >= self.total_pages || self.head[pfn as usize] != order {
            return false;
        }
        self.remove(pfn, order);
        true
    }

    /// Frames managed.
    pub fn total_pages(&self) -> u64 {
        self.total_pages
    }

    /// Free frames.
    pub fn free_pages(&self) -> u64 {
        self.free_pages
    }

    /// Allocated frames.
    pub fn used_pages(&self) -> u64 {
        self.total_pages - self.free_pages
    }

    /// Free blocks per order.
    pub fn free_blocks(&self) -> [u64; ORDERS] {
        self.free_blocks
    }

    /// Whether a block of `order` could be allocated now.
    pub fn can_alloc(&self, order: u8) -> bool {
        self.free_blocks[order as usize..].iter().any(|n| *n > 0)
    }

    #[inline]
    fn insert(&mut self, pfn: u64, order: u8) {
        self.head[pfn as usize] = order;
        self.stacks[order as usize].push_back(pfn as u32);
        self.free_blocks[order as usize] += 1;
        self.free_pages += 1 << order;
    }

    /// Like `insert`, but at the tail of the order's free list: taken after every other block
    /// of that order.
    fn insert_tail(&mut self, pfn: u64, order: u8) {
        self.head[pfn as usize] = order;
        self.stacks[order as usize].push_front(pfn as u32);
        self.free_blocks[order as usize] += 1;
        self.free_pages += 1 << order;
    }

    /// Allocate a block of `2^group_order` frames (the smallest free block of at least that
    /// order, split as `alloc` splits), keep only the aligned `2^order` frames at `offset` in
    /// it, and return the rest of the group block to the **tail** of the free lists, where
    /// later allocations take it last (a soft reservation: Elastic Translations' CoalaPaging).
    /// Returns the kept block's first frame, or `None` (nothing changed) when no block of
    /// `group_order` or more is free.
    pub fn alloc_soft(&mut self, group_order: u8, offset: u64, order: u8) -> Option<u64> {
        debug_assert!(order <= group_order && offset.is_multiple_of(1 << order));
        debug_assert!(offset < 1 << group_order);
        let block = self.alloc(group_order)?;
        let target = block + offset;
        let mut at = block;
        for k in (order..group_order).rev() {
            // Keep the half with the target, give the other back at the tail; its buddy (the
            // kept half) is allocated, so it does not coalesce.
            let upper = at + (1 << k);
            if target >= upper {
                self.insert_tail(at, k);
                at = upper;
            } else {
                self.insert_tail(upper, k);
            }
        }
        debug_assert_eq!(at, target);
        Some(target)
    }

    /// Remove a free block that `head` says is free at `order` (its stack entry goes stale).
    #[inline]
    fn remove(&mut self, pfn: u64, order: u8) {
        debug_assert_eq!(self.head[pfn as usize], order);
        self.head[pfn as usize] = NOT_FREE;
        self.free_blocks[order as usize] -= 1;
        self.free_pages -= 1 << order;
    }

    fn pop(&mut self, order: u8) -> Option<u64> {
        while let Some(pfn) = self.stacks[order as usize].pop_back() {
            if self.head[pfn as usize] == order {
                self.remove(pfn as u64, order);
                return Some(pfn as u64);
            }
        }
        None
    }

    /// Allocate a block of `2^order` frames; `None` when no block that large is free.
    pub fn alloc(&mut self, order: u8) -> Option<u64> {
        let from = (order..=MAX_ORDER).find(|k| self.free_blocks[*k as usize] > 0)?;
        let pfn = self.pop(from)?;
        // Split down, returning the upper halves.
        for k in (order..from).rev() {
            self.insert(pfn + (1 << k), k);
        }
        Some(pfn)
    }

    /// Return a block (any aligned sub-block of allocated memory), coalescing with free buddies.
    pub fn free(&mut self, pfn: u64, order: u8) {
        debug_assert_eq!(pfn % (1 << order), 0, "misaligned free");
        let (mut pfn, mut order) = (pfn, order);
        while order < MAX_ORDER {
            let buddy = pfn ^ (1 << order);
            if buddy + (1 << order) > self.total_pages || self.head[buddy as usize] != order {
                break;
            }
            self.remove(buddy, order);
            pfn = pfn.min(buddy);
            order += 1;
        }
        self.insert(pfn, order);
    }

    /// The order of the free block containing `pfn`, and its start, if `pfn` is free.
    pub fn free_block_containing(&self, pfn: u64) -> Option<(u64, u8)> {
        (0..=MAX_ORDER).find_map(|k| {
            let start = pfn & !((1u64 << k) - 1);
            (start + (1 << k) <= self.total_pages && self.head[start as usize] == k)
                .then_some((start, k))
        })
    }

    /// Allocate exactly frame `pfn` (which must be free), splitting its free block around it.
    /// Returns false if the frame is not free.
    pub fn alloc_frame(&mut self, pfn: u64) -> bool {
        self.alloc_at(pfn, 0)
    }

    /// Allocate exactly the naturally aligned block of `2^order` frames at `pfn` if every frame
    /// of it is free (it lies inside one free block), splitting that block around it. Returns
    /// false, changing nothing, otherwise.
    pub fn alloc_at(&mut self, pfn: u64, order: u8) -> bool {
        debug_assert_eq!(pfn % (1 << order), 0, "misaligned block");
        let Some((start, free_order)) = self.free_block_containing(pfn) else {
            return false;
        };
        if free_order < order {
            return false;
        }
        self.remove(start, free_order);
        let mut block = start;
        for k in (order..free_order).rev() {
            // Keep the half with `pfn`, free the other.
            let upper = block + (1 << k);
            if pfn >= upper {
                self.insert(block, k);
                block = upper;
            } else {
                self.insert(upper, k);
            }
        }
        debug_assert_eq!(block, pfn);
        true
    }

    /// Free memory fragmentation index at `order`: the share of free memory that sits in blocks
    /// smaller than `2^order` frames (0 = all free memory usable for such blocks, 1 = none).
    pub fn fmfi(&self, order: u8) -> f64 {
        if self.free_pages == 0 {
            return 0.0;
        }
        let usable: u64 = (order as usize..ORDERS)
            .map(|k| self.free_blocks[k] << k)
            .sum();
        1.0 - usable as f64 / self.free_pages as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_fresh_allocator_is_all_max_order_blocks_plus_the_tail() {
        let b = Buddy::new((1 << 18) * 2 + 3);
        assert_eq!(b.free_blocks()[18], 2);
        assert_eq!(b.free_blocks()[1], 1);
        assert_eq!(b.free_blocks()[0], 1);
        assert_eq!(b.free_pages(), (1 << 19) + 3);
    }

    #[test]
    fn fmfi_is_zero_with_only_large_blocks_and_one_with_only_single_frames() {
        let mut b = Buddy::new(1 << 12);
        assert_eq!(b.fmfi(9), 0.0);
        // Allocate everything, then free every other frame: all free memory is order 0.
        let frames: Vec<u64> = (0..1 << 12).map(|_| b.alloc(0).unwrap()).collect();
        for f in frames.iter().filter(|f| *f % 2 == 0) {
            b.free(*f, 0);
        }
        assert_eq!(b.fmfi(9), 1.0);
        assert_eq!(b.fmfi(0), 0.0);
        // Half of the free memory in an order-9 block: FMFI(9) = 1 - 512 / (512 + 2048).
        let mut c = Buddy::new(1 << 13);
        let all: Vec<u64> = (0..1 << 13).map(|_| c.alloc(0).unwrap()).collect();
        for f in &all[..512] {
            c.free(*f, 0);
        }
        for f in all[512..].iter().filter(|f| *f % 2 == 0).take(2048) {
            c.free(*f, 0);
        }
        assert!(
            (c.fmfi(9) - (1.0 - 512.0 / 2560.0)).abs() < 1e-12,
            "{}",
            c.fmfi(9)
        );
    }

    #[test]
    fn allocating_a_specific_frame_splits_its_block_around_it() {
        let mut b = Buddy::new(1 << 10);
        assert!(b.alloc_frame(5));
        assert!(!b.alloc_frame(5), "already allocated");
        assert_eq!(b.free_pages(), (1 << 10) - 1);
        // Every other frame can still be allocated exactly once.
        let mut got: Vec<u64> = (0..(1 << 10) - 1).map(|_| b.alloc(0).unwrap()).collect();
        got.sort();
        assert!(!got.contains(&5));
        assert_eq!(b.alloc(0), None);
    }

    #[test]
    fn a_block_is_allocated_at_a_chosen_place_only_when_all_of_it_is_free() {
        let mut b = Buddy::new(1 << 10);
        assert!(b.alloc_at(64, 4));
        assert!(!b.alloc_at(64, 0), "inside an allocated block");
        assert!(b.alloc_frame(130));
        assert!(!b.alloc_at(128, 4), "one frame of it is taken");
        assert!(b.alloc_at(144, 4));
        assert_eq!(b.free_pages(), (1 << 10) - 33);
        b.free(64, 4);
        b.free(144, 4);
        b.free(130, 0);
        assert_eq!(b.free_blocks()[10], 1, "everything coalesces back");
    }

    #[test]
    fn a_soft_allocation_keeps_one_frame_and_leaves_the_rest_of_its_block_for_last() {
        let mut b = Buddy::new(1 << 10);
        // Order-0 free blocks elsewhere: every other frame of the upper half, and one free
        // order-4 block at 0..16.
        let all: Vec<u64> = (0..1 << 10).map(|_| b.alloc(0).unwrap()).collect();
        for f in all.iter().filter(|f| **f >= 512 && *f % 2 == 0) {
            b.free(*f, 0);
        }
        // Freed as one block: frame-by-frame frees would leave lazily deleted order-0 entries
        // that come back to life when a piece of the group is freed at order 0 again, and are
        // popped before the tail (a known approximation: the tail is usually, not always, last).
        b.free(0, 4);
        let kept = b.alloc_soft(4, 5, 0).unwrap();
        assert_eq!(kept, 5, "block 0..16, offset 5");
        assert_eq!(b.free_pages(), 256 + 15);
        // The group's other 15 frames are taken after every other block of their order.
        for _ in 0..256 {
            let f = b.alloc(0).unwrap();
            assert!(f >= 512, "soft-reserved frame {f} taken before the others");
        }
        assert_eq!(b.alloc(0), Some(4), "then the group's order-0 piece");
        // Nothing free of the group order: nothing changes.
        let mut c = Buddy::new(8);
        assert_eq!(c.alloc_soft(4, 0, 0), None);
        assert_eq!(c.free_pages(), 8);
    }

    #[test]
    fn out_of_memory_returns_none() {
        let mut b = Buddy::new(512);
        assert_eq!(b.alloc(9), Some(0));
        assert_eq!(b.alloc(0), None);
    }

    proptest! {
        /// Random mixes of allocations and frees: blocks are aligned and disjoint, the page
        /// counts add up, and freeing everything coalesces back to the initial blocks.
        #[test]
        fn blocks_never_overlap_and_everything_coalesces_back(
            ops in prop::collection::vec((0u8..6, any::<bool>(), any::<usize>()), 1..400)
        ) {
            let total = 1u64 << 12;
            let mut b = Buddy::new(total);
            let mut live: Vec<(u64, u8)> = Vec::new();
            let mut owner = vec![false; total as usize];
            for (order, free, pick) in ops {
                if free && !live.is_empty() {
                    let (pfn, order) = live.swap_remove(pick % live.len());
                    // Free as two halves half of the time (sub-block frees must work).
                    if order > 0 && pick % 2 == 0 {
                        b.free(pfn, order - 1);
                        b.free(pfn + (1 << (order - 1)), order - 1);
                    } else {
                        b.free(pfn, order);
                    }
                    for f in pfn..pfn + (1 << order) { owner[f as usize] = false; }
                } else if let Some(pfn) = b.alloc(order) {
                    prop_assert_eq!(pfn % (1 << order), 0);
                    for f in pfn..pfn + (1 << order) {
                        prop_assert!(!owner[f as usize], "frame {} handed out twice", f);
                        owner[f as usize] = true;
                    }
                    live.push((pfn, order));
                }
                let used: u64 = live.iter().map(|(_, o)| 1u64 << o).sum();
                prop_assert_eq!(b.used_pages(), used);
                prop_assert_eq!(b.free_pages() + b.used_pages(), total);
            }
            for (pfn, order) in live.drain(..) { b.free(pfn, order); }
            let mut expect = [0u64; ORDERS];
            expect[12] = 1;
            prop_assert_eq!(b.free_blocks(), expect);
        }
    }
}
