//! Taking references: [`OooCore::reference`] (one, its dependence checked) and
//! [`OooCore::take_refs`] (a checked slice, from the model's worker thread) queue them and
//! account them in batches of [`BATCH`](super::state::BATCH), each reference through the path
//! of the configured grant scheme (`grants.rs`).
//!
//! Contract: accounting a batch gives the same results as accounting each reference as it
//! comes (the model only reads the references, in program order). It calls `grants.rs`'s
//! per-reference entry points and names `state.rs`, `core_ref.rs` and `time_order.rs`.

use super::core_ref::CoreRef;
use super::state::{OooCore, BATCH};
use super::time_order::TimeOrder;
use crate::mem::MemEvent;

impl OooCore {
    /// Take one reference (in program order); it is accounted with the next batch (see
    /// `BATCH`). Errors name the reference when its dependence points before the first
    /// reference.
    #[inline]
    pub fn reference(&mut self, r: &CoreRef) -> Result<(), String> {
        self.reference_with(r, &[])
    }

    /// [`OooCore::reference`] with the reference's memory events (`r.events()` of them: its
    /// walk's, then its data access's; see `memory.rs`).
    #[inline]
    pub fn reference_with(&mut self, r: &CoreRef, events: &[MemEvent]) -> Result<(), String> {
        Self::check_dependence(r, self.given)?;
        debug_assert_eq!(r.events(), events.len());
        self.given += 1;
        self.batch.push(*r);
        if !events.is_empty() {
            self.batch_events.extend_from_slice(events);
        }
        if self.batch.len() >= BATCH {
            self.account_batch();
        }
        Ok(())
    }

    /// Take references `refs` (in program order, after those taken so far) whose dependences
    /// the caller has checked as [`OooCore::reference`] checks them: the same as calling
    /// `reference` on each, without copying them into the batch first (the model's worker
    /// thread, [`CoreModel`](crate::timing::CoreModel), takes them so).
    pub fn take_refs(&mut self, refs: &[CoreRef], events: &[MemEvent]) {
        self.account_batch();
        self.given += refs.len() as u64;
        self.account_refs(refs, events);
    }

    /// The error [`OooCore::reference`] gives for reference number `given` (0-based) whose
    /// dependence reaches before the first reference, if it does.
    #[inline(always)]
    pub(crate) fn check_dependence(r: &CoreRef, given: u64) -> Result<(), String> {
        if r.dep as u64 > given {
            return Err(format!(
                "reference #{given} depends on the reference {} before it, which is before the \
                 start of the trace",
                r.dep
            ));
        }
        Ok(())
    }

    /// Account every reference taken but not accounted yet.
    pub(super) fn account_batch(&mut self) {
        // Taken out and put back, so that its buffer is reused (no allocation).
        let mut batch = std::mem::take(&mut self.batch);
        let mut events = std::mem::take(&mut self.batch_events);
        self.account_refs(&batch, &events);
        batch.clear();
        events.clear();
        self.batch = batch;
        self.batch_events = events;
    }

    /// Account references `refs` (in program order, after those accounted so far).
    /// `events`: theirs, in order (`CoreRef::events` each).
    fn account_refs(&mut self, refs: &[CoreRef], events: &[MemEvent]) {
        if let Some(mut t) = self.tord.take() {
            self.account_in_time_order(&mut t, refs, events);
            self.tord = Some(t);
        } else {
            let mut at = 0;
            for r in refs {
                let n = r.events();
                self.account(r, &events[at..at + n]);
                at += n;
            }
        }
    }

    /// Account references (in program order) under `time_order`.
    #[inline(never)]
    fn account_in_time_order(&mut self, t: &mut TimeOrder, batch: &[CoreRef], events: &[MemEvent]) {
        let mut at = 0;
        for r in batch {
            let n = r.events();
            self.front_in_time_order(t, r, &events[at..at + n]);
            at += n;
        }
    }
}
