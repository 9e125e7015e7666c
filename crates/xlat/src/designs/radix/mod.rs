//! # radix — x86-64 multi-level radix page table with page-walk caches
//!
//! ## Model
//! A 4-level (or 5-level) tree of 4 KiB nodes of 512 8-byte entries per process; 2 MiB pages are
//! leaves in the page directory (level 1), 1 GiB pages leaves in the PDPT (level 2). A walk reads
//! one entry per level, each read dependent on the previous one, through the data-cache hierarchy
//! (entering at L2 by default), so page-table lines compete with data. Page-walk caches (PWCs), one
//! per upper level, cache entries that point to the next node: a hit in the PWC of the deepest
//! level skips every level above it. All PWCs are probed in parallel (one latency), so every PWC
//! that hits counts the use: an upper-level entry stays recent while a region is hot in a deeper
//! PWC (it is not aged out behind the deeper hit).
//!
//! TLB coalescing (`tlb.coalescing`, see `docs/machine.md`): leaf entries carry an Arm-style
//! contiguous hint, set on an aligned group of 16 leaves (4 KiB or 2 MiB) when they become
//! present, physically contiguous from a 16-page-aligned frame, and equally protected, and
//! cleared from the whole group when any of them is unmapped; a walk that reads a marked leaf
//! reports the 16-page span ([`Design::coalesced`] with `ContiguousBit`). For CoLT it reports the
//! largest aligned power-of-two group (at most `tlb.colt_max_pages`, at most the 8 entries of the
//! 64-byte line the walk read) of present, contiguous, equally protected 4 KiB leaves around the
//! walked one. Neither adds a memory reference: both read only what the walk read.
//!
//! PWC statistics (`pwc_lookups`, `pwc_<level>_hits`, `pwc_<level>_miss_rate`) count the walks
//! after a TLB miss; the walk the engine repeats after a page fault updates the PWCs the same way
//! but is counted apart (`pwc_post_fault_lookups`), so the rates describe TLB-miss walks.
//!
//! ## Configuration
//! `[radix]`: `levels` (4 or 5), `pwc_levels` (how many upper levels, counted from the page
//! directory upwards, have a PWC; default 3: PDE, PDPTE and PML4E caches), `pwc_entries` and
//! `pwc_ways` per PWC (32, 4), `pwc_latency_cycles` (2).
//!
//! ## Deviations from the paper
//! The PWCs are ASID-tagged, as with PCID. Accessed/dirty bit updates are not modeled (no writes by
//! the walker). Page-table frames are single 4 KiB frames from the buddy allocator and are freed as
//! soon as they become empty. The contiguous hint is Arm's (x86 has none): with
//! `tlb.coalescing = "contiguous_bit"` this table stands for an AArch64 4 KiB-granule table, which
//! has the same geometry (4 levels of 512 8-byte entries, 2 MiB and 1 GiB blocks).
//!
//! ## References
//! Intel SDM Vol. 3A §4.5 (4-level and 5-level paging) and §4.10.3 (paging-structure caches);
//! the Contiguous bit of Arm's VMSAv8-64 translation table descriptors; Pham et al., "CoLT:
//! Coalesced Large-Reach TLBs", MICRO 2012;
//! Bhattacharjee, "Large-reach memory management unit caches", MICRO 2013; the PWC configuration
//! of LVM Table 1 and Utopia Table 1.

mod table;

pub use table::{RadixTable, Step, TailoredPtes, CONTIG_ENTRIES};

use crate::addr::{Asid, Mapping, PageSize, Pfn, Vpn, LINE_BYTES, PTE_BYTES};
use crate::designs::{Design, PerCore, PtFootprint, WalkResult};
use crate::mem::MemSystem;
use crate::mmu::assoc::AssocCache;
use crate::mmu::{CoalesceRequest, CoalescedSpan};
use crate::os::{OsError, PhysMem};
use crate::stats::{ratio, Stats, StatsExt};
use serde::{Deserialize, Serialize};

