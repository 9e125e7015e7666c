//! The state of `core.resource_grant = "time_order"`: [`TimeOrder`] holds the records of the
//! references read but not retired ([`Pend`], two cache lines each, in a ring that grows with the
//! window), the walks and fills they may merge with, and [`RequestQueue`], the walker and MSHR
//! requests waiting to be granted in request-time order.
//!
//! Contract: the types and their bookkeeping only (waking waiters, growing the ring); the
//! decisions (when to grant, what a grant does, retirement) are `OooCore`'s, in `grants.rs`
//! and `rob.rs`. It calls `base.rs`, `core_ref.rs` and `pools.rs`, never `OooCore`.

use super::base::{fmax, fmin, Ring};
use super::core_ref::CoreRef;
use super::dram_link::EventQueue;
use super::pools::{InFlight, IN_FLIGHT_SLOTS};
use crate::mem::ServedBy;
use crate::trace::AccessKind;
use std::collections::VecDeque;

/// No reference (an empty waiter list).
const NONE: u32 = u32::MAX;

/// Where a reference stands under `core.resource_grant = "time_order"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    /// Waiting for the reference its address depends on to complete.
    Dep,
    /// Its walk is requested (an event in the queue).
    Walk,
    /// Translated by a TLB hit; waiting for the walk of its page in flight to be granted.
    WalkOwner,
    /// Its data miss is requested (an event in the queue).
    Data,
    /// An L1D hit; waiting for the fill of its line in flight to be granted.
    FillOwner,
    /// Translated and its data known: it can retire.
    Done,
}

/// A reference read (dispatched) but not yet retired, under `time_order`.
///
/// Two cache lines, aligned: the model's host time went largely to cache misses on the
/// records between a reference's read and its grants, so the record holds only what the
/// grants and retirement read (times first), and waiter links are reference numbers modulo
/// 2^32 (every reference linked is in flight, and far fewer than 2^32 are: see
/// [`TimeOrder::full`]).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(super) struct Pend {
    /// Dispatched and address known (raised when its dependence completes).
    pub(super) issue: f64,
    pub(super) xlat_done: f64,
    pub(super) data_done: f64,
    /// When it completes; NaN until known.
    pub(super) complete: f64,
    pub(super) dispatch_mem: f64,
    /// Dispatch of its group's first instruction (read for a new group only).
    pub(super) dispatch_first: f64,
    /// Completion of the walk (of the fill) in flight this reference may merge with: NaN while
    /// that walk (fill) is not granted, -inf when there is none.
    pub(super) walk_owner_done: f64,
    pub(super) fill_owner_done: f64,
    /// `CoreRef::xlat_cycles` and `CoreRef::walk_cycles`.
    pub(super) xlat_cycles: u64,
    pub(super) walk_cycles: u64,
    /// Instructions of its group (0: a further operand of the previous instruction).
    pub(super) n: u32,
    pub(super) data_cycles: u32,
    /// Its page's slot in `TimeOrder::walk_owners`, its line's in `TimeOrder::fill_owners`.
    pub(super) walk_slot: u16,
    pub(super) fill_slot: u16,
    pub(super) kind: AccessKind,
    pub(super) data_level: ServedBy,
    pub(super) stage: Stage,
    pub(super) new_group: bool,
    /// Heads of the lists of references waiting for this one to complete, for its walk, for
    /// its fill; and this reference's links in the lists it waits in.
    pub(super) dep_waiters: u32,
    pub(super) walk_waiters: u32,
    pub(super) fill_waiters: u32,
    pub(super) next_dep: u32,
    pub(super) next_walk: u32,
    pub(super) next_fill: u32,
    /// Its memory events in `TimeOrder::events` (see `memory.rs`): the first's number, and
    /// how many are its walk's and its data access's.
    pub(super) ev_start: u32,
    pub(super) walk_events: u16,
    pub(super) data_events: u8,
}

impl Default for Pend {
    /// A slot never used: a done reference with no waiters.
    fn default() -> Self {
        let none = CoreRef {
            kind: AccessKind::Load,
            vpn: 0,
            line: 0,
            instrs: 0,
            dep: 0,
            xlat_cycles: 0,
            walk_cycles: 0,
            data_cycles: 0,
            data_level: ServedBy::L1,
            walk_events: 0,
            data_events: 0,
        };
        Pend {
            xlat_done: 0.0,
            data_done: 0.0,
            complete: 0.0,
            stage: Stage::Done,
            ..Pend::read(&none, 0, true, 0.0, 0.0, 0.0)
        }
    }
}

