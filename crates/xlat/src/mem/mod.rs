//! The memory hierarchy shared by data and page-table references: set-associative L1D, L2 and
//! LLC, and DRAM with channels, banks and row buffers.
//!
//! Contract: every access returns its latency in core cycles and the level that served it; every
//! line remembers whether it holds data or page-table entries, so the report can show the
//! page-table share of each cache and misses by kind. Page-table references from the walker enter
//! at L2 by default (`mem.walk_entry = "l1"` makes them enter at L1D).
//!
//! ## Model
//! - Three set-associative levels (L1D, L2, LLC), 64-byte lines, LRU or SRRIP; write-allocate,
//!   write-back. Non-inclusive: a miss fills every level it passed through; a dirty victim is
//!   written into the next level if that level holds the line, else to DRAM (as a DRAM write that
//!   moves row buffers but costs no latency).
//! - Lookups are serial: an access pays the hit latency of every level it looked up, plus the DRAM
//!   latency when all missed.
//! - DRAM: see [`dram`] (channels, banks, open-page row buffers, DDR4-3200-like defaults). A
//!   queued DRAM model (`dram/controller.rs`: queues, FR-FCFS, bank and bus timing, refresh) is
//!   built beside it but not called by this hierarchy yet.
//! - Every line carries the kind of the access that filled it (data or page table).
//!
//! ## Nested translation
//! In a nested run (`virt.enabled`) the memory system holds the host ([`HostTranslate`], built
//! by `crate::virt`): every page-table reference carries a guest-physical address, which the
//! host translates (its own walk's references come back here without the hook) before the
//! read is made at the host-physical address. The trait is defined here, with the hook, so
//! that this module depends only on the address, OS-error and TLB-entry types below it.
//!
//! ## Configuration
//! `mem.l1d`, `mem.l2`, `mem.llc` (`size_bytes`, `ways`, `latency_cycles`, `policy`),
//! `mem.walk_entry` (`l2` | `l1`), `mem.l2_prefetcher.*` (see [`PrefetcherConfig`]),
//! `mem.dram.*` (see [`DramConfig`]).
//!
//! ## Deviations and limits
//! No MSHRs, queueing or bandwidth limits here (the out-of-order core times them from the
//! events, `timing/ooo/memory.rs`); the only prefetcher is the L2's optional stream
//! prefetcher (`mem.l2_prefetcher`, `prefetch.rs`; off by default); no coherence between cores' private
//! levels (`sim.cores` > 1 shares the LLC and DRAM only); the page-table
//! share of a cache is sampled every 1024 hierarchy accesses.
//!
//! ## Stats
//! `cache.{l1d,l2,llc}.{accesses,hits,misses,data_accesses,data_misses,pt_accesses,pt_misses,
//! miss_rate,evictions,writebacks,pt_line_share,pt_line_share_avg}`,
//! `cache.pt_served_{l1,l2,llc,dram}` (page-walk references by the level that served them),
//! `dram.{accesses,reads,writes,pt_reads,row_hits,row_empty,row_conflicts,row_hit_rate,
//! avg_read_latency_cycles}`.
//!
//! ## References
//! Jaleel et al., "High performance cache replacement using re-reference interval prediction
//! (RRIP)", ISCA 2010; JEDEC DDR4 timing; the machine tables of the LVM / Utopia / ME-HPT papers.

pub mod cache;
pub mod dram;
pub mod prefetch;

pub use cache::{CacheLevelConfig, ReplacementPolicy};
pub use dram::{DramConfig, DramMapping, DramModel, DramTimingSet, DramTimings};
pub use prefetch::{PrefetcherConfig, PrefetcherKind};

use cache::{Cache, Evicted, DATA, PT};
use dram::Dram;

use crate::addr::{Mapping, Paddr, PageSizeSet, Pfn};
use crate::mmu::CoalescedSpan;
use crate::os::OsError;
use crate::stats::{ratio, Stats, StatsExt};
use serde::{Deserialize, Serialize};

/// Where page-walk references enter the cache hierarchy.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum WalkEntry {
    /// At L1D.
    L1,
    /// At L2 (default; the papers' setting).
    L2,
}

/// Caches and DRAM.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MemConfig {
    /// L1 data cache.
    pub l1d: CacheLevelConfig,
    /// Private L2.
    pub l2: CacheLevelConfig,
    /// Last-level cache.
    pub llc: CacheLevelConfig,
    /// Where page-walk references enter.
    pub walk_entry: WalkEntry,
    /// The L2's prefetcher (off by default; `mem/prefetch.rs`).
    pub l2_prefetcher: PrefetcherConfig,
    /// DRAM.
    pub dram: DramConfig,
}

