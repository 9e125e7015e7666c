//! The graph workloads of the first table (`bfs`, `pagerank`, `dc`) and the graph machinery
//! they share with `kernels.rs`: the CSR layout over the implicit RMAT graph, graph sizing by
//! footprint, search sources and the reset sweeps between searches.
//!
//! Calls `super::program` (the `Program` trait and event helpers), `super::implicit` (the
//! graph), `super::heap`, `super::config` and `crate::rng`; called by the registry
//! (`workloads/mod.rs`, through `programs`) and by `kernels.rs`.

use super::config::WorkloadConfig;
use super::heap::AddressSpace;
use super::implicit::{Bitmap, ImplicitGraph};
use super::program::{back_to, load, load_after, store, store_after, touch_pages, Burst, Program};
use crate::rng::Rng;
use crate::trace::Event;

/// Lines a reset between searches clears per step.
const RESET_LINES_PER_STEP: u64 = 4096;

/// One step of the memset that resets a per-vertex array between searches: a 64-byte store per
/// line of `[at, end)`, at most `RESET_LINES_PER_STEP` lines. Returns where the next step goes on
/// (`None`: the array is clear).
pub(super) fn reset_sweep(q: &mut Vec<Event>, at: u64, end: u64) -> Option<u64> {
    let stop = end.min(at + RESET_LINES_PER_STEP * 64);
    let mut a = at;
    while a < stop {
        store(q, a, 64, 1);
        a += 64;
    }
    (stop < end).then_some(stop)
}

/// A random search source with edges (Graph500 skips isolated roots): up to 65 uniform draws,
/// the last kept whatever its degree.
pub(super) fn random_source(g: &ImplicitGraph, rng: &mut Rng) -> u64 {
    let n = g.vertices();
    let mut src = rng.below(n);
    for _ in 0..64 {
        if g.degree(src) > 0 {
            break;
        }
        src = rng.below(n);
    }
    src
}

// ---------------------------------------------------------------------------------------------
// graphs

/// Edges a graph kernel handles per step at most (a hub's adjacency list, millions of edges at
/// 64 GiB, is spread over several steps so that one step's events stay small).
pub(super) const EDGE_CHUNK: u64 = 256;

/// Simulated addresses of the CSR arrays: `offsets` (u64 per vertex, plus one) and
/// `neighbours` (u32 vertex id per edge), as GraphBIG's and GAP's CSR.
#[derive(Clone, Copy, Default)]
pub(super) struct CsrAddrs {
    pub(super) offsets: u64,
    pub(super) neighbours: u64,
}

pub(super) fn alloc_csr(g: &ImplicitGraph, mem: &mut AddressSpace, q: &mut Burst) -> CsrAddrs {
    let ob = (g.vertices() + 1) * 8;
    let nb = (g.edges() * 4).max(4);
    let a = CsrAddrs {
        offsets: mem.alloc(ob),
        neighbours: mem.alloc(nb),
    };
    touch_pages(q, a.offsets, ob);
    touch_pages(q, a.neighbours, nb);
    a
}

/// Vertices for a graph of about `footprint` bytes: offsets (8 B) + neighbours (4 B x degree)
/// + `per_vertex_eighths` / 8 bytes of algorithm arrays per vertex.
pub(crate) fn graph_vertices(cfg: &WorkloadConfig, per_vertex_eighths: u64) -> u64 {
    (cfg.footprint as u128 * 8 / (8 * (8 + 4 * cfg.degree as u128) + per_vertex_eighths as u128))
        .max(16) as u64
}

/// The graph of a graph workload, its index allocated (computed at setup).
pub(super) fn graph(
    cfg: &WorkloadConfig,
    per_vertex_eighths: u64,
    seed: u64,
) -> Result<ImplicitGraph, String> {
    let n = graph_vertices(cfg, per_vertex_eighths);
    ImplicitGraph::new(n, cfg.degree, seed).map_err(|e| {
        format!(
            "workload '{}' at workload.footprint = {}: {e}",
            cfg.name,
            crate::addr::format_bytes(cfg.footprint)
        )
    })
}

