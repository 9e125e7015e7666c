//! Data structures computed on demand instead of stored, so that a generator's host memory does
//! not grow with the simulated footprint (issue 15: 64-128 GiB footprints in at most ~2 GiB of
//! host memory).
//!
//! - [`Bijection`]: a seeded permutation of `0..n`, forward and inverse, in O(1) state.
//! - [`ImplicitGraph`]: an RMAT (Graph500) graph in CSR form whose vertex degrees and k-th
//!   neighbours are pure functions of (seed, vertex, edge index); only a prefix-sum index of the
//!   degrees is stored (about 0.3 bytes per vertex) so that a vertex's first edge is found in
//!   O(1).
//! - [`Bitmap`]: one bit per vertex (visited and frontier sets).
//!
//! What must stay true: everything here is deterministic in its seed and never reads a clock or
//! a thread count; every host allocation is made in a constructor, sized by the footprint (so
//! [`ImplicitGraph::host_bytes`] and friends are exact), and nothing grows while a generator runs.

use crate::rng::splitmix64;

/// A stateless 64-bit hash of `x` under `key` (distinct `x` give distinct inputs to SplitMix64).
#[inline]
pub fn mix(key: u64, x: u64) -> u64 {
    let mut s = key ^ x.wrapping_mul(0xd6e8_feb8_6659_fd93);
    splitmix64(&mut s)
}

/// `h` as a uniform number in `[0, 1)`.
#[inline]
pub fn unit(h: u64) -> f64 {
    (h >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// The inverse of an odd `m` modulo 2^64 (Newton's iteration: each step doubles the correct
/// low bits, 5 steps from the 3 correct bits of `m` itself).
fn inverse_mod_2_64(m: u64) -> u64 {
    debug_assert!(m & 1 == 1);
    let mut inv = m;
    for _ in 0..5 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(m.wrapping_mul(inv)));
    }
    inv
}

/// A seeded permutation of `0..n` with its inverse, holding no table: three rounds of
/// (multiply by an odd constant, xor-shift by half the width) on `bits` = ceil(log2 n) bits, a
/// bijection of `0..2^bits`, cycle-walked into `0..n` (applied again while the result is
/// `n` or more: a bijection of `0..n`, at most 2 applications on average since 2^bits < 2n).
///
/// Each round is invertible: multiplication by an odd number modulo 2^bits has an inverse, and
/// `y ^= y >> half` with `2 * half >= bits` is its own inverse. Not cryptographic; consecutive
/// inputs land far apart, which is what a relabelled graph or a random cycle needs.
#[derive(Clone, Debug)]
pub struct Bijection {
    n: u64,
    mask: u64,
    half: u32,
    mul: [u64; 3],
    inv: [u64; 3],
}

impl Bijection {
    /// A permutation of `0..n` (n >= 1) chosen by `seed`.
    pub fn new(n: u64, seed: u64) -> Bijection {
        let n = n.max(1);
        let bits = (64 - (n - 1).leading_zeros()).max(1);
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let mut s = seed ^ 0x5bd1_e995_0000_0001;
        let mul = [
            splitmix64(&mut s) | 1,
            splitmix64(&mut s) | 1,
            splitmix64(&mut s) | 1,
        ];
        Bijection {
            n,
            mask,
            half: bits.div_ceil(2),
            mul,
            inv: mul.map(inverse_mod_2_64),
        }
    }

    /// Size of the permuted range.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Whether the range is empty (never: a bijection covers at least `0..1`).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The image of `x` (< n).
    #[inline]
    pub fn forward(&self, x: u64) -> u64 {
        debug_assert!(x < self.n);
        let mut y = x;
        loop {
            for m in self.mul {
                y = y.wrapping_mul(m) & self.mask;
                y ^= y >> self.half;
            }
            if y < self.n {
                return y;
            }
        }
    }

    /// The `x` whose image is `y` (< n).
    #[inline]
    pub fn inverse(&self, y: u64) -> u64 {
        debug_assert!(y < self.n);
        let mut x = y;
        loop {
            for m in self.inv.iter().rev() {
                x ^= x >> self.half;
                x = x.wrapping_mul(*m) & self.mask;
            }
            if x < self.n {
                return x;
            }
        }
    }
}

