//! # utopia — hybrid restrictive (set-associative) and flexible address mapping
//!
//! ## Model
//! Physical memory holds one or more restrictive segments (RestSegs), reserved at boot from
//! contiguous memory (each a naturally aligned buddy block, held as reserved memory so the
//! buddy allocator never hands it out), and the flexible segment (FlexSeg): the rest of
//! memory, translated by an ordinary radix page table ([`Radix`], composed, not copied).
//! A RestSeg is `sets x ways` slots of one page size; a page whose VPN hashes to set `s` may
//! live only in a slot of `s`, at frame `base + (s x ways + way) x page` (§5.1.1).
//!
//! Translation structures (§5.1.2): per process and per RestSeg a tag array (TAR, one entry of
//! `48 - log2(page) - log2(sets)` tag bits + 10 metadata bits per slot) and a set filter (SF,
//! one counter of `log2(ways) + 1` bits per set), in memory: allocated from physical memory
//! (as page-table memory, exactly their formula size rounded up to 4 KiB frames) when the
//! process's first page enters the RestSeg, freed when its last page leaves. The global TAR
//! the OS allocates from is the slot table ([`restseg::Slot`]); OS work on it is not timed.
//!
//! RestSeg walk (RSW, §5.2, §5.7): on an L2 TLB miss, for every RestSeg the process uses, the
//! SF cache and the TAR cache (physically addressed caches of 64-byte lines of the SF / TAR,
//! `cache_latency_cycles`) are probed in parallel:
//! - SF cached and the set's counter 0: the page is not in this RestSeg, the TAR is skipped;
//! - TAR cached (every line holding the set's entries): tag matching answers (an SF line not
//!   cached is not fetched: the TAR already decided);
//! - otherwise the missing TAR lines (and the SF line, when not cached) are fetched in
//!   parallel through the data caches (`MemSystem::pt_access`) and cached.
//!
//! The RSWs of all RestSegs run in parallel (the slowest decides). A hit yields the slot's
//! translation; a miss starts the FlexSeg walk (radix, with its page-walk caches) only then.
//! With `rsw_parallel_with_l2_tlb` (default, §5.4) the RSW starts with the L2 TLB lookup, so
//! the walk reports only the part of the RSW that outlasts the L2 TLB latency (the engine
//! charges the L2 TLB latency before every walk); off, RSW and FlexSeg walk follow the L2
//! TLB miss serially (Utopia-Serial, §8.3.6).
//!
//! Placement (§5.5, §5.6), through the OS model's placement hook: at a page fault a page of a
//! RestSeg's page size goes to a free way of its set (page-fault-based allocation). When every
//! way of the set is held (`utopia.place_set_full`), the page is installed in the FlexSeg and,
//! right after the fault (before the faulting access completes), the set's SRRIP victim is
//! migrated to a FlexSeg block (`Os::migrate`: shootdown, cache flush of the page, copy) and
//! the new page is moved into the freed slot without a copy (`Os::move_fresh_page`: it is
//! still zero-filled), which is the paper's direct allocation into the slot
//! (`evict_on_full_set`). PTW tracking (§5.5, `ptw_tracking`): every TLB-miss FlexSeg walk that
//! finds a page of a RestSeg's size counts, in the page's PTE (a table beside the radix table,
//! `ptw.rs`, stands for the 9 unused PTE bits), one walk (5-bit saturating counter) and the
//! walk's DRAM references (4-bit); when both reach `promote_walks` / `promote_dram_accesses`
//! the counters reset and the page is queued for migration into its set (evicting the SRRIP
//! victim when the set is full). Queued migrations run through `Design::os_work` once per event
//! chunk (the asynchronous interrupt of §5.6), one per set per call. A copy takes
//! `os.migration.copy_cycles_per_4k` per 4 KiB (1000: Table 1's derivation); a walk that
//! reaches a page whose copy has not finished by the OS clock waits for the rest
//! (`utopia.stalled_walks`). SRRIP: 2-bit RRPVs, insertion at 2, an RSW hit sets 0.
//!
//! Restrictive-only mode (`designs/restrictive_only`, §3): the victim of a full set is written
//! to the swap device (`Os::swap_out_page`) instead of migrated to the FlexSeg.
//!
//! A mapping the OS installs is a RestSeg page exactly when its frame is the slot of its set
//! in the RestSeg of its size and the slot is free; every other mapping (other sizes, other
//! frames) is a FlexSeg page. On unmap, a RestSeg slot's frames are taken back as reserved
//! memory (when the OS gave them to the buddy allocator and something else already took them,
//! the slot waits until they are free again: `utopia.slots_not_yet_reserved`).
//!
//! TAR/SF caches are physically addressed and not flushed on a context switch (§6.1); every
//! change of a RestSeg set invalidates the lines of its TAR entries and SF counter in every
//! core's TAR/SF caches (the INVLPG-driven invalidation of §6.1). Per core (`sim.cores`): each
//! core has its own TAR/SF caches and radix page-walk caches.
//!
//! ## Configuration
//! `[utopia]`: `restsegs` (list of `{ bytes, page_size, ways }`; default two of 512 MiB,
//! 16-way, one of 4 KiB and one of 2 MiB pages), `hash` (`modulo` | `prime_displacement` |
//! `xor` | `mersenne`), `tar_cache_bytes` / `sf_cache_bytes` (2048), `cache_ways` (4),
//! `cache_latency_cycles` (2), `rsw_parallel_with_l2_tlb` (true), `place_on_fault` (true),
//! `evict_on_full_set` (true), `ptw_tracking` (true), `promote_walks` (8),
//! `promote_dram_accesses` (8), `max_memory_share` (1/16: a RestSeg larger than that share of
//! physical memory is shrunk to the largest power of two within it; one left with fewer than
//! two sets is not created), `[utopia.flex]` the FlexSeg's radix settings (as `[radix]`).
//!
//! ## Deviations from the paper
//! - A page that faults on a full set is installed in the FlexSeg first and moved into its
//!   slot right after the fault: no copy is charged, but a shootdown is counted for it.
//! - The OS clock advances once per event chunk (512 events): a walk to a migrated page before
//!   the next chunk boundary waits for the whole remaining copy, so `stall_cycles` is an upper
//!   bound.
//! - The PTW-tracking thresholds are not given by the paper; the defaults (8 walks, 8 DRAM
//!   references) are ours.
//! - A RestSeg frame that the OS frees and the buddy allocator hands out before the design can
//!   take it back (possible only under reclaim) serves a FlexSeg page until it is free again.
//! - An RSW that runs beside an L2 TLB hit is not simulated by default (the engine walks only
//!   after an L2 TLB miss), so its TAR/SF cache fills and memory references on L2 hits are
//!   missing; `rsw_beside_l2_tlb_hit` runs it (its reads change cache and DRAM state, untimed).
//! - The paper's other systems also walk in parallel with the L2 TLB; by default here only
//!   Utopia's RSW does (the radix baseline walks after the L2 TLB miss); `tlb.walk_with_l2_lookup`
//!   gives it to the others (an ablation: docs/designs/utopia.md).
//! - The TAR/SF caches' organisation (ways, replacement) is not given by the paper: 4-way LRU.
//! - Non-modulo hashes keep the same tag width as modulo (each is invertible given the tag, as
//!   implemented); Mersenne leaves the last set unused.
//!
//! ## References
//! Kanellopoulos et al., "Utopia: Fast and Efficient Address Translation via Hybrid
//! Restrictive & Flexible Virtual-to-Physical Address Mappings", MICRO 2023: §5.1 (RestSeg,
//! TAR, SF, footnotes 8-9), §5.2 (RSW), §5.4 and Fig. 17 (translation flow), §5.5-5.6
//! (placement), §6.1 (context switches), Table 1 (configuration), §8.3.6, §8.3.8.

