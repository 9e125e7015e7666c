//! ASID-tagged TLB holding one or several page sizes, built on [`AssocCache`].
//!
//! Contract: `lookup` returns an entry only if it was filled for the same ASID and a page that
//! contains the VPN, and has not been invalidated or evicted since; capacity never exceeds the
//! configured entries; replacement is LRU within a set. A coalesced entry
//! ([`CoalescedSpan`], filled by [`Tlb::fill_span`]) answers a lookup of any VPN inside its span
//! with the base page of that VPN ([`CoalescedSpan::base_of`]), never with the span itself, so
//! whoever checks a translation sees the page the OS mapped.

use super::assoc::AssocCache;
use super::span::CoalescedSpan;
use crate::addr::{Asid, Mapping, PageSize, Pfn, Vpn};

/// Value layout: bits 0..56 the (first) PFN, bits 56..62 the base-page order of a coalesced
/// entry, bit 62 set for a coalesced entry, bit 63 writable.
const WRITABLE_BIT: u64 = 1 << 63;
const COALESCED_BIT: u64 = 1 << 62;
const BASE_ORDER_SHIFT: u32 = 56;
const PFN_MASK: u64 = (1 << BASE_ORDER_SHIFT) - 1;

/// What one TLB entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlbEntry {
    /// One page.
    Page(Mapping),
    /// A coalesced run of base pages.
    Span(CoalescedSpan),
}

impl TlbEntry {
    /// The base page of this entry that holds `vpn` (the page itself for a page entry).
    #[inline]
    pub fn base_of(&self, vpn: Vpn) -> Mapping {
        match self {
            TlbEntry::Page(m) => *m,
            TlbEntry::Span(s) => s.base_of(vpn),
        }
    }
}

/// Decode the entry of `size` holding `vpn` from its stored value.
#[inline(always)]
fn decode(v: u64, vpn: Vpn, size: PageSize) -> TlbEntry {
    let writable = v & WRITABLE_BIT != 0;
    if v & COALESCED_BIT == 0 {
        return TlbEntry::Page(Mapping {
            vpn: vpn.align_down(size),
            pfn: Pfn(v & !WRITABLE_BIT),
            size,
            writable,
        });
    }
    let base_order = ((v >> BASE_ORDER_SHIFT) & 0x3f) as u8;
    TlbEntry::Span(CoalescedSpan {
        vpn: vpn.align_down(size),
        pfn: Pfn(v & PFN_MASK),
        base: PageSize::from_order(base_order).expect("base order"),
        pages_log2: size.order() - base_order,
        writable,
    })
}

/// One TLB structure.
#[derive(Clone, Debug)]
pub struct Tlb {
    cache: AssocCache,
    /// Bit `order` set when an entry of that page size was ever filled: sizes never seen are not
    /// probed, so a 4 KiB-only run does not pay for a probe per size.
    sizes_seen: u32,
    /// Lookups that hit.
    pub hits: u64,
    /// Hits of [`Tlb::lookup`] by the order of the entry that hit.
    hits_by_order: [u64; PageSize::MAX_ORDER as usize + 1],
    /// Lookups that missed.
    pub misses: u64,
    /// Bit `order` set when a coalesced entry spanning that order was ever filled (the orders an
    /// invalidation must probe for spans covering the page it removes).
    span_orders_seen: u32,
    /// Hits of coalesced entries by the order of their span (also counted in `hits`, not in
    /// `hits_by_order`).
    coalesced_hits_by_order: [u64; PageSize::MAX_ORDER as usize + 1],
}

/// The entry key of the page of `size` containing `vpn`. x86 sizes keep the layout
/// `asid << 48 | x86_index << 46 | page number` (set selection mixes the high bits, so changing it
/// would move every figure); other sizes use code 3 at bit 46 and their order at bits 41..46,
/// which leaves 41 bits of page number (enough for 57-bit addresses from 16 KiB pages, and for
/// 48-bit addresses at any size).
#[inline]
fn key(asid: Asid, vpn: Vpn, size: PageSize) -> u64 {
    let page = vpn.0 >> size.order();
    let code = match size.x86_index() {
        Some(i) => (i as u64) << 46,
        None => {
            debug_assert!(page < 1 << 41, "page number too large for a TLB key");
            3 << 46 | (size.order() as u64) << 41
        }
    };
    ((asid as u64) << 48) | code | page
}

