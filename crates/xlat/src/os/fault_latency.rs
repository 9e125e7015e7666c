//! Page-fault latency distribution (`os.fault_latency.*`): the OS cycles each page fault costs,
//! in a fixed log2 histogram (no allocation per fault).
//!
//! ## What one fault's latency is
//! The engine measures every demand fault it sends to the OS model (a first touch, a major
//! fault from swap, a store to a read-only page) as the sum of
//! - `timing.page_fault_cycles` (the trap, the handler's fixed work: 1000 by default);
//! - the allocation work done during the fault: zeroing every block handed out (the data page
//!   and any page-table frame the design allocates to map it) and direct compaction, the
//!   change of [`PhysMem::alloc_work_cycles`](super::PhysMem::alloc_work_cycles);
//! - copies and shootdowns the fault caused (compaction relocations, a policy's copy, swap-in
//!   reads): the change of [`Os::extra_os_cycles`](super::Os::extra_os_cycles) across the fault;
//! - the design's own OS work for it (ET's extra invalidations, LVM's index inserts): the
//!   change of `Design::os_cycles`.
//!
//! Zeroing and direct compaction are in this latency but not in `timing.os_cycles` (which
//! charges a fixed `page_fault_cycles` per fault); the histogram is the place where a 2 MiB
//! fault's 1 M zeroing cycles or a compaction stall show.
//!
//! ## Buckets and percentiles
//! Bucket 0 holds 0-1 cycles, bucket `i > 0` holds `2^i .. 2^(i+1) - 1`, the last bucket
//! (`2^39` up) everything longer. `pNN_cycles` is the largest fault latency seen in the bucket
//! holding the NN-th percentile fault (the histogram keeps each bucket's maximum, a fixed
//! array): exact when every fault in that bucket costs the same (e.g. all 4 KiB faults
//! without compaction), else an upper bound at most 2x the true value. After a warm-up
//! (`sim.warmup_refs`) the buckets, `count` and `cycles` are the measured region's and the
//! percentiles are recomputed from them ([`recompute_measured`]) as the bucket's upper bound
//! clipped to `max_cycles` (the per-bucket maxima are not in the record); `max_cycles` is over
//! the whole run.

use crate::stats::{Stats, StatsExt};
use serde_json::{Map, Value};

/// Number of log2 buckets (the last is open-ended from 2^39 cycles up).
pub const BUCKETS: usize = 40;

/// The percentiles reported, as (key, quantile).
pub const PERCENTILES: [(&str, f64); 3] = [
    ("p50_cycles", 0.50),
    ("p90_cycles", 0.90),
    ("p99_cycles", 0.99),
];

/// The histogram and its running totals.
#[derive(Clone, Debug)]
pub struct FaultLatency {
    hist: [u64; BUCKETS],
    /// The largest latency recorded in each bucket.
    bucket_max: [u64; BUCKETS],
    count: u64,
    cycles: u64,
    max_cycles: u64,
}

impl Default for FaultLatency {
    fn default() -> Self {
        FaultLatency {
            hist: [0; BUCKETS],
            bucket_max: [0; BUCKETS],
            count: 0,
            cycles: 0,
            max_cycles: 0,
        }
    }
}

/// The bucket of a fault of `cycles` (see [`BUCKETS`]).
#[inline]
pub fn bucket(cycles: u64) -> usize {
    ((u64::BITS - cycles.leading_zeros()).saturating_sub(1) as usize).min(BUCKETS - 1)
}

/// The lowest cycle count of bucket `i`.
pub fn bucket_low(i: usize) -> u64 {
    if i == 0 {
        0
    } else {
        1 << i
    }
}

/// The `q` quantile (0 < q <= 1) of the histogram `hist` whose largest value is `max`: the
/// largest value of the bucket holding the ceil(q * n)-th smallest fault when `bucket_max`
/// (each bucket's largest value) is given, else that bucket's upper bound clipped to `max` and
/// to the bucket's lower bound. 0 for an empty histogram.
pub fn percentile(hist: &[u64], bucket_max: Option<&[u64]>, max: u64, q: f64) -> u64 {
    let n: u64 = hist.iter().sum();
    if n == 0 {
        return 0;
    }
    let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
    let mut seen = 0;
    for (i, &c) in hist.iter().enumerate() {
        seen += c;
        if seen >= rank {
            if let Some(b) = bucket_max {
                return b[i];
            }
            let high = if i + 1 >= hist.len() {
                u64::MAX
            } else {
                bucket_low(i + 1) - 1
            };
            return high.min(max).max(bucket_low(i));
        }
    }
    max
}

impl FaultLatency {
    /// Count one fault of `cycles`.
    #[inline]
    pub fn record(&mut self, cycles: u64) {
        let b = bucket(cycles);
        self.hist[b] += 1;
        self.bucket_max[b] = self.bucket_max[b].max(cycles);
        self.count += 1;
        self.cycles += cycles;
        self.max_cycles = self.max_cycles.max(cycles);
    }

