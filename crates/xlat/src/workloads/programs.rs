//! The programs behind the built-in workloads of the first table (see the module doc of
//! `workloads`) but the graph ones: `gups`, `stream`, `pointer_chase`, `kv` (with the Zipf
//! sampler and linear-probing model `kernels.rs` and `apps.rs` share), `xsbench`, `sysbench`,
//! `dlrm`, `btree`, `hashjoin`. The graph workloads (`bfs`, `pagerank`, `dc`) are in
//! `graphs.rs`, re-exported here so that `programs::` names every program of that table.
//!
//! Calls `super::program` (the `Program` trait and event helpers), `super::implicit`,
//! `super::heap`, `super::config` and `crate::rng`.

use super::config::WorkloadConfig;
use super::heap::AddressSpace;
use super::implicit::{mix, Bijection};
use super::program::{back_to, load, load_after, store, store_after, touch_pages, Burst, Program};
use crate::rng::Rng;
use crate::trace::{AccessKind, Event};

pub(crate) use super::graphs::{Bfs, DegreeCentrality, PageRank};
// The tests size their graphs as the graph programs do.
#[cfg(test)]
pub(crate) use super::graphs::graph_vertices;

// ---------------------------------------------------------------------------------------------
// gups

/// HPCC RandomAccess: `table[r] ^= r` for random `r`.
///
/// Instructions: 11 per update, the loop of the recorded real program
/// (`python/xlat/data/corpus/gups.c` at `-O2`, gcc 12: eight register instructions for the next
/// random number, the loop count and the index, one `xor` to memory that is both the load and
/// the store, and the loop's compare and branch), so 5.5 per reference. As in its recording
/// (docs/workloads.md, "Real programs"), the load comes 11 instructions after the previous
/// access and the store 0 after its load: one read-modify-write instruction.
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
        load(q, va, 8, 11);
        store(q, va, 8, 0);
    }
    fn host_bytes(&self) -> u64 {
        std::mem::size_of::<Self>() as u64
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
    fn host_bytes(&self) -> u64 {
        std::mem::size_of::<Self>() as u64
    }
}

// ---------------------------------------------------------------------------------------------
// pointer_chase

/// Dependent loads along a single random cycle of 64-byte nodes: the nodes in the order
/// `order(0), order(1), ..., order(n-1), order(0), ...` for a seeded bijection `order` (what
/// Sattolo's algorithm builds as a `next` array, here computed instead of stored: the host
/// holds no per-node state, so 64 GiB of nodes cost nothing).
///
/// With `workload.chains = K > 1`, K chases of the same cycle at once, chase `j` started at
/// position `j * (n / K)`, one load of each in turn (hostbench's `chase --chains`): each load
/// depends on the load K references back, its own chase's previous one, and carries the six
/// instructions of `chase_k`'s inner loop (its store of the pointer to a stack slot, an L1 hit,
/// is not issued as an access).
pub(crate) struct PointerChase {
    nodes: u64,
    order: Bijection,
    base: u64,
    /// Position along the cycle (of the chase whose turn it is).
    i: u64,
    /// Whether a chase load was issued (the next one depends on it).
    chained: bool,
    /// Every chase's position (`workload.chains > 1`; empty for the single chase).
    positions: Vec<u64>,
    /// The chase whose turn it is, and how many loads have been issued (up to `chains`: the
    /// first load of each chase depends on nothing).
    turn: usize,
    issued: u64,
}

/// Instructions per load of hostbench's `chase_k` inner loop (load of the pointer's slot, the
/// chase load, its store back, the slot pointer's add, compare, branch).
const CHAINS_INSTRS_PER_LOAD: u32 = 6;

impl PointerChase {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> PointerChase {
        let nodes = (cfg.footprint / 64).max(2);
        let k = cfg.chains.max(1) as u64;
        PointerChase {
            nodes,
            order: Bijection::new(nodes, crate::rng::Rng::new(seed, 2).next_u64()),
            base: 0,
            i: 0,
            chained: false,
            positions: if k > 1 {
                (0..k).map(|j| j * (nodes / k)).collect()
            } else {
                Vec::new()
            },
            turn: 0,
            issued: 0,
        }
    }
}

