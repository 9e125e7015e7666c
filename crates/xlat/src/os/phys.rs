//! Physical memory: the buddy allocator every frame (data or page table) comes from, with
//! usage accounting, fragmentation and free-memory snapshots.
//!
//! Contract: every frame in use was handed out by [`PhysMem::alloc`] (or pinned by the
//! fragmenter / a snapshot) and is counted under exactly one [`FrameUse`]; `free` returns what
//! `alloc` handed out (or an aligned part of it).

use super::buddy::{Buddy, ORDERS};
use super::OsError;
use crate::addr::{format_bytes, Pfn, BASE_PAGE_BYTES};
use crate::rng::Rng;

/// What a physical frame is used for (memory accounting).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameUse {
    /// Program data.
    Data,
    /// Page-table structures of the simulated design.
    PageTable,
    /// Frames a placement policy holds for pages not mapped yet (reservations).
    Reserved = 3,
}

/// Physical memory: the buddy allocator all frames come from, with usage accounting.
pub struct PhysMem {
    buddy: Buddy,
    in_use: [u64; 4],
    peak: [u64; 4],
}

/// Index of pinned (fragmentation) frames in the accounting arrays.
const PINNED: usize = 2;

impl PhysMem {
    /// All of `bytes` free.
    pub fn new(bytes: u64) -> Self {
        PhysMem {
            buddy: Buddy::new(bytes / BASE_PAGE_BYTES),
            in_use: [0; 4],
            peak: [0; 4],
        }
    }

    fn account(&mut self, i: usize, delta_bytes: i64) {
        self.in_use[i] = self.in_use[i].wrapping_add_signed(delta_bytes);
        self.peak[i] = self.peak[i].max(self.in_use[i]);
    }

    /// Allocate a naturally aligned block of `2^order` frames.
    pub fn alloc(&mut self, order: u8, use_: FrameUse) -> Result<Pfn, OsError> {
        match self.buddy.alloc(order) {
            Some(pfn) => {
                self.account(use_ as usize, (BASE_PAGE_BYTES << order) as i64);
                Ok(Pfn(pfn))
            }
            None => Err(OsError(format!(
                "out of physical memory: no free block of {} (order {order}) for {}; {} of {} \
                 free, largest free block order {} (raise os.swap.bytes or \
                 os.phys_mem_bytes or lower the fragmentation)",
                format_bytes(BASE_PAGE_BYTES << order),
                match use_ {
                    FrameUse::Data => "data",
                    FrameUse::PageTable => "page tables",
                    FrameUse::Reserved => "a reservation",
                },
                format_bytes(self.buddy.free_pages() * BASE_PAGE_BYTES),
                format_bytes(self.buddy.total_pages() * BASE_PAGE_BYTES),
                self.largest_free_order()
                    .map_or("none".into(), |o| o.to_string()),
            ))),
        }
    }

    /// Allocate exactly the naturally aligned block of `2^order` frames at `pfn`, if all of it
    /// is free (placement policies and hooks that choose frames); `None` otherwise.
    pub fn alloc_at(&mut self, pfn: Pfn, order: u8, use_: FrameUse) -> Option<Pfn> {
        if pfn.0 + (1 << order) > self.buddy.total_pages() || !self.buddy.alloc_at(pfn.0, order) {
            return None;
        }
        self.account(use_ as usize, (BASE_PAGE_BYTES << order) as i64);
        Some(pfn)
    }

    /// Return a block (or an aligned part of one) obtained from [`PhysMem::alloc`].
    pub fn free(&mut self, pfn: Pfn, order: u8, use_: FrameUse) {
        self.buddy.free(pfn.0, order);
        self.account(use_ as usize, -((BASE_PAGE_BYTES << order) as i64));
    }

    /// Whether a block of `order` is available now.
    pub fn can_alloc(&self, order: u8) -> bool {
        self.buddy.can_alloc(order)
    }

    /// Re-count `bytes` already allocated as `from` as `to` (a reserved frame becoming mapped
    /// data, say); no frame changes hands.
    pub fn transfer(&mut self, bytes: u64, from: FrameUse, to: FrameUse) {
        self.account(from as usize, -(bytes as i64));
        self.account(to as usize, bytes as i64);
    }

    /// Bytes currently allocated for `use_`.
    pub fn bytes_in_use(&self, use_: FrameUse) -> u64 {
        self.in_use[use_ as usize]
    }

    /// Most bytes ever allocated for `use_` at once.
    pub fn peak_bytes(&self, use_: FrameUse) -> u64 {
        self.peak[use_ as usize]
    }

    /// Bytes pinned by the fragmentation step or a buddyinfo snapshot.
    pub fn pinned_bytes(&self) -> u64 {
        self.in_use[PINNED]
    }

    /// Total bytes managed.
    pub fn total_bytes(&self) -> u64 {
        self.buddy.total_pages() * BASE_PAGE_BYTES
    }

    /// Free bytes.
    pub fn free_bytes(&self) -> u64 {
        self.buddy.free_pages() * BASE_PAGE_BYTES
    }

    /// The free memory fragmentation index at `order`.
    pub fn fmfi(&self, order: u8) -> f64 {
        self.buddy.fmfi(order)
    }

    /// Free blocks per order (0..=18).
    pub fn free_blocks(&self) -> [u64; ORDERS] {
        self.buddy.free_blocks()
    }

