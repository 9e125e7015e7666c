//! Latency and bandwidth curve of the queued DRAM model (`xlat::mem::dram::controller`), for
//! validation against Ramulator 2 on the same request streams.
//!
//! The system: DDR4-3200AA (22-22-22), 1 channel, 1 rank, 4 bank groups x 4 banks, 8 KiB rows
//! (Ramulator 2's `DDR4_8Gb_x8` organisation with the `DDR4_3200AA` timing preset), 32-entry
//! read and write queues, write watermarks 26 / 6 entries, refresh on, no fixed controller
//! latency (`controller_cycles = 0`), a 2.6 GHz core clock for arrival times.
//!
//! ```text
//! cargo run --release -p xlat --example dram_curve                       # random and streaming reads, 8 rates
//! cargo run --release -p xlat --example dram_curve -- --pattern random_mix --intervals 10 \
//!     --write-stream /tmp/random_mix_10.txt                               # one stream, saved for Ramulator 2
//! cargo run --release -p xlat --example dram_curve -- --stream-in /tmp/random_mix_10.txt
//! ```
//!
//! Options: `--pattern random|stream|random_mix|stream_mix` (repeatable; default random and
//! stream), `--intervals 40,20,...` (core cycles between requests, fractions allowed; request i
//! arrives at floor(i x interval)), `--count N` (requests per stream, 20000), `--seed S` (1),
//! `--mapping row_contiguous|row_hashed|line_interleaved|champsim|ro_ba_ra_co_ch` (the default
//! row_contiguous, kept for the recorded curves: a row's 128 lines together, as Ramulator 2's
//! `RoBaRaCoCh` mapper but for xlat's XOR of the bank with the low row bits; `row_hashed`, the
//! engine's default since model version 9, folds every row bit into the bank; `ro_ba_ra_co_ch`: exactly Ramulator 2's `RoBaRaCoCh`, the mapping of
//! `scripts/ramulator_validate.py --compare-xlat`), `--refresh on|off`, `--core-mhz MHZ`,
//! `--stream-in FILE` (replay a stream file instead of generating), `--write-stream FILE` (save
//! each generated stream; with several streams FILE is a prefix:
//! `FILE.<pattern>.<interval>.txt`), `--json` (one JSON object a stream instead of the table,
//! for `scripts/ramulator_validate.py`).
//!
//! Stream file: one request per line, `<arrival_cycle> <hex byte address> <R|W>`, arrival in
//! core cycles of `--core-mhz` (a `#` line records it: `# core_clock_mhz=2600`); `#` lines are
//! comments. Patterns: `random` reads uniform 64-byte lines over 8 GiB (the 8 Gb x8 rank);
//! `stream` reads consecutive lines from a random row-aligned base; `random_mix` is `random`
//! with every third request a write; `stream_mix` interleaves two read streams and one write
//! stream (a[i] = b[i] + c[i]).
//!
//! Output, one row per stream: offered and delivered bandwidth (GB/s; delivered = bytes read and
//! written over first arrival to the end of the last burst, writes drained at the end), average,
//! median and 99th-percentile read latency in ns (from the request's arrival in the stream to
//! the first data beat; Ramulator 2 counts nCL + nBL, 2.5 ns later), the average part of it
//! spent waiting for a read-queue entry (the stream is open-loop: past saturation the backlog,
//! and so the latency, grows with the stream's length), and the row-hit share of the reads
//! served by the banks.
//!
//! `--json` prints, per stream, `{"name", "interval", "requests", "reads", "writes", "bytes",
//! "first_arrival_ns", "data_end_ns", "delivered_gbps", "read_lat_avg_ns", "read_lat_p50_ns",
//! "read_lat_p99_ns", "burst_ns", "write_queue_reads", "read_row": [hit, empty, conflict],
//! "write_row": [...], "read_queue_full_wait_ns", "write_queue_full_wait_ns",
//! "watermark_drains", "idle_drained_writes"}`: the latencies are the table's (to the first
//! data beat, reads served by the banks only), `burst_ns` the burst (tBL) to add for
//! Ramulator 2's end-of-burst convention.

use std::io::{BufRead, Write};
use xlat::mem::dram::controller::{DramController, DramRequest, DramService, RequestKind};
use xlat::mem::dram::{DramConfig, DramMapping, DramModel, DramTimingSet};
use xlat::rng::Rng;