impl Program for PointerChase {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        let bytes = self.nodes * 64;
        self.base = mem.alloc(bytes);
        touch_pages(q, self.base, bytes);
    }
    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        if !self.positions.is_empty() {
            let k = self.positions.len();
            let pos = &mut self.positions[self.turn];
            let node = self.order.forward(*pos);
            // Its own chase's previous load is K references back (none before its first).
            let dep = if self.issued >= k as u64 { k as u16 } else { 0 };
            load_after(q, self.base + node * 64, 8, CHAINS_INSTRS_PER_LOAD, dep);
            *pos += 1;
            if *pos == self.nodes {
                *pos = 0;
            }
            self.issued += 1;
            self.turn = (self.turn + 1) % k;
            return;
        }
        // Each node's address is the value the previous load read.
        let node = self.order.forward(self.i);
        load_after(q, self.base + node * 64, 8, 3, self.chained as u16);
        self.chained = true;
        self.i += 1;
        if self.i == self.nodes {
            self.i = 0;
        }
    }
    fn host_bytes(&self) -> u64 {
        (std::mem::size_of::<Self>() + self.positions.capacity() * 8) as u64
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
    /// 1 + 0.5^theta, the bound of rank 1's interval: computed once instead of per draw (the
    /// same value, so the same draws).
    rank1_bound: f64,
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
            rank1_bound: 1.0 + 0.5f64.powf(theta),
        }
    }

    /// A rank in `0..n` (0 most popular).
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        if self.theta == 0.0 {
            return rng.below(self.n);
        }
        self.rank_of(rng.unit())
    }

    /// The rank whose cumulative probability interval holds `u` (uniform in `[0, 1)`): a
    /// sample drawn from a hash instead of a generator.
    pub fn rank_of(&self, u: f64) -> u64 {
        if self.theta == 0.0 {
            return ((u * self.n as f64) as u64).min(self.n - 1);
        }
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < self.rank1_bound {
            return 1.min(self.n - 1);
        }
        ((self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64).min(self.n - 1)
    }
}

/// Items of 64 bytes in 1 MiB slabs; an open-addressing (linear probing) index of 16-byte
/// buckets at load factor 0.5; popularity is zipfian over a seeded permutation of the keys.
///
/// The index is not stored: a key's home bucket is its hash, and its displacement (the probes
/// past home before its bucket) is drawn, by a hash of the key, from the displacement
/// distribution of a real linear-probing table at load factor 0.5 (2^16 keys inserted with the
/// same hash function at construction and measured). What this approximates: which keys
/// collide (two keys may claim the same bucket); the probed addresses per lookup and their
/// distribution are those of the real table.
pub(crate) struct Kv {
    items: u64,
    slab_addrs: Vec<u64>,
    table_addr: u64,
    buckets: u64,
    /// Popularity rank -> key.
    popular: Bijection,
    /// Cumulative counts of displacements 0, 1, 2, ... among `DISPLACEMENT_SAMPLE` keys.
    displacement_cdf: Vec<u32>,
    displacement_key: u64,
    zipf: Zipf,
    get_ratio: f64,
    rng: Rng,
}

const ITEM_BYTES: u64 = 64;
const SLAB_BYTES: u64 = 1 << 20;
const BUCKET_BYTES: u64 = 16;
/// Keys of the linear-probing table whose displacements are measured.
pub(super) const DISPLACEMENT_SAMPLE: u64 = 1 << 16;

