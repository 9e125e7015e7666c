//! The simulation loop: event -> OS model -> MMU (TLBs, design walk) -> oracle -> memory ->
//! timing -> stats.
//!
//! Contract: given the same config and event stream, a run produces bit-identical statistics
//! (wall-clock fields aside), however it is chunked by [`Simulation::step`]. Any disagreement
//! between a design's translation and the OS model's mapping aborts the run with
//! [`SimError::Oracle`]: a mismatch is a bug, never a statistic.

use crate::addr::{Asid, Mapping, Vaddr, Vpn, BASE_PAGE_BYTES, BASE_PAGE_SHIFT};
use crate::config::Config;
use crate::designs::{build_and_visit, Design, DesignVisitor};
use crate::mem::MemSystem;
use crate::mmu::{Mmu, TlbOutcome};
use crate::os::{MapChange, Os, OsError};
use crate::stats::{ratio, Stats, StatsExt};
use crate::timing::ooo::{CoreRef, OooCore};
use crate::timing::{Timing, TimingModel};
use crate::trace::{AccessKind, Event, EventSource, SourceError};
use serde_json::Value;
use std::fmt;
use std::time::Instant;

/// Why a run stopped early.
#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// Bad configuration.
    Config(String),
    /// The trace or generator failed (names file, offset and problem).
    Source(SourceError),
    /// The OS model refused an event (out of memory, access outside any VMA, ...).
    Os {
        /// Index of the event (0-based) in the stream.
        event: u64,
        /// What went wrong.
        error: OsError,
    },
    /// A design's translation disagreed with the OS model.
    Oracle(String),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Config(e) => write!(f, "configuration error: {e}"),
            SimError::Source(e) => write!(f, "trace error: {e}"),
            SimError::Os { event, error } => write!(f, "OS model error at event {event}: {error}"),
            SimError::Oracle(e) => write!(f, "oracle mismatch (simulator bug): {e}"),
        }
    }
}

impl std::error::Error for SimError {}

/// Counters of the main loop.
#[derive(Clone, Debug, Default)]
struct Counters {
    events: u64,
    refs: u64,
    loads: u64,
    stores: u64,
    ifetches: u64,
    instructions: u64,
    /// Walks after a TLB miss (including those that found no translation and faulted).
    walks: u64,
    walk_mem_accesses: u64,
    walk_cycles: u64,
    /// TLB-miss walks that found no translation (each is followed by a page fault).
    fault_walks: u64,
    /// Walks repeated after a page fault (demand paging or a store to a read-only page): they
    /// cost cycles but are not TLB-miss walks, so they stay out of `walks` and its averages.
    post_fault_walks: u64,
    post_fault_walk_mem_accesses: u64,
    post_fault_walk_cycles: u64,
    /// References whose bytes span two pages (each page is translated).
    page_crossing_refs: u64,
    oracle_checked: u64,
    syscalls: u64,
}

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
    /// latencies computed here and changes nothing else.
    core: Option<OooCore>,
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
    /// The oracle checks L1 TLB hits against the guest OS alone (`sim.oracle` in a native run;
    /// a nested run's L1 entries are combined translations, checked by `check`).
    l1_oracle_native: bool,
}

/// Builds the runner once the design exists; the OS is handed over afterwards because the
/// design's constructor borrows its physical memory.
struct MakeSim {
    cfg: Config,
    source: Box<dyn EventSource>,
    /// The host of a nested run (`virt.enabled`); attached to the memory system.
    nested: Option<Box<dyn crate::virt::HostTranslate>>,
}

type RunnerFactory = Box<dyn FnOnce(Os) -> Result<Box<dyn Runner>, OsError> + Send>;