impl Default for MemConfig {
    fn default() -> Self {
        MemConfig {
            l1d: CacheLevelConfig {
                size_bytes: 32 << 10,
                ways: 8,
                latency_cycles: 4,
                policy: ReplacementPolicy::Lru,
            },
            l2: CacheLevelConfig {
                size_bytes: 1 << 20,
                ways: 16,
                latency_cycles: 14,
                policy: ReplacementPolicy::Lru,
            },
            llc: CacheLevelConfig {
                size_bytes: 2 << 20,
                ways: 16,
                latency_cycles: 40,
                policy: ReplacementPolicy::Srrip,
            },
            walk_entry: WalkEntry::L2,
            l2_prefetcher: PrefetcherConfig::default(),
            dram: DramConfig::default(),
        }
    }
}

impl MemConfig {
    /// Check sizes and associativities.
    pub fn validate(&self) -> Result<(), String> {
        for (name, c) in [("l1d", &self.l1d), ("l2", &self.l2), ("llc", &self.llc)] {
            let lines = c.size_bytes / 64;
            if c.ways == 0 || c.ways > cache::MAX_WAYS || lines == 0 || lines % c.ways as u64 != 0 {
                return Err(format!(
                    "mem.{name}.size_bytes ({}) is not a whole number of {}-way sets of 64-byte \
                     lines (mem.{name}.ways)",
                    c.size_bytes, c.ways
                ));
            }
        }
        self.l2_prefetcher.validate("l2_prefetcher")?;
        self.dram.validate()?;
        Ok(())
    }
}

/// The level that served an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServedBy {
    /// L1 data cache.
    L1,
    /// L2.
    L2,
    /// Last-level cache.
    Llc,
    /// DRAM.
    Dram,
}

/// Result of one access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemAccess {
    /// Latency in core cycles.
    pub latency_cycles: u32,
    /// Level that served it.
    pub served_by: ServedBy,
}

/// The levels private to one core: L1D and L2, with the core's page-walk service counts and
/// page-table share samples. With several cores (`sim.cores`), each core owns one; the engine
/// swaps the running core's into the [`MemSystem`] (see [`MemSystem::swap_private`]).
pub struct PrivateCaches {
    l1: Cache,
    l2: Cache,
    /// The L2's stream prefetcher (`mem.l2_prefetcher.kind = "stream"`).
    prefetcher: Option<prefetch::StreamPrefetcher>,
    pt_served: [u64; 4],
    /// Latency summed over the page-walk references of `pt_served`, by the same level.
    pt_served_cycles: [u64; 4],
    /// Hierarchy accesses until the next page-table share sample.
    until_sample: u64,
    share_samples: u64,
    share_sum: [f64; 3],
}

impl PrivateCaches {
    /// Cold L1D and L2 of one core.
    pub fn new(cfg: &MemConfig) -> Self {
        PrivateCaches {
            l1: Cache::new(&cfg.l1d),
            l2: Cache::new(&cfg.l2),
            prefetcher: (cfg.l2_prefetcher.kind == PrefetcherKind::Stream)
                .then(|| prefetch::StreamPrefetcher::new(&cfg.l2_prefetcher)),
            pt_served: [0; 4],
            pt_served_cycles: [0; 4],
            until_sample: SHARE_SAMPLE_PERIOD,
            share_samples: 0,
            share_sum: [0.0; 3],
        }
    }
}

/// The cache hierarchy plus DRAM, as the running core sees it: its private L1D and L2
/// (`private`) in front of the LLC and DRAM that every core shares.
///
/// Multi-core contract: exactly one core's [`PrivateCaches`] is installed at a time; the LLC and
/// DRAM are never swapped, so cores contend for LLC capacity and DRAM banks and rows by sharing
/// them. No coherence traffic is modeled between the private levels of different cores.
pub struct MemSystem {
    private: PrivateCaches,
    llc: Cache,
    dram: Dram,
    walk_entry: WalkEntry,
    /// Nested translation (`virt.enabled`, one core, see `crate::virt`): the host that translates the
    /// guest-physical address of every page-table reference first. `None` natively; taken out
    /// while the host walks, so the host's own references go straight to memory.
    pub(crate) nested: Option<Box<dyn HostTranslate>>,
    /// The accesses below their entry level since the last [`MemSystem::clear_events`], for the
    /// out-of-order core to time (logged only under the queued DRAM model, see [`MemEvent`]).
    events: Vec<MemEvent>,
    log_events: bool,
    /// Log the prefetcher's events (`Prefetch`, `PrefetchHit`) for the out-of-order core,
    /// whatever the DRAM model.
    log_prefetches: bool,
    /// Page-walk cycles so far in this reference (the offset of the next page-table read), and
    /// the parallel group in progress: its start and its slowest member (see
    /// [`MemSystem::begin_parallel`]).
    walk_clock: u32,
    parallel: Option<(u32, u32)>,
    /// Whether the next event of a parallel group is its first.
    group_first: bool,
}

