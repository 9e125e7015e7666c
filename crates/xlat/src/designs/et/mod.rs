//! # et — Elastic Translations: contiguous-bit radix with CoalaPaging
//!
//! ## Model
//! An Arm VMSAv8-64 4 KiB-granule page table (4 levels of 512 8-byte entries, 2 MiB and 1 GiB
//! blocks: the geometry of [`crate::designs::radix`], whose table and page-walk caches it uses)
//! with the contiguous bit managed transparently by the OS on every write of a leaf entry:
//! - when the 16th entry of an aligned group of 16 leaves (16 x 4 KiB at the PTE level,
//!   16 x 2 MiB at the PMD level) becomes valid and all 16 are present, map physically
//!   contiguous frames from a frame aligned to the group, and have equal permissions, all 16
//!   get the bit; a TLB-miss walk that reads a marked entry caches the whole group as one
//!   64 KiB or 32 MiB entry (`tlb.coalescing = "contiguous_bit"`, [`Design::coalesced`]);
//! - any change of frame or permission of one member (the OS model reports both as an unmap,
//!   followed by a map for a permission change) clears the bit on all 16 and invalidates the
//!   TLB entries of all 16 ([`Design::take_broken_group`]); the group is re-formed only by a
//!   later write that completes it again. Splitting a 2 MiB page re-forms its 32 groups of
//!   64 KiB by itself: the 512 new 4 KiB entries are written over the same contiguous frames.
//! - Invalidation cost: Neoverse N1 has no range invalidation, so breaking a group costs 16
//!   TLB invalidations; the OS model already charges one shootdown for the unmapped page, the
//!   other 15 are charged here (`invalidation_cycles` each, OS time). With
//!   `range_invalidation = true` one range invalidation replaces them (no extra charge).
//!
//! **CoalaPaging** (the placement hook, [`Design::place`]): a 4 KiB page is placed for 64 KiB
//! contiguity, a 2 MiB page (a THP fault) for 32 MiB contiguity. The other 15 entries of the
//! aligned group (16 x 4 KiB or 16 x 2 MiB) are looked at in order; the first present sibling
//! whose physical offset in the group equals its virtual offset fixes the group's base, and the
//! page goes to base + its own offset, if that frame (block) is free. An empty group takes the
//! smallest free block of order >= 4 (64 KiB) or of order 13 (32 MiB), keeps the page's frame
//! at its virtual offset and returns the rest to the **tail** of the free lists: a soft
//! reservation that later allocations take last but may take. When the target is busy, no
//! block is free, or the group holds only siblings at other offsets, the hook declines and the
//! OS policy allocates as usual (the fault succeeds, the contiguity is lost).
//!
//! ## Configuration
//! `[et]`: `coala_paging` (true; false leaves placement to the OS policy, i.e. the contiguous
//! bit is still managed but contiguity arises only by chance or from mTHP folios),
//! `range_invalidation` (false: Neoverse N1's 16 invalidations per broken group),
//! `invalidation_cycles` (500, as `os.migration.shootdown_cycles`), and the radix table's
//! `levels`, `pwc_levels`, `pwc_entries`, `pwc_ways`, `pwc_latency_cycles` (as `[radix]`).
//!
//! Statistics (`et.*`): CoalaPaging's outcomes (`place_requests_4k` / `_2m`,
//! `placed_by_sibling_4k` / `_2m`, `placed_new_group_4k` / `_2m`, `fallback_target_busy`,
//! `fallback_no_block`, `fallback_misaligned_group`), contiguous groups formed and broken
//! (`groups_formed_64k` / `_32m`, `groups_broken_64k` / `_32m`), `group_invalidations` (TLB
//! invalidations of the other members of broken groups) and `invalidation_cycles` (their OS
//! cost), plus the radix PWC figures (`pwc_*`).
//!
//! ## Deviations from the paper
//! - The artifact's fault path decides THP vs 4 KiB by the THP mode; here the OS policy does
//!   (`os.policy = "thp"` with `os.thp`), and the hook places what it chose. Pages of other
//!   sizes (mTHP folios) are left to the policy.
//! - A group whose present siblings all sit at other physical offsets is not given a new
//!   block (contiguity is impossible until they change); the facts file names only the empty
//!   group.
//! - The allocator's orders already reach 1 GiB (18), so "raising the maximum order to 14" is
//!   not needed for order-13 blocks.
//! - The buddy allocator deletes free-list entries lazily: a stale entry for a block that a
//!   soft reservation later returns at the same order is valid again and can be taken before
//!   the tail, so a soft reservation is usually, not always, taken last.
//! - Leshy-hinted placement (offline mode) and CoalaKhugepaged are not implemented here.
//! - The N1 L1 DTLB, which holds 64 KiB but not 32 MiB entries, is the machine's
//!   `tlb.l1_max_span_bytes` (set to 64 KiB by the `neoverse-n1` preset): a 32 MiB entry is held
//!   in the L1 as the 2 MiB page that was accessed.
//!
//! ## References
//! Elastic Translations (MICRO'24) talk slides ("CoalaPaging", "transparent contiguous-bit
//! management"); `elastic-translations-facts.md` (from the authors' artifact: CoalaPaging's
//! rule, contiguous-bit management, invalidation cost, N1 TLBs); Arm ARM (DDI 0487) D8.6.1,
//! the Contiguous bit.