/// Requests in arrival order: (arrival core cycle, line address, write).
type Stream = Vec<(u64, u64, bool)>;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Pattern {
    Random,
    Stream,
    RandomMix,
    StreamMix,
}

impl Pattern {
    fn parse(s: &str) -> Result<Pattern, String> {
        Ok(match s {
            "random" => Pattern::Random,
            "stream" => Pattern::Stream,
            "random_mix" => Pattern::RandomMix,
            "stream_mix" => Pattern::StreamMix,
            _ => return Err(format!("unknown pattern '{s}'")),
        })
    }

    fn name(self) -> &'static str {
        match self {
            Pattern::Random => "random",
            Pattern::Stream => "stream",
            Pattern::RandomMix => "random_mix",
            Pattern::StreamMix => "stream_mix",
        }
    }
}

struct Options {
    patterns: Vec<Pattern>,
    intervals: Vec<f64>,
    count: u64,
    seed: u64,
    mapping: DramMapping,
    refresh: bool,
    core_mhz: u32,
    stream_in: Option<String>,
    write_stream: Option<String>,
    json: bool,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        patterns: Vec::new(),
        intervals: vec![40.0, 24.0, 18.0, 15.0, 12.0, 9.0, 6.5, 4.0],
        count: 20_000,
        seed: 1,
        mapping: DramMapping::RowContiguous,
        refresh: true,
        core_mhz: 2600,
        stream_in: None,
        write_stream: None,
        json: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            return Err(String::new());
        }
        if flag == "--json" {
            o.json = true;
            continue;
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--pattern" => o.patterns.push(Pattern::parse(&value)?),
            "--intervals" => {
                o.intervals = value
                    .split(',')
                    .map(|v| v.trim().parse::<f64>().map_err(|e| format!("{v}: {e}")))
                    .collect::<Result<_, _>>()?;
                if o.intervals.iter().any(|&i| i <= 0.0) {
                    return Err("intervals must be positive".into());
                }
            }
            "--count" => o.count = value.parse().map_err(|e| format!("--count: {e}"))?,
            "--seed" => o.seed = value.parse().map_err(|e| format!("--seed: {e}"))?,
            "--mapping" => {
                o.mapping = match value.as_str() {
                    "row_contiguous" => DramMapping::RowContiguous,
                    "row_hashed" => DramMapping::RowHashed,
                    "line_interleaved" => DramMapping::LineInterleaved,
                    "champsim" => DramMapping::Champsim,
                    "ro_ba_ra_co_ch" => DramMapping::RoBaRaCoCh,
                    _ => return Err(format!("unknown mapping '{value}'")),
                }
            }
            "--refresh" => o.refresh = value == "on",
            "--core-mhz" => o.core_mhz = value.parse().map_err(|e| format!("--core-mhz: {e}"))?,
            "--stream-in" => o.stream_in = Some(value),
            "--write-stream" => o.write_stream = Some(value),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if o.patterns.is_empty() {
        o.patterns = vec![Pattern::Random, Pattern::Stream];
    }
    Ok(o)
}

/// `count` requests of `pattern`, one every `interval` core cycles: (arrival, line, write).
fn generate(pattern: Pattern, interval: f64, count: u64, seed: u64) -> Stream {
    let mut rng = Rng::new(seed, 0);
    let lines = 8u64 << 24; // 8 GiB of 64-byte lines
    let row_base = |rng: &mut Rng| rng.below(lines / 2) & !127;
    let bases = [row_base(&mut rng), row_base(&mut rng), row_base(&mut rng)];
    (0..count)
        .map(|i| {
            let at = (i as f64 * interval) as u64;
            match pattern {
                Pattern::Random => (at, rng.below(lines), false),
                Pattern::Stream => (at, bases[0] + i, false),
                Pattern::RandomMix => (at, rng.below(lines), i % 3 == 2),
                Pattern::StreamMix => (at, bases[(i % 3) as usize] + i / 3, i % 3 == 2),
            }
        })
        .collect()
}

