//! `xlat trace info` on files: the summary a native trace stores (read in constant time from
//! its tail), a trace's event total, and `--verify` (every byte of a native trace checked,
//! the file hashed).
//!
//! The summary itself ([`Summary`], [`summarize`], [`Scan`]) is computed in `summary.rs` and
//! re-exported here, its public path. This file calls `summary.rs` and the native reader
//! (`native/`); neither calls it back.

pub use super::summary::{
    first_touch_refs, summarize, Scan, Summary, MAX_LISTED_VMAS, WARMUP_FOOTPRINT_SHARE,
    WARMUP_MAX_TRACE_SHARE,
};
use super::SourceError;
use serde_json::{json, Value};

/// The `trace` section `xlat trace info` prints for a native trace read through its tail (no
/// sha256: hashing reads the whole file; `--verify` computes it).
fn native_describe(path: &str, tail: &super::native::Tail) -> Value {
    json!({
        "path": path,
        "format": "native",
        "version": tail.version,
        "bytes": tail.bytes,
        "vmas_inferred": false,
        "dependences": super::open::native_dependences(tail.version, &tail.meta),
        "meta": tail.meta,
    })
}

/// The summary stored in the native trace at `path`, with its `trace` section and
/// `"summary_from": "trailer"`, read in constant time; `Ok(None)` when the file is not a native
/// trace or has no stored summary of the current version (then [`summarize`] the source). The
/// chunks are not read: a damaged chunk is not noticed (see [`verify`]).
pub fn stored_summary(path: &str) -> Result<Option<Value>, SourceError> {
    let mut head = [0u8; 8];
    let is_native = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok()
        && &head == super::native::MAGIC;
    if !is_native {
        return Ok(None);
    }
    let tail = super::native::read_tail(path)?;
    Ok(tail.summary.clone().map(|mut s| {
        s["trace"] = native_describe(path, &tail);
        s["summary_from"] = "trailer".into();
        s
    }))
}

/// The number of events of the native trace at `path` as its end-of-trace record says (for a
/// scan's progress), when it is a native trace with a readable end.
pub fn total_events(path: &str) -> Option<u64> {
    super::native::read_tail(path)
        .ok()
        .map(|t| t.totals.records)
}

struct Hashing<R> {
    inner: R,
    hash: sha2::Sha256,
}

impl<R: std::io::Read> std::io::Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use sha2::Digest;
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
}

/// Check every byte of the native trace at `path` (`xlat trace info --verify`): header, every
/// chunk (length fields, decompression, checksum, every record), the totals, the summary block
/// (its checksum, and its counts against the chunks) and the end-of-trace record, on `workers`
/// threads besides the caller's (which reads, and hashes the file for `sha256`). Returns a JSON
/// object: `ok`, `version`, `bytes`, `chunks`, `events`, `refs`, `instructions`, `sha256`,
/// `summary` (`checked`, `absent` or `older version`), `seconds`, `events_per_second`.
pub fn verify(
    path: &str,
    workers: usize,
    progress: &super::native::VerifyProgress,
) -> Result<Value, SourceError> {
    use sha2::Digest;
    let started = std::time::Instant::now();
    let err = |problem: String| SourceError {
        source: path.to_string(),
        offset: None,
        problem,
    };
    let f = std::fs::File::open(path).map_err(|e| err(format!("cannot open: {e}")))?;
    let len = f
        .metadata()
        .map_err(|e| err(format!("cannot open: {e}")))?
        .len();
    let input = std::io::BufReader::with_capacity(
        1 << 20,
        Hashing {
            inner: f,
            hash: sha2::Sha256::new(),
        },
    );
    let reader = super::native::NativeReader::new(input, path, Some(len))?;
    let (v, input) = reader.verify(workers, progress)?;
    let sha: String = input
        .into_inner()
        .hash
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let seconds = started.elapsed().as_secs_f64();
    Ok(json!({
        "ok": true,
        "version": v.version,
        "bytes": v.bytes,
        "chunks": v.totals.chunks,
        "events": v.totals.records,
        "refs": v.totals.accesses,
        "instructions": v.totals.instructions,
        "sha256": sha,
        "summary": if v.summary.is_some() {
            "checked"
        } else if v.has_summary_block {
            "older version"
        } else {
            "absent"
        },
        "seconds": seconds,
        "events_per_second": v.totals.records as f64 / seconds.max(1e-9),
    }))
}
