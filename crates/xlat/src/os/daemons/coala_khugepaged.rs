//! Elastic Translations' **CoalaKhugepaged** (`[et.khugepaged]`): the asynchronous promotion
//! daemon and the OS operations it uses. It works through the ranges the design hints (ET's
//! Leshy hints, hottest first; `designs/et/khugepaged.rs` converts them to [`PromotionHint`]s):
//! a 32 MiB range is promoted by copy into a fresh 32 MiB block (16 x 2 MiB pages the
//! contiguous-bit management marks as one translation; compaction when the allocator needs
//! it), falling back to 2 MiB collapses of its 16 ranges when no block is found or the range
//! cannot be promoted whole; a 2 MiB range is an ordinary collapse; a 64 KiB hint has no
//! dedicated path, so the enclosing 2 MiB range's collapse is attempted
//! (`elastic-translations-facts.md`, "CoalaKhugepaged").
//!
//! Pacing as in the evaluation: one wake-up every `sleep_cycles` (1000 ms scan and allocation
//! sleep), each doing at most `pages_to_scan` (8192 = 32 MiB) pages of promotions, progress
//! counted in pages actually collapsed. The hint list is walked as a ring: a wake-up resumes
//! after the last hint it handled and stops after one lap, so hints already promoted cost
//! nothing (no progress) and ranges faulted in after their hint was handled are promoted on a
//! later lap.
//!
//! Layering: the daemon is the design's (its settings are the `[et.khugepaged]` section, its
//! counters the `et` stats section, the design runs it from `Design::os_work`), but everything
//! it does is OS work, so it lives here and names no design type: the design hands it ranges.
//! The OS operations ([`Os::coala_collapse_2m`], [`Os::coala_promote_32m`]) work only through
//! the OS model's own state (page map, VMAs, buddy allocator), so the mappings they change
//! reach the design and the TLBs as [`MapChange`]s like any OS change, and the oracle checks
//! every translation afterwards.
//!
//! Calls: khugepaged's collapse (`daemons/khugepaged.rs`), the promotion and copy primitives
//! (`migrate.rs`), the fault path's install, the allocator.

use crate::addr::{Asid, Mapping, PageSize, Pfn, Vpn, BASE_PAGE_BYTES};
use crate::os::{FrameUse, MapChange, Os};
use crate::stats::{Stats, StatsExt};
use serde::{Deserialize, Serialize};

/// A range CoalaKhugepaged is asked to promote (a design's hint, converted by the design).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PromotionHint {
    /// Address space.
    pub asid: Asid,
    /// First 4 KiB page of the hinted range (aligned to its size).
    pub vpn: u64,
    /// A 32 MiB range (promoted whole); otherwise a 2 MiB or 64 KiB range, whose enclosing
    /// 2 MiB range is collapsed.
    pub is_32m: bool,
}

/// `[et.khugepaged]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CoalaKhugepagedConfig {
    /// Run the daemon (it needs hints: `et.leshy.mode = "online"`, or `"offline"` with a
    /// hint file).
    pub enabled: bool,
    /// Simulated core cycles between wake-ups: the evaluation's 1000 ms scan and allocation
    /// sleep at Neoverse N1's 2.7 GHz (2.7 G cycles). Short simulated runs never reach it:
    /// scale it to the run (docs/designs/et.md).
    pub sleep_cycles: u64,
    /// Pages (4 KiB) promoted per wake-up at most, counted in pages actually collapsed
    /// (the evaluation's 8192 = 32 MiB).
    pub pages_to_scan: u64,
}

impl Default for CoalaKhugepagedConfig {
    fn default() -> Self {
        CoalaKhugepagedConfig {
            enabled: false,
            sleep_cycles: 2_700_000_000,
            pages_to_scan: 8192,
        }
    }
}

impl CoalaKhugepagedConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        if self.sleep_cycles == 0 {
            return Err("et.khugepaged.sleep_cycles must be > 0".into());
        }
        if self.pages_to_scan == 0 {
            return Err("et.khugepaged.pages_to_scan must be > 0".into());
        }
        Ok(())
    }
}

