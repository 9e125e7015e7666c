//! `--verify`: [`NativeReader::verify`] checks a whole trace with worker threads (every chunk
//! decompressed, checksummed and its records counted in parallel; the totals, the summary
//! block's counts and the end-of-trace record checked at the end).
//!
//! Contract: the error reported is the one a sequential read would meet first (the lowest
//! chunk); memory is bounded by a few chunks whatever the trace length. It calls the reader's
//! reading steps (`reader.rs`), the layout (`format.rs`) and the record counter
//! (`records.rs`).

use super::format::{
    end_len, parse_chunk_header, parse_end, unpack_chunk, ChunkHeader, EndRecord, Totals,
    CHUNK_HEADER, CHUNK_MAGIC, DEPS_VERSION, END_LEN_V3, END_MAGIC, FLAG_ZSTD, MAX_RAW_CHUNK,
    SUMMARY_MAGIC, SUMMARY_VERSION,
};
use super::reader::NativeReader;
use super::records::{count_chunk, ChunkCounts, SYSCALL_NAMES};
use crate::trace::SourceError;
use std::io::{self, Read};

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
                                    count_chunk(&raw, job.header.records, version >= DEPS_VERSION)
                                        .map_err(|p| {
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
