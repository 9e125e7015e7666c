//! The OS model's accounting (Linux `mm/vmstat.c`): the `os` section of the result record and
//! the OS cycles the engine charges (the cost mark taken around each fault, background work).
//!
//! Contract: the section's keys and their order are part of the result record (golden
//! snapshots); a policy's or daemon's own keys are written where the configured policy's
//! `stats_into` hook puts them.

use super::phys::FrameUse;
use super::{Os, ThpPolicy};
use crate::addr::{PageSize, BASE_PAGE_BYTES};
use crate::stats::{Stats, StatsExt};

impl Os {
    /// The OS-model work so far that a fault's latency is measured by (allocation work:
    /// zeroing and direct compaction; copies, shootdowns, daemons, swap): the engine takes it
    /// before and after a fault (see `fault_latency`).
    #[inline]
    pub fn fault_cost_mark(&self) -> u64 {
        self.phys.alloc_work_cycles() + self.extra_os_cycles()
    }

    /// Count one fault of `cycles` in `os.fault_latency` (see `fault_latency`).
    #[inline]
    pub fn record_fault_latency(&mut self, cycles: u64) {
        self.fault_latency.record(cycles);
    }

    /// OS cycles of background work and page moves so far (beyond fault handling).
    pub fn extra_os_cycles(&self) -> u64 {
        self.c.daemon_cycles
            + self.c.migration_cycles
            + self.swap.swap_ins * self.cfg.swap.swap_in_cycles
            + self.swap.swap_outs * self.cfg.swap.swap_out_cycles
    }

    /// Write the `os` section of the result record.
    pub fn stats(&self, out: &mut Stats) {
        let s = out.section("os");
        let c = &self.c;
        s.put_u64("page_faults", c.faults);
        s.put_u64("faults_2m", c.faults_2m);
        s.put_u64(
            "thp_fallbacks",
            c.fallback_unaligned + c.fallback_partly_mapped + c.fallback_no_block,
        );
        s.put_u64("thp_fallback_unaligned", c.fallback_unaligned);
        s.put_u64("thp_fallback_partly_mapped", c.fallback_partly_mapped);
        s.put_u64("thp_fallback_no_block", c.fallback_no_block);
        s.put_u64("thp_fallback_not_advised", c.fallback_not_advised);
        s.put_u64("data_bytes", self.phys.bytes_in_use(FrameUse::Data));
        s.put_u64("data_peak_bytes", self.phys.peak_bytes(FrameUse::Data));
        s.put_u64(
            "page_table_bytes",
            self.phys.bytes_in_use(FrameUse::PageTable),
        );
        s.put_u64(
            "page_table_peak_bytes",
            self.phys.peak_bytes(FrameUse::PageTable),
        );
        s.put_u64("pinned_bytes", self.phys.pinned_bytes());
        s.put_u64("phys_mem_bytes", self.phys.total_bytes());
        s.put_f64("fmfi_target", self.cfg.fmfi_target);
        s.put_u64("fmfi_order", self.cfg.fmfi_order as u64);
        s.put_f64("fmfi_before", self.fmfi_before);
        s.put_f64("fmfi_end", self.phys.fmfi(self.cfg.fmfi_order));
        s.insert(
            "free_blocks_before".into(),
            self.free_blocks_before.to_vec().into(),
        );
        s.insert(
            "free_blocks_end".into(),
            self.phys.free_blocks().to_vec().into(),
        );
        s.put_str(
            "thp",
            match self.cfg.thp {
                ThpPolicy::Never => "never",
                ThpPolicy::Madvise => "madvise",
                ThpPolicy::Always => "always",
            },
        );
        s.put_u64("processes", self.procs.len() as u64);
        s.put_u64("vmas", self.procs.iter().map(|p| p.vmas.len() as u64).sum());
        let (m4k, m2m) = self
            .procs
            .iter()
            .map(|p| p.pages.counts())
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        s.put_u64("mapped_4k", m4k);
        s.put_u64("mapped_2m", m2m);
        self.phys.compaction_stats_into(s);
        // The page-size distribution: mapped bytes per size, every size that has a page.
        let mut by_order = [0u64; PageSize::MAX_ORDER as usize + 1];
        for p in &self.procs {
            for (o, n) in p.pages.pages_by_order().iter().enumerate() {
                by_order[o] += n;
            }
        }
        let mut dist = Stats::new();
        for (o, n) in by_order.iter().enumerate() {
            if *n > 0 {
                let size = PageSize::from_order(o as u8).expect("order");
                dist.put_u64(&size.label(), n * size.bytes());
            }
        }
        s.insert(
            "mapped_bytes_by_size".into(),
            serde_json::Value::Object(dist),
        );
        // Address-space regularity (LVM §3.1): each process's page map when it exited, or at
        // the end of the run.
        let mut gaps = self.exited_va_gaps.clone();
        for p in &self.procs {
            gaps.add_address_space(&p.pages.mapped_runs());
        }
        s.insert("va_gaps".into(), serde_json::Value::Object(gaps.stats()));
        s.put_str("policy", self.cfg.policy.name());
        if self.fault_latency.count() > 0 {
            self.fault_latency.stats_into(s);
        }
        self.hugetlb.stats_into(s);
        s.put_u64("reserved_bytes", self.phys.bytes_in_use(FrameUse::Reserved));
        let c = &self.c;
        s.put_u64("placed_by_design", c.placed_by_design);
        self.policy_stats_into(s);
        if self.cfg.kcompactd.enabled {
            s.put_u64("kcompactd_wakeups", c.kcompactd_wakeups);
        }
        if self.cfg.khugepaged.enabled {
            let k = s.section("khugepaged");
            k.put_u64("wakeups", c.khugepaged_wakeups);
            k.put_u64("pages_scanned", c.khugepaged_pages_scanned);
            k.put_u64("collapses", c.collapses);
            k.put_u64("collapses_in_place", c.collapses_in_place);
            k.put_u64("collapse_no_block", c.collapse_no_block);
        }
        s.put_u64("migrations", c.migrations);
        s.put_u64("splits", c.splits);
        s.put_u64("shootdowns", c.shootdowns);
        s.put_u64("bytes_copied", c.bytes_copied);
        s.put_u64("daemon_cycles", c.daemon_cycles);
        s.put_u64("migration_cycles", c.migration_cycles);
        if self.swap_on {
            let w = s.section("swap");
            w.put_u64("bytes", self.cfg.swap.bytes);
            w.put_u64("used_bytes", self.swap.used_pages * BASE_PAGE_BYTES);
            w.put_u64("swap_outs", self.swap.swap_outs);
            w.put_u64("swap_ins", self.swap.swap_ins);
            w.put_u64("major_faults", self.swap.swap_ins);
            w.put_u64("reclaims", self.swap.reclaims);
            w.put_u64("reclaim_scans", self.swap.scanned);
        }
    }
}
