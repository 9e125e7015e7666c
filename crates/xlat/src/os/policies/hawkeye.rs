//! HawkEye-like huge-page promotion (`os.policy = "hawkeye"`, settings `os.hawkeye.*`):
//! promote the 2 MiB regions with the most accessed base pages first, asynchronously.
//!
//! ## Model (HawkEye, Panwar et al., ASPLOS'19, §3.2-3.3)
//! - Faults follow Linux's THP fault path (`os.thp`), as HawkEye keeps it.
//! - **Access coverage**: HawkEye samples page-table accessed bits and counts, per 2 MiB
//!   region, how many of its 512 base pages were accessed in a sampling interval. The model
//!   sets a region's bit for a base page whenever a page walk (a TLB miss, which is when
//!   hardware sets the accessed bit) or a fault reads that page's translation: the coverage of
//!   a region is the number of distinct 4 KiB pages walked in the interval. Regions already
//!   mapped by a page of 2 MiB or more are not tracked.
//! - **Access-coverage buckets**: every `interval_cycles` the regions are placed in `buckets`
//!   buckets by coverage (bucket = coverage x buckets / 513, so the top bucket holds the
//!   regions with almost every base page accessed), and the daemon promotes regions from the
//!   highest non-empty bucket down, the most covered first within a bucket (HawkEye's FIFO
//!   within a bucket is replaced by coverage, then address: deterministic), at most
//!   `max_promotions` per wake-up and only regions with at least `min_coverage` accessed pages.
//!   A promotion is khugepaged's collapse (in place when the frames already form the block,
//!   else allocate 2 MiB — compacting if needed — and copy the mapped pages; holes are filled,
//!   up to `os.khugepaged.max_ptes_none`).
//! - After a wake-up the coverage restarts from zero (one sampling interval per wake-up; the
//!   paper keeps a moving average over intervals).
//! - Cost: `scan_cycles_per_region` OS cycles per tracked region per wake-up (the accessed-bit
//!   scan of 512 PTEs), plus the collapse's copies and shootdowns (`os.migration.*`).
//!
//! ## Deviations
//! - No per-process MMU-overhead ranking (HawkEye-PMU / -G pick the process first; with one
//!   process, as the evaluation runs, it makes no difference); no asynchronous pre-zeroing of
//!   free pages (fault-time zeroing stays in `os.fault_latency`), no bloat recovery by
//!   zero-page deduplication.
//! - Coverage is of walked pages: a page whose translation stays in the TLB the whole
//!   interval is not counted (HawkEye clears the accessed bits without flushing TLBs, so it
//!   under-counts such pages as well).
//!
//! Layering: the settings and the daemon's state ([`HawkeyeConfig`], [`Hawkeye`]) are defined in
//! `os/policy.rs`, below `os/mod.rs`, because `OsConfig` and `Os` hold them; their behaviour is
//! here.

use super::FaultPolicy;
use crate::addr::{Asid, Mapping, PageSize, Vaddr, Vpn};
use crate::os::policy::{Hawkeye, HawkeyeConfig};
use crate::os::vma::Vma;
use crate::os::{MapChange, Os, OsError, Placer};
use crate::stats::{Stats, StatsExt};

/// A region that may be promoted: its coverage in the last interval and where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Accessed base pages (0..=512).
    pub coverage: u32,
    /// Address space.
    pub asid: Asid,
    /// First VPN of the 2 MiB region.
    pub first: Vpn,
}

/// HawkEye's decision rule: the regions to promote this wake-up, in order — highest
/// access-coverage bucket first, the most covered first within a bucket, then by address;
/// regions below `min_coverage` never; at most `max` of them.
pub fn promotion_order(cands: &mut Vec<Candidate>, cfg: &HawkeyeConfig) -> usize {
    let bucket = |c: u32| c * cfg.buckets / 513;
    cands.retain(|c| c.coverage >= cfg.min_coverage);
    cands.sort_by(|a, b| {
        bucket(b.coverage)
            .cmp(&bucket(a.coverage))
            .then(b.coverage.cmp(&a.coverage))
            .then(a.asid.cmp(&b.asid))
            .then(a.first.0.cmp(&b.first.0))
    });
    cands.len().min(cfg.max_promotions as usize)
}