/// A set of `0..n` as one bit per element.
#[derive(Clone, Debug)]
pub struct Bitmap {
    words: Vec<u64>,
}

impl Bitmap {
    /// An empty set over `0..n` (calloc'ed: pages are not touched until written).
    pub fn new(n: u64) -> Bitmap {
        Bitmap {
            words: vec![0; n.div_ceil(64) as usize],
        }
    }
    /// Whether `i` is in the set.
    #[inline]
    pub fn get(&self, i: u64) -> bool {
        self.words[(i / 64) as usize] >> (i % 64) & 1 == 1
    }
    /// Add `i`; returns whether it was absent.
    #[inline]
    pub fn insert(&mut self, i: u64) -> bool {
        let w = &mut self.words[(i / 64) as usize];
        let bit = 1u64 << (i % 64);
        let absent = *w & bit == 0;
        *w |= bit;
        absent
    }
    /// Word `w` (bits `64w..64w+64`).
    #[inline]
    pub fn word(&self, w: u64) -> u64 {
        self.words[w as usize]
    }
    /// Empty word `w`.
    #[inline]
    pub fn clear_word(&mut self, w: u64) {
        self.words[w as usize] = 0;
    }
    /// Number of words.
    pub fn words(&self) -> u64 {
        self.words.len() as u64
    }
    /// Empty the set.
    pub fn clear(&mut self) {
        self.words.fill(0);
    }
    /// Host bytes held.
    pub fn host_bytes(&self) -> u64 {
        self.words.capacity() as u64 * 8
    }
}

/// Graph500 RMAT quadrant probabilities (a, b, c; d = 1 - a - b - c).
pub const RMAT: (f64, f64, f64) = (0.57, 0.19, 0.19);
/// Probability that a bit of an RMAT source (row) label is 0: a + b; of a destination
/// (column) label: a + c. Equal for Graph500's parameters.
const BIT_ZERO: f64 = RMAT.0 + RMAT.1;
/// Vertices per fine block of the degree prefix sums (a first-edge lookup sums at most this
/// many degrees minus one).
const FINE: u64 = 16;

/// An RMAT graph on `n` vertices with about `n * degree` directed edges, in CSR form, computed
/// on demand.
///
/// Model (a pure-function rendering of Graph500's RMAT generator): vertex `v` has the RMAT label
/// `x = label(v)` (a seeded [`Bijection`]: Graph500 relabels vertices to destroy locality). In
/// RMAT each bit of an edge's source label is 0 with probability a + b = 0.76, so a vertex's
/// expected out-degree is `E * 0.76^zeros(x) * 0.24^ones(x) / Z` (E edges, Z the sum of that
/// weight over labels below n); its degree is that expectation stochastically rounded with a
/// hash of `v` (exact mean, variance below 1/4 per vertex). The destination of edge `e` has a
/// label whose bits are 0 with probability a + c = 0.76, drawn from a hash of `e`, so in-degrees
/// follow the same skew as out-degrees and the hubs of both are the same vertices, as in an
/// undirected RMAT graph. Approximations against Graph500: the source and destination bits of
/// one edge are drawn independently (RMAT correlates them through the quadrant; the marginals
/// are the same), edges are directed (an undirected Graph500 graph stores both directions), and
/// self-loops and duplicate edges are kept (a real loader drops a few percent).
///
/// Host memory: the first edge of every `FINE` = 16th vertex relative to a coarse block, as
/// u32, plus one u64 per coarse block: about 0.25 + 8 / coarse bytes per vertex.
#[derive(Clone, Debug)]
pub struct ImplicitGraph {
    n: u64,
    edges: u64,
    label: Bijection,
    bits: u32,
    /// Expected out-degree by the number of zero bits of the label.
    expected: Vec<f64>,
    degree_key: u64,
    edge_key: u64,
    /// 16 uniform bits -> 8 label bits, each 0 with probability `BIT_ZERO`.
    byte_of: Vec<u8>,
    /// log2 of vertices per coarse block.
    coarse_shift: u32,
    /// First edge of each coarse block (and the edge count at the end).
    coarse: Vec<u64>,
    /// First edge of each fine block, relative to its coarse block's.
    fine: Vec<u32>,
}