/// What one access below the level where it entered costs, as the out-of-order core needs it
/// to time MSHRs and DRAM queueing at the request's time (`mem.dram.model = "queued"`): the
/// functional state changed in program order when it was logged; only its timing is left.
///
/// Contract: a reference's events are its page walk's (page-table reads that missed the walk's
/// entry level, and DRAM write-backs their fills caused), in walk order, then its data
/// access's (the miss below L1D, if it reached DRAM, and write-backs; with the L2 prefetcher on,
/// `PrefetchHit` if it found a prefetched line in the L2, then the prefetches it triggered and
/// their write-backs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemEvent {
    /// Line address.
    pub line: u64,
    /// Page-table reads and their write-backs: cycles into the walk at which it is requested
    /// (the walk's earlier page-table reads, serially; a parallel group's members share one).
    pub offset_cycles: u32,
    /// Idle latency from its request to its data (reads).
    pub latency_cycles: u32,
    /// Cycles from its request until it reaches DRAM (the cache lookups), for DRAM reads.
    pub pre_dram_cycles: u32,
    /// The idle DRAM latency inside `latency_cycles` (0: served by a cache).
    pub dram_cycles: u32,
    /// The MSHR pools it holds: levels `first_pool..last_pool` (0 L1D, 1 L2, 2 LLC).
    pub first_pool: u8,
    /// See `first_pool`.
    pub last_pool: u8,
    /// What it is.
    pub kind: MemEventKind,
    /// Issued together with the event before it (a parallel group costs its slowest member).
    pub parallel: bool,
}

/// What a [`MemEvent`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemEventKind {
    /// A page-table read.
    PtRead,
    /// A data read (the reference's own miss).
    DataRead,
    /// A dirty line written back to DRAM.
    Write,
    /// A line the L2 prefetcher fetches, triggered by this reference's L2 access: requested at
    /// the L2 once the reference's L1D miss is granted, holding MSHRs `first_pool..last_pool`
    /// for `latency_cycles` (`pre_dram_cycles` + `dram_cycles` when it reads DRAM).
    Prefetch,
    /// The reference's L1D miss found a line the prefetcher filled into the L2 (its first
    /// demand): its data is there no earlier than that prefetch's fill.
    PrefetchHit,
}

impl MemEvent {
    /// The `PrefetchHit` event of a demand that found `line` prefetched into the L2.
    pub fn prefetch_hit(line: u64) -> MemEvent {
        MemEvent {
            line,
            offset_cycles: 0,
            latency_cycles: 0,
            pre_dram_cycles: 0,
            dram_cycles: 0,
            first_pool: 1,
            last_pool: 1,
            kind: MemEventKind::PrefetchHit,
            parallel: false,
        }
    }
}

/// How often (in hierarchy accesses) the page-table share of each cache is sampled.
const SHARE_SAMPLE_PERIOD: u64 = 1024;

impl MemSystem {
    /// Build an empty (cold) hierarchy.
    pub fn new(cfg: &MemConfig) -> Self {
        MemSystem {
            private: PrivateCaches::new(cfg),
            llc: Cache::new(&cfg.llc),
            dram: Dram::new(&cfg.dram),
            walk_entry: cfg.walk_entry,
            nested: None,
            events: Vec::new(),
            log_events: false,
            log_prefetches: false,
            walk_clock: 0,
            parallel: None,
            group_first: false,
        }
    }

    /// Log the accesses below their entry level as [`MemEvent`]s (the queued DRAM model's
    /// timing, done by the out-of-order core).
    pub fn set_log_events(&mut self, on: bool) {
        self.log_events = on;
    }

    /// Log the L2 prefetcher's [`MemEvent`]s (when an out-of-order core times the run).
    pub fn set_log_prefetches(&mut self, on: bool) {
        self.log_prefetches = on && self.private.prefetcher.is_some();
    }

    /// Forget the events logged so far and start a reference's walk clock at 0.
    #[inline]
    pub fn clear_events(&mut self) {
        self.events.clear();
        self.walk_clock = 0;
    }

    /// The events logged since [`MemSystem::clear_events`].
    #[inline]
    pub fn events(&self) -> &[MemEvent] {
        &self.events
    }

    /// Start a group of page-table reads issued in parallel (until
    /// [`MemSystem::end_parallel`]): they share one offset and the walk clock moves by the
    /// slowest of them.
    pub fn begin_parallel(&mut self) {
        self.parallel = Some((self.walk_clock, 0));
        self.group_first = true;
    }

    /// End the group [`MemSystem::begin_parallel`] started.
    pub fn end_parallel(&mut self) {
        if let Some((start, slowest)) = self.parallel.take() {
            self.walk_clock = start.saturating_add(slowest);
        }
    }

    #[cold]
    #[inline(never)]
    fn log(&mut self, e: MemEvent) {
        self.events.push(e);
    }

    /// Install another core's private levels (the previous ones are left in `other`).
    pub fn swap_private(&mut self, other: &mut PrivateCaches) {
        std::mem::swap(&mut self.private, other);
    }

    #[inline]
    fn sample(&mut self) {
        let p = &mut self.private;
        p.until_sample -= 1;
        if p.until_sample == 0 {
            p.until_sample = SHARE_SAMPLE_PERIOD;
            p.share_samples += 1;
            for (i, c) in [&p.l1, &p.l2, &self.llc].into_iter().enumerate() {
                p.share_sum[i] += c.pt_lines as f64 / c.lines() as f64;
            }
        }
    }

