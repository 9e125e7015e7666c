//! Run one simulation from `key=value` overrides and print the result record as JSON: the
//! engine without the Python front, for profiling and quick checks of the core crate.
//!
//! `cargo run --release -p xlat --example run -- sim.design=lvm workload.name=kv workload.footprint=4GiB sim.refs=10M`

fn main() {
    let overrides: Vec<(String, String)> = std::env::args()
        .skip(1)
        .map(|a| match a.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => {
                eprintln!("run: expected key=value, got '{a}'");
                std::process::exit(2);
            }
        })
        .collect();
    let cfg = match xlat::config::Config::resolve(None, &overrides) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("run: {e}");
            std::process::exit(2);
        }
    };
    match xlat::engine::run_workload(&cfg) {
        Ok(record) => println!("{}", serde_json::to_string_pretty(&record).expect("json")),
        Err(e) => {
            eprintln!("run: {e}");
            std::process::exit(1);
        }
    }
}
