//! Native trace format throughput: write and read a trace of a generated workload.
//!
//! `cargo run --release -p xlat --example tracebench -- [WORKLOAD] [REFS] [FILE]` (defaults:
//! gups, 20000000, a temporary file). Prints references per second of the writer (zstd levels 1
//! and 3), of the reader alone, and of a radix simulation reading the file, so that the reader's
//! share of a simulation can be seen.
use std::time::Instant;
use xlat::config::Config;
use xlat::trace::native::NativeWriter;
use xlat::trace::open;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let workload = args.get(1).cloned().unwrap_or_else(|| "gups".into());
    let refs: u64 = args.get(2).map_or(20_000_000, |s| s.parse().expect("REFS"));
    let path = args.get(3).cloned().unwrap_or_else(|| {
        std::env::temp_dir()
            .join("xlat-tracebench.xlat")
            .to_string_lossy()
            .into_owned()
    });
    let o = |k: &str, v: &str| (k.to_string(), v.to_string());
    let cfg = Config::resolve(
        None,
        &[
            o("workload.name", &workload),
            o("workload.footprint", "1GiB"),
            o("sim.refs", &refs.to_string()),
        ],
    )
    .expect("config");
    for level in [1, 3] {
        let mut g = xlat::workloads::create(&cfg.workload, refs, 1).expect("workload");
        let f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
        let mut w = NativeWriter::new(f, &serde_json::json!({"workload": workload}), level)
            .expect("writer");
        let mut buf = Vec::with_capacity(4096);
        let mut gen_s = 0.0;
        let t = Instant::now();
        loop {
            buf.clear();
            let tg = Instant::now();
            let n = g.fill(&mut buf, 4096).expect("fill");
            gen_s += tg.elapsed().as_secs_f64();
            if n == 0 {
                break;
            }
            for e in &buf {
                w.write(e).expect("write");
            }
        }
        let (_, totals) = w.finish().expect("finish");
        let s = t.elapsed().as_secs_f64() - gen_s;
        let bytes = std::fs::metadata(&path).expect("stat").len();
        println!(
            "write zstd-{level}: {:.1} M refs/s ({} refs, {:.2} bytes/ref)",
            totals.accesses as f64 / s / 1e6,
            totals.accesses,
            bytes as f64 / totals.accesses as f64
        );
    }
    let t = Instant::now();
    let mut src = open(&path, None).expect("open");
    let open_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut buf = Vec::with_capacity(4096);
    let mut n = 0u64;
    loop {
        buf.clear();
        let k = src.fill(&mut buf, 4096).expect("read");
        if k == 0 {
            break;
        }
        n += k as u64;
    }
    let s = t.elapsed().as_secs_f64();
    println!(
        "read: {:.1} M events/s ({n} events; opening incl. sha256: {open_s:.2}s)",
        n as f64 / s / 1e6
    );
    let mut c = cfg.clone();
    c.sim.refs = 1 << 62;
    let t = Instant::now();
    let rec = xlat::run(&c, open(&path, None).expect("open")).expect("run");
    let s = t.elapsed().as_secs_f64();
    println!(
        "radix simulation of the file: {:.1} M refs/s",
        rec["refs"].as_u64().unwrap_or(0) as f64 / s / 1e6
    );
}
