//! The programs behind the built-in workloads (see the table in the module doc of `workloads`).

use super::heap::AddressSpace;
use super::{load, load_after, store, store_after, touch_pages, Burst, Program, WorkloadConfig};
use crate::rng::Rng;
use crate::trace::{AccessKind, Event};

/// Dependence distance from the access about to be pushed onto `q` back to the one at index
/// `at` of `q`; 0 (none) when further back than a `u16` reaches, where no ROB can hold both.
#[inline]
fn back_to(q: &[Event], at: usize) -> u16 {
    u16::try_from(q.len() - at).unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// gups

/// HPCC RandomAccess: `table[r] ^= r` for random `r`.
pub(crate) struct Gups {
    bytes: u64,
    table: u64,
    rng: Rng,
}

impl Gups {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Gups {
        Gups {
            bytes: cfg.footprint / 8 * 8,
            table: 0,
            rng: Rng::new(seed, 1),
        }
    }
}

impl Program for Gups {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        self.table = mem.alloc(self.bytes);
        touch_pages(q, self.table, self.bytes);
    }
    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        let va = self.table + self.rng.below(self.bytes / 8) * 8;
        load(q, va, 8, 3);
        store(q, va, 8, 2);
    }
}

// ---------------------------------------------------------------------------------------------
// stream

/// STREAM triad, repeated passes.
pub(crate) struct Stream {
    elems: u64,
    arrays: [u64; 3],
    i: u64,
}

impl Stream {
    pub fn new(cfg: &WorkloadConfig) -> Stream {
        Stream {
            elems: (cfg.footprint / 3 / 8).max(1),
            arrays: [0; 3],
            i: 0,
        }
    }
}

impl Program for Stream {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        for a in self.arrays.iter_mut() {
            *a = mem.alloc(self.elems * 8);
            touch_pages(q, *a, self.elems * 8);
        }
    }
    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        let [a, b, c] = self.arrays;
        let off = self.i * 8;
        let ev = |kind, va| Event::Access {
            kind,
            va: crate::addr::Vaddr(va),
            size: 8,
            instrs: 2,
            dep: 0,
        };
        q.extend_from_slice(&[
            ev(AccessKind::Load, b + off),
            ev(AccessKind::Load, c + off),
            ev(AccessKind::Store, a + off),
        ]);
        // A compare, not `%`: a 64-bit division per step shows at tens of millions of steps/s.
        self.i += 1;
        if self.i == self.elems {
            self.i = 0;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// pointer_chase

/// Dependent loads along a single random cycle (Sattolo's algorithm) of 64-byte nodes.
pub(crate) struct PointerChase {
    next: Vec<u32>,
    base: u64,
    cur: u32,
    /// Whether a chase load was issued (the next one depends on it).
    chained: bool,
}

impl PointerChase {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> PointerChase {
        let n = (cfg.footprint / 64).clamp(2, u32::MAX as u64) as usize;
        let mut rng = Rng::new(seed, 2);
        let mut order: Vec<u32> = (0..n as u32).collect();
        // Sattolo: a uniformly random permutation with exactly one cycle.
        for i in (1..n).rev() {
            let j = rng.below(i as u64) as usize;
            order.swap(i, j);
        }
        let mut next = vec![0u32; n];
        for i in 0..n {
            next[order[i] as usize] = order[(i + 1) % n];
        }
        PointerChase {
            next,
            base: 0,
            cur: 0,
            chained: false,
        }
    }
}

impl Program for PointerChase {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        let bytes = self.next.len() as u64 * 64;
        self.base = mem.alloc(bytes);
        touch_pages(q, self.base, bytes);
    }
    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        // Each node's address is the value the previous load read.
        load_after(
            q,
            self.base + self.cur as u64 * 64,
            8,
            3,
            self.chained as u16,
        );
        self.chained = true;
        self.cur = self.next[self.cur as usize];
    }
}

// ---------------------------------------------------------------------------------------------
// graphs

/// An undirected RMAT graph in CSR form (both directions stored), vertex ids permuted.
pub(crate) struct Csr {
    pub offsets: Vec<u64>,
    pub neighbours: Vec<u32>,
}

/// Graph500 RMAT quadrant probabilities.
const RMAT: (f64, f64, f64) = (0.57, 0.19, 0.19);