/// Top-down BFS with a bounded frontier queue: each level's newly visited vertices are appended
/// to the next queue while it has room (`n / 64` entries) and set in the next level's frontier
/// bitmap beyond that; a level processes its queue in discovery order, then scans its bitmap in
/// id order (clearing it), as Ligra's edgeMap switches between a sparse and a dense frontier.
/// A vertex is visited when its parent entry is set (GraphBIG's and Graph500's `parent` array);
/// when a search ends, a new one starts from a random vertex with edges after resetting `parent`.
pub(crate) struct Bfs {
    g: ImplicitGraph,
    a: CsrAddrs,
    parent_addr: u64,
    queue_addr: [u64; 2],
    bitmap_addr: [u64; 2],
    /// Host mirror of "parent is set".
    visited: Bitmap,
    /// Current and next frontier queues.
    queue: [Vec<u32>; 2],
    queue_cap: usize,
    /// Current and next frontier overflow bitmaps, and whether each has any vertex.
    overflow: [Bitmap; 2],
    overflowed: [bool; 2],
    /// Position in the current queue.
    qi: usize,
    /// Next word of the current overflow bitmap to scan, and the unprocessed bits of the last.
    word: u64,
    word_bits: u64,
    /// Vertex whose edges are being handled: next edge and end.
    edges_left: Option<(u64, u64, u64)>,
    /// Next `parent` byte the reset between searches clears (`None`: no reset under way).
    resetting: Option<u64>,
    rng: Rng,
}

/// Per-vertex bytes of BFS's own arrays, in eighths: parent (4 B), two queues of n/64 u32
/// entries (1/8 B), two bitmaps (1/4 B).
const BFS_EIGHTHS: u64 = 32 + 1 + 2;

impl Bfs {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Result<Bfs, String> {
        let g = graph(cfg, BFS_EIGHTHS, seed)?;
        let n = g.vertices();
        let queue_cap = (n / 64).max(16) as usize;
        Ok(Bfs {
            a: CsrAddrs::default(),
            parent_addr: 0,
            queue_addr: [0; 2],
            bitmap_addr: [0; 2],
            visited: Bitmap::new(n),
            queue: [Vec::with_capacity(queue_cap), Vec::with_capacity(queue_cap)],
            queue_cap,
            overflow: [Bitmap::new(n), Bitmap::new(n)],
            overflowed: [false; 2],
            qi: 0,
            word: 0,
            word_bits: 0,
            edges_left: None,
            resetting: None,
            rng: Rng::new(seed, 5),
            g,
        })
    }

    /// Pick a source with edges (Graph500 skips isolated roots), mark it, queue it.
    fn start_search(&mut self, q: &mut Vec<Event>) {
        let src = random_source(&self.g, &mut self.rng);
        self.visited.insert(src);
        store(q, self.parent_addr + src * 4, 4, 2);
        self.queue[0].clear();
        self.queue[0].push(src as u32);
        store(q, self.queue_addr[0], 4, 2);
        self.qi = 0;
    }

    /// Load `u`'s CSR offsets (their address depends on the access `dep` back) and start on its
    /// edges.
    fn visit(&mut self, u: u64, dep: u16, q: &mut Vec<Event>) {
        let offsets_at = q.len();
        load_after(q, self.a.offsets + u * 8, 8, 2, dep);
        load_after(
            q,
            self.a.offsets + (u + 1) * 8,
            8,
            1,
            if dep > 0 { dep + 1 } else { 0 },
        );
        let lo = self.g.first_edge(u);
        self.edges(u, lo, lo + self.g.degree(u), Some(offsets_at), q);
    }

    /// Edges `e..hi` of `u` (at most `EDGE_CHUNK` of them; the rest wait for the next step):
    /// each neighbour's parent check, and for a new one its parent store and frontier entry.
    fn edges(&mut self, u: u64, e: u64, hi: u64, offsets_at: Option<usize>, q: &mut Vec<Event>) {
        let end = hi.min(e + EDGE_CHUNK);
        for e in e..end {
            let v = self.g.target(e);
            let dep = offsets_at.map_or(0, |at| back_to(q, at));
            let neighbour_at = q.len();
            load_after(q, self.a.neighbours + e * 4, 4, 2, dep);
            load_after(q, self.parent_addr + v * 4, 4, 3, 1);
            if self.visited.insert(v) {
                store_after(q, self.parent_addr + v * 4, 4, 1, 2);
                if self.queue[1].len() < self.queue_cap {
                    store(q, self.queue_addr[1] + self.queue[1].len() as u64 * 4, 4, 2);
                    self.queue[1].push(v as u32);
                } else {
                    let word = self.bitmap_addr[1] + v / 64 * 8;
                    load_after(q, word, 8, 2, back_to(q, neighbour_at));
                    store_after(q, word, 8, 1, 1);
                    self.overflow[1].insert(v);
                    self.overflowed[1] = true;
                }
            }
        }
        self.edges_left = (end < hi).then_some((u, end, hi));
    }
}

