//! What the trace summary costs the writer, and how fast `trace info` reads a trace: stored
//! summary, `--verify`, and the scan of a trace without a stored summary.
//!
//! `cargo run --release -p xlat --example summarybench -- [WORKLOAD|TRACE.xlat] [REFS] [FILE]`
//! (defaults: gups, 20000000, a temporary file; a trace file gives its first REFS events). The writer is timed by the CPU time of its thread
//! (`/proc/thread-self/schedstat`), with and without the summary, interleaved three times, so
//! that other jobs on the machine disturb the comparison less than wall time would.
use std::time::Instant;
use xlat::config::Config;
use xlat::trace::native::{NativeWriter, VerifyProgress};

fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// CPU seconds of the whole process (all threads), from /proc/self/stat (10 ms ticks).
fn process_cpu_s() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = s.rsplit(')').next().unwrap_or("");
    let f: Vec<u64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // Fields 14 and 15 (utime, stime) are the 12th and 13th after the command name.
    (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) as f64 / 100.0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let workload = args.get(1).cloned().unwrap_or_else(|| "gups".into());
    let refs: u64 = args.get(2).map_or(20_000_000, |s| s.parse().expect("REFS"));
    let path = args.get(3).cloned().unwrap_or_else(|| {
        std::env::temp_dir()
            .join("xlat-summarybench.xlat")
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
    // WORKLOAD may be a trace file (e.g. a recording): its first REFS events are used.
    let mut g = if workload.ends_with(".xlat") {
        xlat::trace::open(&workload, None).expect("trace")
    } else {
        xlat::workloads::create(&cfg.workload, refs, 1).expect("workload")
    };
    let mut events = Vec::new();
    while (events.len() as u64) < refs && g.fill(&mut events, 1 << 16).expect("fill") > 0 {}
    let write = |summary: bool, path: &str| {
        let f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
        let mut w = NativeWriter::new(f, &serde_json::json!({"workload": workload}), 1).unwrap();
        if !summary {
            w = w.without_summary();
        }
        let t = thread_cpu_ns();
        for e in &events {
            w.write(e).unwrap();
        }
        w.finish().unwrap();
        (thread_cpu_ns() - t) as f64 / 1e9
    };
    for round in 0..3 {
        let off = write(false, &path);
        let on = write(true, &path);
        println!(
            "round {round}: write zstd-1, {} events: without summary {off:.3} CPU-s ({:.1} M events/s), with {on:.3} CPU-s ({:.1} M events/s): {:+.1} %",
            events.len(),
            events.len() as f64 / off / 1e6,
            events.len() as f64 / on / 1e6,
            (on / off - 1.0) * 100.0
        );
    }
    let t = Instant::now();
    let s = xlat::trace::info::stored_summary(&path).unwrap().unwrap();
    println!(
        "stored summary: {:.6}s ({} events, {} pages)",
        t.elapsed().as_secs_f64(),
        s["events"],
        s["footprint_pages"]
    );
    for workers in [1, 2] {
        let (t, cpu) = (Instant::now(), process_cpu_s());
        let v = xlat::trace::info::verify(&path, workers, &VerifyProgress::default()).unwrap();
        let (secs, cpu) = (t.elapsed().as_secs_f64(), process_cpu_s() - cpu);
        let n = v["events"].as_u64().unwrap() as f64;
        println!(
            "verify, {workers} worker(s) + reader: {secs:.2}s wall, {:.1} M events/s; {cpu:.2} CPU-s in all threads ({:.1} ns/event) ({} bytes)",
            n / secs / 1e6,
            cpu * 1e9 / n,
            v["bytes"]
        );
    }
    let (t, cpu) = (Instant::now(), process_cpu_s());
    let v = xlat::trace::info::summarize(xlat::trace::open(&path, None).unwrap().as_mut()).unwrap();
    let (secs, cpu) = (t.elapsed().as_secs_f64(), process_cpu_s() - cpu);
    let n = v["events"].as_u64().unwrap() as f64;
    println!(
        "scan (no stored summary; sha256 included): {secs:.2}s wall, {:.1} M events/s; {cpu:.2} CPU-s ({:.1} ns/event)",
        n / secs / 1e6,
        cpu * 1e9 / n
    );
}
