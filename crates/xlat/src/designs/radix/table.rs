//! The radix page-table structure itself (nodes of 512 8-byte entries in 4 KiB frames), shared by
//! `radix`, `ideal` and `perfect_tlb`, which differ only in how the hardware reaches the entries.
//!
//! Contract: a node lives in one 4 KiB frame from the buddy allocator; the entry for index `i` of
//! a node is at physical address `node_frame + 8 * i`; a node that holds no entry (other than a
//! root) is freed at once, as Linux frees page tables of unmapped ranges.
//!
//! Tailored pages (TPS, ISCA'20 §III-A1; only in a table made with
//! [`RadixTable::with_tailored`]): a page of `2^r` pages of a level's size (`r` in 1..=8: 8 KiB ..
//! 1 MiB at the PTE level, 4 MiB .. 512 MiB at the PD level) is a leaf at that level written in
//! each of the `2^r` aligned entries an address in it can index. Each carries the T bit and the
//! size NAPOT-like in the PFN bits the larger page leaves unused (`r - 1` ones above a zero, in
//! the level's page units: the smallest tailored size has s0 = 0). With
//! [`TailoredPtes::Copies`] every entry is a full copy of the true PTE; with
//! [`TailoredPtes::Alias`] only the first is, and the others are alias PTEs that send the walk to
//! the true one (one more access). A table made with [`RadixTable::new`] never holds either, so
//! its entries and walks are exactly the x86 ones.

use crate::addr::{Asid, Mapping, Paddr, PageSize, Pfn, Vpn, PTE_BYTES};
use crate::designs::{PtFootprint, PtMemory};
use crate::os::{OsError, PhysMem};

/// Entries per node.
pub const FANOUT: u64 = 512;
const PRESENT: u64 = 1;
const LEAF: u64 = 2;
const WRITABLE: u64 = 4;
/// Arm-style contiguous hint on a leaf: set on all 16 entries of a naturally aligned group that
/// are present leaves mapping 16 physically contiguous, naturally aligned pages with equal
/// permissions (kept exact by every map and unmap; see [`RadixTable::is_contiguous`]).
const CONTIG: u64 = 8;
/// Entries in a contiguous group (Arm, 4 KiB granule: 16 x 4 KiB = 64 KiB, 16 x 2 MiB = 32 MiB).
pub const CONTIG_ENTRIES: u64 = 16;
/// TPS's T bit on a leaf: the entry belongs to a tailored page, whose size is encoded in the low
/// PFN bits (NAPOT-like, see the module doc).
const TAILORED: u64 = 16;
/// On a tailored leaf: this is an alias PTE, not the true one ([`TailoredPtes::Alias`]).
const ALIAS: u64 = 32;

/// How the entries of a tailored page other than its first are written (TPS §III-A1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TailoredPtes {
    /// Alias PTEs: they carry the T bit and the size only; a walk that reads one makes one more
    /// access, to the true PTE (the entry with the page-offset index bits zeroed).
    Alias,
    /// Full copies of the true PTE: no extra walk access, but every update writes all of them.
    Copies,
}
const NO_NODE: u32 = u32::MAX;

/// Node index in the arena.
pub type NodeId = u32;

/// One step of a walk: the entry read and where it lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The entry points to the next node.
    Next(NodeId),
    /// The entry is a leaf: the translation.
    Leaf(Mapping),
    /// The entry is empty: the page is not mapped.
    Empty,
    /// An alias PTE of a tailored page: the true PTE is the entry that the page's first VPN
    /// selects in the same node (one more read).
    Alias(Vpn),
}

