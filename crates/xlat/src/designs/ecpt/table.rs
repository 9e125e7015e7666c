//! A clustered d-ary cuckoo hash table with elastic (gradual) resizing: the storage of one page
//! size of one process in `ecpt` and `mehpt`, and of the cuckoo walk tables.
//!
//! Contract:
//! - every cluster (one 64-byte line: a key plus 8 values) lives in exactly one way, at the index
//!   [`Way::locate`] gives for its hash in that way; inserts, cuckoo kicks, rehashes and resizes all
//!   keep that true, so a lookup needs one probe per way (ECPT §II-B, ME-HPT §IV-C);
//! - while a way resizes, its rehash pointer splits the old index space: old indices at or above
//!   the pointer are still live in the old table, those below it use the new table;
//! - every byte of table memory comes from the buddy allocator through [`PtMemory`], as one block
//!   per way (`chunks = None`, ECPT) or as chunks named by an L2P table (ME-HPT); an allocation
//!   that cannot be satisfied is an error naming the design and the size, never silently skipped;
//! - a cuckoo insertion that fails after `max_kicks` displacements triggers a synchronous rebuild
//!   into larger ways (counted in `forced_rebuilds`), so no entry is ever dropped.

use super::hash::{hash, HashKind, MAX_WAYS};
use crate::addr::{format_bytes, Paddr, Pfn, BASE_PAGE_BYTES, BASE_PAGE_SHIFT, LINE_BYTES};
use crate::designs::PtMemory;
use crate::os::{OsError, PhysMem};
use crate::rng::Rng;

/// Values per cluster (8 consecutive PTEs per 64-byte line).
pub const CLUSTER: usize = 8;
/// Key of an empty slot.
pub const EMPTY_KEY: u64 = u64::MAX;
/// Buckets of the re-insertion histogram: 0..=8 kicks and "9 or more".
pub const KICK_BUCKETS: usize = 10;
/// Subtables of the L2P table per way (one per page size).
pub const L2P_SUBTABLES: usize = 3;

/// One slot: a cluster of 8 values (0 = absent) under one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// Cluster key ([`EMPTY_KEY`] for a free slot).
    pub key: u64,
    /// The values (PTEs or walk-table entries); 0 means absent.
    pub vals: [u64; CLUSTER],
}

impl Cluster {
    const EMPTY: Cluster = Cluster {
        key: EMPTY_KEY,
        vals: [0; CLUSTER],
    };

    #[inline]
    fn is_empty(&self) -> bool {
        self.key == EMPTY_KEY
    }
}

/// Chunked ways (ME-HPT): chunk sizes and L2P table capacity.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkPolicy {
    /// Allowed chunk sizes in bytes, ascending, powers of two of at least 4 KiB.
    pub sizes_bytes: Vec<u64>,
    /// L2P entries per (way, page size) subtable.
    pub entries_per_subtable: u32,
    /// Whether a subtable may use entries of the other page sizes of its way (§V-A).
    pub stealing: bool,
}

impl ChunkPolicy {
    /// L2P entries subtable `sub` of a way may use, given what the way's subtables use now.
    pub fn allowance(&self, used: &[u32; L2P_SUBTABLES], sub: usize) -> u32 {
        let e = self.entries_per_subtable;
        if !self.stealing {
            return e;
        }
        // One pool of 3e entries per way; a subtable grows to at most 2e (its own plus those of
        // the middle subtable, or part of the opposite end, as in Fig. 6).
        let others: u32 = (0..L2P_SUBTABLES)
            .filter(|s| *s != sub)
            .map(|s| used[s])
            .sum();
        (2 * e).min((3 * e).saturating_sub(others))
    }
}

/// How a table's ways get memory and resize.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    /// Number of ways (2..=4).
    pub ways: usize,
    /// Hash family.
    pub hash: HashKind,
    /// Slots per way at creation (a power of two, at least 64 = one 4 KiB frame).
    pub initial_slots: u64,
    /// Occupancy that triggers an upsize.
    pub upsize_occupancy: f64,
    /// Occupancy that triggers a downsize.
    pub downsize_occupancy: f64,
    /// Cuckoo displacements allowed per insertion before a forced rebuild.
    pub max_kicks: u32,
    /// Entries rehashed per update of the table while a resize is in progress.
    pub rehash_per_update: u32,
    /// Resize one way at a time with weighted insertion (ME-HPT §IV-D) instead of all ways.
    pub per_way: bool,
    /// Double / halve ways in place when the chunk size allows (ME-HPT §IV-C).
    pub in_place: bool,
    /// Chunked ways behind an L2P table; `None` = each way is one contiguous block (ECPT).
    pub chunks: Option<ChunkPolicy>,
}

/// Allocation cycles charged to the OS, and how many allocations were made.
#[derive(Clone, Debug, Default)]
pub struct AllocCost {
    /// Cycles of every allocation so far.
    pub cycles: u64,
    /// Allocations made.
    pub allocations: u64,
}

