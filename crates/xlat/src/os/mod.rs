//! The OS memory-manager model: processes and their VMAs, demand paging, the buddy allocator
//! that every frame (data or page table) comes from, THP, and fragmentation.
//!
//! Contract: the OS model is the authority on mappings. [`Os::translate`] is the oracle every
//! design's translation is checked against; every change of a mapping is reported to the caller
//! as [`MapChange`]s so the design and the TLBs can follow.
//!
//! ## Model
//! - Physical memory is a buddy allocator ([`buddy`]) of orders 0..=18; data frames and every
//!   design's page-table frames come from it, so page-table contiguity needs compete with data.
//! - Processes (one ASID each) own a [`vma::VmaSet`] built from the trace's mmap / munmap / brk /
//!   mprotect / madvise events and a [`pagemap::PageMap`] of their translations.
//! - Demand paging under one placement policy (`os.policy`): `thp` (Linux's THP fault path,
//!   `os.thp`), `mthp` (multi-size THP), `reservation` (FreeBSD / TPS reservations with in-place
//!   promotion) or `eager` (map whole VMAs at mmap). Pages are any power of two from 4 KiB to
//!   1 GiB that the design declares (`Design::page_sizes`); the design's placement hook
//!   (`Design::place`) may choose a fault's frames.
//! - khugepaged on simulated time (`Os::tick`), migration / split / collapse with shootdowns
//!   and cache invalidation of moved frames, reclaim to swap under memory pressure.
//! - munmap / madvise(DONTNEED) / brk shrink / exit free the frames; a page that is only
//!   partly unmapped or re-protected is split into 4 KiB pages of the same frames.
//! - Before the run, free memory can be fragmented to a target FMFI (`os.fmfi_target`) by pinning
//!   one random 4 KiB frame in a random share of the 2^`fmfi_order`-frame blocks (scattered
//!   unmovable pages, as kernel allocations leave), or loaded from a `/proc/buddyinfo` snapshot.
//!
//! `docs/os-model.md` describes every mechanism, its costs and its deviations from Linux.
//!
//! ## Configuration
//! `os.phys_mem_bytes` (64 GiB), `os.thp` (`never` | `madvise` | `always`), `os.fmfi_target`
//! (0 = unfragmented), `os.fmfi_order` (9), `os.buddyinfo` (path; "" = none), `os.policy`
//! (`thp`), `os.mthp.*`, `os.reservation.*`, `os.khugepaged.*`, `os.migration.*`, `os.swap.*`
//! (see [`policy`] and [`swap`]), `os.fragmenter.*` (see [`fragmenter`]) and `os.compaction.*` (see [`compaction`]),
//! `os.aslr` (false; Linux x86-64 layout randomization of every process, see [`aslr`]).
//!
//! ## Deviations and limits
//! mprotect(PROT_NONE) drops the range's translations and frames (re-touching faults in fresh
//! frames). Copy-on-write and file-backed mappings are not modeled (every mapping is private
//! anonymous memory). A `buddyinfo` snapshot is laid out with every free block next to a pinned
//! buddy, so it needs up to twice its free memory. One core: shootdowns are local.
//!
//! ## Stats (section `os`)
//! `page_faults`, `faults_2m`, `thp_fallbacks` and `thp_fallback_{unaligned,partly_mapped,
//! no_block,not_advised}`, `data_bytes`, `data_peak_bytes`, `page_table_bytes`,
//! `page_table_peak_bytes`, `pinned_bytes`, `phys_mem_bytes`, `fmfi_target`, `fmfi_order`,
//! `fmfi_before`, `fmfi_end`, `free_blocks_before`, `free_blocks_end` (19 counts, orders 0..18),
//! `thp`, `processes`, `vmas`, `mapped_4k`, `mapped_2m`, `mapped_bytes_by_size`, `policy`,
//! `filler_bytes`, `compaction.*` (direct compactions, pages migrated, frames scanned, cycles;
//! see [`compaction`]), policy, daemon, migration and swap counters (`docs/results.md`).
//!
//! ## References
//! Linux mm (buddy allocator, THP fault path `do_huge_pmd_anonymous_page`, mTHP
//! `alloc_anon_folio`, `mm/khugepaged.c`, `mm/migrate.c`, `mm/vmscan.c`); Navarro et al.,
//! "Practical, transparent operating system support for superpages" (OSDI'02, reservations);
//! TPS §III-B; Gorman & Whitcroft,
//! "The what, the why and the where to of anti-fragmentation" (FMFI); ME-HPT §III.

pub mod aslr;
pub mod buddy;
pub mod coala_khugepaged;
pub mod compaction;
mod error;
pub mod fault_latency;
pub mod fragmenter;
pub mod hawkeye;
pub mod hugetlb;
pub mod pagemap;
pub mod phys;
pub mod policy;
pub mod reservation;
pub mod swap;
pub mod trident;
pub mod va_gaps;
pub mod vma;

use buddy::ORDERS;
pub use error::OsError;
pub use fragmenter::{FragmenterConfig, FragmenterMode};
use pagemap::PageMap;
pub use phys::{CompactionConfig, DataOwner, FrameUse, PhysMem, Relocation};
use policy::{
    KcompactdConfig, KhugepagedConfig, MigrationConfig, MthpConfig, PolicyKind, ReservationConfig,
    ReservationRule,
};
use reservation::{Reservation, Reservations};
use swap::{Swap, SwapConfig};
use vma::VmaSet;

use crate::addr::{
    Asid, Mapping, PageSize, PageSizeSet, Pfn, Vaddr, Vpn, BASE_PAGE_BYTES, BASE_PAGE_SHIFT,
};
use crate::stats::{Stats, StatsExt};
use crate::trace::{advice, prot, AccessKind};
use serde::{Deserialize, Serialize};

/// Transparent huge page policy, as Linux's `/sys/kernel/mm/transparent_hugepage/enabled`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ThpPolicy {
    /// 4 KiB pages only.
    Never,
    /// 2 MiB pages only in ranges marked with `madvise(MADV_HUGEPAGE)`.
    Madvise,
    /// 2 MiB pages wherever the aligned 2 MiB range lies inside the VMA.
    Always,
}

/// OS model settings.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct OsConfig {
    /// Physical memory size in bytes.
    pub phys_mem_bytes: u64,
    /// THP policy.
    pub thp: ThpPolicy,
    /// Target free-memory fragmentation index before the run (0 = leave memory unfragmented).
    pub fmfi_target: f64,
    /// Buddy order at which the FMFI is measured (9 = 2 MiB).
    pub fmfi_order: u8,
    /// Path of a `/proc/buddyinfo`-style snapshot to start from ("" = none).
    pub buddyinfo: String,
    /// Fault-time placement policy: `thp` (Linux THP, as `os.thp` says), `mthp`,
    /// `reservation` or `eager`.
    pub policy: PolicyKind,
    /// Multi-size THP settings (`policy = "mthp"`).
    pub mthp: MthpConfig,
    /// Reservation settings (`policy = "reservation"`).
    pub reservation: ReservationConfig,
    /// The khugepaged daemon (any policy).
    pub khugepaged: KhugepagedConfig,
    /// The kcompactd daemon (background compaction).
    pub kcompactd: KcompactdConfig,
    /// Costs of migrations, splits, collapses and shootdowns.
    pub migration: MigrationConfig,
    /// Reclaim and the swap device (`os.swap.bytes = 0`: no swap).
    pub swap: SwapConfig,
    /// Fragmenter mix (`os.fragmenter.*`).
    pub fragmenter: FragmenterConfig,
    /// Allocation and compaction costs (`os.compaction.*`).
    pub compaction: CompactionConfig,
    /// Address-space layout randomization: move each process's executable/heap, mmap area and
    /// stack as Linux x86-64 does (see [`aslr`]); off = the trace's addresses as given.
    pub aslr: bool,
    /// A HugeTLB pool reserved at boot (`os.hugetlb.*`, see [`hugetlb`]; `pages = 0`: none).
    pub hugetlb: hugetlb::HugetlbConfig,
    /// The promotion daemon of `policy = "hawkeye"` (see [`hawkeye`]).
    pub hawkeye: hawkeye::HawkeyeConfig,
    /// The background promoter of `policy = "trident"` (see [`trident`]).
    pub trident: trident::TridentConfig,
}

impl Default for OsConfig {
    fn default() -> Self {
        OsConfig {
            phys_mem_bytes: 64 << 30,
            thp: ThpPolicy::Never,
            fmfi_target: 0.0,
            fmfi_order: 9,
            buddyinfo: String::new(),
            policy: PolicyKind::Thp,
            mthp: MthpConfig::default(),
            reservation: ReservationConfig::default(),
            khugepaged: KhugepagedConfig::default(),
            kcompactd: KcompactdConfig::default(),
            migration: MigrationConfig::default(),
            swap: SwapConfig::default(),
            fragmenter: FragmenterConfig::default(),
            compaction: CompactionConfig::default(),
            aslr: false,
            hugetlb: hugetlb::HugetlbConfig::default(),
            hawkeye: hawkeye::HawkeyeConfig::default(),
            trident: trident::TridentConfig::default(),
        }
    }
}

