//! The OS memory-manager model: processes and their VMAs, demand paging, the buddy allocator
//! that every frame (data or page table) comes from, THP, and fragmentation.
//!
//! Contract: the OS model is the authority on mappings. [`Os::translate`] is the oracle every
//! design's translation is checked against; every change of a mapping is reported to the caller
//! as [`MapChange`]s so the design and the TLBs can follow.
//!
//! STUB: bump allocator, 4 KiB pages only; replaced by the full model.

use crate::addr::{Asid, Mapping, PageSize, Pfn, Vaddr, Vpn, BASE_PAGE_BYTES};
use crate::stats::{Stats, StatsExt};
use crate::trace::AccessKind;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

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
}

impl Default for OsConfig {
    fn default() -> Self {
        OsConfig {
            phys_mem_bytes: 64 << 30,
            thp: ThpPolicy::Never,
            fmfi_target: 0.0,
            fmfi_order: 9,
            buddyinfo: String::new(),
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

/// What a physical frame is used for (memory accounting).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameUse {
    /// Program data.
    Data,
    /// Page-table structures of the simulated design.
    PageTable,
}

/// A change of the authoritative mapping that designs and TLBs must follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapChange {
    /// A translation was removed (its frames are already freed).
    Unmap(Asid, Mapping),
    /// A translation was installed.
    Map(Asid, Mapping),
}

/// Physical memory: the buddy allocator all frames come from.
pub struct PhysMem {
    next: u64,
    total_pages: u64,
    in_use: [u64; 2],
    peak: [u64; 2],
}

impl PhysMem {
    /// All of `bytes` free.
    pub fn new(bytes: u64) -> Self {
        PhysMem {
            next: 0,
            total_pages: bytes / BASE_PAGE_BYTES,
            in_use: [0; 2],
            peak: [0; 2],
        }
    }

    /// Allocate a naturally aligned block of `2^order` frames.
    pub fn alloc(&mut self, order: u8, use_: FrameUse) -> Result<Pfn, OsError> {
        let n = 1u64 << order;
        let start = (self.next + n - 1) & !(n - 1);
        if start + n > self.total_pages {
            return Err(OsError(format!(
                "out of physical memory allocating order {order}"
            )));
        }
        self.next = start + n;
        let i = use_ as usize;
        self.in_use[i] += n * BASE_PAGE_BYTES;
        self.peak[i] = self.peak[i].max(self.in_use[i]);
        Ok(Pfn(start))
    }

    /// Return a block obtained from [`PhysMem::alloc`].
    pub fn free(&mut self, _pfn: Pfn, order: u8, use_: FrameUse) {
        self.in_use[use_ as usize] -= (1u64 << order) * BASE_PAGE_BYTES;
    }

    /// Bytes currently allocated for `use_`.
    pub fn bytes_in_use(&self, use_: FrameUse) -> u64 {
        self.in_use[use_ as usize]
    }
}

/// The OS model.
pub struct Os {
    /// Physical memory.
    pub phys: PhysMem,
    cfg: OsConfig,
    pids: Vec<u32>,
    vmas: Vec<Vec<(u64, u64, u32)>>,
    pages: HashMap<(Asid, u64), Mapping>,
    faults: u64,
}

impl Os {
    /// Boot the model: physical memory, fragmentation as configured.
    pub fn new(cfg: &OsConfig, _seed: u64) -> Result<Os, OsError> {
        Ok(Os {
            phys: PhysMem::new(cfg.phys_mem_bytes),
            cfg: cfg.clone(),
            pids: Vec::new(),
            vmas: Vec::new(),
            pages: HashMap::new(),
            faults: 0,
        })
    }

    /// The ASID of process `pid`, creating the process on first sight.
    pub fn process(&mut self, pid: u32) -> Asid {
        if let Some(i) = self.pids.iter().position(|p| *p == pid) {
            return i as Asid;
        }
        self.pids.push(pid);
        self.vmas.push(Vec::new());
        (self.pids.len() - 1) as Asid
    }

    /// `mmap` that returned `addr`.
    pub fn mmap(
        &mut self,
        asid: Asid,
        addr: Vaddr,
        len: u64,
        prot: u32,
        _flags: u32,
    ) -> Result<(), OsError> {
        self.vmas[asid as usize].push((addr.0, addr.0 + len, prot));
        Ok(())
    }

    /// `munmap`; removed translations are appended to `changes`.
    pub fn munmap(
        &mut self,
        _asid: Asid,
        _addr: Vaddr,
        _len: u64,
        _changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        Ok(())
    }

    /// `brk` to `new_brk`.
    pub fn brk(
        &mut self,
        asid: Asid,
        new_brk: Vaddr,
        _changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        self.vmas[asid as usize].push((0x5555_0000_0000, new_brk.0, 3));
        Ok(())
    }

    /// `mprotect`.
    pub fn mprotect(
        &mut self,
        _asid: Asid,
        _addr: Vaddr,
        _len: u64,
        _prot: u32,
        _changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        Ok(())
    }

    /// `madvise`.
    pub fn madvise(
        &mut self,
        _asid: Asid,
        _addr: Vaddr,
        _len: u64,
        _advice: u32,
        _changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        Ok(())
    }

    /// Process exit: every translation of `asid` is removed.
    pub fn exit(&mut self, _asid: Asid, _changes: &mut Vec<MapChange>) -> Result<(), OsError> {
        Ok(())
    }

    /// The oracle: the translation covering `vpn` in `asid`, if any.
    #[inline]
    pub fn translate(&self, asid: Asid, vpn: Vpn) -> Option<Mapping> {
        self.pages.get(&(asid, vpn.0)).copied()
    }

    /// Demand paging: handle a fault on `va`; installs and returns the new translation
    /// (also appended to `changes`).
    pub fn fault(
        &mut self,
        asid: Asid,
        va: Vaddr,
        _kind: AccessKind,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        let inside = self.vmas[asid as usize]
            .iter()
            .any(|&(s, e, _)| va.0 >= s && va.0 < e);
        if !inside {
            return Err(OsError(format!(
                "segmentation fault: {va} is outside every VMA"
            )));
        }
        let pfn = self.phys.alloc(0, FrameUse::Data)?;
        let m = Mapping {
            vpn: va.vpn(),
            pfn,
            size: PageSize::Size4K,
            writable: true,
        };
        self.pages.insert((asid, va.vpn().0), m);
        self.faults += 1;
        changes.push(MapChange::Map(asid, m));
        Ok(m)
    }

    /// Write the `os` section of the result record.
    pub fn stats(&self, out: &mut Stats) {
        let s = out.section("os");
        s.put_u64("page_faults", self.faults);
        s.put_str("thp", &format!("{:?}", self.cfg.thp).to_lowercase());
    }
}
