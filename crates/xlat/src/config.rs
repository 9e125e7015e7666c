//! The configuration tree: one section per subsystem, one section per registered design.
//!
//! Every struct rejects unknown keys and has documented defaults, so a typo is an error rather
//! than a silently ignored setting. Configs are assembled in layers: built-in defaults, TOML
//! layers (any subset of keys each: the front end passes a CPU preset from `configs/cpus/`, then
//! the user's preset), then `section.field=value` overrides. The resolved tree is written into
//! every result record.
//!
//! Contract: `Config::default()` is a valid configuration; `resolve` / `resolve_layers` either
//! return a config in which every key came from one of the layers, or an error naming the
//! offending key and the layer that holds it (and
//! the closest valid key when there is one).

use crate::designs::DesignsConfig;
use crate::mem::MemConfig;
use crate::mmu::TlbConfig;
use crate::os::OsConfig;
use crate::timing::ooo::CoreConfig;
use crate::timing::TimingConfig;
use crate::virt::VirtConfig;
use crate::workloads::WorkloadConfig;
use serde::{Deserialize, Serialize};

pub use crate::suggest::closest;

/// Settings of the simulation run itself.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SimConfig {
    /// Registered design to simulate (see `xlat designs`).
    pub design: String,
    /// The settings around the design (`crate::profiles`): `auto` applies the design's own
    /// profile (its paper's OS policy, TLB organization, companion structures), `none` applies
    /// none (the bare mechanism on the default OS and TLBs), a baseline's name (`4k`, `thp`,
    /// `thp_res`) or a design's name applies that profile instead. The resolved configuration
    /// names the profile applied (`auto` becomes the design's name).
    pub profile: String,
    /// Number of memory references to simulate (the workload or trace may end sooner). With a
    /// warm-up (`warmup_refs`), the references measured after it: the run simulates
    /// `warmup_refs + refs` in all.
    pub refs: u64,
    /// References simulated before the measured region (the warm-up, as ChampSim's and
    /// Sniper's): the run simulates them, then the statistics restart from zero (see
    /// `crate::warmup` for how, and which keys are states rather than counts), then `refs`
    /// more are measured. Counted like `refs`: per process in a multi-process run. `"auto"`
    /// (the default) warms up until the workload's first-touch phase is over, at most `refs`
    /// ([`WarmupRefs`]); 0 measures from the first reference.
    pub warmup_refs: WarmupRefs,
    /// Seed of every random choice (workload generation, fragmentation, hashing salts).
    pub seed: u64,
    /// Check every translation against the OS model's mapping (the oracle).
    pub oracle: bool,
    /// Name of the CPU preset (`configs/cpus/<cpu>.toml`) the run's machine came from; empty
    /// for the built-in defaults. The front end (`xlat run --cpu`, `xlat.run(cpu=...)`)
    /// applies the preset's file as a layer beneath the user's preset and overrides (see
    /// [`Config::resolve_layers`]); the core itself only records the name, so that every
    /// result record says which machine it ran on.
    pub cpu: String,
    /// Cores (each with its own TLBs, design MMU caches, L1D and L2; LLC and DRAM shared).
    /// Process `i` of the workload list (`workload.name = "gups,kv"`, or the trace list) runs
    /// on core `i % cores`; more processes than cores time-share their core (`sim.quantum`).
    /// One trace on several cores is a multi-threaded program (each thread on its own core).
    /// See `docs/machine.md`.
    pub cores: u32,
    /// Time slice of a process on a core shared by several: an integer is core cycles
    /// (`"250000"`), a suffix `ms` / `us` converts at `mem.dram.core_clock_mhz` (`"20ms"`).
    pub quantum: String,
    /// Flush the core's TLBs and design MMU caches at every context switch (x86 without PCID);
    /// false keeps the ASID-tagged entries (PCID).
    pub flush_tlb_on_switch: bool,
    /// References after a context switch whose TLB / walk / MMU-cache misses are counted in
    /// `switch.*` (the cost of a switch on translation).
    pub switch_window_refs: u64,
    /// Cycles of one TLB-shootdown IPI round with several cores: charged to the initiating core
    /// (sending, waiting for the acknowledgements) and to each interrupted core (its handler).
    pub shootdown_ipi_cycles: u64,
    /// Sampled simulation (`crate::sampling`): of every `interval` references, `window` are
    /// measured in detail after `detailed_warmup` detailed but unmeasured ones, and the rest run
    /// functionally warmed (no core timing). `interval = "auto"` (the default) samples runs of
    /// at least `crate::sampling::AUTO_FROM_REFS` measured references on one core; 0 turns it
    /// off. The record's `sampling` section gives each rate's 95 % confidence interval.
    pub sampling: crate::sampling::SamplingConfig,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            design: "radix".into(),
            profile: crate::profiles::AUTO.into(),
            refs: 1_000_000,
            warmup_refs: WarmupRefs::Auto,
            seed: 1,
            oracle: true,
            cpu: String::new(),
            cores: 1,
            quantum: "20ms".into(),
            flush_tlb_on_switch: false,
            switch_window_refs: 1000,
            shootdown_ipi_cycles: 4000,
            sampling: crate::sampling::SamplingConfig::default(),
        }
    }
}