impl Program for Bfs {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        self.g.build();
        let n = self.g.vertices();
        self.a = alloc_csr(&self.g, mem, q);
        self.parent_addr = mem.alloc(n * 4);
        let qb = self.queue_cap as u64 * 4;
        self.queue_addr = [mem.alloc(qb), mem.alloc(qb)];
        let bb = self.visited.words() * 8;
        self.bitmap_addr = [mem.alloc(bb), mem.alloc(bb)];
        // The first touch initializes parent[] (to "none") and the frontier arrays.
        touch_pages(q, self.parent_addr, n * 4);
        for (base, bytes) in [
            (self.queue_addr[0], qb),
            (self.queue_addr[1], qb),
            (self.bitmap_addr[0], bb),
            (self.bitmap_addr[1], bb),
        ] {
            touch_pages(q, base, bytes);
        }
        self.start_search(&mut q.events);
    }

    /// One frontier vertex (or the next chunk of a long adjacency list, one word of the
    /// frontier bitmap, or a slice of the reset between searches).
    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        if let Some((u, e, hi)) = self.edges_left {
            self.edges(u, e, hi, None, q);
            return;
        }
        if let Some(at) = self.resetting {
            // memset(parent, 0xff).
            self.resetting = reset_sweep(q, at, self.parent_addr + self.g.vertices() * 4);
            if self.resetting.is_none() {
                self.start_search(q);
            }
            return;
        }
        loop {
            if self.qi < self.queue[0].len() {
                let u = self.queue[0][self.qi] as u64;
                load(q, self.queue_addr[0] + self.qi as u64 * 4, 4, 2);
                self.qi += 1;
                self.visit(u, 1, q);
                return;
            }
            if self.overflowed[0] {
                if self.word_bits != 0 {
                    let u = (self.word - 1) * 64 + self.word_bits.trailing_zeros() as u64;
                    self.word_bits &= self.word_bits - 1;
                    self.visit(u, 0, q);
                    return;
                }
                if self.word < self.overflow[0].words() {
                    // Read the next frontier word and clear it for the level after next.
                    let w = self.word;
                    load(q, self.bitmap_addr[0] + w * 8, 8, 2);
                    store(q, self.bitmap_addr[0] + w * 8, 8, 1);
                    self.word_bits = self.overflow[0].word(w);
                    self.overflow[0].clear_word(w);
                    self.word += 1;
                    return;
                }
                self.overflowed[0] = false;
            }
            // The level is over.
            if self.queue[1].is_empty() && !self.overflowed[1] {
                self.visited.clear();
                self.resetting = Some(self.parent_addr);
                self.step(_mem, q);
                return;
            }
            self.queue.swap(0, 1);
            self.queue[1].clear();
            self.overflow.swap(0, 1);
            self.overflowed.swap(0, 1);
            self.queue_addr.swap(0, 1);
            self.bitmap_addr.swap(0, 1);
            self.qi = 0;
            self.word = 0;
            self.word_bits = 0;
        }
    }

    fn host_bytes(&self) -> u64 {
        self.g.host_bytes()
            + self.visited.host_bytes()
            + self.overflow.iter().map(Bitmap::host_bytes).sum::<u64>()
            + self
                .queue
                .iter()
                .map(|v| v.capacity() as u64 * 4)
                .sum::<u64>()
            + std::mem::size_of::<Self>() as u64
    }
}

/// Pull-style PageRank: `next[v] = (1-d)/n + d * sum(contrib[u] for u in in(v))`, then
/// `contrib[v] = next[v] / degree(v)` (GAP's `pr`, GraphBIG's pagerank in pull form); the CSR
/// lists are read as in-neighbours.
pub(crate) struct PageRank {
    g: ImplicitGraph,
    a: CsrAddrs,
    contrib_addr: u64,
    next_addr: u64,
    v: u64,
    /// false: gather phase over all vertices; true: contribution update phase.
    updating: bool,
    /// Gather of `v` under way: next edge and end.
    edges_left: Option<(u64, u64)>,
}

impl PageRank {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Result<PageRank, String> {
        Ok(PageRank {
            g: graph(cfg, 64, seed)?,
            a: CsrAddrs::default(),
            contrib_addr: 0,
            next_addr: 0,
            v: 0,
            updating: false,
            edges_left: None,
        })
    }

    /// Sum the contributions of edges `e..hi` of `v` (at most `EDGE_CHUNK`); store `next[v]`
    /// and move on when they are all summed.
    fn gather(&mut self, e: u64, hi: u64, offsets_at: Option<usize>, q: &mut Vec<Event>) {
        let end = hi.min(e + EDGE_CHUNK);
        for e in e..end {
            let u = self.g.target(e);
            let dep = offsets_at.map_or(0, |at| back_to(q, at));
            load_after(q, self.a.neighbours + e * 4, 4, 2, dep);
            load_after(q, self.contrib_addr + u * 4, 4, 2, 1);
        }
        if end < hi {
            self.edges_left = Some((end, hi));
            return;
        }
        self.edges_left = None;
        store(q, self.next_addr + self.v * 4, 4, 4);
        self.advance();
    }

