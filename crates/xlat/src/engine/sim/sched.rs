//! The turns of a machine's cores and processes: who runs next, context switches (with the
//! `switch.*` windows), thread switches of a multi-threaded trace, and the steps of a
//! multi-core or multi-process run.
//!
//! Owns the `impl Sim` methods that swap the running core and the installed process with their
//! slots in [`Machine`]. May call: `designs` (`select_core`, `flush_mmu_caches`), and the
//! engine's `error`, `machine` and `sim` (the struct, the loop `Sim::run_until`). Contract:
//! cores take turns of [`INTERLEAVE_REFS`] references, the one with the fewest simulated cycles
//! first (ties: the lowest index); results never depend on how a run is chunked.

use super::{Runner, Sim};
use crate::designs::Design;
use crate::engine::error::SimError;
use crate::engine::machine::{CoreState, Machine, ProcState, Window, INTERLEAVE_REFS, PID_SHIFT};

impl<D: Design> Sim<D> {
    /// The OS pid of the pid `pid` that the installed process's events name.
    pub(super) fn os_pid(&self, pid: u32) -> u32 {
        match self.machine.as_deref() {
            Some(m) => {
                ((m.current_proc(m.running) as u32) << PID_SHIFT) | (pid & ((1 << PID_SHIFT) - 1))
            }
            None => pid,
        }
    }

    /// Simulated cycles of the installed core so far (OS time excluded): the clock the turns
    /// balance and the OS clock. In a sampled run its model's clock (or, while parked, that
    /// clock when parked plus the cycles since) plus `turn_clock_offset` (`Parked`); else
    /// exactly the model's (or the `simple` formula's).
    pub(super) fn core_cycles_now(&mut self) -> f64 {
        let offset = self.turn_clock_offset;
        match self.core.as_mut() {
            Some(core) if offset == 0.0 => core.clock(),
            Some(core) => core.clock() + offset,
            None => {
                let simple = self
                    .timing
                    .core_cycles(&self.cfg.timing, self.c.instructions);
                match self.parked.clock(simple, self.c.refs) {
                    Some(parked) => parked + offset,
                    None => simple,
                }
            }
        }
    }

    fn swap_core(&mut self, st: &mut CoreState) {
        std::mem::swap(&mut self.mmu, &mut st.mmu);
        self.mem.swap_private(&mut st.mem);
        std::mem::swap(&mut self.timing, &mut st.timing);
        std::mem::swap(&mut self.core, &mut st.core);
        std::mem::swap(&mut self.parked, &mut st.parked);
        std::mem::swap(&mut self.c, &mut st.c);
    }

    fn swap_proc(&mut self, p: &mut ProcState) {
        std::mem::swap(&mut self.source, &mut p.source);
        std::mem::swap(&mut self.buf, &mut p.buf);
        std::mem::swap(&mut self.pos, &mut p.pos);
        std::mem::swap(&mut self.prefetched, &mut p.prefetched);
        std::mem::swap(&mut self.asid, &mut p.asid);
        std::mem::swap(&mut self.finished, &mut p.finished);
        std::mem::swap(&mut self.truncated_by_refs, &mut p.truncated_by_refs);
    }

    /// Put the installed process `j` back into its slot.
    fn park_proc(&mut self, m: &mut Machine, j: usize) {
        m.procs[j].refs = self.c.refs - self.proc_base;
        self.swap_proc(&mut m.procs[j]);
    }

    /// Install process `j` (on the installed core).
    fn install_proc(&mut self, m: &mut Machine, j: usize) {
        self.proc_base = self.c.refs - m.procs[j].refs;
        self.swap_proc(&mut m.procs[j]);
    }

    /// Figures of the installed core that `switch.*` counts.
    fn window_figures(&self) -> Window {
        Window {
            refs: self.c.refs,
            tlb_l1_misses: self.mmu.l1_misses + self.mmu.itlb_misses,
            walks: self.c.walks,
            walk_mem_accesses: self.c.walk_mem_accesses,
            mmu_cache_misses: self.design.mmu_cache_misses(),
        }
    }

