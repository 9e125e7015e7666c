//! Tests of the native format: round trips through the writer and the reader, chunking and
//! totals, the background compressor, the record counter against its reference, and the
//! reader's errors on damaged input.
//!
//! Contract: test code only; it may use every item of the format's files.

use super::format::tag;
use super::records::count_chunk;
use super::*;
use crate::addr::Vaddr;
use crate::trace::{AccessKind, Event, EventSource, SourceError};
use std::io::{self, Write};

fn sample() -> Vec<Event> {
    vec![
        Event::Mmap {
            addr: Vaddr(0x7f00_0000_0000),
            len: 1 << 20,
            prot: 3,
            flags: 0x22,
        },
        Event::Brk {
            new_brk: Vaddr(0x55_0000_1000),
        },
        Event::Thread { tid: 2 },
        Event::Access {
            kind: AccessKind::Store,
            va: Vaddr(0x7f00_0000_0010),
            size: 8,
            instrs: 3,
            dep: 0,
        },
        Event::Access {
            kind: AccessKind::Load,
            va: Vaddr(0x10),
            size: 64,
            instrs: 0,
            dep: 1,
        },
        Event::Access {
            kind: AccessKind::IFetch,
            va: Vaddr(0x7f00_0000_0fc0),
            size: 4,
            instrs: 1,
            dep: u16::MAX,
        },
        Event::Mprotect {
            addr: Vaddr(0x7f00_0000_0000),
            len: 4096,
            prot: 1,
        },
        Event::Madvise {
            addr: Vaddr(0x7f00_0000_0000),
            len: 8192,
            advice: 4,
        },
        Event::Munmap {
            addr: Vaddr(0x7f00_0000_0000),
            len: 1 << 20,
        },
        Event::Switch { pid: 7 },
        Event::Exit { pid: 7 },
    ]
}

fn write(events: &[Event], level: i32) -> Vec<u8> {
    let mut w = NativeWriter::new(Vec::new(), &serde_json::json!({"t": 1}), level).unwrap();
    for e in events {
        w.write(e).unwrap();
    }
    w.finish().unwrap().0
}

fn read_all(bytes: &[u8]) -> Result<Vec<Event>, SourceError> {
    let mut r = NativeReader::new(bytes, "mem", Some(bytes.len() as u64))?;
    let mut out = Vec::new();
    while r.fill(&mut out, 1000)? > 0 {}
    Ok(out)
}

#[test]
fn every_event_kind_round_trips_compressed_and_raw() {
    for level in [0, 3] {
        let bytes = write(&sample(), level);
        assert_eq!(read_all(&bytes).unwrap(), sample());
    }
}

/// Many chunks of accesses with every size of delta and instruction count, and system
/// calls between them.
fn many_chunks() -> Vec<Event> {
    accesses_and_calls(300_000)
}

/// `n` accesses with system calls every 50,000 (see [`many_chunks`]).
fn accesses_and_calls(n: u64) -> Vec<Event> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut out = Vec::new();
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if i % 50_000 == 0 {
            out.extend(
                sample()
                    .into_iter()
                    .filter(|e| !matches!(e, Event::Exit { .. })),
            );
        }
        let kind = [AccessKind::Load, AccessKind::Store, AccessKind::IFetch][(x % 3) as usize];
        // Deltas from 0 to the whole 64-bit range, instruction counts up to u32::MAX.
        let va = if x & 0x30 == 0 {
            x
        } else {
            0x7f00_0000_0000 + (x & 0xf_ffff)
        };
        out.push(Event::Access {
            kind,
            va: Vaddr(va),
            size: 1 + (x >> 58) as u8,
            instrs: (x >> (x & 31)) as u32,
            dep: 0,
        });
    }
    out
}

#[test]
fn compressing_in_the_background_writes_the_same_bytes() {
    let events = many_chunks();
    for level in [0, 1, -3] {
        let inline = write(&events, level);
        let mut w = NativeWriter::new(Vec::new(), &serde_json::json!({"t": 1}), level)
            .unwrap()
            .compress_in_background()
            .unwrap();
        for e in &events {
            w.write(e).unwrap();
        }
        let (bytes, totals) = w.finish().unwrap();
        assert!(totals.chunks > 4, "several chunks: {totals:?}");
        assert!(bytes == inline, "level {level}: the files differ");
        assert_eq!(read_all(&bytes).unwrap(), events);
    }
}

