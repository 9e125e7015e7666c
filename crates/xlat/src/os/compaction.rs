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
//!
//! Layering: an `impl PhysMem` block above `phys.rs` (the only file of the model it names); its
//! settings and counters ([`CompactionConfig`], [`CompactionStats`]) are defined there, since
//! `PhysMem` holds them, and re-exported here.

use super::phys::{frame_byte, kind, kind_of, order_of, PhysMem, Relocation, PAGEBLOCK_ORDER};
// The settings and counters are the allocator's (`PhysMem` holds them); named here too.
pub use super::phys::{CompactionConfig, CompactionStats};
use crate::addr::{format_bytes, Pfn, BASE_PAGE_BYTES};
use crate::stats::{Stats, StatsExt};

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
                .remove(src)
                .expect("an owned block has an owner record");
            self.owners.insert(dst, owner);
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
    /// most `max_pages` 4 KiB pages; returns the OS cycles spent (counted in
    /// `background_cycles`, not in [`PhysMem::alloc_work_cycles`], so the caller charges them). Does nothing when a block of
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
        // Background work is the caller's to charge (the return value), not allocation work.
        let cycles = self.work.compaction_cycles - before;
        self.work.compaction_cycles = before;
        self.work.background_cycles += cycles;
        cycles
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
        c.put_u64("background_cycles", w.background_cycles);
        c.put_u64("zero_cycles", w.zero_cycles);
        c.put_u64("alloc_work_cycles", self.alloc_work_cycles());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Vpn;
    use crate::os::fragmenter::{FragmenterConfig, FragmenterMode};
    use crate::os::phys::DataOwner;
    use crate::os::FrameUse;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn owner(vpn: u64) -> DataOwner {
        DataOwner {
            asid: 1,
            vpn: Vpn(vpn),
        }
    }

    /// Memory whose every frame holds 4 KiB owned data, with every other frame freed: no free
    /// block above order 0.
    fn checkerboard(bytes: u64) -> (PhysMem, HashMap<u64, u64>) {
        let mut p = PhysMem::new(bytes);
        let mut map = HashMap::new();
        while let Ok(f) = p.alloc(0, FrameUse::Data) {
            p.set_owner(f, 0, owner(f.0 + 1000));
            map.insert(f.0 + 1000, f.0);
        }
        for f in (0..bytes / BASE_PAGE_BYTES).step_by(2) {
            p.free(Pfn(f), 0, FrameUse::Data);
            map.remove(&(f + 1000));
        }
        (p, map)
    }

    #[test]
    fn direct_compaction_moves_owned_data_out_of_the_cheapest_block_and_reports_it() {
        let (mut p, mut map) = checkerboard(16 << 20);
        assert!(!p.can_alloc(2));
        let before = p.alloc_work_cycles();
        let block = p.alloc(2, FrameUse::PageTable).unwrap();
        // A 16 KiB block held 2 data pages: both moved, each charged.
        let relocs = p.take_relocations();
        assert_eq!(relocs.len(), 2);
        let cfg = CompactionConfig::default();
        let c = p.compaction_stats();
        assert_eq!((c.direct_attempts, c.direct_successes), (1, 1));
        assert_eq!(c.pages_migrated, 2);
        // Scanned: the 4 candidate frames and the 2 destination frames.
        assert_eq!(c.frames_scanned, 6);
        assert_eq!(
            p.alloc_work_cycles() - before,
            2 * cfg.migrate_cycles_per_page
                + 6 * cfg.scan_cycles_per_frame
                + (cfg.zero_cycles_per_byte * 16384.0) as u64
        );
        for r in relocs {
            assert!(r.from.0 >= block.0 && r.from.0 < block.0 + 4, "{r:?}");
            assert_eq!(map.insert(r.owner.vpn.0, r.to.0), Some(r.from.0));
        }
        // Every owned page can still be freed where the map now says it is.
        for (_, f) in map {
            p.free(Pfn(f), 0, FrameUse::Data);
        }
        p.free(block, 2, FrameUse::PageTable);
        assert_eq!(p.free_bytes(), p.total_bytes());
    }

    #[test]
    fn compaction_fails_with_a_clear_error_when_unmovable_frames_block_every_candidate() {
        // Data with no owner is unmovable.
        let mut p = PhysMem::new(4 << 20);
        let all: Vec<Pfn> = std::iter::from_fn(|| p.alloc(0, FrameUse::Data).ok()).collect();
        for f in all.iter().step_by(2) {
            p.free(*f, 0, FrameUse::Data);
        }
        let err = p.alloc(1, FrameUse::PageTable).unwrap_err();
        assert!(
            err.0.contains("out of physical memory")
                && err.0.contains("direct compaction failed")
                && err.0.contains("unmovable"),
            "{err}"
        );
        assert_eq!(p.compaction_stats().direct_failures, 1);
        assert_eq!(p.take_relocations(), vec![]);
        // Switched off: the old error, no attempt.
        let mut q = PhysMem::new(4 << 20);
        q.set_compaction(&CompactionConfig {
            enabled: false,
            ..CompactionConfig::default()
        });
        let all: Vec<Pfn> = std::iter::from_fn(|| q.alloc(0, FrameUse::Data).ok()).collect();
        for f in all.iter().step_by(2) {
            q.free(*f, 0, FrameUse::Data);
        }
        let err = q.alloc(1, FrameUse::PageTable).unwrap_err();
        assert!(!err.0.contains("compaction"), "{err}");
        assert_eq!(q.compaction_stats().direct_attempts, 0);
    }

    #[test]
    fn background_compaction_works_within_its_budget_and_stops_once_a_block_is_free() {
        let (mut p, _) = checkerboard(16 << 20);
        // A 2 MiB block needs 256 pages moved; 100 per run.
        let mut runs = 0;
        while !p.can_alloc(9) {
            let cycles = p.compact_background(9, 100);
            assert!(cycles > 0);
            runs += 1;
            assert!(runs < 10, "no progress");
        }
        assert_eq!(runs, 3);
        assert_eq!(p.compaction_stats().pages_migrated, 256);
        // Relocated pages' old frames are free again.
        for r in p.take_relocations() {
            assert!(p.buddy.free_block_containing(r.from.0).is_some(), "{r:?}");
            assert!(p.buddy.free_block_containing(r.to.0).is_none(), "{r:?}");
        }
        assert_eq!(
            p.compact_background(9, 100),
            0,
            "a block is free: nothing to do"
        );
        let c = p.compaction_stats();
        assert_eq!(
            c.compaction_cycles, 0,
            "background work is not allocation work"
        );
        let cfg = CompactionConfig::default();
        assert_eq!(
            c.background_cycles,
            256 * cfg.migrate_cycles_per_page + c.frames_scanned * cfg.scan_cycles_per_frame
        );
    }

    #[test]
    fn splitting_a_huge_data_page_keeps_its_pieces_movable_with_their_own_owners() {
        let mut p = PhysMem::new(8 << 20);
        let huge = p.alloc(9, FrameUse::Data).unwrap();
        p.set_owner(huge, 9, owner(0x200));
        // Free one piece: the others keep owners at the matching virtual pages.
        p.free(Pfn(huge.0 + 3), 0, FrameUse::Data);
        assert_eq!(p.owners.get(huge.0 + 4), Some(owner(0x204)));
        assert_eq!(p.owners.get(huge.0), Some(owner(0x200)));
        assert_eq!(p.owners.len(), 511);
        // Re-recording a piece overwrites it; freeing everything forgets every owner.
        p.set_owner(Pfn(huge.0 + 4), 0, owner(0x999));
        assert_eq!(p.owners.get(huge.0 + 4), Some(owner(0x999)));
        for i in (0..512).filter(|i| *i != 3) {
            p.free(Pfn(huge.0 + i), 0, FrameUse::Data);
        }
        assert!(p.owners.is_empty());
        assert_eq!(p.free_bytes(), p.total_bytes());
        assert!(p.pb_used.iter().all(|u| *u == 0) && p.pb_unmovable.iter().all(|u| *u == 0));
    }

    #[test]
    fn the_fill_fragmenter_reaches_the_target_fmfi_and_free_share_deterministically() {
        let cfg = FragmenterConfig {
            mode: FragmenterMode::Fill,
            ..FragmenterConfig::default()
        };
        for target in [0.3, 0.7, 0.95] {
            let mut p = PhysMem::new(2 << 30);
            let reached = p.fragment_fill(target, 9, &cfg, 5).unwrap();
            assert!((reached - target).abs() <= 0.02, "{target} -> {reached}");
            let free = p.free_bytes() as f64 / p.total_bytes() as f64;
            assert!((free - cfg.free_share).abs() < 0.001, "{free}");
            // Used memory is filler plus kernel pages, nothing else.
            assert_eq!(
                p.filler_bytes() + p.pinned_bytes() + p.free_bytes(),
                p.total_bytes()
            );
            let kernel_pages = p.pinned_bytes() / BASE_PAGE_BYTES;
            let pbs = (2u64 << 30) >> 21;
            let kernel_pbs = (cfg.kernel_share * pbs as f64).round() as u64;
            let polluted = (cfg.polluted_share * (pbs - kernel_pbs) as f64).round() as u64;
            assert_eq!(kernel_pages, kernel_pbs * 512 + polluted);
            let mut q = PhysMem::new(2 << 30);
            q.fragment_fill(target, 9, &cfg, 5).unwrap();
            assert_eq!(p.free_blocks(), q.free_blocks(), "same seed, same state");
        }
        let too_much = FragmenterConfig {
            free_share: 0.99,
            kernel_share: 0.01,
            polluted_share: 1.0,
            ..cfg
        };
        let err = PhysMem::new(64 << 20)
            .fragment_fill(0.7, 9, &too_much, 1)
            .unwrap_err();
        assert!(err.0.contains("cannot fill memory"), "{err}");
    }

    #[test]
    fn the_alternating_fragmenter_frees_512k_chunks_below_target_and_32m_chunks_above_it() {
        let cfg = FragmenterConfig {
            mode: FragmenterMode::Alternating,
            ..FragmenterConfig::default()
        };
        for target in [0.5, 0.99] {
            let mut p = PhysMem::new(8 << 30);
            let reached = p.fragment_alternating(target, 9, &cfg).unwrap();
            assert!((reached - target).abs() <= 0.02, "{target} -> {reached}");
            let free = p.free_bytes() as f64 / p.total_bytes() as f64;
            assert!((free - cfg.free_share).abs() < 0.001, "{free}");
            assert_eq!(p.filler_bytes() + p.free_bytes(), p.total_bytes());
            // Free memory is 512 KiB blocks (their neighbours held) and 32 MiB-sized runs only
            // (plus the one chunk cut short at the free share).
            let blocks = p.free_blocks();
            let small_bytes = blocks[7] << 19;
            let large_bytes: u64 = (9..crate::os::buddy::ORDERS)
                .map(|k| blocks[k] << (k + 12))
                .sum();
            let rest: u64 = (0..7).chain(8..9).map(|k| blocks[k] << (k + 12)).sum();
            assert!(rest <= 32 << 20, "{blocks:?}");
            assert!(small_bytes > 0 && large_bytes > 0, "{blocks:?}");
            let usable = large_bytes as f64 / p.free_bytes() as f64;
            assert!((1.0 - usable - reached).abs() < 0.02);
            let mut q = PhysMem::new(8 << 30);
            q.fragment_alternating(target, 9, &cfg).unwrap();
            assert_eq!(p.free_blocks(), q.free_blocks(), "deterministic");
        }
        let err = PhysMem::new(256 << 20)
            .fragment_alternating(0.99, 9, &cfg)
            .unwrap_err();
        assert!(err.0.contains("cannot fragment memory"), "{err}");
    }

    #[test]
    fn fill_fragmented_memory_at_fmfi_0_7_reproduces_me_hpt_allocation_costs_within_2x() {
        // ME-HPT §III: (bytes, cycles) to allocate and zero a chunk at FMFI 0.7 on a 64 GB
        // server. The model: 64 GiB, default fill mix and costs; mean of 8 allocations.
        let paper = [
            (4u64 << 10, 4.0e3),
            (8 << 10, 5.0e3),
            (1 << 20, 7.5e5),
            (8 << 20, 1.3e7),
            (64 << 20, 1.2e8),
        ];
        let cfg = FragmenterConfig {
            mode: FragmenterMode::Fill,
            ..FragmenterConfig::default()
        };
        let mut base = PhysMem::new(64 << 30);
        base.fragment_fill(0.7, 9, &cfg, 1).unwrap();
        for (bytes, cycles) in paper {
            let order = (bytes / BASE_PAGE_BYTES).trailing_zeros() as u8;
            let mut p = base.clone();
            let before = p.alloc_work_cycles();
            for _ in 0..8 {
                p.alloc(order, FrameUse::PageTable).unwrap();
            }
            let mean = (p.alloc_work_cycles() - before) as f64 / 8.0;
            assert!(
                mean >= cycles / 2.0 && mean <= cycles * 2.0,
                "{bytes} bytes: {mean} cycles vs the paper's {cycles}"
            );
        }
    }

    /// A reference model of the frames handed out, rebuilt from what PhysMem reports.
    #[derive(Default)]
    struct Shadow {
        /// (first frame, order, use, owner vpn) of each live block.
        live: Vec<(u64, u8, FrameUse, Option<u64>)>,
    }

    impl Shadow {
        fn used(&self, total: u64) -> Vec<bool> {
            let mut used = vec![false; total as usize];
            for (pfn, order, _, _) in &self.live {
                for f in *pfn..pfn + (1 << order) {
                    assert!(!used[f as usize], "frame {f} handed out twice");
                    used[f as usize] = true;
                }
            }
            used
        }
    }

    proptest! {
        /// Random allocations (owned data, unowned data, page tables), frees (whole or halves)
        /// and background compactions: no frame is handed out twice or leaked, every
        /// relocation's `to` block was free before and `from` is no longer the owner's after,
        /// and the FMFI reported equals its definition over the frames in use.
        #[test]
        fn frames_are_conserved_and_relocations_are_sound_under_compaction(
            ops in prop::collection::vec((0u8..8, 0u8..6, any::<u32>()), 1..400)
        ) {
            // 1 MiB: small enough that random allocations fill and fragment it.
            let total = 1u64 << 8;
            let mut p = PhysMem::new(total * BASE_PAGE_BYTES);
            let mut s = Shadow::default();
            let mut next_vpn = 0u64;
            for (op, order, pick) in ops {
                let used_before = s.used(total);
                match op {
                    0..=3 => {
                        let order = if pick % 3 == 0 { order } else { 0 };
                        let use_ = if op == 3 { FrameUse::PageTable } else { FrameUse::Data };
                        if let Ok(f) = p.alloc(order, use_) {
                            let vpn = (op <= 1).then(|| {
                                next_vpn += 1 << 9;
                                p.set_owner(f, order, owner(next_vpn));
                                next_vpn
                            });
                            s.live.push((f.0, order, use_, vpn));
                        }
                    }
                    4 | 5 if !s.live.is_empty() => {
                        let i = pick as usize % s.live.len();
                        let (pfn, o, use_, vpn) = s.live.swap_remove(i);
                        if op == 5 && o > 0 {
                            // Free the lower half; the upper half stays live. PhysMem splits an
                            // owned block's record into 4 KiB pieces owned at the matching vpn
                            // (each then moves on its own), as the OS model's split does.
                            let half = 1u64 << (o - 1);
                            p.free(Pfn(pfn), o - 1, use_);
                            match vpn {
                                Some(v) => s.live.extend(
                                    (half..2 * half).map(|i| (pfn + i, 0, use_, Some(v + i))),
                                ),
                                None => s.live.push((pfn + half, o - 1, use_, None)),
                            }
                        } else {
                            p.free(Pfn(pfn), o, use_);
                        }
                    }
                    _ => {
                        p.compact_background(order.max(1), 1 + pick as u64 % 64);
                    }
                }
                for r in p.take_relocations() {
                    let n = 1u64 << r.order;
                    for f in r.to.0..r.to.0 + n {
                        prop_assert!(!used_before[f as usize], "{:?}: to was not free", r);
                    }
                    let entry = s
                        .live
                        .iter_mut()
                        .find(|e| e.3 == Some(r.owner.vpn.0))
                        .expect("the relocated owner is live");
                    prop_assert_eq!((entry.0, entry.1), (r.from.0, r.order));
                    entry.0 = r.to.0;
                }
                // Relocated `from` frames now belong to no block but possibly the one
                // allocated by this op (direct compaction); `used` panics on any overlap.
                let used = s.used(total);
                let in_use = used.iter().filter(|u| **u).count() as u64;
                let pinned = p.pinned_bytes() / BASE_PAGE_BYTES;
                prop_assert_eq!(p.free_bytes() / BASE_PAGE_BYTES + in_use + pinned, total);
                for f in 0..total {
                    prop_assert_eq!(
                        p.buddy.free_block_containing(f).is_some(),
                        !used[f as usize],
                        "frame {} free in the allocator iff no block holds it", f
                    );
                }
                let data: u64 = s.live.iter().filter(|e| e.2 == FrameUse::Data)
                    .map(|e| BASE_PAGE_BYTES << e.1).sum();
                prop_assert_eq!(p.bytes_in_use(FrameUse::Data), data);
                // FMFI(k) = 1 - (free frames in wholly free aligned 2^k blocks) / free frames.
                for k in [1u8, 4, 9] {
                    let n = 1usize << k;
                    let free = used.iter().filter(|u| !**u).count();
                    let usable: usize = used
                        .chunks(n)
                        .filter(|c| c.len() == n && c.iter().all(|u| !*u))
                        .map(|c| c.len())
                        .sum();
                    let want = if free == 0 { 0.0 } else { 1.0 - usable as f64 / free as f64 };
                    prop_assert_eq!(p.fmfi(k), want);
                }
            }
        }
    }
}