impl Tlb {
    /// A TLB of `entries` entries in sets of `ways` (`ways == entries` is fully associative).
    pub fn new(entries: u32, ways: u32) -> Tlb {
        Tlb {
            cache: AssocCache::new(entries as usize, ways as usize),
            sizes_seen: 0,
            hits: 0,
            hits_by_order: [0; PageSize::MAX_ORDER as usize + 1],
            misses: 0,
            span_orders_seen: 0,
            coalesced_hits_by_order: [0; PageSize::MAX_ORDER as usize + 1],
        }
    }

    /// Number of entries.
    pub fn capacity(&self) -> usize {
        self.cache.capacity()
    }

    /// Whether any entry was ever filled (an unused per-size L1 need not be probed).
    #[inline]
    pub fn ever_filled(&self) -> bool {
        self.sizes_seen != 0
    }

    /// Look up the translation of `vpn`; counts a hit or a miss. A coalesced entry answers with
    /// the base page holding `vpn`.
    #[inline]
    pub fn lookup(&mut self, asid: Asid, vpn: Vpn) -> Option<Mapping> {
        self.lookup_entry(asid, vpn).map(|e| e.base_of(vpn))
    }

    /// [`Tlb::lookup`], returning the entry that hit (a page, or a whole coalesced span).
    #[inline]
    pub fn lookup_entry(&mut self, asid: Asid, vpn: Vpn) -> Option<TlbEntry> {
        // A fully associative TLB that has seen many sizes (TPS's any-size L1 holds pages of up
        // to 19) answers in one pass over its entries instead of one probe per size: the same
        // hit, the smallest matching size (`lookup_entry_one_pass`).
        if self.sizes_seen.count_ones() > 2 && self.cache.is_one_set() {
            return self.lookup_entry_one_pass(asid, vpn);
        }
        self.lookup_entry_by_size(asid, vpn)
    }

    /// [`Tlb::lookup_entry`] by one probe per size seen, smallest first.
    #[inline]
    fn lookup_entry_by_size(&mut self, asid: Asid, vpn: Vpn) -> Option<TlbEntry> {
        let mut seen = self.sizes_seen;
        while seen != 0 {
            let size = PageSize::from_order(seen.trailing_zeros() as u8).expect("order");
            seen &= seen - 1;
            if let Some(v) = self.cache.get(key(asid, vpn, size)) {
                self.hits += 1;
                if v & COALESCED_BIT == 0 {
                    self.hits_by_order[size.order() as usize] += 1;
                } else {
                    self.coalesced_hits_by_order[size.order() as usize] += 1;
                }
                return Some(decode(v, vpn, size));
            }
        }
        self.misses += 1;
        None
    }

    /// [`Tlb::lookup_entry`] for a TLB of one set, in one pass: every entry's key names its
    /// size (its code at bit 46: an x86 size's index, or 3 with the order at bits 41..46), so an
    /// entry holds `vpn` when its key is the key of `vpn` at that size; of the entries that do, the smallest size hits, as [`Tlb::lookup_entry_by_size`]'s
    /// probes in increasing size would find it first.
    fn lookup_entry_one_pass(&mut self, asid: Asid, vpn: Vpn) -> Option<TlbEntry> {
        let seen = self.sizes_seen;
        // `k == key(asid, vpn, size of k)`, without building the key: the ASID and the page
        // number compared field by field (the code bits of `k` are its size's by construction).
        let hit = self.cache.get_least_ranked(|k| {
            let code = (k >> 46) & 3;
            let (order, page_bits) = if code < 3 {
                (code as u32 * 9, 46)
            } else {
                (((k >> 41) & 31) as u32, 41)
            };
            let page = vpn.0 >> order;
            let same = (k >> 48) == asid as u64
                && page < 1 << page_bits
                && k & ((1 << page_bits) - 1) == page
                && seen >> order & 1 == 1;
            same.then_some(order)
        });
        let Some((order, v)) = hit else {
            self.misses += 1;
            return None;
        };
        let size = PageSize::from_order(order as u8).expect("the order of a stored key");
        self.hits += 1;
        if v & COALESCED_BIT == 0 {
            self.hits_by_order[order as usize] += 1;
        } else {
            self.coalesced_hits_by_order[order as usize] += 1;
        }
        Some(decode(v, vpn, size))
    }

