//! `Sim<D>`: the simulation loop specialized for one design (the per-reference code is
//! monomorphized per registered design; no dynamic dispatch per reference).
//!
//! Owns the simulator's state ([`Sim`]: the running core's TLBs, caches, timing and counters, the
//! installed process's stream, the OS model, the memory system, the design, the parked cores and
//! processes), its construction ([`MakeSim`], `Sim::build`), the event loop (`Sim::run_until`)
//! and [`Runner`], what the builder drives. The loop's other concerns are `impl Sim` blocks in
//! this folder, each a child of this file (they name `Sim`; this file names none of them):
//! `translate` (one reference: TLBs, walks, the oracle, the data access), `os_events`
//! (syscalls, faults, daemons, mapping changes and shootdowns), `sched` (the turns of the cores
//! and processes of a machine) and `record` (the result record).
//!
//! May call: `addr`, `config`, `designs`, `mem`, `mmu`, `os`, `sampling` (its probe), `timing`,
//! `trace`, `virt`, and the engine's `counters`, `error`, `machine` and `stream`. Contract: as
//! the engine's (see its module doc); with one process on one core `machine` is `None` and the
//! loop runs exactly as it always did. A sampled run parks the core while references run
//! functionally warmed (`Runner::set_functional`): the loop is the same, without the core.

mod os_events;
mod record;
mod sched;
mod translate;

use super::counters::Counters;
use super::error::SimError;
use super::machine::{Machine, Parked};
use super::stream::{RecentPages, CHUNK};
use crate::addr::{Asid, Vaddr, BASE_PAGE_BYTES};
use crate::config::Config;
use crate::designs::{Design, DesignVisitor};
use crate::mem::MemSystem;
use crate::mmu::Mmu;
use crate::os::{MapChange, Os, OsError};
use crate::timing::CoreModel;
use crate::timing::{Timing, TimingModel};
use crate::trace::{Event, EventSource};
use serde_json::Value;

/// What the engine needs from a design-specialized simulator; implemented by `Sim<D>` for every
/// registered design, so the per-reference loop is monomorphized.
pub(super) trait Runner: Send {
    fn step(&mut self, max_refs: u64) -> Result<bool, SimError>;
    fn refs(&self) -> u64;
    fn record(&self, wall_seconds: f64) -> Value;
    /// Run the references that follow functionally warmed (`true`: every state but the core's
    /// time updated, see `crate::sampling`) or in detail (`false`, as every run starts).
    fn set_functional(&mut self, on: bool);
    /// The running totals a sampled window is measured from, and each core's in core order
    /// (none with one core; with several, the machine's are their sums, its time the latest
    /// core's clock).
    fn probes(&mut self) -> (crate::sampling::Probe, Vec<crate::sampling::Probe>);
}

