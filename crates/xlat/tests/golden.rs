//! Golden statistics: every registered design on every built-in workload, with the
//! `configs/golden.toml` preset (4 KiB pages and THP `always`), must reproduce its stored
//! snapshot exactly (wall-clock fields and the version aside).
//!
//! A change that moves a figure fails here. If the change is deliberate, rewrite the snapshots
//! with `UPDATE_SNAPSHOT=1 cargo test -p xlat --release --test golden`, review the diff, and add
//! a CHANGELOG "Model changes" line saying which figures moved and why.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use xlat::designs::REGISTRY;
use xlat::workloads::WORKLOADS;
use xlat::Config;

fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&p, child, out);
            }
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

fn stable(mut record: Value) -> Value {
    let obj = record.as_object_mut().expect("record is an object");
    obj.remove("sim");
    obj.remove("version");
    record
}

#[test]
fn preset_statistics_match_their_golden_snapshots() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let preset_path = root.join("../../configs/golden.toml");
    let preset = std::fs::read_to_string(&preset_path).expect("configs/golden.toml");
    let update = std::env::var("UPDATE_SNAPSHOT").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    for design in REGISTRY {
        for (workload, _) in WORKLOADS {
            for thp in ["never", "always"] {
                let overrides: Vec<(String, String)> = [
                    ("sim.design", design.name),
                    ("workload.name", workload),
                    ("os.thp", thp),
                ]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
                let cfg = Config::resolve(Some(("configs/golden.toml", &preset)), &overrides)
                    .expect("golden config");
                let record = stable(xlat::run_workload(&cfg).expect("golden run"));
                // Every translation checked against the OS model's mapping, on every workload
                // (a snapshot must never store a mismatch, even one written by UPDATE_SNAPSHOT).
                if record["oracle"]["mismatches"] != 0 || record["oracle"]["checked"] == 0 {
                    failures.push(format!(
                        "{} on {workload} (thp {thp}): oracle {}",
                        design.name, record["oracle"]
                    ));
                }
                let file = root.join(format!(
                    "tests/golden/{}__{}__thp_{}.json",
                    design.name, workload, thp
                ));
                let text = serde_json::to_string_pretty(&record).unwrap() + "\n";
                if update {
                    std::fs::write(&file, &text).unwrap();
                    continue;
                }
                let Ok(stored) = std::fs::read_to_string(&file) else {
                    failures.push(format!(
                        "{}: no snapshot (run with UPDATE_SNAPSHOT=1)",
                        file.display()
                    ));
                    continue;
                };
                let stored: Value = serde_json::from_str(&stored).unwrap();
                if stored != record {
                    let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
                    flatten("", &stored, &mut a);
                    flatten("", &record, &mut b);
                    let keys: std::collections::BTreeSet<&String> =
                        a.keys().chain(b.keys()).collect();
                    let diffs: Vec<String> = keys
                        .into_iter()
                        .filter(|k| a.get(*k) != b.get(*k))
                        .take(12)
                        .map(|k| format!("    {k}: {:?} -> {:?}", a.get(k), b.get(k)))
                        .collect();
                    failures.push(format!("{}:\n{}", file.display(), diffs.join("\n")));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "golden statistics changed:\n{}",
        failures.join("\n")
    );
}