/// `[radix]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RadixConfig {
    /// Levels of the tree: 4 (48-bit VA) or 5 (57-bit VA).
    pub levels: u32,
    /// Upper levels with a page-walk cache, counted from the page directory upwards.
    pub pwc_levels: u32,
    /// Entries per page-walk cache (0 disables them).
    pub pwc_entries: u32,
    /// Associativity of each page-walk cache.
    pub pwc_ways: u32,
    /// Latency of the (parallel) PWC lookup in cycles.
    pub pwc_latency_cycles: u32,
}

impl Default for RadixConfig {
    fn default() -> Self {
        RadixConfig {
            levels: 4,
            pwc_levels: 3,
            pwc_entries: 32,
            pwc_ways: 4,
            pwc_latency_cycles: 2,
        }
    }
}

impl RadixConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.levels == 4 || self.levels == 5) {
            return Err(format!("levels must be 4 or 5, got {}", self.levels));
        }
        if self.pwc_levels > self.levels - 1 {
            return Err(format!(
                "pwc_levels must be at most {} for a {}-level table, got {}",
                self.levels - 1,
                self.levels,
                self.pwc_levels
            ));
        }
        if self.pwc_entries > 0
            && (self.pwc_ways == 0 || !self.pwc_entries.is_multiple_of(self.pwc_ways))
        {
            return Err(format!(
                "pwc_entries ({}) must be a multiple of pwc_ways ({})",
                self.pwc_entries, self.pwc_ways
            ));
        }
        Ok(())
    }
}

/// The page-walk caches: `pwcs[j]` maps (ASID, VPN prefix) to the node at level `j` that the
/// prefix leads to, i.e. it caches entries of the level-`j+1` nodes.
struct PageWalkCaches {
    /// One set of PWCs per core (`sim.cores`); the running core's through `Deref`.
    pwcs: PerCore<Vec<AssocCache>>,
    latency_cycles: u32,
    /// `hits[j]`: TLB-miss walks whose deepest PWC hit was `pwcs[j]` (the hit the walk used).
    hits: Vec<u64>,
    /// TLB-miss walks that probed the PWCs.
    lookups: u64,
    /// Walks repeated after a page fault that probed the PWCs (not in `hits` / `lookups`).
    post_fault_lookups: u64,
}

#[inline]
fn pwc_key(asid: Asid, vpn: Vpn, node_level: u32) -> u64 {
    ((asid as u64) << 48) | (vpn.0 >> (9 * (node_level + 1)))
}

impl PageWalkCaches {
    fn new(cfg: &RadixConfig) -> Self {
        let n = if cfg.pwc_entries == 0 {
            0
        } else {
            cfg.pwc_levels as usize
        };
        PageWalkCaches {
            pwcs: PerCore::new(
                (0..n)
                    .map(|_| AssocCache::new(cfg.pwc_entries as usize, cfg.pwc_ways as usize))
                    .collect(),
            ),
            latency_cycles: cfg.pwc_latency_cycles,
            hits: vec![0; n],
            lookups: 0,
            post_fault_lookups: 0,
        }
    }
}

/// x86-64 radix page table with page-walk caches.
pub struct Radix {
    table: RadixTable,
    pwc: PageWalkCaches,
    walks: u64,
    /// Walk accesses made to a true PTE after reading an alias PTE (TPS tables only).
    alias_accesses: u64,
}

impl Radix {
    /// A radix design over `table` (an x86 table, or one holding TPS's tailored pages), with
    /// the page-walk caches of `cfg` (whose `levels` must be the table's).
    pub fn with_table(cfg: &RadixConfig, table: RadixTable) -> Radix {
        debug_assert_eq!(cfg.levels, table.levels());
        Radix {
            table,
            pwc: PageWalkCaches::new(cfg),
            walks: 0,
            alias_accesses: 0,
        }
    }

    /// The page table.
    pub fn table(&self) -> &RadixTable {
        &self.table
    }