mod config;
mod ptw;
pub mod restseg;

pub use config::{RestSegConfig, UtopiaConfig};

use crate::addr::{Asid, Mapping, Paddr, PageSize, Pfn, Vpn, BASE_PAGE_BYTES};
use crate::designs::radix::Radix;
use crate::designs::{Design, PerCore, PtFootprint, PtMemory, WalkResult};
use crate::mem::MemSystem;
use crate::mmu::assoc::AssocCache;
use crate::os::{FrameUse, MapChange, Os, OsError, PhysMem, PlaceRequest};
use crate::stats::{ratio, Stats, StatsExt};
use ptw::PtwCounters;
use restseg::{Occupant, RestSeg, RRPV_INSERT};

/// A process's TAR and SF for one RestSeg: where they are in physical memory.
#[derive(Clone, Copy, Debug)]
struct Structs {
    tar: Pfn,
    tar_frames: u64,
    sf: Pfn,
    sf_frames: u64,
    /// The process's pages in the RestSeg.
    pages: u64,
}

/// A configured RestSeg's size as created (0: not created).
#[derive(Clone, Copy, Debug)]
struct SegLayout {
    configured_bytes: u64,
    bytes: u64,
}

/// The TAR and SF caches of one core (keys: physical line numbers).
#[derive(Clone, Debug)]
struct RswCaches {
    tar: AssocCache,
    sf: AssocCache,
}

/// Counters of TLB-miss walks (post-fault walks are counted apart).
#[derive(Clone, Debug, Default)]
struct Counters {
    walks: u64,
    post_fault_walks: u64,
    /// Walks that ran at least one RSW (the process has RestSeg pages).
    rsw_walks: u64,
    rsw_hits: u64,
    /// RSW cycles before any overlap with the L2 TLB.
    rsw_cycles: u64,
    rsw_mem_accesses: u64,
    flex_walks: u64,
    flex_cycles: u64,
    flex_mem_accesses: u64,
    /// Walk cycles reported to the engine (after overlap with the L2 TLB).
    visible_cycles: u64,
    /// RSWs run beside an L2 TLB hit (`rsw_beside_l2_tlb_hit`); their TAR/SF lookups are in
    /// the cache counters below.
    rsw_beside_l2_hits: u64,
    sf_lookups: u64,
    sf_hits: u64,
    sf_empty_skips: u64,
    tar_lookups: u64,
    tar_hits: u64,
    placed: u64,
    place_set_full: u64,
    place_no_restseg: u64,
    slots_not_yet_reserved: u64,
    /// Migrations into a RestSeg by PTW tracking.
    promotions: u64,
    /// Pages that faulted on a full set moved into the victim's slot right after the fault
    /// (no copy: the page is still zero-filled).
    fault_fills: u64,
    /// SRRIP victims migrated to the FlexSeg.
    evictions: u64,
    /// Queued migrations dropped: the page changed (unmapped, moved, split) before its turn.
    stale_requests: u64,
    /// Evictions given up: no free block for the victim in the FlexSeg.
    evictions_no_memory: u64,
    /// Walks (TLB misses) that reached a page while it was being migrated.
    stalled_walks: u64,
    stall_cycles: u64,
    /// RSW hits of evicted pages while they were in the RestSeg (Fig. 26's buckets).
    reuse_at_eviction: [u64; 4],
    /// SRRIP victims written to the swap device (restrictive-only mode).
    victims_swapped_out: u64,
}

/// Why a page is to move into a RestSeg.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    /// PTW tracking found it costly to translate.
    Promotion,
    /// It faulted on a full set.
    FaultFill,
}

/// A queued migration into a RestSeg.
#[derive(Clone, Copy, Debug)]
struct Request {
    asid: Asid,
    vpn: Vpn,
    size: PageSize,
    cause: Cause,
}

/// A page being copied (its accesses stall until `done`).
#[derive(Clone, Copy, Debug)]
struct InFlight {
    asid: Asid,
    vpn: Vpn,
    size: PageSize,
    done: u64,
}

