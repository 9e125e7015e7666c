//! Scheduling each reference and granting its resources. Under `program_order` and
//! `idle_gaps` one pass per reference ([`OooCore::account`]): dispatch, issue, the walk on a
//! walker, the data miss on one MSHR of every level it passes (granted on the spot, to the
//! earliest free unit or the earliest idle interval), retirement. Under `time_order` a
//! reference is read (dispatched), its requests queue, and the queue is granted in request-time
//! order only as far as the next dispatch needs, carrying each reference on as its grants come.
//!
//! Contract: under `time_order` grants are made in non-decreasing request time (an instruction
//! fetch excepted, see [`TimeOrder`]); every scheme merges a reference with the walk and the fill
//! in flight before it in program order. It calls `rob.rs` (retirement) and names `state.rs`,
//! `core_ref.rs`, `base.rs`, `pools.rs` and `time_order.rs`.

use super::base::fmax;
use super::core_ref::CoreRef;
use super::pools::{miss_levels, InFlight, Pool};
use super::state::OooCore;
use super::time_order::{Pend, Retiring, Stage, TimeOrder};
use crate::mem::{MemEvent, ServedBy};
use crate::trace::AccessKind;

impl OooCore {
    /// Account one reference (in program order) under `program_order` or `idle_gaps`.
    #[inline]
    pub(super) fn account(&mut self, r: &CoreRef, ev: &[MemEvent]) {
        let n = r.instrs as u64;
        let is_mem = r.kind != AccessKind::IFetch;
        // Dispatch of the instructions up to this reference.
        let new_group = n > 0 || self.refs == 0 || !is_mem;
        let n = if new_group { n.max(1) } else { 0 };
        let (first, dispatch_first, mut dispatch_mem) = if new_group {
            let first = self.instrs;
            let mut d = fmax(self.last_dispatch + self.inv_dispatch, self.fetch_ready);
            let rob_free = self.retired_at(first as i64 - self.rob as i64);
            if rob_free > d {
                self.c.rob_full_cycles += rob_free - d;
                d = rob_free;
            }
            let last = first + n - 1;
            let mut dm = d + (n - 1) as f64 * self.inv_dispatch;
            if n > 1 {
                let rob_free = self.retired_at(last as i64 - self.rob as i64);
                if rob_free > dm {
                    self.c.rob_full_cycles += rob_free - dm;
                    dm = rob_free;
                }
            }
            (first, d, dm)
        } else {
            (self.instrs, self.last_dispatch, self.last_dispatch)
        };
        match r.kind {
            AccessKind::Load => {
                // The entry of the load `lq_entries` earlier (the ring holds at least that many).
                let free = self.lq.get(self.loads.wrapping_sub(self.lq_len));
                if self.loads >= self.lq_len && free > dispatch_mem {
                    self.c.lq_full_cycles += free - dispatch_mem;
                    dispatch_mem = free;
                }
            }
            AccessKind::Store => {
                let free = self.sq.get(self.stores.wrapping_sub(self.sq_len));
                if self.stores >= self.sq_len && free > dispatch_mem {
                    self.c.sq_full_cycles += free - dispatch_mem;
                    dispatch_mem = free;
                }
            }
            AccessKind::IFetch => {}
        }

        // Issue: dispatched and address known.
        let mut issue = if is_mem {
            dispatch_mem
        } else {
            // An instruction fetch happens ahead of the dispatch of what it fetches.
            fmax(self.last_dispatch, 0.0)
        };
        if r.dep > 0 && (r.dep as u64) < self.done.len() {
            issue = fmax(issue, self.done.get(self.refs - r.dep as u64));
        }

        // Translation.
        let xlat_done = if r.walk_cycles > 0 {
            let request = issue + (r.xlat_cycles - r.walk_cycles) as f64;
            let len = r.walk_cycles as f64;
            let (start, len) = match &mut self.walkers {
                Pool::Earliest(units) => {
                    let start = fmax(request, units.earliest());
                    let len = len + self.walk_extra(&ev[..r.walk_events as usize], start, r);
                    let Pool::Earliest(units) = &mut self.walkers else {
                        unreachable!("the pool is the one just read");
                    };
                    units.take_until(start + len);
                    (start, len)
                }
                Pool::Gaps(slots) => {
                    let (start, unit) = slots.fit(request, len, self.last_dispatch);
                    slots.take(unit, start, len);
                    (start, len)
                }
            };
            let done = start + len;
            self.c.walker_queue_cycles += start - request;
            self.c.walk_busy_cycles += r.walk_cycles as f64;
            self.c.walks += 1;
            self.walks.record(r.vpn, done);
            done
        } else {
            let done = issue + r.xlat_cycles as f64;
            match self.walks.pending(r.vpn, done) {
                Some(w) => {
                    self.c.walk_merges += 1;
                    w
                }
                None => done,
            }
        };

        // Data.
        let data_done = if r.data_level == ServedBy::L1 {
            let done = xlat_done + r.data_cycles as f64;
            match self.fills.pending(r.line, xlat_done) {
                Some(f) if f > done => {
                    self.c.line_merges += 1;
                    f
                }
                _ => done,
            }
        } else {
            let levels = miss_levels(r.data_level);
            let len = r.data_cycles as f64;
            let (start, len) = if self.gaps {
                let data_ev = &ev[r.walk_events as usize..];
                let start = self.grant_mshrs_in_gaps(levels, xlat_done, len);
                // Under `idle_gaps` the prefetch wait extends the miss, not its reservation.
                let len = if data_ev.is_empty() || !self.prefetching {
                    len
                } else {
                    let len = self.prefetch_wait(data_ev, start, len);
                    self.issue_prefetches(data_ev, start);
                    len
                };
                (start, len)
            } else {
                self.grant_data_miss(levels, xlat_done, len, &ev[r.walk_events as usize..])
            };
            let done = start + len;
            self.c.mshr_wait_cycles += start - xlat_done;
            self.c.miss_busy_cycles += len - self.l1d_hit_cycles;
            self.fills.record(r.line, done);
            done
        };

        if !is_mem {
            // The fetched instructions dispatch once their line arrives (an L1I hit is
            // pipelined, so only the part beyond an L1 hit stalls the front end).
            self.fetch_ready = fmax(fmax(self.fetch_ready, data_done - self.l1d_hit_cycles), 0.0);
        }
        let complete = fmax(
            match r.kind {
                AccessKind::Load => data_done,
                AccessKind::Store => xlat_done,
                AccessKind::IFetch => dispatch_mem + 1.0,
            },
            dispatch_mem + 1.0,
        );

        // Retirement, in order.
        let retire_before = self.last_retire;
        let head_at = if new_group {
            let prefix_last = if n > 1 {
                self.nonmem_retire(retire_before, dispatch_first, n - 2)
            } else {
                retire_before
            };
            prefix_last + self.inv_retire
        } else {
            retire_before
        };
        let retire = fmax(head_at, complete);
        if retire > head_at && is_mem {
            // Stall at the ROB head: while translating, then while fetching the data.
            let overlap = |a: f64, b: f64| fmax(b.min(retire) - fmax(a, head_at), 0.0);
            self.c.head_translation_cycles += overlap(issue, xlat_done);
            if r.kind == AccessKind::Load {
                self.c.head_data_cycles += overlap(xlat_done, data_done);
            }
        }
        if new_group {
            self.record_group(first, n, retire_before, dispatch_first, retire);
        } else {
            // A further operand: the instruction retires with it.
            self.retire_times.set(self.recorded - 1, retire);
        }
        self.instrs = first + n;
        self.last_dispatch = dispatch_mem;
        self.last_retire = retire;
        match r.kind {
            AccessKind::Load => {
                self.lq.set(self.loads, retire);
                self.loads += 1;
            }
            AccessKind::Store => {
                let drain = fmax(fmax(retire, data_done), self.last_drain + 1.0);
                self.sq.set(self.stores, drain);
                self.last_drain = drain;
                self.stores += 1;
            }
            AccessKind::IFetch => {}
        }
        self.done.set(self.refs, complete);
        self.refs += 1;
    }