impl ImplicitGraph {
    /// The graph's parameters without building its index: vertices, expected out-degree of the
    /// biggest hub, and the coarse block size the index would use. Errors if no index fits.
    fn plan(n: u64, degree: u32) -> Result<(u32, u64), String> {
        let bits = (64 - (n.max(2) - 1).leading_zeros()).max(1);
        let total = n as f64 * degree as f64;
        let hub = total * BIT_ZERO.powi(bits as i32) / Self::weight_sum(n, bits) + 1.0;
        // A coarse block's edges must fit the fine blocks' u32 offsets.
        let mut shift = 9u32;
        while shift > 4 && (1u64 << shift) as f64 * hub >= u32::MAX as f64 {
            shift -= 1;
        }
        if (1u64 << shift) as f64 * hub >= u32::MAX as f64 {
            return Err(format!(
                "the generated graph's biggest hub would have about {hub:.0} edges, more than \
                 its degree index supports; lower workload.degree or workload.footprint"
            ));
        }
        Ok((shift, hub as u64))
    }

    /// Check that a graph of `n` vertices and average degree `degree` can be generated.
    pub fn check(n: u64, degree: u32) -> Result<(), String> {
        if n > u32::MAX as u64 {
            return Err(format!(
                "the graph would have {n} vertices; vertex ids are 32-bit (as in GraphBIG and \
                 GAP), so at most {}: raise workload.degree or lower workload.footprint",
                u32::MAX
            ));
        }
        Self::plan(n, degree).map(|_| ())
    }

    /// Host bytes the graph of `n` vertices holds, without building it.
    pub fn host_bytes_for(n: u64, degree: u32) -> u64 {
        let n = n.max(2);
        let shift = Self::plan(n, degree).map_or(4, |p| p.0);
        let bits = (64 - (n - 1).leading_zeros()).max(1) as u64;
        Self::coarse_len(n, shift) * 8 + Self::fine_len(n) * 4 + (1 << 16) + (bits + 1) * 8
    }

    fn coarse_len(n: u64, shift: u32) -> u64 {
        (n >> shift) + 2
    }
    fn fine_len(n: u64) -> u64 {
        n.div_ceil(FINE) + 1
    }

    /// Sum over labels x < n of 0.76^zeros(x) * 0.24^ones(x), over `bits` bits: for each 1 bit
    /// of n, the labels sharing n's higher bits and having 0 there (their lower bits free, which
    /// sum to 1).
    fn weight_sum(n: u64, bits: u32) -> f64 {
        if n >= 1u64 << bits {
            return 1.0;
        }
        let mut sum = 0.0;
        let mut prefix = 1.0;
        for i in (0..bits).rev() {
            if n >> i & 1 == 1 {
                sum += prefix * BIT_ZERO;
                prefix *= 1.0 - BIT_ZERO;
            } else {
                prefix *= BIT_ZERO;
            }
        }
        sum
    }

