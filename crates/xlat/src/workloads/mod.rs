//! Built-in workload generators: seeded, parameterized by footprint and length, each issuing
//! mmap / munmap / brk the way a real program's allocator would (see [`heap`]).
//!
//! Contract: a generator is deterministic in (config, refs, seed); it emits at most `refs`
//! `Access` events (exactly `refs` unless the program ends first: none here does, they loop);
//! its memory use depends on the footprint, never on `refs`.
//!
//! | workload | what runs | per operation |
//! |---|---|---|
//! | `gups` | HPCC RandomAccess on a table of u64 | load + store of a random entry (5 instr) |
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
//! MADV_HUGEPAGE, false).
//!
//! Approximations: instruction counts are per-loop constants, not measured; graph construction
//! and table loading are not simulated beyond the first-touch stores; xsbench uses uniform energy
//! grids (so the index grid is implied) and 68 nuclides in 12 materials as XSBench's "small".

mod apps;
pub mod heap;
pub mod implicit;
mod kernels;
mod programs;

use crate::trace::{AccessKind, Event, EventSource, SourceError};
use heap::AddressSpace;
use serde::{Deserialize, Serialize};

/// Workload generator settings.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadConfig {
    /// Generator name (see `xlat workloads`).
    pub name: String,
    /// Bytes of data the workload's main structures occupy.
    pub footprint: u64,
    /// Average degree of the generated graph (bfs, pagerank).
    pub degree: u32,
    /// Zipf skew of key popularity (kv); 0 = uniform.
    pub zipf_theta: f64,
    /// Share of gets among kv operations (the rest are sets).
    pub get_ratio: f64,
    /// Mark every mmap'ed array MADV_HUGEPAGE.
    pub madvise_hugepage: bool,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            name: "gups".into(),
            footprint: 1 << 30,
            degree: 16,
            zipf_theta: 0.99,
            get_ratio: 0.95,
            madvise_hugepage: false,
        }
    }
}

impl WorkloadConfig {
    /// The workloads named: `name` is one workload or a comma-separated list (a
    /// multi-programmed run: one process per name, see `sim.cores`).
    pub fn names(&self) -> Vec<&str> {
        self.name.split(',').map(str::trim).collect()
    }

    /// Check the name and ranges.
    pub fn validate(&self) -> Result<(), String> {
        for name in self.names() {
            if !WORKLOADS.iter().any(|(n, _)| *n == name) {
                let names: Vec<&str> = WORKLOADS.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "workload.name: unknown workload '{}'{}; built-in workloads: {}",
                    name,
                    crate::suggest::closest(name, names.iter().copied())
                        .map(|c| format!(" (did you mean '{c}'?)"))
                        .unwrap_or_default(),
                    names.join(", ")
                ));
            }
        }
        if self.footprint < 64 << 10 {
            return Err(format!(
                "workload.footprint must be at least 64KiB, got {}",
                self.footprint
            ));
        }
        if self.footprint > 1 << 40 {
            return Err(format!(
                "workload.footprint must be at most 1TiB (the limit of the built-in workloads), \
                 got {}",
                crate::addr::format_bytes(self.footprint)
            ));
        }
        if !(1..=1024).contains(&self.degree) {
            return Err(format!(
                "workload.degree must be in 1..=1024, got {}",
                self.degree
            ));
        }
        if !(0.0..1.0).contains(&self.zipf_theta) {
            return Err(format!(
                "workload.zipf_theta must be in [0, 1), got {}",
                self.zipf_theta
            ));
        }
        if !(0.0..=1.0).contains(&self.get_ratio) {
            return Err(format!(
                "workload.get_ratio must be in [0, 1], got {}",
                self.get_ratio
            ));
        }
        Ok(())
    }
}