    /// Under `idle_gaps`: the earliest start at or after `request` at which one MSHR of every
    /// pool of the first `levels` levels is idle for `len` cycles, reserved on each. Each pool's
    /// earliest fit only moves the start later, to the end of an interval, so the search ends.
    fn grant_mshrs_in_gaps(&mut self, levels: usize, request: f64, len: f64) -> f64 {
        let horizon = self.last_dispatch;
        let mut start = request;
        let mut units = [0usize; 3];
        let mut pools = 0;
        loop {
            let mut moved = false;
            for (k, pool) in self.mshrs[..levels].iter_mut().enumerate() {
                if let Some(Pool::Gaps(slots)) = pool {
                    let (s, unit) = slots.fit(start, len, horizon);
                    units[k] = unit;
                    pools += 1;
                    if s > start {
                        start = s;
                        moved = true;
                    }
                }
            }
            // One pool: its fit is the answer. Several: a pass in which none moved the start
            // found a unit idle at `start` in every pool.
            if !moved || pools == 1 {
                break;
            }
        }
        for (k, pool) in self.mshrs[..levels].iter_mut().enumerate() {
            if let Some(Pool::Gaps(slots)) = pool {
                slots.take(units[k], start, len);
            }
        }
        start
    }

    /// The cycles a walk of reference `r` granted at `start` takes beyond its idle latency
    /// (`memory.rs`): 0 without a controller or events.
    #[inline(always)]
    fn walk_extra(&mut self, walk_events: &[MemEvent], start: f64, r: &CoreRef) -> f64 {
        if r.walk_events == 0 || self.dram.is_none() {
            return 0.0;
        }
        self.time_walk(walk_events, start)
    }

