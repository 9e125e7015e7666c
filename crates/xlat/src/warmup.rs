//! Warm-up (`sim.warmup_refs`): simulate a first stretch of references, restart the statistics
//! from zero, then measure — as ChampSim's and Sniper's warm-up do, so that the measured region
//! is the program's steady state, not its first touches and cold TLBs, caches and page-walk
//! caches.
//!
//! # Method: snapshot and subtract
//!
//! Nothing in the simulator is reset: the TLBs, caches, page tables, OS model and design keep
//! all their state (that is the point of warming them). When the warm-up's last reference has
//! been simulated, [`crate::engine::Simulation`] takes the record the run would report at that
//! moment (the *snapshot*); at the end it reports [`measured`]`(end, snapshot)`: every figure of
//! the measured region computed from the two records. This covers every statistic of every
//! subsystem and design (and of every core of a multi-core record, and each process's `refs`)
//! without a reset method in each of them, and a run without warm-up is untouched (no snapshot
//! is taken; its record is bit-identical to what it was before warm-up existed).
//!
//! Each value of the record is one of:
//!
//! - a **count** (an integer, or a float whose key ends in `cycles`: `timing.cycles`,
//!   `timing.os_cycles`, ...): end minus snapshot;
//! - a **state** ([`is_state`]: sizes and structure shapes such as `page_table.bytes`,
//!   `*_bytes_final`, `*_entries`, `*_peak*`, `os.fmfi_end`, `os.free_blocks_end`,
//!   `mehpt.ways`, ids such as `cores[].core`): kept as at the end of the run, because a state
//!   is not a sum over references (peaks are over the whole run, warm-up included);
//! - a **fraction** (`*_miss_rate`, `*_hit_rate`, `*_mpki`, `avg_*`, `*_per_*`, a few
//!   `*_share`, `timing.ipc`, `timing.mmu_overhead_share`): recomputed from the measured counts;
//!   where the record holds the fraction but not its numerator (`dram.avg_read_latency_cycles`,
//!   `mehpt.pmd_cwc_hit_rate`), from `f_end * d_end - f_snap * d_snap` over the measured
//!   denominator `d_end - d_snap`;
//! - anything else (strings, booleans, a float no rule covers, a count that went down): kept as
//!   at the end of the run, and its key listed in the record's `warmup.whole_run_keys`, so that
//!   a reader knows which figures still include the warm-up.
//!
//! A new statistic that is a state must match [`is_state`] (name it `*_bytes`, `*_final*`,
//! `*_peak*`, `*_max`, `max_*`, `*_entries`, `*_used`, or add it to [`STATE_KEYS`]); the test
//! `every_figure_of_every_design_is_a_count_a_state_or_a_fraction_after_warm_up` runs every
//! design with a warm-up and fails on a key that lands in `whole_run_keys` unexpectedly.

use crate::stats::ratio;
use serde_json::{Map, Number, Value};

/// Sections copied from the end of the run unchanged (configuration, wall-clock, trace file).
const COPIED_SECTIONS: &[&str] = &["config", "sim", "trace", "warmup"];

/// Keys (the last component of a path) that hold a state or an identifier, not a count; see
/// [`is_state`] for the name patterns that are states as well.
pub const STATE_KEYS: &[&str] = &[
    "seed",
    // The model version (`crate::stats::MODEL_VERSION`): an identifier, never a count.
    "model_version",
    "ways",
    "levels",
    "depth",
    "leaves",
    "nodes",
    "radix_nodes",
    "flattened_tables",
    "vmas",
    "processes",
    "mapped_4k",
    "mapped_2m",
    "mapped_1g",
    "process",
    "core",
    "asid",
    "cores",
    "interleave_refs",
    "quantum_cycles",
    "window_refs_configured",
    "mismatches",
    "pt_line_share",
    // Utopia: the share of a RestSeg's slots occupied at the end.
    "occupancy",
    // RMM: the ranges in the range table at the end.
    "ranges",
];

