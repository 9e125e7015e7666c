//! The memory system under load, as the core times it (`mem.dram.model = "queued"`): the
//! timing of a walk's page-table reads and of a data miss at the times the core requests them
//! ([`OooCore::time_walk`], [`OooCore::data_miss_len`]), on the shared controller and with the
//! event queue and counters of `dram_link.rs`.
//!
//! ## Model
//! The functional simulation logs, for every reference, the accesses that left their entry
//! level ([`MemEvent`]: the walk's page-table reads that missed the walk's entry level, the data
//! read that reached DRAM, the dirty lines written back to DRAM) with their idle latencies.
//! When the core grants a walk a walker at `start`, each of the walk's reads is requested at
//! `start` + its offset in the walk + the delay of the reads before it (a parallel group shares
//! one request time and adds its slowest member's delay); it takes one MSHR of every level below
//! the walk's entry it passes (`core.l2_mshrs`, `core.llc_mshrs` when walks enter at L2), waiting
//! for the earliest time one of each is free, exactly as a data miss does; a read that reaches
//! DRAM arrives there after its cache lookups and takes the queued controller's latency in place
//! of the idle one. A data miss that reaches DRAM is timed the same way from its MSHR grant.
//! Write-backs enter the DRAM write queue at the time of the access that evicted them.
//!
//! ## Approximations (also in docs/timing.md)
//! - A walk's reads are granted their MSHRs and DRAM slots when the walk is granted its walker,
//!   at their own (later) request times: the MSHR pools take a unit from then on (the unit's
//!   idle time before that is lost to other requests), and the DRAM calendar accepts the
//!   request out of arrival order (`mem.dram.reorder_window_cycles`).
//! - A walk's offsets count its page-table reads' latencies only (a design's own lookup
//!   latencies in between are not in them); a walk's read to a line with a miss outstanding
//!   does not merge with it.
//! - Cache contents and the idle model's row buffers change in program order (functional
//!   state); the queued controller's banks and queues change in request-time order.
//!
//! Contract: with no events (the idle model) nothing here is called and the core's schedule is
//! what it was; with events, the same references and events give the same schedule.

use super::base::fmax;
use super::state::OooCore;
use crate::mem::dram::controller::{DramRequest, RequestKind};
use crate::mem::{MemEvent, MemEventKind};

/// `x.max(0.0).ceil()`, without the call to libm's `ceil` that the baseline x86-64 target
/// makes (it has no rounding instruction): the same value for every `x` (below 2^52 a
/// non-negative `f64` truncates exactly to an integer; from 2^52 on it is one already).
#[inline(always)]
fn ceil_non_negative(x: f64) -> f64 {
    let x = x.max(0.0);
    if x >= 4_503_599_627_370_496.0 {
        return x;
    }
    let t = x as u64 as f64;
    if t < x {
        t + 1.0
    } else {
        t
    }
}

impl OooCore {
    /// A DRAM read of `line` arriving at core time `arrival`: its latency from `arrival`.
    #[inline]
    fn dram_read(&mut self, line: u64, arrival: f64, page_table: bool) -> f64 {
        let at = ceil_non_negative(arrival);
        let c = self
            .dram
            .as_ref()
            .expect("events come with a controller")
            .with(|d| {
                d.access(&DramRequest {
                    line,
                    write: false,
                    arrival_cycle: at as u64,
                    kind: if page_table {
                        RequestKind::PageTable
                    } else {
                        RequestKind::Data
                    },
                })
            });
        at - arrival + c.latency_cycles as f64
    }

    /// A write-back of `line` entering the DRAM write queue at `at`.
    #[inline]
    fn dram_write(&mut self, line: u64, at: f64) {
        self.m.dram_writes += 1;
        self.dram
            .as_ref()
            .expect("events come with a controller")
            .with(|d| {
                d.access(&DramRequest {
                    line,
                    write: true,
                    arrival_cycle: ceil_non_negative(at) as u64,
                    kind: RequestKind::Data,
                })
            });
    }

    /// The walk granted a walker at `start`: time its events (page-table reads and write-backs,
    /// in walk order) and return the cycles the walk takes beyond its idle latency.
    pub(super) fn time_walk(&mut self, events: &[MemEvent], start: f64) -> f64 {
        let mut extra = 0.0;
        // The slowest delay of the group in progress (a serial read is a group of one).
        let mut group: Option<f64> = None;
        for e in events {
            debug_assert!(
                !matches!(e.kind, MemEventKind::Prefetch | MemEventKind::PrefetchHit),
                "walks do not train the prefetcher"
            );
            if !e.parallel {
                extra += group.take().unwrap_or(0.0);
            }
            let request = start + e.offset_cycles as f64 + extra;
            if e.kind == MemEventKind::Write {
                self.dram_write(e.line, request);
                continue;
            }
            let (first, last) = (e.first_pool as usize, e.last_pool as usize);
            let mut s = request;
            for u in &self.mshr_units[first..last] {
                s = fmax(s, u.earliest());
            }
            let idle = e.latency_cycles as f64;
            let mut len = idle;
            self.m.walk_reads += 1;
            if e.dram_cycles > 0 {
                let lat = self.dram_read(e.line, s + e.pre_dram_cycles as f64, true);
                len += lat - e.dram_cycles as f64;
                self.m.walk_dram_reads += 1;
                self.m.walk_dram_cycles += lat;
                self.m.walk_dram_idle_cycles += e.dram_cycles as f64;
            }
            for (k, u) in self.mshr_units[first..last].iter_mut().enumerate() {
                u.take_until(s + len);
                self.m.mshr_walk_cycles[first + k] += len;
            }
            self.m.walk_mshr_wait_cycles += s - request;
            let delay = (s - request) + (len - idle);
            group = Some(group.map_or(delay, |g: f64| g.max(delay)));
        }
        extra + group.unwrap_or(0.0)
    }