impl OsConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.fmfi_target) {
            return Err(format!(
                "os.fmfi_target must be in [0, 1], got {}",
                self.fmfi_target
            ));
        }
        self.fragmenter.validate()?;
        self.compaction.validate()?;
        policy::validate(&self.mthp, &self.reservation, &self.khugepaged)?;
        if self.policy == PolicyKind::Eager && self.swap.bytes > 0 {
            // Known defect: a rare sequence of eager mmaps, reclaim and khugepaged maps a frame
            // twice (found by the property test); refused until fixed rather than risked.
            return Err(
                "os.policy = \"eager\" with os.swap.bytes > 0 is not supported yet (a known \
                 defect under memory pressure); use another policy or no swap"
                    .into(),
            );
        }
        self.kcompactd.validate()?;
        self.hugetlb.validate(self.swap.bytes)?;
        self.hawkeye.validate()?;
        self.trident.validate()?;
        self.swap.validate(self.phys_mem_bytes)
    }
}

/// What the placement hook is asked at a fault (see `Design::place`).
pub struct PlaceRequest<'a> {
    /// The faulting process.
    pub asid: Asid,
    /// First VPN of the page to place (aligned to `size`).
    pub vpn: Vpn,
    /// Size of the page the OS policy chose.
    pub size: PageSize,
    /// The process's current mappings (read only).
    pub pages: &'a PageMap,
}

/// Chooses the frames of a new page at fault time (the placement hook; implemented for the
/// engine by every design through `Design::place`).
///
/// Contract: `place` returns either `None` (the OS allocates) or the first frame of a naturally
/// aligned block of `req.size` that it allocated from `phys` as [`FrameUse::Data`]; it changes
/// no mapping.
pub trait Placer {
    /// Choose the frames of the page `req` describes.
    fn place(&mut self, phys: &mut PhysMem, req: &PlaceRequest) -> Option<Pfn>;
    /// Whether a THP fault may map a 2 MiB page at `vpn` (asked before the OS policy
    /// allocates one; `false` makes the fault fall back to 4 KiB). Default: always.
    fn allows_huge(&mut self, _asid: Asid, _vpn: Vpn) -> bool {
        true
    }
}

/// The placer that leaves every choice to the OS policy.
pub struct OsPlacement;

impl Placer for OsPlacement {
    fn place(&mut self, _phys: &mut PhysMem, _req: &PlaceRequest) -> Option<Pfn> {
        None
    }
}

/// A change of the authoritative mapping that designs and TLBs must follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapChange {
    /// A translation was removed (its frames are already freed).
    Unmap(Asid, Mapping),
    /// A translation was installed.
    Map(Asid, Mapping),
}

struct Process {
    pid: u32,
    vmas: VmaSet,
    pages: PageMap,
    heap_start: Option<u64>,
    heap_end: u64,
    reservations: Reservations,
}

/// Counters of the OS model.
#[derive(Clone, Debug, Default)]
struct OsCounters {
    faults: u64,
    faults_2m: u64,
    fallback_unaligned: u64,
    fallback_partly_mapped: u64,
    fallback_no_block: u64,
    fallback_not_advised: u64,
    /// Faults whose frames the placement hook chose.
    placed_by_design: u64,
    /// mTHP faults per order (a folio of that size was allocated).
    mthp_faults: [u64; PageSize::MAX_ORDER as usize + 1],
    reservations_made: u64,
    reservations_broken: u64,
    reservations_released_for_memory: u64,
    promotions: u64,
    promotion_bloat_bytes: u64,
    eager_bytes: u64,
    khugepaged_wakeups: u64,
    kcompactd_wakeups: u64,
    khugepaged_pages_scanned: u64,
    collapses: u64,
    collapses_in_place: u64,
    collapse_no_block: u64,
    migrations: u64,
    splits: u64,
    shootdowns: u64,
    bytes_copied: u64,
    /// OS cycles of background daemons (scans).
    daemon_cycles: u64,
    /// OS cycles of copies and shootdowns (migrations, collapses, splits).
    migration_cycles: u64,
}

/// The OS model.
pub struct Os {
    /// Physical memory.
    pub phys: PhysMem,
    cfg: OsConfig,
    procs: Vec<Process>,
    c: OsCounters,
    fmfi_before: f64,
    free_blocks_before: [u64; ORDERS],
    /// Sizes the design translates as one entry (see `Design::page_sizes`).
    sizes: PageSizeSet,
    /// Frames whose contents moved (migration, copying collapse): the engine drops their
    /// lines from the data caches.
    moved_frames: Vec<(Pfn, u8)>,
    /// Simulated cycle of the next khugepaged wake-up.
    khugepaged_next: u64,
    /// khugepaged's scan position: (process index, virtual address).
    khugepaged_cursor: (usize, u64),
    /// Address-space regularity of the processes that exited, taken just before their pages
    /// were unmapped (the record adds the live processes' at the end of the run).
    exited_va_gaps: va_gaps::VaGaps,
    /// Simulated cycle of the next kcompactd wake-up.
    kcompactd_next: u64,
    /// Reclaim and swap state (used only when `os.swap.bytes > 0`).
    swap: Swap,
    swap_on: bool,
    /// Virtual-address bits of the paging mode (48 or 57; see [`Os::set_va_bits`]).
    va_bits: u32,
    /// `os.aslr`: the seed of the layouts, and each process's layout by ASID.
    aslr: Option<aslr::Aslr>,
    aslr_layouts: Vec<aslr::AslrLayout>,
    /// Per-fault latency histogram (`os.fault_latency.*`), fed by the engine.
    fault_latency: fault_latency::FaultLatency,
    /// The HugeTLB pool (empty unless `os.hugetlb.pages > 0`).
    hugetlb: hugetlb::Pool,
    /// HawkEye's coverage bitmaps and counters (`policy = "hawkeye"`).
    hawkeye: hawkeye::Hawkeye,
    /// Trident's daemon state and counters (`policy = "trident"`).
    trident: trident::Trident,
}

/// `len` rounded up to whole pages; `None` when that wraps (a length near 2^64).
fn page_round(len: u64) -> Option<u64> {
    len.div_ceil(BASE_PAGE_BYTES).checked_mul(BASE_PAGE_BYTES)
}

impl Os {
    /// Boot the model: physical memory, then fragmentation or a buddyinfo snapshot as configured.
    pub fn new(cfg: &OsConfig, seed: u64) -> Result<Os, OsError> {
        cfg.validate().map_err(OsError)?;
        let mut phys = if cfg.buddyinfo.is_empty() {
            PhysMem::new(cfg.phys_mem_bytes)
        } else {
            let text = std::fs::read_to_string(&cfg.buddyinfo).map_err(|e| {
                OsError(format!(
                    "{}: cannot read buddyinfo snapshot: {e}",
                    cfg.buddyinfo
                ))
            })?;
            PhysMem::from_buddyinfo_text(&text, &cfg.buddyinfo, cfg.phys_mem_bytes)?
        };
        phys.set_compaction(&cfg.compaction);
        // The HugeTLB pool is reserved at boot, before memory fragments.
        let hugetlb = hugetlb::Pool::reserve(&cfg.hugetlb, &mut phys)?;
        match cfg.fragmenter.mode {
            FragmenterMode::Pin if cfg.fmfi_target > 0.0 => {
                phys.fragment(cfg.fmfi_target, cfg.fmfi_order, seed)?;
            }
            FragmenterMode::Pin => {}
            FragmenterMode::Fill | FragmenterMode::Alternating if !cfg.buddyinfo.is_empty() => {
                return Err(OsError(
                    "os.fragmenter.mode = \"fill\" cannot be combined with os.buddyinfo (the \
                     snapshot already fixes the free memory)"
                        .into(),
                ));
            }
            FragmenterMode::Fill => {
                phys.fragment_fill(cfg.fmfi_target, cfg.fmfi_order, &cfg.fragmenter, seed)?;
            }
            FragmenterMode::Alternating => {
                phys.fragment_alternating(cfg.fmfi_target, cfg.fmfi_order, &cfg.fragmenter)?;
            }
        }
        Ok(Os {
            fmfi_before: phys.fmfi(cfg.fmfi_order),
            free_blocks_before: phys.free_blocks(),
            phys,
            cfg: cfg.clone(),
            procs: Vec::new(),
            c: OsCounters::default(),
            sizes: PageSizeSet::X86,
            moved_frames: Vec::new(),
            khugepaged_next: cfg.khugepaged.interval_cycles,
            khugepaged_cursor: (0, 0),
            exited_va_gaps: va_gaps::VaGaps::default(),
            kcompactd_next: cfg.kcompactd.interval_cycles,
            swap: Swap::default(),
            swap_on: cfg.swap.bytes > 0,
            va_bits: 48,
            aslr: cfg.aslr.then_some(aslr::Aslr { seed }),
            aslr_layouts: Vec::new(),
            fault_latency: fault_latency::FaultLatency::default(),
            hugetlb,
            hawkeye: hawkeye::Hawkeye::default(),
            trident: trident::Trident::default(),
        })
    }

    /// The ASID of process `pid`, creating the process on first sight.
    pub fn process(&mut self, pid: u32) -> Asid {
        if let Some(i) = self.procs.iter().position(|p| p.pid == pid) {
            return i as Asid;
        }
        self.procs.push(Process {
            pid,
            vmas: VmaSet::default(),
            pages: PageMap::default(),
            heap_start: None,
            heap_end: 0,
            reservations: Reservations::default(),
        });
        let asid = (self.procs.len() - 1) as Asid;
        if let Some(a) = self.aslr {
            self.aslr_layouts.push(a.layout(asid));
        }
        asid
    }

    /// The layout randomization (`os.aslr`), when on: the design learns the bases from it.
    pub fn aslr(&self) -> Option<aslr::Aslr> {
        self.aslr
    }

    /// Whether `os.aslr` is on (then every event goes through [`Os::aslr_place`]).
    #[inline(always)]
    pub fn aslr_on(&self) -> bool {
        self.aslr.is_some()
    }

