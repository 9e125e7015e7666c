//! HugeTLB pools (`os.hugetlb.*`): huge pages of one size reserved at boot and mapped from
//! the pool at fault time (`policies/hugetlb.rs`) in hugetlbfs-backed VMAs (Linux `mm/hugetlb.c`, the
//! `hugepages=` boot parameter and `MAP_HUGETLB`), the static-huge-page baseline of the
//! Elastic Translations evaluation (64 KiB / 2 MiB / 32 MiB / 1 GiB).
//!
//! ## Model
//! - At boot, before any fragmentation, `pages` naturally aligned blocks of `size` are taken
//!   from the buddy allocator and held as the pool (counted as `FrameUse::Reserved`, as Linux
//!   counts them out of `MemFree`). Not enough memory for them is a configuration error.
//! - A VMA of at least `min_vma_bytes` (default: one page of `size`) is hugetlbfs-backed in its
//!   first `share` of bytes (1.0 = all of it). A fault there whose aligned block of `size`
//!   lies inside that part, with none of the block mapped yet, takes a page from the pool: it
//!   is zeroed at fault time (Linux `clear_huge_page`; `os.compaction.zero_cycles_per_byte`,
//!   part of the fault's latency) and mapped whole. A size the design cannot translate as one
//!   entry is mapped as pages of the largest size it can (64 KiB as 16 x 4 KiB, 32 MiB as
//!   16 x 2 MiB on radix): with `tlb.coalescing = "contiguous_bit"` those 16 entries get the
//!   contiguous bit (arm64's `CONT_PTE` / `CONT_PMD` hugetlb sizes) and take one TLB entry.
//! - Pool pages are never moved (no owner is recorded, so compaction treats them as
//!   unmovable), never collapsed by khugepaged, never swapped (swap with a pool is refused).
//! - munmap / madvise(DONTNEED) / exit return a page's frames to the pool once every piece of
//!   it is unmapped. A partial unmap of a pool page (Linux refuses a munmap that is not
//!   aligned to the huge page size; a trace may do it) splits it into 4 KiB pages as the OS
//!   model does for any page; the page then stays out of the pool until all its pieces are
//!   unmapped (`pages_split`).
//!
//! ## An empty pool (`on_empty`)
//! Linux reserves a hugetlbfs mapping's pages at mmap time and fails the mmap (ENOMEM) when the
//! pool cannot cover it; with `MAP_NORESERVE` the fault on an empty pool is a SIGBUS. A trace's
//! mmaps cannot fail, so the model offers:
//! - `"fallback"` (default): the fault is handled by `os.policy` as if the VMA were not
//!   hugetlbfs-backed (4 KiB, THP, ...), counted in `fallback_pool_empty`. This is what
//!   libhugetlbfs's heap (`HUGETLB_MORECORE`) does when the pool runs out, and it keeps a sweep
//!   over pool sizes running; the figures say how much of the footprint the pool covered.
//! - `"error"`: the run stops with an error naming `os.hugetlb.pages` (the SIGBUS).
//!
//! ## Deviations
//! - One pool size per run (Linux can keep a pool per size).
//! - The trace fixes every VMA's addresses, so a hugetlbfs VMA is not aligned or rounded up to
//!   the huge page size as Linux's `hugetlb_get_unmapped_area` does: its unaligned ends are
//!   mapped by `os.policy`.
//! - No per-mapping reservation accounting (`resv_huge_pages`), no surplus pages
//!   (`nr_overcommit_hugepages`), no NUMA nodes.

use super::error::OsError;
use super::phys::{FrameUse, PhysMem};
use crate::addr::{format_bytes, PageSize, Pfn, BASE_PAGE_BYTES};
use crate::stats::{Stats, StatsExt};
use serde::{Deserialize, Serialize};

/// What a fault does when the pool is empty (see the module doc).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum OnEmpty {
    /// Handled by `os.policy` (4 KiB / THP / ...), counted in `fallback_pool_empty`.
    Fallback,
    /// The run stops with an error (Linux's SIGBUS).
    Error,
}

/// `os.hugetlb`: a pool of huge pages reserved at boot.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HugetlbConfig {
    /// Page size of the pool (64KiB, 2MiB, 32MiB, 1GiB, or any power of two above 4 KiB).
    pub size: PageSize,
    /// Pages in the pool (0 = no pool: HugeTLB off).
    pub pages: u64,
    /// Smallest VMA that is hugetlbfs-backed (0 = one page of `size`).
    pub min_vma_bytes: u64,
    /// Share of each hugetlbfs-backed VMA, from its start, mapped from the pool (0, 1].
    pub share: f64,
    /// A fault on an empty pool: `"fallback"` or `"error"`.
    pub on_empty: OnEmpty,
}