    /// Walk accesses made to a true PTE after an alias PTE (0 without tailored pages).
    pub fn alias_accesses(&self) -> u64 {
        self.alias_accesses
    }

    /// Create the table nodes a later `map` of a page of `size` at `vpn` needs (Linux's fault
    /// path allocates page-table pages before the data page; Elastic Translations' placement
    /// hook does this first so that the table pages do not take its reserved frames).
    pub(crate) fn prepare_path(
        &mut self,
        phys: &mut PhysMem,
        asid: Asid,
        vpn: Vpn,
        size: PageSize,
    ) -> Result<(), OsError> {
        self.table
            .ensure_path(phys, asid, Mapping::writable(vpn.0, 0, size))
            .map(|_| ())
    }

    /// A walk of `vpn`; `after_fault` says it is the engine's repeat after a page fault, whose
    /// PWC probes are counted apart from TLB-miss walks (the PWCs are used and filled alike).
    #[inline]
    fn walk_counted(
        &mut self,
        asid: Asid,
        vpn: Vpn,
        mem: &mut MemSystem,
        after_fault: bool,
    ) -> WalkResult {
        self.walks += 1;
        let Some(root) = self.table.root(asid) else {
            return WalkResult {
                mapping: None,
                latency_cycles: 0,
                mem_accesses: 0,
            };
        };
        let mut latency = 0;
        let mut start = (root, self.table.levels() - 1);
        if !self.pwc.pwcs.is_empty() {
            latency += self.pwc.latency_cycles;
            // All PWCs are probed in parallel, so each one that hits counts the use (keeps its
            // entry recent); the deepest hit is the one the walk starts from.
            let mut deepest = None;
            for j in (0..self.pwc.pwcs.len()).rev() {
                if let Some(node) = self.pwc.pwcs[j].get(pwc_key(asid, vpn, j as u32)) {
                    deepest = Some(j);
                    start = (node as u32, j as u32);
                }
            }
            if after_fault {
                self.pwc.post_fault_lookups += 1;
            } else {
                self.pwc.lookups += 1;
                if let Some(j) = deepest {
                    self.pwc.hits[j] += 1;
                }
            }
        }
        let (mut node, mut level) = start;
        let mut accesses = 0;
        loop {
            latency += mem
                .pt_access(self.table.entry_addr(node, vpn, level))
                .latency_cycles;
            accesses += 1;
            match self.table.read(node, vpn, level) {
                Step::Empty => {
                    return WalkResult {
                        mapping: None,
                        latency_cycles: latency,
                        mem_accesses: accesses,
                    }
                }
                Step::Leaf(m) => {
                    return WalkResult {
                        mapping: Some(m),
                        latency_cycles: latency,
                        mem_accesses: accesses,
                    }
                }
                Step::Alias(first) => {
                    // TPS: the alias PTE gave the size; read the true PTE (the entry with the
                    // page-offset index bits zeroed), dependent on the alias read.
                    latency += mem
                        .pt_access(self.table.entry_addr(node, first, level))
                        .latency_cycles;
                    accesses += 1;
                    self.alias_accesses += 1;
                    let mapping = match self.table.read(node, first, level) {
                        Step::Leaf(m) => Some(m),
                        _ => None,
                    };
                    return WalkResult {
                        mapping,
                        latency_cycles: latency,
                        mem_accesses: accesses,
                    };
                }
                Step::Next(child) => {
                    level -= 1;
                    if let Some(c) = self.pwc.pwcs.get_mut(level as usize) {
                        c.insert(pwc_key(asid, vpn, level), child as u64);
                    }
                    node = child;
                }
            }
        }
    }
}

impl Design for Radix {
    type Config = RadixConfig;

    fn va_bits(&self) -> Option<u32> {
        Some(crate::addr::BASE_PAGE_SHIFT + 9 * self.table.levels())
    }

    fn new(cfg: &RadixConfig, _phys: &mut PhysMem) -> Result<Self, OsError> {
        Ok(Radix::with_table(cfg, RadixTable::new(cfg.levels)))
    }

    fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
        self.table.map(phys, asid, m)
    }

    fn coalesced(&self, asid: Asid, m: Mapping, req: CoalesceRequest) -> Option<CoalescedSpan> {
        let level = table::leaf_level(m.size);
        let node = self.table.node_at(asid, m.vpn, level)?;
        match req {
            CoalesceRequest::ContiguousBit => {
                // The walk read the marked leaf: its group of 16 is one entry.
                if level > 1 || !self.table.is_contiguous(node, m.vpn, level) {
                    return None;
                }
                let span_pages = CONTIG_ENTRIES * m.size.base_pages();
                let vpn = Vpn(m.vpn.0 & !(span_pages - 1));
                Some(CoalescedSpan {
                    vpn,
                    pfn: Pfn(m.pfn.0 - (m.vpn.0 - vpn.0)),
                    base: m.size,
                    pages_log2: CONTIG_ENTRIES.trailing_zeros() as u8,
                    writable: m.writable,
                })
            }
            CoalesceRequest::Colt { max_pages } => {
                if m.size != PageSize::Size4K {
                    return None;
                }
                // The walk read one 64-byte line of 8 leaf entries: the group can be no larger.
                let line_entries = LINE_BYTES / PTE_BYTES;
                let mut group = (max_pages as u64).min(line_entries);
                while group >= 2 {
                    let first = Vpn(m.vpn.0 & !(group - 1));
                    let behind = m.vpn.0 - first.0;
                    let contiguous = m.pfn.0 >= behind
                        && (0..group).all(|j| {
                            matches!(
                                self.table.read(node, Vpn(first.0 + j), 0),
                                Step::Leaf(n) if n.size == PageSize::Size4K
                                    && n.writable == m.writable
                                    && n.pfn.0 + behind == m.pfn.0 + j
                            )
                        });
                    if contiguous {
                        return Some(CoalescedSpan {
                            vpn: first,
                            pfn: Pfn(m.pfn.0 - behind),
                            base: PageSize::Size4K,
                            pages_log2: group.trailing_zeros() as u8,
                            writable: m.writable,
                        });
                    }
                    group /= 2;
                }
                None
            }
        }
    }

    fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
        let pwcs = &mut self.pwc.pwcs;
        self.table.unmap(phys, asid, m, |level| {
            // A freed node must not be reachable through a stale PWC entry, on any core.
            for core in pwcs.all_mut() {
                if let Some(c) = core.get_mut(level as usize) {
                    c.remove(pwc_key(asid, m.vpn, level));
                }
            }
        });
    }

    #[inline]
    fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
        self.walk_counted(asid, vpn, mem, false)
    }

    fn walk_after_fault(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
        self.walk_counted(asid, vpn, mem, true)
    }

    #[inline]
    fn prefetch(&self, asid: Asid, vpn: Vpn, mem: &MemSystem) {
        if let Some(pa) = self.table.prefetch(asid, vpn) {
            mem.prefetch(pa);
        }
    }

    fn prefetch_early(&self, asid: Asid, vpn: Vpn) {
        self.table.prefetch_upper(asid, vpn);
    }

    fn footprint(&self) -> PtFootprint {
        self.table.footprint()
    }

    fn set_cores(&mut self, n: usize) {
        self.pwc.pwcs.set_cores(n);
    }

    fn select_core(&mut self, core: usize) {
        self.pwc.pwcs.select(core);
    }

    fn flush_mmu_caches(&mut self) {
        for c in self.pwc.pwcs.iter_mut() {
            c.remove_if(|_| true);
        }
    }

    fn mmu_cache_misses(&self) -> u64 {
        self.pwc.lookups - self.pwc.hits.iter().sum::<u64>()
    }

    fn stats(&self, out: &mut Stats) {
        self.write_stats(out.section("radix"));
    }
}