use crate::addr::{Asid, Mapping, PageSize, Pfn, Vpn};
use crate::designs::radix::{Radix, RadixConfig, CONTIG_ENTRIES};
use crate::designs::Design;
use crate::mmu::{CoalesceRequest, CoalescedSpan};
use crate::os::{FrameUse, OsError, PhysMem, PlaceRequest};
use crate::stats::{Stats, StatsExt};
use serde::{Deserialize, Serialize};

/// `[et]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EtConfig {
    /// CoalaPaging fault-time placement on (the placement hook).
    pub coala_paging: bool,
    /// One range invalidation per broken contiguous group (CPUs with TLBI range); false:
    /// 16 invalidations (Neoverse N1).
    pub range_invalidation: bool,
    /// OS cycles of one TLB invalidation of a broken group's other members.
    pub invalidation_cycles: u64,
    /// Radix levels (4 or 5).
    pub levels: u32,
    /// Upper levels with a page-walk cache.
    pub pwc_levels: u32,
    /// Entries per page-walk cache (0 disables them).
    pub pwc_entries: u32,
    /// Associativity of each page-walk cache.
    pub pwc_ways: u32,
    /// Latency of the parallel PWC lookup in cycles.
    pub pwc_latency_cycles: u32,
}

impl Default for EtConfig {
    fn default() -> Self {
        let r = RadixConfig::default();
        EtConfig {
            coala_paging: true,
            range_invalidation: false,
            invalidation_cycles: 500,
            levels: r.levels,
            pwc_levels: r.pwc_levels,
            pwc_entries: r.pwc_entries,
            pwc_ways: r.pwc_ways,
            pwc_latency_cycles: r.pwc_latency_cycles,
        }
    }
}

impl EtConfig {
    fn radix(&self) -> RadixConfig {
        RadixConfig {
            levels: self.levels,
            pwc_levels: self.pwc_levels,
            pwc_entries: self.pwc_entries,
            pwc_ways: self.pwc_ways,
            pwc_latency_cycles: self.pwc_latency_cycles,
        }
    }

    /// Check ranges (the radix fields as `[radix]` checks them).
    pub fn validate(&self) -> Result<(), String> {
        self.radix().validate()
    }
}

/// Counters (see the module doc's Statistics).
#[derive(Clone, Debug, Default)]
struct Counters {
    /// Per group kind: `[64 KiB, 32 MiB]`.
    place_requests: [u64; 2],
    placed_by_sibling: [u64; 2],
    placed_new_group: [u64; 2],
    fallback_target_busy: u64,
    fallback_no_block: u64,
    fallback_misaligned_group: u64,
    groups_formed: [u64; 2],
    groups_broken: [u64; 2],
    /// Pages mapped now, by x86 size index (4 KiB, 2 MiB, 1 GiB).
    mapped_pages: [u64; 3],
    group_invalidations: u64,
}