    /// Under `program_order` and `time_order`, a data miss of idle latency `len` through the
    /// first `levels` levels, with its memory events `ev` (none under the idle model):
    /// [`OooCore::grant_mshrs_earliest`], the MSHRs held as long as the miss takes at its
    /// time (`memory.rs`). Returns the start and that length.
    #[inline(always)]
    fn grant_data_miss(
        &mut self,
        levels: usize,
        request: f64,
        len: f64,
        ev: &[MemEvent],
    ) -> (f64, f64) {
        if self.dram.is_none() && (ev.is_empty() || !self.prefetching) {
            return (self.grant_mshrs_earliest(levels, request, len), len);
        }
        let n = self.mshr_pools_upto[levels];
        let mut start = request;
        for units in &self.mshr_units[..n] {
            start = fmax(start, units.earliest());
        }
        let len = if ev.is_empty() {
            len
        } else {
            // Under the idle DRAM model the events are the prefetcher's only.
            let len = if self.dram.is_some() {
                self.data_miss_len(ev, start, len)
            } else {
                len
            };
            if self.prefetching {
                self.prefetch_wait(ev, start, len)
            } else {
                len
            }
        };
        let counted = self.dram.is_some();
        for (k, units) in self.mshr_units[..n].iter_mut().enumerate() {
            units.take_until(start + len);
            if counted {
                self.m.mshr_data_cycles[k] += len;
            }
        }
        if self.prefetching && !ev.is_empty() {
            self.issue_prefetches(ev, start);
        }
        (start, len)
    }

    /// Under `program_order` and `time_order`: one MSHR of every pool of the first `levels`
    /// levels, from the earliest time at or after `request` all are free, each taken for `len`
    /// cycles; returns the start.
    #[inline(always)]
    fn grant_mshrs_earliest(&mut self, levels: usize, request: f64, len: f64) -> f64 {
        let pools = &mut self.mshr_units[..self.mshr_pools_upto[levels]];
        let mut start = request;
        for units in pools.iter() {
            start = fmax(start, units.earliest());
        }
        for units in pools.iter_mut() {
            units.take_until(start + len);
        }
        start
    }
}

