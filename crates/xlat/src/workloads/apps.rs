//! Issue 15's application workloads beyond the graph kernels: liblinear-like SVM training
//! (`svm`), PARSEC's `canneal` and `streamcluster`, and MUMmer-like alignment (`mummer`). Same
//! contract as the programs of `programs.rs`: deterministic in (config, refs, seed), host memory
//! a constant whatever the footprint (every per-element value is a seeded pure function).
//! Sources of truth and approximations: docs/workloads.md.

use super::config::WorkloadConfig;
use super::heap::AddressSpace;
use super::implicit::{mix, unit, Bijection};
use super::program::{back_to, load, load_after, store, store_after, touch_pages, Burst, Program};
use super::programs::Zipf;
use crate::rng::Rng;
use crate::trace::Event;

// ---------------------------------------------------------------------------------------------
// svm

/// Non-zero features per training instance (fixed: every row has the same length).
const SVM_NNZ: u64 = 11;
/// Bytes of a liblinear `feature_node` (int index, double value, padded).
const SVM_NODE_BYTES: u64 = 16;
/// Bytes per instance: its nodes and the -1 terminator, the row pointer `prob.x[i]`, `y[i]`,
/// `alpha[i]`, `QD[i]` (doubles), `index[i]` (int), and half a feature of `w` (8 B per feature,
/// one feature per two instances).
const SVM_INSTANCE_BYTES: u64 = (SVM_NNZ + 1) * SVM_NODE_BYTES + 8 + 3 * 8 + 4 + 4;

/// Linear SVM training by dual coordinate descent, as liblinear's `solve_l2r_l1l2_svc` (the
/// default solver, `-s 1`): every outer iteration shuffles the instance order (`index[]`,
/// a random swap per instance), then for each instance `i` in that order computes
/// `G = y_i * w . x_i - 1 + D_ii * alpha_i` (a sparse dot product: the row's feature nodes in
/// sequence, each with a load of `w[feature]`), and when `alpha_i` changes stores it and
/// updates `w += d * x_i` (the row again, a load and a store of `w` per feature). The data
/// matrix is one array of feature nodes (liblinear's `x_space`), rows of `SVM_NNZ` features
/// and a terminator; feature popularity is zipfian (`workload.zipf_theta`) over a seeded
/// permutation of the features, as in sparse text and click data.
///
/// Modelled, not computed: the order of an outer iteration is a seeded bijection of the
/// instances (the shuffle's accesses are issued, its result is not used), and `alpha_i`
/// changes with probability `1 / (iteration + 1)` by a hash (convergence; shrinking is not
/// modelled). The first iteration's shuffle belongs to the setup (not simulated): a run starts
/// with coordinate updates, and each later iteration's shuffle follows the previous one's.
pub(crate) struct Svm {
    instances: u64,
    features: u64,
    x_addr: u64,
    rows_addr: u64,
    y_addr: u64,
    alpha_addr: u64,
    qd_addr: u64,
    index_addr: u64,
    w_addr: u64,
    popular: Bijection,
    zipf: Zipf,
    feature_key: u64,
    order_seed: u64,
    order: Bijection,
    update_key: u64,
    iteration: u64,
    s: u64,
    shuffling: bool,
}

impl Svm {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Svm {
        let instances = (cfg.footprint / SVM_INSTANCE_BYTES).max(2);
        let features = (instances / 2).max(1);
        let mut rng = Rng::new(seed, 16);
        let order_seed = rng.next_u64();
        Svm {
            instances,
            features,
            x_addr: 0,
            rows_addr: 0,
            y_addr: 0,
            alpha_addr: 0,
            qd_addr: 0,
            index_addr: 0,
            w_addr: 0,
            popular: Bijection::new(features, rng.next_u64()),
            zipf: Zipf::new(features, cfg.zipf_theta),
            feature_key: rng.next_u64(),
            order: Bijection::new(instances, order_seed),
            order_seed,
            update_key: rng.next_u64(),
            iteration: 0,
            s: 0,
            shuffling: false,
        }
    }

