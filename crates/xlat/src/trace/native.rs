//! The native trace format (`.xlat`): a versioned header, zstd-compressed chunks of
//! delta-encoded records each with its record count and CRC-32, and an end-of-trace record with
//! totals. The byte layout is specified in `docs/trace-format.md`; this module is its reference
//! implementation.
//!
//! Contract: [`NativeWriter`] and [`NativeReader`] stream: each holds at most one chunk
//! (≤ [`MAX_CHUNK_RECORDS`] records, ≤ [`MAX_RAW_CHUNK`] bytes) whatever the trace length. The
//! reader checks everything it reads (magic, version, flags, lengths, checksums, record tags,
//! value ranges, totals) and reports the first problem as a [`SourceError`] naming the file, the
//! byte offset and the problem; it never panics on any input, and a trace that does not end with
//! a valid end-of-trace record is an error, never a silently shorter trace.

use super::varint;
use super::{AccessKind, Event, EventSource, SourceError};
use crate::addr::Vaddr;
use std::io::{self, Read, Write};

/// First 8 bytes of every native trace.
pub const MAGIC: &[u8; 8] = b"XLATTRC\0";
/// Format version this module writes. Version 2 chunk checksums cover the chunk's sequence
/// number, so swapped or repeated chunks are detected where they are; version 1 files (the chunk
/// checksum covers the payload only) are still read.
pub const VERSION: u16 = 2;

/// Oldest format version this module reads.
pub const OLDEST_VERSION: u16 = 1;

/// The chunk checksum: CRC-32 of the chunk's sequence number (u32 LE, from 0) followed by its
/// uncompressed payload (version 2), or of the payload alone (version 1).
fn chunk_crc(version: u16, index: u32, raw: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    if version >= 2 {
        h.update(&index.to_le_bytes());
    }
    h.update(raw);
    h.finalize()
}
/// Header flag: chunk payloads are zstd-compressed (otherwise stored raw).
pub const FLAG_ZSTD: u16 = 1;
/// Most records one chunk may hold.
pub const MAX_CHUNK_RECORDS: u32 = 1 << 16;
/// Largest uncompressed chunk payload in bytes.
pub const MAX_RAW_CHUNK: u32 = 4 << 20;
/// Largest metadata block in bytes.
pub const MAX_META: u32 = 1 << 20;

const CHUNK_MAGIC: &[u8; 4] = b"CHNK";
const END_MAGIC: &[u8; 4] = b"END!";
const CHUNK_HEADER: usize = 20;
const END_LEN: usize = 36;
/// Flush a chunk once its payload reaches this size (leaves room for one more record).
const FLUSH_RAW: usize = (MAX_RAW_CHUNK as usize) - 64;

/// Record tags (first byte of every record in a chunk payload).
mod tag {
    pub const LOAD: u8 = 0x00;
    pub const STORE: u8 = 0x01;
    pub const IFETCH: u8 = 0x02;
    pub const MMAP: u8 = 0x10;
    pub const MUNMAP: u8 = 0x11;
    pub const BRK: u8 = 0x12;
    pub const MPROTECT: u8 = 0x13;
    pub const MADVISE: u8 = 0x14;
    pub const SWITCH: u8 = 0x20;
    pub const THREAD: u8 = 0x21;
    pub const EXIT: u8 = 0x22;
}

/// Totals carried by the end-of-trace record (and checked against the chunks by the reader).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Records (events) of every kind.
    pub records: u64,
    /// Memory-access records.
    pub accesses: u64,
    /// Sum of the `instrs` fields of the access records.
    pub instructions: u64,
    /// Chunks.
    pub chunks: u32,
}

/// Streams events into the native format.
pub struct NativeWriter<W: Write> {
    out: W,
    raw: Vec<u8>,
    packed: Vec<u8>,
    compressor: Option<zstd::bulk::Compressor<'static>>,
    in_chunk: u32,
    prev_va: u64,
    totals: Totals,
}

