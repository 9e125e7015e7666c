//! The configuration tree: one section per subsystem, one section per registered design.
//!
//! Every struct rejects unknown keys and has documented defaults, so a typo is an error rather
//! than a silently ignored setting. Configs are assembled in three layers: built-in defaults, a
//! TOML preset (any subset of keys), then `section.field=value` overrides. The resolved tree is
//! written into every result record.
//!
//! Contract: `Config::default()` is a valid configuration; `resolve` either returns a config in
//! which every key came from one of the three layers, or an error naming the offending key (and
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

/// Settings of the simulation run itself.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SimConfig {
    /// Registered design to simulate (see `xlat designs`).
    pub design: String,
    /// Number of memory references to simulate (the workload or trace may end sooner).
    pub refs: u64,
    /// Seed of every random choice (workload generation, fragmentation, hashing salts).
    pub seed: u64,
    /// Check every translation against the OS model's mapping (the oracle).
    pub oracle: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            design: "radix".into(),
            refs: 1_000_000,
            seed: 1,
            oracle: true,
        }
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

impl Config {
    /// Build a config from defaults, then an optional TOML preset text, then `key=value`
    /// overrides (keys are `section.field`, values are TOML literals or bare strings).
    pub fn resolve(
        preset_toml: Option<(&str, &str)>,
        overrides: &[(String, String)],
    ) -> Result<Config, ConfigError> {
        let mut tree = toml::Value::try_from(Config::default())
            .map_err(|e| ConfigError(format!("internal: cannot serialize defaults: {e}")))?;
        if let Some((origin, text)) = preset_toml {
            let preset: toml::Value = toml::from_str(text)
                .map_err(|e| ConfigError(format!("{origin}: not valid TOML: {e}")))?;
            merge_checked(&mut tree, &preset, "", origin)?;
        }
        for (key, value) in overrides {
            set_key(&mut tree, key, value)?;
        }
        let cfg: Config = tree
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError(format!("invalid configuration: {e}")))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Every valid key path (`section.field`), in tree order.
    pub fn keys() -> Vec<String> {
        let tree = toml::Value::try_from(Config::default()).expect("defaults serialize");
        let mut out = Vec::new();
        collect_keys(&tree, "", &mut out);
        out
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
        if self.sim.refs == 0 {
            return Err(ConfigError(
                "sim.refs must be at least 1 (a run of 0 references has no figures)".into(),
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
        self.designs.validate().map_err(ConfigError)?;
        self.virt
            .validate(self.os.phys_mem_bytes)
            .map_err(ConfigError)?;
        Ok(())
    }

    /// The resolved tree as TOML text.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("config serializes")
    }

    /// The resolved tree as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("config serializes")
    }
}

fn collect_keys(v: &toml::Value, prefix: &str, out: &mut Vec<String>) {
    if let toml::Value::Table(t) = v {
        for (k, child) in t {
            let path = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            if matches!(child, toml::Value::Table(_)) {
                collect_keys(child, &path, out);
            } else {
                out.push(path);
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

/// The candidate closest to `word` by edit distance, if reasonably close.
pub fn closest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = edit_distance(word, c);
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.filter(|(d, c)| *d <= (c.len().max(word.len()) / 2).max(2))
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let sub = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            cur[j] = sub.min(prev[j] + 1).min(cur[j - 1] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

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
        expect.os.thp = crate::os::ThpPolicy::Always;
        assert_eq!(cfg, expect);
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
