//! The cores and processes of a multi-core or multi-process run that are parked while another
//! runs, and the machine-wide state the scheduler keeps.
//!
//! Owns [`Machine`] with its slots ([`CoreState`]: a parked core's TLBs, private caches, timing
//! and counters; [`ProcState`]: a parked process's stream), the per-core scheduling state
//! ([`CoreSched`], [`Window`]), the process pid spaces ([`PID_SHIFT`]) and the turn length
//! [`INTERLEAVE_REFS`]. The scheduling itself (who runs next, swapping a slot with the running
//! state) is `Sim`'s, in `sim/sched.rs`.
//!
//! May call: `addr`, `config`, `designs` (`set_cores`), `mem`, `mmu`, `os` (process ids),
//! `timing`, `trace`, and the engine's `counters`, `stream` and `threads`. Contract: a slot holds
//! a spare while its core or process is installed; every shootdown reaches the parked cores'
//! TLBs.

use super::counters::Counters;
use super::stream::{RecentPages, CHUNK};
use super::threads::ThreadDemux;
use crate::addr::{Asid, Mapping};
use crate::config::Config;
use crate::designs::Design;
use crate::mem::PrivateCaches;
use crate::mmu::Mmu;
use crate::os::Os;
use crate::timing::CoreModel;
use crate::timing::{Timing, TimingModel};
use crate::trace::{Event, EventSource, SourceError};

/// References a core simulates before the engine picks the next core to run (multi-core and
/// multi-process runs): small, so cores interleave finely in simulated time and contend in the
/// shared LLC and DRAM; results depend on it (it is part of the model), never on how a run is
/// chunked by [`Simulation::step`](super::Simulation::step) or on host threads.
pub const INTERLEAVE_REFS: u64 = 64;

/// The OS pids of process `i` of a multi-process run are `i << PID_SHIFT | pid` for the pids its
/// events name (`Switch`, `Exit`; it starts as pid 0 of its own), so two traces' pids never
/// collide (Linux's pids are below `2^22`).
pub(super) const PID_SHIFT: u32 = 22;

/// What of a core is swapped out when another core runs: its TLBs, private caches, timing and
/// counters (the design's MMU caches are swapped by the design, `Design::select_core`).
pub(super) struct CoreState {
    pub(super) mmu: Mmu,
    pub(super) mem: PrivateCaches,
    pub(super) timing: Timing,
    pub(super) core: Option<CoreModel>,
    pub(super) parked: Parked,
    pub(super) c: Counters,
}

/// A core's out-of-order model while a sampled run warms functionally (`sim.sampling`), and
/// what the turns' clock needs across those phases. Swapped with the core (one per core).
///
/// Must stay true: while functionally warmed the cores take their turns at the rates their
/// models last measured (so in the proportions a detailed run would), and in the detailed
/// phases by their models' own clocks plus one offset common to all cores
/// (`Sim`'s `turn_clock_offset`), so that the models' clocks stay within a turn of each other
/// for the shared DRAM controller, as in a run without sampling.
#[derive(Default)]
pub(super) struct Parked {
    /// The model, taken out of `core` while references run functionally warmed.
    pub(super) core: Option<CoreModel>,
    /// The core's `c.refs` when its model last resumed (`None` in a run that never parked
    /// it): a dependence on a reference before that is on one the model never saw, long
    /// completed, and is dropped.
    pub(super) resumed_at: Option<u64>,
    /// The model's clock when it last resumed (several cores only).
    resumed_clock: f64,
    /// Where the core stood when its model was parked (several cores only: one core's turns
    /// need no clock).
    at: Option<ParkedAt>,
}

/// A core when its model was parked.
#[derive(Clone, Copy)]
struct ParkedAt {
    /// The model's clock.
    clock: f64,
    /// The `simple` formula's cycles of the core.
    simple: f64,
    /// The core's references.
    refs: u64,
    /// Cycles per reference of the model over its last detailed stretch (`None` before it
    /// ran one: the `simple` formula's cycles stand in).
    cycles_per_ref: Option<f64>,
}