impl<W: Write> NativeWriter<W> {
    /// Write the header with `meta` (a JSON object describing the trace: recorder, command...)
    /// and start the first chunk. `zstd_level` 0 stores chunks uncompressed; 1..=19 compress, and
    /// negative levels (zstd's fast modes) compress less and faster.
    pub fn new(out: W, meta: &serde_json::Value, zstd_level: i32) -> io::Result<Self> {
        Self::with_meta_room(out, meta, zstd_level, 0)
    }

    /// As [`NativeWriter::new`], with `room` spaces after the metadata JSON so that
    /// [`rewrite_meta`] can later replace it with a longer object (e.g. adding the exit status
    /// of a recorded program).
    pub fn with_meta_room(
        mut out: W,
        meta: &serde_json::Value,
        zstd_level: i32,
        room: usize,
    ) -> io::Result<Self> {
        let mut meta = serde_json::to_vec(meta).map_err(io::Error::other)?;
        meta.resize(meta.len() + room, b' ');
        if meta.len() > MAX_META as usize {
            return Err(io::Error::other(format!(
                "trace metadata is {} bytes, more than the {MAX_META} allowed",
                meta.len()
            )));
        }
        let flags = if zstd_level != 0 { FLAG_ZSTD } else { 0 };
        let mut h = Vec::with_capacity(20 + meta.len());
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&VERSION.to_le_bytes());
        h.extend_from_slice(&flags.to_le_bytes());
        h.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        h.extend_from_slice(&meta);
        let crc = crc32fast::hash(&h);
        h.extend_from_slice(&crc.to_le_bytes());
        out.write_all(&h)?;
        let compressor = if zstd_level != 0 {
            Some(zstd::bulk::Compressor::new(zstd_level)?)
        } else {
            None
        };
        Ok(NativeWriter {
            out,
            raw: Vec::with_capacity(MAX_RAW_CHUNK as usize),
            packed: Vec::new(),
            compressor,
            in_chunk: 0,
            prev_va: 0,
            totals: Totals::default(),
        })
    }

    /// Append one event.
    #[inline]
    pub fn write(&mut self, ev: &Event) -> io::Result<()> {
        let r = &mut self.raw;
        match *ev {
            Event::Access {
                kind,
                va,
                size,
                instrs,
                // Dependences are not recorded in the native format (docs/timing.md).
                dep: _,
            } => {
                r.push(match kind {
                    AccessKind::Load => tag::LOAD,
                    AccessKind::Store => tag::STORE,
                    AccessKind::IFetch => tag::IFETCH,
                });
                r.push(size);
                varint::put(r, varint::zigzag(va.0.wrapping_sub(self.prev_va) as i64));
                varint::put(r, instrs as u64);
                self.prev_va = va.0;
                self.totals.accesses += 1;
                self.totals.instructions += instrs as u64;
            }
            Event::Mmap {
                addr,
                len,
                prot,
                flags,
            } => {
                r.push(tag::MMAP);
                for v in [addr.0, len, prot as u64, flags as u64] {
                    varint::put(r, v);
                }
            }
            Event::Munmap { addr, len } => {
                r.push(tag::MUNMAP);
                varint::put(r, addr.0);
                varint::put(r, len);
            }
            Event::Brk { new_brk } => {
                r.push(tag::BRK);
                varint::put(r, new_brk.0);
            }
            Event::Mprotect { addr, len, prot } => {
                r.push(tag::MPROTECT);
                for v in [addr.0, len, prot as u64] {
                    varint::put(r, v);
                }
            }
            Event::Madvise { addr, len, advice } => {
                r.push(tag::MADVISE);
                for v in [addr.0, len, advice as u64] {
                    varint::put(r, v);
                }
            }
            Event::Switch { pid } => {
                r.push(tag::SWITCH);
                varint::put(r, pid as u64);
            }
            Event::Thread { tid } => {
                r.push(tag::THREAD);
                varint::put(r, tid as u64);
            }
            Event::Exit { pid } => {
                r.push(tag::EXIT);
                varint::put(r, pid as u64);
            }
        }
        self.in_chunk += 1;
        self.totals.records += 1;
        if self.in_chunk == MAX_CHUNK_RECORDS || self.raw.len() >= FLUSH_RAW {
            self.flush_chunk()?;
        }
        Ok(())
    }

    fn flush_chunk(&mut self) -> io::Result<()> {
        if self.in_chunk == 0 {
            return Ok(());
        }
        let crc = chunk_crc(VERSION, self.totals.chunks, &self.raw);
        let stored: &[u8] = match self.compressor.as_mut() {
            Some(c) => {
                self.packed.clear();
                self.packed
                    .reserve(zstd::zstd_safe::compress_bound(self.raw.len()));
                c.compress_to_buffer(&self.raw, &mut self.packed)?;
                &self.packed
            }
            None => &self.raw,
        };
        let mut h = [0u8; CHUNK_HEADER];
        h[0..4].copy_from_slice(CHUNK_MAGIC);
        h[4..8].copy_from_slice(&self.in_chunk.to_le_bytes());
        h[8..12].copy_from_slice(&(self.raw.len() as u32).to_le_bytes());
        h[12..16].copy_from_slice(&(stored.len() as u32).to_le_bytes());
        h[16..20].copy_from_slice(&crc.to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(stored)?;
        self.totals.chunks += 1;
        self.in_chunk = 0;
        self.prev_va = 0;
        self.raw.clear();
        Ok(())
    }

    /// Totals so far (records written, including those not yet flushed).
    pub fn totals(&self) -> Totals {
        self.totals
    }

    /// Flush the last chunk, write the end-of-trace record and return the output.
    pub fn finish(mut self) -> io::Result<(W, Totals)> {
        self.flush_chunk()?;
        let t = self.totals;
        let mut e = [0u8; END_LEN];
        e[0..4].copy_from_slice(END_MAGIC);
        e[4..12].copy_from_slice(&t.records.to_le_bytes());
        e[12..20].copy_from_slice(&t.accesses.to_le_bytes());
        e[20..28].copy_from_slice(&t.instructions.to_le_bytes());
        e[28..32].copy_from_slice(&t.chunks.to_le_bytes());
        let crc = crc32fast::hash(&e[0..32]);
        e[32..36].copy_from_slice(&crc.to_le_bytes());
        self.out.write_all(&e)?;
        self.out.flush()?;
        Ok((self.out, t))
    }
}