    /// The end of a core's turn: pick the core with the fewest simulated cycles (ties: lowest
    /// index) among those with a process left, install it, and on it switch process when its
    /// process ended or its quantum expired with another waiting. `false` when every process
    /// has ended.
    fn schedule(&mut self, m: &mut Machine) -> bool {
        let r = m.running;
        m.sched[r].cycles = self.core_cycles_now();
        let j = m.current_proc(r);
        if self.finished {
            m.proc_done[j] = true;
            // Its last references complete now, as on a real core, not when the record
            // settles a copy of the core against the shared DRAM controller at the end of the
            // run (model version 2; CHANGELOG).
            if let Some(core) = self.core.as_mut() {
                core.settle();
            }
        }
        let runnable = |m: &Machine, k: usize| m.sched[k].procs.iter().any(|p| !m.proc_done[*p]);
        let Some(k) = (0..m.sched.len())
            .filter(|k| runnable(m, *k))
            .min_by(|a, b| m.sched[*a].cycles.total_cmp(&m.sched[*b].cycles))
        else {
            return false;
        };
        if k != r {
            self.park_proc(m, j);
            self.swap_core(&mut m.cores[r]);
            self.swap_core(&mut m.cores[k]);
            self.design.select_core(k);
            m.running = k;
            let jk = m.current_proc(k);
            self.install_proc(m, jk);
        }
        let cur = m.current_proc(k);
        let s = &m.sched[k];
        let now = s.cycles;
        let waiting = s
            .procs
            .iter()
            .filter(|p| **p != cur && !m.proc_done[**p])
            .count();
        let expired = waiting > 0 && now - s.slice_start >= m.quantum_cycles as f64;
        if m.proc_done[cur] || expired {
            let n = s.procs.len();
            let next = (1..=n)
                .map(|d| (s.current + d) % n)
                .find(|i| !m.proc_done[s.procs[*i]])
                .expect("a runnable core has a process left");
            self.context_switch(m, k, next);
        }
        m.chunk_left = INTERLEAVE_REFS;
        true
    }

    /// Switch core `k` (installed) to its `next`-th process: the outgoing process's stream is
    /// parked, the incoming one's installed, the design walks from its root (its ASID); with
    /// `sim.flush_tlb_on_switch` the core's TLBs and MMU caches are flushed.
    fn context_switch(&mut self, m: &mut Machine, k: usize, next: usize) {
        let from = m.current_proc(k);
        let to = m.sched[k].procs[next];
        self.park_proc(m, from);
        self.install_proc(m, to);
        let s = &mut m.sched[k];
        s.current = next;
        s.slice_start = s.cycles;
        s.switches += 1;
        s.window_left = self.cfg.sim.switch_window_refs;
        s.windows += 1;
        if self.cfg.sim.flush_tlb_on_switch {
            for a in &s.asids {
                self.mmu.invalidate_asid(*a);
            }
            self.design.flush_mmu_caches();
        }
        if !s.asids.contains(&self.asid) {
            s.asids.push(self.asid);
        }
    }

    /// The end of a thread's turn in a multi-threaded run: settle the cores whose threads have
    /// all ended, then pick the ready thread whose core has the fewest simulated cycles (ties:
    /// the thread whose next event comes first in the trace) and install its core. `false`
    /// when every thread has ended.
    fn schedule_thread(&mut self, m: &mut Machine) -> Result<bool, SimError> {
        let r = m.running;
        m.sched[r].cycles = self.core_cycles_now();
        let demux = m.demux.as_mut().expect("a multi-threaded run");
        demux
            .read_ahead(&mut *self.source)
            .map_err(SimError::Source)?;
        let cores = m.sched.len();
        if demux.trace_ended() {
            // A core whose threads have all ended completes its last references now, as a
            // process's core does when its process ends (model version 2), not at the record
            // against every other core's requests.
            for k in 0..cores {
                let threads = (k..demux.threads()).step_by(cores);
                if m.settled[k] || !threads.clone().all(|t| demux.thread_ended(t)) {
                    continue;
                }
                m.settled[k] = true;
                let model = if k == r {
                    self.core.as_mut()
                } else {
                    m.cores[k].core.as_mut()
                };
                if let Some(core) = model {
                    core.settle();
                }
            }
        }
        let Some((t, _)) = (0..demux.threads())
            .filter_map(|t| demux.ready(t).map(|seq| (t, seq)))
            .min_by(|a, b| {
                let (ca, cb) = (m.sched[a.0 % cores].cycles, m.sched[b.0 % cores].cycles);
                ca.total_cmp(&cb).then(a.1.cmp(&b.1))
            })
        else {
            debug_assert!(demux.all_ended(), "a thread is always ready until all end");
            return Ok(false);
        };
        let k = t % cores;
        if k != r {
            self.swap_core(&mut m.cores[r]);
            self.swap_core(&mut m.cores[k]);
            self.design.select_core(k);
            m.running = k;
        }
        m.thread_running = t;
        m.thread_waits = false;
        if !m.sched[k].asids.contains(&self.asid) {
            m.sched[k].asids.push(self.asid);
        }
        m.chunk_left = INTERLEAVE_REFS;
        Ok(true)
    }

