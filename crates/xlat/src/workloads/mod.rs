//! Built-in workload generators: seeded, parameterized by footprint and length, each issuing
//! mmap / munmap / brk the way a real program's allocator would (see [`heap`]).
//!
//! Contract: a generator is deterministic in (config, refs, seed); it emits at most `refs`
//! `Access` events (exactly `refs` unless the program ends first: none here does, they loop);
//! its memory use depends on the footprint, never on `refs`.
//!
//! | workload | what runs | per operation |
//! |---|---|---|
//! | `gups` | HPCC RandomAccess on a table of u64 | load + store of a random entry (11 instr) |
//! | `stream` | STREAM triad `a[i] = b[i] + s*c[i]` over three arrays | 2 loads + 1 store (6 instr) |
//! | `pointer_chase` | one random cycle over 64-byte nodes (a seeded bijection's order) | 1 dependent load (3 instr) |
//! | `bfs` | top-down BFS on an implicit RMAT graph in CSR, new source when done | loads of frontier, offsets, neighbours, parent; stores of parent and next frontier (queue, or bitmap once the queue is full) |
//! | `pagerank` | pull-style PageRank iterations on the same graph | loads of offsets, neighbours, contributions; stores of ranks |
//! | `kv` | hash table (linear probing) with zipfian gets/sets over items in 1 MiB slabs | bucket loads, item load or store |
//! | `xsbench` | XSBench-like macroscopic cross-section lookups | binary search of the unionized grid, index-grid and nuclide-grid loads |
//! | `dc` | GraphBIG degree centrality on the same graph | offsets loads, out-degree store; per edge neighbour load, in-degree load + store |
//! | `sysbench` | SysBench memory, random int writes over one buffer | 1 store |
//! | `dlrm` | DLRM SparseLengthsSum over 8 tables of 256-byte rows | index load, 4 dependent line loads; pooled-row stores |
//! | `btree` | lookups in a bulk-loaded B+tree of 256-byte nodes | per level 4 binary-search loads + child-pointer load |
//! | `hashjoin` | no-partitioning hash join: build R, probe with S | tuple load, bucket loads, tuple store (build) |
//! | `cc` | label-propagation connected components on the graph (`kernels.rs`) | offsets and own label loads; per edge neighbour and label loads; label store when it changes |
//! | `gc` | greedy graph colouring on the graph | offsets loads; per edge neighbour and colour loads; colour store |
//! | `tc` | ordered triangle counting on the graph | per neighbour `v < u`: its offsets, then merged loads of both adjacency lists |
//! | `sssp` | frontier Bellman-Ford on the graph with edge weights | frontier-bitmap scan; per edge neighbour, weight, distance loads; distance store and frontier set when improved |
//! | `dfs` | depth-first search with an explicit stack on the graph | stack load, visited load + store; per edge neighbour and visited loads, push store |
//! | `kmer` | k-mer counting into a linear-probing table | base load, bucket probes, count store |
//! | `memcached` | slab classes, LRU, hash chains | bucket load, chain and item loads; value lines; LRU link stores (set) |
//! | `bc` | Brandes betweenness centrality on the graph: BFS with path counts, then dependency accumulation by level | queue, offsets, sigma loads; per edge neighbour and depth loads; new vertex: depth and queue stores; successor: sigma (+ delta) |
//! | `svm` | liblinear dual coordinate descent (`apps.rs`) | per instance: index, row pointer, scalars; per feature node load + `w` load; on update `w` load + store |
//! | `canneal` | PARSEC canneal element swaps | both elements' locations; per fan-in/out entry: pointer, its `present_loc`, its location (dependent); 2 pointer stores if accepted |
//! | `streamcluster` | PARSEC streamcluster `pgain` sweeps | point, 8 coordinate lines of the point and of the candidate centre; switch store or `lower[center_table[assign]]` update |
//! | `mummer` | MUMmer4-like MEM search in a suffix-array index | query base; binary search of `SA` (SA entry then text, dependent) or a suffix link (`SA`, `ISA`); LCP and text of the match |
//!
//! Sources of truth, data layouts and approximations: docs/workloads.md. No generator holds
//! per-element host state ([`implicit`]): footprints of 64-128 GiB run in bounded host memory,
//! and `Program::host_bytes` is checked against [`HOST_BYTES_LIMIT`] before a run.
//!
//! Every workload starts by allocating its arrays and writing one word per 4 KiB page of each
//! (its initialization loop's first touch, compressed: building or loading the data would
//! otherwise take far more references); these stores count toward `refs`.
//!
//! Configuration: `workload.name`, `workload.footprint` (bytes of the main data structures),
//! `workload.degree` (graph average degree, 16), `workload.zipf_theta` (kv, 0.99),
//! `workload.get_ratio` (kv, 0.95), `workload.madvise_hugepage` (mark large arrays
//! MADV_HUGEPAGE, false), `workload.chains` (pointer_chase: independent chases at once, 1).
//!
//! # Adding a workload
//! 1. A type implementing `program::Program` (in `programs.rs`, `kernels.rs`, `apps.rs` or a
//!    file of its own): `setup` allocates through the [`heap::AddressSpace`] (which issues the
//!    system calls) and first-touches its pages; `step` pushes one iteration's accesses;
//!    `host_bytes` is exact from construction on (all state sized by the footprint).
//! 2. A row of [`WORKLOADS`] (its name and one-line help) and an arm of [`create`] calling
//!    `drive`; the workloads' tests then run it with every other workload (determinism, exact
//!    reference counts, accesses inside live mappings, bounded host memory).
//! 3. A line in the table above and its sources in docs/workloads.md.
//!
//! `adding_a_workload.rs` (a test) follows these steps with a toy program through the engine.
//!
//! Approximations: instruction counts are per-loop constants, not measured; graph construction
//! and table loading are not simulated beyond the first-touch stores; xsbench uses uniform energy
//! grids (so the index grid is implied) and 68 nuclides in 12 materials as XSBench's "small".