/// The simulator of one design: the running core's and the installed process's state, the
/// shared memory system, OS model and design, and the parked cores and processes (`machine`).
/// (`cfg`, `os`, `changes` and `machine` are the engine's to see: its tests start a
/// shootdown by hand.)
pub(super) struct Sim<D: Design> {
    pub(super) cfg: Config,
    source: Box<dyn EventSource>,
    pub(super) os: Os,
    mmu: Mmu,
    mem: MemSystem,
    design: D,
    timing: Timing,
    /// The out-of-order core when `timing.model = "ooo"`; it sees every reference with the
    /// latencies computed here and changes nothing else (so it may run on a thread of its own,
    /// see [`CoreModel`]).
    core: Option<CoreModel>,
    /// The out-of-order core while references run functionally warmed (`sim.sampling`): taken
    /// out of `core`, so that the loop runs without it and without a test of its own; with
    /// when it last resumed and what the turns' clock needs (swapped with the core).
    parked: Parked,
    /// Cycles added to every core's clock for the turns of several cores and the OS clock: in
    /// a sampled run, the functional phases' (each phase adds the most any core ran in it), so
    /// that the clock never stands still while the models are parked; 0 otherwise. (Here, not
    /// in `machine`, which the scheduler takes out while it reads the clocks.)
    turn_clock_offset: f64,
    /// The one-core OS clock's last reading (`Sim::os_now`; a machine keeps its own).
    os_clock_floor: u64,
    /// Instruction count and dependence of the reference being simulated (for `core`).
    cur_instrs: u32,
    cur_dep: u16,
    /// `0xffff`, or 0 under `core.dependences = "ignore"` (every dependence dropped).
    dep_mask: u16,
    c: Counters,
    asid: Asid,
    buf: Vec<Event>,
    pos: usize,
    /// Pages last prefetched (see `prefetch_ahead`).
    prefetched: RecentPages,
    pub(super) changes: Vec<MapChange>,
    /// Spare buffer for [`Sim::apply_changes`].
    change_batch: Vec<MapChange>,
    finished: bool,
    truncated_by_refs: bool,
    /// `c.refs` when the installed process had simulated none (its references are
    /// `c.refs - proc_base`); 0 in a single-process run.
    proc_base: u64,
    /// The other cores and processes of a multi-core or multi-process run (`None` for one
    /// process on one core: the engine then runs exactly as it always did).
    pub(super) machine: Option<Box<Machine>>,
    /// The oracle checks L1 TLB hits against the guest OS alone (`sim.oracle` in a native run;
    /// a nested run's L1 entries are combined translations, checked by `check`).
    l1_oracle_native: bool,
}

/// Builds the runner once the design exists; the OS is handed over afterwards because the
/// design's constructor borrows its physical memory.
pub(super) struct MakeSim {
    pub(super) cfg: Config,
    pub(super) source: Box<dyn EventSource>,
    /// The sources of processes 1, 2, ... of a multi-process run (empty for one process).
    pub(super) more: Vec<Box<dyn EventSource>>,
    /// The host of a nested run (`virt.enabled`); attached to the memory system.
    pub(super) nested: Option<Box<dyn crate::virt::HostTranslate>>,
    /// Put a one-core run's out-of-order core on a thread of its own (`XLAT_TIMING_THREAD`).
    pub(super) timing_thread: bool,
}

pub(super) type RunnerFactory = Box<dyn FnOnce(Os) -> Result<Box<dyn Runner>, OsError> + Send>;

impl DesignVisitor for MakeSim {
    type Output = RunnerFactory;
    fn visit<D: Design + 'static>(self, design: D) -> RunnerFactory {
        let MakeSim {
            cfg,
            source,
            more,
            nested,
            timing_thread,
        } = self;
        Box::new(move |os: Os| -> Result<Box<dyn Runner>, OsError> {
            Ok(Box::new(Sim::build(
                cfg,
                source,
                more,
                nested,
                design,
                os,
                timing_thread,
            )?))
        })
    }
}

