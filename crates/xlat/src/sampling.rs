//! Sampled simulation (`sim.sampling`): systematic sampling of short detailed windows in the
//! manner of SMARTS (Wunderlich et al., ISCA 2003), with functional warming in between.
//!
//! # Method
//!
//! The measured region (after `sim.warmup_refs`) is cut into units of `interval` references.
//! In each unit the first `interval - detailed_warmup - window` references run *functionally
//! warmed*: every piece of state that outlives a window is updated as in a detailed run (the
//! OS model and its faults, page tables and the design's structures, TLBs, page-walk caches,
//! caches and their replacement state, the fixed-latency DRAM model's row buffers), but the
//! out-of-order core is not given the reference and the queued DRAM controller sees none of
//! its memory requests. Then `detailed_warmup` references run in detail without being measured
//! (they refill the core's window and the DRAM queues), then `window` references run in detail
//! and are measured. The warm-up of `sim.warmup_refs` runs functionally warmed as well.
//!
//! # What is sampled and what is counted over the whole run
//!
//! Counts that functional warming keeps (references, instructions, TLB misses, walks and their
//! latency under the fixed-latency memory model, cache and DRAM counts, OS events) are exact
//! over the whole run. Core time exists only in the windows: `timing.cycles` is estimated as
//! the windows' mean cycles per reference times the references measured, and `timing.ipc` and
//! `timing.mmu_overhead_share` from it. The `sampling` section of the record gives, per window
//! metric, the mean and its 95 % confidence interval (Student t with `windows - 1` degrees of
//! freedom over the window-to-window variance), and lists which figures are estimates and
//! which cover the detailed references only (the core's own figures, the queued DRAM model's).
//!
//! Contract: with `sim.sampling.interval = 0` (the default) nothing here runs and a record is
//! bit-identical to one of a build without sampling; with it on, the record of a seed is
//! deterministic (wall-clock fields aside).

use crate::stats::{Stats, StatsExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Measured references (`sim.refs`) from which `sim.sampling.interval = "auto"` (the default)
/// samples a run: 200 units of [`AUTO_INTERVAL_REFS`], enough windows for a narrow interval
/// (docs/timing.md, "Sampled simulation"), and above every run of the test suite, the golden
/// snapshots and `xlat reproduce` (1-5 M references), whose figures stay those of full
/// detailed runs.
pub const AUTO_FROM_REFS: u64 = 20_000_000;

/// The unit `sim.sampling.interval = "auto"` samples with (the recommended interval: with the
/// default window and detailed warm-up, 4 % of the references run in detail).
pub const AUTO_INTERVAL_REFS: u64 = 100_000;

/// `sim.sampling.interval`: `"auto"` or a number of references (0: off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SamplingInterval {
    /// Sampled with [`AUTO_INTERVAL_REFS`] when the run measures at least [`AUTO_FROM_REFS`]
    /// references (per process) with no core shared by several processes; a full detailed run
    /// otherwise.
    Auto,
    /// Exactly this unit; 0 turns sampling off whatever the run's length.
    Refs(u64),
}

impl Serialize for SamplingInterval {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SamplingInterval::Auto => s.serialize_str("auto"),
            SamplingInterval::Refs(n) => s.serialize_u64(*n),
        }
    }
}

impl<'de> Deserialize<'de> for SamplingInterval {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let expects = "\"auto\", 0 (off) or a number of references";
        Ok(match crate::addr::auto_or_refs(d, expects)? {
            None => SamplingInterval::Auto,
            Some(n) => SamplingInterval::Refs(n),
        })
    }
}

