//! The `[utopia]` configuration section: the RestSegs (size, page size, ways), the RSW's
//! TAR/SF caches, placement and PTW-tracking switches, and the FlexSeg's radix settings, with
//! their defaults (the paper's Table 1) and range checks. The module doc of `mod.rs` says what
//! each knob models.
//!
//! Contract: plain data; [`UtopiaConfig::validate`] rejects what the design cannot build. It
//! calls nothing of the design (only the radix configuration it embeds and the RestSeg hash
//! kind), so it sits below `mod.rs`.

use super::restseg::RestSegHash;
use crate::addr::{PageSize, PageSizeSet};
use crate::designs::radix::RadixConfig;
use serde::{Deserialize, Serialize};

/// One RestSeg of `[utopia]` (`[[utopia.restsegs]]`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RestSegConfig {
    /// Size in bytes (a power of two, at most 1 GiB: one buddy block).
    pub bytes: u64,
    /// Size of its pages.
    pub page_size: PageSize,
    /// Associativity (a power of two).
    pub ways: u32,
}

/// `[utopia]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct UtopiaConfig {
    /// The RestSegs, reserved at boot in this order.
    pub restsegs: Vec<RestSegConfig>,
    /// Set-index function of every RestSeg.
    pub hash: RestSegHash,
    /// TAR cache capacity (64-byte lines).
    pub tar_cache_bytes: u32,
    /// SF cache capacity (64-byte lines).
    pub sf_cache_bytes: u32,
    /// Associativity of the TAR and SF caches.
    pub cache_ways: u32,
    /// Latency of the (parallel) TAR/SF cache lookup.
    pub cache_latency_cycles: u32,
    /// The RSW starts with the L2 TLB lookup (else after the L2 TLB miss).
    pub rsw_parallel_with_l2_tlb: bool,
    /// The RSW runs on every L1 TLB miss, also when the L2 TLB hits, as the paper's hardware
    /// starts it together with the L2 TLB lookup (§5.2, Fig. 17): its TAR/SF cache lookups,
    /// fills and page-table reads happen, and the translation is the L2 TLB's. Off (the
    /// default): the RSW runs only after an L2 TLB miss. An ablation of the TAR/SF caches'
    /// inputs (docs/designs/utopia.md); the extra reads change cache and DRAM state but are
    /// not timed (they cost no queueing).
    pub rsw_beside_l2_tlb_hit: bool,
    /// Page-fault-based allocation: faults place pages in their RestSeg set.
    pub place_on_fault: bool,
    /// A fault whose set is full evicts the set's SRRIP victim to the FlexSeg and takes its
    /// slot (§5.6); off, the faulting page goes to the FlexSeg.
    pub evict_on_full_set: bool,
    /// PTW-tracking migration (§5.5): FlexSeg pages whose walk counters reach both thresholds
    /// migrate to their RestSeg set (evicting its SRRIP victim when full).
    pub ptw_tracking: bool,
    /// Walk-frequency threshold (TLB-miss walks of the page; a 5-bit counter, 1..=31).
    pub promote_walks: u32,
    /// Walk-cost threshold (DRAM accesses of those walks; a 4-bit counter, 0..=15).
    pub promote_dram_accesses: u32,
    /// Largest share of physical memory one RestSeg may take: a larger one is shrunk to the
    /// largest power of two within the share, and one left with fewer than two sets is not
    /// created (both reported under `utopia.restsegs`). Lets small-memory runs work with the
    /// paper's defaults; at the paper's 32 GiB and above nothing changes.
    pub max_memory_share: f64,
    /// The FlexSeg's radix page table.
    pub flex: RadixConfig,
}

impl Default for UtopiaConfig {
    fn default() -> Self {
        UtopiaConfig {
            restsegs: vec![
                RestSegConfig {
                    bytes: 512 << 20,
                    page_size: PageSize::Size4K,
                    ways: 16,
                },
                RestSegConfig {
                    bytes: 512 << 20,
                    page_size: PageSize::Size2M,
                    ways: 16,
                },
            ],
            hash: RestSegHash::Modulo,
            tar_cache_bytes: 2048,
            sf_cache_bytes: 2048,
            cache_ways: 4,
            cache_latency_cycles: 2,
            rsw_parallel_with_l2_tlb: true,
            rsw_beside_l2_tlb_hit: false,
            place_on_fault: true,
            evict_on_full_set: true,
            ptw_tracking: true,
            promote_walks: 8,
            promote_dram_accesses: 8,
            max_memory_share: 1.0 / 16.0,
            flex: RadixConfig::default(),
        }
    }
}

impl UtopiaConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        let mut sizes = PageSizeSet::EMPTY;
        for (i, r) in self.restsegs.iter().enumerate() {
            let key = format!("restsegs[{i}]");
            if !r.ways.is_power_of_two() {
                return Err(format!("{key}.ways must be a power of two, got {}", r.ways));
            }
            if !r.bytes.is_power_of_two() || r.bytes > 1 << 30 {
                return Err(format!(
                    "{key}.bytes must be a power of two of at most 1 GiB (one buddy block), got {}",
                    r.bytes
                ));
            }
            if r.page_size > PageSize::Size2M {
                return Err(format!(
                    "{key}.page_size must be 4KiB .. 2MiB (a RestSeg of 1 GiB pages would be one \
                     set), got {}",
                    r.page_size
                ));
            }
            if r.bytes < r.page_size.bytes() * r.ways as u64 * 2 {
                return Err(format!(
                    "{key}.bytes ({}) must hold at least two sets of {} ways of {} pages",
                    r.bytes, r.ways, r.page_size
                ));
            }
            if sizes.contains(r.page_size) {
                return Err(format!(
                    "{key}.page_size {} is already the page size of another RestSeg",
                    r.page_size
                ));
            }
            sizes = sizes.with(r.page_size);
        }
        for (key, v) in [
            ("tar_cache_bytes", self.tar_cache_bytes),
            ("sf_cache_bytes", self.sf_cache_bytes),
        ] {
            if v % 64 != 0 {
                return Err(format!("{key} must be a multiple of 64 (lines), got {v}"));
            }
        }
        if !(self.max_memory_share > 0.0 && self.max_memory_share <= 1.0) {
            return Err(format!(
                "max_memory_share must be in (0, 1], got {}",
                self.max_memory_share
            ));
        }
        if !(1..=31).contains(&self.promote_walks) {
            return Err(format!(
                "promote_walks must be 1..=31 (a 5-bit counter), got {}",
                self.promote_walks
            ));
        }
        if self.promote_dram_accesses > 15 {
            return Err(format!(
                "promote_dram_accesses must be 0..=15 (a 4-bit counter), got {}",
                self.promote_dram_accesses
            ));
        }
        if self.cache_ways == 0 {
            return Err("cache_ways must be at least 1".into());
        }
        self.flex.validate().map_err(|e| format!("flex.{e}"))
    }
}
