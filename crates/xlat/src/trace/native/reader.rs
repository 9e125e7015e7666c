//! Reading the native format: [`NativeReader`] streams events out of a trace, checking
//! everything it reads (header, chunk headers, payload lengths and checksums, records, summary
//! block, end-of-trace totals) as it goes; [`read_tail`] reads the header, the end-of-trace
//! record and the summary block in constant time.
//!
//! Contract: the first problem is reported as a [`SourceError`] naming the file, the byte
//! offset and the problem; no input panics; a trace without a valid end-of-trace record is an
//! error, never a silently shorter trace; memory is one chunk whatever the trace length. It
//! calls the layout (`format.rs`) and the record decoder (`records.rs`); `verify.rs` builds on
//! its reading steps.

use super::format::{
    check_summary_block, end_len, parse_chunk_header, parse_end, unpack_chunk, Totals,
    CHUNK_HEADER, CHUNK_MAGIC, DEPS_VERSION, END_LEN_V3, END_MAGIC, FLAG_ZSTD, MAGIC, MAX_META,
    MAX_SUMMARY, OLDEST_VERSION, SUMMARY_MAGIC, SUMMARY_VERSION, VERSION,
};
use super::records::{decode_record, ChunkState};
use crate::trace::{Event, EventSource, SourceError};
use std::io::{self, Read};

/// What the end of a native trace says, read in constant time (header, end-of-trace record,
/// summary block) without reading the chunks: see [`read_tail`].
#[derive(Clone, Debug)]
pub struct Tail {
    /// Format version.
    pub version: u16,
    /// The header's metadata.
    pub meta: serde_json::Value,
    /// File length in bytes.
    pub bytes: u64,
    /// The end-of-trace record's totals.
    pub totals: Totals,
    /// The stored summary (version 3 written with a summary, of [`SUMMARY_VERSION`]).
    pub summary: Option<serde_json::Value>,
}

/// Read the header, the end-of-trace record and the summary block of the native trace at
/// `path` in constant time. The chunks are not read, so a damaged chunk is not noticed (that
/// takes a full read, e.g. `xlat trace info --verify`); a damaged or missing end of the file
/// is an error naming the offset.
pub fn read_tail(path: &str) -> Result<Tail, SourceError> {
    use std::io::{Seek, SeekFrom};
    let e = |offset: Option<u64>, problem: String| SourceError {
        source: path.to_string(),
        offset,
        problem,
    };
    let mut f = std::fs::File::open(path).map_err(|x| e(None, format!("cannot open: {x}")))?;
    let bytes = f
        .metadata()
        .map_err(|x| e(None, format!("cannot open: {x}")))?
        .len();
    let (version, meta, header_end) = {
        let r = NativeReader::new(io::BufReader::new(&mut f), path, Some(bytes))?;
        (r.version, r.meta.clone(), r.pos)
    };
    let n = end_len(version) as u64;
    let io_err = |at: u64, x: io::Error| e(Some(at), format!("read error: {x}"));
    if bytes < header_end + n {
        return Err(e(
            Some(bytes),
            format!(
                "truncated: the file is {bytes} bytes long, too short for the header ({header_end} bytes) and an end-of-trace record ({n} bytes)"
            ),
        ));
    }
    let at = bytes - n;
    let mut rec = vec![0u8; n as usize];
    f.seek(SeekFrom::Start(at)).map_err(|x| io_err(at, x))?;
    f.read_exact(&mut rec).map_err(|x| io_err(at, x))?;
    let end = parse_end(&rec).map_err(|problem| {
        e(
            Some(at),
            format!(
                "the last {n} bytes are not a valid end-of-trace record ({problem}): the file is truncated or its end is corrupted (xlat trace info --verify finds where)"
            ),
        )
    })?;
    let mut summary = None;
    if end.summary_at != 0 {
        let s = end.summary_at;
        if s < header_end || s + 12 > at {
            return Err(e(
                Some(at + 32),
                format!("the end-of-trace record points to a summary block at byte {s}, outside the file's chunks ({header_end}..{at})"),
            ));
        }
        let mut block = vec![0u8; (at - s) as usize];
        f.seek(SeekFrom::Start(s)).map_err(|x| io_err(s, x))?;
        f.read_exact(&mut block).map_err(|x| io_err(s, x))?;
        let len = u32::from_le_bytes(block[4..8].try_into().expect("4 bytes")) as u64;
        if &block[0..4] != SUMMARY_MAGIC || len + 12 != at - s {
            return Err(e(
                Some(s),
                format!("no summary block where the end-of-trace record says (byte {s})"),
            ));
        }
        check_summary_block(&block).map_err(|(o, problem)| e(Some(s + o), problem))?;
        let v: serde_json::Value = serde_json::from_slice(&block[8..block.len() - 4])
            .map_err(|x| e(Some(s + 8), format!("summary block is not valid JSON: {x}")))?;
        if v["version"] == SUMMARY_VERSION {
            let sum = v["summary"].clone();
            let t = end.totals;
            if sum["events"] != t.records
                || sum["refs"] != t.accesses
                || sum["instructions"] != t.instructions
            {
                return Err(e(
                    Some(s),
                    format!("the summary block's counts (events {}, refs {}, instructions {}) disagree with the end-of-trace totals {t:?}", sum["events"], sum["refs"], sum["instructions"]),
                ));
            }
            summary = Some(sum);
        }
    }
    Ok(Tail {
        version,
        meta,
        bytes,
        totals: end.totals,
        summary,
    })
}

