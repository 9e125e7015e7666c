//! Profiles: the settings a paper assumes around its design, applied when the design is named.
//!
//! A design's mechanism lives in its folder (`designs/<name>/`); what its paper assumes around
//! it — the OS placement policy, the TLB organization it proposes, companion structures (a range
//! TLB, RestSegs, a swap device), the host side of a nested run — is its **profile**,
//! `designs/<name>/profile.toml`, included by the registry row. Naming a design applies its
//! profile (`sim.profile = "auto"`, the default), so that `--design tps` is TPS as its paper
//! defines it and not tailored page tables on a 4 KiB-only OS. Baselines are profiles too:
//! [`BASELINES`] holds the named ones the papers compare against (`4k`, `thp`, `thp_res`), which
//! `sim.profile = "<name>"` applies instead of the design's own; `sim.profile = "none"` applies
//! none (the bare mechanism on the default OS and TLBs, for ablations).
//!
//! # Precedence
//! built-in defaults < CPU preset (`--cpu`) < profile < preset file (`--preset`) < `--set`:
//! a profile goes on top of the CPU because it sets only what its paper's design changes, and
//! an explicit key of the user's always wins. A preset or override that replaces a key the
//! profile set, with another value, draws one warning naming the key and what the profile's
//! setting was for ([`Profile::why`]).
//!
//! # File format
//! ```toml
//! [profile]
//! summary = "one line: what the paper's design assumes"
//! paper = "where the settings come from (section, table)"
//! [profile.why]
//! "os.policy" = "why the paper needs it (§ reference)"   # one entry per key set below
//! [os]
//! policy = "reservation"
//! ```
//! Contract (tested over every profile): the file parses; every key it sets is a configuration
//! key and has a `why`; it sets only the sections [`ALLOWED_SECTIONS`] and, for a design's own
//! profile, that design's section; the defaults with the profile on top are a valid
//! configuration.
//!
//! May call: `designs` (the registry, for each design's profile text). Called by `config`.

use crate::designs::REGISTRY;

/// Sections a profile may set (besides a design's own section in its own profile): the OS
/// model, the TLBs, and the host of a nested run. Never the workload, the run, the caches, DRAM
/// or the core: those are the experiment's and the CPU's.
pub const ALLOWED_SECTIONS: &[&str] = &["os", "tlb", "virt"];

/// `sim.profile` value that applies the named design's own profile.
pub const AUTO: &str = "auto";
/// `sim.profile` value that applies no profile.
pub const NONE: &str = "none";

/// Named baseline profiles: `(name, file text)`.
pub const BASELINES: &[(&str, &str)] = &[
    ("4k", include_str!("4k.toml")),
    ("thp", include_str!("thp.toml")),
    ("thp_res", include_str!("thp_res.toml")),
];

/// A parsed profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// The profile's name: a design's name or a baseline's.
    pub name: String,
    /// One line: what the paper's design assumes.
    pub summary: String,
    /// Where the settings come from (paper sections, tables).
    pub paper: String,
    /// Why each key is set, by dotted key.
    pub why: Vec<(String, String)>,
    /// The settings, as a configuration layer (the `[profile]` table removed).
    pub layer: toml::Value,
}

impl Profile {
    /// Parse a profile file; `own_section` is the design whose profile it is (None for a
    /// baseline). Errors name the profile and the problem.
    pub fn parse(name: &str, text: &str, own_section: Option<&str>) -> Result<Profile, String> {
        let mut layer: toml::Value =
            toml::from_str(text).map_err(|e| format!("profile '{name}': not valid TOML: {e}"))?;
        let table = layer
            .as_table_mut()
            .ok_or_else(|| format!("profile '{name}': not a table"))?;
        let meta = table
            .remove("profile")
            .ok_or_else(|| format!("profile '{name}': no [profile] table"))?;
        let text_of = |k: &str| -> Result<String, String> {
            meta.get(k)
                .and_then(|v| v.as_str())
                .map(str::to_string)
                .ok_or_else(|| format!("profile '{name}': [profile].{k} is missing"))
        };
        let summary = text_of("summary")?;
        let paper = text_of("paper")?;
        let mut why = Vec::new();
        if let Some(w) = meta.get("why") {
            let w = w
                .as_table()
                .ok_or_else(|| format!("profile '{name}': [profile.why] must be a table"))?;
            for (k, v) in w {
                let v = v
                    .as_str()
                    .ok_or_else(|| format!("profile '{name}': why of '{k}' is not text"))?;
                why.push((k.clone(), v.to_string()));
            }
        }
        for section in table.keys() {
            if !ALLOWED_SECTIONS.contains(&section.as_str())
                && Some(section.as_str()) != own_section
            {
                return Err(format!(
                    "profile '{name}': sets [{section}]; a profile sets only {}{}",
                    ALLOWED_SECTIONS.join(", "),
                    own_section
                        .map(|s| format!(" and its design's [{s}]"))
                        .unwrap_or_default()
                ));
            }
        }
        let keys = leaf_keys(&layer);
        for k in &keys {
            if !why.iter().any(|(w, _)| w == k) {
                return Err(format!(
                    "profile '{name}': sets '{k}' without saying why ([profile.why])"
                ));
            }
        }
        for (k, _) in &why {
            if !keys.contains(k) {
                return Err(format!(
                    "profile '{name}': [profile.why] names '{k}', which it does not set"
                ));
            }
        }
        Ok(Profile {
            name: name.to_string(),
            summary,
            paper,
            why,
            layer,
        })
    }