    /// [`Runner::step`] of a multi-threaded trace on several cores: turns of
    /// [`INTERLEAVE_REFS`] references, each to the ready thread whose core has the fewest
    /// cycles (`schedule_thread`); a turn also ends where its thread must wait for another
    /// (a barrier, `threads.rs`). `sim.refs` bounds the references of all threads together.
    pub(super) fn step_threaded(&mut self, max_refs: u64) -> Result<bool, SimError> {
        let mut left = max_refs;
        loop {
            if self.finished {
                return Ok(true);
            }
            if self.refs() >= self.cfg.sim.refs {
                self.finished = true;
                self.truncated_by_refs = true;
                return Ok(true);
            }
            if left == 0 {
                return Ok(false);
            }
            let mut m = self.machine.take().expect("a machine");
            if m.chunk_left == 0 || m.thread_waits {
                let more = self.schedule_thread(&mut m);
                let more = match more {
                    Ok(more) => more,
                    Err(e) => {
                        self.machine = Some(m);
                        return Err(e);
                    }
                };
                if !more {
                    m.all_done = true;
                    self.machine = Some(m);
                    self.finished = true;
                    return Ok(true);
                }
            }
            let n = m.chunk_left.min(left).min(self.cfg.sim.refs - self.refs());
            self.machine = Some(m);
            let before = self.c.refs;
            self.run_until(before + n)?;
            let did = self.c.refs - before;
            let m = self.machine.as_deref_mut().expect("a machine");
            m.chunk_left -= did.min(m.chunk_left);
            left -= did.min(left);
        }
    }

    /// [`Runner::step`] of a multi-core or multi-process run: cores take turns of
    /// [`INTERLEAVE_REFS`] references, each process runs until `sim.refs` references or its
    /// stream's end, and an ended core idles.
    pub(super) fn step_machine(&mut self, max_refs: u64) -> Result<bool, SimError> {
        let mut left = max_refs;
        loop {
            let m = self.machine.as_deref().expect("a machine");
            if m.all_done {
                return Ok(true);
            }
            if m.chunk_left == 0 || self.finished {
                let mut m = self.machine.take().expect("a machine");
                let more = self.schedule(&mut m);
                m.all_done = !more;
                self.machine = Some(m);
                if !more {
                    return Ok(true);
                }
                continue;
            }
            if left == 0 {
                return Ok(false);
            }
            let k = m.running;
            let window = m.sched[k].window_left;
            let own = self.c.refs - self.proc_base;
            let mut n = m.chunk_left.min(left).min(self.cfg.sim.refs - own);
            if window > 0 {
                n = n.min(window);
            }
            let before = self.window_figures();
            self.run_until(before.refs + n)?;
            let did = self.c.refs - before.refs;
            let after = (window > 0).then(|| self.window_figures());
            let m = self.machine.as_deref_mut().expect("a machine");
            if let Some(after) = after {
                let s = &mut m.sched[k];
                s.window.add(Window::delta(after, before));
                s.window_left -= did.min(s.window_left);
            }
            m.chunk_left -= did.min(m.chunk_left);
            left -= did.min(left);
            if self.c.refs - self.proc_base >= self.cfg.sim.refs && !self.finished {
                self.finished = true;
                self.truncated_by_refs = true;
            }
        }
    }
}