impl Radix {
    /// The walk statistics (levels, PWC lookups, hits and miss rates) into section `s`.
    pub fn write_stats(&self, s: &mut Stats) {
        s.put_u64("levels", self.table.levels() as u64);
        s.put_u64("pwc_lookups", self.pwc.lookups);
        s.put_u64("pwc_post_fault_lookups", self.pwc.post_fault_lookups);
        let names = ["pde", "pdpte", "pml4e", "pml5e"];
        let mut remaining = self.pwc.lookups;
        for (j, hits) in self.pwc.hits.iter().enumerate() {
            s.put_u64(&format!("pwc_{}_hits", names[j]), *hits);
            // Lookups that reached this level's PWC (all deeper ones missed) and missed it too.
            s.put_f64(
                &format!("pwc_{}_miss_rate", names[j]),
                1.0 - ratio(*hits, remaining),
            );
            remaining -= hits;
        }
    }
}

/// Inside `impl Design for X` of a design built around a field `radix: Radix` whose walks are
/// radix's own (tps, rmm, et): the `Design` methods it forwards to that field unchanged —
/// address width, contiguous marks, walks, prefetch, page-table footprint and the per-core
/// MMU caches. A design that changes any of these writes all of them itself instead.
macro_rules! forward_to_inner_radix {
    () => {
        fn va_bits(&self) -> Option<u32> {
            self.radix.va_bits()
        }

        fn coalesced(
            &self,
            asid: $crate::addr::Asid,
            m: $crate::addr::Mapping,
            req: $crate::mmu::CoalesceRequest,
        ) -> Option<$crate::mmu::CoalescedSpan> {
            self.radix.coalesced(asid, m, req)
        }

        #[inline]
        fn walk(
            &mut self,
            asid: $crate::addr::Asid,
            vpn: $crate::addr::Vpn,
            mem: &mut $crate::mem::MemSystem,
        ) -> $crate::designs::WalkResult {
            self.radix.walk(asid, vpn, mem)
        }

        fn walk_after_fault(
            &mut self,
            asid: $crate::addr::Asid,
            vpn: $crate::addr::Vpn,
            mem: &mut $crate::mem::MemSystem,
        ) -> $crate::designs::WalkResult {
            self.radix.walk_after_fault(asid, vpn, mem)
        }

        #[inline]
        fn prefetch(
            &self,
            asid: $crate::addr::Asid,
            vpn: $crate::addr::Vpn,
            mem: &$crate::mem::MemSystem,
        ) {
            self.radix.prefetch(asid, vpn, mem)
        }

        fn prefetch_early(&self, asid: $crate::addr::Asid, vpn: $crate::addr::Vpn) {
            self.radix.prefetch_early(asid, vpn)
        }

        fn footprint(&self) -> $crate::designs::PtFootprint {
            self.radix.footprint()
        }

        fn set_cores(&mut self, n: usize) {
            self.radix.set_cores(n)
        }

        fn select_core(&mut self, core: usize) {
            self.radix.select_core(core)
        }

        fn flush_mmu_caches(&mut self) {
            self.radix.flush_mmu_caches()
        }

        fn mmu_cache_misses(&self) -> u64 {
            self.radix.mmu_cache_misses()
        }
    };
}
pub(crate) use forward_to_inner_radix;

