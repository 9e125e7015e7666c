//! The `[tlb]` section: the organization, size, associativity and latency of every TLB
//! structure, and entry coalescing.
//!
//! Owns [`TlbConfig`] and its parts (composed into the run's configuration by `crate::config`);
//! calls nothing else of the crate. Contract: `validate` rejects every structure that is not a
//! whole number of sets and every option out of range, naming the `tlb.*` key.

use serde::{Deserialize, Serialize};

/// One TLB structure.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TlbLevelConfig {
    /// Entries (0 disables the structure).
    pub entries: u32,
    /// Associativity (`ways == entries` is fully associative).
    pub ways: u32,
    /// Lookup latency in core cycles.
    pub latency_cycles: u32,
}

/// How the L1 data TLB is organized.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum L1Organization {
    /// x86: one L1 DTLB per page size (`l1_4k`, `l1_2m`, `l1_1g`), probed in parallel.
    Split,
    /// One L1 DTLB (`l1_any`) whose entries carry their page size (a page mask): any power of
    /// two shares the same entries, as in Arm cores.
    AnySize,
    /// TPS Table I: the 4 KiB L1 of the split organization (`l1_4k`) and, in place of the
    /// 2 MiB and 1 GiB L1s, an any-size L1 (`l1_any`, 32 entries fully associative in the
    /// paper) probed in parallel; 4 KiB pages go to the first, every other size and coalesced
    /// spans to the second.
    SplitAnySize,
}

/// How the L2 TLB is organized.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum L2Organization {
    /// One L2 TLB (`l2`) whose entries carry their page size: every size (4 KiB, 2 MiB, 1 GiB,
    /// any other power of two, coalesced spans) shares its entries. This is both xlat's
    /// historical L2 and an "any-size" L2 (Arm's unified L2 TLBs); `any_size` is accepted as
    /// another name for it.
    #[serde(alias = "any_size")]
    Unified,
    /// Skylake-style: `l2` holds every size but 1 GiB pages, which go to a separate small
    /// `l2_1g`, probed in parallel.
    #[serde(rename = "split_1g")]
    Split1G,
}

/// TLB entry coalescing (several translations cached in one entry).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Coalescing {
    /// One entry per page (x86).
    None,
    /// Arm's contiguous bit: 16 naturally aligned, virtually and physically contiguous pages
    /// with equal permissions that the page table marks contiguous share one entry (16 x 4 KiB
    /// -> 64 KiB, 16 x 2 MiB -> 32 MiB).
    ContiguousBit,
    /// CoLT (Pham et al., MICRO 2012): at a fill, the neighbouring 4 KiB translations in the
    /// page-table line the walk read that are virtually and physically contiguous with the
    /// walked one share its entry (up to `colt_max_pages`).
    Colt,
}

/// The TLB hierarchy.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TlbConfig {
    /// Organization of the L1 DTLB.
    pub l1_organization: L1Organization,
    /// The any-size L1 DTLB (`l1_organization = "any_size"`; `ways == entries` is fully
    /// associative, the usual design since a set index would depend on the page size).
    pub l1_any: TlbLevelConfig,
    /// L1 DTLB for 4 KiB pages.
    pub l1_4k: TlbLevelConfig,
    /// L1 DTLB for 2 MiB pages.
    pub l1_2m: TlbLevelConfig,
    /// L1 DTLB for 1 GiB pages.
    pub l1_1g: TlbLevelConfig,
    /// Organization of the L2 TLB.
    pub l2_organization: L2Organization,
    /// L2 TLB (every page size shares it; with `l2_organization = "split_1g"` every size but
    /// 1 GiB).
    pub l2: TlbLevelConfig,
    /// The L2 TLB's separate 1 GiB entries (`l2_organization = "split_1g"` only).
    pub l2_1g: TlbLevelConfig,
    /// Range TLB beside the L2 (`entries = 0`: none; fully associative, so `ways` is 0 or
    /// `entries`). Filled by designs with range translations
    /// ([`FillHints::range_holding`](super::FillHints::range_holding)).
    pub range: TlbLevelConfig,
    /// Entry coalescing.
    pub coalescing: Coalescing,
    /// Most 4 KiB translations one CoLT entry holds (a power of two, 2..=64).
    pub colt_max_pages: u32,
    /// Largest coalesced span the L1 DTLB holds as one entry, in bytes (0: any). A larger span
    /// is held in the L1 as its base page that was accessed (Neoverse N1's L1 DTLB holds
    /// 64 KiB but not 32 MiB entries and splits a 32 MiB one); the L2 still holds the span.
    pub l1_max_span_bytes: u64,
    /// Instruction TLB (used only by instruction fetches).
    pub itlb: TlbLevelConfig,
    /// The page walk starts with the L2 TLB lookup, on every L1 TLB miss, instead of after the
    /// L2 TLB missed: a walk costs the longer of the L2 TLB latency and the walk, not their sum.
    /// Utopia's evaluation gives every system this (§7: "In all evaluated systems, the L2 TLB
    /// access is performed in parallel with the PTW"). A walk the L2 TLB hit would have
    /// stopped is not modelled (no memory references). Designs that overlap their own walk
    /// with the L2 TLB lookup (Utopia's RSW, `utopia.rsw_parallel_with_l2_tlb`) keep their own
    /// rule. Default off: the walk follows the L2 TLB miss.
    pub walk_with_l2_lookup: bool,
}

