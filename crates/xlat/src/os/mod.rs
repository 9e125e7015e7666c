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
//! - Demand paging: the first touch of a page faults; THP (`os.thp`) maps a 2 MiB page at fault
//!   time when the aligned 2 MiB range lies inside the VMA, none of it is mapped yet, and an
//!   order-9 block is free; otherwise a 4 KiB page.
//! - munmap / madvise(DONTNEED) / brk shrink / exit free the frames; a 2 MiB page that is only
//!   partly unmapped or re-protected is split into 4 KiB pages of the same frames.
//! - Before the run, free memory can be fragmented to a target FMFI (`os.fmfi_target`) by pinning
//!   one random 4 KiB frame in a random share of the 2^`fmfi_order`-frame blocks (scattered
//!   unmovable pages, as kernel allocations leave), or loaded from a `/proc/buddyinfo` snapshot.
//!
//! ## Configuration
//! `os.phys_mem_bytes` (64 GiB), `os.thp` (`never` | `madvise` | `always`), `os.fmfi_target`
//! (0 = unfragmented), `os.fmfi_order` (9), `os.buddyinfo` (path; "" = none),
//! `os.fragmenter.*` and `os.compaction.*` (see [`compaction`] and docs/os-model.md).
//!
//! ## Deviations and limits
//! No swap: running out of memory is an error naming the request. No compaction, khugepaged
//! promotion or migration yet. mprotect(PROT_NONE) drops the range's translations and frames
//! (re-touching faults in fresh frames). Copy-on-write and file-backed mappings are not modeled
//! (every mapping is private anonymous memory). A `buddyinfo` snapshot is laid out with every free
//! block next to a pinned buddy, so it needs up to twice its free memory.
//!
//! ## Stats (section `os`)
//! `page_faults`, `faults_2m`, `thp_fallbacks` and `thp_fallback_{unaligned,partly_mapped,
//! no_block,not_advised}`, `data_bytes`, `data_peak_bytes`, `page_table_bytes`,
//! `page_table_peak_bytes`, `pinned_bytes`, `phys_mem_bytes`, `fmfi_target`, `fmfi_order`,
//! `fmfi_before`, `fmfi_end`, `free_blocks_before`, `free_blocks_end` (19 counts, orders 0..18),
//! `thp`, `processes`, `vmas`, `mapped_4k`, `mapped_2m`, `filler_bytes`, `compaction.*`
//! (direct compactions, pages migrated, frames scanned, cycles; see [`compaction`]).
//!
//! ## References
//! Linux mm (buddy allocator, THP fault path `do_huge_pmd_anonymous_page`); Gorman & Whitcroft,
//! "The what, the why and the where to of anti-fragmentation" (FMFI); ME-HPT §III.

pub mod buddy;
pub mod compaction;
pub mod pagemap;
pub mod phys;
pub mod vma;

use buddy::ORDERS;
pub use compaction::{CompactionConfig, FragmenterConfig, FragmenterMode};
use pagemap::PageMap;
pub use phys::{DataOwner, FrameUse, PhysMem, Relocation};
use vma::VmaSet;

use crate::addr::{Asid, Mapping, PageSize, Pfn, Vaddr, Vpn, BASE_PAGE_BYTES};
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
    /// Fragmenter mix (`os.fragmenter.*`).
    pub fragmenter: FragmenterConfig,
    /// Allocation and compaction costs (`os.compaction.*`).
    pub compaction: CompactionConfig,
}

impl Default for OsConfig {
    fn default() -> Self {
        OsConfig {
            phys_mem_bytes: 64 << 30,
            thp: ThpPolicy::Never,
            fmfi_target: 0.0,
            fmfi_order: 9,
            buddyinfo: String::new(),
            fragmenter: FragmenterConfig::default(),
            compaction: CompactionConfig::default(),
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
        Ok(())
    }
}

/// An OS-model error (out of memory, access outside any VMA, bad system call), fit to show a user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OsError(pub String);

impl std::fmt::Display for OsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for OsError {}

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
}

