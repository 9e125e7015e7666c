//! # fpt — Flattened Page Tables
//!
//! ## Model
//! An x86-64 4-level radix tree in which two pairs of adjacent levels are folded into one
//! 2 MiB table when a 2 MiB block is available: the root is one table of 2^18 entries indexed by
//! VPN bits 35..18 (PML4 + PDPT), and each 1 GiB region's table is one table of 2^18 entries
//! indexed by VPN bits 17..0 (PD + PT). A walk through flattened tables reads two entries (each
//! dependent on the previous one) instead of four. When the buddy allocator has no free 2 MiB
//! block at the moment a table is created, that table is an ordinary pair of radix levels of
//! 4 KiB nodes instead (so fragmentation degrades fpt towards radix, as LVM §7.5.3 argues).
//! A 1 GiB page is a leaf of the root table (or of a PDPT node); a 2 MiB page is a leaf of a PD
//! node; the PD+PT table of a 1 GiB region whose first page is a 2 MiB page is an ordinary PD
//! (so its 2 MiB pages are one entry each), and a 2 MiB page mapped later into a flattened
//! PD+PT table is 512 copies of the leaf entry (one per 4 KiB slot it covers). Page-walk caches as in
//! `radix`: one per entry level (entries covering 512 GiB, 1 GiB, 2 MiB), probed in parallel,
//! the deepest hit skips every level above it.
//!
//! ## Configuration
//! `[fpt]`: `flatten_upper` (true: fold PML4+PDPT), `flatten_lower` (true: fold PD+PT),
//! `pwc_entries` (32) and `pwc_ways` (4) per PWC, `pwc_latency_cycles` (2).
//!
//! ## Deviations from the paper
//! FPT (Park et al., ISCA 2022) also folds with 1 GiB pages and describes promotion of existing
//! tables to flattened ones; here the choice is made once, when a table is created, and never
//! revisited. 2 MiB pages inside a flattened PD+PT table are replicated entries (the FPT paper
//! restricts such regions instead); replicas of one page sit in 64 lines, so walks of
//! different 4 KiB parts of it do not share a cached line. Empty tables are freed at once, as
//! in `radix`, and so is an empty root (radix keeps its 4 KiB root; a 2 MiB one is worth
//! returning).
//!
//! ## References
//! Park, Choi, Rhu, Huh, "Every walk's a hit: making page walks single-access cache hits",
//! ASPLOS 2022 (flattened page tables); LVM (MICRO 2025) §7.5.3 (the comparison this design
//! serves).

use crate::addr::{Asid, Mapping, Paddr, PageSize, Pfn, Vpn, PTE_BYTES};
use crate::designs::{Design, PerCore, PtFootprint, PtMemory, WalkResult};
use crate::mem::MemSystem;
use crate::mmu::assoc::AssocCache;
use crate::os::{OsError, PhysMem};
use crate::stats::{ratio, Stats, StatsExt};
use serde::{Deserialize, Serialize};

/// `[fpt]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct FptConfig {
    /// Fold PML4 + PDPT into one 2 MiB root table when a 2 MiB block is free.
    pub flatten_upper: bool,
    /// Fold PD + PT into one 2 MiB table per 1 GiB region when a 2 MiB block is free.
    pub flatten_lower: bool,
    /// Entries per page-walk cache (0 disables them).
    pub pwc_entries: u32,
    /// Associativity of each page-walk cache.
    pub pwc_ways: u32,
    /// Latency of the (parallel) PWC lookup in cycles.
    pub pwc_latency_cycles: u32,
}

impl Default for FptConfig {
    fn default() -> Self {
        FptConfig {
            flatten_upper: true,
            flatten_lower: true,
            pwc_entries: 32,
            pwc_ways: 4,
            pwc_latency_cycles: 2,
        }
    }
}

impl FptConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
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