impl<D: Design> Sim<D> {
    /// The simulator of `design` over `os`, process 0 reading `source` (and processes 1, 2,
    /// ... reading `more`).
    pub(super) fn build(
        cfg: Config,
        source: Box<dyn EventSource>,
        more: Vec<Box<dyn EventSource>>,
        nested: Option<Box<dyn crate::virt::HostTranslate>>,
        mut design: D,
        mut os: Os,
        timing_thread: bool,
    ) -> Result<Sim<D>, OsError> {
        os.set_page_sizes(design.page_sizes())?;
        os.set_va_bits(design.va_bits().unwrap_or(cfg.machine_va_bits()));
        if let Some(aslr) = os.aslr() {
            design.set_aslr(aslr);
        }
        let asid = os.process(0);
        let mmu = Mmu::new(&cfg.tlb);
        design.set_l2_tlb_latency(mmu.l2_latency_cycles);
        // One source on several cores: a multi-threaded trace.
        let threaded = more.is_empty() && cfg.sim.cores > 1;
        // The queued DRAM model: one controller for every core, timed by the cores' models
        // from the memory events the memory system logs (timing/ooo/memory.rs).
        let dram = (cfg.dram_model() == crate::mem::DramModel::Queued).then(|| {
            crate::timing::ooo::DramHandle::new(
                crate::mem::dram::controller::DramController::new(&cfg.mem.dram)
                    .expect("mem.dram was validated with the configuration"),
            )
        });
        let machine = Machine::build(&cfg, &mut os, &mut design, more, threaded, dram.as_ref());
        let mut mem = MemSystem::new(&cfg.mem);
        mem.set_log_events(dram.is_some());
        mem.set_log_prefetches(cfg.timing.model == TimingModel::Ooo);
        mem.nested = nested;
        Ok(Sim {
            mmu,
            mem,
            l1_oracle_native: cfg.sim.oracle && !cfg.virt.enabled,
            // Only a one-core run: a machine's scheduler reads every core's clock between turns.
            core: (cfg.timing.model == TimingModel::Ooo).then(|| {
                CoreModel::with_memory(
                    &cfg.core,
                    cfg.mem.l1d.latency_cycles,
                    timing_thread && machine.is_none(),
                    dram.as_ref().map(|d| d.share()),
                    cfg.mem.l2_prefetcher.kind == crate::mem::PrefetcherKind::Stream,
                )
            }),
            parked: Parked::default(),
            turn_clock_offset: 0.0,
            os_clock_floor: 0,
            cur_instrs: 0,
            cur_dep: 0,
            dep_mask: if cfg.core.dependences == crate::timing::ooo::Dependences::Ignore {
                0
            } else {
                u16::MAX
            },
            cfg,
            source,
            os,
            design,
            timing: Timing::default(),
            c: Counters::default(),
            asid,
            buf: Vec::with_capacity(CHUNK),
            pos: 0,
            prefetched: RecentPages::new(),
            changes: Vec::new(),
            change_batch: Vec::new(),
            finished: false,
            truncated_by_refs: false,
            proc_base: 0,
            machine,
        })
    }
}

impl<D: Design> Sim<D> {
    /// Simulate the installed process on the installed core until the core has simulated
    /// `target` references in all, or the process's events end (`finished`).
    pub(super) fn run_until(&mut self, target: u64) -> Result<(), SimError> {
        while !self.finished && self.c.refs < target {
            if self.pos == self.buf.len() {
                // (The host's daemons in a nested run: virt/.)
                if self.os.has_daemons()
                    || self.design.wants_os_work()
                    || self.mem.nested.as_ref().is_some_and(|h| h.has_daemons())
                {
                    self.run_daemons()?;
                }
                self.buf.clear();
                self.pos = 0;
                let n = match self.machine.as_deref_mut() {
                    // A multi-threaded trace: the running thread's events, at most the turn's
                    // references (every event fetched runs before another thread's turn,
                    // `threads.rs`); none when it must wait, which ends its turn.
                    Some(Machine {
                        demux: Some(demux),
                        thread_running,
                        thread_waits,
                        ..
                    }) => {
                        let max = (target - self.c.refs).min(CHUNK as u64) as usize;
                        let n = demux
                            .fill(&mut *self.source, *thread_running, &mut self.buf, max)
                            .map_err(SimError::Source)?;
                        if n == 0 {
                            *thread_waits = true;
                            break;
                        }
                        n
                    }
                    _ => self
                        .source
                        .fill(&mut self.buf, CHUNK)
                        .map_err(SimError::Source)?,
                };
                if n == 0 {
                    self.finished = true;
                    break;
                }
            }
            while self.pos < self.buf.len() && self.c.refs < target {
                let mut ev = self.buf[self.pos];
                self.pos += 1;
                if self.os.aslr_on() {
                    // os.aslr: the event's addresses in the process's randomized layout.
                    ev = self
                        .os
                        .aslr_place(self.asid, ev)
                        .map_err(|e| self.os_err(e))?;
                }
                match ev {
                    Event::Access {
                        kind,
                        va,
                        size,
                        instrs,
                        dep,
                    } => {
                        self.cur_instrs = instrs;
                        self.cur_dep = dep & self.dep_mask;
                        self.access(kind, va, instrs)?;
                        let last = Vaddr(va.0.saturating_add(size.max(1) as u64 - 1));
                        if last.vpn() != va.vpn() {
                            self.second_page(kind, va, Vaddr(last.0 & !(BASE_PAGE_BYTES - 1)))?;
                        }
                    }
                    // (A multi-threaded run's are consumed by its `ThreadDemux`; with one
                    // core, or one thread per process, a thread switch changes nothing.)
                    Event::Thread { .. } => {}
                    other => self.handle_syscall(other)?,
                }
                self.c.events += 1;
            }
        }
        Ok(())
    }
}

