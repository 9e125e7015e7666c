//! Translation designs and their registry.
//!
//! # Adding a design
//! 1. Create `designs/<name>/mod.rs` with a config struct (serde, `deny_unknown_fields`, defaults)
//!    and a type implementing [`Design`]. Its module doc has the sections Model, Configuration,
//!    Deviations from the paper, References.
//! 2. Write `designs/<name>/profile.toml`: the settings the paper assumes around the design
//!    (OS policy, TLB organization, companion structures, the host side when nested), each with
//!    the reason and paper section, or none (format and rules: `crate::profiles`).
//! 3. Add one row to the `designs!` table at the bottom of this file.
//!
//! The row generates the config section (`[<name>]`, so `--set <name>.field=...` works), the
//! arm of [`build_and_visit`] through which the engine gets the design as its concrete type (the
//! hot loop is monomorphized per design: no dynamic dispatch per reference), the entry in [`REGISTRY`]
//! with the profile (which drives `xlat designs`, the conformance suite and the golden runs), and the stats key.
//!
//! `adding_a_design.rs` (a test) follows these steps with a toy design and runs it through the
//! engine with the oracle on; docs/architecture.md walks through it.

pub mod ecpt;
pub mod et;
pub mod fpt;
pub mod ideal;
pub mod lvm;
pub mod mehpt;
pub mod perfect_tlb;
pub mod pom_tlb;
pub mod radix;
pub mod restrictive_only;
pub mod rmm;
pub mod tps;
pub mod utopia;

use crate::addr::{Asid, Mapping, PageSizeSet, Pfn, Vpn, BASE_PAGE_BYTES};
use crate::mem::MemSystem;
use crate::mmu::{CoalesceRequest, CoalescedSpan, FillHints, VaRange};
use crate::os::{FrameUse, OsError, PhysMem};
use crate::stats::Stats;
use serde::{Deserialize, Serialize};

/// What a walk found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkResult {
    /// The translation, or `None` when the page is not mapped (the walk ended at an empty entry).
    pub mapping: Option<Mapping>,
    /// Cycles from the start of the walk to the translation (dependent accesses add up, a
    /// parallel group costs its slowest member, design-owned MMU caches add their latency).
    pub latency_cycles: u32,
    /// Page-table memory references issued (every probe of a parallel group counts).
    pub mem_accesses: u32,
}

/// Page-table memory a design holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PtFootprint {
    /// Bytes held now.
    pub bytes: u64,
    /// Most bytes held at any time.
    pub peak_bytes: u64,
    /// Largest single physically contiguous allocation the design made, in bytes.
    pub max_contiguous_bytes: u64,
}

/// A translation design: owns its page-table structures and its own MMU caches.
///
/// Contract:
/// - after `map(asid, m)` returns `Ok`, `walk(asid, v)` for every VPN `v` inside `m` yields `m`,
///   until `unmap(asid, m)`; for a VPN that no mapped page contains, `walk` yields `None`;
/// - the OS model never maps overlapping pages; `unmap` is only called for a mapping that was mapped;
/// - `walk` never changes what is mapped; every memory reference it makes is issued through `mem`
///   so that its latency and cache pollution are counted;
/// - all page-table memory comes from `phys` (so contiguity needs are real and the memory is
///   counted), and is returned to it when no longer needed.
pub trait Design: Sized + Send {
    /// The design's configuration section.
    type Config;
    /// When true, every translation hits the L1 TLB (the engine skips the TLBs and walks at no
    /// cost; walks still happen to discover unmapped pages).
    const PERFECT_TLB: bool = false;