    /// Event `ev` of process `asid` with its addresses moved to the process's randomized
    /// layout (`os.aslr`); an error names an address in no zone or a range leaving its zone.
    pub fn aslr_place(
        &self,
        asid: Asid,
        ev: crate::trace::Event,
    ) -> Result<crate::trace::Event, OsError> {
        use crate::trace::Event;
        let Some(l) = self.aslr_layouts.get(asid as usize) else {
            return Ok(ev);
        };
        let r = match ev {
            Event::Access {
                kind,
                va,
                size,
                instrs,
                dep,
            } => l.place(va).map(|va| Event::Access {
                kind,
                va,
                size,
                instrs,
                dep,
            }),
            Event::Mmap {
                addr,
                len,
                prot,
                flags,
            } => l.place_range(addr, len).map(|addr| Event::Mmap {
                addr,
                len,
                prot,
                flags,
            }),
            Event::Munmap { addr, len } => l
                .place_range(addr, len)
                .map(|addr| Event::Munmap { addr, len }),
            Event::Brk { new_brk } => l.place(new_brk).map(|new_brk| Event::Brk { new_brk }),
            Event::Mprotect { addr, len, prot } => l
                .place_range(addr, len)
                .map(|addr| Event::Mprotect { addr, len, prot }),
            Event::Madvise { addr, len, advice } => l
                .place_range(addr, len)
                .map(|addr| Event::Madvise { addr, len, advice }),
            other => Ok(other),
        };
        r.map_err(OsError)
    }

    /// Processes created so far (their ASIDs are `0..process_count()`).
    pub fn process_count(&self) -> usize {
        self.procs.len()
    }

    /// Tell the model how many virtual-address bits the paging mode translates (48 for
    /// 4-level paging, 57 for 5-level): addresses at or above `2^bits` are rejected by every
    /// system call and fault, as a CPU without LA57 cannot form them.
    pub fn set_va_bits(&mut self, bits: u32) {
        self.va_bits = bits.clamp(BASE_PAGE_SHIFT + 9, 64 - 1);
    }

    /// The end of the virtual-address space (see [`Os::set_va_bits`]).
    fn va_limit(&self) -> u64 {
        1 << self.va_bits
    }

    /// Why an address at or above [`Os::va_limit`] is refused.
    fn beyond_va_space(&self) -> String {
        format!(
            "the {}-bit virtual address space of {}-level paging{}",
            self.va_bits,
            (self.va_bits - BASE_PAGE_SHIFT) / 9,
            if self.va_bits < 57 {
                " (radix.levels=5 gives 57-bit addresses)"
            } else {
                ""
            }
        )
    }

    fn check_range(&self, addr: Vaddr, len: u64, what: &str) -> Result<(u64, u64), OsError> {
        if !addr.0.is_multiple_of(BASE_PAGE_BYTES) {
            return Err(OsError(format!(
                "{what}: address {addr} is not page-aligned"
            )));
        }
        let end = page_round(len)
            .and_then(|l| addr.0.checked_add(l))
            .ok_or_else(|| OsError(format!("{what}: range {addr} + {len} wraps around")))?;
        if end > self.va_limit() {
            return Err(OsError(format!(
                "{what}: range {addr} + {len} leaves {}",
                self.beyond_va_space()
            )));
        }
        Ok((addr.0, end))
    }

    /// `mmap` that returned `addr`.
    /// A mapping over existing pages (MAP_FIXED) replaces them: their translations are removed
    /// (appended to `changes`) and their frames freed.
    pub fn mmap(
        &mut self,
        asid: Asid,
        addr: Vaddr,
        len: u64,
        prot_bits: u32,
        _flags: u32,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        let (start, end) = self.check_range(addr, len, "mmap")?;
        if len == 0 {
            return Err(OsError(format!("mmap at {addr}: zero length")));
        }
        self.unmap_pages(asid, start, end, changes);
        self.procs[asid as usize].vmas.insert(start, end, prot_bits);
        if self.cfg.policy == PolicyKind::Eager
            && prot_bits & (prot::READ | prot::WRITE | prot::EXEC) != 0
        {
            self.populate(asid, start, end, prot_bits & prot::WRITE != 0, changes)?;
        }
        Ok(())
    }

    /// Remove and free every page in `[start, end)`, splitting pages at the edges into 4 KiB
    /// pages of the same frames; reservations overlapping the range are broken first.
    fn unmap_pages(&mut self, asid: Asid, start: u64, end: u64, changes: &mut Vec<MapChange>) {
        let (s, e) = (Vpn(start >> 12), Vpn(end >> 12));
        self.break_reservations(asid, s, e.0 - s.0);
        if self.swap_on {
            self.swap.discard(asid, s, e.0 - s.0);
        }
        let proc_ = &mut self.procs[asid as usize];
        for m in proc_.pages.in_range(s, e) {
            proc_.pages.remove(m);
            changes.push(MapChange::Unmap(asid, m));
            let pages = m.size.base_pages();
            if m.vpn >= s && m.vpn.0 + pages <= e.0 {
                self.hugetlb.release(&mut self.phys, m.pfn, m.size.order());
                continue;
            }
            if self.hugetlb.holds(m.pfn) {
                self.hugetlb.c.pages_split += 1;
            }
            // Partly inside: keep the outside part as 4 KiB pages of the same frames.
            for i in 0..pages {
                let piece = Mapping {
                    vpn: Vpn(m.vpn.0 + i),
                    pfn: Pfn(m.pfn.0 + i),
                    size: PageSize::Size4K,
                    writable: m.writable,
                };
                if piece.vpn >= s && piece.vpn < e {
                    self.hugetlb.release(&mut self.phys, piece.pfn, 0);
                } else {
                    proc_.pages.insert(piece);
                    changes.push(MapChange::Map(asid, piece));
                }
            }
        }
    }

    /// `munmap`; removed translations are appended to `changes`.
    pub fn munmap(
        &mut self,
        asid: Asid,
        addr: Vaddr,
        len: u64,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        let (start, end) = self.check_range(addr, len, "munmap")?;
        self.unmap_pages(asid, start, end, changes);
        self.procs[asid as usize].vmas.remove_range(start, end);
        Ok(())
    }

    /// `brk` to `new_brk`: the first call fixes the heap start; growing extends the heap VMA,
    /// shrinking unmaps.
    pub fn brk(
        &mut self,
        asid: Asid,
        new_brk: Vaddr,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        let (va_limit, beyond) = (self.va_limit(), self.beyond_va_space());
        let p = &mut self.procs[asid as usize];
        let start = *p.heap_start.get_or_insert(new_brk.0);
        if new_brk.0 < start {
            return Err(OsError(format!(
                "brk to {new_brk} below the heap start {:#x}",
                start
            )));
        }
        let old_end = p.heap_end.max(start);
        let Some(new_end) = page_round(new_brk.0).filter(|e| *e <= va_limit) else {
            return Err(OsError(format!("brk to {new_brk} leaves {beyond}")));
        };
        p.heap_end = new_end;
        if new_end > old_end {
            let prot = prot::READ | prot::WRITE;
            // Extend the heap area (merging is cosmetic; a second area is equivalent).
            let from = page_round(start).unwrap_or(start).max(old_end);
            p.vmas.insert(from, new_end, prot);
            if self.cfg.policy == PolicyKind::Eager {
                self.populate(asid, from, new_end, true, changes)?;
            }
        } else if new_end < old_end {
            self.unmap_pages(asid, new_end, old_end, changes);
            self.procs[asid as usize]
                .vmas
                .remove_range(new_end, old_end);
        }
        Ok(())
    }

    /// `mprotect`: translations whose writability changes are re-installed (Unmap + Map).
    pub fn mprotect(
        &mut self,
        asid: Asid,
        addr: Vaddr,
        len: u64,
        prot_bits: u32,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        let (start, end) = self.check_range(addr, len, "mprotect")?;
        // A reservation's pages must share one protection to be promoted together.
        self.break_reservations(asid, Vpn(start >> 12), (end - start) >> 12);
        let any = prot::READ | prot::WRITE | prot::EXEC;
        let downgrade = self.procs[asid as usize]
            .vmas
            .iter()
            .any(|v| v.start < end && v.end > start && v.prot & !prot_bits & any != 0);
        let covered = self.procs[asid as usize]
            .vmas
            .update_range(start, end, |v| v.prot = prot_bits);
        if covered != end - start {
            return Err(OsError(format!(
                "mprotect({addr}, {len}): part of the range is not mapped (ENOMEM)"
            )));
        }
        if prot_bits & (prot::READ | prot::WRITE | prot::EXEC) == 0 {
            self.unmap_pages(asid, start, end, changes);
            return Ok(());
        }
        let writable = prot_bits & prot::WRITE != 0;
        let (s, e) = (Vpn(start >> 12), Vpn(end >> 12));
        let proc_ = &mut self.procs[asid as usize];
        for m in proc_.pages.in_range(s, e) {
            // A permission removed (write, or execute, which a `Mapping` does not carry) must
            // reach the TLBs: the page is re-installed, so every cached entry is invalidated.
            if m.writable == writable && !downgrade {
                continue;
            }
            proc_.pages.remove(m);
            changes.push(MapChange::Unmap(asid, m));
            let inside = m.vpn >= s && m.vpn.0 + m.size.base_pages() <= e.0;
            if inside {
                let nm = Mapping { writable, ..m };
                proc_.pages.insert(nm);
                changes.push(MapChange::Map(asid, nm));
                continue;
            }
            for i in 0..m.size.base_pages() {
                let vpn = Vpn(m.vpn.0 + i);
                let w = if vpn >= s && vpn < e {
                    writable
                } else {
                    m.writable
                };
                let piece = Mapping {
                    vpn,
                    pfn: Pfn(m.pfn.0 + i),
                    size: PageSize::Size4K,
                    writable: w,
                };
                proc_.pages.insert(piece);
                changes.push(MapChange::Map(asid, piece));
            }
        }
        Ok(())
    }