/// `sim.warmup_refs`: a number of references, or `"auto"`.
///
/// `"auto"` is resolved when the run is built ([`crate::engine::Simulation`]): the references of
/// the workload's first-touch phase (a built-in generator's setup: its allocations and the
/// first store to every page of its data, [`crate::trace::EventSource::first_touch_refs`]),
/// at most `sim.refs`, so that a run never simulates more than twice its `sim.refs`. A source
/// that cannot say (a trace file) warms up `sim.refs / 10`... see `WarmupRefs::resolve`.
/// The record's `warmup` section says how many references warmed up and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarmupRefs {
    /// Until the first-touch phase is over, at most `sim.refs`.
    Auto,
    /// Exactly this many references (0: no warm-up).
    Refs(u64),
}

impl WarmupRefs {
    /// The configured count; `Auto` counts as its cap, `refs`.
    pub fn at_most(self, refs: u64) -> u64 {
        match self {
            WarmupRefs::Auto => refs,
            WarmupRefs::Refs(n) => n,
        }
    }

    /// Whether a warm-up is configured (`Auto`, or a count above 0).
    pub fn is_set(self) -> bool {
        self != WarmupRefs::Refs(0)
    }
}

impl Serialize for WarmupRefs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            WarmupRefs::Auto => s.serialize_str("auto"),
            WarmupRefs::Refs(n) => s.serialize_u64(*n),
        }
    }
}

impl<'de> Deserialize<'de> for WarmupRefs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(
            match crate::addr::auto_or_refs(d, "\"auto\" or a number of references")? {
                None => WarmupRefs::Auto,
                Some(n) => WarmupRefs::Refs(n),
            },
        )
    }
}

/// Most cores a run may have (shootdown targets are tracked in a 64-bit mask).
pub const MAX_CORES: u32 = 64;

impl SimConfig {
    /// References a process simulates in all: the warm-up and the measured ones (what a
    /// workload generator must produce).
    ///
    /// With `warmup_refs = "auto"` before the run has resolved it, the most it may come to
    /// (`2 x refs`): a generator given this budget is cut where the resolved warm-up ends.
    pub fn simulated_refs(&self) -> u64 {
        self.refs
            .saturating_add(self.warmup_refs.at_most(self.refs))
    }

    /// `sim.quantum` in core cycles at `core_clock_mhz`.
    pub fn quantum_cycles(&self, core_clock_mhz: u32) -> Result<u64, String> {
        let raw = self.quantum.trim();
        let bad = || {
            format!(
                "sim.quantum: '{}' is not a time slice; give core cycles ('250000') or a time \
                 with a unit ('20ms', '500us')",
                self.quantum
            )
        };
        let (number, cycles_per_unit) = if let Some(n) = raw.strip_suffix("ms") {
            (n, core_clock_mhz as f64 * 1e3)
        } else if let Some(n) = raw.strip_suffix("us") {
            (n, core_clock_mhz as f64)
        } else {
            (raw.strip_suffix("cycles").unwrap_or(raw), 1.0)
        };
        let v: f64 = number.trim().replace('_', "").parse().map_err(|_| bad())?;
        if !v.is_finite() || v < 0.0 {
            return Err(bad());
        }
        let cycles = (v * cycles_per_unit).round();
        if cycles < 1.0 {
            return Err(format!(
                "sim.quantum must be positive (a quantum of 0 never lets a process run), got '{}'",
                self.quantum
            ));
        }
        if cycles > u64::MAX as f64 / 2.0 {
            return Err(bad());
        }
        Ok(cycles as u64)
    }
}

/// The whole configuration of one run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Run settings.
    pub sim: SimConfig,
    /// Built-in workload generator settings (ignored when a trace file is given).
    pub workload: WorkloadConfig,
    /// OS memory-manager model.
    pub os: OsConfig,
    /// TLB hierarchy.
    pub tlb: TlbConfig,
    /// Caches and DRAM.
    pub mem: MemConfig,
    /// Core timing model.
    pub timing: TimingConfig,
    /// The out-of-order core (`timing.model = "ooo"`).
    pub core: CoreConfig,
    /// Nested (virtualized) translation: the host OS and design (`virt.enabled`, see `virt/`).
    pub virt: VirtConfig,
    /// Per-design sections, flattened so that `radix.levels` is a top-level key path.
    #[serde(flatten)]
    pub designs: DesignsConfig,
}

/// A configuration problem, with a message fit to show a user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for ConfigError {}

/// A configuration with where its settings came from ([`Config::resolve_stack`]).
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The configuration.
    pub config: Config,
    /// `(key, source)` for every key whose value differs from the built-in default, in tree
    /// order; a source is `cpu:<name>`, `profile:<name>`, `preset:<name>`, `set` or `derived`.
    pub sources: Vec<(String, String)>,
    /// One line per profile setting that a preset or override replaced.
    pub warnings: Vec<String>,
    /// The profile applied (None: `sim.profile = "none"`).
    pub profile: Option<String>,
}

/// A layer's label in the provenance: a file path's stem (`configs/cpus/zen4.toml` -> `zen4`),
/// any other origin as given.
fn origin_label(origin: &str) -> &str {
    if origin.ends_with(".toml") || origin.contains('/') {
        let name = origin.rsplit('/').next().unwrap_or(origin);
        name.strip_suffix(".toml").unwrap_or(name)
    } else {
        origin
    }
}

/// The value at a dotted key of a TOML tree.
fn lookup<'a>(tree: &'a toml::Value, key: &str) -> Option<&'a toml::Value> {
    key.split('.').try_fold(tree, |node, part| node.get(part))
}

