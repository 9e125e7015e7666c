//! Issue 15's further paper workloads: GraphBIG kernels on the implicit RMAT graph (`cc`, `gc`,
//! `tc`, `sssp`), GenomicsBench-like k-mer counting (`kmer`) and a memcached-like store
//! (`memcached`). Same contract as the programs of `programs.rs`: deterministic in (config,
//! refs, seed), host memory bounded by the footprint (bitmaps and the graph's degree index at
//! most), never by the run's length. Sources of truth and approximations: docs/workloads.md.

use super::config::WorkloadConfig;
use super::graphs::{alloc_csr, graph, random_source, reset_sweep, CsrAddrs, EDGE_CHUNK};
use super::heap::AddressSpace;
use super::implicit::{mix, unit, Bijection, Bitmap, ImplicitGraph};
use super::program::{back_to, load, load_after, store, store_after, touch_pages, Burst, Program};
use super::programs::{bucket_of, linear_probing_displacements, Zipf, DISPLACEMENT_SAMPLE};
use crate::rng::Rng;
use crate::trace::Event;

// ---------------------------------------------------------------------------------------------
// cc and gc: sweeps over every vertex

/// Passes of a label-propagation run before it starts over (RMAT graphs converge in a few
/// passes: their diameter is small).
const CC_PASSES: u32 = 8;

/// Which sweep kernel a [`Sweep`] runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum SweepKind {
    /// Connected components by label propagation (min label).
    Cc,
    /// Greedy graph colouring.
    Gc,
}

/// Kernels that sweep every vertex in id order, reading a per-vertex property of every
/// neighbour and writing the vertex's own:
/// - `cc` (GraphBIG `bench_connectedComp`, in the label-propagation form of Ligra's
///   `Components` / GAP's `cc` without its sampling): `comp[v] = min(comp[v], comp[u] for u in
///   N(v))`. Pass 0 initializes `comp[v] = v` (a store per vertex); in pass `p` a vertex's label
///   changes, and is stored, with probability `2^-p`, decided by a hash of (v, p) — the values
///   are not computed (that would take 4 host bytes per vertex); after `CC_PASSES` passes the run
///   starts over.
/// - `gc` (GraphBIG `bench_graphColoring`, greedy first-fit): every neighbour's colour is read,
///   then the vertex's colour stored; passes repeat (each re-colours every vertex).
pub(crate) struct Sweep {
    kind: SweepKind,
    g: ImplicitGraph,
    a: CsrAddrs,
    prop_addr: u64,
    v: u64,
    pass: u32,
    change_key: u64,
    edges_left: Option<(u64, u64)>,
}

impl Sweep {
    pub fn new(cfg: &WorkloadConfig, seed: u64, kind: SweepKind) -> Result<Sweep, String> {
        Ok(Sweep {
            kind,
            g: graph(cfg, 32, seed)?,
            a: CsrAddrs::default(),
            prop_addr: 0,
            v: 0,
            pass: 0,
            change_key: mix(seed, 0xcc),
            edges_left: None,
        })
    }

    fn edges(&mut self, e: u64, hi: u64, offsets_at: Option<usize>, q: &mut Vec<Event>) {
        let end = hi.min(e + EDGE_CHUNK);
        for e in e..end {
            let u = self.g.target(e);
            let dep = offsets_at.map_or(0, |at| back_to(q, at));
            load_after(q, self.a.neighbours + e * 4, 4, 2, dep);
            load_after(q, self.prop_addr + u * 4, 4, 3, 1);
        }
        if end < hi {
            self.edges_left = Some((end, hi));
            return;
        }
        self.edges_left = None;
        let v = self.v;
        let stores = match self.kind {
            SweepKind::Gc => true,
            SweepKind::Cc => {
                let draw = unit(mix(self.change_key ^ self.pass as u64, v));
                self.pass == 0 || draw * 2f64.powi(self.pass as i32) < 1.0
            }
        };
        if stores {
            store(q, self.prop_addr + v * 4, 4, 2);
        }
        self.v += 1;
        if self.v == self.g.vertices() {
            self.v = 0;
            self.pass = (self.pass + 1) % CC_PASSES;
        }
    }
}

impl Program for Sweep {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        self.g.build();
        let n = self.g.vertices();
        self.a = alloc_csr(&self.g, mem, q);
        self.prop_addr = mem.alloc(n * 4);
        touch_pages(q, self.prop_addr, n * 4);
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
        if self.kind == SweepKind::Cc {
            load(q, self.prop_addr + v * 4, 4, 1);
        }
        let lo = self.g.first_edge(v);
        self.edges(lo, lo + self.g.degree(v), Some(offsets_at), q);
    }

    fn host_bytes(&self) -> u64 {
        self.g.host_bytes() + std::mem::size_of::<Self>() as u64
    }
}

// ---------------------------------------------------------------------------------------------
// tc

