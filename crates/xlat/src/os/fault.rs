//! The fault path (Linux `mm/memory.c`: `handle_mm_fault`, `do_anonymous_page`, `set_pte_at`):
//! check a fault, give it to the HugeTLB pool, then to the configured policy; and the two
//! primitives every new mapping goes through: the frames of a new page (`alloc_page`: the
//! placement hook, else the buddy allocator, retried after compaction, released reservations
//! and reclaim) and installing a translation (`install`, `install_block`).
//!
//! Contract: a fault either fails without changing a mapping (outside every VMA, a protection
//! violation, an address already mapped, out of memory) or installs at least one translation,
//! reported as a [`MapChange`], and returns the one covering the address. A fault's steps run
//! in this order, which the results depend on: count it; reclaim to the free watermark (swap
//! on); the swap-in check; the HugeTLB pool; the policy (a major fault maps a base page
//! instead); the relocations compaction made meanwhile. `install` is the only way a data page
//! becomes mapped: it enters the reclaim clock and, unless it is a HugeTLB pool page, becomes
//! movable for compaction.
//!
//! Calls: `vmscan.rs` (reclaim), `migrate.rs` (relocations), `policies/` (the policy's fault,
//! the pool's fault, releasing reservations under pressure).

use super::phys::{DataOwner, FrameUse};
use super::{MapChange, Os, OsError, OsPlacement, PlaceRequest, Placer};
use crate::addr::{Asid, Mapping, PageSize, Pfn, Vaddr, Vpn, BASE_PAGE_BYTES};
use crate::trace::{prot, AccessKind};

impl Os {
    /// Demand paging: handle a fault on `va` under the configured policy; installs the new
    /// translation(s) (appended to `changes`) and returns the one covering `va`. `placer` is
    /// asked for the frames of each new page (the design's placement hook).
    pub fn fault_with(
        &mut self,
        asid: Asid,
        va: Vaddr,
        kind: AccessKind,
        changes: &mut Vec<MapChange>,
        placer: &mut dyn Placer,
    ) -> Result<Mapping, OsError> {
        if va.0 >= self.va_limit() {
            return Err(OsError(format!(
                "segmentation fault: address {va} is beyond {}",
                self.beyond_va_space()
            )));
        }
        let p = &self.procs[asid as usize];
        let Some(vma) = p.vmas.find(va.0).copied() else {
            let near = p
                .vmas
                .nearest(va.0)
                .map(|v| format!("{:#x}-{:#x}", v.start, v.end))
                .unwrap_or_else(|| "none".into());
            return Err(OsError(format!(
                "segmentation fault: address {va} is outside every VMA of process {} (nearest VMA: {near})",
                p.pid
            )));
        };
        let needed = match kind {
            AccessKind::Store => prot::WRITE,
            AccessKind::Load => prot::READ,
            AccessKind::IFetch => prot::EXEC,
        };
        if vma.prot & needed == 0 {
            return Err(OsError(format!(
                "protection violation: {kind:?} at {va} in VMA {:#x}-{:#x} with prot {:#x} (process {})",
                vma.start, vma.end, vma.prot, p.pid
            )));
        }
        if let Some(existing) = p.pages.get(va.vpn()) {
            if kind == AccessKind::Store && !existing.writable {
                return Err(OsError(format!(
                    "store to read-only page at {va} in a writable VMA (copy-on-write is not modeled)"
                )));
            }
            return Err(OsError(format!(
                "fault on {va}, which is already mapped as {existing:?}: the design failed to find it"
            )));
        }
        self.c.faults += 1;
        let writable = vma.prot & prot::WRITE != 0;
        if self.swap_on {
            self.keep_free_memory(changes);
        }
        let major = self.swap_on && self.swap.swap_in(asid, va.vpn());
        if self.hugetlb.on() && !major {
            if let Some(m) = self.fault_hugetlb(asid, va, &vma, writable, changes)? {
                return Ok(m);
            }
        }
        let m = if major {
            // A major fault: the page comes back from the swap device as a base page.
            self.fault_base(asid, va, writable, placer, changes)
        } else {
            self.policy_fault(asid, va, &vma, writable, placer, changes)
        }?;
        // Compaction during the fault may have moved pages (this one included).
        if self.apply_relocations(changes)? {
            return Ok(self.translate(asid, va.vpn()).unwrap_or(m));
        }
        Ok(m)
    }

    /// [`Os::fault_with`] with the OS policy choosing every frame (no placement hook).
    pub fn fault(
        &mut self,
        asid: Asid,
        va: Vaddr,
        kind: AccessKind,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        self.fault_with(asid, va, kind, changes, &mut OsPlacement)
    }

