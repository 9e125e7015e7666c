//! ChampSim instruction traces: 64-byte `input_instr` records (and the 84-byte CloudSuite
//! variant), plain, xz- or gzip-compressed (detected from the first bytes).
//!
//! Mapping: every record is one instruction. Its non-zero source memory operands become loads,
//! then its non-zero destination memory operands become stores, each of [`ACCESS_SIZE`] bytes
//! (ChampSim records carry no operand size). The first access of a record carries the number of
//! records since the previous access, this one included; further accesses of the same record
//! carry 0. Instructions after the last access of the trace carry no event and are not counted.
//! Instruction fetches are not emitted.
//!
//! Dependences (for `timing.model = "ooo"`): an access depends on the most recent load whose
//! value reached one of its instruction's source registers, directly (the load's destination
//! registers) or through non-memory instructions (whose destination registers take the newest
//! load among their sources); a load that writes a register makes it carry that load's value.
//! Every register number but 0 (none) is tracked, the flags and instruction pointer included,
//! as ChampSim's core does. Distances beyond `u16::MAX` accesses are recorded as 0 (no ROB holds
//! both ends).
//!
//! VMAs: ChampSim traces have no mmap events, so the reader infers them (see [`HEURISTIC`]) in a
//! first pass over the file: touched 4 KiB pages are sorted and grouped into regions, a gap of
//! [`GAP_BYTES`] or more of untouched address space starting a new region; each region becomes
//! one read-write anonymous mapping emitted before the first access. Memory held is proportional
//! to the number of distinct pages touched (the footprint), never to the trace length.
//!
//! Reference: ChampSim `inc/trace_instruction.h` (`input_instr`, `cloudsuite_instr`).

use super::{AccessKind, Event, EventSource, SourceError};
use crate::addr::Vaddr;
use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufReader, Read, Write};

/// Bytes assumed for every memory operand.
pub const ACCESS_SIZE: u8 = 8;
/// Untouched address space that separates two inferred VMAs.
pub const GAP_BYTES: u64 = 1 << 20;
/// The VMA inference heuristic, as the result record states it.
pub const HEURISTIC: &str = "touched 4 KiB pages grouped into read-write regions; \
     a gap of 1 MiB or more of untouched address space starts a new region";

/// Record layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// 64 bytes: ip, is_branch, branch_taken, 2 destination and 4 source registers,
    /// 2 destination and 4 source memory addresses.
    ChampSim,
    /// 84 bytes: ip, is_branch, branch_taken, 4 + 4 registers, 4 destination and 4 source
    /// memory addresses, 2-byte ASID.
    CloudSuite,
}

impl Variant {
    /// Record size in bytes.
    pub fn record_bytes(self) -> usize {
        match self {
            Variant::ChampSim => 64,
            Variant::CloudSuite => 84,
        }
    }

    /// (offset of the destination registers, count), (offset of the source registers, count).
    fn reg_layout(self) -> ((usize, usize), (usize, usize)) {
        match self {
            Variant::ChampSim => ((10, 2), (12, 4)),
            Variant::CloudSuite => ((10, 4), (14, 4)),
        }
    }

    /// (offset of the destination addresses, count), (offset of the source addresses, count).
    fn layout(self) -> ((usize, usize), (usize, usize)) {
        match self {
            Variant::ChampSim => ((16, 2), (32, 4)),
            Variant::CloudSuite => ((18, 4), (50, 4)),
        }
    }
}

/// Decompressed record stream with the byte position, for error messages.
struct Records {
    input: Box<dyn Read + Send>,
    path: String,
    compression: &'static str,
    pos: u64,
    index: u64,
}

