//! Moving and splitting mapped pages (Linux `mm/migrate.c`, `huge_memory.c`'s split): the
//! re-mapping of the data blocks compaction relocated, the migrations and fresh-page moves a
//! design asks for, splitting a page into smaller pages of the same frames, and the costs of
//! copies and TLB shootdowns (`os.migration.*`).
//!
//! Contract: every move unmaps the old translation and maps the new one (reported in that
//! order, one shootdown per translation) and records the old frames as moved, so the engine
//! drops their lines from the data caches; a moved page leaves its reservation; a relocation
//! that does not match the page map is an error naming a simulator bug.
//!
//! Calls: `fault.rs` (install), `policies/reservation.rs` (break reservations), the HugeTLB
//! pool (release frames).

use super::{FrameUse, MapChange, Os, OsError};
use crate::addr::{Asid, Mapping, PageSize, Pfn, Vpn, BASE_PAGE_BYTES};

impl Os {
    /// Re-map the pages that compaction moved since the last call (each relocation becomes
    /// Unmap + Map changes, a shootdown per translation and a cache invalidation of the old
    /// frames; the copy itself was charged by compaction). Called by the engine after every
    /// batch of changes (a design's page-table allocation may compact) and by the OS model at
    /// the end of its own operations. Returns whether anything moved.
    pub fn apply_relocations(&mut self, changes: &mut Vec<MapChange>) -> Result<bool, OsError> {
        let relocations = self.phys.take_relocations();
        for r in &relocations {
            let (asid, first) = (r.owner.asid, r.owner.vpn);
            let pages = 1u64 << r.order;
            let Some(p) = self.procs.get(asid as usize) else {
                return Err(OsError(format!(
                    "relocation of {r:?}: no such process (simulator bug)"
                )));
            };
            let old = p.pages.in_range(first, Vpn(first.0 + pages));
            let consistent = !old.is_empty()
                && old.iter().all(|m| {
                    m.vpn >= first
                        && m.vpn.0 + m.size.base_pages() <= first.0 + pages
                        && m.pfn.0 == r.from.0 + (m.vpn.0 - first.0)
                });
            if !consistent {
                return Err(OsError(format!(
                    "relocation of {r:?} does not match the page map {old:?} (simulator bug)"
                )));
            }
            // The frames leave their reservation's block.
            self.break_reservations(asid, first, pages);
            for m in old {
                self.procs[asid as usize].pages.remove(m);
                changes.push(MapChange::Unmap(asid, m));
                let nm = Mapping {
                    pfn: Pfn(r.to.0 + (m.vpn.0 - first.0)),
                    ..m
                };
                self.install(asid, nm, changes);
                self.count_shootdowns(1);
            }
            self.moved_frames.push((r.from, r.order));
            self.c.migrations += 1;
            self.c.bytes_copied += pages * BASE_PAGE_BYTES;
        }
        Ok(!relocations.is_empty())
    }

    /// Apply pending relocations; whether there were any (a failure to apply one is a
    /// simulator bug, kept for `apply_relocations`' callers to report).
    pub(super) fn phys_relocated(&mut self, changes: &mut Vec<MapChange>) -> bool {
        self.apply_relocations(changes).unwrap_or(true)
    }

    pub(super) fn count_shootdowns(&mut self, n: u64) {
        self.c.shootdowns += n;
        self.c.migration_cycles += n * self.cfg.migration.shootdown_cycles;
    }

    /// Count the copy of `pages` base pages to new frames (a collapse or promotion by copy, a
    /// migration): bytes copied and copy cycles. Returns the bytes.
    pub(super) fn count_copy(&mut self, pages: u64) -> u64 {
        let bytes = pages * BASE_PAGE_BYTES;
        self.c.bytes_copied += bytes;
        self.c.migration_cycles += pages * self.cfg.migration.copy_cycles_per_4k;
        bytes
    }