/// Triangle counting as GAP's `tc` (ordered: each triangle counted once) and GraphBIG's
/// `bench_triangleCount`: for every vertex `u` and neighbour `v < u`, the sorted lists N(u) and
/// N(v) are merged up to `v`. The implicit graph's lists are not sorted; the merge reads, from
/// the start of each list, the share of its entries a sorted list has below `v`
/// (`ceil(deg * v / n)` entries), alternating between the two lists as a merge does.
pub(crate) struct TriangleCount {
    g: ImplicitGraph,
    a: CsrAddrs,
    u: u64,
    /// The vertex whose edges are being handled: it, its next edge and end.
    edges_left: Option<(u64, u64, u64)>,
    /// A merge under way: (first edge of N(v), its length, of N(u), its length, next position).
    merge: Option<(u64, u64, u64, u64, u64)>,
}

impl TriangleCount {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Result<TriangleCount, String> {
        Ok(TriangleCount {
            g: graph(cfg, 0, seed)?,
            a: CsrAddrs::default(),
            u: 0,
            edges_left: None,
            merge: None,
        })
    }

    /// Up to `EDGE_CHUNK` loads of the merge under way.
    fn merge_step(&mut self, q: &mut Vec<Event>) {
        let Some((vlo, vlen, ulo, ulen, k)) = self.merge else {
            return;
        };
        let total = vlen + ulen;
        let end = total.min(k + EDGE_CHUNK);
        let both = 2 * vlen.min(ulen);
        for k in k..end {
            // Alternate while both lists last, then the rest of the longer one.
            let (from_v, i) = if k < both {
                (k % 2 == 0, k / 2)
            } else if vlen > ulen {
                (true, k - both / 2)
            } else {
                (false, k - both / 2)
            };
            let e = if from_v { vlo + i } else { ulo + i };
            load(q, self.a.neighbours + e * 4, 4, 3);
        }
        self.merge = (end < total).then_some((vlo, vlen, ulo, ulen, end));
    }
}

impl Program for TriangleCount {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        self.g.build();
        self.a = alloc_csr(&self.g, mem, q);
    }

    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        if self.merge.is_some() {
            self.merge_step(q);
            return;
        }
        let n = self.g.vertices();
        if let Some((u, e, hi)) = self.edges_left {
            let v = self.g.target(e);
            let at = q.len();
            load(q, self.a.neighbours + e * 4, 4, 2);
            self.edges_left = (e + 1 < hi).then_some((u, e + 1, hi));
            if v < u {
                // N(v)'s offsets depend on the neighbour id.
                load_after(q, self.a.offsets + v * 8, 8, 2, back_to(q, at));
                load_after(q, self.a.offsets + (v + 1) * 8, 8, 1, back_to(q, at));
                let below = |deg: u64| (deg * v).div_ceil(n);
                self.merge = Some((
                    self.g.first_edge(v),
                    below(self.g.degree(v)),
                    self.g.first_edge(u),
                    below(self.g.degree(u)),
                    0,
                ));
                self.merge_step(q);
            }
            return;
        }
        let u = self.u;
        load(q, self.a.offsets + u * 8, 8, 2);
        load(q, self.a.offsets + (u + 1) * 8, 8, 1);
        let lo = self.g.first_edge(u);
        let deg = self.g.degree(u);
        self.edges_left = (deg > 0).then_some((u, lo, lo + deg));
        self.u = (u + 1) % n;
    }

    fn host_bytes(&self) -> u64 {
        self.g.host_bytes() + std::mem::size_of::<Self>() as u64
    }
}

// ---------------------------------------------------------------------------------------------
// sssp

/// Rounds of one search at most (an RMAT graph's weighted searches settle in far fewer).
const SSSP_MAX_ROUNDS: u32 = 64;

/// Single-source shortest paths, frontier-based Bellman-Ford as GraphBIG's `bench_shortestPath`
/// and GAP's `sssp` relax edges: each round scans the frontier bitmap in id order (clearing
/// it), and for every frontier vertex loads its distance and offsets, then per edge the
/// neighbour, the edge's weight (a u32 array beside the neighbours) and the neighbour's
/// distance; an improved distance is stored and the neighbour set in the next frontier. Which
/// relaxations improve is not computed from weights (that needs 4 host bytes per vertex): a
/// vertex reached for the first time in a search always improves; a later relaxation improves
/// with probability `1 / (round + 2)`, decided by a hash. A search ends when the next frontier
/// is empty (or after `SSSP_MAX_ROUNDS`); then `dist` is reset and a new source drawn.
pub(crate) struct Sssp {
    g: ImplicitGraph,
    a: CsrAddrs,
    weights_addr: u64,
    dist_addr: u64,
    bitmap_addr: [u64; 2],
    reached: Bitmap,
    frontier: [Bitmap; 2],
    next_nonempty: bool,
    round: u32,
    word: u64,
    word_bits: u64,
    edges_left: Option<(u64, u64, u64)>,
    resetting: Option<u64>,
    improve_key: u64,
    rng: Rng,
}

/// Per-vertex bytes of SSSP's arrays in eighths: dist (4 B), two frontier bitmaps.
const SSSP_EIGHTHS: u64 = 32 + 2;