/// Sections all of whose values are states.
const STATE_SECTIONS: &[&str] = &[
    "mapped_bytes_by_size",
    "page_table",
    "resident_reuse",
    "va_gaps",
    // Elastic Translations: bytes mapped per translation size at the end (a state).
    "mapped_bytes_by_translation",
    // Utopia: each RestSeg's shape, placement and slots used at the end, and the RestSegs
    // created (`utopia.restsegs.<i>.*`, `utopia.restseg_layout.<i>.*`).
    "restsegs",
    "restseg_layout",
    // The queued DRAM model's peak (`dram.queued`).
    "peak_bandwidth_bytes_per_cycle",
];

/// Fractions whose denominator the record does not hold (the name rules would pick a wrong
/// one): kept as at the end of the run and listed in `warmup.whole_run_keys`.
const NOT_RECOMPUTED: &[&str] = &[
    // Per walk of the out-of-order core's walker, which the record does not count.
    "avg_walker_queue_cycles",
    // Per translation found, which the record does not count.
    "collision_rate",
    "single_access_walk_share",
    // Means over the upsizes that were measured, which the record does not count.
    "moved_fraction_per_upsize",
    "moved_fraction_per_in_place_upsize",
    // Utopia: a ratio of two mean walk latencies.
    "rsw_speedup_over_flex_walk",
];

/// Fractions whose numerator and denominator the name rules of [`fraction`] do not find:
/// `(key, numerator, denominator)`; a numerator missing from the record is rebuilt from the
/// fraction at both ends.
const FRACTIONS: &[(&str, &str, &str)] = &[
    // The L2 prefetcher (`cache.l2`): first demand hits per line it filled.
    ("prefetch_accuracy", "prefetch_hits", "prefetch_fills"),
    ("walks_during_resize_share", "walks_during_resize", "walks"),
    (
        "updates_during_resize_share",
        "updates_during_resize",
        "updates",
    ),
    ("reinsertions_per_insert", "reinsertions", "placements"),
    ("no_reinsertion_share", "no_reinsertion", "placements"),
    ("pte_writes_per_update", "pte_writes", "pte_updates"),
    ("avg_probe_cycles", "probe_cycles", "lookups"),
    ("walks_avoided_share", "rsw_hits", "walks"),
    // Utopia's per-walk averages (named `*_avg_cycles`, so not `avg_*`).
    ("rsw_avg_cycles", "rsw_cycles", "rsw_walks"),
    ("flex_walk_avg_cycles", "flex_walk_cycles", "flex_walks"),
    // The queued DRAM model (`dram.queued`).
    ("pt_read_share", "pt_reads", "reads"),
    ("avg_read_queue_cycles", "read_queue_cycles", "reads"),
    (
        "avg_pt_read_latency_cycles",
        "pt_read_latency_cycles",
        "pt_reads",
    ),
    (
        "avg_pt_read_queue_cycles",
        "pt_read_queue_cycles",
        "pt_reads",
    ),
    ("bandwidth_bytes_per_cycle", "bytes_moved", "run_cycles"),
    ("avg_walk_latency_cycles", "walk_busy_cycles", "walks_timed"),
];

/// Whether `key` (the last component of its path) names a state or an identifier rather than
/// a count: kept as at the end of the run.
///
/// # Examples
///
/// ```
/// use xlat::warmup::is_state;
/// assert!(is_state("4k_bytes_final") && is_state("pt_bytes_peak") && is_state("ways"));
/// assert!(!is_state("walks") && !is_state("bytes_copied") && !is_state("upsize_entries_moved"));
/// ```
pub fn is_state(key: &str) -> bool {
    STATE_KEYS.contains(&key)
        || key.ends_with("bytes")
        || key.contains("final")
        || key.contains("peak")
        || key.ends_with("_max")
        || key.starts_with("max_")
        || key.ends_with("entries")
        || key.ends_with("_used")
        || key.ends_with("_overhead")
        || key.starts_with("fmfi")
        || key.starts_with("free_blocks")
}

/// A float that is a count of cycles (summed over references), not a fraction.
fn is_float_count(key: &str) -> bool {
    key.ends_with("cycles")
        && !key.starts_with("avg_")
        && !key.contains("_per_")
        && !FRACTIONS.iter().any(|(k, _, _)| *k == key)
}