    /// Feature of instance `i`'s `k`-th node.
    fn feature(&self, i: u64, k: u64) -> u64 {
        let u = unit(mix(self.feature_key, i * SVM_NNZ + k));
        self.popular.forward(self.zipf.rank_of(u))
    }

    fn node_addr(&self, i: u64, k: u64) -> u64 {
        self.x_addr + (i * (SVM_NNZ + 1) + k) * SVM_NODE_BYTES
    }
}

impl Program for Svm {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        let l = self.instances;
        for (addr, bytes) in [
            (&mut self.x_addr, l * (SVM_NNZ + 1) * SVM_NODE_BYTES),
            (&mut self.rows_addr, l * 8),
            (&mut self.y_addr, l * 8),
            (&mut self.alpha_addr, l * 8),
            (&mut self.qd_addr, l * 8),
            (&mut self.index_addr, l * 4),
            (&mut self.w_addr, self.features * 8),
        ] {
            *addr = mem.alloc(bytes);
            touch_pages(q, *addr, bytes);
        }
    }

    /// One swap of the shuffle, or one coordinate update.
    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        let l = self.instances;
        let s = self.s;
        self.s += 1;
        if self.shuffling {
            // swap(index[s], index[s + rand() % (l - s)])
            let j = s + mix(self.order_seed ^ self.iteration, s) % (l - s);
            load(q, self.index_addr + s * 4, 4, 6);
            load(q, self.index_addr + j * 4, 4, 1);
            store(q, self.index_addr + s * 4, 4, 1);
            store(q, self.index_addr + j * 4, 4, 1);
            if self.s == l {
                self.s = 0;
                self.shuffling = false;
            }
            return;
        }
        let i = self.order.forward(s);
        let index_at = q.len();
        load(q, self.index_addr + s * 4, 4, 2);
        // The row pointer and the instance's scalars follow from i.
        let row_at = q.len();
        load_after(q, self.rows_addr + i * 8, 8, 1, 1);
        for base in [self.y_addr, self.alpha_addr, self.qd_addr] {
            load_after(q, base + i * 8, 8, 1, back_to(q, index_at));
        }
        // G = y_i * w . x_i: each node, then w at its feature.
        for k in 0..=SVM_NNZ {
            load_after(q, self.node_addr(i, k), 16, 2, back_to(q, row_at));
            if k < SVM_NNZ {
                load_after(q, self.w_addr + self.feature(i, k) * 8, 8, 3, 1);
            }
        }
        let changes = unit(mix(self.update_key ^ self.iteration, i)) * (self.iteration + 1) as f64;
        if changes < 1.0 {
            store_after(q, self.alpha_addr + i * 8, 8, 12, back_to(q, index_at));
            for k in 0..SVM_NNZ {
                load_after(q, self.node_addr(i, k), 16, 2, back_to(q, row_at));
                load_after(q, self.w_addr + self.feature(i, k) * 8, 8, 2, 1);
                store_after(q, self.w_addr + self.feature(i, k) * 8, 8, 2, 2);
            }
        }
        if self.s == l {
            // The next iteration: its shuffle, then its updates in the new order.
            self.s = 0;
            self.shuffling = true;
            self.iteration += 1;
            self.order = Bijection::new(l, mix(self.order_seed, self.iteration));
        }
    }

    fn host_bytes(&self) -> u64 {
        std::mem::size_of::<Self>() as u64
    }
}

// ---------------------------------------------------------------------------------------------
// canneal

