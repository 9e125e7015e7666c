//! The MMU's TLB hierarchy: an L1 DTLB (one per x86 page size, or one any-size), an L2 TLB
//! (unified, or with separate 1 GiB entries), an optional range TLB beside the L2, and an ITLB
//! for instruction fetches; optionally coalesced entries (Arm's contiguous bit, CoLT).
//! Design-specific MMU caches (PWCs, CWCs, ...) live in the designs.
//!
//! Contract: a translation is looked up in the L1 TLB of every size (in parallel, as hardware
//! does), then in the L2 stage (the L2 TLB, its 1 GiB part and the range TLB, probed in
//! parallel; the stage costs the slowest of them); an L2 hit refills the L1; a walk result fills
//! both. Every lookup answers with the base page the OS mapped at the VPN (a coalesced entry
//! answers with the page of its span holding the VPN), except a range-TLB hit, which answers with
//! the 4 KiB page its range implies ([`TlbOutcome::RangeHit`]). Invalidation removes the
//! translation from every level, with every coalesced entry and range covering any of its pages.
//! Pages of a size other than 4 KiB / 2 MiB / 1 GiB (which an x86 design never declares) have no
//! L1 in the split organization and are cached in the L2 TLB only.

pub mod assoc;
pub mod range;
pub mod tlb;

use crate::addr::{Asid, Mapping, PageSize, Pfn, Vpn};
use crate::stats::{ratio, Stats, StatsExt};
pub use range::{RangeTlb, VaRange};
use serde::{Deserialize, Serialize};
pub use tlb::{Tlb, TlbEntry};

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

/// What the MMU asks the walked table for after a walk (see [`FillHints::coalesced_span`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoalesceRequest {
    /// The 16-page contiguous-bit span holding the walked page, if its entry is marked.
    ContiguousBit,
    /// The largest naturally aligned group of at most `max_pages` (a power of two) 4 KiB
    /// translations around the walked one, in the page-table line the walk read, that are
    /// virtually and physically contiguous with equal permissions.
    Colt {
        /// Largest group (a power of two, 2..=64).
        max_pages: u32,
    },
}

/// A coalesced TLB entry: `2^pages_log2` base pages of size `base` from `vpn` (aligned to the
/// span) mapped to consecutive frames from `pfn` with one permission.
///
/// Contract: `pages_log2 >= 1`; `base.order() + pages_log2 <= PageSize::MAX_ORDER`; `vpn` is
/// aligned to the whole span; `pfn` is aligned to `base` (CoLT spans need not be physically
/// aligned to the span; contiguous-bit spans are); each base page `i` of the span is mapped by
/// the OS as exactly `Mapping { vpn + i * base, pfn + i * base, base, writable }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoalescedSpan {
    /// First 4 KiB VPN of the span.
    pub vpn: Vpn,
    /// First 4 KiB PFN of the first base page.
    pub pfn: Pfn,
    /// Size of each page of the span.
    pub base: PageSize,
    /// log2 of the number of base pages.
    pub pages_log2: u8,
    /// Whether stores are allowed.
    pub writable: bool,
}

impl CoalescedSpan {
    /// The virtual size the entry covers.
    #[inline]
    pub fn size(&self) -> PageSize {
        PageSize::from_order(self.base.order() + self.pages_log2).expect("span order")
    }

    /// Number of base pages.
    #[inline]
    pub fn pages(&self) -> u64 {
        1 << self.pages_log2
    }

    /// Whether `vpn` lies inside the span.
    #[inline]
    pub fn contains(&self, vpn: Vpn) -> bool {
        vpn.0 >= self.vpn.0 && vpn.0 < self.vpn.0 + self.size().base_pages()
    }

    /// The base page of the span holding `vpn` (which must lie inside the span).
    #[inline]
    pub fn base_of(&self, vpn: Vpn) -> Mapping {
        debug_assert!(self.contains(vpn));
        let page = vpn.align_down(self.base);
        Mapping {
            vpn: page,
            pfn: Pfn(self.pfn.0 + (page.0 - self.vpn.0)),
            size: self.base,
            writable: self.writable,
        }
    }
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
    /// `entries`). Filled by designs with range translations ([`FillHints::range_holding`]).
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
                    "tlb.{name}: {} entries is not a whole number of {}-way sets",
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
    fn extended(&self) -> bool {
        self.coalescing != Coalescing::None
            || self.l2_organization != L2Organization::Unified
            || self.range.entries > 0
    }
}

/// What the TLBs may cache beyond the translation a walk found: the coalesced entry holding it
/// and the range holding the walked address. The one interface between the MMU and the
/// translation designs: implemented for every design, once, in `designs/mod.rs` (from its
/// `Design::coalesced` and `Design::range` hooks, whose contracts these are); the MMU never
/// names a design.
pub trait FillHints {
    /// The coalesced entry the hardware would build from what the walk that found `m` read
    /// (`req` says which kind), or `None` to cache `m` alone.
    ///
    /// Contract: a returned span holds `m` as one of its base pages and every other base page
    /// of it is mapped now as the span implies; changes no state.
    fn coalesced_span(&self, asid: Asid, m: Mapping, req: CoalesceRequest)
        -> Option<CoalescedSpan>;
    /// The range translation holding `vpn`, if the design has ranges.
    ///
    /// Contract: a returned range holds `vpn` and every base page in it is mapped now to the
    /// frame the range implies; changes no state.
    fn range_holding(&self, asid: Asid, vpn: Vpn) -> Option<VaRange>;
}

/// Where a TLB lookup was satisfied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlbOutcome {
    /// Hit in an L1 TLB (or the ITLB).
    L1Hit(Mapping),
    /// Missed L1, hit the L2 TLB.
    L2Hit(Mapping),
    /// Missed L1 and the L2 TLB, hit the range TLB: the 4 KiB page the range implies (its frame
    /// and permission, not the size of the OS page behind it; check with `Os::maps_base`).
    RangeHit(Mapping),
    /// Missed everywhere: a walk is needed.
    Miss,
}