    /// The graph of `n` vertices (at least 2, at most 2^32 - 1) and average out-degree `degree`
    /// for `seed`; its index is allocated but not computed (see [`ImplicitGraph::build`]).
    pub fn new(n: u64, degree: u32, seed: u64) -> Result<ImplicitGraph, String> {
        let n = n.max(2);
        Self::check(n, degree)?;
        let (coarse_shift, _) = Self::plan(n, degree)?;
        let bits = (64 - (n - 1).leading_zeros()).max(1);
        let z = Self::weight_sum(n, bits);
        let total = n as f64 * degree as f64;
        let expected = (0..=bits)
            .map(|zeros| {
                total * BIT_ZERO.powi(zeros as i32) * (1.0 - BIT_ZERO).powi((bits - zeros) as i32)
                    / z
            })
            .collect();
        // Inverse CDF of 8 independent bits: patterns take shares of the 65536 slots by
        // probability (rounded; the last pattern takes what is left).
        let mut byte_of = vec![0u8; 1 << 16];
        let mut start = 0usize;
        let mut cum = 0.0;
        for pattern in 0..256u32 {
            let ones = pattern.count_ones() as i32;
            cum += BIT_ZERO.powi(8 - ones) * (1.0 - BIT_ZERO).powi(ones);
            let end = if pattern == 255 {
                1 << 16
            } else {
                ((cum * 65536.0).round() as usize).min(1 << 16)
            };
            byte_of[start..end.max(start)].fill(pattern as u8);
            start = end.max(start);
        }
        let mut s = seed ^ 0x6a09_e667_f3bc_c908;
        Ok(ImplicitGraph {
            n,
            edges: 0,
            label: Bijection::new(n, splitmix64(&mut s)),
            bits,
            expected,
            degree_key: splitmix64(&mut s),
            edge_key: splitmix64(&mut s),
            byte_of,
            coarse_shift,
            coarse: vec![0; Self::coarse_len(n, coarse_shift) as usize],
            fine: vec![0; Self::fine_len(n) as usize],
        })
    }

    /// Compute the degree index (one degree per vertex: seconds at 10^9 vertices). Idempotent.
    pub fn build(&mut self) {
        if self.edges > 0 || self.n == 0 {
            return;
        }
        let mut edge = 0u64;
        let mut coarse_start = 0u64;
        for v in 0..self.n {
            if v & ((1 << self.coarse_shift) - 1) == 0 {
                self.coarse[(v >> self.coarse_shift) as usize] = edge;
                coarse_start = edge;
            }
            if v.is_multiple_of(FINE) {
                self.fine[(v / FINE) as usize] = (edge - coarse_start) as u32;
            }
            edge += self.degree(v);
        }
        // Sentinels: the end of the edge array for `first_edge(n)`.
        let last = self.n >> self.coarse_shift;
        if self.n & ((1 << self.coarse_shift) - 1) == 0 {
            self.coarse[last as usize] = edge;
            coarse_start = edge;
        }
        self.coarse[last as usize + 1] = edge;
        if self.n.is_multiple_of(FINE) {
            self.fine[(self.n / FINE) as usize] = (edge - coarse_start) as u32;
        }
        self.edges = edge.max(1);
    }

    /// Vertices.
    pub fn vertices(&self) -> u64 {
        self.n
    }

    /// Edges (after [`ImplicitGraph::build`]).
    pub fn edges(&self) -> u64 {
        self.edges
    }

    /// Out-degree of `v`.
    #[inline]
    pub fn degree(&self, v: u64) -> u64 {
        let zeros = self.bits - self.label.forward(v).count_ones();
        (self.expected[zeros as usize] + unit(mix(self.degree_key, v))) as u64
    }

    /// Index of `v`'s first edge in the edge array (`first_edge(n)` = edges): the CSR offset.
    #[inline]
    pub fn first_edge(&self, v: u64) -> u64 {
        if v >= self.n {
            return self.edges;
        }
        let mut e =
            self.coarse[(v >> self.coarse_shift) as usize] + self.fine[(v / FINE) as usize] as u64;
        for u in v / FINE * FINE..v {
            e += self.degree(u);
        }
        e
    }

    /// Destination of edge `e` (a vertex id).
    #[inline]
    pub fn target(&self, e: u64) -> u64 {
        let mut attempt = 0u64;
        loop {
            let mut label = 0u64;
            let mut filled = 0;
            let mut round = 0u64;
            while filled < self.bits {
                let mut h = mix(self.edge_key ^ attempt << 40 ^ round << 56, e);
                for _ in 0..4 {
                    label |= (self.byte_of[(h & 0xffff) as usize] as u64) << filled;
                    h >>= 16;
                    filled += 8;
                }
                round += 1;
            }
            label &= (1u64 << self.bits) - 1;
            if label < self.n {
                return self.label.inverse(label);
            }
            attempt += 1;
        }
    }