const PRESENT: u64 = 1;
const LEAF: u64 = 2;
const WRITABLE: u64 = 4;
/// Page-size index of a leaf entry, bits 3..5.
const SIZE_SHIFT: u32 = 3;
const NO_NODE: u32 = u32::MAX;
/// Entry shifts of the PWCs: entries covering 2 MiB, 1 GiB and 512 GiB (deepest first).
const PWC_SHIFTS: [u32; 3] = [9, 18, 27];
/// Order of a flattened table (2 MiB).
const FLAT_ORDER: u8 = 9;

/// One table: an ordinary 512-entry node or a flattened 2^18-entry one.
struct Node {
    frame: Pfn,
    /// VPN shift of the index into this node (0, 9, 18 or 27).
    shift: u32,
    /// Index bits (9, or 18 when flattened).
    bits: u32,
    entries: Vec<u64>,
    /// Present entries (a replicated 2 MiB leaf counts 512).
    used: u32,
}

impl Node {
    #[inline]
    fn index(&self, vpn: Vpn) -> usize {
        ((vpn.0 >> self.shift) & ((1 << self.bits) - 1)) as usize
    }
    fn order(&self) -> u8 {
        if self.bits == 18 {
            FLAT_ORDER
        } else {
            0
        }
    }
}

/// Flattened page tables with page-walk caches.
pub struct Fpt {
    cfg: FptConfig,
    nodes: Vec<Option<Node>>,
    free_ids: Vec<u32>,
    roots: Vec<u32>,
    mem: PtMemory,
    /// One set of PWCs per core (`sim.cores`); the running core's through `Deref`.
    pwcs: PerCore<Vec<AssocCache>>,
    pwc_hits: [u64; 3],
    pwc_lookups: u64,
    walks: u64,
    walk_accesses: u64,
    flattened_created: [u64; 2],
    fallbacks: [u64; 2],
}

#[inline]
fn pwc_key(asid: Asid, vpn: Vpn, shift: u32) -> u64 {
    ((asid as u64) << 48) | (vpn.0 >> shift)
}

enum Read {
    Next(u32),
    Leaf(Mapping),
    Empty,
}

impl Fpt {
    fn node(&self, id: u32) -> &Node {
        self.nodes[id as usize].as_ref().expect("live node")
    }

    fn read(&self, id: u32, vpn: Vpn) -> Read {
        let n = self.node(id);
        let e = n.entries[n.index(vpn)];
        if e & PRESENT == 0 {
            Read::Empty
        } else if e & LEAF != 0 {
            let size = PageSize::X86[((e >> SIZE_SHIFT) & 3) as usize];
            Read::Leaf(Mapping {
                vpn: vpn.align_down(size),
                pfn: Pfn(e >> 12),
                size,
                writable: e & WRITABLE != 0,
            })
        } else {
            Read::Next((e >> 12) as u32)
        }
    }

    fn entry_addr(&self, id: u32, vpn: Vpn) -> Paddr {
        let n = self.node(id);
        Paddr(n.frame.addr().0 + n.index(vpn) as u64 * PTE_BYTES)
    }

    /// A new table whose entries have VPN shift `shift`; flattened (`bits` 18) when `flatten`
    /// and a 2 MiB block is free, else an ordinary node of the upper level of the pair.
    fn new_node(
        &mut self,
        phys: &mut PhysMem,
        top_shift: u32,
        flatten: bool,
        pair: usize,
    ) -> Result<u32, OsError> {
        let flat = flatten && phys.can_alloc(FLAT_ORDER);
        if flatten && !flat {
            self.fallbacks[pair] += 1;
        }
        let (shift, bits, order) = if flat {
            self.flattened_created[pair] += 1;
            (top_shift - 9, 18, FLAT_ORDER)
        } else {
            (top_shift, 9, 0)
        };
        let frame = self.mem.alloc(phys, order)?;
        let node = Node {
            frame,
            shift,
            bits,
            entries: vec![0; 1 << bits],
            used: 0,
        };
        Ok(match self.free_ids.pop() {
            Some(id) => {
                self.nodes[id as usize] = Some(node);
                id
            }
            None => {
                self.nodes.push(Some(node));
                (self.nodes.len() - 1) as u32
            }
        })
    }