    /// Build an empty design.
    fn new(cfg: &Self::Config, phys: &mut PhysMem) -> Result<Self, OsError>;
    /// The page sizes this design translates as one entry. The OS model creates mappings of
    /// these sizes only: a larger block a policy allocates (a 64 KiB mTHP folio on x86, say) is
    /// mapped as pages of the largest declared size that fits, over the same frames.
    /// Contract: contains 4 KiB, and does not change during a run.
    fn page_sizes(&self) -> PageSizeSet {
        PageSizeSet::X86
    }
    /// Virtual-address bits this design can translate, when it fixes them (a radix tree of
    /// 4 levels: 48, of 5: 57); `None` (the default) follows the machine's paging mode
    /// ([`crate::config::Config::machine_va_bits`]). The OS model rejects addresses beyond.
    fn va_bits(&self) -> Option<u32> {
        None
    }
    /// Told once, before the first event, when the OS randomizes layouts (`os.aslr`): the
    /// base of each process's zones (`aslr.layout(asid)`), which a design that keys its tables
    /// by virtual address may remove (LVM, §4.5). The default ignores it.
    fn set_aslr(&mut self, _aslr: crate::os::aslr::Aslr) {}
    /// Placement hook, asked at every page fault before the OS model allocates the frames of
    /// the new page (`req.size` pages of `req.vpn`, as the OS policy chose them). A design that
    /// decides where pages live (Utopia's set-associative segments) or how frames line up
    /// (Elastic Translations' CoalaPaging) returns the first frame of a naturally aligned block
    /// of `req.size` that it took from `phys` for [`FrameUse::Data`] (e.g. with
    /// `PhysMem::alloc_at`); the OS model then owns and maps it like any frame it allocated,
    /// and frees it to the buddy allocator on unmap. `None` (the default) lets the OS policy
    /// allocate. The hook may read the process's page map (`req.pages`) but changes no mapping.
    fn place(&mut self, _phys: &mut PhysMem, _req: &crate::os::PlaceRequest) -> Option<Pfn> {
        None
    }
    /// THP hook, asked at a THP fault before a 2 MiB page is allocated for `vpn` of `asid`:
    /// `false` makes the fault fall back to 4 KiB pages (Elastic Translations' offline Leshy
    /// mode refuses THP outside ranges hinted 2 MiB or larger). The default allows it.
    fn allows_huge(&mut self, _asid: Asid, _vpn: Vpn) -> bool {
        true
    }
    /// TLB coalescing hook, asked after a TLB-miss walk that found `m` when `tlb.coalescing` is
    /// on: the coalesced entry the hardware would build from what that walk read, or `None` to
    /// cache `m` alone (the default: designs without coalescing support).
    ///
    /// Contract: a returned span holds `m` as one of its base pages (`span.base_of(m.vpn) ==
    /// m`), and every other base page of the span is mapped now, as exactly the mapping the span
    /// implies (same size, consecutive frames, same permission); the information must be what a
    /// walk of `m` read (for [`CoalesceRequest::ContiguousBit`], a contiguous mark in `m`'s
    /// entry; for [`CoalesceRequest::Colt`], the entries in the same page-table line as `m`'s), so
    /// no memory reference is added. Changes no state. The engine's oracle checks every hit of
    /// the entry against the OS model, and the MMU drops the entry when any page of the span is
    /// invalidated.
    fn coalesced(&self, _asid: Asid, _m: Mapping, _req: CoalesceRequest) -> Option<CoalescedSpan> {
        None
    }
    /// Contiguous-group invalidation hook, asked by the engine after every `unmap`: the
    /// contiguous group (as a span of its 16 base pages, as mapped just before the unmap) that
    /// this unmap broke, if any, so that the TLB entries of **every** member are invalidated,
    /// as Arm requires when one entry of a contiguous range changes (Elastic Translations:
    /// clear the bit on all 16 and invalidate them). `None` (the default): only the unmapped
    /// page is invalidated. Takes the record (a second call returns `None`).
    fn take_broken_group(&mut self) -> Option<CoalescedSpan> {
        None
    }
    /// Range-translation hook, asked after a TLB-miss walk of `vpn` when the MMU has a range
    /// TLB (`tlb.range.entries > 0`): the design's range translation holding `vpn` (RMM's range
    /// table), or `None` (the default: designs without ranges).
    ///
    /// Contract: a returned range holds `vpn`, and every base page in it is mapped now to the
    /// frame the range implies with its permission. Changes no state; the lookup's memory
    /// references, if a design models them, are its own (RMM walks the range table in the
    /// background, off the critical path).
    fn range(&self, _asid: Asid, _vpn: Vpn) -> Option<VaRange> {
        None
    }
    /// Install a translation.
    fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError>;
    /// Remove a translation.
    fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping);
    /// Translate `vpn` after a TLB miss.
    fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult;
    /// Translate `vpn` again after the OS resolved a page fault on it (the faulting reference's
    /// repeated walk). Must behave exactly as [`Design::walk`] (same state changes, same
    /// result); a design whose statistics describe TLB-miss walks (rates, averages) counts this
    /// walk apart from them.
    #[inline]
    fn walk_after_fault(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
        self.walk(asid, vpn, mem)
    }
    /// Whether the design overlaps its walk with the L2 TLB lookup by itself (told the latency
    /// by [`Design::set_l2_tlb_latency`]): `tlb.walk_with_l2_lookup` then leaves its walk's
    /// cost as the design reports it.
    const OVERLAPS_L2_TLB_LOOKUP: bool = false;
    /// Whether [`Design::beside_l2_tlb_hit`] does anything (the engine calls it only then, so
    /// other designs' L2 TLB hits cost nothing more).
    const WORKS_BESIDE_L2_TLB_HIT: bool = false;
    /// An L1 TLB miss that the L2 TLB answered, for a design whose hardware starts work with
    /// every L2 TLB lookup (Utopia's RestSeg walk, §5.2). Contract: may change the design's own
    /// caches and counters and read page-table memory through `mem` (cache and DRAM state;
    /// the engine does not time these reads); must not change any translation. Called only
    /// when [`Design::WORKS_BESIDE_L2_TLB_HIT`] is true.
    fn beside_l2_tlb_hit(&mut self, _asid: Asid, _vpn: Vpn, _mem: &mut MemSystem) {}
    /// The L2 TLB's lookup latency, told once before any walk. A design whose walk starts
    /// together with the L2 TLB lookup (Utopia's RestSeg walk) reports only the part of its
    /// latency that outlasts it (the engine charges the L2 TLB latency before every walk).
    /// The default ignores it.
    fn set_l2_tlb_latency(&mut self, _cycles: u32) {}
    /// Whether the design has OS work queued ([`Design::os_work`]). Polled by the engine once
    /// per event chunk and after every page fault, so it must be cheap; the default (no work)
    /// keeps the engine's loop exactly as it is for designs without any.
    #[inline]
    fn wants_os_work(&self) -> bool {
        false
    }
    /// Do the OS work the design queued (Utopia's page migrations) at simulated cycle
    /// `now_cycles`, through the OS model's public operations (`Os::migrate` with a
    /// destination block the design took from `os.phys`, `Os::translate` to check that a
    /// queued page is still mapped as it was).
    ///
    /// Contract: mappings change only through the OS model, whose changes go to `changes`;
    /// the engine applies them right after (the design's `map` / `unmap`, TLB shootdowns,
    /// cache flushes of moved frames), so the design sees its own migrations the way it sees
    /// any OS change. Called only when [`Design::wants_os_work`] is true.
    fn os_work(
        &mut self,
        _os: &mut crate::os::Os,
        _now_cycles: u64,
        _changes: &mut Vec<crate::os::MapChange>,
    ) -> Result<(), OsError> {
        Ok(())
    }
    /// Page-table memory held.
    fn footprint(&self) -> PtFootprint;
    /// Write design-specific statistics (into the section named after the design).
    fn stats(&self, out: &mut Stats);
    /// Speed hint: a walk of `vpn` may come soon; prefetch into the host's caches what it will
    /// read (the design's own arrays, and through `mem.prefetch` the simulated-cache sets of its
    /// page-table lines). Must not change any state a walk can observe.
    #[inline]
    fn prefetch(&self, _asid: Asid, _vpn: Vpn, _mem: &MemSystem) {}
    /// Speed hint, some events before [`Design::prefetch`] of the same page: prefetch into the
    /// host's caches what that call will itself read to find its addresses (e.g. a radix
    /// table's upper-level entry), so that it does not wait for them. Must not change any state
    /// a walk can observe.
    #[inline]
    fn prefetch_early(&self, _asid: Asid, _vpn: Vpn) {}
    /// OS cycles the design spent on its page tables so far beyond page-fault handling (e.g.
    /// allocating contiguous table memory); the engine adds them to `timing.os_cycles`.
    fn os_cycles(&self) -> u64 {
        0
    }
    /// The part of [`PhysMem::alloc_work_cycles`] this design caused so far (zeroing and direct
    /// compaction for its page-table blocks), whether [`Design::os_cycles`] charges it or not.
    /// A fault's latency (`os.fault_latency`) takes physical memory's work and the design's OS
    /// cycles; subtracting this counts that work once (and not at all when the design does not
    /// charge it). Default 0: designs whose table memory work is only in physical memory's count
    /// (radix) or that take no blocks from it.
    fn phys_work_cycles(&self) -> u64 {
        0
    }
    /// Several cores (`sim.cores = n`, called once, before any walk, only when `n > 1`).
    ///
    /// Contract: the design's MMU caches (page-walk caches, cuckoo walk caches, walk caches of
    /// any kind) are private per core — give each core its own cold copy (see [`PerCore`]) —
    /// while its page tables are shared by every core. After `set_cores(n)`, walks use the
    /// caches of the core last chosen by [`Design::select_core`] (core 0 at first); `map` /
    /// `unmap` keep every core's caches consistent (an entry a table change makes stale is
    /// removed from all of them). Statistics are totals over the cores. A design without MMU
    /// caches keeps the default (nothing to do).
    fn set_cores(&mut self, _n: usize) {}
    /// The core whose MMU caches the next walks use (`core < n` of [`Design::set_cores`]);
    /// called by the engine when it switches the running core, never per reference.
    fn select_core(&mut self, _core: usize) {}
    /// Drop every entry of the running core's MMU caches (a context switch without PCID,
    /// `sim.flush_tlb_on_switch`: a CR3 load invalidates the paging-structure caches too).
    fn flush_mmu_caches(&mut self) {}
    /// MMU-cache lookups that missed so far, over every core (walks that found no entry in any
    /// of the design's walk caches); 0 for a design without MMU caches. Read by the engine at
    /// context switches (`switch.mmu_cache_misses_in_window`).
    fn mmu_cache_misses(&self) -> u64 {
        0
    }
}

