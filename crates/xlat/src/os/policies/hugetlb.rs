//! The HugeTLB pool's fault (`os.hugetlb.*`; the pool itself is `os/hugetlb.rs`): a fault in
//! the hugetlbfs-backed part of a VMA maps the page of the pool's size around it from the pool,
//! before `os.policy` is asked. Not a row of the policy table: the pool runs beside any policy.
//!
//! Contract: a pool fault maps the whole aligned page (as pages of the largest size the design
//! translates), zeroed at fault time (`os.compaction.zero_cycles_per_byte`); `Ok(None)` hands
//! the fault to the policy (outside the backed part, partly mapped, or an empty pool with
//! `on_empty = "fallback"`), counted per reason; an empty pool with `on_empty = "error"` is a
//! SIGBUS error naming `os.hugetlb.pages`. Pool pages are never collapsed or promoted:
//! `Os::hugetlb_holds_any` is what khugepaged and the promotion daemons ask.

use crate::addr::{format_bytes, Asid, Mapping, PageSize, Vaddr};
use crate::os::hugetlb::OnEmpty;
use crate::os::phys::FrameUse;
use crate::os::vma::Vma;
use crate::os::{MapChange, Os, OsError};

impl Os {
    /// A fault in a hugetlbfs-backed VMA: map the page of the pool's size around `va` from the
    /// pool. `Ok(None)`: not a hugetlb fault here (outside the backed part, partly mapped, or
    /// the pool is empty with `on_empty = "fallback"`): the policy handles it.
    pub(in crate::os) fn fault_hugetlb(
        &mut self,
        asid: Asid,
        va: Vaddr,
        vma: &Vma,
        writable: bool,
        changes: &mut Vec<MapChange>,
    ) -> Result<Option<Mapping>, OsError> {
        let cfg = &self.cfg.hugetlb;
        let size = cfg.size;
        let len = vma.end - vma.start;
        let min = if cfg.min_vma_bytes == 0 {
            size.bytes()
        } else {
            cfg.min_vma_bytes
        };
        if len < min {
            return Ok(None);
        }
        let backed_end = vma.start + ((len as f64 * cfg.share) as u64).min(len);
        let first = va.vpn().align_down(size);
        let (lo, hi) = (first.addr().0, first.addr().0 + size.bytes());
        if lo < vma.start || hi > backed_end {
            if va.0 < backed_end {
                self.hugetlb.c.fallback_outside += 1;
            }
            return Ok(None);
        }
        if self.procs[asid as usize]
            .pages
            .range_in_use(first, size.base_pages())
        {
            self.hugetlb.c.fallback_partly_mapped += 1;
            return Ok(None);
        }
        let Some(i) = self.hugetlb.free.pop() else {
            if cfg.on_empty == OnEmpty::Error {
                return Err(OsError(format!(
                    "SIGBUS: the HugeTLB pool is empty (os.hugetlb.pages = {} of {}) at a fault \
                     on {va}; raise os.hugetlb.pages or set os.hugetlb.on_empty = \"fallback\"",
                    cfg.pages,
                    format_bytes(size.bytes())
                )));
            }
            self.hugetlb.c.fallback_pool_empty += 1;
            return Ok(None);
        };
        let pfn = self.hugetlb.blocks[i];
        self.hugetlb.mapped[i] = size.base_pages();
        self.hugetlb.c.faults += 1;
        self.hugetlb.c.in_use_peak = self.hugetlb.c.in_use_peak.max(self.hugetlb.in_use());
        if size == PageSize::Size2M {
            self.c.faults_2m += 1;
        }
        self.phys
            .transfer(size.bytes(), FrameUse::Reserved, FrameUse::Data);
        // Zeroed when the fault takes it (`clear_huge_page`), at the allocator's rate.
        self.phys.work.zero_cycles +=
            (self.cfg.compaction.zero_cycles_per_byte * size.bytes() as f64).round() as u64;
        self.install_block(asid, first, pfn, size, writable, changes);
        Ok(Some(
            self.procs[asid as usize]
                .pages
                .get(va.vpn())
                .expect("just mapped"),
        ))
    }

    /// Whether any of `pages` is (part of) a pool page: khugepaged and the promotion daemons
    /// leave such ranges alone.
    pub(in crate::os) fn hugetlb_holds_any(&self, pages: &[Mapping]) -> bool {
        self.hugetlb.on() && pages.iter().any(|m| self.hugetlb.holds(m.pfn))
    }
}
