//! Linux's THP fault path (`os.policy = "thp"`, `os.thp` = never / madvise / always;
//! `do_huge_pmd_anonymous_page`): a 2 MiB page when the aligned 2 MiB range lies inside the
//! VMA, nothing of it is mapped, a block is free, THP allows it there and the design's placement
//! hook does not refuse it; else a 4 KiB page. HawkEye and Trident fall back to it.
//!
//! Contract: every fallback is counted by its reason (`thp_fallback_*`); a 2 MiB page is mapped
//! only when the design translates 2 MiB pages.

use super::FaultPolicy;
use crate::addr::{Asid, Mapping, PageSize, Vaddr, Vpn};
use crate::os::vma::Vma;
use crate::os::{MapChange, Os, OsError, Placer, ThpPolicy};

/// `os.policy = "thp"`.
pub struct Policy;

impl FaultPolicy for Policy {
    fn fault(
        os: &mut Os,
        asid: Asid,
        va: Vaddr,
        vma: &Vma,
        writable: bool,
        placer: &mut dyn Placer,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        os.fault_thp(asid, va, vma, writable, placer, changes)
    }
}

impl Os {
    /// Linux's THP fault path (`do_huge_pmd_anonymous_page`).
    pub(in crate::os) fn fault_thp(
        &mut self,
        asid: Asid,
        va: Vaddr,
        vma: &Vma,
        writable: bool,
        placer: &mut dyn Placer,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        let want_huge = self.sizes.contains(PageSize::Size2M)
            && match self.cfg.thp {
                ThpPolicy::Never => false,
                ThpPolicy::Always => vma.thp != Some(false),
                ThpPolicy::Madvise => {
                    if vma.thp != Some(true) {
                        self.c.fallback_not_advised += 1;
                    }
                    vma.thp == Some(true)
                }
            };
        if want_huge {
            let base = va.0 & !(PageSize::Size2M.bytes() - 1);
            let vpn = Vpn(base >> 12);
            if base < vma.start || base + PageSize::Size2M.bytes() > vma.end {
                self.c.fallback_unaligned += 1;
            } else if self.procs[asid as usize].pages.region_in_use(vpn) {
                self.c.fallback_partly_mapped += 1;
            } else if !self.phys.can_alloc(PageSize::Size2M.order()) {
                self.c.fallback_no_block += 1;
            } else if !placer.allows_huge(asid, vpn) {
                // The design refused it (Elastic Translations' offline Leshy hints).
            } else {
                let pfn = self.alloc_page(asid, vpn, PageSize::Size2M, placer, changes)?;
                self.c.faults_2m += 1;
                let m = Mapping {
                    vpn,
                    pfn,
                    size: PageSize::Size2M,
                    writable,
                };
                self.install(asid, m, changes);
                return Ok(m);
            }
        }
        self.fault_base(asid, va, writable, placer, changes)
    }
}