impl Config {
    /// Build a config from defaults, then an optional TOML preset text, then `key=value`
    /// overrides (keys are `section.field`, values are TOML literals or bare strings).
    pub fn resolve(
        preset_toml: Option<(&str, &str)>,
        overrides: &[(String, String)],
    ) -> Result<Config, ConfigError> {
        Self::resolve_layers(preset_toml.as_slice(), overrides)
    }

    /// [`Config::resolve`] with any number of TOML layers, given as `(origin, text)` and
    /// applied in order over the defaults (a later layer's key replaces an earlier one's),
    /// then the overrides. Every layer is checked on its own, so an unknown key or a bad
    /// value is reported with the origin of the layer that holds it; cross-field checks
    /// (`validate`) run once, on the final tree. The front end passes a CPU preset
    /// (`configs/cpus/<cpu>.toml`) and then the user's preset.
    pub fn resolve_layers(
        layers: &[(&str, &str)],
        overrides: &[(String, String)],
    ) -> Result<Config, ConfigError> {
        Ok(Self::resolve_stack(&[], layers, overrides)?.config)
    }

    /// Resolve the whole stack, with the profile and the provenance of every key: built-in
    /// defaults < `cpu` layers (a CPU preset) < the profile (`sim.profile`, chosen from the
    /// design and profile the whole stack names; `crate::profiles`) < `presets` < `overrides`.
    /// Layers are `(origin, text)`; an origin that is a file path is labelled by its file
    /// name's stem in the provenance.
    ///
    /// Contract: the result's `config` equals what the same stack gives without provenance;
    /// `sources` names, for every key whose value differs from the built-in default, the last
    /// layer that set it (`derived` for values the resolution computes, such as
    /// `ideal.levels` following `radix.levels`); `warnings` has one line per key of the profile
    /// that a preset or override set to another value.
    pub fn resolve_stack(
        cpu: &[(&str, &str)],
        presets: &[(&str, &str)],
        overrides: &[(String, String)],
    ) -> Result<Resolved, ConfigError> {
        let defaults = toml::Value::try_from(Config::default())
            .map_err(|e| ConfigError(format!("internal: cannot serialize defaults: {e}")))?;
        let parse = |(origin, text): &(&str, &str)| -> Result<toml::Value, ConfigError> {
            toml::from_str(text).map_err(|e| ConfigError(format!("{origin}: not valid TOML: {e}")))
        };
        let cpu_layers: Vec<toml::Value> = cpu.iter().map(parse).collect::<Result<_, _>>()?;
        let preset_layers: Vec<toml::Value> =
            presets.iter().map(parse).collect::<Result<_, _>>()?;

        // Which design and profile the stack names (every layer but the profile's own).
        let mut named = defaults.clone();
        for (layer, (origin, _)) in cpu_layers
            .iter()
            .zip(cpu)
            .chain(preset_layers.iter().zip(presets))
        {
            merge_checked(&mut named, layer, "", origin)?;
        }
        for (key, value) in overrides {
            set_key(&mut named, key, value)?;
        }
        let sim_str = |tree: &toml::Value, key: &str| -> String {
            tree.get("sim")
                .and_then(|t| t.get(key))
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string()
        };
        let design = sim_str(&named, "design");
        let profile_name = sim_str(&named, "profile");
        let profile = if crate::designs::Registry::find(&design).is_some() {
            crate::profiles::select(&design, &profile_name)
                .map_err(|e| ConfigError(format!("sim.profile: {e}")))?
        } else {
            None // validate() names the unknown design
        };

        let mut tree = defaults.clone();
        let mut sources: std::collections::BTreeMap<String, String> = Default::default();
        let note = |layer: &toml::Value,
                    label: &str,
                    sources: &mut std::collections::BTreeMap<String, String>| {
            for k in crate::profiles::leaf_keys(layer) {
                sources.insert(k, label.to_string());
            }
        };
        for (layer, (origin, _)) in cpu_layers.iter().zip(cpu) {
            merge_checked(&mut tree, layer, "", origin)?;
            note(
                layer,
                &format!("cpu:{}", origin_label(origin)),
                &mut sources,
            );
        }
        let mut after_profile = None;
        if let Some(p) = &profile {
            merge_checked(&mut tree, &p.layer, "", &format!("profile '{}'", p.name))?;
            note(&p.layer, &format!("profile:{}", p.name), &mut sources);
            after_profile = Some(tree.clone());
        }
        for (layer, (origin, _)) in preset_layers.iter().zip(presets) {
            merge_checked(&mut tree, layer, "", origin)?;
            note(
                layer,
                &format!("preset:{}", origin_label(origin)),
                &mut sources,
            );
        }
        for (key, value) in overrides {
            set_key(&mut tree, key, value)?;
            sources.insert(key.trim().to_string(), "set".into());
        }
        let mut all_layers: Vec<(&str, &str)> = cpu.to_vec();
        all_layers.extend_from_slice(presets);
        follow_paging_mode(&mut tree, &all_layers, overrides);
        let applied = profile
            .as_ref()
            .map(|p| p.name.clone())
            .unwrap_or_else(|| crate::profiles::NONE.to_string());
        if let Some(toml::Value::Table(sim)) = tree.get_mut("sim") {
            sim.insert("profile".into(), toml::Value::String(applied.clone()));
        }

        let mut warnings = Vec::new();
        if let (Some(p), Some(mid)) = (&profile, &after_profile) {
            for key in p.keys() {
                let (Some(set_to), Some(now)) = (lookup(mid, &key), lookup(&tree, &key)) else {
                    continue;
                };
                if set_to != now {
                    let by = sources
                        .get(&key)
                        .cloned()
                        .unwrap_or_else(|| "derived".into());
                    warnings.push(format!(
                        "{by} sets {key} = {now}, over the '{}' profile's {key} = {set_to}: this turns off {}",
                        p.name,
                        p.why(&key).unwrap_or("what the profile set it for")
                    ));
                }
            }
        }

        let mut differing = Vec::new();
        for key in crate::profiles::leaf_keys(&tree) {
            if lookup(&tree, &key) != lookup(&defaults, &key) {
                let source = sources
                    .get(&key)
                    .cloned()
                    .unwrap_or_else(|| "derived".into());
                differing.push((key, source));
            }
        }
        let config: Config = tree
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError(deserialize_message(&e.to_string())))?;
        config.validate()?;
        Ok(Resolved {
            config,
            sources: differing,
            warnings,
            profile: profile.map(|p| p.name),
        })
    }

    /// Every valid key path (`section.field`), in tree order.
    pub fn keys() -> Vec<String> {
        let tree = toml::Value::try_from(Config::default()).expect("defaults serialize");
        crate::profiles::leaf_keys(&tree)
    }

    /// Check cross-field constraints that serde cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if crate::designs::Registry::find(&self.sim.design).is_none() {
            let names: Vec<&str> = crate::designs::REGISTRY.iter().map(|d| d.name).collect();
            return Err(ConfigError(format!(
                "unknown design '{}'{}; registered designs: {}",
                self.sim.design,
                closest(&self.sim.design, names.iter().copied())
                    .map(|c| format!(" (did you mean '{c}'?)"))
                    .unwrap_or_default(),
                names.join(", ")
            )));
        }
        if !self.sim.cpu.is_empty()
            && !self
                .sim
                .cpu
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        {
            return Err(ConfigError(format!(
                "sim.cpu '{}' is not a CPU preset name (lowercase letters, digits, '-' and '_'; \
                 `xlat cpus` lists them)",
                self.sim.cpu
            )));
        }
        if self.sim.refs == 0 {
            return Err(ConfigError(
                "sim.refs must be at least 1 (a run of 0 references has no figures)".into(),
            ));
        }
        if self.sim.cores == 0 || self.sim.cores > MAX_CORES {
            return Err(ConfigError(format!(
                "sim.cores must be in 1..={MAX_CORES}, got {}",
                self.sim.cores
            )));
        }
        self.sim
            .quantum_cycles(self.mem.dram.core_clock_mhz.max(1))
            .map_err(ConfigError)?;
        self.sim.sampling.validate().map_err(ConfigError)?;
        if let Some(s) = self.sim.sampling.resolve(self.sim.refs, 1, 1) {
            if self.sim.refs < s.interval {
                return Err(ConfigError(format!(
                    "sim.refs ({}) is shorter than one sampling unit (sim.sampling.interval = \
                     {}): the run would measure no window; lower the interval or simulate more",
                    self.sim.refs, s.interval
                )));
            }
        }
        if self.sim.switch_window_refs == 0 {
            return Err(ConfigError(
                "sim.switch_window_refs must be at least 1".into(),
            ));
        }
        self.workload.validate().map_err(ConfigError)?;
        self.os.validate().map_err(ConfigError)?;
        // Checked here, up front, rather than when the OS model fragments memory at start-up.
        if self.os.fmfi_order > crate::os::buddy::MAX_ORDER {
            return Err(ConfigError(format!(
                "os.fmfi_order must be at most {} (the buddy allocator's largest order), got {}",
                crate::os::buddy::MAX_ORDER,
                self.os.fmfi_order
            )));
        }
        self.tlb.validate().map_err(ConfigError)?;
        self.mem.validate().map_err(ConfigError)?;
        self.timing.validate().map_err(ConfigError)?;
        self.core.validate().map_err(ConfigError)?;
        if self.mem.dram.model == crate::mem::DramModel::Queued
            && (self.timing.model != crate::timing::TimingModel::Ooo
                || self.core.resource_grant == crate::timing::ooo::ResourceGrant::IdleGaps)
        {
            return Err(ConfigError(
                "mem.dram.model = \"queued\" needs each request's time: timing.model = \"ooo\" \
                 with core.resource_grant \"time_order\" or \"program_order\" (or set \
                 mem.dram.model = \"auto\", which uses the idle model otherwise)"
                    .into(),
            ));
        }
        self.designs.validate().map_err(ConfigError)?;
        // One machine, one paging mode: the designs built on a radix tree must agree with it.
        for (key, levels) in [
            ("ideal.levels", self.designs.ideal.levels),
            ("perfect_tlb.levels", self.designs.perfect_tlb.levels),
        ] {
            if levels != self.designs.radix.levels {
                return Err(ConfigError(format!(
                    "{key} = {levels} disagrees with radix.levels = {}: the machine has one \
                     paging mode (radix.levels, which {key} follows when not set); set them alike",
                    self.designs.radix.levels
                )));
            }
        }
        self.virt
            .validate(self.os.phys_mem_bytes)
            .map_err(ConfigError)?;
        if self.virt.enabled {
            // Combinations not built yet, refused rather than simulated wrongly: the nested
            // host hook and its nested TLB belong to one core, and a coalesced or range entry
            // would be built from guest-physical frames, not the combined host frames.
            if self.sim.cores > 1 {
                return Err(ConfigError(format!(
                    "virt.enabled runs on one core; sim.cores = {} is not supported with \
                     nested translation yet",
                    self.sim.cores
                )));
            }
            // The contiguous bit is combined over both dimensions (virt::nested_span); CoLT
            // and range TLBs are not.
            if !matches!(
                self.tlb.coalescing,
                crate::mmu::Coalescing::None | crate::mmu::Coalescing::ContiguousBit
            ) || self.tlb.range.entries > 0
            {
                // rmm's profile sets the range TLB: say how to run RMM's table nested anyway.
                let hint = if self.tlb.range.entries > 0 && self.sim.profile == "rmm" {
                    "; rmm's profile sets tlb.range.entries = 32: add --profile none (or \
                     --set tlb.range.entries=0) to run RMM's tables nested without its range TLB"
                } else {
                    ""
                };
                return Err(ConfigError(format!(
                    "virt.enabled with tlb.coalescing = \"colt\" or tlb.range is not supported \
                     yet (combined gVA -> hPA entries are cached one page each; \
                     \"contiguous_bit\" is){hint}"
                )));
            }
        }
        Ok(())
    }

    /// Virtual-address bits of the machine's paging mode: 48 for 4-level paging, 57 for 5-level
    /// (`radix.levels`). A design may translate fewer (see `Design::va_bits`).
    pub fn machine_va_bits(&self) -> u32 {
        crate::addr::BASE_PAGE_SHIFT + 9 * self.designs.radix.levels
    }

    /// The DRAM model a run of this configuration uses: `mem.dram.model`, with `auto` resolved
    /// to `queued` when the core model gives every request a time (`timing.model = "ooo"` and
    /// `core.resource_grant` other than `idle_gaps`), else `idle`. (A run of one trace on several
    /// cores, a multi-threaded program, takes `idle` instead: the engine's builder resolves it
    /// there, `engine/builder.rs`, `dram_model_of_run`.)
    pub fn dram_model(&self) -> crate::mem::DramModel {
        let timed = self.timing.model == crate::timing::TimingModel::Ooo
            && self.core.resource_grant != crate::timing::ooo::ResourceGrant::IdleGaps;
        self.mem.dram.model.resolve(timed)
    }

    /// The resolved tree as TOML text.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("config serializes")
    }

    /// The resolved tree as JSON.
    ///
    /// `sim.warmup_refs` appears only when it is set (not 0), so that the records of runs
    /// without warm-up stay as they were before the key existed; likewise the queued DRAM
    /// model's `mem.dram` keys appear only when the run uses it, and `mem.dram.model` names the
    /// model used ([`Config::dram_model`]), never `auto`; `sim.sampling` appears only when
    /// sampling is on (`sim.sampling.interval` above 0).
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("config serializes");
        if !self.sim.warmup_refs.is_set() {
            if let Some(sim) = v.get_mut("sim").and_then(|s| s.as_object_mut()) {
                sim.shift_remove("warmup_refs");
            }
        }
        if !self.sim.sampling.is_on() {
            if let Some(sim) = v.get_mut("sim").and_then(|s| s.as_object_mut()) {
                sim.shift_remove("sampling");
            }
        }
        if let Some(dram) = v.pointer_mut("/mem/dram").and_then(|d| d.as_object_mut()) {
            self.mem.dram.trim_record(self.dram_model(), dram);
        }
        if self.core.dependences.is_trace() {
            // Said only when set to `ignore`: records from before the key keep their form.
            if let Some(core) = v.get_mut("core").and_then(|c| c.as_object_mut()) {
                core.shift_remove("dependences");
            }
        }
        if self.core.int_prf_entries == 0 {
            // Said only when modelled: records from before the key keep their form.
            if let Some(core) = v.get_mut("core").and_then(|c| c.as_object_mut()) {
                core.shift_remove("int_prf_entries");
            }
        }
        v
    }
}