pub(super) fn bucket_of(key: u64, buckets: u64) -> u64 {
    let h = (key + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    ((h >> 32) * buckets) >> 32
}

/// Cumulative displacement counts of `keys` keys inserted in order into a linear-probing table
/// of `2 * keys` buckets.
pub(super) fn linear_probing_displacements(keys: u64) -> Vec<u32> {
    let buckets = keys * 2;
    let mut table = vec![false; buckets as usize];
    let mut hist: Vec<u32> = Vec::new();
    for key in 0..keys {
        let home = bucket_of(key, buckets);
        let mut b = home;
        while table[b as usize] {
            b = (b + 1) % buckets;
        }
        table[b as usize] = true;
        let d = ((b + buckets - home) % buckets) as usize;
        if hist.len() <= d {
            hist.resize(d + 1, 0);
        }
        hist[d] += 1;
    }
    let mut sum = 0;
    hist.iter()
        .map(|c| {
            sum += c;
            sum
        })
        .collect()
}

impl Kv {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Kv {
        // Per item: 64 B of item + 2 buckets of 16 B.
        let items = (cfg.footprint / (ITEM_BYTES + 2 * BUCKET_BYTES)).clamp(2, u32::MAX as u64 / 2);
        let mut rng = Rng::new(seed, 6);
        Kv {
            items,
            slab_addrs: Vec::with_capacity(items.div_ceil(SLAB_BYTES / ITEM_BYTES) as usize),
            table_addr: 0,
            buckets: items * 2,
            popular: Bijection::new(items, rng.next_u64()),
            displacement_cdf: linear_probing_displacements(DISPLACEMENT_SAMPLE),
            displacement_key: rng.next_u64(),
            zipf: Zipf::new(items, cfg.zipf_theta),
            get_ratio: cfg.get_ratio,
            rng,
        }
    }

    /// Probes past its home bucket before `key`'s bucket.
    fn displacement(&self, key: u64) -> u64 {
        let r = (mix(self.displacement_key, key) % DISPLACEMENT_SAMPLE) as u32;
        self.displacement_cdf.partition_point(|&c| c <= r) as u64
    }
}

impl Program for Kv {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        let tb = self.buckets * BUCKET_BYTES;
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
        let key = self.popular.forward(self.zipf.sample(&mut self.rng));
        let is_get = self.rng.unit() < self.get_ratio;
        let mut b = bucket_of(key, self.buckets);
        let mut instrs = 30; // hashing and request handling before the first probe
        for _ in 0..=self.displacement(key) {
            load(q, self.table_addr + b * BUCKET_BYTES, 16, instrs);
            instrs = 4;
            b += 1;
            if b == self.buckets {
                b = 0;
            }
        }
        let per_slab = SLAB_BYTES / ITEM_BYTES;
        let item = self.slab_addrs[(key / per_slab) as usize] + (key % per_slab) * ITEM_BYTES;
        // The matching bucket holds the item's pointer: the item access depends on it. The
        // probes do not (their addresses follow from the key; the branch predictor guesses).
        if is_get {
            load_after(q, item, 64, 10, 1);
        } else {
            store_after(q, item, 64, 12, 1);
        }
    }

    fn host_bytes(&self) -> u64 {
        self.slab_addrs.capacity() as u64 * 8
            + self.displacement_cdf.capacity() as u64 * 4
            + std::mem::size_of::<Self>() as u64
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
    fn host_bytes(&self) -> u64 {
        self.materials
            .iter()
            .map(|m| m.capacity() as u64 * 8)
            .sum::<u64>()
            + std::mem::size_of::<Self>() as u64
    }
}

// ---------------------------------------------------------------------------------------------
// sysbench

/// SysBench's memory test in random-access write mode (`sysbench memory
/// --memory-block-size=<footprint> --memory-access-mode=rnd --memory-oper=write`, global
/// scope: `src/tests/memory/sb_memory.c`, `memory_execute_event`): one buffer, every operation
/// an `int` store at a uniformly random index of it (`sb_rand_uniform_double() * (block / 4)`).
pub(crate) struct SysbenchMemory {
    bytes: u64,
    buffer: u64,
    rng: Rng,
}

impl SysbenchMemory {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> SysbenchMemory {
        SysbenchMemory {
            bytes: cfg.footprint / 4 * 4,
            buffer: 0,
            rng: Rng::new(seed, 8),
        }
    }
}

impl Program for SysbenchMemory {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        self.buffer = mem.alloc(self.bytes);
        touch_pages(q, self.buffer, self.bytes);
    }
    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        // The loop, the uniform double and the index arithmetic: about 12 instructions.
        store(q, self.buffer + self.rng.below(self.bytes / 4) * 4, 4, 12);
    }
    fn host_bytes(&self) -> u64 {
        std::mem::size_of::<Self>() as u64
    }
}

// ---------------------------------------------------------------------------------------------
// dlrm

/// Embedding tables of DLRM's sparse features.
const DLRM_TABLES: u64 = 8;
/// Bytes of one embedding row: 64 fp32 (DLRM's `--arch-sparse-feature-size=64`).
const DLRM_ROW_BYTES: u64 = 256;
/// Lookups per (sample, table) (DLRM's `--num-indices-per-lookup`, pooling factor).
const DLRM_POOLING: u64 = 32;
/// Bytes of the index buffer the lookups read (indices of about 16 K lookups, u64 each).
const DLRM_INDEX_BYTES: u64 = 128 << 10;

/// DLRM's SparseLengthsSum (the embedding-bag operator of the sparse features, Caffe2
/// `SparseLengthsSum` / PyTorch `EmbeddingBag(mode="sum")` as DLRM runs it): for each sample
/// and table, `DLRM_POOLING` row indices are read from the index buffer, each row (256 B, four
/// lines) is loaded and summed, and the pooled row is stored to the output. Indices are uniform
/// over a table's rows (DLRM's synthetic random data generator).
pub(crate) struct DlrmSls {
    rows: u64,
    tables: [u64; DLRM_TABLES as usize],
    indices: u64,
    output: u64,
    /// Next index slot, table, and lookup within the current bag.
    slot: u64,
    table: u64,
    lookup: u64,
    rng: Rng,
}

