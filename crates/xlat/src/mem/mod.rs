//! The memory hierarchy shared by data and page-table references: set-associative L1D, L2 and
//! LLC, and DRAM with channels, banks and row buffers.
//!
//! Contract: every access returns its latency in core cycles and the level that served it; every
//! line remembers whether it holds data or page-table entries, so the report can show the
//! page-table share of each cache and misses by kind. Page-table references from the walker enter
//! at L2 by default (`mem.walk_entry = "l1"` makes them enter at L1D).
//!
//! STUB: fixed latencies; replaced by the full model.

use crate::addr::Paddr;
use crate::stats::{Stats, StatsExt};
use serde::{Deserialize, Serialize};

/// Replacement policy of a cache.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ReplacementPolicy {
    /// Least recently used.
    Lru,
    /// Static re-reference interval prediction (2-bit RRPV, insertion at 2).
    Srrip,
}

/// One cache level.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CacheLevelConfig {
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// Associativity.
    pub ways: u32,
    /// Hit latency in core cycles.
    pub latency_cycles: u32,
    /// Replacement policy.
    pub policy: ReplacementPolicy,
}

/// Where page-walk references enter the cache hierarchy.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum WalkEntry {
    /// At L1D.
    L1,
    /// At L2 (default; the papers' setting).
    L2,
}

/// DRAM timing and organisation.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DramConfig {
    /// Channels.
    pub channels: u32,
    /// Banks per channel (ranks x bank groups x banks).
    pub banks_per_channel: u32,
    /// Row-buffer size in bytes.
    pub row_bytes: u64,
    /// CAS latency (tCL) in DRAM clock cycles.
    pub t_cl: u32,
    /// RAS-to-CAS delay (tRCD) in DRAM clock cycles.
    pub t_rcd: u32,
    /// Row precharge (tRP) in DRAM clock cycles.
    pub t_rp: u32,
    /// DRAM command clock in MHz (DDR4-3200: 1600).
    pub dram_clock_mhz: u32,
    /// Core clock in MHz, to turn DRAM cycles into core cycles.
    pub core_clock_mhz: u32,
    /// Fixed controller + interconnect latency in core cycles added to every DRAM access.
    pub controller_cycles: u32,
}

impl Default for DramConfig {
    fn default() -> Self {
        DramConfig {
            channels: 2,
            banks_per_channel: 16,
            row_bytes: 8192,
            t_cl: 22,
            t_rcd: 22,
            t_rp: 22,
            dram_clock_mhz: 1600,
            core_clock_mhz: 2600,
            controller_cycles: 40,
        }
    }
}

/// Caches and DRAM.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MemConfig {
    /// L1 data cache.
    pub l1d: CacheLevelConfig,
    /// Private L2.
    pub l2: CacheLevelConfig,
    /// Last-level cache.
    pub llc: CacheLevelConfig,
    /// Where page-walk references enter.
    pub walk_entry: WalkEntry,
    /// DRAM.
    pub dram: DramConfig,
}

impl Default for MemConfig {
    fn default() -> Self {
        MemConfig {
            l1d: CacheLevelConfig {
                size_bytes: 32 << 10,
                ways: 8,
                latency_cycles: 4,
                policy: ReplacementPolicy::Lru,
            },
            l2: CacheLevelConfig {
                size_bytes: 1 << 20,
                ways: 16,
                latency_cycles: 14,
                policy: ReplacementPolicy::Lru,
            },
            llc: CacheLevelConfig {
                size_bytes: 2 << 20,
                ways: 16,
                latency_cycles: 40,
                policy: ReplacementPolicy::Srrip,
            },
            walk_entry: WalkEntry::L2,
            dram: DramConfig::default(),
        }
    }
}

impl MemConfig {
    /// Check sizes and associativities.
    pub fn validate(&self) -> Result<(), String> {
        for (name, c) in [("l1d", &self.l1d), ("l2", &self.l2), ("llc", &self.llc)] {
            let lines = c.size_bytes / 64;
            if c.ways == 0 || lines == 0 || lines % c.ways as u64 != 0 {
                return Err(format!(
                    "mem.{name}: size_bytes {} is not a whole number of {}-way sets of 64-byte lines",
                    c.size_bytes, c.ways
                ));
            }
        }
        Ok(())
    }
}

/// The level that served an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServedBy {
    /// L1 data cache.
    L1,
    /// L2.
    L2,
    /// Last-level cache.
    Llc,
    /// DRAM.
    Dram,
}

/// Result of one access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemAccess {
    /// Latency in core cycles.
    pub latency_cycles: u32,
    /// Level that served it.
    pub served_by: ServedBy,
}

/// The cache hierarchy plus DRAM.
pub struct MemSystem {
    cfg: MemConfig,
    data_accesses: u64,
    pt_accesses: u64,
}

impl MemSystem {
    /// Build an empty (cold) hierarchy.
    pub fn new(cfg: &MemConfig) -> Self {
        MemSystem {
            cfg: cfg.clone(),
            data_accesses: 0,
            pt_accesses: 0,
        }
    }

    /// A data reference from the core (enters at L1D).
    pub fn data_access(&mut self, _pa: Paddr, _is_write: bool) -> MemAccess {
        self.data_accesses += 1;
        MemAccess {
            latency_cycles: self.cfg.l1d.latency_cycles,
            served_by: ServedBy::L1,
        }
    }

    /// A page-table read by the walker (enters at `walk_entry`).
    pub fn pt_access(&mut self, _pa: Paddr) -> MemAccess {
        self.pt_accesses += 1;
        MemAccess {
            latency_cycles: self.cfg.l2.latency_cycles,
            served_by: ServedBy::L2,
        }
    }

    /// Write the `cache` and `dram` sections of the result record.
    pub fn stats(&self, out: &mut Stats) {
        let c = out.section("cache");
        c.put_u64("data_accesses", self.data_accesses);
        c.put_u64("pt_accesses", self.pt_accesses);
    }
}