impl Hawkeye {
    /// Note that the translation of `vpn` was read by a walk or a fault (its accessed bit).
    #[inline]
    pub fn touch(&mut self, asid: Asid, vpn: Vpn, size: PageSize) {
        if size >= PageSize::Size2M {
            return;
        }
        let region = vpn.0 >> 9;
        let bit = vpn.0 & 511;
        let map = self.regions.entry((asid, region)).or_insert([0; 8]);
        map[(bit >> 6) as usize] |= 1 << (bit & 63);
    }

    /// Write the `hawkeye` section.
    pub fn stats_into(&self, s: &mut Stats) {
        let h = s.section("hawkeye");
        h.put_u64("wakeups", self.wakeups);
        h.put_u64("regions_scanned", self.regions_scanned);
        h.put_u64("promotions", self.promotions);
        h.put_u64("promotion_failures", self.promotion_failures);
        // Sum of the accessed base pages of the promoted regions (mean = / promotions).
        h.put_u64("coverage_promoted", self.coverage_promoted);
    }
}

/// `os.policy = "hawkeye"`: THP's fault path, the accessed-bit sampling of every walk, and the
/// promotion daemon.
pub struct Policy;

impl FaultPolicy for Policy {
    const NEEDS_2M: bool = true;

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

    fn has_daemon(_os: &Os) -> bool {
        true
    }

    fn tick(os: &mut Os, now_cycles: u64, changes: &mut Vec<MapChange>) {
        os.hawkeye_tick(now_cycles, changes);
    }

    #[inline]
    fn note_walk(os: &mut Os, asid: Asid, m: &Mapping) {
        os.hawkeye_touch(asid, m);
    }

    fn stats_into(os: &Os, s: &mut Stats) {
        os.hawkeye.stats_into(s);
    }
}

impl Os {
    /// Run the HawkEye daemon's wake-ups due at `now_cycles`.
    pub(in crate::os) fn hawkeye_tick(&mut self, now_cycles: u64, changes: &mut Vec<MapChange>) {
        if self.hawkeye.next_wake == 0 {
            self.hawkeye.next_wake = self.cfg.hawkeye.interval_cycles;
        }
        while now_cycles >= self.hawkeye.next_wake {
            self.hawkeye.next_wake += self.cfg.hawkeye.interval_cycles;
            self.hawkeye_wake(changes);
        }
    }

    /// One wake-up: rank the tracked regions by coverage, promote the top ones, restart the
    /// sampling interval.
    fn hawkeye_wake(&mut self, changes: &mut Vec<MapChange>) {
        let h = &mut self.hawkeye;
        h.wakeups += 1;
        let tracked = h.regions.len() as u64;
        h.regions_scanned += tracked;
        self.c.daemon_cycles += tracked * self.cfg.hawkeye.scan_cycles_per_region;
        let mut cands: Vec<Candidate> = h
            .regions
            .iter()
            .map(|(&(asid, region), bits)| Candidate {
                coverage: bits.iter().map(|w| w.count_ones()).sum(),
                asid,
                first: Vpn(region << 9),
            })
            .collect();
        // A new interval: regions not walked in it drop out.
        h.regions.clear();
        let n = promotion_order(&mut cands, &self.cfg.hawkeye);
        let huge = PageSize::Size2M.bytes();
        for c in &cands[..n] {
            let lo = c.first.addr().0;
            let inside = self
                .procs
                .get(c.asid as usize)
                .and_then(|p| p.vmas.find(lo))
                .is_some_and(|v| v.start <= lo && lo + huge <= v.end);
            if !inside {
                self.hawkeye.promotion_failures += 1;
                continue;
            }
            let before = self.c.collapses;
            self.try_collapse(c.asid, c.first, changes);
            if self.c.collapses > before {
                self.hawkeye.promotions += 1;
                self.hawkeye.coverage_promoted += c.coverage as u64;
            } else {
                self.hawkeye.promotion_failures += 1;
            }
        }
    }

