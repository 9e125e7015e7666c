//! Statistics output: every subsystem writes its counters into a nested JSON object with stable
//! snake_case keys (`tlb.l1_misses`, `walk.cycles`, ...). Counters themselves are plain integer
//! fields on the hot path; this module only shapes them into the result record at the end.

use serde_json::{Map, Value};

/// Version of the simulator, written into every result record.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Version of the simulation model: the latest of [`MODEL_CHANGES`]. A record carries the
/// version of the model *for its run* ([`model_version_of`], `model_version`), which is older
/// for runs that no later change touched.
///
/// What must stay true: two builds that give a run the same model version give the same record
/// for it (wall-clock fields aside). Bump it, and add the change to [`MODEL_CHANGES`] with the
/// runs it can move, in the commit of every CHANGELOG "Model changes" entry (the entry's heading
/// names the new version); the golden test refuses snapshots whose statistics changed under an
/// unchanged version, or under a change that names none of their runs, and a sweep reruns
/// stored runs of another model version instead of reusing them (docs/sweeps.md, "Resuming").
/// Version 1 is the model of 2026-11-29 (commit of the entry that introduced it); records
/// without the key predate it.
pub const MODEL_VERSION: u32 = 11;

/// Which runs a model change can move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelScope {
    /// Every run.
    All,
    /// Only runs of several cores or several processes (a machine, `engine/machine.rs`): a
    /// one-core, one-process run gives the record of the version before, bit for bit.
    Machines,
    /// Only multi-threaded traces on several cores (one process, `sim.cores` > 1): every other
    /// run gives the record of the version before, bit for bit.
    ThreadedTraces,
    /// Only runs of the design of this name (`sim.design`): a run of any other design gives
    /// the record of the version before, bit for bit.
    Design(&'static str),
    /// Only runs of the built-in workload of this name (`workload.name`, or one of the
    /// processes' names of a multi-programmed run; a trace whose file has the name counts too,
    /// which at worst reruns it): a run of any other workload gives the record of the version
    /// before, bit for bit.
    Workload(&'static str),
}

/// Every model version after 1 and the runs it can move, in order (the last is
/// [`MODEL_VERSION`]).
pub const MODEL_CHANGES: &[(u32, ModelScope)] = &[
    // A core of a machine settles its last references when its process ends (CHANGELOG).
    (2, ModelScope::Machines),
    // GUPS executes the recorded real program's 11 instructions per update, not 5 (CHANGELOG).
    (3, ModelScope::All),
    // A multi-threaded trace on several cores takes the idle DRAM model under `auto`: the
    // queued controller serialized its threads (CHANGELOG).
    (4, ModelScope::ThreadedTraces),
    // The OS clock of a one-core run is the core's own, not the `simple` formula's (CHANGELOG).
    (5, ModelScope::All),
    // LVM's training splits a leaf that cannot meet the error bound finely enough (§4.3.3).
    (6, ModelScope::Design("lvm")),
    // memcached's generator preallocates one chunk for all slab classes, as `-L` does.
    (7, ModelScope::Workload("memcached")),
    // A multi-threaded trace on several cores runs its threads in the cores' time order, and
    // under the queued DRAM model again (engine/threads.rs; CHANGELOG).
    (8, ModelScope::ThreadedTraces),
    // The default DRAM address mapping folds every row bit into channel and bank
    // (`row_hashed`, mem/dram/mapping.rs; CHANGELOG).
    (9, ModelScope::All),
    // The queued DRAM controller: a request leaves its queue at its ACTIVATE, and an empty
    // read queue starts a write mode that drains to the low watermark (Ramulator 2's
    // `promote_to_active` and `set_write_mode`; mem/dram/controller.rs; CHANGELOG).
    (10, ModelScope::All),
    // The queued DRAM controller drains writes ready first, then oldest (Ramulator 2's
    // FR-FCFS; mem/dram/controller.rs; CHANGELOG).
    (11, ModelScope::All),
];

/// The model version of a run of `cores` cores and `processes` processes of design `design`
/// (`sim.design`) on `workload` (the record's `workload`: a generator's name, the processes'
/// names joined by commas, or a trace's name): the latest change that can move it, 1 when none
/// can.
///
/// ```
/// // Version 11 moved every run (as versions 3, 5, 9 and 10 did): the latest change for all.
/// assert_eq!(xlat::model_version_of(1, 1, "radix", "gups"), 11);
/// assert_eq!(xlat::model_version_of(4, 4, "radix", "gups,kv,gups,kv"), 11);
/// assert_eq!(xlat::model_version_of(1, 1, "lvm", "memcached"), 11);
/// assert_eq!(xlat::model_version_of(4, 1, "radix", "app.xlat"), xlat::MODEL_VERSION);
/// // As of version 8: version 2 moved machines only; versions 4 and 8 only a multi-threaded
/// // trace on several cores (one process); version 6 LVM's runs only; version 7 memcached's.
/// use xlat::model_version_as_of as at;
/// assert_eq!(at(1, 1, "radix", "gups", 8), 5);
/// assert_eq!(at(4, 4, "radix", "gups,kv,gups,kv", 8), 5);
/// assert_eq!(at(1, 1, "lvm", "gups", 8), 6);
/// assert_eq!(at(1, 1, "radix", "memcached", 8), 7);
/// assert_eq!(at(2, 2, "radix", "gups,memcached", 8), 7);
/// assert_eq!(at(4, 1, "radix", "app.xlat", 8), 8);
/// ```
pub fn model_version_of(cores: u32, processes: u64, design: &str, workload: &str) -> u32 {
    model_version_as_of(cores, processes, design, workload, MODEL_VERSION)
}

/// [`model_version_of`] as a build of model version `version` gave it: the latest change up to
/// `version` that can move the run. Two records are of one model when each has the version of
/// its run as of the newer one (a design- or workload-scoped change leaves the other runs at the
/// version before, which is still the same model).
///
/// ```
/// assert_eq!(xlat::model_version_as_of(1, 1, "lvm", "gups", 5), 5);
/// assert_eq!(xlat::model_version_as_of(1, 1, "radix", "gups", 6), 5);
/// assert_eq!(xlat::model_version_as_of(2, 2, "radix", "gups,kv", 2), 2);
/// assert_eq!(xlat::model_version_as_of(1, 1, "radix", "gups", 2), 1);
/// assert_eq!(xlat::model_version_as_of(1, 1, "lvm", "memcached", 6), 6);
/// ```
pub fn model_version_as_of(
    cores: u32,
    processes: u64,
    design: &str,
    workload: &str,
    version: u32,
) -> u32 {
    let machine = cores > 1 || processes > 1;
    let threaded = cores > 1 && processes == 1;
    MODEL_CHANGES
        .iter()
        .filter(|(v, _)| *v <= version)
        .filter(|(_, scope)| match scope {
            ModelScope::All => true,
            ModelScope::Machines => machine,
            ModelScope::ThreadedTraces => threaded,
            ModelScope::Design(name) => *name == design,
            ModelScope::Workload(name) => workload.split(',').any(|w| w == *name),
        })
        .map(|(v, _)| *v)
        .max()
        .unwrap_or(1)
}

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