/// The daemon's counters (`et.khugepaged.*`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Wake-ups.
    pub wakeups: u64,
    /// Hints looked at.
    pub hints_handled: u64,
    /// 2 MiB collapses done (2 MiB and 64 KiB hints, and 32 MiB fallbacks).
    pub promotions_2m: u64,
    /// 32 MiB promotions done (always by copy).
    pub promotions_32m: u64,
    /// Promotions that copied data (every 32 MiB one; a 2 MiB collapse into a new block).
    pub copies: u64,
    /// Bytes copied by them.
    pub bytes_copied: u64,
    /// 32 MiB hints that fell back to 2 MiB collapses (no block, or not promotable whole).
    pub fallbacks_32m: u64,
    /// Attempts that found no free block.
    pub no_block: u64,
}

/// CoalaKhugepaged's state.
#[derive(Clone, Debug)]
pub struct CoalaKhugepaged {
    cfg: CoalaKhugepagedConfig,
    hints: Vec<PromotionHint>,
    cursor: usize,
    next_wake: u64,
    /// Counters.
    pub c: Counters,
}

impl CoalaKhugepaged {
    /// A daemon with no hints; the first wake-up is `sleep_cycles` in.
    pub fn new(cfg: &CoalaKhugepagedConfig) -> CoalaKhugepaged {
        CoalaKhugepaged {
            cfg: cfg.clone(),
            hints: Vec::new(),
            cursor: 0,
            next_wake: cfg.sleep_cycles,
            c: Counters::default(),
        }
    }

    /// Replace the hint list (hottest first); the next wake-up starts at the hottest.
    pub fn set_hints<H: Into<PromotionHint>>(&mut self, hints: Vec<H>) {
        self.hints = hints.into_iter().map(Into::into).collect();
        self.cursor = 0;
    }

    /// Run the wake-ups due by `now_cycles`.
    pub fn tick(&mut self, os: &mut Os, now_cycles: u64, changes: &mut Vec<MapChange>) {
        while now_cycles >= self.next_wake {
            self.next_wake += self.cfg.sleep_cycles;
            self.wake(os, changes);
        }
    }

    /// One wake-up: promote hinted ranges, hottest first, until `pages_to_scan` pages were
    /// collapsed, an allocation failed (the allocation sleep), or every hint was looked at.
    pub fn wake(&mut self, os: &mut Os, changes: &mut Vec<MapChange>) {
        self.c.wakeups += 1;
        let mut progress = 0;
        let n = self.hints.len();
        for _ in 0..n {
            if progress >= self.cfg.pages_to_scan {
                break;
            }
            let h = self.hints[self.cursor % n];
            self.cursor = (self.cursor + 1) % n;
            self.c.hints_handled += 1;
            let (pages, failed) = if h.is_32m {
                self.promote_32m(os, h.asid, Vpn(h.vpn), changes)
            } else {
                // 2 MiB hint, or the 2 MiB range enclosing a 64 KiB hint.
                self.collapse_2m(os, h.asid, Vpn(h.vpn & !511), changes)
            };
            progress += pages;
            if failed {
                break;
            }
        }
    }

    /// A 2 MiB collapse; returns (pages collapsed, allocation failed).
    fn collapse_2m(
        &mut self,
        os: &mut Os,
        asid: Asid,
        first: Vpn,
        changes: &mut Vec<MapChange>,
    ) -> (u64, bool) {
        match os.coala_collapse_2m(asid, first, changes) {
            PromoteOutcome::Done { bytes_copied } => {
                self.c.promotions_2m += 1;
                if bytes_copied > 0 {
                    self.c.copies += 1;
                    self.c.bytes_copied += bytes_copied;
                }
                (512, false)
            }
            PromoteOutcome::NoBlock => {
                self.c.no_block += 1;
                (0, true)
            }
            PromoteOutcome::AlreadyDone | PromoteOutcome::NotEligible => (0, false),
        }
    }