/// `[sim.sampling]`: systematic sampling of detailed windows. Resolved per run by
/// [`SamplingConfig::resolve`] into a [`Sampling`] (or none: a full detailed run).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct SamplingConfig {
    /// References per sampling unit: `"auto"` (the default: [`AUTO_INTERVAL_REFS`] for runs of
    /// at least [`AUTO_FROM_REFS`] measured references, off below and where processes share a
    /// core), 0 (off), or a number (on, whatever the length).
    pub interval: SamplingInterval,
    /// References measured in detail at the end of each unit (the window).
    pub window: u64,
    /// References simulated in detail but not measured just before each window (they refill
    /// the out-of-order core's window and the DRAM queues after functional warming).
    pub detailed_warmup: u64,
}

impl Default for SamplingConfig {
    fn default() -> Self {
        SamplingConfig {
            interval: SamplingInterval::Auto,
            window: 2000,
            detailed_warmup: 2000,
        }
    }
}

/// A run's sampling once resolved: the unit in references and whether `"auto"` chose it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sampling {
    /// References per unit (above 0).
    pub interval: u64,
    /// References measured in detail at the end of each unit.
    pub window: u64,
    /// Detailed, unmeasured references before each window.
    pub detailed_warmup: u64,
    /// Whether `interval = "auto"` turned sampling on (the record says so).
    pub automatic: bool,
}

impl Sampling {
    /// References of each unit run functionally warmed.
    pub fn functional_refs(&self) -> u64 {
        self.interval - self.window - self.detailed_warmup
    }
}

impl SamplingConfig {
    /// Whether sampling is explicitly on (`interval` a number above 0); `"auto"` is decided by
    /// [`SamplingConfig::resolve`].
    pub fn is_on(&self) -> bool {
        matches!(self.interval, SamplingInterval::Refs(n) if n > 0)
    }

    /// The sampling of a run measuring `refs` references on `cores` cores in `processes`
    /// processes; `None`: a full detailed run. `"auto"` samples only what sampling supports
    /// (at most one process per core; several cores since model version 2) from
    /// [`AUTO_FROM_REFS`] on; an explicit interval is taken as given (its shape is checked by
    /// [`SamplingConfig::validate`], the rest by the run).
    pub fn resolve(&self, refs: u64, cores: u32, processes: u64) -> Option<Sampling> {
        let (interval, automatic) = match self.interval {
            SamplingInterval::Refs(0) => return None,
            SamplingInterval::Refs(n) => (n, false),
            SamplingInterval::Auto => {
                if refs < AUTO_FROM_REFS || processes > u64::from(cores.max(1)) {
                    return None;
                }
                (AUTO_INTERVAL_REFS, true)
            }
        };
        Some(Sampling {
            interval,
            window: self.window,
            detailed_warmup: self.detailed_warmup,
            automatic,
        })
    }

    /// Check the shape of a unit: an explicit interval's, and the automatic one's, so that a
    /// window too large for it is refused before a long run rather than silently unsampled.
    pub fn validate(&self) -> Result<(), String> {
        let (interval, key) = match self.interval {
            SamplingInterval::Refs(0) => return Ok(()),
            SamplingInterval::Refs(n) => (n, format!("sim.sampling.interval ({n})")),
            SamplingInterval::Auto => (
                AUTO_INTERVAL_REFS,
                format!(
                    "the automatic sim.sampling.interval ({AUTO_INTERVAL_REFS}, used from \
                     {AUTO_FROM_REFS} measured references on)"
                ),
            ),
        };
        if self.window == 0 {
            return Err(
                "sim.sampling.window must be at least 1 when sampling is on \
                 (sim.sampling.interval \"auto\" or above 0)"
                    .into(),
            );
        }
        if self.window.saturating_add(self.detailed_warmup) > interval {
            return Err(format!(
                "sim.sampling.window ({}) plus sim.sampling.detailed_warmup ({}) exceeds \
                 {key}: each unit of `interval` references holds its detailed warm-up and its \
                 window",
                self.window, self.detailed_warmup
            ));
        }
        Ok(())
    }
}