/// Elastic Translations on a radix table.
pub struct Et {
    radix: Radix,
    cfg: EtConfig,
    c: Counters,
    /// The group the last `unmap` broke, until the engine takes it.
    broken: Option<CoalescedSpan>,
}

/// The contiguous group a page of `size` belongs to: its index in the counters (0: 64 KiB of
/// 4 KiB pages, 1: 32 MiB of 2 MiB pages) and the frames one member spans; `None` for sizes
/// with no contiguous group.
fn group_kind(size: PageSize) -> Option<(usize, u64)> {
    match size {
        PageSize::Size4K => Some((0, 1)),
        PageSize::Size2M => Some((1, PageSize::Size2M.base_pages())),
        _ => None,
    }
}

/// What CoalaPaging chose for a page (before allocating it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoalaTarget {
    /// A present sibling fixed the group's base: the page's frame must be this one.
    Sibling(Pfn),
    /// The group is empty: a new group block, the page at this offset (in 4 KiB frames).
    NewGroup {
        /// Offset of the page in the group, in frames (its virtual offset).
        offset: u64,
    },
    /// Present siblings, none at its virtual offset: no contiguity possible now.
    Misaligned,
}

/// CoalaPaging's rule for a page of `size` (4 KiB or 2 MiB) at `vpn`, given the process's
/// page map: look at the other 15 members of the aligned group in order; the first present
/// sibling whose frame's offset in the group equals its virtual offset fixes the base.
pub fn coala_target(
    pages: &crate::os::pagemap::PageMap,
    vpn: Vpn,
    size: PageSize,
) -> Option<CoalaTarget> {
    let (_, step) = group_kind(size)?;
    let group_frames = CONTIG_ENTRIES * step;
    let first = vpn.0 & !(group_frames - 1);
    let offset = vpn.0 - first;
    let mut any_present = false;
    for j in 0..CONTIG_ENTRIES {
        let v = first + j * step;
        if v == vpn.0 {
            continue;
        }
        let Some(m) = pages.get(Vpn(v)) else {
            continue;
        };
        any_present = true;
        let frame = m.pfn.0 + (v - m.vpn.0);
        // Only a sibling of the page's own size can be a member of the group.
        if m.size == size && frame % group_frames == v - first {
            return Some(CoalaTarget::Sibling(Pfn(frame - (v - first) + offset)));
        }
    }
    Some(if any_present {
        CoalaTarget::Misaligned
    } else {
        CoalaTarget::NewGroup { offset }
    })
}

impl Et {
    /// The contiguous span a marked leaf mapping `m` belongs to, if its entry is marked.
    fn marked_group(&self, asid: Asid, m: Mapping) -> Option<CoalescedSpan> {
        self.radix
            .coalesced(asid, m, CoalesceRequest::ContiguousBit)
    }

    /// Whether the leaf entry of `m` carries the contiguous bit (tests, properties).
    pub fn is_marked(&self, asid: Asid, m: Mapping) -> bool {
        self.marked_group(asid, m).is_some()
    }
}

impl Design for Et {
    type Config = EtConfig;
    crate::designs::radix::forward_to_inner_radix!();

    fn new(cfg: &EtConfig, phys: &mut PhysMem) -> Result<Self, OsError> {
        Ok(Et {
            radix: Radix::new(&cfg.radix(), phys)?,
            cfg: cfg.clone(),
            c: Counters::default(),
            broken: None,
        })
    }

