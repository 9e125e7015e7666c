//! Trace events and the streaming source interface shared by trace readers and the built-in
//! workload generators.
//!
//! A trace is a stream of [`Event`]s in program order: memory references interleaved with the
//! address-space system calls (with their results) that a real program makes. Sources stream:
//! memory use must not depend on the length of the trace.

use crate::addr::Vaddr;
use std::fmt;

pub mod background;
pub mod champsim;
pub mod heat;
pub mod info;
pub mod lackey;
pub mod native;
mod open;
mod summary;
mod varint;
pub mod vgstream;

pub use open::{
    cache_dir, native_dependences, open, sha256_file, TraceFormat, DEPENDENCES_RECORDED,
};

/// Kind of a memory reference.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum AccessKind {
    /// Data read.
    Load,
    /// Data write.
    Store,
    /// Instruction fetch (uses the ITLB).
    IFetch,
}

/// `prot` bits of mmap/mprotect, as in Linux.
pub mod prot {
    /// Readable.
    pub const READ: u32 = 1;
    /// Writable.
    pub const WRITE: u32 = 2;
    /// Executable.
    pub const EXEC: u32 = 4;
}

/// `madvise` advice values used by the OS model, as in Linux.
pub mod advice {
    /// Discard the range's pages (they fault in again, zero-filled, on the next touch).
    pub const DONTNEED: u32 = 4;
    /// Allow transparent huge pages in the range (THP policy `madvise`).
    pub const HUGEPAGE: u32 = 14;
    /// Forbid transparent huge pages in the range.
    pub const NOHUGEPAGE: u32 = 15;
}

/// One event of a trace.
///
/// Contract: system-call events carry the call's *result* (the address the kernel chose), so
/// replaying them needs no address-placement policy; `Mmap.len`, `Munmap.len` etc. are in bytes and
/// need not be page-aligned (the OS model rounds up to whole pages, as Linux does).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Event {
    /// A memory reference.
    Access {
        /// Load, store or instruction fetch.
        kind: AccessKind,
        /// Virtual address referenced.
        va: Vaddr,
        /// Access size in bytes (1..=64).
        size: u8,
        /// Instructions retired since the previous `Access` event (including this one's).
        instrs: u32,
        /// How many `Access` events back is the one whose loaded value this address depends
        /// on (directly or through non-memory instructions); 0 = none or unknown. Only the
        /// `ooo` timing model reads it (see `docs/timing.md`, "Dependences").
        dep: u16,
    },
    /// `mmap` that returned `addr`.
    Mmap {
        /// Start of the new mapping (the call's result).
        addr: Vaddr,
        /// Length in bytes.
        len: u64,
        /// `prot` bits (see [`prot`]).
        prot: u32,
        /// Linux `MAP_*` flags, kept for the record.
        flags: u32,
    },
    /// `munmap(addr, len)`.
    Munmap {
        /// Start of the range.
        addr: Vaddr,
        /// Length in bytes.
        len: u64,
    },
    /// `brk` that set the program break to `new_brk` (the call's result).
    Brk {
        /// New program break.
        new_brk: Vaddr,
    },
    /// `mprotect(addr, len, prot)`.
    Mprotect {
        /// Start of the range.
        addr: Vaddr,
        /// Length in bytes.
        len: u64,
        /// New `prot` bits.
        prot: u32,
    },
    /// `madvise(addr, len, advice)`.
    Madvise {
        /// Start of the range.
        addr: Vaddr,
        /// Length in bytes.
        len: u64,
        /// Advice value (see [`advice`]).
        advice: u32,
    },
    /// The CPU switches to process `pid` (created on first appearance).
    Switch {
        /// Process identifier, as in the trace.
        pid: u32,
    },
    /// The CPU switches to thread `tid` of the current process (same address space). On one
    /// core a thread switch changes no state; one trace on several cores runs each thread on a
    /// core of its own, in simulated time (the engine's `threads.rs`, docs/machine.md).
    Thread {
        /// Thread identifier, as in the trace.
        tid: u32,
    },
    /// Process `pid` exits; its address space is torn down.
    Exit {
        /// Process identifier.
        pid: u32,
    },
}

impl Event {
    /// The same event with the dependence `dep` (an `Access`; any other event is returned
    /// unchanged).
    pub fn with_dep(self, dep: u16) -> Event {
        match self {
            Event::Access {
                kind,
                va,
                size,
                instrs,
                ..
            } => Event::Access {
                kind,
                va,
                size,
                instrs,
                dep,
            },
            other => other,
        }
    }
}

/// An error from a trace source: names where in which input the problem is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceError {
    /// The file or generator the problem is in.
    pub source: String,
    /// Byte offset in the file, when the source is a file.
    pub offset: Option<u64>,
    /// What is wrong.
    pub problem: String,
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(off) => write!(
                f,
                "{}: at byte offset {}: {}",
                self.source, off, self.problem
            ),
            None => write!(f, "{}: {}", self.source, self.problem),
        }
    }
}

impl std::error::Error for SourceError {}

/// A stream of events.
///
/// Contract: `fill` appends at most `max` events to `out` (never clears it) and returns how many
/// it appended; it returns `Ok(0)` only when the stream has ended and will keep returning `Ok(0)`.
/// An error is final: the stream is broken at that point and the caller must not treat what came
/// before it as a complete trace. Memory held by a source must not grow with the events produced.
pub trait EventSource: Send {
    /// Append up to `max` events to `out`.
    fn fill(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, SourceError>;
    /// Human-readable name of the source (workload name or file path).
    fn name(&self) -> String;
    /// References of the source's first-touch phase, when the source knows them before it is
    /// read (a built-in generator's setup: its allocations and the first store to every page
    /// of its data); `sim.warmup_refs = "auto"` warms up that many. `None` (the default): the
    /// source cannot tell (a trace file is read once, from its start).
    fn first_touch_refs(&mut self) -> Option<u64> {
        None
    }
    /// References the source holds in all, when it knows them before it is read (a native
    /// trace's stored summary); `sim.sampling.interval = "auto"` samples a trace file only
    /// when it is long enough. `None` (the default): unknown (a built-in generator produces
    /// what `sim.refs` asks; another trace format is read once, from its start).
    fn total_refs(&self) -> Option<u64> {
        None
    }
    /// What the result record should say about the input (a trace file's path, format and
    /// sha256, whether its VMAs were inferred); `None` for built-in generators.
    fn describe(&self) -> Option<serde_json::Value> {
        None
    }
}