    /// Faults recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Write the `fault_latency` section into `s` (the `os` section): `count`, `cycles`,
    /// `avg_cycles`, `max_cycles`, `p50_cycles`, `p90_cycles`, `p99_cycles` and `hist`
    /// (every bucket, keyed by its lowest cycle count).
    pub fn stats_into(&self, s: &mut Stats) {
        let f = s.section("fault_latency");
        f.put_u64("count", self.count);
        f.put_u64("cycles", self.cycles);
        f.put_f64("avg_cycles", crate::stats::ratio(self.cycles, self.count));
        f.put_u64("max_cycles", self.max_cycles);
        for (key, q) in PERCENTILES {
            f.put_u64(
                key,
                percentile(&self.hist, Some(&self.bucket_max), self.max_cycles, q),
            );
        }
        let mut hist = Stats::new();
        for (i, n) in self.hist.iter().enumerate() {
            hist.put_u64(&bucket_low(i).to_string(), *n);
        }
        f.insert("hist".into(), Value::Object(hist));
    }
}

/// After a warm-up: recompute the percentiles of every `fault_latency` section of the measured
/// record `m` from its measured buckets (the subtraction made them meaningless), and drop them
/// from `whole_run` (the keys the warm-up could not measure).
pub fn recompute_measured(m: &mut Value, path: &str, whole_run: &mut Vec<String>) {
    let Value::Object(map) = m else {
        return;
    };
    for (k, v) in map.iter_mut() {
        let p = if path.is_empty() {
            k.clone()
        } else {
            format!("{path}.{k}")
        };
        if k == "fault_latency" {
            if let Value::Object(f) = v {
                fix_section(f);
                whole_run.retain(|w| !(w.starts_with(&p) && w.contains("_cycles")));
            }
        } else if v.is_object() {
            recompute_measured(v, &p, whole_run);
        }
    }
}

fn fix_section(f: &mut Map<String, Value>) {
    let Some(Value::Object(h)) = f.get("hist") else {
        return;
    };
    let mut hist = [0u64; BUCKETS];
    for (i, slot) in hist.iter_mut().enumerate() {
        *slot = h
            .get(&bucket_low(i).to_string())
            .and_then(Value::as_u64)
            .unwrap_or(0);
    }
    let max = f.get("max_cycles").and_then(Value::as_u64).unwrap_or(0);
    for (key, q) in PERCENTILES {
        f.insert(key.into(), Value::from(percentile(&hist, None, max, q)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_land_in_their_log2_buckets() {
        assert_eq!(
            [0, 1, 2, 3, 4, 3048, 1 << 20, u64::MAX].map(bucket),
            [0, 0, 1, 1, 2, 11, 20, BUCKETS - 1]
        );
    }

    #[test]
    fn percentiles_are_the_largest_fault_of_their_bucket_or_its_bound_after_warm_up() {
        let mut f = FaultLatency::default();
        for _ in 0..90 {
            f.record(3048);
        }
        for _ in 0..10 {
            f.record(1_049_576);
        }
        f.record(3000);
        let p = |q| percentile(&f.hist, Some(&f.bucket_max), f.max_cycles, q);
        // 91 of 101 faults cost 3000-3048: p50 and p90 are in bucket 2048..4095, whose
        // largest fault is 3048.
        assert_eq!(p(0.5), 3048);
        assert_eq!(p(0.9), 3048);
        // p99 is in the 2 MiB faults' bucket.
        assert_eq!(p(0.99), 1_049_576);
        // Without the per-bucket maxima (after a warm-up): the bucket's upper bound, clipped
        // to the largest fault.
        let bound = |q| percentile(&f.hist, None, f.max_cycles, q);
        assert_eq!(bound(0.5), 4095);
        assert_eq!(bound(0.99), 1_049_576);
        assert_eq!(percentile(&[0; BUCKETS], None, 0, 0.5), 0);
    }

    #[test]
    fn the_stats_section_has_totals_percentiles_and_every_bucket() {
        let mut f = FaultLatency::default();
        f.record(1000);
        f.record(3000);
        let mut s = Stats::new();
        f.stats_into(&mut s);
        let sec = &s["fault_latency"];
        assert_eq!(sec["count"], 2);
        assert_eq!(sec["cycles"], 4000);
        assert_eq!(sec["max_cycles"], 3000);
        assert_eq!(sec["p50_cycles"], 1000);
        assert_eq!(sec["p99_cycles"], 3000);
        assert_eq!(sec["hist"].as_object().unwrap().len(), BUCKETS);
        assert_eq!(sec["hist"]["512"], 1);
        assert_eq!(sec["hist"]["2048"], 1);
    }

    #[test]
    fn warm_up_recomputes_percentiles_from_the_measured_buckets() {
        let mut f = FaultLatency::default();
        f.record(1_000_000);
        let mut s = Stats::new();
        f.stats_into(&mut s);
        let mut rec = serde_json::json!({"os": s});
        // The measured region saw only one 4 KiB fault (bucket 2048).
        rec["os"]["fault_latency"]["hist"]["524288"] = 0.into();
        rec["os"]["fault_latency"]["hist"]["2048"] = 1.into();
        let mut whole = vec!["os.fault_latency.p50_cycles".to_string()];
        recompute_measured(&mut rec, "", &mut whole);
        assert_eq!(rec["os"]["fault_latency"]["p50_cycles"], 4095);
        assert!(whole.is_empty());
    }
}
