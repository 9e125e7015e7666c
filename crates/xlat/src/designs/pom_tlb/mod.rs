//! # pom_tlb — part-of-memory L3 TLB in front of the radix walk
//!
//! ## Model
//! A large set-associative TLB kept in physical memory (POM-TLB), probed after an L2 TLB
//! miss: `entries` entries of `entry_bytes` in sets of `ways`, one contiguous block allocated at
//! boot (counted as page-table memory). A probe reads the lines of the set the VPN indexes for
//! every page size the L3 TLB holds (4 KiB and 2 MiB: each size indexes the one array with its
//! own page number), all in parallel through the data caches (`MemSystem::pt_access`), so
//! they compete with data and page-table lines. A hit is the translation; a miss walks the
//! radix page table ([`Radix`], composed) after the probe and inserts the translation, with
//! SRRIP replacement (insert at RRPV 2, a hit sets 0). 1 GiB pages are not cached in it.
//! Entries are ASID-tagged and removed when the OS unmaps their page (the shootdown reaches
//! the POM-TLB, as in the paper's software-managed coherence).
//!
//! Memory: the array (1 MiB by default) is allocated from physical memory as page-table
//! frames, but `page_table.*` counts the radix table only (the array is a TLB, fixed in
//! size); it is reported as `pom_tlb.table_bytes`.
//!
//! ## Configuration
//! `[pom_tlb]`: `entries` (65536), `ways` (16), `entry_bytes` (16), `[pom_tlb.radix]` the
//! radix table behind it.
//!
//! ## Deviations from the paper
//! - The entry writes of an insertion are not simulated (reads only, as for every design's
//!   walker); the fill happens at no memory cost.
//! - Both size partitions are probed in parallel: no page-size predictor.
//! - With `ways * entry_bytes` above 64 a set spans several lines, all read per probe (16-way
//!   of 16-byte entries: 4 lines per size, 8 references per probe).
//! - Not flushed on a context switch (ASID-tagged).
//!
//! ## References
//! Ryoo et al., "Rethinking TLB Designs in Virtualized Environments: A Very Large Part-of-Memory
//! TLB", ISCA 2017; its configuration as a baseline in Utopia (MICRO 2023) Table 1 (64K
//! entries, 16-way, SRRIP) and §7.

use crate::addr::{Asid, Mapping, Paddr, PageSize, Vpn, BASE_PAGE_BYTES, LINE_BYTES};
use crate::designs::radix::{Radix, RadixConfig};
use crate::designs::{Design, PtFootprint, PtMemory, WalkResult};
use crate::mem::MemSystem;
use crate::os::{OsError, PhysMem};
use crate::stats::{ratio, Stats, StatsExt};
use serde::{Deserialize, Serialize};

/// `[pom_tlb]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PomTlbConfig {
    /// Entries of the in-memory TLB (a power of two).
    pub entries: u32,
    /// Associativity (a power of two).
    pub ways: u32,
    /// Bytes of one entry in memory (a power of two, at most 64).
    pub entry_bytes: u32,
    /// The radix page table walked on a POM-TLB miss.
    pub radix: RadixConfig,
}

impl Default for PomTlbConfig {
    fn default() -> Self {
        PomTlbConfig {
            entries: 65536,
            ways: 16,
            entry_bytes: 16,
            radix: RadixConfig::default(),
        }
    }
}

impl PomTlbConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        if !self.entries.is_power_of_two() || !self.ways.is_power_of_two() {
            return Err(format!(
                "entries ({}) and ways ({}) must be powers of two",
                self.entries, self.ways
            ));
        }
        if self.ways > self.entries {
            return Err(format!(
                "ways ({}) must be at most entries ({})",
                self.ways, self.entries
            ));
        }
        if !self.entry_bytes.is_power_of_two() || self.entry_bytes > 64 {
            return Err(format!(
                "entry_bytes must be a power of two of at most 64, got {}",
                self.entry_bytes
            ));
        }
        self.radix.validate().map_err(|e| format!("radix.{e}"))
    }
}

/// Sizes the POM-TLB holds.
const SIZES: [PageSize; 2] = [PageSize::Size4K, PageSize::Size2M];
const RRPV_MAX: u8 = 3;

#[derive(Clone, Copy, Debug)]
struct Entry {
    asid: Asid,
    m: Mapping,
    rrpv: u8,
}

/// The POM-TLB design.
pub struct PomTlb {
    radix: Radix,
    /// `sets * ways` entries, set-major.
    slots: Vec<Option<Entry>>,
    sets: u64,
    ways: usize,
    entry_bytes: u64,
    base: Paddr,
    mem: PtMemory,
    lookups: u64,
    hits: u64,
    probe_cycles: u64,
    probe_mem_accesses: u64,
    post_fault_lookups: u64,
}