/// Fan-in and fan-out of every netlist element (our choice: canneal's netlists have a few of
/// each).
const CANNEAL_FAN: u64 = 4;
/// Bytes of a `netlist_elem`: `std::string item_name` (32), `vector fanin` and `fanout` (24
/// each), `atomic<location_t*> present_loc` (8), rounded to the allocator's 96.
const CANNEAL_ELEM_BYTES: u64 = 96;
/// Offsets in a `netlist_elem` of the fan-in and fan-out vectors and of `present_loc`.
const CANNEAL_FANIN_AT: u64 = 32;
const CANNEAL_FANOUT_AT: u64 = 56;
const CANNEAL_LOC_AT: u64 = 80;
/// Bytes of an element's fan-in and fan-out pointer buffers (the vectors' heap arrays).
const CANNEAL_LISTS_BYTES: u64 = 2 * CANNEAL_FAN * 8;
/// Bytes of a `location_t` (int x, y).
const CANNEAL_LOC_BYTES: u64 = 8;

/// PARSEC `canneal`'s annealer (`annealer_thread::Run`): each move keeps the previous move's
/// second element as its first (`a = b`) and draws a new random `b`, loads both elements'
/// `present_loc` and locations, then for each element computes the routing cost of the swap
/// (`netlist_elem::swap_cost`): for every fan-in and fan-out element, the pointer from the
/// vector's buffer, that element's `present_loc` and its location (a chain of three dependent
/// loads). An accepted move swaps the two `present_loc` pointers (two stores). Elements,
/// their pointer buffers and the locations are three arrays; an element's fan-in/fan-out
/// elements are uniform random (drawn by a hash of the element and slot). Modelled, not
/// computed: a move is accepted with probability 1/2 by a hash (canneal's acceptance depends on
/// the cost and the temperature).
pub(crate) struct Canneal {
    elements: u64,
    elems_addr: u64,
    lists_addr: u64,
    locs_addr: u64,
    fan_key: u64,
    accept_key: u64,
    b: u64,
    moves: u64,
    rng: Rng,
}

impl Canneal {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Canneal {
        let per = CANNEAL_ELEM_BYTES + CANNEAL_LISTS_BYTES + CANNEAL_LOC_BYTES;
        let elements = (cfg.footprint / per).max(2);
        let mut rng = Rng::new(seed, 17);
        Canneal {
            elements,
            elems_addr: 0,
            lists_addr: 0,
            locs_addr: 0,
            fan_key: rng.next_u64(),
            accept_key: rng.next_u64(),
            b: rng.below(elements),
            moves: 0,
            rng,
        }
    }

    /// The element in slot `k` of `e`'s fan-in (`k < CANNEAL_FAN`) or fan-out list.
    fn neighbour(&self, e: u64, k: u64) -> u64 {
        mix(self.fan_key, e * 2 * CANNEAL_FAN + k) % self.elements
    }

    /// `swap_cost` of element `e`: its two vectors' buffers, and per entry the neighbour's
    /// location pointer and location.
    fn swap_cost(&self, e: u64, q: &mut Vec<Event>) {
        let elem = self.elems_addr + e * CANNEAL_ELEM_BYTES;
        for (list, at) in [(0, CANNEAL_FANIN_AT), (1, CANNEAL_FANOUT_AT)] {
            let begin_at = q.len();
            load(q, elem + at, 8, 3);
            for k in 0..CANNEAL_FAN {
                let slot = list * CANNEAL_FAN + k;
                let buffer = self.lists_addr + e * CANNEAL_LISTS_BYTES + slot * 8;
                load_after(q, buffer, 8, 2, back_to(q, begin_at));
                let n = self.neighbour(e, slot);
                load_after(
                    q,
                    self.elems_addr + n * CANNEAL_ELEM_BYTES + CANNEAL_LOC_AT,
                    8,
                    1,
                    1,
                );
                // The location: two ints, two differences, absolute values and sums.
                load_after(q, self.locs_addr + n * CANNEAL_LOC_BYTES, 8, 10, 1);
            }
        }
    }
}