/// A set of radix trees, one per ASID.
///
/// Nodes live in flat arrays indexed by `NodeId` (entries of node `n` at `entries[n * 512..]`):
/// one indirection less per level than boxed nodes, which matters because the simulator's own
/// cache misses on these arrays dominate a random-access run.
pub struct RadixTable {
    levels: u32,
    /// `Some` when the table holds tailored pages (TPS), and how.
    tailored: Option<TailoredPtes>,
    /// Leaf entries written by `map` and `unmap` (set and cleared), and the maps and unmaps.
    leaf_writes: u64,
    leaf_updates: u64,
    /// The same for tailored pages only.
    tailored_writes: u64,
    tailored_updates: u64,
    /// Non-leaf: `child_id << 12 | PRESENT`; leaf: `pfn << 12 | PRESENT | LEAF | WRITABLE?`.
    entries: Vec<u64>,
    frames: Vec<Pfn>,
    used: Vec<u16>,
    free_ids: Vec<NodeId>,
    roots: Vec<NodeId>,
    mem: PtMemory,
}

/// Index into a node at `level` (0 = the 4 KiB leaf level) for `vpn`.
#[inline]
pub fn index_at(vpn: Vpn, level: u32) -> u64 {
    (vpn.0 >> (9 * level)) & (FANOUT - 1)
}

/// The level whose entries are leaves of `size` (0 for 4 KiB, 1 for 2 MiB, 2 for 1 GiB; a
/// tailored size is a leaf at the level of the largest x86 size not above it).
#[inline]
pub fn leaf_level(size: PageSize) -> u32 {
    size.order() as u32 / 9
}

impl RadixTable {
    /// Empty tables with `levels` levels (4 or 5).
    pub fn new(levels: u32) -> RadixTable {
        RadixTable {
            levels,
            tailored: None,
            leaf_writes: 0,
            leaf_updates: 0,
            tailored_writes: 0,
            tailored_updates: 0,
            entries: Vec::new(),
            frames: Vec::new(),
            used: Vec::new(),
            free_ids: Vec::new(),
            roots: Vec::new(),
            mem: PtMemory::default(),
        }
    }

    /// Empty tables with `levels` levels that also hold tailored pages of every power of two
    /// (TPS), their extra entries written as `ptes` says.
    pub fn with_tailored(levels: u32, ptes: TailoredPtes) -> RadixTable {
        RadixTable {
            tailored: Some(ptes),
            ..RadixTable::new(levels)
        }
    }

    /// How tailored pages are written (`None`: an x86 table, which holds none).
    pub fn tailored(&self) -> Option<TailoredPtes> {
        self.tailored
    }

    /// Leaf entries written so far by maps and unmaps (each entry set or cleared counts once).
    pub fn leaf_writes(&self) -> u64 {
        self.leaf_writes
    }

    /// Maps and unmaps so far (the updates that `leaf_writes` counts the writes of).
    pub fn leaf_updates(&self) -> u64 {
        self.leaf_updates
    }

    /// Leaf entries of tailored pages written so far by maps and unmaps.
    pub fn tailored_writes(&self) -> u64 {
        self.tailored_writes
    }

    /// Maps and unmaps of tailored pages so far.
    pub fn tailored_updates(&self) -> u64 {
        self.tailored_updates
    }

    /// Number of levels.
    pub fn levels(&self) -> u32 {
        self.levels
    }

    /// The root node of `asid`, if it has one.
    #[inline]
    pub fn root(&self, asid: Asid) -> Option<NodeId> {
        self.roots
            .get(asid as usize)
            .copied()
            .filter(|r| *r != NO_NODE)
    }

    #[inline]
    fn slot(id: NodeId, vpn: Vpn, level: u32) -> usize {
        id as usize * FANOUT as usize + index_at(vpn, level) as usize
    }

    /// Physical address of the entry of node `id` that `vpn` selects at `level`.
    #[inline]
    pub fn entry_addr(&self, id: NodeId, vpn: Vpn, level: u32) -> Paddr {
        Paddr(self.frames[id as usize].addr().0 + index_at(vpn, level) * PTE_BYTES)
    }

