//! The `[workload]` section: which built-in workload runs and its parameters, and the names
//! `workload.name` may take.
//!
//! Owns [`WorkloadConfig`] and the [`WORKLOADS`] table; calls only `crate::addr` and
//! `crate::suggest` (for its error messages). Contract: `validate` rejects an unknown name and
//! a parameter out of its range, naming the key; the configuration tree (`crate::config`)
//! composes this section and calls `validate`.

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
    /// `pointer_chase`: independent chases of the one cycle at once (1..=64), one load of each
    /// in turn, as hostbench's `chase --chains` (memory-level parallelism). 1: the single chase.
    pub chains: u32,
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
            chains: 1,
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
        if !(1..=64).contains(&self.chains) {
            return Err(format!(
                "workload.chains must be in 1..=64, got {}",
                self.chains
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
