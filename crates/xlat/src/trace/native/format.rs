//! The native format's layout (docs/trace-format.md): the header's magic, versions and flags,
//! the limits, the record tags, the end-of-trace totals, and the checks of the fixed-size parts
//! (chunk header, chunk payload checksum, summary block checksum, end-of-trace record).
//!
//! Contract: pure functions of bytes, no I/O; a check returns the offset (from the part's
//! start) and the problem, never panics. It calls nothing else of the format: the writer, the
//! record decoder, the reader and `--verify` all build on it.

/// First 8 bytes of every native trace.
pub const MAGIC: &[u8; 8] = b"XLATTRC\0";
/// Format version this module writes. Version 4 adds access records with a dependence (the
/// `tag::DEP` flag); version 3 adds the summary block and the end-of-trace record's pointer to
/// it; version 2 chunk checksums cover the chunk's sequence number, so swapped or repeated
/// chunks are detected where they are; version 1 files (the chunk checksum covers the payload
/// only), version 2 and version 3 files are still read (their accesses carry no dependence).
pub const VERSION: u16 = 4;

/// Oldest format version whose access records may carry a dependence.
pub const DEPS_VERSION: u16 = 4;

/// Oldest format version this module reads.
pub const OLDEST_VERSION: u16 = 1;

/// The chunk checksum: CRC-32 of the chunk's sequence number (u32 LE, from 0) followed by its
/// uncompressed payload (version 2), or of the payload alone (version 1).
pub(super) fn chunk_crc(version: u16, index: u32, raw: &[u8]) -> u32 {
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
/// Version 2 adds `touch_curve` (for `sim.warmup_refs = "auto"`).
pub const SUMMARY_VERSION: u64 = 2;

pub(super) const CHUNK_MAGIC: &[u8; 4] = b"CHNK";
pub(super) const END_MAGIC: &[u8; 4] = b"END!";
pub(super) const SUMMARY_MAGIC: &[u8; 4] = b"SUMY";
/// Bytes of a chunk header.
pub const CHUNK_HEADER: usize = 20;
/// Bytes of the end-of-trace record in versions 1 and 2 (no summary pointer).
pub(super) const END_LEN_V2: usize = 36;
/// Bytes of the end-of-trace record in version 3.
pub(super) const END_LEN_V3: usize = 44;

/// Length of the end-of-trace record of a format version.
pub fn end_len(version: u16) -> usize {
    if version >= 3 {
        END_LEN_V3
    } else {
        END_LEN_V2
    }
}

/// Record tags (first byte of every record in a chunk payload).
pub(super) mod tag {
    pub const LOAD: u8 = 0x00;
    pub const STORE: u8 = 0x01;
    pub const IFETCH: u8 = 0x02;
    /// Flag added to an access tag (version 4): a `v dep` field follows the record's others.
    pub const DEP: u8 = 0x04;
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
pub(super) fn check_summary_block(block: &[u8]) -> Result<(), (u64, String)> {
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
