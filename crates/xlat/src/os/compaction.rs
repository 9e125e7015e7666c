//! Memory compaction (Linux `mm/compaction.c` + `mm/migrate.c`, simplified): direct compaction
//! when an allocation of order > 0 finds no free block, and background compaction (kcompactd)
//! driven by the OS model's daemons.
//!
//! Contract:
//! - Only movable frames move: page-cache-like filler frames (moved silently) and data blocks
//!   whose owner was recorded with [`PhysMem::set_owner`] (each move is reported as a
//!   [`Relocation`] the OS model must apply). Page-table frames, kernel / pinned frames and data
//!   blocks with no owner recorded are unmovable: a candidate block holding one is never chosen.
//! - A relocation's `to` block was free before the move; its `from` frames are no longer the
//!   owner's afterwards (they are part of the block direct compaction hands out, or free again
//!   after background compaction).
//! - Compaction never loses or duplicates a frame: every frame of a candidate is either moved,
//!   handed out as the requested block, or given back to the buddy allocator.
//!
//! ## Candidate choice (vs Linux)
//! Linux runs two scanners over a zone: the migrate scanner walks up from the zone start
//! isolating movable pages pageblock by pageblock, the free scanner walks down from the end
//! isolating free pages as destinations, until a free block of the requested order exists.
//! Here the candidate is chosen directly: among the naturally aligned blocks of the requested
//! order that hold no unmovable frame and no movable block larger than the request, the one
//! with the fewest used frames (ties: the lowest address). Its free frames are isolated (taken
//! off the free lists so no destination lands inside it), every movable block in it is moved to
//! a block the buddy allocator hands out (best fit: the smallest free block that fits, standing
//! in for the free scanner), and the emptied candidate is the allocation. This is a lower bound
//! of Linux's work: Linux's sequential scanners may also migrate pages out of blocks that never
//! become free. Per-pageblock (2 MiB) counts of used and unmovable frames keep the search of
//! candidates of 2 MiB and more to one pass over the pageblocks; smaller candidates are found by
//! scanning frames (stopping at the first candidate with one used frame).
//!
//! ## Costs (OS cycles, reported by [`PhysMem::alloc_work_cycles`])
//! - zeroing every block handed out for data or page tables: `zero_cycles_per_byte` (0.5, i.e.
//!   2 bytes per cycle; the rate the ECPT/ME-HPT allocation-cost model used for unfragmented
//!   memory);
//! - scanning: `scan_cycles_per_frame` (50) per frame of the candidate (migrate scanner) and per
//!   destination frame (free scanner): an estimate of reading one 64-byte `struct page` per pfn
//!   mostly from DRAM;
//! - migrating: `migrate_cycles_per_page` (8000) per 4 KiB page moved: an estimate of Linux's
//!   `migrate_pages` for one anonymous 4 KiB page (isolation, rmap walk and unmap with a TLB
//!   flush, the copy, the remap), a few microseconds on a server — 4 us at ME-HPT's 2 GHz. The
//!   copy alone is about 1000 cycles (Utopia Table 1). See docs/os-model.md for the resulting
//!   allocation costs against ME-HPT §III.
//!
//! ## Deviations
//! - A movable block whose destination cannot be allocated (e.g. a 2 MiB data page when no free
//!   2 MiB block exists) fails the compaction; Linux would split a THP and retry.
//! - No compaction deferral (`defer_compaction`), no async vs sync modes, no watermarks: direct
//!   compaction runs whenever an allocation of order > 0 fails and compaction is enabled.

use super::phys::{frame_byte, kind, kind_of, order_of, PhysMem, Relocation, PAGEBLOCK_ORDER};
use crate::addr::{format_bytes, Pfn, BASE_PAGE_BYTES};
use crate::stats::{Stats, StatsExt};
use serde::{Deserialize, Serialize};

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

/// How the fragmenter fills memory before the run (`os.fragmenter.mode`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FragmenterMode {
    /// Pin one random unmovable frame in a random share of the free 2^`fmfi_order`-frame blocks
    /// until the FMFI is reached (the original method; memory otherwise stays free).
    Pin,
    /// Fill memory like a long-running Linux system: movable page-cache-like pages, whole
    /// unmovable kernel pageblocks and scattered unmovable pages in other pageblocks, then free
    /// page-cache pages until `free_share` of memory is free at the target FMFI.
    Fill,
}

/// `[os.fragmenter]`: the fragmenter's mix.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct FragmenterConfig {
    /// `pin` (default, runs when `os.fmfi_target` > 0) or `fill` (always runs).
    pub mode: FragmenterMode,
    /// Fill: share of memory left free.
    pub free_share: f64,
    /// Fill: share of the 2 MiB pageblocks that are wholly unmovable kernel memory (Linux groups
    /// unmovable allocations in their own pageblocks).
    pub kernel_share: f64,
    /// Fill: share of the other pageblocks that hold one scattered unmovable kernel page (the
    /// pageblocks unmovable allocations fall back to under pressure).
    pub polluted_share: f64,
}