    /// `madvise`: DONTNEED frees the range's pages; HUGEPAGE / NOHUGEPAGE mark it for THP.
    pub fn madvise(
        &mut self,
        asid: Asid,
        addr: Vaddr,
        len: u64,
        advice_value: u32,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        let (start, end) = self.check_range(addr, len, "madvise")?;
        match advice_value {
            advice::DONTNEED => self.unmap_pages(asid, start, end, changes),
            advice::HUGEPAGE | advice::NOHUGEPAGE => {
                let on = advice_value == advice::HUGEPAGE;
                self.procs[asid as usize]
                    .vmas
                    .update_range(start, end, |v| v.thp = Some(on));
            }
            _ => {} // other advice does not change what the model simulates
        }
        Ok(())
    }

    /// Process exit: every translation of `asid` is removed and its frames freed.
    pub fn exit(&mut self, asid: Asid, changes: &mut Vec<MapChange>) -> Result<(), OsError> {
        if let Some(p) = self.procs.get(asid as usize) {
            self.exited_va_gaps
                .add_address_space(&p.pages.mapped_runs());
        }
        self.unmap_pages(asid, 0, 1 << 57, changes);
        let p = &mut self.procs[asid as usize];
        p.vmas = VmaSet::default();
        p.heap_start = None;
        p.heap_end = 0;
        Ok(())
    }

    /// The oracle's question: is `m` the translation covering `vpn` in `asid`?
    /// Same as `translate(asid, vpn) == Some(*m)`, faster.
    #[inline(always)]
    pub fn maps(&self, asid: Asid, vpn: Vpn, m: &Mapping) -> bool {
        self.procs
            .get(asid as usize)
            .is_some_and(|p| p.pages.maps(vpn, m))
    }

    /// [`Os::maps`] for the oracle's check of every L1 TLB hit (see `PageMap::maps_recent`).
    #[inline(always)]
    pub fn maps_recent(&mut self, asid: Asid, vpn: Vpn, m: &Mapping) -> bool {
        self.procs
            .get_mut(asid as usize)
            .is_some_and(|p| p.pages.maps_recent(vpn, m))
    }

    /// The oracle for a translation known only at 4 KiB granularity (a range TLB's): whether
    /// the page mapped at `vpn` in `asid` gives `vpn` the frame and write permission that `m`
    /// (a page holding `vpn`, of any size) gives it. Weaker than [`Os::maps`], which also
    /// requires the page itself to match: use it only for entries that cannot know the page.
    pub fn maps_base(&self, asid: Asid, vpn: Vpn, m: &Mapping) -> bool {
        let frame_of = |p: &Mapping| p.pfn.0 + (vpn.0 - p.vpn.0);
        m.contains(vpn)
            && self
                .translate(asid, vpn)
                .is_some_and(|t| t.writable == m.writable && frame_of(&t) == frame_of(m))
    }

    /// The oracle: the translation covering `vpn` in `asid`, if any.
    #[inline]
    pub fn translate(&self, asid: Asid, vpn: Vpn) -> Option<Mapping> {
        self.procs.get(asid as usize)?.pages.get(vpn)
    }

    /// Prefetch (host caches) what `translate(asid, vpn)` will read.
    #[inline]
    pub fn prefetch(&self, asid: Asid, vpn: Vpn) {
        if let Some(p) = self.procs.get(asid as usize) {
            p.pages.prefetch(vpn);
        }
    }

    /// Demand paging: handle a fault on `va` under the configured policy; installs the new
    /// translation(s) (appended to `changes`) and returns the one covering `va`. `placer` is
    /// asked for the frames of each new page (the design's placement hook).
    pub fn fault_with(
        &mut self,
        asid: Asid,
        va: Vaddr,
        kind: AccessKind,
        changes: &mut Vec<MapChange>,
        placer: &mut dyn Placer,
    ) -> Result<Mapping, OsError> {
        if va.0 >= self.va_limit() {
            return Err(OsError(format!(
                "segmentation fault: address {va} is beyond {}",
                self.beyond_va_space()
            )));
        }
        let p = &self.procs[asid as usize];
        let Some(vma) = p.vmas.find(va.0).copied() else {
            let near = p
                .vmas
                .nearest(va.0)
                .map(|v| format!("{:#x}-{:#x}", v.start, v.end))
                .unwrap_or_else(|| "none".into());
            return Err(OsError(format!(
                "segmentation fault: address {va} is outside every VMA of process {} (nearest VMA: {near})",
                p.pid
            )));
        };
        let needed = match kind {
            AccessKind::Store => prot::WRITE,
            AccessKind::Load => prot::READ,
            AccessKind::IFetch => prot::EXEC,
        };
        if vma.prot & needed == 0 {
            return Err(OsError(format!(
                "protection violation: {kind:?} at {va} in VMA {:#x}-{:#x} with prot {:#x} (process {})",
                vma.start, vma.end, vma.prot, p.pid
            )));
        }
        if let Some(existing) = p.pages.get(va.vpn()) {
            if kind == AccessKind::Store && !existing.writable {
                return Err(OsError(format!(
                    "store to read-only page at {va} in a writable VMA (copy-on-write is not modeled)"
                )));
            }
            return Err(OsError(format!(
                "fault on {va}, which is already mapped as {existing:?}: the design failed to find it"
            )));
        }
        self.c.faults += 1;
        let writable = vma.prot & prot::WRITE != 0;
        if self.swap_on {
            self.keep_free_memory(changes);
        }
        let major = self.swap_on && self.swap.swap_in(asid, va.vpn());
        if self.hugetlb.on() && !major {
            if let Some(m) = self.fault_hugetlb(asid, va, &vma, writable, changes)? {
                return Ok(m);
            }
        }
        let m = match self.cfg.policy {
            // A major fault: the page comes back from the swap device as a base page.
            _ if major => self.fault_base(asid, va, writable, placer, changes),
            PolicyKind::Thp => self.fault_thp(asid, va, &vma, writable, placer, changes),
            PolicyKind::Mthp => self.fault_mthp(asid, va, &vma, writable, placer, changes),
            PolicyKind::Reservation => {
                self.fault_reservation(asid, va, &vma, writable, placer, changes)
            }
            // Eager paging mapped what it could at mmap time; what is left faults in 4 KiB.
            PolicyKind::Eager => self.fault_base(asid, va, writable, placer, changes),
            PolicyKind::Hawkeye => self.fault_thp(asid, va, &vma, writable, placer, changes),
            PolicyKind::Trident => self.fault_trident(asid, va, &vma, writable, placer, changes),
        }?;
        // Compaction during the fault may have moved pages (this one included).
        if self.apply_relocations(changes)? {
            return Ok(self.translate(asid, va.vpn()).unwrap_or(m));
        }
        Ok(m)
    }

    /// [`Os::fault_with`] with the OS policy choosing every frame (no placement hook).
    pub fn fault(
        &mut self,
        asid: Asid,
        va: Vaddr,
        kind: AccessKind,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        self.fault_with(asid, va, kind, changes, &mut OsPlacement)
    }

    /// The frames of a new page of `size` at `vpn`: the placement hook's choice, else a block
    /// from the buddy allocator.
    fn alloc_page(
        &mut self,
        asid: Asid,
        vpn: Vpn,
        size: PageSize,
        placer: &mut dyn Placer,
        changes: &mut Vec<MapChange>,
    ) -> Result<Pfn, OsError> {
        let req = PlaceRequest {
            asid,
            vpn,
            size,
            pages: &self.procs[asid as usize].pages,
        };
        if let Some(pfn) = placer.place(&mut self.phys, &req) {
            debug_assert_eq!(pfn.0 % size.base_pages(), 0, "placed frame misaligned");
            self.c.placed_by_design += 1;
            return Ok(pfn);
        }
        // Retries after a failed compaction that moved pages (bounded: compaction could keep
        // moving pages without ever freeing a block).
        let mut compaction_retries = 0;
        loop {
            match self.phys.alloc(size.order(), FrameUse::Data) {
                Ok(pfn) => {
                    // Compaction may have moved pages to make room: re-map them now, before
                    // another allocation could move the same blocks again.
                    self.apply_relocations(changes)?;
                    return Ok(pfn);
                }
                Err(e) => {
                    // A failed compaction may still have moved pages: re-map them first; then
                    // give up reservations, then reclaim to swap.
                    let moved = self.apply_relocations(changes)?;
                    compaction_retries += moved as u32;
                    if (moved && compaction_retries <= 4)
                        || self.release_reservations_for_memory()
                        || (self.swap_on && self.reclaim(self.cfg.swap.batch_pages, changes) > 0)
                    {
                        continue;
                    }
                    return Err(if self.swap_on {
                        OsError(format!(
                            "{e}; swap is full or holds nothing more to evict ({} of {} used)",
                            crate::addr::format_bytes(self.swap.used_pages * BASE_PAGE_BYTES),
                            crate::addr::format_bytes(self.cfg.swap.bytes)
                        ))
                    } else {
                        e
                    });
                }
            }
        }
    }

    /// Reclaim until `os.swap.min_free_bytes` are free (kswapd's watermark), so that page-table
    /// allocations made while a design installs a mapping find memory.
    fn keep_free_memory(&mut self, changes: &mut Vec<MapChange>) {
        while self.phys.free_bytes() < self.cfg.swap.min_free_bytes {
            if self.release_reservations_for_memory() {
                continue;
            }
            if self.reclaim(self.cfg.swap.batch_pages, changes) == 0 {
                break;
            }
        }
    }