mod apps;
mod config;
mod graphs;
pub mod heap;
pub mod implicit;
mod kernels;
mod program;
mod programs;

pub use config::{WorkloadConfig, WORKLOADS};

use crate::trace::{Event, EventSource, SourceError};
use heap::AddressSpace;
use program::{Burst, BurstCursor, Program};

/// Most host memory a generator may hold (its state, not the simulator's): a run whose
/// generator would need more is refused up front.
pub const HOST_BYTES_LIMIT: u64 = 2 << 30;

struct Driver<P: Program> {
    name: &'static str,
    program: P,
    mem: AddressSpace,
    /// The setup's events not handed out yet (`None` before the setup has run).
    setup: Option<BurstCursor>,
    /// Whether the setup's events have all been handed out.
    setup_done: bool,
    /// Events of a step not handed out yet (its overflow beyond `max`).
    q: Vec<Event>,
    pos: usize,
    refs_left: u64,
}

impl<P: Program> Driver<P> {
    /// Run one `step`, appending its events to `out`, system calls the step needed first.
    /// Returns the number of system calls (every other event a program pushes is an access).
    #[inline(always)]
    fn step_into(&mut self, out: &mut Vec<Event>) -> usize {
        let start = out.len();
        self.program.step(&mut self.mem, out);
        debug_assert!(
            out[start..]
                .iter()
                .all(|e| matches!(e, Event::Access { .. })),
            "a step pushed a non-access event (system calls go through the address space)"
        );
        let calls = self.mem.pending.len();
        if calls > 0 {
            out.splice(start..start, self.mem.pending.drain(..));
        }
        calls
    }

    /// Run the setup (allocations, system calls first, then its events and first touches).
    fn run_setup(&mut self) -> BurstCursor {
        let mut burst = Burst::default();
        self.program.setup(&mut self.mem, &mut burst);
        let calls = self.mem.pending.len();
        burst.events.splice(0..0, self.mem.pending.drain(..));
        for t in burst.touches.iter_mut() {
            t.0 += calls;
        }
        BurstCursor::new(burst)
    }
}

/// Cut `events[from..]` before its first reference beyond `budget`; returns the references
/// left in `events[from..]`.
fn apply_budget(events: &mut Vec<Event>, from: usize, budget: u64) -> u64 {
    if (events.len() - from) as u64 > budget {
        let mut seen = 0;
        if let Some(i) = events[from..].iter().position(|e| {
            let is_ref = matches!(e, Event::Access { .. });
            seen += is_ref as u64;
            is_ref && seen > budget
        }) {
            events.truncate(from + i);
        }
    }
    count_refs(&events[from..])
}