    /// Largest order with a free block.
    pub fn largest_free_order(&self) -> Option<u8> {
        (0..ORDERS as u8)
            .rev()
            .find(|o| self.buddy.free_blocks()[*o as usize] > 0)
    }

    /// Fragment free memory until FMFI(`order`) reaches `target` (within 0.01), by pinning one
    /// random frame in a random share of the free `2^order`-frame blocks. Deterministic in `seed`.
    pub fn fragment(&mut self, target: f64, order: u8, seed: u64) -> Result<f64, OsError> {
        let block = 1u64 << order;
        let total = self.buddy.total_pages();
        let mut rng = Rng::new(seed, 0xf4a9);
        // Candidate blocks: every aligned block, in a seeded random order (Fisher-Yates).
        let mut blocks: Vec<u64> = (0..total / block).collect();
        for i in (1..blocks.len()).rev() {
            blocks.swap(i, rng.below(i as u64 + 1) as usize);
        }
        for b in blocks {
            if self.fmfi(order) >= target - 0.005 {
                break;
            }
            let start = b * block;
            // Only break blocks that are still whole: each pin then moves FMFI by one block.
            if self
                .buddy
                .free_block_containing(start)
                .is_none_or(|(_, o)| o < order)
            {
                continue;
            }
            let pfn = start + rng.below(block);
            if self.buddy.alloc_frame(pfn) {
                self.account(PINNED, BASE_PAGE_BYTES as i64);
            }
        }
        let reached = self.fmfi(order);
        if (reached - target).abs() > 0.02 {
            return Err(OsError(format!(
                "cannot fragment free memory to FMFI {target:.2} at order {order}: reached {reached:.3}"
            )));
        }
        Ok(reached)
    }

    /// Physical memory of `total_bytes` whose free memory is exactly the free blocks of a
    /// `/proc/buddyinfo` snapshot (counts summed over zones); everything else is pinned.
    pub fn from_buddyinfo_text(
        text: &str,
        origin: &str,
        total_bytes: u64,
    ) -> Result<PhysMem, OsError> {
        let mut counts = [0u64; ORDERS];
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let bad = |why: &str| OsError(format!("{origin}: line {}: {why}: '{line}'", i + 1));
            let Some(zone_pos) = line.find("zone") else {
                return Err(bad("expected 'Node N, zone NAME count...'"));
            };
            let fields: Vec<&str> = line[zone_pos + 4..].split_whitespace().collect();
            if fields.len() < 2 {
                return Err(bad("no free-block counts"));
            }
            if fields.len() - 1 > ORDERS {
                return Err(bad("more orders than 0..18"));
            }
            for (order, f) in fields[1..].iter().enumerate() {
                counts[order] += f
                    .parse::<u64>()
                    .map_err(|_| bad(&format!("'{f}' is not a count")))?;
            }
        }
        let mut p = PhysMem::new(total_bytes);
        let total = p.buddy.total_pages();
        // Pin everything, then free each snapshot block beside a pinned buddy so none coalesce.
        let all: Vec<u64> = std::iter::from_fn(|| p.buddy.alloc(0)).collect();
        debug_assert_eq!(all.len() as u64, total);
        let mut cursor = 0u64;
        let mut free_pages = 0u64;
        for order in (0..ORDERS).rev() {
            for _ in 0..counts[order] {
                let span = 2u64 << order;
                cursor = cursor.next_multiple_of(span);
                if cursor + span > total {
                    return Err(OsError(format!(
                        "{origin}: the snapshot's free memory does not fit in os.phys_mem_bytes = {} \
                         (each free block is laid out beside a pinned buddy, so up to twice the free \
                         memory is needed)",
                        format_bytes(total_bytes)
                    )));
                }
                for f in cursor..cursor + (1 << order) {
                    p.buddy.free(f, 0);
                }
                free_pages += 1 << order;
                cursor += span;
            }
        }
        p.in_use = [0, 0, (total - free_pages) * BASE_PAGE_BYTES, 0];
        p.peak = p.in_use;
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragmentation_reaches_the_target_fmfi() {
        for target in [0.5, 0.7, 0.9] {
            let mut p = PhysMem::new(4 << 30);
            let reached = p.fragment(target, 9, 3).unwrap();
            assert!((reached - target).abs() <= 0.02, "{target} -> {reached}");
            assert!(
                p.pinned_bytes() < (4u64 << 30) / 100,
                "pins only a few frames"
            );
        }
    }

    #[test]
    fn a_buddyinfo_snapshot_becomes_the_free_memory() {
        let text = "Node 0, zone      DMA      1      1      1      0      2      1      1      0      1      1      3\n\
                    Node 0, zone    Normal    100     50     10      4      0      0      0      0      0      0      2\n";
        let p = PhysMem::from_buddyinfo_text(text, "snap", 1 << 30).unwrap();
        let b = p.free_blocks();
        assert_eq!(&b[..11], &[101, 51, 11, 4, 2, 1, 1, 0, 1, 1, 5]);
        let bad = PhysMem::from_buddyinfo_text("Node 0, zone Normal 1 x\n", "snap", 1 << 30)
            .err()
            .unwrap();
        assert!(
            bad.0.contains("snap: line 1") && bad.0.contains("'x'"),
            "{bad}"
        );
    }
}
