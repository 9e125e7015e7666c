//! Speed of the queued DRAM model (`xlat::mem::dram::controller`) alone: requests per second of
//! `DramController::access` over a pseudo-random request mix like the out-of-order core's (the
//! default `mem.dram` configuration with the queued model: 2 channels, DDR4-3200, refresh on),
//! and a hash of every answer and the final counters, to check that a change of the controller's
//! code leaves its results bit-identical.
//!
//! ```text
//! cargo run --release -p xlat --example dram_bench -- [--count N] [--interval CYCLES] \
//!     [--jitter CYCLES] [--writes PERCENT] [--stream PERCENT] [--seed S] [--repeat R]
//! ```
//!
//! Defaults: 2,000,000 requests, one every 28 core cycles on average (the `gups` run's rate),
//! 40 % writes, 20 % of the lines from a sequential stream (the rest random over 8 GiB), arrival
//! times going back by up to 300 cycles for one request in four, 3 repetitions (the best is
//! printed).

use std::time::Instant;
use xlat::mem::dram::controller::{DramController, DramRequest, DramService, RequestKind};
use xlat::mem::dram::{DramConfig, DramModel};
use xlat::rng::{splitmix64, Rng};

fn mix(h: u64, v: u64) -> u64 {
    let mut s = h ^ v;
    splitmix64(&mut s)
}

fn main() {
    let mut count = 2_000_000u64;
    let mut interval = 28u64;
    let mut jitter = 300u64;
    let mut writes = 40u64;
    let mut stream = 20u64;
    let mut seed = 1u64;
    let mut repeat = 3;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let v = || -> u64 {
            args.get(i + 1)
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("{} needs a number", args[i]))
        };
        match args[i].as_str() {
            "--count" => count = v(),
            "--interval" => interval = v(),
            "--jitter" => jitter = v(),
            "--writes" => writes = v(),
            "--stream" => stream = v(),
            "--seed" => seed = v(),
            "--repeat" => repeat = v(),
            "--help" | "-h" => {
                println!("see the module doc of crates/xlat/examples/dram_bench.rs");
                return;
            }
            a => panic!("unknown option {a}"),
        }
        i += 2;
    }
    let mut rng = Rng::new(seed, 5);
    let mut now = 1000u64;
    let mut next_stream = rng.below(1 << 27);
    let reqs: Vec<DramRequest> = (0..count)
        .map(|_| {
            now += rng.below(2 * interval + 1);
            let at = if rng.below(4) == 0 {
                now.saturating_sub(rng.below(jitter + 1))
            } else {
                now
            };
            let line = if rng.below(100) < stream {
                next_stream += 1;
                next_stream
            } else {
                rng.below(1 << 27)
            };
            DramRequest {
                line,
                write: rng.below(100) < writes,
                arrival_cycle: at,
                kind: if rng.below(3) == 0 {
                    RequestKind::PageTable
                } else {
                    RequestKind::Data
                },
            }
        })
        .collect();
    let cfg = DramConfig {
        model: DramModel::Queued,
        ..DramConfig::default()
    };
    let mut best = f64::INFINITY;
    let mut hash = 0;
    for _ in 0..repeat {
        let mut d = DramController::new(&cfg).unwrap();
        let mut h = 0u64;
        let start = Instant::now();
        for r in &reqs {
            let c = d.access(r);
            let s = match c.service {
                DramService::Row(o) => o as u64,
                DramService::WriteQueue => 10,
                DramService::Posted => 11,
            };
            h = mix(mix(mix(h, c.done_cycle), c.latency_cycles), s);
        }
        d.flush_writes(now + 1000);
        best = best.min(start.elapsed().as_secs_f64());
        for b in format!("{:?}", d.counters()).bytes() {
            h = mix(h, b as u64);
        }
        hash = h;
    }
    println!(
        "requests {count} best {best:.3} s  {:.0} requests/s  hash {hash:#018x}",
        count as f64 / best
    );
}
