//! The OS operations Elastic Translations' **CoalaKhugepaged** uses (the daemon itself, its
//! hint queue and its pacing live in `designs/et/khugepaged.rs`): a 2 MiB collapse of one
//! hinted range, and the 32 MiB promotion by copy.
//!
//! Both work only through the OS model's own state (page map, VMAs, buddy allocator), so the
//! mappings they change reach the design and the TLBs as [`MapChange`]s like any OS change, and
//! the oracle checks every translation afterwards.
//!
//! References: `elastic-translations-facts.md`, "CoalaKhugepaged (asynchronous promotion)".

use super::{FrameUse, MapChange, Os, BASE_PAGE_BYTES};
use crate::addr::{Asid, Mapping, PageSize, Pfn, Vpn};

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
    /// or the range enclosing a 64 KiB hint): Linux's collapse ([`Os::try_collapse`]: in place
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
