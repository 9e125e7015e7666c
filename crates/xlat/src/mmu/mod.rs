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
mod config;
pub mod range;
mod span;
pub mod tlb;

pub use config::{Coalescing, L1Organization, L2Organization, TlbConfig, TlbLevelConfig};
pub use range::{RangeTlb, VaRange};
pub use span::{CoalesceRequest, CoalescedSpan};
pub use tlb::{Tlb, TlbEntry};

use crate::addr::{Asid, Mapping, PageSize, Vpn};
use crate::stats::{ratio, Stats, StatsExt};

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
    /// `tlb.walk_with_l2_lookup`: a page walk starts with the L2 TLB lookup (the engine charges
    /// the longer of the two, not their sum).
    pub walk_with_l2_lookup: bool,
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
            walk_with_l2_lookup: cfg.walk_with_l2_lookup,
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
mod tests;
