//! One reference: its translation (L1 DTLB fast path, the other TLBs, the design's walk and
//! the page fault it may need, nested 2-D walks), the oracle's check of every translation, the
//! data access and the out-of-order core; and the host-memory prefetch of the events ahead.
//!
//! Owns the `impl Sim` methods for these. May call: `addr`, `designs`, `mmu`, `os`, `timing`
//! (the out-of-order core), `trace`, `virt`, and the engine's `counters` (the walk histogram),
//! `error`, `stream` and `sim` (the struct; the OS calls of `os_events` through its methods).
//! Contract: every translation used is checked against the OS model when `sim.oracle` is on, and
//! a disagreement is a [`SimError::Oracle`]; counted figures are those `docs/results.md` names.

use super::Sim;
use crate::addr::{Mapping, PageSize, Vaddr, Vpn, BASE_PAGE_SHIFT};
use crate::designs::Design;
use crate::engine::counters::walk_hist_bucket;
use crate::engine::error::SimError;
use crate::engine::stream::{PREFETCH_DISTANCE, PREFETCH_EARLY_DISTANCE};
use crate::mmu::TlbOutcome;
use crate::timing::ooo::CoreRef;
use crate::trace::{AccessKind, Event};

impl<D: Design> Sim<D> {
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
    pub(super) fn access(
        &mut self,
        kind: AccessKind,
        va: Vaddr,
        instrs: u32,
    ) -> Result<(), SimError> {
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
    pub(super) fn second_page(
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
        // The memory events of this reference's walk start here (anything logged since the
        // last reference, by OS work, is not timed).
        self.mem.clear_events();
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
                    if D::WORKS_BESIDE_L2_TLB_HIT {
                        self.design.beside_l2_tlb_hit(self.asid, vpn, &mut self.mem);
                        // Its reads are not this reference's to time (the L2 TLB answered).
                        self.mem.clear_events();
                    }
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
                    let l2 = self.mmu.l2_latency_cycles as u64;
                    let xlat = if self.mmu.walk_with_l2_lookup && !D::OVERLAPS_L2_TLB_LOOKUP {
                        // The walk started with the L2 TLB lookup (`tlb.walk_with_l2_lookup`).
                        w.max(l2)
                    } else {
                        l2 + w
                    };
                    (m, xlat)
                }
            }
        };
        if kind == AccessKind::Store && !m.writable {
            return self.store_to_read_only(va, xlat_cycles, walk_cycles);
        }
        self.timing.mmu_overhead_cycles += xlat_cycles;
        self.data_access(kind, va, m.translate(va), xlat_cycles, walk_cycles)
    }

    /// The OS work counted so far beyond the fixed cost per fault: physical memory's allocation
    /// work (zeroing, direct compaction), background work and page moves, and the design's own
    /// OS cycles. Taken before a fault (`os.fault_latency`); with the faults' fixed cost it is
    /// `timing.os_cycles` (`record.rs`).
    #[inline]
    pub(super) fn fault_mark(&self) -> u64 {
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
        let walk_events = self.mem.events().len();
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
                dep: match self.parked.resumed_at {
                    // Sampled runs: the producer ran functionally warmed (see `resumed_at`).
                    Some(at) if self.cur_dep as u64 >= self.c.refs - at => 0,
                    _ => self.cur_dep,
                },
                xlat_cycles,
                walk_cycles,
                data_cycles: a.latency_cycles,
                data_level: a.served_by,
                // Events exist only under the queued DRAM model; a walk's are timed only
                // when it cost time (not under `perfect_tlb`, nor a reference with none).
                walk_events: if walk_cycles > 0 {
                    walk_events as u16
                } else {
                    0
                },
                data_events: (self.mem.events().len() - walk_events) as u8,
            };
            let events = self.mem.events();
            let events = if walk_cycles > 0 {
                events
            } else {
                &events[walk_events..]
            };
            if let Err(problem) = core.reference_with(&r, events) {
                return Err(self.dependence_error(problem));
            }
        }
        self.mem.clear_events();
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

    /// Prefetch for the events ahead, once per recently seen page: loops over a few arrays
    /// (streams) find everything cached already, and the hint would only cost them time.
    #[inline]
    fn prefetch_ahead(&mut self) {
        if let Some(Event::Access { va, .. }) = self.buf.get(self.pos + PREFETCH_EARLY_DISTANCE) {
            let vpn = va.vpn();
            if self.os.wants_early_prefetch(self.asid) && self.prefetched.admit_early(vpn) {
                self.os.prefetch_early(self.asid, vpn);
                self.design.prefetch_early(self.asid, vpn);
            }
        }
        if let Some(Event::Access { va, .. }) = self.buf.get(self.pos + PREFETCH_DISTANCE) {
            let vpn = va.vpn();
            if self.prefetched.admit(vpn) {
                self.os.prefetch(self.asid, vpn);
                self.design.prefetch(self.asid, vpn, &self.mem);
            }
        }
    }
}