    /// The frames of a new page of `size` at `vpn`: the placement hook's choice, else a block
    /// from the buddy allocator.
    pub(super) fn alloc_page(
        &mut self,
        asid: Asid,
        vpn: Vpn,
        size: PageSize,
        placer: &mut dyn Placer,
        changes: &mut Vec<MapChange>,
    ) -> Result<Pfn, OsError> {
        let req = PlaceRequest {
            asid,
            vpn,
            size,
            pages: &self.procs[asid as usize].pages,
        };
        if let Some(pfn) = placer.place(&mut self.phys, &req) {
            debug_assert_eq!(pfn.0 % size.base_pages(), 0, "placed frame misaligned");
            self.c.placed_by_design += 1;
            return Ok(pfn);
        }
        // Retries after a failed compaction that moved pages (bounded: compaction could keep
        // moving pages without ever freeing a block).
        let mut compaction_retries = 0;
        loop {
            match self.phys.alloc(size.order(), FrameUse::Data) {
                Ok(pfn) => {
                    // Compaction may have moved pages to make room: re-map them now, before
                    // another allocation could move the same blocks again.
                    self.apply_relocations(changes)?;
                    return Ok(pfn);
                }
                Err(e) => {
                    // A failed compaction may still have moved pages: re-map them first; then
                    // give up reservations, then reclaim to swap.
                    let moved = self.apply_relocations(changes)?;
                    compaction_retries += moved as u32;
                    if (moved && compaction_retries <= 4)
                        || self.release_reservations_for_memory()
                        || (self.swap_on && self.reclaim(self.cfg.swap.batch_pages, changes) > 0)
                    {
                        continue;
                    }
                    return Err(if self.swap_on {
                        OsError(format!(
                            "{e}; swap is full or holds nothing more to evict ({} of {} used)",
                            crate::addr::format_bytes(self.swap.used_pages * BASE_PAGE_BYTES),
                            crate::addr::format_bytes(self.cfg.swap.bytes)
                        ))
                    } else {
                        e
                    });
                }
            }
        }
    }

    /// An instruction fetch at `va` found its translation by a walk: the page must be
    /// executable (the NX check hardware makes at the walk; TLB entries cache it, and every
    /// protection downgrade invalidates them).
    pub fn check_fetch(&self, asid: Asid, va: Vaddr) -> Result<(), OsError> {
        let p = &self.procs[asid as usize];
        match p.vmas.find(va.0) {
            Some(v) if v.prot & prot::EXEC != 0 => Ok(()),
            Some(v) => Err(OsError(format!(
                "protection violation: IFetch at {va} in VMA {:#x}-{:#x} with prot {:#x} (process {})",
                v.start, v.end, v.prot, p.pid
            ))),
            None => Err(OsError(format!(
                "segmentation fault: instruction fetch at {va} outside every VMA of process {}",
                p.pid
            ))),
        }
    }

    /// Install `m` in the page map and report it.
    pub(super) fn install(&mut self, asid: Asid, m: Mapping, changes: &mut Vec<MapChange>) {
        if self.swap_on {
            self.swap.track(asid, m.vpn, m.pfn);
        }
        // Owned data is movable: compaction may relocate it (see `apply_relocations`).
        // HugeTLB pool pages stay unowned: never moved.
        if !self.hugetlb.holds(m.pfn) {
            self.phys
                .set_owner(m.pfn, m.size.order(), DataOwner { asid, vpn: m.vpn });
        }
        self.procs[asid as usize].pages.insert(m);
        changes.push(MapChange::Map(asid, m));
    }

    /// Map the block of `size` at `vpn` -> `pfn` as pages of the largest size the design
    /// translates that fits (one page when it translates `size`).
    pub(super) fn install_block(
        &mut self,
        asid: Asid,
        vpn: Vpn,
        pfn: Pfn,
        size: PageSize,
        writable: bool,
        changes: &mut Vec<MapChange>,
    ) {
        let piece = self
            .sizes
            .largest_at_most(size)
            .expect("every design translates 4 KiB");
        for i in 0..size.base_pages() / piece.base_pages() {
            let off = i * piece.base_pages();
            let m = Mapping {
                vpn: Vpn(vpn.0 + off),
                pfn: Pfn(pfn.0 + off),
                size: piece,
                writable,
            };
            self.install(asid, m, changes);
        }
    }

    /// A 4 KiB page at `va`.
    pub(super) fn fault_base(
        &mut self,
        asid: Asid,
        va: Vaddr,
        writable: bool,
        placer: &mut dyn Placer,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        let pfn = self.alloc_page(asid, va.vpn(), PageSize::Size4K, placer, changes)?;
        let m = Mapping {
            vpn: va.vpn(),
            pfn,
            size: PageSize::Size4K,
            writable,
        };
        self.install(asid, m, changes);
        Ok(m)
    }
}