fn read_stream(path: &str) -> Result<Stream, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let mut out = Vec::new();
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| format!("{path}: {e}"))?;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = || {
            format!(
                "{path}:{}: expected '<arrival_cycle> <hex address> <R|W>'",
                n + 1
            )
        };
        let mut f = line.split_whitespace();
        let (Some(at), Some(addr), Some(rw), None) = (f.next(), f.next(), f.next(), f.next())
        else {
            return Err(bad());
        };
        let at: u64 = at.parse().map_err(|_| bad())?;
        let addr = u64::from_str_radix(addr.trim_start_matches("0x"), 16).map_err(|_| bad())?;
        let write = match rw {
            "R" | "r" => false,
            "W" | "w" => true,
            _ => return Err(bad()),
        };
        out.push((at, addr >> 6, write));
    }
    Ok(out)
}

fn write_stream(path: &str, header: &str, reqs: &[(u64, u64, bool)]) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| format!("{path}: {e}"))?;
    let mut w = std::io::BufWriter::new(file);
    let io = |e: std::io::Error| format!("{path}: {e}");
    writeln!(w, "# {header}").map_err(io)?;
    for &(at, line, write) in reqs {
        writeln!(
            w,
            "{at} 0x{:x} {}",
            line << 6,
            if write { 'W' } else { 'R' }
        )
        .map_err(io)?;
    }
    w.flush().map_err(io)
}

/// One stream through a fresh controller: the table row's figures.
struct Row {
    delivered_gbps: f64,
    avg_ns: f64,
    p50_ns: f64,
    p99_ns: f64,
    row_hit_share: f64,
    queue_wait_ns: f64,
    reads: u64,
    writes: u64,
    bytes: u64,
    first_arrival_ns: f64,
    data_end_ns: f64,
    write_queue_reads: u64,
    read_row: [u64; 3],
    write_row: [u64; 3],
    write_queue_wait_ns: f64,
    watermark_drains: u64,
    idle_drained_writes: u64,
}

fn run(cfg: &DramConfig, reqs: &[(u64, u64, bool)]) -> Row {
    let mut d = DramController::new(cfg).expect("valid DRAM configuration");
    let mut latencies = Vec::with_capacity(reqs.len());
    for &(at, line, write) in reqs {
        let r = d.access(&DramRequest {
            line,
            write,
            arrival_cycle: at,
            kind: RequestKind::Data,
        });
        if !write && r.service != DramService::WriteQueue {
            latencies.push(r.latency_cycles);
        }
    }
    let last = reqs.iter().map(|r| r.0).max().unwrap_or(0);
    d.flush_writes(last);
    let c = d.counters();
    let first = reqs.iter().map(|r| r.0).min().unwrap_or(0);
    let ns = |cycles: f64| cycles * 1000.0 / cfg.core_clock_mhz as f64;
    let bytes: u64 = c.channels.iter().map(|k| k.bytes).sum();
    let span_ns = ns(c.data_end_cycle.saturating_sub(first).max(1) as f64);
    latencies.sort_unstable();
    let pct = |p: f64| {
        if latencies.is_empty() {
            return 0.0;
        }
        let i = ((p * latencies.len() as f64).ceil() as usize).clamp(1, latencies.len()) - 1;
        ns(latencies[i] as f64)
    };
    let served: u64 = c.read_row.iter().sum();
    Row {
        delivered_gbps: bytes as f64 / span_ns,
        avg_ns: ns(latencies.iter().sum::<u64>() as f64 / latencies.len().max(1) as f64),
        p50_ns: pct(0.5),
        p99_ns: pct(0.99),
        row_hit_share: c.read_row[0] as f64 / served.max(1) as f64,
        queue_wait_ns: ns(c.read_queue_full_cycles as f64 / c.reads.max(1) as f64),
        reads: c.reads,
        writes: c.writes,
        bytes,
        first_arrival_ns: ns(first as f64),
        data_end_ns: ns(c.data_end_cycle as f64),
        write_queue_reads: c.write_queue_reads,
        read_row: c.read_row,
        write_row: c.write_row,
        write_queue_wait_ns: ns(c.write_queue_full_cycles as f64 / c.writes.max(1) as f64),
        watermark_drains: c.watermark_drains,
        idle_drained_writes: c.idle_drained_writes,
    }
}

