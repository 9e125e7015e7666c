//! Coalesced TLB entries: what the MMU asks for after a walk ([`CoalesceRequest`]) and the
//! span of contiguous pages one entry caches ([`CoalescedSpan`]).
//!
//! Calls only `crate::addr`; used by the TLBs (`tlb.rs`), the hierarchy (`mmu/mod.rs`), the
//! designs that mark contiguity and the nested host interface (`crate::mem::HostTranslate`).

use crate::addr::{Mapping, PageSize, Pfn, Vpn};

/// What the MMU asks the walked table for after a walk (see
/// [`FillHints::coalesced_span`](super::FillHints::coalesced_span)).
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