impl Default for FragmenterConfig {
    fn default() -> Self {
        FragmenterConfig {
            mode: FragmenterMode::Pin,
            free_share: 0.25,
            kernel_share: 0.03,
            polluted_share: 0.03,
        }
    }
}

impl FragmenterConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        for (key, v, hi) in [
            ("free_share", self.free_share, 1.0),
            ("kernel_share", self.kernel_share, 1.0),
            ("polluted_share", self.polluted_share, 1.0),
        ] {
            if !(0.0..=hi).contains(&v) {
                return Err(format!("os.fragmenter.{key} must be in [0, 1], got {v}"));
            }
        }
        if self.free_share + self.kernel_share > 1.0 {
            return Err(format!(
                "os.fragmenter.free_share ({}) + kernel_share ({}) must not exceed 1",
                self.free_share, self.kernel_share
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
    /// Cycles of scanning and migrating.
    pub compaction_cycles: u64,
    /// Cycles of zeroing handed-out blocks.
    pub zero_cycles: u64,
}

impl PhysMem {
    /// The best candidate for a free block of `order`: (start frame, used frames), or `None`
    /// when every aligned block holds an unmovable frame or a larger movable block.
    pub(super) fn find_candidate(&self, order: u8) -> Option<(u64, u64)> {
        let n = 1u64 << order;
        let total = self.buddy.total_pages();
        let mut best: Option<(u64, u64)> = None;
        if order >= PAGEBLOCK_ORDER {
            let g = 1usize << (order - PAGEBLOCK_ORDER);
            for c in 0..(total / n) as usize {
                let pbs = c * g..(c + 1) * g;
                if self.pb_unmovable[pbs.clone()].iter().any(|u| *u > 0) {
                    continue;
                }
                let start = c as u64 * n;
                // A movable block larger than the candidate would contain its first frame.
                let b = self.frames[start as usize];
                if kind_of(b) != kind::FREE && order_of(b) > order {
                    continue;
                }
                let used: u64 = self.pb_used[pbs].iter().map(|u| *u as u64).sum();
                if best.is_none_or(|(_, u)| used < u) {
                    best = Some((start, used));
                }
            }
            return best;
        }
        let pb_frames = 1u64 << PAGEBLOCK_ORDER;
        for pb in 0..self.pb_used.len() {
            let pb_start = pb as u64 * pb_frames;
            let pb_len = pb_frames.min(total - pb_start);
            if self.pb_used[pb] == 0 || self.pb_unmovable[pb] as u64 == pb_len {
                continue;
            }
            let mut c = pb_start;
            while c + n <= pb_start + pb_len {
                if let Some(used) = self.candidate_used(c, order) {
                    if best.is_none_or(|(_, u)| used < u) {
                        best = Some((c, used));
                        if used <= 1 {
                            return best;
                        }
                    }
                }
                c += n;
            }
        }
        best
    }

    /// Used frames of the aligned block of `order` at `start`, or `None` if it holds an
    /// unmovable frame or part of a movable block larger than itself.
    fn candidate_used(&self, start: u64, order: u8) -> Option<u64> {
        let mut used = 0;
        for b in &self.frames[start as usize..(start + (1 << order)) as usize] {
            let k = kind_of(*b);
            if k == kind::FREE {
                continue;
            }
            if kind::unmovable(k) || order_of(*b) > order {
                return None;
            }
            used += 1;
        }
        Some(used)
    }

    /// Take every free block inside `[start, start + n)` off the free lists.
    fn isolate_free(&mut self, start: u64, n: u64) {
        let mut f = start;
        while f < start + n {
            let b = self.frames[f as usize];
            if kind_of(b) != kind::FREE {
                f += 1 << order_of(b);
                continue;
            }
            let (s, o) = self
                .buddy
                .free_block_containing(f)
                .expect("a frame marked free is in a free block");
            debug_assert!(
                s >= start && s + (1 << o) <= start + n,
                "free block crosses"
            );
            let taken = self.buddy.take_free_block(s, o);
            debug_assert!(taken);
            f = s + (1 << o);
        }
    }

    /// Give every frame of `[start, start + n)` marked free back to the buddy allocator.
    fn release_isolated(&mut self, start: u64, n: u64) {
        for f in start..start + n {
            if kind_of(self.frames[f as usize]) == kind::FREE {
                self.buddy.free(f, 0);
            }
        }
    }

    /// Move the movable block at `src` to a freshly allocated block; false if none is free.
    /// The source frames are marked free but stay allocated in the buddy allocator.
    fn migrate_block(&mut self, src: u64) -> bool {
        let b = self.frames[src as usize];
        let order = order_of(b);
        let n = 1u64 << order;
        let Some(dst) = self.buddy.alloc(order) else {
            return false;
        };
        self.frames[dst as usize..(dst + n) as usize].fill(b);
        self.frames[src as usize..(src + n) as usize].fill(frame_byte(kind::FREE, 0));
        self.pb_add(dst, n, true, false);
        self.pb_add(src, n, false, false);
        if kind_of(b) == kind::OWNED {
            let owner = self
                .owners
                .remove(&(src as u32))
                .expect("an owned block has an owner record");
            self.owners.insert(dst as u32, owner);
            self.relocations.push(Relocation {
                owner,
                from: Pfn(src),
                to: Pfn(dst),
                order,
            });
            self.work.relocations += 1;
        }
        self.work.pages_migrated += n;
        self.work.frames_scanned += n;
        self.work.compaction_cycles +=
            n * (self.compaction.migrate_cycles_per_page + self.compaction.scan_cycles_per_frame);
        true
    }

    /// Move up to `max_pages` pages of movable blocks out of `[start, start + n)` (whose free
    /// frames are isolated). Returns (pages moved, whether every movable block was moved).
    fn evacuate(&mut self, start: u64, n: u64, max_pages: u64) -> (u64, bool) {
        let mut moved = 0;
        let mut f = start;
        while f < start + n {
            let b = self.frames[f as usize];
            let step = 1u64 << order_of(b);
            if kind_of(b) != kind::FREE {
                debug_assert!(kind::movable(kind_of(b)), "unmovable frame in a candidate");
                if moved + step > max_pages || !self.migrate_block(f) {
                    return (moved, false);
                }
                moved += step;
            }
            f += step;
        }
        (moved, true)
    }

    fn charge_scan(&mut self, frames: u64) {
        self.work.frames_scanned += frames;
        self.work.compaction_cycles += frames * self.compaction.scan_cycles_per_frame;
    }

    /// Direct compaction for a failed allocation of `order`: the start of the emptied block
    /// (allocated in the buddy allocator, its frames marked free for the caller to mark), or
    /// why none could be made.
    pub(super) fn compact_direct(&mut self, order: u8) -> Result<u64, String> {
        self.work.direct_attempts += 1;
        let n = 1u64 << order;
        let Some((start, used)) = self.find_candidate(order) else {
            self.work.direct_failures += 1;
            return Err(format!(
                "every aligned {} block holds an unmovable frame (kernel, page-table or \
                 unowned data) or part of a larger page",
                format_bytes(n * BASE_PAGE_BYTES)
            ));
        };
        self.charge_scan(n);
        let free_outside = self.buddy.free_pages() - (n - used);
        if free_outside < used {
            self.work.direct_failures += 1;
            return Err(format!(
                "the best candidate block holds {} of movable pages but only {} is free \
                 outside it",
                format_bytes(used * BASE_PAGE_BYTES),
                format_bytes(free_outside * BASE_PAGE_BYTES)
            ));
        }
        self.isolate_free(start, n);
        let (_, complete) = self.evacuate(start, n, u64::MAX);
        if !complete {
            self.release_isolated(start, n);
            self.work.direct_failures += 1;
            return Err(
                "a movable block of the candidate found no free block to move to".to_string(),
            );
        }
        self.work.direct_successes += 1;
        Ok(start)
    }

    /// Background compaction (kcompactd): work toward a free block of `order`, migrating at
    /// most `max_pages` 4 KiB pages; returns the OS cycles spent. Does nothing when a block of
    /// `order` is already free. Successive calls continue on the same candidate (it stays the
    /// one with the fewest used frames), so a budget smaller than the candidate's movable pages
    /// still makes progress.
    pub fn compact_background(&mut self, order: u8, max_pages: u64) -> u64 {
        if order == 0 || self.buddy.can_alloc(order) {
            return 0;
        }
        let before = self.work.compaction_cycles;
        self.work.background_runs += 1;
        let n = 1u64 << order;
        let Some((start, _)) = self.find_candidate(order) else {
            self.work.background_failures += 1;
            return 0;
        };
        self.charge_scan(n);
        self.isolate_free(start, n);
        self.evacuate(start, n, max_pages);
        self.release_isolated(start, n);
        self.work.compaction_cycles - before
    }
}

impl PhysMem {
    /// Write `filler_bytes` and the `compaction` sub-section into the `os` stats section.
    pub fn compaction_stats_into(&self, os: &mut Stats) {
        os.put_u64("filler_bytes", self.filler_bytes());
        let w = &self.work;
        let c = os.section("compaction");
        c.put_u64("direct_attempts", w.direct_attempts);
        c.put_u64("direct_successes", w.direct_successes);
        c.put_u64("direct_failures", w.direct_failures);
        c.put_u64("background_runs", w.background_runs);
        c.put_u64("background_failures", w.background_failures);
        c.put_u64("pages_migrated", w.pages_migrated);
        c.put_u64("frames_scanned", w.frames_scanned);
        c.put_u64("relocations", w.relocations);
        c.put_u64("cycles", w.compaction_cycles);
        c.put_u64("zero_cycles", w.zero_cycles);
        c.put_u64("alloc_work_cycles", self.alloc_work_cycles());
    }
}