impl Sssp {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Result<Sssp, String> {
        // Weights: 4 B per edge, i.e. 32 * degree eighths per vertex.
        let g = graph(cfg, SSSP_EIGHTHS + 32 * cfg.degree as u64, seed)?;
        let n = g.vertices();
        Ok(Sssp {
            a: CsrAddrs::default(),
            weights_addr: 0,
            dist_addr: 0,
            bitmap_addr: [0; 2],
            reached: Bitmap::new(n),
            frontier: [Bitmap::new(n), Bitmap::new(n)],
            next_nonempty: false,
            round: 0,
            word: 0,
            word_bits: 0,
            edges_left: None,
            resetting: None,
            improve_key: mix(seed, 0x5555),
            rng: Rng::new(seed, 11),
            g,
        })
    }

    fn start_search(&mut self, q: &mut Vec<Event>) {
        let src = random_source(&self.g, &mut self.rng);
        self.reached.insert(src);
        store(q, self.dist_addr + src * 4, 4, 2);
        self.frontier[0].insert(src);
        store(q, self.bitmap_addr[0] + src / 64 * 8, 8, 2);
        self.round = 0;
        self.word = 0;
        self.word_bits = 0;
    }

    fn edges(&mut self, u: u64, e: u64, hi: u64, offsets_at: Option<usize>, q: &mut Vec<Event>) {
        let end = hi.min(e + EDGE_CHUNK);
        for e in e..end {
            let w = self.g.target(e);
            let dep = offsets_at.map_or(0, |at| back_to(q, at));
            let neighbour_at = q.len();
            load_after(q, self.a.neighbours + e * 4, 4, 2, dep);
            load_after(q, self.weights_addr + e * 4, 4, 1, dep.saturating_add(1));
            load_after(q, self.dist_addr + w * 4, 4, 3, 2);
            let first = self.reached.insert(w);
            let draw = unit(mix(self.improve_key ^ self.round as u64, w));
            let improves = first || draw * f64::from(self.round + 2) < 1.0;
            if improves {
                store_after(q, self.dist_addr + w * 4, 4, 2, back_to(q, neighbour_at));
                let word = self.bitmap_addr[1] + w / 64 * 8;
                load_after(q, word, 8, 2, back_to(q, neighbour_at));
                store_after(q, word, 8, 1, 1);
                self.frontier[1].insert(w);
                self.next_nonempty = true;
            }
        }
        self.edges_left = (end < hi).then_some((u, end, hi));
    }
}

impl Program for Sssp {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        self.g.build();
        let n = self.g.vertices();
        self.a = alloc_csr(&self.g, mem, q);
        let wb = (self.g.edges() * 4).max(4);
        self.weights_addr = mem.alloc(wb);
        self.dist_addr = mem.alloc(n * 4);
        let bb = self.reached.words() * 8;
        self.bitmap_addr = [mem.alloc(bb), mem.alloc(bb)];
        touch_pages(q, self.weights_addr, wb);
        touch_pages(q, self.dist_addr, n * 4);
        touch_pages(q, self.bitmap_addr[0], bb);
        touch_pages(q, self.bitmap_addr[1], bb);
        self.start_search(&mut q.events);
    }

    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        if let Some((u, e, hi)) = self.edges_left {
            self.edges(u, e, hi, None, q);
            return;
        }
        if let Some(at) = self.resetting {
            self.resetting = reset_sweep(q, at, self.dist_addr + self.g.vertices() * 4);
            if self.resetting.is_none() {
                self.start_search(q);
            }
            return;
        }
        loop {
            if self.word_bits != 0 {
                let u = (self.word - 1) * 64 + self.word_bits.trailing_zeros() as u64;
                self.word_bits &= self.word_bits - 1;
                let offsets_at = q.len();
                load(q, self.a.offsets + u * 8, 8, 2);
                load(q, self.a.offsets + (u + 1) * 8, 8, 1);
                load(q, self.dist_addr + u * 4, 4, 1);
                let lo = self.g.first_edge(u);
                self.edges(u, lo, lo + self.g.degree(u), Some(offsets_at), q);
                return;
            }
            if self.word < self.frontier[0].words() {
                let w = self.word;
                self.word_bits = self.frontier[0].word(w);
                self.word += 1;
                if self.word_bits != 0 {
                    load(q, self.bitmap_addr[0] + w * 8, 8, 2);
                    store(q, self.bitmap_addr[0] + w * 8, 8, 1);
                    self.frontier[0].clear_word(w);
                    return;
                }
                // An empty word: the scan's load of it.
                load(q, self.bitmap_addr[0] + w * 8, 8, 2);
                return;
            }
            // The round is over.
            self.round += 1;
            if !self.next_nonempty || self.round >= SSSP_MAX_ROUNDS {
                self.frontier[1].clear();
                self.reached.clear();
                self.next_nonempty = false;
                self.resetting = Some(self.dist_addr);
                self.step(_mem, q);
                return;
            }
            self.frontier.swap(0, 1);
            self.bitmap_addr.swap(0, 1);
            self.next_nonempty = false;
            self.word = 0;
            self.word_bits = 0;
        }
    }

    fn host_bytes(&self) -> u64 {
        self.g.host_bytes()
            + self.reached.host_bytes()
            + self.frontier.iter().map(Bitmap::host_bytes).sum::<u64>()
            + std::mem::size_of::<Self>() as u64
    }
}