impl Default for TlbConfig {
    fn default() -> Self {
        let level = |entries, ways, latency_cycles| TlbLevelConfig {
            entries,
            ways,
            latency_cycles,
        };
        TlbConfig {
            l1_organization: L1Organization::Split,
            // Arm Neoverse N1's L1 DTLB: 48 entries, fully associative, all sizes.
            l1_any: level(48, 48, 1),
            l1_4k: level(64, 4, 1),
            l1_2m: level(32, 4, 1),
            l1_1g: level(4, 4, 1),
            l2_organization: L2Organization::Unified,
            l2: level(1536, 12, 12),
            // Skylake-SP's STLB 1 GiB entries: 16, 4-way (Intel optimization manual, Table 2-5).
            l2_1g: level(16, 4, 12),
            range: level(0, 0, 12),
            coalescing: Coalescing::None,
            colt_max_pages: 8,
            l1_max_span_bytes: 0,
            itlb: level(128, 8, 1),
            walk_with_l2_lookup: false,
        }
    }
}

impl TlbConfig {
    /// Check that every structure is a whole number of sets and the options are in range.
    pub fn validate(&self) -> Result<(), String> {
        for (name, l) in [
            ("l1_any", &self.l1_any),
            ("l1_4k", &self.l1_4k),
            ("l1_2m", &self.l1_2m),
            ("l1_1g", &self.l1_1g),
            ("l2", &self.l2),
            ("l2_1g", &self.l2_1g),
            ("itlb", &self.itlb),
        ] {
            if l.entries > 0 && (l.ways == 0 || !l.entries.is_multiple_of(l.ways)) {
                return Err(format!(
                    "tlb.{name}: {} entries is not a whole number of {}-way sets \
                     (tlb.{name}.entries, tlb.{name}.ways)",
                    l.entries, l.ways
                ));
            }
        }
        if self.range.entries > 0 && self.range.ways != 0 && self.range.ways != self.range.entries {
            return Err(format!(
                "tlb.range.ways: a range TLB is fully associative: ways must be 0 or equal to \
                 entries ({}), got {}",
                self.range.entries, self.range.ways
            ));
        }
        if !self.colt_max_pages.is_power_of_two() || !(2..=64).contains(&self.colt_max_pages) {
            return Err(format!(
                "tlb.colt_max_pages: must be a power of two from 2 to 64, got {}",
                self.colt_max_pages
            ));
        }
        if self.l1_max_span_bytes != 0
            && (!self.l1_max_span_bytes.is_power_of_two() || self.l1_max_span_bytes < 8192)
        {
            return Err(format!(
                "tlb.l1_max_span_bytes: must be 0 (any span) or a power of two of at least \
                 8 KiB, got {}",
                self.l1_max_span_bytes
            ));
        }
        Ok(())
    }

    /// Whether anything beyond the historical hierarchy is configured (coalescing, a separate
    /// 1 GiB L2, a range TLB): the extra statistics are written only then.
    pub(super) fn extended(&self) -> bool {
        self.coalescing != Coalescing::None
            || self.l2_organization != L2Organization::Unified
            || self.range.entries > 0
    }
}
