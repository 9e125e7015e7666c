//! Golden statistics: every registered design on every built-in workload, with the
//! `configs/golden.toml` preset (4 KiB pages and THP `always`), must reproduce its stored
//! snapshot exactly (wall-clock fields and the version aside).
//!
//! A change that moves a figure fails here. If the change is deliberate, bump
//! `xlat::MODEL_VERSION` (`src/stats.rs`), rewrite the snapshots with `UPDATE_SNAPSHOT=1 cargo
//! test -p xlat --release --test golden`, review the diff, and add a CHANGELOG "Model changes"
//! entry naming the new model version and saying which figures moved and why.
//!
//! `golden/MODEL_VERSION` holds the model version the snapshots were written under and a digest
//! of all of them: rewriting snapshots whose statistics changed under the same model version
//! fails (stored results of the old model would pass for the new one: sweeps resume by model
//! version), and so does a model version that differs from the snapshots'.

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
    // Kept in golden/MODEL_VERSION instead, so that a bump does not touch every snapshot.
    obj.remove("model_version");
    record
}

/// FNV-1a over the snapshots' names and flattened statistics, both in sorted order, so that
/// the digest tells whether any statistic changed whatever order a build writes JSON keys in
/// (not a security hash).
fn digest(snapshots: &BTreeMap<String, Value>) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |s: &str| {
        for b in s.bytes().chain([0]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (name, record) in snapshots {
        let mut flat = BTreeMap::new();
        flatten("", record, &mut flat);
        eat(name);
        // The statistics only: the record's echo of its configuration (`config.*`) grows with
        // every new key at its default, which moves no statistic and needs no model version.
        for (k, v) in flat.iter().filter(|(k, _)| !k.starts_with("config.")) {
            eat(k);
            eat(v);
        }
    }
    format!("{h:016x}")
}

/// The model version and digest stored beside the snapshots, if any.
fn stored_version(path: &std::path::Path) -> Option<(u64, String)> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    Some((
        v["model_version"].as_u64()?,
        v["digest"].as_str()?.to_string(),
    ))
}

#[test]
fn preset_statistics_match_their_golden_snapshots() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let preset_path = root.join("../../configs/golden.toml");
    let preset = std::fs::read_to_string(&preset_path).expect("configs/golden.toml");
    let update = std::env::var("UPDATE_SNAPSHOT").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    let mut texts = BTreeMap::new();
    let mut pending = Vec::new();
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
                let name = file.file_name().unwrap().to_string_lossy().into_owned();
                texts.insert(name, record.clone());
                if update {
                    // Only snapshots whose statistics changed are rewritten (a build may order
                    // JSON keys differently; an unchanged snapshot keeps its text).
                    let same = std::fs::read_to_string(&file)
                        .ok()
                        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                        .is_some_and(|v| v == record);
                    if !same {
                        pending.push((file, text));
                    }
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
    let version_file = root.join("tests/golden/MODEL_VERSION");
    let now = (xlat::MODEL_VERSION as u64, digest(&texts));
    let stored = stored_version(&version_file);
    if update {
        if let Some((v, d)) = &stored {
            assert!(
                *v != now.0 || *d == now.1,
                "the golden statistics changed under model version {v}: bump xlat::MODEL_VERSION \
                 (crates/xlat/src/stats.rs) and name the new version in the CHANGELOG \"Model \
                 changes\" entry; nothing was written"
            );
            // The snapshots are one-core, one-process runs: a change that says it moves only
            // machines (several cores or processes) must leave them as they were.
            let moves_one_core = xlat::MODEL_CHANGES.iter().any(|(version, scope)| {
                (*version as u64) > *v
                    && matches!(
                        scope,
                        xlat::ModelScope::All
                            | xlat::ModelScope::Design(_)
                            | xlat::ModelScope::Workload(_)
                    )
            });
            assert!(
                *d == now.1 || moves_one_core,
                "the golden (one-core) statistics changed, but every model change since version \
                 {v} says it moves only runs of several cores or processes \
                 (xlat::MODEL_CHANGES): correct the change's scope or the change; nothing was \
                 written"
            );
        }
        for (file, text) in pending {
            std::fs::write(&file, text).unwrap();
        }
        let v = serde_json::json!({"model_version": now.0, "digest": now.1});
        std::fs::write(
            &version_file,
            serde_json::to_string_pretty(&v).unwrap() + "\n",
        )
        .unwrap();
        return;
    }
    match &stored {
        None => failures.push(format!(
            "{}: missing (run with UPDATE_SNAPSHOT=1)",
            version_file.display()
        )),
        Some((v, _)) if *v != now.0 => failures.push(format!(
            "xlat::MODEL_VERSION is {} but the snapshots were written under model version {v}: \
             rewrite them with UPDATE_SNAPSHOT=1",
            now.0
        )),
        Some((_, d)) if failures.is_empty() && *d != now.1 => failures.push(format!(
            "{}: its digest is not the snapshots' (edited by hand?): rewrite with \
             UPDATE_SNAPSHOT=1",
            version_file.display()
        )),
        _ => {}
    }
    assert!(
        failures.is_empty(),
        "golden statistics changed:\n{}",
        failures.join("\n")
    );
}