/// What table operations need from their owner: memory, cost accounting and the L2P usage of the
/// process (for chunked tables).
pub struct Ctx<'a> {
    /// Physical memory.
    pub phys: &'a mut PhysMem,
    /// The design's page-table memory tally.
    pub mem: &'a mut PtMemory,
    /// Allocation cost accumulator.
    pub cost: &'a mut AllocCost,
    /// L2P entries used per way and page-size subtable, for chunked tables.
    pub l2p: &'a mut [[u32; L2P_SUBTABLES]; MAX_WAYS],
    /// This table's L2P subtable (its page size index).
    pub sub: usize,
    /// Design name, for error messages.
    pub name: &'static str,
}

impl Ctx<'_> {
    fn alloc(&mut self, order: u8, what: &str) -> Result<Pfn, OsError> {
        let bytes = BASE_PAGE_BYTES << order;
        // The real work physical memory did for this block: zeroing, plus direct compaction
        // when no block of this size was free (ME-HPT §III's cost of contiguity).
        let work_before = self.phys.alloc_work_cycles();
        let got = self.mem.alloc(self.phys, order);
        self.cost.cycles += self.phys.alloc_work_cycles() - work_before;
        self.cost.allocations += 1;
        got.map_err(|e| {
            OsError(format!(
                "{}: cannot allocate a contiguous {} block for {what}; the design cannot continue \
                 (as ECPT in ME-HPT §III beyond FMFI 0.7): {e}",
                self.name,
                format_bytes(bytes)
            ))
        })
    }
}

/// Physical placement of one way: equal chunks (one chunk = the whole way for ECPT).
#[derive(Clone, Debug, Default)]
pub struct Layout {
    chunk_order: u8,
    chunks: Vec<Pfn>,
}

impl Layout {
    /// Bytes per chunk.
    pub fn chunk_bytes(&self) -> u64 {
        BASE_PAGE_BYTES << self.chunk_order
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.chunks.len() as u64 * self.chunk_bytes()
    }

    /// Chunks held (= L2P entries used for a chunked way).
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }

    /// The L2P entry and the byte offset inside its chunk of slot `idx`: the slot's byte offset in
    /// the way divided by, and modulo, the chunk size (ME-HPT §IV-A, Fig. 2b).
    #[inline]
    pub fn l2p_index(chunk_bytes: u64, idx: u64) -> (usize, u64) {
        let byte = idx * LINE_BYTES;
        ((byte / chunk_bytes) as usize, byte % chunk_bytes)
    }

    /// Physical address of slot `idx`.
    #[inline]
    pub fn slot_addr(&self, idx: u64) -> Paddr {
        let shift = self.chunk_order as u32 + BASE_PAGE_SHIFT;
        let (entry, offset) = (
            ((idx * LINE_BYTES) >> shift) as usize,
            (idx * LINE_BYTES) & ((1 << shift) - 1),
        );
        Paddr(self.chunks[entry].addr().0 + offset)
    }

    fn free(&mut self, ctx: &mut Ctx<'_>) {
        for pfn in self.chunks.drain(..) {
            ctx.mem.free(ctx.phys, pfn, self.chunk_order);
        }
    }

    /// Allocate chunks until `bytes` are covered.
    fn grow(&mut self, ctx: &mut Ctx<'_>, bytes: u64, what: &str) -> Result<(), OsError> {
        while self.bytes() < bytes {
            let pfn = ctx.alloc(self.chunk_order, what)?;
            self.chunks.push(pfn);
        }
        Ok(())
    }

    /// Free whole chunks beyond the first `bytes`.
    fn shrink(&mut self, ctx: &mut Ctx<'_>, bytes: u64) {
        let keep = bytes.div_ceil(self.chunk_bytes()).max(1) as usize;
        while self.chunks.len() > keep {
            let pfn = self.chunks.pop().expect("more chunks than kept");
            ctx.mem.free(ctx.phys, pfn, self.chunk_order);
        }
    }
}

fn order_of(bytes: u64) -> u8 {
    debug_assert!(bytes.is_power_of_two() && bytes >= BASE_PAGE_BYTES);
    (bytes.trailing_zeros() - BASE_PAGE_SHIFT) as u8
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// The new table shares the old one's memory (one more / one fewer index bit).
    InPlace,
    /// A separate new table; the old one is freed when the rehash pointer reaches its end.
    OutOfPlace,
}

/// A resize in progress in one way.
#[derive(Clone, Debug)]
struct Migration {
    old_bits: u32,
    /// Next old index to rehash.
    ptr: u64,
    /// Old index at which the rehash is complete.
    end: u64,
    mode: Mode,
    upsize: bool,
    /// Out-of-place only: the old table and its memory.
    old: Vec<Cluster>,
    old_layout: Layout,
    examined: u64,
    moved: u64,
}

/// One way of a table.
#[derive(Clone, Debug)]
pub struct Way {
    /// log2 of the slots of the current (target) table.
    bits: u32,
    slots: Vec<Cluster>,
    layout: Layout,
    /// Entries in this way (old and new table).
    count: u64,
    mig: Option<Migration>,
}

#[inline]
fn mask(bits: u32) -> u64 {
    (1u64 << bits) - 1
}

impl Way {
    /// Where an entry with hash `h` lives: `(in the old out-of-place table, index)`.
    #[inline]
    pub fn locate(&self, h: u64) -> (bool, u64) {
        match &self.mig {
            None => (false, h & mask(self.bits)),
            Some(m) => {
                let io = h & mask(m.old_bits);
                if io >= m.ptr {
                    (m.mode == Mode::OutOfPlace, io)
                } else {
                    (false, h & mask(self.bits))
                }
            }
        }
    }