// ---------------------------------------------------------------------------------------------
// kmer

/// Bytes of the read buffer the genome stream is read through (reused, as a reader's buffer).
const KMER_BUFFER_BYTES: u64 = 4 << 20;
/// Bytes of one hash-table bucket: the 2-bit-packed k-mer (u64), its count (u32), padding.
const KMER_BUCKET_BYTES: u64 = 16;
/// k, the k-mer length (31, as jellyfish's usual `-m 31`: 2 bits per base fit a u64).
const KMER_K: u64 = 31;

/// k-mer counting as GenomicsBench's `kmer-cnt` (jellyfish-like): a genome is streamed through a
/// read buffer one base per byte; at every base the 2-bit-packed k-mer ending there is hashed
/// into an open-addressing (linear probing) table at load factor 0.5 and its count incremented.
/// The genome is synthetic: the k-mer at position `p` is one of `buckets / 2` distinct k-mers,
/// uniformly by a hash of `p` (a genome's k-mers are mostly distinct; repeats spread over the
/// table). Probes as `kv`'s: home bucket by hash, displacement drawn from a measured
/// linear-probing table's distribution.
pub(crate) struct Kmer {
    buffer_bytes: u64,
    buffer_addr: u64,
    table_addr: u64,
    buckets: u64,
    pos: u64,
    kmer_key: u64,
    displacement_cdf: Vec<u32>,
    displacement_key: u64,
}

impl Kmer {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Kmer {
        // The buffer takes at most a sixteenth of the footprint; the table the rest.
        let buffer_bytes = (cfg.footprint / 16).clamp(4096, KMER_BUFFER_BYTES) / 4096 * 4096;
        let table = cfg.footprint - buffer_bytes;
        let mut rng = Rng::new(seed, 12);
        Kmer {
            buffer_bytes,
            buffer_addr: 0,
            table_addr: 0,
            buckets: (table / KMER_BUCKET_BYTES).max(2),
            pos: 0,
            kmer_key: rng.next_u64(),
            displacement_cdf: linear_probing_displacements(DISPLACEMENT_SAMPLE),
            displacement_key: rng.next_u64(),
        }
    }
}

impl Program for Kmer {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        let tb = self.buckets * KMER_BUCKET_BYTES;
        self.table_addr = mem.alloc(tb);
        self.buffer_addr = mem.alloc(self.buffer_bytes);
        touch_pages(q, self.table_addr, tb);
        touch_pages(q, self.buffer_addr, self.buffer_bytes);
    }

    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        // The next base, then the k-mer's probes (their addresses come from the loaded bases).
        let base_at = q.len();
        load(q, self.buffer_addr + self.pos % self.buffer_bytes, 1, 6);
        let kmer = mix(self.kmer_key, self.pos) % (self.buckets / 2).max(1);
        self.pos += 1;
        let r = (mix(self.displacement_key, kmer) % DISPLACEMENT_SAMPLE) as u32;
        let displacement = self.displacement_cdf.partition_point(|&c| c <= r) as u64;
        let mut b = bucket_of(kmer, self.buckets);
        let mut instrs = 4 + 2 * KMER_K as u32 / 8; // roll the k-mer and hash it
        let mut last = b;
        for _ in 0..=displacement {
            load_after(
                q,
                self.table_addr + b * KMER_BUCKET_BYTES,
                16,
                instrs,
                back_to(q, base_at),
            );
            instrs = 4;
            last = b;
            b = (b + 1) % self.buckets;
        }
        // The count of the matching bucket.
        store_after(q, self.table_addr + last * KMER_BUCKET_BYTES + 8, 4, 2, 1);
    }

    fn host_bytes(&self) -> u64 {
        self.displacement_cdf.capacity() as u64 * 4 + std::mem::size_of::<Self>() as u64
    }
}

// ---------------------------------------------------------------------------------------------
// memcached

/// Slab classes: chunk sizes from 96 bytes growing by memcached's factor 1.25 (`-f 1.25`),
/// rounded up to 8 bytes, 12 classes (96 B .. 1184 B).
const MC_CLASSES: usize = 12;
/// Bytes of a hash bucket (a pointer to the first item of its chain).
const MC_BUCKET_BYTES: u64 = 8;
/// Bytes of an item's header: LRU `next`/`prev`, hash chain `h_next`, time, flags, key.
const MC_HEADER_BYTES: u64 = 48;

fn mc_chunk_bytes(class: usize) -> u64 {
    let mut size = 96f64;
    for _ in 0..class {
        size *= 1.25;
    }
    (size as u64).div_ceil(8) * 8
}

