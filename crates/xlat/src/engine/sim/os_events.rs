//! What the OS model does to a run: system calls, page faults, its daemons and the design's OS
//! work, and the mapping changes all of them make, applied to the design, the TLBs of every core
//! (shootdowns, with their IPIs) and the data caches (moved frames).
//!
//! Owns the `impl Sim` methods for these, and the OS clock (`Sim::os_now`). May call: `addr`,
//! `designs`, `os`, `trace`, `virt` (nested runs: the host's daemons and failures), and the
//! engine's `error`, `placement` and `sim` (the struct; `machine`'s shootdown methods through
//! its field). Contract: after any OS call returns, every mapping change it reported has
//! reached the design and no TLB of any core holds a removed translation.

use super::Sim;
use crate::addr::{Asid, Mapping, Vaddr};
use crate::designs::Design;
use crate::engine::error::SimError;
use crate::engine::placement::{invalidate_group_members, DesignPlacer};
use crate::os::{MapChange, OsError};
use crate::trace::{AccessKind, Event};

impl<D: Design> Sim<D> {
    /// Apply OS mapping changes to the design and the TLBs; frames whose contents the OS
    /// moved leave the data caches.
    pub(crate) fn apply_changes(&mut self) -> Result<(), OsError> {
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
    pub(super) fn run_daemons(&mut self) -> Result<(), SimError> {
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

    /// The OS clock: simulated core cycles so far, never running backwards. One core: the
    /// core's clock (`ooo`'s under `timing.model = "ooo"`, plus the functional phases' cycles
    /// in a sampled run, as the turns of a machine read it; the `simple` formula's otherwise).
    /// Several cores: the clock the scheduler balances (the same clocks).
    pub(super) fn os_now(&mut self) -> u64 {
        if self.machine.is_none() {
            // The core's own clock, as on a machine (model version 5; the `simple` formula's
            // before, by which a GUPS core under `ooo` ran about 2.4x ahead of its cycles, so
            // the daemons and a design's migrations ran early). Read at every chunk of a run
            // with daemons: a core on a thread of its own comes back to this one.
            if let Some(core) = self.core.as_mut() {
                core.bring_here();
            }
            let now = (self.core_cycles_now() as u64).max(self.os_clock_floor);
            self.os_clock_floor = now;
            return now;
        }
        // Cores take turns, the one with the fewest cycles first (sched.rs), so every core with
        // a process left is within a turn of the others by that clock, and the latest time any
        // core has reached at a check is the machine's time; it never runs backwards. It must be
        // the clock the turns balance: by another (the formula's under `ooo`) one core can run
        // far ahead, and once its process ended the OS clock stood still for the rest of the
        // run (Utopia's migrations then never finished; docs/designs/utopia.md).
        let now = self.core_cycles_now() as u64;
        let machine = self.machine.as_deref_mut().expect("several cores");
        let now = now.max(machine.os_now);
        machine.os_now = now;
        now
    }

    /// The OS work the design asked for (`Design::os_work`: Utopia's migrations), then its
    /// mapping changes.
    #[cold]
    pub(super) fn design_os_work(&mut self, now: u64) -> Result<(), SimError> {
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
    pub(super) fn nested_sync(&mut self) -> Result<(), SimError> {
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

    pub(super) fn host_err(&self, e: crate::virt::HostError) -> SimError {
        match e {
            crate::virt::HostError::Os(error) => self.os_err(error),
            crate::virt::HostError::Oracle(msg) => SimError::Oracle(msg),
        }
    }

    /// The OS model's page fault at `va` of the running process, placed through the design's
    /// placer, with the mapping changes it made applied to the design and the TLBs.
    pub(super) fn os_fault(&mut self, va: Vaddr, kind: AccessKind) -> Result<Mapping, SimError> {
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

    pub(super) fn os_err(&self, error: OsError) -> SimError {
        SimError::Os {
            event: self.c.events,
            error,
        }
    }

    pub(super) fn handle_syscall(&mut self, ev: Event) -> Result<(), SimError> {
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
}