fn page_round(len: u64) -> u64 {
    len.div_ceil(BASE_PAGE_BYTES) * BASE_PAGE_BYTES
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
        match cfg.fragmenter.mode {
            FragmenterMode::Pin if cfg.fmfi_target > 0.0 => {
                phys.fragment(cfg.fmfi_target, cfg.fmfi_order, seed)?;
            }
            FragmenterMode::Pin => {}
            FragmenterMode::Fill if !cfg.buddyinfo.is_empty() => {
                return Err(OsError(
                    "os.fragmenter.mode = \"fill\" cannot be combined with os.buddyinfo (the \
                     snapshot already fixes the free memory)"
                        .into(),
                ));
            }
            FragmenterMode::Fill => {
                phys.fragment_fill(cfg.fmfi_target, cfg.fmfi_order, &cfg.fragmenter, seed)?;
            }
        }
        Ok(Os {
            fmfi_before: phys.fmfi(cfg.fmfi_order),
            free_blocks_before: phys.free_blocks(),
            phys,
            cfg: cfg.clone(),
            procs: Vec::new(),
            c: OsCounters::default(),
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
        });
        (self.procs.len() - 1) as Asid
    }

    fn check_range(addr: Vaddr, len: u64, what: &str) -> Result<(u64, u64), OsError> {
        if !addr.0.is_multiple_of(BASE_PAGE_BYTES) {
            return Err(OsError(format!(
                "{what}: address {addr} is not page-aligned"
            )));
        }
        let end = addr
            .0
            .checked_add(page_round(len))
            .filter(|e| *e <= 1 << 57)
            .ok_or_else(|| {
                OsError(format!(
                    "{what}: range {addr} + {len} leaves the address space"
                ))
            })?;
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
        let (start, end) = Self::check_range(addr, len, "mmap")?;
        if len == 0 {
            return Err(OsError(format!("mmap at {addr}: zero length")));
        }
        self.unmap_pages(asid, start, end, changes);
        self.procs[asid as usize].vmas.insert(start, end, prot_bits);
        Ok(())
    }

    /// Remove and free every page in `[start, end)`, splitting 2 MiB pages at the edges.
    fn unmap_pages(&mut self, asid: Asid, start: u64, end: u64, changes: &mut Vec<MapChange>) {
        let (s, e) = (Vpn(start >> 12), Vpn(end >> 12));
        let proc_ = &mut self.procs[asid as usize];
        for m in proc_.pages.in_range(s, e) {
            proc_.pages.remove(m);
            changes.push(MapChange::Unmap(asid, m));
            let pages = m.size.base_pages();
            if m.vpn >= s && m.vpn.0 + pages <= e.0 {
                self.phys.free(m.pfn, m.size.order(), FrameUse::Data);
                continue;
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
                    self.phys.free(piece.pfn, 0, FrameUse::Data);
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
        let (start, end) = Self::check_range(addr, len, "munmap")?;
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
        let p = &mut self.procs[asid as usize];
        let start = *p.heap_start.get_or_insert(new_brk.0);
        if new_brk.0 < start {
            return Err(OsError(format!(
                "brk to {new_brk} below the heap start {:#x}",
                start
            )));
        }
        let old_end = p.heap_end.max(start);
        let new_end = page_round(new_brk.0);
        p.heap_end = new_end;
        if new_end > old_end {
            let prot = prot::READ | prot::WRITE;
            // Extend the heap area (merging is cosmetic; a second area is equivalent).
            p.vmas.insert(page_round(start).max(old_end), new_end, prot);
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
        let (start, end) = Self::check_range(addr, len, "mprotect")?;
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
            if m.writable == writable {
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
        let (start, end) = Self::check_range(addr, len, "madvise")?;
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

    /// Demand paging: handle a fault on `va`; installs and returns the new translation
    /// (also appended to `changes`).
    pub fn fault(
        &mut self,
        asid: Asid,
        va: Vaddr,
        kind: AccessKind,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
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
        let want_huge = match self.cfg.thp {
            ThpPolicy::Never => false,
            ThpPolicy::Always => vma.thp != Some(false),
            ThpPolicy::Madvise => {
                if vma.thp != Some(true) {
                    self.c.fallback_not_advised += 1;
                }
                vma.thp == Some(true)
            }
        };
        let m = if want_huge {
            let base = va.0 & !(PageSize::Size2M.bytes() - 1);
            let vpn = Vpn(base >> 12);
            if base < vma.start || base + PageSize::Size2M.bytes() > vma.end {
                self.c.fallback_unaligned += 1;
                None
            } else if p.pages.region_in_use(vpn) {
                self.c.fallback_partly_mapped += 1;
                None
            } else if !self.phys.can_alloc(PageSize::Size2M.order()) {
                self.c.fallback_no_block += 1;
                None
            } else {
                let pfn = self.phys.alloc(PageSize::Size2M.order(), FrameUse::Data)?;
                self.c.faults_2m += 1;
                Some(Mapping {
                    vpn,
                    pfn,
                    size: PageSize::Size2M,
                    writable,
                })
            }
        } else {
            None
        };
        let m = match m {
            Some(m) => m,
            None => {
                let pfn = self.phys.alloc(0, FrameUse::Data)?;
                Mapping {
                    vpn: va.vpn(),
                    pfn,
                    size: PageSize::Size4K,
                    writable,
                }
            }
        };
        self.procs[asid as usize].pages.insert(m);
        changes.push(MapChange::Map(asid, m));
        Ok(m)
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    const RW: u32 = prot::READ | prot::WRITE;

    fn os(thp: ThpPolicy) -> Os {
        let cfg = OsConfig {
            phys_mem_bytes: 1 << 30,
            thp,
            ..OsConfig::default()
        };
        let mut o = Os::new(&cfg, 1).unwrap();
        assert_eq!(o.process(1), 0);
        o
    }

    fn touch(os: &mut Os, va: u64, kind: AccessKind) -> Result<Mapping, OsError> {
        let mut ch = Vec::new();
        match os.translate(0, Vaddr(va).vpn()) {
            Some(m) => Ok(m),
            None => os.fault(0, Vaddr(va), kind, &mut ch),
        }
    }

    #[test]
    fn thp_always_gives_2m_pages_inside_the_vma_and_4k_at_unaligned_edges() {
        let mut o = os(ThpPolicy::Always);
        let a = o.process(1);
        // 0x20_1000 .. 0x60_1000: one whole aligned 2 MiB range (0x40_0000..0x60_0000) inside.
        o.mmap(a, Vaddr(0x20_1000), 0x40_0000, RW, 0x22, &mut Vec::new())
            .unwrap();
        assert_eq!(
            touch(&mut o, 0x40_1234, AccessKind::Store).unwrap().size,
            PageSize::Size2M
        );
        assert_eq!(
            touch(&mut o, 0x20_2000, AccessKind::Load).unwrap().size,
            PageSize::Size4K
        );
        assert_eq!(
            touch(&mut o, 0x60_0000, AccessKind::Load).unwrap().size,
            PageSize::Size4K
        );
        assert_eq!(o.c.faults_2m, 1);
        assert_eq!(o.c.fallback_unaligned, 2);
    }

    #[test]
    fn thp_never_and_madvise_without_advice_give_4k_pages() {
        for thp in [ThpPolicy::Never, ThpPolicy::Madvise] {
            let mut o = os(thp);
            o.mmap(0, Vaddr(0x4000_0000), 4 << 20, RW, 0x22, &mut Vec::new())
                .unwrap();
            assert_eq!(
                touch(&mut o, 0x4000_0000, AccessKind::Load).unwrap().size,
                PageSize::Size4K
            );
        }
        let mut o = os(ThpPolicy::Madvise);
        o.mmap(0, Vaddr(0x4000_0000), 4 << 20, RW, 0x22, &mut Vec::new())
            .unwrap();
        o.madvise(
            0,
            Vaddr(0x4000_0000),
            4 << 20,
            advice::HUGEPAGE,
            &mut Vec::new(),
        )
        .unwrap();
        assert_eq!(
            touch(&mut o, 0x4000_0000, AccessKind::Load).unwrap().size,
            PageSize::Size2M
        );
    }

    #[test]
    fn partly_unmapping_a_2m_page_keeps_the_rest_as_4k_pages_of_the_same_frames() {
        let mut o = os(ThpPolicy::Always);
        o.mmap(0, Vaddr(0x4000_0000), 2 << 20, RW, 0x22, &mut Vec::new())
            .unwrap();
        let huge = touch(&mut o, 0x4000_0000, AccessKind::Store).unwrap();
        let data_before = o.phys.bytes_in_use(FrameUse::Data);
        let mut ch = Vec::new();
        o.munmap(0, Vaddr(0x4000_0000), 0x1000, &mut ch).unwrap();
        assert_eq!(ch[0], MapChange::Unmap(0, huge));
        assert_eq!(ch.len(), 1 + 511);
        assert_eq!(o.translate(0, Vpn(0x40000)), None);
        let rest = o.translate(0, Vpn(0x40001)).unwrap();
        assert_eq!(
            (rest.size, rest.pfn),
            (PageSize::Size4K, Pfn(huge.pfn.0 + 1))
        );
        assert_eq!(o.phys.bytes_in_use(FrameUse::Data), data_before - 4096);
    }

    #[test]
    fn a_store_after_mprotect_read_only_is_a_protection_violation() {
        let mut o = os(ThpPolicy::Never);
        o.mmap(0, Vaddr(0x10000), 0x4000, RW, 0x22, &mut Vec::new())
            .unwrap();
        touch(&mut o, 0x10000, AccessKind::Store).unwrap();
        let mut ch = Vec::new();
        o.mprotect(0, Vaddr(0x10000), 0x4000, prot::READ, &mut ch)
            .unwrap();
        assert_eq!(ch.len(), 2, "the present page is re-installed read-only");
        assert!(!o.translate(0, Vpn(0x10)).unwrap().writable);
        let err = touch(&mut o, 0x11000, AccessKind::Store).unwrap_err();
        assert!(err.0.contains("protection violation"), "{err}");
    }

    #[test]
    fn a_fault_outside_every_vma_names_the_address() {
        let mut o = os(ThpPolicy::Never);
        o.mmap(0, Vaddr(0x10000), 0x1000, RW, 0x22, &mut Vec::new())
            .unwrap();
        let err = touch(&mut o, 0xdead_b000, AccessKind::Load).unwrap_err();
        assert!(
            err.0.contains("0xdeadb000") && err.0.contains("segmentation fault"),
            "{err}"
        );
    }

    #[test]
    fn running_out_of_memory_is_a_clear_error() {
        let cfg = OsConfig {
            phys_mem_bytes: 64 << 10,
            ..OsConfig::default()
        };
        let mut o = Os::new(&cfg, 1).unwrap();
        o.process(1);
        o.mmap(0, Vaddr(0x10000), 1 << 20, RW, 0x22, &mut Vec::new())
            .unwrap();
        let err = (0..32)
            .map(|i| touch(&mut o, 0x10000 + i * 4096, AccessKind::Load))
            .find_map(Result::err)
            .unwrap();
        assert!(err.0.contains("out of physical memory"), "{err}");
    }

    proptest! {
        /// Under random mmap / munmap / touch / mprotect / madvise sequences, the oracle agrees
        /// with a reference model rebuilt from the reported changes, and frames are conserved.
        #[test]
        fn translate_agrees_with_the_reported_changes(
            ops in prop::collection::vec((0u8..6, 0u64..64, 1u64..24), 1..150)
        ) {
            let mut o = os(ThpPolicy::Always);
            let mut model: HashMap<u64, Mapping> = HashMap::new();
            let base = 0x4000_0000u64;
            for (op, page, npages) in ops {
                let addr = base + page * (256 << 10);
                let len = npages * (128 << 10);
                let mut ch = Vec::new();
                match op {
                    0 => o.mmap(0, Vaddr(addr), len, RW, 0x22, &mut ch).unwrap(),
                    1 => o.munmap(0, Vaddr(addr), len, &mut ch).unwrap(),
                    2 | 3 => {
                        let va = addr + (npages * 4096) % len;
                        if o.translate(0, Vaddr(va).vpn()).is_none() {
                            let _ = o.fault(0, Vaddr(va), AccessKind::Load, &mut ch);
                        }
                    }
                    4 => { let _ = o.mprotect(0, Vaddr(addr), len, prot::READ, &mut ch); }
                    _ => o.madvise(0, Vaddr(addr), len, advice::DONTNEED, &mut ch).unwrap(),
                }
                for c in ch {
                    match c {
                        MapChange::Map(_, m) => { prop_assert!(model.insert(m.vpn.0, m).is_none()); }
                        MapChange::Unmap(_, m) => { prop_assert_eq!(model.remove(&m.vpn.0), Some(m)); }
                    }
                }
                for v in (base >> 12)..((base >> 12) + 4096) {
                    let want = model.values().find(|m| m.contains(Vpn(v))).copied();
                    prop_assert_eq!(o.translate(0, Vpn(v)), want);
                }
                let mapped: u64 = model.values().map(|m| m.size.bytes()).sum();
                prop_assert_eq!(o.phys.bytes_in_use(FrameUse::Data), mapped);
            }
        }
    }
}