impl DesignVisitor for MakeSim {
    type Output = RunnerFactory;
    fn visit<D: Design + 'static>(self, design: D) -> RunnerFactory {
        let MakeSim {
            cfg,
            source,
            nested,
        } = self;
        Box::new(move |mut os: Os| -> Result<Box<dyn Runner>, OsError> {
            os.set_page_sizes(design.page_sizes())?;
            let asid = os.process(0);
            let mut mem = MemSystem::new(&cfg.mem);
            mem.nested = nested;
            Ok(Box::new(Sim {
                mmu: Mmu::new(&cfg.tlb),
                mem,
                l1_oracle_native: cfg.sim.oracle && !cfg.virt.enabled,
                core: (cfg.timing.model == TimingModel::Ooo)
                    .then(|| OooCore::new(&cfg.core, cfg.mem.l1d.latency_cycles)),
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
            }))
        })
    }
}

/// The design's placement hook, as the OS model asks it at a fault.
struct DesignPlacer<'a, D: Design>(&'a mut D);

impl<D: Design> crate::os::Placer for DesignPlacer<'_, D> {
    fn place(
        &mut self,
        phys: &mut crate::os::PhysMem,
        req: &crate::os::PlaceRequest,
    ) -> Option<crate::addr::Pfn> {
        self.0.place(phys, req)
    }
}

