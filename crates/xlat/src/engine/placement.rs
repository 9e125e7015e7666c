//! The design's side of the OS model's work: the placement hook a fault goes through, and the
//! TLB invalidation of a contiguous group one of whose pages changed.
//!
//! Owns [`DesignPlacer`] (a design as the OS model's `Placer`) and [`invalidate_group_members`]
//! (Arm's rule for a broken contiguous group, also used by the designs' tests). May call:
//! `addr`, `designs`, `mem`, `mmu`, `os`, `virt`; nothing else in the engine. Contract: a fault's
//! frames are those the design chose when it chose any; after a group breaks, no TLB keeps an
//! entry of any of its members.

use crate::addr::{Asid, Mapping, Vpn};
use crate::designs::Design;
use crate::mem::MemSystem;
use crate::mmu::Mmu;

/// Invalidate the TLB entries of every member of the contiguous `group` but the page at
/// `except` (whose own invalidation the unmap did): Arm's rule when one entry of a contiguous
/// range changes ([`Design::take_broken_group`]). `also` sees each member (other cores).
pub(crate) fn invalidate_group_members(
    mmu: &mut Mmu,
    mem: &MemSystem,
    asid: Asid,
    group: crate::mmu::CoalescedSpan,
    except: Vpn,
    mut also: impl FnMut(Mapping),
) {
    for i in 0..group.pages() {
        let member = group.base_of(Vpn(group.vpn.0 + i * group.base.base_pages()));
        if member.vpn != except {
            crate::virt::invalidate_guest_page(mmu, mem, asid, member);
            also(member);
        }
    }
}

/// The design's placement hook, as the OS model asks it at a fault.
pub(super) struct DesignPlacer<'a, D: Design>(pub(super) &'a mut D);

impl<D: Design> crate::os::Placer for DesignPlacer<'_, D> {
    fn place(
        &mut self,
        phys: &mut crate::os::PhysMem,
        req: &crate::os::PlaceRequest,
    ) -> Option<crate::addr::Pfn> {
        self.0.place(phys, req)
    }

    fn allows_huge(&mut self, asid: crate::addr::Asid, vpn: Vpn) -> bool {
        self.0.allows_huge(asid, vpn)
    }
}