    /// [`Tlb::lookup`] for a TLB that holds only pages of `size` (the per-size L1s): one probe.
    #[inline(always)]
    pub fn lookup_sized(&mut self, asid: Asid, vpn: Vpn, size: PageSize) -> Option<Mapping> {
        match self.cache.get(key(asid, vpn, size)) {
            Some(v) => {
                self.hits += 1;
                Some(Mapping {
                    vpn: vpn.align_down(size),
                    pfn: Pfn(v & !WRITABLE_BIT),
                    size,
                    writable: v & WRITABLE_BIT != 0,
                })
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    /// Insert `m`, evicting the least recently used entry of its set.
    #[inline]
    pub fn fill(&mut self, asid: Asid, m: Mapping) {
        self.sizes_seen |= 1 << m.size.order();
        let val = m.pfn.0 | if m.writable { WRITABLE_BIT } else { 0 };
        self.cache.insert(key(asid, m.vpn, m.size), val);
    }

    /// Insert the coalesced entry `s` (one entry for its whole span), evicting the least
    /// recently used entry of its set.
    #[inline]
    pub fn fill_span(&mut self, asid: Asid, s: &CoalescedSpan) {
        let size = s.size();
        debug_assert!(
            s.pfn.0 <= PFN_MASK,
            "frame number too large for a TLB entry"
        );
        self.sizes_seen |= 1 << size.order();
        self.span_orders_seen |= 1 << size.order();
        let val = s.pfn.0
            | COALESCED_BIT
            | (s.base.order() as u64) << BASE_ORDER_SHIFT
            | if s.writable { WRITABLE_BIT } else { 0 };
        self.cache.insert(key(asid, s.vpn, size), val);
    }

    /// Remove the entry for exactly this translation, if present, and every coalesced entry
    /// whose span covers it.
    pub fn invalidate(&mut self, asid: Asid, m: Mapping) {
        self.cache.remove(key(asid, m.vpn, m.size));
        // Spans are aligned: the one of order `o` covering `m` is the one keyed by `m.vpn` at
        // that order. (A span never lies inside `m` without covering it: its pages were
        // unmapped, and it invalidated, before `m` could be mapped over them.)
        let mut spans = self.span_orders_seen & !((2u32 << m.size.order()) - 1);
        while spans != 0 {
            let order = spans.trailing_zeros() as u8;
            spans &= spans - 1;
            let size = PageSize::from_order(order).expect("order");
            self.cache.remove(key(asid, m.vpn, size));
        }
    }

    /// Remove every 4 KiB page entry of `asid` inside `m` (4 KiB entries a range TLB refilled
    /// for pages of `m`, which does not know them by its own size). Scans the whole structure:
    /// for the small L1s only.
    pub fn invalidate_base_pages_inside(&mut self, asid: Asid, m: Mapping) {
        if self.sizes_seen & 1 == 0 {
            return;
        }
        let (lo, hi) = (m.vpn.0, m.vpn.0 + m.size.base_pages());
        // 4 KiB keys: `asid << 48 | 0 << 46 | vpn`.
        self.cache.remove_if(|k| {
            let page = k & ((1 << 46) - 1);
            (k >> 48) as Asid == asid && (k >> 46) & 3 == 0 && page >= lo && page < hi
        });
    }

    /// Remove every entry of `asid`.
    pub fn invalidate_asid(&mut self, asid: Asid) {
        self.cache.remove_if(|k| (k >> 48) as Asid == asid);
    }

    /// Hits of [`Tlb::lookup`] by the order of the page entry that hit (index 0 = 4 KiB);
    /// coalesced entries are counted apart ([`Tlb::coalesced_hits_by_order`]).
    pub fn hits_by_order(&self) -> &[u64] {
        &self.hits_by_order
    }

    /// Hits of coalesced entries by the order of their span.
    pub fn coalesced_hits_by_order(&self) -> &[u64] {
        &self.coalesced_hits_by_order
    }

    /// Number of valid entries.
    pub fn occupancy(&self) -> usize {
        self.cache.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn m4k(vpn: u64, pfn: u64) -> Mapping {
        Mapping::writable(vpn, pfn, PageSize::Size4K)
    }

    #[test]
    fn a_filled_entry_hits_and_an_invalidated_one_misses() {
        let mut t = Tlb::new(64, 4);
        assert!(t.lookup(1, Vpn(5)).is_none());
        t.fill(1, m4k(5, 9));
        assert_eq!(t.lookup(1, Vpn(5)).unwrap().pfn, Pfn(9));
        assert!(t.lookup(2, Vpn(5)).is_none(), "another ASID must not hit");
        t.invalidate(1, m4k(5, 9));
        assert!(t.lookup(1, Vpn(5)).is_none());
        assert_eq!((t.hits, t.misses), (1, 3));
    }

    #[test]
    fn a_huge_page_entry_covers_every_base_page_inside_it() {
        let mut t = Tlb::new(32, 4);
        let m = Mapping {
            vpn: Vpn(512),
            pfn: Pfn(1024),
            size: PageSize::Size2M,
            writable: false,
        };
        t.fill(0, m);
        assert_eq!(t.lookup(0, Vpn(512 + 300)).unwrap(), m);
        assert!(t.lookup(0, Vpn(1024)).is_none());
    }

    #[test]
    fn invalidating_an_asid_leaves_other_asids_alone() {
        let mut t = Tlb::new(16, 4);
        t.fill(1, m4k(5, 9));
        t.fill(2, m4k(5, 7));
        t.invalidate_asid(1);
        assert!(t.lookup(1, Vpn(5)).is_none());
        assert_eq!(t.lookup(2, Vpn(5)).unwrap().pfn, Pfn(7));
    }

    proptest! {
        /// A fully associative TLB of many sizes answers in one pass exactly as its probes by
        /// size would: the same entry, the same counters, the same recency afterwards (pages of
        /// seven sizes overlapping in a small region, two ASIDs, fills and invalidations).
        #[test]
        fn one_pass_lookups_of_a_fully_associative_tlb_equal_probing_size_by_size(
            ways in prop::sample::select(vec![8u32, 16, 32]),
            ops in prop::collection::vec(
                (0u8..4, 0u16..2, 0u64..4096, prop::sample::select(vec![0u8, 1, 2, 4, 9, 13, 18])),
                1..600,
            ),
        ) {
            let mut one_pass = Tlb::new(ways, ways);
            let mut by_size = Tlb::new(ways, ways);
            for (i, (op, asid, vpn, order)) in ops.into_iter().enumerate() {
                let size = PageSize::from_order(order).unwrap();
                let m = Mapping::writable(vpn & !(size.base_pages() - 1), i as u64, size);
                match op {
                    0 => {
                        one_pass.fill(asid, m);
                        by_size.fill(asid, m);
                    }
                    1 => {
                        one_pass.invalidate(asid, m);
                        by_size.invalidate(asid, m);
                    }
                    _ => {
                        let a = one_pass.lookup_entry(asid, Vpn(vpn));
                        let b = by_size.lookup_entry_by_size(asid, Vpn(vpn));
                        prop_assert_eq!(a, b);
                    }
                }
            }
            prop_assert!(one_pass.sizes_seen.count_ones() <= 2 || one_pass.cache.is_one_set());
            prop_assert_eq!((one_pass.hits, one_pass.misses), (by_size.hits, by_size.misses));
            prop_assert_eq!(one_pass.hits_by_order, by_size.hits_by_order);
            // Same recency: probing every page afterwards gives the same answers in order.
            for vpn in (0..4096).step_by(7) {
                for asid in 0..2 {
                    prop_assert_eq!(
                        one_pass.lookup_entry_by_size(asid, Vpn(vpn)),
                        by_size.lookup_entry_by_size(asid, Vpn(vpn))
                    );
                }
            }
        }

        /// The TLB never returns a translation other than the last one filled for that page,
        /// and never holds more entries than its capacity.
        #[test]
        fn the_tlb_only_returns_the_last_fill_of_a_page(
            ops in prop::collection::vec((0u64..64, 0u64..1000, any::<bool>()), 1..400)
        ) {
            let mut t = Tlb::new(16, 4);
            let mut truth: HashMap<u64, u64> = HashMap::new();
            for (vpn, pfn, inval) in ops {
                if inval {
                    if let Some(p) = truth.remove(&vpn) {
                        t.invalidate(0, m4k(vpn, p));
                    }
                } else {
                    t.fill(0, m4k(vpn, pfn));
                    truth.insert(vpn, pfn);
                }
                prop_assert!(t.occupancy() <= 16);
                for v in 0..64 {
                    if let Some(m) = t.lookup(0, Vpn(v)) {
                        prop_assert_eq!(Some(&m.pfn.0), truth.get(&v));
                    }
                }
            }
        }
    }
}