/// The running totals a window is measured from (taken at its first and after its last
/// reference).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Probe {
    /// References simulated (all processes; the warm-up's included).
    pub refs: u64,
    /// Instructions of those references.
    pub instructions: u64,
    /// Core cycles so far (the core model's, all of its references accounted; of several
    /// cores, the slowest core's: the machine's time).
    pub cycles: f64,
    /// Core cycles summed over the cores (`cycles` with one core): what the translation share
    /// is a share of.
    pub busy_cycles: f64,
    /// Cycles of those that retirement stood still behind a translation (`ooo`), or the
    /// exposed translation cycles of the `simple` formula.
    pub exposed_translation_cycles: f64,
    /// Data-side L1 TLB misses.
    pub l1_tlb_misses: u64,
    /// Data-side L2 TLB misses.
    pub l2_tlb_misses: u64,
    /// TLB-miss walks and their cycles.
    pub walks: u64,
    /// Cycles of those walks.
    pub walk_cycles: u64,
}

/// One measured window: the difference of its two probes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Window {
    refs: u64,
    instructions: u64,
    cycles: f64,
    busy: f64,
    exposed: f64,
    l1: u64,
    l2: u64,
    walks: u64,
    walk_cycles: u64,
}

impl Window {
    /// The window from its first probe `a` to its last `b`.
    pub fn between(a: &Probe, b: &Probe) -> Window {
        Window {
            refs: b.refs - a.refs,
            instructions: b.instructions - a.instructions,
            cycles: b.cycles - a.cycles,
            busy: b.busy_cycles - a.busy_cycles,
            exposed: b.exposed_translation_cycles - a.exposed_translation_cycles,
            l1: b.l1_tlb_misses - a.l1_tlb_misses,
            l2: b.l2_tlb_misses - a.l2_tlb_misses,
            walks: b.walks - a.walks,
            walk_cycles: b.walk_cycles - a.walk_cycles,
        }
    }
}

/// Two-sided 97.5 % quantiles of Student's t for 1..=30 degrees of freedom.
const T_975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// The 0.975 quantile of Student's t with `df` degrees of freedom (a table to 30, then the
/// Cornish-Fisher expansion around the normal's 1.959964, good to 1e-3).
pub fn t_975(df: u64) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T_975[df as usize - 1],
        _ => {
            let z: f64 = 1.959964;
            let n = df as f64;
            z + (z.powi(3) + z) / (4.0 * n)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
        }
    }
}

/// Mean and 95 % confidence half-width of `xs` (Student t over the sample variance); the
/// half-width is infinite with fewer than two values.
pub fn mean_ci(xs: &[f64]) -> (f64, f64) {
    let n = xs.len();
    if n == 0 {
        return (0.0, f64::INFINITY);
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, f64::INFINITY);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, t_975(n as u64 - 1) * (var / n as f64).sqrt())
}

fn put_interval(out: &mut Stats, key: &str, xs: &[f64]) {
    let (mean, half) = mean_ci(xs);
    let s = out.section(key);
    s.put_u64("n", xs.len() as u64);
    s.put_f64("mean", mean);
    if half.is_finite() {
        s.put_f64("ci95_low", mean - half);
        s.put_f64("ci95_high", mean + half);
        s.put_f64("ci95_half_width", half);
        s.put_f64(
            "ci95_relative",
            if mean != 0.0 { half / mean.abs() } else { 0.0 },
        );
    }
}

