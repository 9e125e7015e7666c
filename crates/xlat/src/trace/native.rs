//! The native trace format (`.xlat`): a versioned header, zstd-compressed chunks of
//! delta-encoded records each with its record count and CRC-32, an optional summary block (the
//! `xlat trace info` summary, computed while writing) and an end-of-trace record with totals. The byte layout is specified in `docs/trace-format.md`; this module is its reference
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
/// Format version this module writes. Version 3 adds the summary block and the end-of-trace
/// record's pointer to it; version 2 chunk checksums cover the chunk's sequence number, so
/// swapped or repeated chunks are detected where they are; version 1 files (the chunk checksum
/// covers the payload only) and version 2 files are still read.
pub const VERSION: u16 = 3;

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

/// Largest summary block payload (the JSON text) in bytes.
pub const MAX_SUMMARY: u32 = 16 << 20;
/// Version of the summary object stored in the summary block: a reader uses a stored summary
/// only when its version is this one (a newer xlat computing more keys scans instead).
pub const SUMMARY_VERSION: u64 = 1;

const CHUNK_MAGIC: &[u8; 4] = b"CHNK";
const END_MAGIC: &[u8; 4] = b"END!";
const SUMMARY_MAGIC: &[u8; 4] = b"SUMY";
/// Bytes of a chunk header.
pub const CHUNK_HEADER: usize = 20;
/// Bytes of the end-of-trace record in versions 1 and 2 (no summary pointer).
const END_LEN_V2: usize = 36;
/// Bytes of the end-of-trace record in version 3.
const END_LEN_V3: usize = 44;

/// Length of the end-of-trace record of a format version.
pub fn end_len(version: u16) -> usize {
    if version >= 3 {
        END_LEN_V3
    } else {
        END_LEN_V2
    }
}
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

/// Turns a chunk's uncompressed payload into its bytes in the file.
struct ChunkEncoder {
    packed: Vec<u8>,
    compressor: Option<zstd::bulk::Compressor<'static>>,
}

impl ChunkEncoder {
    /// Write chunk `index` (`records` records, payload `raw`) to `out`: header, then the payload
    /// compressed or stored; returns the bytes written.
    fn write<W: Write>(
        &mut self,
        out: &mut W,
        raw: &[u8],
        records: u32,
        index: u32,
    ) -> io::Result<u64> {
        let crc = chunk_crc(VERSION, index, raw);
        let stored: &[u8] = match self.compressor.as_mut() {
            Some(c) => {
                self.packed.clear();
                self.packed
                    .reserve(zstd::zstd_safe::compress_bound(raw.len()));
                c.compress_to_buffer(raw, &mut self.packed)?;
                &self.packed
            }
            None => raw,
        };
        let mut h = [0u8; CHUNK_HEADER];
        h[0..4].copy_from_slice(CHUNK_MAGIC);
        h[4..8].copy_from_slice(&records.to_le_bytes());
        h[8..12].copy_from_slice(&(raw.len() as u32).to_le_bytes());
        h[12..16].copy_from_slice(&(stored.len() as u32).to_le_bytes());
        h[16..20].copy_from_slice(&crc.to_le_bytes());
        out.write_all(&h)?;
        out.write_all(stored)?;
        Ok((CHUNK_HEADER + stored.len()) as u64)
    }
}

/// The thread that compresses and writes chunks ([`NativeWriter::compress_in_background`]):
/// full chunk payloads go to it in order, emptied buffers come back for reuse.
struct Background<W> {
    tx: Option<std::sync::mpsc::SyncSender<(Vec<u8>, u32, u32)>>,
    spare: std::sync::mpsc::Receiver<Vec<u8>>,
    handle: Option<std::thread::JoinHandle<io::Result<(W, u64, ChunkEncoder)>>>,
}