impl Records {
    fn open(path: &str) -> Result<Records, SourceError> {
        let err = |e: io::Error| SourceError {
            source: path.to_string(),
            offset: None,
            problem: format!("cannot open: {e}"),
        };
        let mut f = File::open(path).map_err(err)?;
        let mut head = [0u8; 6];
        let n = f.read(&mut head).map_err(err)?;
        let f = File::open(path).map_err(err)?;
        let buf = BufReader::with_capacity(1 << 20, f);
        let (input, compression): (Box<dyn Read + Send>, _) =
            if n == 6 && head == [0xfd, b'7', b'z', b'X', b'Z', 0] {
                (Box::new(xz2::read::XzDecoder::new_multi_decoder(buf)), "xz")
            } else if n >= 2 && head[..2] == [0x1f, 0x8b] {
                (
                    Box::new(BufReader::with_capacity(
                        1 << 20,
                        flate2::read::MultiGzDecoder::new(buf),
                    )),
                    "gzip",
                )
            } else {
                (Box::new(buf), "none")
            };
        Ok(Records {
            input,
            path: path.to_string(),
            compression,
            pos: 0,
            index: 0,
        })
    }

    fn err(&self, offset: u64, problem: String) -> SourceError {
        let where_ = if self.compression == "none" {
            String::new()
        } else {
            format!(" (offset in the {}-decompressed stream)", self.compression)
        };
        SourceError {
            source: self.path.clone(),
            offset: Some(offset),
            problem: format!("{problem}{where_}"),
        }
    }

    /// Read the next record into `rec`; `Ok(false)` at a clean end of the stream.
    fn next(&mut self, rec: &mut [u8]) -> Result<bool, SourceError> {
        let mut got = 0;
        while got < rec.len() {
            match self.input.read(&mut rec[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(self.err(
                        self.pos + got as u64,
                        format!("read or decompression error in record {}: {e}", self.index),
                    ))
                }
            }
        }
        if got == 0 {
            if self.index == 0 {
                return Err(self.err(0, "empty trace: no ChampSim records".into()));
            }
            return Ok(false);
        }
        if got < rec.len() {
            return Err(self.err(
                self.pos + got as u64,
                format!(
                    "truncated: the stream ends {got} bytes into record {} (records are {} bytes)",
                    self.index,
                    rec.len()
                ),
            ));
        }
        self.pos += rec.len() as u64;
        self.index += 1;
        Ok(true)
    }
}

/// Memory operands at or above this address cannot be user-space addresses (57 bits is the
/// widest x86-64 virtual address space); a record holding one is not a ChampSim record.
pub const MAX_OPERAND_ADDR: u64 = 1 << 57;

