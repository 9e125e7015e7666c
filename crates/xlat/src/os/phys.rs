//! Physical memory (Linux `mm/page_alloc.c`): the buddy allocator every frame (data or page
//! table) comes from, with usage accounting, frame kinds (movable or not), data ownership for
//! compaction, and the allocator's settings and work counters (`os.compaction.*`).
//!
//! Layering: this file names only `buddy.rs`, `error.rs` and `owners.rs` (which holds
//! [`DataOwner`], re-exported here, so that it names nothing of this file). Compaction
//! (`compaction.rs`) and the fragmenters and snapshots (`fragmenter.rs`) are `impl PhysMem`
//! blocks above it that use
//! its frame records; the allocation slow path calls `compact_direct` as `page_alloc.c` calls
//! into `compaction.c` (a method call, not a name this file imports).
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
//! (used and unmovable frames) and a map from the first frame of each owned data block to its
//! owner (`owners.rs`: a chunk of 512 slots per pageblock that held one, about 10 bytes per
//! frame of those pageblocks). The hot path (an order-0 allocation or free) touches one frame byte and one
//! pageblock counter more than the buddy allocator alone.

use super::buddy::{Buddy, ORDERS};
use super::error::OsError;
pub use super::owners::DataOwner;
use super::owners::OwnerMap;
use crate::addr::{format_bytes, Pfn, Vpn, BASE_PAGE_BYTES};
use serde::{Deserialize, Serialize};

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

/// Physical memory: the buddy allocator all frames come from, with usage accounting.
#[derive(Clone)]
pub struct PhysMem {
    pub(super) buddy: Buddy,
    pub(super) in_use: [u64; 5],
    pub(super) peak: [u64; 5],
    /// One byte per frame: [`frame_byte`].
    pub(super) frames: Vec<u8>,
    /// Used frames per pageblock.
    pub(super) pb_used: Vec<u16>,
    /// Unmovable frames per pageblock.
    pub(super) pb_unmovable: Vec<u16>,
    /// Owner of each owned data block, by its first frame.
    pub(super) owners: OwnerMap,
    pub(super) relocations: Vec<Relocation>,
    pub(super) compaction: CompactionConfig,
    zero_cycles_per_frame: u64,
    pub(super) work: CompactionStats,
}

/// Index of pinned / kernel (fragmentation) frames in the accounting arrays.
pub(super) const PINNED: usize = 2;
/// Index of filler (page-cache-like) frames in the accounting arrays.
pub(super) const FILLER: usize = 4;

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
            owners: OwnerMap::default(),
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

    pub(super) fn account(&mut self, i: usize, delta_bytes: i64) {
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
    pub(super) fn mark(&mut self, pfn: u64, order: u8, k: u8) {
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
            self.owners.remove(head)
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
                self.owners.insert(head + i, piece);
            }
        }
    }

    /// Mark the used frames `[pfn, pfn + 2^order)` free (forgetting owners); the buddy
    /// allocator is not touched.
    pub(super) fn unmark(&mut self, pfn: u64, order: u8) {
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
                self.owners.remove(f);
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
                self.owners.remove(f);
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
        self.owners.insert(pfn, owner);
    }

    /// Recompute the pageblock counters covering `[pfn, pfn + n)` from the frame bytes.
    pub(super) fn recount_pageblocks(&mut self, pfn: u64, n: u64) {
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
}

/// `[os.compaction]`: allocation and compaction costs.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CompactionConfig {
    /// Direct compaction when an allocation of order > 0 finds no free block.
    pub enabled: bool,
    /// OS cycles to migrate one 4 KiB page.
    pub migrate_cycles_per_page: u64,
    /// OS cycles to scan one frame (migrate or free scanner).
    pub scan_cycles_per_frame: u64,
    /// OS cycles to zero one byte of a block handed out for data or page tables.
    pub zero_cycles_per_byte: f64,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig {
            enabled: true,
            migrate_cycles_per_page: 8000,
            scan_cycles_per_frame: 50,
            zero_cycles_per_byte: 0.5,
        }
    }
}

impl CompactionConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1e6).contains(&self.zero_cycles_per_byte) {
            return Err(format!(
                "os.compaction.zero_cycles_per_byte must be in [0, 1e6], got {}",
                self.zero_cycles_per_byte
            ));
        }
        Ok(())
    }
}

/// Allocation-work and compaction counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactionStats {
    /// Direct compactions attempted (allocations of order > 0 that found no free block).
    pub direct_attempts: u64,
    /// Direct compactions that produced the block.
    pub direct_successes: u64,
    /// Direct compactions that failed (the allocation then failed).
    pub direct_failures: u64,
    /// Background (kcompactd) runs that did work.
    pub background_runs: u64,
    /// Background runs that found no candidate block.
    pub background_failures: u64,
    /// 4 KiB pages migrated (direct and background).
    pub pages_migrated: u64,
    /// Frames scanned (candidate frames and destination frames).
    pub frames_scanned: u64,
    /// Owned data blocks moved (relocations reported).
    pub relocations: u64,
    /// Cycles of scanning and migrating in direct compaction (part of allocation work).
    pub compaction_cycles: u64,
    /// Cycles of scanning and migrating in background compaction (returned to the caller of
    /// [`PhysMem::compact_background`], not part of [`PhysMem::alloc_work_cycles`]).
    pub background_cycles: u64,
    /// Cycles of zeroing handed-out blocks.
    pub zero_cycles: u64,
}