/// Fig. 26's reuse buckets: 0, 1-5, 6-20, more than 20 RSW hits.
fn reuse_bucket(reuse: u32) -> usize {
    match reuse {
        0 => 0,
        1..=5 => 1,
        6..=20 => 2,
        _ => 3,
    }
}

/// The Utopia design.
pub struct Utopia {
    segs: Vec<RestSeg>,
    /// The configured RestSegs as created (shrunk or left out by `max_memory_share`).
    layout: Vec<SegLayout>,
    flex: Radix,
    /// `structs[asid][seg]`.
    structs: Vec<Vec<Option<Structs>>>,
    mem: PtMemory,
    caches: PerCore<RswCaches>,
    cache_latency_cycles: u32,
    parallel: bool,
    beside_l2_hit: bool,
    place_on_fault: bool,
    l2_tlb_latency_cycles: u32,
    c: Counters,
    evict_on_full_set: bool,
    ptw_tracking: bool,
    promote_walks: u8,
    promote_dram: u8,
    /// PTW-tracking counters of FlexSeg pages, as the unused PTE bits would hold them:
    /// (walks, DRAM accesses) by `ptw_key`.
    ptw: PtwCounters,
    requests: Vec<Request>,
    in_flight: Vec<InFlight>,
    /// The OS clock at the last `os_work` call.
    now: u64,
    /// Most TAR + SF bytes (formula sizes) held at once over all processes.
    struct_bytes: u64,
    peak_struct_bytes: u64,
    /// The victim of a full set goes to swap (`Os::swap_out_page`) instead of the FlexSeg:
    /// the restrictive-only system of §3 (`designs/restrictive_only`).
    victims_to_swap: bool,
    /// Design name in error messages.
    name: &'static str,
}

/// Allocate exactly `frames` contiguous frames of page-table memory (the buddy block rounded up
/// to a power of two, its tail given back).
fn alloc_exact(pt: &mut PtMemory, phys: &mut PhysMem, frames: u64) -> Result<Pfn, OsError> {
    let order = frames.next_power_of_two().trailing_zeros() as u8;
    let base = pt.alloc(phys, order)?;
    for (off, k) in aligned_pieces(frames, 1 << order) {
        pt.free(phys, Pfn(base.0 + off), k);
    }
    Ok(base)
}

/// Free what [`alloc_exact`] returned.
fn free_exact(pt: &mut PtMemory, phys: &mut PhysMem, base: Pfn, frames: u64) {
    for (off, k) in aligned_pieces(0, frames) {
        pt.free(phys, Pfn(base.0 + off), k);
    }
}

/// `[from, to)` (frame offsets from an aligned base) as naturally aligned pieces.
fn aligned_pieces(mut from: u64, to: u64) -> Vec<(u64, u8)> {
    let mut out = Vec::new();
    while from < to {
        let mut k = if from == 0 { 63 } else { from.trailing_zeros() };
        while from + (1u64 << k) > to {
            k -= 1;
        }
        out.push((from, k as u8));
        from += 1 << k;
    }
    out
}

/// Physical line numbers holding bytes `[lo, hi)` of the structure at `base`.
#[inline]
fn lines(base: Pfn, lo: u64, hi: u64) -> std::ops::RangeInclusive<u64> {
    let start = base.0 * BASE_PAGE_BYTES;
    ((start + lo) >> 6)..=((start + hi - 1) >> 6)
}

impl Utopia {
    /// The RestSegs (geometry and slots).
    pub fn restsegs(&self) -> &[RestSeg] {
        &self.segs
    }

    /// The RestSeg slot `(segment, set, way)` holding `asid`'s page of `vpn`, if any.
    pub fn slot_of(&self, asid: Asid, vpn: Vpn) -> Option<(usize, u64, u32)> {
        self.segs.iter().enumerate().find_map(|(i, s)| {
            let set = s.set_of(vpn);
            s.find(asid, vpn, set).map(|w| (i, set, w))
        })
    }

    /// Take a free way of set `set` of RestSeg `i` for a page about to be mapped there: one
    /// whose frames the design holds first, then one whose frames went back to the buddy
    /// allocator and are free again. The slot is claimed until the page is mapped.
    fn take_free_way(&mut self, phys: &mut PhysMem, i: usize, set: u64) -> Option<Pfn> {
        let seg = &mut self.segs[i];
        let order = seg.page.order();
        for pass in 0..2 {
            for w in 0..seg.ways {
                let pfn = seg.slot_pfn(set, w);
                let s = &mut seg.slots[(set * seg.ways as u64 + w as u64) as usize];
                if s.occupant.is_some() || s.claimed || s.reserved != (pass == 0) {
                    continue;
                }
                if s.reserved {
                    phys.free(pfn, order, FrameUse::Reserved);
                    s.reserved = false;
                }
                if phys.alloc_at(pfn, order, FrameUse::Data).is_some() {
                    s.claimed = true;
                    return Some(pfn);
                }
            }
        }
        None
    }

    /// Key of a page's PTW-tracking counters.
    #[inline]
    fn ptw_key(asid: Asid, vpn: Vpn) -> u64 {
        ((asid as u64) << 48) | vpn.0
    }

    /// A TLB-miss walk of the FlexSeg found `m` after `dram` DRAM accesses: count it in the
    /// page's PTE counters and queue its migration when both reach their thresholds (§5.5).
    fn track_walk(&mut self, asid: Asid, m: Mapping, dram: u64) {
        if !self.segs.iter().any(|s| s.page == m.size) {
            return; // no RestSeg of its size
        }
        let key = Self::ptw_key(asid, m.vpn);
        let e = self.ptw.get_or_insert(key);
        e.0 = (e.0 + 1).min(31);
        e.1 = (e.1 as u64 + dram).min(15) as u8;
        if e.0 >= self.promote_walks && e.1 >= self.promote_dram {
            self.ptw.remove(key);
            self.requests.push(Request {
                asid,
                vpn: m.vpn,
                size: m.size,
                cause: Cause::Promotion,
            });
        }
    }