/// A deserialization error as one line, key first: ``'os.policy': unknown value `thpp` (did
/// you mean `thp`?); expected one of ...`` for an unknown enum value, else the error with its
/// lines joined (serde puts the key on a line of its own).
fn deserialize_message(raw: &str) -> String {
    let mut lines = raw.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or_default().to_string();
    let key = lines
        .find_map(|l| l.strip_prefix("in `").and_then(|k| k.strip_suffix('`')))
        .map(str::to_string);
    let Some(key) = key else {
        return format!(
            "invalid configuration: {}",
            raw.split_whitespace().collect::<Vec<_>>().join(" ")
        );
    };
    if let Some(rest) = first.strip_prefix("unknown variant `") {
        if let Some((value, expected)) = rest.split_once("`, expected one of ") {
            let choices: Vec<&str> = expected.split(", ").map(|c| c.trim_matches('`')).collect();
            let hint = crate::suggest::closest(value, choices.iter().copied())
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            return format!("'{key}': unknown value `{value}`{hint}; expected one of {expected}");
        }
    }
    format!("'{key}': {first}")
}

/// `ideal.levels` and `perfect_tlb.levels` follow `radix.levels` (the machine's paging mode)
/// unless the preset or an override sets them; [`Config::validate`] rejects a disagreement.
fn follow_paging_mode(
    tree: &mut toml::Value,
    layers: &[(&str, &str)],
    overrides: &[(String, String)],
) {
    let layers: Vec<toml::Value> = layers
        .iter()
        .filter_map(|(_, t)| toml::from_str(t).ok())
        .collect();
    let Some(levels) = tree.get("radix").and_then(|r| r.get("levels")).cloned() else {
        return;
    };
    for section in ["ideal", "perfect_tlb"] {
        let in_preset = layers
            .iter()
            .any(|p| p.get(section).and_then(|s| s.get("levels")).is_some());
        let overridden = overrides
            .iter()
            .any(|(k, _)| k == &format!("{section}.levels"));
        if !in_preset && !overridden {
            if let Some(toml::Value::Table(t)) = tree.get_mut(section) {
                t.insert("levels".into(), levels.clone());
            }
        }
    }
}