    /// Evict up to `pages` base pages to swap, chosen by the clock; huge pages the hand picks
    /// are split first. Returns the pages evicted.
    fn reclaim(&mut self, pages: u64, changes: &mut Vec<MapChange>) -> u64 {
        self.swap.reclaims += 1;
        let mut evicted = 0;
        while evicted < pages && self.swap.used_pages * BASE_PAGE_BYTES < self.cfg.swap.bytes {
            let procs = &self.procs;
            let Some((asid, vpn)) = self
                .swap
                .victim(|a, v| procs[a as usize].pages.get(v).is_some_and(|m| m.vpn == v))
            else {
                break;
            };
            let m = self.procs[asid as usize]
                .pages
                .get(vpn)
                .expect("victim mapped");
            // The frame leaves its reservation's block.
            self.break_reservations(asid, vpn, m.size.base_pages());
            if m.size > PageSize::Size4K {
                self.swap.forget(asid, vpn);
                self.split(asid, m, PageSize::Size4K, changes)
                    .expect("4 KiB pieces of a mapped page");
            }
            let piece = self.procs[asid as usize].pages.get(vpn).expect("piece");
            self.swap.forget(asid, vpn);
            self.procs[asid as usize].pages.remove(piece);
            changes.push(MapChange::Unmap(asid, piece));
            self.phys.free(piece.pfn, 0, FrameUse::Data);
            self.swap.swap_out(asid, vpn);
            self.count_shootdowns(1);
            evicted += 1;
        }
        evicted
    }

    /// Re-map the pages that compaction moved since the last call (each relocation becomes
    /// Unmap + Map changes, a shootdown per translation and a cache invalidation of the old
    /// frames; the copy itself was charged by compaction). Called by the engine after every
    /// batch of changes (a design's page-table allocation may compact) and by the OS model at
    /// the end of its own operations. Returns whether anything moved.
    pub fn apply_relocations(&mut self, changes: &mut Vec<MapChange>) -> Result<bool, OsError> {
        let relocations = self.phys.take_relocations();
        for r in &relocations {
            let (asid, first) = (r.owner.asid, r.owner.vpn);
            let pages = 1u64 << r.order;
            let Some(p) = self.procs.get(asid as usize) else {
                return Err(OsError(format!(
                    "relocation of {r:?}: no such process (simulator bug)"
                )));
            };
            let old = p.pages.in_range(first, Vpn(first.0 + pages));
            let consistent = !old.is_empty()
                && old.iter().all(|m| {
                    m.vpn >= first
                        && m.vpn.0 + m.size.base_pages() <= first.0 + pages
                        && m.pfn.0 == r.from.0 + (m.vpn.0 - first.0)
                });
            if !consistent {
                return Err(OsError(format!(
                    "relocation of {r:?} does not match the page map {old:?} (simulator bug)"
                )));
            }
            // The frames leave their reservation's block.
            self.break_reservations(asid, first, pages);
            for m in old {
                self.procs[asid as usize].pages.remove(m);
                changes.push(MapChange::Unmap(asid, m));
                let nm = Mapping {
                    pfn: Pfn(r.to.0 + (m.vpn.0 - first.0)),
                    ..m
                };
                self.install(asid, nm, changes);
                self.count_shootdowns(1);
            }
            self.moved_frames.push((r.from, r.order));
            self.c.migrations += 1;
            self.c.bytes_copied += pages * BASE_PAGE_BYTES;
        }
        Ok(!relocations.is_empty())
    }

    /// An instruction fetch at `va` found its translation by a walk: the page must be
    /// executable (the NX check hardware makes at the walk; TLB entries cache it, and every
    /// protection downgrade invalidates them).
    pub fn check_fetch(&self, asid: Asid, va: Vaddr) -> Result<(), OsError> {
        let p = &self.procs[asid as usize];
        match p.vmas.find(va.0) {
            Some(v) if v.prot & prot::EXEC != 0 => Ok(()),
            Some(v) => Err(OsError(format!(
                "protection violation: IFetch at {va} in VMA {:#x}-{:#x} with prot {:#x} (process {})",
                v.start, v.end, v.prot, p.pid
            ))),
            None => Err(OsError(format!(
                "segmentation fault: instruction fetch at {va} outside every VMA of process {}",
                p.pid
            ))),
        }
    }

    /// Apply pending relocations; whether there were any (a failure to apply one is a
    /// simulator bug, kept for `apply_relocations`' callers to report).
    fn phys_relocated(&mut self, changes: &mut Vec<MapChange>) -> bool {
        self.apply_relocations(changes).unwrap_or(true)
    }

    /// The MMU walked to the page starting at `vpn` (sets its accessed bit for reclaim).
    #[inline]
    pub fn note_walk(&mut self, asid: Asid, m: &Mapping) {
        if self.swap_on {
            self.swap.referenced(asid, m.vpn);
        }
        if self.cfg.policy == PolicyKind::Hawkeye {
            self.hawkeye_touch(asid, m);
        }
    }

    /// Install `m` in the page map and report it.
    fn install(&mut self, asid: Asid, m: Mapping, changes: &mut Vec<MapChange>) {
        if self.swap_on {
            self.swap.track(asid, m.vpn);
        }
        // Owned data is movable: compaction may relocate it (see `apply_relocations`).
        // HugeTLB pool pages stay unowned: never moved.
        if !self.hugetlb.holds(m.pfn) {
            self.phys
                .set_owner(m.pfn, m.size.order(), DataOwner { asid, vpn: m.vpn });
        }
        self.procs[asid as usize].pages.insert(m);
        changes.push(MapChange::Map(asid, m));
    }

    /// Map the block of `size` at `vpn` -> `pfn` as pages of the largest size the design
    /// translates that fits (one page when it translates `size`).
    fn install_block(
        &mut self,
        asid: Asid,
        vpn: Vpn,
        pfn: Pfn,
        size: PageSize,
        writable: bool,
        changes: &mut Vec<MapChange>,
    ) {
        let piece = self
            .sizes
            .largest_at_most(size)
            .expect("every design translates 4 KiB");
        for i in 0..size.base_pages() / piece.base_pages() {
            let off = i * piece.base_pages();
            let m = Mapping {
                vpn: Vpn(vpn.0 + off),
                pfn: Pfn(pfn.0 + off),
                size: piece,
                writable,
            };
            self.install(asid, m, changes);
        }
    }

    /// A 4 KiB page at `va`.
    fn fault_base(
        &mut self,
        asid: Asid,
        va: Vaddr,
        writable: bool,
        placer: &mut dyn Placer,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        let pfn = self.alloc_page(asid, va.vpn(), PageSize::Size4K, placer, changes)?;
        let m = Mapping {
            vpn: va.vpn(),
            pfn,
            size: PageSize::Size4K,
            writable,
        };
        self.install(asid, m, changes);
        Ok(m)
    }

    /// Linux's THP fault path (`do_huge_pmd_anonymous_page`).
    fn fault_thp(
        &mut self,
        asid: Asid,
        va: Vaddr,
        vma: &vma::Vma,
        writable: bool,
        placer: &mut dyn Placer,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        let want_huge = self.sizes.contains(PageSize::Size2M)
            && match self.cfg.thp {
                ThpPolicy::Never => false,
                ThpPolicy::Always => vma.thp != Some(false),
                ThpPolicy::Madvise => {
                    if vma.thp != Some(true) {
                        self.c.fallback_not_advised += 1;
                    }
                    vma.thp == Some(true)
                }
            };
        if want_huge {
            let base = va.0 & !(PageSize::Size2M.bytes() - 1);
            let vpn = Vpn(base >> 12);
            if base < vma.start || base + PageSize::Size2M.bytes() > vma.end {
                self.c.fallback_unaligned += 1;
            } else if self.procs[asid as usize].pages.region_in_use(vpn) {
                self.c.fallback_partly_mapped += 1;
            } else if !self.phys.can_alloc(PageSize::Size2M.order()) {
                self.c.fallback_no_block += 1;
            } else if !placer.allows_huge(asid, vpn) {
                // The design refused it (Elastic Translations' offline Leshy hints).
            } else {
                let pfn = self.alloc_page(asid, vpn, PageSize::Size2M, placer, changes)?;
                self.c.faults_2m += 1;
                let m = Mapping {
                    vpn,
                    pfn,
                    size: PageSize::Size2M,
                    writable,
                };
                self.install(asid, m, changes);
                return Ok(m);
            }
        }
        self.fault_base(asid, va, writable, placer, changes)
    }

    /// Multi-size THP: the first enabled size whose aligned range fits the VMA, is unmapped
    /// and has a free block; the whole folio is mapped at once (as Linux does).
    fn fault_mthp(
        &mut self,
        asid: Asid,
        va: Vaddr,
        vma: &vma::Vma,
        writable: bool,
        placer: &mut dyn Placer,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        for i in 0..self.cfg.mthp.sizes.len() {
            let size = self.cfg.mthp.sizes[i];
            if size == PageSize::Size4K {
                break;
            }
            let first = va.vpn().align_down(size);
            let (lo, hi) = (first.addr().0, first.addr().0 + size.bytes());
            if lo < vma.start || hi > vma.end {
                self.c.fallback_unaligned += 1;
                continue;
            }
            if self.procs[asid as usize]
                .pages
                .range_in_use(first, size.base_pages())
            {
                self.c.fallback_partly_mapped += 1;
                continue;
            }
            if !self.phys.can_alloc(size.order()) {
                self.c.fallback_no_block += 1;
                continue;
            }
            let pfn = self.alloc_page(asid, first, size, placer, changes)?;
            self.c.mthp_faults[size.order() as usize] += 1;
            if size == PageSize::Size2M {
                self.c.faults_2m += 1;
            }
            self.install_block(asid, first, pfn, size, writable, changes);
            return Ok(self.procs[asid as usize]
                .pages
                .get(va.vpn())
                .expect("just mapped"));
        }
        self.fault_base(asid, va, writable, placer, changes)
    }

