//! How fast a built-in workload generator produces events on its own, without simulating them:
//! the floor under every simulation of that workload (see docs/performance.md).
//!
//! ```text
//! cargo run --release -p xlat --example genbench -- [WORKLOAD] [REFS]
//! ```
//!
//! Defaults: `stream`, 50 M references, 1 GiB footprint. Prints events per second three times,
//! timing only what follows the first 300,000 events (the setup burst of first touches).

use std::time::Instant;
use xlat::workloads::{create, WorkloadConfig};

/// Events fetched per call, as the engine does.
const FETCH: usize = 512;

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "stream".into());
    let refs: u64 = match args.next().map(|s| xlat::addr::parse_count(&s)) {
        None => 50_000_000,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("genbench: REFS: {e}");
            std::process::exit(2);
        }
    };
    let cfg = WorkloadConfig {
        name: name.clone(),
        footprint: 1 << 30,
        ..WorkloadConfig::default()
    };
    for _ in 0..3 {
        let mut src = match create(&cfg, refs, 1) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("genbench: {e}");
                std::process::exit(2);
            }
        };
        let mut out = Vec::with_capacity(2 * FETCH);
        let (mut events, mut timed_from) = (0u64, None);
        loop {
            out.clear();
            let n = src
                .fill(&mut out, FETCH)
                .expect("a built-in workload cannot fail");
            if n == 0 {
                break;
            }
            events += n as u64;
            if timed_from.is_none() && events > 300_000 {
                timed_from = Some((Instant::now(), events));
            }
        }
        match timed_from {
            Some((t, skipped)) => println!(
                "{name}: {:.0} M events/s after the first {skipped} events",
                (events - skipped) as f64 / t.elapsed().as_secs_f64() / 1e6
            ),
            None => println!("{name}: only {events} events (ask for more REFS)"),
        }
    }
}