fn print_header(o: &Options, peak: f64) {
    println!(
        "# DDR4-3200AA, 1 channel x 1 rank x 4 bank groups x 4 banks, 8 KiB rows, mapping {:?}, \
         refresh {}, core {} MHz, peak {peak:.1} GB/s",
        o.mapping,
        if o.refresh { "on" } else { "off" },
        o.core_mhz
    );
    println!(
        "| stream | interval (cycles) | offered GB/s | delivered GB/s | avg read ns | p50 ns | \
         p99 ns | of which queue-full wait ns | row hits | reads | writes |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
}

fn main() {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("dram_curve: {e}");
            }
            eprintln!(
                "usage: dram_curve [--pattern random|stream|random_mix|stream_mix]... \
                 [--intervals 40,20,...] [--count N] [--seed S] \
                 [--mapping row_contiguous|row_hashed|line_interleaved|champsim|ro_ba_ra_co_ch] \
                 [--refresh on|off] [--core-mhz MHZ] [--stream-in FILE] [--write-stream FILE] \
                 [--json]"
            );
            std::process::exit(if e.is_empty() { 0 } else { 2 });
        }
    };
    let cfg = DramConfig {
        channels: 1,
        banks_per_channel: 16,
        ranks: 1,
        bank_groups: 4,
        row_bytes: 8192,
        model: DramModel::Queued,
        timing: DramTimingSet::Ddr4x3200,
        t_cl: 22,
        t_rcd: 22,
        t_rp: 22,
        dram_clock_mhz: 1600,
        core_clock_mhz: o.core_mhz,
        controller_cycles: 0,
        address_mapping: o.mapping,
        refresh: o.refresh,
        ..DramConfig::default()
    };
    let probe = DramController::new(&cfg).expect("valid DRAM configuration");
    let peak = probe.peak_bytes_per_second() / 1e9;
    let burst_ns = probe.timings().t_bl as f64 * 1000.0 / cfg.dram_clock_mhz as f64;
    if !o.json {
        print_header(&o, peak);
    }
    let mut streams: Vec<(String, f64, Stream)> = Vec::new();
    if let Some(path) = &o.stream_in {
        let reqs = read_stream(path).unwrap_or_else(|e| {
            eprintln!("dram_curve: {e}");
            std::process::exit(2)
        });
        let span = reqs.iter().map(|r| r.0).max().unwrap_or(0) as f64;
        let interval = span / reqs.len().saturating_sub(1).max(1) as f64;
        streams.push((format!("file {path}"), interval, reqs));
    } else {
        for &p in &o.patterns {
            for &interval in &o.intervals {
                streams.push((
                    p.name().to_string(),
                    interval,
                    generate(p, interval, o.count, o.seed),
                ));
            }
        }
    }
    let many = streams.len() > 1;
    for (name, interval, reqs) in &streams {
        if let (Some(path), None) = (&o.write_stream, &o.stream_in) {
            let path = if many {
                format!("{path}.{name}.{interval}.txt")
            } else {
                path.clone()
            };
            let header = format!(
                "xlat dram_curve stream: pattern={name} interval_cycles={interval} count={} \
                 seed={} core_clock_mhz={}",
                reqs.len(),
                o.seed,
                o.core_mhz
            );
            if let Err(e) = write_stream(&path, &header, reqs) {
                eprintln!("dram_curve: {e}");
                std::process::exit(2);
            }
        }
        let offered = 64.0 * o.core_mhz as f64 * 1e6 / interval / 1e9;
        let r = run(&cfg, reqs);
        if o.json {
            let figures = serde_json::json!({
                "name": name,
                "interval": interval,
                "requests": reqs.len(),
                "reads": r.reads,
                "writes": r.writes,
                "bytes": r.bytes,
                "first_arrival_ns": r.first_arrival_ns,
                "data_end_ns": r.data_end_ns,
                "delivered_gbps": r.delivered_gbps,
                "read_lat_avg_ns": r.avg_ns,
                "read_lat_p50_ns": r.p50_ns,
                "read_lat_p99_ns": r.p99_ns,
                "burst_ns": burst_ns,
                "write_queue_reads": r.write_queue_reads,
                "read_row": r.read_row,
                "write_row": r.write_row,
                "read_queue_full_wait_ns": r.queue_wait_ns,
                "write_queue_full_wait_ns": r.write_queue_wait_ns,
                "watermark_drains": r.watermark_drains,
                "idle_drained_writes": r.idle_drained_writes,
            });
            println!("{figures}");
            continue;
        }
        println!(
            "| {name} | {interval} | {offered:.1} | {:.2} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} % | {} | {} |",
            r.delivered_gbps,
            r.avg_ns,
            r.p50_ns,
            r.p99_ns,
            r.queue_wait_ns,
            100.0 * r.row_hit_share,
            r.reads,
            r.writes
        );
    }
}
