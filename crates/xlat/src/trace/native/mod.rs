//! The native trace format (`.xlat`): a versioned header, zstd-compressed chunks of
//! delta-encoded records each with its record count and CRC-32, an optional summary block (the
//! `xlat trace info` summary, computed while writing) and an end-of-trace record with totals. The byte layout is specified in `docs/trace-format.md`; this module is its reference
//! implementation.
//!
//! Contract: [`NativeWriter`] and [`NativeReader`] stream: each holds at most one chunk
//! (≤ [`MAX_CHUNK_RECORDS`] records, ≤ [`MAX_RAW_CHUNK`] bytes) whatever the trace length. The
//! reader checks everything it reads (magic, version, flags, lengths, checksums, record tags,
//! value ranges, totals) and reports the first problem as a
//! [`SourceError`](crate::trace::SourceError) naming the file, the byte offset and the problem;
//! it never panics on any input, and a trace that does not end with a valid end-of-trace record
//! is an error, never a silently shorter trace.
//!
//! ## Parts
//! - `format.rs`: the layout (magic, versions, flags, limits, record tags, totals) and the
//!   checks of the fixed-size parts (chunk header and checksum, summary block, end record).
//! - `records.rs`: a chunk payload's records, decoded one by one or counted all at once.
//! - `writer.rs`: [`NativeWriter`] and [`rewrite_meta`].
//! - `reader.rs`: [`NativeReader`] (streaming, checked) and [`read_tail`] (constant time).
//! - `verify.rs`: [`NativeReader::verify`], the whole-trace check on worker threads.
//!
//! Each file calls only those listed before it (`verify.rs` builds on `reader.rs`); the
//! summary the writer stores is computed in `trace/summary.rs`, below this module. This file
//! only re-exports: every item keeps its path `crate::trace::native::*`.

mod format;
mod reader;
mod records;
mod verify;
mod writer;

pub use format::{
    end_len, parse_chunk_header, parse_end, unpack_chunk, ChunkHeader, EndRecord, Totals,
    CHUNK_HEADER, DEPS_VERSION, FLAG_ZSTD, MAGIC, MAX_CHUNK_RECORDS, MAX_META, MAX_RAW_CHUNK,
    MAX_SUMMARY, OLDEST_VERSION, SUMMARY_VERSION, VERSION,
};
pub use reader::{read_tail, NativeReader, Tail};
pub use records::{decode_record, ChunkCounts, ChunkState, SYSCALL_NAMES};
pub use verify::{Verified, VerifyProgress};
pub use writer::{rewrite_meta, NativeWriter};

#[cfg(test)]
mod tests;