/// Registered workloads: name and one-line description.
pub const WORKLOADS: &[(&str, &str)] = &[
    (
        "gups",
        "HPCC RandomAccess: random read-modify-write updates of a large table",
    ),
    ("stream", "STREAM triad over three arrays (sequential)"),
    (
        "pointer_chase",
        "dependent loads along one random cycle of 64-byte nodes",
    ),
    (
        "bfs",
        "top-down breadth-first search on an RMAT (Graph500) graph in CSR",
    ),
    (
        "pagerank",
        "pull-style PageRank on an RMAT (Graph500) graph in CSR",
    ),
    (
        "kv",
        "key-value store: hash table with zipfian gets and sets",
    ),
    ("xsbench", "XSBench-like Monte Carlo cross-section lookups"),
    (
        "dc",
        "GraphBIG degree centrality: in- and out-degrees of an RMAT graph in CSR",
    ),
    (
        "sysbench",
        "SysBench memory test, random int writes over one buffer",
    ),
    (
        "dlrm",
        "DLRM SparseLengthsSum: pooled lookups of 256-byte rows in 8 embedding tables",
    ),
    ("btree", "point lookups in a bulk-loaded in-memory B+tree"),
    (
        "hashjoin",
        "no-partitioning hash join (build R, probe with S) of two relations",
    ),
    (
        "cc",
        "GraphBIG connected components by label propagation on an RMAT graph in CSR",
    ),
    (
        "gc",
        "GraphBIG greedy graph colouring on an RMAT graph in CSR",
    ),
    (
        "tc",
        "GraphBIG/GAP ordered triangle counting (adjacency-list merges) on an RMAT graph",
    ),
    (
        "sssp",
        "GraphBIG/GAP single-source shortest paths (frontier Bellman-Ford) on a weighted RMAT graph",
    ),
    (
        "dfs",
        "GraphBIG depth-first search (explicit stack) on an RMAT graph in CSR",
    ),
    (
        "kmer",
        "GenomicsBench k-mer counting: a genome stream into a linear-probing hash table",
    ),
    (
        "memcached",
        "memcached-like store: slab classes, LRU links, chained hash table, zipfian gets and sets",
    ),
    (
        "bc",
        "GraphBIG betweenness centrality (Brandes: BFS counting shortest paths, then dependency accumulation)",
    ),
    (
        "svm",
        "liblinear-like linear SVM training: dual coordinate descent over a sparse data matrix",
    ),
    (
        "canneal",
        "PARSEC canneal: random element swaps in a netlist, loading both elements' fan-in/out locations",
    ),
    (
        "streamcluster",
        "PARSEC streamcluster: pgain sweeps of point-to-candidate-centre distances over all points",
    ),
    (
        "mummer",
        "MUMmer4-like maximal matches: suffix-array search and suffix links in a reference index",
    ),
];

/// One simulated program: `setup` allocates and initializes, `step` performs one operation.
///
/// Contract: both push events in program order; `step` pushes only `Access` events (its
/// system calls go through the address space, and the driver puts them first), at least one
/// every call, and never ends.
pub(crate) trait Program: Send {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst);
    fn step(&mut self, mem: &mut AddressSpace, q: &mut Vec<Event>);
    /// Host bytes the program holds: every container it will ever fill is allocated by its
    /// constructor (sized by the footprint, never by the run's length), so this is exact from
    /// construction on and [`create`] can refuse a run before it starts.
    fn host_bytes(&self) -> u64;
}

/// Most host memory a generator may hold (its state, not the simulator's): a run whose
/// generator would need more is refused up front.
pub const HOST_BYTES_LIMIT: u64 = 2 << 30;

/// What a program's setup produces: events in program order, with its first-touch runs kept
/// as ranges and expanded only as the engine fetches them. (A 1 GiB footprint is 262,144 first
/// touches: materialized, they took 8 MiB and several milliseconds of every run before the
/// engine could simulate the first of them.)
#[derive(Default)]
pub(crate) struct Burst {
    /// Events, first touches excluded.
    pub events: Vec<Event>,
    /// First-touch runs: (index in `events` the run comes before, start address, end address).
    touches: Vec<(usize, u64, u64)>,
}

/// Expands a [`Burst`] into events, in order.
struct BurstCursor {
    burst: Burst,
    /// Next event of `burst.events`.
    event: usize,
    /// Current first-touch run, and the next address it touches.
    run: usize,
    next_va: u64,
}

impl BurstCursor {
    fn new(burst: Burst) -> BurstCursor {
        let next_va = burst.touches.first().map_or(0, |t| t.1);
        BurstCursor {
            burst,
            event: 0,
            run: 0,
            next_va,
        }
    }

