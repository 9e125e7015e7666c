//! The summary stored in native traces (versions 3 and 4) against the scan, and `verify`
//! (`xlat trace info --verify`) on sound, damaged and older traces.

use serde_json::Value;
use std::path::PathBuf;
use xlat::config::Config;
use xlat::trace::info::{stored_summary, summarize, verify};
use xlat::trace::native::{NativeReader, NativeWriter, VerifyProgress};
use xlat::trace::{open, Event, EventSource, SourceError};

const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/sort.xlat");

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xlat-summary-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn drain(src: &mut dyn EventSource) -> Result<Vec<Event>, SourceError> {
    let mut out = Vec::new();
    while src.fill(&mut out, 1000)? > 0 {}
    Ok(out)
}

fn generated(name: &str, refs: u64) -> Vec<Event> {
    let o = |k: &str, v: &str| (k.to_string(), v.to_string());
    let c = Config::resolve(
        None,
        &[
            o("sim.refs", &refs.to_string()),
            o("workload.name", name),
            o("workload.footprint", "64MiB"),
        ],
    )
    .unwrap();
    let mut g = xlat::workloads::create(&c.workload, refs, 1).unwrap();
    drain(g.as_mut()).unwrap()
}

fn write(events: &[Event], name: &str) -> PathBuf {
    let mut w = NativeWriter::new(Vec::new(), &serde_json::json!({"by": "test"}), 1).unwrap();
    for e in events {
        w.write(e).unwrap();
    }
    let path = tmp(name);
    std::fs::write(&path, w.finish().unwrap().0).unwrap();
    path
}

fn committed_events() -> Vec<Event> {
    drain(open(COMMITTED, None).unwrap().as_mut()).unwrap()
}

fn scan(path: &std::path::Path) -> Value {
    summarize(open(path.to_str().unwrap(), None).unwrap().as_mut()).unwrap()
}

fn stored(path: &std::path::Path) -> Value {
    let mut v = stored_summary(path.to_str().unwrap())
        .unwrap()
        .expect("a stored summary");
    assert_eq!(v["summary_from"], "trailer");
    assert_eq!(v["trace"]["version"], xlat::trace::native::VERSION);
    let o = v.as_object_mut().unwrap();
    o.remove("trace");
    o.remove("summary_from");
    v
}

fn check(path: &std::path::Path) -> Result<Value, SourceError> {
    verify(path.to_str().unwrap(), 2, &VerifyProgress::default())
}

#[test]
fn the_stored_summary_equals_the_scan_on_a_real_recorded_program_and_generated_workloads() {
    let real = write(&committed_events(), "sort3.xlat");
    assert_eq!(stored(&real), scan(&real));
    // And equals the scan of the original (version 1) recording of the same events.
    assert_eq!(stored(&real), scan(&PathBuf::from(COMMITTED)));
    for w in ["gups", "stream", "bfs"] {
        let p = write(&generated(w, 200_000), &format!("{w}.xlat"));
        let s = stored(&p);
        assert_eq!(s, scan(&p), "{w}");
        assert!(s["footprint_pages"].as_u64().unwrap() > 100, "{w}: {s}");
    }
}

#[test]
fn a_trace_without_a_summary_has_none_stored_and_is_scanned() {
    assert!(stored_summary(COMMITTED).unwrap().is_none(), "version 1");
    let mut w = NativeWriter::new(Vec::new(), &serde_json::json!({}), 1)
        .unwrap()
        .without_summary();
    for e in &committed_events() {
        w.write(e).unwrap();
    }
    let p = tmp("nosummary.xlat");
    std::fs::write(&p, w.finish().unwrap().0).unwrap();
    assert!(stored_summary(p.to_str().unwrap()).unwrap().is_none());
    assert_eq!(scan(&p), scan(&PathBuf::from(COMMITTED)));
    let v = check(&p).unwrap();
    assert_eq!(v["summary"], "absent");
}

/// The version 2 layout of a version 3 trace: no summary block, the 36-byte end record.
fn as_version_2(v3: &[u8]) -> Vec<u8> {
    let meta_len = u32::from_le_bytes(v3[12..16].try_into().unwrap()) as usize;
    let mut out = v3[..16 + meta_len].to_vec();
    out[8..10].copy_from_slice(&2u16.to_le_bytes());
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    let end = &v3[v3.len() - 44..];
    let summary_at = u64::from_le_bytes(end[32..40].try_into().unwrap()) as usize;
    out.extend_from_slice(&v3[16 + meta_len + 4..summary_at]);
    let mut e = end[..32].to_vec();
    let crc = crc32fast::hash(&e);
    e.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&e);
    out
}

#[test]
fn version_1_and_2_traces_are_still_read_and_verified() {
    let ev = committed_events();
    let v3 = std::fs::read(write(&ev, "v3.xlat")).unwrap();
    let v2 = as_version_2(&v3);
    assert_eq!(u16::from_le_bytes([v2[8], v2[9]]), 2);
    let p2 = tmp("v2.xlat");
    std::fs::write(&p2, &v2).unwrap();
    let mut r = NativeReader::new(&v2[..], "v2", Some(v2.len() as u64)).unwrap();
    assert_eq!(drain(&mut r).unwrap(), ev);
    assert!(stored_summary(p2.to_str().unwrap()).unwrap().is_none());
    for (p, version) in [(p2, 2), (PathBuf::from(COMMITTED), 1)] {
        let v = check(&p).unwrap();
        assert_eq!(v["version"], version);
        assert_eq!(v["events"], ev.len() as u64);
        assert_eq!(v["summary"], "absent");
    }
}