    #[inline]
    fn slot(&self, old: bool, idx: u64) -> &Cluster {
        match (&self.mig, old) {
            (Some(m), true) => &m.old[idx as usize],
            _ => &self.slots[idx as usize],
        }
    }

    #[inline]
    fn slot_mut(&mut self, old: bool, idx: u64) -> &mut Cluster {
        match (&mut self.mig, old) {
            (Some(m), true) => &mut m.old[idx as usize],
            _ => &mut self.slots[idx as usize],
        }
    }

    #[inline]
    fn addr(&self, old: bool, idx: u64) -> Paddr {
        match (&self.mig, old) {
            (Some(m), true) => m.old_layout.slot_addr(idx),
            _ => self.layout.slot_addr(idx),
        }
    }

    fn capacity(&self) -> u64 {
        1 << self.bits
    }

    fn bytes(&self) -> u64 {
        self.layout.bytes() + self.mig.as_ref().map_or(0, |m| m.old_layout.bytes())
    }
}

/// Counters of one table (summed over tables for the report).
#[derive(Clone, Debug, Default)]
pub struct TableStats {
    /// New clusters inserted.
    pub inserts: u64,
    /// Placements (inserts and rehash moves) that went through cuckoo insertion.
    pub placements: u64,
    /// Cuckoo displacements over all placements.
    pub reinsertions: u64,
    /// Placements by displacements: 0..=8, 9+.
    pub kick_hist: [u64; KICK_BUCKETS],
    /// Upsizes per way.
    pub upsizes: [u64; MAX_WAYS],
    /// Downsizes per way.
    pub downsizes: [u64; MAX_WAYS],
    /// Upsizes whose rehash completed, with at least one entry examined.
    pub upsizes_measured: u64,
    /// Sum over those upsizes of (entries moved / entries rehashed).
    pub moved_fraction_sum: f64,
    /// In-place upsizes among them (chunk switches and ECPT resizes are out of place).
    pub in_place_upsizes_measured: u64,
    /// Sum of the moved fractions of those in-place upsizes.
    pub in_place_moved_fraction_sum: f64,
    /// Entries rehashed by upsizes.
    pub upsize_examined: u64,
    /// Entries that changed slot in those rehashes.
    pub upsize_moved: u64,
    /// Synchronous rebuilds after a failed cuckoo insertion.
    pub forced_rebuilds: u64,
    /// Resizes that changed the chunk size (out of place by construction).
    pub chunk_switches: u64,
    /// Updates (value writes) of the table.
    pub updates: u64,
    /// Updates while some way was resizing (two tables co-existing).
    pub updates_during_resize: u64,
}

impl TableStats {
    /// Add `o` into `self`.
    pub fn merge(&mut self, o: &TableStats) {
        self.inserts += o.inserts;
        self.placements += o.placements;
        self.reinsertions += o.reinsertions;
        for i in 0..KICK_BUCKETS {
            self.kick_hist[i] += o.kick_hist[i];
        }
        for w in 0..MAX_WAYS {
            self.upsizes[w] += o.upsizes[w];
            self.downsizes[w] += o.downsizes[w];
        }
        self.upsizes_measured += o.upsizes_measured;
        self.moved_fraction_sum += o.moved_fraction_sum;
        self.in_place_upsizes_measured += o.in_place_upsizes_measured;
        self.in_place_moved_fraction_sum += o.in_place_moved_fraction_sum;
        self.upsize_examined += o.upsize_examined;
        self.upsize_moved += o.upsize_moved;
        self.forced_rebuilds += o.forced_rebuilds;
        self.chunk_switches += o.chunk_switches;
        self.updates += o.updates;
        self.updates_during_resize += o.updates_during_resize;
    }
}

/// A clustered d-ary cuckoo hash table with elastic resizing.
#[derive(Clone, Debug)]
pub struct ClusterTable {
    p: Policy,
    ways: Vec<Way>,
    rng: Rng,
    initial_bits: u32,
    /// Round-robin cursor over migrating ways.
    rr: usize,
    /// Counters.
    pub stats: TableStats,
}

impl ClusterTable {
    /// An empty table with `p.initial_slots` slots per way. `seed` separates the random way
    /// choices of different tables.
    pub fn new(p: &Policy, ctx: &mut Ctx<'_>, seed: u64) -> Result<ClusterTable, OsError> {
        let initial_bits = p.initial_slots.trailing_zeros();
        let mut t = ClusterTable {
            p: p.clone(),
            ways: Vec::with_capacity(p.ways),
            rng: Rng::new(seed, 0xc0c0),
            initial_bits,
            rr: 0,
            stats: TableStats::default(),
        };
        for w in 0..p.ways {
            let layout = t.fresh_layout(ctx, w, initial_bits, None, true)?;
            t.ways.push(Way {
                bits: initial_bits,
                slots: vec![Cluster::EMPTY; 1 << initial_bits],
                layout,
                count: 0,
                mig: None,
            });
            t.sync_l2p(ctx, w);
        }
        Ok(t)
    }