/// Replace the metadata of the finished native trace at `path` in place. The new JSON (padded
/// with spaces) must fit the space the old one occupies; the header checksum is rewritten.
pub fn rewrite_meta(path: &str, meta: &serde_json::Value) -> io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    let mut h = [0u8; 16];
    f.read_exact(&mut h)?;
    if &h[0..8] != MAGIC {
        return Err(io::Error::other(format!(
            "{path}: not an xlat native trace"
        )));
    }
    let old_len = u32::from_le_bytes([h[12], h[13], h[14], h[15]]) as usize;
    let mut new = serde_json::to_vec(meta).map_err(io::Error::other)?;
    if new.len() > old_len {
        return Err(io::Error::other(format!(
            "{path}: new metadata is {} bytes, only {old_len} reserved",
            new.len()
        )));
    }
    new.resize(old_len, b' ');
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&h);
    hasher.update(&new);
    f.seek(SeekFrom::Start(16))?;
    f.write_all(&new)?;
    f.write_all(&hasher.finalize().to_le_bytes())?;
    f.sync_all()
}

/// Streams events out of a native trace, checking it as it goes.
pub struct NativeReader<R: Read> {
    input: R,
    name: String,
    /// Bytes consumed from `input` so far (the offset of the next byte).
    pos: u64,
    /// Length of the input when known (a file), for precise truncation messages.
    len: Option<u64>,
    flags: u16,
    meta: serde_json::Value,
    decompressor: Option<zstd::bulk::Decompressor<'static>>,
    stored: Vec<u8>,
    raw: Vec<u8>,
    /// Decode position in `raw`, records left in the current chunk, its start offset and index.
    rpos: usize,
    left: u32,
    chunk_start: u64,
    chunk_index: u32,
    /// Format version of the file (from its header).
    version: u16,
    chunk_records: u32,
    prev_va: u64,
    seen: Totals,
    ended: bool,
    failed: Option<SourceError>,
    describe: Option<serde_json::Value>,
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
            prev_va: 0,
            seen: Totals::default(),
            ended: false,
            failed: None,
            describe: None,
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