/// Streams events into the native format.
pub struct NativeWriter<W: Write> {
    /// The output, or `None` while a background stage owns it
    /// ([`NativeWriter::compress_in_background`]).
    out: Option<W>,
    raw: Vec<u8>,
    /// What turns a full chunk into bytes (compression, checksum, header).
    chunks: ChunkEncoder,
    background: Option<Background<W>>,
    in_chunk: u32,
    prev_va: u64,
    totals: Totals,
    /// Bytes written so far (where the next chunk or block starts).
    pos: u64,
    summary: Option<Box<super::info::Summary>>,
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
        let pos = h.len() as u64;
        let compressor = if zstd_level != 0 {
            Some(zstd::bulk::Compressor::new(zstd_level)?)
        } else {
            None
        };
        Ok(NativeWriter {
            out: Some(out),
            raw: Vec::with_capacity(MAX_RAW_CHUNK as usize),
            chunks: ChunkEncoder {
                packed: Vec::new(),
                compressor,
            },
            background: None,
            in_chunk: 0,
            prev_va: 0,
            totals: Totals::default(),
            pos,
            summary: Some(Box::default()),
        })
    }

    /// Do not compute or store the summary block (the trace is then summarized by a scan, as
    /// traces of versions 1 and 2 are).
    pub fn without_summary(mut self) -> Self {
        self.summary = None;
        self
    }

    /// Append one event.
    #[inline]
    pub fn write(&mut self, ev: &Event) -> io::Result<()> {
        match *ev {
            Event::Access {
                kind,
                va,
                size,
                instrs,
                // Dependences are not recorded in the native format (docs/timing.md).
                dep: _,
            } => self.write_access(kind, va.0, size, instrs),
            _ => self.write_other(ev),
        }
    }

    /// Append one access (the same bytes as [`NativeWriter::write`] of `Event::Access` with
    /// `dep` 0): the recorder's hot path, kept free of branches that depend on the data apart
    /// from the variable-length integers' lengths.
    #[inline(always)]
    pub fn write_access(
        &mut self,
        kind: AccessKind,
        va: u64,
        size: u8,
        instrs: u32,
    ) -> io::Result<()> {
        if let Some(s) = self.summary.as_mut() {
            s.access(kind, va, instrs);
        }
        let t = match kind {
            AccessKind::Load => tag::LOAD,
            AccessKind::Store => tag::STORE,
            AccessKind::IFetch => tag::IFETCH,
        };
        // A whole record is at most 1 + 1 + 10 + 5 bytes: reserve 24 bytes at the end of the
        // chunk (a fixed-size fill; the chunk always has room, see FLUSH_RAW), encode in place
        // and keep the used length. (Encoding into a stack buffer and copying it stalls on
        // store-to-load forwarding of the byte stores.)
        let at = self.raw.len();
        self.raw.extend_from_slice(&[0u8; 24]);
        let rec: &mut [u8; 24] = (&mut self.raw[at..at + 24]).try_into().expect("24 bytes");
        rec[0] = t;
        rec[1] = size;
        let n = varint::put_at(rec, 2, varint::zigzag(va.wrapping_sub(self.prev_va) as i64));
        let n = varint::put_at(rec, n, instrs as u64);
        self.raw.truncate(at + n);
        self.prev_va = va;
        self.totals.accesses += 1;
        self.totals.instructions += instrs as u64;
        self.end_record()
    }

    #[inline(never)]
    fn write_other(&mut self, ev: &Event) -> io::Result<()> {
        if let Some(s) = self.summary.as_mut() {
            s.observe(ev);
        }
        let r = &mut self.raw;
        match *ev {
            Event::Access { .. } => unreachable!("accesses are written by write_access"),
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
        self.end_record()
    }

    /// Count the record just appended and flush the chunk when it is full.
    #[inline(always)]
    fn end_record(&mut self) -> io::Result<()> {
        self.in_chunk += 1;
        self.totals.records += 1;
        if self.in_chunk == MAX_CHUNK_RECORDS || self.raw.len() >= FLUSH_RAW {
            self.flush_chunk()?;
        }
        Ok(())
    }

    #[inline(never)]
    fn flush_chunk(&mut self) -> io::Result<()> {
        if self.in_chunk == 0 {
            return Ok(());
        }
        let (records, index) = (self.in_chunk, self.totals.chunks);
        match self.background.as_mut() {
            None => {
                let out = self.out.as_mut().expect("the writer owns its output");
                self.pos += self.chunks.write(out, &self.raw, records, index)?;
                self.raw.clear();
            }
            Some(bg) => {
                let next = bg
                    .spare
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(MAX_RAW_CHUNK as usize));
                let raw = std::mem::replace(&mut self.raw, next);
                let sent = bg.tx.as_ref().map(|tx| tx.send((raw, records, index)));
                if !matches!(sent, Some(Ok(()))) {
                    // The stage stopped: its error says why.
                    return Err(self.join_background().err().unwrap_or_else(|| {
                        io::Error::other("the trace compression thread stopped")
                    }));
                }
            }
        }
        self.totals.chunks += 1;
        self.in_chunk = 0;
        self.prev_va = 0;
        Ok(())
    }

    /// Compress, checksum and write the chunks on a second thread, so that the caller's
    /// thread only encodes records (the recorder's converter keeps up with valgrind this way).
    /// The file written is byte for byte the same. Memory: at most four chunk buffers. An error
    /// when the thread cannot be started (the output is then dropped).
    pub fn compress_in_background(mut self) -> io::Result<Self>
    where
        W: Send + 'static,
    {
        if self.background.is_some() {
            return Ok(self);
        }
        let mut out = self.out.take().expect("the writer owns its output");
        let mut chunks = std::mem::replace(
            &mut self.chunks,
            ChunkEncoder {
                packed: Vec::new(),
                compressor: None,
            },
        );
        let (tx, rx) = std::sync::mpsc::sync_channel::<(Vec<u8>, u32, u32)>(2);
        let (spare_tx, spare) = std::sync::mpsc::channel::<Vec<u8>>();
        let mut pos = self.pos;
        let handle = std::thread::Builder::new()
            .name("xlat-trace-chunks".into())
            .spawn(move || -> io::Result<(W, u64, ChunkEncoder)> {
                for (mut raw, records, index) in rx {
                    pos += chunks.write(&mut out, &raw, records, index)?;
                    raw.clear();
                    let _ = spare_tx.send(raw);
                }
                Ok((out, pos, chunks))
            });
        let handle = handle.map_err(|e| {
            io::Error::other(format!("cannot start the trace compression thread: {e}"))
        })?;
        self.background = Some(Background {
            tx: Some(tx),
            spare,
            handle: Some(handle),
        });
        Ok(self)
    }

    /// Stop the background stage (if any), taking back the output; its error if it failed.
    fn join_background(&mut self) -> io::Result<()> {
        let Some(mut bg) = self.background.take() else {
            return Ok(());
        };
        drop(bg.tx.take());
        let handle = bg.handle.take().expect("joined once");
        let (out, pos, chunks) = handle
            .join()
            .map_err(|_| io::Error::other("the trace compression thread panicked"))??;
        self.out = Some(out);
        self.pos = pos;
        self.chunks = chunks;
        Ok(())
    }

    /// Totals so far (records written, including those not yet flushed).
    pub fn totals(&self) -> Totals {
        self.totals
    }

    /// Flush the last chunk, write the summary block (unless [`NativeWriter::without_summary`])
    /// and the end-of-trace record, and return the output.
    pub fn finish(mut self) -> io::Result<(W, Totals)> {
        self.flush_chunk()?;
        self.join_background()?;
        let t = self.totals;
        let mut out = self.out.take().expect("the writer owns its output");
        let mut summary_at = 0u64;
        if let Some(s) = self.summary.take() {
            let text = serde_json::to_vec(&serde_json::json!({
                "version": SUMMARY_VERSION,
                "summary": s.to_json(),
            }))
            .map_err(io::Error::other)?;
            if text.len() <= MAX_SUMMARY as usize {
                let mut b = Vec::with_capacity(text.len() + 12);
                b.extend_from_slice(SUMMARY_MAGIC);
                b.extend_from_slice(&(text.len() as u32).to_le_bytes());
                b.extend_from_slice(&text);
                let crc = crc32fast::hash(&b);
                b.extend_from_slice(&crc.to_le_bytes());
                out.write_all(&b)?;
                summary_at = self.pos;
                self.pos += b.len() as u64;
            }
        }
        let mut e = [0u8; END_LEN_V3];
        e[0..4].copy_from_slice(END_MAGIC);
        e[4..12].copy_from_slice(&t.records.to_le_bytes());
        e[12..20].copy_from_slice(&t.accesses.to_le_bytes());
        e[20..28].copy_from_slice(&t.instructions.to_le_bytes());
        e[28..32].copy_from_slice(&t.chunks.to_le_bytes());
        e[32..40].copy_from_slice(&summary_at.to_le_bytes());
        let crc = crc32fast::hash(&e[0..40]);
        e[40..44].copy_from_slice(&crc.to_le_bytes());
        out.write_all(&e)?;
        out.flush()?;
        Ok((out, t))
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

/// A chunk header's fields (after its magic), checked for plausibility.
#[derive(Clone, Copy, Debug)]
pub struct ChunkHeader {
    /// Records in the chunk (1..=[`MAX_CHUNK_RECORDS`]).
    pub records: u32,
    /// Uncompressed payload length.
    pub raw_len: u32,
    /// Stored (possibly compressed) payload length.
    pub stored_len: u32,
    /// CRC-32 of the sequence number and the uncompressed payload (version >= 2).
    pub crc: u32,
}

/// Check the 16 bytes of chunk `idx`'s header that follow its magic. An error gives the offset
/// of the bad field from the chunk's start and the problem.
pub fn parse_chunk_header(
    h: &[u8; CHUNK_HEADER - 4],
    idx: u32,
    compressed: bool,
) -> Result<ChunkHeader, (u64, String)> {
    let word = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    let (records, raw_len, stored_len, crc) = (word(0), word(4), word(8), word(12));
    if records == 0 || records > MAX_CHUNK_RECORDS {
        return Err((
            4,
            format!("chunk {idx}: record count {records} is outside 1..={MAX_CHUNK_RECORDS}"),
        ));
    }
    if raw_len > MAX_RAW_CHUNK || (raw_len as u64) < 2 * records as u64 {
        return Err((
            8,
            format!(
                "chunk {idx}: payload length {raw_len} is impossible for {records} records (limit {MAX_RAW_CHUNK})"
            ),
        ));
    }
    let bound = if compressed {
        zstd::zstd_safe::compress_bound(raw_len as usize) as u32
    } else {
        raw_len
    };
    if stored_len > bound || (!compressed && stored_len != raw_len) {
        return Err((
            12,
            format!(
                "chunk {idx}: stored length {stored_len} does not fit payload length {raw_len}"
            ),
        ));
    }
    Ok(ChunkHeader {
        records,
        raw_len,
        stored_len,
        crc,
    })
}

/// Decompress (when `decompressor` is given) chunk `idx`'s stored payload into `raw` (cleared
/// first) and check its length and checksum. An error gives the offset from the chunk's start
/// of what is wrong (0: the payload itself, which starts at byte 20) and the problem.
pub fn unpack_chunk(
    version: u16,
    idx: u32,
    ch: &ChunkHeader,
    stored: &[u8],
    decompressor: Option<&mut zstd::bulk::Decompressor<'static>>,
    raw: &mut Vec<u8>,
) -> Result<(), (u64, String)> {
    raw.clear();
    if let Some(d) = decompressor {
        raw.reserve(ch.raw_len as usize);
        match d.decompress_to_buffer(stored, raw) {
            Ok(n) if n == ch.raw_len as usize => {}
            Ok(n) => {
                return Err((
                    0,
                    format!(
                        "chunk {idx}: payload decompresses to {n} bytes, header says {}",
                        ch.raw_len
                    ),
                ))
            }
            Err(e) => {
                return Err((
                    0,
                    format!("chunk {idx}: corrupted compressed payload ({e})"),
                ))
            }
        }
    } else {
        raw.extend_from_slice(stored);
    }
    if chunk_crc(version, idx, raw) != ch.crc {
        let why = if version >= 2 {
            "the chunk is corrupted, or out of place (moved, swapped or repeated)"
        } else {
            "the chunk is corrupted"
        };
        return Err((16, format!("chunk {idx}: checksum mismatch: {why}")));
    }
    Ok(())
}

/// Check a whole summary block (magic, length, JSON, checksum); an error gives the offset from
/// the block's start and the problem.
fn check_summary_block(block: &[u8]) -> Result<(), (u64, String)> {
    let n = block.len();
    let crc = u32::from_le_bytes(block[n - 4..].try_into().expect("4 bytes"));
    if crc32fast::hash(&block[..n - 4]) != crc {
        return Err((
            (n - 4) as u64,
            "summary block checksum mismatch: the block is corrupted".into(),
        ));
    }
    Ok(())
}

/// The fields of an end-of-trace record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndRecord {
    /// The totals it carries.
    pub totals: Totals,
    /// Byte offset of the summary block (version 3; 0 = none).
    pub summary_at: u64,
}