impl Pend {
    /// The record of reference `r` as it is read: dispatched (its group of `n` instructions
    /// from `dispatch_first`, the reference at `dispatch_mem`), issuing at `issue`, nothing
    /// known yet (times NaN, stage `Dep`), waiting in no list.
    #[inline(always)]
    pub(super) fn read(
        r: &CoreRef,
        n: u32,
        new_group: bool,
        dispatch_first: f64,
        dispatch_mem: f64,
        issue: f64,
    ) -> Pend {
        Pend {
            issue,
            xlat_done: f64::NAN,
            data_done: f64::NAN,
            complete: f64::NAN,
            dispatch_mem,
            dispatch_first,
            walk_owner_done: f64::NEG_INFINITY,
            fill_owner_done: f64::NEG_INFINITY,
            xlat_cycles: r.xlat_cycles,
            walk_cycles: r.walk_cycles,
            n,
            data_cycles: r.data_cycles,
            walk_slot: InFlight::slot(r.vpn) as u16,
            fill_slot: InFlight::slot(r.line) as u16,
            kind: r.kind,
            data_level: r.data_level,
            stage: Stage::Dep,
            new_group,
            dep_waiters: NONE,
            walk_waiters: NONE,
            fill_waiters: NONE,
            next_dep: NONE,
            next_walk: NONE,
            next_fill: NONE,
            ev_start: 0,
            walk_events: r.walk_events,
            data_events: r.data_events,
        }
    }
}

/// The requests waiting for a grant under `time_order`: reference `r` asks at time `t` for a
/// walker (its stage `Walk`) or for MSHRs (its stage `Data`). Popped earliest request first,
/// ties in program order (a total order: `r` is unique), so the grants do not depend on how
/// the queue is kept.
///
/// Kept as two sorted double-ended queues, walk requests and data requests, rather than a
/// binary heap (whose pop, a sift through a dozen levels of unpredictable compares, took most
/// of a grant's host time): each kind arrives nearly in time order (walks at their dispatch;
/// data misses after their translation), so a request almost always joins its queue at the
/// back (or at the front, a request at the dispatch being read), both O(1); the rare one
/// between is placed by binary search. A pop takes the earlier of the two fronts.
#[derive(Clone, Debug)]
pub(super) struct RequestQueue {
    /// `(key of t, r)` sorted ascending; the key orders like `f64::total_cmp`.
    walks: VecDeque<(i64, u64)>,
    data: VecDeque<(i64, u64)>,
    /// The earliest request's time (infinity when none): read before every reference.
    earliest: f64,
}

impl RequestQueue {
    pub(super) fn with_capacity(n: usize) -> Self {
        RequestQueue {
            walks: VecDeque::with_capacity(n),
            data: VecDeque::with_capacity(n),
            earliest: f64::INFINITY,
        }
    }

    /// The integer that orders like `f64::total_cmp` (the same transformation; an involution).
    #[inline(always)]
    fn key(t: f64) -> i64 {
        let bits = t.to_bits() as i64;
        bits ^ (((bits >> 63) as u64) >> 1) as i64
    }

    #[inline(always)]
    fn time(key: i64) -> f64 {
        f64::from_bits(Self::key(f64::from_bits(key as u64)) as u64)
    }

    #[inline(always)]
    fn insert(q: &mut VecDeque<(i64, u64)>, e: (i64, u64)) {
        match q.back() {
            Some(&last) if e < last => {
                if e < q[0] {
                    q.push_front(e);
                } else {
                    let pos = q.partition_point(|&x| x < e);
                    q.insert(pos, e);
                }
            }
            _ => q.push_back(e),
        }
    }

    /// Request a walker (`walk`) or MSHRs at time `t` for reference `r`.
    #[inline]
    pub(super) fn push(&mut self, t: f64, r: u64, walk: bool) {
        let e = (Self::key(t), r);
        Self::insert(
            if walk {
                &mut self.walks
            } else {
                &mut self.data
            },
            e,
        );
        // `t` is the time of its key exactly (the key is an involution of the bits).
        self.earliest = fmin(self.earliest, t);
    }

