//! Trident (`os.policy = "trident"`, settings `os.trident.*`): 1 GiB, 2 MiB and 4 KiB pages,
//! at fault time and in the background (Ram et al., "Trident: Harnessing architectural
//! resources for all page sizes in x86 processors", MICRO'21).
//!
//! ## Model
//! - **Fault** (Trident §4.1): when THP allows a huge page in the VMA (`os.thp` = `always`, or
//!   `madvise` with the advice) and the design translates 1 GiB pages, a fault whose 1 GiB
//!   aligned range lies inside the VMA, has nothing mapped yet and finds a free 1 GiB block is
//!   mapped with one 1 GiB page (zeroed at fault: 0.5 G cycles at the default zeroing rate, in
//!   `os.fault_latency`). Otherwise Linux's THP fault path: 2 MiB, else 4 KiB.
//! - **Background promotion** (Trident's khugepaged, §4.2): every `interval_cycles` the daemon
//!   takes the next 1 GiB aligned range inside a VMA (round robin over processes, as
//!   khugepaged) and, if at most `max_unmapped_share` of its 4 KiB pages are unmapped and it
//!   holds no 1 GiB page, promotes it: in place when every page of the range is mapped at the
//!   matching offset of an aligned 1 GiB block (nothing to copy), else into a fresh 1 GiB block
//!   with the mapped pages copied (`os.migration.copy_cycles_per_4k` per 4 KiB page). If no
//!   1 GiB block can be had it collapses the range's 2 MiB regions instead (khugepaged's 2 MiB
//!   collapse), up to `collapses_2m_per_wake`.
//! - **Smart compaction** (§4.3): the 1 GiB block comes from the buddy allocator, whose direct
//!   compaction picks the aligned 1 GiB candidate with the fewest used frames and moves only
//!   its movable pages — Trident's choice of the region that needs the least copying. Its
//!   other idea, copying a 2 MiB page's contents into a free 2 MiB block of the target without
//!   breaking it, is what the model's compaction does already (it moves whole blocks).
//! - Cost: `scan_cycles_per_entry` OS cycles per page-table entry examined, plus copies and
//!   shootdowns (`os.migration.*`), plus direct compaction (`os.compaction.*`).
//!
//! ## Deviations
//! - One range examined per wake-up (Trident's khugepaged scans `pages_to_scan` pages);
//!   the 1 GiB promotion is all-or-nothing (no partial progress across wake-ups).
//! - No 1 GiB page zeroing avoidance (Trident zeroes at fault as Linux does for hugetlb).
//! - Trident-PV (paravirtualized copy-less promotion in a guest) is not modeled.
//!
//! Layering: the settings and the daemon's state (`TridentConfig`, [`Trident`]) are defined in
//! `os/policy.rs`, below `os/mod.rs`, because `OsConfig` and `Os` hold them; their behaviour is
//! here.

use super::FaultPolicy;
use crate::addr::{Asid, Mapping, PageSize, Pfn, Vaddr, Vpn};
use crate::os::phys::FrameUse;
use crate::os::policy::Trident;
use crate::os::vma::Vma;
use crate::os::{MapChange, Os, OsError, Placer, ThpPolicy};
use crate::stats::{Stats, StatsExt};

/// 4 KiB pages in a 1 GiB page.
const PAGES_1G: u64 = 1 << 18;

/// Trident's decision rule for one 1 GiB range: promote it when it holds no 1 GiB page and
/// at most `max_unmapped_share` of its base pages are unmapped.
pub fn should_promote(pages: &[Mapping], max_unmapped_share: f64) -> bool {
    if pages.is_empty() || pages.iter().any(|m| m.size >= PageSize::Size1G) {
        return false;
    }
    let mapped: u64 = pages.iter().map(|m| m.size.base_pages()).sum();
    (PAGES_1G - mapped) as f64 <= max_unmapped_share * PAGES_1G as f64
}

impl Trident {
    /// Write the `trident` section.
    pub fn stats_into(&self, s: &mut Stats) {
        let t = s.section("trident");
        t.put_u64("faults_1g", self.faults_1g);
        t.put_u64("wakeups", self.wakeups);
        t.put_u64("promotions_1g", self.promotions_1g);
        t.put_u64("promotions_1g_in_place", self.promotions_1g_in_place);
        t.put_u64("promotion_1g_no_block", self.promotion_1g_no_block);
        t.put_u64("collapses_2m", self.collapses_2m);
        t.put_u64("bytes_copied", self.bytes_copied);
    }
}

/// `os.policy = "trident"`: 1 GiB, 2 MiB, 4 KiB at fault, and (`os.trident.daemon`) the
/// background 1 GiB promoter.
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
        os.fault_trident(asid, va, vma, writable, placer, changes)
    }

    fn has_daemon(os: &Os) -> bool {
        os.cfg.trident.daemon
    }

    fn tick(os: &mut Os, now_cycles: u64, changes: &mut Vec<MapChange>) {
        if os.cfg.trident.daemon {
            os.trident_tick(now_cycles, changes);
        }
    }

    fn stats_into(os: &Os, s: &mut Stats) {
        os.trident.stats_into(s);
    }
}