    /// Host bytes held.
    pub fn host_bytes(&self) -> u64 {
        self.coarse.capacity() as u64 * 8
            + self.fine.capacity() as u64 * 4
            + self.byte_of.capacity() as u64
            + self.expected.capacity() as u64 * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bijection_permutes_its_range_and_its_inverse_undoes_it() {
        for n in [1u64, 2, 3, 7, 64, 1000, 4097] {
            let b = Bijection::new(n, 42);
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = b.forward(x);
                assert!(y < n && !seen[y as usize], "n={n}: {x} -> {y} twice");
                seen[y as usize] = true;
                assert_eq!(b.inverse(y), x, "n={n}");
            }
        }
        // Different seeds, different permutations; neighbours land far apart.
        let (a, c) = (Bijection::new(1 << 20, 1), Bijection::new(1 << 20, 2));
        assert!((0..100).any(|x| a.forward(x) != c.forward(x)));
        let far = (0..1000u64)
            .filter(|&x| a.forward(x).abs_diff(a.forward(x + 1)) > 4096)
            .count();
        assert!(
            far > 950,
            "only {far} of 1000 consecutive pairs land > 4096 apart"
        );
    }

    #[test]
    fn the_implicit_graph_has_the_requested_edges_and_a_consistent_csr_index() {
        let (n, degree) = (100_003u64, 16);
        let mut g = ImplicitGraph::new(n, degree, 5).unwrap();
        g.build();
        let mean = g.edges() as f64 / n as f64;
        assert!(
            (mean / degree as f64 - 1.0).abs() < 0.01,
            "mean degree {mean}"
        );
        // first_edge is the prefix sum of degrees at every vertex.
        let mut e = 0;
        for v in 0..n {
            assert_eq!(g.first_edge(v), e, "vertex {v}");
            e += g.degree(v);
        }
        assert_eq!(g.first_edge(n), e);
        assert_eq!(g.edges(), e);
        // Deterministic; every target is a vertex.
        let mut h = ImplicitGraph::new(n, degree, 5).unwrap();
        h.build();
        for e in (0..g.edges()).step_by(97) {
            assert_eq!(g.target(e), h.target(e));
            assert!(g.target(e) < n);
        }
    }

    #[test]
    fn the_implicit_graph_is_skewed_like_rmat_with_the_same_hubs_in_and_out() {
        let n = 1u64 << 16;
        let mut g = ImplicitGraph::new(n, 16, 9).unwrap();
        g.build();
        let mut indeg = vec![0u64; n as usize];
        for e in 0..g.edges() {
            indeg[g.target(e) as usize] += 1;
        }
        let outdeg: Vec<u64> = (0..n).map(|v| g.degree(v)).collect();
        let max_out = *outdeg.iter().max().unwrap();
        let hub = outdeg.iter().position(|d| *d == max_out).unwrap();
        // RMAT's biggest hub: E * 0.76^16 = 16 * 65536 * 0.0124 ~ 13000 edges.
        assert!(max_out > 5000, "biggest out-degree {max_out}");
        assert!(indeg[hub] > 5000, "the out-hub's in-degree {}", indeg[hub]);
        let zero = outdeg.iter().filter(|d| **d == 0).count();
        assert!(
            zero > (n / 10) as usize,
            "RMAT leaves many vertices isolated: {zero}"
        );
    }

    #[test]
    fn the_graph_index_for_a_64_gib_footprint_fits_in_a_few_hundred_mib() {
        // 64 GiB at degree 16 and ~13 bytes of per-vertex arrays: ~800 M vertices.
        let n = (64u64 << 30) / (8 + 64 + 13);
        let bytes = ImplicitGraph::host_bytes_for(n, 16);
        assert!(bytes < 300 << 20, "{bytes} bytes");
        let g = ImplicitGraph::new(n, 16, 1).unwrap();
        assert_eq!(g.host_bytes(), bytes);
        assert!(ImplicitGraph::check(5 << 30, 16).is_err());
    }
}
