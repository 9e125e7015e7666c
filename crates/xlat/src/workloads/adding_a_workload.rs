//! "Adding a workload" (docs/architecture.md, this module's parent) followed end to end with a
//! toy program: a type implementing `Program` (setup allocates through the address space and
//! first-touches its pages; each step pushes accesses), turned into an event source by
//! `drive` as `create`'s arms do, then run through the engine with the oracle checking every
//! translation. The workload's two table entries (a row of `WORKLOADS` for its name and help,
//! an arm of `create`) are data, not mechanism: they cannot be added from a test, and
//! `every_workload_is_deterministic_and_emits_exactly_the_requested_references` in `tests.rs`
//! builds every row through `create`, so a row without an arm fails it.

use super::heap::AddressSpace;
use super::program::{load, store, touch_pages, Burst, Program};
use super::{drive, WorkloadConfig};
use crate::rng::Rng;
use crate::trace::{Event, EventSource};

/// Step 1 of the guide: the program. A strided sweep over one array, storing every fourth
/// element it reads (a made-up kernel: 2 references per step, 4 instructions).
struct Strided {
    bytes: u64,
    array: u64,
    at: u64,
    stride: u64,
}

impl Strided {
    fn new(cfg: &WorkloadConfig, seed: u64) -> Strided {
        // The seed picks the stride (odd, so the sweep visits every element).
        let stride = 64 * (1 + 2 * Rng::new(seed, 1).below(8));
        Strided {
            bytes: cfg.footprint / 64 * 64,
            array: 0,
            at: 0,
            stride,
        }
    }
}

impl Program for Strided {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        self.array = mem.alloc(self.bytes);
        touch_pages(q, self.array, self.bytes);
    }

    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        let va = self.array + self.at;
        load(q, va, 8, 2);
        if (self.at / self.stride).is_multiple_of(4) {
            store(q, va, 8, 2);
        } else {
            load(q, va + 8, 8, 2);
        }
        self.at = (self.at + self.stride) % self.bytes;
    }

    fn host_bytes(&self) -> u64 {
        std::mem::size_of::<Self>() as u64
    }
}

fn config(footprint: &str) -> crate::config::Config {
    let o = |k: &str, v: &str| (k.to_string(), v.to_string());
    crate::config::Config::resolve(
        None,
        &[
            o("sim.design", "radix"),
            o("sim.refs", "30000"),
            o("workload.footprint", footprint),
            o("os.phys_mem_bytes", "1GiB"),
            // The toy's first touches are part of what is checked: measure from the start.
            o("sim.warmup_refs", "0"),
        ],
    )
    .unwrap()
}

fn all_events(mut source: Box<dyn EventSource>) -> Vec<Event> {
    let mut out = Vec::new();
    while source.fill(&mut out, 1000).unwrap() > 0 {}
    out
}

#[test]
fn the_toy_program_keeps_the_generator_contract() {
    let cfg = config("8MiB");
    let make = || {
        drive(
            "strided",
            Strided::new(&cfg.workload, 7),
            &cfg.workload,
            30_000,
        )
        .unwrap()
    };
    let events = all_events(make());
    let refs = events
        .iter()
        .filter(|e| matches!(e, Event::Access { .. }))
        .count();
    assert_eq!(
        refs, 30_000,
        "exactly `refs` references: the program never ends"
    );
    assert!(
        matches!(events[0], Event::Mmap { .. }),
        "its allocation comes first"
    );
    assert_eq!(
        events,
        all_events(make()),
        "deterministic in (config, refs, seed)"
    );
    let other = drive(
        "strided",
        Strided::new(&cfg.workload, 8),
        &cfg.workload,
        30_000,
    )
    .unwrap();
    assert_ne!(events, all_events(other), "the seed matters");
}

#[test]
fn the_toy_program_runs_through_the_engine_with_every_translation_checked() {
    let cfg = config("16MiB");
    let program = Strided::new(&cfg.workload, cfg.sim.seed);
    let source = drive("strided", program, &cfg.workload, cfg.sim.simulated_refs()).unwrap();
    let record = crate::engine::run(&cfg, source).unwrap();
    assert_eq!(record["refs"], 30_000);
    assert_eq!(record["oracle"]["mismatches"], 0);
    // 16 MiB first-touched: every page faulted in (4 KiB or 2 MiB pages under THP).
    assert!(record["os"]["page_faults"].as_u64().unwrap() >= 8);
}

#[test]
fn a_program_holding_too_much_host_memory_is_refused_by_name() {
    struct Greedy;
    impl Program for Greedy {
        fn setup(&mut self, _: &mut AddressSpace, _: &mut Burst) {}
        fn step(&mut self, _: &mut AddressSpace, _: &mut Vec<Event>) {}
        fn host_bytes(&self) -> u64 {
            super::HOST_BYTES_LIMIT + 1
        }
    }
    let cfg = config("8MiB");
    let err = drive("greedy", Greedy, &cfg.workload, 10).err().unwrap();
    assert!(
        err.starts_with("workload 'greedy' at workload.footprint = 8MiB"),
        "{err}"
    );
}