/// The MMU reaches every design through this one impl: its fill hints are the design's
/// coalescing and range hooks.
impl<D: Design> FillHints for D {
    #[inline]
    fn coalesced_span(
        &self,
        asid: Asid,
        m: Mapping,
        req: CoalesceRequest,
    ) -> Option<CoalescedSpan> {
        Design::coalesced(self, asid, m, req)
    }
    #[inline]
    fn range_holding(&self, asid: Asid, vpn: Vpn) -> Option<VaRange> {
        Design::range(self, asid, vpn)
    }
}

/// Per-core copies of an MMU cache (or of a group of them): the running core's copy is
/// `active` and reached through `Deref`, so a design's walk code is unchanged by multi-core;
/// the other cores' copies wait in `parked` (`parked[i]` holds core `i`'s copy, except at the
/// running core's index, which holds a spare).
#[derive(Clone, Debug)]
pub struct PerCore<T> {
    active: T,
    parked: Vec<T>,
    current: usize,
}

impl<T: Clone> PerCore<T> {
    /// One core's cache.
    pub fn new(cache: T) -> Self {
        PerCore {
            active: cache,
            parked: Vec::new(),
            current: 0,
        }
    }

    /// `n` cores, each with a copy of the (cold) cache as it is now.
    pub fn set_cores(&mut self, n: usize) {
        self.parked = vec![self.active.clone(); n.max(1)];
        self.current = 0;
    }