impl Csr {
    /// `n` vertices, `n * degree / 2` undirected edges (self-loops dropped; both directions
    /// stored). Construction is cache-friendly (the host's memory latency, not arithmetic, bounds
    /// it): edges are first bucketed by source range, then each bucket's vertex range is counted
    /// and filled while it fits in cache.
    pub fn rmat(n: u64, degree: u32, seed: u64) -> Csr {
        let scale = 64 - (n.max(2) - 1).leading_zeros();
        let mask = (1u64 << scale) - 1;
        let edges = n * degree as u64 / 2;
        // Vertex relabelling (Graph500 permutes ids to destroy locality): a seeded bijection on
        // [0, 2^scale), cycle-walked into [0, n).
        let mut prng = Rng::new(seed, 3);
        let (m1, m2) = (prng.next_u64() | 1, prng.next_u64() | 1);
        let half = scale.div_ceil(2);
        let permute = |x: u64| -> u32 {
            let mut y = x;
            loop {
                y = y.wrapping_mul(m1) & mask;
                y ^= y >> half;
                y = y.wrapping_mul(m2) & mask;
                if y < n {
                    return y as u32;
                }
            }
        };
        // Quadrant thresholds in 16-bit fixed point: one 64-bit draw decides four levels.
        let t0 = (RMAT.0 * 65536.0) as u64;
        let t1 = ((RMAT.0 + RMAT.1) * 65536.0) as u64;
        let t2 = ((RMAT.0 + RMAT.1 + RMAT.2) * 65536.0) as u64;
        let mut rng = Rng::new(seed, 4);
        let bucket_shift = scale.saturating_sub(8);
        let mut buckets: Vec<Vec<(u32, u32)>> = vec![Vec::new(); (n >> bucket_shift) as usize + 1];
        for _ in 0..edges {
            let (mut u, mut v) = (0u64, 0u64);
            let mut bits = 0u64;
            for level in 0..scale {
                if level % 4 == 0 {
                    bits = rng.next_u64();
                }
                let r = bits & 0xffff;
                bits >>= 16;
                // Quadrants a=(0,0), b=(0,1), c=(1,0), d=(1,1), branch-free.
                let bu = (r >= t1) as u64;
                let bv = ((r >= t0) & (r < t1)) as u64 | (r >= t2) as u64;
                u = (u << 1) | bu;
                v = (v << 1) | bv;
            }
            let (u, v) = (permute(u % n), permute(v % n));
            if u != v {
                buckets[(u as u64 >> bucket_shift) as usize].push((u, v));
                buckets[(v as u64 >> bucket_shift) as usize].push((v, u));
            }
        }
        let total: usize = buckets.iter().map(Vec::len).sum();
        let mut offsets = vec![0u64; n as usize + 1];
        let mut neighbours = vec![0u32; total];
        let mut base = 0u64;
        for (b, list) in buckets.iter_mut().enumerate() {
            let lo = (b as u64) << bucket_shift;
            let hi = ((b as u64 + 1) << bucket_shift).min(n);
            if lo >= hi {
                continue;
            }
            let mut count = vec![0u64; (hi - lo) as usize];
            for (u, _) in list.iter() {
                count[(*u as u64 - lo) as usize] += 1;
            }
            let mut next = base;
            for (i, c) in count.iter_mut().enumerate() {
                offsets[lo as usize + i] = next;
                let start = next;
                next += *c;
                *c = start;
            }
            for (u, v) in list.iter() {
                let slot = &mut count[(*u as u64 - lo) as usize];
                neighbours[*slot as usize] = *v;
                *slot += 1;
            }
            base = next;
            *list = Vec::new();
        }
        offsets[n as usize] = base;
        Csr {
            offsets,
            neighbours,
        }
    }

    pub fn vertices(&self) -> u64 {
        self.offsets.len() as u64 - 1
    }
}

/// Simulated addresses of the CSR arrays.
#[derive(Clone, Copy, Default)]
struct CsrAddrs {
    offsets: u64,
    neighbours: u64,
}

fn alloc_csr(g: &Csr, mem: &mut AddressSpace, q: &mut Burst) -> CsrAddrs {
    let ob = g.offsets.len() as u64 * 8;
    let nb = (g.neighbours.len() as u64 * 4).max(4);
    let a = CsrAddrs {
        offsets: mem.alloc(ob),
        neighbours: mem.alloc(nb),
    };
    touch_pages(q, a.offsets, ob);
    touch_pages(q, a.neighbours, nb);
    a
}

/// Vertices for a graph of about `footprint` bytes: offsets (8 B) + neighbours (4 B x degree)
/// + `per_vertex` bytes of algorithm arrays.
fn graph_vertices(cfg: &WorkloadConfig, per_vertex: u64) -> u64 {
    (cfg.footprint / (8 + 4 * cfg.degree as u64 + per_vertex)).max(16)
}