impl PomTlb {
    fn set_of(&self, vpn: Vpn, size: PageSize) -> u64 {
        (vpn.0 >> size.order()) & (self.sets - 1)
    }

    fn row(&self, set: u64) -> std::ops::Range<usize> {
        let first = set as usize * self.ways;
        first..first + self.ways
    }

    /// The cached translation of `asid`'s `vpn`, if any (a hit refreshes its RRPV).
    fn find(&mut self, asid: Asid, vpn: Vpn) -> Option<Mapping> {
        for size in SIZES {
            let row = self.row(self.set_of(vpn, size));
            for e in self.slots[row].iter_mut().flatten() {
                if e.asid == asid && e.m.size == size && e.m.contains(vpn) {
                    e.rrpv = 0;
                    return Some(e.m);
                }
            }
        }
        None
    }

    fn insert(&mut self, asid: Asid, m: Mapping) {
        if !SIZES.contains(&m.size) {
            return;
        }
        let row = self.row(self.set_of(m.vpn, m.size));
        let slots = &mut self.slots[row];
        let way = match slots.iter().position(|e| e.is_none()) {
            Some(w) => w,
            None => loop {
                if let Some(w) = slots
                    .iter()
                    .position(|e| e.is_some_and(|e| e.rrpv >= RRPV_MAX))
                {
                    break w;
                }
                for e in slots.iter_mut().flatten() {
                    e.rrpv += 1;
                }
            },
        };
        slots[way] = Some(Entry { asid, m, rrpv: 2 });
    }

    /// Read the lines of `vpn`'s set of every size, in parallel: (latency, references).
    fn probe(&self, vpn: Vpn, mem: &mut MemSystem) -> (u32, u32) {
        let set_bytes = self.ways as u64 * self.entry_bytes;
        let mut slowest = 0;
        let mut n = 0;
        for size in SIZES {
            let start = self.base.0 + self.set_of(vpn, size) * set_bytes;
            for line in (start..start + set_bytes).step_by(LINE_BYTES as usize) {
                slowest = slowest.max(mem.pt_access(Paddr(line)).latency_cycles);
                n += 1;
            }
        }
        (slowest, n)
    }

    fn walk_counted(
        &mut self,
        asid: Asid,
        vpn: Vpn,
        mem: &mut MemSystem,
        after_fault: bool,
    ) -> WalkResult {
        let (latency, accesses) = self.probe(vpn, mem);
        let found = self.find(asid, vpn);
        if after_fault {
            self.post_fault_lookups += 1;
        } else {
            self.lookups += 1;
            self.hits += found.is_some() as u64;
            self.probe_cycles += latency as u64;
            self.probe_mem_accesses += accesses as u64;
        }
        if let Some(m) = found {
            return WalkResult {
                mapping: Some(m),
                latency_cycles: latency,
                mem_accesses: accesses,
            };
        }
        let w = if after_fault {
            self.radix.walk_after_fault(asid, vpn, mem)
        } else {
            self.radix.walk(asid, vpn, mem)
        };
        if let Some(m) = w.mapping {
            self.insert(asid, m);
        }
        WalkResult {
            mapping: w.mapping,
            latency_cycles: latency + w.latency_cycles,
            mem_accesses: accesses + w.mem_accesses,
        }
    }
}

impl Design for PomTlb {
    type Config = PomTlbConfig;

    fn new(cfg: &PomTlbConfig, phys: &mut PhysMem) -> Result<Self, OsError> {
        let bytes = cfg.entries as u64 * cfg.entry_bytes as u64;
        let order = bytes
            .div_ceil(BASE_PAGE_BYTES)
            .next_power_of_two()
            .trailing_zeros() as u8;
        let mut mem = PtMemory::default();
        let base = mem.alloc(phys, order).map_err(|e| {
            OsError(format!(
                "pom_tlb: cannot allocate its {} in-memory TLB at boot: {e}",
                crate::addr::format_bytes(bytes)
            ))
        })?;
        Ok(PomTlb {
            radix: Radix::new(&cfg.radix, phys)?,
            slots: vec![None; cfg.entries as usize],
            sets: (cfg.entries / cfg.ways) as u64,
            ways: cfg.ways as usize,
            entry_bytes: cfg.entry_bytes as u64,
            base: Paddr(base.0 * BASE_PAGE_BYTES),
            mem,
            lookups: 0,
            hits: 0,
            probe_cycles: 0,
            probe_mem_accesses: 0,
            post_fault_lookups: 0,
        })
    }

    fn va_bits(&self) -> Option<u32> {
        self.radix.va_bits()
    }

    fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
        self.radix.map(phys, asid, m)
    }

    fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
        self.radix.unmap(phys, asid, m);
        if SIZES.contains(&m.size) {
            let row = self.row(self.set_of(m.vpn, m.size));
            for e in &mut self.slots[row] {
                if e.is_some_and(|e| e.asid == asid && e.m == m) {
                    *e = None;
                }
            }
        }
    }

    #[inline]
    fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
        self.walk_counted(asid, vpn, mem, false)
    }

    fn walk_after_fault(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
        self.walk_counted(asid, vpn, mem, true)
    }

    fn footprint(&self) -> PtFootprint {
        // The radix table only: the POM-TLB array is a TLB (a fixed cache of translations
        // allocated at boot), reported as `pom_tlb.table_bytes`.
        self.radix.footprint()
    }

    fn set_cores(&mut self, n: usize) {
        self.radix.set_cores(n);
    }

    fn select_core(&mut self, core: usize) {
        self.radix.select_core(core);
    }

    fn flush_mmu_caches(&mut self) {
        self.radix.flush_mmu_caches();
    }

    fn mmu_cache_misses(&self) -> u64 {
        self.radix.mmu_cache_misses()
    }

    fn stats(&self, out: &mut Stats) {
        let mut radix = Stats::new();
        self.radix.stats(&mut radix);
        let s = out.section("pom_tlb");
        s.put_u64("lookups", self.lookups);
        s.put_u64("hits", self.hits);
        s.put_f64("hit_rate", ratio(self.hits, self.lookups));
        s.put_u64("post_fault_lookups", self.post_fault_lookups);
        s.put_u64("probe_cycles", self.probe_cycles);
        s.put_f64("avg_probe_cycles", ratio(self.probe_cycles, self.lookups));
        s.put_u64("probe_mem_accesses", self.probe_mem_accesses);
        s.put_u64("table_bytes", self.mem.footprint().bytes);
        if let Some(r) = radix.remove("radix") {
            s.insert("radix".into(), r);
        }
    }
}

/// This design's profile (`profile.toml` beside this file): the settings its paper assumes
/// around it, applied when the design is named (format and rules: `crate::profiles`).
pub const PROFILE: &str = include_str!("profile.toml");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::MemConfig;

    fn setup() -> (PomTlb, PhysMem, MemSystem) {
        let mut phys = PhysMem::new(4 << 30);
        let p = PomTlb::new(&PomTlbConfig::default(), &mut phys).unwrap();
        (p, phys, MemSystem::new(&MemConfig::default()))
    }

    #[test]
    fn a_pom_tlb_hit_reads_the_two_sets_and_skips_the_radix_walk() {
        let (mut p, mut phys, mut mem) = setup();
        let m = Mapping::writable(0x1234, 77, PageSize::Size4K);
        p.map(&mut phys, 0, m).unwrap();
        let cold = p.walk(0, m.vpn, &mut mem);
        // Probe (4 lines per size) then the 4-level walk.
        assert_eq!(cold.mem_accesses, 8 + 4);
        let warm = p.walk(0, m.vpn, &mut mem);
        assert_eq!((warm.mapping, warm.mem_accesses), (Some(m), 8));
        assert_eq!((p.lookups, p.hits), (2, 1));
    }

    #[test]
    fn an_unmapped_page_leaves_the_pom_tlb() {
        let (mut p, mut phys, mut mem) = setup();
        let m = Mapping::writable(512, 1024, PageSize::Size2M);
        p.map(&mut phys, 0, m).unwrap();
        p.walk(0, Vpn(700), &mut mem);
        assert_eq!(p.find(0, Vpn(600)), Some(m));
        p.unmap(&mut phys, 0, m);
        assert_eq!(p.walk(0, Vpn(700), &mut mem).mapping, None);
    }

    #[test]
    fn a_full_set_replaces_a_distant_entry_by_srrip() {
        let (mut p, _, _) = setup();
        // 17 pages of one 4 KiB set (stride = sets).
        let ms: Vec<Mapping> = (0..17)
            .map(|i| Mapping::writable(i * 4096, i, PageSize::Size4K))
            .collect();
        for m in &ms[..16] {
            p.insert(0, *m);
        }
        assert_eq!(p.find(0, ms[3].vpn), Some(ms[3])); // RRPV 0: kept
        p.insert(0, ms[16]);
        assert_eq!(p.find(0, ms[3].vpn), Some(ms[3]));
        assert_eq!(p.find(0, ms[16].vpn), Some(ms[16]));
        assert_eq!(
            ms[..16]
                .iter()
                .filter(|m| p.find(0, m.vpn).is_none())
                .count(),
            1
        );
    }
}