    /// Make core `core`'s copy the active one.
    pub fn select(&mut self, core: usize) {
        if core == self.current || self.parked.is_empty() {
            return;
        }
        std::mem::swap(&mut self.active, &mut self.parked[self.current]);
        std::mem::swap(&mut self.active, &mut self.parked[core]);
        self.current = core;
    }

    /// Every core's copy (the active one first), e.g. to invalidate a stale entry everywhere.
    pub fn all_mut(&mut self) -> impl Iterator<Item = &mut T> {
        let current = self.current;
        std::iter::once(&mut self.active).chain(
            self.parked
                .iter_mut()
                .enumerate()
                .filter(move |(i, _)| *i != current)
                .map(|(_, c)| c),
        )
    }
}

impl<T> std::ops::Deref for PerCore<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.active
    }
}

impl<T> std::ops::DerefMut for PerCore<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.active
    }
}

/// Allocation bookkeeping for a design's page-table memory: every block comes from the buddy
/// allocator and is tallied, so `page_table.*` figures are exact.
#[derive(Clone, Debug, Default)]
pub struct PtMemory {
    bytes: u64,
    peak_bytes: u64,
    max_contiguous_bytes: u64,
}

impl PtMemory {
    /// Allocate a naturally aligned block of `2^order` frames for page-table use.
    pub fn alloc(&mut self, phys: &mut PhysMem, order: u8) -> Result<Pfn, OsError> {
        let pfn = phys.alloc(order, FrameUse::PageTable)?;
        let bytes = BASE_PAGE_BYTES << order;
        self.bytes += bytes;
        self.peak_bytes = self.peak_bytes.max(self.bytes);
        self.max_contiguous_bytes = self.max_contiguous_bytes.max(bytes);
        Ok(pfn)
    }