/// Check an end-of-trace record of `e.len()` bytes (36 for versions 1-2, 44 for version 3;
/// its magic included).
pub fn parse_end(e: &[u8]) -> Result<EndRecord, String> {
    let n = e.len();
    if &e[0..4] != END_MAGIC {
        return Err(format!(
            "expected the end-of-trace record (\"END!\"), found bytes {:02x?}",
            &e[0..4]
        ));
    }
    let q = |i: usize| u64::from_le_bytes(e[i..i + 8].try_into().expect("8 bytes"));
    let crc = u32::from_le_bytes(e[n - 4..n].try_into().expect("4 bytes"));
    if crc32fast::hash(&e[0..n - 4]) != crc {
        return Err("end-of-trace record checksum mismatch: the record is corrupted".into());
    }
    Ok(EndRecord {
        totals: Totals {
            records: q(4),
            accesses: q(12),
            instructions: q(20),
            chunks: u32::from_le_bytes(e[28..32].try_into().expect("4 bytes")),
        },
        summary_at: if n >= END_LEN_V3 { q(32) } else { 0 },
    })
}

/// Decode the record at `buf[*pos..]` (a chunk's uncompressed payload), advancing `pos`;
/// `prev_va` is the previous access's address in the chunk (0 at its start). `Err` names the
/// problem.
#[inline]
pub fn decode_record(buf: &[u8], pos: &mut usize, prev_va: &mut u64) -> Result<Event, String> {
    let p = pos;
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
            let va = prev_va.wrapping_add(delta as u64);
            *prev_va = va;
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
    /// Where the summary block started, once read.
    summary_at: Option<u64>,
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
            summary_at: None,
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
        self.prev_va = 0;
        self.chunk_index += 1;
        self.seen.chunks += 1;
        Ok(true)
    }

    /// Read and check the summary block starting at `start` (its magic already read).
    fn read_summary(&mut self, start: u64) -> Result<(), SourceError> {
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
        let ev = decode_record(&self.raw, &mut self.rpos, &mut self.prev_va)?;
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

/// Counts of one chunk's records, by kind (what `--verify` checks against the totals and the
/// stored summary).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkCounts {
    /// Records.
    pub records: u64,
    /// Loads, stores, instruction fetches.
    pub loads: u64,
    /// Stores.
    pub stores: u64,
    /// Instruction fetches.
    pub ifetches: u64,
    /// Sum of the access records' `instrs`.
    pub instructions: u64,
    /// mmap, munmap, brk, mprotect, madvise, switch, exit records (in that order).
    pub syscalls: [u64; 7],
}

