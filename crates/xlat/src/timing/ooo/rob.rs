//! Retirement and the reorder buffer: the ring of retirement times a ROB check reads ("when did
//! instruction `k` retire?"), the retirement of a group of non-memory instructions and its
//! memory instruction, and, under `time_order`, in-order retirement of the pending references
//! (granting only as far as the oldest one needs).
//!
//! Contract: instructions retire in order, at most `core.retire_width` per cycle and never
//! before they complete; under `time_order` a question about instruction `k` retires (and so
//! grants) no further than needed to answer it. It calls `grants.rs` (to finish a reference
//! it retires) and names `state.rs`, `base.rs` and `time_order.rs`.

use super::base::fmax;
use super::state::OooCore;
use super::time_order::{Retiring, Stage, TimeOrder};
use crate::trace::AccessKind;

impl OooCore {
    /// When instruction `k` retired (or will); 0 for instructions before the start, the last
    /// retirement for an instruction not recorded yet (one of the group being dispatched).
    #[inline(always)]
    pub(super) fn retired_at(&self, k: i64) -> f64 {
        if k < 0 {
            0.0
        } else if (k as u64) < self.recorded {
            self.retire_times.get(k as u64)
        } else {
            self.last_retire
        }
    }

    /// Retire time of non-memory instruction `j` of a group dispatched from `dispatch_first`
    /// whose previous instruction retired at `retire_before`: in order after it at the retire
    /// width, and not before it completed (one cycle after its dispatch at the dispatch width).
    #[inline(always)]
    pub(super) fn nonmem_retire(&self, retire_before: f64, dispatch_first: f64, j: u64) -> f64 {
        // `i64`, not `u64`, to `f64`: one instruction below AVX-512 (the value is the same).
        fmax(
            retire_before + (j + 1) as i64 as f64 * self.inv_retire,
            dispatch_first + 1.0 + j as i64 as f64 * self.nonmem_step,
        )
    }

    /// Record the retirement of a group of `n` (>= 1) instructions from `first` (the next one
    /// not recorded): its non-memory instructions as [`OooCore::nonmem_retire`] says, its last
    /// (the memory instruction) at `retire`. Only the ring's length of them can still be asked
    /// for.
    #[inline(always)]
    pub(super) fn record_group(
        &mut self,
        first: u64,
        n: u64,
        retire_before: f64,
        dispatch_first: f64,
        retire: f64,
    ) {
        debug_assert_eq!(first, self.recorded);
        let len = self.retire_times.len();
        for j in (n - 1).saturating_sub(len)..n - 1 {
            let x = self.nonmem_retire(retire_before, dispatch_first, j);
            self.retire_times.set(first + j, x);
        }
        self.retire_times.set(first + n - 1, retire);
        self.recorded = first + n;
    }

    /// When instruction `k` retires, retiring (and so granting) only as far as needed.
    ///
    /// A non-memory instruction of a group retires at a time fixed by the retirement of the
    /// reference before the group and by the group's dispatch (`nonmem_retire`), not by the
    /// group's memory reference: it is answered without retiring that reference. Retiring it
    /// would grant requests up to its completion, possibly later than the dispatch this answer
    /// bounds, and a reference dispatched then would request a walker or an MSHR before grants
    /// already made (the defect the property test
    /// `time_order_grants_follow_request_time_and_keep_program_facts` found).
    #[inline(always)]
    pub(super) fn retired_at_in_time_order(&mut self, t: &mut TimeOrder, k: i64) -> f64 {
        if k < 0 {
            return 0.0;
        }
        // The common case: `k` retired, and not as the last instruction of the newest group
        // retired (whose further operands may still be to retire): nothing to retire.
        if (k as u64) + 1 < t.retired_instrs {
            return self.retired_at(k);
        }
        self.retire_until_instruction(t, k as u64)
    }

    /// [`OooCore::retired_at_in_time_order`] for an instruction `k` not surely retired yet.
    #[inline(never)]
    fn retire_until_instruction(&mut self, t: &mut TimeOrder, k: u64) -> f64 {
        while k >= t.retired_instrs {
            if t.retired == self.refs {
                // `k` is in the group being read (one longer than the ROB), after every
                // reference read: answered as under the other schemes (`retired_at`: the last
                // retirement), not by retiring past the references read (which never ended).
                break;
            }
            let first = t.retired_instrs;
            let p = t.p(t.retired);
            if k + 1 < first + p.n as u64 {
                // Every reference before this group has retired: `last_retire` is final.
                let dispatch_first = p.dispatch_first;
                return self.nonmem_retire(self.last_retire, dispatch_first, k - first);
            }
            self.retire_one_in_time_order(t);
        }
        // The last instruction of a group retires with the group's last operand: retire the
        // further operands (references of the same instruction) read after the group's first.
        while k + 1 == t.retired_instrs && t.retired < self.refs && !t.p(t.retired).new_group {
            self.retire_one_in_time_order(t);
        }
        self.retired_at(k as i64)
    }

    /// Retire the oldest reference not retired, granting requests until it is done.
    #[inline(never)]
    pub(super) fn retire_one_in_time_order(&mut self, t: &mut TimeOrder) {
        let idx = t.retired;
        // Past the references read, the ring holds stale records: retiring one would never end.
        assert!(
            idx < self.refs,
            "time_order: retiring reference {idx}, not read (only {} are)",
            self.refs
        );
        while t.p(idx).stage != Stage::Done {
            self.grant_next(t);
        }
        let p = t.p(idx);
        let events = p.walk_events as usize + p.data_events as usize;
        if events > 0 {
            let first = p.ev_start;
            t.events.release(first, events);
        }
        let p = t.p(idx);
        let done = Retiring {
            kind: p.kind,
            n: p.n,
            new_group: p.new_group,
            dispatch_first: p.dispatch_first,
            issue: p.issue,
            xlat_done: p.xlat_done,
            data_done: p.data_done,
            complete: p.complete,
        };
        self.retire_record(t, &done);
    }

    /// Retire the oldest reference not retired, `x`, which is done.
    #[inline(always)]
    pub(super) fn retire_record(&mut self, t: &mut TimeOrder, x: &Retiring) {
        let idx = t.retired;
        let Retiring {
            kind,
            n,
            new_group,
            dispatch_first,
            issue,
            xlat_done,
            data_done,
            complete,
        } = *x;
        let n = n as u64;
        // A new group starts at the first instruction not retired.
        let first = t.retired_instrs;
        let is_mem = kind != AccessKind::IFetch;
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
            let overlap = |a: f64, b: f64| fmax(b.min(retire) - fmax(a, head_at), 0.0);
            self.c.head_translation_cycles += overlap(issue, xlat_done);
            if kind == AccessKind::Load {
                self.c.head_data_cycles += overlap(xlat_done, data_done);
            }
        }
        if new_group {
            self.record_group(first, n, retire_before, dispatch_first, retire);
            t.retired_instrs = first + n;
        } else if self.recorded > 0 {
            // A further operand: the instruction retires with it.
            self.retire_times.set(self.recorded - 1, retire);
        }
        self.last_retire = retire;
        match kind {
            AccessKind::Load => {
                self.lq.set(t.retired_loads, retire);
                t.retired_loads += 1;
            }
            AccessKind::Store => {
                let drain = fmax(fmax(retire, data_done), self.last_drain + 1.0);
                self.sq.set(t.retired_stores, drain);
                self.last_drain = drain;
                t.retired_stores += 1;
            }
            AccessKind::IFetch => {}
        }
        self.done.set(idx, complete);
        t.retired += 1;
    }
}