impl<D: Design> Runner for Sim<D> {
    fn step(&mut self, max_refs: u64) -> Result<bool, SimError> {
        if let Some(m) = self.machine.as_deref() {
            if m.threaded() {
                return self.step_threaded(max_refs);
            }
            return self.step_machine(max_refs);
        }
        let target = self.c.refs.saturating_add(max_refs).min(self.cfg.sim.refs);
        self.run_until(target)?;
        if self.c.refs >= self.cfg.sim.refs && !self.finished {
            self.finished = true;
            self.truncated_by_refs = true;
        }
        Ok(self.finished)
    }

    fn refs(&self) -> u64 {
        match self.machine.as_deref() {
            Some(machine) => self.c.refs + machine.parked_refs(),
            None => self.c.refs,
        }
    }

    fn record(&self, wall_seconds: f64) -> Value {
        if self.machine.is_some() {
            return self.record_machine(wall_seconds);
        }
        self.record_one_core(wall_seconds)
    }

    fn set_functional(&mut self, on: bool) {
        debug_assert!(
            self.machine
                .as_deref()
                .is_none_or(|m| m.threaded() || m.procs.len() <= m.cores.len()),
            "sampling never time-slices a core"
        );
        let simple_now = self
            .timing
            .core_cycles(&self.cfg.timing, self.c.instructions);
        let cfg = &self.cfg;
        if on {
            self.parked.park(&mut self.core, simple_now, self.c.refs);
            if let Some(m) = self.machine.as_deref_mut() {
                for (k, st) in m.cores.iter_mut().enumerate() {
                    if k != m.running {
                        let simple_now = st.timing.core_cycles(&cfg.timing, st.c.instructions);
                        st.parked.park(&mut st.core, simple_now, st.c.refs);
                    }
                }
            }
        } else {
            let mut most = self.parked.resume(&mut self.core, simple_now, self.c.refs);
            if let Some(m) = self.machine.as_deref_mut() {
                for (k, st) in m.cores.iter_mut().enumerate() {
                    if k != m.running {
                        let simple_now = st.timing.core_cycles(&cfg.timing, st.c.instructions);
                        most = most.max(st.parked.resume(&mut st.core, simple_now, st.c.refs));
                    }
                }
                // One offset for all cores: the models' clocks, which were within a turn of
                // each other when parked, are again what the turns balance.
                self.turn_clock_offset += most;
                let offset = self.turn_clock_offset;
                for (k, st) in m.cores.iter_mut().enumerate() {
                    if k != m.running {
                        if let Some(core) = st.core.as_mut() {
                            m.sched[k].cycles = core.clock() + offset;
                        }
                    }
                }
            } else {
                // One core: its clock (the OS clock's) goes on from the functional phase's end.
                self.turn_clock_offset += most;
            }
        }
        // The queued DRAM controller is timed by the core: no events while it is parked.
        self.mem
            .set_log_events(!on && self.cfg.dram_model() == crate::mem::DramModel::Queued);
        self.mem
            .set_log_prefetches(!on && self.cfg.timing.model == TimingModel::Ooo);
    }