    #[inline(always)]
    fn writeback_from(&mut self, level: usize, ev: Option<Evicted>) {
        let Some(ev) = ev.filter(|e| e.dirty) else {
            return;
        };
        self.write_back(level, ev);
    }

    /// Write a dirty victim of `level` back to the first level below that holds it, else DRAM.
    #[inline(never)]
    fn write_back(&mut self, level: usize, ev: Evicted) {
        if level < 1 && self.private.l2.absorb_writeback(ev.line) {
            return;
        }
        if level < 2 && self.llc.absorb_writeback(ev.line) {
            return;
        }
        self.dram.write(ev.line);
        if self.log_events {
            self.log(MemEvent {
                line: ev.line,
                offset_cycles: self.walk_clock,
                latency_cycles: 0,
                pre_dram_cycles: 0,
                dram_cycles: 0,
                first_pool: 0,
                last_pool: 0,
                kind: MemEventKind::Write,
                parallel: false,
            });
        }
    }

    /// Look `line` up from level `start` (0 = L1, 1 = L2) down; fill on the way back.
    #[inline(always)]
    fn access(&mut self, line: u64, kind: u8, write: bool, start: usize) -> MemAccess {
        self.sample();
        let mut lat = 0;
        if start == 0 {
            lat += self.private.l1.latency_cycles;
            if self.private.l1.lookup(line, kind, write) {
                return MemAccess {
                    latency_cycles: lat,
                    served_by: ServedBy::L1,
                };
            }
            // The fill below will write a dirty victim back into L2: start fetching that set
            // now, so the host's latency overlaps the lookups and fills in between.
            if let Some(victim) = self.private.l1.dirty_victim(line) {
                self.private.l2.prefetch(victim);
            }
        }
        lat += self.private.l2.latency_cycles;
        let served_by = if self.private.l2.lookup(line, kind, false) {
            if self.private.l2.take_prefetched_hit() && self.log_prefetches {
                self.log_prefetch_hit(line);
            }
            ServedBy::L2
        } else {
            lat += self.llc.latency_cycles;
            let served = if self.llc.lookup(line, kind, false) {
                ServedBy::Llc
            } else {
                let dram = self.dram.read(line, kind == PT).0;
                if self.log_events {
                    self.log_read(line, kind, start, lat, dram);
                }
                lat += dram;
                let ev = self.llc.fill(line, kind, false);
                self.writeback_from(2, ev);
                ServedBy::Dram
            };
            if served == ServedBy::Llc && self.log_events && kind == PT {
                self.log_read(line, kind, start, lat, 0);
            }
            let ev = self.private.l2.fill(line, kind, false);
            self.writeback_from(1, ev);
            served
        };
        if start == 0 {
            let ev = self.private.l1.fill(line, kind, write);
            self.writeback_from(0, ev);
            if kind == DATA && self.private.prefetcher.is_some() {
                self.l2_prefetch(line, served_by != ServedBy::L2);
            }
        }
        MemAccess {
            latency_cycles: lat,
            served_by,
        }
    }

    #[cold]
    #[inline(never)]
    fn log_prefetch_hit(&mut self, line: u64) {
        self.log(MemEvent::prefetch_hit(line));
    }

    /// Train the L2 prefetcher on a data access to `line` that looked up the L2 (and missed it:
    /// `l2_missed`) and fill the lines it names that no private level holds: into the L2, from
    /// the LLC or DRAM (then into the LLC too), as a demand miss would, but without touching the
    /// LLC's recency or access counters. The idle DRAM model counts the read among `dram.reads`.
    #[inline(never)]
    fn l2_prefetch(&mut self, line: u64, l2_missed: bool) {
        let Some(p) = self.private.prefetcher.as_mut() else {
            return;
        };
        let lines = p.train(line, l2_missed);
        for &pl in lines.lines() {
            if self.private.l2.contains(pl) || self.private.l1.contains(pl) {
                continue;
            }
            let pre_dram = self.private.l2.latency_cycles + self.llc.latency_cycles;
            let (dram, last_pool) = if self.llc.contains(pl) {
                (0, 2)
            } else {
                let d = self.dram.read(pl, false).0;
                self.private.l2.c.prefetch_dram_reads += 1;
                let ev = self.llc.fill(pl, DATA, false);
                self.writeback_from(2, ev);
                (d, 3)
            };
            let ev = self.private.l2.fill_prefetched(pl);
            self.writeback_from(1, ev);
            if self.log_prefetches {
                self.log(MemEvent {
                    line: pl,
                    offset_cycles: 0,
                    latency_cycles: pre_dram + dram,
                    pre_dram_cycles: if dram > 0 { pre_dram } else { 0 },
                    dram_cycles: dram,
                    first_pool: 1,
                    last_pool,
                    kind: MemEventKind::Prefetch,
                    parallel: false,
                });
            }
        }
    }

