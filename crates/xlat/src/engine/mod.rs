//! The simulation loop: event -> OS model -> MMU (TLBs, design walk) -> oracle -> memory ->
//! timing -> stats.
//!
//! Contract: given the same config and event stream, a run produces bit-identical statistics
//! (wall-clock fields aside), however it is chunked by [`Simulation::step`]. Any disagreement
//! between a design's translation and the OS model's mapping aborts the run with
//! [`SimError::Oracle`]: a mismatch is a bug, never a statistic.

mod builder;
mod counters;
mod error;
mod machine;
mod placement;
mod stream;

use crate::addr::{Asid, Mapping, PageSize, Vaddr, Vpn, BASE_PAGE_BYTES, BASE_PAGE_SHIFT};
use crate::config::Config;
use crate::designs::{Design, DesignVisitor};
use crate::mem::{MemSystem, PrivateCaches};
use crate::mmu::{Mmu, TlbOutcome};
use crate::os::{MapChange, Os, OsError};
use crate::stats::{Stats, StatsExt};
use crate::timing::ooo::CoreRef;
use crate::timing::CoreModel;
use crate::timing::{Timing, TimingModel};
use crate::trace::{AccessKind, Event, EventSource};
pub use builder::{run, run_workload, Simulation};
use counters::{
    core_record, count_keys, fix_fractions, sum_into, tlb_and_walk_sections, walk_hist_bucket,
    Counters,
};
pub use error::SimError;
pub use machine::INTERLEAVE_REFS;
use machine::{CoreState, Machine, ProcState, Window, PID_SHIFT};
pub(crate) use placement::invalidate_group_members;
use placement::DesignPlacer;
use serde_json::Value;
use stream::{RecentPages, CHUNK, PREFETCH_DISTANCE};

/// What the engine needs from a design-specialized simulator; implemented by `Sim<D>` for every
/// registered design, so the per-reference loop is monomorphized.
trait Runner: Send {
    fn step(&mut self, max_refs: u64) -> Result<bool, SimError>;
    fn refs(&self) -> u64;
    fn record(&self, wall_seconds: f64) -> Value;
}

struct Sim<D: Design> {
    cfg: Config,
    source: Box<dyn EventSource>,
    os: Os,
    mmu: Mmu,
    mem: MemSystem,
    design: D,
    timing: Timing,
    /// The out-of-order core when `timing.model = "ooo"`; it sees every reference with the
    /// latencies computed here and changes nothing else (so it may run on a thread of its own,
    /// see [`CoreModel`]).
    core: Option<CoreModel>,
    /// Instruction count and dependence of the reference being simulated (for `core`).
    cur_instrs: u32,
    cur_dep: u16,
    c: Counters,
    asid: Asid,
    buf: Vec<Event>,
    pos: usize,
    /// Pages last prefetched (see `prefetch_ahead`).
    prefetched: RecentPages,
    changes: Vec<MapChange>,
    /// Spare buffer for [`Sim::apply_changes`].
    change_batch: Vec<MapChange>,
    finished: bool,
    truncated_by_refs: bool,
    /// `c.refs` when the installed process had simulated none (its references are
    /// `c.refs - proc_base`); 0 in a single-process run.
    proc_base: u64,
    /// The other cores and processes of a multi-core or multi-process run (`None` for one
    /// process on one core: the engine then runs exactly as it always did).
    machine: Option<Box<Machine>>,
    /// The oracle checks L1 TLB hits against the guest OS alone (`sim.oracle` in a native run;
    /// a nested run's L1 entries are combined translations, checked by `check`).
    l1_oracle_native: bool,
}

/// Builds the runner once the design exists; the OS is handed over afterwards because the
/// design's constructor borrows its physical memory.
struct MakeSim {
    cfg: Config,
    source: Box<dyn EventSource>,
    /// The sources of processes 1, 2, ... of a multi-process run (empty for one process).
    more: Vec<Box<dyn EventSource>>,
    /// The host of a nested run (`virt.enabled`); attached to the memory system.
    nested: Option<Box<dyn crate::virt::HostTranslate>>,
    /// Put a one-core run's out-of-order core on a thread of its own (`XLAT_TIMING_THREAD`).
    timing_thread: bool,
}