/// A memcached-like store (memcached 1.6's `items.c` / `assoc.c` / `slabs.c`): items in slab
/// classes of 1 MiB pages, each class holding the same bytes (its items share the footprint
/// equally by bytes), a chained hash table of one pointer per item (memcached grows its table
/// to keep items per bucket at most 1.5; here 1), popularity zipfian over a seeded permutation
/// of the keys (`workload.zipf_theta`), `workload.get_ratio` gets.
///
/// A get loads the key's bucket, walks its hash chain (the items before the key: 0, 1, 2 or 3
/// with the Poisson(0.5) probabilities of a successful search at 1 item per bucket, drawn by a
/// hash of the key; each a dependent header load of another item), loads the item's header and
/// value lines, and marks it active (a flag store: memcached's segmented LRU bumps lazily). A
/// set finds the key the same way, writes header and value lines, and links the item at its
/// class's LRU head: stores of the class's head pointer, of the old head's `prev` and of the
/// item's `next`/`prev`. Approximation: memcached writes a set into a fresh chunk taken from
/// the class's free list or LRU tail and frees the old one; here the item keeps its chunk
/// (same lines written, not another address).
pub(crate) struct Memcached {
    items: u64,
    /// First key of each class (and the item count at the end).
    class_first: [u64; MC_CLASSES + 1],
    class_addr: [u64; MC_CLASSES],
    table_addr: u64,
    /// The slab-class array (LRU heads and tails), a small static array in memcached.
    heads_addr: u64,
    /// Last item linked at each class's LRU head.
    head_item: [u64; MC_CLASSES],
    popular: Bijection,
    zipf: Zipf,
    get_ratio: f64,
    chain_key: u64,
    rng: Rng,
}

impl Memcached {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Memcached {
        // Each class: the same bytes of chunks and their buckets.
        let per_class = cfg.footprint / MC_CLASSES as u64;
        let mut class_first = [0u64; MC_CLASSES + 1];
        let mut items = 0;
        for (c, first) in class_first.iter_mut().enumerate().take(MC_CLASSES) {
            *first = items;
            let n = (per_class / (mc_chunk_bytes(c) + MC_BUCKET_BYTES)).max(1);
            items += n;
        }
        class_first[MC_CLASSES] = items;
        let mut rng = Rng::new(seed, 13);
        Memcached {
            items,
            class_first,
            class_addr: [0; MC_CLASSES],
            table_addr: 0,
            heads_addr: 0,
            head_item: [0; MC_CLASSES],
            popular: Bijection::new(items, rng.next_u64()),
            zipf: Zipf::new(items, cfg.zipf_theta),
            get_ratio: cfg.get_ratio,
            chain_key: rng.next_u64(),
            rng,
        }
    }

    fn class_of(&self, key: u64) -> usize {
        self.class_first.partition_point(|&f| f <= key) - 1
    }

    /// Address of `key`'s item.
    fn item_addr(&self, key: u64) -> u64 {
        let c = self.class_of(key);
        self.class_addr[c] + (key - self.class_first[c]) * mc_chunk_bytes(c)
    }
}

impl Program for Memcached {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        let tb = self.items * MC_BUCKET_BYTES;
        self.table_addr = mem.alloc(tb);
        touch_pages(q, self.table_addr, tb);
        self.heads_addr = mem.alloc(MC_CLASSES as u64 * 16);
        // memcached's `-L` preallocation: `slabs_init` takes all of its memory in one large
        // chunk (`alloc_large_chunk`) and carves the slab pages out of it; each class's pages
        // lie together here, not rounded up to whole `MC_PAGE_BYTES` pages (the footprint stays
        // as requested).
        let bytes: Vec<u64> = (0..MC_CLASSES)
            .map(|c| {
                ((self.class_first[c + 1] - self.class_first[c]) * mc_chunk_bytes(c)).max(4096)
            })
            .collect();
        let mut at = mem.alloc(bytes.iter().sum());
        for (c, &b) in bytes.iter().enumerate() {
            self.class_addr[c] = at;
            touch_pages(q, at, b);
            self.head_item[c] = at;
            at += b;
        }
    }

    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        let key = self.popular.forward(self.zipf.sample(&mut self.rng));
        let is_get = self.rng.unit() < self.get_ratio;
        let bucket = bucket_of(key, self.items);
        load(q, self.table_addr + bucket * MC_BUCKET_BYTES, 8, 40);
        // Items before the key in its chain: Poisson(0.5).
        let u = unit(mix(self.chain_key, key));
        let before = if u < 0.6065 {
            0
        } else if u < 0.9098 {
            1
        } else if u < 0.9856 {
            2
        } else {
            3
        };
        for i in 0..before {
            let other = mix(self.chain_key ^ (i + 1), key) % self.items;
            load_after(q, self.item_addr(other), 16, 6, 1);
        }
        let item = self.item_addr(key);
        let c = self.class_of(key);
        let lines = mc_chunk_bytes(c).div_ceil(64);
        load_after(q, item, MC_HEADER_BYTES as u8, 8, 1);
        let header_at = q.len() - 1;
        if is_get {
            for l in 0..lines {
                load_after(q, item + l * 64, 64, 2, back_to(q, header_at));
            }
            store_after(q, item + 40, 1, 2, back_to(q, header_at));
        } else {
            for l in 0..lines {
                store_after(q, item + l * 64, 64, 2, back_to(q, header_at));
            }
            // Link at the LRU head: the class's head pointer, the old head's prev, the
            // item's next and prev.
            let head = self.heads_addr + c as u64 * 16;
            load(q, head, 8, 4);
            store_after(q, self.head_item[c] + 8, 8, 2, 1);
            store(q, head, 8, 1);
            store(q, item, 16, 2);
            self.head_item[c] = item;
        }
    }

    fn host_bytes(&self) -> u64 {
        std::mem::size_of::<Self>() as u64
    }
}