    /// Cycles a walk of `asid`'s `vpn` waits for the page's migration to finish (0 when
    /// the page is not being migrated).
    #[cold]
    fn migration_stall(&self, asid: Asid, vpn: Vpn) -> u64 {
        self.in_flight
            .iter()
            .find(|f| f.asid == asid && vpn.align_down(f.size) == f.vpn && f.done > self.now)
            .map_or(0, |f| f.done - self.now)
    }

    fn structs(&self, asid: Asid, seg: usize) -> Option<Structs> {
        self.structs.get(asid as usize)?.get(seg).copied().flatten()
    }

    /// The RSW of RestSeg `i`: (latency, memory references, translation if the page is there).
    fn rsw_one(
        &mut self,
        i: usize,
        st: Structs,
        asid: Asid,
        vpn: Vpn,
        mem: &mut MemSystem,
        counted: bool,
    ) -> (u32, u32, Option<Mapping>) {
        let seg = &self.segs[i];
        let set = seg.set_of(vpn);
        let sf_line = {
            let b = seg.sf_set_byte(set);
            *lines(st.sf, b, b + 1).start()
        };
        let (lo, hi) = seg.tar_set_bytes(set);
        let tar_lines = lines(st.tar, lo, hi);
        let count = seg.count_in_set(asid, set);
        let way = seg.find(asid, vpn, set);
        if let Some(w) = way {
            // Its slot is read below, after the TAR/SF lookups: start the host's miss now.
            seg.prefetch_slot((set * seg.ways as u64 + w as u64) as usize);
        }
        let caches = &mut *self.caches;
        let sf_hit = caches.sf.get(sf_line).is_some();
        let mut latency = self.cache_latency_cycles;
        let mut accesses = 0;
        if counted {
            self.c.sf_lookups += 1;
            self.c.sf_hits += sf_hit as u64;
        }
        if sf_hit && count == 0 {
            if counted {
                self.c.sf_empty_skips += 1;
            }
        } else {
            let tar_hit = tar_lines.clone().all(|l| caches.tar.get(l).is_some());
            if counted {
                self.c.tar_lookups += 1;
                self.c.tar_hits += tar_hit as u64;
            }
            if !tar_hit {
                // The missing TAR lines and (when not cached) the SF line, in parallel.
                let mut slowest = 0;
                for l in tar_lines {
                    if !caches.tar.contains(l) {
                        slowest = slowest.max(mem.pt_access(Paddr(l << 6)).latency_cycles);
                        accesses += 1;
                        caches.tar.insert(l, 0);
                    }
                }
                if !sf_hit {
                    slowest = slowest.max(mem.pt_access(Paddr(sf_line << 6)).latency_cycles);
                    accesses += 1;
                    caches.sf.insert(sf_line, 0);
                }
                latency += slowest;
            }
        }
        let found = way.map(|w| {
            let seg = &mut self.segs[i];
            let slot = (set * seg.ways as u64 + w as u64) as usize;
            let (pfn, size) = (seg.slot_pfn(set, w), seg.page);
            let o = seg.slots[slot]
                .occupant
                .as_mut()
                .expect("found way is occupied");
            o.rrpv = 0;
            if counted {
                o.reuse = o.reuse.saturating_add(1);
            }
            Mapping {
                vpn: o.vpn,
                pfn,
                size,
                writable: o.writable,
            }
        });
        (latency, accesses, found)
    }

    fn walk_counted(
        &mut self,
        asid: Asid,
        vpn: Vpn,
        mem: &mut MemSystem,
        after_fault: bool,
    ) -> WalkResult {
        let counted = !after_fault;
        if counted {
            self.c.walks += 1;
        } else {
            self.c.post_fault_walks += 1;
        }
        let (mut rsw_latency, mut rsw_accesses, mut found, mut ran) = (0, 0, None, false);
        for i in 0..self.segs.len() {
            let Some(st) = self.structs(asid, i) else {
                continue; // no TAR/SF registers for this RestSeg: nothing to walk
            };
            ran = true;
            let (l, a, m) = self.rsw_one(i, st, asid, vpn, mem, counted);
            rsw_latency = rsw_latency.max(l);
            rsw_accesses += a;
            found = found.or(m);
        }
        let visible = if self.parallel {
            rsw_latency.saturating_sub(self.l2_tlb_latency_cycles)
        } else {
            rsw_latency
        };
        if counted && ran {
            self.c.rsw_walks += 1;
            self.c.rsw_cycles += rsw_latency as u64;
            self.c.rsw_mem_accesses += rsw_accesses as u64;
            self.c.rsw_hits += found.is_some() as u64;
        }
        let w = match found {
            Some(m) => WalkResult {
                mapping: Some(m),
                latency_cycles: visible,
                mem_accesses: rsw_accesses,
            },
            None => {
                let dram_before = mem.pt_dram_reads();
                let f = if after_fault {
                    self.flex.walk_after_fault(asid, vpn, mem)
                } else {
                    self.flex.walk(asid, vpn, mem)
                };
                if counted {
                    self.c.flex_walks += 1;
                    self.c.flex_cycles += f.latency_cycles as u64;
                    self.c.flex_mem_accesses += f.mem_accesses as u64;
                    if let (true, Some(m)) = (self.ptw_tracking, f.mapping) {
                        self.track_walk(asid, m, mem.pt_dram_reads() - dram_before);
                    }
                }
                WalkResult {
                    mapping: f.mapping,
                    latency_cycles: visible + f.latency_cycles,
                    mem_accesses: rsw_accesses + f.mem_accesses,
                }
            }
        };
        let mut w = w;
        if !self.in_flight.is_empty() && w.mapping.is_some() {
            let stall = self.migration_stall(asid, vpn);
            if stall > 0 {
                w.latency_cycles = w.latency_cycles.saturating_add(stall as u32);
                self.c.stalled_walks += 1;
                self.c.stall_cycles += stall;
            }
        }
        if counted {
            self.c.visible_cycles += w.latency_cycles as u64;
        }
        w
    }