impl OooCore {
    /// `time_order`: read reference `r` (in program order): dispatch it, queue what it requests.
    #[inline(always)]
    pub(super) fn front_in_time_order(&mut self, t: &mut TimeOrder, r: &CoreRef, ev: &[MemEvent]) {
        let idx = self.refs;
        // Keep the window within `window_mask` (the ROB bounds it anyway), and within the ring.
        while idx - t.retired >= t.window_mask {
            self.retire_one_in_time_order(t);
        }
        while idx - t.retired >= t.mask {
            t.grow(idx);
        }
        let n = r.instrs as u64;
        let is_mem = r.kind != AccessKind::IFetch;
        let new_group = n > 0 || idx == 0 || !is_mem;
        let n = if new_group { n.max(1) } else { 0 };
        let (first, dispatch_first, mut dispatch_mem) = if new_group {
            let first = self.instrs;
            let mut d = fmax(self.last_dispatch + self.inv_dispatch, self.fetch_ready);
            let rob_free = self.retired_at_in_time_order(t, first as i64 - self.rob as i64);
            if rob_free > d {
                self.c.rob_full_cycles += rob_free - d;
                d = rob_free;
            }
            let last = first + n - 1;
            let mut dm = d + (n - 1) as f64 * self.inv_dispatch;
            if n > 1 {
                let rob_free = self.retired_at_in_time_order(t, last as i64 - self.rob as i64);
                if rob_free > dm {
                    self.c.rob_full_cycles += rob_free - dm;
                    dm = rob_free;
                }
            }
            (first, d, dm)
        } else {
            // A further operand of the previous instruction; if that was an instruction
            // fetch, not before its line arrived (so requests never precede its grants).
            let d = fmax(self.last_dispatch, self.fetch_ready);
            (self.instrs, d, d)
        };
        match r.kind {
            AccessKind::Load if self.loads >= self.lq_len => {
                let k = self.loads - self.lq_len;
                while t.retired_loads <= k {
                    self.retire_one_in_time_order(t);
                }
                let free = self.lq.get(k);
                if free > dispatch_mem {
                    self.c.lq_full_cycles += free - dispatch_mem;
                    dispatch_mem = free;
                }
            }
            AccessKind::Store if self.stores >= self.sq_len => {
                let k = self.stores - self.sq_len;
                while t.retired_stores <= k {
                    self.retire_one_in_time_order(t);
                }
                let free = self.sq.get(k);
                if free > dispatch_mem {
                    self.c.sq_full_cycles += free - dispatch_mem;
                    dispatch_mem = free;
                }
            }
            _ => {}
        }
        let issue = if is_mem {
            dispatch_mem
        } else {
            fmax(self.last_dispatch, 0.0)
        };
        // No request can come earlier than `issue` any more: this reference's are no earlier,
        // nor are those of the references after it (their dispatch is no earlier than this
        // one's), nor those following from a grant (no earlier than the granted request). So
        // the requests up to `issue` are granted now, in the order they would be granted
        // later; granting early only keeps the queue short and lets a reference whose request
        // comes at its dispatch be granted as soon as it is read.
        self.grant_until(t, issue);
        let n = n as u32;
        if is_mem && r.walk_cycles == 0 && ev.is_empty() {
            while t.retired < idx && t.p(t.retired).stage == Stage::Done {
                self.retire_one_in_time_order(t);
            }
            if self.settle_at_once(t, r, idx, new_group, n, dispatch_first, dispatch_mem) {
                self.instrs = first + n as u64;
                return;
            }
        }
        let ws = InFlight::slot(r.vpn);
        let fs = InFlight::slot(r.line);
        *t.p(idx) = Pend::read(r, n, new_group, dispatch_first, dispatch_mem, issue);
        if !ev.is_empty() {
            let first = t.events.push(ev);
            t.p(idx).ev_start = first;
        }
        // The walk and the fill in flight this reference merges with are the latest ones
        // before it in program order, as under the other schemes.
        if r.walk_cycles > 0 {
            t.walk_owners[ws] = (r.vpn, idx, f64::NAN);
        } else if t.walk_owners[ws].0 == r.vpn {
            let (_, e, done) = t.walk_owners[ws];
            if done.is_nan() {
                let head = std::mem::replace(&mut t.p(e).walk_waiters, idx as u32);
                let p = t.p(idx);
                p.next_walk = head;
                p.walk_owner_done = f64::NAN;
            } else {
                t.p(idx).walk_owner_done = done;
            }
        }
        if r.data_level != ServedBy::L1 {
            t.fill_owners[fs] = (r.line, idx, f64::NAN);
        } else if t.fill_owners[fs].0 == r.line {
            let (_, e, done) = t.fill_owners[fs];
            if done.is_nan() {
                let head = std::mem::replace(&mut t.p(e).fill_waiters, idx as u32);
                let p = t.p(idx);
                p.next_fill = head;
                p.fill_owner_done = f64::NAN;
            } else {
                t.p(idx).fill_owner_done = done;
            }
        }
        self.instrs = first + n as u64;
        self.last_dispatch = dispatch_mem;
        self.refs += 1;
        match r.kind {
            AccessKind::Load => self.loads += 1,
            AccessKind::Store => self.stores += 1,
            AccessKind::IFetch => {}
        }
        let mut parked = false;
        if r.dep > 0 && (r.dep as u64) <= t.window_mask {
            let d = idx - r.dep as u64;
            let done = t.completion(d, &self.done);
            if done.is_nan() {
                let head = std::mem::replace(&mut t.p(d).dep_waiters, idx as u32);
                t.p(idx).next_dep = head;
                parked = true;
            } else {
                let p = t.p(idx);
                p.issue = fmax(p.issue, done);
            }
        }
        if !parked {
            t.work.push(idx);
            self.carry_on(t);
            self.grant_until(t, issue);
        }
        if !is_mem {
            // The fetched instructions dispatch once their line arrives.
            while t.p(idx).stage != Stage::Done {
                self.grant_next(t);
            }
            let data_done = t.p(idx).data_done;
            self.fetch_ready = fmax(fmax(self.fetch_ready, data_done - self.l1d_hit_cycles), 0.0);
        }
        while t.retired < self.refs && t.p(t.retired).stage == Stage::Done {
            self.retire_one_in_time_order(t);
        }
    }