    /// Reservation-based paging: map the base page from the reservation covering `va` (making
    /// one at the region's first fault), then promote in place as far as the threshold allows.
    fn fault_reservation(
        &mut self,
        asid: Asid,
        va: Vaddr,
        vma: &vma::Vma,
        writable: bool,
        placer: &mut dyn Placer,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        let vpn = va.vpn();
        let covered = self.procs[asid as usize]
            .reservations
            .covering(vpn)
            .is_some();
        if !covered && !self.reserve(asid, vpn, vma) {
            return self.fault_base(asid, va, writable, placer, changes);
        }
        let r = self.procs[asid as usize]
            .reservations
            .covering(vpn)
            .expect("reservation covers the fault");
        let (first, order) = (r.vpn, r.order);
        let m = Mapping {
            vpn,
            pfn: r.frame_of(vpn),
            size: PageSize::Size4K,
            writable,
        };
        r.mark(vpn);
        self.phys
            .transfer(BASE_PAGE_BYTES, FrameUse::Reserved, FrameUse::Data);
        self.install(asid, m, changes);
        self.promote(asid, first, order, vpn, vma, changes);
        Ok(self.procs[asid as usize]
            .pages
            .get(vpn)
            .expect("just mapped"))
    }

    /// Make a reservation for the region around `vpn` (the rule's target size, falling back to
    /// smaller ones when no block is free). Returns whether one was made.
    fn reserve(&mut self, asid: Asid, vpn: Vpn, vma: &vma::Vma) -> bool {
        let max = PageSize::from_bytes(self.cfg.reservation.max_bytes)
            .expect("validated")
            .order();
        let p = &self.procs[asid as usize];
        // The largest aligned block around the fault that the rule allows for the VMA, not
        // overlapping mappings or other reservations.
        let target = (1..=max).rev().find(|&order| {
            let first = vpn.0 & !((1u64 << order) - 1);
            self.block_fits(asid, vma, Vpn(first), order)
                && !p.reservations.overlaps(Vpn(first), 1 << order)
                && !p.pages.range_in_use(Vpn(first), 1 << order)
        });
        let Some(target) = target else {
            return false;
        };
        // Fragmentation: fall back to the largest smaller block that is free.
        let Some(order) = (1..=target).rev().find(|o| self.phys.can_alloc(*o)) else {
            return false;
        };
        let Ok(pfn) = self.phys.alloc(order, FrameUse::Reserved) else {
            return false;
        };
        let first = Vpn(vpn.0 & !((1u64 << order) - 1));
        self.c.reservations_made += 1;
        self.procs[asid as usize]
            .reservations
            .insert(Reservation::new(first, pfn, order));
        true
    }

    /// Whether the aligned block of `2^order` pages at `first` may be reserved (and mapped as
    /// one page) for `vma` under `os.reservation.rule`: inside the VMA (`exact`), or starting
    /// inside it and reaching at most the VMA's size rounded up to a power of two past its start,
    /// over no other VMA (`next_pow2`).
    fn block_fits(&self, asid: Asid, vma: &vma::Vma, first: Vpn, order: u8) -> bool {
        let (lo, hi) = (first.addr().0, first.addr().0 + (BASE_PAGE_BYTES << order));
        if lo < vma.start {
            return false;
        }
        if hi <= vma.end {
            return true;
        }
        match self.cfg.reservation.rule {
            ReservationRule::Exact => false,
            ReservationRule::NextPow2 => {
                let rounded = (vma.end - vma.start).next_power_of_two();
                hi - lo <= rounded
                    && !self.procs[asid as usize]
                        .vmas
                        .iter()
                        .any(|v| v.start < hi && v.end > lo && v.start != vma.start)
            }
        }
    }

    /// Promote the reservation at `first` around `vpn` to the largest page the design
    /// translates whose touched share reaches the threshold (in place: the frames are already
    /// the aligned block). Untouched pages it maps are counted as bloat.
    fn promote(
        &mut self,
        asid: Asid,
        first: Vpn,
        order: u8,
        vpn: Vpn,
        vma: &vma::Vma,
        changes: &mut Vec<MapChange>,
    ) {
        let threshold = self.cfg.reservation.promotion_threshold;
        // Per level: may the block be one page, and how many of its pages lie in the VMA (the
        // threshold counts those: pages past the VMA's end are never touched).
        let mut fits = [false; PageSize::MAX_ORDER as usize + 1];
        let mut inside = [0u64; PageSize::MAX_ORDER as usize + 1];
        for k in 0..=order {
            let block = Vpn(vpn.0 & !((1u64 << k) - 1));
            fits[k as usize] = self.block_fits(asid, vma, block, k);
            let end = (block.0 + (1 << k)).min(vma.end >> 12);
            inside[k as usize] = end.saturating_sub(block.0);
        }
        let p = &mut self.procs[asid as usize];
        let current = p.pages.get(vpn).expect("mapped").size.order();
        let r = p.reservations.covering(vpn).expect("reservation");
        let Some(level) = (current + 1..=order).rev().find(|&k| {
            let size = PageSize::from_order(k).expect("order");
            self.sizes.contains(size)
                && fits[k as usize]
                && r.mapped_in(k, vpn) as f64 >= threshold * inside[k as usize] as f64
        }) else {
            return;
        };
        let size = PageSize::from_order(level).expect("order");
        let block = vpn.align_down(size);
        let old = p.pages.in_range(block, Vpn(block.0 + size.base_pages()));
        // Pages of one protection only (mprotect breaks reservations, so this holds).
        let writable = old[0].writable;
        let pfn = r.frame_of(block);
        // In place only: every page already on its reserved frame, with one protection.
        if old
            .iter()
            .any(|m| m.writable != writable || m.pfn.0 != pfn.0 + (m.vpn.0 - block.0))
        {
            return;
        }
        let mut bloat = 0;
        for v in block.0..block.0 + size.base_pages() {
            if r.mark(Vpn(v)) {
                bloat += 1;
            }
        }
        let done = r.mapped() == r.pages() && level == order;
        for m in &old {
            debug_assert_eq!(
                m.pfn.0,
                pfn.0 + (m.vpn.0 - block.0),
                "not the reserved frames"
            );
            p.pages.remove(*m);
            changes.push(MapChange::Unmap(asid, *m));
        }
        if done {
            p.reservations.remove(first);
        }
        self.phys
            .transfer(bloat * BASE_PAGE_BYTES, FrameUse::Reserved, FrameUse::Data);
        self.c.promotions += 1;
        self.c.promotion_bloat_bytes += bloat * BASE_PAGE_BYTES;
        self.count_shootdowns(old.len() as u64);
        self.install(
            asid,
            Mapping {
                vpn: block,
                pfn,
                size,
                writable,
            },
            changes,
        );
    }

    /// Break the reservations overlapping `pages` pages from `start`: their unmapped frames go
    /// back to the allocator (mapped pages stay as they are).
    fn break_reservations(&mut self, asid: Asid, start: Vpn, pages: u64) {
        let p = &mut self.procs[asid as usize];
        if p.reservations.is_empty() {
            return;
        }
        for r in p.reservations.take_overlapping(start, pages) {
            self.c.reservations_broken += 1;
            for (pfn, order) in r.unmapped_blocks() {
                self.phys.free(pfn, order, FrameUse::Reserved);
            }
        }
    }

    /// Memory pressure: break every reservation to free its unmapped frames. Returns whether
    /// any frame was freed.
    fn release_reservations_for_memory(&mut self) -> bool {
        let mut freed = false;
        for p in &mut self.procs {
            for r in p.reservations.take_all() {
                self.c.reservations_released_for_memory += 1;
                for (pfn, order) in r.unmapped_blocks() {
                    self.phys.free(pfn, order, FrameUse::Reserved);
                    freed = true;
                }
            }
        }
        freed
    }

    /// Eager paging: map `[start, end)` now, in the largest aligned pages the design translates
    /// (smaller ones where no block of that size is free).
    fn populate(
        &mut self,
        asid: Asid,
        start: u64,
        end: u64,
        writable: bool,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        let mut va = start;
        while va < end {
            let vpn = Vpn(va >> 12);
            // Pages already there (a brk over an older mapping, say) stay as they are.
            let pages = &self.procs[asid as usize].pages;
            let fits: Vec<PageSize> = self
                .sizes
                .iter()
                .filter(|z| {
                    va.is_multiple_of(z.bytes())
                        && va + z.bytes() <= end
                        && !pages.range_in_use(vpn, z.base_pages())
                })
                .collect();
            let Some(&smallest) = fits.first() else {
                va += BASE_PAGE_BYTES;
                continue;
            };
            let size = fits
                .iter()
                .rev()
                .find(|z| self.phys.can_alloc(z.order()))
                .copied()
                .unwrap_or(smallest);
            let pfn = self.alloc_page(asid, vpn, size, &mut OsPlacement, changes)?;
            self.install(
                asid,
                Mapping {
                    vpn,
                    pfn,
                    size,
                    writable,
                },
                changes,
            );
            self.c.eager_bytes += size.bytes();
            va += size.bytes();
        }
        Ok(())
    }

