//! Opening a trace file by path: format detection, the sha256 that result records carry.

use super::champsim::{ChampSimReader, Variant};
use super::native::{NativeReader, MAGIC};
use super::{EventSource, SourceError};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{BufReader, Read};

/// Trace file formats this build reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// xlat's own format (`docs/trace-format.md`).
    Native,
    /// ChampSim's 64-byte `input_instr` records (plain, .xz or .gz).
    ChampSim,
    /// The 84-byte CloudSuite variant of ChampSim records (plain, .xz or .gz).
    CloudSuite,
}

impl TraceFormat {
    /// Parse a format name: `native`, `champsim`, `cloudsuite` (`auto` gives `None`).
    pub fn parse(s: &str) -> Result<Option<TraceFormat>, String> {
        match s {
            "auto" | "" => Ok(None),
            "native" | "xlat" => Ok(Some(TraceFormat::Native)),
            "champsim" => Ok(Some(TraceFormat::ChampSim)),
            "cloudsuite" => Ok(Some(TraceFormat::CloudSuite)),
            other => Err(format!(
                "unknown trace format '{other}' (expected auto, native, champsim or cloudsuite)"
            )),
        }
    }

    /// The format's name as written in result records.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Native => "native",
            TraceFormat::ChampSim => "champsim",
            TraceFormat::CloudSuite => "cloudsuite",
        }
    }
}

fn io_err(path: &str, e: std::io::Error) -> SourceError {
    SourceError {
        source: path.to_string(),
        offset: None,
        problem: format!("cannot open: {e}"),
    }
}

/// sha256 of a file's bytes, as lowercase hex (streams the file).
pub fn sha256_file(path: &str) -> Result<String, SourceError> {
    let mut f = File::open(path).map_err(|e| io_err(path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| SourceError {
            source: path.to_string(),
            offset: None,
            problem: format!("read error while hashing: {e}"),
        })?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Guess the format from the first bytes and the name: the native magic; else a name that
/// mentions champsim or cloudsuite. Anything else is an error asking for the format.
fn detect(path: &str, head: &[u8]) -> Result<TraceFormat, SourceError> {
    if head.starts_with(MAGIC) {
        return Ok(TraceFormat::Native);
    }
    let lower = path.to_ascii_lowercase();
    if lower.contains("cloudsuite") {
        return Ok(TraceFormat::CloudSuite);
    }
    if lower.contains("champsim") {
        return Ok(TraceFormat::ChampSim);
    }
    let problem = if head.is_empty() {
        "empty file: not a trace (0 bytes)".to_string()
    } else {
        format!(
            "unknown trace format: the file starts with {:02x?}, not the xlat native magic \
             \"XLATTRC\\0\"; for a ChampSim trace pass the format explicitly \
             (--trace-format champsim or cloudsuite)",
            &head[..head.len().min(8)]
        )
    };
    Err(SourceError {
        source: path.to_string(),
        offset: Some(0),
        problem,
    })
}

/// What the recorder's valgrind tool stores (the `dependences` key of its traces' metadata).
pub const DEPENDENCES_RECORDED: &str = "recorded (register dataflow, window 65535 accesses)";

/// What a record says of the dependences of a native trace of format `version` with header
/// metadata `meta`: before version 4 they are unknown (the format had no field for them); from
/// version 4 on, what the writer put in `meta["dependences"]` (the recorder:
/// [`DEPENDENCES_RECORDED`], or why there are none), else that the trace stores them.
pub fn native_dependences(version: u16, meta: &serde_json::Value) -> String {
    if version < super::native::DEPS_VERSION {
        return format!(
            "unknown: recorded before dependences were kept (format version {version}); \
             timing.model = ooo treats every access as independent"
        );
    }
    match meta.get("dependences").and_then(|d| d.as_str()) {
        Some(d) => d.to_string(),
        None => "stored in the trace (as its writer gave them)".to_string(),
    }
}

/// Where derived facts about traces are cached (today: the VMAs inferred for ChampSim traces,
/// keyed by the trace's SHA-256): `$XLAT_CACHE_DIR` when set (empty: no cache), else
/// `$XDG_CACHE_HOME/xlat`, else `$HOME/.cache/xlat`.
pub fn cache_dir() -> Option<std::path::PathBuf> {
    if let Some(dir) = std::env::var_os("XLAT_CACHE_DIR") {
        return (!dir.is_empty()).then(|| dir.into());
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(std::path::PathBuf::from(dir).join("xlat"));
    }
    std::env::var_os("HOME")
        .filter(|d| !d.is_empty())
        .map(|h| std::path::PathBuf::from(h).join(".cache").join("xlat"))
}

/// Open the trace at `path` (format detected when `format` is `None`) as a streaming source.
/// The source's [`EventSource::describe`] carries path, format and sha256.
pub fn open(path: &str, format: Option<TraceFormat>) -> Result<Box<dyn EventSource>, SourceError> {
    let mut f = File::open(path).map_err(|e| io_err(path, e))?;
    let len = f.metadata().map_err(|e| io_err(path, e))?.len();
    let mut head = Vec::with_capacity(8);
    (&mut f)
        .take(8)
        .read_to_end(&mut head)
        .map_err(|e| io_err(path, e))?;
    let format = match format {
        Some(f) => f,
        None => detect(path, &head)?,
    };
    let sha = sha256_file(path)?;
    let mut describe = serde_json::json!({
        "path": path,
        "format": format.name(),
        "sha256": sha,
        "bytes": len,
    });
    match format {
        TraceFormat::Native => {
            let f = File::open(path).map_err(|e| io_err(path, e))?;
            let mut r = NativeReader::new(BufReader::with_capacity(1 << 20, f), path, Some(len))?;
            describe["vmas_inferred"] = false.into();
            describe["dependences"] = native_dependences(r.version(), r.meta()).into();
            describe["meta"] = r.meta().clone();
            // The stored summary (constant time) tells how long the first-touch phase is.
            let summary = super::native::read_tail(path).ok().and_then(|t| t.summary);
            let first_touch = summary.as_ref().and_then(super::summary::first_touch_refs);
            r.set_first_touch_refs(first_touch);
            r.set_total_refs(summary.as_ref().and_then(|s| s["refs"].as_u64()));
            r.set_describe(describe);
            Ok(Box::new(r))
        }
        TraceFormat::ChampSim | TraceFormat::CloudSuite => {
            let variant = if format == TraceFormat::ChampSim {
                Variant::ChampSim
            } else {
                Variant::CloudSuite
            };
            let mut r = match cache_dir() {
                Some(dir) => {
                    let (r, cached) = ChampSimReader::open_cached(path, variant, &sha, &dir)?;
                    describe["vma_inference"] = if cached { "cached" } else { "first pass" }.into();
                    r
                }
                None => {
                    describe["vma_inference"] = "first pass".into();
                    ChampSimReader::open(path, variant)?
                }
            };
            describe["vmas_inferred"] = true.into();
            describe["vma_heuristic"] = r.heuristic().into();
            describe["inferred_vmas"] = r.vma_count().into();
            describe["dependences"] = "derived from registers".into();
            r.set_describe(describe);
            // Decompressing dominates reading a ChampSim trace: do it alongside the simulation.
            Ok(Box::new(super::background::Background::new(Box::new(r))))
        }
    }
}