    /// `time_order`'s common case, settled as it is read: reference `r` (number `idx`,
    /// dispatched at `dispatch_mem`, the queue granted up to then) walks not, and the walk, the
    /// fill and the reference it may wait for are complete. If it also needs no grant later
    /// than its dispatch (an L1D hit, or a miss requested at its dispatch, which no request can
    /// precede any more, see the caller), the general path would settle it at once (and
    /// retire it if every reference before it has retired): do the same without the work list
    /// and the queue, and return true (the caller counts its instructions). Otherwise change
    /// nothing and return false.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn settle_at_once(
        &mut self,
        t: &mut TimeOrder,
        r: &CoreRef,
        idx: u64,
        new_group: bool,
        n: u32,
        dispatch_first: f64,
        dispatch_mem: f64,
    ) -> bool {
        let ws = InFlight::slot(r.vpn);
        let fs = InFlight::slot(r.line);
        let walk_owner_done = match t.walk_owners[ws] {
            (vpn, _, done) if vpn == r.vpn => done,
            _ => f64::NEG_INFINITY,
        };
        let miss = r.data_level != ServedBy::L1;
        let fill_owner_done = match t.fill_owners[fs] {
            (line, _, done) if !miss && line == r.line => done,
            _ => f64::NEG_INFINITY,
        };
        let dep_done = if r.dep > 0 && (r.dep as u64) <= t.window_mask {
            t.completion(idx - r.dep as u64, &self.done)
        } else {
            f64::NEG_INFINITY
        };
        if walk_owner_done.is_nan() || fill_owner_done.is_nan() || dep_done.is_nan() {
            return false;
        }
        let issue = fmax(dispatch_mem, dep_done);
        let own_xlat = issue + r.xlat_cycles as f64;
        let walk_merge = walk_owner_done > own_xlat;
        let xlat_done = if walk_merge {
            walk_owner_done
        } else {
            own_xlat
        };
        if miss && xlat_done > dispatch_mem {
            return false;
        }
        self.c.walk_merges += walk_merge as u64;
        self.last_dispatch = dispatch_mem;
        self.refs += 1;
        match r.kind {
            AccessKind::Load => self.loads += 1,
            _ => self.stores += 1,
        }
        let data_done = if miss {
            t.fill_owners[fs] = (r.line, idx, f64::NAN);
            if xlat_done < t.last_grant {
                t.grants_back_in_time += 1;
            }
            t.last_grant = fmax(t.last_grant, xlat_done);
            self.grant_data(t, xlat_done, idx, r.data_level, r.data_cycles, fs, false)
        } else {
            let own = xlat_done + r.data_cycles as f64;
            if fill_owner_done > own {
                self.c.line_merges += 1;
                fill_owner_done
            } else {
                own
            }
        };
        let complete = match r.kind {
            AccessKind::Store => fmax(xlat_done, dispatch_mem + 1.0),
            _ => fmax(data_done, dispatch_mem + 1.0),
        };
        let x = Retiring {
            kind: r.kind,
            n,
            new_group,
            dispatch_first,
            issue,
            xlat_done,
            data_done,
            complete,
        };
        if t.retired == idx {
            // Later references read its completion from `done`, where retiring puts it.
            self.retire_record(t, &x);
        } else {
            // Retired later, in order, from the pending record; nothing waits on it (its
            // completion and its fill are known), so its waiter lists stay empty.
            t.park_done(
                r,
                idx,
                [
                    dispatch_first,
                    dispatch_mem,
                    issue,
                    xlat_done,
                    data_done,
                    complete,
                ],
                [walk_owner_done, fill_owner_done],
                n,
                new_group,
            );
        }
        true
    }

    /// Carry every reference of the work list as far as it goes without a grant.
    fn carry_on(&mut self, t: &mut TimeOrder) {
        // The pending record is read and written in place, field by field: copying the whole
        // record (as a snapshot) cost more than the rest of the step.
        while let Some(i) = t.work.pop() {
            let p = t.p(i);
            match p.stage {
                Stage::Dep => {
                    if p.walk_cycles > 0 {
                        p.stage = Stage::Walk;
                        let request = p.issue + (p.xlat_cycles - p.walk_cycles) as f64;
                        t.queue.push(request, i, true);
                    } else {
                        p.xlat_done = p.issue + p.xlat_cycles as f64;
                        if p.walk_owner_done.is_nan() {
                            p.stage = Stage::WalkOwner;
                        } else {
                            self.translated(t, i);
                        }
                    }
                }
                Stage::WalkOwner => self.translated(t, i),
                Stage::FillOwner => self.data_known(t, i),
                stage @ (Stage::Walk | Stage::Data | Stage::Done) => {
                    unreachable!("reference {i} woken in stage {stage:?}")
                }
            }
        }
    }

    /// Reference `i` has its own translation time; merge with the walk of its page in flight
    /// (if any), then request its data.
    #[inline]
    fn translated(&mut self, t: &mut TimeOrder, i: u64) {
        let p = t.p(i);
        if p.walk_cycles == 0 && p.walk_owner_done > p.xlat_done {
            p.xlat_done = p.walk_owner_done;
            self.c.walk_merges += 1;
        }
        let xlat_done = p.xlat_done;
        if p.kind == AccessKind::Store {
            // A store completes when translated.
            p.complete = fmax(xlat_done, p.dispatch_mem + 1.0);
            t.wake_dep(i);
        }
        let p = t.p(i);
        if p.data_level == ServedBy::L1 {
            p.data_done = xlat_done + p.data_cycles as f64;
            if p.fill_owner_done.is_nan() {
                p.stage = Stage::FillOwner;
            } else {
                self.data_known(t, i);
            }
        } else {
            p.stage = Stage::Data;
            t.queue.push(xlat_done, i, false);
        }
    }

    /// Reference `i`'s data time is known (for an L1D hit, before merging with a fill).
    #[inline]
    fn data_known(&mut self, t: &mut TimeOrder, i: u64) {
        let p = t.p(i);
        if p.data_level == ServedBy::L1 && p.fill_owner_done > p.data_done {
            p.data_done = p.fill_owner_done;
            self.c.line_merges += 1;
        }
        p.stage = Stage::Done;
        if p.kind != AccessKind::Store {
            let own = match p.kind {
                AccessKind::Load => p.data_done,
                _ => p.dispatch_mem + 1.0,
            };
            p.complete = fmax(own, p.dispatch_mem + 1.0);
            t.wake_dep(i);
        }
    }

    /// Grant every request up to time `until` (see the caller for why that is safe).
    #[inline(never)]
    fn grant_until(&mut self, t: &mut TimeOrder, until: f64) {
        while t.queue.earliest() <= until {
            self.grant_next(t);
        }
    }

    /// Grant the earliest request in the queue and carry on what follows from it.
    pub(super) fn grant_next(&mut self, t: &mut TimeOrder) {
        let Some((request, i)) = t.queue.pop() else {
            unreachable!("time_order: a reference waits but nothing is requested");
        };
        let p = t.p(i);
        let (kind, stage, walk_cycles, ws) = (p.kind, p.stage, p.walk_cycles, p.walk_slot);
        let (level, data_cycles, fs) = (p.data_level, p.data_cycles, p.fill_slot);
        // An instruction fetch issues at the previous reference's dispatch, ahead of its own,
        // so it alone may ask for a time before grants already made (see `TimeOrder`).
        if kind != AccessKind::IFetch {
            if request < t.last_grant {
                t.grants_back_in_time += 1;
            }
            t.last_grant = fmax(t.last_grant, request);
        }
        if stage == Stage::Walk {
            let ws = ws as usize;
            let len = walk_cycles as f64;
            let Pool::Earliest(units) = &mut self.walkers else {
                unreachable!("time_order pools are first come, first served");
            };
            let start = fmax(request, units.earliest());
            let p = t.p(i);
            let (first, n) = (p.ev_start, p.walk_events as usize);
            let len = if n > 0 && self.dram.is_some() {
                let mut ev = std::mem::take(&mut self.scratch);
                t.events.get(first, n, &mut ev);
                let extra = self.time_walk(&ev, start);
                self.scratch = ev;
                len + extra
            } else {
                len
            };
            let Pool::Earliest(units) = &mut self.walkers else {
                unreachable!("time_order pools are first come, first served");
            };
            units.take_until(start + len);
            let done = start + len;
            self.c.walker_queue_cycles += start - request;
            self.c.walk_busy_cycles += len;
            self.c.walks += 1;
            t.p(i).xlat_done = done;
            // The slot still names `i` unless a later walk of a page there took it over.
            if t.walk_owners[ws].1 == i {
                t.walk_owners[ws].2 = done;
            }
            t.wake_owner(i, true);
            self.translated(t, i);
        } else {
            debug_assert_eq!(stage, Stage::Data);
            let done = self.grant_data(t, request, i, level, data_cycles, fs as usize, true);
            t.p(i).data_done = done;
            t.wake_owner(i, false);
            self.data_known(t, i);
        }
        self.carry_on(t);
    }

    /// Grant reference `i`'s data miss (served at `level` in `data_cycles`, its line in slot
    /// `fill_slot` of the fill owners) requested at `request`: one MSHR of every level it
    /// passes, from the earliest time all are free; returns when the fill completes. `pending`:
    /// `i` has a pending record (whose memory events are timed); the fast path's has none.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn grant_data(
        &mut self,
        t: &mut TimeOrder,
        request: f64,
        i: u64,
        level: ServedBy,
        data_cycles: u32,
        fill_slot: usize,
        pending: bool,
    ) -> f64 {
        let len = data_cycles as f64;
        let (start, len) = if pending && (self.dram.is_some() || t.p(i).data_events > 0) {
            let p = t.p(i);
            let (first, n) = (
                p.ev_start.wrapping_add(p.walk_events as u32),
                p.data_events as usize,
            );
            let mut ev = std::mem::take(&mut self.scratch);
            t.events.get(first, n, &mut ev);
            let granted = self.grant_data_miss(miss_levels(level), request, len, &ev);
            self.scratch = ev;
            granted
        } else {
            self.grant_data_miss(miss_levels(level), request, len, &[])
        };
        let done = start + len;
        self.c.mshr_wait_cycles += start - request;
        self.c.miss_busy_cycles += len - self.l1d_hit_cycles;
        // The slot still names `i` unless a later miss on a line there took it over.
        if t.fill_owners[fill_slot].1 == i {
            t.fill_owners[fill_slot].2 = done;
        }
        done
    }
}