/// The TLB hierarchy.
pub struct Mmu {
    /// The per-size L1 DTLBs (split organization).
    l1: [Tlb; 3],
    /// The any-size L1 DTLB (any-size organizations; then `l1` is unused, except `l1[0]` with
    /// `SplitAnySize`).
    l1_any: Option<Tlb>,
    /// `SplitAnySize`: the 4 KiB L1 (`l1[0]`) sits beside `l1_any` and takes the 4 KiB pages.
    l1_4k_beside_any: bool,
    l2: Tlb,
    /// The L2's separate 1 GiB entries (`split_1g`).
    l2_1g: Option<Tlb>,
    /// The range TLB (when configured).
    range: Option<RangeTlb>,
    itlb: Tlb,
    /// What to ask the design for after a walk (`None`: no coalescing).
    coalesce: Option<CoalesceRequest>,
    /// Whether the statistics of the extended organizations are written.
    extended: bool,
    /// Largest span the L1 holds as one entry (`tlb.l1_max_span_bytes`; `u64::MAX`: any).
    l1_max_span_bytes: u64,
    /// L1 hit latency in cycles (the cost every translation pays, not counted as overhead).
    pub l1_latency_cycles: u32,
    /// Latency of the L2 stage in cycles: the L2 TLB's, or the slowest of the structures
    /// probed with it (its 1 GiB part, the range TLB).
    pub l2_latency_cycles: u32,
    /// Data-side L1 misses.
    pub l1_misses: u64,
    /// Data-side L2 misses.
    pub l2_misses: u64,
    /// Instruction-side ITLB misses.
    pub itlb_misses: u64,
    /// Instruction-side L2 misses.
    pub itlb_l2_misses: u64,
    /// Translations invalidated because the OS changed a mapping.
    pub invalidations: u64,
    /// Walk fills that installed a coalesced entry.
    pub coalesced_fills: u64,
    /// Pages covered by those coalesced entries (walked page included).
    pub coalesced_fill_pages: u64,
}

impl Mmu {
    /// Build cold TLBs from the config.
    pub fn new(cfg: &TlbConfig) -> Mmu {
        let t = |l: &TlbLevelConfig| Tlb::new(l.entries, l.ways.max(1));
        let beside = cfg.l1_organization == L1Organization::SplitAnySize;
        let any = cfg.l1_organization == L1Organization::AnySize || beside;
        let split_1g = cfg.l2_organization == L2Organization::Split1G;
        let mut l2_latency_cycles = cfg.l2.latency_cycles;
        if split_1g {
            l2_latency_cycles = l2_latency_cycles.max(cfg.l2_1g.latency_cycles);
        }
        if cfg.range.entries > 0 {
            l2_latency_cycles = l2_latency_cycles.max(cfg.range.latency_cycles);
        }
        Mmu {
            l1: [t(&cfg.l1_4k), t(&cfg.l1_2m), t(&cfg.l1_1g)],
            l1_any: any.then(|| t(&cfg.l1_any)),
            l1_4k_beside_any: beside,
            l2: t(&cfg.l2),
            l2_1g: split_1g.then(|| t(&cfg.l2_1g)),
            range: (cfg.range.entries > 0).then(|| RangeTlb::new(cfg.range.entries as usize)),
            itlb: t(&cfg.itlb),
            coalesce: match cfg.coalescing {
                Coalescing::None => None,
                Coalescing::ContiguousBit => Some(CoalesceRequest::ContiguousBit),
                Coalescing::Colt => Some(CoalesceRequest::Colt {
                    max_pages: cfg.colt_max_pages,
                }),
            },
            extended: cfg.extended(),
            l1_max_span_bytes: match cfg.l1_max_span_bytes {
                0 => u64::MAX,
                n => n,
            },
            l1_latency_cycles: if beside {
                cfg.l1_any.latency_cycles.max(cfg.l1_4k.latency_cycles)
            } else if any {
                cfg.l1_any.latency_cycles
            } else {
                cfg.l1_4k.latency_cycles
            },
            l2_latency_cycles,
            l1_misses: 0,
            l2_misses: 0,
            itlb_misses: 0,
            itlb_l2_misses: 0,
            invalidations: 0,
            coalesced_fills: 0,
            coalesced_fill_pages: 0,
        }
    }

    /// A data translation from the L1 DTLBs, if one holds it. A miss must be followed by
    /// [`Mmu::lookup_data_after_l1_miss`] (which counts it and goes on to the L2 TLB).
    #[inline(always)]
    pub fn lookup_data_l1(&mut self, asid: Asid, vpn: Vpn) -> Option<Mapping> {
        if let Some(any) = self.l1_any.as_mut() {
            if self.l1_4k_beside_any {
                // TPS: the 4 KiB L1 and the any-size L1 are probed in parallel.
                let l1_4k = &mut self.l1[0];
                if l1_4k.ever_filled() {
                    if let Some(m) = l1_4k.lookup_sized(asid, vpn, PageSize::Size4K) {
                        return Some(m);
                    }
                }
            }
            return any.lookup(asid, vpn);
        }
        // Hardware probes the per-size L1s in parallel; at most one can hold the page.
        // Unrolled: a loop over the three cost more than the probes on TLB-hitting streams.
        let [l1_4k, l1_2m, l1_1g] = &mut self.l1;
        if l1_4k.ever_filled() {
            if let Some(m) = l1_4k.lookup_sized(asid, vpn, PageSize::Size4K) {
                return Some(m);
            }
        }
        if l1_2m.ever_filled() {
            if let Some(m) = l1_2m.lookup_sized(asid, vpn, PageSize::Size2M) {
                return Some(m);
            }
        }
        if l1_1g.ever_filled() {
            if let Some(m) = l1_1g.lookup_sized(asid, vpn, PageSize::Size1G) {
                return Some(m);
            }
        }
        None
    }

    /// The L2 stage: the L2 TLB and, when configured, its 1 GiB part (probed in parallel;
    /// at most one holds the page). The range TLB is the caller's.
    #[inline]
    fn lookup_l2(&mut self, asid: Asid, vpn: Vpn) -> Option<TlbEntry> {
        let e = self.l2.lookup_entry(asid, vpn);
        if e.is_some() {
            return e;
        }
        match self.l2_1g.as_mut() {
            Some(g) if g.ever_filled() => g.lookup_entry(asid, vpn),
            _ => None,
        }
    }

    /// The data side after an L1 miss: out of line, so that the L1 hit path inlined into the
    /// engine stays small.
    #[inline(never)]
    pub fn lookup_data_after_l1_miss(&mut self, asid: Asid, vpn: Vpn) -> TlbOutcome {
        self.l1_misses += 1;
        match self.lookup_l2(asid, vpn) {
            Some(e) => {
                self.fill_l1_entry(asid, e, vpn);
                TlbOutcome::L2Hit(e.base_of(vpn))
            }
            None => self.after_l2_miss(asid, vpn, false),
        }
    }

    /// An L2-stage miss: the range TLB (probed in parallel with the L2) may still hold `vpn`.
    #[inline]
    fn after_l2_miss(&mut self, asid: Asid, vpn: Vpn, ifetch: bool) -> TlbOutcome {
        if let Some(r) = self.range.as_mut().and_then(|t| t.lookup(asid, vpn)) {
            let base = r.base_of(vpn);
            if !ifetch {
                // RMM refills the L1 DTLB with the 4 KiB entry the range implies (§4.2). It
                // need not be the OS page (that may be larger): the engine's oracle checks such
                // an entry frame by frame, and `invalidate` removes it with any page holding it.
                self.fill_l1_entry(asid, TlbEntry::Page(base), vpn);
            }
            return TlbOutcome::RangeHit(base);
        }
        if ifetch {
            self.itlb_l2_misses += 1;
        } else {
            self.l2_misses += 1;
        }
        TlbOutcome::Miss
    }