#[test]
fn a_write_error_in_the_background_is_reported() {
    struct Full(usize);
    impl Write for Full {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if self.0 < b.len() {
                return Err(io::Error::other("disk full"));
            }
            self.0 -= b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut w = NativeWriter::new(Full(100_000), &serde_json::json!({}), 0)
        .unwrap()
        .compress_in_background()
        .unwrap();
    let r = many_chunks()
        .iter()
        .try_for_each(|e| w.write(e))
        .and_then(|()| w.finish().map(|_| ()));
    let e = r.expect_err("the output is too small");
    assert!(e.to_string().contains("disk full"), "{e}");
}

/// `count_chunk` as it was before its inline access checks: every record through
/// `decode_record` (the reference for the fast path).
fn count_chunk_reference(raw: &[u8], records: u32, deps: bool) -> Result<ChunkCounts, String> {
    let mut c = ChunkCounts {
        records: records as u64,
        ..Default::default()
    };
    let (mut pos, mut st) = (0usize, ChunkState::default());
    for rec in 0..records {
        let at = pos;
        let ev = decode_record(raw, &mut pos, &mut st, deps)
            .map_err(|p| format!("record {rec} at payload byte {at}: {p}"))?;
        match ev {
            Event::Access { kind, instrs, .. } => {
                c.instructions += instrs as u64;
                match kind {
                    AccessKind::Load => c.loads += 1,
                    AccessKind::Store => c.stores += 1,
                    AccessKind::IFetch => c.ifetches += 1,
                }
            }
            Event::Thread { .. } => {}
            other => {
                let i = [
                    "mmap", "munmap", "brk", "mprotect", "madvise", "switch", "exit",
                ]
                .iter()
                .position(|n| format!("{other:?}").to_lowercase().starts_with(n))
                .expect("a system event");
                c.syscalls[i] += 1;
            }
        }
    }
    if pos != raw.len() {
        return Err(format!(
            "{} bytes left over after its {records} records",
            raw.len() - pos
        ));
    }
    Ok(c)
}

proptest::proptest! {
    #[test]
    fn counting_a_chunk_gives_the_reference_counts_or_the_reference_error(
        events in proptest::collection::vec(0usize..10, 1..60),
        flips in proptest::collection::vec((0usize..4000, proptest::prop_oneof![
            proptest::strategy::Just(0u8), proptest::strategy::Just(1), proptest::strategy::Just(64),
            proptest::strategy::Just(65), proptest::strategy::Just(0x7f), proptest::strategy::Just(0x80),
            proptest::strategy::Just(0xff), proptest::strategy::Just(0x23), 0u8..=255
        ]), 0..3),
        extra in 0u32..3,
    ) {
        // A chunk payload from real records (drawn from `many_chunks` and `sample`), then
        // a few bytes overwritten and the record count perhaps off.
        let pool: Vec<Event> = sample().into_iter().chain(accesses_and_calls(40)).collect();
        let chosen: Vec<Event> = events.iter().map(|&i| pool[(i * 7) % pool.len()]).collect();
        let mut w = NativeWriter::new(Vec::new(), &serde_json::json!({}), 0).unwrap();
        for e in &chosen {
            w.write(e).unwrap();
        }
        let mut raw = std::mem::take(&mut w.raw);
        for (at, b) in flips {
            if !raw.is_empty() {
                let n = raw.len();
                raw[at % n] = b;
            }
        }
        let records = chosen.len() as u32 + extra;
        for deps in [false, true] {
            proptest::prop_assert_eq!(
                count_chunk(&raw, records, deps),
                count_chunk_reference(&raw, records, deps)
            );
        }
    }
}

#[test]
fn an_empty_trace_is_valid_and_yields_no_events() {
    let bytes = write(&[], 1);
    assert_eq!(read_all(&bytes).unwrap(), vec![]);
}

#[test]
fn totals_are_counted_and_chunks_split_at_the_record_limit() {
    let ev = Event::Access {
        kind: AccessKind::Load,
        va: Vaddr(4096),
        size: 4,
        instrs: 2,
        dep: 0,
    };
    let mut w = NativeWriter::new(Vec::new(), &serde_json::json!({}), 1).unwrap();
    for _ in 0..MAX_CHUNK_RECORDS + 5 {
        w.write(&ev).unwrap();
    }
    let (bytes, t) = w.finish().unwrap();
    assert_eq!(t.chunks, 2);
    assert_eq!(t.instructions, 2 * (MAX_CHUNK_RECORDS as u64 + 5));
    let mut r = NativeReader::new(&bytes[..], "mem", None).unwrap();
    let mut out = Vec::new();
    while r.fill(&mut out, 4096).unwrap() > 0 {
        out.clear();
    }
    assert_eq!(r.totals(), t);
}

#[test]
fn a_zero_length_file_is_reported_as_empty() {
    let e = read_all(&[]).unwrap_err();
    assert!(e.problem.contains("empty file"), "{e}");
    assert_eq!(e.offset, Some(0));
}

#[test]
fn trailing_bytes_after_the_end_record_are_an_error() {
    let mut bytes = write(&sample(), 1);
    let n = bytes.len() as u64;
    bytes.push(0);
    let e = read_all(&bytes).unwrap_err();
    assert_eq!(e.offset, Some(n));
    assert!(e.problem.contains("after the end-of-trace"), "{e}");
}

fn access(dep: u16) -> Event {
    Event::Access {
        kind: AccessKind::Load,
        va: Vaddr(0x7f00_0000_1000),
        size: 8,
        instrs: 2,
        dep,
    }
}

#[test]
fn dependences_round_trip_and_take_bytes_only_when_not_zero() {
    let deps = [0u16, 1, 2, 127, 128, 300, 16_384, u16::MAX];
    let ev: Vec<Event> = deps.iter().map(|&d| access(d)).collect();
    for level in [0, 3] {
        assert_eq!(read_all(&write(&ev, level)).unwrap(), ev);
    }
    // The record of a dependence of 0 is the version-3 record; others add 1 to 3 bytes (the
    // first dependence of a chunk is written as zigzag(-dep) = 2 dep - 1).
    let len = |dep: u16| {
        let mut w = NativeWriter::new(Vec::new(), &serde_json::json!({}), 0).unwrap();
        w.write(&access(dep)).unwrap();
        w.raw.clone()
    };
    assert_eq!(len(0)[0], tag::LOAD);
    for (dep, extra) in [
        (1u16, 1usize),
        (64, 1),
        (65, 2),
        (8192, 2),
        (8193, 3),
        (u16::MAX, 3),
    ] {
        let raw = len(dep);
        assert_eq!(raw.len(), len(0).len() + extra, "dep {dep}");
        assert_eq!(raw[0], tag::LOAD | tag::DEP);
    }
}

/// `bytes` (a trace written by this build) relabelled as format `version` (the header's
/// checksum rewritten; chunks and end record are the same from version 3 on).
fn relabel(bytes: &[u8], version: u16) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let meta_len = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
    b[8..10].copy_from_slice(&version.to_le_bytes());
    let crc = crc32fast::hash(&b[..16 + meta_len]);
    b[16 + meta_len..20 + meta_len].copy_from_slice(&crc.to_le_bytes());
    b
}