    /// A data miss granted its MSHRs at `start`, of idle latency `data_cycles`: time its events
    /// (the DRAM read, write-backs) and return how long it holds its MSHRs.
    pub(super) fn data_miss_len(
        &mut self,
        events: &[MemEvent],
        start: f64,
        data_cycles: f64,
    ) -> f64 {
        let mut len = data_cycles;
        for e in events {
            match e.kind {
                MemEventKind::Prefetch | MemEventKind::PrefetchHit => {}
                MemEventKind::Write => self.dram_write(
                    e.line,
                    start + (data_cycles - e.dram_cycles as f64).max(0.0),
                ),
                _ if e.dram_cycles > 0 => {
                    let lat = self.dram_read(e.line, start + e.pre_dram_cycles as f64, false);
                    len += lat - e.dram_cycles as f64;
                    self.m.data_dram_reads += 1;
                    self.m.data_dram_cycles += lat;
                    self.m.data_dram_idle_cycles += e.dram_cycles as f64;
                }
                _ => {}
            }
        }
        len
    }
}

impl OooCore {
    /// A data miss granted at `start`, holding its MSHRs for `len`: if its events say it
    /// found a prefetched line in the L2 (`PrefetchHit`) whose prefetch is still in flight then,
    /// it holds them until that fill arrives. Returns the length.
    #[inline]
    pub(super) fn prefetch_wait(&mut self, events: &[MemEvent], start: f64, len: f64) -> f64 {
        let mut len = len;
        for e in events {
            if e.kind != MemEventKind::PrefetchHit {
                continue;
            }
            if let Some(fill) = self.prefetch_fills.pending(e.line, start) {
                if fill - start > len {
                    self.m.prefetch_late_hits += 1;
                    self.m.prefetch_late_cycles += fill - start - len;
                    len = fill - start;
                }
            }
        }
        len
    }

    /// Issue the L2 prefetches of a data miss granted at `start` (its `Prefetch` events): each
    /// is requested at the L2 one L1D latency later, waits for one MSHR of every level it
    /// passes (none under `idle_gaps`), reads DRAM at its time under the queued model, and is
    /// recorded in flight until its fill, for the demand misses that find its line.
    pub(super) fn issue_prefetches(&mut self, events: &[MemEvent], start: f64) {
        for e in events {
            if e.kind != MemEventKind::Prefetch {
                continue;
            }
            let request = start + self.l1d_hit_cycles;
            let (a, b) = if self.gaps {
                (0, 0)
            } else {
                (
                    self.mshr_pools_upto[e.first_pool as usize],
                    self.mshr_pools_upto[e.last_pool as usize],
                )
            };
            let mut s = request;
            for u in &self.mshr_units[a..b] {
                s = fmax(s, u.earliest());
            }
            let mut len = e.latency_cycles as f64;
            if e.dram_cycles > 0 && self.dram.is_some() {
                let lat = self.dram_read(e.line, s + e.pre_dram_cycles as f64, false);
                len += lat - e.dram_cycles as f64;
            }
            for u in &mut self.mshr_units[a..b] {
                u.take_until(s + len);
            }
            self.prefetch_fills.record(e.line, s + len);
            self.m.prefetches += 1;
            self.m.prefetch_mshr_wait_cycles += s - request;
        }
    }
}

#[cfg(test)]
mod ceil_tests {
    use super::ceil_non_negative;

    #[test]
    fn ceil_non_negative_equals_max_zero_then_ceil() {
        let mut xs = vec![
            -1.5,
            -0.0,
            0.0,
            0.25,
            1.0,
            1.000_000_1,
            2.5,
            4_503_599_627_370_495.5,
            4_503_599_627_370_496.0,
            9.1e18,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        let mut s = 1u64;
        for _ in 0..10_000 {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            xs.push((s >> 11) as f64 / 1024.0);
            xs.push(f64::from_bits(s >> 2));
        }
        for x in xs {
            let (a, b) = (ceil_non_negative(x), x.max(0.0).ceil());
            assert!(a == b || (a.is_nan() && b.is_nan()), "{x}: {a} against {b}");
            assert_eq!(a as u64, b as u64, "{x}");
        }
    }
}