    /// Tell the model which page sizes the design translates (`Design::page_sizes`); checks
    /// that the configured policy can run with them.
    pub fn set_page_sizes(&mut self, sizes: PageSizeSet) -> Result<(), OsError> {
        if !sizes.contains(PageSize::Size4K) {
            return Err(OsError("the design does not translate 4 KiB pages".into()));
        }
        if (self.cfg.khugepaged.enabled || self.cfg.policy == PolicyKind::Hawkeye)
            && !sizes.contains(PageSize::Size2M)
        {
            let what = if self.cfg.khugepaged.enabled {
                "os.khugepaged.enabled"
            } else {
                "os.policy = \"hawkeye\""
            };
            return Err(OsError(format!(
                "{what} needs a design that translates 2 MiB pages"
            )));
        }
        self.sizes = sizes;
        Ok(())
    }

    /// The sizes the model may map (see [`Os::set_page_sizes`]).
    pub fn page_sizes(&self) -> PageSizeSet {
        self.sizes
    }

    fn count_shootdowns(&mut self, n: u64) {
        self.c.shootdowns += n;
        self.c.migration_cycles += n * self.cfg.migration.shootdown_cycles;
    }

    /// Count the copy of `pages` base pages to new frames (a collapse or promotion by copy, a
    /// migration): bytes copied and copy cycles. Returns the bytes.
    fn count_copy(&mut self, pages: u64) -> u64 {
        let bytes = pages * BASE_PAGE_BYTES;
        self.c.bytes_copied += bytes;
        self.c.migration_cycles += pages * self.cfg.migration.copy_cycles_per_4k;
        bytes
    }

    /// Unmap the pages `old` of `asid` that a promotion replaces, with one shootdown each. With
    /// `in_place` their frames become part of the new page; otherwise they are freed and
    /// recorded as moved (the caller counts the copy).
    fn unmap_for_promotion(
        &mut self,
        asid: Asid,
        old: &[Mapping],
        in_place: bool,
        changes: &mut Vec<MapChange>,
    ) {
        let p = &mut self.procs[asid as usize];
        for m in old {
            p.pages.remove(*m);
            changes.push(MapChange::Unmap(asid, *m));
            if !in_place {
                self.phys.free(m.pfn, m.size.order(), FrameUse::Data);
                self.moved_frames.push((m.pfn, m.size.order()));
            }
        }
        self.count_shootdowns(old.len() as u64);
    }

    /// Frames whose contents were copied away since the last call (first frame, order): the
    /// engine drops their lines from the data caches.
    pub fn take_moved_frames(&mut self) -> Vec<(Pfn, u8)> {
        std::mem::take(&mut self.moved_frames)
    }

    /// The OS-model work so far that a fault's latency is measured by (allocation work:
    /// zeroing and direct compaction; copies, shootdowns, daemons, swap): the engine takes it
    /// before and after a fault (see [`fault_latency`]).
    #[inline]
    pub fn fault_cost_mark(&self) -> u64 {
        self.phys.alloc_work_cycles() + self.extra_os_cycles()
    }

    /// Count one fault of `cycles` in `os.fault_latency` (see [`fault_latency`]).
    #[inline]
    pub fn record_fault_latency(&mut self, cycles: u64) {
        self.fault_latency.record(cycles);
    }

    /// OS cycles of background work and page moves so far (beyond fault handling).
    pub fn extra_os_cycles(&self) -> u64 {
        self.c.daemon_cycles
            + self.c.migration_cycles
            + self.swap.swap_ins * self.cfg.swap.swap_in_cycles
            + self.swap.swap_outs * self.cfg.swap.swap_out_cycles
    }

    /// The OS settings (e.g. the migration costs a design's own OS work follows).
    pub fn config(&self) -> &OsConfig {
        &self.cfg
    }

    /// Whether any background daemon runs (the engine then calls [`Os::tick`]).
    pub fn has_daemons(&self) -> bool {
        self.cfg.khugepaged.enabled
            || self.cfg.kcompactd.enabled
            || self.cfg.policy == PolicyKind::Hawkeye
            || (self.cfg.policy == PolicyKind::Trident && self.cfg.trident.daemon)
    }

    /// Run the daemons due at simulated cycle `now_cycles`; mapping changes go to `changes`.
    pub fn tick(&mut self, now_cycles: u64, changes: &mut Vec<MapChange>) -> Result<(), OsError> {
        while self.cfg.khugepaged.enabled && now_cycles >= self.khugepaged_next {
            self.khugepaged_next += self.cfg.khugepaged.interval_cycles;
            self.khugepaged_scan(changes);
        }
        while self.cfg.kcompactd.enabled && now_cycles >= self.kcompactd_next {
            self.kcompactd_next += self.cfg.kcompactd.interval_cycles;
            self.c.kcompactd_wakeups += 1;
            let k = &self.cfg.kcompactd;
            self.c.daemon_cycles += self.phys.compact_background(k.order, k.max_pages);
        }
        if self.cfg.policy == PolicyKind::Hawkeye {
            self.hawkeye_tick(now_cycles, changes);
        }
        if self.cfg.policy == PolicyKind::Trident && self.cfg.trident.daemon {
            self.trident_tick(now_cycles, changes);
        }
        self.apply_relocations(changes).map(|_| ())
    }

    /// One khugepaged wake-up: scan up to `pages_to_scan` pages in 2 MiB ranges (resuming
    /// where the last wake-up stopped) and collapse each eligible range.
    fn khugepaged_scan(&mut self, changes: &mut Vec<MapChange>) {
        self.c.khugepaged_wakeups += 1;
        let huge = PageSize::Size2M.bytes();
        let mut budget = self.cfg.khugepaged.pages_to_scan;
        let mut laps = 0;
        while budget >= 512 && !self.procs.is_empty() {
            let (pi, addr) = self.khugepaged_cursor;
            if pi >= self.procs.len() {
                self.khugepaged_cursor = (0, 0);
                laps += 1;
                if laps > 1 {
                    return; // nothing left to scan anywhere
                }
                continue;
            }
            // The next 2 MiB range at or after `addr` that lies inside a VMA.
            let next = self.procs[pi]
                .vmas
                .iter()
                .filter(|v| v.end >= addr.next_multiple_of(huge) + huge)
                .find_map(|v| {
                    let lo = v.start.max(addr).next_multiple_of(huge);
                    (lo + huge <= v.end).then_some(lo)
                });
            let Some(lo) = next else {
                self.khugepaged_cursor = (pi + 1, 0);
                continue;
            };
            self.khugepaged_cursor = (pi, lo + huge);
            budget -= 512;
            self.c.khugepaged_pages_scanned += 512;
            self.c.daemon_cycles += 512 * self.cfg.khugepaged.scan_cycles_per_page;
            self.try_collapse(pi as Asid, Vpn(lo >> 12), changes);
        }
    }

    /// Collapse the 2 MiB range at `first` into one 2 MiB page if it has at most
    /// `max_ptes_none` unmapped pages, no page of 2 MiB or more, and one protection: in place
    /// when its frames already form the aligned block (holes allocated), else into a new block
    /// (allocate, copy the mapped pages, free the old frames).
    fn try_collapse(&mut self, asid: Asid, first: Vpn, changes: &mut Vec<MapChange>) {
        let p = &self.procs[asid as usize];
        let old = p.pages.in_range(first, Vpn(first.0 + 512));
        if old.is_empty() || old.iter().any(|m| m.size >= PageSize::Size2M) {
            return;
        }
        let mapped: u64 = old.iter().map(|m| m.size.base_pages()).sum();
        if 512 - mapped > self.cfg.khugepaged.max_ptes_none as u64 {
            return;
        }
        let writable = old[0].writable;
        if old.iter().any(|m| m.writable != writable) {
            return;
        }
        if p.reservations.overlaps(first, 512) {
            return; // the reservation promotes it itself
        }
        if self.hugetlb_holds_any(&old) {
            return; // HugeTLB pool pages are never collapsed
        }
        // In place: every page at block + offset, and every hole's frame free.
        let base = old[0].pfn.0.wrapping_sub(old[0].vpn.0 - first.0);
        let aligned = base.is_multiple_of(512)
            && old
                .iter()
                .all(|m| m.pfn.0 == base.wrapping_add(m.vpn.0 - first.0));
        let mut holes: Vec<Pfn> = Vec::new();
        let mut in_place = aligned;
        if aligned {
            let mut v = first.0;
            for m in &old {
                while v < m.vpn.0 {
                    holes.push(Pfn(base + (v - first.0)));
                    v += 1;
                }
                v = m.vpn.0 + m.size.base_pages();
            }
            while v < first.0 + 512 {
                holes.push(Pfn(base + (v - first.0)));
                v += 1;
            }
            let mut taken = Vec::new();
            for h in &holes {
                match self.phys.alloc_at(*h, 0, FrameUse::Data) {
                    Some(_) => taken.push(*h),
                    None => {
                        in_place = false;
                        break;
                    }
                }
            }
            if !in_place {
                for h in taken {
                    self.phys.free(h, 0, FrameUse::Data);
                }
            }
        }
        let pfn = if in_place {
            self.c.collapses_in_place += 1;
            Pfn(base)
        } else {
            let Ok(pfn) = self.phys.alloc(PageSize::Size2M.order(), FrameUse::Data) else {
                self.c.collapse_no_block += 1;
                return;
            };
            if self.phys_relocated(changes) {
                // Compaction moved pages, possibly of this range: collapse it another time.
                self.phys
                    .free(pfn, PageSize::Size2M.order(), FrameUse::Data);
                return;
            }
            self.count_copy(mapped);
            pfn
        };
        self.unmap_for_promotion(asid, &old, in_place, changes);
        self.c.collapses += 1;
        self.install(
            asid,
            Mapping {
                vpn: first,
                pfn,
                size: PageSize::Size2M,
                writable,
            },
            changes,
        );
    }