/// Merge `src` into `dst`; every key of `src` must already exist in `dst` (the defaults tree).
fn merge_checked(
    dst: &mut toml::Value,
    src: &toml::Value,
    prefix: &str,
    origin: &str,
) -> Result<(), ConfigError> {
    let (toml::Value::Table(d), toml::Value::Table(s)) = (dst, src) else {
        return Err(ConfigError(format!("{origin}: '{prefix}' must be a table")));
    };
    for (k, v) in s {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match d.get_mut(k) {
            None => return Err(unknown_key(&path, origin)),
            Some(slot @ toml::Value::Table(_)) => {
                if matches!(v, toml::Value::Table(_)) {
                    merge_checked(slot, v, &path, origin)?;
                } else {
                    return Err(ConfigError(format!(
                        "{origin}: '{path}' is a section, not a value"
                    )));
                }
            }
            Some(slot) => *slot = coerce_like(slot, v.clone(), &path)?,
        }
    }
    Ok(())
}

fn unknown_key(path: &str, origin: &str) -> ConfigError {
    let keys = Config::keys();
    let hint = closest(path, keys.iter().map(String::as_str))
        .map(|c| format!("; did you mean '{c}'?"))
        .unwrap_or_default();
    ConfigError(format!(
        "{origin}: unknown configuration key '{path}'{hint} (`xlat config show` lists every key)"
    ))
}