    /// Return a block obtained from [`PtMemory::alloc`].
    pub fn free(&mut self, phys: &mut PhysMem, pfn: Pfn, order: u8) {
        phys.free(pfn, order, FrameUse::PageTable);
        self.bytes -= BASE_PAGE_BYTES << order;
    }

    /// The tallies.
    pub fn footprint(&self) -> PtFootprint {
        PtFootprint {
            bytes: self.bytes,
            peak_bytes: self.peak_bytes,
            max_contiguous_bytes: self.max_contiguous_bytes,
        }
    }
}

/// Issue a group of independent page-table reads in parallel: the group costs the latency of
/// its slowest member, and every member counts as a memory reference.
pub fn parallel_reads(mem: &mut MemSystem, addrs: &[crate::addr::Paddr]) -> u32 {
    mem.begin_parallel();
    let slowest = addrs
        .iter()
        .map(|pa| mem.pt_access(*pa).latency_cycles)
        .max()
        .unwrap_or(0);
    mem.end_parallel();
    slowest
}

/// Receives a freshly built design as its concrete type (see [`build_and_visit`]).
pub trait DesignVisitor {
    /// What the visitor makes of the design.
    type Output;
    /// Take the design.
    fn visit<D: Design + 'static>(self, design: D) -> Self::Output;
}

/// Registry entry of one design.
#[derive(Clone, Copy, Debug)]
pub struct DesignInfo {
    /// Name: config tag, folder name, Python name and stats key.
    pub name: &'static str,
    /// One-line description.
    pub summary: &'static str,
    /// The design's profile (`designs/<name>/profile.toml`): the settings its paper assumes
    /// around it, applied when the design is named (see `crate::profiles`).
    pub profile: &'static str,
}

/// Look-ups in [`REGISTRY`].
pub struct Registry;