    /// Build with every RestSeg capped to the largest power of two of at most `cap_bytes`
    /// (`utopia.max_memory_share` of memory for Utopia; memory less a reserve for
    /// restrictive-only); a RestSeg left with fewer than two sets is not created.
    pub(crate) fn with_cap(
        cfg: &UtopiaConfig,
        phys: &mut PhysMem,
        cap_bytes: u64,
        name: &'static str,
    ) -> Result<Self, OsError> {
        let mut segs = Vec::new();
        let mut layout = Vec::new();
        let cap = 1u64 << (63 - cap_bytes.max(1).leading_zeros());
        for (i, r) in cfg.restsegs.iter().enumerate() {
            let bytes = r.bytes.min(cap);
            if bytes < r.page_size.bytes() * r.ways as u64 * 2 {
                layout.push(SegLayout {
                    configured_bytes: r.bytes,
                    bytes: 0,
                });
                continue; // too little memory for two sets: not created
            }
            let order = (bytes / BASE_PAGE_BYTES).trailing_zeros() as u8;
            let base = phys.alloc(order, FrameUse::Reserved).map_err(|e| {
                OsError(format!(
                    "{name}.restsegs[{i}]: cannot reserve {} of contiguous memory at boot: {e}",
                    crate::addr::format_bytes(bytes)
                ))
            })?;
            layout.push(SegLayout {
                configured_bytes: r.bytes,
                bytes,
            });
            segs.push(RestSeg::new(base, bytes, r.page_size, r.ways, cfg.hash));
        }
        let line = |bytes: u32| (bytes / 64) as usize;
        Ok(Utopia {
            segs,
            layout,
            flex: Radix::new(&cfg.flex, phys)?,
            structs: Vec::new(),
            mem: PtMemory::default(),
            caches: PerCore::new(RswCaches {
                tar: AssocCache::new(line(cfg.tar_cache_bytes), cfg.cache_ways as usize),
                sf: AssocCache::new(line(cfg.sf_cache_bytes), cfg.cache_ways as usize),
            }),
            cache_latency_cycles: cfg.cache_latency_cycles,
            parallel: cfg.rsw_parallel_with_l2_tlb,
            beside_l2_hit: cfg.rsw_beside_l2_tlb_hit,
            place_on_fault: cfg.place_on_fault,
            l2_tlb_latency_cycles: 0,
            c: Counters::default(),
            evict_on_full_set: cfg.evict_on_full_set,
            ptw_tracking: cfg.ptw_tracking,
            promote_walks: cfg.promote_walks as u8,
            promote_dram: cfg.promote_dram_accesses as u8,
            ptw: PtwCounters::default(),
            requests: Vec::new(),
            in_flight: Vec::new(),
            now: 0,
            struct_bytes: 0,
            peak_struct_bytes: 0,
            victims_to_swap: false,
            name,
        })
    }

    /// Send the victims of full sets to the swap device instead of the FlexSeg.
    pub(crate) fn evict_to_swap(&mut self) {
        self.victims_to_swap = true;
    }

    /// Whether no migration is queued (in-flight copies aside).
    #[cfg(test)]
    pub(crate) fn requests_is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// SRRIP victims written to the swap device so far.
    pub(crate) fn victims_swapped_out(&self) -> u64 {
        self.c.victims_swapped_out
    }

    /// Drop set `set` of RestSeg `i`'s TAR and SF lines of `st` from every core's caches.
    fn invalidate_set(&mut self, i: usize, st: Structs, set: u64) {
        let seg = &self.segs[i];
        let b = seg.sf_set_byte(set);
        let sf_line = *lines(st.sf, b, b + 1).start();
        let (lo, hi) = seg.tar_set_bytes(set);
        let tar_lines = lines(st.tar, lo, hi);
        for c in self.caches.all_mut() {
            c.sf.remove(sf_line);
            for l in tar_lines.clone() {
                c.tar.remove(l);
            }
        }
    }

    /// Try to take back, as reserved memory, the free slots of RestSeg `i` overlapping
    /// `pfns` frames from `first`.
    fn reserve_slots(&mut self, phys: &mut PhysMem, i: usize, first: Pfn, pfns: u64) {
        let seg = &mut self.segs[i];
        let per = seg.page.base_pages();
        let lo = first.0.max(seg.base.0);
        let hi = (first.0 + pfns).min(seg.base.0 + seg.frames());
        let mut p = lo - (lo - seg.base.0) % per;
        while p < hi {
            let slot = ((p - seg.base.0) / per) as usize;
            let s = &mut seg.slots[slot];
            if s.occupant.is_none() && !s.reserved && !s.claimed {
                if phys
                    .alloc_at(Pfn(p), seg.page.order(), FrameUse::Reserved)
                    .is_some()
                {
                    s.reserved = true;
                } else {
                    self.c.slots_not_yet_reserved += 1;
                }
            }
            p += per;
        }
    }
}

impl Design for Utopia {
    type Config = UtopiaConfig;

    fn new(cfg: &UtopiaConfig, phys: &mut PhysMem) -> Result<Self, OsError> {
        let cap = ((phys.total_bytes() as f64 * cfg.max_memory_share) as u64).max(1);
        Utopia::with_cap(cfg, phys, cap, "utopia")
    }

    fn va_bits(&self) -> Option<u32> {
        self.flex.va_bits()
    }

    fn set_l2_tlb_latency(&mut self, cycles: u32) {
        self.l2_tlb_latency_cycles = cycles;
    }

    fn place(&mut self, phys: &mut PhysMem, req: &PlaceRequest) -> Option<Pfn> {
        if !self.place_on_fault {
            return None;
        }
        let Some(i) = self.segs.iter().position(|s| s.page == req.size) else {
            self.c.place_no_restseg += 1;
            return None;
        };
        let set = self.segs[i].set_of(req.vpn);
        if let Some(pfn) = self.take_free_way(phys, i, set) {
            self.c.placed += 1;
            return Some(pfn);
        }
        self.c.place_set_full += 1;
        if self.evict_on_full_set {
            // The page starts in the FlexSeg; right after the fault the set's SRRIP victim
            // leaves for the FlexSeg and the page takes its slot (see `os_work`).
            self.requests.push(Request {
                asid: req.asid,
                vpn: req.vpn,
                size: req.size,
                cause: Cause::FaultFill,
            });
        }
        None
    }

    fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
        let slot = self.segs.iter().enumerate().find_map(|(i, s)| {
            let slot = s.slot_of_pfn(m.pfn)?;
            let set = s.set_of(m.vpn);
            // Its own set's slot, whole (not a smaller page inside a slot), and free.
            (s.page == m.size
                && (m.pfn.0 - s.base.0).is_multiple_of(m.size.base_pages())
                && slot as u64 / s.ways as u64 == set
                && s.slots[slot].occupant.is_none())
            .then_some((i, slot, set))
        });
        let Some((i, slot, set)) = slot else {
            return self.flex.map(phys, asid, m);
        };
        if self.structs.len() <= asid as usize {
            self.structs.resize(asid as usize + 1, Vec::new());
        }
        if self.structs[asid as usize].len() < self.segs.len() {
            self.structs[asid as usize].resize(self.segs.len(), None);
        }
        let st = match self.structs[asid as usize][i] {
            Some(st) => st,
            None => {
                let seg = &self.segs[i];
                let (tar_bytes, sf_bytes) = (seg.tar_bytes(), seg.sf_bytes());
                let tar_frames = tar_bytes.div_ceil(BASE_PAGE_BYTES);
                let sf_frames = sf_bytes.div_ceil(BASE_PAGE_BYTES);
                let tar = alloc_exact(&mut self.mem, phys, tar_frames)?;
                let sf = alloc_exact(&mut self.mem, phys, sf_frames).inspect_err(|_| {
                    free_exact(&mut self.mem, phys, tar, tar_frames);
                })?;
                self.struct_bytes += tar_bytes + sf_bytes;
                self.peak_struct_bytes = self.peak_struct_bytes.max(self.struct_bytes);
                Structs {
                    tar,
                    tar_frames,
                    sf,
                    sf_frames,
                    pages: 0,
                }
            }
        };
        self.structs[asid as usize][i] = Some(Structs {
            pages: st.pages + 1,
            ..st
        });
        let seg = &mut self.segs[i];
        seg.slots[slot].reserved = false;
        seg.slots[slot].claimed = false;
        seg.set_occupant(
            slot,
            Some(Occupant {
                asid,
                vpn: m.vpn,
                writable: m.writable,
                rrpv: RRPV_INSERT,
                reuse: 0,
            }),
        );
        // The OS wrote the set's TAR entry and SF counter: cached copies are stale.
        self.invalidate_set(i, st, set);
        Ok(())
    }

    fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
        let held = self.segs.iter().enumerate().find_map(|(i, s)| {
            let slot = s.slot_of_pfn(m.pfn)?;
            matches!(s.slots[slot].occupant, Some(o) if o.asid == asid && o.vpn == m.vpn
                && s.page == m.size)
            .then_some((i, slot))
        });
        match held {
            Some((i, slot)) => {
                let seg = &mut self.segs[i];
                seg.set_occupant(slot, None);
                let set = slot as u64 / seg.ways as u64;
                let st = self.structs[asid as usize][i].expect("a RestSeg page has its TAR");
                self.invalidate_set(i, st, set);
                if st.pages == 1 {
                    // The process's last page left the RestSeg: its TAR and SF go.
                    free_exact(&mut self.mem, phys, st.tar, st.tar_frames);
                    free_exact(&mut self.mem, phys, st.sf, st.sf_frames);
                    let seg = &self.segs[i];
                    self.struct_bytes -= seg.tar_bytes() + seg.sf_bytes();
                    let (tar_lines, sf_lines) = (
                        lines(st.tar, 0, st.tar_frames * BASE_PAGE_BYTES),
                        lines(st.sf, 0, st.sf_frames * BASE_PAGE_BYTES),
                    );
                    for c in self.caches.all_mut() {
                        c.tar.remove_if(|l| tar_lines.contains(&l));
                        c.sf.remove_if(|l| sf_lines.contains(&l));
                    }
                    self.structs[asid as usize][i] = None;
                } else {
                    self.structs[asid as usize][i] = Some(Structs {
                        pages: st.pages - 1,
                        ..st
                    });
                }
            }
            None => {
                self.flex.unmap(phys, asid, m);
                if !self.ptw.is_empty() {
                    self.ptw.remove(Self::ptw_key(asid, m.vpn));
                }
            }
        }
        // The OS freed the page's frames: RestSeg frames go back to the RestSeg.
        for i in 0..self.segs.len() {
            let s = &self.segs[i];
            if m.pfn.0 < s.base.0 + s.frames() && s.base.0 < m.pfn.0 + m.size.base_pages() {
                self.reserve_slots(phys, i, m.pfn, m.size.base_pages());
            }
        }
    }

    #[inline]
    fn wants_os_work(&self) -> bool {
        !self.requests.is_empty() || !self.in_flight.is_empty()
    }

    fn os_work(
        &mut self,
        os: &mut Os,
        now_cycles: u64,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        self.now = now_cycles;
        self.in_flight.retain(|f| f.done > now_cycles);
        let copy_per_4k = os.config().migration.copy_cycles_per_4k;
        // One migration per set per call: a set's slots change only when the engine applies
        // the changes, so a second request for the same set waits for the next call.
        let mut touched: Vec<(usize, u64)> = Vec::new();
        let mut deferred = Vec::new();
        for r in std::mem::take(&mut self.requests) {
            let Some(i) = self.segs.iter().position(|s| s.page == r.size) else {
                continue;
            };
            let set = self.segs[i].set_of(r.vpn);
            if touched.contains(&(i, set)) {
                deferred.push(r);
                continue;
            }
            let Some(m) = os.translate(r.asid, r.vpn) else {
                self.c.stale_requests += 1;
                continue;
            };
            if m.vpn != r.vpn || m.size != r.size || self.slot_of(r.asid, r.vpn).is_some() {
                self.c.stale_requests += 1;
                continue;
            }
            let order = r.size.order();
            let copy = r.size.base_pages() * copy_per_4k;
            let to = match self.take_free_way(&mut os.phys, i, set) {
                Some(pfn) => pfn,
                None => {
                    let seg = &mut self.segs[i];
                    let Some(w) = seg.srrip_victim(set) else {
                        deferred.push(r); // every way is being filled: try again later
                        continue;
                    };
                    let k = (set * seg.ways as u64 + w as u64) as usize;
                    let o = seg.slots[k].occupant.expect("victim is occupied");
                    let slot_pfn = seg.slot_pfn(set, w);
                    let victim = Mapping {
                        vpn: o.vpn,
                        pfn: slot_pfn,
                        size: r.size,
                        writable: o.writable,
                    };
                    debug_assert_eq!(os.translate(o.asid, o.vpn), Some(victim));
                    if self.victims_to_swap {
                        // Restrictive-only (§3): no FlexSeg to evict to; the victim goes
                        // to the swap device. The slot is the incoming page's meanwhile.
                        self.segs[i].slots[k].claimed = true;
                        if let Err(e) = os.swap_out_page(o.asid, victim, changes) {
                            self.segs[i].slots[k].claimed = false;
                            return Err(OsError(format!(
                                "{}: set {set} is full and its victim cannot be swapped \
                                 out: {e}",
                                self.name
                            )));
                        }
                        self.c.victims_swapped_out += 1;
                        self.c.reuse_at_eviction[reuse_bucket(o.reuse)] += 1;
                    } else {
                        let Ok(dest) = os.phys.alloc(order, FrameUse::Data) else {
                            self.c.evictions_no_memory += 1;
                            continue;
                        };
                        // The slot is the migrating page's: its frames must not be
                        // re-reserved when the victim's unmap is applied.
                        self.segs[i].slots[k].claimed = true;
                        os.migrate(o.asid, victim, dest, changes)?;
                        self.c.evictions += 1;
                        self.c.reuse_at_eviction[reuse_bucket(o.reuse)] += 1;
                        self.in_flight.push(InFlight {
                            asid: o.asid,
                            vpn: o.vpn,
                            size: r.size,
                            done: now_cycles + copy,
                        });
                    }
                    if os.phys.alloc_at(slot_pfn, order, FrameUse::Data).is_none() {
                        // Compaction for the victim's block took the freed slot (cannot
                        // happen: compaction moves only into free buddy blocks, not
                        // claimed ones); leave the page where it is.
                        self.segs[i].slots[k].claimed = false;
                        continue;
                    }
                    slot_pfn
                }
            };
            match r.cause {
                Cause::Promotion => {
                    os.migrate(r.asid, m, to, changes)?;
                    self.c.promotions += 1;
                    self.in_flight.push(InFlight {
                        asid: r.asid,
                        vpn: r.vpn,
                        size: r.size,
                        done: now_cycles + copy,
                    });
                }
                Cause::FaultFill => {
                    // Still zero-filled (its faulting access waits for this): no copy.
                    os.move_fresh_page(r.asid, m, to, changes)?;
                    self.c.fault_fills += 1;
                }
            }
            touched.push((i, set));
        }
        self.requests = deferred;
        Ok(())
    }

    #[inline]
    fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
        self.walk_counted(asid, vpn, mem, false)
    }

    fn walk_after_fault(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
        self.walk_counted(asid, vpn, mem, true)
    }

    const WORKS_BESIDE_L2_TLB_HIT: bool = true;
    const OVERLAPS_L2_TLB_LOOKUP: bool = true;

    fn beside_l2_tlb_hit(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) {
        if !self.beside_l2_hit {
            return;
        }
        self.c.rsw_beside_l2_hits += 1;
        for i in 0..self.segs.len() {
            if let Some(st) = self.structs(asid, i) {
                self.rsw_one(i, st, asid, vpn, mem, true);
            }
        }
    }

    #[inline]
    fn prefetch(&self, asid: Asid, vpn: Vpn, mem: &MemSystem) {
        self.flex.prefetch(asid, vpn, mem);
        // What a RestSeg walk of `vpn` reads first: each set's tags, and the simulated caches'
        // sets of its SF line and first TAR line; the slot of a page the set holds (its tag
        // match is read here, a load the host overlaps with the references in between: the
        // walk reads the slot right after the TAR/SF lookups, too soon to hide its miss); and
        // the PTW counters a FlexSeg walk updates (those of the page of each RestSeg's size
        // holding `vpn`).
        for (i, seg) in self.segs.iter().enumerate() {
            if self.ptw_tracking && !self.ptw.is_empty() {
                self.ptw
                    .prefetch(Self::ptw_key(asid, vpn.align_down(seg.page)));
            }
            let Some(st) = self.structs(asid, i) else {
                continue;
            };
            let set = seg.set_of(vpn);
            seg.prefetch_set(set);
            if let Some(w) = seg.find(asid, vpn, set) {
                seg.prefetch_slot((set * seg.ways as u64 + w as u64) as usize);
            }
            let b = seg.sf_set_byte(set);
            mem.prefetch(Paddr(*lines(st.sf, b, b + 1).start() << 6));
            let (lo, hi) = seg.tar_set_bytes(set);
            mem.prefetch(Paddr(*lines(st.tar, lo, hi).start() << 6));
        }
    }

    fn footprint(&self) -> PtFootprint {
        let (f, o) = (self.flex.footprint(), self.mem.footprint());
        PtFootprint {
            bytes: f.bytes + o.bytes,
            // An upper bound: the two peaks may not coincide.
            peak_bytes: f.peak_bytes + o.peak_bytes,
            max_contiguous_bytes: f.max_contiguous_bytes.max(o.max_contiguous_bytes),
        }
    }

    fn set_cores(&mut self, n: usize) {
        self.caches.set_cores(n);
        self.flex.set_cores(n);
    }

    fn select_core(&mut self, core: usize) {
        self.caches.select(core);
        self.flex.select_core(core);
    }

    fn flush_mmu_caches(&mut self) {
        // The TAR/SF caches are physically addressed: a CR3 load leaves them (§6.1).
        self.flex.flush_mmu_caches();
    }

    fn mmu_cache_misses(&self) -> u64 {
        self.flex.mmu_cache_misses()
    }

    fn stats(&self, out: &mut Stats) {
        let mut flex = Stats::new();
        self.flex.stats(&mut flex);
        let c = &self.c;
        let s = out.section("utopia");
        s.put_u64("walks", c.walks);
        s.put_u64("post_fault_walks", c.post_fault_walks);
        s.put_u64("rsw_walks", c.rsw_walks);
        s.put_u64("rsw_hits", c.rsw_hits);
        s.put_f64("walks_avoided_share", ratio(c.rsw_hits, c.walks));
        s.put_u64("rsw_cycles", c.rsw_cycles);
        s.put_f64("rsw_avg_cycles", ratio(c.rsw_cycles, c.rsw_walks));
        s.put_u64("rsw_mem_accesses", c.rsw_mem_accesses);
        s.put_u64("flex_walks", c.flex_walks);
        s.put_u64("flex_walk_cycles", c.flex_cycles);
        s.put_f64("flex_walk_avg_cycles", ratio(c.flex_cycles, c.flex_walks));
        s.put_u64("flex_walk_mem_accesses", c.flex_mem_accesses);
        s.put_f64(
            "rsw_speedup_over_flex_walk",
            ratio(c.flex_cycles, c.flex_walks) / ratio(c.rsw_cycles, c.rsw_walks),
        );
        s.put_u64("walk_cycles_after_l2_overlap", c.visible_cycles);
        if self.beside_l2_hit {
            s.put_u64("rsw_beside_l2_tlb_hits", c.rsw_beside_l2_hits);
        }
        s.put_u64("sf_cache_lookups", c.sf_lookups);
        s.put_u64("sf_cache_hits", c.sf_hits);
        s.put_f64("sf_cache_hit_rate", ratio(c.sf_hits, c.sf_lookups));
        s.put_u64("sf_empty_set_skips", c.sf_empty_skips);
        s.put_u64("tar_cache_lookups", c.tar_lookups);
        s.put_u64("tar_cache_hits", c.tar_hits);
        s.put_f64("tar_cache_hit_rate", ratio(c.tar_hits, c.tar_lookups));
        s.put_u64("placed", c.placed);
        s.put_u64("place_set_full", c.place_set_full);
        s.put_u64("place_no_restseg", c.place_no_restseg);
        s.put_u64("slots_not_yet_reserved", c.slots_not_yet_reserved);
        s.put_u64("migrations_promotion", c.promotions);
        s.put_u64("migrations_fault_fill", c.fault_fills);
        s.put_u64("migrations_eviction", c.evictions);
        // The paper's migrations (copies): promotions and evictions; fault fills copy nothing.
        s.put_u64("migrations", c.promotions + c.evictions);
        s.put_u64("stale_requests", c.stale_requests);
        s.put_u64("evictions_no_memory", c.evictions_no_memory);
        s.put_u64("stalled_walks", c.stalled_walks);
        s.put_u64("stall_cycles", c.stall_cycles);
        let h = s.section("reuse_at_eviction");
        for (k, n) in ["0", "1_5", "6_20", "over_20"]
            .iter()
            .zip(c.reuse_at_eviction)
        {
            h.put_u64(k, n);
        }
        s.put_u64("tar_sf_bytes", self.struct_bytes);
        s.put_u64("tar_sf_peak_bytes", self.peak_struct_bytes);
        s.put_u64("flex_page_table_bytes", self.flex.footprint().bytes);
        s.put_u64(
            "flex_page_table_peak_bytes",
            self.flex.footprint().peak_bytes,
        );
        let mut reuse_hist = [0u64; 4];
        for (i, seg) in self.segs.iter().enumerate() {
            let used = seg.slots.iter().filter(|s| s.occupant.is_some()).count() as u64;
            let r = s.section("restsegs").section(&i.to_string());
            r.put_str("page_size", &seg.page.to_string());
            r.put_u64("ways", seg.ways as u64);
            r.put_u64("sets", seg.sets);
            r.put_u64("base_pfn", seg.base.0);
            r.put_u64("bytes", seg.frames() * BASE_PAGE_BYTES);
            r.put_u64("used_slots", used);
            r.put_f64("occupancy", ratio(used, seg.slots.len() as u64));
            r.put_u64("tar_bytes_per_process", seg.tar_bytes());
            r.put_u64("sf_bytes_per_process", seg.sf_bytes());
            for o in seg.slots.iter().filter_map(|s| s.occupant) {
                reuse_hist[reuse_bucket(o.reuse)] += 1;
            }
        }
        let created = s.section("restseg_layout");
        for (i, l) in self.layout.iter().enumerate() {
            let r = created.section(&i.to_string());
            r.put_u64("configured_bytes", l.configured_bytes);
            r.put_u64("bytes", l.bytes);
        }
        // RSW hits per page resident at the end (Fig. 26 counts evicted pages: above).
        let h = s.section("resident_reuse");
        for (k, n) in ["0", "1_5", "6_20", "over_20"].iter().zip(reuse_hist) {
            h.put_u64(k, n);
        }
        if let Some(r) = flex.remove("radix") {
            s.insert("flex".into(), r);
        }
    }
}

/// This design's profile (`profile.toml` beside this file): the settings its paper assumes
/// around it, applied when the design is named (format and rules: `crate::profiles`).
pub const PROFILE: &str = include_str!("profile.toml");

#[cfg(test)]
mod tests;
