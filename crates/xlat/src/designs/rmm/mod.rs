//! # rmm — Redundant Memory Mappings: radix plus a range table filling a range TLB
//!
//! ## Model
//! The x86-64 radix table of [`crate::designs::radix`] (same walk, same page-walk caches), plus a
//! per-process *range table*: the maximal runs of mapped pages that are virtually and
//! physically contiguous with one permission, of any size and alignment (RMM's range
//! translations). The table follows every map and unmap: a new page joins the ranges it
//! continues on either side; an unmap splits the range that held it. On an L2 TLB miss the page
//! walk translates the reference as on radix, and the range-table walker, in the background and
//! off the critical path (§4.2), fetches the range holding the address into the range TLB beside
//! the L2 (`tlb.range`, 32 entries in the paper; [`Design::range`]); later L1 misses inside the
//! range hit there and walk no more.
//!
//! Ranges come from the OS policy's contiguity: with `os.policy = "eager"` (RMM's eager paging,
//! §4.3) a VMA is mapped at `mmap` in the largest aligned pages that fit, and consecutive blocks
//! from the buddy allocator are often physically adjacent, so a VMA tends to become one or a few
//! ranges; under demand paging ranges are whatever runs of adjacent frames faults produced.
//!
//! Statistics (`rmm.*`): the radix walk figures (`levels`, `pwc_*`), `ranges` (in the table at
//! the end), `peak_ranges`, `range_table_walks` (background walks, one per L2 miss with a range
//! TLB), `range_table_hits` (walks that found a range), `range_table_refs` (estimated memory
//! references of those background walks: one per level of a B-tree of fan-out
//! `btree_fanout` over the process's ranges; not on the critical path, not in `walk.mem_refs`).
//!
//! ## Configuration
//! `[rmm]`: `btree_fanout` (4: RMM's range table is a B-tree of 4-range nodes, §4.2), and
//! `[rmm.radix]` with the fields of `[radix]`. The range TLB itself is the machine's:
//! `--set tlb.range.entries=32` (without it, RMM behaves as radix).
//!
//! ## Deviations from the paper
//! - The OS keeps the range table as the maximal contiguous runs of what is mapped, not as the
//!   ranges its eager allocations created: a range may span several VMAs' worth of adjacent
//!   allocations, and two adjacent allocations of one VMA that the buddy allocator placed apart
//!   are two ranges (as in RMM, where each contiguous allocation is one range).
//! - The range TLB is filled after every TLB-miss walk, and a range-TLB hit does not refill the
//!   L1 (docs/machine.md): L1 misses inside ranges keep paying the L2 stage's latency.
//! - The background range-table walk's references are counted but not issued through the caches.
//!
//! ## References
//! Karakostas et al., "Redundant Memory Mappings for Fast Access to Large Memories", ISCA 2015:
//! §4.1 (range translations), §4.2 (range TLB, range table, background walk), §4.3 (eager
//! paging); TPS (ISCA 2020) §IV-B uses it as a comparison point with a 32-entry range TLB.

use crate::addr::{Asid, Mapping, Pfn, Vpn};
use crate::designs::radix::{Radix, RadixConfig};
use crate::designs::Design;
use crate::mmu::VaRange;
use crate::os::{OsError, PhysMem};
use crate::stats::{Stats, StatsExt};
use serde::{Deserialize, Serialize};
use std::cell::Cell;
use std::collections::BTreeMap;

/// `[rmm]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RmmConfig {
    /// Ranges per node of the range table's B-tree (for the estimated background-walk
    /// references).
    pub btree_fanout: u32,
    /// The radix table and its page-walk caches.
    pub radix: RadixConfig,
}

impl Default for RmmConfig {
    fn default() -> Self {
        RmmConfig {
            btree_fanout: 4,
            radix: RadixConfig::default(),
        }
    }
}

impl RmmConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        if self.btree_fanout < 2 {
            return Err(format!(
                "btree_fanout must be at least 2, got {}",
                self.btree_fanout
            ));
        }
        self.radix.validate().map_err(|e| format!("radix.{e}"))
    }
}

/// One range: `[start, end)` mapped to frames from `pfn` with one permission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    end: u64,
    pfn: u64,
    writable: bool,
}

/// The range tables of every process: maximal contiguous runs of mapped pages.
///
/// Contract: ranges of one ASID never overlap and never touch with continuing frames and equal
/// permission (they would be one range); every base page of a range is mapped to the frame the
/// range implies.
#[derive(Clone, Debug, Default)]
pub struct RangeTable {
    /// (ASID, first VPN) -> range.
    by_start: BTreeMap<(Asid, u64), Range>,
    /// Ranges per ASID.
    counts: Vec<usize>,
    peak: usize,
}