    /// The earliest request's time; infinity when there is none.
    #[inline(always)]
    pub(super) fn earliest(&self) -> f64 {
        self.earliest
    }

    /// The earliest request `(t, r)`, removed.
    #[inline]
    pub(super) fn pop(&mut self) -> Option<(f64, u64)> {
        let q = match (self.walks.front(), self.data.front()) {
            (Some(w), Some(d)) if w < d => &mut self.walks,
            (Some(_), None) => &mut self.walks,
            _ => &mut self.data,
        };
        let (k, r) = q.pop_front()?;
        self.earliest = match (self.walks.front(), self.data.front()) {
            (Some(w), Some(d)) => Self::time(w.0.min(d.0)),
            (Some(e), None) | (None, Some(e)) => Self::time(e.0),
            (None, None) => f64::INFINITY,
        };
        Some((Self::time(k), r))
    }
}

/// What retirement needs of a reference that is done (under `time_order`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Retiring {
    pub(super) kind: AccessKind,
    pub(super) n: u32,
    pub(super) new_group: bool,
    pub(super) dispatch_first: f64,
    pub(super) issue: f64,
    pub(super) xlat_done: f64,
    pub(super) data_done: f64,
    pub(super) complete: f64,
}

/// State of `core.resource_grant = "time_order"`.
///
/// References are read in program order (dispatch, as under the other schemes) but their
/// walker and MSHR requests wait in a queue and are granted in the time order of the requests,
/// each to the unit free earliest (first come, first served, as hardware arbitrates). A grant
/// is made only when it can no longer be preceded by an earlier request:
/// - a reference not read yet requests no earlier than its dispatch, which is no earlier than
///   the last dispatch, and a request that follows from a grant (the data miss after a walk, a
///   load that waited for this one) comes no earlier than that grant's request;
/// - so the queue is served lazily, only as far as the next reference's dispatch needs (the
///   retirement of the instruction a ROB, load-queue or store-queue entry frees; an
///   instruction fetch's line): everything granted then was requested no later than that
///   retirement, and every later request comes after it.
///
/// Grants are therefore made in non-decreasing request time (a test checks it), except an
/// instruction fetch's: it issues at the previous reference's dispatch (ahead of its own), and
/// its grants are made at once (the instructions after it wait for its line), so it may ask
/// for a time before grants already made and is then served at the earliest free unit.
///
/// The references read but not retired (the window) are at most `window_mask` (the ROB bounds
/// them anyway: a reference further back is retired to make room). Their records are kept in
/// the `pend` ring, which starts small and doubles when the window outgrows it (so that the
/// records in use stay in the host's nearest caches); a dependence reaches `window_mask`
/// references back, to a retired reference's completion in `OooCore::done`.
#[derive(Clone, Debug)]
pub(super) struct TimeOrder {
    pub(super) pend: Vec<Pend>,
    /// `pend.len() - 1` (a power of two minus one).
    pub(super) mask: u64,
    pub(super) window_mask: u64,
    pub(super) queue: RequestQueue,
    /// References retired, and the instructions, loads and stores among them.
    pub(super) retired: u64,
    pub(super) retired_instrs: u64,
    pub(super) retired_loads: u64,
    pub(super) retired_stores: u64,
    /// Per page (per line) slot: the latest reference in program order that walks it (misses
    /// on it), and when that walk (fill) completes, NaN while not granted. A collision loses a
    /// merge, as in [`InFlight`].
    pub(super) walk_owners: Vec<(u64, u64, f64)>,
    pub(super) fill_owners: Vec<(u64, u64, f64)>,
    /// References whose wait just ended, to be carried on.
    pub(super) work: Vec<u64>,
    /// Latest request granted, and grants made for an earlier request after it (always 0;
    /// tests check it).
    pub(super) last_grant: f64,
    pub(super) grants_back_in_time: u64,
    /// The memory events of the references read and not retired.
    pub(super) events: EventQueue,
}

/// Records the `pend` ring starts with (it doubles as needed, up to the window).
const PEND_START: usize = 128;