/// Reject a record that cannot be a ChampSim record, naming its offset: its two flag bytes
/// (`is_branch`, `branch_taken`) are C++ bools (0 or 1), and its memory operands are user-space
/// addresses. Random or misaligned bytes fail this within the first few records, so
/// `trace info` and `run` refuse such a file up front (ChampSim files have no magic number).
fn check_record(records: &Records, rec: &[u8], variant: Variant) -> Result<(), SourceError> {
    let offset = records.pos - rec.len() as u64;
    let index = records.index - 1;
    for (name, byte) in [("is_branch", rec[8]), ("branch_taken", rec[9])] {
        if byte > 1 {
            return Err(records.err(
                offset,
                format!(
                    "record {index} is not a {} record: its {name} byte is 0x{byte:02x} \
                     (0 or 1 in a real trace; is this the right file and --trace-format?)",
                    variant_name(variant)
                ),
            ));
        }
    }
    let ((doff, dn), (soff, sn)) = variant.layout();
    for (off, n) in [(soff, sn), (doff, dn)] {
        for i in 0..n {
            let a = addr_at(rec, off + 8 * i);
            if a >= MAX_OPERAND_ADDR {
                return Err(records.err(
                    offset,
                    format!(
                        "record {index} is not a {} record: memory operand {a:#x} is not a \
                         user-space address (at most 57 bits)",
                        variant_name(variant)
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn variant_name(v: Variant) -> &'static str {
    match v {
        Variant::ChampSim => "ChampSim",
        Variant::CloudSuite => "CloudSuite",
    }
}

fn addr_at(rec: &[u8], off: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&rec[off..off + 8]);
    u64::from_le_bytes(b)
}

/// The VMA inference pass (see the module doc): every record is read and checked; returns the
/// regions as (start address, length in bytes), in address order.
fn infer_vmas(path: &str, variant: Variant) -> Result<Vec<(u64, u64)>, SourceError> {
    let mut records = Records::open(path)?;
    let mut rec = vec![0u8; variant.record_bytes()];
    let ((doff, dn), (soff, sn)) = variant.layout();
    let mut pages: HashSet<u64> = HashSet::new();
    while records.next(&mut rec)? {
        check_record(&records, &rec, variant)?;
        for (off, n) in [(soff, sn), (doff, dn)] {
            for i in 0..n {
                let a = addr_at(&rec, off + 8 * i);
                if a != 0 {
                    pages.insert(a >> 12);
                    // An operand may straddle a page boundary.
                    pages.insert((a + ACCESS_SIZE as u64 - 1) >> 12);
                }
            }
        }
    }
    let mut sorted: Vec<u64> = pages.into_iter().collect();
    sorted.sort_unstable();
    let mut regions = Vec::new();
    let gap_pages = GAP_BYTES >> 12;
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        i += 1;
        while i < sorted.len() && sorted[i] - end <= gap_pages {
            end = sorted[i];
            i += 1;
        }
        regions.push((start << 12, (end + 1 - start) << 12));
    }
    Ok(regions)
}

/// First line of a VMA cache file; the second names the heuristic, so that a cache made by
/// another inference rule is not reused.
const VMA_CACHE_MAGIC: &str = "xlat champsim vmas v1";

/// The regions of a VMA cache file, or `None` when it is absent or not exactly as written by
/// [`write_vma_cache`].
fn read_vma_cache(file: &std::path::Path) -> Option<Vec<(u64, u64)>> {
    let text = std::fs::read_to_string(file).ok()?;
    let mut lines = text.lines();
    if lines.next()? != VMA_CACHE_MAGIC || lines.next()? != format!("heuristic {HEURISTIC}") {
        return None;
    }
    let mut regions = Vec::new();
    let mut ended = false;
    for line in lines {
        if line == "end" {
            ended = true;
            break;
        }
        let (a, b) = line.split_once(' ')?;
        let start = u64::from_str_radix(a, 16).ok()?;
        let len = u64::from_str_radix(b, 16).ok()?;
        if len == 0 || start.checked_add(len).is_none() {
            return None;
        }
        regions.push((start, len));
    }
    ended.then_some(regions)
}

/// Write the cache file atomically (a temporary file renamed into place), so that a crash or
/// a concurrent writer never leaves a partial entry.
fn write_vma_cache(file: &std::path::Path, regions: &[(u64, u64)]) -> io::Result<()> {
    let dir = file.parent().expect("cache file has a directory");
    std::fs::create_dir_all(dir)?;
    let mut text = format!("{VMA_CACHE_MAGIC}\nheuristic {HEURISTIC}\n");
    for (start, len) in regions {
        text.push_str(&format!("{start:x} {len:x}\n"));
    }
    text.push_str("end\n");
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        file.file_name().and_then(|n| n.to_str()).unwrap_or("vmas"),
        std::process::id()
    ));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, file)
}

/// Streams events from a ChampSim trace (two passes: VMA inference, then the accesses; the
/// first is skipped when the inference is cached, see [`ChampSimReader::open_cached`]).
pub struct ChampSimReader {
    path: String,
    variant: Variant,
    records: Records,
    rec: Vec<u8>,
    /// Events decoded but not yet handed out (the inferred mmaps, then one record's accesses).
    pending: Vec<Event>,
    ppos: usize,
    /// Records without a memory operand since the last access.
    instrs: u64,
    /// Accesses emitted so far.
    accesses: u64,
    /// Per architectural register: 1 + the index of the access whose loaded value it holds
    /// (0: none).
    producer: [u64; 256],
    vmas: usize,
    done: bool,
    failed: Option<SourceError>,
    describe: Option<serde_json::Value>,
}

impl ChampSimReader {
    /// Open `path`, read it once to infer the VMAs (any malformed record is reported here,
    /// before any event is produced), and get ready to stream its accesses.
    pub fn open(path: &str, variant: Variant) -> Result<ChampSimReader, SourceError> {
        let regions = infer_vmas(path, variant)?;
        Self::with_regions(path, variant, regions)
    }

    /// [`ChampSimReader::open`], with the inferred VMAs kept in `cache_dir` under the trace's
    /// SHA-256 (`sha256`, which the caller computed): a trace read before skips the inference
    /// pass (a sweep reads one trace once per design). The cache is only written after a
    /// complete, valid first pass, so a cached trace is one whose every record was checked;
    /// an unreadable or malformed cache entry is ignored and rewritten. Returns the reader and
    /// whether the VMAs came from the cache.
    pub fn open_cached(
        path: &str,
        variant: Variant,
        sha256: &str,
        cache_dir: &std::path::Path,
    ) -> Result<(ChampSimReader, bool), SourceError> {
        let file = cache_dir.join("champsim-vmas").join(format!(
            "{sha256}-{}.txt",
            variant_name(variant).to_lowercase()
        ));
        if let Some(regions) = read_vma_cache(&file) {
            return Ok((Self::with_regions(path, variant, regions)?, true));
        }
        let regions = infer_vmas(path, variant)?;
        // A cache that cannot be written costs only the next run's first pass.
        let _ = write_vma_cache(&file, &regions);
        Ok((Self::with_regions(path, variant, regions)?, false))
    }

    /// A reader that emits `regions` (start, length in bytes) as mmaps, then the accesses.
    fn with_regions(
        path: &str,
        variant: Variant,
        regions: Vec<(u64, u64)>,
    ) -> Result<ChampSimReader, SourceError> {
        let rec = vec![0u8; variant.record_bytes()];
        let pending: Vec<Event> = regions
            .into_iter()
            .map(|(start, len)| Event::Mmap {
                addr: Vaddr(start),
                len,
                prot: super::prot::READ | super::prot::WRITE,
                flags: 0x22, // MAP_PRIVATE | MAP_ANONYMOUS
            })
            .collect();
        let vmas = pending.len();
        Ok(ChampSimReader {
            path: path.to_string(),
            variant,
            records: Records::open(path)?,
            rec,
            pending,
            ppos: 0,
            instrs: 0,
            accesses: 0,
            producer: [0; 256],
            vmas,
            done: false,
            failed: None,
            describe: None,
        })
    }

    /// The VMA inference heuristic, in words.
    pub fn heuristic(&self) -> &'static str {
        HEURISTIC
    }

    /// Number of VMAs inferred.
    pub fn vma_count(&self) -> usize {
        self.vmas
    }

    /// Set what [`EventSource::describe`] returns.
    pub fn set_describe(&mut self, v: serde_json::Value) {
        self.describe = Some(v);
    }

    fn decode_next(&mut self) -> Result<bool, SourceError> {
        self.pending.clear();
        self.ppos = 0;
        while self.pending.is_empty() {
            if !self.records.next(&mut self.rec)? {
                return Ok(false);
            }
            self.instrs += 1;
            let ((doff, dn), (soff, sn)) = self.variant.layout();
            let ((dreg, ndreg), (sreg, nsreg)) = self.variant.reg_layout();
            // The newest load feeding any source register of this instruction.
            let source = self.rec[sreg..sreg + nsreg]
                .iter()
                .filter(|&&r| r != 0)
                .map(|&r| self.producer[r as usize])
                .max()
                .unwrap_or(0);
            let mut last_load = 0;
            for (off, n, kind) in [(soff, sn, AccessKind::Load), (doff, dn, AccessKind::Store)] {
                for i in 0..n {
                    let a = addr_at(&self.rec, off + 8 * i);
                    if a != 0 {
                        let instrs = std::mem::take(&mut self.instrs);
                        let dep = if source == 0 {
                            0
                        } else {
                            u16::try_from(self.accesses + 1 - source).unwrap_or(0)
                        };
                        self.pending.push(Event::Access {
                            kind,
                            va: Vaddr(a),
                            size: ACCESS_SIZE,
                            instrs: u32::try_from(instrs).unwrap_or(u32::MAX),
                            dep,
                        });
                        self.accesses += 1;
                        if kind == AccessKind::Load {
                            last_load = self.accesses;
                        }
                    }
                }
            }
            let written = if last_load != 0 { last_load } else { source };
            for i in 0..ndreg {
                let r = self.rec[dreg + i];
                if r != 0 {
                    self.producer[r as usize] = written;
                }
            }
        }
        Ok(true)
    }
}

