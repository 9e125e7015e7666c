//! Eager paging (`os.policy = "eager"`; RMM, TPS): map a whole VMA when it is created (mmap,
//! heap growth by brk) in the largest aligned pages the design translates, smaller ones where no
//! block of that size is free; what is left (a failed allocation's range) faults in 4 KiB.
//!
//! Contract: pages already mapped in the range stay as they are; a VMA with no access
//! permission is not populated; `eager_bytes` counts what was mapped ahead of faults. Eager
//! paging with swap is refused by the configuration (a known defect).

use super::FaultPolicy;
use crate::addr::{Asid, Mapping, PageSize, Vaddr, Vpn, BASE_PAGE_BYTES};
use crate::os::vma::Vma;
use crate::os::{MapChange, Os, OsError, OsPlacement, Placer};
use crate::stats::{Stats, StatsExt};
use crate::trace::prot;

/// `os.policy = "eager"`.
pub struct Policy;

impl FaultPolicy for Policy {
    fn fault(
        os: &mut Os,
        asid: Asid,
        va: Vaddr,
        _vma: &Vma,
        writable: bool,
        placer: &mut dyn Placer,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        os.fault_base(asid, va, writable, placer, changes)
    }

    fn mapped(
        os: &mut Os,
        asid: Asid,
        start: u64,
        end: u64,
        prot_bits: u32,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        if prot_bits & (prot::READ | prot::WRITE | prot::EXEC) != 0 {
            os.populate(asid, start, end, prot_bits & prot::WRITE != 0, changes)?;
        }
        Ok(())
    }

    fn stats_into(os: &Os, s: &mut Stats) {
        s.put_u64("eager_bytes", os.c.eager_bytes);
    }
}

impl Os {
    /// Eager paging: map `[start, end)` now, in the largest aligned pages the design translates
    /// (smaller ones where no block of that size is free).
    pub(in crate::os) fn populate(
        &mut self,
        asid: Asid,
        start: u64,
        end: u64,
        writable: bool,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        let mut va = start;
        while va < end {
            let vpn = Vpn(va >> 12);
            // Pages already there (a brk over an older mapping, say) stay as they are.
            let pages = &self.procs[asid as usize].pages;
            let fits: Vec<PageSize> = self
                .sizes
                .iter()
                .filter(|z| {
                    va.is_multiple_of(z.bytes())
                        && va + z.bytes() <= end
                        && !pages.range_in_use(vpn, z.base_pages())
                })
                .collect();
            let Some(&smallest) = fits.first() else {
                va += BASE_PAGE_BYTES;
                continue;
            };
            let size = fits
                .iter()
                .rev()
                .find(|z| self.phys.can_alloc(z.order()))
                .copied()
                .unwrap_or(smallest);
            let pfn = self.alloc_page(asid, vpn, size, &mut OsPlacement, changes)?;
            self.install(
                asid,
                Mapping {
                    vpn,
                    pfn,
                    size,
                    writable,
                },
                changes,
            );
            self.c.eager_bytes += size.bytes();
            va += size.bytes();
        }
        Ok(())
    }
}
