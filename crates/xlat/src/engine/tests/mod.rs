//! The engine's tests, by the part they exercise: `one_core` (the loop, the oracle, walks
//! and faults of one process on one core), `machine` (multi-core and multi-process runs),
//! `warmup` (the measured region after a warm-up) and `sampling` (sampled simulation). This
//! file holds what they share: small configurations and a source of events from a list.

mod machine;
mod one_core;
mod sampling;
mod warmup;

use super::*;
use crate::addr::Vaddr;
use crate::config::Config;
use crate::trace::{AccessKind, Event, EventSource, SourceError};
use serde_json::Value;

fn small(design: &str) -> Config {
    let o = |k: &str, v: &str| (k.to_string(), v.to_string());
    Config::resolve(
        None,
        &[
            o("sim.design", design),
            o("sim.refs", "20000"),
            o("workload.footprint", "16MiB"),
            o("os.phys_mem_bytes", "1GiB"),
            // These tests check the first-touch phase too (faults, allocations, chunking
            // across it): measure from the first reference.
            o("sim.warmup_refs", "0"),
        ],
    )
    .unwrap()
}

fn without_wall_clock(mut v: Value) -> Value {
    v.as_object_mut().unwrap().remove("sim");
    v
}

/// Events from a list (the engine's input without a trace file; `threads.rs`'s tests too).
pub(super) struct Events(pub(super) std::vec::IntoIter<Event>);

impl EventSource for Events {
    fn fill(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, SourceError> {
        let before = out.len();
        out.extend(self.0.by_ref().take(max));
        Ok(out.len() - before)
    }
    fn name(&self) -> String {
        "events".into()
    }
}

fn run_events(design: &str, events: Vec<Event>) -> Result<Value, SimError> {
    run(&small(design), Box::new(Events(events.into_iter())))
}

pub(super) fn load(va: u64, size: u8) -> Event {
    Event::Access {
        kind: AccessKind::Load,
        va: Vaddr(va),
        size,
        instrs: 1,
        dep: 0,
    }
}

const RW: u32 = crate::trace::prot::READ | crate::trace::prot::WRITE;

fn multi(design: &str, workloads: &str, extra: &[(&str, &str)]) -> Config {
    let o = |k: &str, v: &str| (k.to_string(), v.to_string());
    let mut set = vec![
        o("sim.design", design),
        o("sim.refs", "6000"),
        o("workload.name", workloads),
        o("workload.footprint", "4MiB"),
        o("os.phys_mem_bytes", "1GiB"),
        // Each process's refs are checked exactly: a warm-up's snapshot is taken when all
        // processes together reach it, so per process it is exact only without one.
        o("sim.warmup_refs", "0"),
    ];
    set.extend(extra.iter().map(|(k, v)| o(k, v)));
    Config::resolve(None, &set).unwrap()
}

fn sources(cfg: &Config) -> Vec<Box<dyn EventSource>> {
    crate::workloads::create_all(&cfg.workload, cfg.sim.simulated_refs(), cfg.sim.seed).unwrap()
}
