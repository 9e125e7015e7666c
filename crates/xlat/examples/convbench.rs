//! How fast the recorder's converter consumes the valgrind tool's stream, apart from valgrind.
//!
//! `cargo run --release -p xlat --example convbench -- STREAM [ROUNDS] [ZSTD_LEVEL]`
//!
//! STREAM is the tool's raw record stream saved to a file (what `xlat trace record` pipes into
//! the converter), e.g.
//! `VALGRIND_LIB=tools/xlat-vgtool/build/lib valgrind --tool=xlat -q --xlat-fd=3 -- PROG 3>STREAM`.
//! Each round converts the whole stream the way the recorder does (1 MiB reads, the decoder,
//! the native writer at ZSTD_LEVEL, default 1, into a temporary file) in several stages, timed by
//! the CPU time of the converting thread (`/proc/thread-self/schedstat`) so that other jobs on
//! a shared machine disturb the figures less than wall time would:
//! `decode` (the decoder alone), `summary` (the decoder and the trace summary), `write-nosum`
//! (the decoder and the writer without the summary), `write` (decoder, writer and summary on
//! one thread), `write-bg` (the recorder's path: as `write`, chunks compressed and written on a
//! second thread; the converting thread's CPU and the process's, both threads, are printed).
//! The stages are interleaved round by round; the medians are printed last.
use std::io::Read;
use xlat::trace::native::NativeWriter;
use xlat::trace::vgstream::VgDecoder;

fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// CPU seconds of the whole process (all threads, finished ones included), from
/// /proc/self/stat (10 ms ticks).
fn process_cpu_s() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = s.rsplit(')').next().unwrap_or("");
    let f: Vec<u64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) as f64 / 100.0
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    v[v.len() / 2]
}

/// Convert `stream` in `stage`; returns (CPU seconds of this thread, of the process, events,
/// accesses).
fn run(stream: &str, stage: &str, level: i32, out: &str) -> (f64, f64, u64, u64) {
    let mut input = std::fs::File::open(stream).expect("stream");
    let mut buf = vec![0u8; 1 << 20];
    let mut dec = VgDecoder::new();
    let mut events = 0u64;
    let t = thread_cpu_ns();
    let p = process_cpu_s();
    match stage {
        "decode" | "summary" => {
            let mut sum = xlat::trace::info::Summary::new();
            let with = stage == "summary";
            loop {
                let n = input.read(&mut buf).expect("read");
                if n == 0 {
                    break;
                }
                dec.push(&buf[..n], |ev| {
                    events += 1;
                    if with {
                        sum.observe(&ev);
                    }
                    std::hint::black_box(&ev);
                    Ok(())
                })
                .expect("decode");
            }
            dec.finish(|_| Ok(())).expect("finish");
            std::hint::black_box(sum.to_json());
        }
        _ => {
            let f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(out).unwrap());
            let mut w =
                NativeWriter::with_meta_room(f, &serde_json::json!({}), level, 512).unwrap();
            if stage == "write-nosum" {
                w = w.without_summary();
            }
            if stage == "write-bg" {
                w = w.compress_in_background().unwrap();
            }
            loop {
                let n = input.read(&mut buf).expect("read");
                if n == 0 {
                    break;
                }
                dec.push(&buf[..n], |ev| w.write(&ev)).expect("convert");
            }
            dec.finish(|ev| w.write(&ev)).expect("finish");
            let (_, t) = w.finish().unwrap();
            events = t.records;
        }
    }
    let cpu = (thread_cpu_ns() - t) as f64 / 1e9;
    (cpu, process_cpu_s() - p, events, dec.counts().accesses)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let stream = args
        .get(1)
        .expect("STREAM (the tool's raw stream in a file)");
    let rounds: usize = args.get(2).map_or(3, |s| s.parse().expect("ROUNDS"));
    let level: i32 = args.get(3).map_or(1, |s| s.parse().expect("ZSTD_LEVEL"));
    let stages: Vec<String> = std::env::var("CONVBENCH_STAGES")
        .unwrap_or_else(|_| "decode,summary,write-nosum,write,write-bg".into())
        .split(',')
        .map(str::to_string)
        .collect();
    let out = std::env::temp_dir()
        .join(format!("xlat-convbench-{}.xlat", std::process::id()))
        .to_string_lossy()
        .into_owned();
    let bytes = std::fs::metadata(stream).expect("stream").len();
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); stages.len()];
    let mut all: Vec<Vec<f64>> = vec![Vec::new(); stages.len()];
    let mut refs = 0;
    for round in 0..rounds {
        for (i, s) in stages.iter().enumerate() {
            let (c, pc, ev, acc) = run(stream, s, level, &out);
            refs = acc;
            println!(
                "round {round} {s:12}: {c:.3} CPU-s, {ev} events, {acc} refs: {:.1} M refs/CPU-s ({:.1} ns/ref); process {pc:.2} CPU-s",
                acc as f64 / c / 1e6,
                c * 1e9 / acc as f64
            );
            cpu[i].push(c);
            all[i].push(pc);
        }
    }
    let _ = std::fs::remove_file(&out);
    println!("stream {stream}: {bytes} bytes, {refs} refs; medians of {rounds} rounds:");
    for (i, s) in stages.iter().enumerate() {
        let m = median(&mut cpu[i]);
        let pm = median(&mut all[i]);
        println!(
            "  {s:12} converting thread {m:.3} CPU-s  {:.1} M refs/CPU-s  {:.1} ns/ref; all threads {pm:.2} CPU-s ({:.1} ns/ref)",
            refs as f64 / m / 1e6,
            m * 1e9 / refs as f64,
            pm * 1e9 / refs as f64
        );
    }
}
