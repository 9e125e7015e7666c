//! Run one simulation from `key=value` overrides and print the result record as JSON: the
//! engine without the Python front, for profiling and quick checks of the core crate.
//!
//! `cargo run --release -p xlat --example run -- sim.design=lvm workload.name=kv workload.footprint=4GiB sim.refs=10M`
//!
//! `preset=PATH` (anywhere among the arguments) puts a preset file such as
//! `configs/papers/lvm.toml` beneath the overrides, as `xlat run --preset` does; `trace=PATH`
//! runs a trace file (any format `xlat run --trace` reads) instead of the workload.

/// As the Python extension installs it (`xlat::host_alloc`).
#[global_allocator]
static ALLOC: xlat::host_alloc::HugePageAdvising = xlat::host_alloc::HugePageAdvising;

fn main() {
    let mut preset: Option<(String, String)> = None;
    let mut trace: Option<String> = None;
    let overrides: Vec<(String, String)> = std::env::args()
        .skip(1)
        .filter(|a| {
            if let Some(path) = a.strip_prefix("trace=") {
                trace = Some(path.to_string());
                return false;
            }
            true
        })
        .filter(|a| match a.strip_prefix("preset=") {
            Some(path) => {
                match std::fs::read_to_string(path) {
                    Ok(text) => preset = Some((path.to_string(), text)),
                    Err(e) => {
                        eprintln!("run: cannot read preset {path}: {e}");
                        std::process::exit(2);
                    }
                }
                false
            }
            None => true,
        })
        .map(|a| match a.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => {
                eprintln!("run: expected key=value, got '{a}'");
                std::process::exit(2);
            }
        })
        .collect();
    let layer = preset.as_ref().map(|(p, t)| (p.as_str(), t.as_str()));
    let cfg = match xlat::config::Config::resolve(layer, &overrides) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("run: {e}");
            std::process::exit(2);
        }
    };
    let result = match trace {
        Some(path) => match xlat::trace::open(&path, None) {
            Ok(source) => xlat::engine::run(&cfg, source),
            Err(e) => {
                eprintln!("run: {e}");
                std::process::exit(2);
            }
        },
        None => xlat::engine::run_workload(&cfg),
    };
    match result {
        Ok(record) => println!("{}", serde_json::to_string_pretty(&record).expect("json")),
        Err(e) => {
            eprintln!("run: {e}");
            std::process::exit(1);
        }
    }
}
