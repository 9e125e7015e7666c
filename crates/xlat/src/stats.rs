//! Statistics output: every subsystem writes its counters into a nested JSON object with stable
//! snake_case keys (`tlb.l1_misses`, `walk.cycles`, ...). Counters themselves are plain integer
//! fields on the hot path; this module only shapes them into the result record at the end.

use serde_json::{Map, Value};

/// Version of the simulator, written into every result record.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Version of the simulation model, written into every result record (`model_version`).
///
/// What must stay true: two builds with the same `MODEL_VERSION` give the same record for the
/// same configuration (wall-clock fields aside). Bump it in the commit of every CHANGELOG
/// "Model changes" entry (the entry's heading names the new version); the golden test refuses
/// snapshots whose statistics changed under an unchanged version, and a sweep reruns stored
/// runs of another model version instead of reusing them (docs/sweeps.md, "Resuming").
/// Version 1 is the model of 2026-11-29 (commit of the entry that introduced it); records
/// without the key predate it.
pub const MODEL_VERSION: u32 = 1;

/// A nested section of the result record.
pub type Stats = Map<String, Value>;

/// Convenience setters for a [`Stats`] section.
pub trait StatsExt {
    /// Set `key` to an integer.
    fn put_u64(&mut self, key: &str, v: u64);
    /// Set `key` to a float (non-finite values become `null`, never a bogus number).
    fn put_f64(&mut self, key: &str, v: f64);
    /// Set `key` to a string.
    fn put_str(&mut self, key: &str, v: &str);
    /// The sub-section `key`, created empty if missing.
    fn section(&mut self, key: &str) -> &mut Stats;
}

impl StatsExt for Stats {
    fn put_u64(&mut self, key: &str, v: u64) {
        self.insert(key.into(), Value::from(v));
    }
    fn put_f64(&mut self, key: &str, v: f64) {
        let value = serde_json::Number::from_f64(v)
            .map(Value::Number)
            .unwrap_or(Value::Null);
        self.insert(key.into(), value);
    }
    fn put_str(&mut self, key: &str, v: &str) {
        self.insert(key.into(), Value::from(v));
    }
    fn section(&mut self, key: &str) -> &mut Stats {
        let slot = self
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        slot.as_object_mut().expect("just made an object")
    }
}

/// `num / den`, or 0 when `den` is 0 (rates of events that never had a chance to happen).
pub fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

/// Look up a dotted key path (`"tlb.l1_misses"`) in a nested record.
pub fn get_path<'a>(record: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(record, |node, part| node.get(part))
}