impl RangeTable {
    /// Record mapping `m`, merging it with the ranges it continues.
    pub fn map(&mut self, asid: Asid, m: Mapping) {
        let mut start = m.vpn.0;
        let mut r = Range {
            end: m.vpn.0 + m.size.base_pages(),
            pfn: m.pfn.0,
            writable: m.writable,
        };
        if let Some((&(a, s), &left)) = self.by_start.range(..(asid, start)).next_back() {
            if a == asid
                && left.end == start
                && left.writable == r.writable
                && left.pfn + (start - s) == r.pfn
            {
                self.remove(a, s);
                start = s;
                r.pfn = left.pfn;
            }
        }
        if let Some(right) = self.by_start.get(&(asid, r.end)).copied() {
            if right.writable == r.writable && r.pfn + (r.end - start) == right.pfn {
                self.remove(asid, r.end);
                r.end = right.end;
            }
        }
        self.insert(asid, start, r);
        self.peak = self.peak.max(self.by_start.len());
    }

    fn insert(&mut self, asid: Asid, start: u64, r: Range) {
        if self.counts.len() <= asid as usize {
            self.counts.resize(asid as usize + 1, 0);
        }
        self.counts[asid as usize] += 1;
        self.by_start.insert((asid, start), r);
    }

    fn remove(&mut self, asid: Asid, start: u64) {
        if self.by_start.remove(&(asid, start)).is_some() {
            self.counts[asid as usize] -= 1;
        }
    }

    /// Forget mapping `m`, splitting the range that held it.
    pub fn unmap(&mut self, asid: Asid, m: Mapping) {
        let Some((&(a, s), &r)) = self.by_start.range(..=(asid, m.vpn.0)).next_back() else {
            return;
        };
        if a != asid || r.end <= m.vpn.0 {
            return;
        }
        self.remove(a, s);
        let end = m.vpn.0 + m.size.base_pages();
        if s < m.vpn.0 {
            self.insert(asid, s, Range { end: m.vpn.0, ..r });
        }
        if end < r.end {
            self.insert(
                asid,
                end,
                Range {
                    end: r.end,
                    pfn: r.pfn + (end - s),
                    writable: r.writable,
                },
            );
        }
    }

    /// The range holding `vpn`, if any.
    pub fn lookup(&self, asid: Asid, vpn: Vpn) -> Option<VaRange> {
        let (&(a, s), r) = self.by_start.range(..=(asid, vpn.0)).next_back()?;
        (a == asid && vpn.0 < r.end).then_some(VaRange {
            vpn_start: Vpn(s),
            vpn_end: Vpn(r.end),
            pfn_start: Pfn(r.pfn),
            writable: r.writable,
        })
    }

    /// Ranges held now (every process).
    pub fn len(&self) -> usize {
        self.by_start.len()
    }

    /// Whether no range is held.
    pub fn is_empty(&self) -> bool {
        self.by_start.is_empty()
    }

    /// Ranges of `asid`.
    pub fn count_of(&self, asid: Asid) -> usize {
        self.counts.get(asid as usize).copied().unwrap_or(0)
    }
}

/// RMM: radix page walks plus a range table that fills the range TLB.
pub struct Rmm {
    radix: Radix,
    ranges: RangeTable,
    fanout: u32,
    /// Counters of the background walks (`Design::range` takes `&self`).
    range_walks: Cell<u64>,
    range_hits: Cell<u64>,
    range_refs: Cell<u64>,
}

impl Rmm {
    /// Levels of a B-tree of fan-out `fanout` over `n` ranges (at least 1).
    fn btree_levels(&self, n: usize) -> u64 {
        let mut levels = 1;
        let mut reach = self.fanout as usize;
        while reach < n {
            reach = reach.saturating_mul(self.fanout as usize);
            levels += 1;
        }
        levels
    }
}

impl Design for Rmm {
    type Config = RmmConfig;
    crate::designs::radix::forward_to_inner_radix!();

    fn new(cfg: &RmmConfig, phys: &mut PhysMem) -> Result<Self, OsError> {
        Ok(Rmm {
            radix: Radix::new(&cfg.radix, phys)?,
            ranges: RangeTable::default(),
            fanout: cfg.btree_fanout,
            range_walks: Cell::new(0),
            range_hits: Cell::new(0),
            range_refs: Cell::new(0),
        })
    }

    fn range(&self, asid: Asid, vpn: Vpn) -> Option<VaRange> {
        self.range_walks.set(self.range_walks.get() + 1);
        let levels = self.btree_levels(self.ranges.count_of(asid));
        self.range_refs.set(self.range_refs.get() + levels);
        let r = self.ranges.lookup(asid, vpn);
        if r.is_some() {
            self.range_hits.set(self.range_hits.get() + 1);
        }
        r
    }

    fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
        self.radix.map(phys, asid, m)?;
        self.ranges.map(asid, m);
        Ok(())
    }

    fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
        self.ranges.unmap(asid, m);
        self.radix.unmap(phys, asid, m)
    }

    fn stats(&self, out: &mut Stats) {
        let s = out.section("rmm");
        self.radix.write_stats(s);
        s.put_u64("ranges", self.ranges.len() as u64);
        s.put_u64("peak_ranges", self.ranges.peak as u64);
        s.put_u64("range_table_walks", self.range_walks.get());
        s.put_u64("range_table_hits", self.range_hits.get());
        s.put_u64("range_table_refs", self.range_refs.get());
    }
}

/// This design's profile (`profile.toml` beside this file): the settings its paper assumes
/// around it, applied when the design is named (format and rules: `crate::profiles`).
pub const PROFILE: &str = include_str!("profile.toml");

#[cfg(test)]
mod tests;