    /// Read the entry of node `id` (at `level`) that `vpn` selects.
    #[inline]
    pub fn read(&self, id: NodeId, vpn: Vpn, level: u32) -> Step {
        let e = self.entries[Self::slot(id, vpn, level)];
        if e & PRESENT == 0 {
            Step::Empty
        } else if e & LEAF != 0 {
            if e & TAILORED != 0 {
                return Self::read_tailored(e, vpn, level);
            }
            let size = PageSize::X86[level as usize];
            Step::Leaf(Mapping {
                vpn: vpn.align_down(size),
                pfn: Pfn(e >> 12),
                size,
                writable: e & WRITABLE != 0,
            })
        } else {
            Step::Next((e >> 12) as NodeId)
        }
    }

    /// A tailored leaf: decode the size from the PFN bits (count the ones above the lowest zero,
    /// in units of the level's page) and the page from it.
    #[cold]
    fn read_tailored(e: u64, vpn: Vpn, level: u32) -> Step {
        let unit_shift = 9 * level;
        let units = (e >> 12) >> unit_shift;
        let r = units.trailing_ones() + 1;
        let size = PageSize::from_order((unit_shift + r) as u8).expect("encoded size");
        let first = vpn.align_down(size);
        if e & ALIAS != 0 {
            return Step::Alias(first);
        }
        Step::Leaf(Mapping {
            vpn: first,
            pfn: Pfn((units & !((1 << r) - 1)) << unit_shift),
            size,
            writable: e & WRITABLE != 0,
        })
    }

    /// The level at which a page of `size` is a leaf, and log2 of the entries it takes there.
    #[inline]
    fn leaf_span(size: PageSize) -> (u32, u32) {
        let order = size.order() as u32;
        (order / 9, order % 9)
    }

    /// Prefetch (host caches) the entry a walk of `vpn` ends at; returns its physical address
    /// (for prefetching the simulated caches), or `None` when the walk would end above the
    /// last level. The levels above are few and stay cached, except at large footprints the
    /// one above the last, which the engine prefetches earlier ([`RadixTable::prefetch_upper`]).
    #[inline]
    pub fn prefetch(&self, asid: Asid, vpn: Vpn) -> Option<Paddr> {
        let mut node = self.root(asid)?;
        for level in (1..self.levels).rev() {
            match self.read(node, vpn, level) {
                Step::Next(child) => node = child,
                _ => return None,
            }
        }
        crate::prefetch::host_prefetch(&self.entries[Self::slot(node, vpn, 0)]);
        Some(self.entry_addr(node, vpn, 0))
    }

    /// Prefetch (host caches) the entry of the level above the last that a walk of `vpn`
    /// reads, the one [`RadixTable::prefetch`] reads to find the last level's node: at large
    /// footprints that level too outgrows the host's caches. The levels above it stay cached.
    #[inline]
    pub fn prefetch_upper(&self, asid: Asid, vpn: Vpn) {
        let Some(mut node) = self.root(asid) else {
            return;
        };
        if self.levels < 2 {
            return;
        }
        for level in (2..self.levels).rev() {
            match self.read(node, vpn, level) {
                Step::Next(child) => node = child,
                _ => return,
            }
        }
        crate::prefetch::host_prefetch(&self.entries[Self::slot(node, vpn, 1)]);
    }

    /// Software lookup (no timing): the translation and the address of its leaf entry.
    pub fn lookup(&self, asid: Asid, vpn: Vpn) -> Option<(Mapping, Paddr)> {
        match self.lookup_entry(asid, vpn) {
            (Some(m), Some(entry)) => Some((m, entry)),
            _ => None,
        }
    }

    /// Software lookup (no timing): the translation, if any, and the address of the last entry
    /// read (the leaf entry, or the empty entry that ended the lookup; `None` when the address
    /// space has no table yet).
    pub fn lookup_entry(&self, asid: Asid, vpn: Vpn) -> (Option<Mapping>, Option<Paddr>) {
        let Some(mut node) = self.root(asid) else {
            return (None, None);
        };
        for level in (0..self.levels).rev() {
            let entry = Some(self.entry_addr(node, vpn, level));
            match self.read(node, vpn, level) {
                Step::Empty => return (None, entry),
                Step::Leaf(m) => return (Some(m), entry),
                Step::Alias(first) => {
                    let entry = Some(self.entry_addr(node, first, level));
                    return match self.read(node, first, level) {
                        Step::Leaf(m) => (Some(m), entry),
                        _ => (None, entry),
                    };
                }
                Step::Next(child) => node = child,
            }
        }
        unreachable!("level 0 entries are leaves or empty")
    }