/// Per-window values of the rates the `sampling` section reports.
fn series(windows: &[Window]) -> Vec<(&'static str, Vec<f64>)> {
    let per_ref = |f: &dyn Fn(&Window) -> f64| -> Vec<f64> {
        windows.iter().filter(|w| w.refs > 0).map(f).collect()
    };
    let per_instr = |f: &dyn Fn(&Window) -> f64| -> Vec<f64> {
        windows
            .iter()
            .filter(|w| w.instructions > 0)
            .map(f)
            .collect()
    };
    vec![
        ("cycles_per_ref", per_ref(&|w| w.cycles / w.refs as f64)),
        ("cpi", per_instr(&|w| w.cycles / w.instructions as f64)),
        (
            "ipc",
            windows
                .iter()
                .filter(|w| w.cycles > 0.0)
                .map(|w| w.instructions as f64 / w.cycles)
                .collect(),
        ),
        (
            "l1_tlb_mpki",
            per_instr(&|w| w.l1 as f64 * 1000.0 / w.instructions as f64),
        ),
        (
            "l2_tlb_mpki",
            per_instr(&|w| w.l2 as f64 * 1000.0 / w.instructions as f64),
        ),
        (
            "avg_walk_cycles",
            windows
                .iter()
                .filter(|w| w.walks > 0)
                .map(|w| w.walk_cycles as f64 / w.walks as f64)
                .collect(),
        ),
        (
            "mmu_overhead_share",
            windows
                .iter()
                .filter(|w| w.busy > 0.0)
                .map(|w| w.exposed / w.busy)
                .collect(),
        ),
    ]
}

/// Keys of the record's `timing` section that are estimates from the windows.
pub const ESTIMATED_KEYS: &[&str] = &["timing.cycles", "timing.ipc", "timing.mmu_overhead_share"];

/// Rewrite record `r` (of the measured region, whole-run counts) for a sampled run: the
/// timing estimates from `windows` and the `sampling` section. `detailed_refs` is how many
/// references ran in detail (windows and their warm-ups). With several cores, `windows` are
/// the machine's and `cores[k]` core `k`'s part of each (empty with one core).
pub fn finish_record(
    r: &mut Value,
    cfg: &Sampling,
    windows: &[Window],
    cores: &[Vec<Window>],
    detailed_refs: u64,
) {
    let refs = r["refs"].as_u64().unwrap_or(0);
    let instructions = r["instructions"].as_u64().unwrap_or(0);
    let rates = series(windows);
    let mut s = Stats::new();
    s.put_u64("interval", cfg.interval);
    // Whether `interval = "auto"` chose to sample (a long run), or the configuration asked.
    s.insert("automatic".into(), Value::Bool(cfg.automatic));
    s.put_u64("window", cfg.window);
    s.put_u64("detailed_warmup", cfg.detailed_warmup);
    s.put_u64("windows", windows.len() as u64);
    s.put_u64("measured_refs", windows.iter().map(|w| w.refs).sum());
    s.put_u64("detailed_refs", detailed_refs);
    s.put_f64(
        "detailed_share",
        if refs > 0 {
            detailed_refs as f64 / refs as f64
        } else {
            0.0
        },
    );
    s.put_str("interval_method", "student_t_95");
    {
        let m = s.section("metrics");
        for (k, xs) in &rates {
            put_interval(m, k, xs);
        }
    }
    // Each window's cycles per reference, in order: two runs sampled at the same references
    // (same workload, seed, warm-up and unit) pair window by window, which gives a speedup's
    // interval from the per-window ratios (python/xlat/intervals.py) rather than from two
    // independent variances.
    s.insert(
        "window_cycles_per_ref".into(),
        Value::Array(
            rates[0]
                .1
                .iter()
                .map(|&x| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number))
                .collect(),
        ),
    );
    if windows.is_empty() {
        // A trace that ended within the first unit: no estimate, and the timing figures are
        // left as the detailed references gave them (none, when it ended in the functional
        // part).
        s.put_str(
            "estimate",
            "none: no window was completed (the run ended within its first unit)",
        );
        r["sampling"] = Value::Object(s);
        return;
    }
    // The run's estimate: exact references and instructions, the windows' mean time per
    // reference; its interval follows from that of `cycles_per_ref`.
    let (e, cycles, ipc, share) = estimate(&rates, refs, instructions);
    s.insert("estimate".into(), Value::Object(e));
    let mut estimated: Vec<&str> = ESTIMATED_KEYS.to_vec();
    if !cores.is_empty() {
        estimated.extend(CORE_ESTIMATED_KEYS);
    }
    s.insert("estimated_keys".into(), Value::from(estimated));
    s.put_str(
        "detailed_refs_only",
        "the out-of-order core's own figures (timing.* other than the estimated keys) and the \
         queued DRAM model's (dram.* from the controller) cover the detailed references only",
    );
    s.put_str(
        "whole_run",
        if cores.is_empty() {
            "every other figure (references, instructions, TLB, page-walk cache, walk, cache, \
             OS and design counts) is counted over every reference: functional warming keeps them"
        } else {
            "every other figure (references, instructions, TLB, page-walk cache, walk, cache, \
             OS and design counts) is counted over every reference; on several cores the cores \
             take their turns by the simple formula's clock while functionally warmed, so the \
             figures of shared state (LLC, DRAM row buffers, OS) are those of a slightly \
             different interleaving than a full detailed run's"
        },
    );
    put_timing(r.get_mut("timing"), cycles, ipc, share);
    if !cores.is_empty() {
        finish_cores(r, &mut s, cores);
    }
    r["sampling"] = Value::Object(s);
}

