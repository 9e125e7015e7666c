//! **CoalaKhugepaged**: Elastic Translations' asynchronous promotion daemon. It works through
//! Leshy's hints, hottest first: a 32 MiB hint is promoted by copy into a fresh 32 MiB block
//! (16 x 2 MiB pages the contiguous-bit management marks as one translation; compaction when
//! the allocator needs it), falling back to 2 MiB collapses of its 16 ranges when no block is
//! found or the range cannot be promoted whole; a 2 MiB hint is an ordinary collapse; a 64 KiB
//! hint has no dedicated path, so the enclosing 2 MiB range's collapse is attempted
//! (`elastic-translations-facts.md`, "CoalaKhugepaged"). The OS operations are in
//! `os/coala_khugepaged.rs`.
//!
//! Pacing as in the evaluation: one wake-up every `sleep_cycles` (1000 ms scan and allocation
//! sleep), each doing at most `pages_to_scan` (8192 = 32 MiB) pages of promotions, progress
//! counted in pages actually collapsed. The hint list is walked as a ring: a wake-up resumes
//! after the last hint it handled and stops after one lap, so hints already promoted cost
//! nothing (no progress) and ranges faulted in after their hint was handled are promoted on a
//! later lap.

use super::leshy::Hint;
use crate::addr::Vpn;
use crate::os::coala_khugepaged::PromoteOutcome;
use crate::os::{MapChange, Os};
use crate::stats::{Stats, StatsExt};
use serde::{Deserialize, Serialize};

/// `[et.khugepaged]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CoalaKhugepagedConfig {
    /// Run the daemon (it needs hints: `et.leshy.mode = "online"`, or `"offline"` with a
    /// hint file).
    pub enabled: bool,
    /// Simulated core cycles between wake-ups: the evaluation's 1000 ms scan and allocation
    /// sleep at Neoverse N1's 2.7 GHz (2.7 G cycles). Short simulated runs never reach it:
    /// scale it to the run (docs/designs/et.md).
    pub sleep_cycles: u64,
    /// Pages (4 KiB) promoted per wake-up at most, counted in pages actually collapsed
    /// (the evaluation's 8192 = 32 MiB).
    pub pages_to_scan: u64,
}

impl Default for CoalaKhugepagedConfig {
    fn default() -> Self {
        CoalaKhugepagedConfig {
            enabled: false,
            sleep_cycles: 2_700_000_000,
            pages_to_scan: 8192,
        }
    }
}

impl CoalaKhugepagedConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        if self.sleep_cycles == 0 {
            return Err("et.khugepaged.sleep_cycles must be > 0".into());
        }
        if self.pages_to_scan == 0 {
            return Err("et.khugepaged.pages_to_scan must be > 0".into());
        }
        Ok(())
    }
}

/// The daemon's counters (`et.khugepaged.*`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Wake-ups.
    pub wakeups: u64,
    /// Hints looked at.
    pub hints_handled: u64,
    /// 2 MiB collapses done (2 MiB and 64 KiB hints, and 32 MiB fallbacks).
    pub promotions_2m: u64,
    /// 32 MiB promotions done (always by copy).
    pub promotions_32m: u64,
    /// Promotions that copied data (every 32 MiB one; a 2 MiB collapse into a new block).
    pub copies: u64,
    /// Bytes copied by them.
    pub bytes_copied: u64,
    /// 32 MiB hints that fell back to 2 MiB collapses (no block, or not promotable whole).
    pub fallbacks_32m: u64,
    /// Attempts that found no free block.
    pub no_block: u64,
}

/// CoalaKhugepaged's state.
#[derive(Clone, Debug)]
pub struct CoalaKhugepaged {
    cfg: CoalaKhugepagedConfig,
    hints: Vec<Hint>,
    cursor: usize,
    next_wake: u64,
    /// Counters.
    pub c: Counters,
}

impl CoalaKhugepaged {
    /// A daemon with no hints; the first wake-up is `sleep_cycles` in.
    pub fn new(cfg: &CoalaKhugepagedConfig) -> CoalaKhugepaged {
        CoalaKhugepaged {
            cfg: cfg.clone(),
            hints: Vec::new(),
            cursor: 0,
            next_wake: cfg.sleep_cycles,
            c: Counters::default(),
        }
    }