    fn new_node(&mut self, phys: &mut PhysMem) -> Result<NodeId, OsError> {
        let frame = self.mem.alloc(phys, 0)?;
        Ok(match self.free_ids.pop() {
            Some(id) => {
                // A freed node's entries are all zero already (it was freed because empty).
                self.frames[id as usize] = frame;
                self.used[id as usize] = 0;
                id
            }
            None => {
                self.frames.push(frame);
                self.used.push(0);
                self.entries.resize(self.entries.len() + FANOUT as usize, 0);
                (self.frames.len() - 1) as NodeId
            }
        })
    }

    fn free_node(&mut self, phys: &mut PhysMem, id: NodeId) {
        debug_assert_eq!(self.used[id as usize], 0);
        self.mem.free(phys, self.frames[id as usize], 0);
        self.free_ids.push(id);
    }

    /// Install `m`, creating intermediate nodes as needed.
    pub fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
        let node = self.ensure_path(phys, asid, m)?;
        let (leaf, span_log2) = Self::leaf_span(m.size);
        self.leaf_updates += 1;
        if span_log2 != 0 {
            return self.map_tailored(node, m, leaf, span_log2);
        }
        self.leaf_writes += 1;
        let slot = &mut self.entries[Self::slot(node, m.vpn, leaf)];
        if *slot & PRESENT != 0 {
            return Err(OsError(format!(
                "radix: mapping {m:?} over a present entry (OS model bug)"
            )));
        }
        *slot = (m.pfn.0 << 12) | PRESENT | LEAF | if m.writable { WRITABLE } else { 0 };
        self.used[node as usize] += 1;
        if leaf <= 1 {
            self.mark_contiguous(node, m.vpn, leaf);
        }
        Ok(())
    }

    /// The node that will hold the leaf entry of `m` (whose frame need not be chosen yet),
    /// creating the intermediate nodes on the way as needed, as Linux's fault path allocates
    /// the page-table pages before the data page. A leaf node created here holds no entry
    /// until `m` is mapped.
    pub fn ensure_path(
        &mut self,
        phys: &mut PhysMem,
        asid: Asid,
        m: Mapping,
    ) -> Result<NodeId, OsError> {
        if self.roots.len() <= asid as usize {
            self.roots.resize(asid as usize + 1, NO_NODE);
        }
        if self.roots[asid as usize] == NO_NODE {
            self.roots[asid as usize] = self.new_node(phys)?;
        }
        let mut node = self.roots[asid as usize];
        let (leaf, span_log2) = Self::leaf_span(m.size);
        if span_log2 != 0 && self.tailored.is_none() {
            return Err(OsError(format!(
                "radix: {m:?} is not an x86 page size (the design declares 4KiB, 2MiB, 1GiB)"
            )));
        }
        for level in (leaf + 1..self.levels).rev() {
            match self.read(node, m.vpn, level) {
                Step::Next(child) => node = child,
                Step::Empty => {
                    let child = self.new_node(phys)?;
                    self.entries[Self::slot(node, m.vpn, level)] = ((child as u64) << 12) | PRESENT;
                    self.used[node as usize] += 1;
                    node = child;
                }
                Step::Leaf(_) | Step::Alias(_) => {
                    return Err(OsError(format!(
                        "radix: mapping {m:?} overlaps an existing page (OS model bug)"
                    )))
                }
            }
        }
        Ok(node)
    }

    /// Write the `2^span_log2` entries of tailored page `m` in node `id` at `level`: the true PTE
    /// first, then copies or alias PTEs (TPS §III-A1).
    fn map_tailored(
        &mut self,
        id: NodeId,
        m: Mapping,
        level: u32,
        span_log2: u32,
    ) -> Result<(), OsError> {
        let first = Self::slot(id, m.vpn, level);
        let n = 1usize << span_log2;
        if self.entries[first..first + n]
            .iter()
            .any(|e| e & PRESENT != 0)
        {
            return Err(OsError(format!(
                "radix: tailored {m:?} over a present entry (OS model bug)"
            )));
        }
        let unit_shift = 9 * level;
        // NAPOT-like size: in the level's page units, span_log2 - 1 ones above a zero.
        let size_bits = ((1u64 << (span_log2 - 1)) - 1) << unit_shift;
        let true_pte = ((m.pfn.0 | size_bits) << 12)
            | PRESENT
            | LEAF
            | TAILORED
            | if m.writable { WRITABLE } else { 0 };
        let other = match self.tailored {
            Some(TailoredPtes::Copies) => true_pte,
            _ => true_pte | ALIAS,
        };
        self.entries[first] = true_pte;
        for e in &mut self.entries[first + 1..first + n] {
            *e = other;
        }
        self.used[id as usize] += n as u16;
        self.leaf_writes += n as u64;
        self.tailored_writes += n as u64;
        self.tailored_updates += 1;
        Ok(())
    }

    /// The OS side of the contiguous hint, as Linux's arm64 `contpte` code folds a range: when
    /// the aligned group of 16 entries holding `vpn`'s entry (of node `id` at `level`) has become
    /// 16 present leaves mapping naturally aligned, physically contiguous pages with equal
    /// permissions, mark all of them. (Unmapping any of them clears the marks: `unmap`.)
    fn mark_contiguous(&mut self, id: NodeId, vpn: Vpn, level: u32) {
        let first = (Self::slot(id, vpn, level) as u64 & !(CONTIG_ENTRIES - 1)) as usize;
        let group = &mut self.entries[first..first + CONTIG_ENTRIES as usize];
        let step = 1u64 << (9 * level);
        let e0 = group[0];
        let pfn0 = e0 >> 12;
        let all = e0 & (PRESENT | LEAF | TAILORED) == PRESENT | LEAF
            && pfn0.is_multiple_of(CONTIG_ENTRIES * step)
            && group.iter().enumerate().all(|(j, e)| {
                e & (PRESENT | LEAF | TAILORED) == PRESENT | LEAF
                    && e & WRITABLE == e0 & WRITABLE
                    && e >> 12 == pfn0 + j as u64 * step
            });
        if all {
            for e in group.iter_mut() {
                *e |= CONTIG;
            }
        }
    }

    /// Whether the leaf entry of node `id` (at `level`) that `vpn` selects carries the
    /// contiguous hint (then its aligned group of 16 is as `CONTIG` says).
    #[inline]
    pub fn is_contiguous(&self, id: NodeId, vpn: Vpn, level: u32) -> bool {
        let e = self.entries[Self::slot(id, vpn, level)];
        e & (PRESENT | LEAF | CONTIG) == PRESENT | LEAF | CONTIG
    }

    /// The node at `level` whose entry a walk of `vpn` reads there (software, no timing).
    pub fn node_at(&self, asid: Asid, vpn: Vpn, level: u32) -> Option<NodeId> {
        let mut node = self.root(asid)?;
        for l in (level + 1..self.levels).rev() {
            match self.read(node, vpn, l) {
                Step::Next(child) => node = child,
                _ => return None,
            }
        }
        Some(node)
    }

    /// Remove `m`; frees nodes left empty. Calls `on_free(level, vpn)` for every freed non-root
    /// node (its level and a VPN it covered), so MMU caches pointing at it can be invalidated.
    pub fn unmap(
        &mut self,
        phys: &mut PhysMem,
        asid: Asid,
        m: Mapping,
        mut on_free: impl FnMut(u32),
    ) {
        let Some(root) = self.root(asid) else { return };
        let (leaf, span_log2) = Self::leaf_span(m.size);
        let mut path = [NO_NODE; 6];
        let mut node = root;
        for level in (leaf..self.levels).rev() {
            path[level as usize] = node;
            if level == leaf {
                break;
            }
            match self.read(node, m.vpn, level) {
                Step::Next(child) => node = child,
                _ => return,
            }
        }
        let at = Self::slot(node, m.vpn, leaf);
        if span_log2 != 0 {
            let n = 1usize << span_log2;
            if self.entries[at] & (PRESENT | LEAF | TAILORED) != PRESENT | LEAF | TAILORED {
                return;
            }
            // Every entry goes: a stale alias left behind would send a later walk to whatever
            // the true PTE's slot then holds.
            self.entries[at..at + n].fill(0);
            self.used[node as usize] -= n as u16;
            self.leaf_writes += n as u64;
            self.leaf_updates += 1;
            self.tailored_writes += n as u64;
            self.tailored_updates += 1;
        } else {
            if !self.clear_leaf(at) {
                return;
            }
            self.used[node as usize] -= 1;
        }
        // Free empty nodes bottom-up (never the root).
        for level in leaf..self.levels - 1 {
            let id = path[level as usize];
            if self.used[id as usize] != 0 {
                break;
            }
            self.free_node(phys, id);
            on_free(level);
            let parent = path[level as usize + 1];
            self.entries[Self::slot(parent, m.vpn, level + 1)] = 0;
            self.used[parent as usize] -= 1;
        }
    }

    /// Clear the x86 leaf at `at` (unfolding its contiguous group); false if it holds none.
    fn clear_leaf(&mut self, at: usize) -> bool {
        let slot = &mut self.entries[at];
        if *slot & (PRESENT | LEAF) != PRESENT | LEAF {
            return false;
        }
        self.leaf_writes += 1;
        self.leaf_updates += 1;
        let was_contiguous = *slot & CONTIG != 0;
        *slot = 0;
        if was_contiguous {
            // The group is no longer whole: unfold it.
            let first = at & !(CONTIG_ENTRIES as usize - 1);
            for e in &mut self.entries[first..first + CONTIG_ENTRIES as usize] {
                *e &= !CONTIG;
            }
        }
        true
    }

    /// Page-table memory held.
    pub fn footprint(&self) -> PtFootprint {
        self.mem.footprint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(vpn: u64, pfn: u64, size: PageSize) -> Mapping {
        Mapping::writable(vpn, pfn, size)
    }

    #[test]
    fn a_4k_mapping_needs_one_node_per_level_and_frees_them_on_unmap() {
        let mut phys = PhysMem::new(1 << 30);
        let mut t = RadixTable::new(4);
        t.map(&mut phys, 0, m(0x12345, 7, PageSize::Size4K))
            .unwrap();
        assert_eq!(t.footprint().bytes, 4 * 4096);
        assert_eq!(t.lookup(0, Vpn(0x12345)).unwrap().0.pfn, Pfn(7));
        let mut freed = Vec::new();
        t.unmap(&mut phys, 0, m(0x12345, 7, PageSize::Size4K), |l| {
            freed.push(l)
        });
        assert_eq!(freed, vec![0, 1, 2]);
        assert_eq!(t.footprint().bytes, 4096, "only the root remains");
        assert!(t.lookup(0, Vpn(0x12345)).is_none());
    }

    #[test]
    fn a_2m_mapping_is_a_leaf_at_the_page_directory() {
        let mut phys = PhysMem::new(1 << 30);
        let mut t = RadixTable::new(4);
        t.map(&mut phys, 0, m(512, 1024, PageSize::Size2M)).unwrap();
        assert_eq!(t.footprint().bytes, 3 * 4096);
        let (got, _) = t.lookup(0, Vpn(700)).unwrap();
        assert_eq!(got, m(512, 1024, PageSize::Size2M));
    }

    #[test]
    fn mapping_over_a_present_entry_is_refused() {
        let mut phys = PhysMem::new(1 << 30);
        let mut t = RadixTable::new(4);
        t.map(&mut phys, 0, m(5, 1, PageSize::Size4K)).unwrap();
        assert!(t.map(&mut phys, 0, m(5, 2, PageSize::Size4K)).is_err());
    }
}
