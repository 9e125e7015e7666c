//! The out-of-order core model (`timing.model = "ooo"`): decides *when* each memory reference
//! happens and what overlaps, from the latencies the functional simulation already computed.
//!
//! ## Model
//! Trace-driven, one pass in program order, at the granularity of memory references and the
//! instruction counts between them (an `Access` event with `instrs = n` is `n - 1` non-memory
//! instructions followed by the memory instruction; `n = 0` is a further operand of the previous
//! instruction).
//! - **Dispatch**: in order, `core.dispatch_width` instructions per cycle; instruction `i`
//!   dispatches only when instruction `i - W` has retired, W the ROB's entries or, when
//!   `core.int_prf_entries` is set and smaller, the registers for in-flight results (ROB or
//!   register file full), a load only
//!   when the load `core.lq_entries` earlier has retired (LQ full), a store only when the store
//!   `core.sq_entries` earlier has drained from the store buffer (SQ full).
//! - **Issue**: a memory instruction issues when dispatched and when the reference its address
//!   depends on (the event's `dep` distance) has completed. Non-memory instructions complete one
//!   cycle after dispatch.
//! - **Translation**: an L1 TLB hit costs nothing; an L2 TLB hit its latency; a miss the L2
//!   lookup, then a walk of the design's latency on one of `core.page_walkers` walkers, waiting
//!   when all are busy (granted as `core.resource_grant` says, below). A reference to a page whose walk is still in
//!   flight (it hit the TLB entry that walk will fill) waits for that walk (merging).
//! - **Data**: after translation, the access with the latency the cache hierarchy returned.
//!   A miss beyond L1D holds one MSHR at every level it passes (`core.l1d_mshrs`,
//!   `core.l2_mshrs`, `core.llc_mshrs`) for its whole latency and waits for a free one; an L1D
//!   hit to a line whose fill is still in flight waits for that fill (merging).
//! - **Retire**: in order, `core.retire_width` per cycle, an instruction no earlier than it
//!   completed. A load completes with its data; a store completes when translated (it needs its
//!   translation before retiring), then drains from the store buffer (the SQ entry) in order once
//!   retired and once its line is owned (the RFO is issued when the store executes).
//!
//! Resources (walkers, MSHRs) are granted in program order to the earliest free unit
//! (`core.resource_grant = "program_order"`, monotone in resources), to the earliest idle
//! interval (`"idle_gaps"`), or in the time order of the requests (`"time_order"`, as
//! hardware; the one validated against ChampSim); the last two are not monotone (see
//! [`ResourceGrant`]), and the
//! functional state (TLBs, caches, page tables, DRAM row buffers) is updated in program order by
//! the engine, exactly as under `simple`: the model changes no counter except `timing.*`.
//!
//! ## Approximations
//! - The register file is a second window over the same instructions: every instruction is
//!   counted as writing one register (stores, branches and NOPs too), so with
//!   `core.int_prf_entries` set the window is simply the smaller of the two.
//! - ROB occupancy is checked at the first instruction of each gap and at the memory
//!   instruction; the non-memory instructions in between dispatch at the full width.
//! - No wrong-path execution, branch mispredictions, instruction-fetch stalls beyond an `IFetch`
//!   reference's latency, functional-unit or port limits, or load-store forwarding.
//! - Cache, TLB and the idle DRAM model's row buffers change in program order, not issue
//!   order; latencies are those of the serial lookups of `mem`. Under the queued DRAM model
//!   (`memory.rs`) a walk's page-table reads take MSHRs below the walk's entry level and every
//!   DRAM access is timed at its request by the shared controller; under the idle model a walk's
//!   reads take no MSHRs and DRAM has no queues.
//!
//! ## References
//! Skylake-SP defaults: Intel 64 and IA-32 Architectures Optimization Reference Manual
//! (order 248966, Skylake server microarchitecture section: 224-entry ROB, 72-entry load buffer,
//! 56-entry store buffer, 4-wide allocation and retirement, two page-miss handlers,
//! 10 L1D fill buffers, 16-entry L2 superqueue).
//!
//! ## Parts
//! The model is one type, [`OooCore`], whose methods are spread over files by concern; the
//! types they share sit in files below them. This file only re-exports (every path
//! `crate::timing::ooo::*` is kept).
//! - `config.rs`: [`CoreConfig`] (`[core]`), [`ResourceGrant`] and [`Dependences`], defaults and
//!   checks.
//! - `core_ref.rs`: [`CoreRef`], what the engine tells the core about one reference.
//! - `base.rs`: the NaN-free max/min of times and the fixed ring of the last values.
//! - `pools.rs`: walker and MSHR pools (4-ary heap of free times; idle intervals) and the
//!   in-flight tables that merge walks and fills.
//! - `memory.rs`: the memory system under load (queued DRAM, MSHRs taken by walks): timing a
//!   walk's reads and a data miss at their request times.
//! - `dram_link.rs`: what that needs below `OooCore`: the shared controller's handle, the
//!   events of the references not yet granted, the memory system's counters.
//! - `time_order.rs`: the state of `time_order` (pending references' records, request queue).
//! - `state.rs`: [`OooCore`]'s fields, construction, and what the engine reads (cycles, clock,
//!   stats, the settled core).
//! - `batch.rs`: taking references and accounting them in batches.
//! - `grants.rs`: scheduling one reference and granting its walker and MSHRs, under each
//!   scheme.
//! - `rob.rs`: retirement, the ROB's ring of retirement times, in-order retirement under
//!   `time_order`.
//!
//! Which may call which: the five files of `impl OooCore` (`state.rs`, `batch.rs`,
//! `grants.rs`, `rob.rs`, `memory.rs`) call each other's methods and name the types below them; those
//! (`time_order.rs`, then `dram_link.rs`, `pools.rs`, then `base.rs`, `config.rs`, `core_ref.rs`) never name
//! [`OooCore`]. Contract of the whole: references in program order in, cycles and `timing.*`
//! figures out; nothing else of the simulation changes. This is the hot path: the `#[inline]`
//! attributes, the field layout and the signatures are measured choices (docs/timing.md,
//! "Speed").

mod base;
mod batch;
mod config;
mod core_ref;
mod dram_link;
mod grants;
mod memory;
mod pools;
mod rob;
mod state;
mod time_order;

pub use config::{CoreConfig, Dependences, ResourceGrant};
pub use core_ref::CoreRef;
pub use dram_link::DramHandle;
pub use state::OooCore;

#[cfg(test)]
mod tests;