impl ParkedAt {
    /// Cycles the core has run since it was parked, at `simple_now` and `refs_now`.
    fn since(&self, simple_now: f64, refs_now: u64) -> f64 {
        match self.cycles_per_ref {
            Some(cpr) => cpr * refs_now.saturating_sub(self.refs) as f64,
            None => simple_now - self.simple,
        }
    }
}

impl Parked {
    /// Park core `model`, keeping its clock for the turns of several cores and the OS clock;
    /// `simple_now` the `simple` formula's cycles of the core now and `refs` its references.
    pub(super) fn park(&mut self, model: &mut Option<CoreModel>, simple_now: f64, refs: u64) {
        if let Some(mut m) = model.take() {
            let clock = m.clock();
            let cycles_per_ref = self
                .resumed_at
                .filter(|r| refs > *r)
                .map(|r| (clock - self.resumed_clock) / (refs - r) as f64);
            self.at = Some(ParkedAt {
                clock,
                simple: simple_now,
                refs,
                cycles_per_ref,
            });
            self.core = Some(m);
        }
    }

    /// Resume the parked model into `model`; returns the cycles the core ran functionally
    /// warmed since it was parked.
    pub(super) fn resume(
        &mut self,
        model: &mut Option<CoreModel>,
        simple_now: f64,
        refs: u64,
    ) -> f64 {
        let Some(m) = self.core.take() else {
            return 0.0;
        };
        let since = self.at.take().map_or(0.0, |at| {
            self.resumed_clock = at.clock;
            at.since(simple_now, refs)
        });
        *model = Some(m);
        self.resumed_at = Some(refs);
        since
    }

    /// The clock of a core whose model is parked, before the offset: the model's clock when
    /// parked plus the cycles since (`None` when it is not parked).
    pub(super) fn clock(&self, simple_now: f64, refs_now: u64) -> Option<f64> {
        self.at.map(|at| at.clock + at.since(simple_now, refs_now))
    }
}

/// One process of a multi-process run: its event stream and where it is in it.
pub(super) struct ProcState {
    pub(super) source: Box<dyn EventSource>,
    pub(super) buf: Vec<Event>,
    pub(super) pos: usize,
    pub(super) prefetched: RecentPages,
    pub(super) asid: Asid,
    pub(super) finished: bool,
    pub(super) truncated_by_refs: bool,
    /// References simulated (kept up to date while the process is not installed).
    pub(super) refs: u64,
    /// The core the process is pinned to.
    pub(super) core: usize,
}

/// A source with no events: what a parked slot holds while its process is installed.
struct NoEvents;

impl EventSource for NoEvents {
    fn fill(&mut self, _out: &mut Vec<Event>, _max: usize) -> Result<usize, SourceError> {
        Ok(0)
    }
    fn name(&self) -> String {
        "none".into()
    }
}

/// Figures counted in the references after a context switch (`switch.*`).
#[derive(Clone, Copy, Default)]
pub(super) struct Window {
    pub(super) refs: u64,
    pub(super) tlb_l1_misses: u64,
    pub(super) walks: u64,
    pub(super) walk_mem_accesses: u64,
    pub(super) mmu_cache_misses: u64,
}

impl Window {
    pub(super) fn delta(after: Window, before: Window) -> Window {
        Window {
            refs: after.refs - before.refs,
            tlb_l1_misses: after.tlb_l1_misses - before.tlb_l1_misses,
            walks: after.walks - before.walks,
            walk_mem_accesses: after.walk_mem_accesses - before.walk_mem_accesses,
            mmu_cache_misses: after.mmu_cache_misses - before.mmu_cache_misses,
        }
    }

    pub(super) fn add(&mut self, d: Window) {
        self.refs += d.refs;
        self.tlb_l1_misses += d.tlb_l1_misses;
        self.walks += d.walks;
        self.walk_mem_accesses += d.walk_mem_accesses;
        self.mmu_cache_misses += d.mmu_cache_misses;
    }
}

