//! What the core needs to time the memory system under load (`memory.rs`): the queued DRAM
//! controller the cores share ([`DramHandle`]), the memory events of the references whose grants
//! are still to come ([`EventQueue`]) and the figures of the memory system ([`MemCounters`]).
//!
//! Contract: types and their bookkeeping only; it never names `OooCore` (`state.rs` and
//! `time_order.rs` hold these types, `memory.rs` uses them).

use crate::mem::dram::controller::DramController;
use crate::mem::MemEvent;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// The queued DRAM controller of a run, shared by its cores (every core's handle is a
/// [`DramHandle::share`] of one). `Clone` copies the controller (a snapshot of the core for its
/// record must not send its requests to the live one).
pub struct DramHandle(Arc<Mutex<DramController>>);

impl DramHandle {
    /// A handle to a new controller.
    pub fn new(c: DramController) -> Self {
        DramHandle(Arc::new(Mutex::new(c)))
    }

    /// Another handle to the same controller (another core of the same run).
    pub fn share(&self) -> Self {
        DramHandle(Arc::clone(&self.0))
    }

    /// Run `f` on the controller.
    pub fn with<R>(&self, f: impl FnOnce(&mut DramController) -> R) -> R {
        // A poisoned lock means a core panicked mid-request: the run is lost anyway.
        let mut c = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut c)
    }
}

impl Clone for DramHandle {
    fn clone(&self) -> Self {
        DramHandle::new(self.with(|c| c.clone()))
    }
}

impl std::fmt::Debug for DramHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DramHandle")
    }
}

/// The memory events of the references read and not retired (under `time_order`), in
/// program order; a reference names its first by its absolute number's low 32 bits.
#[derive(Clone, Debug, Default)]
pub(super) struct EventQueue {
    events: VecDeque<MemEvent>,
    /// Absolute number of `events[0]`.
    base: u64,
}

impl EventQueue {
    /// Append `ev`; returns the low 32 bits of the first one's number.
    #[inline]
    pub(super) fn push(&mut self, ev: &[MemEvent]) -> u32 {
        let first = self.base + self.events.len() as u64;
        self.events.extend(ev.iter().copied());
        first as u32
    }

    fn full(&self, first: u32) -> u64 {
        self.base + first.wrapping_sub(self.base as u32) as u64
    }

    /// Copy `n` events from `first` into `out` (cleared first).
    #[inline]
    pub(super) fn get(&self, first: u32, n: usize, out: &mut Vec<MemEvent>) {
        out.clear();
        if n == 0 {
            return;
        }
        debug_assert!(
            self.full(first) + n as u64 <= self.base + self.events.len() as u64,
            "events {first} +{n} past the queue (base {}, len {})",
            self.base,
            self.events.len()
        );
        let at = (self.full(first) - self.base) as usize;
        out.extend(self.events.range(at..at + n).copied());
    }

    /// Forget the events before `first + n` (their reference retired).
    #[inline]
    pub(super) fn release(&mut self, first: u32, n: usize) {
        let end = self.full(first) + n as u64;
        while self.base < end {
            self.events.pop_front();
            self.base += 1;
        }
    }
}

/// The figures of the memory system under load, per core.
#[derive(Clone, Debug, Default)]
pub(super) struct MemCounters {
    /// Page-walk reads timed (left the walk's entry level) and those that reached DRAM.
    pub(super) walk_reads: u64,
    pub(super) walk_dram_reads: u64,
    /// Cycles walk reads waited for an MSHR.
    pub(super) walk_mshr_wait_cycles: f64,
    /// DRAM latency of walk reads under the queued controller, and what the idle model gave
    /// them (the difference is what load added, or took away: the controller's row outcome in
    /// time order can beat the idle model's program order).
    pub(super) walk_dram_cycles: f64,
    pub(super) walk_dram_idle_cycles: f64,
    /// The same for data misses that reached DRAM.
    pub(super) data_dram_reads: u64,
    pub(super) data_dram_cycles: f64,
    pub(super) data_dram_idle_cycles: f64,
    /// MSHR-cycles held per level (L1D, L2, LLC), by data misses and by walk reads.
    pub(super) mshr_data_cycles: [f64; 3],
    pub(super) mshr_walk_cycles: [f64; 3],
    /// Write-backs sent to the DRAM write queue.
    pub(super) dram_writes: u64,
    /// L2 prefetches issued, the cycles they waited for MSHRs, and the demand misses that
    /// found their prefetched line still in flight and the cycles they waited for it.
    pub(super) prefetches: u64,
    pub(super) prefetch_mshr_wait_cycles: f64,
    pub(super) prefetch_late_hits: u64,
    pub(super) prefetch_late_cycles: f64,
}