    /// Number of ways.
    pub fn ways(&self) -> usize {
        self.ways.len()
    }

    /// Clusters held.
    pub fn clusters(&self) -> u64 {
        self.ways.iter().map(|w| w.count).sum()
    }

    /// Bytes of memory held (both tables of a way that is resizing out of place).
    pub fn bytes(&self) -> u64 {
        self.ways.iter().map(Way::bytes).sum()
    }

    /// Bytes of the current table of each way (its logical size).
    pub fn way_bytes(&self) -> impl Iterator<Item = u64> + '_ {
        self.ways.iter().map(|w| w.capacity() * LINE_BYTES)
    }

    /// Chunk size of each way's current table.
    pub fn chunk_bytes(&self) -> impl Iterator<Item = u64> + '_ {
        self.ways.iter().map(|w| w.layout.chunk_bytes())
    }

    /// Whether some way is resizing.
    pub fn resizing(&self) -> bool {
        self.ways.iter().any(|w| w.mig.is_some())
    }

    /// The slot address probed in way `w` for `key`, and the cluster if it is there.
    #[inline]
    pub fn probe(&self, w: usize, key: u64) -> (Paddr, Option<&Cluster>) {
        let way = &self.ways[w];
        let (old, idx) = way.locate(hash(self.p.hash, w, key));
        let c = way.slot(old, idx);
        (way.addr(old, idx), (c.key == key).then_some(c))
    }

    /// Hint the host to fetch the slots a probe of `key` will read in every way (speed only).
    #[inline]
    pub fn prefetch(&self, key: u64) {
        for (w, way) in self.ways.iter().enumerate() {
            let (old, idx) = way.locate(hash(self.p.hash, w, key));
            crate::prefetch::host_prefetch_object(way.slot(old, idx));
        }
    }

    /// The cluster stored under `key`.
    pub fn get(&self, key: u64) -> Option<&Cluster> {
        (0..self.ways.len()).find_map(|w| self.probe(w, key).1)
    }

    fn find(&self, key: u64) -> Option<(usize, bool, u64)> {
        (0..self.ways.len()).find_map(|w| {
            let way = &self.ways[w];
            let (old, idx) = way.locate(hash(self.p.hash, w, key));
            (way.slot(old, idx).key == key).then_some((w, old, idx))
        })
    }

    /// Set value `i` of cluster `key` to `v` (0 clears it; a cluster with no value left is
    /// removed). Then rehash `rehash_per_update` entries of a resize in progress and start a
    /// resize if an occupancy threshold was crossed.
    pub fn set(&mut self, ctx: &mut Ctx<'_>, key: u64, i: usize, v: u64) -> Result<(), OsError> {
        self.stats.updates += 1;
        if self.resizing() {
            self.stats.updates_during_resize += 1;
        }
        match self.find(key) {
            Some((w, old, idx)) => {
                let way = &mut self.ways[w];
                let c = way.slot_mut(old, idx);
                c.vals[i] = v;
                if c.vals.iter().all(|x| *x == 0) {
                    *c = Cluster::EMPTY;
                    way.count -= 1;
                }
            }
            None if v == 0 => return Ok(()),
            None => {
                let mut c = Cluster {
                    key,
                    vals: [0; CLUSTER],
                };
                c.vals[i] = v;
                self.stats.inserts += 1;
                self.place_counted(ctx, c, None)?;
            }
        }
        for _ in 0..self.p.rehash_per_update {
            if !self.rehash_one(ctx)? {
                break;
            }
        }
        self.maybe_resize(ctx)
    }

    fn record_kicks(&mut self, kicks: u32) {
        self.stats.placements += 1;
        self.stats.reinsertions += kicks as u64;
        self.stats.kick_hist[(kicks as usize).min(KICK_BUCKETS - 1)] += 1;
    }

    /// Pick a way for an insertion (or a displaced entry, never `exclude`): uniformly, or with
    /// per-way resizing weighted by free slots, a way that is larger than another and already
    /// past the upsize threshold getting no weight (ME-HPT §IV-D).
    fn pick_way(&mut self, exclude: Option<usize>) -> usize {
        let d = self.ways.len();
        if self.p.per_way {
            let min_bits = self.ways.iter().map(|w| w.bits).min().unwrap_or(0);
            let mut weights = [0u64; MAX_WAYS];
            let mut total = 0u64;
            for (w, way) in self.ways.iter().enumerate() {
                let cap = way.capacity();
                let full = way.count as f64 >= self.p.upsize_occupancy * cap as f64;
                if Some(w) != exclude && !(way.bits > min_bits && full) {
                    weights[w] = cap.saturating_sub(way.count);
                    total += weights[w];
                }
            }
            if total > 0 {
                let mut r = self.rng.below(total);
                for (w, wt) in weights.iter().enumerate().take(d) {
                    if r < *wt {
                        return w;
                    }
                    r -= wt;
                }
            }
        }
        match exclude {
            None => self.rng.below(d as u64) as usize,
            Some(x) => {
                let r = self.rng.below(d as u64 - 1) as usize;
                if r >= x {
                    r + 1
                } else {
                    r
                }
            }
        }
    }

    /// Cuckoo insertion of `c`, starting in way `start` (or a picked one). Returns the number of
    /// displacements, or the entry left without a slot after `max_kicks` displacements.
    fn place(&mut self, mut c: Cluster, start: Option<usize>) -> Result<u32, Cluster> {
        let mut way = start.unwrap_or_else(|| self.pick_way(None));
        let mut kicks = 0u32;
        loop {
            let (old, idx) = self.ways[way].locate(hash(self.p.hash, way, c.key));
            let w = &mut self.ways[way];
            let slot = w.slot_mut(old, idx);
            if slot.is_empty() {
                *slot = c;
                w.count += 1;
                return Ok(kicks);
            }
            // The occupant leaves this way and `c` takes its slot: the way's count is unchanged.
            std::mem::swap(slot, &mut c);
            kicks += 1;
            if kicks > self.p.max_kicks {
                return Err(c);
            }
            way = self.pick_way(Some(way));
        }
    }

    /// Place `c` as an insertion or a rehash, counting its displacements; a failed placement
    /// forces a rebuild.
    fn place_counted(
        &mut self,
        ctx: &mut Ctx<'_>,
        c: Cluster,
        start: Option<usize>,
    ) -> Result<(), OsError> {
        match self.place(c, start) {
            Ok(kicks) => {
                self.record_kicks(kicks);
                Ok(())
            }
            Err(homeless) => {
                self.record_kicks(self.p.max_kicks + 1);
                self.rebuild(ctx, vec![homeless])
            }
        }
    }

    /// Rehash one entry of a resize in progress (ways in round-robin). Returns false when no way
    /// is resizing.
    fn rehash_one(&mut self, ctx: &mut Ctx<'_>) -> Result<bool, OsError> {
        let d = self.ways.len();
        let Some(w) = (0..d)
            .map(|k| (self.rr + k) % d)
            .find(|w| self.ways[*w].mig.is_some())
        else {
            return Ok(false);
        };
        self.rr = (w + 1) % d;
        let out_of_place = self.ways[w].mig.as_ref().map(|m| m.mode) == Some(Mode::OutOfPlace);
        // Skip empty slots (the OS knows where entries are; skipping costs nothing here).
        let found = {
            let way = &mut self.ways[w];
            let m = way.mig.as_mut().expect("migrating way");
            let arr = if out_of_place { &m.old } else { &way.slots };
            while m.ptr < m.end && arr[m.ptr as usize].is_empty() {
                m.ptr += 1;
            }
            if m.ptr < m.end {
                let i = m.ptr;
                m.ptr += 1;
                m.examined += 1;
                let arr = if out_of_place {
                    &mut m.old
                } else {
                    &mut way.slots
                };
                let c = std::mem::replace(&mut arr[i as usize], Cluster::EMPTY);
                way.count -= 1;
                Some((i, c))
            } else {
                None
            }
        };
        if let Some((i, c)) = found {
            let (_, new_idx) = self.ways[w].locate(hash(self.p.hash, w, c.key));
            if out_of_place || new_idx != i {
                self.ways[w].mig.as_mut().expect("migrating way").moved += 1;
            }
            let rebuilds = self.stats.forced_rebuilds;
            self.place_counted(ctx, c, Some(w))?;
            if self.stats.forced_rebuilds != rebuilds {
                // The rebuild ended every resize.
                return Ok(true);
            }
        }
        let done = {
            let way = &mut self.ways[w];
            let m = way.mig.as_mut().expect("migrating way");
            let arr = if out_of_place { &m.old } else { &way.slots };
            while m.ptr < m.end && arr[m.ptr as usize].is_empty() {
                m.ptr += 1;
            }
            m.ptr == m.end
        };
        if done {
            self.finish(ctx, w);
        }
        Ok(true)
    }

    fn finish(&mut self, ctx: &mut Ctx<'_>, w: usize) {
        let way = &mut self.ways[w];
        let mut m = way.mig.take().expect("migrating way");
        match m.mode {
            Mode::OutOfPlace => m.old_layout.free(ctx),
            Mode::InPlace => {
                if way.slots.len() as u64 > way.capacity() {
                    way.slots.truncate(way.capacity() as usize);
                    way.slots.shrink_to_fit();
                    way.layout.shrink(ctx, way.capacity() * LINE_BYTES);
                }
            }
        }
        if m.upsize {
            self.stats.upsize_examined += m.examined;
            self.stats.upsize_moved += m.moved;
            if m.examined > 0 {
                let fraction = m.moved as f64 / m.examined as f64;
                self.stats.upsizes_measured += 1;
                self.stats.moved_fraction_sum += fraction;
                if m.mode == Mode::InPlace {
                    self.stats.in_place_upsizes_measured += 1;
                    self.stats.in_place_moved_fraction_sum += fraction;
                }
            }
        }
        self.sync_l2p(ctx, w);
    }

    fn sync_l2p(&self, ctx: &mut Ctx<'_>, w: usize) {
        if self.p.chunks.is_some() {
            ctx.l2p[w][ctx.sub] = self.ways[w].layout.chunks() as u32;
        }
    }

    fn clear_l2p(&self, ctx: &mut Ctx<'_>, w: usize) {
        if self.p.chunks.is_some() {
            ctx.l2p[w][ctx.sub] = 0;
        }
    }

    /// Chunk size for a way of `way_bytes`, given its current chunk size (None for a new way).
    fn choose_chunk(
        &self,
        ctx: &Ctx<'_>,
        w: usize,
        way_bytes: u64,
        current: Option<u64>,
        upsize: bool,
    ) -> Result<u64, OsError> {
        let cp = self.p.chunks.as_ref().expect("chunked policy");
        let mut used = ctx.l2p[w];
        used[ctx.sub] = 0;
        let allow = cp.allowance(&used, ctx.sub) as u64;
        let fits = |c: u64| way_bytes.div_ceil(c) <= allow;
        let pick = match current {
            Some(c) if upsize => {
                if fits(c) {
                    Some(c)
                } else {
                    cp.sizes_bytes.iter().copied().find(|s| *s > c && fits(*s))
                }
            }
            // Shrinking: move to a smaller chunk only if the way could grow back once without
            // switching again (hysteresis against switching at every resize).
            Some(c) => cp
                .sizes_bytes
                .iter()
                .copied()
                .find(|s| *s < c && (2 * way_bytes).div_ceil(*s) <= allow)
                .or(Some(c)),
            None => cp.sizes_bytes.iter().copied().find(|s| fits(*s)),
        };
        pick.ok_or_else(|| {
            OsError(format!(
                "{}: a way of {} does not fit in {allow} L2P entries even with the largest chunk \
                 size",
                ctx.name,
                format_bytes(way_bytes)
            ))
        })
    }

    /// A new layout for way `w` of `2^bits` slots.
    fn fresh_layout(
        &self,
        ctx: &mut Ctx<'_>,
        w: usize,
        bits: u32,
        current_chunk: Option<u64>,
        upsize: bool,
    ) -> Result<Layout, OsError> {
        let bytes = (1u64 << bits) * LINE_BYTES;
        let chunk = match self.p.chunks {
            None => bytes,
            Some(_) => self.choose_chunk(ctx, w, bytes, current_chunk, upsize)?,
        };
        let mut l = Layout {
            chunk_order: order_of(chunk),
            chunks: Vec::new(),
        };
        if let Err(e) = l.grow(ctx, bytes, &format!("way {w} ({} slots)", 1u64 << bits)) {
            l.free(ctx);
            return Err(e);
        }
        Ok(l)
    }

    /// Start doubling (`upsize`) or halving way `w`.
    fn start_resize(&mut self, ctx: &mut Ctx<'_>, w: usize, upsize: bool) -> Result<(), OsError> {
        let old_bits = self.ways[w].bits;
        let bits = if upsize { old_bits + 1 } else { old_bits - 1 };
        let new_bytes = (1u64 << bits) * LINE_BYTES;
        let cur_chunk = self.ways[w].layout.chunk_bytes();
        let mut switch = false;
        let in_place = match self.p.chunks {
            None => false,
            Some(_) => {
                let c = self.choose_chunk(ctx, w, new_bytes, Some(cur_chunk), upsize)?;
                switch = c != cur_chunk;
                self.p.in_place && !switch
            }
        };
        if in_place {
            let what = format!("way {w} ({} slots)", 1u64 << bits);
            let way = &mut self.ways[w];
            way.layout.grow(ctx, new_bytes, &what)?;
            if upsize {
                way.slots.resize(1 << bits, Cluster::EMPTY);
            }
            way.mig = Some(Migration {
                old_bits,
                // A downsize only rehashes the upper half; the lower half is already in place.
                ptr: if upsize { 0 } else { 1 << bits },
                end: 1 << old_bits,
                mode: Mode::InPlace,
                upsize,
                old: Vec::new(),
                old_layout: Layout::default(),
                examined: 0,
                moved: 0,
            });
            way.bits = bits;
        } else {
            let layout = self.fresh_layout(ctx, w, bits, Some(cur_chunk), upsize)?;
            let way = &mut self.ways[w];
            let old = std::mem::replace(&mut way.slots, vec![Cluster::EMPTY; 1 << bits]);
            let old_layout = std::mem::replace(&mut way.layout, layout);
            way.mig = Some(Migration {
                old_bits,
                ptr: 0,
                end: 1 << old_bits,
                mode: Mode::OutOfPlace,
                upsize,
                old,
                old_layout,
                examined: 0,
                moved: 0,
            });
            way.bits = bits;
        }
        if upsize {
            self.stats.upsizes[w] += 1;
        } else {
            self.stats.downsizes[w] += 1;
        }
        self.stats.chunk_switches += switch as u64;
        self.sync_l2p(ctx, w);
        Ok(())
    }

    /// Start a resize when an occupancy threshold is crossed and none is in progress.
    fn maybe_resize(&mut self, ctx: &mut Ctx<'_>) -> Result<(), OsError> {
        if self.resizing() {
            return Ok(());
        }
        let (up, down) = (self.p.upsize_occupancy, self.p.downsize_occupancy);
        if self.p.per_way {
            let min_bits = self.ways.iter().map(|w| w.bits).min().unwrap_or(0);
            let max_bits = self.ways.iter().map(|w| w.bits).max().unwrap_or(0);
            let occ = |w: &Way| w.count as f64 / w.capacity() as f64;
            // A way may grow only if no other way is smaller, shrink only if none is larger:
            // so no way is ever more than twice another.
            let grow = (0..self.ways.len())
                .filter(|w| self.ways[*w].bits == min_bits && occ(&self.ways[*w]) >= up)
                .max_by(|a, b| occ(&self.ways[*a]).total_cmp(&occ(&self.ways[*b])));
            if let Some(w) = grow {
                return self.start_resize(ctx, w, true);
            }
            let shrink = (0..self.ways.len())
                .filter(|w| {
                    let way = &self.ways[*w];
                    way.bits == max_bits && way.bits > self.initial_bits && occ(way) <= down
                })
                .min_by(|a, b| occ(&self.ways[*a]).total_cmp(&occ(&self.ways[*b])));
            if let Some(w) = shrink {
                return self.start_resize(ctx, w, false);
            }
        } else {
            let cap: u64 = self.ways.iter().map(Way::capacity).sum();
            let n = self.clusters() as f64;
            let grow = n >= up * cap as f64;
            let shrink = !grow && n <= down * cap as f64 && self.ways[0].bits > self.initial_bits;
            if grow || shrink {
                for w in 0..self.ways.len() {
                    self.start_resize(ctx, w, grow)?;
                }
            }
        }
        Ok(())
    }

    /// Synchronous rebuild after a cuckoo insertion failed: every entry (plus `extra`) is
    /// re-placed into fresh ways of equal size (at least the largest current way, and large
    /// enough to stay under the upsize threshold); repeated with ways twice as large until all fit.
    fn rebuild(&mut self, ctx: &mut Ctx<'_>, extra: Vec<Cluster>) -> Result<(), OsError> {
        self.stats.forced_rebuilds += 1;
        let mut all = extra;
        let mut bits = 0;
        for w in 0..self.ways.len() {
            let way = &mut self.ways[w];
            bits = bits.max(way.bits);
            all.extend(way.slots.drain(..).filter(|c| !c.is_empty()));
            if let Some(mut m) = way.mig.take() {
                all.extend(m.old.drain(..).filter(|c| !c.is_empty()));
                m.old_layout.free(ctx);
            }
            way.layout.free(ctx);
            way.count = 0;
            self.clear_l2p(ctx, w);
        }
        // Start from the current (target) way size, grown until the entries sit below the
        // upsize threshold, so the rebuilt table does not immediately downsize or upsize.
        let d = self.ways.len() as f64;
        while all.len() as f64 >= self.p.upsize_occupancy * d * (1u64 << bits) as f64 {
            bits += 1;
        }
        let mut pending = all;
        let mut first = true;
        loop {
            if !first {
                bits += 1;
            }
            first = false;
            if bits > 40 {
                return Err(OsError(format!(
                    "{}: cuckoo insertion keeps failing after rebuilds (hash function \
                     degenerate for this key set?)",
                    ctx.name
                )));
            }
            for w in 0..self.ways.len() {
                let layout = self.fresh_layout(ctx, w, bits, None, true)?;
                let way = &mut self.ways[w];
                way.layout = layout;
                way.slots = vec![Cluster::EMPTY; 1 << bits];
                way.bits = bits;
                way.count = 0;
                self.sync_l2p(ctx, w);
            }
            let mut homeless = Vec::new();
            for c in std::mem::take(&mut pending) {
                if let Err(h) = self.place(c, None) {
                    homeless.push(h);
                }
            }
            if homeless.is_empty() {
                return Ok(());
            }
            pending = homeless;
            for w in 0..self.ways.len() {
                let way = &mut self.ways[w];
                pending.extend(way.slots.drain(..).filter(|c| !c.is_empty()));
                way.layout.free(ctx);
                way.count = 0;
            }
        }
    }

    /// Where `key` lives: its way and its slot index (in the old table's index space while its
    /// slot is still in the live region of a resize).
    pub fn position(&self, key: u64) -> Option<(usize, u64)> {
        self.find(key).map(|(w, _, idx)| (w, idx))
    }

    /// Rehash until no way is resizing (tests and forced completions).
    pub fn finish_resizes(&mut self, ctx: &mut Ctx<'_>) -> Result<(), OsError> {
        while self.rehash_one(ctx)? {}
        Ok(())
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.p
    }

    /// Return all memory (the table is being dropped).
    pub fn free_all(&mut self, ctx: &mut Ctx<'_>) {
        for w in 0..self.ways.len() {
            let way = &mut self.ways[w];
            if let Some(mut m) = way.mig.take() {
                m.old_layout.free(ctx);
            }
            way.layout.free(ctx);
            way.slots = Vec::new();
            way.count = 0;
            self.clear_l2p(ctx, w);
        }
    }
}