/// References among `events`.
fn count_refs(events: &[Event]) -> u64 {
    events
        .iter()
        .filter(|e| matches!(e, Event::Access { .. }))
        .count() as u64
}

impl<P: Program> EventSource for Driver<P> {
    fn fill(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, SourceError> {
        let start = out.len();
        // First the setup burst, expanded as it is fetched.
        if !self.setup_done {
            let mut cursor = match self.setup.take() {
                Some(c) => c,
                None => self.run_setup(),
            };
            self.setup_done = cursor.expand(out, max, &mut self.refs_left);
            if !self.setup_done {
                self.setup = Some(cursor);
            }
            if out.len() > start {
                return Ok(out.len() - start);
            }
        }
        // Then what an earlier step left over (its budget was applied when it ran).
        if self.pos < self.q.len() {
            let n = (self.q.len() - self.pos).min(max);
            out.extend_from_slice(&self.q[self.pos..self.pos + n]);
            self.pos += n;
            if self.pos == self.q.len() {
                self.q.clear();
                self.pos = 0;
            }
            return Ok(n);
        }
        // Then step the program straight into `out` (no intermediate queue to copy from).
        // While this call has produced fewer events than the reference budget, the budget
        // cannot be exceeded (an event is at most one reference), so references are counted
        // once at the end rather than after every step.
        let budget = self.refs_left;
        let mut calls = 0;
        while out.len() - start < max && ((out.len() - start) as u64) < budget {
            calls += self.step_into(out);
        }
        let refs = (out.len() - start - calls) as u64;
        self.refs_left -= if refs > budget {
            apply_budget(out, start, budget)
        } else {
            refs
        };
        // References beyond `max` were counted above; the next call hands them out.
        if out.len() - start > max {
            self.q.extend_from_slice(&out[start + max..]);
            out.truncate(start + max);
        }
        Ok(out.len() - start)
    }

    fn name(&self) -> String {
        self.name.to_string()
    }

    /// The setup's references: every workload allocates and first-touches all of its data in
    /// its setup (see this module's doc), so the first-touch phase ends with it.
    fn first_touch_refs(&mut self) -> Option<u64> {
        if self.setup_done {
            return Some(0); // already read past the setup: nothing of it is ahead
        }
        if self.setup.is_none() {
            self.setup = Some(self.run_setup());
        }
        self.setup.as_ref().map(BurstCursor::refs_ahead)
    }
}

/// The event source of `program`, built for `cfg` as workload `name`: its setup first, then its
/// steps, `refs` references in all. Refuses a program whose host memory exceeds
/// [`HOST_BYTES_LIMIT`]. Every built-in workload is one arm of [`create`] calling this.
fn drive<P: Program + 'static>(
    name: &'static str,
    program: P,
    cfg: &WorkloadConfig,
    refs: u64,
) -> Result<Box<dyn EventSource>, String> {
    let host = program.host_bytes();
    if host > HOST_BYTES_LIMIT {
        return Err(format!(
            "workload '{}' at workload.footprint = {} would hold {} of host memory, more \
             than the generators' limit of {}; lower workload.footprint",
            name,
            crate::addr::format_bytes(cfg.footprint),
            crate::addr::format_bytes(host),
            crate::addr::format_bytes(HOST_BYTES_LIMIT)
        ));
    }
    Ok(Box::new(Driver {
        name,
        program,
        mem: AddressSpace::new(cfg.madvise_hugepage),
        setup: None,
        setup_done: false,
        q: Vec::new(),
        pos: 0,
        refs_left: refs,
    }))
}