/// Apply one `key=value` override.
fn set_key(tree: &mut toml::Value, key: &str, raw: &str) -> Result<(), ConfigError> {
    let mut node = tree;
    let parts: Vec<&str> = key.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let toml::Value::Table(t) = node else {
            return Err(unknown_key(key, "--set"));
        };
        let Some(child) = t.get_mut(*part) else {
            return Err(unknown_key(key, "--set"));
        };
        if i + 1 == parts.len() {
            if matches!(child, toml::Value::Table(_)) {
                return Err(ConfigError(format!(
                    "--set: '{key}' is a section; set one of its fields, e.g. '{}'",
                    Config::keys()
                        .into_iter()
                        .find(|k| k.starts_with(&format!("{key}.")))
                        .unwrap_or_default()
                )));
            }
            let parsed = parse_value(raw);
            *child = coerce_like(child, parsed, key)?;
            return Ok(());
        }
        node = child;
    }
    Err(unknown_key(key, "--set"))
}

/// Read a command-line value: a TOML literal if it is one, else a bare string.
fn parse_value(raw: &str) -> toml::Value {
    let wrapped = format!("v = {raw}");
    match toml::from_str::<toml::Table>(&wrapped) {
        Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(raw.into())),
        Err(_) => toml::Value::String(raw.into()),
    }
}