/// Top-down BFS: parent array, current and next frontier queues.
pub(crate) struct Bfs {
    g: Csr,
    a: CsrAddrs,
    parent_addr: u64,
    queue_addr: [u64; 2],
    parent: Vec<u32>,
    frontier: Vec<u32>,
    next: Vec<u32>,
    /// Position in the current frontier.
    fi: usize,
    rng: Rng,
}

const NO_PARENT: u32 = u32::MAX;

impl Bfs {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Bfs {
        let g = Csr::rmat(graph_vertices(cfg, 12), cfg.degree, seed);
        let n = g.vertices() as usize;
        Bfs {
            g,
            a: CsrAddrs::default(),
            parent_addr: 0,
            queue_addr: [0; 2],
            parent: vec![NO_PARENT; n],
            frontier: Vec::new(),
            next: Vec::new(),
            fi: 0,
            rng: Rng::new(seed, 5),
        }
    }

    fn start(&mut self, q: &mut Vec<Event>) {
        // A new search: reset parents (memset, one store per line) and pick a source.
        let n = self.parent.len() as u64;
        self.parent.fill(NO_PARENT);
        let mut a = self.parent_addr;
        while a < self.parent_addr + n * 4 {
            store(q, a, 64, 1);
            a += 64;
        }
        let src = self.rng.below(n) as u32;
        self.parent[src as usize] = src;
        store(q, self.parent_addr + src as u64 * 4, 4, 2);
        self.frontier.clear();
        self.frontier.push(src);
        store(q, self.queue_addr[0], 4, 2);
        self.fi = 0;
    }
}

impl Program for Bfs {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        let n = self.parent.len() as u64;
        self.a = alloc_csr(&self.g, mem, q);
        self.parent_addr = mem.alloc(n * 4);
        self.queue_addr = [mem.alloc(n * 4), mem.alloc(n * 4)];
        for base in [self.parent_addr, self.queue_addr[0], self.queue_addr[1]] {
            touch_pages(q, base, n * 4);
        }
        self.start(&mut q.events);
    }

    /// One frontier vertex: its adjacency list and the parent checks of its neighbours.
    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        if self.fi == self.frontier.len() {
            if self.next.is_empty() {
                self.start(q);
                return;
            }
            std::mem::swap(&mut self.frontier, &mut self.next);
            self.queue_addr.swap(0, 1);
            self.next.clear();
            self.fi = 0;
        }
        let u = self.frontier[self.fi] as u64;
        // Dependences: the offsets on the vertex read from the frontier, the neighbour list on
        // the offsets, each parent check and update on the neighbour id.
        load(q, self.queue_addr[0] + self.fi as u64 * 4, 4, 2);
        self.fi += 1;
        let offsets_at = q.len();
        load_after(q, self.a.offsets + u * 8, 8, 2, 1);
        load_after(q, self.a.offsets + (u + 1) * 8, 8, 1, 2);
        let (lo, hi) = (self.g.offsets[u as usize], self.g.offsets[u as usize + 1]);
        for e in lo..hi {
            let v = self.g.neighbours[e as usize];
            load_after(q, self.a.neighbours + e * 4, 4, 2, back_to(q, offsets_at));
            load_after(q, self.parent_addr + v as u64 * 4, 4, 3, 1);
            if self.parent[v as usize] == NO_PARENT {
                self.parent[v as usize] = u as u32;
                store_after(q, self.parent_addr + v as u64 * 4, 4, 1, 2);
                store(q, self.queue_addr[1] + self.next.len() as u64 * 4, 4, 2);
                self.next.push(v);
            }
        }
    }
}

/// Pull-style PageRank: `next[v] = (1-d)/n + d * sum(contrib[u] for u in in(v))`, then
/// `contrib[v] = next[v] / degree(v)`.
pub(crate) struct PageRank {
    g: Csr,
    a: CsrAddrs,
    contrib_addr: u64,
    next_addr: u64,
    v: u64,
    /// false: gather phase over all vertices; true: contribution update phase.
    updating: bool,
}

impl PageRank {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> PageRank {
        let g = Csr::rmat(graph_vertices(cfg, 8), cfg.degree, seed);
        PageRank {
            g,
            a: CsrAddrs::default(),
            contrib_addr: 0,
            next_addr: 0,
            v: 0,
            updating: false,
        }
    }
}