/// Build the generator named in `cfg`.
pub fn create(cfg: &WorkloadConfig, refs: u64, seed: u64) -> Result<Box<dyn EventSource>, String> {
    cfg.validate()?;
    macro_rules! driver {
        ($name:literal, $p:expr) => {
            drive($name, $p, cfg, refs)?
        };
    }
    Ok(match cfg.name.as_str() {
        "gups" => driver!("gups", programs::Gups::new(cfg, seed)),
        "stream" => driver!("stream", programs::Stream::new(cfg)),
        "pointer_chase" => driver!("pointer_chase", programs::PointerChase::new(cfg, seed)),
        "bfs" => driver!("bfs", programs::Bfs::new(cfg, seed)?),
        "pagerank" => driver!("pagerank", programs::PageRank::new(cfg, seed)?),
        "kv" => driver!("kv", programs::Kv::new(cfg, seed)),
        "xsbench" => driver!("xsbench", programs::XsBench::new(cfg, seed)),
        "dc" => driver!("dc", programs::DegreeCentrality::new(cfg, seed)?),
        "sysbench" => driver!("sysbench", programs::SysbenchMemory::new(cfg, seed)),
        "dlrm" => driver!("dlrm", programs::DlrmSls::new(cfg, seed)),
        "btree" => driver!("btree", programs::BTree::new(cfg, seed)),
        "hashjoin" => driver!("hashjoin", programs::HashJoin::new(cfg, seed)),
        "cc" => driver!(
            "cc",
            kernels::Sweep::new(cfg, seed, kernels::SweepKind::Cc)?
        ),
        "gc" => driver!(
            "gc",
            kernels::Sweep::new(cfg, seed, kernels::SweepKind::Gc)?
        ),
        "tc" => driver!("tc", kernels::TriangleCount::new(cfg, seed)?),
        "sssp" => driver!("sssp", kernels::Sssp::new(cfg, seed)?),
        "dfs" => driver!("dfs", kernels::Dfs::new(cfg, seed)?),
        "kmer" => driver!("kmer", kernels::Kmer::new(cfg, seed)),
        "memcached" => driver!("memcached", kernels::Memcached::new(cfg, seed)),
        "bc" => driver!("bc", kernels::Bc::new(cfg, seed)?),
        "svm" => driver!("svm", apps::Svm::new(cfg, seed)),
        "canneal" => driver!("canneal", apps::Canneal::new(cfg, seed)),
        "streamcluster" => driver!("streamcluster", apps::StreamCluster::new(cfg, seed)),
        "mummer" => driver!("mummer", apps::Mummer::new(cfg, seed)),
        other => return Err(format!("unknown workload '{other}'")),
    })
}

/// Refuse, before anything runs, built-in workloads whose footprints cannot fit the simulated
/// machine: their first touches would run it out of memory partway through the run. `processes`
/// share `phys_mem_bytes` of memory and `swap_bytes` of swap. (Fitting is necessary, not
/// sufficient: page tables and a fragmenter's pinned memory need room too.)
pub fn check_fits(
    cfg: &WorkloadConfig,
    phys_mem_bytes: u64,
    swap_bytes: u64,
) -> Result<(), String> {
    let processes = cfg.names().len() as u64;
    let total = cfg.footprint.saturating_mul(processes);
    if total > phys_mem_bytes.saturating_add(swap_bytes) {
        return Err(format!(
            "workload.footprint = {}{} does not fit the simulated machine's memory: \
             os.phys_mem_bytes = {} and os.swap.bytes = {}; raise os.phys_mem_bytes (the \
             host needs no such memory: the model stores only what is mapped) or lower the \
             footprint",
            crate::addr::format_bytes(cfg.footprint),
            if processes > 1 {
                format!(" x {processes} processes")
            } else {
                String::new()
            },
            crate::addr::format_bytes(phys_mem_bytes),
            crate::addr::format_bytes(swap_bytes)
        ));
    }
    Ok(())
}

/// One generator per workload of `cfg.name` (a comma-separated list gives several: a
/// multi-programmed run). Process `i`'s generator is seeded with `seed + i`, so the first is the
/// generator a single-workload run of that name would use.
pub fn create_all(
    cfg: &WorkloadConfig,
    refs: u64,
    seed: u64,
) -> Result<Vec<Box<dyn EventSource>>, String> {
    cfg.validate()?;
    cfg.names()
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let one = WorkloadConfig {
                name: name.to_string(),
                ..cfg.clone()
            };
            create(&one, refs, seed.wrapping_add(i as u64))
        })
        .collect()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod adding_a_workload;