    /// Log a read that missed its entry level: served by the LLC (`dram_cycles` 0) or DRAM
    /// (`pre_dram_cycles` of lookups before it). A data read is logged only when it reaches
    /// DRAM (the core times its MSHRs from the reference); a page-table read whenever it
    /// leaves the walk's entry level. (An L2 hit of a walk entering at L1 takes one MSHR for
    /// the L2 latency and is not logged: its cost is the latency already counted.)
    #[cold]
    #[inline(never)]
    fn log_read(&mut self, line: u64, kind: u8, start: usize, pre_dram_cycles: u32, dram: u32) {
        let pt = kind == PT;
        let latency_cycles = pre_dram_cycles + dram;
        let last_pool = if dram > 0 { 3 } else { 2 };
        let parallel = pt && self.parallel.is_some() && !std::mem::take(&mut self.group_first);
        self.log(MemEvent {
            line,
            offset_cycles: if pt { self.walk_clock } else { 0 },
            latency_cycles,
            pre_dram_cycles: if dram > 0 { pre_dram_cycles } else { 0 },
            dram_cycles: dram,
            first_pool: start as u8,
            last_pool,
            kind: if pt {
                MemEventKind::PtRead
            } else {
                MemEventKind::DataRead
            },
            parallel,
        });
    }

    /// Prefetch (host caches) the simulated-cache sets an access to `pa` will touch. A hint for
    /// the simulator's speed only: no simulated state changes.
    #[inline]
    pub fn prefetch(&self, pa: Paddr) {
        let line = pa.line();
        self.private.l1.prefetch(line);
        self.private.l2.prefetch(line);
        self.llc.prefetch(line);
    }

    /// Drop every line of the `pages` frames from `pfn` from every cache level (their contents
    /// moved to other frames); a dirty copy is written back to DRAM first, once. `others` are
    /// the private levels of the cores not running now (empty with one core): they are
    /// invalidated too.
    pub fn invalidate_frames(
        &mut self,
        pfn: crate::addr::Pfn,
        pages: u64,
        others: &mut [&mut PrivateCaches],
    ) {
        // A page's lines, one cache at a time (each line's invalidations are independent of
        // the other lines'), then the dirty ones written back in line order, as line by line.
        const LINES: u64 = crate::addr::BASE_PAGE_BYTES / crate::addr::LINE_BYTES;
        const { assert!(LINES <= 64, "a page's dirty lines are a 64-bit mask") };
        let first = pfn.addr().line();
        for page in 0..pages {
            let base = first + page * LINES;
            let mut dirty = 0u64;
            for c in [&mut self.private.l1, &mut self.private.l2, &mut self.llc] {
                dirty |= c.invalidate_run(base, LINES as u32);
            }
            for p in others.iter_mut() {
                for c in [&mut p.l1, &mut p.l2] {
                    dirty |= c.invalidate_run(base, LINES as u32);
                }
            }
            while dirty != 0 {
                self.dram.write(base + dirty.trailing_zeros() as u64);
                dirty &= dirty - 1;
            }
        }
    }

    /// A data reference from the core (enters at L1D).
    #[inline]
    pub fn data_access(&mut self, pa: Paddr, is_write: bool) -> MemAccess {
        self.access(pa.line(), DATA, is_write, 0)
    }

    /// A page-table read by the walker (enters at `walk_entry`).
    #[inline]
    pub fn pt_access(&mut self, pa: Paddr) -> MemAccess {
        // Nested runs only (virt/): `pa` is guest-physical; translate it through the host.
        if self.nested.is_some() {
            return self.nested_pt_access(pa);
        }
        let start = match self.walk_entry {
            WalkEntry::L1 => 0,
            WalkEntry::L2 => 1,
        };
        let a = self.access(pa.line(), PT, false, start);
        if self.log_events {
            match &mut self.parallel {
                Some((_, slowest)) => *slowest = (*slowest).max(a.latency_cycles),
                None => self.walk_clock = self.walk_clock.saturating_add(a.latency_cycles),
            }
        }
        self.private.pt_served[a.served_by as usize] += 1;
        self.private.pt_served_cycles[a.served_by as usize] += a.latency_cycles as u64;
        a
    }

    /// Page-table reads of the running core served by DRAM so far (a design compares two
    /// readings to count the DRAM accesses of one walk, e.g. Utopia's PTW-cost counters).
    #[inline]
    pub fn pt_dram_reads(&self) -> u64 {
        self.private.pt_served[ServedBy::Dram as usize]
    }

    /// Write the `cache` and `dram` sections of the result record.
    pub fn stats(&self, out: &mut Stats) {
        // Key order as before the private / shared split: l1d, l2, llc, pt_served_*.
        self.private.level_stats(out);
        self.shared_stats(out, &[]);
        self.private.pt_served_stats(out);
    }

    /// The running core's private levels (see [`PrivateCaches::stats`]).
    pub fn private(&self) -> &PrivateCaches {
        &self.private
    }