/// Make `new` the same TOML type as `old` where the conversion is lossless and obvious
/// (`"64GiB"` for an integer byte field, `1` for a float field), else report the mismatch.
fn coerce_like(old: &toml::Value, new: toml::Value, key: &str) -> Result<toml::Value, ConfigError> {
    use toml::Value as V;
    let bad = |what: &str| {
        ConfigError(format!(
            "'{key}' expects {what}, got {}",
            match &new {
                V::String(s) => format!("'{s}'"),
                other => other.to_string(),
            }
        ))
    };
    Ok(match (old, &new) {
        // Every integer key is unsigned.
        (V::Integer(_), V::Integer(i)) if *i < 0 => {
            return Err(ConfigError(format!(
                "'{key}' must not be negative, got {i}"
            )))
        }
        (V::Integer(_), V::Integer(_)) => new,
        (V::Integer(_), V::String(s)) => {
            let is_size = key.ends_with("_bytes") || key.ends_with("footprint");
            if s.trim_start().starts_with('-') {
                return Err(ConfigError(format!(
                    "'{key}' must not be negative, got '{s}'"
                )));
            }
            let parsed = if is_size {
                crate::addr::parse_bytes(s)
            } else {
                crate::addr::parse_count(s).or_else(|_| crate::addr::parse_bytes(s))
            };
            let value = parsed.map_err(|e| ConfigError(format!("'{key}': {e}")))?;
            // The configuration tree is TOML, whose integers are signed 64-bit.
            let value = i64::try_from(value).map_err(|_| {
                ConfigError(format!(
                    "'{key}' is at most {} (configuration integers are signed 64-bit), got '{s}'",
                    i64::MAX
                ))
            })?;
            V::Integer(value)
        }
        (V::Float(_), V::Float(_)) => new,
        (V::Float(_), V::Integer(i)) => V::Float(*i as f64),
        (V::Boolean(_), V::Boolean(_)) => new,
        (V::String(_), V::String(_)) => new,
        (V::String(_), V::Integer(i)) => V::String(i.to_string()),
        (V::String(_), V::Boolean(b)) => V::String(b.to_string()),
        (V::Array(_), V::Array(_)) => new,
        (V::Integer(_), _) => return Err(bad("an integer")),
        (V::Float(_), _) => return Err(bad("a number")),
        (V::Boolean(_), _) => return Err(bad("true or false")),
        _ => return Err(bad(old.type_str())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_enum_value_is_one_line_naming_the_key_and_the_closest_value() {
        let o = |k: &str, v: &str| (k.to_string(), v.to_string());
        let err = Config::resolve(None, &[o("os.policy", "thpp")])
            .unwrap_err()
            .0;
        let head = "'os.policy': unknown value `thpp` (did you mean `thp`?); expected one of \
                    `thp`, `mthp`, `reservation`, `eager`, `hawkeye`, `trident`";
        assert!(err.starts_with(head) && !err.contains('\n'), "{err}");
        let err = Config::resolve(None, &[o("tlb.coalescing", "contiguous")])
            .unwrap_err()
            .0;
        assert!(
            !err.contains('\n') && err.starts_with("'tlb.coalescing'"),
            "{err}"
        );
    }

    fn set(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_are_valid() {
        Config::default().validate().unwrap();
    }

    #[test]
    fn an_override_changes_exactly_its_key() {
        let cfg =
            Config::resolve(None, &set(&[("os.thp", "always"), ("radix.levels", "5")])).unwrap();
        assert_eq!(cfg.designs.radix.levels, 5);
        let mut expect = Config::default();
        expect.designs.radix.levels = 5;
        // The designs built on a radix tree follow the machine's paging mode.
        expect.designs.ideal.levels = 5;
        expect.designs.perfect_tlb.levels = 5;
        expect.os.thp = crate::os::ThpPolicy::Always;
        // Resolving names the profile that applied (radix's own: no settings).
        expect.sim.profile = "radix".into();
        assert_eq!(cfg, expect);
    }

    #[test]
    fn nested_translation_refuses_the_combinations_not_built_yet() {
        let on = ("virt.enabled", "true");
        for extra in [
            ("sim.cores", "2"),
            ("tlb.coalescing", "colt"),
            ("tlb.range.entries", "8"),
        ] {
            let mut pairs = vec![on, extra];
            if extra.0 == "sim.cores" {
                pairs.push(("workload.name", "gups,kv"));
            }
            let err = Config::resolve(None, &set(&pairs)).unwrap_err();
            assert!(err.0.contains("virt.enabled"), "{extra:?}: {err}");
        }
        assert!(Config::resolve(None, &set(&[on])).is_ok());
        // Elastic Translations in guest and host (virt::nested_span).
        assert!(Config::resolve(None, &set(&[on, ("tlb.coalescing", "contiguous_bit")])).is_ok());
    }

    #[test]
    fn ideal_and_perfect_tlb_levels_follow_radix_levels_or_are_rejected_when_they_disagree() {
        let five = Config::resolve(None, &set(&[("radix.levels", "5")])).unwrap();
        assert_eq!(five.machine_va_bits(), 57);
        assert_eq!(Config::default().machine_va_bits(), 48);
        let preset = ("p.toml", "[radix]\nlevels = 5\n[ideal]\nlevels = 5\n");
        assert!(Config::resolve(Some(preset), &[]).is_ok());
        for key in ["ideal.levels", "perfect_tlb.levels"] {
            let err = Config::resolve(None, &set(&[(key, "5")])).unwrap_err();
            assert!(
                err.0.contains(key) && err.0.contains("radix.levels = 4"),
                "{err}"
            );
            let err =
                Config::resolve(None, &set(&[("radix.levels", "5"), (key, "4")])).unwrap_err();
            assert!(err.0.contains("disagrees"), "{err}");
        }
    }

    #[test]
    fn an_unknown_key_is_named_with_the_closest_valid_one() {
        let err = Config::resolve(None, &set(&[("radix.levls", "5")])).unwrap_err();
        assert!(err.0.contains("'radix.levls'"), "{err}");
        assert!(err.0.contains("did you mean 'radix.levels'"), "{err}");
    }

    #[test]
    fn an_unknown_key_in_a_preset_is_an_error() {
        let err = Config::resolve(Some(("p.toml", "[os]\nthpp = 'always'\n")), &[]).unwrap_err();
        assert!(err.0.contains("p.toml"), "{err}");
        assert!(err.0.contains("os.thpp"), "{err}");
    }

    #[test]
    fn byte_sizes_are_accepted_in_human_units() {
        let cfg = Config::resolve(None, &set(&[("workload.footprint", "1GiB")])).unwrap();
        assert_eq!(cfg.workload.footprint, 1 << 30);
    }

    #[test]
    fn a_wrongly_typed_value_is_rejected() {
        let err = Config::resolve(None, &set(&[("radix.levels", "many")])).unwrap_err();
        assert!(err.0.contains("radix.levels"), "{err}");
    }

    #[test]
    fn an_unknown_design_is_rejected_with_a_suggestion() {
        let err = Config::resolve(None, &set(&[("sim.design", "radx")])).unwrap_err();
        assert!(err.0.contains("did you mean 'radix'"), "{err}");
    }

    fn error_of(pairs: &[(&str, &str)]) -> String {
        Config::resolve(None, &set(pairs)).unwrap_err().0
    }

    #[test]
    fn a_negative_integer_is_an_error_naming_the_key() {
        for v in ["-1MiB", "-1"] {
            let e = error_of(&[("workload.footprint", v)]);
            assert!(
                e.contains("'workload.footprint' must not be negative"),
                "{e}"
            );
        }
        let e = error_of(&[("sim.seed", "-3")]);
        assert!(e.contains("'sim.seed' must not be negative"), "{e}");
    }

    #[test]
    fn a_value_beyond_the_signed_64_bit_range_is_an_error_not_a_wrapped_number() {
        let e = error_of(&[("sim.seed", "18446744073709551615")]);
        assert!(
            e.contains("'sim.seed' is at most 9223372036854775807"),
            "{e}"
        );
        let cfg = Config::resolve(None, &set(&[("sim.seed", "9223372036854775807")])).unwrap();
        assert_eq!(cfg.sim.seed, i64::MAX as u64);
    }

    #[test]
    fn sizes_accept_pib_and_a_bad_size_says_which_units_exist() {
        assert_eq!(crate::addr::parse_bytes("1PiB"), Ok(1 << 50));
        // 1 PiB is a size, but not a footprint the generators support: the error says why.
        let e = error_of(&[("workload.footprint", "1PiB")]);
        assert!(
            e.contains("at most 1TiB") && e.contains("got 1024TiB"),
            "{e}"
        );
        let e = error_of(&[("workload.footprint", "1EiB")]);
        assert!(
            e.contains("'workload.footprint'") && e.contains("PiB"),
            "{e}"
        );
    }

    #[test]
    fn zero_refs_and_a_fragmentation_order_above_the_allocators_are_config_errors() {
        assert!(error_of(&[("sim.refs", "0")]).contains("sim.refs must be at least 1"));
        let e = error_of(&[("os.fmfi_order", "40")]);
        assert!(e.contains("os.fmfi_order must be at most 18"), "{e}");
    }

    #[test]
    fn sim_cpu_defaults_to_empty_and_is_recorded_as_given() {
        assert_eq!(Config::default().sim.cpu, "");
        let cfg = Config::resolve(None, &set(&[("sim.cpu", "neoverse-n1")])).unwrap();
        assert_eq!(cfg.sim.cpu, "neoverse-n1");
        assert_eq!(cfg.to_json()["sim"]["cpu"], "neoverse-n1");
        let e = error_of(&[("sim.cpu", "../etc/passwd")]);
        assert!(
            e.contains("sim.cpu '../etc/passwd' is not a CPU preset name"),
            "{e}"
        );
    }

    #[test]
    fn later_layers_replace_earlier_ones_and_overrides_beat_every_layer() {
        let cpu = (
            "cpus/x.toml",
            "[tlb.l2]\nentries = 1280\nways = 5\n[radix]\npwc_entries = 16\n",
        );
        let user = ("mine.toml", "[tlb.l2]\nentries = 2560\n");
        let cfg =
            Config::resolve_layers(&[cpu, user], &set(&[("radix.pwc_entries", "8")])).unwrap();
        assert_eq!(
            cfg.tlb.l2.entries, 2560,
            "the user's layer replaces the CPU's key"
        );
        assert_eq!(
            cfg.tlb.l2.ways, 5,
            "keys the user's layer does not name stay the CPU's"
        );
        assert_eq!(
            cfg.designs.radix.pwc_entries, 8,
            "an override beats every layer"
        );
        assert_eq!(
            Config::resolve_layers(&[], &[]).unwrap(),
            Config::resolve(None, &[]).unwrap()
        );
    }

    #[test]
    fn an_error_in_a_layer_names_that_layer() {
        let good = ("cpus/x.toml", "[tlb.l2]\nways = 5\n");
        let bad = ("cpus/y.toml", "[tlb.l2]\nwayz = 5\n");
        let e = Config::resolve_layers(&[good, bad], &[]).unwrap_err().0;
        assert!(
            e.starts_with("cpus/y.toml: unknown configuration key 'tlb.l2.wayz'"),
            "{e}"
        );
        // Cross-field checks run on the final tree: 1280 entries are 5-way sets only once the
        // second layer sets the ways.
        let entries = ("a.toml", "[tlb.l2]\nentries = 1280\n");
        let ways = ("b.toml", "[tlb.l2]\nways = 5\n");
        assert!(Config::resolve_layers(&[entries], &[]).is_err());
        assert!(Config::resolve_layers(&[entries, ways], &[]).is_ok());
    }

    #[test]
    fn mehpt_chunk_bytes_must_be_a_power_of_two_and_errors_name_their_design() {
        for v in ["0", "3000"] {
            let e = error_of(&[("mehpt.chunk_bytes", v)]);
            assert!(
                e.contains("mehpt.chunk_bytes must be a power of two"),
                "{e}"
            );
        }
        let e = error_of(&[("mehpt.upsize_occupancy", "0.1")]);
        assert!(e.starts_with("mehpt.upsize_occupancy (0.1) must be"), "{e}");
    }
}
