//! What one generator program is and how it emits events: the [`Program`] trait, the event
//! helpers every program uses ([`load`], [`store`], their dependent forms, [`touch_pages`],
//! [`back_to`]) and the [`Burst`] a setup produces, with its lazy expansion ([`BurstCursor`]).
//!
//! Calls only `crate::trace` (events), `crate::addr` and the address space of [`super::heap`];
//! the programs (`programs.rs`, `graphs.rs`, `kernels.rs`, `apps.rs`) and the driver
//! (`workloads/mod.rs`) call it, never the reverse.

use super::heap::AddressSpace;
use crate::trace::{AccessKind, Event};

/// One simulated program: `setup` allocates and initializes, `step` performs one operation.
///
/// Contract: both push events in program order; `step` pushes only `Access` events (its
/// system calls go through the address space, and the driver puts them first), at least one
/// every call, and never ends.
pub(crate) trait Program: Send {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst);
    fn step(&mut self, mem: &mut AddressSpace, q: &mut Vec<Event>);
    /// Host bytes the program holds: every container it will ever fill is allocated by its
    /// constructor (sized by the footprint, never by the run's length), so this is exact from
    /// construction on and [`create`](super::create) can refuse a run before it starts.
    fn host_bytes(&self) -> u64;
}

/// What a program's setup produces: events in program order, with its first-touch runs kept
/// as ranges and expanded only as the engine fetches them. (A 1 GiB footprint is 262,144 first
/// touches: materialized, they took 8 MiB and several milliseconds of every run before the
/// engine could simulate the first of them.)
#[derive(Default)]
pub(crate) struct Burst {
    /// Events, first touches excluded.
    pub events: Vec<Event>,
    /// First-touch runs: (index in `events` the run comes before, start address, end address).
    pub(super) touches: Vec<(usize, u64, u64)>,
}

/// Expands a [`Burst`] into events, in order.
pub(super) struct BurstCursor {
    burst: Burst,
    /// Next event of `burst.events`.
    event: usize,
    /// Current first-touch run, and the next address it touches.
    run: usize,
    next_va: u64,
}

impl BurstCursor {
    pub(super) fn new(burst: Burst) -> BurstCursor {
        let next_va = burst.touches.first().map_or(0, |t| t.1);
        BurstCursor {
            burst,
            event: 0,
            run: 0,
            next_va,
        }
    }

    /// References not handed out yet: the accesses among the events ahead and the pages of
    /// the first-touch runs ahead (one store each).
    pub(super) fn refs_ahead(&self) -> u64 {
        let events = self.burst.events[self.event..]
            .iter()
            .filter(|e| matches!(e, Event::Access { .. }))
            .count() as u64;
        let touches: u64 = self.burst.touches[self.run..]
            .iter()
            .enumerate()
            .map(|(i, &(_, start, end))| {
                // The run in progress resumes at `next_va` (its start when not begun).
                let from = if i == 0 { self.next_va } else { start };
                end.div_ceil(4096).saturating_sub(from / 4096)
            })
            .sum();
        events + touches
    }

    /// Append up to `max` events to `out`, stopping before a reference beyond `*refs_left`
    /// (then the burst is over: nothing after it is ever handed out) and counting the
    /// references handed out off `*refs_left`. Returns whether the burst has ended.
    pub(super) fn expand(&mut self, out: &mut Vec<Event>, max: usize, refs_left: &mut u64) -> bool {
        let b = &self.burst;
        let mut room = max;
        while room > 0 {
            match b.touches.get(self.run) {
                Some(&(at, _, end)) if at == self.event => {
                    // A run of first touches: one store per 4 KiB page.
                    let n = end
                        .div_ceil(4096)
                        .saturating_sub(self.next_va / 4096)
                        .min(room as u64)
                        .min(*refs_left);
                    if n == 0 {
                        self.event = b.events.len();
                        self.run = b.touches.len();
                        return true;
                    }
                    let mut va = self.next_va;
                    for _ in 0..n {
                        store(out, va, 8, 2);
                        va = (va & !4095) + 4096;
                    }
                    self.next_va = va;
                    room -= n as usize;
                    *refs_left -= n;
                    if va >= end {
                        self.run += 1;
                        self.next_va = b.touches.get(self.run).map_or(0, |t| t.1);
                    }
                }
                _ => {
                    let Some(e) = b.events.get(self.event) else {
                        return true;
                    };
                    if matches!(e, Event::Access { .. }) {
                        if *refs_left == 0 {
                            self.event = b.events.len();
                            self.run = b.touches.len();
                            return true;
                        }
                        *refs_left -= 1;
                    }
                    out.push(*e);
                    self.event += 1;
                    room -= 1;
                }
            }
        }
        self.event == b.events.len() && self.run == b.touches.len()
    }
}

/// Push a load whose address does not depend on an earlier load.
#[inline]
pub(crate) fn load(q: &mut Vec<Event>, va: u64, size: u8, instrs: u32) {
    load_after(q, va, size, instrs, 0);
}

/// Push a load whose address depends on the value loaded `dep` accesses back (0 = none).
#[inline]
pub(crate) fn load_after(q: &mut Vec<Event>, va: u64, size: u8, instrs: u32, dep: u16) {
    q.push(Event::Access {
        kind: AccessKind::Load,
        va: crate::addr::Vaddr(va),
        size,
        instrs,
        dep,
    });
}

/// Push a store whose address does not depend on an earlier load.
#[inline]
pub(crate) fn store(q: &mut Vec<Event>, va: u64, size: u8, instrs: u32) {
    store_after(q, va, size, instrs, 0);
}

/// Push a store whose address depends on the value loaded `dep` accesses back (0 = none).
#[inline]
pub(crate) fn store_after(q: &mut Vec<Event>, va: u64, size: u8, instrs: u32, dep: u16) {
    q.push(Event::Access {
        kind: AccessKind::Store,
        va: crate::addr::Vaddr(va),
        size,
        instrs,
        dep,
    });
}

/// One store per 4 KiB page of `[addr, addr + len)` (first touch by an init loop), after the
/// events pushed so far.
pub(crate) fn touch_pages(q: &mut Burst, addr: u64, len: u64) {
    if len > 0 {
        q.touches.push((q.events.len(), addr, addr + len));
    }
}

/// Dependence distance from the access about to be pushed onto `q` back to the one at index
/// `at` of `q`; 0 (none) when further back than a `u16` reaches, where no ROB can hold both.
#[inline]
pub(super) fn back_to(q: &[Event], at: usize) -> u16 {
    u16::try_from(q.len() - at).unwrap_or(0)
}