    /// The shared levels: `cache.llc` and `dram`. The LLC's average page-table share is taken
    /// over the samples of every core (the running one's and those of `others`).
    pub fn shared_stats(&self, out: &mut Stats, others: &[&PrivateCaches]) {
        let (mut samples, mut sum) = (self.private.share_samples, self.private.share_sum[2]);
        for p in others {
            samples += p.share_samples;
            sum += p.share_sum[2];
        }
        level_stats(out.section("cache").section("llc"), &self.llc, samples, sum);
        let d = out.section("dram");
        let k = &self.dram.c;
        d.put_u64("accesses", k.reads + k.writes);
        d.put_u64("reads", k.reads);
        d.put_u64("writes", k.writes);
        d.put_u64("pt_reads", k.pt_reads);
        d.put_u64("row_hits", k.row[0]);
        d.put_u64("row_empty", k.row[1]);
        d.put_u64("row_conflicts", k.row[2]);
        d.put_f64("row_hit_rate", ratio(k.row[0], k.row.iter().sum()));
        d.put_f64("avg_read_latency_cycles", ratio(k.read_cycles, k.reads));
    }
}

impl PrivateCaches {
    /// One core's private levels: `cache.l1d`, `cache.l2` and `cache.pt_served_*` (page-walk
    /// references of this core by the level that served them, the shared levels included).
    pub fn stats(&self, out: &mut Stats) {
        self.level_stats(out);
        self.pt_served_stats(out);
    }

    fn level_stats(&self, out: &mut Stats) {
        let c = out.section("cache");
        for (i, (name, level)) in [("l1d", &self.l1), ("l2", &self.l2)]
            .into_iter()
            .enumerate()
        {
            level_stats(
                c.section(name),
                level,
                self.share_samples,
                self.share_sum[i],
            );
        }
        if self.prefetcher.is_some() {
            // Only with the prefetcher on, so that records without it keep their keys.
            let s = c.section("l2");
            let k = &self.l2.c;
            s.put_u64("prefetch_fills", k.prefetch_fills);
            s.put_u64("prefetch_hits", k.prefetch_hits);
            s.put_u64("prefetch_dram_reads", k.prefetch_dram_reads);
            s.put_f64(
                "prefetch_accuracy",
                ratio(k.prefetch_hits, k.prefetch_fills),
            );
        }
    }

    fn pt_served_stats(&self, out: &mut Stats) {
        let c = out.section("cache");
        for (i, name) in ["l1", "l2", "llc", "dram"].iter().enumerate() {
            c.put_u64(&format!("pt_served_{name}"), self.pt_served[i]);
        }
        for (i, name) in ["l1", "l2", "llc", "dram"].iter().enumerate() {
            c.put_u64(
                &format!("pt_served_cycles_{name}"),
                self.pt_served_cycles[i],
            );
        }
    }
}

/// A host-side failure during nested translation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostError {
    /// The host OS model refused (out of memory, ...).
    Os(OsError),
    /// A translation disagreed with an OS model (a simulator bug).
    Oracle(String),
}

/// The host side of nested translation, as the memory system (guest page-table references)
/// and the engine (data pages, oracle, daemons, stats) use it. Implemented by
/// [`crate::virt::Host`] for every registered host design; defined here, beside the hook
/// ([`MemSystem`]'s `nested`) that holds it, so that the memory system does not depend on the
/// nested-translation model above it.
///
/// Contract:
/// - `translate_pt` / `translate_data` return the host translation of a guest-physical
///   frame, faulting it in on the host when unmapped; every reference of a host walk goes
///   through the `mem` they get (which has no nested hook while they run);
/// - a failure is kept and reported by [`HostTranslate::take_error`] (the caller's memory
///   reference cannot fail), after which results are meaningless and the run must stop;
/// - a host unmap sets the flag [`HostTranslate::take_flush`] reports: the caller must then
///   drop every combined translation it caches.
pub trait HostTranslate: Send {
    /// The host-physical address of guest page-table address `gpa` and the cycles the host
    /// translation took (nested TLB and host walk).
    fn translate_pt(&mut self, gpa: Paddr, mem: &mut MemSystem) -> (Paddr, u32);
    /// The host mapping covering guest frame `gpfn` (the data page of a 2-D walk), the
    /// cycles and the host page-table references it took. With `charged = false` (a guest
    /// design without walks, `perfect_tlb`) the host OS's mapping is used without a walk.
    fn translate_data(
        &mut self,
        gpfn: Pfn,
        mem: &mut MemSystem,
        charged: bool,
    ) -> Option<(Mapping, u32, u32)>;
    /// The host OS's mapping of guest frame `gpfn` (the oracle's second half).
    fn host_mapping(&self, gpfn: Pfn) -> Option<Mapping>;
    /// The host design's contiguous group (`tlb.coalescing = "contiguous_bit"`) holding the
    /// host mapping of `gpfn`, if its entry is marked (what a host walk reads).
    fn host_span(&self, gpfn: Pfn) -> Option<CoalescedSpan>;
    /// Page sizes the host may map.
    fn page_sizes(&self) -> PageSizeSet;
    /// Count one guest page-table read (made at its host-physical address).
    fn count_guest_read(&mut self);
    /// Host page-table references issued since the last call.
    fn take_pending_refs(&mut self) -> u32;
    /// Count a finished 2-D walk of `cycles` (`post_fault`: repeated after a guest fault).
    fn count_walk(&mut self, cycles: u32, post_fault: bool);
    /// The failure since the last call, if any.
    fn take_error(&mut self) -> Option<HostError>;
    /// Whether the host unmapped something since the last call.
    fn take_flush(&mut self) -> bool;
    /// Whether the host OS runs background daemons.
    fn has_daemons(&self) -> bool;
    /// Run the host's daemons due at `now_cycles`.
    fn tick(&mut self, now_cycles: u64, mem: &mut MemSystem);
    /// OS cycles the host spent (its page faults at `page_fault_cycles` each, daemons, moves,
    /// its design's page-table work).
    fn os_cycles(&self, page_fault_cycles: u64) -> u64;
    /// Write the `virt` section.
    fn stats(&self, out: &mut Stats);
}