    fn place(&mut self, phys: &mut PhysMem, req: &PlaceRequest) -> Option<Pfn> {
        if !self.cfg.coala_paging {
            return None;
        }
        let (kind, _) = group_kind(req.size)?;
        self.c.place_requests[kind] += 1;
        // The page-table pages first, as Linux's fault path: allocated after the data page
        // they would take the frames just reserved for the group's other pages. Out of memory
        // here: leave the fault to the OS policy, which reports it.
        if self
            .radix
            .prepare_path(phys, req.asid, req.vpn, req.size)
            .is_err()
        {
            return None;
        }
        let order = req.size.order();
        match coala_target(req.pages, req.vpn, req.size)? {
            CoalaTarget::Sibling(pfn) => match phys.alloc_at(pfn, order, FrameUse::Data) {
                Some(pfn) => {
                    self.c.placed_by_sibling[kind] += 1;
                    Some(pfn)
                }
                None => {
                    self.c.fallback_target_busy += 1;
                    None
                }
            },
            CoalaTarget::NewGroup { offset } => {
                let group_order = order + CONTIG_ENTRIES.trailing_zeros() as u8;
                match phys.alloc_soft(group_order, offset, order, FrameUse::Data) {
                    Some(pfn) => {
                        self.c.placed_new_group[kind] += 1;
                        Some(pfn)
                    }
                    None => {
                        self.c.fallback_no_block += 1;
                        None
                    }
                }
            }
            CoalaTarget::Misaligned => {
                self.c.fallback_misaligned_group += 1;
                None
            }
        }
    }

    fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
        self.radix.map(phys, asid, m)?;
        if let Some(i) = m.size.x86_index() {
            self.c.mapped_pages[i] += 1;
        }
        if let Some((kind, _)) = group_kind(m.size) {
            // A mark on the entry just written means this write completed the group.
            if self.is_marked(asid, m) {
                self.c.groups_formed[kind] += 1;
            }
        }
        Ok(())
    }

    fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
        let group = group_kind(m.size).and_then(|(kind, _)| {
            self.marked_group(asid, m).inspect(|_| {
                self.c.groups_broken[kind] += 1;
                if !self.cfg.range_invalidation {
                    self.c.group_invalidations += CONTIG_ENTRIES - 1;
                }
            })
        });
        self.broken = group;
        if let Some(i) = m.size.x86_index() {
            self.c.mapped_pages[i] -= 1;
        }
        self.radix.unmap(phys, asid, m);
    }

    fn take_broken_group(&mut self) -> Option<CoalescedSpan> {
        self.broken.take()
    }

    fn os_cycles(&self) -> u64 {
        self.c.group_invalidations * self.cfg.invalidation_cycles
    }

    fn stats(&self, out: &mut Stats) {
        let mut radix = Stats::new();
        self.radix.stats(&mut radix);
        let s = out.section("et");
        if let Some(serde_json::Value::Object(r)) = radix.remove("radix") {
            s.extend(r);
        }
        let c = &self.c;
        for (k, sfx) in [(0, "4k"), (1, "2m")] {
            s.put_u64(&format!("place_requests_{sfx}"), c.place_requests[k]);
            s.put_u64(&format!("placed_by_sibling_{sfx}"), c.placed_by_sibling[k]);
            s.put_u64(&format!("placed_new_group_{sfx}"), c.placed_new_group[k]);
        }
        s.put_u64("fallback_target_busy", c.fallback_target_busy);
        s.put_u64("fallback_no_block", c.fallback_no_block);
        s.put_u64("fallback_misaligned_group", c.fallback_misaligned_group);
        for (k, sfx) in [(0, "64k"), (1, "32m")] {
            s.put_u64(&format!("groups_formed_{sfx}"), c.groups_formed[k]);
            s.put_u64(&format!("groups_broken_{sfx}"), c.groups_broken[k]);
        }
        s.put_u64("group_invalidations", c.group_invalidations);
        // What the TLB sees at the end of the run: bytes mapped by each translation size (a
        // marked group is one 64 KiB or 32 MiB translation; the rest are single entries).
        let live = |k: usize| c.groups_formed[k] - c.groups_broken[k];
        let bytes = |i: usize| c.mapped_pages[i] * PageSize::X86[i].bytes();
        let dist = s.section("mapped_bytes_by_translation");
        dist.put_u64("4k", bytes(0) - live(0) * (16 << 12));
        dist.put_u64("64k", live(0) * (16 << 12));
        dist.put_u64("2m", bytes(1) - live(1) * (16 << 21));
        dist.put_u64("32m", live(1) * (16 << 21));
        dist.put_u64("1g", bytes(2));
        s.put_u64("invalidation_cycles", self.os_cycles());
    }
}

#[cfg(test)]
mod tests;
