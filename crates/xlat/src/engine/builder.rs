//! The engine's public entry points: [`Simulation`] (build a run, step it, take its record),
//! [`run`] and [`run_workload`].
//!
//! Owns the run's construction (validate the configuration, boot the OS model, build the host of
//! a nested run and the design, hand them to the design-specialized runner), the wall clock, the
//! warm-up (the snapshot when it ends, the measured region's record) and a sampled run's phases
//! (`Simulation::step_sampled`). May call: `config`, `designs` (`build_and_visit`), `os`, `stats`,
//! `timing` (whether the core runs on a thread of its own), `trace`, `virt` (the host), `warmup`,
//! `sampling` (the windows of a sampled run), `workloads`, and the engine's `error` and `sim`
//! (the runner). Contract: see the engine's module doc; the record of a run does not depend on
//! how it is chunked by [`Simulation::step`].

use super::error::SimError;
use super::sim::{MakeSim, Runner, RunnerFactory};
use crate::config::{Config, WarmupRefs};
use crate::designs::build_and_visit;
use crate::os::Os;
use crate::stats::{Stats, StatsExt};
use crate::trace::EventSource;
use serde_json::Value;
use std::time::Instant;

/// The registered design `sim.design` names, handed to the runner's factory.
fn by_name(
    cfg: &Config,
    phys: &mut crate::os::PhysMem,
    sim: MakeSim,
) -> Result<RunnerFactory, crate::os::OsError> {
    build_and_visit(&cfg.sim.design, &cfg.designs, phys, sim)
}

/// A run in progress: build it, call [`Simulation::step`] until it returns `true`, then take the
/// [`Simulation::record`].
///
/// With a warm-up (`sim.warmup_refs`), the runner simulates `warmup_refs + refs` references
/// per process; when the warm-up's references are done the record at that moment is kept
/// (the snapshot), and [`Simulation::record`] reports the measured region (see
/// [`crate::warmup`]).
pub struct Simulation {
    runner: Box<dyn Runner>,
    wall_seconds: f64,
    setup_seconds: Option<f64>,
    /// The configuration as given (the runner's has `sim.refs` raised by the warm-up).
    cfg: Config,
    /// References (over all processes) simulated before the statistics restart; 0 without
    /// warm-up.
    warmup_total: u64,
    /// Why the warm-up is as long as it is (`warmup.why` in the record).
    warmup_why: &'static str,
    /// The record when the warm-up ended.
    snapshot: Option<Value>,
    /// The state of a sampled run (`sim.sampling`); `None` when sampling is off.
    sampler: Option<Sampler>,
}

/// A sampled run's progress (see [`crate::sampling`]).
struct Sampler {
    cfg: crate::sampling::Sampling,
    /// The runner is running functionally warmed.
    functional: bool,
    /// The probe at the first reference of the window under way.
    start: Option<crate::sampling::Probe>,
    windows: Vec<crate::sampling::Window>,
    /// With several cores: each core's probe at the first reference of the window under way,
    /// and each core's part of every window (empty with one core).
    core_start: Vec<crate::sampling::Probe>,
    core_windows: Vec<Vec<crate::sampling::Window>>,
    /// References run in detail in the measured region.
    detailed_refs: u64,
}

/// The warm-up of a run (per process) and why: `sim.warmup_refs` when it is a count, else
/// (`"auto"`) the longest first-touch phase of its processes, at most `sim.refs` (a run never
/// simulates more than twice its `sim.refs`); 0 when a source cannot tell its phase (a trace
/// file: the front end resolves `"auto"` from the trace's summary before it gets here).
pub fn resolve_warmup(
    cfg: &Config,
    source: &mut Box<dyn EventSource>,
    more: &mut [Box<dyn EventSource>],
) -> (u64, &'static str) {
    match cfg.sim.warmup_refs {
        WarmupRefs::Refs(n) => (n, if n > 0 { "set" } else { "none" }),
        WarmupRefs::Auto => {
            let mut longest = 0;
            for s in std::iter::once(source).chain(more.iter_mut()) {
                match s.first_touch_refs() {
                    Some(n) => longest = longest.max(n),
                    None => return (0, "auto_source_cannot_tell"),
                }
            }
            if longest > cfg.sim.refs {
                (cfg.sim.refs, "auto_first_touch_capped_at_refs")
            } else {
                (longest, "auto_first_touch_phase")
            }
        }
    }
}

impl Simulation {
    /// Boot the OS model, build the design named in `cfg.sim.design`, and attach `source`.
    ///
    /// With `sim.cores > 1` the source is a multi-threaded program: each thread (`Thread`
    /// events; the first thread seen runs on core 0, the next on core 1, ... modulo the cores)
    /// runs on its own core over the process's one address space; the cores take turns in
    /// simulated time, and the trace's address-space events keep their order (docs/machine.md,
    /// "Multi-threaded traces").
    pub fn new(cfg: &Config, source: Box<dyn EventSource>) -> Result<Simulation, SimError> {
        Simulation::build(cfg, source, Vec::new(), by_name)
    }

