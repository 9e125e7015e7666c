//! # xlat — a fast, checked simulator of virtual-memory address translation
//!
//! One engine, one trace, many translation designs. Every design translates the same stream of
//! references against the same TLBs, caches, DRAM and OS memory-manager model, and every
//! translation it returns is checked against the OS model's mapping (the oracle).
//!
//! Layout: [`trace`] (event stream), [`workloads`] (built-in generators), [`os`] (memory manager),
//! [`mmu`] (TLBs), [`mem`] (caches, DRAM), [`designs`] (one folder per design, one registry row
//! each), [`timing`] (core model), [`engine`] (the loop), [`virt`] (nested translation),
//! [`config`], [`stats`].

pub mod addr;
pub mod aligned;
pub mod config;
pub mod designs;
pub mod engine;
pub mod host_alloc;
pub mod mem;
pub mod mmu;
pub mod os;
pub mod prefetch;
pub mod profiles;
pub mod recency;
pub mod rng;
pub mod sampling;
pub mod simd;
pub mod stats;
pub mod suggest;
pub mod timing;
pub mod trace;
pub mod virt;
pub mod warmup;
pub mod workloads;

pub use config::Config;
pub use engine::{run, run_workload, SimError, Simulation};
pub use stats::{
    model_version_as_of, model_version_of, ModelScope, MODEL_CHANGES, MODEL_VERSION, VERSION,
};