    /// Replace the hint list (hottest first); the next wake-up starts at the hottest.
    pub fn set_hints(&mut self, hints: Vec<Hint>) {
        self.hints = hints;
        self.cursor = 0;
    }

    /// Run the wake-ups due by `now_cycles`.
    pub fn tick(&mut self, os: &mut Os, now_cycles: u64, changes: &mut Vec<MapChange>) {
        while now_cycles >= self.next_wake {
            self.next_wake += self.cfg.sleep_cycles;
            self.wake(os, changes);
        }
    }

    /// One wake-up: promote hinted ranges, hottest first, until `pages_to_scan` pages were
    /// collapsed, an allocation failed (the allocation sleep), or every hint was looked at.
    pub fn wake(&mut self, os: &mut Os, changes: &mut Vec<MapChange>) {
        self.c.wakeups += 1;
        let mut progress = 0;
        let n = self.hints.len();
        for _ in 0..n {
            if progress >= self.cfg.pages_to_scan {
                break;
            }
            let h = self.hints[self.cursor % n];
            self.cursor = (self.cursor + 1) % n;
            self.c.hints_handled += 1;
            let r = h.region;
            let (pages, failed) = if r.level == 3 {
                self.promote_32m(os, r.asid, Vpn(r.vpn), changes)
            } else {
                // 2 MiB hint, or the 2 MiB range enclosing a 64 KiB hint.
                self.collapse_2m(os, r.asid, Vpn(r.vpn & !511), changes)
            };
            progress += pages;
            if failed {
                break;
            }
        }
    }

    /// A 2 MiB collapse; returns (pages collapsed, allocation failed).
    fn collapse_2m(
        &mut self,
        os: &mut Os,
        asid: crate::addr::Asid,
        first: Vpn,
        changes: &mut Vec<MapChange>,
    ) -> (u64, bool) {
        match os.coala_collapse_2m(asid, first, changes) {
            PromoteOutcome::Done { bytes_copied } => {
                self.c.promotions_2m += 1;
                if bytes_copied > 0 {
                    self.c.copies += 1;
                    self.c.bytes_copied += bytes_copied;
                }
                (512, false)
            }
            PromoteOutcome::NoBlock => {
                self.c.no_block += 1;
                (0, true)
            }
            PromoteOutcome::AlreadyDone | PromoteOutcome::NotEligible => (0, false),
        }
    }

    /// A 32 MiB promotion by copy, else 2 MiB collapses of its 16 ranges; returns (pages
    /// collapsed, allocation failed).
    fn promote_32m(
        &mut self,
        os: &mut Os,
        asid: crate::addr::Asid,
        first: Vpn,
        changes: &mut Vec<MapChange>,
    ) -> (u64, bool) {
        match os.coala_promote_32m(asid, first, changes) {
            PromoteOutcome::Done { bytes_copied } => {
                self.c.promotions_32m += 1;
                self.c.copies += 1;
                self.c.bytes_copied += bytes_copied;
                (8192, false)
            }
            PromoteOutcome::AlreadyDone => (0, false),
            outcome => {
                if outcome == PromoteOutcome::NoBlock {
                    self.c.no_block += 1;
                }
                self.c.fallbacks_32m += 1;
                let mut pages = 0;
                for i in 0..16 {
                    let (p, failed) = self.collapse_2m(os, asid, Vpn(first.0 + i * 512), changes);
                    pages += p;
                    if failed {
                        return (pages, true);
                    }
                }
                (pages, false)
            }
        }
    }

    /// Write the `khugepaged` section of `s` (the `et` section).
    pub fn stats(&self, s: &mut Stats) {
        let k = s.section("khugepaged");
        let c = &self.c;
        k.put_u64("wakeups", c.wakeups);
        k.put_u64("hints_handled", c.hints_handled);
        k.put_u64("promotions_2m", c.promotions_2m);
        k.put_u64("promotions_32m", c.promotions_32m);
        k.put_u64("copies", c.copies);
        k.put_u64("bytes_copied", c.bytes_copied);
        k.put_u64("fallbacks_32m", c.fallbacks_32m);
        k.put_u64("no_block", c.no_block);
    }
}