fn float(v: f64) -> Value {
    Number::from_f64(v)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

/// The figures of the measured region: `end` (the record at the end of the run) less `snap`
/// (the record when the warm-up ended), as described in the module doc. Returns the measured
/// record and the keys kept as at the end of the run although no rule says they are states
/// (`warmup.whole_run_keys`).
///
/// `translation_overlap` is `timing.translation_overlap`, which `timing.mmu_overhead_share`
/// depends on in the simple timing model.
pub fn measured(end: &Value, snap: &Value, translation_overlap: f64) -> (Value, Vec<String>) {
    let mut whole_run = Vec::new();
    let mut out = subtract(end, snap, "", false, &mut whole_run);
    if let (Value::Object(m), Value::Object(e), Value::Object(s)) = (&mut out, end, snap) {
        fractions(m, e, s, "", None, translation_overlap, &mut whole_run);
        if let Some(Value::Array(cores)) = m.get("cores").cloned() {
            machine_totals(m, &cores);
        }
    }
    crate::os::fault_latency::recompute_measured(&mut out, "", &mut whole_run);
    whole_run.sort();
    whole_run.dedup();
    (out, whole_run)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Counts subtracted, states kept; fractions are left for [`fractions`].
fn subtract(end: &Value, snap: &Value, path: &str, state: bool, whole: &mut Vec<String>) -> Value {
    let key = path.rsplit('.').next().unwrap_or(path);
    match end {
        Value::Object(e) => {
            let mut out = Map::new();
            for (k, ev) in e {
                let p = join(path, k);
                let sv = snap.get(k).unwrap_or(&Value::Null);
                let v = if path.is_empty() && COPIED_SECTIONS.contains(&k.as_str()) {
                    ev.clone()
                } else {
                    subtract(
                        ev,
                        sv,
                        &p,
                        state || STATE_SECTIONS.contains(&k.as_str()),
                        whole,
                    )
                };
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let snaps = snap.as_array();
            Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, ev)| {
                        let sv = snaps.and_then(|s| s.get(i)).unwrap_or(&Value::Null);
                        // Lists of records (cores, processes) keep their paths' names; lists
                        // of numbers (histograms, per-way counts) are counted element-wise.
                        let p = if ev.is_object() {
                            format!("{path}[]")
                        } else {
                            path.to_string()
                        };
                        subtract(ev, sv, &p, state, whole)
                    })
                    .collect(),
            )
        }
        Value::Number(n) if n.is_u64() => {
            let e = n.as_u64().unwrap_or(0);
            if state || is_state(key) {
                return end.clone();
            }
            match snap.as_u64() {
                None if snap.is_null() => end.clone(),
                Some(s) if s <= e => Value::from(e - s),
                _ => {
                    whole.push(path.to_string());
                    end.clone()
                }
            }
        }
        Value::Number(n) => {
            let e = n.as_f64().unwrap_or(0.0);
            if state || is_state(key) || !is_float_count(key) {
                // Fractions are recomputed by `fractions`; states stay.
                return end.clone();
            }
            match snap.as_f64() {
                Some(s) if s <= e => float(e - s),
                None if snap.is_null() => end.clone(),
                _ => {
                    whole.push(path.to_string());
                    end.clone()
                }
            }
        }
        _ => end.clone(),
    }
}

/// An integer of a section (0 when absent).
fn get_u64(m: &Map<String, Value>, key: &str) -> Option<u64> {
    m.get(key).and_then(Value::as_u64)
}