/// Keys of each core's record (`cores[k]`) that a sampled run of several cores estimates from
/// that core's windows.
pub const CORE_ESTIMATED_KEYS: &[&str] = &[
    "cores.timing.cycles",
    "cores.timing.ipc",
    "cores.timing.mmu_overhead_share",
];

/// The estimate of a run (or of one core) from its windows' `rates` ([`series`]): the
/// `estimate` section, and the estimated cycles, IPC and translation share.
fn estimate(
    rates: &[(&'static str, Vec<f64>)],
    refs: u64,
    instructions: u64,
) -> (Stats, f64, f64, f64) {
    let (cpr, cpr_half) = mean_ci(&rates[0].1);
    let (share, _) = mean_ci(&rates[6].1);
    let (e, cycles, ipc) = estimate_section(
        cpr,
        cpr_half,
        refs,
        instructions,
        "cycles = mean cycles per reference of the windows x references measured; \
         ipc = instructions / cycles (instructions counted over the whole run)",
    );
    (e, cycles, ipc, share)
}

/// The `estimate` section of a time per reference `cpr` (half-width `half` of its 95 %
/// interval) over `refs` references of `instructions` instructions, and the cycles and IPC.
fn estimate_section(
    cpr: f64,
    half: f64,
    refs: u64,
    instructions: u64,
    method: &str,
) -> (Stats, f64, f64) {
    let ipc_at = |c: f64| {
        if c > 0.0 {
            instructions as f64 / (c * refs as f64)
        } else {
            0.0
        }
    };
    let mut e = Stats::new();
    e.put_f64("cycles", cpr * refs as f64);
    e.put_f64("ipc", ipc_at(cpr));
    if half.is_finite() {
        e.put_f64("ipc_ci95_low", ipc_at(cpr + half));
        // Unbounded above when the interval of the time per reference reaches 0.
        if cpr - half > 0.0 {
            e.put_f64("ipc_ci95_high", ipc_at(cpr - half));
        }
    }
    e.put_str("method", method);
    (e, cpr * refs as f64, ipc_at(cpr))
}

/// One core's estimate in a sampled run of several cores: the ratio estimator of its cycles
/// per reference, its windows' cycles over their references (a window holds fewer of a core's
/// references where the core runs slower than the others, so the windows' plain mean would
/// weigh its slow phases too much), times its references measured; the interval by the delta
/// method, `se = sqrt(sum (c_i - R r_i)^2 / (n - 1) / n) / mean(r)`, Student t with `n - 1`
/// degrees of freedom. Returns what [`estimate`] returns.
fn core_estimate(windows: &[Window], refs: u64, instructions: u64) -> (Stats, f64, f64, f64) {
    let ws: Vec<&Window> = windows.iter().filter(|w| w.refs > 0).collect();
    let n = ws.len();
    let sum_r: f64 = ws.iter().map(|w| w.refs as f64).sum();
    let sum_c: f64 = ws.iter().map(|w| w.cycles).sum();
    let sum_b: f64 = ws.iter().map(|w| w.busy).sum();
    let sum_x: f64 = ws.iter().map(|w| w.exposed).sum();
    let cpr = sum_c / sum_r;
    let half = if n >= 2 {
        let mean_r = sum_r / n as f64;
        let var = ws
            .iter()
            .map(|w| (w.cycles - cpr * w.refs as f64).powi(2))
            .sum::<f64>()
            / (n - 1) as f64;
        t_975(n as u64 - 1) * (var / n as f64).sqrt() / mean_r
    } else {
        f64::INFINITY
    };
    let (mut e, cycles, ipc) = estimate_section(
        cpr,
        half,
        refs,
        instructions,
        "cycles = the core's cycles over its references in the windows (ratio estimator) x \
         its references measured; ipc = instructions / cycles",
    );
    e.put_f64("cycles_per_ref", cpr);
    let share = if sum_b > 0.0 { sum_x / sum_b } else { 0.0 };
    (e, cycles, ipc, share)
}

/// Write the estimated figures into a record's `timing` section (when it has one).
fn put_timing(timing: Option<&mut Value>, cycles: f64, ipc: f64, share: f64) {
    if let Some(t) = timing.and_then(Value::as_object_mut) {
        let f = |v: f64| serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number);
        t.insert("cycles".into(), f(cycles));
        t.insert("ipc".into(), f(ipc));
        t.insert("mmu_overhead_share".into(), f(share));
    }
}

/// Each core's estimate in a sampled run of several cores, from that core's part of every
/// window (`cores[k]`: its references and cycles between the window's two probes; a core
/// whose process had ended has none): its `timing` figures in `r["cores"][k]` and its
/// intervals in `sampling.cores[k]`. The machine's own figures come from the machine's
/// windows (its time the slowest core's), so the slowest core's estimate and the machine's
/// are two estimates of nearly the same time, not one.
fn finish_cores(r: &mut Value, s: &mut Stats, cores: &[Vec<Window>]) {
    let mut out = Vec::with_capacity(cores.len());
    for (k, windows) in cores.iter().enumerate() {
        let rates = series(windows);
        let mut c = Stats::new();
        c.put_u64("windows", rates[0].1.len() as u64);
        {
            let m = c.section("metrics");
            for (key, xs) in &rates {
                put_interval(m, key, xs);
            }
        }
        if let Some(rec) = r.get_mut("cores").and_then(|all| all.get_mut(k)) {
            let refs = rec["refs"].as_u64().unwrap_or(0);
            let instructions = rec["instructions"].as_u64().unwrap_or(0);
            if !rates[0].1.is_empty() {
                let (e, cycles, ipc, share) = core_estimate(windows, refs, instructions);
                c.insert("estimate".into(), Value::Object(e));
                put_timing(rec.get_mut("timing"), cycles, ipc, share);
            }
        }
        out.push(Value::Object(c));
    }
    s.insert("cores".into(), Value::Array(out));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn students_t_matches_its_table_and_tends_to_the_normal() {
        assert_eq!(t_975(1), 12.706);
        assert_eq!(t_975(30), 2.042);
        assert!((t_975(40) - 2.021).abs() < 1e-3, "{}", t_975(40));
        assert!((t_975(120) - 1.980).abs() < 1e-3, "{}", t_975(120));
        assert!((t_975(1_000_000) - 1.96).abs() < 1e-3);
    }

    #[test]
    fn the_interval_of_a_known_sample_is_its_mean_plus_or_minus_t_times_the_standard_error() {
        let (m, h) = mean_ci(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(m, 3.0);
        // s = sqrt(2.5), t(4) = 2.776.
        assert!((h - 2.776 * (2.5f64 / 5.0).sqrt()).abs() < 1e-12);
        assert!(mean_ci(&[7.0]).1.is_infinite());
    }

    #[test]
    fn a_window_larger_than_its_interval_is_refused_with_the_keys_named() {
        let bad = SamplingConfig {
            interval: SamplingInterval::Refs(1000),
            window: 900,
            detailed_warmup: 200,
        };
        let e = bad.validate().unwrap_err();
        assert!(e.contains("sim.sampling.window (900)") && e.contains("interval (1000)"));
        let zero = SamplingConfig {
            interval: SamplingInterval::Refs(1000),
            window: 0,
            detailed_warmup: 0,
        };
        assert!(zero.validate().unwrap_err().contains("at least 1"));
        assert!(SamplingConfig::default().validate().is_ok());
        assert!(!SamplingConfig::default().is_on());
        // The automatic unit's shape is checked too, before any long run meets it.
        let auto_too_small = SamplingConfig {
            window: 90_000,
            detailed_warmup: 20_000,
            ..SamplingConfig::default()
        };
        let e = auto_too_small.validate().unwrap_err();
        assert!(
            e.contains("the automatic sim.sampling.interval (100000"),
            "{e}"
        );
        // Off is off, whatever the window.
        let off = SamplingConfig {
            interval: SamplingInterval::Refs(0),
            window: 0,
            detailed_warmup: 0,
        };
        assert!(off.validate().is_ok());
    }

    #[test]
    fn auto_samples_long_runs_with_no_core_shared_by_processes() {
        let auto = SamplingConfig::default();
        assert_eq!(auto.resolve(AUTO_FROM_REFS - 1, 1, 1), None);
        assert_eq!(
            auto.resolve(AUTO_FROM_REFS, 1, 1),
            Some(Sampling {
                interval: AUTO_INTERVAL_REFS,
                window: 2000,
                detailed_warmup: 2000,
                automatic: true,
            })
        );
        // Several cores too (model version 2), a process each or a threaded trace.
        assert!(auto.resolve(AUTO_FROM_REFS, 2, 2).is_some());
        assert!(auto.resolve(AUTO_FROM_REFS, 4, 1).is_some());
        // What sampling does not support stays a full detailed run rather than an error.
        assert_eq!(auto.resolve(AUTO_FROM_REFS, 1, 2), None);
        assert_eq!(auto.resolve(AUTO_FROM_REFS - 1, 4, 4), None);
        // 0 turns it off at any length; a number turns it on at any length.
        let off = SamplingConfig {
            interval: SamplingInterval::Refs(0),
            ..auto
        };
        assert_eq!(off.resolve(u64::MAX, 1, 1), None);
        let on = SamplingConfig {
            interval: SamplingInterval::Refs(5000),
            ..auto
        };
        let s = on.resolve(10_000, 1, 1).unwrap();
        assert_eq!(
            (s.interval, s.automatic, s.functional_refs()),
            (5000, false, 1000)
        );
    }

    #[test]
    fn the_interval_reads_auto_zero_and_counts_and_writes_them_back() {
        #[derive(Deserialize, Serialize)]
        struct T {
            i: SamplingInterval,
        }
        let read = |text: &str| toml::from_str::<T>(text).map(|t| t.i);
        assert_eq!(read("i = \"auto\"").unwrap(), SamplingInterval::Auto);
        assert_eq!(read("i = 0").unwrap(), SamplingInterval::Refs(0));
        assert_eq!(
            read("i = \"100k\"").unwrap(),
            SamplingInterval::Refs(100_000)
        );
        assert!(read("i = -3")
            .unwrap_err()
            .to_string()
            .contains("must not be negative"));
        assert!(read("i = \"often\"")
            .unwrap_err()
            .to_string()
            .contains("\"auto\", 0 (off)"));
        let text = |i| serde_json::to_string(&T { i }).unwrap();
        assert_eq!(text(SamplingInterval::Auto), r#"{"i":"auto"}"#);
        assert_eq!(text(SamplingInterval::Refs(7)), r#"{"i":7}"#);
    }
}