impl DlrmSls {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> DlrmSls {
        let rows = ((cfg
            .footprint
            .saturating_sub(DLRM_INDEX_BYTES + DLRM_TABLES * DLRM_ROW_BYTES))
            / (DLRM_TABLES * DLRM_ROW_BYTES))
            .max(1);
        DlrmSls {
            rows,
            tables: [0; DLRM_TABLES as usize],
            indices: 0,
            output: 0,
            slot: 0,
            table: 0,
            lookup: 0,
            rng: Rng::new(seed, 9),
        }
    }
}

impl Program for DlrmSls {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        for t in self.tables.iter_mut() {
            *t = mem.alloc(self.rows * DLRM_ROW_BYTES);
            touch_pages(q, *t, self.rows * DLRM_ROW_BYTES);
        }
        self.indices = mem.alloc(DLRM_INDEX_BYTES);
        touch_pages(q, self.indices, DLRM_INDEX_BYTES);
        self.output = mem.alloc(DLRM_TABLES * DLRM_ROW_BYTES);
        touch_pages(q, self.output, DLRM_TABLES * DLRM_ROW_BYTES);
    }

    /// One lookup: its index, then its row's four lines (which depend on it); the bag's sum is
    /// stored after its last lookup.
    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        load(q, self.indices + self.slot * 8, 8, 3);
        self.slot = (self.slot + 1) % (DLRM_INDEX_BYTES / 8);
        let row = self.tables[self.table as usize] + self.rng.below(self.rows) * DLRM_ROW_BYTES;
        for line in 0..DLRM_ROW_BYTES / 64 {
            // 16 fp32 adds per line (vectorized: 2 AVX adds and the loop).
            load_after(q, row + line * 64, 64, 4, line as u16 + 1);
        }
        self.lookup += 1;
        if self.lookup == DLRM_POOLING {
            self.lookup = 0;
            let out = self.output + self.table * DLRM_ROW_BYTES;
            for line in 0..DLRM_ROW_BYTES / 64 {
                store(q, out + line * 64, 64, 2);
            }
            self.table = (self.table + 1) % DLRM_TABLES;
        }
    }

    fn host_bytes(&self) -> u64 {
        std::mem::size_of::<Self>() as u64
    }
}

// ---------------------------------------------------------------------------------------------
// btree

/// Keys (and child pointers) per B+tree node: 16 x 8 B keys + 16 x 8 B pointers = 256 B, as
/// in a cache-conscious in-memory B+tree (the STX B+tree's 256-byte nodes for u64 keys).
const BTREE_FANOUT: u64 = 16;
const BTREE_NODE_BYTES: u64 = 256;

/// Point lookups of uniformly random keys in a bulk-loaded in-memory B+tree of u64 keys and
/// values: each level is one array of 256-byte nodes in key order (a bulk load into an arena),
/// the root first; a lookup binary-searches each node's 16 keys (4 dependent loads) and follows
/// the child pointer, down to the leaf, where it binary-searches the keys and loads the value.
pub(crate) struct BTree {
    keys: u64,
    /// Nodes per level, root first.
    level_nodes: Vec<u64>,
    level_addrs: Vec<u64>,
    rng: Rng,
}

impl BTree {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> BTree {
        // Leaves hold 16 keys and 16 values; inner levels add about 1/15 of the leaves.
        let leaves = (cfg.footprint * 15 / 16 / BTREE_NODE_BYTES).max(1);
        let mut level_nodes = vec![leaves];
        while *level_nodes.last().expect("a level") > 1 {
            let above = level_nodes.last().expect("a level").div_ceil(BTREE_FANOUT);
            level_nodes.push(above);
        }
        level_nodes.reverse();
        BTree {
            keys: leaves * BTREE_FANOUT,
            level_addrs: Vec::with_capacity(level_nodes.len()),
            level_nodes,
            rng: Rng::new(seed, 10),
        }
    }
}

