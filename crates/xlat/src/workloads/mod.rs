//! Built-in workload generators: seeded, parameterized by footprint and length, each issuing
//! mmap/munmap/brk the way a real program's allocator would.
//!
//! Contract: a generator is deterministic in (config, refs, seed); it emits at most `refs`
//! `Access` events; its memory use depends on the footprint, never on `refs`.
//!
//! STUB: gups only; replaced by the full set.

use crate::addr::Vaddr;
use crate::trace::{AccessKind, Event, EventSource, SourceError};
use serde::{Deserialize, Serialize};

/// Workload generator settings.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadConfig {
    /// Generator name (see `xlat workloads`).
    pub name: String,
    /// Bytes of data the workload's main structures occupy.
    pub footprint: u64,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            name: "gups".into(),
            footprint: 1 << 30,
        }
    }
}

impl WorkloadConfig {
    /// Check the name and ranges.
    pub fn validate(&self) -> Result<(), String> {
        if !WORKLOADS.iter().any(|(n, _)| *n == self.name) {
            return Err(format!("unknown workload '{}'", self.name));
        }
        Ok(())
    }
}

/// Registered workloads: name and one-line description.
pub const WORKLOADS: &[(&str, &str)] =
    &[("gups", "random read-modify-write updates of a large table")];

/// Build the generator named in `cfg`.
pub fn create(cfg: &WorkloadConfig, refs: u64, seed: u64) -> Result<Box<dyn EventSource>, String> {
    Ok(Box::new(Gups {
        footprint: cfg.footprint,
        refs,
        emitted: 0,
        state: seed | 1,
        started: false,
    }))
}

struct Gups {
    footprint: u64,
    refs: u64,
    emitted: u64,
    state: u64,
    started: bool,
}

const BASE: u64 = 0x7f00_0000_0000;

impl EventSource for Gups {
    fn fill(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, SourceError> {
        let mut n = 0;
        if !self.started {
            self.started = true;
            out.push(Event::Mmap {
                addr: Vaddr(BASE),
                len: self.footprint,
                prot: 3,
                flags: 0x22,
            });
            n += 1;
        }
        while n < max && self.emitted < self.refs {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            let va = Vaddr(BASE + (self.state % (self.footprint / 8)) * 8);
            let kind = if self.emitted % 2 == 0 {
                AccessKind::Load
            } else {
                AccessKind::Store
            };
            out.push(Event::Access {
                kind,
                va,
                size: 8,
                instrs: 4,
            });
            self.emitted += 1;
            n += 1;
        }
        Ok(n)
    }
    fn name(&self) -> String {
        "gups".into()
    }
}