    /// Create the child for the entry of `parent` (entries with VPN shift `parent_shift`) on
    /// the way to a leaf of `size`.
    fn new_child(
        &mut self,
        phys: &mut PhysMem,
        parent_shift: u32,
        size: PageSize,
    ) -> Result<u32, OsError> {
        match parent_shift {
            // Under a PML4 node: a PDPT node (the upper pair was not flattened).
            27 => self.new_node(phys, 18, false, 0),
            // Under the PDPT level: the PD+PT pair, flattened unless it is created for a 2 MiB
            // page (a region that starts with huge pages keeps its PD level for them).
            18 => {
                let flatten = self.cfg.flatten_lower && size == PageSize::Size4K;
                self.new_node(phys, 9, flatten, 1)
            }
            // Under a PD node: a PT node.
            _ => self.new_node(phys, 0, false, 1),
        }
    }

    fn leaf_entry(m: &Mapping) -> u64 {
        (m.pfn.0 << 12)
            | PRESENT
            | LEAF
            | ((m.size.index() as u64) << SIZE_SHIFT)
            | if m.writable { WRITABLE } else { 0 }
    }

    fn free_node(&mut self, phys: &mut PhysMem, id: u32) {
        let n = self.nodes[id as usize].take().expect("live node");
        self.mem.free(phys, n.frame, n.order());
        self.free_ids.push(id);
    }
}

impl Design for Fpt {
    type Config = FptConfig;

    /// Four levels (two folded pairs): 48-bit addresses, whatever the machine's paging mode.
    fn va_bits(&self) -> Option<u32> {
        Some(48)
    }

    fn new(cfg: &FptConfig, _phys: &mut PhysMem) -> Result<Self, OsError> {
        cfg.validate().map_err(|e| OsError(format!("fpt.{e}")))?;
        let n = if cfg.pwc_entries == 0 { 0 } else { 3 };
        Ok(Fpt {
            cfg: cfg.clone(),
            nodes: Vec::new(),
            free_ids: Vec::new(),
            roots: Vec::new(),
            mem: PtMemory::default(),
            pwcs: PerCore::new(
                (0..n)
                    .map(|_| AssocCache::new(cfg.pwc_entries as usize, cfg.pwc_ways as usize))
                    .collect(),
            ),
            pwc_hits: [0; 3],
            pwc_lookups: 0,
            walks: 0,
            walk_accesses: 0,
            flattened_created: [0; 2],
            fallbacks: [0; 2],
        })
    }

    fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
        if self.roots.len() <= asid as usize {
            self.roots.resize(asid as usize + 1, NO_NODE);
        }
        if self.roots[asid as usize] == NO_NODE {
            self.roots[asid as usize] = self.new_node(phys, 27, self.cfg.flatten_upper, 0)?;
        }
        let leaf_shift = m.size.order() as u32; // 0, 9 or 18
        let mut id = self.roots[asid as usize];
        loop {
            let shift = self.node(id).shift;
            if shift > leaf_shift {
                match self.read(id, m.vpn) {
                    Read::Next(child) => id = child,
                    Read::Empty => {
                        let child = self.new_child(phys, shift, m.size)?;
                        let n = self.nodes[id as usize].as_mut().unwrap();
                        let i = n.index(m.vpn);
                        n.entries[i] = ((child as u64) << 12) | PRESENT;
                        n.used += 1;
                        id = child;
                    }
                    Read::Leaf(existing) => {
                        return Err(OsError(format!(
                            "fpt: mapping {m:?} overlaps the existing {existing:?} (OS model bug)"
                        )))
                    }
                }
                continue;
            }
            // shift == leaf_shift: one entry; shift < leaf_shift: a 2 MiB page in a flattened
            // PD+PT table, one copy per 4 KiB slot.
            let n = self.nodes[id as usize].as_mut().unwrap();
            let copies = 1usize << (leaf_shift - shift);
            let first = n.index(m.vpn);
            if n.entries[first..first + copies]
                .iter()
                .any(|e| *e & PRESENT != 0)
            {
                return Err(OsError(format!(
                    "fpt: mapping {m:?} over a present entry (OS model bug)"
                )));
            }
            let e = Self::leaf_entry(&m);
            n.entries[first..first + copies].fill(e);
            n.used += copies as u32;
            return Ok(());
        }
    }

    fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
        let Some(&root) = self.roots.get(asid as usize).filter(|r| **r != NO_NODE) else {
            return;
        };
        let leaf_shift = m.size.order() as u32;
        let mut path: Vec<u32> = Vec::with_capacity(4);
        let mut id = root;
        loop {
            path.push(id);
            let shift = self.node(id).shift;
            if shift <= leaf_shift {
                break;
            }
            match self.read(id, m.vpn) {
                Read::Next(child) => id = child,
                _ => return,
            }
        }
        let shift = self.node(id).shift;
        let copies = 1usize << (leaf_shift - shift);
        {
            let n = self.nodes[id as usize].as_mut().unwrap();
            let first = n.index(m.vpn);
            let e = n.entries[first];
            if e & (PRESENT | LEAF) != PRESENT | LEAF {
                return;
            }
            n.entries[first..first + copies].fill(0);
            n.used -= copies as u32;
        }
        // Free empty tables bottom-up (never the root), dropping PWC entries that point at them.
        for k in (1..path.len()).rev() {
            let id = path[k];
            if self.node(id).used != 0 {
                break;
            }
            let parent = path[k - 1];
            let parent_shift = self.node(parent).shift;
            self.free_node(phys, id);
            if let Some(j) = PWC_SHIFTS.iter().position(|s| *s == parent_shift) {
                // The table is shared: the stale entry goes from every core's PWC.
                for core in self.pwcs.all_mut() {
                    if let Some(c) = core.get_mut(j) {
                        c.remove(pwc_key(asid, m.vpn, parent_shift));
                    }
                }
            }
            let p = self.nodes[parent as usize].as_mut().unwrap();
            let i = p.index(m.vpn);
            p.entries[i] = 0;
            p.used -= 1;
        }
        // An empty root is freed too: a 2 MiB root per idle address space would be waste.
        if self.node(root).used == 0 {
            self.free_node(phys, root);
            self.roots[asid as usize] = NO_NODE;
        }
    }

    /// A walk's last read is the entry of the lowest node it reaches, which misses the host's
    /// caches on a large table; the nodes above are few and stay cached. Follows the upper
    /// nodes (read only) and prefetches that entry without reading it.
    #[inline]
    fn prefetch(&self, asid: Asid, vpn: Vpn, mem: &MemSystem) {
        let Some(&root) = self.roots.get(asid as usize).filter(|r| **r != NO_NODE) else {
            return;
        };
        let mut id = root;
        loop {
            let n = self.node(id);
            if n.shift == 0 {
                crate::prefetch::host_prefetch(&n.entries[n.index(vpn)]);
                mem.prefetch(self.entry_addr(id, vpn));
                return;
            }
            match self.read(id, vpn) {
                Read::Next(child) => id = child,
                Read::Leaf(_) | Read::Empty => return,
            }
        }
    }

    #[inline]
    fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
        self.walks += 1;
        let Some(&root) = self.roots.get(asid as usize).filter(|r| **r != NO_NODE) else {
            return WalkResult {
                mapping: None,
                latency_cycles: 0,
                mem_accesses: 0,
            };
        };
        let mut latency = 0;
        let mut id = root;
        if !self.pwcs.is_empty() {
            latency += self.cfg.pwc_latency_cycles;
            self.pwc_lookups += 1;
            for (j, shift) in PWC_SHIFTS.iter().enumerate() {
                if let Some(node) = self.pwcs[j].get(pwc_key(asid, vpn, *shift)) {
                    self.pwc_hits[j] += 1;
                    id = node as u32;
                    break;
                }
            }
        }
        let mut accesses = 0;
        loop {
            latency += mem.pt_access(self.entry_addr(id, vpn)).latency_cycles;
            accesses += 1;
            match self.read(id, vpn) {
                Read::Empty => {
                    self.walk_accesses += accesses as u64;
                    return WalkResult {
                        mapping: None,
                        latency_cycles: latency,
                        mem_accesses: accesses,
                    };
                }
                Read::Leaf(m) => {
                    self.walk_accesses += accesses as u64;
                    return WalkResult {
                        mapping: Some(m),
                        latency_cycles: latency,
                        mem_accesses: accesses,
                    };
                }
                Read::Next(child) => {
                    let shift = self.node(id).shift;
                    if let Some(j) = PWC_SHIFTS.iter().position(|s| *s == shift) {
                        if let Some(c) = self.pwcs.get_mut(j) {
                            c.insert(pwc_key(asid, vpn, shift), child as u64);
                        }
                    }
                    id = child;
                }
            }
        }
    }

    fn set_cores(&mut self, n: usize) {
        self.pwcs.set_cores(n);
    }

    fn select_core(&mut self, core: usize) {
        self.pwcs.select(core);
    }

    fn flush_mmu_caches(&mut self) {
        for c in self.pwcs.iter_mut() {
            c.remove_if(|_| true);
        }
    }

    fn mmu_cache_misses(&self) -> u64 {
        self.pwc_lookups - self.pwc_hits.iter().sum::<u64>()
    }

    fn footprint(&self) -> PtFootprint {
        self.mem.footprint()
    }

    fn stats(&self, out: &mut Stats) {
        let s = out.section("fpt");
        let live = self.nodes.iter().flatten();
        let (mut flat, mut plain) = (0u64, 0u64);
        for n in live {
            if n.bits == 18 {
                flat += 1;
            } else {
                plain += 1;
            }
        }
        s.put_u64("flattened_tables", flat);
        s.put_u64("radix_nodes", plain);
        s.put_u64("flattened_upper_created", self.flattened_created[0]);
        s.put_u64("flattened_lower_created", self.flattened_created[1]);
        s.put_u64("upper_fallbacks", self.fallbacks[0]);
        s.put_u64("lower_fallbacks", self.fallbacks[1]);
        s.put_u64("walks", self.walks);
        s.put_f64("accesses_per_walk", ratio(self.walk_accesses, self.walks));
        s.put_u64("pwc_lookups", self.pwc_lookups);
        let mut remaining = self.pwc_lookups;
        for (j, name) in ["pde", "pdpte", "pml4e"].iter().enumerate() {
            s.put_u64(&format!("pwc_{name}_hits"), self.pwc_hits[j]);
            s.put_f64(
                &format!("pwc_{name}_miss_rate"),
                1.0 - ratio(self.pwc_hits[j], remaining),
            );
            remaining -= self.pwc_hits[j];
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

    fn setup(cfg: FptConfig) -> (Fpt, PhysMem, MemSystem) {
        let mut phys = PhysMem::new(4 << 30);
        let d = Fpt::new(&cfg, &mut phys).unwrap();
        (d, phys, MemSystem::new(&MemConfig::default()))
    }

    fn m(vpn: u64, pfn: u64, size: PageSize) -> Mapping {
        Mapping::writable(vpn, pfn, size)
    }

    #[test]
    fn a_cold_walk_makes_2_references_when_flattened() {
        let (mut d, mut phys, mut mem) = setup(FptConfig::default());
        d.map(&mut phys, 0, m(0x1_2345, 9, PageSize::Size4K))
            .unwrap();
        let w = d.walk(0, Vpn(0x1_2345), &mut mem);
        assert_eq!(w.mapping.unwrap().pfn, Pfn(9));
        assert_eq!(w.mem_accesses, 2);
        assert_eq!(d.footprint().bytes, 2 * (2 << 20));
    }

    #[test]
    fn a_cold_walk_makes_4_references_without_2m_blocks() {
        let (mut d, mut phys, mut mem) = setup(FptConfig::default());
        // Take every 2 MiB and larger block: only 4 KiB..1 MiB blocks remain.
        let mut held = Vec::new();
        while phys.can_alloc(FLAT_ORDER) {
            held.push(phys.alloc(FLAT_ORDER, crate::os::FrameUse::Data).unwrap());
        }
        let small = phys.alloc(8, crate::os::FrameUse::Data);
        assert!(small.is_err(), "the test machine is all 2 MiB blocks");
        phys.free(held.pop().unwrap(), FLAT_ORDER, crate::os::FrameUse::Data);
        phys.alloc(0, crate::os::FrameUse::Data).unwrap(); // split the last 2 MiB block
        assert!(!phys.can_alloc(FLAT_ORDER));
        d.map(&mut phys, 0, m(0x1_2345, 9, PageSize::Size4K))
            .unwrap();
        let w = d.walk(0, Vpn(0x1_2345), &mut mem);
        assert_eq!(w.mapping.unwrap().pfn, Pfn(9));
        assert_eq!(w.mem_accesses, 4);
    }

    #[test]
    fn flattening_can_be_switched_off_per_pair() {
        let cfg = FptConfig {
            flatten_upper: false,
            ..FptConfig::default()
        };
        let (mut d, mut phys, mut mem) = setup(cfg);
        d.map(&mut phys, 0, m(0x1_2345, 9, PageSize::Size4K))
            .unwrap();
        assert_eq!(d.walk(0, Vpn(0x1_2345), &mut mem).mem_accesses, 3);
    }

    #[test]
    fn a_2m_page_in_a_flattened_table_answers_every_4k_vpn_in_one_read() {
        let (mut d, mut phys, mut mem) = setup(FptConfig::default());
        let huge = m(1024, 2048, PageSize::Size2M);
        d.map(&mut phys, 0, m(5, 7, PageSize::Size4K)).unwrap();
        d.map(&mut phys, 0, huge).unwrap();
        for off in [0, 1, 300, 511] {
            assert_eq!(d.walk(0, Vpn(1024 + off), &mut mem).mapping, Some(huge));
        }
        d.unmap(&mut phys, 0, huge);
        assert_eq!(d.walk(0, Vpn(1024 + 300), &mut mem).mapping, None);
        assert_eq!(d.walk(0, Vpn(5), &mut mem).mapping.unwrap().pfn, Pfn(7));
    }

    #[test]
    fn a_region_whose_first_page_is_2m_keeps_an_ordinary_page_directory() {
        let (mut d, mut phys, mut mem) = setup(FptConfig::default());
        let huge = m(1 << 18, 1 << 18, PageSize::Size2M);
        d.map(&mut phys, 0, huge).unwrap();
        assert_eq!(d.footprint().bytes, (2 << 20) + 4096);
        let w = d.walk(0, Vpn((1 << 18) + 77), &mut mem);
        assert_eq!((w.mapping, w.mem_accesses), (Some(huge), 2));
    }

    #[test]
    fn a_1g_page_is_a_leaf_of_the_flattened_root() {
        let (mut d, mut phys, mut mem) = setup(FptConfig::default());
        let g = m(1 << 18, 1 << 18, PageSize::Size1G);
        d.map(&mut phys, 0, g).unwrap();
        let w = d.walk(0, Vpn((1 << 18) + 12345), &mut mem);
        assert_eq!(w.mapping, Some(g));
        assert_eq!(w.mem_accesses, 1);
    }

    #[test]
    fn a_warm_pwc_skips_the_root_and_empty_tables_are_freed() {
        let (mut d, mut phys, mut mem) = setup(FptConfig::default());
        d.map(&mut phys, 0, m(0x1000, 1, PageSize::Size4K)).unwrap();
        d.map(&mut phys, 0, m(0x1001, 2, PageSize::Size4K)).unwrap();
        assert_eq!(d.walk(0, Vpn(0x1000), &mut mem).mem_accesses, 2);
        assert_eq!(d.walk(0, Vpn(0x1001), &mut mem).mem_accesses, 1);
        d.unmap(&mut phys, 0, m(0x1000, 1, PageSize::Size4K));
        d.unmap(&mut phys, 0, m(0x1001, 2, PageSize::Size4K));
        assert_eq!(d.footprint().bytes, 0, "even the root is freed");
        assert_eq!(d.walk(0, Vpn(0x1001), &mut mem).mapping, None);
    }
}