impl Program for PageRank {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        let n = self.g.vertices();
        self.a = alloc_csr(&self.g, mem, q);
        self.contrib_addr = mem.alloc(n * 4);
        self.next_addr = mem.alloc(n * 4);
        touch_pages(q, self.contrib_addr, n * 4);
        touch_pages(q, self.next_addr, n * 4);
    }

    /// One vertex of the current phase.
    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        let v = self.v;
        if self.updating {
            load(q, self.next_addr + v * 4, 4, 2);
            load(q, self.a.offsets + v * 8, 8, 1);
            load(q, self.a.offsets + (v + 1) * 8, 8, 1);
            store(q, self.contrib_addr + v * 4, 4, 4);
        } else {
            // Dependences: the neighbour list on the offsets, each contribution on the
            // neighbour id.
            let offsets_at = q.len();
            load(q, self.a.offsets + v * 8, 8, 2);
            load(q, self.a.offsets + (v + 1) * 8, 8, 1);
            for e in self.g.offsets[v as usize]..self.g.offsets[v as usize + 1] {
                let u = self.g.neighbours[e as usize] as u64;
                load_after(q, self.a.neighbours + e * 4, 4, 2, back_to(q, offsets_at));
                load_after(q, self.contrib_addr + u * 4, 4, 2, 1);
            }
            store(q, self.next_addr + v * 4, 4, 4);
        }
        self.v += 1;
        if self.v == self.g.vertices() {
            self.v = 0;
            self.updating = !self.updating;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// kv

/// Zipfian sampler over `0..n` (Gray et al., "Quickly generating billion-record synthetic
/// databases", as in YCSB). zeta(n) is summed exactly up to 10^7 terms, and the tail beyond is
/// added from the integral approximation (error below 1e-6 relative for theta < 1).
pub(crate) struct Zipf {
    n: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

fn zeta(n: u64, theta: f64) -> f64 {
    let exact = n.min(10_000_000);
    let mut s: f64 = (1..=exact).map(|i| (i as f64).powf(-theta)).sum();
    if n > exact {
        // integral of x^-theta from exact+0.5 to n+0.5
        let f = |x: f64| x.powf(1.0 - theta) / (1.0 - theta);
        s += f(n as f64 + 0.5) - f(exact as f64 + 0.5);
    }
    s
}

impl Zipf {
    pub fn new(n: u64, theta: f64) -> Zipf {
        let zetan = zeta(n, theta);
        let zeta2 = zeta(2, theta);
        Zipf {
            n,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
        }
    }

    /// A rank in `0..n` (0 most popular).
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        if self.theta == 0.0 {
            return rng.below(self.n);
        }
        let u = rng.unit();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.n - 1);
        }
        ((self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64).min(self.n - 1)
    }
}

/// Items of 64 bytes in 1 MiB slabs; an open-addressing (linear probing) index of 16-byte
/// buckets at load factor 0.5; popularity is zipfian over a random permutation of the keys.
pub(crate) struct Kv {
    items: u64,
    slab_addrs: Vec<u64>,
    table_addr: u64,
    /// Host copy of the index: key + 1 per bucket (0 = empty).
    table: Vec<u32>,
    popular: Vec<u32>,
    zipf: Zipf,
    get_ratio: f64,
    rng: Rng,
}

const ITEM_BYTES: u64 = 64;
const SLAB_BYTES: u64 = 1 << 20;
const BUCKET_BYTES: u64 = 16;