/// Streams events out of a native trace, checking it as it goes.
pub struct NativeReader<R: Read> {
    pub(super) input: R,
    pub(super) name: String,
    /// Bytes consumed from `input` so far (the offset of the next byte).
    pub(super) pos: u64,
    /// Length of the input when known (a file), for precise truncation messages.
    pub(super) len: Option<u64>,
    pub(super) flags: u16,
    meta: serde_json::Value,
    decompressor: Option<zstd::bulk::Decompressor<'static>>,
    pub(super) stored: Vec<u8>,
    raw: Vec<u8>,
    /// Decode position in `raw`, records left in the current chunk, its start offset and index.
    rpos: usize,
    left: u32,
    chunk_start: u64,
    pub(super) chunk_index: u32,
    /// Format version of the file (from its header).
    pub(super) version: u16,
    chunk_records: u32,
    state: ChunkState,
    pub(super) seen: Totals,
    /// Where the summary block started, once read.
    pub(super) summary_at: Option<u64>,
    ended: bool,
    failed: Option<SourceError>,
    describe: Option<serde_json::Value>,
    /// What [`EventSource::first_touch_refs`] answers (set by `trace::open` from the stored
    /// summary's touch curve).
    first_touch: Option<u64>,
    /// What [`EventSource::total_refs`] answers (set by `trace::open` from the stored summary).
    total_refs: Option<u64>,
}

impl<R: Read> NativeReader<R> {
    /// Read and check the header. `name` is used in error messages; `len` is the input's
    /// length in bytes when known.
    pub fn new(input: R, name: &str, len: Option<u64>) -> Result<Self, SourceError> {
        let mut r = NativeReader {
            input,
            name: name.to_string(),
            pos: 0,
            len,
            flags: 0,
            meta: serde_json::Value::Null,
            decompressor: None,
            stored: Vec::new(),
            raw: Vec::new(),
            rpos: 0,
            left: 0,
            chunk_start: 0,
            chunk_index: 0,
            version: VERSION,
            chunk_records: 0,
            state: ChunkState::default(),
            seen: Totals::default(),
            summary_at: None,
            ended: false,
            failed: None,
            describe: None,
            first_touch: None,
            total_refs: None,
        };
        r.read_header()?;
        Ok(r)
    }

    /// The header's metadata object.
    pub fn meta(&self) -> &serde_json::Value {
        &self.meta
    }

