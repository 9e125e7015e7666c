//! The core's resources: pools of interchangeable units (page walkers, the MSHRs of one level)
//! granted to the earliest free unit ([`Units`], a padded 4-ary min-heap of free times, for
//! `program_order` and `time_order`) or to the earliest idle interval ([`Slots`], for
//! `idle_gaps`), and the in-flight tables ([`InFlight`]) through which references merge with a
//! walk or a fill still in flight.
//!
//! Contract: a grant takes one unit from `max(request, earliest free)` (or from the earliest
//! interval at or after the request in which a unit is idle); an in-flight table may forget an
//! operation (a lost merge), never report a wrong one. It calls only `base.rs` and
//! `config.rs`; the heap's sift is the host's hot loop (its attributes and branch-free selects
//! are measured choices).

use super::base::fmax;
use super::config::ResourceGrant;
use crate::mem::ServedBy;
use std::hint::select_unpredictable;

/// Pool of identical units (walkers, MSHRs of one level): the times they become free, as a
/// 4-ary min-heap. Units are interchangeable, so only the multiset of free times matters:
/// a grant takes the earliest (the root) and puts it back busy until its operation is done.
/// The heap is padded to a full tree with units that are never free (`f64::INFINITY`), so a
/// sift-down has a fixed depth and no data-dependent branch (the host mispredicted those); four
/// children per node halve the levels of a binary heap, and a level's four loads are
/// independent (the sift's chain of dependent loads was its cost).
#[derive(Clone, Debug)]
pub(super) struct Units {
    free_at: Vec<f64>,
    /// Levels of the padded tree.
    depth: u32,
}

impl Units {
    pub(super) fn new(n: u32) -> Self {
        let (mut depth, mut full) = (1u32, 1usize);
        while full < n as usize {
            full = 4 * full + 1;
            depth += 1;
        }
        let mut free_at = vec![f64::INFINITY; full];
        free_at[..n as usize].fill(0.0);
        // Every slot at or past n holds infinity and so do all its descendants (they are past
        // n too): the first n slots stay a valid heap.
        Units { free_at, depth }
    }

    /// When the earliest unit is free.
    #[inline(always)]
    pub(super) fn earliest(&self) -> f64 {
        self.free_at[0]
    }

    /// Take the earliest unit until `done` (`done` >= [`Units::earliest`]).
    #[inline(always)]
    pub(super) fn take_until(&mut self, done: f64) {
        let h = &mut self.free_at[..];
        let mut i = 0usize;
        for _ in 1..self.depth {
            let l = 4 * i + 1;
            let a = l + (h[l + 1] < h[l]) as usize;
            let b = l + 2 + (h[l + 3] < h[l + 2]) as usize;
            // Unpredictable selects (a conditional move): the compiler turns an `if`, and even
            // arithmetic on the comparison, into a branch, which the host mispredicts about half
            // the time here.
            let c = select_unpredictable(h[b] < h[a], b, a);
            let next = select_unpredictable(h[c] < done, c, i);
            h[i] = h[next];
            i = next;
        }
        h[i] = done;
    }
}

/// Pool of identical units granted by idle interval (`core.resource_grant = "idle_gaps"`): per
/// unit, its busy intervals `[start, end)`, sorted and disjoint. Intervals that end before the
/// *horizon* (no request can come earlier, see [`Slots::fit`]) are dropped, so a unit holds
/// about as many intervals as operations overlap the window of references in flight.
#[derive(Clone, Debug)]
pub(super) struct Slots {
    pub(super) busy: Vec<Vec<(f64, f64)>>,
}

/// Stale intervals a [`Slots`] unit keeps before dropping them in one move.
pub(super) const STALE_BATCH: usize = 16;

impl Slots {
    pub(super) fn new(n: u32, capacity: usize) -> Self {
        Slots {
            busy: (0..n).map(|_| Vec::with_capacity(capacity)).collect(),
        }
    }