    /// Look up an instruction-fetch translation.
    #[inline]
    pub fn lookup_ifetch(&mut self, asid: Asid, vpn: Vpn) -> TlbOutcome {
        if let Some(m) = self.itlb.lookup(asid, vpn) {
            return TlbOutcome::L1Hit(m);
        }
        self.itlb_misses += 1;
        match self.lookup_l2(asid, vpn) {
            Some(e) => {
                self.fill_itlb_entry(asid, e);
                TlbOutcome::L2Hit(e.base_of(vpn))
            }
            None => self.after_l2_miss(asid, vpn, true),
        }
    }

    /// Install a walked translation in the L2 and the right L1 (ITLB for fetches).
    #[inline]
    pub fn fill(&mut self, asid: Asid, m: Mapping, ifetch: bool) {
        self.fill_entry(asid, TlbEntry::Page(m), m.vpn, ifetch);
    }

    /// The coalescing the TLBs do (`tlb.coalescing`), if any.
    pub fn coalescing(&self) -> Option<CoalesceRequest> {
        self.coalesce
    }

    /// Install the translation `m` a walk for `vpn` just found as the coalesced entry `span`
    /// (computed by the caller: nested runs combine the guest's and the host's contiguity,
    /// `virt::nested_span`), or as `m` alone when `span` is `None` or does not hold exactly
    /// `m` (a caller bug, not cached; the oracle would catch a wrong neighbour).
    pub fn fill_span(&mut self, asid: Asid, vpn: Vpn, m: Mapping, span: Option<CoalescedSpan>) {
        match span.filter(|s| s.pages_log2 >= 1 && s.contains(m.vpn) && s.base_of(m.vpn) == m) {
            Some(s) => {
                self.coalesced_fills += 1;
                self.coalesced_fill_pages += s.pages();
                self.fill_entry(asid, TlbEntry::Span(s), vpn, false);
            }
            None => self.fill(asid, m, false),
        }
    }

    /// Install the translation `m` a walk of `design` for `vpn` just found: as it is, or, with
    /// coalescing on, as the coalesced entry the design reports for it
    /// ([`FillHints::coalesced_span`]); with a range TLB, also the design's range holding `vpn`
    /// ([`FillHints::range_holding`]), if any.
    #[inline]
    pub fn fill_walked<D: FillHints>(
        &mut self,
        design: &D,
        asid: Asid,
        vpn: Vpn,
        m: Mapping,
        ifetch: bool,
    ) {
        if !self.extended {
            return self.fill(asid, m, ifetch);
        }
        let span = self
            .coalesce
            .and_then(|req| design.coalesced_span(asid, m, req))
            .filter(|s| {
                // A span must be a real one holding exactly the walked page: anything else is a
                // design bug, and is not cached (a wrong neighbour would be caught by the oracle
                // at its first hit).
                debug_assert!(
                    s.pages_log2 >= 1 && s.contains(m.vpn) && s.base_of(m.vpn) == m,
                    "design returned {s:?} for {m:?}"
                );
                s.pages_log2 >= 1 && s.contains(m.vpn) && s.base_of(m.vpn) == m
            });
        match span {
            Some(s) => {
                self.coalesced_fills += 1;
                self.coalesced_fill_pages += s.pages();
                self.fill_entry(asid, TlbEntry::Span(s), vpn, ifetch);
            }
            None => self.fill(asid, m, ifetch),
        }
        if self.range.is_some() {
            // A range not holding `vpn` is a design bug; it is not cached.
            if let Some(r) = design.range_holding(asid, vpn).filter(|r| r.contains(vpn)) {
                if let Some(t) = self.range.as_mut() {
                    t.fill(asid, r);
                }
            }
        }
    }

    /// Install an entry in the L2 stage and the L1 (ITLB for fetches) for an access to `vpn`.
    #[inline]
    fn fill_entry(&mut self, asid: Asid, e: TlbEntry, vpn: Vpn, ifetch: bool) {
        match (e, self.l2_1g.as_mut()) {
            (TlbEntry::Page(m), Some(g)) if m.size == PageSize::Size1G => g.fill(asid, m),
            (TlbEntry::Page(m), _) => self.l2.fill(asid, m),
            (TlbEntry::Span(s), _) => self.l2.fill_span(asid, &s),
        }
        if ifetch {
            self.fill_itlb_entry(asid, e);
        } else {
            self.fill_l1_entry(asid, e, vpn);
        }
    }

    /// Install `e` in the ITLB (it takes every size and coalesced spans).
    #[inline]
    fn fill_itlb_entry(&mut self, asid: Asid, e: TlbEntry) {
        match e {
            TlbEntry::Page(m) => self.itlb.fill(asid, m),
            TlbEntry::Span(s) => self.itlb.fill_span(asid, &s),
        }
    }

    /// Install `e` in the L1 DTLB for an access to `vpn`. The any-size L1 takes pages and spans
    /// alike (a span above `tlb.l1_max_span_bytes` as its base page holding `vpn`). The split L1 has one TLB per x86 page size and no entry format for a span: it
    /// takes the base page of the span holding `vpn` (a page of another size, none).
    #[inline]
    fn fill_l1_entry(&mut self, asid: Asid, e: TlbEntry, vpn: Vpn) {
        if let Some(any) = self.l1_any.as_mut() {
            match e {
                TlbEntry::Page(m) if self.l1_4k_beside_any && m.size == PageSize::Size4K => {
                    self.l1[0].fill(asid, m)
                }
                TlbEntry::Page(m) => any.fill(asid, m),
                TlbEntry::Span(s) if s.size().bytes() <= self.l1_max_span_bytes => {
                    any.fill_span(asid, &s)
                }
                TlbEntry::Span(s) => any.fill(asid, s.base_of(vpn)),
            }
            return;
        }
        let m = e.base_of(vpn);
        if let Some(i) = m.size.x86_index() {
            self.l1[i].fill(asid, m);
        }
    }