/// Scheduling state of one core (never swapped).
#[derive(Default)]
pub(super) struct CoreSched {
    /// Processes pinned to this core, in round-robin order.
    pub(super) procs: Vec<usize>,
    /// Index into `procs` of the process on the core.
    pub(super) current: usize,
    /// Simulated core cycles when the core was last stopped.
    pub(super) cycles: f64,
    /// Core cycles at which the running slice began.
    pub(super) slice_start: f64,
    /// ASIDs that ran on this core: the cores a shootdown of one of them interrupts.
    pub(super) asids: Vec<Asid>,
    pub(super) switches: u64,
    /// References left in the window after the last switch.
    pub(super) window_left: u64,
    pub(super) windows: u64,
    pub(super) window: Window,
    /// OS cycles of shootdown IPIs on this core (sent and received).
    pub(super) ipi_cycles: u64,
    pub(super) ipis_sent: u64,
    pub(super) ipis_received: u64,
}

/// The cores and processes of a multi-core or multi-process run besides the installed ones.
///
/// The running core's state and its running process's stream live in `Sim`'s own fields (so
/// the per-reference code is the same as with one core); switching core or process swaps them
/// with their slots here. `cores[running]` and `procs[installed]` hold spares meanwhile.
pub(super) struct Machine {
    pub(super) cores: Vec<CoreState>,
    pub(super) sched: Vec<CoreSched>,
    pub(super) procs: Vec<ProcState>,
    pub(super) proc_done: Vec<bool>,
    pub(super) running: usize,
    /// References left of the running core's turn.
    pub(super) chunk_left: u64,
    pub(super) quantum_cycles: u64,
    pub(super) all_done: bool,
    /// The OS clock (see `Sim::os_now`).
    pub(super) os_now: u64,
    /// Cores a shootdown being applied must interrupt (bit per core).
    pub(super) ipi_targets: u64,
    pub(super) shootdown_rounds: u64,
    /// A multi-threaded run's threads (one trace on several cores; `None` otherwise), read
    /// apart (thread `i`, the `i`-th named, runs on core `i % cores`) and run in the cores'
    /// time order (`sim/sched.rs`, `step_threaded`).
    pub(super) demux: Option<ThreadDemux>,
    /// The thread whose events the running core runs (a multi-threaded run).
    pub(super) thread_running: usize,
    /// The running thread's next event may not run yet (or it has ended): its turn is over.
    pub(super) thread_waits: bool,
    /// Cores whose threads have all ended and whose last references have completed.
    pub(super) settled: Vec<bool>,
}

impl Machine {
    /// The machine of `cfg` when it has several cores or processes (`more` holds the sources
    /// of processes 1, 2, ...), else `None`. Process `i` runs on core `i % cores`.
    pub(super) fn build<D: Design>(
        cfg: &Config,
        os: &mut Os,
        design: &mut D,
        more: Vec<Box<dyn EventSource>>,
        threaded: bool,
        dram: Option<&crate::timing::ooo::DramHandle>,
    ) -> Option<Box<Machine>> {
        let cores = cfg.sim.cores.max(1) as usize;
        if cores == 1 && more.is_empty() {
            return None;
        }
        if cores > 1 {
            design.set_cores(cores);
        }
        let new_core = || CoreState {
            mmu: Mmu::new(&cfg.tlb),
            mem: PrivateCaches::new(&cfg.mem),
            timing: Timing::default(),
            core: (cfg.timing.model == TimingModel::Ooo).then(|| {
                CoreModel::with_memory(
                    &cfg.core,
                    cfg.mem.l1d.latency_cycles,
                    false,
                    dram.map(|d| d.share()),
                    cfg.mem.l2_prefetcher.kind == crate::mem::PrefetcherKind::Stream,
                )
            }),
            parked: Parked::default(),
            c: Counters::default(),
        };
        let spare = |core| ProcState {
            source: Box::new(NoEvents),
            buf: Vec::new(),
            pos: 0,
            prefetched: RecentPages::new(),
            asid: 0,
            finished: false,
            truncated_by_refs: false,
            refs: 0,
            core,
        };
        let mut procs = vec![spare(0)];
        for (i, source) in more.into_iter().enumerate() {
            let i = i + 1;
            procs.push(ProcState {
                source,
                buf: Vec::with_capacity(CHUNK),
                asid: os.process((i as u32) << PID_SHIFT),
                ..spare(i % cores)
            });
        }
        let mut sched: Vec<CoreSched> = (0..cores).map(|_| CoreSched::default()).collect();
        for (i, p) in procs.iter().enumerate() {
            sched[p.core].procs.push(i);
            sched[p.core].asids.push(if i == 0 { 0 } else { p.asid });
        }
        Some(Box::new(Machine {
            cores: (0..cores).map(|_| new_core()).collect(),
            sched,
            proc_done: vec![false; procs.len()],
            procs,
            running: 0,
            chunk_left: INTERLEAVE_REFS,
            quantum_cycles: cfg
                .sim
                .quantum_cycles(cfg.mem.dram.core_clock_mhz)
                .unwrap_or(u64::MAX),
            all_done: false,
            os_now: 0,
            ipi_targets: 0,
            shootdown_rounds: 0,
            demux: threaded.then(ThreadDemux::new),
            thread_running: 0,
            // A multi-threaded run picks its first thread before its first turn.
            thread_waits: threaded,
            settled: vec![false; cores],
        }))
    }