    /// A 32 MiB promotion by copy, else 2 MiB collapses of its 16 ranges; returns (pages
    /// collapsed, allocation failed).
    fn promote_32m(
        &mut self,
        os: &mut Os,
        asid: Asid,
        first: Vpn,
        changes: &mut Vec<MapChange>,
    ) -> (u64, bool) {
        match os.coala_promote_32m(asid, first, changes) {
            PromoteOutcome::Done { bytes_copied } => {
                self.c.promotions_32m += 1;
                self.c.copies += 1;
                self.c.bytes_copied += bytes_copied;
                (8192, false)
            }
            PromoteOutcome::AlreadyDone => (0, false),
            outcome => {
                if outcome == PromoteOutcome::NoBlock {
                    self.c.no_block += 1;
                }
                self.c.fallbacks_32m += 1;
                let mut pages = 0;
                for i in 0..16 {
                    let (p, failed) = self.collapse_2m(os, asid, Vpn(first.0 + i * 512), changes);
                    pages += p;
                    if failed {
                        return (pages, true);
                    }
                }
                (pages, false)
            }
        }
    }

    /// Write the `khugepaged` section of `s` (the `et` section).
    pub fn stats(&self, s: &mut Stats) {
        let k = s.section("khugepaged");
        let c = &self.c;
        k.put_u64("wakeups", c.wakeups);
        k.put_u64("hints_handled", c.hints_handled);
        k.put_u64("promotions_2m", c.promotions_2m);
        k.put_u64("promotions_32m", c.promotions_32m);
        k.put_u64("copies", c.copies);
        k.put_u64("bytes_copied", c.bytes_copied);
        k.put_u64("fallbacks_32m", c.fallbacks_32m);
        k.put_u64("no_block", c.no_block);
    }
}

/// What one promotion attempt did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromoteOutcome {
    /// The range now holds the promoted pages; `bytes_copied` of mapped data were copied.
    Done {
        /// Bytes of the old pages copied into the new block.
        bytes_copied: u64,
    },
    /// Already mapped as the promoted pages would be (nothing to do).
    AlreadyDone,
    /// The range cannot be promoted now: not inside one VMA, nothing mapped, mixed
    /// permissions, a larger page inside, or a reservation over it.
    NotEligible,
    /// No free block of the size was found (after compaction, when it is on).
    NoBlock,
}

impl Os {
    /// The pages of `asid` in `[first, first + pages)` if that range lies in one VMA, holds at
    /// least one mapped page, no page larger than `largest`, one permission, and no
    /// reservation; `None` otherwise.
    fn promotable(
        &self,
        asid: Asid,
        first: Vpn,
        pages: u64,
        largest: PageSize,
    ) -> Option<Vec<Mapping>> {
        let p = self.procs.get(asid as usize)?;
        let start = first.0.checked_mul(BASE_PAGE_BYTES)?;
        let end = start.checked_add(pages * BASE_PAGE_BYTES)?;
        let vma = p.vmas.find(start)?;
        if vma.end < end {
            return None;
        }
        let old = p.pages.in_range(first, Vpn(first.0 + pages));
        if old.is_empty() || old.iter().any(|m| m.size > largest) {
            return None;
        }
        // A page straddling the range's ends (not possible for aligned ranges and pages of at
        // most `largest`, kept as a guard).
        if old
            .iter()
            .any(|m| m.vpn < first || m.vpn.0 + m.size.base_pages() > first.0 + pages)
        {
            return None;
        }
        let writable = old[0].writable;
        if old.iter().any(|m| m.writable != writable) || p.reservations.overlaps(first, pages) {
            return None;
        }
        Some(old)
    }