#[test]
fn verify_accepts_a_sound_trace_checks_its_summary_and_hashes_it() {
    let p = write(&generated("gups", 300_000), "sound.xlat");
    let v = check(&p).unwrap();
    assert_eq!(v["summary"], "checked");
    assert_eq!(v["refs"], 300_000);
    assert!(v["chunks"].as_u64().unwrap() >= 5);
    assert_eq!(
        v["sha256"],
        xlat::trace::sha256_file(p.to_str().unwrap()).unwrap()
    );
}

#[test]
fn verify_names_the_file_offset_and_problem_of_a_flipped_byte_in_any_chunk() {
    let p = write(&generated("gups", 300_000), "flip.xlat");
    let bytes = std::fs::read(&p).unwrap();
    // Flip one byte in the middle of the file (inside some chunk's payload).
    let at = bytes.len() / 2;
    let mut bad = bytes.clone();
    bad[at] ^= 0x10;
    let q = tmp("flipped.xlat");
    std::fs::write(&q, &bad).unwrap();
    let e = check(&q).unwrap_err();
    assert_eq!(e.source, q.to_str().unwrap());
    // The sequential reader meets the same problem at the same offset.
    let want = drain(
        &mut NativeReader::new(&bad[..], q.to_str().unwrap(), Some(bad.len() as u64)).unwrap(),
    )
    .unwrap_err();
    assert_eq!(e, want);
    let off = e.offset.unwrap() as usize;
    assert!(off <= at && at - off < 4 << 20, "{e}");
    assert!(e.problem.contains("chunk"), "{e}");
    // A damaged chunk is not seen by the constant-time summary (documented), only by verify.
    assert!(stored_summary(q.to_str().unwrap()).unwrap().is_some());
}

#[test]
fn verify_reports_a_truncation_with_the_offset_where_the_file_ends() {
    let p = write(&generated("gups", 300_000), "whole.xlat");
    let bytes = std::fs::read(&p).unwrap();
    for cut in [bytes.len() / 3, bytes.len() - 1, bytes.len() - 50, 30] {
        let q = tmp("cut.xlat");
        std::fs::write(&q, &bytes[..cut]).unwrap();
        let e = check(&q).unwrap_err();
        assert_eq!(e.source, q.to_str().unwrap());
        assert!(e.problem.contains("truncated"), "cut {cut}: {e}");
        assert!(e.offset.unwrap() <= cut as u64, "cut {cut}: {e}");
        // The constant-time path refuses it too, naming an offset.
        let e = stored_summary(q.to_str().unwrap()).unwrap_err();
        assert!(e.offset.is_some(), "cut {cut}: {e}");
    }
}

#[test]
fn verify_catches_a_summary_block_whose_counts_disagree_with_the_chunks() {
    let p = write(&generated("stream", 100_000), "forged.xlat");
    let bytes = std::fs::read(&p).unwrap();
    let n = bytes.len();
    let at = u64::from_le_bytes(bytes[n - 12..n - 4].try_into().unwrap()) as usize;
    let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
    let text = std::str::from_utf8(&bytes[at + 8..at + 8 + len]).unwrap();
    // Move one load to the stores, keeping the length and the totals: only the per-kind
    // counts, which verify recounts from the chunks, disagree.
    let mut v: Value = serde_json::from_str(text).unwrap();
    let loads = v["summary"]["loads"].as_u64().unwrap();
    let stores = v["summary"]["stores"].as_u64().unwrap();
    v["summary"]["loads"] = (loads - 1).into();
    v["summary"]["stores"] = (stores + 1).into();
    let mut new = serde_json::to_vec(&v).unwrap();
    assert!(new.len() <= len);
    new.resize(len, b' ');
    let mut forged = bytes.clone();
    forged[at + 8..at + 8 + len].copy_from_slice(&new);
    let crc = crc32fast::hash(&forged[at..at + 8 + len]);
    forged[at + 8 + len..at + 12 + len].copy_from_slice(&crc.to_le_bytes());
    let q = tmp("forged2.xlat");
    std::fs::write(&q, &forged).unwrap();
    let e = check(&q).unwrap_err();
    assert_eq!(e.offset, Some(at as u64), "{e}");
    assert!(e.problem.contains("loads"), "{e}");
}

#[test]
fn a_native_trace_warms_up_until_nine_tenths_of_its_footprint_is_touched() {
    // gups over 64 MiB first-touches its pages in its setup, then updates at random: 90 % of
    // its footprint is touched within the setup, and at most half the trace warms up.
    let p = write(&generated("gups", 200_000), "gups_warm.xlat");
    let summary = stored(&p);
    let phase = xlat::trace::info::first_touch_refs(&summary).unwrap();
    let pages = summary["footprint_pages"].as_u64().unwrap();
    assert!(
        phase >= pages * 9 / 10 && phase <= 100_000,
        "{phase} for {pages} pages"
    );
    let o = |k: &str, v: &str| (k.to_string(), v.to_string());
    let cfg = Config::resolve(None, &[o("sim.refs", "200000")]).unwrap();
    let r = xlat::run(&cfg, open(p.to_str().unwrap(), None).unwrap()).unwrap();
    assert_eq!(
        r["warmup"]["why"], "auto_first_touch_phase",
        "{}",
        r["warmup"]
    );
    assert_eq!(r["warmup"]["refs"], phase);
    // The committed recording's summary predates the touch curve: it cannot tell.
    let r = xlat::run(&cfg, open(COMMITTED, None).unwrap()).unwrap();
    assert_eq!(r["warmup"]["why"], "auto_source_cannot_tell");
    assert_eq!(r["warmup"]["refs"], 0);
}