impl Os {
    /// Trident's fault path: 1 GiB where it fits and a block is free, else THP's.
    pub(in crate::os) fn fault_trident(
        &mut self,
        asid: Asid,
        va: Vaddr,
        vma: &Vma,
        writable: bool,
        placer: &mut dyn Placer,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        let g = PageSize::Size1G;
        let allowed = self.sizes.contains(g)
            && match self.cfg.thp {
                ThpPolicy::Never => false,
                ThpPolicy::Always => vma.thp != Some(false),
                ThpPolicy::Madvise => vma.thp == Some(true),
            };
        if allowed {
            let first = va.vpn().align_down(g);
            let (lo, hi) = (first.addr().0, first.addr().0 + g.bytes());
            if lo >= vma.start
                && hi <= vma.end
                && !self.procs[asid as usize]
                    .pages
                    .range_in_use(first, g.base_pages())
                && self.phys.can_alloc(g.order())
            {
                let pfn = self.alloc_page(asid, first, g, placer, changes)?;
                self.trident.faults_1g += 1;
                let m = Mapping {
                    vpn: first,
                    pfn,
                    size: g,
                    writable,
                };
                self.install(asid, m, changes);
                return Ok(m);
            }
        }
        self.fault_thp(asid, va, vma, writable, placer, changes)
    }

    /// Run the Trident daemon's wake-ups due at `now_cycles`.
    pub(in crate::os) fn trident_tick(&mut self, now_cycles: u64, changes: &mut Vec<MapChange>) {
        if self.trident.next_wake == 0 {
            self.trident.next_wake = self.cfg.trident.interval_cycles;
        }
        while now_cycles >= self.trident.next_wake {
            self.trident.next_wake += self.cfg.trident.interval_cycles;
            self.trident.wakeups += 1;
            if let Some((asid, first, vma_end)) = self.trident_next_range() {
                self.trident_promote(asid, first, vma_end, changes);
            }
        }
    }

    /// The next 1 GiB aligned range inside a VMA after the cursor (round robin); `None` when
    /// no VMA holds one. Returns (ASID, first VPN, end of its VMA).
    fn trident_next_range(&mut self) -> Option<(Asid, Vpn, u64)> {
        let g = PageSize::Size1G.bytes();
        let mut laps = 0;
        loop {
            let (pi, addr) = self.trident.cursor;
            if pi >= self.procs.len() {
                self.trident.cursor = (0, 0);
                laps += 1;
                if laps > 1 {
                    return None;
                }
                continue;
            }
            let next = self.procs[pi].vmas.iter().find_map(|v| {
                let lo = v.start.max(addr).next_multiple_of(g);
                (lo + g <= v.end).then_some((lo, v.end))
            });
            match next {
                Some((lo, end)) => {
                    self.trident.cursor = (pi, lo + g);
                    return Some((pi as Asid, Vpn(lo >> 12), end));
                }
                None => self.trident.cursor = (pi + 1, 0),
            }
        }
    }

    /// Promote the 1 GiB range at `first` (see the module doc), else collapse its 2 MiB
    /// regions.
    fn trident_promote(
        &mut self,
        asid: Asid,
        first: Vpn,
        _vma_end: u64,
        changes: &mut Vec<MapChange>,
    ) {
        let old = self.procs[asid as usize]
            .pages
            .in_range(first, Vpn(first.0 + PAGES_1G));
        self.c.daemon_cycles += (old.len() as u64 + 1) * self.cfg.trident.scan_cycles_per_entry;
        if !should_promote(&old, self.cfg.trident.max_unmapped_share)
            || self.hugetlb_holds_any(&old)
            || self.procs[asid as usize]
                .reservations
                .overlaps(first, PAGES_1G)
        {
            return;
        }
        let writable = old[0].writable;
        if old.iter().any(|m| m.writable != writable) {
            return;
        }
        if !self.sizes.contains(PageSize::Size1G) {
            return self.trident_collapse_2m(asid, first, changes);
        }
        let mapped: u64 = old.iter().map(|m| m.size.base_pages()).sum();
        let base = old[0].pfn.0.wrapping_sub(old[0].vpn.0 - first.0);
        let in_place = mapped == PAGES_1G
            && base.is_multiple_of(PAGES_1G)
            && old
                .iter()
                .all(|m| m.pfn.0 == base.wrapping_add(m.vpn.0 - first.0));
        let pfn = if in_place {
            self.trident.promotions_1g_in_place += 1;
            Pfn(base)
        } else {
            // Direct compaction (smart: the candidate with the fewest used frames) if needed.
            let Ok(pfn) = self.phys.alloc(PageSize::Size1G.order(), FrameUse::Data) else {
                self.trident.promotion_1g_no_block += 1;
                return self.trident_collapse_2m(asid, first, changes);
            };
            if self.phys_relocated(changes) {
                // Compaction moved pages, possibly of this range: try again next time.
                self.phys
                    .free(pfn, PageSize::Size1G.order(), FrameUse::Data);
                return;
            }
            self.trident.bytes_copied += self.count_copy(mapped);
            pfn
        };
        self.unmap_for_promotion(asid, &old, in_place, changes);
        self.trident.promotions_1g += 1;
        self.install(
            asid,
            Mapping {
                vpn: first,
                pfn,
                size: PageSize::Size1G,
                writable,
            },
            changes,
        );
    }