impl Program for Canneal {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        let n = self.elements;
        for (addr, bytes) in [
            (&mut self.elems_addr, n * CANNEAL_ELEM_BYTES),
            (&mut self.lists_addr, n * CANNEAL_LISTS_BYTES),
            (&mut self.locs_addr, n * CANNEAL_LOC_BYTES),
        ] {
            *addr = mem.alloc(bytes);
            touch_pages(q, *addr, bytes);
        }
    }

    /// One move: both elements' locations, both swap costs, the swap if accepted.
    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        let a = self.b;
        let mut b = self.rng.below(self.elements);
        if b == a {
            b = (b + 1) % self.elements;
        }
        self.b = b;
        for e in [a, b] {
            let elem = self.elems_addr + e * CANNEAL_ELEM_BYTES;
            load(q, elem + CANNEAL_LOC_AT, 8, 8);
            load_after(q, self.locs_addr + e * CANNEAL_LOC_BYTES, 8, 2, 1);
        }
        self.swap_cost(a, q);
        self.swap_cost(b, q);
        if unit(mix(self.accept_key, self.moves)) < 0.5 {
            store(
                q,
                self.elems_addr + a * CANNEAL_ELEM_BYTES + CANNEAL_LOC_AT,
                8,
                6,
            );
            store(
                q,
                self.elems_addr + b * CANNEAL_ELEM_BYTES + CANNEAL_LOC_AT,
                8,
                2,
            );
        }
        self.moves += 1;
    }

    fn host_bytes(&self) -> u64 {
        std::mem::size_of::<Self>() as u64
    }
}

// ---------------------------------------------------------------------------------------------
// streamcluster

/// Dimensions of a point (PARSEC's native input, `d = 128` floats).
const SC_DIM: u64 = 128;
/// Bytes of a `Point`: weight, coordinate pointer, assign, cost.
const SC_POINT_BYTES: u64 = 32;
/// Bytes per point: the `Point`, its coordinates, `switch_membership` and `is_center` (bool),
/// `center_table` (int).
const SC_PER_POINT: u64 = SC_POINT_BYTES + SC_DIM * 4 + 1 + 1 + 4;
/// Most centres (PARSEC's native `kmax = 20`): the `lower` cost array's entries.
const SC_KMAX: u64 = 20;

/// PARSEC `streamcluster`'s `pgain` (the kernel of its local search, `pFL`): for a candidate
/// centre `x`, a sweep over every point of the block computes the distance of the point to `x`
/// (128 dimensions: the point's coordinate lines streamed, `x`'s reused), and either marks the
/// point to switch to `x` (`switch_membership[i] = 1`) or charges the saving to its current
/// centre (`lower[center_table[p.assign]] += ...`, a dependent load into a small per-centre
/// array). If opening `x` pays, a second sweep reassigns the switching points (cost and
/// assign stores after the distance again). The block holds the whole footprint (PARSEC
/// streams blocks of `chunksize` points; here one block of every point). Modelled, not
/// computed: a point switches with probability 1/8 and a candidate is opened with probability
/// 1/4, by hashes; a new candidate is a random point.
pub(crate) struct StreamCluster {
    points: u64,
    points_addr: u64,
    coords_addr: u64,
    switch_addr: u64,
    center_addr: u64,
    table_addr: u64,
    lower_addr: u64,
    x: u64,
    i: u64,
    opening: bool,
    candidates: u64,
    switch_key: u64,
    rng: Rng,
}

impl StreamCluster {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> StreamCluster {
        let points = (cfg.footprint / SC_PER_POINT).max(2);
        let mut rng = Rng::new(seed, 18);
        StreamCluster {
            points,
            points_addr: 0,
            coords_addr: 0,
            switch_addr: 0,
            center_addr: 0,
            table_addr: 0,
            lower_addr: 0,
            x: rng.below(points),
            i: 0,
            opening: false,
            candidates: 0,
            switch_key: rng.next_u64(),
            rng,
        }
    }

    fn switches(&self, i: u64) -> bool {
        unit(mix(self.switch_key ^ self.candidates, i)) < 0.125
    }