    /// The earliest start at or after `request` at which some unit is idle for `len` cycles,
    /// and that unit (ties to the lowest). `horizon`: no request now or later comes before it
    /// (the previous reference's dispatch: dispatch never goes back and a reference issues
    /// after it dispatches), so intervals that end by then are dropped.
    #[inline]
    pub(super) fn fit(&mut self, request: f64, len: f64, horizon: f64) -> (f64, usize) {
        let mut best = (f64::INFINITY, 0usize);
        for (u, iv) in self.busy.iter_mut().enumerate() {
            // Intervals are disjoint and sorted, so their ends are sorted too: binary searches
            // find the stale ones (dropped in batches, to amortize the move) and the first one
            // that can delay this request.
            let stale = iv.partition_point(|&(_, end)| end <= horizon);
            if stale >= STALE_BATCH {
                iv.drain(..stale);
            }
            let mut start = request;
            let first = iv.partition_point(|&(_, end)| end <= request);
            for &(a, b) in &iv[first..] {
                if start + len <= a {
                    break;
                }
                start = fmax(start, b);
            }
            if start <= request {
                // No unit can start earlier, and the lower ones could not start this early.
                return (start, u);
            }
            if start < best.0 {
                best = (start, u);
            }
        }
        best
    }

    /// Reserve `unit` on `[start, start + len)` (idle there: `start` came from [`Slots::fit`]).
    #[inline]
    pub(super) fn take(&mut self, unit: usize, start: f64, len: f64) {
        let iv = &mut self.busy[unit];
        let at = iv.partition_point(|&(a, _)| a < start);
        iv.insert(at, (start, start + len));
    }
}

/// Walkers or MSHRs of one pool under either grant scheme.
#[derive(Clone, Debug)]
pub(super) enum Pool {
    Earliest(Units),
    Gaps(Slots),
}

impl Pool {
    pub(super) fn new(n: u32, grant: ResourceGrant, capacity: usize) -> Self {
        match grant {
            // Requests reach a time-order pool in time order: the earliest free unit is then
            // first come, first served.
            ResourceGrant::ProgramOrder | ResourceGrant::TimeOrder => Pool::Earliest(Units::new(n)),
            ResourceGrant::IdleGaps => Pool::Gaps(Slots::new(n, capacity)),
        }
    }
}

/// Operations in flight keyed by page or line, for merging: a direct-mapped table of the
/// latest completion per key slot. A collision forgets the older key, which then merges no
/// more (a lost overlap, never a wrong wait); with [`IN_FLIGHT_SLOTS`] slots against tens of
/// operations in flight that is rare. Its size is fixed so that no `core.*` setting changes which
/// merges are seen.
#[derive(Clone, Debug)]
pub(super) struct InFlight {
    /// (key, completion) per slot; `u64::MAX` = empty.
    slots: Vec<(u64, f64)>,
    /// Latest completion recorded: a reference issued after it need not look.
    latest: f64,
}

/// Slots of an [`InFlight`] table (a power of two).
pub(super) const IN_FLIGHT_SLOTS: usize = 1024;

impl InFlight {
    pub(super) fn new() -> Self {
        InFlight {
            slots: vec![(u64::MAX, 0.0); IN_FLIGHT_SLOTS],
            latest: 0.0,
        }
    }
    #[inline(always)]
    pub(super) fn slot(key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - IN_FLIGHT_SLOTS.trailing_zeros()))
            as usize
    }
    #[inline]
    pub(super) fn record(&mut self, key: u64, done: f64) {
        let s = &mut self.slots[Self::slot(key)];
        if s.0 == key {
            s.1 = s.1.max(done);
        } else {
            *s = (key, done);
        }
        self.latest = self.latest.max(done);
    }
    /// When the operation on `key` in flight at `t` completes (`None`: nothing in flight).
    #[inline]
    pub(super) fn pending(&self, key: u64, t: f64) -> Option<f64> {
        if t >= self.latest {
            return None;
        }
        let (k, d) = self.slots[Self::slot(key)];
        (k == key && d > t).then_some(d)
    }
}

/// The levels a data access at `level` holds an MSHR of (0 for an L1D hit).
#[inline(always)]
pub(super) fn miss_levels(level: ServedBy) -> usize {
    match level {
        ServedBy::L1 => 0,
        ServedBy::L2 => 1,
        ServedBy::Llc => 2,
        ServedBy::Dram => 3,
    }
}