/// This design's profile (`profile.toml` beside this file): the settings its paper assumes
/// around it, applied when the design is named (format and rules: `crate::profiles`).
pub const PROFILE: &str = include_str!("profile.toml");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::{PageSize, Pfn};
    use crate::mem::{MemConfig, MemSystem};

    fn setup(cfg: RadixConfig) -> (Radix, PhysMem, MemSystem) {
        let mut phys = PhysMem::new(4 << 30);
        let r = Radix::new(&cfg, &mut phys).unwrap();
        (r, phys, MemSystem::new(&MemConfig::default()))
    }

    fn m(vpn: u64, pfn: u64, size: PageSize) -> Mapping {
        Mapping::writable(vpn, pfn, size)
    }

    #[test]
    fn a_cold_4_level_walk_makes_4_references() {
        let (mut r, mut phys, mut mem) = setup(RadixConfig::default());
        r.map(&mut phys, 0, m(0x1_2345, 9, PageSize::Size4K))
            .unwrap();
        let w = r.walk(0, Vpn(0x1_2345), &mut mem);
        assert_eq!(w.mapping.unwrap().pfn, Pfn(9));
        assert_eq!(w.mem_accesses, 4);
    }

    #[test]
    fn each_core_has_its_own_pwcs_and_an_unmap_clears_every_cores_stale_entries() {
        let (mut r, mut phys, mut mem) = setup(RadixConfig::default());
        r.set_cores(2);
        r.map(&mut phys, 0, m(0x1_2345, 9, PageSize::Size4K))
            .unwrap();
        r.select_core(1);
        assert_eq!(r.walk(0, Vpn(0x1_2345), &mut mem).mem_accesses, 4);
        assert_eq!(r.walk(0, Vpn(0x1_2346), &mut mem).mem_accesses, 1);
        // Core 1's walks did not warm core 0's PWCs.
        r.select_core(0);
        assert_eq!(r.walk(0, Vpn(0x1_2346), &mut mem).mem_accesses, 4);
        assert_eq!(r.walk(0, Vpn(0x1_2347), &mut mem).mem_accesses, 1);
        // Unmapping the only page frees its tables: no core may reach them through its PWCs.
        r.map(&mut phys, 0, m(0x1_2346, 10, PageSize::Size4K))
            .unwrap();
        r.unmap(&mut phys, 0, m(0x1_2345, 9, PageSize::Size4K));
        r.unmap(&mut phys, 0, m(0x1_2346, 10, PageSize::Size4K));
        for core in [0, 1] {
            r.select_core(core);
            assert!(r.pwc.pwcs.iter().all(|c| c.is_empty()), "core {core}");
        }
        r.map(&mut phys, 0, m(0x1_2345, 11, PageSize::Size4K))
            .unwrap();
        for core in [1, 0] {
            r.select_core(core);
            let w = r.walk(0, Vpn(0x1_2345), &mut mem);
            assert_eq!(w.mapping.unwrap().pfn, Pfn(11), "core {core}");
        }
        // A flush empties the running core's PWCs only.
        r.select_core(1);
        r.flush_mmu_caches();
        assert_eq!(r.walk(0, Vpn(0x1_2345), &mut mem).mem_accesses, 4);
        r.select_core(0);
        assert_eq!(r.walk(0, Vpn(0x1_2345), &mut mem).mem_accesses, 1);
    }

    #[test]
    fn a_cold_5_level_walk_makes_5_references() {
        let cfg = RadixConfig {
            levels: 5,
            ..RadixConfig::default()
        };
        let (mut r, mut phys, mut mem) = setup(cfg);
        r.map(&mut phys, 0, m(0x1_2345, 9, PageSize::Size4K))
            .unwrap();
        assert_eq!(r.walk(0, Vpn(0x1_2345), &mut mem).mem_accesses, 5);
    }

    #[test]
    fn a_cold_2m_walk_makes_3_references_and_a_1g_walk_2() {
        let (mut r, mut phys, mut mem) = setup(RadixConfig::default());
        r.map(&mut phys, 0, m(512, 1024, PageSize::Size2M)).unwrap();
        r.map(&mut phys, 0, m(1 << 18, 1 << 18, PageSize::Size1G))
            .unwrap();
        assert_eq!(r.walk(0, Vpn(600), &mut mem).mem_accesses, 3);
        let (mut r2, mut phys2, mut mem2) = setup(RadixConfig::default());
        r2.map(&mut phys2, 0, m(1 << 18, 1 << 18, PageSize::Size1G))
            .unwrap();
        assert_eq!(r2.walk(0, Vpn((1 << 18) + 5), &mut mem2).mem_accesses, 2);
    }

    #[test]
    fn a_warm_pde_cache_leaves_one_reference_per_walk() {
        let (mut r, mut phys, mut mem) = setup(RadixConfig::default());
        r.map(&mut phys, 0, m(0x1000, 1, PageSize::Size4K)).unwrap();
        r.map(&mut phys, 0, m(0x1001, 2, PageSize::Size4K)).unwrap();
        assert_eq!(r.walk(0, Vpn(0x1000), &mut mem).mem_accesses, 4);
        assert_eq!(r.walk(0, Vpn(0x1001), &mut mem).mem_accesses, 1);
    }

    #[test]
    fn without_pwcs_every_walk_makes_4_references() {
        let cfg = RadixConfig {
            pwc_entries: 0,
            ..RadixConfig::default()
        };
        let (mut r, mut phys, mut mem) = setup(cfg);
        r.map(&mut phys, 0, m(0x1000, 1, PageSize::Size4K)).unwrap();
        for _ in 0..3 {
            assert_eq!(r.walk(0, Vpn(0x1000), &mut mem).mem_accesses, 4);
        }
    }

    #[test]
    fn a_freed_table_is_not_reached_through_a_stale_pwc_entry() {
        let (mut r, mut phys, mut mem) = setup(RadixConfig::default());
        r.map(&mut phys, 0, m(0x1000, 1, PageSize::Size4K)).unwrap();
        r.walk(0, Vpn(0x1000), &mut mem);
        r.unmap(&mut phys, 0, m(0x1000, 1, PageSize::Size4K));
        assert_eq!(r.walk(0, Vpn(0x1000), &mut mem).mapping, None);
        // A new table for another range reuses the freed node slot.
        r.map(&mut phys, 0, m(0x9_0000_0000 >> 12, 5, PageSize::Size4K))
            .unwrap();
        assert_eq!(r.walk(0, Vpn(0x1000), &mut mem).mapping, None);
    }

    #[test]
    fn a_pde_cache_hit_keeps_the_upper_level_entries_recent() {
        // 4-entry, fully associative PWCs. Region G0 stays hot in the PDE cache (VPN x) while
        // four other 1 GiB regions pass through the PDPTE cache; since all PWCs are probed in
        // parallel, every x walk also uses G0's PDPTE entry, so it is still cached when another
        // 2 MiB region of G0 (VPN y) is walked: 2 references (PTE + PDE), not 3.
        let cfg = RadixConfig {
            pwc_entries: 4,
            pwc_ways: 4,
            ..RadixConfig::default()
        };
        let (mut r, mut phys, mut mem) = setup(cfg);
        let x = 0x10;
        let y = (1 << 9) + 5;
        let regions: Vec<u64> = (1..=4).map(|i| i << 18).collect();
        for vpn in [x, y].iter().chain(&regions) {
            r.map(&mut phys, 0, m(*vpn, 100 + vpn, PageSize::Size4K))
                .unwrap();
        }
        assert_eq!(r.walk(0, Vpn(x), &mut mem).mem_accesses, 4);
        for g in &regions {
            r.walk(0, Vpn(*g), &mut mem);
            assert_eq!(r.walk(0, Vpn(x), &mut mem).mem_accesses, 1);
        }
        assert_eq!(r.walk(0, Vpn(y), &mut mem).mem_accesses, 2);
    }

    #[test]
    fn walks_after_a_fault_are_counted_apart_from_the_pwc_rates() {
        let (mut r, mut phys, mut mem) = setup(RadixConfig::default());
        r.map(&mut phys, 0, m(0x1000, 1, PageSize::Size4K)).unwrap();
        r.walk(0, Vpn(0x1000), &mut mem);
        r.walk_after_fault(0, Vpn(0x1000), &mut mem);
        let mut out = Stats::new();
        r.stats(&mut out);
        let s = &out["radix"];
        assert_eq!(s["pwc_lookups"], 1);
        assert_eq!(s["pwc_post_fault_lookups"], 1);
        // The only counted walk was cold: every PWC missed.
        assert_eq!(s["pwc_pde_hits"], 0);
        assert_eq!(s["pwc_pde_miss_rate"], 1.0);
    }
}