    /// Remove a translation from every level (TLB shootdown for one page), with every coalesced
    /// entry and range covering any of its pages.
    pub fn invalidate(&mut self, asid: Asid, m: Mapping) {
        self.invalidations += 1;
        if let Some(any) = self.l1_any.as_mut() {
            any.invalidate(asid, m);
            if self.l1_4k_beside_any && m.size == PageSize::Size4K {
                self.l1[0].invalidate(asid, m);
            }
        } else if let Some(i) = m.size.x86_index() {
            self.l1[i].invalidate(asid, m);
        }
        self.l2.invalidate(asid, m);
        if let Some(g) = self.l2_1g.as_mut() {
            g.invalidate(asid, m);
        }
        if let Some(r) = self.range.as_mut() {
            r.invalidate(asid, &m);
            if m.size != PageSize::Size4K {
                // 4 KiB entries refilled from ranges for pages of `m`.
                self.l1[0].invalidate_base_pages_inside(asid, m);
                if let Some(any) = self.l1_any.as_mut() {
                    any.invalidate_base_pages_inside(asid, m);
                }
            }
        }
        self.itlb.invalidate(asid, m);
    }

    /// Whether a range TLB is configured: then a 4 KiB L1 DTLB entry may have been refilled from
    /// a range and is checked like a range hit (frame and permission, not page size).
    #[inline]
    pub fn has_range_tlb(&self) -> bool {
        self.range.is_some()
    }

    /// Remove every translation of `asid`.
    pub fn invalidate_asid(&mut self, asid: Asid) {
        for t in self
            .l1
            .iter_mut()
            .chain(self.l1_any.as_mut())
            .chain(self.l2_1g.as_mut())
        {
            t.invalidate_asid(asid);
        }
        self.l2.invalidate_asid(asid);
        if let Some(r) = self.range.as_mut() {
            r.invalidate_asid(asid);
        }
        self.itlb.invalidate_asid(asid);
    }