    /// Set what [`EventSource::describe`] returns (the opener fills in path, format, sha256).
    pub fn set_describe(&mut self, v: serde_json::Value) {
        self.describe = Some(v);
    }

    /// Set the references of the trace's first-touch phase (from its stored summary, see
    /// [`crate::trace::summary::first_touch_refs`]), for `sim.warmup_refs = "auto"`.
    pub fn set_first_touch_refs(&mut self, refs: Option<u64>) {
        self.first_touch = refs;
    }

    /// Set the references the trace holds (its stored summary's `refs`), for
    /// `sim.sampling.interval = "auto"`.
    pub fn set_total_refs(&mut self, refs: Option<u64>) {
        self.total_refs = refs;
    }

    /// Format version of the file.
    pub fn version(&self) -> u16 {
        self.version
    }

    /// Bytes read so far.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Totals of what has been read so far; after the end of the trace, the checked totals.
    pub fn totals(&self) -> Totals {
        self.seen
    }

    pub(super) fn err(&self, offset: u64, problem: impl Into<String>) -> SourceError {
        SourceError {
            source: self.name.clone(),
            offset: Some(offset),
            problem: problem.into(),
        }
    }

    /// Read exactly `buf.len()` bytes; `what` says what was being read, for the error.
    pub(super) fn read_exact_at(&mut self, buf: &mut [u8], what: &str) -> Result<(), SourceError> {
        let start = self.pos;
        let mut got = 0;
        while got < buf.len() {
            match self.input.read(&mut buf[got..]) {
                Ok(0) => {
                    let at = start + got as u64;
                    let size = self
                        .len
                        .map(|l| format!("the file is {l} bytes long"))
                        .unwrap_or_else(|| format!("the input ends at byte {at}"));
                    return Err(self.err(
                        at,
                        format!(
                            "truncated: {size}, inside {what} (which starts at byte {start} and needs {} bytes)",
                            buf.len()
                        ),
                    ));
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.err(start + got as u64, format!("read error: {e}"))),
            }
        }
        self.pos += buf.len() as u64;
        Ok(())
    }