    /// No 1 GiB block: khugepaged's 2 MiB collapse of the range's regions, at most
    /// `collapses_2m_per_wake` of them.
    fn trident_collapse_2m(&mut self, asid: Asid, first: Vpn, changes: &mut Vec<MapChange>) {
        let mut budget = self.cfg.trident.collapses_2m_per_wake;
        for r in 0..512u64 {
            if budget == 0 {
                break;
            }
            let region = Vpn(first.0 + r * 512);
            let before = self.c.collapses;
            self.try_collapse(asid, region, changes);
            if self.c.collapses > before {
                self.trident.collapses_2m += 1;
                budget -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::PageSizeSet;
    use crate::os::policy::PolicyKind;
    use crate::os::OsConfig;
    use crate::trace::{prot, AccessKind};

    const BASE: u64 = 0x4000_0000_0000;

    fn trident_os(mem: u64, tweak: impl FnOnce(&mut OsConfig)) -> Os {
        let mut cfg = OsConfig {
            phys_mem_bytes: mem,
            thp: ThpPolicy::Always,
            policy: PolicyKind::Trident,
            ..OsConfig::default()
        };
        tweak(&mut cfg);
        let mut os = Os::new(&cfg, 1).unwrap();
        os.set_page_sizes(PageSizeSet::X86).unwrap();
        os
    }

    fn m(vpn: u64, size: PageSize) -> Mapping {
        Mapping {
            vpn: Vpn(vpn),
            pfn: Pfn(vpn),
            size,
            writable: true,
        }
    }

    #[test]
    fn a_range_is_promoted_only_when_enough_of_it_is_mapped_and_no_1g_page_is_there() {
        let half: Vec<Mapping> = (0..256).map(|i| m(i * 512, PageSize::Size2M)).collect();
        assert!(should_promote(&half, 0.5));
        assert!(!should_promote(&half[..255], 0.5));
        assert!(should_promote(&half[..1], 511.0 / 512.0));
        assert!(!should_promote(&[], 511.0 / 512.0));
        assert!(!should_promote(&[m(0, PageSize::Size1G)], 0.9));
    }

    #[test]
    fn a_fault_in_a_1g_aligned_vma_maps_1g_and_elsewhere_2m() {
        let mut os = trident_os(4 << 30, |_| {});
        let asid = os.process(1);
        let mut ch = Vec::new();
        os.mmap(
            asid,
            Vaddr(BASE),
            (1 << 30) + (4 << 20),
            prot::READ | prot::WRITE,
            0,
            &mut ch,
        )
        .unwrap();
        let a = os
            .fault(asid, Vaddr(BASE + 5), AccessKind::Load, &mut ch)
            .unwrap();
        assert_eq!(a.size, PageSize::Size1G);
        assert_eq!(a.pfn.0 % PAGES_1G, 0);
        let b = os
            .fault(asid, Vaddr(BASE + (1 << 30)), AccessKind::Load, &mut ch)
            .unwrap();
        assert_eq!(b.size, PageSize::Size2M);
        assert_eq!(os.trident.faults_1g, 1);
    }

    #[test]
    fn the_daemon_promotes_a_range_of_2m_pages_to_1g_by_copy() {
        // No 1 GiB block free at fault time: take the 2 MiB pages, then free memory so the
        // daemon finds a block.
        let mut os = trident_os(4 << 30, |c| c.trident.interval_cycles = 1000);
        let asid = os.process(1);
        let mut ch = Vec::new();
        let mut hogs = Vec::new();
        while os.phys.can_alloc(18) {
            hogs.push(os.phys.alloc(18, FrameUse::Data).unwrap());
        }
        // One 1 GiB block broken by a 4 KiB page: room for 2 MiB pages, no 1 GiB block.
        os.phys.free(hogs.pop().unwrap(), 18, FrameUse::Data);
        let pin = os.phys.alloc(0, FrameUse::Data).unwrap();
        os.mmap(
            asid,
            Vaddr(BASE),
            1 << 30,
            prot::READ | prot::WRITE,
            0,
            &mut ch,
        )
        .unwrap();
        for i in 0..4 {
            let x = os
                .fault(
                    asid,
                    Vaddr(BASE + i * (2 << 20)),
                    AccessKind::Store,
                    &mut ch,
                )
                .unwrap();
            assert_eq!(x.size, PageSize::Size2M);
        }
        os.phys.free(pin, 0, FrameUse::Data);
        for h in hogs {
            os.phys.free(h, 18, FrameUse::Data);
        }
        os.tick(1000, &mut ch).unwrap();
        let g = os.translate(asid, Vaddr(BASE).vpn()).unwrap();
        assert_eq!(g.size, PageSize::Size1G);
        assert_eq!(os.trident.promotions_1g, 1);
        assert_eq!(os.trident.bytes_copied, 4 * (2 << 20));
    }
}
