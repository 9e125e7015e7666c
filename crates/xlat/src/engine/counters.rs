//! The loop's counters and the record sections written from them.
//!
//! Owns [`Counters`] (one set per core: references, walks, faults, oracle checks) and the
//! functions that turn counters into sections of the result record: the reference counts
//! ([`count_keys`]), the `tlb` and `walk` sections, one core's entry of a multi-core record
//! ([`core_record`]) and the multi-core totals ([`sum_into`], then [`fix_fractions`]).
//!
//! May call: `addr`, `config`, `mem` (private caches' stats), `mmu` (TLB stats), `stats`,
//! `timing` (the timing section); nothing else in the engine. Contract: the keys and their
//! meaning are those of `docs/results.md`; a one-core record and one core's entry of a
//! multi-core record have the same keys.

use crate::addr::PageSize;
use crate::config::Config;
use crate::mem::PrivateCaches;
use crate::mmu::Mmu;
use crate::stats::{ratio, Stats, StatsExt};
use crate::timing::ooo::OooCore;
use crate::timing::Timing;
use serde_json::Value;

/// Counters of the main loop (one set per core).
#[derive(Clone, Debug, Default)]
pub(super) struct Counters {
    pub(super) events: u64,
    pub(super) refs: u64,
    pub(super) loads: u64,
    pub(super) stores: u64,
    pub(super) ifetches: u64,
    pub(super) instructions: u64,
    /// Walks after a TLB miss (including those that found no translation and faulted).
    pub(super) walks: u64,
    pub(super) walk_mem_accesses: u64,
    pub(super) walk_cycles: u64,
    /// TLB-miss walks by latency (log2 buckets, see [`walk_hist_bucket`]).
    pub(super) walk_latency_hist: [u64; WALK_HIST_BUCKETS],
    /// TLB-miss walks that found a translation, by the order of its page size (4 KiB = 0).
    pub(super) walks_by_page_order: [u64; PAGE_ORDERS],
    /// TLB-miss walks that found no translation (each is followed by a page fault).
    pub(super) fault_walks: u64,
    /// Walks repeated after a page fault (demand paging or a store to a read-only page): they
    /// cost cycles but are not TLB-miss walks, so they stay out of `walks` and its averages.
    pub(super) post_fault_walks: u64,
    pub(super) post_fault_walk_mem_accesses: u64,
    pub(super) post_fault_walk_cycles: u64,
    /// References whose bytes span two pages (each page is translated).
    pub(super) page_crossing_refs: u64,
    pub(super) oracle_checked: u64,
    pub(super) syscalls: u64,
}

/// Log2 buckets of `walk.latency_hist`: bucket 0 holds walks of 0-1 cycles, bucket `i > 0`
/// walks of `2^i .. 2^(i+1) - 1` cycles, the last bucket everything longer.
pub(super) const WALK_HIST_BUCKETS: usize = 16;

/// The bucket of a walk of `cycles` (see [`WALK_HIST_BUCKETS`]).
#[inline]
pub(super) fn walk_hist_bucket(cycles: u32) -> usize {
    ((u32::BITS - cycles.leading_zeros()).saturating_sub(1) as usize).min(WALK_HIST_BUCKETS - 1)
}

/// Page-size orders a mapping can have (4 KiB = order 0 up to 1 GiB = order 18).
const PAGE_ORDERS: usize = 19;

/// The reference counts of a record (or of one core's entry).
pub(super) fn count_keys(r: &mut Stats, c: &Counters) {
    r.put_u64("refs", c.refs);
    r.put_u64("instructions", c.instructions);
    r.put_u64("loads", c.loads);
    r.put_u64("stores", c.stores);
    r.put_u64("ifetches", c.ifetches);
    r.put_u64("events", c.events);
    r.put_u64("syscalls", c.syscalls);
    r.put_u64("page_crossing_refs", c.page_crossing_refs);
}

/// The `tlb` and `walk` sections of a record (or of one core's entry).
pub(super) fn tlb_and_walk_sections(r: &mut Stats, c: &Counters, mmu: &Mmu, perfect_tlb: bool) {
    mmu.stats(r, c.instructions);
    if perfect_tlb {
        // Every translation is an L1 hit by definition.
        let t = r.section("tlb");
        for k in [
            "l1_misses",
            "l2_misses",
            "l2_lookups",
            "itlb_misses",
            "itlb_l2_misses",
        ] {
            t.put_u64(k, 0);
        }
        t.put_u64("l1_lookups", c.refs);
        t.put_f64("l1_miss_rate", 0.0);
        t.put_f64("l1_mpki", 0.0);
        t.put_f64("l2_mpki", 0.0);
    }
    walk_section(r, c);
}