    /// `dist(p[i], p[x])`: the two points' coordinate lines, the point's after its `Point`
    /// (whose coordinate pointer it follows).
    fn dist(&self, i: u64, point_at: usize, q: &mut Vec<Event>) {
        let (pi, px) = (
            self.coords_addr + i * SC_DIM * 4,
            self.coords_addr + self.x * SC_DIM * 4,
        );
        for line in 0..SC_DIM * 4 / 64 {
            load_after(q, pi + line * 64, 64, 4, back_to(q, point_at));
            load(q, px + line * 64, 64, 4);
        }
    }
}

impl Program for StreamCluster {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        let n = self.points;
        for (addr, bytes) in [
            (&mut self.points_addr, n * SC_POINT_BYTES),
            (&mut self.coords_addr, n * SC_DIM * 4),
            (&mut self.switch_addr, n),
            (&mut self.center_addr, n),
            (&mut self.table_addr, n * 4),
            (&mut self.lower_addr, SC_KMAX * 8),
        ] {
            *addr = mem.alloc(bytes);
            touch_pages(q, *addr, bytes);
        }
    }

    /// One point of the current sweep.
    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        let i = self.i;
        let point = self.points_addr + i * SC_POINT_BYTES;
        if !self.opening {
            let point_at = q.len();
            load(q, point, SC_POINT_BYTES as u8, 4);
            self.dist(i, point_at, q);
            if self.switches(i) {
                store(q, self.switch_addr + i, 1, 4);
            } else {
                // lower[center_table[p.assign]] += current_cost - x_cost
                load_after(q, self.table_addr + i * 4, 4, 3, back_to(q, point_at));
                let c = mix(self.switch_key, i) % SC_KMAX;
                load_after(q, self.lower_addr + c * 8, 8, 2, 1);
                store_after(q, self.lower_addr + c * 8, 8, 2, 2);
            }
        } else {
            // Reassign the switching points to x.
            load(q, self.switch_addr + i, 1, 4);
            if self.switches(i) {
                let point_at = q.len();
                load_after(q, point, SC_POINT_BYTES as u8, 2, 1);
                self.dist(i, point_at, q);
                store_after(q, point + 16, 16, 4, back_to(q, point_at));
                store(q, self.switch_addr + i, 1, 1);
            }
        }
        self.i += 1;
        if self.i == self.points {
            self.i = 0;
            if !self.opening && unit(mix(self.switch_key, self.candidates)) < 0.25 {
                self.opening = true;
                store(q, self.center_addr + self.x, 1, 2);
            } else {
                self.opening = false;
                self.candidates += 1;
                self.x = self.rng.below(self.points);
            }
        }
    }

    fn host_bytes(&self) -> u64 {
        std::mem::size_of::<Self>() as u64
    }
}

// ---------------------------------------------------------------------------------------------
// mummer

/// Bytes per reference base: the text (1 B), the suffix array and its inverse (8 B entries:
/// positions beyond 2^32 at paper scale) and the LCP array (1 B).
const MUM_PER_BASE: u64 = 1 + 8 + 8 + 1;
/// Bytes of the query read buffer (reused, as a reader's buffer), at most.
const MUM_QUERY_BYTES: u64 = 4 << 20;
/// Probability that a match continues at the next query position through a suffix link.
const MUM_CONTINUE: f64 = 0.9;

/// MUMmer4-like maximal-match search (`mummer`'s `findMEM` over the sparse suffix array of
/// essaMEM/sparseSA, sparseness 1): the reference index is the text, its suffix array `SA`,
/// inverse `ISA` and `LCP`; the query streams through a read buffer. At a query position
/// without a match, the suffix interval is found by binary search of `SA` (per probe a load of
/// `SA[mid]` and, dependent on it, of the text at that suffix, 16 bytes compared; the next probe
/// depends on the comparison); a match then loads `LCP` at the interval's ends and extends along
/// the text (one line). Where a match continues, the next position's suffix comes from the
/// suffix link: `ISA[SA[r] + 1]` (two dependent random loads) instead of a search. `SA` is a
/// seeded bijection of the positions and `ISA` its inverse (consistent with each other); the
/// query position's rank is a hash. Modelled, not computed: a match continues with probability
/// `MUM_CONTINUE` (a query read from a related genome).
pub(crate) struct Mummer {
    bases: u64,
    query_bytes: u64,
    text_addr: u64,
    sa_addr: u64,
    isa_addr: u64,
    lcp_addr: u64,
    query_addr: u64,
    sa: Bijection,
    rank_key: u64,
    continue_key: u64,
    qpos: u64,
    /// Rank of the current match's suffix, if the previous position matched and continues.
    rank: Option<u64>,
}