    /// Write the `tlb` section of the result record.
    pub fn stats(&self, out: &mut Stats, instructions: u64) {
        let s = out.section("tlb");
        let l1_lookups: u64 = self.l1_misses
            + self
                .l1
                .iter()
                .chain(self.l1_any.as_ref())
                .map(|t| t.hits)
                .sum::<u64>();
        s.put_u64("l1_lookups", l1_lookups);
        s.put_u64("l1_misses", self.l1_misses);
        s.put_u64("l2_lookups", self.l2.hits + self.l2.misses);
        s.put_u64("l2_misses", self.l2_misses);
        s.put_u64("itlb_misses", self.itlb_misses);
        s.put_u64("itlb_l2_misses", self.itlb_l2_misses);
        s.put_f64("l1_miss_rate", ratio(self.l1_misses, l1_lookups));
        s.put_f64("l1_mpki", ratio(self.l1_misses * 1000, instructions));
        s.put_f64("l2_mpki", ratio(self.l2_misses * 1000, instructions));
        s.put_u64("invalidations", self.invalidations);
        for size in PageSize::X86 {
            s.put_u64(
                &format!("l1_{}_hits", size.label()),
                self.l1[size.index()].hits,
            );
        }
        let by_size = |counts: &[u64]| {
            let mut by = Stats::new();
            for (o, n) in counts.iter().enumerate() {
                if *n > 0 {
                    by.put_u64(&PageSize::from_order(o as u8).expect("order").label(), *n);
                }
            }
            serde_json::Value::Object(by)
        };
        if let Some(any) = &self.l1_any {
            // Hits of the any-size L1 by the size of the page entry that hit.
            s.insert("l1_any_hits_by_size".into(), by_size(any.hits_by_order()));
        }
        if !self.extended {
            return;
        }
        // The L2 stage by entry kind: page entries by page size (1 GiB ones of `split_1g`
        // included), coalesced entries by span size, ranges.
        let mut l2_pages = self.l2.hits_by_order().to_vec();
        if let Some(g) = &self.l2_1g {
            for (o, n) in g.hits_by_order().iter().enumerate() {
                l2_pages[o] += n;
            }
            s.put_u64("l2_1g_hits", g.hits);
        }
        s.insert("l2_hits_by_size".into(), by_size(&l2_pages));
        if self.coalesce.is_some() {
            let sum = |t: &Tlb| t.coalesced_hits_by_order().iter().sum::<u64>();
            s.put_u64("coalesced_fills", self.coalesced_fills);
            s.put_u64("coalesced_fill_pages", self.coalesced_fill_pages);
            let l1 = self.l1_any.as_ref().map_or(0, sum);
            s.put_u64("l1_coalesced_hits", l1);
            s.put_u64("l2_coalesced_hits", sum(&self.l2));
            s.put_u64("itlb_coalesced_hits", sum(&self.itlb));
            if let Some(any) = &self.l1_any {
                s.insert(
                    "l1_coalesced_hits_by_size".into(),
                    by_size(any.coalesced_hits_by_order()),
                );
            }
            s.insert(
                "l2_coalesced_hits_by_size".into(),
                by_size(self.l2.coalesced_hits_by_order()),
            );
        }
        if let Some(r) = &self.range {
            s.put_u64("range_lookups", r.hits + r.misses);
            s.put_u64("range_hits", r.hits);
            s.put_u64("range_fills", r.fills);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::designs::radix::{Radix, RadixConfig};
    use crate::designs::{Design, PtFootprint, WalkResult};
    use crate::mem::{MemConfig, MemSystem};
    use crate::os::{OsError, PhysMem};
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// A radix design, its physical memory and a memory system to walk through.
    struct Machine {
        mmu: Mmu,
        radix: Radix,
        phys: PhysMem,
        mem: MemSystem,
        walks: u64,
    }

    impl Machine {
        fn new(cfg: TlbConfig) -> Machine {
            cfg.validate().unwrap();
            let mut phys = PhysMem::new(1 << 30);
            let radix = Radix::new(&RadixConfig::default(), &mut phys).unwrap();
            Machine {
                mmu: Mmu::new(&cfg),
                radix,
                phys,
                mem: MemSystem::new(&MemConfig::default()),
                walks: 0,
            }
        }

        fn map(&mut self, m: Mapping) {
            self.radix.map(&mut self.phys, 0, m).unwrap();
        }

        fn unmap(&mut self, m: Mapping) {
            self.radix.unmap(&mut self.phys, 0, m);
            self.mmu.invalidate(0, m);
        }

        /// A data reference to `vpn` as the engine makes it: L1, L2 stage, else a walk whose
        /// result fills the TLBs. Returns the translation used (`None`: not mapped).
        fn access(&mut self, vpn: u64) -> Option<Mapping> {
            let vpn = Vpn(vpn);
            if let Some(m) = self.mmu.lookup_data_l1(0, vpn) {
                return Some(m);
            }
            match self.mmu.lookup_data_after_l1_miss(0, vpn) {
                TlbOutcome::L1Hit(m) | TlbOutcome::L2Hit(m) | TlbOutcome::RangeHit(m) => Some(m),
                TlbOutcome::Miss => {
                    self.walks += 1;
                    let m = self.radix.walk(0, vpn, &mut self.mem).mapping?;
                    self.mmu.fill_walked(&self.radix, 0, vpn, m, false);
                    Some(m)
                }
            }
        }
    }

    fn arm_l1(coalescing: Coalescing) -> TlbConfig {
        TlbConfig {
            l1_organization: L1Organization::AnySize,
            // No L2: the L1 alone must hold the pages.
            l2: TlbLevelConfig {
                entries: 0,
                ways: 1,
                latency_cycles: 12,
            },
            coalescing,
            ..TlbConfig::default()
        }
    }

    #[test]
    fn a_contiguous_run_of_16_4k_pages_takes_one_entry_of_an_arm_l1_tlb() {
        // 48 entries x 16 pages: 768 pages in 48 aligned, physically contiguous 64 KiB runs.
        let pages = 48 * 16;
        for (coalescing, walks_second_pass) in
            [(Coalescing::ContiguousBit, 0), (Coalescing::None, pages)]
        {
            let mut x = Machine::new(arm_l1(coalescing));
            for v in 0..pages {
                x.map(Mapping::writable(0x1000 + v, 0x8000 + v, PageSize::Size4K));
            }
            for v in 0..pages {
                assert_eq!(x.access(0x1000 + v).unwrap().pfn, Pfn(0x8000 + v));
            }
            let first = x.walks;
            for v in 0..pages {
                assert_eq!(x.access(0x1000 + v).unwrap().pfn, Pfn(0x8000 + v));
            }
            assert_eq!(x.walks - first, walks_second_pass, "{coalescing:?}");
            if coalescing == Coalescing::ContiguousBit {
                // One walk per run, then every page of the run hits its one entry.
                assert_eq!(first, 48);
                assert_eq!(x.mmu.l1_any.as_ref().unwrap().occupancy(), 48);
                assert_eq!(x.mmu.l1_misses, 48);
                let mut out = Stats::new();
                x.mmu.stats(&mut out, 1000);
                assert_eq!(out["tlb"]["coalesced_fills"], 48);
                assert_eq!(out["tlb"]["l1_coalesced_hits_by_size"]["64k"], 2 * 768 - 48);
            }
        }
    }

    #[test]
    fn a_run_that_is_not_physically_aligned_or_equally_protected_is_not_marked_contiguous() {
        let mut x = Machine::new(arm_l1(Coalescing::ContiguousBit));
        // Frames contiguous but not 64 KiB aligned.
        for v in 0..16 {
            x.map(Mapping::writable(0x1000 + v, 0x8001 + v, PageSize::Size4K));
        }
        // Aligned and contiguous, but one page read-only.
        for v in 0..16 {
            let mut m = Mapping::writable(0x2000 + v, 0x9000 + v, PageSize::Size4K);
            m.writable = v != 7;
            x.map(m);
        }
        for v in 0..16 {
            x.access(0x1000 + v);
            x.access(0x2000 + v);
        }
        assert_eq!(x.walks, 32);
        assert_eq!(x.mmu.coalesced_fills, 0);
    }

    #[test]
    fn sixteen_contiguous_2m_pages_take_one_32m_entry() {
        let mut x = Machine::new(arm_l1(Coalescing::ContiguousBit));
        for i in 0..16 {
            x.map(Mapping::writable(
                (1 << 18) + i * 512,
                (1 << 20) + i * 512,
                PageSize::Size2M,
            ));
        }
        for i in 0..16 * 4 {
            let vpn = (1 << 18) + i * 128 + 3;
            let m = x.access(vpn).unwrap();
            assert_eq!(m.size, PageSize::Size2M);
            assert_eq!(m.pfn.0, (1 << 20) + (vpn - (1 << 18)) / 512 * 512);
        }
        assert_eq!(x.walks, 1);
        let mut out = Stats::new();
        x.mmu.stats(&mut out, 1);
        assert_eq!(out["tlb"]["l1_coalesced_hits_by_size"]["32m"], 63);
        // Unmapping one of the 16 removes the entry and the marks of the others.
        x.unmap(Mapping::writable(
            (1 << 18) + 5 * 512,
            (1 << 20) + 5 * 512,
            PageSize::Size2M,
        ));
        assert_eq!(x.access((1 << 18) + 5 * 512), None);
        x.access(1 << 18);
        x.access((1 << 18) + 512);
        assert_eq!(x.walks, 4, "each remaining page is its own entry now");
    }

    #[test]
    fn a_colt_fill_of_8_contiguous_translations_serves_the_other_7_without_a_walk() {
        let cfg = TlbConfig {
            coalescing: Coalescing::Colt,
            ..TlbConfig::default()
        };
        let mut x = Machine::new(cfg);
        // Physically contiguous, not aligned to 8 frames (CoLT does not need it).
        for v in 0..8 {
            x.map(Mapping::writable(0x1008 + v, 0x7003 + v, PageSize::Size4K));
        }
        assert_eq!(x.access(0x100b).unwrap().pfn, Pfn(0x7006));
        assert_eq!(x.walks, 1);
        for v in 0..8 {
            assert_eq!(x.access(0x1008 + v).unwrap().pfn, Pfn(0x7003 + v));
        }
        assert_eq!(x.walks, 1, "the other 7 are served by the coalesced entry");
        let mut out = Stats::new();
        x.mmu.stats(&mut out, 1);
        assert_eq!(out["tlb"]["coalesced_fills"], 1);
        assert_eq!(out["tlb"]["coalesced_fill_pages"], 8);
        // The split L1 holds base pages: the 7 others came from the L2's coalesced entry.
        assert_eq!(out["tlb"]["l2_coalesced_hits_by_size"]["32k"], 7);
    }

    #[test]
    fn colt_coalesces_the_largest_aligned_contiguous_group_within_the_walked_line() {
        let cfg = TlbConfig {
            coalescing: Coalescing::Colt,
            ..TlbConfig::default()
        };
        let mut x = Machine::new(cfg);
        // Line of VPNs 0x1000..0x1008; page 5 breaks physical contiguity; the next line's
        // pages are contiguous with this line's but live in another line.
        for v in 0..16 {
            let pfn = if v == 5 { 0x9999 } else { 0x7000 + v };
            x.map(Mapping::writable(0x1000 + v, pfn, PageSize::Size4K));
        }
        let walked: Vec<u64> = (0..16)
            .filter(|v| {
                let before = x.walks;
                x.access(0x1000 + v);
                x.walks > before
            })
            .collect();
        // 0: group 0..4; 4 and 5 alone (the pair 4,5 is broken); 6: pair 6,7; 8: group 8..16
        // of at most 8 pages, one line.
        assert_eq!(walked, vec![0, 4, 5, 6, 8]);
        // A smaller cap coalesces less.
        let mut y = Machine::new(TlbConfig {
            coalescing: Coalescing::Colt,
            colt_max_pages: 2,
            ..TlbConfig::default()
        });
        for v in 0..8 {
            y.map(Mapping::writable(0x1000 + v, 0x7000 + v, PageSize::Size4K));
        }
        for v in 0..8 {
            y.access(0x1000 + v);
        }
        assert_eq!(y.walks, 4);
    }

    #[test]
    fn invalidating_one_page_removes_the_coalesced_entry_from_every_level() {
        for org in [L1Organization::AnySize, L1Organization::Split] {
            let mut x = Machine::new(TlbConfig {
                l1_organization: org,
                coalescing: Coalescing::Colt,
                ..TlbConfig::default()
            });
            for v in 0..8 {
                x.map(Mapping::writable(0x1000 + v, 0x7000 + v, PageSize::Size4K));
            }
            x.access(0x1000);
            x.access(0x1003);
            x.unmap(Mapping::writable(0x1006, 0x7006, PageSize::Size4K));
            // The page itself and every page of the span that no other entry holds now need a
            // walk (the split L1 still holds the base page 0x1003 it was given, valid).
            assert_eq!(x.access(0x1006), None);
            let before = x.walks;
            assert_eq!(x.access(0x1004).unwrap().pfn, Pfn(0x7004));
            assert_eq!(x.walks, before + 1, "{org:?}");
            // Re-mapped elsewhere: the new frame, never the old one.
            x.map(Mapping::writable(0x1006, 0x5555, PageSize::Size4K));
            assert_eq!(x.access(0x1006).unwrap().pfn, Pfn(0x5555));
        }
    }

    #[test]
    fn a_split_1g_l2_keeps_1g_pages_in_its_own_entries() {
        let cfg = |org| TlbConfig {
            l2_organization: org,
            l1_1g: TlbLevelConfig {
                entries: 0,
                ways: 1,
                latency_cycles: 1,
            },
            ..TlbConfig::default()
        };
        let g = |i: u64| Mapping::writable((i + 1) << 18, (i + 1) << 18, PageSize::Size1G);
        for (org, first_still_cached) in [
            (L2Organization::Unified, true),
            (L2Organization::Split1G, false),
        ] {
            let mut mmu = Mmu::new(&cfg(org));
            // 17 pages of 1 GiB: one more than the separate part's 16 entries.
            for i in 0..17 {
                mmu.fill(0, g(i), false);
            }
            mmu.fill(0, Mapping::writable(5, 5, PageSize::Size4K), false);
            let hit = |mmu: &mut Mmu, vpn| mmu.lookup_data_after_l1_miss(0, Vpn(vpn));
            assert_eq!(
                matches!(hit(&mut mmu, g(0).vpn.0 + 7), TlbOutcome::L2Hit(m) if m == g(0)),
                first_still_cached,
                "{org:?}"
            );
            assert_eq!(hit(&mut mmu, g(16).vpn.0), TlbOutcome::L2Hit(g(16)));
            assert!(matches!(hit(&mut mmu, 5), TlbOutcome::L2Hit(_)));
            let mut out = Stats::new();
            mmu.stats(&mut out, 1);
            if org == L2Organization::Split1G {
                assert_eq!(out["tlb"]["l2_1g_hits"], 1);
                assert_eq!(out["tlb"]["l2_hits_by_size"]["1g"], 1);
                assert_eq!(out["tlb"]["l2_hits_by_size"]["4k"], 1);
                mmu.invalidate(0, g(16));
                assert_eq!(hit(&mut mmu, g(16).vpn.0), TlbOutcome::Miss);
            } else {
                assert!(out["tlb"].get("l2_hits_by_size").is_none());
            }
        }
    }

    /// A radix design that also has one range translation (as RMM's range table would).
    struct Ranged {
        radix: Radix,
        range: Option<VaRange>,
    }

    impl Design for Ranged {
        type Config = RadixConfig;
        fn new(cfg: &RadixConfig, phys: &mut PhysMem) -> Result<Self, OsError> {
            Ok(Ranged {
                radix: Radix::new(cfg, phys)?,
                range: None,
            })
        }
        fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
            self.radix.map(phys, asid, m)
        }
        fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
            self.radix.unmap(phys, asid, m)
        }
        fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
            self.radix.walk(asid, vpn, mem)
        }
        fn range(&self, _asid: Asid, vpn: Vpn) -> Option<VaRange> {
            self.range.filter(|r| r.contains(vpn))
        }
        fn footprint(&self) -> PtFootprint {
            self.radix.footprint()
        }
        fn stats(&self, _out: &mut Stats) {}
    }

    #[test]
    fn a_range_hit_refills_the_l1_with_a_4k_entry_that_leaves_with_the_page_holding_it() {
        for org in [
            L1Organization::Split,
            L1Organization::AnySize,
            L1Organization::SplitAnySize,
        ] {
            let mut mmu = Mmu::new(&TlbConfig {
                l1_organization: org,
                range: TlbLevelConfig {
                    entries: 4,
                    ways: 0,
                    latency_cycles: 12,
                },
                ..TlbConfig::default()
            });
            let mut phys = PhysMem::new(1 << 30);
            let mut mem = MemSystem::new(&MemConfig::default());
            let mut d = Ranged::new(&RadixConfig::default(), &mut phys).unwrap();
            let huge = Mapping::writable(0x200, 0x4000, PageSize::Size2M);
            d.map(&mut phys, 0, huge).unwrap();
            d.range = Some(VaRange {
                vpn_start: Vpn(0x200),
                vpn_end: Vpn(0x400),
                pfn_start: Pfn(0x4000),
                writable: true,
            });
            let m = d.walk(0, Vpn(0x250), &mut mem).mapping.unwrap();
            mmu.fill_walked(&d, 0, Vpn(0x250), m, false);
            // Evict the 2 MiB entry from nowhere: look up another page of the range.
            let four_k = Mapping::writable(0x201, 0x4001, PageSize::Size4K);
            assert_eq!(mmu.lookup_data_l1(0, Vpn(0x201)), Some(huge), "{org:?}");
            mmu.l1[1].invalidate(0, huge);
            if let Some(any) = mmu.l1_any.as_mut() {
                any.invalidate(0, huge);
            }
            mmu.l2.invalidate(0, huge);
            assert_eq!(mmu.lookup_data_l1(0, Vpn(0x201)), None, "{org:?}");
            assert_eq!(
                mmu.lookup_data_after_l1_miss(0, Vpn(0x201)),
                TlbOutcome::RangeHit(four_k)
            );
            // The refill: the next access hits the L1 with the range's 4 KiB entry.
            assert_eq!(mmu.lookup_data_l1(0, Vpn(0x201)), Some(four_k), "{org:?}");
            // Unmapping the 2 MiB page holding it removes it.
            mmu.invalidate(0, huge);
            assert_eq!(mmu.lookup_data_l1(0, Vpn(0x201)), None, "{org:?}");
        }
    }

    #[test]
    fn a_range_tlb_beside_the_l2_serves_every_page_of_a_range_after_one_walk() {
        let cfg = TlbConfig {
            range: TlbLevelConfig {
                entries: 4,
                ways: 0,
                latency_cycles: 20,
            },
            ..TlbConfig::default()
        };
        cfg.validate().unwrap();
        let mut mmu = Mmu::new(&cfg);
        assert_eq!(
            mmu.l2_latency_cycles, 20,
            "the L2 stage waits for the slower probe"
        );
        let mut phys = PhysMem::new(1 << 30);
        let mut mem = MemSystem::new(&MemConfig::default());
        let mut d = Ranged::new(&RadixConfig::default(), &mut phys).unwrap();
        // A 4 MiB range mapped by one 2 MiB page and 512 4 KiB pages.
        d.map(
            &mut phys,
            0,
            Mapping::writable(0x200, 0x4000, PageSize::Size2M),
        )
        .unwrap();
        for v in 0..512 {
            d.map(
                &mut phys,
                0,
                Mapping::writable(0x400 + v, 0x4200 + v, PageSize::Size4K),
            )
            .unwrap();
        }
        d.range = Some(VaRange {
            vpn_start: Vpn(0x200),
            vpn_end: Vpn(0x600),
            pfn_start: Pfn(0x4000),
            writable: true,
        });
        assert_eq!(
            mmu.lookup_data_after_l1_miss(0, Vpn(0x450)),
            TlbOutcome::Miss
        );
        let m = d.walk(0, Vpn(0x450), &mut mem).mapping.unwrap();
        mmu.fill_walked(&d, 0, Vpn(0x450), m, false);
        // Another page of the range: not in the L1/L2, served by the range as a 4 KiB page.
        let got = mmu.lookup_data_after_l1_miss(0, Vpn(0x201));
        assert_eq!(
            got,
            TlbOutcome::RangeHit(Mapping::writable(0x201, 0x4001, PageSize::Size4K))
        );
        assert_eq!(
            mmu.lookup_data_after_l1_miss(0, Vpn(0x5ff)),
            TlbOutcome::RangeHit(Mapping::writable(0x5ff, 0x43ff, PageSize::Size4K))
        );
        // Another ASID does not hit.
        assert_eq!(
            mmu.lookup_data_after_l1_miss(1, Vpn(0x201)),
            TlbOutcome::Miss
        );
        // Invalidating one page inside removes the whole range.
        mmu.invalidate(0, Mapping::writable(0x5ff, 0x43ff, PageSize::Size4K));
        assert_eq!(
            mmu.lookup_data_after_l1_miss(0, Vpn(0x201)),
            TlbOutcome::Miss
        );
        let mut out = Stats::new();
        mmu.stats(&mut out, 1);
        let t = &out["tlb"];
        assert_eq!(
            (t["range_hits"].clone(), t["range_fills"].clone()),
            (2.into(), 1.into())
        );
        assert_eq!(t["range_lookups"], 5);
    }

    #[test]
    fn the_new_organizations_are_validated_naming_their_key() {
        let bad = |cfg: TlbConfig, key: &str| {
            let e = cfg.validate().unwrap_err();
            assert!(e.contains(key), "{e}");
        };
        for pages in [0, 1, 3, 12, 128] {
            bad(
                TlbConfig {
                    colt_max_pages: pages,
                    ..TlbConfig::default()
                },
                "tlb.colt_max_pages",
            );
        }
        bad(
            TlbConfig {
                l2_1g: TlbLevelConfig {
                    entries: 18,
                    ways: 4,
                    latency_cycles: 1,
                },
                ..TlbConfig::default()
            },
            "tlb.l2_1g",
        );
        bad(
            TlbConfig {
                range: TlbLevelConfig {
                    entries: 32,
                    ways: 4,
                    latency_cycles: 1,
                },
                ..TlbConfig::default()
            },
            "tlb.range.ways",
        );
    }

    /// One step of the coalescing property test.
    #[derive(Clone, Debug)]
    enum Op {
        /// Map VPN `vpn` (if free) to frame `vpn + 16 * shift`, read-only when `ro`.
        Map { vpn: u64, shift: u64, ro: bool },
        /// Map every free VPN of the aligned group of 16 holding `vpn`, as `Map` does (whole
        /// contiguous runs are rare from single maps).
        MapRun { vpn: u64, shift: u64 },
        /// Unmap VPN `vpn` (if mapped).
        Unmap { vpn: u64 },
        /// A reference to `vpn`.
        Access { vpn: u64 },
    }

    proptest! {
        /// Under random map / unmap / reference sequences, a TLB hierarchy with coalescing never
        /// returns a translation other than the one mapped now (the base page truth), and a page
        /// unmapped is never translated again (invalidation is exact).
        #[test]
        fn a_coalescing_tlb_never_returns_a_translation_the_page_table_does_not_hold(
            ops in prop::collection::vec(prop_oneof![
                4 => (0u64..96, 0u64..2, prop::bool::weighted(0.1))
                    .prop_map(|(vpn, shift, ro)| Op::Map { vpn, shift, ro }),
                1 => (0u64..96, 0u64..2).prop_map(|(vpn, shift)| Op::MapRun { vpn, shift }),
                2 => (0u64..96).prop_map(|vpn| Op::Unmap { vpn }),
                6 => (0u64..96).prop_map(|vpn| Op::Access { vpn }),
            ], 1..300),
            coalescing in prop::sample::select(vec![Coalescing::ContiguousBit, Coalescing::Colt]),
            any_size in any::<bool>(),
            colt_max_pages in prop::sample::select(vec![2u32, 4, 8, 64]),
        ) {
            // Small TLBs, so that entries are evicted as well as invalidated.
            let small = |entries, ways| TlbLevelConfig { entries, ways, latency_cycles: 1 };
            let mut x = Machine::new(TlbConfig {
                l1_organization: if any_size { L1Organization::AnySize } else { L1Organization::Split },
                l1_any: small(4, 4),
                l1_4k: small(4, 2),
                l2: small(8, 2),
                coalescing,
                colt_max_pages,
                ..TlbConfig::default()
            });
            let base = 0x3_0000u64;
            let mut truth: HashMap<u64, Mapping> = HashMap::new();
            for op in ops {
                match op {
                    Op::Map { vpn, shift, ro } => {
                        if let std::collections::hash_map::Entry::Vacant(e) = truth.entry(vpn) {
                            let mut m = Mapping::writable(base + vpn, 0x10_0000 + vpn + 16 * shift, PageSize::Size4K);
                            m.writable = !ro;
                            x.map(m);
                            e.insert(m);
                        }
                    }
                    Op::MapRun { vpn, shift } => {
                        for v in vpn & !15..(vpn & !15) + 16 {
                            if let std::collections::hash_map::Entry::Vacant(e) = truth.entry(v) {
                                let m = Mapping::writable(base + v, 0x10_0000 + v + 16 * shift, PageSize::Size4K);
                                x.map(m);
                                e.insert(m);
                            }
                        }
                    }
                    Op::Unmap { vpn } => {
                        if let Some(m) = truth.remove(&vpn) {
                            x.unmap(m);
                            prop_assert_eq!(x.access(base + vpn), None);
                        }
                    }
                    Op::Access { vpn } => {
                        prop_assert_eq!(x.access(base + vpn), truth.get(&vpn).copied());
                    }
                }
            }
            // Finally every page, from whatever entries are left.
            for vpn in 0..96 {
                prop_assert_eq!(x.access(base + vpn), truth.get(&vpn).copied());
            }
        }
    }

    fn any_size_mmu(entries: u32) -> Mmu {
        Mmu::new(&TlbConfig {
            l1_organization: L1Organization::AnySize,
            l1_any: TlbLevelConfig {
                entries,
                ways: entries,
                latency_cycles: 1,
            },
            ..TlbConfig::default()
        })
    }

    #[test]
    fn an_any_size_l1_holds_pages_of_every_size_in_shared_entries() {
        let mut mmu = any_size_mmu(4);
        let k64 = PageSize::from_order(4).unwrap();
        let m32 = PageSize::from_order(13).unwrap();
        let pages = [
            Mapping::writable(0x10, 0x90, PageSize::Size4K),
            Mapping::writable(0x20, 0xa0, k64),
            Mapping::writable(0x200, 0x400, PageSize::Size2M),
            Mapping::writable(0x4000, 0x8000, m32),
        ];
        for m in pages {
            mmu.fill(0, m, false);
        }
        for m in pages {
            // Any VPN inside the page hits, from the L1.
            let inside = Vpn(m.vpn.0 + m.size.base_pages() - 1);
            assert_eq!(mmu.lookup_data_l1(0, inside), Some(m), "{m:?}");
        }
        assert_eq!(mmu.lookup_data_l1(0, Vpn(0x30)), None);
        // A fifth page evicts the least recently used (the 4 KiB one was used first).
        mmu.fill(0, Mapping::writable(0x11, 0x91, PageSize::Size4K), false);
        assert_eq!(mmu.lookup_data_l1(0, Vpn(0x10)), None);
        assert!(mmu.lookup_data_l1(0, Vpn(0x20)).is_some());
        mmu.invalidate(0, pages[1]);
        assert_eq!(mmu.lookup_data_l1(0, Vpn(0x20)), None);
        let hits = mmu.l1_any.as_ref().unwrap().hits_by_order();
        assert_eq!((hits[0], hits[4], hits[9], hits[13]), (1, 2, 1, 1));
        let mut out = Stats::new();
        mmu.stats(&mut out, 1000);
        assert_eq!(out["tlb"]["l1_any_hits_by_size"]["64k"], 2);
        // Misses are counted by the L2 step the engine takes after an L1 miss (not made here).
        assert_eq!(out["tlb"]["l1_lookups"], 5);
    }

    /// TPS Table I: 64 x 4-way 4 KiB L1 beside a 32-entry fully associative any-size L1.
    fn tps_mmu() -> Mmu {
        Mmu::new(&TlbConfig {
            l1_organization: L1Organization::SplitAnySize,
            l1_any: TlbLevelConfig {
                entries: 32,
                ways: 32,
                latency_cycles: 1,
            },
            ..TlbConfig::default()
        })
    }

    #[test]
    fn the_tps_any_size_l1_hits_every_address_of_a_cached_tailored_page() {
        let mut mmu = tps_mmu();
        // One page of every size from 8 KiB to 1 GiB, each in its own 1 GiB region.
        let pages: Vec<Mapping> = (1..=18u8)
            .map(|o| {
                let size = PageSize::from_order(o).unwrap();
                Mapping::writable((o as u64) << 18, (o as u64) << 18, size)
            })
            .collect();
        for m in &pages {
            mmu.fill(0, *m, false);
        }
        for m in &pages {
            // Every 4 KiB page of it (every address: the offset inside a 4 KiB page is not
            // looked at), sampled for the largest sizes.
            let step = (m.size.base_pages() / 4096).max(1);
            for v in (m.vpn.0..m.vpn.0 + m.size.base_pages()).step_by(step as usize) {
                assert_eq!(mmu.lookup_data_l1(0, Vpn(v)), Some(*m), "{m:?} at {v:#x}");
            }
            let last = Vpn(m.vpn.0 + m.size.base_pages() - 1);
            assert_eq!(mmu.lookup_data_l1(0, last), Some(*m));
            assert_eq!(
                mmu.lookup_data_l1(0, Vpn(m.vpn.0 + m.size.base_pages())),
                None
            );
        }
        // 4 KiB pages go to the 4 KiB L1 and take no any-size entry.
        for i in 0..64 {
            mmu.fill(
                0,
                Mapping::writable(0x100 + i, 0x900 + i, PageSize::Size4K),
                false,
            );
        }
        assert_eq!(mmu.l1_any.as_ref().unwrap().occupancy(), 18);
        assert_eq!(mmu.lookup_data_l1(0, Vpn(0x13f)).unwrap().pfn, Pfn(0x93f));
        assert!(mmu.lookup_data_l1(0, Vpn(1 << 18)).is_some());
        // Shootdowns reach both.
        mmu.invalidate(0, Mapping::writable(0x13f, 0x93f, PageSize::Size4K));
        mmu.invalidate(0, pages[0]);
        assert_eq!(mmu.lookup_data_l1(0, Vpn(0x13f)), None);
        assert_eq!(mmu.lookup_data_l1(0, Vpn(1 << 18)), None);
        let mut out = Stats::new();
        mmu.stats(&mut out, 1000);
        assert!(out["tlb"]["l1_4k_hits"].as_u64().unwrap() >= 1);
        assert!(out["tlb"]["l1_any_hits_by_size"]["8k"].as_u64().unwrap() >= 2);
    }

    #[test]
    fn the_split_organization_keeps_pages_of_other_sizes_in_the_l2_only() {
        let mut mmu = Mmu::new(&TlbConfig::default());
        let m = Mapping {
            vpn: Vpn(0x20),
            pfn: Pfn(0xa0),
            size: PageSize::from_order(4).unwrap(),
            writable: false,
        };
        mmu.fill(0, m, false);
        assert_eq!(mmu.lookup_data_l1(0, Vpn(0x21)), None);
        assert_eq!(
            mmu.lookup_data_after_l1_miss(0, Vpn(0x21)),
            TlbOutcome::L2Hit(m)
        );
    }
}
