//! The simulation loop: event -> OS model -> MMU (TLBs, design walk) -> oracle -> memory ->
//! timing -> stats.
//!
//! Contract: given the same config and event stream, a run produces bit-identical statistics
//! (wall-clock fields aside), however it is chunked by [`Simulation::step`]. Any disagreement
//! between a design's translation and the OS model's mapping aborts the run with
//! [`SimError::Oracle`]: a mismatch is a bug, never a statistic.
//!
//! # What the engine owns
//! The per-reference loop (one reference through the TLBs, the design's walk, the oracle, the
//! caches and DRAM, the core model), the OS events of a trace (system calls, faults, daemons)
//! and the mapping changes they make, the scheduling of a multi-core or multi-process run, the
//! result record's engine sections and the assembly of the record, and the public entry points
//! [`Simulation`], [`run`] and [`run_workload`].
//!
//! It may call: `addr`, `config`, `designs`, `mem`, `mmu`, `os`, `simd`, `stats`, `timing`,
//! `trace`, `virt`, `warmup`, `sampling`, `workloads`. None of them calls the engine.
//!
//! # Parts
//! From the bottom up; a part names items only of the parts before it (and its own children):
//! - `error`: [`SimError`].
//! - `counters`: the loop's per-core counters and the record sections written from them.
//! - `stream`: how a process's events are read (the chunk, the host-memory prefetch).
//! - `threads`: a multi-threaded trace's events read apart per thread, for the cores to run
//!   in time order.
//! - `placement`: the design's placement hook at a fault; a broken contiguous group's TLB
//!   invalidation.
//! - `machine`: the parked cores and processes of a multi-core or multi-process run, their
//!   scheduling state, [`INTERLEAVE_REFS`].
//! - `sim`: `Sim<D>`, the loop monomorphized per design: `sim/mod.rs` (its state, construction,
//!   event loop), `sim/translate.rs` (one reference), `sim/os_events.rs` (OS events and mapping
//!   changes), `sim/sched.rs` (the turns of cores and processes), `sim/record.rs` (the record).
//! - `builder`: [`Simulation`] (construction, stepping, warm-up), [`run`], [`run_workload`].
//!
//! This file only declares the parts and re-exports the public paths.

mod builder;
mod counters;
mod error;
mod machine;
mod placement;
mod sim;
mod stream;
mod threads;

pub use builder::{resolve_warmup, run, run_workload, Simulation};
pub use error::SimError;
pub use machine::INTERLEAVE_REFS;
// The designs' tests break contiguous groups as the engine does.
#[cfg(test)]
pub(crate) use placement::invalidate_group_members;

#[cfg(test)]
mod tests;