impl Program for BTree {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        for &nodes in &self.level_nodes {
            let a = mem.alloc(nodes * BTREE_NODE_BYTES);
            touch_pages(q, a, nodes * BTREE_NODE_BYTES);
            self.level_addrs.push(a);
        }
    }

    /// One lookup, root to leaf.
    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        let key = self.rng.below(self.keys);
        let levels = self.level_nodes.len() as u32;
        let mut instrs = 20;
        let mut after_pointer = false;
        for (depth, &addr) in self.level_addrs.iter().enumerate() {
            // Key `key` is in leaf key / 16; at depth d the node on its path is
            // key / 16^(levels - d), and the slot below it (key / 16^(levels - d - 1)) % 16.
            let below = (levels - depth as u32 - 1) as u64;
            let node = key / BTREE_FANOUT.pow(below as u32 + 1);
            let slot = key / BTREE_FANOUT.pow(below as u32) % BTREE_FANOUT;
            let base = addr + node * BTREE_NODE_BYTES;
            // Binary search of the node's 16 keys for `slot`: 4 probes, each dependent on the
            // previous comparison; the first on the pointer that led here.
            let (mut lo, mut hi) = (0u64, BTREE_FANOUT);
            let mut dep = after_pointer as u16;
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                load_after(q, base + mid * 8, 8, instrs, dep);
                instrs = 5;
                dep = 1;
                if mid <= slot {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            // The child pointer (inner) or the value (leaf) in the node's second half.
            load_after(q, base + 128 + slot * 8, 8, 3, 1);
            after_pointer = true;
        }
    }

    fn host_bytes(&self) -> u64 {
        (self.level_nodes.capacity() + self.level_addrs.capacity()) as u64 * 8
            + std::mem::size_of::<Self>() as u64
    }
}

// ---------------------------------------------------------------------------------------------
// hashjoin

/// Bytes of a tuple (8 B key, 8 B payload) and of a hash-table bucket (NPO's: latch and count,
/// two tuples, overflow pointer).
const JOIN_TUPLE_BYTES: u64 = 16;
const JOIN_BUCKET_BYTES: u64 = 48;

/// The no-partitioning hash join (NPO) of Balkesen et al., "Main-memory hash joins on
/// multi-core CPUs" (ICDE 2013; their `npo` code): build a hash table of relation R (scan R,
/// insert each tuple into bucket `key & mask`), then probe it with relation S (scan S, load the
/// bucket of each tuple's key and compare its two tuples), then start over. R's keys are dense
/// (a permutation of 1..|R|), S's are foreign keys drawn uniformly from R's, |S| = |R|, and the
/// table has |R|/2 buckets of two tuples: no bucket overflows, as in their dense-key workloads.
pub(crate) struct HashJoin {
    tuples: u64,
    buckets: u64,
    r: u64,
    s: u64,
    table: u64,
    r_keys: Bijection,
    i: u64,
    probing: bool,
    rng: Rng,
}

impl HashJoin {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> HashJoin {
        // Per R tuple: itself, one S tuple, half a bucket.
        let tuples = (cfg.footprint / (2 * JOIN_TUPLE_BYTES + JOIN_BUCKET_BYTES / 2)).max(2) & !1;
        let mut rng = Rng::new(seed, 11);
        HashJoin {
            tuples,
            buckets: tuples / 2,
            r: 0,
            s: 0,
            table: 0,
            r_keys: Bijection::new(tuples, rng.next_u64()),
            i: 0,
            probing: false,
            rng,
        }
    }
}

impl Program for HashJoin {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        let rb = self.tuples * JOIN_TUPLE_BYTES;
        let tb = self.buckets * JOIN_BUCKET_BYTES;
        self.r = mem.alloc(rb);
        self.s = mem.alloc(rb);
        self.table = mem.alloc(tb);
        for (a, b) in [(self.r, rb), (self.s, rb), (self.table, tb)] {
            touch_pages(q, a, b);
        }
    }

    /// One tuple of the current phase.
    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        let i = self.i;
        if !self.probing {
            // Build: bucket = key % buckets (NPO's HASH(key) = key & mask, here modulo since
            // the bucket count follows the footprint); read its count, write the tuple.
            load(q, self.r + i * JOIN_TUPLE_BYTES, 16, 3);
            let bucket = self.table + self.r_keys.forward(i) % self.buckets * JOIN_BUCKET_BYTES;
            load_after(q, bucket, 8, 4, 1);
            store_after(q, bucket + 8 + i % 2 * JOIN_TUPLE_BYTES, 16, 4, 2);
        } else {
            load(q, self.s + i * JOIN_TUPLE_BYTES, 16, 3);
            let key = self.rng.below(self.tuples);
            let bucket = self.table + key % self.buckets * JOIN_BUCKET_BYTES;
            load_after(q, bucket, 8, 4, 1);
            load_after(q, bucket + 8, 32, 8, 2);
        }
        self.i += 1;
        if self.i == self.tuples {
            self.i = 0;
            self.probing = !self.probing;
        }
    }

    fn host_bytes(&self) -> u64 {
        std::mem::size_of::<Self>() as u64
    }
}