type RunnerFactory = Box<dyn FnOnce(Os) -> Result<Box<dyn Runner>, OsError> + Send>;

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
    fn build(
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
        let machine = Machine::build(&cfg, &mut os, &mut design, more, threaded);
        let mut mem = MemSystem::new(&cfg.mem);
        mem.nested = nested;
        Ok(Sim {
            mmu,
            mem,
            l1_oracle_native: cfg.sim.oracle && !cfg.virt.enabled,
            // Only a one-core run: a machine's scheduler reads every core's clock between turns.
            core: (cfg.timing.model == TimingModel::Ooo).then(|| {
                CoreModel::new(
                    &cfg.core,
                    cfg.mem.l1d.latency_cycles,
                    timing_thread && machine.is_none(),
                )
            }),
            cur_instrs: 0,
            cur_dep: 0,
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
    /// Apply OS mapping changes to the design and the TLBs; frames whose contents the OS
    /// moved leave the data caches.
    fn apply_changes(&mut self) -> Result<(), OsError> {
        // A design's page-table allocation may compact memory and move data pages: their
        // re-mapping is a further batch of changes, applied until none is left.
        let mut batch = std::mem::take(&mut self.change_batch);
        while !self.changes.is_empty() {
            std::mem::swap(&mut batch, &mut self.changes);
            for ch in batch.drain(..) {
                match ch {
                    MapChange::Map(asid, m) => self.design.map(&mut self.os.phys, asid, m)?,
                    MapChange::Unmap(asid, m) => {
                        self.design.unmap(&mut self.os.phys, asid, m);
                        // Exactly `m` natively; in a nested run also the smaller combined
                        // entries that may cache parts of it (virt/).
                        crate::virt::invalidate_guest_page(&mut self.mmu, &self.mem, asid, m);
                        if let Some(machine) = self.machine.as_deref_mut() {
                            machine.shootdown(asid, m);
                        }
                        // A broken contiguous group: its other members' entries go too.
                        if let Some(group) = self.design.take_broken_group() {
                            let machine = &mut self.machine;
                            invalidate_group_members(
                                &mut self.mmu,
                                &self.mem,
                                asid,
                                group,
                                m.vpn,
                                |member| {
                                    if let Some(machine) = machine.as_deref_mut() {
                                        machine.shootdown(asid, member);
                                    }
                                },
                            );
                        }
                    }
                }
            }
            self.os.apply_relocations(&mut self.changes)?;
        }
        // Keep both buffers' capacity: no allocation per fault.
        self.change_batch = batch;
        if let Some(machine) = self.machine.as_deref_mut() {
            machine.send_shootdown_ipis(self.cfg.sim.shootdown_ipi_cycles);
        }
        for (pfn, order) in self.os.take_moved_frames() {
            let mut others = match self.machine.as_deref_mut() {
                Some(machine) => machine.parked_private_caches(),
                None => Vec::new(),
            };
            // Natively the frames; in a nested run the host frames backing them (virt/).
            crate::virt::invalidate_moved_frames(&mut self.mem, pfn, 1 << order, &mut others);
        }
        Ok(())
    }

    /// Run the OS daemons due by now (simulated core cycles so far), once per event chunk.
    #[cold]
    fn run_daemons(&mut self) -> Result<(), SimError> {
        let now = self.os_now();
        self.os
            .tick(now, &mut self.changes)
            .map_err(|e| self.os_err(e))?;
        self.apply_changes().map_err(|e| self.os_err(e))?;
        self.design_os_work(now)?;
        // Nested runs only (virt/): the host OS's daemons.
        if let Some(mut host) = self.mem.nested.take() {
            host.tick(now, &mut self.mem);
            self.mem.nested = Some(host);
            self.nested_sync()?;
        }
        Ok(())
    }

    /// The OS clock: simulated core cycles so far.
    fn os_now(&mut self) -> u64 {
        let mut now = self
            .timing
            .core_cycles(&self.cfg.timing, self.c.instructions) as u64;
        if let Some(machine) = self.machine.as_deref_mut() {
            // Cores run in turns, each a little ahead of the others: the OS clock (daemons) is
            // the latest time any core has reached at a check, so it never runs backwards.
            now = now.max(machine.os_now);
            machine.os_now = now;
        }
        now
    }

    /// Nested runs with the contiguous bit (Elastic Translations in guest and host): cache the
    /// combined translation `m` of `vpn` as the entry of the smaller of the guest's and the
    /// host's contiguous sizes (`virt::nested_span`).
    #[cold]
    #[inline(never)]
    fn fill_nested_span(&mut self, vpn: Vpn, m: Mapping) {
        let span = self.mem.nested.as_deref().and_then(|host| {
            crate::virt::nested_span(&self.design, &self.os, self.asid, vpn, host)
        });
        self.mmu.fill_span(self.asid, vpn, m, span);
    }

    /// The OS work the design asked for (`Design::os_work`: Utopia's migrations), then its
    /// mapping changes.
    #[cold]
    fn design_os_work(&mut self, now: u64) -> Result<(), SimError> {
        if self.design.wants_os_work() {
            self.design
                .os_work(&mut self.os, now, &mut self.changes)
                .map_err(|e| self.os_err(e))?;
            self.apply_changes().map_err(|e| self.os_err(e))?;
        }
        Ok(())
    }

    /// Nested runs: stop on a host failure; after a host unmap, drop every combined
    /// translation of every guest process from the TLBs.
    #[cold]
    fn nested_sync(&mut self) -> Result<(), SimError> {
        let Some(host) = self.mem.nested.as_mut() else {
            return Ok(());
        };
        let (error, flush) = (host.take_error(), host.take_flush());
        if let Some(e) = error {
            return Err(self.host_err(e));
        }
        if flush {
            for asid in 0..self.os.process_count() {
                self.mmu.invalidate_asid(asid as Asid);
            }
        }
        Ok(())
    }

    fn host_err(&self, e: crate::virt::HostError) -> SimError {
        match e {
            crate::virt::HostError::Os(error) => self.os_err(error),
            crate::virt::HostError::Oracle(msg) => SimError::Oracle(msg),
        }
    }

    /// Nested runs: finish the guest walk `w` of `vpn` as a 2-D walk (see
    /// `virt::finish_walk`).
    #[cold]
    #[inline(never)]
    fn nested_walk(
        &mut self,
        vpn: Vpn,
        w: &mut crate::designs::WalkResult,
        post_fault: bool,
    ) -> Result<(), SimError> {
        let r = crate::virt::finish_walk(
            &mut self.mem,
            &mut self.os,
            self.asid,
            vpn,
            w,
            !D::PERFECT_TLB,
            post_fault,
            self.cfg.sim.oracle,
        );
        r.map_err(|e| self.host_err(e))?;
        self.nested_sync()
    }

    /// The oracle's translation of `vpn`: the OS model's natively; in a nested run the
    /// composition of the guest's and the host's (virt/).
    fn oracle_translate(&self, vpn: Vpn) -> Option<Mapping> {
        match self.mem.nested.as_deref() {
            Some(host) => crate::virt::composed(&self.os, self.asid, vpn, host),
            None => self.os.translate(self.asid, vpn),
        }
    }

    /// The OS model's page fault at `va` of the running process, placed through the design's
    /// placer, with the mapping changes it made applied to the design and the TLBs.
    fn os_fault(&mut self, va: Vaddr, kind: AccessKind) -> Result<Mapping, SimError> {
        let m = self
            .os
            .fault_with(
                self.asid,
                va,
                kind,
                &mut self.changes,
                &mut DesignPlacer(&mut self.design),
            )
            .map_err(|e| self.os_err(e))?;
        self.apply_changes().map_err(|e| self.os_err(e))?;
        Ok(m)
    }

    fn os_err(&self, error: OsError) -> SimError {
        SimError::Os {
            event: self.c.events,
            error,
        }
    }

    fn handle_syscall(&mut self, ev: Event) -> Result<(), SimError> {
        self.c.syscalls += 1;
        let asid = self.asid;
        let r = match ev {
            Event::Mmap {
                addr,
                len,
                prot,
                flags,
            } => self
                .os
                .mmap(asid, addr, len, prot, flags, &mut self.changes),
            Event::Munmap { addr, len } => self.os.munmap(asid, addr, len, &mut self.changes),
            Event::Brk { new_brk } => self.os.brk(asid, new_brk, &mut self.changes),
            Event::Mprotect { addr, len, prot } => {
                self.os.mprotect(asid, addr, len, prot, &mut self.changes)
            }
            Event::Madvise { addr, len, advice } => {
                self.os.madvise(asid, addr, len, advice, &mut self.changes)
            }
            Event::Switch { pid } => {
                let pid = self.os_pid(pid);
                self.asid = self.os.process(pid);
                if let Some(machine) = self.machine.as_deref_mut() {
                    machine.note_asid(self.asid);
                }
                Ok(())
            }
            Event::Exit { pid } => {
                let a = self.os.process(self.os_pid(pid));
                let r = self.os.exit(a, &mut self.changes);
                self.mmu.invalidate_asid(a);
                if let Some(machine) = self.machine.as_deref_mut() {
                    machine.invalidate_asid(a);
                }
                r
            }
            Event::Access { .. } | Event::Thread { .. } => {
                unreachable!("accesses and thread switches are handled by the caller")
            }
        };
        r.map_err(|e| self.os_err(e))?;
        self.apply_changes().map_err(|e| self.os_err(e))
    }

    /// Check a translation against the OS model (the oracle).
    #[inline(always)]
    fn check(
        &mut self,
        vpn: Vpn,
        got: Option<Mapping>,
        what: &'static str,
    ) -> Result<(), SimError> {
        if !self.cfg.sim.oracle {
            return Ok(());
        }
        self.c.oracle_checked += 1;
        let agrees = match &got {
            // Nested runs (virt/): a combined translation against both OS models.
            Some(m) if self.mem.nested.is_some() => self.oracle_translate(vpn) == Some(*m),
            Some(m) => self.os.maps(self.asid, vpn, m),
            None => self.os.translate(self.asid, vpn).is_none(),
        };
        if !agrees {
            let want = self.oracle_translate(vpn);
            return Err(self.mismatch(vpn, got, want, what));
        }
        Ok(())
    }

    /// The oracle for a translation that gives the frame of `vpn` but not the OS page's size (a
    /// range-TLB hit): the frame and permission of the base page `m` must be those the OS page
    /// holding `vpn` gives it.
    #[inline]
    fn check_base(&mut self, vpn: Vpn, m: Mapping, what: &'static str) -> Result<(), SimError> {
        if !self.cfg.sim.oracle {
            return Ok(());
        }
        self.c.oracle_checked += 1;
        if !self.os.maps_base(self.asid, vpn, &m) {
            let want = self.os.translate(self.asid, vpn);
            return Err(self.mismatch(vpn, Some(m), want, what));
        }
        Ok(())
    }

    /// The error of a failed check. Out of line: building the message in the checking code
    /// kept its arguments live (spilled to the stack) on every reference.
    #[cold]
    #[inline(never)]
    fn mismatch(
        &self,
        vpn: Vpn,
        got: Option<Mapping>,
        want: Option<Mapping>,
        what: &'static str,
    ) -> SimError {
        SimError::Oracle(format!(
            "design '{}' {what} for ASID {} VPN {vpn} (reference #{}) gave {got:?}, \
             the OS model maps {want:?}",
            self.cfg.sim.design, self.asid, self.c.refs
        ))
    }

    /// Walk, and on an unmapped page take the fault and walk again. Returns the translation and
    /// the walk cycles. `after_fault` says the first walk already follows a page fault (a store
    /// to a read-only page); such walks, and every repeat after a fault, are counted as
    /// post-fault walks, apart from the TLB-miss walks.
    #[inline]
    fn walk(
        &mut self,
        va: Vaddr,
        kind: AccessKind,
        after_fault: bool,
    ) -> Result<(Mapping, u64), SimError> {
        let vpn = va.vpn();
        let mut cycles = 0u64;
        for attempt in 0..2 {
            let post_fault = after_fault || attempt == 1;
            let mut w = if post_fault {
                self.design.walk_after_fault(self.asid, vpn, &mut self.mem)
            } else {
                self.design.walk(self.asid, vpn, &mut self.mem)
            };
            // Nested runs only (virt/): add the host's share of the 2-D walk and turn the
            // guest translation into the combined gVA -> hPA one.
            if self.mem.nested.is_some() {
                self.nested_walk(vpn, &mut w, post_fault)?;
            }
            if !D::PERFECT_TLB {
                if post_fault {
                    self.c.post_fault_walks += 1;
                    self.c.post_fault_walk_mem_accesses += w.mem_accesses as u64;
                    self.c.post_fault_walk_cycles += w.latency_cycles as u64;
                } else {
                    self.c.walks += 1;
                    self.c.walk_mem_accesses += w.mem_accesses as u64;
                    self.c.walk_cycles += w.latency_cycles as u64;
                    self.c.walk_latency_hist[walk_hist_bucket(w.latency_cycles)] += 1;
                }
                cycles += w.latency_cycles as u64;
            }
            if let Some(m) = w.mapping {
                if !D::PERFECT_TLB && !post_fault {
                    self.c.walks_by_page_order[m.size.order() as usize] += 1;
                }
                self.check(vpn, Some(m), "walk")?;
                self.os.note_walk(self.asid, &m);
                return Ok((m, cycles));
            }
            if attempt == 1 {
                break;
            }
            // Not mapped: the design must agree with the OS before we fault.
            self.check(vpn, None, "walk")?;
            self.c.fault_walks += 1;
            self.timing.page_faults += 1;
            let fault_mark = self.fault_mark();
            self.os_fault(va, kind)?;
            // Work the fault gave the design (Utopia: a full set's eviction), before the
            // repeated walk.
            if self.design.wants_os_work() {
                let now = self.os_now();
                self.design_os_work(now)?;
            }
            self.record_fault_latency(fault_mark);
        }
        Err(SimError::Oracle(format!(
            "design '{}' cannot find the page the OS just mapped at {va} (ASID {})",
            self.cfg.sim.design, self.asid
        )))
    }

    /// One reference. The common case — a data reference whose translation hits an L1 DTLB —
    /// is kept short and inlined into the loop; everything else takes [`Sim::access_general`].
    #[inline(always)]
    fn access(&mut self, kind: AccessKind, va: Vaddr, instrs: u32) -> Result<(), SimError> {
        self.c.refs += 1;
        self.c.instructions += instrs as u64;
        match kind {
            AccessKind::Load => self.c.loads += 1,
            AccessKind::Store => self.c.stores += 1,
            AccessKind::IFetch => self.c.ifetches += 1,
        }
        self.reference(kind, va)
    }

    /// The translation and data access of the page holding `va` (a reference, or the second
    /// page of a page-crossing one); counts no reference.
    #[inline(always)]
    fn reference(&mut self, kind: AccessKind, va: Vaddr) -> Result<(), SimError> {
        if D::PERFECT_TLB || kind == AccessKind::IFetch {
            return self.access_general(kind, va);
        }
        let vpn = va.vpn();
        let Some(m) = self.mmu.lookup_data_l1(self.asid, vpn) else {
            return self.access_general(kind, va);
        };
        // The oracle, as `check` but through the page map's memo of recently read entries:
        // a loop over a few pages checks every hit without searching the page map each time.
        if self.l1_oracle_native {
            self.c.oracle_checked += 1;
            if !self.os.maps_recent(self.asid, vpn, &m) && !self.l1_range_refill_ok(vpn, &m) {
                let want = self.os.translate(self.asid, vpn);
                return Err(self.mismatch(vpn, Some(m), want, "L1 TLB entry"));
            }
        } else if self.cfg.sim.oracle {
            // Nested runs (virt/): L1 entries are combined translations.
            self.check(vpn, Some(m), "L1 TLB entry")?;
        }
        if kind == AccessKind::Store && !m.writable {
            return self.store_to_read_only(va, 0, 0);
        }
        self.data_access(kind, va, m.translate(va), 0, 0)
    }

    /// With a range TLB, a 4 KiB L1 DTLB entry may be a refill from a range (RMM), which does
    /// not know the OS page's size: such an entry is right when it gives `vpn` the frame and
    /// permission of the OS page holding it (the check of a range hit, `Os::maps_base`).
    #[cold]
    fn l1_range_refill_ok(&self, vpn: Vpn, m: &Mapping) -> bool {
        self.mmu.has_range_tlb()
            && m.size == PageSize::Size4K
            && self.os.maps_base(self.asid, vpn, m)
    }

    /// The second page of a reference whose bytes span two 4 KiB pages (its first page has been
    /// handled by [`Sim::access`]). Hardware translates both pages, so an unmapped or protected
    /// second page faults; the engine does the same: when the second page lies in another
    /// mapping than the first, it is translated (TLBs, walk, fault, oracle) and its first line
    /// accessed like a reference, though not counted as one (`refs` counts trace references;
    /// `page_crossing_refs` counts these). Inside one huge page the single translation covers
    /// both pages and nothing more happens.
    #[cold]
    #[inline(never)]
    fn second_page(
        &mut self,
        kind: AccessKind,
        first: Vaddr,
        second: Vaddr,
    ) -> Result<(), SimError> {
        self.c.page_crossing_refs += 1;
        let second_vpn = second.vpn().0;
        let covered = self
            .os
            .translate(self.asid, first.vpn())
            .is_some_and(|m| second_vpn - m.vpn.0 < m.size.bytes() >> BASE_PAGE_SHIFT);
        if covered {
            return Ok(());
        }
        // Part of the same instruction: no instructions of its own for the out-of-order core,
        // and issued with the first page (no dependence of its own).
        self.cur_instrs = 0;
        self.cur_dep = 0;
        self.reference(kind, second)
    }

    /// A reference that is not an L1 DTLB hit (an instruction fetch, an L1 miss, or any
    /// reference under `perfect_tlb`). Its L1 probe (if any) has been made and missed.
    #[inline(never)]
    fn access_general(&mut self, kind: AccessKind, va: Vaddr) -> Result<(), SimError> {
        self.prefetch_ahead();
        let vpn = va.vpn();
        let ifetch = kind == AccessKind::IFetch;
        let mut walk_cycles = 0;
        let (m, xlat_cycles) = if D::PERFECT_TLB {
            let (m, _) = self.walk(va, kind, false)?;
            (m, 0)
        } else {
            let outcome = if ifetch {
                self.mmu.lookup_ifetch(self.asid, vpn)
            } else {
                self.mmu.lookup_data_after_l1_miss(self.asid, vpn)
            };
            match outcome {
                TlbOutcome::L1Hit(m) => {
                    self.check(vpn, Some(m), "L1 TLB entry")?;
                    (m, 0)
                }
                TlbOutcome::L2Hit(m) => {
                    self.check(vpn, Some(m), "L2 TLB entry")?;
                    (m, self.mmu.l2_latency_cycles as u64)
                }
                TlbOutcome::RangeHit(m) => {
                    self.check_base(vpn, m, "range TLB entry")?;
                    (m, self.mmu.l2_latency_cycles as u64)
                }
                TlbOutcome::Miss => {
                    let (m, w) = self.walk(va, kind, false)?;
                    walk_cycles = w;
                    if ifetch {
                        self.os
                            .check_fetch(self.asid, va)
                            .map_err(|e| self.os_err(e))?;
                    }
                    if self.mem.nested.is_some() && self.mmu.coalescing().is_some() {
                        // The design's own span would hold guest frames: combine instead.
                        if ifetch {
                            self.mmu.fill(self.asid, m, true);
                        } else {
                            self.fill_nested_span(vpn, m);
                        }
                    } else {
                        self.mmu
                            .fill_walked(&self.design, self.asid, vpn, m, ifetch);
                    }
                    (m, self.mmu.l2_latency_cycles as u64 + w)
                }
            }
        };
        if kind == AccessKind::Store && !m.writable {
            return self.store_to_read_only(va, xlat_cycles, walk_cycles);
        }
        self.timing.mmu_overhead_cycles += xlat_cycles;
        self.data_access(kind, va, m.translate(va), xlat_cycles, walk_cycles)
    }

    /// The OS work counted so far, taken before a fault (`os.fault_latency`).
    #[inline]
    fn fault_mark(&self) -> u64 {
        // A hashed design's table allocations are in both physical memory's work and its own
        // OS cycles: counted once.
        self.os.fault_cost_mark() + self.design.os_cycles() - self.design.phys_work_cycles()
    }

    /// Record the latency of the fault that began at `mark` ([`Sim::fault_mark`]): the fixed
    /// `timing.page_fault_cycles` plus the OS work done since (see `os::fault_latency`).
    fn record_fault_latency(&mut self, mark: u64) {
        let work = self.fault_mark().saturating_sub(mark);
        self.os
            .record_fault_latency(self.cfg.timing.page_fault_cycles + work);
    }

    /// A store to a read-only translation (found after `xlat_cycles` of translation): the
    /// OS decides (an error for a protection violation); a changed mapping is walked again.
    #[cold]
    #[inline(never)]
    fn store_to_read_only(
        &mut self,
        va: Vaddr,
        mut xlat_cycles: u64,
        mut walk_cycles: u64,
    ) -> Result<(), SimError> {
        let kind = AccessKind::Store;
        self.timing.page_faults += 1;
        let fault_mark = self.fault_mark();
        let nm = self.os_fault(va, kind)?;
        self.record_fault_latency(fault_mark);
        let m = if !D::PERFECT_TLB {
            let (wm, wc) = self.walk(va, kind, true)?;
            if self.mem.nested.is_some() && self.mmu.coalescing().is_some() {
                self.fill_nested_span(va.vpn(), wm);
            } else {
                self.mmu
                    .fill_walked(&self.design, self.asid, va.vpn(), wm, false);
            }
            xlat_cycles += wc;
            walk_cycles += wc;
            wm
        } else {
            nm
        };
        self.timing.mmu_overhead_cycles += xlat_cycles;
        self.data_access(kind, va, m.translate(va), xlat_cycles, walk_cycles)
    }

    /// The data side of a reference to `va` (physical address `pa`), translated in
    /// `xlat_cycles` of which `walk_cycles` walking; then the out-of-order core, if any.
    #[inline(always)]
    fn data_access(
        &mut self,
        kind: AccessKind,
        va: Vaddr,
        pa: crate::addr::Paddr,
        xlat_cycles: u64,
        walk_cycles: u64,
    ) -> Result<(), SimError> {
        let a = self.mem.data_access(pa, kind == AccessKind::Store);
        self.timing.data_stall_cycles +=
            a.latency_cycles
                .saturating_sub(self.cfg.mem.l1d.latency_cycles) as u64;
        if let Some(core) = self.core.as_mut() {
            let r = CoreRef {
                kind,
                vpn: va.vpn().0,
                line: pa.line(),
                instrs: self.cur_instrs,
                dep: self.cur_dep,
                xlat_cycles,
                walk_cycles,
                data_cycles: a.latency_cycles,
                data_level: a.served_by,
            };
            if let Err(problem) = core.reference(&r) {
                return Err(self.dependence_error(problem));
            }
        }
        Ok(())
    }

    /// A dependence the trace cannot satisfy, as a trace error.
    #[cold]
    #[inline(never)]
    fn dependence_error(&self, problem: String) -> SimError {
        SimError::Source(crate::trace::SourceError {
            source: self.source.name(),
            offset: None,
            problem,
        })
    }
}

impl<D: Design> Sim<D> {
    /// Prefetch for the events ahead, once per recently seen page: loops over a few arrays
    /// (streams) find everything cached already, and the hint would only cost them time.
    #[inline]
    fn prefetch_ahead(&mut self) {
        if let Some(Event::Access { va, .. }) = self.buf.get(self.pos + PREFETCH_DISTANCE) {
            let vpn = va.vpn();
            if self.prefetched.admit(vpn) {
                self.os.prefetch(self.asid, vpn);
                self.design.prefetch(self.asid, vpn, &self.mem);
            }
        }
    }
}

impl<D: Design> Sim<D> {
    /// Simulate the installed process on the installed core until the core has simulated
    /// `target` references in all, or the process's events end (`finished`).
    fn run_until(&mut self, mut target: u64) -> Result<(), SimError> {
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
                let n = self
                    .source
                    .fill(&mut self.buf, CHUNK)
                    .map_err(SimError::Source)?;
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
                        self.cur_dep = dep;
                        self.access(kind, va, instrs)?;
                        let last = Vaddr(va.0.saturating_add(size.max(1) as u64 - 1));
                        if last.vpn() != va.vpn() {
                            self.second_page(kind, va, Vaddr(last.0 & !(BASE_PAGE_BYTES - 1)))?;
                        }
                    }
                    Event::Thread { tid } => {
                        if self.machine.is_some() {
                            target = self.thread_switch(tid, target);
                        }
                    }
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
            if m.threaded {
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
        let c = &self.c;
        let mut r = Stats::new();
        r.put_str("design", &self.cfg.sim.design);
        r.put_str("workload", &self.source.name());
        if let Some(t) = self.source.describe() {
            r.insert("trace".into(), t);
        }
        r.put_u64("seed", self.cfg.sim.seed);
        r.put_str("version", crate::VERSION);
        count_keys(&mut r, c);
        r.insert(
            "ended_by".into(),
            Value::from(if self.truncated_by_refs {
                "refs_limit"
            } else {
                "end_of_trace"
            }),
        );
        tlb_and_walk_sections(&mut r, c, &self.mmu, D::PERFECT_TLB);
        self.timing.stats(
            &self.cfg.timing,
            c.instructions,
            self.design.os_cycles()
                + self.os.extra_os_cycles()
                // Nested runs: the host's OS time (virt/).
                + self.mem.nested.as_ref().map_or(0, |h| {
                    h.os_cycles(self.cfg.timing.page_fault_cycles)
                }),
            self.core.as_ref().map(CoreModel::snapshot).as_deref(),
            &mut r,
        );
        {
            let fp = self.design.footprint();
            let p = r.section("page_table");
            p.put_u64("bytes", fp.bytes);
            p.put_u64("peak_bytes", fp.peak_bytes);
            p.put_u64("max_contiguous_bytes", fp.max_contiguous_bytes);
        }
        {
            let o = r.section("oracle");
            o.put_u64("checked", c.oracle_checked);
            // A mismatch aborts the run, so a finished record always carries 0.
            o.put_u64("mismatches", 0);
            o.insert("enabled".into(), Value::from(self.cfg.sim.oracle));
        }
        self.mem.stats(&mut r);
        self.os.stats(&mut r);
        self.design.stats(&mut r);
        // Nested runs only: the `virt` section (virt/).
        if let Some(host) = self.mem.nested.as_ref() {
            host.stats(&mut r);
        }
        {
            let s = r.section("sim");
            s.put_f64("wall_seconds", wall_seconds);
            s.put_str("simd", crate::simd::PATH);
            s.put_f64(
                "refs_per_sec",
                if wall_seconds > 0.0 {
                    c.refs as f64 / wall_seconds
                } else {
                    0.0
                },
            );
            s.insert(
                "timing_thread".into(),
                Value::from(self.core.as_ref().is_some_and(CoreModel::threaded)),
            );
        }
        r.insert("config".into(), self.cfg.to_json());
        Value::Object(r)
    }
}

impl<D: Design> Sim<D> {
    /// The OS pid of the pid `pid` that the installed process's events name.
    fn os_pid(&self, pid: u32) -> u32 {
        match self.machine.as_deref() {
            Some(m) => {
                ((m.current_proc(m.running) as u32) << PID_SHIFT) | (pid & ((1 << PID_SHIFT) - 1))
            }
            None => pid,
        }
    }

    /// Simulated cycles of the installed core so far (OS time excluded).
    fn core_cycles_now(&mut self) -> f64 {
        match self.core.as_mut() {
            Some(core) => core.clock(),
            None => self
                .timing
                .core_cycles(&self.cfg.timing, self.c.instructions),
        }
    }

    fn swap_core(&mut self, st: &mut CoreState) {
        std::mem::swap(&mut self.mmu, &mut st.mmu);
        self.mem.swap_private(&mut st.mem);
        std::mem::swap(&mut self.timing, &mut st.timing);
        std::mem::swap(&mut self.core, &mut st.core);
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

    /// A thread switch in a multi-threaded trace: the events from here run on the thread's
    /// core (the process, its stream and its ASID stay installed). Returns `target` (a
    /// reference count of the installed core, see `run_until`) rebased on the new core.
    #[cold]
    #[inline(never)]
    fn thread_switch(&mut self, tid: u32, target: u64) -> u64 {
        let mut m = self.machine.take().expect("a machine");
        if !m.threaded {
            self.machine = Some(m);
            return target;
        }
        let index = match m.threads.iter().position(|t| *t == tid) {
            Some(i) => i,
            None => {
                m.threads.push(tid);
                m.threads.len() - 1
            }
        };
        let k = index % m.sched.len();
        let r = m.running;
        let left = target - self.c.refs;
        if k != r {
            self.swap_core(&mut m.cores[r]);
            self.swap_core(&mut m.cores[k]);
            self.design.select_core(k);
            m.running = k;
            let asid = self.asid;
            if !m.sched[k].asids.contains(&asid) {
                m.sched[k].asids.push(asid);
            }
        }
        self.machine = Some(m);
        self.c.refs + left
    }

    /// [`Runner::step`] of a multi-threaded trace on several cores: the trace's events in its
    /// order, each on its thread's core; `sim.refs` bounds the references of all threads.
    fn step_threaded(&mut self, max_refs: u64) -> Result<bool, SimError> {
        let done = self.refs();
        let left = max_refs.min(self.cfg.sim.refs - done.min(self.cfg.sim.refs));
        self.run_until(self.c.refs + left)?;
        if self.refs() >= self.cfg.sim.refs && !self.finished {
            self.finished = true;
            self.truncated_by_refs = true;
        }
        Ok(self.finished)
    }

    /// [`Runner::step`] of a multi-core or multi-process run: cores take turns of
    /// [`INTERLEAVE_REFS`] references, each process runs until `sim.refs` references or its
    /// stream's end, and an ended core idles.
    fn step_machine(&mut self, max_refs: u64) -> Result<bool, SimError> {
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

impl<D: Design> Sim<D> {
    /// The record of a multi-core or multi-process run (see `docs/results.md`): the one-core
    /// keys hold totals, `cores` each core's figures, `processes` each process's.
    fn record_machine(&self, wall_seconds: f64) -> Value {
        let m = self.machine.as_deref().expect("a machine");
        let cfg = &self.cfg;
        let n = m.sched.len();
        let mut per_core: Vec<Stats> = Vec::with_capacity(n);
        let mut cycles = Vec::with_capacity(n);
        for k in 0..n {
            let s = &m.sched[k];
            let mut rec = if k == m.running {
                core_record(
                    cfg,
                    D::PERFECT_TLB,
                    &self.c,
                    &self.mmu,
                    &self.timing,
                    self.core.as_ref().map(CoreModel::snapshot).as_deref(),
                    self.mem.private(),
                    s.ipi_cycles,
                )
            } else {
                let st = &m.cores[k];
                core_record(
                    cfg,
                    D::PERFECT_TLB,
                    &st.c,
                    &st.mmu,
                    &st.timing,
                    st.core.as_ref().map(CoreModel::snapshot).as_deref(),
                    &st.mem,
                    s.ipi_cycles,
                )
            };
            cycles.push(rec["timing"]["cycles"].as_f64().unwrap_or(0.0));
            {
                let w = rec.section("switch");
                w.put_u64("count", s.switches);
                w.put_u64("windows", s.windows);
                w.put_u64("window_refs", s.window.refs);
                w.put_u64("tlb_misses_in_window", s.window.tlb_l1_misses);
                w.put_u64("walks_in_window", s.window.walks);
                w.put_u64("walk_mem_accesses_in_window", s.window.walk_mem_accesses);
                w.put_u64("mmu_cache_misses_in_window", s.window.mmu_cache_misses);
            }
            {
                let sd = rec.section("shootdown");
                sd.put_u64("ipis_sent", s.ipis_sent);
                sd.put_u64("ipis_received", s.ipis_received);
                sd.put_u64("ipi_cycles", s.ipi_cycles);
            }
            per_core.push(rec);
        }
        // Totals: sums over cores, fractions recomputed (see `fix_fractions`).
        let mut total = Value::Object(Stats::new());
        for rec in &per_core {
            sum_into(&mut total, &Value::Object(rec.clone()));
        }
        let Value::Object(mut total) = total else {
            unreachable!("an object")
        };
        let instructions = total["instructions"].as_u64().unwrap_or(0);
        fix_fractions(&mut total, instructions, n);
        {
            // The machine's time is its slowest core's; IPC is the machine's throughput.
            let max_cycles = cycles.iter().cloned().fold(0.0, f64::max);
            let sum_cycles: f64 = cycles.iter().sum();
            let exposed: f64 = per_core
                .iter()
                .zip(&cycles)
                .map(|(r, c)| r["timing"]["mmu_overhead_share"].as_f64().unwrap_or(0.0) * c)
                .sum();
            let os_cycles = total["timing"]["os_cycles"].as_f64().unwrap_or(0.0)
                + (self.design.os_cycles() + self.os.extra_os_cycles()) as f64;
            let t = total.section("timing");
            t.put_f64("cycles", max_cycles);
            t.put_f64("os_cycles", os_cycles);
            t.put_f64(
                "ipc",
                if max_cycles > 0.0 {
                    instructions as f64 / max_cycles
                } else {
                    0.0
                },
            );
            t.put_f64(
                "mmu_overhead_share",
                if sum_cycles > 0.0 {
                    exposed / sum_cycles
                } else {
                    0.0
                },
            );
        }
        let installed = m.current_proc(m.running);
        let mut procs = Vec::with_capacity(m.procs.len());
        let mut names = Vec::with_capacity(m.procs.len());
        let mut all_by_refs = true;
        for (j, p) in m.procs.iter().enumerate() {
            let (name, trace, asid, refs, truncated) = if j == installed {
                (
                    self.source.name(),
                    self.source.describe(),
                    self.asid,
                    if m.threaded {
                        self.refs()
                    } else {
                        self.c.refs - self.proc_base
                    },
                    self.truncated_by_refs,
                )
            } else {
                (
                    p.source.name(),
                    p.source.describe(),
                    p.asid,
                    p.refs,
                    p.truncated_by_refs,
                )
            };
            all_by_refs &= truncated;
            let mut e = Stats::new();
            e.put_u64("process", j as u64);
            e.put_str("workload", &name);
            e.put_u64("core", p.core as u64);
            e.put_u64("asid", asid as u64);
            e.put_u64("refs", refs);
            if let Some(t) = trace {
                e.insert("trace".into(), t);
            }
            e.put_str(
                "ended_by",
                if truncated {
                    "refs_limit"
                } else if m.proc_done[j] || (j == installed && self.finished) {
                    "end_of_trace"
                } else {
                    "running"
                },
            );
            names.push(name);
            procs.push(Value::Object(e));
        }
        let mut r = Stats::new();
        r.put_str("design", &cfg.sim.design);
        r.put_str("workload", &names.join(","));
        r.put_u64("seed", cfg.sim.seed);
        r.put_str("version", crate::VERSION);
        for (k, v) in total {
            r.insert(k, v);
        }
        r.insert(
            "ended_by".into(),
            Value::from(if all_by_refs {
                "refs_limit"
            } else {
                "end_of_trace"
            }),
        );
        {
            let fp = self.design.footprint();
            let p = r.section("page_table");
            p.put_u64("bytes", fp.bytes);
            p.put_u64("peak_bytes", fp.peak_bytes);
            p.put_u64("max_contiguous_bytes", fp.max_contiguous_bytes);
        }
        {
            let o = r.section("oracle");
            o.put_u64("mismatches", 0);
            o.insert("enabled".into(), Value::from(cfg.sim.oracle));
        }
        {
            // The LLC's page-table share averaged over every core's samples.
            let others: Vec<&PrivateCaches> = m
                .cores
                .iter()
                .enumerate()
                .filter(|(k, _)| *k != m.running)
                .map(|(_, st)| &st.mem)
                .collect();
            self.mem.shared_stats(&mut r, &others);
        }
        self.os.stats(&mut r);
        self.design.stats(&mut r);
        {
            let s = r.section("machine");
            s.put_u64("cores", n as u64);
            s.put_u64("processes", m.procs.len() as u64);
            s.put_u64("interleave_refs", INTERLEAVE_REFS);
            s.put_u64("quantum_cycles", m.quantum_cycles);
        }
        {
            let w = r.section("switch");
            w.put_u64("window_refs_configured", cfg.sim.switch_window_refs);
            w.insert(
                "flush_tlb_on_switch".into(),
                Value::from(cfg.sim.flush_tlb_on_switch),
            );
        }
        r.section("shootdown").put_u64("rounds", m.shootdown_rounds);
        r.insert(
            "cores".into(),
            Value::Array(per_core.into_iter().map(Value::Object).collect()),
        );
        r.insert("processes".into(), Value::Array(procs));
        {
            let refs = r["refs"].as_u64().unwrap_or(0);
            let s = r.section("sim");
            s.put_f64("wall_seconds", wall_seconds);
            s.put_str("simd", crate::simd::PATH);
            s.put_f64(
                "refs_per_sec",
                if wall_seconds > 0.0 {
                    refs as f64 / wall_seconds
                } else {
                    0.0
                },
            );
            // A machine's cores stay on the engine's thread (see `CoreModel`).
            s.insert("timing_thread".into(), Value::from(false));
        }
        r.insert("config".into(), cfg.to_json());
        Value::Object(r)
    }
}

#[cfg(test)]
mod tests {
    use super::counters::WALK_HIST_BUCKETS;
    use super::*;
    use crate::designs::radix::{Radix, RadixConfig};
    use crate::designs::{PtFootprint, WalkResult};
    use crate::os::{PhysMem, ThpPolicy};
    use crate::stats::ratio;
    use crate::trace::SourceError;

    fn small(design: &str) -> Config {
        let o = |k: &str, v: &str| (k.to_string(), v.to_string());
        Config::resolve(
            None,
            &[
                o("sim.design", design),
                o("sim.refs", "20000"),
                o("workload.footprint", "16MiB"),
                o("os.phys_mem_bytes", "1GiB"),
            ],
        )
        .unwrap()
    }

    fn without_wall_clock(mut v: Value) -> Value {
        v.as_object_mut().unwrap().remove("sim");
        v
    }

    #[test]
    fn the_same_seed_gives_identical_records_however_the_run_is_chunked() {
        for design in ["radix", "ideal", "perfect_tlb", "ecpt", "mehpt"] {
            let cfg = small(design);
            let whole = run_workload(&cfg).unwrap();
            let source =
                crate::workloads::create(&cfg.workload, cfg.sim.refs, cfg.sim.seed).unwrap();
            let mut sim = Simulation::new(&cfg, source).unwrap();
            while !sim.step(777).unwrap() {}
            assert_eq!(
                without_wall_clock(whole),
                without_wall_clock(sim.record()),
                "{design}"
            );
        }
    }

    #[test]
    fn every_design_passes_the_oracle_under_every_policy_with_khugepaged() {
        let o = |k: &str, v: &str| (k.to_string(), v.to_string());
        for info in crate::designs::REGISTRY {
            if info.name == "restrictive_only" {
                // 4 KiB pages only: khugepaged is refused up front with a clear error.
                continue;
            }
            for policy in ["thp", "mthp", "reservation", "eager"] {
                for workload in ["gups", "kv", "bfs"] {
                    let cfg = Config::resolve(
                        None,
                        &[
                            o("sim.design", info.name),
                            o("sim.refs", "30000"),
                            o("workload.name", workload),
                            o("workload.footprint", "24MiB"),
                            o("os.phys_mem_bytes", "1GiB"),
                            o("os.thp", "always"),
                            o("os.policy", policy),
                            o("os.reservation.promotion_threshold", "0.5"),
                            o("os.khugepaged.enabled", "true"),
                            o("os.khugepaged.interval_cycles", "20000"),
                            o("os.khugepaged.max_ptes_none", "256"),
                            o(
                                "tlb.l1_organization",
                                if workload == "kv" {
                                    "any_size"
                                } else {
                                    "split"
                                },
                            ),
                        ],
                    )
                    .unwrap();
                    let r = run_workload(&cfg)
                        .unwrap_or_else(|e| panic!("{} {policy} {workload}: {e}", info.name));
                    assert_eq!(r["oracle"]["mismatches"], 0);
                    assert_eq!(r["os"]["policy"], policy);
                    assert!(r["os"]["khugepaged"]["wakeups"].as_u64().unwrap() > 0);
                }
            }
        }
    }

    #[test]
    fn every_design_passes_the_oracle_when_memory_is_overcommitted_to_swap() {
        let o = |k: &str, v: &str| (k.to_string(), v.to_string());
        for info in crate::designs::REGISTRY {
            for thp in ["never", "always"] {
                let cfg = Config::resolve(
                    None,
                    &[
                        o("sim.design", info.name),
                        o("sim.refs", "60000"),
                        o("workload.name", "gups"),
                        o("workload.footprint", "96MiB"),
                        o("os.phys_mem_bytes", "64MiB"),
                        o("os.thp", thp),
                        o("os.swap.bytes", "256MiB"),
                    ],
                )
                .unwrap();
                let r =
                    run_workload(&cfg).unwrap_or_else(|e| panic!("{} thp {thp}: {e}", info.name));
                let swap = &r["os"]["swap"];
                assert!(swap["swap_outs"].as_u64().unwrap() > 0, "{}", info.name);
                if info.name != "perfect_tlb" {
                    assert!(swap["major_faults"].as_u64().unwrap() > 0, "{}", info.name);
                }
            }
        }
    }

    #[test]
    fn fill_fragmented_memory_with_kcompactd_keeps_the_oracle() {
        let o = |k: &str, v: &str| (k.to_string(), v.to_string());
        for design in ["ecpt", "mehpt", "radix"] {
            let cfg = Config::resolve(
                None,
                &[
                    o("sim.design", design),
                    o("sim.refs", "200000"),
                    o("workload.name", "gups"),
                    o("workload.footprint", "1GiB"),
                    o("os.phys_mem_bytes", "8GiB"),
                    o("os.fmfi_target", "0.7"),
                    o("os.fragmenter.mode", "fill"),
                    o("os.kcompactd.enabled", "true"),
                    o("os.kcompactd.interval_cycles", "100000"),
                ],
            )
            .unwrap();
            let r = run_workload(&cfg).unwrap_or_else(|e| panic!("{design}: {e}"));
            assert_eq!(r["oracle"]["mismatches"], 0);
            assert!(r["os"]["kcompactd_wakeups"].as_u64().unwrap() > 0);
        }
    }

    #[test]
    fn a_run_stops_after_exactly_the_configured_references() {
        let r = run_workload(&small("radix")).unwrap();
        assert_eq!(r["refs"], 20000);
        assert_eq!(r["ended_by"], "refs_limit");
        assert!(r["oracle"]["checked"].as_u64().unwrap() >= 20000);
    }

    /// A design that returns the right page but the wrong frame for VPNs with bit 3 set.
    struct Broken(Radix);

    impl Design for Broken {
        type Config = RadixConfig;
        fn new(cfg: &RadixConfig, phys: &mut PhysMem) -> Result<Self, OsError> {
            Ok(Broken(Radix::new(cfg, phys)?))
        }
        fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
            self.0.map(phys, asid, m)
        }
        fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
            self.0.unmap(phys, asid, m)
        }
        fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
            let mut w = self.0.walk(asid, vpn, mem);
            if let Some(m) = w.mapping.as_mut() {
                if vpn.0 & 8 != 0 {
                    m.pfn.0 += 1;
                }
            }
            w
        }
        fn footprint(&self) -> PtFootprint {
            self.0.footprint()
        }
        fn stats(&self, _out: &mut Stats) {}
    }

    #[test]
    fn the_oracle_aborts_a_run_whose_design_returns_a_wrong_frame() {
        let cfg = small("radix");
        let mut os = Os::new(&cfg.os, 1).unwrap();
        let design = Broken::new(&cfg.designs.radix, &mut os.phys).unwrap();
        let source = crate::workloads::create(&cfg.workload, cfg.sim.refs, cfg.sim.seed).unwrap();
        let mut runner = MakeSim {
            cfg,
            source,
            more: Vec::new(),
            nested: None,
            timing_thread: false,
        }
        .visit(design)(os)
        .unwrap();
        let err = runner.step(u64::MAX).unwrap_err();
        match err {
            SimError::Oracle(msg) => assert!(msg.contains("the OS model maps"), "{msg}"),
            other => panic!("expected an oracle error, got {other}"),
        }
    }

    /// Radix plus one range translation per page it maps (as RMM's range table would give),
    /// optionally off by one frame (a broken design the oracle must catch).
    struct RangedRadix {
        radix: Radix,
        pages: std::collections::BTreeMap<u64, Mapping>,
        frame_error: u64,
    }

    impl Design for RangedRadix {
        type Config = RadixConfig;
        fn new(cfg: &RadixConfig, phys: &mut PhysMem) -> Result<Self, OsError> {
            Ok(RangedRadix {
                radix: Radix::new(cfg, phys)?,
                pages: Default::default(),
                frame_error: 0,
            })
        }
        fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
            self.pages.insert(m.vpn.0, m);
            self.radix.map(phys, asid, m)
        }
        fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
            self.pages.remove(&m.vpn.0);
            self.radix.unmap(phys, asid, m)
        }
        fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
            self.radix.walk(asid, vpn, mem)
        }
        fn range(&self, _asid: Asid, vpn: Vpn) -> Option<crate::mmu::VaRange> {
            let (_, m) = self.pages.range(..=vpn.0).next_back()?;
            m.contains(vpn).then(|| crate::mmu::VaRange {
                vpn_start: m.vpn,
                vpn_end: Vpn(m.vpn.0 + m.size.base_pages()),
                pfn_start: crate::addr::Pfn(m.pfn.0 + self.frame_error),
                writable: m.writable,
            })
        }
        fn footprint(&self) -> PtFootprint {
            self.radix.footprint()
        }
        fn stats(&self, _out: &mut Stats) {}
    }

    #[test]
    fn range_tlb_hits_are_checked_by_the_oracle_frame_by_frame() {
        let o = |k: &str, v: &str| (k.to_string(), v.to_string());
        // 2 MiB pages, no L2 and no 2 MiB L1: every L1 miss is served by the range TLB, with
        // 4 KiB translations inside 2 MiB OS pages.
        let cfg = Config::resolve(
            None,
            &[
                o("sim.refs", "20000"),
                o("workload.footprint", "16MiB"),
                o("os.phys_mem_bytes", "1GiB"),
                o("os.thp", "always"),
                o("tlb.l2.entries", "0"),
                o("tlb.l1_2m.entries", "0"),
                o("tlb.range.entries", "16"),
            ],
        )
        .unwrap();
        for frame_error in [0, 1] {
            let mut os = Os::new(&cfg.os, 1).unwrap();
            let mut design = RangedRadix::new(&cfg.designs.radix, &mut os.phys).unwrap();
            design.frame_error = frame_error;
            let source =
                crate::workloads::create(&cfg.workload, cfg.sim.refs, cfg.sim.seed).unwrap();
            let mut runner = MakeSim {
                cfg: cfg.clone(),
                source,
                more: Vec::new(),
                nested: None,
                timing_thread: false,
            }
            .visit(design)(os)
            .unwrap();
            let r = runner.step(u64::MAX);
            if frame_error == 0 {
                r.unwrap();
                let rec = runner.record(0.0);
                let hits = rec["tlb"]["range_hits"].as_u64().unwrap();
                assert!(hits > 1000, "{hits}");
                assert!(rec["walk"]["count"].as_u64().unwrap() < 100);
            } else {
                match r.unwrap_err() {
                    SimError::Oracle(msg) => assert!(msg.contains("range TLB entry"), "{msg}"),
                    other => panic!("expected an oracle error, got {other}"),
                }
            }
        }
    }

    /// Events from a list (the engine's input without a trace file).
    struct Events(std::vec::IntoIter<Event>);

    impl EventSource for Events {
        fn fill(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, SourceError> {
            let before = out.len();
            out.extend(self.0.by_ref().take(max));
            Ok(out.len() - before)
        }
        fn name(&self) -> String {
            "events".into()
        }
    }

    fn run_events(design: &str, events: Vec<Event>) -> Result<Value, SimError> {
        run(&small(design), Box::new(Events(events.into_iter())))
    }

    fn load(va: u64, size: u8) -> Event {
        Event::Access {
            kind: AccessKind::Load,
            va: Vaddr(va),
            size,
            instrs: 1,
            dep: 0,
        }
    }

    const RW: u32 = crate::trace::prot::READ | crate::trace::prot::WRITE;

    #[test]
    fn an_instruction_fetch_after_execute_permission_is_removed_is_a_protection_violation() {
        use crate::trace::prot;
        let base = 0x40_0000u64;
        let fetch = Event::Access {
            kind: AccessKind::IFetch,
            va: Vaddr(base + 64),
            size: 4,
            instrs: 1,
            dep: 0,
        };
        let events = vec![
            Event::Mmap {
                addr: Vaddr(base),
                len: 4096,
                prot: prot::READ | prot::EXEC,
                flags: 0,
            },
            fetch,
            fetch,
            Event::Mprotect {
                addr: Vaddr(base),
                len: 4096,
                prot: prot::READ,
            },
            fetch,
        ];
        for design in ["radix", "ecpt"] {
            match run_events(design, events.clone()) {
                Err(SimError::Os { event: 4, error }) => {
                    assert!(
                        error.0.contains("protection violation"),
                        "{design}: {error}"
                    )
                }
                other => {
                    panic!("{design}: expected a protection violation at event 4, got {other:?}")
                }
            }
        }
        // Without the downgrade the same fetches run, from the ITLB.
        let r = run_events("radix", events[..3].to_vec()).unwrap();
        assert_eq!(r["tlb"]["itlb_misses"], 1);
    }

    #[test]
    fn an_access_crossing_into_an_unmapped_page_faults_like_hardware() {
        // One mapped page, then a 64-byte load whose last 8 bytes lie in the next (unmapped)
        // page: hardware translates both pages and faults on the second.
        let base = 0x7000_0000_0000u64;
        let events = vec![
            Event::Mmap {
                addr: Vaddr(base),
                len: 4096,
                prot: RW,
                flags: 0,
            },
            load(base + 4096 - 56, 64),
        ];
        for design in ["radix", "perfect_tlb", "ecpt"] {
            match run_events(design, events.clone()) {
                Err(SimError::Os { event: 1, .. }) => {}
                other => panic!("{design}: expected an OS error at event 1, got {other:?}"),
            }
        }
    }

    #[test]
    fn the_walk_latency_histogram_counts_every_tlb_miss_walk_in_its_log2_bucket() {
        assert_eq!(
            [0, 1, 2, 3, 4, 7, 8, 100, 40_000, u32::MAX].map(walk_hist_bucket),
            [0, 0, 1, 1, 2, 2, 3, 6, 15, 15]
        );
        for design in ["radix", "ecpt"] {
            let r = run_workload(&small(design)).unwrap();
            let hist = r["walk"]["latency_hist"].as_object().unwrap();
            assert_eq!(hist.len(), WALK_HIST_BUCKETS);
            let total: u64 = hist.values().map(|v| v.as_u64().unwrap()).sum();
            assert_eq!(total, r["walk"]["count"].as_u64().unwrap(), "{design}");
            // The buckets' weighted lower bounds cannot exceed the walks' total cycles.
            let floor: u64 = hist
                .iter()
                .map(|(low, n)| low.parse::<u64>().unwrap() * n.as_u64().unwrap())
                .sum();
            assert!(floor <= r["walk"]["cycles"].as_u64().unwrap(), "{design}");
        }
    }

    #[test]
    fn the_setup_time_is_recorded_only_when_the_caller_measured_it() {
        let cfg = small("radix");
        let build = || {
            let source = crate::workloads::create(&cfg.workload, cfg.sim.refs, cfg.sim.seed);
            let mut sim = Simulation::new(&cfg, source.unwrap()).unwrap();
            while !sim.step(1 << 20).unwrap() {}
            sim
        };
        assert!(build().record()["sim"].get("setup_seconds").is_none());
        let mut sim = build();
        sim.set_setup_seconds(1.5);
        assert_eq!(sim.record()["sim"]["setup_seconds"], 1.5);
    }

    #[test]
    fn walks_by_page_size_and_faulting_walks_add_up_to_the_tlb_miss_walks() {
        for (design, thp) in [("radix", "never"), ("radix", "always"), ("ecpt", "always")] {
            let mut cfg = small(design);
            cfg.os.thp = if thp == "always" {
                ThpPolicy::Always
            } else {
                ThpPolicy::Never
            };
            // 64 MiB of 2 MiB pages overflow an 8-entry L2 TLB, so walks find 2 MiB pages.
            cfg.workload.footprint = 64 << 20;
            cfg.tlb.l1_2m.entries = 4;
            cfg.tlb.l1_2m.ways = 4;
            cfg.tlb.l2.entries = 8;
            cfg.tlb.l2.ways = 8;
            let r = run_workload(&cfg).unwrap();
            let by = r["walk"]["by_page_size"].as_object().unwrap();
            let found: u64 = by.values().map(|v| v.as_u64().unwrap()).sum();
            let walk = &r["walk"];
            assert_eq!(
                found + walk["fault_walks"].as_u64().unwrap(),
                walk["count"].as_u64().unwrap(),
                "{design} thp={thp}"
            );
            // Without THP every page is 4 KiB.
            let sizes: Vec<&str> = by.keys().map(String::as_str).collect();
            if thp == "never" {
                assert_eq!(sizes, ["4k"], "{design}");
            } else {
                assert!(sizes.contains(&"2m"), "{design}: {sizes:?}");
            }
        }
    }

    #[test]
    fn page_walk_reference_cycles_by_serving_level_are_at_least_that_levels_hit_latency() {
        let r = run_workload(&small("radix")).unwrap();
        let cache = &r["cache"];
        let cfg = small("radix");
        let floors = [
            ("l1", cfg.mem.l1d.latency_cycles),
            ("l2", cfg.mem.l2.latency_cycles),
            ("llc", cfg.mem.llc.latency_cycles),
        ];
        let mut total_refs = 0;
        for (level, latency) in floors {
            let n = cache[format!("pt_served_{level}")].as_u64().unwrap();
            let cycles = cache[format!("pt_served_cycles_{level}")].as_u64().unwrap();
            assert!(
                cycles >= n * latency as u64,
                "{level}: {cycles} cycles for {n} refs"
            );
            total_refs += n;
        }
        let dram = cache["pt_served_dram"].as_u64().unwrap();
        assert!(dram > 0 && total_refs > 0);
        // A DRAM-served reference costs more than any cache hit.
        assert!(
            cache["pt_served_cycles_dram"].as_u64().unwrap()
                > dram * cfg.mem.llc.latency_cycles as u64
        );
    }

    #[test]
    fn an_address_beyond_the_paging_modes_width_is_an_input_error_naming_the_event() {
        // X and X + 2^48 would alias in a 4-level table: the OS model must refuse the second
        // mapping (before, it was accepted and the run ended in an oracle mismatch).
        let x = 0x1000_0000u64;
        let map = |addr| Event::Mmap {
            addr: Vaddr(addr),
            len: 4096,
            prot: RW,
            flags: 0,
        };
        let events = vec![
            map(x),
            load(x, 8),
            map(x + (1 << 48)),
            load(x + (1 << 48), 8),
        ];
        for design in [
            "radix",
            "ideal",
            "perfect_tlb",
            "ecpt",
            "mehpt",
            "fpt",
            "lvm",
        ] {
            match run_events(design, events.clone()) {
                Err(SimError::Os { event: 2, error }) => {
                    assert!(error.0.contains("48-bit"), "{design}: {error}")
                }
                other => panic!("{design}: expected an OS error at event 2, got {other:?}"),
            }
        }
        // With 5-level paging the same trace runs (except on fpt, a 4-level design).
        let mut cfg = small("radix");
        cfg.designs.radix.levels = 5;
        cfg.designs.ideal.levels = 5;
        cfg.designs.perfect_tlb.levels = 5;
        for design in ["radix", "ideal", "perfect_tlb", "ecpt", "mehpt", "lvm"] {
            cfg.sim.design = design.into();
            let r = run(&cfg, Box::new(Events(events.clone().into_iter())))
                .unwrap_or_else(|e| panic!("{design}: {e}"));
            assert_eq!(r["refs"], 2, "{design}");
        }
        cfg.sim.design = "fpt".into();
        assert!(matches!(
            run(&cfg, Box::new(Events(events.into_iter()))),
            Err(SimError::Os { event: 2, .. })
        ));
    }

    #[test]
    fn every_fault_is_in_the_fault_latency_histogram_with_its_zeroing_cost() {
        let mut cfg = small("radix");
        cfg.os.thp = crate::os::ThpPolicy::Always;
        let r = run_workload(&cfg).unwrap();
        let f = &r["os"]["fault_latency"];
        let faults = r["os"]["page_faults"].as_u64().unwrap();
        assert!(faults > 0);
        assert_eq!(f["count"].as_u64().unwrap(), faults);
        let in_buckets: u64 = f["hist"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(in_buckets, faults);
        // A 2 MiB fault zeroes 2 MiB at 0.5 cycles per byte on top of the fixed fault cost.
        assert!(r["os"]["faults_2m"].as_u64().unwrap() > 0);
        let fixed = cfg.timing.page_fault_cycles;
        assert!(f["max_cycles"].as_u64().unwrap() >= fixed + (1 << 20));
        assert!(f["p50_cycles"].as_u64().unwrap() >= fixed);
        assert!(f["cycles"].as_u64().unwrap() >= faults * fixed);
    }

    #[test]
    fn a_hashed_designs_table_allocations_count_once_in_fault_latency() {
        // 4 KiB pages, no daemons: every OS cycle after the design's first tables is a fault's
        // (data-page zeroing and table growth), so the faults' work is physical memory's whole
        // work less the tables allocated before the first fault, and never more.
        for design in ["ecpt", "mehpt"] {
            let mut cfg = small(design);
            cfg.sim.refs = 60_000;
            let r = run_workload(&cfg).unwrap();
            let f = &r["os"]["fault_latency"];
            let faults = f["count"].as_u64().unwrap();
            let work = f["cycles"].as_u64().unwrap() - faults * cfg.timing.page_fault_cycles;
            let phys_work = r["os"]["compaction"]["alloc_work_cycles"].as_u64().unwrap();
            let tables = r[design]["alloc_cycles"].as_u64().unwrap();
            // The design's other OS cycles (ME-HPT's L2P updates on re-insertion).
            let os = r["timing"]["os_cycles"].as_f64().unwrap() as u64;
            let other = os - faults * cfg.timing.page_fault_cycles - tables;
            assert!(tables > 0, "{design}");
            assert!(
                work <= phys_work + other,
                "{design}: {work} > {phys_work} + {other}"
            );
            assert!(work + tables >= phys_work + other, "{design}");
        }
    }

    #[test]
    fn an_access_crossing_two_mapped_pages_translates_both() {
        let base = 0x7000_0000_0000u64;
        let events = vec![
            Event::Mmap {
                addr: Vaddr(base),
                len: 2 * 4096,
                prot: RW,
                flags: 0,
            },
            load(base + 4096 - 8, 16),
        ];
        let r = run_events("radix", events).unwrap();
        assert_eq!(r["refs"], 1);
        assert_eq!(r["page_crossing_refs"], 1);
        // Both pages were faulted in and walked after a TLB miss each.
        assert_eq!(r["os"]["page_faults"], 2);
        assert_eq!(r["walk"]["count"], 2);
    }

    #[test]
    fn hashed_designs_count_post_fault_walks_apart_from_their_per_walk_figures() {
        for design in ["ecpt", "mehpt"] {
            let r = run_workload(&small(design)).unwrap();
            let (walk, own) = (&r["walk"], &r[design]);
            assert_eq!(own["walks"], walk["count"], "{design}");
            assert_eq!(
                own["post_fault_walks"], walk["post_fault_count"],
                "{design}"
            );
            assert!(walk["post_fault_count"].as_u64().unwrap() > 0, "{design}");
        }
    }

    #[test]
    fn walk_counts_and_averages_cover_tlb_miss_walks_and_post_fault_walks_are_apart() {
        let r = run_workload(&small("radix")).unwrap();
        let walk = &r["walk"];
        let tlb = &r["tlb"];
        let misses = tlb["l2_misses"].as_u64().unwrap() + tlb["itlb_l2_misses"].as_u64().unwrap();
        assert_eq!(walk["count"].as_u64().unwrap(), misses);
        assert!(walk["fault_walks"].as_u64().unwrap() > 0);
        // Every demand fault is followed by one repeated walk.
        assert_eq!(walk["post_fault_count"], walk["fault_walks"]);
        let avg = walk["avg_mem_accesses"].as_f64().unwrap();
        let want = walk["mem_accesses"].as_f64().unwrap() / misses as f64;
        assert_eq!(avg, want);
        // Every TLB-miss walk probes the PWCs except the very first, made before the process
        // has a page table.
        assert_eq!(r["radix"]["pwc_lookups"].as_u64().unwrap(), misses - 1);
        assert_eq!(
            r["radix"]["pwc_post_fault_lookups"],
            walk["post_fault_count"]
        );
    }
    fn multi(design: &str, workloads: &str, extra: &[(&str, &str)]) -> Config {
        let o = |k: &str, v: &str| (k.to_string(), v.to_string());
        let mut set = vec![
            o("sim.design", design),
            o("sim.refs", "6000"),
            o("workload.name", workloads),
            o("workload.footprint", "4MiB"),
            o("os.phys_mem_bytes", "1GiB"),
        ];
        set.extend(extra.iter().map(|(k, v)| o(k, v)));
        Config::resolve(None, &set).unwrap()
    }

    fn sources(cfg: &Config) -> Vec<Box<dyn EventSource>> {
        crate::workloads::create_all(&cfg.workload, cfg.sim.simulated_refs(), cfg.sim.seed).unwrap()
    }

    #[test]
    fn every_design_passes_the_oracle_on_four_cores_running_four_workloads() {
        for info in crate::designs::REGISTRY {
            let cfg = multi(info.name, "gups,kv,bfs,xsbench", &[("sim.cores", "4")]);
            let r = run_workload(&cfg).unwrap_or_else(|e| panic!("{}: {e}", info.name));
            assert_eq!(r["oracle"]["mismatches"], 0);
            assert_eq!(r["refs"], 4 * 6000, "{}", info.name);
            assert_eq!(r["ended_by"], "refs_limit");
            assert_eq!(r["workload"], "gups,kv,bfs,xsbench");
            let cores = r["cores"].as_array().unwrap();
            assert_eq!(cores.len(), 4);
            for (k, core) in cores.iter().enumerate() {
                assert_eq!(core["refs"], 6000, "{} core {k}", info.name);
                assert!(core["oracle"]["checked"].as_u64().unwrap() >= 6000);
            }
            let procs = r["processes"].as_array().unwrap();
            for (j, p) in procs.iter().enumerate() {
                assert_eq!(p["core"], j as u64);
                assert_eq!(p["refs"], 6000);
            }
            // Totals are sums; the machine's cycles are its slowest core's.
            let sum = |path: &[&str]| -> u64 {
                cores
                    .iter()
                    .map(|c| path.iter().fold(c, |v, k| &v[*k]).as_u64().unwrap())
                    .sum()
            };
            assert_eq!(
                r["walk"]["count"].as_u64().unwrap(),
                sum(&["walk", "count"])
            );
            assert_eq!(
                r["tlb"]["l1_misses"].as_u64().unwrap(),
                sum(&["tlb", "l1_misses"])
            );
            let max = cores
                .iter()
                .map(|c| c["timing"]["cycles"].as_f64().unwrap())
                .fold(0.0, f64::max);
            assert_eq!(r["timing"]["cycles"].as_f64().unwrap(), max);
        }
    }

    #[test]
    fn every_design_passes_the_oracle_with_three_processes_time_sharing_one_core() {
        for info in crate::designs::REGISTRY {
            for flush in ["false", "true"] {
                let cfg = multi(
                    info.name,
                    "gups,kv,bfs",
                    &[("sim.quantum", "20000"), ("sim.flush_tlb_on_switch", flush)],
                );
                let r = run_workload(&cfg)
                    .unwrap_or_else(|e| panic!("{} flush {flush}: {e}", info.name));
                assert_eq!(r["oracle"]["mismatches"], 0);
                assert_eq!(r["refs"], 3 * 6000);
                assert!(r["switch"]["count"].as_u64().unwrap() >= 3, "{}", info.name);
                for p in r["processes"].as_array().unwrap() {
                    assert_eq!(p["refs"], 6000);
                    assert_eq!(p["ended_by"], "refs_limit");
                }
            }
        }
    }

    #[test]
    fn flushing_the_tlb_at_every_switch_costs_misses_after_the_switch() {
        let misses = |flush: &str| {
            let cfg = multi(
                "radix",
                "stream,stream",
                &[
                    ("sim.refs", "60000"),
                    ("sim.quantum", "20000"),
                    ("sim.switch_window_refs", "200"),
                    ("sim.flush_tlb_on_switch", flush),
                ],
            );
            let r = run_workload(&cfg).unwrap();
            let w = &r["switch"];
            assert!(w["count"].as_u64().unwrap() > 10);
            // A window ends early when the next switch (or the run's end) comes first.
            let refs = w["window_refs"].as_u64().unwrap();
            assert!(refs > 0 && refs <= 200 * w["windows"].as_u64().unwrap());
            (
                w["tlb_misses_in_window"].as_u64().unwrap(),
                w["mmu_cache_misses_in_window"].as_u64().unwrap(),
            )
        };
        let (kept, kept_pwc) = misses("false");
        let (flushed, flushed_pwc) = misses("true");
        assert!(flushed > kept, "flushed {flushed} kept {kept}");
        assert!(
            flushed_pwc > kept_pwc,
            "flushed {flushed_pwc} kept {kept_pwc}"
        );
    }

    #[test]
    fn a_multi_core_run_is_identical_however_it_is_chunked() {
        for (workloads, cores) in [("gups,kv,bfs,xsbench", "4"), ("gups,kv,bfs", "2")] {
            let cfg = multi(
                "radix",
                workloads,
                &[("sim.cores", cores), ("sim.quantum", "30000")],
            );
            let whole = run_workload(&cfg).unwrap();
            for step in [1, 63, 1000] {
                let mut sim = Simulation::with_sources(&cfg, sources(&cfg)).unwrap();
                while !sim.step(step).unwrap() {}
                assert_eq!(
                    without_wall_clock(whole.clone()),
                    without_wall_clock(sim.record()),
                    "{workloads} step {step}"
                );
            }
        }
    }

    #[test]
    fn bad_core_counts_and_quanta_are_errors_naming_the_key() {
        let o = |k: &str, v: &str| (k.to_string(), v.to_string());
        let e = Config::resolve(None, &[o("sim.cores", "0")]).unwrap_err();
        assert!(e.0.contains("sim.cores must be in 1..=64"), "{e}");
        for q in ["0", "0ms", "soon"] {
            let e = Config::resolve(None, &[o("sim.quantum", q)]).unwrap_err();
            assert!(e.0.contains("sim.quantum"), "{e}");
        }
        let cfg = multi("radix", "gups,kv", &[("sim.cores", "4")]);
        match Simulation::with_sources(&cfg, sources(&cfg)) {
            Err(SimError::Config(e)) => assert!(e.contains("sim.cores (4) exceeds"), "{e}"),
            _ => panic!("expected a configuration error"),
        }
        let e = Config::resolve(None, &[o("workload.name", "gups,kvv")]).unwrap_err();
        assert!(e.0.contains("unknown workload 'kvv'"), "{e}");
    }

    #[test]
    fn a_quantum_in_milliseconds_is_converted_at_the_core_clock() {
        let cfg = multi("radix", "gups", &[("sim.quantum", "20ms")]);
        assert_eq!(cfg.sim.quantum_cycles(2600).unwrap(), 52_000_000);
        assert_eq!(
            multi("radix", "gups", &[("sim.quantum", "500us")])
                .sim
                .quantum_cycles(2600)
                .unwrap(),
            1_300_000
        );
    }

    #[test]
    fn a_shootdown_on_one_core_reaches_the_tlbs_of_the_other_cores_that_ran_the_process() {
        let cfg = multi("radix", "gups,kv", &[("sim.cores", "2")]);
        let mut os = Os::new(&cfg.os, 1).unwrap();
        let design = Radix::new(&cfg.designs.radix, &mut os.phys).unwrap();
        let base = 0x7000_0000_0000u64;
        let program = |at: u64| -> Box<dyn EventSource> {
            Box::new(Events(
                vec![
                    Event::Mmap {
                        addr: Vaddr(at),
                        len: 4096,
                        prot: RW,
                        flags: 0,
                    },
                    load(at + 8, 8),
                ]
                .into_iter(),
            ))
        };
        let mut sim = Sim::build(
            cfg,
            program(base),
            vec![program(base + (1 << 30))],
            None,
            design,
            os,
            false,
        )
        .unwrap();
        while !sim.step(1000).unwrap() {}
        // Process 0's page, as core 1 would hold it had a thread of process 0 run there.
        let asid = 0;
        let m = sim.os.translate(asid, Vaddr(base).vpn()).expect("mapped");
        let machine = sim.machine.as_deref_mut().unwrap();
        let running = machine.running;
        let other = 1 - running;
        machine.cores[other].mmu.fill(asid, m, false);
        machine.sched[other].asids.push(asid);
        assert!(machine.cores[other]
            .mmu
            .lookup_data_l1(asid, m.vpn)
            .is_some());
        // The core running now unmaps it (any core may start a shootdown).
        sim.os
            .munmap(asid, Vaddr(base), m.size.bytes(), &mut sim.changes)
            .unwrap();
        sim.apply_changes().unwrap();
        let machine = sim.machine.as_deref_mut().unwrap();
        assert!(machine.cores[other]
            .mmu
            .lookup_data_l1(asid, m.vpn)
            .is_none());
        assert_eq!(machine.sched[other].ipis_received, 1);
        assert_eq!(machine.sched[running].ipis_sent, 1);
        assert_eq!(machine.shootdown_rounds, 1);
        assert_eq!(
            machine.sched[other].ipi_cycles,
            sim.cfg.sim.shootdown_ipi_cycles
        );
    }
    #[test]
    fn a_multi_threaded_trace_runs_each_thread_on_its_core_and_shootdowns_interrupt_them() {
        let mut cfg = small("radix");
        cfg.sim.cores = 2;
        let base = 0x7000_0000_0000u64;
        let mut events = vec![
            Event::Mmap {
                addr: Vaddr(base),
                len: 8 * 4096,
                prot: RW,
                flags: 0,
            },
            Event::Thread { tid: 4242 },
        ];
        for round in 0..3 {
            for p in 0..8 {
                events.push(load(base + p * 4096 + round * 8, 8));
            }
            events.push(Event::Thread {
                tid: if round % 2 == 0 { 4243 } else { 4242 },
            });
        }
        events.push(Event::Munmap {
            addr: Vaddr(base),
            len: 4096,
        });
        let r = run(&cfg, Box::new(Events(events.clone().into_iter()))).unwrap();
        for step in [1, 5] {
            let mut sim =
                Simulation::new(&cfg, Box::new(Events(events.clone().into_iter()))).unwrap();
            while !sim.step(step).unwrap() {}
            assert_eq!(
                without_wall_clock(r.clone()),
                without_wall_clock(sim.record()),
                "step {step}"
            );
        }
        assert_eq!(r["refs"], 24);
        let cores = r["cores"].as_array().unwrap();
        // Threads 4242 (first seen: core 0) and 4243 (core 1): rounds 0 and 2 on core 0.
        assert_eq!(cores[0]["refs"], 16);
        assert_eq!(cores[1]["refs"], 8);
        // Core 1 has its own TLBs: the pages core 0 already uses miss there again.
        assert_eq!(cores[1]["walk"]["count"], 8);
        // The munmap on core 1 interrupts core 0, which ran the process.
        assert_eq!(r["shootdown"]["rounds"], 1);
        assert_eq!(cores[0]["shootdown"]["ipis_received"], 1);
        assert_eq!(r["processes"].as_array().unwrap().len(), 1);
        assert_eq!(r["oracle"]["mismatches"], 0);
    }

    fn with(cfg: &Config, extra: &[(&str, &str)]) -> Config {
        let mut t = toml::Value::try_from(cfg).unwrap();
        for (k, v) in extra {
            let (section, key) = k.split_once('.').unwrap();
            let value = v
                .parse::<i64>()
                .map(toml::Value::Integer)
                .unwrap_or_else(|_| toml::Value::String(v.to_string()));
            t[section].as_table_mut().unwrap().insert(key.into(), value);
        }
        let c: Config = t.try_into().unwrap();
        c.validate().unwrap();
        c
    }

    #[test]
    fn a_run_with_warm_up_measures_exactly_the_configured_references_after_it() {
        for design in ["radix", "ecpt", "mehpt", "perfect_tlb"] {
            let cfg = with(
                &small(design),
                &[("sim.warmup_refs", "30000"), ("sim.refs", "20000")],
            );
            let r = run_workload(&cfg).unwrap();
            assert_eq!(r["refs"], 20000, "{design}");
            assert_eq!(r["tlb"]["l1_lookups"], 20000, "{design}");
            assert_eq!(r["warmup"]["refs"], 30000, "{design}");
            assert_eq!(r["warmup"]["method"], "snapshot_subtract");
            assert_eq!(r["config"]["sim"]["refs"], 20000);
            assert_eq!(r["config"]["sim"]["warmup_refs"], 30000);
            // After the reset the counters still agree with each other.
            let tlb = &r["tlb"];
            let misses =
                tlb["l2_misses"].as_u64().unwrap() + tlb["itlb_l2_misses"].as_u64().unwrap();
            let walk = &r["walk"];
            assert_eq!(walk["count"].as_u64().unwrap(), misses, "{design}");
            let hist: u64 = walk["latency_hist"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_u64().unwrap())
                .sum();
            assert_eq!(hist, misses, "{design}");
            let avg = walk["avg_cycles"].as_f64().unwrap();
            assert_eq!(avg, ratio(walk["cycles"].as_u64().unwrap(), misses));
            let c = &r["cache"]["l1d"];
            assert_eq!(
                c["accesses"].as_u64().unwrap(),
                c["hits"].as_u64().unwrap() + c["misses"].as_u64().unwrap()
            );
            let ipc = r["timing"]["ipc"].as_f64().unwrap();
            let want = r["instructions"].as_u64().unwrap() as f64
                / r["timing"]["cycles"].as_f64().unwrap();
            assert_eq!(ipc, want, "{design}");
        }
    }

    #[test]
    fn the_measured_counts_are_those_of_a_longer_run_less_those_of_the_warm_up_alone() {
        let base = small("mehpt");
        let warm = run_workload(&with(&base, &[("sim.refs", "15000")])).unwrap();
        let full = run_workload(&with(&base, &[("sim.refs", "35000")])).unwrap();
        let measured = run_workload(&with(
            &base,
            &[("sim.warmup_refs", "15000"), ("sim.refs", "20000")],
        ))
        .unwrap();
        for path in [
            "refs",
            "instructions",
            "tlb.l1_misses",
            "walk.count",
            "walk.cycles",
            "cache.l2.pt_misses",
            "dram.reads",
            "os.page_faults",
            "mehpt.probes",
            "mehpt.reinsertions",
        ] {
            let get = |r: &Value| crate::stats::get_path(r, path).unwrap().as_u64().unwrap();
            assert_eq!(get(&measured), get(&full) - get(&warm), "{path}");
        }
        let cycles = |r: &Value| r["timing"]["cycles"].as_f64().unwrap();
        assert!((cycles(&measured) - (cycles(&full) - cycles(&warm))).abs() < 1e-6);
        // States are those of the end of the run.
        assert_eq!(measured["page_table"], full["page_table"]);
        assert_eq!(measured["mehpt"]["4k_entries"], full["mehpt"]["4k_entries"]);
    }

    #[test]
    fn a_warmed_up_run_is_deterministic_however_it_is_chunked() {
        let cfg = with(&small("ecpt"), &[("sim.warmup_refs", "12345")]);
        let whole = run_workload(&cfg).unwrap();
        let mut sim = Simulation::with_sources(&cfg, sources(&cfg)).unwrap();
        while !sim.step(777).unwrap() {}
        let chunked = sim.record();
        let strip = |mut v: Value| {
            v.as_object_mut().unwrap().remove("sim");
            v
        };
        assert_eq!(strip(whole), strip(chunked));
    }

    #[test]
    fn without_warm_up_the_record_has_no_warmup_key_in_its_config() {
        let r = run_workload(&small("radix")).unwrap();
        assert!(r.get("warmup").is_none());
        assert!(r["config"]["sim"].get("warmup_refs").is_none());
    }

    #[test]
    fn a_trace_that_ends_within_the_warm_up_is_an_error_naming_the_key() {
        let cfg = with(&small("radix"), &[("sim.warmup_refs", "1000")]);
        let base = 0x7000_0000_0000u64;
        let mut events = vec![Event::Mmap {
            addr: Vaddr(base),
            len: 4096,
            prot: RW,
            flags: 0,
        }];
        events.extend(vec![load(base, 8); 10]);
        let source = Box::new(Events(events.into_iter()));
        let mut sim = Simulation::new(&cfg, source).unwrap();
        let err = loop {
            match sim.step(u64::MAX) {
                Ok(true) => panic!("a run shorter than its warm-up must not finish"),
                Ok(false) => continue,
                Err(e) => break e.to_string(),
            }
        };
        assert!(err.contains("sim.warmup_refs"), "{err}");
    }

    #[test]
    fn a_multi_process_run_warms_up_each_process_and_measures_each_core() {
        let cfg = multi(
            "mehpt",
            "gups,kv",
            &[("sim.cores", "2"), ("sim.warmup_refs", "4000")],
        );
        let r = run_workload(&cfg).unwrap();
        assert_eq!(r["refs"], 2 * 6000);
        assert_eq!(r["warmup"]["refs"], 2 * 4000);
        let cores = r["cores"].as_array().unwrap();
        let per_core: u64 = cores.iter().map(|c| c["refs"].as_u64().unwrap()).sum();
        assert_eq!(per_core, 2 * 6000);
        let slowest = cores
            .iter()
            .map(|c| c["timing"]["cycles"].as_f64().unwrap())
            .fold(0.0, f64::max);
        assert_eq!(r["timing"]["cycles"].as_f64().unwrap(), slowest);
        for c in cores {
            let misses = c["tlb"]["l2_misses"].as_u64().unwrap()
                + c["tlb"]["itlb_l2_misses"].as_u64().unwrap();
            assert_eq!(c["walk"]["count"].as_u64().unwrap(), misses);
        }
    }

    #[test]
    fn every_figure_of_every_design_is_a_count_a_state_or_a_fraction_after_warm_up() {
        for info in crate::designs::REGISTRY {
            for workload in ["gups", "kv", "bfs"] {
                for thp in ["never", "always"] {
                    let cfg = with(
                        &small(info.name),
                        &[
                            ("sim.warmup_refs", "10000"),
                            ("workload.name", workload),
                            ("os.thp", thp),
                        ],
                    );
                    let r = run_workload(&cfg).unwrap();
                    let whole = r["warmup"]["whole_run_keys"].as_array().unwrap();
                    let unexpected: Vec<&Value> = whole
                        .iter()
                        .filter(|k| !KNOWN_WHOLE_RUN_KEYS.contains(&k.as_str().unwrap()))
                        .collect();
                    assert!(
                        unexpected.is_empty(),
                        "{} {workload} thp={thp}: {unexpected:?}",
                        info.name
                    );
                }
            }
        }
    }

    fn zeroed(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, c)| {
                        let keep = ["config", "sim", "trace"].contains(&k.as_str());
                        (k.clone(), if keep { c.clone() } else { zeroed(c) })
                    })
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(zeroed).collect()),
            Value::Number(n) if n.is_u64() => Value::from(0u64),
            Value::Number(_) => Value::from(0.0),
            other => other.clone(),
        }
    }

    fn floats(prefix: &str, v: &Value, out: &mut Vec<(String, f64)>) {
        match v {
            Value::Object(m) => {
                for (k, c) in m {
                    if prefix.is_empty() && ["config", "sim", "warmup"].contains(&k.as_str()) {
                        continue;
                    }
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    floats(&p, c, out);
                }
            }
            Value::Array(a) => {
                for c in a.iter().filter(|c| c.is_object()) {
                    floats(&format!("{prefix}[]"), c, out);
                }
            }
            Value::Number(n) if !n.is_u64() => out.push((prefix.into(), n.as_f64().unwrap())),
            _ => {}
        }
    }

    #[test]
    fn every_fraction_recomputed_from_an_empty_snapshot_equals_the_records_own() {
        // With a snapshot of zeros the measured region is the whole run: every fraction the
        // warm-up recomputes must come out as the engine computed it (a wrong formula fails).
        let mut cases: Vec<Config> = Vec::new();
        for info in crate::designs::REGISTRY {
            for workload in ["gups", "kv", "bfs"] {
                for thp in ["never", "always"] {
                    cases.push(with(
                        &small(info.name),
                        &[("workload.name", workload), ("os.thp", thp)],
                    ));
                }
            }
        }
        cases.push(with(&small("radix"), &[("timing.model", "ooo")]));
        cases.push(multi("ecpt", "gups,kv", &[("sim.cores", "2")]));
        for cfg in cases {
            let r = run_workload(&cfg).unwrap();
            let (m, whole) =
                crate::warmup::measured(&r, &zeroed(&r), cfg.timing.translation_overlap);
            let (mut want, mut got) = (Vec::new(), Vec::new());
            floats("", &r, &mut want);
            floats("", &m, &mut got);
            assert_eq!(want.len(), got.len());
            for ((key, w), (_, g)) in want.iter().zip(&got) {
                if whole.iter().any(|k| k == key) {
                    continue;
                }
                let tol = 1e-9 * w.abs().max(1.0);
                assert!(
                    (w - g).abs() <= tol,
                    "{} {}: {key} is {w} in the record, {g} recomputed",
                    cfg.sim.design,
                    cfg.workload.name
                );
            }
        }
    }

    /// Figures that still cover the whole run after a warm-up (see `crate::warmup`): averages
    /// over samples the record does not count.
    const KNOWN_WHOLE_RUN_KEYS: &[&str] = &[
        "timing.avg_walker_queue_cycles",
        "lvm.collision_rate",
        "lvm.single_access_walk_share",
        "ecpt.moved_fraction_per_upsize",
        "ecpt.moved_fraction_per_in_place_upsize",
        "mehpt.moved_fraction_per_upsize",
        "mehpt.moved_fraction_per_in_place_upsize",
        "cache.l1d.pt_line_share_avg",
        "cache.l2.pt_line_share_avg",
        "cache.llc.pt_line_share_avg",
        "utopia.rsw_speedup_over_flex_walk",
        "restrictive_only.rsw_speedup_over_flex_walk",
    ];
}
