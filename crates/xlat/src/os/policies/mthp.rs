//! Multi-size THP (`os.policy = "mthp"`, `os.mthp.sizes`; Linux 6.8+ `alloc_anon_folio`): the
//! first enabled size whose aligned range lies inside the VMA, has nothing mapped and finds a
//! free block; the whole folio is mapped at once; 4 KiB is the last resort.
//!
//! Contract: a folio size the design cannot translate as one entry is mapped as pages of the
//! largest size it can (Linux maps a 64 KiB folio with 16 PTEs on x86); faults are counted per
//! folio size (`mthp_faults`).

use super::FaultPolicy;
use crate::addr::{Asid, Mapping, PageSize, Vaddr};
use crate::os::vma::Vma;
use crate::os::{MapChange, Os, OsError, Placer};
use crate::stats::{Stats, StatsExt};

/// `os.policy = "mthp"`.
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
        os.fault_mthp(asid, va, vma, writable, placer, changes)
    }

    fn stats_into(os: &Os, s: &mut Stats) {
        let c = &os.c;
        let mut f = Stats::new();
        for (o, n) in c.mthp_faults.iter().enumerate() {
            if *n > 0 {
                f.put_u64(&PageSize::from_order(o as u8).expect("order").label(), *n);
            }
        }
        s.insert("mthp_faults".into(), serde_json::Value::Object(f));
    }
}

impl Os {
    /// Multi-size THP: the first enabled size whose aligned range fits the VMA, is unmapped
    /// and has a free block; the whole folio is mapped at once (as Linux does).
    pub(in crate::os) fn fault_mthp(
        &mut self,
        asid: Asid,
        va: Vaddr,
        vma: &Vma,
        writable: bool,
        placer: &mut dyn Placer,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        for i in 0..self.cfg.mthp.sizes.len() {
            let size = self.cfg.mthp.sizes[i];
            if size == PageSize::Size4K {
                break;
            }
            let first = va.vpn().align_down(size);
            let (lo, hi) = (first.addr().0, first.addr().0 + size.bytes());
            if lo < vma.start || hi > vma.end {
                self.c.fallback_unaligned += 1;
                continue;
            }
            if self.procs[asid as usize]
                .pages
                .range_in_use(first, size.base_pages())
            {
                self.c.fallback_partly_mapped += 1;
                continue;
            }
            if !self.phys.can_alloc(size.order()) {
                self.c.fallback_no_block += 1;
                continue;
            }
            let pfn = self.alloc_page(asid, first, size, placer, changes)?;
            self.c.mthp_faults[size.order() as usize] += 1;
            if size == PageSize::Size2M {
                self.c.faults_2m += 1;
            }
            self.install_block(asid, first, pfn, size, writable, changes);
            return Ok(self.procs[asid as usize]
                .pages
                .get(va.vpn())
                .expect("just mapped"));
        }
        self.fault_base(asid, va, writable, placer, changes)
    }
}