    /// Whether this is a multi-threaded run (one trace on several cores).
    pub(super) fn threaded(&self) -> bool {
        self.demux.is_some()
    }

    /// The process installed on core `k`.
    pub(super) fn current_proc(&self, k: usize) -> usize {
        if self.threaded() {
            return 0;
        }
        self.sched[k].procs[self.sched[k].current]
    }

    /// A mapping of `asid` was removed: drop it from the TLBs of every parked core (the running
    /// core's were invalidated by the caller) and mark the cores that ran `asid` for an IPI.
    pub(super) fn shootdown(&mut self, asid: Asid, m: Mapping) {
        for (k, st) in self.cores.iter_mut().enumerate() {
            if k != self.running {
                st.mmu.invalidate(asid, m);
                if self.sched[k].asids.contains(&asid) {
                    self.ipi_targets |= 1 << k;
                }
            }
        }
    }

    /// Every translation of `asid` leaves every parked core's TLBs (a process exited).
    pub(super) fn invalidate_asid(&mut self, asid: Asid) {
        for (k, st) in self.cores.iter_mut().enumerate() {
            if k != self.running {
                st.mmu.invalidate_asid(asid);
            }
        }
    }

    /// Charge the IPIs of the shootdowns just applied: one round from the running core to
    /// every marked core, `ipi_cycles` of OS time on the sender and on each receiver.
    pub(super) fn send_shootdown_ipis(&mut self, ipi_cycles: u64) {
        if self.ipi_targets == 0 {
            return;
        }
        self.shootdown_rounds += 1;
        let n = self.ipi_targets.count_ones() as u64;
        let sender = &mut self.sched[self.running];
        sender.ipis_sent += n;
        sender.ipi_cycles += ipi_cycles;
        for k in 0..self.sched.len() {
            if self.ipi_targets & (1 << k) != 0 {
                self.sched[k].ipis_received += 1;
                self.sched[k].ipi_cycles += ipi_cycles;
            }
        }
        self.ipi_targets = 0;
    }

    /// The private caches of the parked cores.
    pub(super) fn parked_private_caches(&mut self) -> Vec<&mut PrivateCaches> {
        let running = self.running;
        self.cores
            .iter_mut()
            .enumerate()
            .filter(|(k, _)| *k != running)
            .map(|(_, st)| &mut st.mem)
            .collect()
    }

    /// The running core now runs `asid` too.
    pub(super) fn note_asid(&mut self, asid: Asid) {
        let s = &mut self.sched[self.running];
        if !s.asids.contains(&asid) {
            s.asids.push(asid);
        }
    }

    /// References simulated by the parked cores.
    pub(super) fn parked_refs(&self) -> u64 {
        self.cores
            .iter()
            .enumerate()
            .filter(|(k, _)| *k != self.running)
            .map(|(_, st)| st.c.refs)
            .sum()
    }
}