    /// Append up to `max` events to `out`, stopping before a reference beyond `*refs_left`
    /// (then the burst is over: nothing after it is ever handed out) and counting the
    /// references handed out off `*refs_left`. Returns whether the burst has ended.
    fn expand(&mut self, out: &mut Vec<Event>, max: usize, refs_left: &mut u64) -> bool {
        let b = &self.burst;
        let mut room = max;
        while room > 0 {
            match b.touches.get(self.run) {
                Some(&(at, _, end)) if at == self.event => {
                    // A run of first touches: one store per 4 KiB page.
                    let n = end
                        .div_ceil(4096)
                        .saturating_sub(self.next_va / 4096)
                        .min(room as u64)
                        .min(*refs_left);
                    if n == 0 {
                        self.event = b.events.len();
                        self.run = b.touches.len();
                        return true;
                    }
                    let mut va = self.next_va;
                    for _ in 0..n {
                        store(out, va, 8, 2);
                        va = (va & !4095) + 4096;
                    }
                    self.next_va = va;
                    room -= n as usize;
                    *refs_left -= n;
                    if va >= end {
                        self.run += 1;
                        self.next_va = b.touches.get(self.run).map_or(0, |t| t.1);
                    }
                }
                _ => {
                    let Some(e) = b.events.get(self.event) else {
                        return true;
                    };
                    if matches!(e, Event::Access { .. }) {
                        if *refs_left == 0 {
                            self.event = b.events.len();
                            self.run = b.touches.len();
                            return true;
                        }
                        *refs_left -= 1;
                    }
                    out.push(*e);
                    self.event += 1;
                    room -= 1;
                }
            }
        }
        self.event == b.events.len() && self.run == b.touches.len()
    }
}

/// Push a load whose address does not depend on an earlier load.
#[inline]
pub(crate) fn load(q: &mut Vec<Event>, va: u64, size: u8, instrs: u32) {
    load_after(q, va, size, instrs, 0);
}

/// Push a load whose address depends on the value loaded `dep` accesses back (0 = none).
#[inline]
pub(crate) fn load_after(q: &mut Vec<Event>, va: u64, size: u8, instrs: u32, dep: u16) {
    q.push(Event::Access {
        kind: AccessKind::Load,
        va: crate::addr::Vaddr(va),
        size,
        instrs,
        dep,
    });
}

/// Push a store whose address does not depend on an earlier load.
#[inline]
pub(crate) fn store(q: &mut Vec<Event>, va: u64, size: u8, instrs: u32) {
    store_after(q, va, size, instrs, 0);
}

/// Push a store whose address depends on the value loaded `dep` accesses back (0 = none).
#[inline]
pub(crate) fn store_after(q: &mut Vec<Event>, va: u64, size: u8, instrs: u32, dep: u16) {
    q.push(Event::Access {
        kind: AccessKind::Store,
        va: crate::addr::Vaddr(va),
        size,
        instrs,
        dep,
    });
}

/// One store per 4 KiB page of `[addr, addr + len)` (first touch by an init loop), after the
/// events pushed so far.
pub(crate) fn touch_pages(q: &mut Burst, addr: u64, len: u64) {
    if len > 0 {
        q.touches.push((q.events.len(), addr, addr + len));
    }
}

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
}

/// Build the generator named in `cfg`.
pub fn create(cfg: &WorkloadConfig, refs: u64, seed: u64) -> Result<Box<dyn EventSource>, String> {
    cfg.validate()?;
    let mem = AddressSpace::new(cfg.madvise_hugepage);
    macro_rules! driver {
        ($name:literal, $p:expr) => {{
            let program = $p;
            let host = program.host_bytes();
            if host > HOST_BYTES_LIMIT {
                return Err(format!(
                    "workload '{}' at workload.footprint = {} would hold {} of host memory, more \
                     than the generators' limit of {}; lower workload.footprint",
                    $name,
                    crate::addr::format_bytes(cfg.footprint),
                    crate::addr::format_bytes(host),
                    crate::addr::format_bytes(HOST_BYTES_LIMIT)
                ));
            }
            Box::new(Driver {
                name: $name,
                program,
                mem,
                setup: None,
                setup_done: false,
                q: Vec::new(),
                pos: 0,
                refs_left: refs,
            })
        }};
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