// ---------------------------------------------------------------------------------------------
// dfs

/// Depth-first search as GraphBIG's `bench_DFS`: an explicit stack; a popped vertex already
/// visited is skipped, else it is marked and every unvisited neighbour pushed. The stack holds
/// at most `n / 16` entries (bounded host memory): a push beyond that sets the vertex's bit in a
/// spill bitmap instead, and when the stack empties the bitmap is scanned in id order (each
/// word loaded and cleared) and its vertices pushed, so every reachable vertex is still visited
/// (the order departs from a strict DFS there). When both are empty the search ends:
/// `visited` is reset and a new source drawn.
pub(crate) struct Dfs {
    g: ImplicitGraph,
    a: CsrAddrs,
    visited_addr: u64,
    stack_addr: u64,
    spill_addr: u64,
    visited: Bitmap,
    stack: Vec<u32>,
    stack_cap: usize,
    spill: Bitmap,
    spilled: bool,
    /// Next word of the spill bitmap to scan.
    spill_word: u64,
    edges_left: Option<(u64, u64)>,
    resetting: Option<u64>,
    rng: Rng,
}

/// Per-vertex bytes of DFS's arrays in eighths: `visited` (u32 per vertex, GraphBIG's vertex
/// property), a stack of n/16 u32 entries (2 eighths), the spill bitmap (1 eighth).
const DFS_EIGHTHS: u64 = 32 + 2 + 1;

impl Dfs {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Result<Dfs, String> {
        let g = graph(cfg, DFS_EIGHTHS, seed)?;
        let n = g.vertices();
        let stack_cap = (n / 16).max(16) as usize;
        Ok(Dfs {
            a: CsrAddrs::default(),
            visited_addr: 0,
            stack_addr: 0,
            spill_addr: 0,
            visited: Bitmap::new(n),
            stack: Vec::with_capacity(stack_cap),
            stack_cap,
            spill: Bitmap::new(n),
            spilled: false,
            spill_word: 0,
            edges_left: None,
            resetting: None,
            rng: Rng::new(seed, 14),
            g,
        })
    }

    fn start_search(&mut self, q: &mut Vec<Event>) {
        let src = random_source(&self.g, &mut self.rng);
        self.stack.clear();
        self.stack.push(src as u32);
        store(q, self.stack_addr, 4, 2);
    }

    fn edges(&mut self, e: u64, hi: u64, offsets_at: Option<usize>, q: &mut Vec<Event>) {
        let end = hi.min(e + EDGE_CHUNK);
        for e in e..end {
            let w = self.g.target(e);
            let dep = offsets_at.map_or(0, |at| back_to(q, at));
            load_after(q, self.a.neighbours + e * 4, 4, 2, dep);
            load_after(q, self.visited_addr + w * 4, 4, 2, 1);
            if !self.visited.get(w) {
                if self.stack.len() < self.stack_cap {
                    let top = self.stack.len() as u64;
                    store_after(q, self.stack_addr + top * 4, 4, 2, 2);
                    self.stack.push(w as u32);
                } else if self.spill.insert(w) {
                    let word = self.spill_addr + w / 64 * 8;
                    load_after(q, word, 8, 2, 2);
                    store_after(q, word, 8, 1, 1);
                    self.spilled = true;
                }
            }
        }
        self.edges_left = (end < hi).then_some((end, hi));
    }
}

impl Program for Dfs {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        self.g.build();
        let n = self.g.vertices();
        self.a = alloc_csr(&self.g, mem, q);
        self.visited_addr = mem.alloc(n * 4);
        let sb = self.stack_cap as u64 * 4;
        self.stack_addr = mem.alloc(sb);
        let pb = self.spill.words() * 8;
        self.spill_addr = mem.alloc(pb);
        touch_pages(q, self.visited_addr, n * 4);
        touch_pages(q, self.stack_addr, sb);
        touch_pages(q, self.spill_addr, pb);
        self.start_search(&mut q.events);
    }

    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        if let Some((e, hi)) = self.edges_left {
            self.edges(e, hi, None, q);
            return;
        }
        if let Some(at) = self.resetting {
            self.resetting = reset_sweep(q, at, self.visited_addr + self.g.vertices() * 4);
            if self.resetting.is_none() {
                self.start_search(q);
            }
            return;
        }
        while self.stack.is_empty() && self.spilled {
            // Refill the stack from the spill bitmap's next non-empty word.
            while self.spill_word < self.spill.words() {
                let w = self.spill_word;
                self.spill_word += 1;
                let mut bits = self.spill.word(w);
                if bits == 0 {
                    continue;
                }
                load(q, self.spill_addr + w * 8, 8, 2);
                store(q, self.spill_addr + w * 8, 8, 1);
                self.spill.clear_word(w);
                while bits != 0 {
                    let v = w * 64 + bits.trailing_zeros() as u64;
                    bits &= bits - 1;
                    let top = self.stack.len() as u64;
                    store(q, self.stack_addr + top * 4, 4, 2);
                    self.stack.push(v as u32);
                }
                return;
            }
            // End of the scan: vertices spilled behind the cursor meanwhile need another.
            self.spill_word = 0;
            self.spilled = (0..self.spill.words()).any(|w| self.spill.word(w) != 0);
        }
        let Some(v) = self.stack.pop() else {
            self.visited.clear();
            self.resetting = Some(self.visited_addr);
            self.step(_mem, q);
            return;
        };
        let v = v as u64;
        let top = self.stack.len() as u64;
        load(q, self.stack_addr + top * 4, 4, 2);
        load_after(q, self.visited_addr + v * 4, 4, 2, 1);
        if !self.visited.insert(v) {
            return;
        }
        store_after(q, self.visited_addr + v * 4, 4, 1, 2);
        let offsets_at = q.len();
        load_after(q, self.a.offsets + v * 8, 8, 2, 3);
        load_after(q, self.a.offsets + (v + 1) * 8, 8, 1, 4);
        let lo = self.g.first_edge(v);
        self.edges(lo, lo + self.g.degree(v), Some(offsets_at), q);
    }

    fn host_bytes(&self) -> u64 {
        self.g.host_bytes()
            + self.visited.host_bytes()
            + self.spill.host_bytes()
            + self.stack.capacity() as u64 * 4
            + std::mem::size_of::<Self>() as u64
    }
}