    fn read_header(&mut self) -> Result<(), SourceError> {
        if self.len == Some(0) {
            return Err(self.err(0, "empty file: not an xlat trace (0 bytes)"));
        }
        let mut h = [0u8; 16];
        self.read_exact_at(&mut h, "the 16-byte header")?;
        if &h[0..8] != MAGIC {
            return Err(self.err(
                0,
                format!(
                    "not an xlat native trace: the file starts with {:02x?}, expected {:02x?} (\"XLATTRC\\0\")",
                    &h[0..8],
                    MAGIC
                ),
            ));
        }
        let version = u16::from_le_bytes([h[8], h[9]]);
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            return Err(self.err(
                8,
                format!(
                    "unsupported format version {version} (this build reads versions \
                     {OLDEST_VERSION} to {VERSION})"
                ),
            ));
        }
        self.version = version;
        self.flags = u16::from_le_bytes([h[10], h[11]]);
        if self.flags & !FLAG_ZSTD != 0 {
            return Err(self.err(10, format!("unknown header flags {:#06x}", self.flags)));
        }
        let meta_len = u32::from_le_bytes([h[12], h[13], h[14], h[15]]);
        if meta_len > MAX_META {
            return Err(self.err(
                12,
                format!("metadata length {meta_len} exceeds the limit of {MAX_META} bytes"),
            ));
        }
        let mut meta = vec![0u8; meta_len as usize];
        self.read_exact_at(&mut meta, "the header's metadata")?;
        let mut crc = [0u8; 4];
        self.read_exact_at(&mut crc, "the header checksum")?;
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&h);
        hasher.update(&meta);
        if hasher.finalize() != u32::from_le_bytes(crc) {
            return Err(self.err(
                16 + meta_len as u64,
                "header checksum mismatch: the header or its metadata is corrupted",
            ));
        }
        self.meta = serde_json::from_slice(&meta)
            .map_err(|e| self.err(16, format!("metadata is not valid JSON: {e}")))?;
        if self.flags & FLAG_ZSTD != 0 {
            self.decompressor = Some(
                zstd::bulk::Decompressor::new()
                    .map_err(|e| self.err(0, format!("cannot start zstd: {e}")))?,
            );
        }
        Ok(())
    }

    /// Read the next chunk header and payload (or the summary block and end-of-trace record).
    fn next_chunk(&mut self) -> Result<bool, SourceError> {
        let start = self.pos;
        let mut magic = [0u8; 4];
        self.read_exact_at(
            &mut magic,
            "the next chunk or end-of-trace record (the trace has no end-of-trace record)",
        )?;
        if &magic == SUMMARY_MAGIC && self.version >= 3 {
            self.read_summary(start)?;
            let at = self.pos;
            self.read_exact_at(
                &mut magic,
                "the end-of-trace record after the summary block",
            )?;
            if &magic != END_MAGIC {
                return Err(self.err(
                    at,
                    format!("expected the end-of-trace record (\"END!\") after the summary block, found bytes {magic:02x?}"),
                ));
            }
            self.read_end(at)?;
            return Ok(false);
        }
        if &magic == END_MAGIC {
            self.read_end(start)?;
            return Ok(false);
        }
        if &magic != CHUNK_MAGIC {
            return Err(self.err(
                start,
                format!(
                    "expected a chunk (\"CHNK\"){} or the end-of-trace record (\"END!\"), found bytes {magic:02x?}",
                    if self.version >= 3 { ", the summary block (\"SUMY\")" } else { "" }
                ),
            ));
        }
        let mut h = [0u8; CHUNK_HEADER - 4];
        self.read_exact_at(&mut h, "a chunk header")?;
        let idx = self.chunk_index;
        let compressed = self.flags & FLAG_ZSTD != 0;
        let ch = parse_chunk_header(&h, idx, compressed)
            .map_err(|(at, problem)| self.err(start + at, problem))?;
        let payload_at = self.pos;
        if let Some(len) = self.len {
            if payload_at + ch.stored_len as u64 > len {
                return Err(self.err(
                    len,
                    format!(
                        "truncated: the file is {len} bytes long, inside the payload of chunk {idx} (which starts at byte {payload_at} and needs {} bytes)",
                        ch.stored_len
                    ),
                ));
            }
        }
        let mut stored = std::mem::take(&mut self.stored);
        stored.resize(ch.stored_len as usize, 0);
        let r = self.read_exact_at(&mut stored, &format!("the payload of chunk {idx}"));
        self.stored = stored;
        r?;
        self.raw.clear();
        unpack_chunk(
            self.version,
            idx,
            &ch,
            &self.stored,
            self.decompressor.as_mut(),
            &mut self.raw,
        )
        .map_err(|(at, problem)| {
            self.err(if at == 0 { payload_at } else { start + at }, problem)
        })?;
        self.rpos = 0;
        self.left = ch.records;
        self.chunk_records = ch.records;
        self.chunk_start = start;
        self.state = ChunkState::default();
        self.chunk_index += 1;
        self.seen.chunks += 1;
        Ok(true)
    }

    /// Read and check the summary block starting at `start` (its magic already read).
    pub(super) fn read_summary(&mut self, start: u64) -> Result<(), SourceError> {
        let mut l = [0u8; 4];
        self.read_exact_at(&mut l, "the summary block's length")?;
        let len = u32::from_le_bytes(l);
        if len > MAX_SUMMARY {
            return Err(self.err(
                start + 4,
                format!("summary block length {len} exceeds the limit of {MAX_SUMMARY} bytes"),
            ));
        }
        let mut block = std::mem::take(&mut self.stored);
        block.clear();
        block.extend_from_slice(SUMMARY_MAGIC);
        block.extend_from_slice(&l);
        block.resize(8 + len as usize + 4, 0);
        let r = self.read_exact_at(&mut block[8..], "the summary block");
        let checked = r.and_then(|()| {
            check_summary_block(&block).map_err(|(at, problem)| self.err(start + at, problem))
        });
        self.stored = block;
        checked?;
        self.summary_at = Some(start);
        Ok(())
    }

    fn read_end(&mut self, start: u64) -> Result<(), SourceError> {
        let n = end_len(self.version);
        let mut e = [0u8; END_LEN_V3];
        e[0..4].copy_from_slice(END_MAGIC);
        self.read_exact_at(&mut e[4..n], "the end-of-trace record")?;
        let end = parse_end(&e[..n]).map_err(|problem| self.err(start, problem))?;
        if end.totals != self.seen {
            return Err(self.err(
                start,
                format!(
                    "end-of-trace totals {:?} do not match the chunks read {:?}: chunks are missing or duplicated",
                    end.totals, self.seen
                ),
            ));
        }
        if end.summary_at != self.summary_at.unwrap_or(0) {
            return Err(self.err(
                start + 32,
                format!(
                    "the end-of-trace record points to a summary block at byte {}, but {}",
                    end.summary_at,
                    match self.summary_at {
                        Some(at) => format!("the summary block is at byte {at}"),
                        None => "the trace has none".to_string(),
                    }
                ),
            ));
        }
        let mut extra = [0u8; 1];
        loop {
            match self.input.read(&mut extra) {
                Ok(0) => break,
                Ok(_) => {
                    return Err(self.err(self.pos, "unexpected bytes after the end-of-trace record"))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.err(self.pos, format!("read error: {e}"))),
            }
        }
        self.ended = true;
        Ok(())
    }

    /// Decode one record from the current chunk.
    #[inline]
    fn decode(&mut self) -> Result<Event, String> {
        let ev = decode_record(
            &self.raw,
            &mut self.rpos,
            &mut self.state,
            self.version >= DEPS_VERSION,
        )?;
        if let Event::Access { instrs, .. } = ev {
            self.seen.accesses += 1;
            self.seen.instructions += instrs as u64;
        }
        Ok(ev)
    }

    fn fill_inner(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, SourceError> {
        let mut n = 0;
        while n < max && !self.ended {
            if self.left == 0 {
                if self.chunk_index > 0 && self.rpos != self.raw.len() {
                    return Err(self.err(
                        self.chunk_start,
                        format!(
                            "chunk {}: {} bytes left over after its {} records",
                            self.chunk_index - 1,
                            self.raw.len() - self.rpos,
                            self.chunk_records
                        ),
                    ));
                }
                self.rpos = 0;
                self.raw.clear();
                if !self.next_chunk()? {
                    break;
                }
                continue;
            }
            let at = self.rpos;
            match self.decode() {
                Ok(ev) => {
                    out.push(ev);
                    self.left -= 1;
                    self.seen.records += 1;
                    n += 1;
                }
                Err(problem) => {
                    let rec = self.chunk_records - self.left;
                    return Err(self.err(
                        self.chunk_start,
                        format!(
                            "chunk {} (starting here): record {rec} at payload byte {at}: {problem}",
                            self.chunk_index - 1
                        ),
                    ));
                }
            }
        }
        Ok(n)
    }
}

impl<R: Read + Send> EventSource for NativeReader<R> {
    fn fill(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, SourceError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let before = out.len();
        match self.fill_inner(out, max) {
            Ok(n) => Ok(n),
            Err(e) => {
                // An error is final and what came in this call is not handed out.
                out.truncate(before);
                self.failed = Some(e.clone());
                Err(e)
            }
        }
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn describe(&self) -> Option<serde_json::Value> {
        self.describe.clone()
    }

    fn total_refs(&self) -> Option<u64> {
        self.total_refs
    }

    fn first_touch_refs(&mut self) -> Option<u64> {
        // Only before the first event: afterwards part of the phase is behind.
        (self.seen.records == 0)
            .then_some(self.first_touch)
            .flatten()
    }
}