impl Registry {
    /// The entry named `name`.
    pub fn find(name: &str) -> Option<&'static DesignInfo> {
        REGISTRY.iter().find(|d| d.name == name)
    }
}

macro_rules! designs {
    ($( $name:ident : $ty:ident ( $cfg:ident ) $summary:literal ;)*) => {
        /// One config section per registered design.
        #[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
        #[serde(default)]
        pub struct DesignsConfig {
            $(
                #[doc = $summary]
                pub $name: $name::$cfg,
            )*
        }

        impl DesignsConfig {
            /// Validate every design section.
            pub fn validate(&self) -> Result<(), String> {
                $( self.$name.validate().map_err(|e| format!("{}.{e}", stringify!($name)))?; )*
                Ok(())
            }
        }

        /// Every registered design, in registry order.
        pub const REGISTRY: &[DesignInfo] = &[
            $( DesignInfo {
                name: stringify!($name),
                summary: $summary,
                profile: $name::PROFILE,
            }, )*
        ];

        /// Build the design named `name` from its section of `cfg` and hand it, as its concrete
        /// type, to `visitor` (static dispatch: the visitor's code is monomorphized per design).
        pub fn build_and_visit<V: DesignVisitor>(
            name: &str,
            cfg: &DesignsConfig,
            phys: &mut PhysMem,
            visitor: V,
        ) -> Result<V::Output, OsError> {
            match name {
                $( stringify!($name) => Ok(visitor.visit($name::$ty::new(&cfg.$name, phys)?)), )*
                other => Err(OsError(format!("unknown design '{other}'"))),
            }
        }
    };
}

designs! {
    radix: Radix(RadixConfig) "x86-64 radix page table (4- or 5-level) with page-walk caches and 2 MiB / 1 GiB leaves";
    ideal: Ideal(IdealConfig) "every TLB miss is resolved by exactly one memory access to the leaf entry";
    perfect_tlb: PerfectTlb(PerfectTlbConfig) "every translation hits the L1 TLB (upper bound)";
    ecpt: Ecpt(EcptConfig) "elastic cuckoo page tables: per-size d-ary cuckoo hash tables, parallel probes, cuckoo walk caches, elastic resizing";
    mehpt: Mehpt(MehptConfig) "ME-HPT: ECPT with L2P-mapped chunked ways, changing chunk sizes, in-place and per-way resizing";
    fpt: Fpt(FptConfig) "flattened page tables: radix with PML4+PDPT and PD+PT folded into 2 MiB tables when 2 MiB blocks are free";
    lvm: Lvm(LvmConfig) "LVM: per-process learned index of fixed-point linear models over gapped page tables, LVM walk cache";
    tps: Tps(TpsConfig) "Tailored Page Sizes: pages of every power of two in an x86 radix table (alias PTEs or full copies)";
    rmm: Rmm(RmmConfig) "Redundant Memory Mappings: radix plus a range table of contiguous mappings, walked in the background to fill a range TLB";
    pom_tlb: PomTlb(PomTlbConfig) "POM-TLB: a 64K-entry 16-way SRRIP L3 TLB in memory (lines through the data caches) probed after the L2 TLB miss, then the radix walk";
    utopia: Utopia(UtopiaConfig) "Utopia: set-associative RestSegs (TAR/SF, RestSeg walk with TAR/SF caches, page-fault-based placement) beside a radix-translated FlexSeg";
    restrictive_only: RestrictiveOnly(RestrictiveOnlyConfig) "restrictive-only (Utopia §3 baseline): all data pages in one set-associative 4 KiB segment; a full set swaps its SRRIP victim out";
    et: Et(EtConfig) "Elastic Translations: Arm radix with transparent contiguous-bit management (64 KiB / 32 MiB) and CoalaPaging fault-time placement";
}

// After the table's macro, which the guide's test instantiates with a toy row.
#[cfg(test)]
mod adding_a_design;