// ---------------------------------------------------------------------------------------------
// bc

/// Deepest level of one betweenness search: a vertex's depth is a byte on the host (depth + 1;
/// 0 = not reached), so vertices beyond depth 254 are left unreached (RMAT searches end within
/// a few dozen levels).
const BC_MAX_DEPTH: u8 = u8::MAX - 1;

/// Per-vertex bytes of BC's arrays in eighths: `depth`, `sigma`, `delta`, `score` (4 B each)
/// and the BFS queue (a u32 per vertex).
const BC_EIGHTHS: u64 = 5 * 32;

/// Betweenness centrality as GraphBIG's `bench_betweennessCentr` (Brandes' algorithm; arrays
/// and level-synchronous order as GAP's `bc`): from a source, a BFS records every vertex's
/// depth and its number of shortest paths `sigma` (per edge to the next level, `sigma[w] +=
/// sigma[u]`), appending new vertices to a queue of n entries; then, level by level from the
/// deepest up, each vertex sums the dependencies of its successors (`delta[u] += sigma[u] /
/// sigma[w] * (1 + delta[w])` for every neighbour `w` one level deeper) and adds them to its
/// `score`. Then `depth`, `sigma` and `delta` are reset and a new source is drawn.
///
/// Host state: the graph's degree index and one byte per vertex (its depth, which decides
/// which neighbours are successors). Within a level, vertices are processed in id order (found
/// by scanning the host depths, as a dense frontier would), not in the order the queue received
/// them; the queue's addresses are read in sequence as GAP's sliding queue is.
pub(crate) struct Bc {
    g: ImplicitGraph,
    a: CsrAddrs,
    pub(super) depth_addr: u64,
    pub(super) sigma_addr: u64,
    pub(super) delta_addr: u64,
    pub(super) score_addr: u64,
    queue_addr: u64,
    /// Host depths plus one (0: not reached in this search). Zeroed (calloc'ed), so a run
    /// refused for its host memory never touches it.
    depth: Vec<u8>,
    /// Queue position of each level's first vertex, up to the level after the current one.
    level_start: Vec<u64>,
    /// The queue's length.
    tail: u64,
    /// Whether the dependency accumulation (backward) phase is under way.
    backward: bool,
    level: u8,
    /// Next vertex id to look at in the current level, and the queue position of the next.
    cursor: u64,
    pos: u64,
    edges_left: Option<(u64, u64, u64)>,
    /// A reset under way: which array (0 depth, 1 sigma, 2 delta) and where it goes on.
    resetting: Option<(usize, u64)>,
    rng: Rng,
}

impl Bc {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Result<Bc, String> {
        let g = graph(cfg, BC_EIGHTHS, seed)?;
        let n = g.vertices();
        Ok(Bc {
            a: CsrAddrs::default(),
            depth_addr: 0,
            sigma_addr: 0,
            delta_addr: 0,
            score_addr: 0,
            queue_addr: 0,
            depth: vec![0; n as usize],
            level_start: Vec::with_capacity(BC_MAX_DEPTH as usize + 3),
            tail: 0,
            backward: false,
            level: 0,
            cursor: 0,
            pos: 0,
            edges_left: None,
            resetting: None,
            rng: Rng::new(seed, 15),
            g,
        })
    }

    fn start_search(&mut self, q: &mut Vec<Event>) {
        let src = random_source(&self.g, &mut self.rng);
        self.depth[src as usize] = 1;
        store(q, self.depth_addr + src * 4, 4, 2);
        store(q, self.sigma_addr + src * 4, 4, 1);
        store(q, self.queue_addr, 4, 2);
        self.level_start.clear();
        self.level_start.extend_from_slice(&[0, 1]);
        self.tail = 1;
        self.backward = false;
        self.level = 0;
        self.cursor = 0;
        self.pos = 0;
    }