/// Recompute the fractions of section `m` (measured; `e` and `s` are the same section at the
/// end and at the snapshot). `instructions` is the measured instruction count of the enclosing
/// record (or core entry).
#[allow(clippy::too_many_arguments)]
fn fractions(
    m: &mut Map<String, Value>,
    e: &Map<String, Value>,
    s: &Map<String, Value>,
    path: &str,
    instructions: Option<u64>,
    translation_overlap: f64,
    whole: &mut Vec<String>,
) {
    let instructions = get_u64(m, "instructions").or(instructions);
    let empty = Map::new();
    let keys: Vec<String> = m.keys().cloned().collect();
    for k in &keys {
        let p = join(path, k);
        if path.is_empty() && COPIED_SECTIONS.contains(&k.as_str()) {
            continue;
        }
        if STATE_SECTIONS.contains(&k.as_str()) {
            continue;
        }
        let (ev, sv) = (e.get(k), s.get(k));
        match m.get_mut(k) {
            Some(Value::Object(child)) => {
                let ec = ev.and_then(Value::as_object).unwrap_or(&empty);
                let sc = sv.and_then(Value::as_object).unwrap_or(&empty);
                fractions(child, ec, sc, &p, instructions, translation_overlap, whole);
            }
            Some(Value::Array(items)) => {
                let ea = ev.and_then(Value::as_array);
                let sa = sv.and_then(Value::as_array);
                for (i, item) in items.iter_mut().enumerate() {
                    if let Value::Object(child) = item {
                        let ec = ea
                            .and_then(|a| a.get(i))
                            .and_then(Value::as_object)
                            .unwrap_or(&empty);
                        let sc = sa
                            .and_then(|a| a.get(i))
                            .and_then(Value::as_object)
                            .unwrap_or(&empty);
                        fractions(
                            child,
                            ec,
                            sc,
                            &format!("{p}[]"),
                            instructions,
                            translation_overlap,
                            whole,
                        );
                    }
                }
            }
            _ => {}
        }
    }
    // The timing section's fractions depend on the record level's counts.
    if let Some(Value::Object(t)) = m.get("timing") {
        let cycles = t.get("cycles").and_then(Value::as_f64).unwrap_or(0.0);
        let exposed = match t
            .get("head_stall_translation_cycles")
            .and_then(Value::as_f64)
        {
            Some(c) => c,
            None => {
                let overhead = m
                    .get("mmu")
                    .and_then(|x| x.get("overhead_cycles"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                (1.0 - translation_overlap) * overhead as f64
            }
        };
        let ipc = match instructions {
            Some(i) if cycles > 0.0 => i as f64 / cycles,
            _ => 0.0,
        };
        let share = if cycles > 0.0 { exposed / cycles } else { 0.0 };
        if let Some(Value::Object(t)) = m.get_mut("timing") {
            if t.contains_key("ipc") {
                t.insert("ipc".into(), float(ipc));
            }
            if t.contains_key("mmu_overhead_share") {
                t.insert("mmu_overhead_share".into(), float(share));
            }
        }
    }
    for k in keys {
        let Some(Value::Number(n)) = m.get(&k) else {
            continue;
        };
        if n.is_u64() || is_state(&k) || is_float_count(&k) {
            continue;
        }
        if path.ends_with("timing") && (k == "ipc" || k == "mmu_overhead_share") {
            continue;
        }
        if path.is_empty() && COPIED_SECTIONS.contains(&k.as_str()) {
            continue;
        }
        match fraction(m, e, s, &k, instructions) {
            Some(v) => {
                m.insert(k, float(v));
            }
            None => whole.push(join(path, &k)),
        }
    }
}

/// The page-walk cache levels of radix-style statistics, deepest first (the order a walk
/// looks them up in).
const PWC_LEVELS: [&str; 4] = ["pde", "pdpte", "pml4e", "pml5e"];

/// The level of a page-walk cache's miss rate key (`pwc_<level>_miss_rate`), as an index into
/// [`PWC_LEVELS`].
fn pwc_level(key: &str) -> Option<usize> {
    let level = key.strip_prefix("pwc_")?.strip_suffix("_miss_rate")?;
    PWC_LEVELS.iter().position(|n| *n == level)
}

/// The measured value of fraction `key` of section `m`, or `None` when no rule covers it.
fn fraction(
    m: &Map<String, Value>,
    e: &Map<String, Value>,
    s: &Map<String, Value>,
    key: &str,
    instructions: Option<u64>,
) -> Option<f64> {
    if NOT_RECOMPUTED.contains(&key) {
        return None;
    }
    let first_word = |p: &str| p.split('_').next().unwrap_or("").to_string();
    // (numerator, candidate denominators, scale)
    let (num, dens, scale): (String, Vec<String>, f64) =
        if let Some((_, n, d)) = FRACTIONS.iter().find(|(k, _, _)| *k == key) {
            (n.to_string(), vec![d.to_string()], 1.0)
        } else if let Some(j) = pwc_level(key) {
            // A page-walk cache's miss rate is of the lookups that reached it (every deeper
            // level's cache missed): radix's and fpt's `write_stats`.
            let lookups = get_u64(m, "pwc_lookups")?;
            let deeper: u64 = PWC_LEVELS[..j]
                .iter()
                .map(|n| get_u64(m, &format!("pwc_{n}_hits")).unwrap_or(0))
                .sum();
            let hits = get_u64(m, &format!("pwc_{}_hits", PWC_LEVELS[j]))?;
            return Some(1.0 - ratio(hits, lookups.saturating_sub(deeper)));
        } else if key == "row_hit_rate" {
            let hits = get_u64(m, "row_hits")?;
            let all = hits + get_u64(m, "row_empty")? + get_u64(m, "row_conflicts")?;
            return Some(ratio(hits, all));
        } else if let Some(p) = key.strip_suffix("miss_rate") {
            (
                format!("{p}misses"),
                vec![
                    format!("{p}lookups"),
                    format!("{p}accesses"),
                    format!("{}_lookups", first_word(p)),
                ],
                1.0,
            )
        } else if let Some(p) = key.strip_suffix("hit_rate") {
            (
                format!("{p}hits"),
                vec![
                    format!("{p}lookups"),
                    format!("{p}accesses"),
                    format!("{}_lookups", first_word(p)),
                ],
                1.0,
            )
        } else if let Some(p) = key.strip_suffix("mpki") {
            let misses = get_u64(m, &format!("{p}misses"))?;
            return Some(ratio(misses * 1000, instructions?));
        } else if let Some(x) = key.strip_prefix("avg_") {
            let dens = if x == "read_latency_cycles" {
                vec!["reads".into()]
            } else {
                vec!["count".into(), "accesses".into(), "cycles".into()]
            };
            (x.to_string(), dens, 1.0)
        } else if let Some((a, b)) = key.split_once("_per_") {
            (
                a.to_string(),
                vec![b.to_string(), format!("{b}s"), format!("{b}es")],
                1.0,
            )
        } else {
            return None;
        };
    let den_key = dens.iter().find(|d| m.get(d.as_str()).is_some())?;
    let value = |x: &Map<String, Value>, k: &str| x.get(k).and_then(Value::as_f64);
    let den = value(m, den_key)?;
    if let Some(n) = value(m, &num) {
        return Some(if den > 0.0 { scale * n / den } else { 0.0 });
    }
    // The record holds the fraction but not its numerator: rebuild the numerator from the
    // fraction and the denominator at both ends.
    let (fe, de) = (value(e, key)?, value(e, den_key)?);
    let (fs, ds) = (
        value(s, key).unwrap_or(0.0),
        value(s, den_key).unwrap_or(0.0),
    );
    // Nothing measured: the record's own value for an empty denominator (a radix PWC level no
    // walk reached reports a miss rate of 1, not 0) stays as the end of the run has it.
    Some(if den > 0.0 {
        ((fe * de - fs * ds) / den).max(0.0)
    } else {
        fe
    })
}

/// A multi-core record's totals: the machine's time is its slowest core's measured time, and
/// the exposed translation share is weighted by each core's cycles (as the engine computes them
/// at the end of a run).
fn machine_totals(m: &mut Map<String, Value>, cores: &[Value]) {
    let cycles: Vec<f64> = cores
        .iter()
        .map(|c| c["timing"]["cycles"].as_f64().unwrap_or(0.0))
        .collect();
    let max_cycles = cycles.iter().cloned().fold(0.0, f64::max);
    let sum_cycles: f64 = cycles.iter().sum();
    let exposed: f64 = cores
        .iter()
        .zip(&cycles)
        .map(|(c, n)| c["timing"]["mmu_overhead_share"].as_f64().unwrap_or(0.0) * n)
        .sum();
    let instructions = get_u64(m, "instructions").unwrap_or(0);
    if let Some(Value::Object(t)) = m.get_mut("timing") {
        t.insert("cycles".into(), float(max_cycles));
        t.insert(
            "ipc".into(),
            float(if max_cycles > 0.0 {
                instructions as f64 / max_cycles
            } else {
                0.0
            }),
        );
        t.insert(
            "mmu_overhead_share".into(),
            float(if sum_cycles > 0.0 {
                exposed / sum_cycles
            } else {
                0.0
            }),
        );
    }
}

/// Base pages first touched in the measured region of record `r` (measured): 4 KiB faults
/// count one, 2 MiB faults 512 (an initialization loop stores to every 4 KiB page of a huge
/// page it first touches). An estimate of the first-touch references for
/// [`first_touch_share`].
pub fn first_touch_pages(r: &Value) -> u64 {
    let faults = r["os"]["page_faults"].as_u64().unwrap_or(0);
    let faults_2m = r["os"]["faults_2m"].as_u64().unwrap_or(0);
    faults.saturating_sub(faults_2m) + faults_2m * 512
}

/// Share of the references of record `r` that were (by [`first_touch_pages`]) first touches of
/// a page, at most 1: near 1, the run measured a program's setup (its initialization loop), not
/// its steady state.
pub fn first_touch_share(r: &Value) -> f64 {
    let refs = r["refs"].as_u64().unwrap_or(0);
    ratio(first_touch_pages(r), refs).min(1.0)
}

/// Share of first touches above which a run's measured region counts as the first-touch phase
/// (the front end warns).
pub const FIRST_TOUCH_WARN_SHARE: f64 = 0.1;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn utopias_per_walk_averages_are_recomputed_from_the_measured_walks() {
        let snap = json!({"utopia": {"rsw_walks": 10, "rsw_cycles": 100, "rsw_avg_cycles": 10.0,
            "flex_walks": 4, "flex_walk_cycles": 400, "flex_walk_avg_cycles": 100.0}});
        let end = json!({"utopia": {"rsw_walks": 30, "rsw_cycles": 500, "rsw_avg_cycles": 16.7,
            "flex_walks": 6, "flex_walk_cycles": 500, "flex_walk_avg_cycles": 83.3}});
        let (m, whole) = measured(&end, &snap, 0.0);
        assert_eq!(m["utopia"]["rsw_avg_cycles"], 20.0);
        assert_eq!(m["utopia"]["flex_walk_avg_cycles"], 50.0);
        assert!(whole.is_empty(), "{whole:?}");
    }

    #[test]
    fn a_page_walk_caches_miss_rate_is_of_the_measured_lookups_that_reached_it() {
        // Measured: 100 lookups, 60 PDE hits, 30 PDPTE hits of the 40 that reached the PDPTE
        // cache, 5 PML4E hits of the 10 left (the end record's own rates are whole-run ones).
        let snap = json!({"radix": {"pwc_lookups": 1000, "pwc_pde_hits": 900,
            "pwc_pdpte_hits": 100, "pwc_pml4e_hits": 0, "pwc_pde_miss_rate": 0.1,
            "pwc_pdpte_miss_rate": 0.0, "pwc_pml4e_miss_rate": 0.0}});
        let end = json!({"radix": {"pwc_lookups": 1100, "pwc_pde_hits": 960,
            "pwc_pdpte_hits": 130, "pwc_pml4e_hits": 5, "pwc_pde_miss_rate": 0.127,
            "pwc_pdpte_miss_rate": 0.071, "pwc_pml4e_miss_rate": 0.5}});
        let (m, whole) = measured(&end, &snap, 0.0);
        assert_eq!(m["radix"]["pwc_pde_miss_rate"], 0.4);
        assert_eq!(m["radix"]["pwc_pdpte_miss_rate"], 0.25);
        assert_eq!(m["radix"]["pwc_pml4e_miss_rate"], 0.5);
        assert!(whole.is_empty(), "{whole:?}");
    }

    #[test]
    fn counts_are_subtracted_states_kept_and_fractions_recomputed() {
        let snap = json!({
            "refs": 100, "instructions": 200,
            "tlb": {"l1_lookups": 100, "l1_misses": 50, "l1_miss_rate": 0.5, "l1_mpki": 250.0},
            "walk": {"count": 40, "cycles": 800, "avg_cycles": 20.0},
            "timing": {"cycles": 1000.0, "ipc": 0.2, "mmu_overhead_share": 0.4},
            "mmu": {"overhead_cycles": 400},
            "page_table": {"bytes": 4096},
            "mehpt": {"ways": 3, "4k_bytes_final": 8192, "pmd_cwc_lookups": 10,
                      "pmd_cwc_hit_rate": 0.5, "reinsertions_hist": [4, 1]},
            "config": {"sim": {"refs": 5}}
        });
        let end = json!({
            "refs": 300, "instructions": 600,
            "tlb": {"l1_lookups": 300, "l1_misses": 70, "l1_miss_rate": 0.2333, "l1_mpki": 1.0},
            "walk": {"count": 60, "cycles": 1000, "avg_cycles": 16.6},
            "timing": {"cycles": 3000.0, "ipc": 0.2, "mmu_overhead_share": 0.2},
            "mmu": {"overhead_cycles": 600},
            "page_table": {"bytes": 8192},
            "mehpt": {"ways": 3, "4k_bytes_final": 16384, "pmd_cwc_lookups": 30,
                      "pmd_cwc_hit_rate": 0.8, "reinsertions_hist": [10, 3]},
            "config": {"sim": {"refs": 5}}
        });
        let (m, whole) = measured(&end, &snap, 0.0);
        assert_eq!(m["refs"], 200);
        assert_eq!(m["tlb"]["l1_misses"], 20);
        assert_eq!(m["tlb"]["l1_miss_rate"], 0.1);
        assert_eq!(m["tlb"]["l1_mpki"], 50.0);
        assert_eq!(m["walk"]["avg_cycles"], 10.0);
        assert_eq!(m["timing"]["cycles"], 2000.0);
        assert_eq!(m["timing"]["ipc"], 0.2);
        assert_eq!(m["timing"]["mmu_overhead_share"], 0.1);
        assert_eq!(m["page_table"]["bytes"], 8192);
        assert_eq!(m["mehpt"]["ways"], 3);
        assert_eq!(m["mehpt"]["4k_bytes_final"], 16384);
        assert_eq!(m["mehpt"]["reinsertions_hist"], json!([6, 2]));
        // 0.8 * 30 - 0.5 * 10 = 19 hits in 20 measured lookups.
        assert!((m["mehpt"]["pmd_cwc_hit_rate"].as_f64().unwrap() - 0.95).abs() < 1e-12);
        assert_eq!(m["config"], end["config"]);
        assert!(whole.is_empty(), "{whole:?}");
    }

    #[test]
    fn a_count_that_went_down_and_an_unknown_fraction_are_listed_as_whole_run_keys() {
        let snap = json!({"os": {"placed": 5, "mystery_ratio": 0.5}});
        let end = json!({"os": {"placed": 3, "mystery_ratio": 0.7}});
        let (m, whole) = measured(&end, &snap, 0.0);
        assert_eq!(m["os"]["placed"], 3);
        assert_eq!(m["os"]["mystery_ratio"], 0.7);
        assert_eq!(whole, vec!["os.mystery_ratio", "os.placed"]);
    }

    #[test]
    fn the_first_touch_share_counts_a_huge_page_fault_as_512_base_pages() {
        let r = json!({"refs": 2048, "os": {"page_faults": 3, "faults_2m": 2}});
        assert_eq!(first_touch_pages(&r), 1 + 1024);
        assert_eq!(first_touch_share(&r), 1025.0 / 2048.0);
        let r = json!({"refs": 10, "os": {"page_faults": 3, "faults_2m": 2}});
        assert_eq!(first_touch_share(&r), 1.0);
    }
}