    /// HawkEye's accessed-bit sampling: a walk or fault read `m`.
    #[inline]
    pub(in crate::os) fn hawkeye_touch(&mut self, asid: Asid, m: &Mapping) {
        self.hawkeye.touch(asid, m.vpn, m.size);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::{PageSizeSet, Vaddr};
    use crate::os::policy::PolicyKind;
    use crate::os::{OsConfig, ThpPolicy};
    use crate::trace::{prot, AccessKind};

    fn cand(coverage: u32, first: u64) -> Candidate {
        Candidate {
            coverage,
            asid: 0,
            first: Vpn(first),
        }
    }

    #[test]
    fn the_most_covered_regions_are_promoted_first_up_to_the_budget() {
        let cfg = HawkeyeConfig {
            max_promotions: 2,
            min_coverage: 5,
            ..HawkeyeConfig::default()
        };
        let mut c = vec![
            cand(10, 0),
            cand(400, 512),
            cand(3, 1024),
            cand(512, 1536),
            cand(60, 2048),
        ];
        let n = promotion_order(&mut c, &cfg);
        assert_eq!(n, 2);
        assert_eq!(c[..n], [cand(512, 1536), cand(400, 512)]);
        // The region below min_coverage is never a candidate.
        assert!(c.iter().all(|x| x.coverage >= 5));
        assert_eq!(c.last(), Some(&cand(10, 0)));
    }

    #[test]
    fn the_daemon_promotes_the_region_with_more_walked_pages_first() {
        let mut cfg = OsConfig {
            phys_mem_bytes: 1 << 30,
            thp: ThpPolicy::Never,
            policy: PolicyKind::Hawkeye,
            ..OsConfig::default()
        };
        cfg.hawkeye.max_promotions = 1;
        let mut os = Os::new(&cfg, 1).unwrap();
        os.set_page_sizes(PageSizeSet::X86).unwrap();
        let asid = os.process(1);
        let base = 0x4000_0000_0000u64;
        let mut ch = Vec::new();
        os.mmap(
            asid,
            Vaddr(base),
            4 << 20,
            prot::READ | prot::WRITE,
            0,
            &mut ch,
        )
        .unwrap();
        // Region 0: 20 pages faulted and walked; region 1: 100 pages.
        for (region, pages) in [(0u64, 20u64), (1, 100)] {
            for i in 0..pages {
                let va = Vaddr(base + region * (2 << 20) + i * 4096);
                let m = os.fault(asid, va, AccessKind::Load, &mut ch).unwrap();
                os.note_walk(asid, &m);
            }
        }
        assert!(os.has_daemons());
        os.tick(cfg.hawkeye.interval_cycles, &mut ch).unwrap();
        let size_at = |os: &Os, off: u64| os.translate(asid, Vaddr(base + off).vpn()).unwrap().size;
        assert_eq!(
            size_at(&os, 2 << 20),
            PageSize::Size2M,
            "hotter region promoted"
        );
        assert_eq!(size_at(&os, 0), PageSize::Size4K, "colder region waits");
        // The next interval sees only region 0's new walks: it is promoted then.
        for i in 0..20 {
            let m = os.translate(asid, Vaddr(base + i * 4096).vpn()).unwrap();
            os.note_walk(asid, &m);
        }
        os.tick(2 * cfg.hawkeye.interval_cycles, &mut ch).unwrap();
        assert_eq!(size_at(&os, 0), PageSize::Size2M);
        assert_eq!(os.hawkeye.promotions, 2);
    }
}