    /// Edges `e..hi` of `u` (at most `EDGE_CHUNK`); the vertex's own stores after its last.
    fn edges(&mut self, u: u64, e: u64, hi: u64, offsets_at: Option<usize>, q: &mut Vec<Event>) {
        let end = hi.min(e + EDGE_CHUNK);
        let next = self.level + 1;
        for e in e..end {
            let w = self.g.target(e);
            let dep = offsets_at.map_or(0, |at| back_to(q, at));
            let neighbour_at = q.len();
            load_after(q, self.a.neighbours + e * 4, 4, 2, dep);
            load_after(q, self.depth_addr + w * 4, 4, 2, 1);
            let mut d = self.depth[w as usize];
            if !self.backward && d == 0 && next <= BC_MAX_DEPTH {
                // A new vertex: its depth, and its place at the queue's tail.
                d = next + 1;
                self.depth[w as usize] = d;
                store_after(q, self.depth_addr + w * 4, 4, 1, 2);
                store_after(
                    q,
                    self.queue_addr + self.tail * 4,
                    4,
                    2,
                    back_to(q, neighbour_at),
                );
                self.tail += 1;
            }
            if u16::from(d) == u16::from(next) + 1 {
                // A successor: forward, sigma[w] += sigma[u]; backward, its sigma and delta.
                load_after(q, self.sigma_addr + w * 4, 4, 2, back_to(q, neighbour_at));
                if self.backward {
                    load_after(q, self.delta_addr + w * 4, 4, 6, back_to(q, neighbour_at));
                } else {
                    store_after(q, self.sigma_addr + w * 4, 4, 2, 1);
                }
            }
        }
        if end < hi {
            self.edges_left = Some((u, end, hi));
            return;
        }
        self.edges_left = None;
        if self.backward {
            store(q, self.delta_addr + u * 4, 4, 2);
            load(q, self.score_addr + u * 4, 4, 1);
            store_after(q, self.score_addr + u * 4, 4, 2, 1);
        }
    }

    /// Where the current level's next vertex is, if any (host scan of the depths).
    fn next_in_level(&mut self) -> Option<u64> {
        let from = self.cursor as usize;
        let stored = self.level + 1;
        let at = self.depth[from..].iter().position(|&d| d == stored)?;
        let u = (from + at) as u64;
        self.cursor = u + 1;
        Some(u)
    }
}

impl Program for Bc {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        self.g.build();
        let n = self.g.vertices();
        self.a = alloc_csr(&self.g, mem, q);
        for addr in [
            &mut self.depth_addr,
            &mut self.sigma_addr,
            &mut self.delta_addr,
            &mut self.score_addr,
            &mut self.queue_addr,
        ] {
            *addr = mem.alloc(n * 4);
            touch_pages(q, *addr, n * 4);
        }
        self.start_search(&mut q.events);
    }

    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        if let Some((u, e, hi)) = self.edges_left {
            self.edges(u, e, hi, None, q);
            return;
        }
        if let Some((array, at)) = self.resetting {
            let n = self.g.vertices();
            let base = [self.depth_addr, self.sigma_addr, self.delta_addr][array];
            self.resetting = match reset_sweep(q, at, base + n * 4) {
                Some(next) => Some((array, next)),
                None if array < 2 => Some((array + 1, [self.sigma_addr, self.delta_addr][array])),
                None => {
                    self.start_search(q);
                    None
                }
            };
            return;
        }
        loop {
            if let Some(u) = self.next_in_level() {
                load(q, self.queue_addr + self.pos * 4, 4, 2);
                self.pos += 1;
                let offsets_at = q.len();
                load_after(q, self.a.offsets + u * 8, 8, 2, 1);
                load_after(q, self.a.offsets + (u + 1) * 8, 8, 1, 2);
                load_after(q, self.sigma_addr + u * 4, 4, 1, 3);
                let lo = self.g.first_edge(u);
                self.edges(u, lo, lo + self.g.degree(u), Some(offsets_at), q);
                return;
            }
            // The level is over.
            let d = self.level as usize;
            if !self.backward {
                if self.tail > self.level_start[d + 1] {
                    // Level d + 1's vertices are all queued: it starts, the one after it at
                    // the tail.
                    self.level += 1;
                    self.level_start.push(self.tail);
                    self.cursor = 0;
                    self.pos = self.level_start[d + 1];
                    continue;
                }
                // The deepest level has no successors: accumulate from the one above it.
                self.backward = true;
                if d == 0 {
                    self.resetting = Some((0, self.depth_addr));
                    self.depth.fill(0);
                    return self.step(_mem, q);
                }
                self.level -= 1;
            } else if d == 0 {
                self.resetting = Some((0, self.depth_addr));
                self.depth.fill(0);
                return self.step(_mem, q);
            } else {
                self.level -= 1;
            }
            self.cursor = 0;
            self.pos = self.level_start[self.level as usize];
        }
    }

    fn host_bytes(&self) -> u64 {
        self.g.host_bytes()
            + self.depth.capacity() as u64
            + self.level_start.capacity() as u64 * 8
            + std::mem::size_of::<Self>() as u64
    }
}