/// Names of [`ChunkCounts::syscalls`], as the summary's `syscalls` object has them.
pub const SYSCALL_NAMES: [&str; 7] = [
    "mmap", "munmap", "brk", "mprotect", "madvise", "switch", "exit",
];

impl ChunkCounts {
    fn add(&mut self, o: &ChunkCounts) {
        self.records += o.records;
        self.loads += o.loads;
        self.stores += o.stores;
        self.ifetches += o.ifetches;
        self.instructions += o.instructions;
        for (a, b) in self.syscalls.iter_mut().zip(o.syscalls) {
            *a += b;
        }
    }
}

/// Decode every record of a chunk's uncompressed payload and count them; the error names the
/// record and payload byte (as the streaming reader's does).
fn count_chunk(raw: &[u8], records: u32) -> Result<ChunkCounts, String> {
    let mut c = ChunkCounts {
        records: records as u64,
        ..Default::default()
    };
    let mut kinds = [0u64; 3];
    let (mut pos, mut prev_va) = (0usize, 0u64);
    for rec in 0..records {
        // Accesses (nearly every record) are checked inline; anything else, or an access that
        // fails a check, goes through `decode_record`, which gives the error its message.
        if let Some(&t) = raw.get(pos) {
            if t <= tag::IFETCH {
                if let Some(next) = quick_access(raw, pos) {
                    kinds[t as usize] += 1;
                    c.instructions += next.1;
                    pos = next.0;
                    continue;
                }
            }
        }
        let at = pos;
        let ev = decode_record(raw, &mut pos, &mut prev_va)
            .map_err(|p| format!("record {rec} at payload byte {at}: {p}"))?;
        match ev {
            Event::Access { kind, instrs, .. } => {
                c.instructions += instrs as u64;
                match kind {
                    AccessKind::Load => kinds[0] += 1,
                    AccessKind::Store => kinds[1] += 1,
                    AccessKind::IFetch => kinds[2] += 1,
                }
            }
            Event::Mmap { .. } => c.syscalls[0] += 1,
            Event::Munmap { .. } => c.syscalls[1] += 1,
            Event::Brk { .. } => c.syscalls[2] += 1,
            Event::Mprotect { .. } => c.syscalls[3] += 1,
            Event::Madvise { .. } => c.syscalls[4] += 1,
            Event::Switch { .. } => c.syscalls[5] += 1,
            Event::Exit { .. } => c.syscalls[6] += 1,
            Event::Thread { .. } => {}
        }
    }
    [c.loads, c.stores, c.ifetches] = kinds;
    if pos != raw.len() {
        return Err(format!(
            "{} bytes left over after its {records} records",
            raw.len() - pos
        ));
    }
    Ok(c)
}