/// What a table needs around it in unit tests (shared with mehpt's tests).
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// Physical memory, page-table bookkeeping, allocation cost and an L2P table.
    pub(crate) struct Env {
        pub phys: PhysMem,
        pub mem: PtMemory,
        pub cost: AllocCost,
        pub l2p: [[u32; L2P_SUBTABLES]; MAX_WAYS],
        name: &'static str,
    }

    impl Env {
        /// An environment over `phys_bytes` of physical memory; `name` labels its errors.
        pub fn new(phys_bytes: u64, name: &'static str) -> Env {
            Env {
                phys: PhysMem::new(phys_bytes),
                mem: PtMemory::default(),
                cost: AllocCost::default(),
                l2p: Default::default(),
                name,
            }
        }

        /// The context a table operation takes.
        pub fn ctx(&mut self) -> Ctx<'_> {
            Ctx {
                phys: &mut self.phys,
                mem: &mut self.mem,
                cost: &mut self.cost,
                l2p: &mut self.l2p,
                sub: 0,
                name: self.name,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::Env;
    use super::*;

    fn ecpt_policy() -> Policy {
        Policy {
            ways: 3,
            hash: HashKind::Crc,
            initial_slots: 128,
            upsize_occupancy: 0.6,
            downsize_occupancy: 0.2,
            max_kicks: 32,
            rehash_per_update: 4,
            per_way: false,
            in_place: false,
            chunks: None,
        }
    }

    #[test]
    fn dense_sequential_keys_never_force_a_rebuild_with_the_crc_hash() {
        let mut env = Env::new(1 << 30, "test");
        let mut ctx = env.ctx();
        let mut t = ClusterTable::new(&ecpt_policy(), &mut ctx, 1).unwrap();
        // 16000 pages with a stride of 3: 6000 dense lines, through 5 upsizes.
        for v in 0..16_000u64 {
            let n = v * 3;
            t.set(&mut ctx, n >> 3, (n & 7) as usize, v + 1).unwrap();
        }
        assert_eq!(t.stats.forced_rebuilds, 0);
        assert!(t.stats.upsizes[0] >= 4);
        for v in 0..16_000u64 {
            let n = v * 3;
            assert_eq!(t.get(n >> 3).unwrap().vals[(n & 7) as usize], v + 1);
        }
    }

    #[test]
    fn a_failed_cuckoo_insertion_rebuilds_larger_ways_and_keeps_every_entry() {
        let mut env = Env::new(1 << 30, "test");
        let mut ctx = env.ctx();
        let p = Policy {
            max_kicks: 1,
            initial_slots: 64,
            upsize_occupancy: 0.95,
            downsize_occupancy: 0.0,
            ..ecpt_policy()
        };
        let mut t = ClusterTable::new(&p, &mut ctx, 1).unwrap();
        let mut rng = Rng::new(2, 0);
        let keys: Vec<u64> = (0..150).map(|_| rng.next_u64() >> 1).collect();
        for (i, k) in keys.iter().enumerate() {
            t.set(&mut ctx, *k, 3, i as u64 + 1).unwrap();
        }
        assert!(t.stats.forced_rebuilds > 0);
        assert!(t.way_bytes().all(|b| b > 64 * 64));
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(t.get(*k).unwrap().vals[3], i as u64 + 1);
        }
        assert_eq!(t.clusters(), 150);
        // Every way is one block: the table's memory is exactly its ways.
        assert_eq!(t.bytes(), t.way_bytes().sum::<u64>());
    }

    #[test]
    fn an_out_of_place_resize_keeps_both_tables_reachable_and_frees_the_old_one_at_the_end() {
        let mut env = Env::new(1 << 30, "test");
        let mut t = ClusterTable::new(&ecpt_policy(), &mut env.ctx(), 1).unwrap();
        let mut rng = Rng::new(4, 0);
        let mut keys = Vec::new();
        while !t.resizing() {
            let k = rng.next_u64() >> 1;
            t.set(&mut env.ctx(), k, 0, 9).unwrap();
            keys.push(k);
        }
        // Old (3 x 8 KiB) and new (3 x 16 KiB) tables co-exist.
        assert_eq!(t.bytes(), 3 * 8192 + 3 * 16384);
        assert_eq!(env.mem.footprint().max_contiguous_bytes, 16384);
        // Half-way through the rehash every entry is found, in the old or the new table.
        for _ in 0..20 {
            t.set(&mut env.ctx(), keys[0], 1, 5).unwrap();
        }
        assert!(t.resizing());
        assert!(keys.iter().all(|k| t.get(*k).is_some()));
        t.finish_resizes(&mut env.ctx()).unwrap();
        assert!(!t.resizing());
        assert_eq!(t.bytes(), 3 * 16384);
        assert_eq!(env.mem.footprint().bytes, 3 * 16384);
        assert!(keys.iter().all(|k| t.get(*k).is_some()));
        assert_eq!(t.stats.upsize_moved, t.stats.upsize_examined);
    }

    #[test]
    fn stealing_lets_a_subtable_use_up_to_twice_its_entries_from_a_shared_pool() {
        let cp = ChunkPolicy {
            sizes_bytes: vec![8192],
            entries_per_subtable: 32,
            stealing: true,
        };
        assert_eq!(cp.allowance(&[0, 0, 0], 0), 64);
        assert_eq!(cp.allowance(&[0, 50, 0], 0), 46);
        assert_eq!(cp.allowance(&[64, 0, 0], 2), 32);
        assert_eq!(cp.allowance(&[64, 32, 0], 2), 0);
        let no = ChunkPolicy {
            stealing: false,
            ..cp
        };
        assert_eq!(no.allowance(&[0, 0, 0], 0), 32);
    }
}