impl MemSystem {
    /// A guest page-table read in a nested run: translate its guest-physical address through
    /// the host (with the hook taken out, so that the host walk's own references go straight
    /// to memory), then read it at its host-physical address.
    #[cold]
    #[inline(never)]
    pub(crate) fn nested_pt_access(&mut self, gpa: Paddr) -> MemAccess {
        let mut host = self.nested.take().expect("called only with a nested hook");
        let (hpa, cycles) = host.translate_pt(gpa, self);
        host.count_guest_read();
        let mut a = self.pt_access(hpa);
        self.nested = Some(host);
        a.latency_cycles += cycles;
        a
    }
}

/// The figures of one cache level.
fn level_stats(s: &mut Stats, level: &Cache, share_samples: u64, share_sum: f64) {
    let k = &level.c;
    let acc = k.accesses[0] + k.accesses[1];
    let miss = k.misses[0] + k.misses[1];
    s.put_u64("accesses", acc);
    s.put_u64("hits", acc - miss);
    s.put_u64("misses", miss);
    s.put_u64("data_accesses", k.accesses[0]);
    s.put_u64("data_misses", k.misses[0]);
    s.put_u64("pt_accesses", k.accesses[1]);
    s.put_u64("pt_misses", k.misses[1]);
    s.put_f64("miss_rate", ratio(miss, acc));
    s.put_u64("evictions", k.evictions);
    s.put_u64("writebacks", k.writebacks);
    s.put_u64("invalidated_lines", k.invalidations);
    s.put_f64(
        "pt_line_share",
        level.pt_lines as f64 / level.lines() as f64,
    );
    s.put_f64(
        "pt_line_share_avg",
        if share_samples == 0 {
            0.0
        } else {
            share_sum / share_samples as f64
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cold_access_pays_every_level_and_dram_and_a_second_one_hits_l1() {
        let cfg = MemConfig::default();
        let mut m = MemSystem::new(&cfg);
        let dram_empty = Dram::new(&cfg.dram).latencies()[1];
        let a = m.data_access(Paddr(0x1000), false);
        assert_eq!(a.served_by, ServedBy::Dram);
        assert_eq!(a.latency_cycles, 4 + 14 + 40 + dram_empty);
        let b = m.data_access(Paddr(0x1008), false);
        assert_eq!((b.served_by, b.latency_cycles), (ServedBy::L1, 4));
    }

    #[test]
    fn page_walk_references_enter_at_l2_by_default_and_at_l1_on_request() {
        let mut m = MemSystem::new(&MemConfig::default());
        m.pt_access(Paddr(0x2000));
        let a = m.pt_access(Paddr(0x2000));
        assert_eq!((a.served_by, a.latency_cycles), (ServedBy::L2, 14));
        assert_eq!(
            m.private.l1.c.accesses[PT as usize], 0,
            "the walker bypasses L1D"
        );
        let cfg = MemConfig {
            walk_entry: WalkEntry::L1,
            ..MemConfig::default()
        };
        let mut m = MemSystem::new(&cfg);
        m.pt_access(Paddr(0x2000));
        assert_eq!(m.pt_access(Paddr(0x2000)).served_by, ServedBy::L1);
        assert_eq!(m.private.pt_served, [1, 0, 0, 1]);
    }

    #[test]
    fn an_ascending_data_stream_makes_the_l2_prefetcher_fill_lines_ahead_and_logs_their_first_demand(
    ) {
        let cfg = MemConfig {
            l2_prefetcher: PrefetcherConfig {
                kind: PrefetcherKind::Stream,
                ..PrefetcherConfig::default()
            },
            ..MemConfig::default()
        };
        let mut m = MemSystem::new(&cfg);
        m.set_log_prefetches(true);
        m.clear_events();
        let base = 0x40_0000u64;
        for k in 0..3 {
            m.data_access(Paddr(base + 64 * k), false);
        }
        // The third access confirms the stream: lines 3 and 4 are fetched into the L2.
        let e = m.events().to_vec();
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e.iter().all(|e| e.kind == MemEventKind::Prefetch));
        assert_eq!(e[0].line, base / 64 + 3);
        assert_eq!((e[0].first_pool, e[0].last_pool), (1, 3), "from DRAM");
        assert_eq!(e[0].latency_cycles, 14 + 40 + e[0].dram_cycles);
        m.clear_events();
        let a = m.data_access(Paddr(base + 64 * 3), false);
        assert_eq!((a.served_by, a.latency_cycles), (ServedBy::L2, 4 + 14));
        assert_eq!(m.events()[0].kind, MemEventKind::PrefetchHit);
        assert_eq!(m.private.l2.c.prefetch_hits, 1);
        assert_eq!(m.private.l2.c.prefetch_fills, 4);
        // Off, the same accesses miss to DRAM and nothing is logged.
        let mut off = MemSystem::new(&MemConfig::default());
        off.set_log_prefetches(true);
        for k in 0..4 {
            off.data_access(Paddr(base + 64 * k), false);
        }
        assert!(off.events().is_empty());
        assert_eq!(off.private.l2.c.misses[0], 4);
    }

    #[test]
    fn with_next_line_a_lone_miss_brings_the_next_line_into_the_l2_and_an_l2_hit_does_not() {
        let cfg = MemConfig {
            l2_prefetcher: PrefetcherConfig {
                kind: PrefetcherKind::Stream,
                next_line: true,
                ..PrefetcherConfig::default()
            },
            ..MemConfig::default()
        };
        let mut m = MemSystem::new(&cfg);
        m.set_log_prefetches(true);
        m.clear_events();
        m.data_access(Paddr(0x7_0040), false); // line 0x1c01
        let e = m.events().to_vec();
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!((e[0].kind, e[0].line), (MemEventKind::Prefetch, 0x1c02));
        m.clear_events();
        let a = m.data_access(Paddr(0x7_0080), false);
        assert_eq!(a.served_by, ServedBy::L2, "the next line was prefetched");
        assert_eq!(m.events()[0].kind, MemEventKind::PrefetchHit);
        assert_eq!(
            m.events().len(),
            1,
            "an L2 hit triggers no next-line prefetch"
        );
    }

    #[test]
    fn page_table_lines_are_counted_separately_from_data() {
        let mut m = MemSystem::new(&MemConfig::default());
        m.pt_access(Paddr(0x40));
        m.data_access(Paddr(0x80), true);
        assert_eq!(m.private.l2.pt_lines, 1);
        assert_eq!(m.llc.pt_lines, 1);
        assert_eq!(m.private.l2.c.misses, [1, 1]);
    }

    #[test]
    fn the_event_log_holds_walk_reads_below_the_entry_level_in_walk_order_and_dram_data_reads() {
        let mut m = MemSystem::new(&MemConfig::default());
        m.set_log_events(true);
        m.clear_events();
        let first = m.pt_access(Paddr(0x10_0000));
        let second = m.pt_access(Paddr(0x20_0000));
        m.pt_access(Paddr(0x10_0000)); // an L2 hit: not logged
        m.begin_parallel();
        m.pt_access(Paddr(0x30_0000));
        m.pt_access(Paddr(0x40_0000));
        m.end_parallel();
        m.data_access(Paddr(0x50_0000), false);
        m.data_access(Paddr(0x50_0008), false); // an L1 hit: not logged
        let e = m.events();
        assert_eq!(e.len(), 5, "{e:?}");
        assert!(e[..4].iter().all(|e| e.kind == MemEventKind::PtRead));
        assert_eq!(e[4].kind, MemEventKind::DataRead);
        // Serial reads follow each other; the group shares one offset after the L2 hit.
        assert_eq!(e[0].offset_cycles, 0);
        assert_eq!(e[1].offset_cycles, first.latency_cycles);
        let group = first.latency_cycles + second.latency_cycles + 14;
        assert_eq!((e[2].offset_cycles, e[3].offset_cycles), (group, group));
        assert_eq!((e[2].parallel, e[3].parallel), (false, true));
        // A walk entering at L2 holds L2 and LLC MSHRs to DRAM; the data read all three.
        assert_eq!((e[0].first_pool, e[0].last_pool), (1, 3));
        assert_eq!((e[4].first_pool, e[4].last_pool), (0, 3));
        assert_eq!(e[4].pre_dram_cycles, 4 + 14 + 40);
        assert_eq!(e[0].latency_cycles, e[0].pre_dram_cycles + e[0].dram_cycles);
        m.clear_events();
        assert!(m.events().is_empty());
        // Off (the idle model): nothing is logged.
        let mut off = MemSystem::new(&MemConfig::default());
        off.pt_access(Paddr(0x10_0000));
        assert!(off.events().is_empty());
    }
}
