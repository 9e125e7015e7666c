//! [`OooCore`]: the core's state (clocks, queues, rings, pools, counters, the `time_order`
//! state, the batch of references not yet accounted), its construction from a [`CoreConfig`],
//! and what the engine reads of it: [`OooCore::cycles`], [`OooCore::clock`],
//! [`OooCore::stats`] and [`OooCore::settled`].
//!
//! Contract: whatever reads the model accounts the pending batch first (or reads a settled
//! copy), so results never depend on batching. The fields are shared with the other files of
//! `impl OooCore` (`batch.rs`, `grants.rs`, `rob.rs`), whose methods it calls; it names only the
//! types below it (`config.rs`, `core_ref.rs`, `base.rs`, `pools.rs`, `time_order.rs`).

use super::base::{fmax, Ring};
use super::config::{CoreConfig, ResourceGrant};
use super::core_ref::CoreRef;
use super::dram_link::{DramHandle, MemCounters};
use super::pools::{InFlight, Pool, Units, STALE_BATCH};
use super::time_order::TimeOrder;
use crate::mem::MemEvent;
use crate::stats::{Stats, StatsExt};
use std::borrow::Cow;

/// References one instruction may make that the dependence window still covers.
const REFS_PER_INSTRUCTION: usize = 8;

/// Per-run counters of the model.
#[derive(Clone, Debug, Default)]
pub(super) struct CoreCounters {
    pub(super) rob_full_cycles: f64,
    pub(super) lq_full_cycles: f64,
    pub(super) sq_full_cycles: f64,
    pub(super) head_translation_cycles: f64,
    pub(super) head_data_cycles: f64,
    pub(super) walker_queue_cycles: f64,
    pub(super) mshr_wait_cycles: f64,
    pub(super) walk_busy_cycles: f64,
    pub(super) miss_busy_cycles: f64,
    pub(super) walks: u64,
    pub(super) walk_merges: u64,
    pub(super) line_merges: u64,
}

/// The out-of-order core: feed it every reference in program order with [`OooCore::reference`],
/// then read [`OooCore::cycles`].
#[derive(Clone, Debug)]
pub struct OooCore {
    pub(super) inv_dispatch: f64,
    pub(super) inv_retire: f64,
    /// Spacing of completions of a run of non-memory instructions at the retire stage.
    pub(super) nonmem_step: f64,
    pub(super) rob: u64,
    pub(super) l1d_hit_cycles: f64,
    /// Instructions dispatched so far (index of the next one).
    pub(super) instrs: u64,
    pub(super) refs: u64,
    pub(super) loads: u64,
    pub(super) stores: u64,
    pub(super) last_dispatch: f64,
    pub(super) last_retire: f64,
    pub(super) last_drain: f64,
    /// The instruction front end is stalled until then (an instruction fetch's miss).
    pub(super) fetch_ready: f64,
    /// Retirement time of each of the last instructions whose retirement is known (at least
    /// `core.rob_entries + 1` of them: a ROB check asks for an instruction at most that far
    /// back), to answer "when did instruction `k` retire?" with one read.
    pub(super) retire_times: Ring<f64>,
    /// Instructions whose retirement time is recorded (in `retire_times`), all before this one.
    pub(super) recorded: u64,
    /// Completion time of the last references (dependence targets).
    pub(super) done: Ring<f64>,
    pub(super) lq: Ring<f64>,
    pub(super) sq: Ring<f64>,
    pub(super) lq_len: u64,
    pub(super) sq_len: u64,
    pub(super) walkers: Pool,
    /// MSHR pools of L1D, L2, LLC; `None` for a level whose pool can never bind (below).
    pub(super) mshrs: [Option<Pool>; 3],
    /// The same pools under `program_order` and `time_order` (then `mshrs` is empty), in level
    /// order, and how many of them the misses served at each level (`miss_levels`) take.
    pub(super) mshr_units: Vec<Units>,
    pub(super) mshr_pools_upto: [usize; 4],
    /// `core.resource_grant = "idle_gaps"`: the pools are [`Pool::Gaps`].
    pub(super) gaps: bool,
    pub(super) walks: InFlight,
    pub(super) fills: InFlight,
    /// L2 prefetches in flight by line (`memory.rs`).
    pub(super) prefetch_fills: InFlight,
    /// The memory system has an L2 prefetcher (its figures are reported).
    pub(super) prefetching: bool,
    pub(super) c: CoreCounters,
    /// `core.resource_grant = "time_order"`: the references whose grants are still to be made.
    pub(super) tord: Option<Box<TimeOrder>>,
    /// References given but not yet accounted, in program order (at most [`BATCH`]).
    pub(super) batch: Vec<CoreRef>,
    /// References given so far (accounted or in `batch`).
    pub(super) given: u64,
    /// The memory events of the references in `batch`, in order (see [`CoreRef::events`]).
    pub(super) batch_events: Vec<MemEvent>,
    /// The queued DRAM controller (`mem.dram.model = "queued"`), shared with the run's other
    /// cores; `None` under the idle model.
    pub(super) dram: Option<DramHandle>,
    /// The memory system's figures under load.
    pub(super) m: MemCounters,
    /// The events of the reference being granted (a reused buffer).
    pub(super) scratch: Vec<MemEvent>,
}