    fn advance(&mut self) {
        self.v += 1;
        if self.v == self.g.vertices() {
            self.v = 0;
            self.updating = !self.updating;
        }
    }
}

impl Program for PageRank {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        self.g.build();
        let n = self.g.vertices();
        self.a = alloc_csr(&self.g, mem, q);
        self.contrib_addr = mem.alloc(n * 4);
        self.next_addr = mem.alloc(n * 4);
        touch_pages(q, self.contrib_addr, n * 4);
        touch_pages(q, self.next_addr, n * 4);
    }

    /// One vertex of the current phase (or the next chunk of a long in-neighbour list).
    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        if let Some((e, hi)) = self.edges_left {
            self.gather(e, hi, None, q);
            return;
        }
        let v = self.v;
        if self.updating {
            load(q, self.next_addr + v * 4, 4, 2);
            load(q, self.a.offsets + v * 8, 8, 1);
            load(q, self.a.offsets + (v + 1) * 8, 8, 1);
            store(q, self.contrib_addr + v * 4, 4, 4);
            self.advance();
        } else {
            // Dependences: the neighbour list on the offsets, each contribution on the
            // neighbour id.
            let offsets_at = q.len();
            load(q, self.a.offsets + v * 8, 8, 2);
            load(q, self.a.offsets + (v + 1) * 8, 8, 1);
            let lo = self.g.first_edge(v);
            self.gather(lo, lo + self.g.degree(v), Some(offsets_at), q);
        }
    }

    fn host_bytes(&self) -> u64 {
        self.g.host_bytes() + std::mem::size_of::<Self>() as u64
    }
}
// ---------------------------------------------------------------------------------------------
// dc (GraphBIG degree centrality)

/// GraphBIG's degree centrality (`bench_degreeCentr`): for every vertex, its out-degree is
/// stored and every out-neighbour's in-degree is incremented; repeated. The graph is the same
/// implicit RMAT graph in CSR as bfs and pagerank (GraphBIG's openG lists are CSR here).
pub(crate) struct DegreeCentrality {
    g: ImplicitGraph,
    a: CsrAddrs,
    indeg_addr: u64,
    outdeg_addr: u64,
    v: u64,
    edges_left: Option<(u64, u64)>,
}

impl DegreeCentrality {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Result<DegreeCentrality, String> {
        Ok(DegreeCentrality {
            g: graph(cfg, 64, seed)?,
            a: CsrAddrs::default(),
            indeg_addr: 0,
            outdeg_addr: 0,
            v: 0,
            edges_left: None,
        })
    }

    fn edges(&mut self, e: u64, hi: u64, offsets_at: Option<usize>, q: &mut Vec<Event>) {
        let end = hi.min(e + EDGE_CHUNK);
        for e in e..end {
            let u = self.g.target(e);
            let dep = offsets_at.map_or(0, |at| back_to(q, at));
            load_after(q, self.a.neighbours + e * 4, 4, 2, dep);
            load_after(q, self.indeg_addr + u * 4, 4, 2, 1);
            store_after(q, self.indeg_addr + u * 4, 4, 1, 2);
        }
        if end < hi {
            self.edges_left = Some((end, hi));
            return;
        }
        self.edges_left = None;
        self.v += 1;
        if self.v == self.g.vertices() {
            self.v = 0;
        }
    }
}

impl Program for DegreeCentrality {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        self.g.build();
        let n = self.g.vertices();
        self.a = alloc_csr(&self.g, mem, q);
        self.indeg_addr = mem.alloc(n * 4);
        self.outdeg_addr = mem.alloc(n * 4);
        touch_pages(q, self.indeg_addr, n * 4);
        touch_pages(q, self.outdeg_addr, n * 4);
    }

    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        if let Some((e, hi)) = self.edges_left {
            self.edges(e, hi, None, q);
            return;
        }
        let v = self.v;
        let offsets_at = q.len();
        load(q, self.a.offsets + v * 8, 8, 2);
        load(q, self.a.offsets + (v + 1) * 8, 8, 1);
        store(q, self.outdeg_addr + v * 4, 4, 2);
        let lo = self.g.first_edge(v);
        self.edges(lo, lo + self.g.degree(v), Some(offsets_at), q);
    }

    fn host_bytes(&self) -> u64 {
        self.g.host_bytes() + std::mem::size_of::<Self>() as u64
    }
}
