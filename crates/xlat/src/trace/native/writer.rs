//! Writing the native format: [`NativeWriter`] encodes events into chunk payloads, compresses
//! and checksums full chunks (on the caller's thread or a background one), feeds the trace's
//! [`Summary`] and writes the summary block and the end-of-trace record at the end;
//! [`rewrite_meta`] replaces a finished trace's metadata in place.
//!
//! Contract: the writer holds at most one chunk (two with the background stage) whatever the
//! trace length; what it writes the reader (`reader.rs`) reads back event for event. It calls
//! the layout (`format.rs`), the varint coding and the summary (`trace/summary.rs`).

use super::format::{
    chunk_crc, tag, Totals, CHUNK_HEADER, CHUNK_MAGIC, END_LEN_V3, END_MAGIC, FLAG_ZSTD, MAGIC,
    MAX_CHUNK_RECORDS, MAX_META, MAX_RAW_CHUNK, MAX_SUMMARY, SUMMARY_MAGIC, SUMMARY_VERSION,
    VERSION,
};
use crate::trace::summary::Summary;
use crate::trace::varint;
use crate::trace::{AccessKind, Event};
use std::io::{self, Read, Write};

/// Flush a chunk once its payload reaches this size (leaves room for one more record).
const FLUSH_RAW: usize = (MAX_RAW_CHUNK as usize) - 64;

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
    pub(super) raw: Vec<u8>,
    /// What turns a full chunk into bytes (compression, checksum, header).
    chunks: ChunkEncoder,
    background: Option<Background<W>>,
    in_chunk: u32,
    prev_va: u64,
    /// Access records in the current chunk, and the source (index minus dependence) of its
    /// last access with a dependence (see `records::ChunkState`).
    chunk_accesses: u64,
    prev_src: i64,
    totals: Totals,
    /// Bytes written so far (where the next chunk or block starts).
    pos: u64,
    summary: Option<Box<Summary>>,
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
            chunk_accesses: 0,
            prev_src: 0,
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
                dep,
            } => self.write_access(kind, va.0, size, instrs, dep),
            _ => self.write_other(ev),
        }
    }

    /// Append one access (the same bytes as [`NativeWriter::write`] of `Event::Access`): the
    /// recorder's hot path, kept free of branches that depend on the data apart from the
    /// variable-length integers' lengths (a dependence of 0 is not written: its bytes are
    /// encoded and then not kept).
    #[inline(always)]
    pub fn write_access(
        &mut self,
        kind: AccessKind,
        va: u64,
        size: u8,
        instrs: u32,
        dep: u16,
    ) -> io::Result<()> {
        if let Some(s) = self.summary.as_mut() {
            s.access(kind, va, instrs);
        }
        let t = match kind {
            AccessKind::Load => tag::LOAD,
            AccessKind::Store => tag::STORE,
            AccessKind::IFetch => tag::IFETCH,
        };
        // A whole record is at most 1 + 1 + 10 + 5 + 3 bytes (the dependence's delta is below
        // 2^17 in magnitude, its zigzag below 2^18): reserve 24 bytes at the end of the
        // chunk (a fixed-size fill; the chunk always has room, see FLUSH_RAW), encode in place
        // and keep the used length. (Encoding into a stack buffer and copying it stalls on
        // store-to-load forwarding of the byte stores.)
        let at = self.raw.len();
        self.raw.extend_from_slice(&[0u8; 24]);
        let rec: &mut [u8; 24] = (&mut self.raw[at..at + 24]).try_into().expect("24 bytes");
        let has_dep = dep != 0;
        rec[0] = t | if has_dep { tag::DEP } else { 0 };
        rec[1] = size;
        let n = varint::put_at(rec, 2, varint::zigzag(va.wrapping_sub(self.prev_va) as i64));
        let n = varint::put_at(rec, n, instrs as u64);
        // The dependence as its source's index in the chunk, relative to the previous one's
        // (a base pointer's accesses repeat one byte, a chase's another: zstd keeps little).
        let src = self.chunk_accesses as i64 - dep as i64;
        let with_dep = varint::put_at(rec, n, varint::zigzag(src.wrapping_sub(self.prev_src)));
        let n = if has_dep { with_dep } else { n };
        self.prev_src = if has_dep { src } else { self.prev_src };
        self.chunk_accesses += 1;
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
        self.chunk_accesses = 0;
        self.prev_src = 0;
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