#[test]
fn a_version_3_trace_reads_with_no_dependences_and_cannot_hold_them() {
    // Without dependences, version 3 and 4 records are the same bytes.
    let plain: Vec<Event> = sample().into_iter().map(|e| e.with_dep(0)).collect();
    let v3 = relabel(&write(&plain, 3), 3);
    let r = NativeReader::new(&v3[..], "v3", Some(v3.len() as u64)).unwrap();
    assert_eq!(r.version(), 3);
    assert_eq!(read_all(&v3).unwrap(), plain);
    // A dependence flag in a version-3 trace is an unknown tag, named with its place.
    let v3 = relabel(&write(&[access(5)], 0), 3);
    let e = read_all(&v3).unwrap_err();
    assert!(e.problem.contains("unknown record tag 0x04"), "{e}");
}

#[test]
fn a_dependence_of_zero_with_the_flag_is_an_error() {
    let mut w = NativeWriter::new(Vec::new(), &serde_json::json!({}), 0).unwrap();
    w.write(&access(1)).unwrap();
    let mut raw = w.raw.clone();
    *raw.last_mut().unwrap() = 0;
    let (mut pos, mut st) = (0, ChunkState::default());
    let e = decode_record(&raw, &mut pos, &mut st, true).unwrap_err();
    assert!(e.contains("dependence 0 is outside 1..=65535"), "{e}");
    assert!(count_chunk(&raw, 1, true).is_err());
}

#[test]
fn the_shipped_version_3_corpus_traces_still_read_as_dependences_unknown() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/corpus/gups.xlat"
    );
    let mut src = crate::trace::open(path, None).unwrap();
    let d = src.describe().unwrap();
    assert!(
        d["dependences"]
            .as_str()
            .unwrap()
            .starts_with("unknown: recorded before dependences were kept (format version 3)"),
        "{d}"
    );
    let mut out = Vec::new();
    let mut accesses = 0;
    while src.fill(&mut out, 4096).unwrap() > 0 {
        for e in out.drain(..) {
            if let Event::Access { dep, .. } = e {
                assert_eq!(dep, 0);
                accesses += 1;
            }
        }
    }
    assert!(accesses > 100_000, "{accesses}");
}

#[test]
fn a_base_pointers_and_a_chases_dependences_repeat_one_byte() {
    // Accesses 1.. depend on access 0 (a base pointer), then each on the one before (a chase):
    // the source moves by 0, then by 1, so their dependence bytes are all alike.
    let ev: Vec<Event> = (0..200u16)
        .map(|i| access(if i < 100 { i } else { 1 }))
        .collect();
    let bytes = write(&ev, 0);
    assert_eq!(read_all(&bytes).unwrap(), ev);
    let mut w = NativeWriter::new(Vec::new(), &serde_json::json!({}), 0).unwrap();
    let mut lens = Vec::new();
    for e in &ev {
        let before = w.raw.len();
        w.write(e).unwrap();
        lens.push(w.raw[before..].to_vec());
    }
    // Same address and instruction count: after the first, a record is its tag, size, 0 delta,
    // 2 instructions and the dependence's byte (zigzag of the source's move).
    assert_eq!(lens[0][0], tag::LOAD);
    assert!(lens[2..100]
        .iter()
        .all(|r| r == &vec![tag::LOAD | tag::DEP, 8, 0, 2, 0]));
    assert!(lens[101..]
        .iter()
        .all(|r| r == &vec![tag::LOAD | tag::DEP, 8, 0, 2, 2]));
}