    /// Why the profile sets `key` (None when it does not set it).
    pub fn why(&self, key: &str) -> Option<&str> {
        self.why
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, w)| w.as_str())
    }

    /// The keys the profile sets, dotted, in file order.
    pub fn keys(&self) -> Vec<String> {
        leaf_keys(&self.layer)
    }

    /// The profile's settings as `key = value` pairs on one line (empty: "no settings").
    pub fn one_line(&self) -> String {
        let parts: Vec<String> = leaves(&self.layer)
            .into_iter()
            .map(|(path, value)| format!("{path} = {value}"))
            .collect();
        if parts.is_empty() {
            "no settings".into()
        } else {
            parts.join(", ")
        }
    }
}

/// The profile a run gets: `profile` is `sim.profile` (`auto`, `none` or a baseline's name),
/// `design` is `sim.design`. `Ok(None)` for `none`.
pub fn select(design: &str, profile: &str) -> Result<Option<Profile>, String> {
    match profile {
        NONE => Ok(None),
        AUTO | "" => design_profile(design).map(Some),
        name => {
            if let Some((_, text)) = BASELINES.iter().find(|(n, _)| *n == name) {
                return Profile::parse(name, text, None).map(Some);
            }
            if REGISTRY.iter().any(|d| d.name == name) {
                // A design's profile by name: the paper's settings of one design on another
                // (e.g. `tps`'s reservations under radix) are an experiment someone may want.
                return design_profile(name).map(Some);
            }
            let mut names: Vec<&str> = vec![AUTO, NONE];
            names.extend(BASELINES.iter().map(|(n, _)| *n));
            names.extend(REGISTRY.iter().map(|d| d.name));
            Err(format!(
                "unknown profile '{name}'{}; profiles: {} (a design's name applies that design's)",
                crate::suggest::closest(name, names.iter().copied())
                    .map(|c| format!(" (did you mean '{c}'?)"))
                    .unwrap_or_default(),
                names.join(", ")
            ))
        }
    }
}

/// The profile of the registered design `design`.
pub fn design_profile(design: &str) -> Result<Profile, String> {
    let info = REGISTRY
        .iter()
        .find(|d| d.name == design)
        .ok_or_else(|| format!("unknown design '{design}'"))?;
    Profile::parse(info.name, info.profile, Some(info.name))
}

/// Dotted paths of the leaf values of a TOML tree (an array of tables is one leaf).
pub fn leaf_keys(v: &toml::Value) -> Vec<String> {
    leaves(v).into_iter().map(|(path, _)| path).collect()
}

/// The leaf values of a TOML tree with their dotted paths, in tree order.
pub fn leaves(v: &toml::Value) -> Vec<(String, &toml::Value)> {
    fn walk<'a>(v: &'a toml::Value, prefix: &str, out: &mut Vec<(String, &'a toml::Value)>) {
        if let toml::Value::Table(t) = v {
            for (k, child) in t {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                if matches!(child, toml::Value::Table(_)) {
                    walk(child, &path, out);
                } else {
                    out.push((path, child));
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(v, "", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_design_and_baseline_profile_parses_and_says_why_for_each_key() {
        for d in REGISTRY {
            let p = design_profile(d.name).unwrap();
            assert_eq!(p.name, d.name);
            assert!(!p.summary.is_empty() && !p.paper.is_empty(), "{}", d.name);
        }
        for (name, text) in BASELINES {
            Profile::parse(name, text, None).unwrap();
        }
    }

    #[test]
    fn a_profile_that_sets_the_workload_or_a_key_without_a_reason_is_refused() {
        let e = Profile::parse(
            "x",
            "[profile]\nsummary='s'\npaper='p'\n[profile.why]\n'workload.name'='w'\n[workload]\nname='gups'\n",
            None,
        )
        .unwrap_err();
        assert!(e.contains("sets [workload]"), "{e}");
        let e = Profile::parse(
            "x",
            "[profile]\nsummary='s'\npaper='p'\n[os]\nthp='always'\n",
            None,
        )
        .unwrap_err();
        assert!(e.contains("without saying why"), "{e}");
    }

    #[test]
    fn none_selects_nothing_auto_the_designs_own_and_a_name_a_baseline() {
        assert!(select("tps", NONE).unwrap().is_none());
        assert_eq!(select("tps", AUTO).unwrap().unwrap().name, "tps");
        assert_eq!(select("radix", "thp_res").unwrap().unwrap().name, "thp_res");
        let e = select("radix", "thp_rez").unwrap_err();
        assert!(e.contains("did you mean 'thp_res'"), "{e}");
    }
}
