//! How the engine reads a process's events: chunk by chunk, prefetching the host memory of the
//! references a few events ahead.
//!
//! Owns the chunk size [`CHUNK`], the prefetch distance and [`RecentPages`] (the pages already
//! prefetched, part of each process's stream state). May call: `addr`; nothing else in the
//! engine. Contract: the prefetch is a speed hint only; the chunk is also the OS daemons' turn
//! (they run between chunks, see `Sim::run_until`), so results depend on [`CHUNK`].

use crate::addr::Vpn;

/// Events fetched from the source at a time: 512 x 32 bytes stays in the host's L1 cache
/// between the source writing the buffer and the engine reading it (4096 did not; gups ran
/// about 5 % faster with 512).
pub(super) const CHUNK: usize = 512;

/// How many events ahead the engine prefetches the host memory a reference will touch: the
/// oracle's page-map entry and the design's page-table entries, the two structures that grow
/// with the footprint. (Prefetching the simulated caches' sets too was measured slower once
/// those became compact: they stay in the host's L2.) Speed only; results do not depend on it.
pub(super) const PREFETCH_DISTANCE: usize = 8;

/// How many events ahead the engine prefetches what the hint at [`PREFETCH_DISTANCE`] will
/// itself read to find its addresses (the page map's region slot, a radix table's upper-level
/// entry): at paper-scale footprints those lookups miss the host's caches too, and the hint
/// waited for them (docs/performance.md, "Two-stage look-ahead"). Speed only.
pub(super) const PREFETCH_EARLY_DISTANCE: usize = 2 * PREFETCH_DISTANCE;

/// Pages remembered as prefetched: enough for a loop over a few arrays at once.
const PREFETCH_RECENT_PAGES: usize = 4;

/// The last few pages one look-ahead stage hinted.
#[derive(Clone, Copy)]
struct PageRing {
    vpns: [u64; PREFETCH_RECENT_PAGES],
    next: usize,
}

impl PageRing {
    const EMPTY: PageRing = PageRing {
        vpns: [u64::MAX; PREFETCH_RECENT_PAGES],
        next: 0,
    };

    #[inline]
    fn admit(&mut self, vpn: Vpn) -> bool {
        if self.vpns.contains(&vpn.0) {
            return false;
        }
        self.vpns[self.next] = vpn.0;
        self.next = (self.next + 1) % PREFETCH_RECENT_PAGES;
        true
    }
}

/// The last few pages prefetched, per look-ahead stage.
#[derive(Clone, Copy)]
pub(super) struct RecentPages {
    near: PageRing,
    /// The early stage's ([`PREFETCH_EARLY_DISTANCE`]).
    early: PageRing,
}

impl RecentPages {
    pub(super) fn new() -> Self {
        RecentPages {
            near: PageRing::EMPTY,
            early: PageRing::EMPTY,
        }
    }

    /// Whether `vpn` is new (and remember it).
    #[inline]
    pub(super) fn admit(&mut self, vpn: Vpn) -> bool {
        self.near.admit(vpn)
    }

    /// Whether `vpn` is new to the early stage (and remember it there).
    #[inline]
    pub(super) fn admit_early(&mut self, vpn: Vpn) -> bool {
        self.early.admit(vpn)
    }
}