    /// Totals of what has been read so far; after the end of the trace, the checked totals.
    pub fn totals(&self) -> Totals {
        self.seen
    }

    fn err(&self, offset: u64, problem: impl Into<String>) -> SourceError {
        SourceError {
            source: self.name.clone(),
            offset: Some(offset),
            problem: problem.into(),
        }
    }

    /// Read exactly `buf.len()` bytes; `what` says what was being read, for the error.
    fn read_exact_at(&mut self, buf: &mut [u8], what: &str) -> Result<(), SourceError> {
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

    /// Read the next chunk header and payload (or the end-of-trace record).
    fn next_chunk(&mut self) -> Result<bool, SourceError> {
        let start = self.pos;
        let mut magic = [0u8; 4];
        self.read_exact_at(
            &mut magic,
            "the next chunk or end-of-trace record (the trace has no end-of-trace record)",
        )?;
        if &magic == END_MAGIC {
            self.read_end(start)?;
            return Ok(false);
        }
        if &magic != CHUNK_MAGIC {
            return Err(self.err(
                start,
                format!(
                    "expected a chunk (\"CHNK\") or the end-of-trace record (\"END!\"), found bytes {magic:02x?}"
                ),
            ));
        }
        let mut h = [0u8; CHUNK_HEADER - 4];
        self.read_exact_at(&mut h, "a chunk header")?;
        let word = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let (records, raw_len, stored_len, crc) = (word(0), word(4), word(8), word(12));
        let idx = self.chunk_index;
        if records == 0 || records > MAX_CHUNK_RECORDS {
            return Err(self.err(
                start + 4,
                format!("chunk {idx}: record count {records} is outside 1..={MAX_CHUNK_RECORDS}"),
            ));
        }
        if raw_len > MAX_RAW_CHUNK || (raw_len as u64) < 2 * records as u64 {
            return Err(self.err(
                start + 8,
                format!(
                    "chunk {idx}: payload length {raw_len} is impossible for {records} records (limit {MAX_RAW_CHUNK})"
                ),
            ));
        }
        let compressed = self.flags & FLAG_ZSTD != 0;
        let bound = if compressed {
            zstd::zstd_safe::compress_bound(raw_len as usize) as u32
        } else {
            raw_len
        };
        if stored_len > bound || (!compressed && stored_len != raw_len) {
            return Err(self.err(
                start + 12,
                format!(
                    "chunk {idx}: stored length {stored_len} does not fit payload length {raw_len}"
                ),
            ));
        }
        let payload_at = self.pos;
        if let Some(len) = self.len {
            if payload_at + stored_len as u64 > len {
                return Err(self.err(
                    len,
                    format!(
                        "truncated: the file is {len} bytes long, inside the payload of chunk {idx} (which starts at byte {payload_at} and needs {stored_len} bytes)"
                    ),
                ));
            }
        }
        let mut stored = std::mem::take(&mut self.stored);
        stored.resize(stored_len as usize, 0);
        let r = self.read_exact_at(&mut stored, &format!("the payload of chunk {idx}"));
        self.stored = stored;
        r?;
        self.raw.clear();
        if let Some(d) = self.decompressor.as_mut() {
            self.raw.reserve(raw_len as usize);
            let res = d.decompress_to_buffer(&self.stored[..], &mut self.raw);
            match res {
                Ok(n) if n == raw_len as usize => {}
                Ok(n) => {
                    return Err(self.err(
                        payload_at,
                        format!(
                            "chunk {idx}: payload decompresses to {n} bytes, header says {raw_len}"
                        ),
                    ))
                }
                Err(e) => {
                    return Err(self.err(
                        payload_at,
                        format!("chunk {idx}: corrupted compressed payload ({e})"),
                    ))
                }
            }
        } else {
            self.raw.extend_from_slice(&self.stored);
        }
        if chunk_crc(self.version, idx, &self.raw) != crc {
            let why = if self.version >= 2 {
                "the chunk is corrupted, or out of place (moved, swapped or repeated)"
            } else {
                "the chunk is corrupted"
            };
            return Err(self.err(start + 16, format!("chunk {idx}: checksum mismatch: {why}")));
        }
        self.rpos = 0;
        self.left = records;
        self.chunk_records = records;
        self.chunk_start = start;
        self.prev_va = 0;
        self.chunk_index += 1;
        self.seen.chunks += 1;
        Ok(true)
    }

    fn read_end(&mut self, start: u64) -> Result<(), SourceError> {
        let mut e = [0u8; END_LEN];
        e[0..4].copy_from_slice(END_MAGIC);
        self.read_exact_at(&mut e[4..], "the end-of-trace record")?;
        let q = |i: usize| u64::from_le_bytes(e[i..i + 8].try_into().expect("8 bytes"));
        let crc = u32::from_le_bytes(e[32..36].try_into().expect("4 bytes"));
        if crc32fast::hash(&e[0..32]) != crc {
            return Err(self.err(
                start,
                "end-of-trace record checksum mismatch: the record is corrupted",
            ));
        }
        let want = Totals {
            records: q(4),
            accesses: q(12),
            instructions: q(20),
            chunks: u32::from_le_bytes(e[28..32].try_into().expect("4 bytes")),
        };
        if want != self.seen {
            return Err(self.err(
                start,
                format!(
                    "end-of-trace totals {want:?} do not match the chunks read {:?}: chunks are missing or duplicated",
                    self.seen
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
        let buf = &self.raw[..];
        let p = &mut self.rpos;
        let Some(&t) = buf.get(*p) else {
            return Err("record runs past the end of its chunk".into());
        };
        *p += 1;
        let mut v = || varint::get(buf, p).map_err(str::to_string);
        let u32_of = |x: u64, what: &str| {
            u32::try_from(x).map_err(|_| format!("{what} {x} does not fit 32 bits"))
        };
        let ev = match t {
            tag::LOAD | tag::STORE | tag::IFETCH => {
                let size = *buf.get(*p).ok_or("record runs past the end of its chunk")?;
                *p += 1;
                if size == 0 || size > 64 {
                    return Err(format!("access size {size} is outside 1..=64"));
                }
                let delta = varint::unzigzag(varint::get(buf, p)?);
                let instrs = varint::get(buf, p)?;
                let instrs = u32_of(instrs, "instruction count")?;
                let va = self.prev_va.wrapping_add(delta as u64);
                self.prev_va = va;
                self.seen.accesses += 1;
                self.seen.instructions += instrs as u64;
                Event::Access {
                    kind: match t {
                        tag::LOAD => AccessKind::Load,
                        tag::STORE => AccessKind::Store,
                        _ => AccessKind::IFetch,
                    },
                    va: Vaddr(va),
                    size,
                    instrs,
                    dep: 0,
                }
            }
            tag::MMAP => Event::Mmap {
                addr: Vaddr(v()?),
                len: v()?,
                prot: u32_of(v()?, "prot")?,
                flags: u32_of(v()?, "flags")?,
            },
            tag::MUNMAP => Event::Munmap {
                addr: Vaddr(v()?),
                len: v()?,
            },
            tag::BRK => Event::Brk {
                new_brk: Vaddr(v()?),
            },
            tag::MPROTECT => Event::Mprotect {
                addr: Vaddr(v()?),
                len: v()?,
                prot: u32_of(v()?, "prot")?,
            },
            tag::MADVISE => Event::Madvise {
                addr: Vaddr(v()?),
                len: v()?,
                advice: u32_of(v()?, "advice")?,
            },
            tag::SWITCH => Event::Switch {
                pid: u32_of(v()?, "pid")?,
            },
            tag::THREAD => Event::Thread {
                tid: u32_of(v()?, "tid")?,
            },
            tag::EXIT => Event::Exit {
                pid: u32_of(v()?, "pid")?,
            },
            other => return Err(format!("unknown record tag {other:#04x}")),
        };
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
                dep: 0,
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
}
