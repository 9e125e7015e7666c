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

impl OooCore {
    /// Take one reference (in program order); it is accounted with the next batch (see
    /// [`BATCH`]). Errors name the reference when its dependence points before the first
    /// reference.
    #[inline]
    pub fn reference(&mut self, r: &CoreRef) -> Result<(), String> {
        Self::check_dependence(r, self.given)?;
        self.given += 1;
        self.batch.push(*r);
        if self.batch.len() >= BATCH {
            self.account_batch();
        }
        Ok(())
    }

    /// Take references `refs` (in program order, after those taken so far) whose dependences
    /// the caller has checked as [`OooCore::reference`] checks them: the same as calling
    /// `reference` on each, without copying them into the batch first (the model's worker
    /// thread, [`CoreModel`](crate::timing::CoreModel), takes them so).
    pub fn take_refs(&mut self, refs: &[CoreRef]) {
        self.account_batch();
        self.given += refs.len() as u64;
        self.account_refs(refs);
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
        self.account_refs(&batch);
        batch.clear();
        self.batch = batch;
    }

    /// Account references `refs` (in program order, after those accounted so far).
    fn account_refs(&mut self, refs: &[CoreRef]) {
        if let Some(mut t) = self.tord.take() {
            self.account_in_time_order(&mut t, refs);
            self.tord = Some(t);
        } else {
            for r in refs {
                self.account(r);
            }
        }
    }

    /// Account references (in program order) under `time_order`.
    #[inline(never)]
    fn account_in_time_order(&mut self, t: &mut TimeOrder, batch: &[CoreRef]) {
        for r in batch {
            self.front_in_time_order(t, r);
        }
    }
}