/// Events fetched from the source at a time: 512 x 32 bytes stays in the host's L1 cache
/// between the source writing the buffer and the engine reading it (4096 did not; gups ran
/// about 5 % faster with 512).
const CHUNK: usize = 512;

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
                    }
                }
            }
            self.os.apply_relocations(&mut self.changes)?;
        }
        // Keep both buffers' capacity: no allocation per fault.
        self.change_batch = batch;
        for (pfn, order) in self.os.take_moved_frames() {
            // Natively the frames; in a nested run the host frames backing them (virt/).
            crate::virt::invalidate_moved_frames(&mut self.mem, pfn, 1 << order);
        }
        Ok(())
    }

    /// Run the OS daemons due by now (simulated core cycles so far), once per event chunk.
    #[cold]
    fn run_daemons(&mut self) -> Result<(), SimError> {
        let now = self
            .timing
            .core_cycles(&self.cfg.timing, self.c.instructions) as u64;
        self.os
            .tick(now, &mut self.changes)
            .map_err(|e| self.os_err(e))?;
        self.apply_changes().map_err(|e| self.os_err(e))?;
        // Nested runs only (virt/): the host OS's daemons.
        if let Some(mut host) = self.mem.nested.take() {
            host.tick(now, &mut self.mem);
            self.mem.nested = Some(host);
            self.nested_sync()?;
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
                self.asid = self.os.process(pid);
                Ok(())
            }
            Event::Exit { pid } => {
                let a = self.os.process(pid);
                let r = self.os.exit(a, &mut self.changes);
                self.mmu.invalidate_asid(a);
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
                }
                cycles += w.latency_cycles as u64;
            }
            if let Some(m) = w.mapping {
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
            self.os
                .fault_with(
                    self.asid,
                    va,
                    kind,
                    &mut self.changes,
                    &mut DesignPlacer(&mut self.design),
                )
                .map_err(|e| self.os_err(e))?;
            self.apply_changes().map_err(|e| self.os_err(e))?;
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
            if !self.os.maps_recent(self.asid, vpn, &m) {
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
                TlbOutcome::Miss => {
                    let (m, w) = self.walk(va, kind, false)?;
                    walk_cycles = w;
                    if ifetch {
                        self.os
                            .check_fetch(self.asid, va)
                            .map_err(|e| self.os_err(e))?;
                    }
                    self.mmu.fill(self.asid, m, ifetch);
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
        let nm = self
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
        let m = if !D::PERFECT_TLB {
            let (wm, wc) = self.walk(va, kind, true)?;
            self.mmu.fill(self.asid, wm, false);
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

/// How many events ahead the engine prefetches the host memory a reference will touch: the
/// oracle's page-map entry and the design's page-table entries, the two structures that grow
/// with the footprint. (Prefetching the simulated caches' sets too was measured slower once
/// those became compact: they stay in the host's L2.) Speed only; results do not depend on it.
const PREFETCH_DISTANCE: usize = 8;

/// Pages remembered as prefetched: enough for a loop over a few arrays at once.
const PREFETCH_RECENT_PAGES: usize = 4;

/// The last few pages prefetched.
#[derive(Clone, Copy)]
struct RecentPages {
    vpns: [u64; PREFETCH_RECENT_PAGES],
    next: usize,
}

impl RecentPages {
    fn new() -> Self {
        RecentPages {
            vpns: [u64::MAX; PREFETCH_RECENT_PAGES],
            next: 0,
        }
    }

    /// Whether `vpn` is new (and remember it).
    #[inline]
    fn admit(&mut self, vpn: Vpn) -> bool {
        if self.vpns.contains(&vpn.0) {
            return false;
        }
        self.vpns[self.next] = vpn.0;
        self.next = (self.next + 1) % PREFETCH_RECENT_PAGES;
        true
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

impl<D: Design> Runner for Sim<D> {
    fn step(&mut self, max_refs: u64) -> Result<bool, SimError> {
        let target = self.c.refs.saturating_add(max_refs).min(self.cfg.sim.refs);
        while !self.finished && self.c.refs < target {
            if self.pos == self.buf.len() {
                // (The host's daemons in a nested run: virt/.)
                if self.os.has_daemons()
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
                let ev = self.buf[self.pos];
                self.pos += 1;
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
                    Event::Thread { .. } => {}
                    other => self.handle_syscall(other)?,
                }
                self.c.events += 1;
            }
        }
        if self.c.refs >= self.cfg.sim.refs && !self.finished {
            self.finished = true;
            self.truncated_by_refs = true;
        }
        Ok(self.finished)
    }

    fn refs(&self) -> u64 {
        self.c.refs
    }

    fn record(&self, wall_seconds: f64) -> Value {
        let c = &self.c;
        let mut r = Stats::new();
        r.put_str("design", &self.cfg.sim.design);
        r.put_str("workload", &self.source.name());
        if let Some(t) = self.source.describe() {
            r.insert("trace".into(), t);
        }
        r.put_u64("seed", self.cfg.sim.seed);
        r.put_str("version", crate::VERSION);
        r.put_u64("refs", c.refs);
        r.put_u64("instructions", c.instructions);
        r.put_u64("loads", c.loads);
        r.put_u64("stores", c.stores);
        r.put_u64("ifetches", c.ifetches);
        r.put_u64("events", c.events);
        r.put_u64("syscalls", c.syscalls);
        r.put_u64("page_crossing_refs", c.page_crossing_refs);
        r.insert(
            "ended_by".into(),
            Value::from(if self.truncated_by_refs {
                "refs_limit"
            } else {
                "end_of_trace"
            }),
        );
        self.mmu.stats(&mut r, c.instructions);
        if D::PERFECT_TLB {
            // Every translation is an L1 hit by definition.
            let t = r.section("tlb");
            for k in [
                "l1_misses",
                "l2_misses",
                "l2_lookups",
                "itlb_misses",
                "itlb_l2_misses",
            ] {
                t.put_u64(k, 0);
            }
            t.put_u64("l1_lookups", c.refs);
            t.put_f64("l1_miss_rate", 0.0);
            t.put_f64("l1_mpki", 0.0);
            t.put_f64("l2_mpki", 0.0);
        }
        {
            let w = r.section("walk");
            w.put_u64("count", c.walks);
            w.put_u64("mem_accesses", c.walk_mem_accesses);
            w.put_u64("cycles", c.walk_cycles);
            w.put_f64("avg_cycles", ratio(c.walk_cycles, c.walks));
            w.put_f64("avg_mem_accesses", ratio(c.walk_mem_accesses, c.walks));
            w.put_u64("fault_walks", c.fault_walks);
            w.put_u64("post_fault_count", c.post_fault_walks);
            w.put_u64("post_fault_mem_accesses", c.post_fault_walk_mem_accesses);
            w.put_u64("post_fault_cycles", c.post_fault_walk_cycles);
        }
        self.timing.stats(
            &self.cfg.timing,
            c.instructions,
            self.design.os_cycles()
                + self.os.extra_os_cycles()
                // Nested runs: the host's OS time (virt/).
                + self.mem.nested.as_ref().map_or(0, |h| {
                    h.os_cycles(self.cfg.timing.page_fault_cycles)
                }),
            self.core.as_ref(),
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
            s.put_f64(
                "refs_per_sec",
                if wall_seconds > 0.0 {
                    c.refs as f64 / wall_seconds
                } else {
                    0.0
                },
            );
        }
        r.insert("config".into(), self.cfg.to_json());
        Value::Object(r)
    }
}

/// A run in progress: build it, call [`Simulation::step`] until it returns `true`, then take the
/// [`Simulation::record`].
pub struct Simulation {
    runner: Box<dyn Runner>,
    wall_seconds: f64,
}

impl Simulation {
    /// Boot the OS model, build the design named in `cfg.sim.design`, and attach `source`.
    pub fn new(cfg: &Config, source: Box<dyn EventSource>) -> Result<Simulation, SimError> {
        cfg.validate().map_err(|e| SimError::Config(e.0))?;
        let mut os =
            Os::new(&cfg.os, cfg.sim.seed).map_err(|e| SimError::Os { event: 0, error: e })?;
        // Nested runs: the host OS and design that map guest-physical memory (virt/).
        let nested = if cfg.virt.enabled {
            Some(crate::virt::build_host(cfg, os.phys.total_bytes()).map_err(SimError::Config)?)
        } else {
            None
        };
        // The design allocates from the same physical memory as everything else.
        let factory = build_and_visit(
            &cfg.sim.design,
            &cfg.designs,
            &mut os.phys,
            MakeSim {
                cfg: cfg.clone(),
                source,
                nested,
            },
        )
        .map_err(|e| SimError::Os { event: 0, error: e })?;
        Ok(Simulation {
            runner: factory(os).map_err(|e| SimError::Os { event: 0, error: e })?,
            wall_seconds: 0.0,
        })
    }

    /// Simulate up to `max_refs` more references. Returns `true` when the run is complete (the
    /// trace ended or `sim.refs` were simulated).
    pub fn step(&mut self, max_refs: u64) -> Result<bool, SimError> {
        let t = Instant::now();
        let r = self.runner.step(max_refs);
        self.wall_seconds += t.elapsed().as_secs_f64();
        r
    }

    /// References simulated so far.
    pub fn refs(&self) -> u64 {
        self.runner.refs()
    }

    /// The result record (see `docs/results.md`).
    pub fn record(&self) -> Value {
        self.runner.record(self.wall_seconds)
    }
}

/// Run a whole simulation of `cfg` over `source` and return its record.
pub fn run(cfg: &Config, source: Box<dyn EventSource>) -> Result<Value, SimError> {
    let mut sim = Simulation::new(cfg, source)?;
    while !sim.step(u64::MAX)? {}
    Ok(sim.record())
}

/// Run the built-in workload named in `cfg.workload`.
pub fn run_workload(cfg: &Config) -> Result<Value, SimError> {
    let source = crate::workloads::create(&cfg.workload, cfg.sim.refs, cfg.sim.seed)
        .map_err(SimError::Config)?;
    run(cfg, source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::designs::radix::{Radix, RadixConfig};
    use crate::designs::{PtFootprint, WalkResult};
    use crate::os::PhysMem;

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
            nested: None,
        }
        .visit(design)(os)
        .unwrap();
        let err = runner.step(u64::MAX).unwrap_err();
        match err {
            SimError::Oracle(msg) => assert!(msg.contains("the OS model maps"), "{msg}"),
            other => panic!("expected an oracle error, got {other}"),
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
}