impl Default for HugetlbConfig {
    fn default() -> Self {
        HugetlbConfig {
            size: PageSize::Size2M,
            pages: 0,
            min_vma_bytes: 0,
            share: 1.0,
            on_empty: OnEmpty::Fallback,
        }
    }
}

impl HugetlbConfig {
    /// Check ranges (errors name the key).
    pub fn validate(&self, swap_bytes: u64) -> Result<(), String> {
        if self.size == PageSize::Size4K {
            return Err("os.hugetlb.size must be larger than 4KiB (e.g. \"2MiB\")".into());
        }
        if !(self.share > 0.0 && self.share <= 1.0) {
            return Err(format!(
                "os.hugetlb.share must be in (0, 1], got {}",
                self.share
            ));
        }
        if self.pages > 0 && swap_bytes > 0 {
            return Err(
                "os.hugetlb.pages > 0 with os.swap.bytes > 0 is not supported (HugeTLB pages \
                 are never swapped; the reclaim model does not know to skip them)"
                    .into(),
            );
        }
        Ok(())
    }
}

/// The pool: its blocks (sorted by frame), which are free, and how many base pages of each
/// handed-out block are still mapped.
#[derive(Clone, Debug, Default)]
pub struct Pool {
    size: Option<PageSize>,
    /// First frame of every block of the pool, ascending.
    pub(super) blocks: Vec<Pfn>,
    /// Base pages of each block still mapped (0 = free, in `free`).
    pub(super) mapped: Vec<u64>,
    /// Indices of free blocks (a stack: the last freed is reused first, as Linux's free list).
    pub(super) free: Vec<usize>,
    /// A fault whose pool page was taken, splits, returns; and fallbacks.
    pub(super) c: PoolCounters,
}

/// Counters of the pool.
#[derive(Clone, Debug, Default)]
pub(super) struct PoolCounters {
    pub(super) faults: u64,
    pub(super) fallback_pool_empty: u64,
    pub(super) fallback_outside: u64,
    pub(super) fallback_partly_mapped: u64,
    pub(super) pages_split: u64,
    pages_returned: u64,
    pub(super) in_use_peak: u64,
}

impl Pool {
    /// Reserve the pool at boot (before fragmentation); an error names `os.hugetlb.pages`
    /// when memory cannot hold it.
    pub fn reserve(cfg: &HugetlbConfig, phys: &mut PhysMem) -> Result<Pool, OsError> {
        if cfg.pages == 0 {
            return Ok(Pool::default());
        }
        let zero_before = phys.work.zero_cycles;
        let mut blocks = Vec::with_capacity(cfg.pages as usize);
        for i in 0..cfg.pages {
            match phys.alloc(cfg.size.order(), FrameUse::Reserved) {
                Ok(pfn) => blocks.push(pfn),
                Err(_) => {
                    return Err(OsError(format!(
                        "os.hugetlb.pages = {}: only {i} pages of {} fit in os.phys_mem_bytes = {} \
                         (the pool is reserved at boot; lower os.hugetlb.pages or raise \
                         os.phys_mem_bytes)",
                        cfg.pages,
                        format_bytes(cfg.size.bytes()),
                        format_bytes(phys.total_bytes()),
                    )))
                }
            }
        }
        // Linux zeroes a pool page when a fault takes it, not at boot.
        phys.work.zero_cycles = zero_before;
        blocks.sort_unstable();
        let n = blocks.len();
        Ok(Pool {
            size: Some(cfg.size),
            blocks,
            mapped: vec![0; n],
            free: (0..n).rev().collect(),
            c: PoolCounters::default(),
        })
    }

    /// Whether a pool exists.
    #[inline]
    pub fn on(&self) -> bool {
        self.size.is_some()
    }

    /// The pool block holding frame `pfn`, if any.
    #[inline]
    fn block_of(&self, pfn: Pfn) -> Option<usize> {
        let size = self.size?;
        let i = self
            .blocks
            .partition_point(|b| b.0 <= pfn.0)
            .checked_sub(1)?;
        (pfn.0 < self.blocks[i].0 + size.base_pages()).then_some(i)
    }

    /// Whether frame `pfn` belongs to the pool (such a page must stay unowned: unmovable).
    #[inline]
    pub fn holds(&self, pfn: Pfn) -> bool {
        self.on() && self.block_of(pfn).is_some()
    }