/// The access record at `raw[pos..]` (its tag already read) when it passes every check
/// `decode_record` makes: the position after it and its instruction count. `None` when any
/// check fails (`decode_record` then names the problem).
#[inline(always)]
fn quick_access(raw: &[u8], pos: usize) -> Option<(usize, u64)> {
    let size = *raw.get(pos + 1)?;
    if size == 0 || size > 64 {
        return None;
    }
    let (_, p) = quick_varint(raw, pos + 2)?;
    let (instrs, p) = quick_varint(raw, p)?;
    (instrs <= u32::MAX as u64).then_some((p, instrs))
}

/// A LEB128 integer at `buf[pos..]` as `varint::get` accepts it (at most 10 bytes, the tenth
/// 0 or 1), and the position after it.
#[inline(always)]
fn quick_varint(buf: &[u8], pos: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for i in 0..10 {
        let b = *buf.get(pos + i)?;
        if i == 9 && b > 1 {
            return None;
        }
        v |= ((b & 0x7f) as u64) << (7 * i);
        if b < 0x80 {
            return Some((v, pos + i + 1));
        }
    }
    None
}

/// Progress of [`NativeReader::verify`], readable from another thread.
#[derive(Debug, Default)]
pub struct VerifyProgress {
    /// Bytes of the file read.
    pub bytes: std::sync::atomic::AtomicU64,
    /// Records checked.
    pub records: std::sync::atomic::AtomicU64,
}