    /// As [`Simulation::new`] with one process per source (a multi-programmed run when there
    /// are several): process `i` is OS process `i` and runs on core `i % sim.cores`.
    ///
    /// Errors: no source; more cores than sources (every core runs at least one process; one
    /// multi-threaded trace on several cores is [`Simulation::new`]'s).
    pub fn with_sources(
        cfg: &Config,
        sources: Vec<Box<dyn EventSource>>,
    ) -> Result<Simulation, SimError> {
        cfg.validate().map_err(|e| SimError::Config(e.0))?;
        if sources.is_empty() {
            return Err(SimError::Config("no workload or trace to simulate".into()));
        }
        if cfg.sim.cores as usize > sources.len() {
            return Err(SimError::Config(format!(
                "sim.cores ({}) exceeds the number of processes ({}: the workloads of \
                 workload.name or the traces given): each core runs at least one process \
                 (a single multi-threaded trace may run on several cores)",
                cfg.sim.cores,
                sources.len()
            )));
        }
        let mut sources = sources.into_iter();
        let source = sources.next().expect("at least one source");
        Simulation::build(cfg, source, sources.collect(), by_name)
    }

    /// As [`Simulation::new`] over a design that `make` builds instead of the registered one
    /// `sim.design` names (which the record still names): how a test runs a design that is
    /// not in the registry through the whole engine (`designs/adding_a_design.rs`).
    #[cfg(test)]
    pub(crate) fn with_design<D: crate::designs::Design + 'static>(
        cfg: &Config,
        source: Box<dyn EventSource>,
        make: impl FnOnce(&mut crate::os::PhysMem) -> Result<D, crate::os::OsError>,
    ) -> Result<Simulation, SimError> {
        use crate::designs::DesignVisitor;
        Simulation::build(cfg, source, Vec::new(), |_, phys, sim| {
            Ok(sim.visit(make(phys)?))
        })
    }

    /// Build the run; `visit` builds the design and hands it to the runner's factory.
    fn build(
        cfg: &Config,
        source: Box<dyn EventSource>,
        more: Vec<Box<dyn EventSource>>,
        visit: impl FnOnce(
            &Config,
            &mut crate::os::PhysMem,
            MakeSim,
        ) -> Result<RunnerFactory, crate::os::OsError>,
    ) -> Result<Simulation, SimError> {
        cfg.validate().map_err(|e| SimError::Config(e.0))?;
        let mut source = source;
        let mut more = more;
        // `sim.warmup_refs = "auto"` becomes a count here; the record's configuration has it.
        let (warmup_refs, warmup_why) = resolve_warmup(cfg, &mut source, &mut more);
        let mut resolved = cfg.clone();
        resolved.sim.warmup_refs = WarmupRefs::Refs(warmup_refs);
        resolved.mem.dram.model = cfg.dram_model();
        let cfg = &resolved;
        // The warm-up is counted like `sim.refs`: per process (a multi-threaded trace is one).
        let processes = more.len() as u64 + 1;
        let warmup_total = warmup_refs.saturating_mul(processes);
        let given = cfg;
        let mut raised;
        let cfg = if warmup_refs > 0 {
            raised = cfg.clone();
            raised.sim.refs = cfg.sim.simulated_refs();
            &raised
        } else {
            cfg
        };
        let mut os =
            Os::new(&cfg.os, cfg.sim.seed).map_err(|e| SimError::Os { event: 0, error: e })?;
        // Nested runs: the host OS and design that map guest-physical memory (virt/).
        let nested = if cfg.virt.enabled {
            Some(
                crate::virt::build_host(
                    &cfg.virt,
                    &cfg.mem,
                    cfg.sim.seed,
                    cfg.sim.oracle,
                    os.phys.total_bytes(),
                )
                .map_err(SimError::Config)?,
            )
        } else {
            None
        };
        // `"auto"` resolves here, where the processes and the run's length are known: the
        // references it will measure, `sim.refs` for a generator, at most what a trace file
        // holds after its warm-up, and 0 (never sampled) for a trace of unknown length, which
        // may be far shorter than the `sim.refs` a whole-trace run is given. Processes sharing a
        // core stay detailed; an explicit interval on them is refused below.
        let measured_refs = if source.describe().is_none() {
            given.sim.refs
        } else {
            source.total_refs().map_or(0, |total| {
                total.saturating_sub(warmup_refs).min(given.sim.refs)
            })
        };
        let sampling = cfg
            .sim
            .sampling
            .resolve(measured_refs, cfg.sim.cores, processes);
        // The design allocates from the same physical memory as everything else.
        let factory = visit(
            cfg,
            &mut os.phys,
            MakeSim {
                cfg: cfg.clone(),
                source,
                more,
                nested,
                // Not in a sampled run: the core sees a few per cent of the references there, and
                // each window's probe would copy the worker's whole core across threads.
                timing_thread: crate::timing::thread_wanted().map_err(SimError::Config)?
                    && sampling.is_none(),
            },
        )
        .map_err(|e| SimError::Os { event: 0, error: e })?;
        let sampler = if let Some(sampling) = sampling {
            let cores = u64::from(cfg.sim.cores.max(1));
            if processes > cores {
                return Err(SimError::Config(format!(
                    "sim.sampling runs at most one process per core; {processes} processes on \
                     {cores} core(s) would share a core by time slices, which sampled simulation \
                     does not support yet (set sim.cores = {processes}, or \
                     sim.sampling.interval = 0)"
                )));
            }
            Some(Sampler {
                cfg: sampling,
                functional: false,
                start: None,
                windows: Vec::new(),
                core_start: Vec::new(),
                core_windows: Vec::new(),
                detailed_refs: 0,
            })
        } else {
            None
        };
        Ok(Simulation {
            runner: factory(os).map_err(|e| SimError::Os { event: 0, error: e })?,
            wall_seconds: 0.0,
            setup_seconds: None,
            cfg: given.clone(),
            warmup_total,
            warmup_why,
            snapshot: None,
            sampler,
        })
    }

    /// Wall-clock seconds the caller spent building the workload or opening the traces before
    /// this simulation (a large graph is built before its first reference); recorded as
    /// `sim.setup_seconds`, apart from the simulation's own `sim.wall_seconds`.
    pub fn set_setup_seconds(&mut self, seconds: f64) {
        self.setup_seconds = Some(seconds);
    }

    /// Simulate up to `max_refs` more references. Returns `true` when the run is complete (the
    /// trace ended or `sim.refs` were simulated after the warm-up).
    ///
    /// Errors as the run's, and when the trace ends within the warm-up (nothing would be left
    /// to measure).
    pub fn step(&mut self, max_refs: u64) -> Result<bool, SimError> {
        let t = Instant::now();
        let r = if self.sampler.is_some() {
            self.step_sampled(max_refs)
        } else if self.snapshot.is_none() && self.warmup_total > 0 {
            self.step_warmup(max_refs)
        } else {
            self.runner.step(max_refs)
        };
        self.wall_seconds += t.elapsed().as_secs_f64();
        r
    }

    /// [`Simulation::step`] within the warm-up: stops at its last reference exactly and keeps
    /// the record of that moment.
    #[cold]
    fn step_warmup(&mut self, max_refs: u64) -> Result<bool, SimError> {
        let left = self.warmup_total.saturating_sub(self.runner.refs());
        let done = self.runner.step(max_refs.min(left))?;
        if self.runner.refs() >= self.warmup_total {
            self.snapshot = Some(self.runner.record(0.0));
        } else if done {
            return Err(SimError::Config(format!(
                "the run ended after {} references, within the warm-up (sim.warmup_refs = {} \
                 per process): nothing is left to measure; lower sim.warmup_refs",
                self.runner.refs(),
                self.cfg.sim.warmup_refs.at_most(0)
            )));
        }
        Ok(done)
    }

    /// [`Simulation::step`] of a sampled run: the warm-up functionally warmed, then each unit
    /// of `interval` references as its functional part, its detailed warm-up and its measured
    /// window ([`crate::sampling`]); every phase ends exactly at its last reference.
    fn step_sampled(&mut self, max_refs: u64) -> Result<bool, SimError> {
        let mut left = max_refs;
        while left > 0 {
            let before = self.runner.refs();
            if self.snapshot.is_none() && self.warmup_total > 0 {
                self.set_functional(true);
                let done = self.step_warmup(left)?;
                left -= self.runner.refs() - before;
                if done {
                    self.set_functional(false);
                    return Ok(true);
                }
                continue;
            }
            let s = self.sampler.as_ref().expect("a sampled run");
            let cfg = s.cfg;
            let offset = (before - self.warmup_total) % cfg.interval;
            let functional_end = cfg.functional_refs();
            let window_start = functional_end + cfg.detailed_warmup;
            let (functional, phase_end) = if offset < functional_end {
                (true, functional_end)
            } else if offset < window_start {
                (false, window_start)
            } else {
                (false, cfg.interval)
            };
            if offset == window_start {
                let (probe, cores) = self.runner.probes();
                let s = self.sampler.as_mut().expect("a sampled run");
                s.start = Some(probe);
                s.core_start = cores;
            }
            self.set_functional(functional);
            let done = self.runner.step(left.min(phase_end - offset))?;
            let moved = self.runner.refs() - before;
            left = left.saturating_sub(moved);
            let closes_window = offset >= window_start && offset + moved == cfg.interval;
            let probe = closes_window.then(|| self.runner.probes());
            let s = self.sampler.as_mut().expect("a sampled run");
            if !functional {
                s.detailed_refs += moved;
            }
            if let Some((b, cores)) = probe {
                let a = s.start.take().expect("a window closes after it started");
                s.windows.push(crate::sampling::Window::between(&a, &b));
                if s.core_windows.len() < cores.len() {
                    s.core_windows.resize(cores.len(), Vec::new());
                }
                for (k, (a, b)) in s.core_start.iter().zip(&cores).enumerate() {
                    s.core_windows[k].push(crate::sampling::Window::between(a, b));
                }
            }
            if done {
                // A window the run ended in is not measured.
                s.start = None;
                self.set_functional(false);
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Switch a sampled run's runner to functional warming or back to detail.
    fn set_functional(&mut self, on: bool) {
        let s = self.sampler.as_mut().expect("a sampled run");
        if s.functional != on {
            s.functional = on;
            self.runner.set_functional(on);
        }
    }

    /// References simulated so far (the warm-up's included).
    pub fn refs(&self) -> u64 {
        self.runner.refs()
    }

    /// The result record (see `docs/results.md`): with a warm-up, the figures of the measured
    /// region and a `warmup` section (see [`crate::warmup`]).
    pub fn record(&self) -> Value {
        let mut r = self.measured_record();
        if let Some(s) = self.sampler.as_ref() {
            crate::sampling::finish_record(
                &mut r,
                &s.cfg,
                &s.windows,
                &s.core_windows,
                s.detailed_refs,
            );
        }
        if let (Some(seconds), Some(sim)) = (self.setup_seconds, r.get_mut("sim")) {
            if let Some(sim) = sim.as_object_mut() {
                sim.insert("setup_seconds".into(), seconds.into());
            }
        }
        r
    }

    /// The record of the measured region: the whole run's without warm-up, else the end
    /// record minus the snapshot taken when the warm-up ended.
    fn measured_record(&self) -> Value {
        let mut end = self.runner.record(self.wall_seconds);
        let Some(snap) = self.snapshot.as_ref() else {
            if self.warmup_why.starts_with("auto") {
                // "auto" that came to nothing: the record still says what was decided.
                // Same keys as a real warm-up's, so that readers need not tell them apart.
                let mut w = Stats::new();
                w.put_u64("refs", 0);
                w.put_str("why", self.warmup_why);
                w.put_u64("first_touch_pages", crate::warmup::first_touch_pages(&end));
                w.put_f64("first_touch_share", crate::warmup::first_touch_share(&end));
                end["warmup"] = Value::Object(w);
            }
            return end;
        };
        let (mut r, whole_run_keys) =
            crate::warmup::measured(&end, snap, self.cfg.timing.translation_overlap);
        r["config"] = self.cfg.to_json();
        let pages = crate::warmup::first_touch_pages(&r);
        let share = crate::warmup::first_touch_share(&r);
        let mut w = Stats::new();
        w.put_u64("refs", snap["refs"].as_u64().unwrap_or(0));
        w.put_str("method", "snapshot_subtract");
        w.put_str("why", self.warmup_why);
        w.put_u64("first_touch_pages", pages);
        w.put_f64("first_touch_share", share);
        w.insert("whole_run_keys".into(), Value::from(whole_run_keys));
        r["warmup"] = Value::Object(w);
        r
    }
}

/// Run a whole simulation of `cfg` over `source` and return its record.
pub fn run(cfg: &Config, source: Box<dyn EventSource>) -> Result<Value, SimError> {
    let mut sim = Simulation::new(cfg, source)?;
    while !sim.step(u64::MAX)? {}
    Ok(sim.record())
}

/// Run the built-in workload(s) named in `cfg.workload` (a comma-separated list runs one
/// process per workload, see [`Simulation::with_sources`]).
pub fn run_workload(cfg: &Config) -> Result<Value, SimError> {
    crate::workloads::check_fits(&cfg.workload, cfg.os.phys_mem_bytes, cfg.os.swap.bytes)
        .map_err(SimError::Config)?;
    let sources =
        crate::workloads::create_all(&cfg.workload, cfg.sim.simulated_refs(), cfg.sim.seed)
            .map_err(SimError::Config)?;
    let mut sim = Simulation::with_sources(cfg, sources)?;
    while !sim.step(u64::MAX)? {}
    Ok(sim.record())
}