    /// Free `2^order` frames at `pfn` of an unmapped page: pool frames go back to their block
    /// (the block to the pool once all of it is unmapped), others to the buddy allocator.
    pub fn release(&mut self, phys: &mut PhysMem, pfn: Pfn, order: u8) {
        let Some(i) = self.on().then(|| self.block_of(pfn)).flatten() else {
            phys.free(pfn, order, FrameUse::Data);
            return;
        };
        let n = 1u64 << order;
        phys.transfer(n * BASE_PAGE_BYTES, FrameUse::Data, FrameUse::Reserved);
        debug_assert!(self.mapped[i] >= n, "pool block {i} released twice");
        self.mapped[i] -= n;
        if self.mapped[i] == 0 {
            self.free.push(i);
            self.c.pages_returned += 1;
        }
    }

    pub(super) fn in_use(&self) -> u64 {
        (self.blocks.len() - self.free.len()) as u64
    }

    /// Write the `hugetlb` section (pool on only).
    pub fn stats_into(&self, s: &mut Stats) {
        let Some(size) = self.size else {
            return;
        };
        let h = s.section("hugetlb");
        let c = &self.c;
        h.put_u64("page_bytes", size.bytes());
        h.put_u64("pool_bytes", self.blocks.len() as u64 * size.bytes());
        h.put_u64("pool_free_bytes", self.free.len() as u64 * size.bytes());
        h.put_u64("pool_used_peak_bytes", c.in_use_peak * size.bytes());
        h.put_u64("faults", c.faults);
        h.put_u64("fallback_pool_empty", c.fallback_pool_empty);
        h.put_u64("fallback_outside", c.fallback_outside);
        h.put_u64("fallback_partly_mapped", c.fallback_partly_mapped);
        h.put_u64("pages_split", c.pages_split);
        h.put_u64("pages_returned", c.pages_returned);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::{Asid, Mapping, PageSizeSet, Vaddr};
    use crate::os::{MapChange, Os, OsConfig, ThpPolicy};
    use crate::trace::{prot, AccessKind};

    fn os_with(size: PageSize, pages: u64, tweak: impl FnOnce(&mut OsConfig)) -> Os {
        let mut cfg = OsConfig {
            phys_mem_bytes: 4 << 30,
            thp: ThpPolicy::Never,
            ..OsConfig::default()
        };
        cfg.hugetlb.size = size;
        cfg.hugetlb.pages = pages;
        tweak(&mut cfg);
        let mut os = Os::new(&cfg, 1).unwrap();
        os.set_page_sizes(PageSizeSet::X86).unwrap();
        os
    }

    const BASE: u64 = 0x4000_0000_0000;

    fn mmap(os: &mut Os, len: u64) -> Asid {
        let asid = os.process(1);
        let mut ch = Vec::new();
        os.mmap(asid, Vaddr(BASE), len, prot::READ | prot::WRITE, 0, &mut ch)
            .unwrap();
        asid
    }

    #[test]
    fn a_fault_in_a_backed_vma_maps_a_2m_page_from_the_boot_pool() {
        let mut os = os_with(PageSize::Size2M, 4, |_| {});
        let pool: Vec<Pfn> = os.hugetlb.blocks.clone();
        assert_eq!(os.phys.bytes_in_use(FrameUse::Reserved), 4 << 21);
        let asid = mmap(&mut os, 8 << 20);
        let mut ch = Vec::new();
        let m = os
            .fault(asid, Vaddr(BASE + 12345), AccessKind::Store, &mut ch)
            .unwrap();
        assert_eq!(m.size, PageSize::Size2M);
        assert!(pool.contains(&m.pfn), "the page comes from the pool");
        assert_eq!(os.phys.bytes_in_use(FrameUse::Reserved), 3 << 21);
        assert_eq!(os.hugetlb.c.faults, 1);
    }

    #[test]
    fn an_empty_pool_falls_back_to_the_policy_or_is_a_sigbus_error() {
        let mut os = os_with(PageSize::Size2M, 1, |_| {});
        let asid = mmap(&mut os, 8 << 20);
        let mut ch = Vec::new();
        let a = os
            .fault(asid, Vaddr(BASE), AccessKind::Load, &mut ch)
            .unwrap();
        let b = os
            .fault(asid, Vaddr(BASE + (2 << 20)), AccessKind::Load, &mut ch)
            .unwrap();
        assert_eq!((a.size, b.size), (PageSize::Size2M, PageSize::Size4K));
        assert_eq!(os.hugetlb.c.fallback_pool_empty, 1);
        let mut os = os_with(PageSize::Size2M, 1, |c| c.hugetlb.on_empty = OnEmpty::Error);
        let asid = mmap(&mut os, 8 << 20);
        os.fault(asid, Vaddr(BASE), AccessKind::Load, &mut ch)
            .unwrap();
        let e = os
            .fault(asid, Vaddr(BASE + (2 << 20)), AccessKind::Load, &mut ch)
            .unwrap_err();
        assert!(e.0.contains("os.hugetlb.pages"), "{e}");
    }

    #[test]
    fn munmap_returns_the_page_to_the_pool_not_to_the_buddy_allocator() {
        let mut os = os_with(PageSize::Size2M, 1, |_| {});
        let asid = mmap(&mut os, 2 << 20);
        let mut ch = Vec::new();
        let m = os
            .fault(asid, Vaddr(BASE), AccessKind::Load, &mut ch)
            .unwrap();
        let free_before = os.phys.free_bytes();
        os.munmap(asid, Vaddr(BASE), 2 << 20, &mut ch).unwrap();
        assert_eq!(os.phys.free_bytes(), free_before, "not freed to the buddy");
        assert_eq!(os.hugetlb.free, vec![0]);
        // The next fault of a new VMA takes the same page again.
        os.mmap(
            asid,
            Vaddr(BASE),
            2 << 20,
            prot::READ | prot::WRITE,
            0,
            &mut ch,
        )
        .unwrap();
        let again = os
            .fault(asid, Vaddr(BASE), AccessKind::Load, &mut ch)
            .unwrap();
        assert_eq!(again.pfn, m.pfn);
    }

    #[test]
    fn a_64k_pool_page_is_16_contiguous_4k_pages_on_a_design_without_64k_entries() {
        let mut os = os_with(PageSize::from_order(4).unwrap(), 8, |_| {});
        let asid = mmap(&mut os, 1 << 20);
        let mut ch = Vec::new();
        os.fault(asid, Vaddr(BASE + 5 * 4096), AccessKind::Load, &mut ch)
            .unwrap();
        let maps: Vec<Mapping> = ch
            .iter()
            .filter_map(|c| match c {
                MapChange::Map(_, m) => Some(*m),
                _ => None,
            })
            .collect();
        assert_eq!(maps.len(), 16);
        assert!(maps.iter().all(|m| m.size == PageSize::Size4K));
        assert!(maps.windows(2).all(|w| w[1].pfn.0 == w[0].pfn.0 + 1));
        assert_eq!(maps[0].pfn.0 % 16, 0);
        // Partly unmapping it keeps the rest mapped; the block returns once all is unmapped.
        os.munmap(asid, Vaddr(BASE), 4096, &mut ch).unwrap();
        assert!(os.hugetlb.free.len() == 7);
        os.munmap(asid, Vaddr(BASE + 4096), 15 * 4096, &mut ch)
            .unwrap();
        assert_eq!(os.hugetlb.free.len(), 8);
    }

    #[test]
    fn a_pool_larger_than_memory_and_a_4k_pool_are_errors_naming_the_key() {
        let mut cfg = OsConfig {
            phys_mem_bytes: 1 << 30,
            ..OsConfig::default()
        };
        cfg.hugetlb.size = PageSize::Size1G;
        cfg.hugetlb.pages = 2;
        let e = Os::new(&cfg, 1).err().unwrap();
        assert!(e.0.contains("os.hugetlb.pages = 2"), "{e}");
        cfg.hugetlb.size = PageSize::Size4K;
        assert!(cfg.validate().unwrap_err().contains("os.hugetlb.size"));
    }

    #[test]
    fn pool_pages_are_never_moved_by_compaction_or_collapsed() {
        let mut os = os_with(PageSize::from_order(4).unwrap(), 64, |c| {
            c.khugepaged.enabled = true;
        });
        let asid = mmap(&mut os, 4 << 20);
        let mut ch = Vec::new();
        for i in 0..64 {
            os.fault(asid, Vaddr(BASE + i * 65536), AccessKind::Load, &mut ch)
                .unwrap();
        }
        let wake = os.cfg.khugepaged.interval_cycles;
        os.tick(4 * wake, &mut ch).unwrap();
        let m = os.translate(asid, Vaddr(BASE).vpn()).unwrap();
        assert_eq!(m.size, PageSize::Size4K, "not collapsed to 2 MiB");
        assert!(os.hugetlb.holds(m.pfn));
    }
}