impl TimeOrder {
    pub(super) fn new(window: usize) -> Self {
        let window = window.max(2).next_power_of_two();
        let len = window.min(PEND_START);
        TimeOrder {
            pend: vec![Pend::default(); len],
            mask: len as u64 - 1,
            window_mask: window as u64 - 1,
            queue: RequestQueue::with_capacity(len),
            retired: 0,
            retired_instrs: 0,
            retired_loads: 0,
            retired_stores: 0,
            walk_owners: vec![(u64::MAX, 0, 0.0); IN_FLIGHT_SLOTS],
            fill_owners: vec![(u64::MAX, 0, 0.0); IN_FLIGHT_SLOTS],
            work: Vec::with_capacity(len),
            last_grant: 0.0,
            grants_back_in_time: 0,
            events: EventQueue::default(),
        }
    }

    #[inline(always)]
    pub(super) fn p(&mut self, i: u64) -> &mut Pend {
        &mut self.pend[(i & self.mask) as usize]
    }

    /// The reference number whose low 32 bits are `link`: every reference linked is in
    /// flight, at most `window_mask` (far below 2^31) past the oldest not retired.
    #[inline(always)]
    fn full(&self, link: u32) -> u64 {
        self.retired + link.wrapping_sub(self.retired as u32) as u64
    }

    /// Double the `pend` ring, keeping the records of references `retired..read`.
    #[cold]
    #[inline(never)]
    pub(super) fn grow(&mut self, read: u64) {
        let len = self.pend.len() * 2;
        let mask = len as u64 - 1;
        let mut pend = vec![Pend::default(); len];
        for i in self.retired..read {
            pend[(i & mask) as usize] = self.pend[(i & self.mask) as usize];
        }
        self.pend = pend;
        self.mask = mask;
    }

    /// When reference `d` (at most `window_mask` before the one being read) completes; NaN
    /// while not known. `done` is `OooCore::done` (retired references' completions).
    #[inline(always)]
    pub(super) fn completion(&mut self, d: u64, done: &Ring<f64>) -> f64 {
        if d >= self.retired {
            self.p(d).complete
        } else {
            done.get(d)
        }
    }

    /// Keep the record of reference `idx` (`r`), settled but not retired: its times
    /// `[dispatch_first, dispatch_mem, issue, xlat_done, data_done, complete]` and the
    /// completions of the walk and the fill it merged with.
    #[inline(never)]
    pub(super) fn park_done(
        &mut self,
        r: &CoreRef,
        idx: u64,
        times: [f64; 6],
        owners: [f64; 2],
        n: u32,
        new_group: bool,
    ) {
        let [dispatch_first, dispatch_mem, issue, xlat_done, data_done, complete] = times;
        *self.p(idx) = Pend {
            xlat_done,
            data_done,
            complete,
            walk_owner_done: owners[0],
            fill_owner_done: owners[1],
            stage: Stage::Done,
            ..Pend::read(r, n, new_group, dispatch_first, dispatch_mem, issue)
        };
    }

    /// Carry on the waiters of `e`'s completion (its `complete` is set).
    #[inline]
    pub(super) fn wake_dep(&mut self, e: u64) {
        let done = self.p(e).complete;
        let mut w = std::mem::replace(&mut self.p(e).dep_waiters, NONE);
        while w != NONE {
            let full = self.full(w);
            let p = self.p(full);
            p.issue = fmax(p.issue, done);
            let next = std::mem::replace(&mut p.next_dep, NONE);
            self.work.push(full);
            w = next;
        }
    }

    /// Give the references merging with `e`'s walk (fill) its completion.
    #[inline]
    pub(super) fn wake_owner(&mut self, e: u64, walk: bool) {
        let done = if walk {
            self.p(e).xlat_done
        } else {
            self.p(e).data_done
        };
        let head = if walk {
            &mut self.p(e).walk_waiters
        } else {
            &mut self.p(e).fill_waiters
        };
        let mut w = std::mem::replace(head, NONE);
        while w != NONE {
            let full = self.full(w);
            let p = self.p(full);
            let next = if walk {
                p.walk_owner_done = done;
                std::mem::replace(&mut p.next_walk, NONE)
            } else {
                p.fill_owner_done = done;
                std::mem::replace(&mut p.next_fill, NONE)
            };
            let parked = if walk {
                Stage::WalkOwner
            } else {
                Stage::FillOwner
            };
            if p.stage == parked {
                self.work.push(full);
            }
            w = next;
        }
    }
}