impl Mummer {
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Mummer {
        let query_bytes = (cfg.footprint / 16).clamp(4096, MUM_QUERY_BYTES) / 4096 * 4096;
        let bases = (cfg.footprint.saturating_sub(query_bytes) / MUM_PER_BASE).max(2);
        let mut rng = Rng::new(seed, 19);
        Mummer {
            bases,
            query_bytes,
            text_addr: 0,
            sa_addr: 0,
            isa_addr: 0,
            lcp_addr: 0,
            query_addr: 0,
            sa: Bijection::new(bases, rng.next_u64()),
            rank_key: rng.next_u64(),
            continue_key: rng.next_u64(),
            qpos: 0,
            rank: None,
        }
    }

    /// Bases of the reference.
    #[cfg(test)]
    pub(super) fn bases(&self) -> u64 {
        self.bases
    }
}

impl Program for Mummer {
    fn setup(&mut self, mem: &mut AddressSpace, q: &mut Burst) {
        let n = self.bases;
        for (addr, bytes) in [
            (&mut self.text_addr, n),
            (&mut self.sa_addr, n * 8),
            (&mut self.isa_addr, n * 8),
            (&mut self.lcp_addr, n),
            (&mut self.query_addr, self.query_bytes),
        ] {
            *addr = mem.alloc(bytes);
            touch_pages(q, *addr, bytes);
        }
    }

    /// One query position: its base, the suffix interval (search or suffix link), the match.
    #[inline]
    fn step(&mut self, _mem: &mut AddressSpace, q: &mut Vec<Event>) {
        let n = self.bases;
        let base_at = q.len();
        load(q, self.query_addr + self.qpos % self.query_bytes, 1, 4);
        let r = match self.rank {
            Some(prev) => {
                // Suffix link: ISA[SA[prev] + 1].
                let pos = self.sa.forward(prev);
                load(q, self.sa_addr + prev * 8, 8, 2);
                let next = (pos + 1) % n;
                load_after(q, self.isa_addr + next * 8, 8, 2, 1);
                self.sa.inverse(next)
            }
            None => {
                let target = mix(self.rank_key, self.qpos) % n;
                let (mut lo, mut hi) = (0u64, n);
                let mut dep = back_to(q, base_at);
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    load_after(q, self.sa_addr + mid * 8, 8, 4, dep);
                    // 16 bases of the suffix (from the aligned word holding its start).
                    let suffix = self.text_addr + (self.sa.forward(mid) & !15);
                    load_after(q, suffix, 16, 12, 1);
                    dep = 1;
                    if mid <= target {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                lo
            }
        };
        // The interval's LCP ends, then the match extends along the text.
        let found_at = q.len();
        load_after(q, self.lcp_addr + r, 1, 3, 1);
        load_after(q, self.lcp_addr + (r + 1).min(n - 1), 1, 1, 2);
        let text = self.text_addr + ((self.sa.forward(r) + 16).min(n - 1) & !15);
        load_after(q, text, 16, 8, back_to(q, found_at));
        let continues = unit(mix(self.continue_key, self.qpos)) < MUM_CONTINUE;
        self.rank = continues.then_some(r);
        self.qpos += 1;
    }

    fn host_bytes(&self) -> u64 {
        std::mem::size_of::<Self>() as u64
    }
}
