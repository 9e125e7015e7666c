//! The CPU presets in `configs/cpus/` (issue 13 part B) are configuration layers the Python front
//! applies beneath the user's preset. Checked here too, so that a change of the Rust
//! configuration (a renamed or removed key, a new cross-field rule) that breaks a preset fails
//! `cargo test`, and so that every preset's machine runs a design under the oracle.

use std::path::PathBuf;
use xlat::Config;

fn presets() -> Vec<(String, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../configs/cpus");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("configs/cpus")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).expect("preset text"))
        })
        .collect();
    out.sort();
    out
}

fn overrides(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn every_cpu_preset_resolves_and_records_its_name() {
    let all = presets();
    assert!(all.len() >= 5, "configs/cpus holds {} presets", all.len());
    for (name, text) in &all {
        let origin = format!("configs/cpus/{name}.toml");
        let cfg = Config::resolve_layers(&[(&origin, text)], &overrides(&[("sim.cpu", name)]))
            .unwrap_or_else(|e| panic!("{origin}: {e}"));
        assert_eq!(&cfg.sim.cpu, name);
        assert_ne!(cfg, Config::default(), "{origin} changes nothing");
    }
}

#[test]
fn every_cpu_presets_machine_runs_radix_with_no_oracle_mismatch() {
    for (name, text) in presets() {
        let origin = format!("configs/cpus/{name}.toml");
        for thp in ["never", "always"] {
            let cfg = Config::resolve_layers(
                &[(&origin, &text)],
                &overrides(&[
                    ("sim.cpu", &name),
                    ("sim.refs", "20000"),
                    ("workload.footprint", "32MiB"),
                    ("os.thp", thp),
                ]),
            )
            .unwrap();
            let rec = xlat::run_workload(&cfg).unwrap_or_else(|e| panic!("{origin}: {e}"));
            assert_eq!(rec["oracle"]["mismatches"], 0, "{origin} thp={thp}");
            assert!(rec["oracle"]["checked"].as_u64().unwrap() > 0);
            assert_eq!(rec["config"]["sim"]["cpu"], name.as_str());
        }
    }
}