    /// Move the page `m` of `asid` to the block at `to` (allocated by the caller for
    /// [`FrameUse::Data`]); the old frames are freed, their contents counted as copied.
    pub fn migrate(
        &mut self,
        asid: Asid,
        m: Mapping,
        to: Pfn,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        let nm = self.relocate("migrate", asid, m, to, changes)?;
        self.moved_frames.push((m.pfn, m.size.order()));
        self.c.migrations += 1;
        self.count_copy(m.size.base_pages());
        Ok(nm)
    }

    /// Move the page `m` of `asid`, installed by the fault being handled and not accessed
    /// yet (zero-filled, so nothing is copied), to the block at `to` (allocated by the caller
    /// for [`FrameUse::Data`]); the old frames are freed. Counted as a shootdown, not as a
    /// migration: a placement decided right after the fault (Utopia's eviction on a full
    /// set, whose new page the paper allocates in the slot directly).
    pub fn move_fresh_page(
        &mut self,
        asid: Asid,
        m: Mapping,
        to: Pfn,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        self.relocate("move_fresh_page", asid, m, to, changes)
    }

    /// What every move of a mapped page does: unmap it (leaving its reservation, as
    /// docs/os-model.md says), free its frames, shoot it down, map it at `to`. `what` names
    /// the caller in the error for a page that is not mapped.
    fn relocate(
        &mut self,
        what: &str,
        asid: Asid,
        m: Mapping,
        to: Pfn,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        let p = &mut self.procs[asid as usize];
        if p.pages.get(m.vpn) != Some(m) {
            return Err(OsError(format!(
                "{what}: {m:?} is not mapped in ASID {asid}"
            )));
        }
        p.pages.remove(m);
        changes.push(MapChange::Unmap(asid, m));
        self.break_reservations(asid, m.vpn, m.size.base_pages());
        self.hugetlb.release(&mut self.phys, m.pfn, m.size.order());
        self.count_shootdowns(1);
        let nm = Mapping { pfn: to, ..m };
        self.install(asid, nm, changes);
        Ok(nm)
    }

    /// Split the page `m` of `asid` into pages of `into` over the same frames (no copy).
    pub fn split(
        &mut self,
        asid: Asid,
        m: Mapping,
        into: PageSize,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        let p = &mut self.procs[asid as usize];
        if p.pages.get(m.vpn) != Some(m) || into >= m.size || !self.sizes.contains(into) {
            return Err(OsError(format!(
                "split: cannot split {m:?} of ASID {asid} into {into} pages"
            )));
        }
        p.pages.remove(m);
        changes.push(MapChange::Unmap(asid, m));
        self.c.splits += 1;
        self.count_shootdowns(1);
        for i in 0..m.size.base_pages() / into.base_pages() {
            let off = i * into.base_pages();
            let piece = Mapping {
                vpn: Vpn(m.vpn.0 + off),
                pfn: Pfn(m.pfn.0 + off),
                size: into,
                writable: m.writable,
            };
            self.install(asid, piece, changes);
        }
        Ok(())
    }

    /// Write the `os` section of the result record.
    pub fn stats(&self, out: &mut Stats) {
        let s = out.section("os");
        let c = &self.c;
        s.put_u64("page_faults", c.faults);
        s.put_u64("faults_2m", c.faults_2m);
        s.put_u64(
            "thp_fallbacks",
            c.fallback_unaligned + c.fallback_partly_mapped + c.fallback_no_block,
        );
        s.put_u64("thp_fallback_unaligned", c.fallback_unaligned);
        s.put_u64("thp_fallback_partly_mapped", c.fallback_partly_mapped);
        s.put_u64("thp_fallback_no_block", c.fallback_no_block);
        s.put_u64("thp_fallback_not_advised", c.fallback_not_advised);
        s.put_u64("data_bytes", self.phys.bytes_in_use(FrameUse::Data));
        s.put_u64("data_peak_bytes", self.phys.peak_bytes(FrameUse::Data));
        s.put_u64(
            "page_table_bytes",
            self.phys.bytes_in_use(FrameUse::PageTable),
        );
        s.put_u64(
            "page_table_peak_bytes",
            self.phys.peak_bytes(FrameUse::PageTable),
        );
        s.put_u64("pinned_bytes", self.phys.pinned_bytes());
        s.put_u64("phys_mem_bytes", self.phys.total_bytes());
        s.put_f64("fmfi_target", self.cfg.fmfi_target);
        s.put_u64("fmfi_order", self.cfg.fmfi_order as u64);
        s.put_f64("fmfi_before", self.fmfi_before);
        s.put_f64("fmfi_end", self.phys.fmfi(self.cfg.fmfi_order));
        s.insert(
            "free_blocks_before".into(),
            self.free_blocks_before.to_vec().into(),
        );
        s.insert(
            "free_blocks_end".into(),
            self.phys.free_blocks().to_vec().into(),
        );
        s.put_str(
            "thp",
            match self.cfg.thp {
                ThpPolicy::Never => "never",
                ThpPolicy::Madvise => "madvise",
                ThpPolicy::Always => "always",
            },
        );
        s.put_u64("processes", self.procs.len() as u64);
        s.put_u64("vmas", self.procs.iter().map(|p| p.vmas.len() as u64).sum());
        let (m4k, m2m) = self
            .procs
            .iter()
            .map(|p| p.pages.counts())
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        s.put_u64("mapped_4k", m4k);
        s.put_u64("mapped_2m", m2m);
        self.phys.compaction_stats_into(s);
        // The page-size distribution: mapped bytes per size, every size that has a page.
        let mut by_order = [0u64; PageSize::MAX_ORDER as usize + 1];
        for p in &self.procs {
            for (o, n) in p.pages.pages_by_order().iter().enumerate() {
                by_order[o] += n;
            }
        }
        let mut dist = Stats::new();
        for (o, n) in by_order.iter().enumerate() {
            if *n > 0 {
                let size = PageSize::from_order(o as u8).expect("order");
                dist.put_u64(&size.label(), n * size.bytes());
            }
        }
        s.insert(
            "mapped_bytes_by_size".into(),
            serde_json::Value::Object(dist),
        );
        // Address-space regularity (LVM §3.1): each process's page map when it exited, or at
        // the end of the run.
        let mut gaps = self.exited_va_gaps.clone();
        for p in &self.procs {
            gaps.add_address_space(&p.pages.mapped_runs());
        }
        s.insert("va_gaps".into(), serde_json::Value::Object(gaps.stats()));
        s.put_str("policy", self.cfg.policy.name());
        if self.fault_latency.count() > 0 {
            self.fault_latency.stats_into(s);
        }
        self.hugetlb.stats_into(s);
        s.put_u64("reserved_bytes", self.phys.bytes_in_use(FrameUse::Reserved));
        let c = &self.c;
        s.put_u64("placed_by_design", c.placed_by_design);
        if self.cfg.policy == PolicyKind::Mthp {
            let mut f = Stats::new();
            for (o, n) in c.mthp_faults.iter().enumerate() {
                if *n > 0 {
                    f.put_u64(&PageSize::from_order(o as u8).expect("order").label(), *n);
                }
            }
            s.insert("mthp_faults".into(), serde_json::Value::Object(f));
        }
        if self.cfg.policy == PolicyKind::Reservation {
            s.put_u64("reservations", c.reservations_made);
            s.put_u64("reservations_broken", c.reservations_broken);
            s.put_u64(
                "reservations_released_for_memory",
                c.reservations_released_for_memory,
            );
            s.put_u64("promotions", c.promotions);
            s.put_u64("promotion_bloat_bytes", c.promotion_bloat_bytes);
        }
        if self.cfg.policy == PolicyKind::Eager {
            s.put_u64("eager_bytes", c.eager_bytes);
        }
        if self.cfg.policy == PolicyKind::Hawkeye {
            self.hawkeye.stats_into(s);
        }
        if self.cfg.policy == PolicyKind::Trident {
            self.trident.stats_into(s);
        }
        if self.cfg.kcompactd.enabled {
            s.put_u64("kcompactd_wakeups", c.kcompactd_wakeups);
        }
        if self.cfg.khugepaged.enabled {
            let k = s.section("khugepaged");
            k.put_u64("wakeups", c.khugepaged_wakeups);
            k.put_u64("pages_scanned", c.khugepaged_pages_scanned);
            k.put_u64("collapses", c.collapses);
            k.put_u64("collapses_in_place", c.collapses_in_place);
            k.put_u64("collapse_no_block", c.collapse_no_block);
        }
        s.put_u64("migrations", c.migrations);
        s.put_u64("splits", c.splits);
        s.put_u64("shootdowns", c.shootdowns);
        s.put_u64("bytes_copied", c.bytes_copied);
        s.put_u64("daemon_cycles", c.daemon_cycles);
        s.put_u64("migration_cycles", c.migration_cycles);
        if self.swap_on {
            let w = s.section("swap");
            w.put_u64("bytes", self.cfg.swap.bytes);
            w.put_u64("used_bytes", self.swap.used_pages * BASE_PAGE_BYTES);
            w.put_u64("swap_outs", self.swap.swap_outs);
            w.put_u64("swap_ins", self.swap.swap_ins);
            w.put_u64("major_faults", self.swap.swap_ins);
            w.put_u64("reclaims", self.swap.reclaims);
            w.put_u64("reclaim_scans", self.swap.scanned);
        }
    }
}

#[cfg(test)]
mod tests;