    /// Frames whose contents were copied away since the last call (first frame, order): the
    /// engine drops their lines from the data caches.
    pub fn take_moved_frames(&mut self) -> Vec<(Pfn, u8)> {
        std::mem::take(&mut self.moved_frames)
    }

    /// Move the page `m` of `asid` to the block at `to` (allocated by the caller for
    /// [`FrameUse::Data`]); the old frames are freed, their contents counted as copied.
    pub fn migrate(
        &mut self,
        asid: Asid,
        m: Mapping,
        to: Pfn,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        let nm = self.relocate("migrate", asid, m, to, changes)?;
        self.moved_frames.push((m.pfn, m.size.order()));
        self.c.migrations += 1;
        self.count_copy(m.size.base_pages());
        Ok(nm)
    }

    /// Move the page `m` of `asid`, installed by the fault being handled and not accessed
    /// yet (zero-filled, so nothing is copied), to the block at `to` (allocated by the caller
    /// for [`FrameUse::Data`]); the old frames are freed. Counted as a shootdown, not as a
    /// migration: a placement decided right after the fault (Utopia's eviction on a full
    /// set, whose new page the paper allocates in the slot directly).
    pub fn move_fresh_page(
        &mut self,
        asid: Asid,
        m: Mapping,
        to: Pfn,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        self.relocate("move_fresh_page", asid, m, to, changes)
    }

    /// What every move of a mapped page does: unmap it (leaving its reservation, as
    /// docs/os-model.md says), free its frames, shoot it down, map it at `to`. `what` names
    /// the caller in the error for a page that is not mapped.
    pub(super) fn relocate(
        &mut self,
        what: &str,
        asid: Asid,
        m: Mapping,
        to: Pfn,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        let p = &mut self.procs[asid as usize];
        if p.pages.get(m.vpn) != Some(m) {
            return Err(OsError(format!(
                "{what}: {m:?} is not mapped in ASID {asid}"
            )));
        }
        p.pages.remove(m);
        changes.push(MapChange::Unmap(asid, m));
        self.break_reservations(asid, m.vpn, m.size.base_pages());
        self.hugetlb.release(&mut self.phys, m.pfn, m.size.order());
        self.count_shootdowns(1);
        let nm = Mapping { pfn: to, ..m };
        self.install(asid, nm, changes);
        Ok(nm)
    }

    /// Split the page `m` of `asid` into pages of `into` over the same frames (no copy).
    pub fn split(
        &mut self,
        asid: Asid,
        m: Mapping,
        into: PageSize,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        let p = &mut self.procs[asid as usize];
        if p.pages.get(m.vpn) != Some(m) || into >= m.size || !self.sizes.contains(into) {
            return Err(OsError(format!(
                "split: cannot split {m:?} of ASID {asid} into {into} pages"
            )));
        }
        p.pages.remove(m);
        changes.push(MapChange::Unmap(asid, m));
        self.c.splits += 1;
        self.count_shootdowns(1);
        for i in 0..m.size.base_pages() / into.base_pages() {
            let off = i * into.base_pages();
            let piece = Mapping {
                vpn: Vpn(m.vpn.0 + off),
                pfn: Pfn(m.pfn.0 + off),
                size: into,
                writable: m.writable,
            };
            self.install(asid, piece, changes);
        }
        Ok(())
    }

    /// Unmap the pages `old` of `asid` that a promotion replaces, with one shootdown each. With
    /// `in_place` their frames become part of the new page; otherwise they are freed and
    /// recorded as moved (the caller counts the copy).
    pub(super) fn unmap_for_promotion(
        &mut self,
        asid: Asid,
        old: &[Mapping],
        in_place: bool,
        changes: &mut Vec<MapChange>,
    ) {
        let p = &mut self.procs[asid as usize];
        for m in old {
            p.pages.remove(*m);
            changes.push(MapChange::Unmap(asid, *m));
            if !in_place {
                self.phys.free(m.pfn, m.size.order(), FrameUse::Data);
                self.moved_frames.push((m.pfn, m.size.order()));
            }
        }
        self.count_shootdowns(old.len() as u64);
    }
}