impl EventSource for ChampSimReader {
    fn fill(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, SourceError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let mut n = 0;
        while n < max && !self.done {
            if self.ppos == self.pending.len() {
                match self.decode_next() {
                    Ok(true) => {}
                    Ok(false) => self.done = true,
                    Err(e) => {
                        self.failed = Some(e.clone());
                        return Err(e);
                    }
                }
                continue;
            }
            out.push(self.pending[self.ppos]);
            self.ppos += 1;
            n += 1;
        }
        Ok(n)
    }

    fn name(&self) -> String {
        self.path.clone()
    }

    fn describe(&self) -> Option<serde_json::Value> {
        self.describe.clone()
    }
}

/// Write `events`' accesses as ChampSim records (the inverse of the reader's mapping, used to
/// make ChampSim traces from generated workloads): an access with `instrs = n > 0` becomes
/// `n - 1` records without memory operands and one with the access; an access with
/// `instrs = 0` joins the previous record when it has a free operand slot of its kind (loads
/// must precede stores within a record). System-call events are dropped. Returns the number of
/// records written.
pub fn write_champsim<W: Write>(
    out: &mut W,
    events: impl IntoIterator<Item = Event>,
) -> io::Result<u64> {
    let mut rec = [0u8; 64];
    let mut have = false;
    let (mut nsrc, mut ndst) = (0usize, 0usize);
    let mut written = 0u64;
    let mut ip = 0x40_0000u64;
    for ev in events {
        let Event::Access {
            kind, va, instrs, ..
        } = ev
        else {
            continue;
        };
        let fits = have
            && instrs == 0
            && match kind {
                AccessKind::Load => ndst == 0 && nsrc < 4,
                AccessKind::Store => ndst < 2,
                AccessKind::IFetch => true,
            };
        if !fits {
            if have {
                out.write_all(&rec)?;
                written += 1;
            }
            for _ in 1..instrs.max(1) {
                let mut blank = [0u8; 64];
                blank[0..8].copy_from_slice(&ip.to_le_bytes());
                ip += 4;
                out.write_all(&blank)?;
                written += 1;
            }
            rec = [0u8; 64];
            rec[0..8].copy_from_slice(&ip.to_le_bytes());
            ip += 4;
            have = true;
            nsrc = 0;
            ndst = 0;
        }
        match kind {
            AccessKind::Load => {
                rec[32 + 8 * nsrc..40 + 8 * nsrc].copy_from_slice(&va.0.to_le_bytes());
                nsrc += 1;
            }
            AccessKind::Store => {
                rec[16 + 8 * ndst..24 + 8 * ndst].copy_from_slice(&va.0.to_le_bytes());
                ndst += 1;
            }
            AccessKind::IFetch => {}
        }
    }
    if have {
        out.write_all(&rec)?;
        written += 1;
    }
    Ok(written)
}