    /// CoalaKhugepaged's 2 MiB collapse of the aligned 2 MiB range at `first` (a 2 MiB hint,
    /// or the range enclosing a 64 KiB hint): Linux's collapse (`Os::try_collapse`: in place
    /// when the frames already form the block, else into a new block by copy, within
    /// `os.khugepaged.max_ptes_none`), for a range inside one VMA. Returns the outcome.
    pub fn coala_collapse_2m(
        &mut self,
        asid: Asid,
        first: Vpn,
        changes: &mut Vec<MapChange>,
    ) -> PromoteOutcome {
        debug_assert!(first.0.is_multiple_of(512));
        let Some(p) = self.procs.get(asid as usize) else {
            return PromoteOutcome::NotEligible;
        };
        if p.pages
            .get(first)
            .is_some_and(|m| m.size >= PageSize::Size2M)
        {
            return PromoteOutcome::AlreadyDone;
        }
        if self
            .promotable(asid, first, 512, PageSize::Size4K)
            .is_none()
        {
            return PromoteOutcome::NotEligible;
        }
        let (collapses, no_block, copied) = (
            self.c.collapses,
            self.c.collapse_no_block,
            self.c.bytes_copied,
        );
        self.try_collapse(asid, first, changes);
        if self.c.collapses > collapses {
            PromoteOutcome::Done {
                bytes_copied: self.c.bytes_copied - copied,
            }
        } else if self.c.collapse_no_block > no_block {
            PromoteOutcome::NoBlock
        } else {
            PromoteOutcome::NotEligible
        }
    }

    /// CoalaKhugepaged's 32 MiB promotion of the aligned 32 MiB range at `first`: always by
    /// copy, as the artifact does. Allocate a fresh 32 MiB block (the buddy allocator compacts
    /// when `os.compaction` is on and no block is free), copy every mapped page (4 KiB or
    /// 2 MiB) to its offset in it, free the old frames, and install 16 x 2 MiB pages over the
    /// block — physically contiguous and aligned, so the design marks them one 32 MiB
    /// translation when the 16th is written. Holes in the range are mapped too (zero-filled,
    /// as khugepaged fills the `max_ptes_none` holes of a collapse). The range must lie in one
    /// VMA with one permission; the OS must translate 2 MiB pages.
    pub fn coala_promote_32m(
        &mut self,
        asid: Asid,
        first: Vpn,
        changes: &mut Vec<MapChange>,
    ) -> PromoteOutcome {
        const PIECES: u64 = 16;
        let piece = PageSize::Size2M;
        let pages = PIECES * piece.base_pages();
        debug_assert!(first.0.is_multiple_of(pages));
        if !self.sizes.contains(piece) {
            return PromoteOutcome::NotEligible;
        }
        let Some(old) = self.promotable(asid, first, pages, piece) else {
            return PromoteOutcome::NotEligible;
        };
        // Already 16 x 2 MiB over one aligned contiguous block: the group exists.
        let base = old[0].pfn.0.wrapping_sub(old[0].vpn.0 - first.0);
        if old.len() as u64 == PIECES
            && base.is_multiple_of(pages)
            && old
                .iter()
                .all(|m| m.size == piece && m.pfn.0 == base.wrapping_add(m.vpn.0 - first.0))
        {
            return PromoteOutcome::AlreadyDone;
        }
        let order = (pages.trailing_zeros()) as u8;
        let Ok(block) = self.phys.alloc(order, FrameUse::Data) else {
            self.apply_relocations(changes).ok();
            return PromoteOutcome::NoBlock;
        };
        // Compaction may have moved pages, possibly of this range: re-read them.
        let old = if self.phys_relocated(changes) {
            match self.promotable(asid, first, pages, piece) {
                Some(old) => old,
                None => {
                    self.phys.free(block, order, FrameUse::Data);
                    return PromoteOutcome::NotEligible;
                }
            }
        } else {
            old
        };
        let writable = old[0].writable;
        let copied_pages = old.iter().map(|m| m.size.base_pages()).sum();
        self.unmap_for_promotion(asid, &old, false, changes);
        let bytes_copied = self.count_copy(copied_pages);
        for i in 0..PIECES {
            let off = i * piece.base_pages();
            self.install(
                asid,
                Mapping {
                    vpn: Vpn(first.0 + off),
                    pfn: Pfn(block.0 + off),
                    size: piece,
                    writable,
                },
                changes,
            );
        }
        PromoteOutcome::Done { bytes_copied }
    }
}