fn bucket_of(key: u32, buckets: u64) -> u64 {
    let h = (key as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    ((h >> 32) * buckets) >> 32
}

impl Kv {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Kv {
        // Per item: 64 B of item + 2 buckets of 16 B.
        let items = (cfg.footprint / (ITEM_BYTES + 2 * BUCKET_BYTES)).clamp(2, u32::MAX as u64 / 2);
        let buckets = items * 2;
        let mut table = vec![0u32; buckets as usize];
        for key in 0..items as u32 {
            let mut b = bucket_of(key, buckets);
            while table[b as usize] != 0 {
                b = (b + 1) % buckets;
            }
            table[b as usize] = key + 1;
        }
        let mut rng = Rng::new(seed, 6);
        let mut popular: Vec<u32> = (0..items as u32).collect();
        for i in (1..popular.len()).rev() {
            popular.swap(i, rng.below(i as u64 + 1) as usize);
        }
        Kv {
            items,
            slab_addrs: Vec::new(),
            table_addr: 0,
            table,
            popular,
            zipf: Zipf::new(items, cfg.zipf_theta),
            get_ratio: cfg.get_ratio,
            rng,
        }
    }
}

impl Program for Kv {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        let tb = self.table.len() as u64 * BUCKET_BYTES;
        self.table_addr = mem.alloc(tb);
        touch_pages(q, self.table_addr, tb);
        let per_slab = SLAB_BYTES / ITEM_BYTES;
        for _ in 0..self.items.div_ceil(per_slab) {
            let s = mem.alloc(SLAB_BYTES);
            touch_pages(q, s, SLAB_BYTES);
            self.slab_addrs.push(s);
        }
    }

    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        let key = self.popular[self.zipf.sample(&mut self.rng) as usize];
        let is_get = self.rng.unit() < self.get_ratio;
        let buckets = self.table.len() as u64;
        let mut b = bucket_of(key, buckets);
        let mut instrs = 30; // hashing and request handling before the first probe
        loop {
            load(q, self.table_addr + b * BUCKET_BYTES, 16, instrs);
            instrs = 4;
            if self.table[b as usize] == key + 1 {
                break;
            }
            b = (b + 1) % buckets;
        }
        let per_slab = SLAB_BYTES / ITEM_BYTES;
        let item = self.slab_addrs[(key as u64 / per_slab) as usize]
            + (key as u64 % per_slab) * ITEM_BYTES;
        // The matching bucket holds the item's pointer: the item access depends on it. The
        // probes do not (their addresses follow from the key; the branch predictor guesses).
        if is_get {
            load_after(q, item, 64, 10, 1);
        } else {
            store_after(q, item, 64, 12, 1);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// xsbench

const NUCLIDES: u64 = 68;
/// Nuclides per material in XSBench's "small" problem.
const MATERIAL_SIZES: [u64; 12] = [34, 5, 4, 4, 27, 21, 21, 21, 21, 21, 9, 9];
/// Bytes of one nuclide grid point (energy + 5 cross sections, f64).
const POINT_BYTES: u64 = 48;

/// Macroscopic cross-section lookups over a unionized energy grid.
pub(crate) struct XsBench {
    points: u64,
    nuclide_grid: u64,
    union_energy: u64,
    index_grid: u64,
    materials: Vec<Vec<u64>>,
    rng: Rng,
}

impl XsBench {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> XsBench {
        // Per grid point of each nuclide: the point, its unionized energy (8 B) and its row of
        // the index grid (4 B per nuclide).
        let per_point = NUCLIDES * (POINT_BYTES + 8 + 4 * NUCLIDES);
        let points = (cfg.footprint / per_point).max(2);
        let mut rng = Rng::new(seed, 7);
        let materials = MATERIAL_SIZES
            .iter()
            .map(|&k| {
                let mut all: Vec<u64> = (0..NUCLIDES).collect();
                for i in 0..k as usize {
                    let j = i + rng.below(NUCLIDES - i as u64) as usize;
                    all.swap(i, j);
                }
                all.truncate(k as usize);
                all
            })
            .collect();
        XsBench {
            points,
            nuclide_grid: 0,
            union_energy: 0,
            index_grid: 0,
            materials,
            rng,
        }
    }
}

impl Program for XsBench {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        let union = NUCLIDES * self.points;
        for (addr, bytes) in [
            (&mut self.nuclide_grid, NUCLIDES * self.points * POINT_BYTES),
            (&mut self.union_energy, union * 8),
            (&mut self.index_grid, union * NUCLIDES * 4),
        ] {
            *addr = mem.alloc(bytes);
            touch_pages(q, *addr, bytes);
        }
    }

    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        let union = NUCLIDES * self.points;
        let target = self.rng.below(union);
        // Binary search of the (uniform, sorted) unionized grid for the sampled energy.
        // Each probe's address follows from the previous probe's comparison: a branch a
        // predictor guesses wrong half the time, so the search is declared a dependent chain.
        let (mut lo, mut hi) = (0u64, union - 1);
        let mut instrs = 20;
        let mut last_probe: Option<usize> = None;
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            let dep = last_probe.map_or(0, |at| back_to(q, at));
            last_probe = Some(q.len());
            load_after(q, self.union_energy + mid * 8, 8, instrs, dep);
            instrs = 6;
            if mid <= target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let mat = &self.materials[self.rng.below(MATERIAL_SIZES.len() as u64) as usize];
        let point = (lo / NUCLIDES).min(self.points - 2);
        // The index-grid row follows from the search; the nuclide grid points from the index.
        for &nuc in mat {
            let dep = last_probe.map_or(0, |at| back_to(q, at));
            load_after(q, self.index_grid + (lo * NUCLIDES + nuc) * 4, 4, 4, dep);
            let p = self.nuclide_grid + (nuc * self.points + point) * POINT_BYTES;
            load_after(q, p, 48, 8, 1);
            load_after(q, p + POINT_BYTES, 48, 20, 2);
        }
    }
}