    fn probes(&mut self) -> (crate::sampling::Probe, Vec<crate::sampling::Probe>) {
        let Some(mut m) = self.machine.take() else {
            return (self.core_probe(), Vec::new());
        };
        let cfg = &self.cfg;
        let n = m.cores.len();
        let mut cores = Vec::with_capacity(n);
        for k in 0..n {
            cores.push(if k == m.running {
                let model = self.core.as_mut().or(self.parked.core.as_mut());
                machine_probe_of(cfg, &self.c, &self.mmu, &self.timing, model)
            } else {
                let st = &mut m.cores[k];
                let model = st.core.as_mut().or(st.parked.core.as_mut());
                machine_probe_of(cfg, &st.c, &st.mmu, &st.timing, model)
            });
        }
        self.machine = Some(m);
        // The machine: sums over the cores, its time the latest core's (as its record's).
        let mut p = crate::sampling::Probe {
            refs: self.refs(),
            ..Default::default()
        };
        for q in &cores {
            p.instructions += q.instructions;
            p.cycles = p.cycles.max(q.cycles);
            p.busy_cycles += q.busy_cycles;
            p.exposed_translation_cycles += q.exposed_translation_cycles;
            p.l1_tlb_misses += q.l1_tlb_misses;
            p.l2_tlb_misses += q.l2_tlb_misses;
            p.walks += q.walks;
            p.walk_cycles += q.walk_cycles;
        }
        (p, cores)
    }
}

/// The running totals of one core for a sampled window (`crate::sampling::Probe`).
fn probe_of(
    cfg: &Config,
    c: &Counters,
    mmu: &Mmu,
    timing: &Timing,
    model: Option<&CoreModel>,
) -> crate::sampling::Probe {
    let (cycles, exposed) = match model {
        Some(core) => {
            let snap = core.snapshot();
            let settled = snap.settled();
            (settled.cycles(), settled.head_stall_translation_cycles())
        }
        None => (
            timing.core_cycles(&cfg.timing, c.instructions),
            (1.0 - cfg.timing.translation_overlap) * timing.mmu_overhead_cycles as f64,
        ),
    };
    crate::sampling::Probe {
        refs: c.refs,
        instructions: c.instructions,
        cycles,
        busy_cycles: cycles,
        exposed_translation_cycles: exposed,
        l1_tlb_misses: mmu.l1_misses,
        l2_tlb_misses: mmu.l2_misses,
        walks: c.walks,
        walk_cycles: c.walk_cycles,
    }
}

/// [`probe_of`] for a core of several: its time is the model's clock (the turns' clock, its
/// last reference's dispatch under `time_order`), not the settled retirement of one core
/// (settling a core's last references on a copy of the shared DRAM controller would time
/// them after the other cores' requests, up to a turn later).
fn machine_probe_of(
    cfg: &Config,
    c: &Counters,
    mmu: &Mmu,
    timing: &Timing,
    model: Option<&mut CoreModel>,
) -> crate::sampling::Probe {
    let Some(core) = model else {
        return probe_of(cfg, c, mmu, timing, None);
    };
    let cycles = core.clock();
    let exposed = core.snapshot().head_stall_translation_cycles();
    crate::sampling::Probe {
        cycles,
        busy_cycles: cycles,
        exposed_translation_cycles: exposed,
        ..probe_of(cfg, c, mmu, timing, None)
    }
}

impl<D: Design> Sim<D> {
    /// The installed core's probe (one core).
    fn core_probe(&self) -> crate::sampling::Probe {
        probe_of(
            &self.cfg,
            &self.c,
            &self.mmu,
            &self.timing,
            self.core_model(),
        )
    }
}

impl<D: Design> Sim<D> {
    /// The out-of-order core, parked or not (`timing.model = "ooo"`).
    pub(super) fn core_model(&self) -> Option<&CoreModel> {
        self.core.as_ref().or(self.parked.core.as_ref())
    }
}