/// References the core takes before it accounts them, all at once.
///
/// The engine's work on a reference (caches, TLBs, page tables) evicts the model's few
/// records from the host's L1 cache, and the model's evicts the engine's: accounting a batch at
/// once keeps each side's state in the cache while it works. The results do not change: the
/// model only reads the references, in program order, and everything that reads the model
/// ([`OooCore::clock`], [`OooCore::settled`]) accounts the batch first.
pub(super) const BATCH: usize = 256;

impl OooCore {
    /// A core at cycle 0 with empty queues; `l1d_hit_cycles` is the L1D latency (the part of a
    /// data access a hit costs).
    pub fn new(cfg: &CoreConfig, l1d_hit_cycles: u32) -> Self {
        Self::with_dram(cfg, l1d_hit_cycles, None)
    }

    /// A core as [`OooCore::new`] that times its references' memory events (`CoreRef`'s
    /// `walk_events`, `data_events`) on the queued DRAM controller `dram` (see `memory.rs`).
    /// With a controller every MSHR pool is kept: page-walk reads take L2 and LLC MSHRs without
    /// an L1D one, so a pool larger than the one above it can bind.
    pub fn with_dram(cfg: &CoreConfig, l1d_hit_cycles: u32, dram: Option<DramHandle>) -> Self {
        Self::with_memory(cfg, l1d_hit_cycles, dram, false)
    }

