//! Physical memory: the buddy allocator every frame (data or page table) comes from, with
//! usage accounting, frame kinds (movable or not), data ownership for compaction, the
//! fragmenters and free-memory snapshots.
//!
//! Contract: every frame in use was handed out by [`PhysMem::alloc`] (or pinned / filled by a
//! fragmenter or a snapshot) and is counted under exactly one use; `free` returns what `alloc`
//! handed out (or an aligned part of it) and forgets its owner. Allocation of order > 0 that
//! finds no free block runs direct compaction ([`super::compaction`]); blocks it moves are
//! reported by [`PhysMem::take_relocations`].
//!
//! Representation (what keeps memory at about 2 bytes per 4 KiB frame, 32 MiB for 64 GiB): the
//! buddy allocator's byte per frame, one byte per frame here (kind in the top 3 bits, the order
//! of the block the frame belongs to in the low 5), two 16-bit counters per 2 MiB pageblock
//! (used and unmovable frames) and a hash map from the first frame of each owned data block to
//! its owner. The hot path (an order-0 allocation or free) touches one frame byte and one
//! pageblock counter more than the buddy allocator alone.

use super::buddy::{Buddy, ORDERS};
use super::compaction::{CompactionConfig, CompactionStats, FragmenterConfig};
use super::error::OsError;
use crate::addr::{format_bytes, Asid, Pfn, Vpn, BASE_PAGE_BYTES};
use crate::rng::Rng;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

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

/// Who maps a data block (recorded by the OS model right after it allocates / maps it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataOwner {
    /// Address space.
    pub asid: Asid,
    /// First virtual page of the block.
    pub vpn: Vpn,
}

/// A data block moved by compaction; the OS model must re-map `owner`'s page from `from` to
/// `to` (same size, `2^order` frames).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Relocation {
    /// Who maps the block.
    pub owner: DataOwner,
    /// Old first frame.
    pub from: Pfn,
    /// New first frame.
    pub to: Pfn,
    /// Block order.
    pub order: u8,
}

/// Frame kinds (top 3 bits of a frame byte).
pub(super) mod kind {
    /// Free (in the buddy allocator, or isolated by compaction).
    pub const FREE: u8 = 0;
    /// Data with no owner recorded: unmovable (nothing could re-map it).
    pub const DATA: u8 = 1;
    /// Page-table memory: unmovable.
    pub const PAGE_TABLE: u8 = 2;
    /// Kernel memory / pinned by a fragmenter or snapshot: unmovable.
    pub const KERNEL: u8 = 3;
    /// Page-cache-like filler: movable, moved silently.
    pub const FILLER: u8 = 4;
    /// Data with an owner: movable, moves are reported as relocations.
    pub const OWNED: u8 = 5;

    /// Whether frames of kind `k` block compaction.
    #[inline]
    pub fn unmovable(k: u8) -> bool {
        matches!(k, DATA | PAGE_TABLE | KERNEL)
    }

    /// Whether frames of kind `k` can be migrated.
    #[inline]
    pub fn movable(k: u8) -> bool {
        matches!(k, FILLER | OWNED)
    }
}

/// The frame byte of a frame of kind `k` in a block of `order`.
#[inline]
pub(super) fn frame_byte(k: u8, order: u8) -> u8 {
    (k << 5) | order
}

/// Kind of a frame byte.
#[inline]
pub(super) fn kind_of(b: u8) -> u8 {
    b >> 5
}

/// Block order of a frame byte.
#[inline]
pub(super) fn order_of(b: u8) -> u8 {
    b & 31
}

/// Order of the pageblocks whose frames are counted (2 MiB, Linux's `pageblock_order` on x86).
pub(super) const PAGEBLOCK_ORDER: u8 = 9;

/// Hash of frame numbers (multiplicative; the map is never iterated, so order cannot leak).
#[derive(Default, Clone, Copy)]
pub(super) struct PfnHasher(u64);