/// What [`NativeReader::verify`] found in a sound trace.
#[derive(Clone, Debug)]
pub struct Verified {
    /// Format version.
    pub version: u16,
    /// Totals (equal to the end-of-trace record's).
    pub totals: Totals,
    /// Records by kind, summed over the chunks.
    pub counts: ChunkCounts,
    /// The stored summary block's summary, when there is one of [`SUMMARY_VERSION`] (its
    /// counts were checked against `counts`).
    pub summary: Option<serde_json::Value>,
    /// Whether the trace has a summary block at all.
    pub has_summary_block: bool,
    /// Bytes read (the file's length).
    pub bytes: u64,
}

struct Job {
    idx: u32,
    start: u64,
    header: ChunkHeader,
    stored: Vec<u8>,
}

impl<R: Read> NativeReader<R> {
    /// Check the whole trace: every chunk's header, decompression, checksum and records, the
    /// totals, the summary block and the end-of-trace record. One thread (the caller's) reads
    /// the chunks in order; `workers` threads decompress and check them, so this uses
    /// `workers + 1` cores. The error reported is the one a sequential read would meet first
    /// (the lowest chunk), naming the file, the offset and the problem. Memory is bounded by a
    /// few chunks whatever the trace's length. Returns what was found and the input.
    pub fn verify(
        mut self,
        workers: usize,
        progress: &VerifyProgress,
    ) -> Result<(Verified, R), SourceError> {
        use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
        use std::sync::{mpsc, Arc, Mutex};
        let workers = workers.max(1);
        let compressed = self.flags & FLAG_ZSTD != 0;
        let version = self.version;
        let name = self.name.clone();
        let abort = AtomicBool::new(false);
        let (job_tx, job_rx) = mpsc::sync_channel::<Job>(2 * workers);
        let job_rx = Arc::new(Mutex::new(job_rx));
        type Done = (u32, Result<ChunkCounts, SourceError>);
        let (done_tx, done_rx) = mpsc::channel::<Done>();
        let mut sum = ChunkCounts::default();
        let mut first_err: Option<(u32, SourceError)> = None;
        let note =
            |d: Done, sum: &mut ChunkCounts, first: &mut Option<(u32, SourceError)>| match d.1 {
                Ok(c) => sum.add(&c),
                Err(e) => {
                    if first.as_ref().is_none_or(|(i, _)| d.0 < *i) {
                        *first = Some((d.0, e));
                    }
                }
            };
        let read_result: Result<Option<(EndRecord, u64, Option<serde_json::Value>)>, SourceError> =
            std::thread::scope(|scope| {
                for _ in 0..workers {
                    let rx = Arc::clone(&job_rx);
                    let tx = done_tx.clone();
                    let (abort, name) = (&abort, name.clone());
                    scope.spawn(move || {
                        let mut d = compressed
                            .then(|| zstd::bulk::Decompressor::new().ok())
                            .flatten();
                        let mut raw = Vec::with_capacity(MAX_RAW_CHUNK as usize);
                        loop {
                            let job = match rx.lock().expect("job queue").recv() {
                                Ok(j) => j,
                                Err(_) => return,
                            };
                            let e = |offset: u64, problem: String| SourceError {
                                source: name.clone(),
                                offset: Some(offset),
                                problem,
                            };
                            let payload_at = job.start + CHUNK_HEADER as u64;
                            let r = if compressed && d.is_none() {
                                Err(e(0, "cannot start zstd".into()))
                            } else {
                                unpack_chunk(
                                    version,
                                    job.idx,
                                    &job.header,
                                    &job.stored,
                                    d.as_mut(),
                                    &mut raw,
                                )
                                .map_err(|(at, p)| {
                                    e(if at == 0 { payload_at } else { job.start + at }, p)
                                })
                                .and_then(|()| {
                                    count_chunk(&raw, job.header.records).map_err(|p| {
                                        e(
                                            job.start,
                                            format!("chunk {} (starting here): {p}", job.idx),
                                        )
                                    })
                                })
                            };
                            if r.is_err() {
                                abort.store(true, Relaxed);
                            } else {
                                progress
                                    .records
                                    .fetch_add(job.header.records as u64, Relaxed);
                            }
                            if tx.send((job.idx, r)).is_err() {
                                return;
                            }
                        }
                    });
                }
                drop(done_tx);
                let r = (|| {
                    let mut summary = None;
                    loop {
                        while let Ok(d) = done_rx.try_recv() {
                            note(d, &mut sum, &mut first_err);
                        }
                        progress.bytes.store(self.pos, Relaxed);
                        if abort.load(Relaxed) {
                            return Ok(None);
                        }
                        let start = self.pos;
                        let mut magic = [0u8; 4];
                        self.read_exact_at(
                            &mut magic,
                            "the next chunk or end-of-trace record (the trace has no end-of-trace record)",
                        )?;
                        let mut end_at = start;
                        if &magic == SUMMARY_MAGIC && self.version >= 3 {
                            self.read_summary(start)?;
                            let n = self.stored.len();
                            summary = Some(
                                serde_json::from_slice::<serde_json::Value>(&self.stored[8..n - 4])
                                    .map_err(|x| {
                                        self.err(
                                            start + 8,
                                            format!("summary block is not valid JSON: {x}"),
                                        )
                                    })?,
                            );
                            end_at = self.pos;
                            self.read_exact_at(
                                &mut magic,
                                "the end-of-trace record after the summary block",
                            )?;
                            if &magic != END_MAGIC {
                                return Err(self.err(end_at, format!("expected the end-of-trace record (\"END!\") after the summary block, found bytes {magic:02x?}")));
                            }
                        }
                        if &magic == END_MAGIC {
                            let n = end_len(self.version);
                            let mut e = [0u8; END_LEN_V3];
                            e[0..4].copy_from_slice(END_MAGIC);
                            self.read_exact_at(&mut e[4..n], "the end-of-trace record")?;
                            let end = parse_end(&e[..n]).map_err(|p| self.err(end_at, p))?;
                            let mut extra = [0u8; 1];
                            loop {
                                match self.input.read(&mut extra) {
                                    Ok(0) => break,
                                    Ok(_) => {
                                        return Err(self.err(
                                            self.pos,
                                            "unexpected bytes after the end-of-trace record",
                                        ))
                                    }
                                    Err(x) if x.kind() == io::ErrorKind::Interrupted => {}
                                    Err(x) => {
                                        return Err(self.err(self.pos, format!("read error: {x}")))
                                    }
                                }
                            }
                            progress.bytes.store(self.pos, Relaxed);
                            return Ok(Some((end, end_at, summary)));
                        }
                        if &magic != CHUNK_MAGIC {
                            return Err(self.err(start, format!("expected a chunk (\"CHNK\"){} or the end-of-trace record (\"END!\"), found bytes {magic:02x?}", if self.version >= 3 { ", the summary block (\"SUMY\")" } else { "" })));
                        }
                        let mut h = [0u8; CHUNK_HEADER - 4];
                        self.read_exact_at(&mut h, "a chunk header")?;
                        let idx = self.chunk_index;
                        let ch = parse_chunk_header(&h, idx, compressed)
                            .map_err(|(at, p)| self.err(start + at, p))?;
                        let payload_at = self.pos;
                        if let Some(len) = self.len {
                            if payload_at + ch.stored_len as u64 > len {
                                return Err(self.err(len, format!("truncated: the file is {len} bytes long, inside the payload of chunk {idx} (which starts at byte {payload_at} and needs {} bytes)", ch.stored_len)));
                            }
                        }
                        let mut stored = vec![0u8; ch.stored_len as usize];
                        self.read_exact_at(&mut stored, &format!("the payload of chunk {idx}"))?;
                        self.chunk_index += 1;
                        self.seen.chunks += 1;
                        if job_tx
                            .send(Job {
                                idx,
                                start,
                                header: ch,
                                stored,
                            })
                            .is_err()
                        {
                            return Ok(None);
                        }
                    }
                })();
                drop(job_tx);
                r
            });
        // The workers are done (the scope joined them): collect what is left.
        while let Ok(d) = done_rx.try_recv() {
            note(d, &mut sum, &mut first_err);
        }
        // A damaged chunk comes before whatever the reader met afterwards.
        if let Some((_, e)) = first_err {
            return Err(e);
        }
        let Some((end, end_at, summary)) = read_result? else {
            unreachable!("the reader stops early only when a worker reported an error");
        };
        let totals = Totals {
            records: sum.records,
            accesses: sum.loads + sum.stores + sum.ifetches,
            instructions: sum.instructions,
            chunks: self.seen.chunks,
        };
        self.seen = totals;
        if end.totals != totals {
            return Err(self.err(end_at, format!("end-of-trace totals {:?} do not match the chunks read {totals:?}: chunks are missing or duplicated", end.totals)));
        }
        if end.summary_at != self.summary_at.unwrap_or(0) {
            return Err(self.err(
                end_at + 32,
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
        let has_summary_block = summary.is_some();
        let summary = summary
            .filter(|v| v["version"] == SUMMARY_VERSION)
            .map(|v| v["summary"].clone());
        if let Some(s) = &summary {
            let mut sys = serde_json::Map::new();
            let mut names: Vec<(&str, u64)> = SYSCALL_NAMES
                .iter()
                .copied()
                .zip(sum.syscalls)
                .filter(|(_, n)| *n > 0)
                .collect();
            names.sort();
            for (k, n) in names {
                sys.insert(k.to_string(), n.into());
            }
            let want = serde_json::json!({
                "events": sum.records, "refs": totals.accesses, "loads": sum.loads,
                "stores": sum.stores, "ifetches": sum.ifetches, "instructions": sum.instructions,
                "syscalls": sys,
            });
            for (k, v) in want.as_object().expect("object") {
                if &s[k] != v {
                    return Err(self.err(
                        self.summary_at.unwrap_or(0),
                        format!("the summary block says {k} = {}, the chunks hold {v}", s[k]),
                    ));
                }
            }
        }
        let bytes = self.pos;
        Ok((
            Verified {
                version,
                totals,
                counts: sum,
                summary,
                has_summary_block,
                bytes,
            },
            self.input,
        ))
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
    fn count_chunk_reference(raw: &[u8], records: u32) -> Result<ChunkCounts, String> {
        let mut c = ChunkCounts {
            records: records as u64,
            ..Default::default()
        };
        let (mut pos, mut prev_va) = (0usize, 0u64);
        for rec in 0..records {
            let at = pos;
            let ev = decode_record(raw, &mut pos, &mut prev_va)
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
            proptest::prop_assert_eq!(
                count_chunk(&raw, records),
                count_chunk_reference(&raw, records)
            );
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