    /// [`OooCore::with_dram`] for a memory system whose L2 prefetcher is on (`prefetching`) or
    /// not. With the prefetcher every MSHR pool is kept too: a prefetch takes L2 and LLC
    /// MSHRs without an L1D one.
    pub fn with_memory(
        cfg: &CoreConfig,
        l1d_hit_cycles: u32,
        dram: Option<DramHandle>,
        prefetching: bool,
    ) -> Self {
        let inv_dispatch = 1.0 / cfg.dispatch_width as f64;
        let inv_retire = 1.0 / cfg.retire_width as f64;
        let grant = cfg.resource_grant;
        // Busy intervals a unit holds at once: at most the operations of the references in
        // flight, so one ROB's worth is allocated up front.
        let slots = cfg.rob_entries as usize + 1 + STALE_BATCH;
        // A miss holds an MSHR at every level it passes for the same interval, so at any time
        // a level has no more misses outstanding than the level above it: a pool at least as
        // large as one above it can never be full, and is left out (exactly: the schedule is
        // the same; the host skips its bookkeeping).
        let all = dram.is_some() || prefetching;
        let mshr_sizes = [
            Some(cfg.l1d_mshrs),
            (all || cfg.l2_mshrs < cfg.l1d_mshrs).then_some(cfg.l2_mshrs),
            (all || cfg.llc_mshrs < cfg.l1d_mshrs.min(cfg.l2_mshrs)).then_some(cfg.llc_mshrs),
        ];
        OooCore {
            inv_dispatch,
            inv_retire,
            nonmem_step: inv_dispatch.max(inv_retire),
            // The window: the ROB, or the integer register file when smaller (`core.int_prf_entries`).
            rob: cfg.window_entries() as u64,
            l1d_hit_cycles: l1d_hit_cycles as f64,
            instrs: 0,
            refs: 0,
            loads: 0,
            stores: 0,
            last_dispatch: -inv_dispatch,
            last_retire: 0.0,
            last_drain: 0.0,
            fetch_ready: 0.0,
            retire_times: Ring::new(cfg.rob_entries as usize + 1),
            recorded: 0,
            // A dependence further back than the references the ROB can hold is on a retired
            // (complete) reference. An instruction makes at most REFS_PER_INSTRUCTION
            // references (ChampSim records: 4 loads and 2 stores).
            done: Ring::new((cfg.rob_entries as usize + 1) * REFS_PER_INSTRUCTION),
            lq: Ring::new(cfg.lq_entries as usize),
            sq: Ring::new(cfg.sq_entries as usize),
            lq_len: cfg.lq_entries as u64,
            sq_len: cfg.sq_entries as u64,
            walkers: Pool::new(cfg.page_walkers, grant, slots),
            mshrs: if grant == ResourceGrant::IdleGaps {
                mshr_sizes.map(|n| n.map(|n| Pool::new(n, grant, slots)))
            } else {
                [None, None, None]
            },
            mshr_units: if grant == ResourceGrant::IdleGaps {
                Vec::new()
            } else {
                mshr_sizes
                    .iter()
                    .flatten()
                    .map(|&n| Units::new(n))
                    .collect()
            },
            mshr_pools_upto: [
                0,
                1,
                1 + mshr_sizes[1].is_some() as usize,
                1 + mshr_sizes[1].is_some() as usize + mshr_sizes[2].is_some() as usize,
            ],
            gaps: grant == ResourceGrant::IdleGaps,
            walks: InFlight::new(),
            fills: InFlight::new(),
            prefetch_fills: InFlight::new(),
            prefetching,
            c: CoreCounters::default(),
            batch: Vec::with_capacity(BATCH),
            given: 0,
            batch_events: Vec::new(),
            dram,
            m: MemCounters::default(),
            scratch: Vec::new(),
            tord: (grant == ResourceGrant::TimeOrder).then(|| {
                Box::new(TimeOrder::new(
                    (cfg.rob_entries as usize + 1) * REFS_PER_INSTRUCTION,
                ))
            }),
        }
    }

    /// Cycles retirement stood still at the ROB head behind a translation.
    pub fn head_stall_translation_cycles(&self) -> f64 {
        self.c.head_translation_cycles
    }

    /// Cycles of the run so far: the last instruction's retirement, of the references accounted
    /// (the last batch may wait, see `BATCH`). Under `time_order`, of the last instruction
    /// retired so far: the newest references (at most a ROB's worth) may wait for their grants
    /// until later references need them. [`OooCore::settled`] accounts and retires them all.
    pub fn cycles(&self) -> f64 {
        self.last_retire
    }

    /// The core's time as the multi-core scheduler and the time slices read it, between
    /// references (the batch taken so far is accounted first): under `time_order`, the
    /// dispatch of the last reference read (final once it is read; its retirement may wait for
    /// later references, and how far retirement has caught up is the model's bookkeeping,
    /// which must not decide results); otherwise [`OooCore::cycles`] (every reference read has
    /// retired).
    pub fn clock(&mut self) -> f64 {
        self.account_batch();
        if self.tord.is_some() {
            fmax(self.last_dispatch, 0.0)
        } else {
            self.last_retire
        }
    }