impl Hasher for PfnHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ *b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, x: u32) {
        self.0 = (x as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Physical memory: the buddy allocator all frames come from, with usage accounting.
#[derive(Clone)]
pub struct PhysMem {
    pub(super) buddy: Buddy,
    in_use: [u64; 5],
    peak: [u64; 5],
    /// One byte per frame: [`frame_byte`].
    pub(super) frames: Vec<u8>,
    /// Used frames per pageblock.
    pub(super) pb_used: Vec<u16>,
    /// Unmovable frames per pageblock.
    pub(super) pb_unmovable: Vec<u16>,
    /// Owner of each owned data block, by its first frame.
    pub(super) owners: HashMap<u32, DataOwner, BuildHasherDefault<PfnHasher>>,
    pub(super) relocations: Vec<Relocation>,
    pub(super) compaction: CompactionConfig,
    zero_cycles_per_frame: u64,
    pub(super) work: CompactionStats,
}

/// Index of pinned / kernel (fragmentation) frames in the accounting arrays.
const PINNED: usize = 2;
/// Index of filler (page-cache-like) frames in the accounting arrays.
const FILLER: usize = 4;

impl PhysMem {
    /// All of `bytes` free, default compaction costs.
    pub fn new(bytes: u64) -> Self {
        let total = bytes / BASE_PAGE_BYTES;
        let pbs = total.div_ceil(1 << PAGEBLOCK_ORDER) as usize;
        let mut p = PhysMem {
            buddy: Buddy::new(total),
            in_use: [0; 5],
            peak: [0; 5],
            frames: vec![frame_byte(kind::FREE, 0); total as usize],
            pb_used: vec![0; pbs],
            pb_unmovable: vec![0; pbs],
            owners: HashMap::default(),
            relocations: Vec::new(),
            compaction: CompactionConfig::default(),
            zero_cycles_per_frame: 0,
            work: CompactionStats::default(),
        };
        p.set_compaction(&CompactionConfig::default());
        p
    }

    /// Use the allocation and compaction settings `cfg`.
    pub fn set_compaction(&mut self, cfg: &CompactionConfig) {
        self.compaction = cfg.clone();
        self.zero_cycles_per_frame =
            (cfg.zero_cycles_per_byte * BASE_PAGE_BYTES as f64).round() as u64;
    }

    fn account(&mut self, i: usize, delta_bytes: i64) {
        self.in_use[i] = self.in_use[i].wrapping_add_signed(delta_bytes);
        self.peak[i] = self.peak[i].max(self.in_use[i]);
    }

    /// Add (`add`) or remove `n` used frames from `pfn` on in the pageblock counters, also as
    /// unmovable ones if `unmovable`.
    #[inline]
    pub(super) fn pb_add(&mut self, pfn: u64, n: u64, add: bool, unmovable: bool) {
        let (mut f, end) = (pfn, pfn + n);
        while f < end {
            let pb = (f >> PAGEBLOCK_ORDER) as usize;
            let next = ((pb as u64 + 1) << PAGEBLOCK_ORDER).min(end);
            let k = (next - f) as u16;
            if add {
                self.pb_used[pb] += k;
                if unmovable {
                    self.pb_unmovable[pb] += k;
                }
            } else {
                self.pb_used[pb] -= k;
                if unmovable {
                    self.pb_unmovable[pb] -= k;
                }
            }
            f = next;
        }
    }

    /// Mark the free frames `[pfn, pfn + 2^order)` as one block of kind `k`.
    #[inline]
    fn mark(&mut self, pfn: u64, order: u8, k: u8) {
        let n = 1u64 << order;
        let b = frame_byte(k, order);
        if order == 0 {
            debug_assert_eq!(kind_of(self.frames[pfn as usize]), kind::FREE);
            self.frames[pfn as usize] = b;
        } else {
            self.frames[pfn as usize..(pfn + n) as usize].fill(b);
        }
        self.pb_add(pfn, n, true, kind::unmovable(k));
    }

    /// Split the recorded block containing `pfn` into single-frame records (an owned block's
    /// pieces keep their owner, at the matching virtual page).
    fn split_record(&mut self, pfn: u64) {
        let b = self.frames[pfn as usize];
        let order = order_of(b);
        if order == 0 {
            return;
        }
        let head = pfn & !((1u64 << order) - 1);
        let k = kind_of(b);
        let owner = if k == kind::OWNED {
            self.owners.remove(&(head as u32))
        } else {
            None
        };
        for i in 0..1u64 << order {
            self.frames[(head + i) as usize] = frame_byte(k, 0);
            if let Some(o) = owner {
                let piece = DataOwner {
                    asid: o.asid,
                    vpn: Vpn(o.vpn.0 + i),
                };
                self.owners.insert((head + i) as u32, piece);
            }
        }
    }

    /// Mark the used frames `[pfn, pfn + 2^order)` free (forgetting owners); the buddy
    /// allocator is not touched.
    fn unmark(&mut self, pfn: u64, order: u8) {
        if order_of(self.frames[pfn as usize]) > order {
            self.split_record(pfn);
        }
        let end = pfn + (1u64 << order);
        let mut f = pfn;
        while f < end {
            let b = self.frames[f as usize];
            let (k, n) = (kind_of(b), 1u64 << order_of(b));
            debug_assert_ne!(k, kind::FREE, "frame {f} freed twice");
            debug_assert!(f + n <= end, "a recorded block crosses the freed range");
            if k == kind::OWNED {
                self.owners.remove(&(f as u32));
            }
            self.pb_add(f, n, false, kind::unmovable(k));
            f += n;
        }
        if order == 0 {
            self.frames[pfn as usize] = frame_byte(kind::FREE, 0);
        } else {
            self.frames[pfn as usize..end as usize].fill(frame_byte(kind::FREE, 0));
        }
    }

    /// Allocate a naturally aligned block of `2^order` frames. When no block of `order` > 0 is
    /// free, direct compaction tries to make one (its work is charged to
    /// [`PhysMem::alloc_work_cycles`], data blocks it moves are queued as relocations).
    pub fn alloc(&mut self, order: u8, use_: FrameUse) -> Result<Pfn, OsError> {
        let pfn = match self.buddy.alloc(order) {
            Some(pfn) => pfn,
            None => {
                let compaction = if order == 0 || !self.compaction.enabled {
                    Err(None)
                } else {
                    self.compact_direct(order).map_err(Some)
                };
                match compaction {
                    Ok(pfn) => pfn,
                    Err(why) => return Err(self.out_of_memory(order, use_, why)),
                }
            }
        };
        self.mark(pfn, order, Self::kind_for(use_));
        self.account(use_ as usize, (BASE_PAGE_BYTES << order) as i64);
        self.work.zero_cycles += self.zero_cycles_per_frame << order;
        Ok(Pfn(pfn))
    }

    /// The frame kind of a block allocated for `use_` (reserved frames hold no data yet and
    /// are not movable: a reservation is broken, not migrated).
    fn kind_for(use_: FrameUse) -> u8 {
        match use_ {
            FrameUse::Data | FrameUse::Reserved => kind::DATA,
            FrameUse::PageTable => kind::PAGE_TABLE,
        }
    }

    /// Allocate exactly the naturally aligned block of `2^order` frames at `pfn`, if all of it
    /// is free (placement policies and hooks that choose frames); `None` otherwise (no
    /// compaction is tried).
    pub fn alloc_at(&mut self, pfn: Pfn, order: u8, use_: FrameUse) -> Option<Pfn> {
        if pfn.0 + (1 << order) > self.buddy.total_pages() || !self.buddy.alloc_at(pfn.0, order) {
            return None;
        }
        self.mark(pfn.0, order, Self::kind_for(use_));
        self.account(use_ as usize, (BASE_PAGE_BYTES << order) as i64);
        self.work.zero_cycles += self.zero_cycles_per_frame << order;
        Some(pfn)
    }

    /// Take the smallest free block of at least `2^group_order` frames, keep the aligned
    /// `2^order` frames at `offset` inside its first `2^group_order` frames for `use_`, and
    /// return the rest of that group block to the tail of the free lists, where later
    /// allocations take it last ([`crate::os::buddy::Buddy::alloc_soft`]; Elastic
    /// Translations' CoalaPaging soft reservation). `None`, changing nothing, when no such block
    /// is free (no compaction is tried).
    pub fn alloc_soft(
        &mut self,
        group_order: u8,
        offset: u64,
        order: u8,
        use_: FrameUse,
    ) -> Option<Pfn> {
        let pfn = self.buddy.alloc_soft(group_order, offset, order)?;
        self.mark(pfn, order, Self::kind_for(use_));
        self.account(use_ as usize, (BASE_PAGE_BYTES << order) as i64);
        self.work.zero_cycles += self.zero_cycles_per_frame << order;
        Some(Pfn(pfn))
    }

    /// Re-count `bytes` already allocated as `from` as `to` (a reserved frame becoming mapped
    /// data, say); no frame changes hands.
    pub fn transfer(&mut self, bytes: u64, from: FrameUse, to: FrameUse) {
        self.account(from as usize, -(bytes as i64));
        self.account(to as usize, bytes as i64);
    }

    fn out_of_memory(&self, order: u8, use_: FrameUse, compaction: Option<String>) -> OsError {
        OsError(format!(
            "out of physical memory: no free block of {} (order {order}) for {}; {} of {} \
             free, largest free block order {}{} (raise os.swap.bytes or \
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
            compaction.map_or(String::new(), |why| format!(
                "; direct compaction failed: {why}"
            )),
        ))
    }

    /// Return a block (or an aligned part of one) obtained from [`PhysMem::alloc`]; its owner
    /// record (if any) is forgotten.
    pub fn free(&mut self, pfn: Pfn, order: u8, use_: FrameUse) {
        self.unmark(pfn.0, order);
        self.buddy.free(pfn.0, order);
        self.account(use_ as usize, -((BASE_PAGE_BYTES << order) as i64));
    }

    /// Record that the data block at `pfn` of `2^order` frames is mapped by `owner`, which makes
    /// it movable (overwrites any earlier record for those frames, e.g. after the OS splits a
    /// 2 MiB page into 4 KiB pages it calls this per piece). Data blocks with no owner recorded
    /// are unmovable. The frames must be allocated for data.
    pub fn set_owner(&mut self, pfn: Pfn, order: u8, owner: DataOwner) {
        let (pfn, n) = (pfn.0, 1u64 << order);
        let b = self.frames[pfn as usize];
        if order_of(b) > order {
            self.split_record(pfn);
        }
        let end = pfn + n;
        let mut f = pfn;
        let mut unowned = 0;
        while f < end {
            let b = self.frames[f as usize];
            debug_assert!(
                matches!(kind_of(b), kind::DATA | kind::OWNED),
                "set_owner on frame {f}, which does not hold data"
            );
            if kind_of(b) == kind::OWNED {
                self.owners.remove(&(f as u32));
            } else {
                unowned += 1u64 << order_of(b);
            }
            f += 1u64 << order_of(b);
        }
        if order == 0 {
            self.frames[pfn as usize] = frame_byte(kind::OWNED, 0);
        } else {
            self.frames[pfn as usize..end as usize].fill(frame_byte(kind::OWNED, order));
        }
        if unowned == n {
            // The common case (a fresh block): all of it stops counting as unmovable.
            self.pb_add(pfn, n, false, true);
            self.pb_add(pfn, n, true, false);
        } else if unowned > 0 {
            self.recount_pageblocks(pfn, n);
        }
        self.owners.insert(pfn as u32, owner);
    }

    /// Recompute the pageblock counters covering `[pfn, pfn + n)` from the frame bytes.
    fn recount_pageblocks(&mut self, pfn: u64, n: u64) {
        if n == 0 {
            return;
        }
        let total = self.buddy.total_pages();
        let first = pfn >> PAGEBLOCK_ORDER;
        let last = (pfn + n - 1) >> PAGEBLOCK_ORDER;
        for pb in first..=last {
            let s = pb << PAGEBLOCK_ORDER;
            let e = (s + (1 << PAGEBLOCK_ORDER)).min(total);
            let (mut used, mut unmov) = (0u16, 0u16);
            for f in s..e {
                let k = kind_of(self.frames[f as usize]);
                used += (k != kind::FREE) as u16;
                unmov += kind::unmovable(k) as u16;
            }
            self.pb_used[pb as usize] = used;
            self.pb_unmovable[pb as usize] = unmov;
        }
    }

    /// Relocations made since the last call (the OS model applies them; until then its page
    /// maps still name `from`).
    pub fn take_relocations(&mut self) -> Vec<Relocation> {
        std::mem::take(&mut self.relocations)
    }

    /// OS cycles spent on allocation work so far: zeroing handed-out blocks plus direct
    /// compaction (scans and migrations); designs and the OS model charge deltas. Background
    /// compaction is not included (its cycles are returned by `compact_background`).
    pub fn alloc_work_cycles(&self) -> u64 {
        self.work.zero_cycles + self.work.compaction_cycles
    }

    /// Compaction and allocation-work counters.
    pub fn compaction_stats(&self) -> &CompactionStats {
        &self.work
    }

    /// Bytes of page-cache-like filler (fill fragmenter).
    pub fn filler_bytes(&self) -> u64 {
        self.in_use[FILLER]
    }

    /// Whether a block of `order` is available now.
    pub fn can_alloc(&self, order: u8) -> bool {
        self.buddy.can_alloc(order)
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
                self.mark(pfn, 0, kind::KERNEL);
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

    /// Fill memory like a long-running Linux system, then free page-cache pages until
    /// `cfg.free_share` of memory is free with FMFI(`order`) at `target` (within 0.02).
    /// Deterministic in `seed`; expects all memory free (a fresh [`PhysMem`]).
    ///
    /// Method: every frame starts as movable page-cache-like filler; a random `kernel_share` of
    /// the 2 MiB pageblocks become wholly unmovable kernel memory and a random `polluted_share`
    /// of the others get one unmovable kernel page at a random frame. Then, until enough is
    /// free: while FMFI is below the target a random filler frame is freed (a 4 KiB page-cache
    /// eviction, adding free memory below order `order`), otherwise the filler of a random
    /// aligned `2^order` block with no kernel page is freed (adding a whole free block). This is
    /// the Elastic Translations fragmenter's scheme (fill, then free small chunks while FMFI is
    /// below target and large ones at or above it) with 4 KiB and 2^`order` chunks and
    /// unmovable pages mixed in.
    pub fn fragment_fill(
        &mut self,
        target: f64,
        order: u8,
        cfg: &FragmenterConfig,
        seed: u64,
    ) -> Result<f64, OsError> {
        let total = self.buddy.total_pages();
        debug_assert_eq!(self.buddy.free_pages(), total, "fill expects free memory");
        let mut rng = Rng::new(seed, 0xf111);
        self.buddy = Buddy::new_full(total);
        self.frames.fill(frame_byte(kind::FILLER, 0));
        self.recount_pageblocks(0, total);
        self.account(FILLER, (total * BASE_PAGE_BYTES) as i64);
        let pb_frames = 1u64 << PAGEBLOCK_ORDER;
        let mut pbs: Vec<u64> = (0..total / pb_frames).collect();
        for i in (1..pbs.len()).rev() {
            pbs.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let kernel = (cfg.kernel_share * pbs.len() as f64).round() as usize;
        let polluted = (cfg.polluted_share * (pbs.len() - kernel) as f64).round() as usize;
        let to_kernel = |p: &mut PhysMem, f: u64| {
            p.frames[f as usize] = frame_byte(kind::KERNEL, 0);
            p.pb_unmovable[(f >> PAGEBLOCK_ORDER) as usize] += 1;
            p.account(FILLER, -(BASE_PAGE_BYTES as i64));
            p.account(PINNED, BASE_PAGE_BYTES as i64);
        };
        for pb in &pbs[..kernel] {
            for f in pb * pb_frames..(pb + 1) * pb_frames {
                to_kernel(self, f);
            }
        }
        for pb in &pbs[kernel..kernel + polluted] {
            to_kernel(self, pb * pb_frames + rng.below(pb_frames));
        }
        let want_free = (cfg.free_share * total as f64).round() as u64;
        let chunk = 1u64 << order;
        let chunks = total / chunk;
        // Generous bound on random picks, so an unreachable mix ends in an error, not a hang.
        let mut picks_left = 64 * total + 1024;
        while self.buddy.free_pages() < want_free && picks_left > 0 {
            picks_left -= 1;
            if self.fmfi(order) < target {
                let f = rng.below(total);
                if kind_of(self.frames[f as usize]) == kind::FILLER {
                    self.free_filler(f);
                }
                continue;
            }
            if chunks == 0 {
                continue;
            }
            let start = rng.below(chunks) * chunk;
            let frames = &self.frames[start as usize..(start + chunk) as usize];
            if frames.iter().any(|b| kind_of(*b) == kind::KERNEL)
                || frames.iter().all(|b| kind_of(*b) == kind::FREE)
            {
                continue;
            }
            for f in start..start + chunk {
                if kind_of(self.frames[f as usize]) == kind::FILLER {
                    self.free_filler(f);
                }
            }
        }
        let reached = self.fmfi(order);
        if self.buddy.free_pages() < want_free || (reached - target).abs() > 0.02 {
            return Err(OsError(format!(
                "cannot fill memory to {:.0} % free at FMFI {target:.2} (order {order}): reached \
                 {:.1} % free at FMFI {reached:.3} (lower os.fragmenter.free_share or \
                 kernel_share)",
                cfg.free_share * 100.0,
                self.buddy.free_pages() as f64 * 100.0 / total.max(1) as f64
            )));
        }
        self.peak[FILLER] = self.in_use[FILLER];
        Ok(reached)
    }

    /// The Elastic Translations authors' fragmenter (`os.fragmenter.mode = "alternating"`):
    /// all memory becomes movable filler; then, until `free_share` of memory is free, while
    /// FMFI(`order`) is below `target` the next 512 KiB chunk at alternating positions from the
    /// bottom of memory (chunks 0, 2, 4, ...) is freed, and once it is at or above the target
    /// the next 32 MiB chunk at alternating positions from the top (the last, the third from
    /// last, ...). Deterministic (no random choice). Ends within 0.02 of the target and at the
    /// free share, else a clear error. The kernel and polluted shares of `fill` do not apply.
    pub fn fragment_alternating(
        &mut self,
        target: f64,
        order: u8,
        cfg: &FragmenterConfig,
    ) -> Result<f64, OsError> {
        let total = self.buddy.total_pages();
        debug_assert_eq!(
            self.buddy.free_pages(),
            total,
            "the fragmenter expects free memory"
        );
        self.buddy = Buddy::new_full(total);
        self.frames.fill(frame_byte(kind::FILLER, 0));
        self.recount_pageblocks(0, total);
        self.account(FILLER, (total * BASE_PAGE_BYTES) as i64);
        let small = (512 << 10) / BASE_PAGE_BYTES;
        let large = (32 << 20) / BASE_PAGE_BYTES;
        let want_free = (cfg.free_share * total as f64).round() as u64;
        // Chunks not yet freed, as cursors: the small ones from the bottom, the large ones from
        // the top (a chunk already wholly free is skipped).
        let mut next_small = 0u64;
        let mut next_large = (total / large).checked_sub(1);
        while self.buddy.free_pages() < want_free {
            let (start, len) = if self.fmfi(order) < target && next_small * small + small <= total {
                next_small += 2;
                ((next_small - 2) * small, small)
            } else if let Some(j) = next_large {
                next_large = j.checked_sub(2);
                (j * large, large)
            } else if next_small * small + small <= total {
                // No 32 MiB chunk left: only small ones can still free memory.
                next_small += 2;
                ((next_small - 2) * small, small)
            } else {
                break;
            };
            for f in start..start + len {
                if self.buddy.free_pages() >= want_free {
                    break;
                }
                if kind_of(self.frames[f as usize]) == kind::FILLER {
                    self.free_filler(f);
                }
            }
        }
        let reached = self.fmfi(order);
        if self.buddy.free_pages() < want_free || (reached - target).abs() > 0.02 {
            return Err(OsError(format!(
                "cannot fragment memory to {:.0} % free at FMFI {target:.2} (order {order}) with \
                 512 KiB / 32 MiB chunks: reached {:.1} % free at FMFI {reached:.3} (change \
                 os.fragmenter.free_share or os.phys_mem_bytes)",
                cfg.free_share * 100.0,
                self.buddy.free_pages() as f64 * 100.0 / total.max(1) as f64
            )));
        }
        self.peak[FILLER] = self.in_use[FILLER];
        Ok(reached)
    }

    /// Free one filler frame (a page-cache eviction).
    fn free_filler(&mut self, f: u64) {
        self.unmark(f, 0);
        self.buddy.free(f, 0);
        self.account(FILLER, -(BASE_PAGE_BYTES as i64));
    }

    /// Physical memory of `total_bytes` whose free memory is exactly the free blocks of a
    /// `/proc/buddyinfo` snapshot (counts summed over zones); everything else is pinned
    /// (unmovable). A `/proc/pagetypeinfo` text (recognised by its "Free pages count per migrate
    /// type" header) is read by [`PhysMem::from_pagetypeinfo_text`] instead.
    pub fn from_buddyinfo_text(
        text: &str,
        origin: &str,
        total_bytes: u64,
    ) -> Result<PhysMem, OsError> {
        if text.contains("Free pages count per migrate type") {
            return Self::from_pagetypeinfo_text(text, origin, total_bytes);
        }
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
            add_counts(&mut counts, &fields[1..], &bad)?;
        }
        let mut p = PhysMem::new(total_bytes);
        let total = p.buddy.total_pages();
        p.buddy = Buddy::new_full(total);
        p.frames.fill(frame_byte(kind::KERNEL, 0));
        let mut cursor = 0u64;
        let free_pages = p.lay_out_free_blocks(&counts, &mut cursor, origin, total_bytes)?;
        p.in_use = [0, 0, (total - free_pages) * BASE_PAGE_BYTES, 0, 0];
        p.peak = p.in_use;
        p.recount_pageblocks(0, total);
        Ok(p)
    }

    /// Free the blocks `counts` (per order, largest first) from `cursor` on, each beside a
    /// used buddy so none coalesce; returns the frames freed.
    fn lay_out_free_blocks(
        &mut self,
        counts: &[u64; ORDERS],
        cursor: &mut u64,
        origin: &str,
        total_bytes: u64,
    ) -> Result<u64, OsError> {
        let total = self.buddy.total_pages();
        let mut free_pages = 0;
        for order in (0..ORDERS).rev() {
            for _ in 0..counts[order] {
                let span = 2u64 << order;
                *cursor = cursor.next_multiple_of(span);
                if *cursor + span > total {
                    return Err(OsError(format!(
                        "{origin}: the snapshot's free memory does not fit in os.phys_mem_bytes = {} \
                         (each free block is laid out beside a pinned buddy, so up to twice the free \
                         memory is needed)",
                        format_bytes(total_bytes)
                    )));
                }
                for f in *cursor..*cursor + (1 << order) {
                    self.buddy.free(f, 0);
                    self.frames[f as usize] = frame_byte(kind::FREE, 0);
                }
                free_pages += 1 << order;
                *cursor += span;
            }
        }
        Ok(free_pages)
    }

    /// Physical memory of `total_bytes` seeded from a `/proc/pagetypeinfo` snapshot: its free
    /// blocks (per order, summed over zones and migrate types) become the free memory, and the
    /// used memory is split by pageblock type. Unmovable types (Unmovable, Reclaimable,
    /// HighAtomic, Isolate) are unmovable kernel memory, Movable and CMA pageblocks hold movable
    /// page-cache-like filler. Layout: the free blocks of unmovable types first (each beside a
    /// used buddy, as for buddyinfo), the pageblocks they touch being unmovable; then, from the
    /// next pageblock, the free blocks of movable types; then the top pageblocks of memory are
    /// made unmovable until the snapshot's share of unmovable pageblocks is reached; every other
    /// used frame is filler. Counts printed as ">100000" (the kernel stops counting there) are
    /// taken as 100000.
    pub fn from_pagetypeinfo_text(
        text: &str,
        origin: &str,
        total_bytes: u64,
    ) -> Result<PhysMem, OsError> {
        let movable_type = |t: &str| matches!(t, "Movable" | "CMA");
        let mut free_unmovable = [0u64; ORDERS];
        let mut free_movable = [0u64; ORDERS];
        let mut block_types: Vec<String> = Vec::new();
        let (mut unmovable_blocks, mut all_blocks) = (0u64, 0u64);
        let mut in_block_section = false;
        for (i, line) in text.lines().enumerate() {
            let bad = |why: &str| OsError(format!("{origin}: line {}: {why}: '{line}'", i + 1));
            let trimmed = line.trim();
            if trimmed.is_empty() {
                in_block_section = false;
                continue;
            }
            if let Some(rest) = trimmed.strip_prefix("Number of blocks type") {
                block_types = rest.split_whitespace().map(str::to_string).collect();
                in_block_section = true;
                continue;
            }
            if let Some(type_pos) = line.find(", type ") {
                let fields: Vec<&str> = line[type_pos + 7..].split_whitespace().collect();
                if fields.len() < 2 {
                    return Err(bad("no free-block counts"));
                }
                let counts = if movable_type(fields[0]) {
                    &mut free_movable
                } else {
                    &mut free_unmovable
                };
                add_counts(counts, &fields[1..], &bad)?;
                continue;
            }
            if in_block_section && line.contains("zone") {
                let zone_pos = line.find("zone").expect("checked") + 4;
                let fields: Vec<&str> = line[zone_pos..].split_whitespace().collect();
                if fields.len() != block_types.len() + 1 {
                    return Err(bad(&format!(
                        "expected a zone name and {} pageblock counts",
                        block_types.len()
                    )));
                }
                for (t, f) in block_types.iter().zip(&fields[1..]) {
                    let n: u64 = f
                        .parse()
                        .map_err(|_| bad(&format!("'{f}' is not a count")))?;
                    all_blocks += n;
                    if !movable_type(t) {
                        unmovable_blocks += n;
                    }
                }
            }
            // Other lines (page block order, other sections) carry nothing the model uses.
        }
        if all_blocks == 0 {
            return Err(OsError(format!(
                "{origin}: no 'Number of blocks type' section with pageblock counts (is this \
                 /proc/pagetypeinfo?)"
            )));
        }
        let mut p = PhysMem::new(total_bytes);
        let total = p.buddy.total_pages();
        p.buddy = Buddy::new_full(total);
        p.frames.fill(frame_byte(kind::KERNEL, 0));
        let mut cursor = 0u64;
        let mut free_pages =
            p.lay_out_free_blocks(&free_unmovable, &mut cursor, origin, total_bytes)?;
        let pb_frames = 1u64 << PAGEBLOCK_ORDER;
        let unmovable_low = cursor.div_ceil(pb_frames);
        cursor = unmovable_low * pb_frames;
        free_pages += p.lay_out_free_blocks(&free_movable, &mut cursor, origin, total_bytes)?;
        let pbs = total.div_ceil(pb_frames);
        let layout_end = cursor.div_ceil(pb_frames);
        let want = (unmovable_blocks as f64 / all_blocks as f64 * pbs as f64).round() as u64;
        let unmovable_high = want
            .saturating_sub(unmovable_low)
            .min(pbs.saturating_sub(layout_end));
        let mut filler = 0u64;
        for pb in unmovable_low..pbs - unmovable_high {
            let end = ((pb + 1) * pb_frames).min(total);
            for f in pb * pb_frames..end {
                if kind_of(p.frames[f as usize]) == kind::KERNEL {
                    p.frames[f as usize] = frame_byte(kind::FILLER, 0);
                    filler += 1;
                }
            }
        }
        p.in_use = [
            0,
            0,
            (total - free_pages - filler) * BASE_PAGE_BYTES,
            0,
            filler * BASE_PAGE_BYTES,
        ];
        p.peak = p.in_use;
        p.recount_pageblocks(0, total);
        Ok(p)
    }
}

/// Add a line's per-order free-block counts to `counts` (">N" is read as N).
fn add_counts(
    counts: &mut [u64; ORDERS],
    fields: &[&str],
    bad: &dyn Fn(&str) -> OsError,
) -> Result<(), OsError> {
    if fields.len() > ORDERS {
        return Err(bad("more orders than 0..18"));
    }
    for (order, f) in fields.iter().enumerate() {
        counts[order] += f
            .trim_start_matches('>')
            .parse::<u64>()
            .map_err(|_| bad(&format!("'{f}' is not a count")))?;
    }
    Ok(())
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

    const PAGETYPEINFO: &str = "Page block order: 9
Pages per block:  512

Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10
Node    0, zone      DMA, type    Unmovable      0      0      0      1      2      1      1      0      1      0      0
Node    0, zone      DMA, type      Movable      0      0      0      0      0      0      0      0      0      1      3
Node    0, zone   Normal, type    Unmovable     40     20      5      0      0      0      0      0      0      0      0
Node    0, zone   Normal, type      Movable   >100000     30     10      4      2      0      0      0      0      2      1
Node    0, zone   Normal, type  Reclaimable     10      0      0      0      0      0      0      0      0      0      0
Node    0, zone   Normal, type   HighAtomic      0      0      0      0      0      0      0      0      0      0      0
Node    0, zone   Normal, type          CMA      0      0      0      0      0      0      0      0      0      0      0
Node    0, zone   Normal, type      Isolate      0      0      0      0      0      0      0      0      0      0      0

Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic          CMA      Isolate
Node 0, zone      DMA            1            7            0            0            0            0
Node 0, zone   Normal           90          850           60            0            0            0
";

    #[test]
    fn a_pagetypeinfo_snapshot_seeds_free_blocks_and_movable_vs_unmovable_memory() {
        let p = PhysMem::from_buddyinfo_text(PAGETYPEINFO, "pti", 4 << 30).unwrap();
        let b = p.free_blocks();
        // Summed over zones and types; ">100000" read as 100000.
        assert_eq!(&b[..11], &[100_050, 50, 15, 5, 4, 1, 1, 0, 1, 3, 4]);
        // 151 of 1008 pageblocks are of unmovable types: that share of the 2048 pageblocks of
        // 4 GiB is unmovable, the rest of the used memory is movable filler.
        let pbs = 2048.0_f64;
        let want = (151.0 / 1008.0 * pbs).round() as usize;
        let unmovable_pbs = p.pb_unmovable.iter().filter(|u| **u > 0).count();
        assert!(
            unmovable_pbs.abs_diff(want) <= 1,
            "{unmovable_pbs} vs {want}"
        );
        assert!(p.filler_bytes() > 0 && p.pinned_bytes() > 0);
        assert_eq!(
            p.filler_bytes() + p.pinned_bytes() + p.free_bytes(),
            p.total_bytes()
        );
        // Movable memory lets direct compaction make a block no snapshot free list had.
        let mut p = p;
        assert!(!p.can_alloc(12));
        p.alloc(12, FrameUse::PageTable).unwrap();
        assert_eq!(p.compaction_stats().direct_successes, 1);
        let err = PhysMem::from_buddyinfo_text(
            "Free pages count per migrate type at order 0 1\nNode 0, zone Normal, type Movable 1 x\n",
            "pti",
            1 << 30,
        )
        .err()
        .unwrap();
        assert!(
            err.0.contains("pti: line 2") && err.0.contains("'x'"),
            "{err}"
        );
        let err = PhysMem::from_buddyinfo_text(
            "Free pages count per migrate type at order 0 1\nNode 0, zone Normal, type Movable 1 2\n",
            "pti",
            1 << 30,
        )
        .err()
        .unwrap();
        assert!(err.0.contains("Number of blocks type"), "{err}");
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