/// The `walk` section of a record (or of one core's entry).
fn walk_section(r: &mut Stats, c: &Counters) {
    let w = r.section("walk");
    w.put_u64("count", c.walks);
    w.put_u64("mem_accesses", c.walk_mem_accesses);
    w.put_u64("cycles", c.walk_cycles);
    w.put_f64("avg_cycles", ratio(c.walk_cycles, c.walks));
    w.put_f64("avg_mem_accesses", ratio(c.walk_mem_accesses, c.walks));
    w.put_u64("fault_walks", c.fault_walks);
    w.put_u64("post_fault_count", c.post_fault_walks);
    w.put_u64("post_fault_mem_accesses", c.post_fault_walk_mem_accesses);
    w.put_u64("post_fault_cycles", c.post_fault_walk_cycles);
    // TLB-miss walks by latency, keyed by each bucket's lowest cycle count (0, 2, 4, 8, ...).
    let mut hist = Stats::new();
    for (i, n) in c.walk_latency_hist.iter().enumerate() {
        let low = if i == 0 { 0u64 } else { 1 << i };
        hist.put_u64(&low.to_string(), *n);
    }
    w.insert("latency_hist".into(), Value::Object(hist));
    // TLB-miss walks that found a translation, by the size of the page found (sizes seen only);
    // with `fault_walks` they sum to `count`.
    let mut by_size = Stats::new();
    for (order, n) in c.walks_by_page_order.iter().enumerate() {
        if *n > 0 {
            let size = PageSize::from_order(order as u8).expect("order below PAGE_ORDERS");
            by_size.put_u64(&size.label(), *n);
        }
    }
    w.insert("by_page_size".into(), Value::Object(by_size));
}

/// One core's figures: the per-core entry of a multi-core record's `cores` list, with the
/// same keys and meaning as the top-level ones of a one-core record.
#[allow(clippy::too_many_arguments)]
pub(super) fn core_record(
    cfg: &Config,
    perfect_tlb: bool,
    c: &Counters,
    mmu: &Mmu,
    timing: &Timing,
    core: Option<&OooCore>,
    private: &PrivateCaches,
    os_cycles: u64,
) -> Stats {
    let mut r = Stats::new();
    count_keys(&mut r, c);
    tlb_and_walk_sections(&mut r, c, mmu, perfect_tlb);
    timing.stats(&cfg.timing, c.instructions, os_cycles, core, &mut r);
    private.stats(&mut r);
    r.section("oracle").put_u64("checked", c.oracle_checked);
    r
}

/// Add `part` into `total`: integers and floats are summed key by key, other values kept.
pub(super) fn sum_into(total: &mut Value, part: &Value) {
    match (total, part) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                match t.get_mut(k) {
                    Some(tv) => sum_into(tv, v),
                    None => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (t @ Value::Number(_), Value::Number(b)) => {
            if let (Some(x), Some(y)) = (t.as_u64(), b.as_u64()) {
                *t = Value::from(x + y);
            } else if let (Some(x), Some(y)) = (t.as_f64(), b.as_f64()) {
                *t = serde_json::Number::from_f64(x + y)
                    .map(Value::Number)
                    .unwrap_or(Value::Null);
            }
        }
        _ => {}
    }
}

/// After [`sum_into`] over `cores` cores: a fraction that is a ratio of summed counters is
/// recomputed from them (`*miss_rate` = misses / lookups or accesses, `*hit_rate`, `*_mpki`
/// per `instructions`, `avg_*` per `count`); any other fraction becomes the mean over cores.
pub(super) fn fix_fractions(t: &mut Stats, instructions: u64, cores: usize) {
    let keys: Vec<String> = t.keys().cloned().collect();
    for k in keys {
        if let Some(Value::Object(child)) = t.get_mut(&k) {
            fix_fractions(child, instructions, cores);
            continue;
        }
        let Some(sum) = t.get(&k).filter(|v| v.is_f64()).and_then(Value::as_f64) else {
            continue;
        };
        let get = |name: String| t.get(&name).and_then(Value::as_u64);
        let per = |num: Option<u64>, dens: [String; 2]| {
            let den = get(dens[0].clone()).or_else(|| get(dens[1].clone()));
            num.zip(den).map(|(n, d)| ratio(n, d))
        };
        let value = if k == "avg_walk_latency_cycles" {
            // Per walk over every core's walks (the queued DRAM model's timed walks).
            let busy = t.get("walk_busy_cycles").and_then(Value::as_f64);
            busy.zip(get("walks_timed".into()))
                .map(|(b, w)| if w > 0 { b / w as f64 } else { 0.0 })
        } else if let Some(p) = k.strip_suffix("miss_rate") {
            per(
                get(format!("{p}misses")),
                [format!("{p}lookups"), format!("{p}accesses")],
            )
        } else if let Some(p) = k.strip_suffix("hit_rate") {
            per(
                get(format!("{p}hits")),
                [format!("{p}lookups"), format!("{p}accesses")],
            )
        } else if let Some(p) = k.strip_suffix("mpki") {
            get(format!("{p}misses")).map(|m| ratio(m * 1000, instructions))
        } else if let Some(what) = k.strip_prefix("avg_") {
            per(get(what.to_string()), ["count".into(), "accesses".into()])
        } else {
            None
        };
        t.put_f64(&k, value.unwrap_or(sum / cores as f64));
    }
}