    /// Write the model's own figures into the `timing` section.
    pub fn stats(&self, t: &mut Stats) {
        let cycles = self.cycles();
        let per_cycle = |x: f64| if cycles > 0.0 { x / cycles } else { 0.0 };
        let c = &self.c;
        t.put_f64("rob_full_stall_cycles", c.rob_full_cycles);
        t.put_f64("lq_full_stall_cycles", c.lq_full_cycles);
        t.put_f64("sq_full_stall_cycles", c.sq_full_cycles);
        t.put_f64("head_stall_translation_cycles", c.head_translation_cycles);
        t.put_f64("head_stall_data_cycles", c.head_data_cycles);
        t.put_f64("avg_outstanding_misses", per_cycle(c.miss_busy_cycles));
        t.put_f64("avg_outstanding_walks", per_cycle(c.walk_busy_cycles));
        t.put_f64("walker_queue_cycles", c.walker_queue_cycles);
        t.put_f64(
            "avg_walker_queue_cycles",
            if c.walks > 0 {
                c.walker_queue_cycles / c.walks as f64
            } else {
                0.0
            },
        );
        t.put_f64("mshr_wait_cycles", c.mshr_wait_cycles);
        t.put_u64("walk_merges", c.walk_merges);
        t.put_u64("line_merges", c.line_merges);
        if self.prefetching {
            let m = &self.m;
            t.put_u64("prefetches", m.prefetches);
            t.put_f64("prefetch_mshr_wait_cycles", m.prefetch_mshr_wait_cycles);
            t.put_u64("prefetch_late_hits", m.prefetch_late_hits);
            t.put_f64("prefetch_late_cycles", m.prefetch_late_cycles);
        }
        if self.dram.is_some() {
            let m = &self.m;
            // The walk latency as timed under load (the walker held from grant to done).
            t.put_u64("walks_timed", c.walks);
            t.put_f64("walk_busy_cycles", c.walk_busy_cycles);
            t.put_f64(
                "avg_walk_latency_cycles",
                if c.walks > 0 {
                    c.walk_busy_cycles / c.walks as f64
                } else {
                    0.0
                },
            );
            t.put_f64("walk_mshr_wait_cycles", m.walk_mshr_wait_cycles);
            t.put_u64("walk_reads_timed", m.walk_reads);
            t.put_u64("walk_dram_reads", m.walk_dram_reads);
            t.put_f64("walk_dram_cycles", m.walk_dram_cycles);
            t.put_f64("walk_dram_idle_cycles", m.walk_dram_idle_cycles);
            t.put_u64("data_dram_reads", m.data_dram_reads);
            t.put_f64("data_dram_cycles", m.data_dram_cycles);
            t.put_f64("data_dram_idle_cycles", m.data_dram_idle_cycles);
            t.put_u64("dram_writes", m.dram_writes);
            for (k, level) in ["l1d", "l2", "llc"].iter().enumerate() {
                t.put_f64(
                    &format!("avg_{level}_mshrs_data"),
                    per_cycle(m.mshr_data_cycles[k]),
                );
                t.put_f64(
                    &format!("avg_{level}_mshrs_walk"),
                    per_cycle(m.mshr_walk_cycles[k]),
                );
            }
        }
    }

    /// Write the queued DRAM controller's figures into the `dram.queued` section (nothing
    /// under the idle model). `cycles`: the run's length, for bandwidths.
    pub fn dram_stats(&self, cycles: f64, out: &mut Stats) {
        if let Some(d) = &self.dram {
            d.with(|c| crate::mem::dram::controller::queued_stats(c, cycles, out));
        }
    }

    /// Account and retire every reference read so far, in place: their grants go to the DRAM
    /// controller now, in the run's order (see [`OooCore::settled`], which does it on a copy).
    /// For a core whose process ends while other cores run on: settled at the end of the run
    /// instead, its last references would be timed after every other core's requests.
    pub fn settle(&mut self) {
        self.account_batch();
        if let Some(mut t) = self.tord.take() {
            while t.retired < self.refs {
                self.retire_one_in_time_order(&mut t);
            }
            self.tord = Some(t);
        }
    }

    /// The core with every reference read so far retired: under `time_order` the last
    /// references' grants wait until a later reference or the end of the run needs them.
    pub fn settled(&self) -> Cow<'_, OooCore> {
        let unretired = self.tord.as_ref().is_some_and(|t| t.retired < self.refs);
        if self.batch.is_empty() && !unretired {
            return Cow::Borrowed(self);
        }
        let mut c = self.clone();
        c.account_batch();
        let granted = c.m.clone();
        if let Some(mut t) = c.tord.take() {
            while t.retired < c.refs {
                c.retire_one_in_time_order(&mut t);
            }
            c.tord = Some(t);
        }
        // The memory system's figures count the grants the run has made (its references all
        // accounted), not those settling makes for its last references (on a copy of the
        // controller): a warm-up snapshot would otherwise count requests the run then grants at
        // other times, and a measured count could go below zero.
        c.m = granted;
        Cow::Owned(c)
    }

    /// The core with every reference given so far accounted (not settled): the queued DRAM
    /// controller as the run has driven it, whether the core ran here or on its own thread
    /// (whose snapshots are accounted).
    pub fn accounted(&self) -> Cow<'_, OooCore> {
        if self.batch.is_empty() {
            return Cow::Borrowed(self);
        }
        let mut c = self.clone();
        c.account_batch();
        Cow::Owned(c)
    }
}
