//! Micro-benchmark of the memory hierarchy alone (random 8-byte accesses over 1 GiB).
//!
//! `cargo run --release -p xlat --example membench [-- data-only]`: `data-only` times just
//! `data_access`, without and with host prefetching; `MB_SCALE=K` divides the L2 and LLC sizes
//! by K (to tell the simulator's own host-cache misses from its instruction cost).
use std::time::Instant;
use xlat::addr::Paddr;
use xlat::mem::{MemConfig, MemSystem};
use xlat::rng::Rng;
fn main() {
    let mut cfg = MemConfig::default();
    if let Ok(k) = std::env::var("MB_SCALE") {
        let k: u64 = k.parse().unwrap();
        cfg.l2.size_bytes /= k;
        cfg.llc.size_bytes /= k;
    }
    let mut m = MemSystem::new(&cfg);
    let mut r = Rng::new(1, 1);
    let n = 5_000_000u64;
    let addrs: Vec<u64> = (0..n).map(|_| r.below(1 << 30) & !7).collect();
    let t = Instant::now();
    let mut s = 0u64;
    for a in &addrs {
        s += m.data_access(Paddr(*a), false).latency_cycles as u64;
    }
    let e = t.elapsed().as_secs_f64();
    if std::env::args().any(|a| a == "data-only") {
        let t = Instant::now();
        for _ in 0..4 {
            for a in &addrs {
                s += m.data_access(Paddr(*a), false).latency_cycles as u64;
            }
        }
        println!(
            "data-only: {:.1} ns/access ({s})",
            t.elapsed().as_secs_f64() * 1e9 / (4 * n) as f64
        );
        let t = Instant::now();
        for _ in 0..4 {
            for (i, a) in addrs.iter().enumerate() {
                if let Some(b) = addrs.get(i + 8) {
                    m.prefetch(Paddr(*b));
                }
                s += m.data_access(Paddr(*a), false).latency_cycles as u64;
            }
        }
        println!(
            "data-only prefetched: {:.1} ns/access ({s})",
            t.elapsed().as_secs_f64() * 1e9 / (4 * n) as f64
        );
        return;
    }
    println!(
        "data_access random 1GiB: {:.1} ns/access ({s})",
        e * 1e9 / n as f64
    );
    let t = Instant::now();
    for a in &addrs {
        s += m.pt_access(Paddr(*a)).latency_cycles as u64;
    }
    println!(
        "pt_access random: {:.1} ns/access ({s})",
        t.elapsed().as_secs_f64() * 1e9 / n as f64
    );
    for policy in [
        xlat::mem::ReplacementPolicy::Lru,
        xlat::mem::ReplacementPolicy::Srrip,
    ] {
        let mut c = xlat::mem::cache::Cache::new(&xlat::mem::CacheLevelConfig {
            size_bytes: 2 << 20,
            ways: 16,
            latency_cycles: 1,
            policy,
        });
        let t = Instant::now();
        for a in &addrs {
            let l = *a >> 6;
            if !c.lookup(l, 0, false) {
                c.fill(l, 0, false);
            }
        }
        println!(
            "{policy:?} LLC alone: {:.1} ns/access",
            t.elapsed().as_secs_f64() * 1e9 / n as f64
        );
    }
}

#[allow(dead_code)]
fn unused() {}
