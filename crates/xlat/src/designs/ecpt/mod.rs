//! # ecpt — elastic cuckoo page tables
//!
//! ## Model
//! Per process and per page size (4 KiB, 2 MiB, 1 GiB) one d-ary cuckoo hash table (3 ways by
//! default), one hash function per way (CRC by default). An entry is a 64-byte line holding the
//! PTEs of 8 consecutive pages of its size and the VPN tag of the group (PTE clustering). A table
//! starts at 128 entries per way (8 KiB) and resizes elastically: at occupancy 0.6 a table twice
//! as large is allocated beside the old one (0.2: half as large); every update of the table then
//! moves `rehash_per_update` (4) entries of the old table, each taken at the rehash pointer of a
//! way (ways in turn); a lookup
//! checks, per way, the old table if the old hash index is at or above that way's pointer and the
//! new one otherwise, so it stays one probe per way. The old table is freed when every pointer
//! has reached its end. Each way of each table is one contiguous buddy allocation; when it cannot
//! be satisfied the run stops with an error naming `ecpt` and the size (ECPT cannot continue).
//! A cuckoo insertion displaces at most `max_kicks` entries; past that the table is rebuilt
//! synchronously in ways twice as large (`forced_rebuilds`), so nothing is lost.
//!
//! A walk first looks up the Cuckoo Walk Caches (PMD-CWC 16 entries, PUD-CWC 2 entries), in
//! parallel with hashing. Their entries copy Cuckoo Walk Table entries: for a 2 MiB region
//! whether it holds 4 KiB pages and whether a 2 MiB page; for a 1 GiB region whether it holds
//! 4 KiB, 2 MiB or a 1 GiB page, and for a 2 MiB page the way of the table that holds it. A
//! hit rules page sizes out; every way of every page size not ruled out is then probed in
//! parallel (latency of the slowest probe, traffic of all), except that a PMD-CWC hit on a
//! region mapped by a 2 MiB page probes that page's way only (one probe, not one per way). With cold
//! CWCs every size the process has pages of is probed: one probe per way per candidate size. On
//! a CWC miss the walker reads the CWT entry (one probe per CWT way) in the same parallel group
//! and fills the CWC for later walks. The CWTs are themselves clustered cuckoo tables (2 ways,
//! 8 entries per line) in page-table memory, maintained by the OS on every map and unmap.
//!
//! Allocation cost: every allocation is charged the work physical memory reports for it
//! ([`PhysMem::alloc_work_cycles`] before and after): zeroing the block (0.5 cycle per byte by
//! default) and, when no free block of the size exists, direct compaction (scanning a candidate
//! block and migrating its movable pages elsewhere; see `os::compaction`). In a memory filled
//! like a long-running system at FMFI 0.7 (`os.fragmenter.mode = "fill"`) this reproduces the
//! order of ME-HPT §III's measured costs (4 KiB 4 K ... 64 MiB 120 M cycles; the measured table
//! is in docs/os-model.md); unfragmented, only zeroing remains. The cycles are OS time
//! (`timing.os_cycles`, `ecpt.alloc_cycles`).
//!
//! Optimistic ECH (Utopia §7, Table 1: "does not require allocating large contiguous physical
//! memory blocks ... performs migrations between page tables without any performance
//! penalty"): `charge_allocations = false` leaves the allocation work out of OS time, and
//! `contiguous_ways = false` builds every way of 4 KiB frames (so no compaction and no failure
//! for want of a large block), which the walker addresses at no cost. Migrations between the
//! old and the new table of a resize are free in this model with either setting: rehashing is
//! OS-side work that costs nothing, and a walk during a resize still probes one slot per way.
//!
//! ## Configuration
//! `[ecpt]`: `ways` (3; 2..4), `hash` (`crc` | `mix`), `initial_entries` per way (128),
//! `upsize_occupancy` (0.6), `downsize_occupancy` (0.2), `max_kicks` (32), `rehash_per_update`
//! (4), `pmd_cwc_entries` (16), `pud_cwc_entries` (2), `cwc_latency_cycles` (4),
//! `hash_latency_cycles` (2), `cwt_ways` (2), `seed` (1, for the random way choices),
//! `charge_allocations` (true), `contiguous_ways` (true); the last two `false` give Utopia's
//! optimistic ECH (`--set ecpt.charge_allocations=false --set ecpt.contiguous_ways=false`, or
//! the preset `configs/ech-optimistic.toml`).
//!
//! ## Deviations from the paper
//! - CWT entries record the way of a 2 MiB page (ECPT's "way" field of a 2 MiB section) but not
//!   the ways of 4 KiB lines: a walk of a 4 KiB page whose size is known still probes every way
//!   of that size, and a PUD-CWC hit trims sizes, not ways. The 2 MiB way is read from where the
//!   table holds the line at the walk: the OS is assumed to update the CWT entries (and the
//!   CWC copies) of a line a cuckoo kick moves to another way, at no cost (OS-side work costs
//!   nothing but allocations, below) and without the CWC miss that invalidating the copy would
//!   cause.
//! - The walker knows which page sizes the process has any page of (its tables are non-empty):
//!   with cold CWCs only those sizes are probed, and CWT entries are read on a CWC miss only when
//!   the process has pages of two or more sizes (otherwise they cannot trim anything).
//! - A table is created at the first insertion of its page size and freed when it becomes empty.
//! - OS-side work (insertions, rehashes, CWT updates) costs no cycles except allocations.
//! - Four rehashes per update of the table (map or unmap of one PTE) by default, not one per
//!   insertion: insertions whose old index is still live go to the old table, and whatever the
//!   rehash rate r, that raises the density of the old table's live region by 1/C per insertion
//!   (C = old slots), so it ends near 0.6 (1 + 1/r): with r = 1 the old table overflows (cuckoo
//!   failures, forced rebuilds) when every insertion creates a new line, as in GUPS.
//!
//! ## References
//! Skarlatos et al., "Elastic Cuckoo Page Tables", ASPLOS 2020; ME-HPT (HPCA 2023) §II-B
//! (mechanics of resizing), §III (allocation cost at FMFI 0.7), Table III (parameters);
//! LVM (MICRO 2025) §2.2.

pub mod hash;
pub mod table;

pub use hash::HashKind;
use hash::MAX_WAYS;
use table::{
    AllocCost, ChunkPolicy, ClusterTable, Ctx, Policy, TableStats, KICK_BUCKETS, L2P_SUBTABLES,
};

use crate::addr::{Asid, Mapping, Paddr, PageSize, Pfn, Vpn, BASE_PAGE_BYTES};
use crate::designs::{parallel_reads, Design, PerCore, PtFootprint, PtMemory, WalkResult};
use crate::mem::MemSystem;
use crate::mmu::assoc::AssocCache;
use crate::os::{OsError, PhysMem};
use crate::stats::{ratio, Stats, StatsExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// 4 KiB frames a way of the optimistic ECH (`contiguous_ways = false`) may be made of: no
/// practical bound (a way of 2^28 frames is 1 TiB).
const FREE_L2P_ENTRIES: u32 = 1 << 28;

/// `[ecpt]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EcptConfig {
    /// Ways per hash table (2..=4; the papers use 3, ECPT also evaluates 4).
    pub ways: u32,
    /// Hash family of the ways.
    pub hash: HashKind,
    /// Entries (64-byte lines) per way when a table is created; a power of two, at least 64.
    pub initial_entries: u64,
    /// Occupancy at which a table is upsized.
    pub upsize_occupancy: f64,
    /// Occupancy at which a table is downsized.
    pub downsize_occupancy: f64,
    /// Cuckoo displacements allowed per insertion before a forced rebuild.
    pub max_kicks: u32,
    /// Entries rehashed per table update while a resize is in progress.
    pub rehash_per_update: u32,
    /// Entries of the PMD cuckoo walk cache (fully associative; 0 disables it).
    pub pmd_cwc_entries: u32,
    /// Entries of the PUD cuckoo walk cache (fully associative; 0 disables it).
    pub pud_cwc_entries: u32,
    /// Latency of the CWC lookup in cycles.
    pub cwc_latency_cycles: u32,
    /// Latency of the hash functions in cycles (overlapped with the CWC lookup).
    pub hash_latency_cycles: u32,
    /// Ways of the cuckoo walk tables.
    pub cwt_ways: u32,
    /// Seed of the random way choices.
    pub seed: u64,
    /// Charge the work of every table allocation (zeroing, direct compaction) to OS time
    /// (`ecpt.alloc_cycles`, `timing.os_cycles`). `false` is half of the optimistic ECH of
    /// Utopia §7 ("does not require allocating large contiguous physical memory blocks").
    pub charge_allocations: bool,
    /// Each way is one physically contiguous buddy block (ECPT). `false`: each way is built of
    /// 4 KiB frames found by the walker at no cost (no compaction, no failure for want of a
    /// large block): the other half of Utopia §7's optimistic ECH.
    pub contiguous_ways: bool,
}

impl Default for EcptConfig {
    fn default() -> Self {
        EcptConfig {
            ways: 3,
            hash: HashKind::Crc,
            initial_entries: 128,
            upsize_occupancy: 0.6,
            downsize_occupancy: 0.2,
            max_kicks: 32,
            rehash_per_update: 4,
            pmd_cwc_entries: 16,
            pud_cwc_entries: 2,
            cwc_latency_cycles: 4,
            hash_latency_cycles: 2,
            cwt_ways: 2,
            seed: 1,
            charge_allocations: true,
            contiguous_ways: true,
        }
    }
}

impl EcptConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        if !(2..=MAX_WAYS as u32).contains(&self.ways) {
            return Err(format!("ways must be 2..={MAX_WAYS}, got {}", self.ways));
        }
        if !(2..=MAX_WAYS as u32).contains(&self.cwt_ways) {
            return Err(format!(
                "cwt_ways must be 2..={MAX_WAYS}, got {}",
                self.cwt_ways
            ));
        }
        if !self.initial_entries.is_power_of_two() || self.initial_entries < 64 {
            return Err(format!(
                "initial_entries must be a power of two of at least 64 (one 4 KiB frame), got {}",
                self.initial_entries
            ));
        }
        let (down, up) = (self.downsize_occupancy, self.upsize_occupancy);
        if !(down >= 0.0 && down * 2.0 < up && up < 1.0) {
            return Err(format!(
                "upsize_occupancy ({up}) must be below 1 and above twice downsize_occupancy \
                 ({down}), which must be at least 0 (a resize must not immediately trigger the \
                 opposite one)"
            ));
        }
        if self.max_kicks == 0 {
            return Err("max_kicks must be at least 1".into());
        }
        if self.rehash_per_update == 0 {
            return Err("rehash_per_update must be at least 1 (a resize must finish)".into());
        }
        Ok(())
    }

    /// The hash-table policy of the page tables: contiguous ways, all ways resized together,
    /// out of place.
    pub fn policy(&self) -> Policy {
        Policy {
            ways: self.ways as usize,
            hash: self.hash,
            initial_slots: self.initial_entries,
            upsize_occupancy: self.upsize_occupancy,
            downsize_occupancy: self.downsize_occupancy,
            max_kicks: self.max_kicks,
            rehash_per_update: self.rehash_per_update,
            per_way: false,
            in_place: false,
            // Non-contiguous ways are chunks of one 4 KiB frame whose translation (the L2P of
            // ME-HPT) is free and unbounded: the optimistic ECH, not a hardware design.
            chunks: (!self.contiguous_ways).then(|| ChunkPolicy {
                sizes_bytes: vec![BASE_PAGE_BYTES],
                entries_per_subtable: FREE_L2P_ENTRIES,
                stealing: false,
            }),
        }
    }

    /// The policy of the cuckoo walk tables (ECPT-style in both designs).
    pub fn cwt_policy(&self) -> Policy {
        Policy {
            ways: self.cwt_ways as usize,
            ..self.policy()
        }
    }
}

/// Hardware parameters of the walker.
#[derive(Clone, Copy, Debug)]
pub struct WalkerParams {
    /// PMD-CWC entries.
    pub pmd_cwc_entries: u32,
    /// PUD-CWC entries.
    pub pud_cwc_entries: u32,
    /// Cycles before the probes are issued (CWC lookup, hashing and, for ME-HPT, the L2P
    /// access, all in parallel).
    pub pre_probe_cycles: u32,
    /// OS cycles added per cuckoo re-insertion (ME-HPT: the L2P access that the CWC lookup does
    /// not hide).
    pub reinsertion_cycles: u32,
}

/// Index of the PMD and PUD cuckoo walk tables among a process's tables (after the 3 sizes).
const PMD_CWT: usize = 3;
const PUD_CWT: usize = 4;
const TABLES: usize = 5;
/// Table names for stats keys.
const TABLE_LABELS: [&str; TABLES] = ["4k", "2m", "1g", "pmd_cwt", "pud_cwt"];

const PTE_PRESENT: u64 = 1;
const PTE_WRITABLE: u64 = 2;
/// Marks a non-empty CWT entry (so an entry with counts of zero reads as absent).
const CWTE_VALID: u64 = 1 << 63;
const PMD_N4K_MASK: u64 = (1 << 10) - 1;
const PMD_HAS_2M: u64 = 1 << 10;
const PUD_N4K_MASK: u64 = (1 << 20) - 1;
const PUD_N2M_SHIFT: u32 = 20;
const PUD_N2M_MASK: u64 = ((1 << 10) - 1) << PUD_N2M_SHIFT;
const PUD_HAS_1G: u64 = 1 << 30;

/// Presence bits a PMD-CWC entry holds: bit 0 = some 4 KiB page, bit 1 = a 2 MiB page.
fn pmd_presence(v: u64) -> u64 {
    (v & PMD_N4K_MASK != 0) as u64 | ((v & PMD_HAS_2M != 0) as u64) << 1
}

/// Presence bits a PUD-CWC entry holds: bit 0 = 4 KiB pages, bit 1 = 2 MiB pages, bit 2 = a
/// 1 GiB page.
fn pud_presence(v: u64) -> u64 {
    (v & PUD_N4K_MASK != 0) as u64
        | ((v & PUD_N2M_MASK != 0) as u64) << 1
        | ((v & PUD_HAS_1G != 0) as u64) << 2
}

/// The line key and the index inside the line of a page of `size` at `vpn`.
#[inline]
fn pte_key(vpn: Vpn, size: PageSize) -> (u64, usize) {
    let n = vpn.0 >> size.order();
    (n >> 3, (n & 7) as usize)
}

#[inline]
fn cwc_key(asid: Asid, region: u64) -> u64 {
    ((asid as u64) << 48) | region
}

/// One process's tables.
#[derive(Default)]
struct Proc {
    tables: [Option<ClusterTable>; TABLES],
    l2p: [[u32; L2P_SUBTABLES]; MAX_WAYS],
}

impl Proc {
    /// Bit `s` set when the process has pages of size index `s`.
    fn size_mask(&self) -> u32 {
        (0..3)
            .filter(|s| self.tables[*s].is_some())
            .fold(0, |m, s| m | 1 << s)
    }
}

#[derive(Clone, Debug, Default)]
struct WalkCounters {
    walks: u64,
    probes: u64,
    cwt_reads: u64,
    walks_during_resize: u64,
    pmd_lookups: u64,
    pmd_hits: u64,
    pud_lookups: u64,
    pud_hits: u64,
}

/// The machinery shared by `ecpt` and `mehpt`: per-process clustered cuckoo tables per page size,
/// cuckoo walk tables and caches, and the walk. The two designs differ only in the table policy
/// and the walker parameters.
pub struct HashedPt {
    name: &'static str,
    policy: Policy,
    cwt_policy: Policy,
    params: WalkerParams,
    seed: u64,
    procs: Vec<Proc>,
    mem: PtMemory,
    cost: AllocCost,
    /// The CWCs, one pair per core (`sim.cores`); the running core's through `Deref`.
    pmd_cwc: PerCore<AssocCache>,
    pud_cwc: PerCore<AssocCache>,
    /// Counters of tables already freed, per table kind.
    retired: [TableStats; TABLES],
    /// Counters of TLB-miss walks (what the per-walk figures describe).
    c: WalkCounters,
    /// Counters of the walks repeated after a page fault (see [`HashedPt::walk_after_fault`]).
    post_fault: WalkCounters,
    l2p_used_max: u32,
    /// An error met while unmapping (which cannot report one), returned by the next map.
    deferred: Option<OsError>,
    /// Whether allocation work counts as OS time (see [`HashedPt::charging_allocations`]).
    charge_allocations: bool,
    /// Whether the chunk / L2P figures are reported (chunked policies with a real L2P table).
    chunk_stats: bool,
}

impl HashedPt {
    /// An empty set of tables for the design `name`.
    pub fn new(
        name: &'static str,
        policy: Policy,
        cwt_policy: Policy,
        params: WalkerParams,
        seed: u64,
    ) -> HashedPt {
        let chunk_stats = policy.chunks.is_some();
        HashedPt {
            name,
            policy,
            cwt_policy,
            params,
            seed,
            procs: Vec::new(),
            mem: PtMemory::default(),
            cost: AllocCost::default(),
            pmd_cwc: PerCore::new(AssocCache::new(
                params.pmd_cwc_entries as usize,
                params.pmd_cwc_entries as usize,
            )),
            pud_cwc: PerCore::new(AssocCache::new(
                params.pud_cwc_entries as usize,
                params.pud_cwc_entries as usize,
            )),
            retired: Default::default(),
            c: WalkCounters::default(),
            post_fault: WalkCounters::default(),
            l2p_used_max: 0,
            deferred: None,
            charge_allocations: true,
            chunk_stats,
        }
    }

    /// Charge allocation work to OS time (`true`, the default) or only count it (`false`: the
    /// optimistic ECH of Utopia §7). Uncharged, `alloc_cycles` and [`HashedPt::os_cycles`]
    /// leave it out; the `os.*` figures of physical memory still show the work done.
    pub fn charging_allocations(mut self, charge: bool) -> HashedPt {
        self.charge_allocations = charge;
        self
    }

    /// Leave out the chunk and L2P figures (for chunked ways whose L2P is a free modelling
    /// device, not hardware: the optimistic ECH's non-contiguous ways).
    pub fn without_chunk_figures(mut self) -> HashedPt {
        self.chunk_stats = false;
        self
    }

    /// The table of page size index / CWT `t` of `asid`, if it exists.
    pub fn table(&self, asid: Asid, t: usize) -> Option<&ClusterTable> {
        self.procs.get(asid as usize)?.tables[t].as_ref()
    }

    /// HPT probes issued by walks so far.
    pub fn probes(&self) -> u64 {
        self.c.probes
    }

    /// CWT entry reads issued by walks so far.
    pub fn cwt_reads(&self) -> u64 {
        self.c.cwt_reads
    }

    /// Allocation cycles charged so far (0 when allocations are not charged).
    pub fn alloc_cycles(&self) -> u64 {
        if self.charge_allocations {
            self.cost.cycles
        } else {
            0
        }
    }

    /// Physical memory's work for this design's allocations so far (charged or not).
    pub fn phys_work_cycles(&self) -> u64 {
        self.cost.cycles
    }

    /// L2P entries in use now (chunked policies), over every process.
    pub fn l2p_used(&self) -> u32 {
        self.procs
            .iter()
            .map(|p| p.l2p.iter().flatten().sum::<u32>())
            .sum()
    }

    /// OS cycles the design charges: allocations, plus per-re-insertion cycles.
    pub fn os_cycles(&self) -> u64 {
        let reinsertions: u64 = (0..3).map(|t| self.table_stats(t).reinsertions).sum();
        self.alloc_cycles() + reinsertions * self.params.reinsertion_cycles as u64
    }

    /// Write `v` into entry `i` of line `key` of table `t` of `asid` (creating the table on
    /// first use, freeing it when it empties). Returns the previous value.
    fn update(
        &mut self,
        phys: &mut PhysMem,
        asid: Asid,
        t: usize,
        key: u64,
        i: usize,
        f: impl FnOnce(u64) -> u64,
    ) -> Result<(u64, u64), OsError> {
        if self.procs.len() <= asid as usize {
            self.procs.resize_with(asid as usize + 1, Proc::default);
        }
        let HashedPt {
            name,
            policy,
            cwt_policy,
            seed,
            procs,
            mem,
            cost,
            retired,
            l2p_used_max,
            ..
        } = self;
        let proc = &mut procs[asid as usize];
        let old = proc.tables[t]
            .as_ref()
            .and_then(|tb| tb.get(key))
            .map_or(0, |c| c.vals[i]);
        let new = f(old);
        if new == old {
            return Ok((old, new));
        }
        let mut ctx = Ctx {
            phys,
            mem,
            cost,
            l2p: &mut proc.l2p,
            sub: t.min(L2P_SUBTABLES - 1),
            name,
        };
        if proc.tables[t].is_none() {
            let p = if t < 3 { &*policy } else { &*cwt_policy };
            let table_seed = *seed ^ ((asid as u64) << 8 | t as u64);
            proc.tables[t] = Some(ClusterTable::new(p, &mut ctx, table_seed)?);
        }
        let table = proc.tables[t].as_mut().expect("just created");
        table.set(&mut ctx, key, i, new)?;
        if table.clusters() == 0 {
            table.free_all(&mut ctx);
            retired[t].merge(&table.stats);
            proc.tables[t] = None;
        }
        let used: u32 = proc.l2p.iter().flatten().sum();
        *l2p_used_max = (*l2p_used_max).max(used);
        Ok((old, new))
    }

    /// Apply `f` to the CWT entry of `region` and invalidate the CWC entry if the page sizes
    /// present changed.
    fn update_cwt(
        &mut self,
        phys: &mut PhysMem,
        asid: Asid,
        t: usize,
        region: u64,
        f: impl FnOnce(u64) -> u64,
    ) -> Result<(), OsError> {
        let (old, new) = self.update(phys, asid, t, region >> 3, (region & 7) as usize, f)?;
        let (cwc, presence): (&mut PerCore<AssocCache>, fn(u64) -> u64) = if t == PMD_CWT {
            (&mut self.pmd_cwc, pmd_presence)
        } else {
            (&mut self.pud_cwc, pud_presence)
        };
        if presence(old) != presence(new) {
            // The CWT is shared: a stale entry goes from every core's CWC.
            for c in cwc.all_mut() {
                c.remove(cwc_key(asid, region));
            }
        }
        Ok(())
    }

    /// Install `m`.
    pub fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
        if let Some(e) = self.deferred.take() {
            return Err(e);
        }
        let s = m.size.index();
        let (key, i) = pte_key(m.vpn, m.size);
        let pte = (m.pfn.0 << 12) | PTE_PRESENT | if m.writable { PTE_WRITABLE } else { 0 };
        let (old, _) = self.update(phys, asid, s, key, i, |_| pte)?;
        if old != 0 {
            return Err(OsError(format!(
                "{}: mapping {m:?} over a present entry (OS model bug)",
                self.name
            )));
        }
        let (r2, r1) = (m.vpn.0 >> 9, m.vpn.0 >> 18);
        match m.size {
            PageSize::Size4K => {
                self.update_cwt(phys, asid, PMD_CWT, r2, |v| (v + 1) | CWTE_VALID)?;
                self.update_cwt(phys, asid, PUD_CWT, r1, |v| (v + 1) | CWTE_VALID)?;
            }
            PageSize::Size2M => {
                self.update_cwt(phys, asid, PMD_CWT, r2, |v| v | PMD_HAS_2M | CWTE_VALID)?;
                self.update_cwt(phys, asid, PUD_CWT, r1, |v| {
                    (v + (1 << PUD_N2M_SHIFT)) | CWTE_VALID
                })?;
            }
            PageSize::Size1G => {
                self.update_cwt(phys, asid, PUD_CWT, r1, |v| v | PUD_HAS_1G | CWTE_VALID)?;
            }
            other => unreachable!("{}: declares only x86 page sizes, got {other}", self.name),
        }
        Ok(())
    }

    /// Remove `m`. An error (an allocation for a downsize or a rebuild that failed) is kept and
    /// returned by the next [`HashedPt::map`], since the `Design` contract lets unmap not fail.
    pub fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
        if let Err(e) = self.try_unmap(phys, asid, m) {
            self.deferred.get_or_insert(e);
        }
    }

    fn try_unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
        let s = m.size.index();
        let (key, i) = pte_key(m.vpn, m.size);
        let (old, _) = self.update(phys, asid, s, key, i, |_| 0)?;
        if old == 0 {
            return Ok(());
        }
        // A CWT entry whose counts all reach zero becomes 0 (absent).
        let norm = |v: u64| if v & !CWTE_VALID == 0 { 0 } else { v };
        let (r2, r1) = (m.vpn.0 >> 9, m.vpn.0 >> 18);
        match m.size {
            PageSize::Size4K => {
                self.update_cwt(phys, asid, PMD_CWT, r2, |v| norm(v - 1))?;
                self.update_cwt(phys, asid, PUD_CWT, r1, |v| norm(v - 1))?;
            }
            PageSize::Size2M => {
                self.update_cwt(phys, asid, PMD_CWT, r2, |v| norm(v & !PMD_HAS_2M))?;
                self.update_cwt(phys, asid, PUD_CWT, r1, |v| norm(v - (1 << PUD_N2M_SHIFT)))?;
            }
            PageSize::Size1G => {
                self.update_cwt(phys, asid, PUD_CWT, r1, |v| norm(v & !PUD_HAS_1G))?;
            }
            other => unreachable!("{}: declares only x86 page sizes, got {other}", self.name),
        }
        Ok(())
    }

    /// Hint the host to fetch the table slots a walk of `vpn` will probe, for each page size
    /// the process has (speed only: the tables are megabytes, read at hashed positions).
    #[inline]
    pub fn prefetch(&self, asid: Asid, vpn: Vpn) {
        let Some(proc) = self.procs.get(asid as usize) else {
            return;
        };
        for (s, size) in PageSize::X86.iter().enumerate() {
            if let Some(table) = proc.tables[s].as_ref() {
                table.prefetch(pte_key(vpn, *size).0);
            }
        }
    }

    /// Translate `vpn` (see the module doc of `ecpt` for the walk).
    #[inline]
    /// The walk repeated after a page fault: exactly [`HashedPt::walk`], counted apart so that
    /// `walks`, `probes_per_walk` and the CWC rates describe TLB-miss walks.
    pub fn walk_after_fault(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
        std::mem::swap(&mut self.c, &mut self.post_fault);
        let w = self.walk(asid, vpn, mem);
        std::mem::swap(&mut self.c, &mut self.post_fault);
        w
    }

    /// Translate `vpn` (a TLB-miss walk).
    pub fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
        self.c.walks += 1;
        let pre = self.params.pre_probe_cycles;
        let Some(proc) = self.procs.get(asid as usize) else {
            return WalkResult {
                mapping: None,
                latency_cycles: pre,
                mem_accesses: 0,
            };
        };
        let all = proc.size_mask();
        let mut mask = all;
        let (r2, r1) = (vpn.0 >> 9, vpn.0 >> 18);
        let (k2, k1) = (cwc_key(asid, r2), cwc_key(asid, r1));
        // CWT reads on a CWC miss go in the same parallel group as the probes; they fill the
        // CWCs for later walks. Useless when the process has pages of one size only: then the
        // CWCs stay empty and their lookups (which could not hit) are not counted.
        let multi = all.count_ones() >= 2;
        if multi {
            self.c.pmd_lookups += 1;
            self.c.pud_lookups += 1;
        }
        let pmd = self.pmd_cwc.get(k2);
        let pud = self.pud_cwc.get(k1);
        // A PMD-CWC hit on a region mapped by a 2 MiB page names the page's way too (the CWT
        // entry carries it), so only that way is probed.
        let way_known = pmd.is_some_and(|p| p & 2 != 0);
        if let Some(p) = pmd {
            self.c.pmd_hits += multi as u64;
            mask &= if p & 2 != 0 {
                0b010
            } else if p & 1 != 0 {
                0b001
            } else {
                0b100
            };
        } else if let Some(u) = pud {
            mask &= if u & 4 != 0 { 0b100 } else { (u & 3) as u32 };
        }
        if pud.is_some() {
            self.c.pud_hits += multi as u64;
        }
        let mut addrs = [Paddr(0); 24];
        let mut n = 0;
        let mut cwt_read = |t: usize, region: u64, n: &mut usize| -> Option<u64> {
            let table = proc.tables[t].as_ref()?;
            let (key, i) = (region >> 3, (region & 7) as usize);
            let mut v = 0;
            for w in 0..table.ways() {
                let (pa, c) = table.probe(w, key);
                addrs[*n] = pa;
                *n += 1;
                if let Some(c) = c {
                    v = c.vals[i];
                }
            }
            Some(v)
        };
        let mut fills = [None, None];
        if multi && pud.is_none() {
            fills[1] = cwt_read(PUD_CWT, r1, &mut n).map(pud_presence);
        }
        if multi && pmd.is_none() && mask & 0b011 != 0 {
            fills[0] = Some(cwt_read(PMD_CWT, r2, &mut n).map_or(0, pmd_presence));
        }
        let cwt_addrs = n;
        let mut found = None;
        let mut resizing = false;
        for (s, size) in PageSize::X86.iter().enumerate() {
            if mask & (1 << s) == 0 {
                continue;
            }
            let Some(table) = proc.tables[s].as_ref() else {
                continue;
            };
            resizing |= table.resizing();
            let (key, i) = pte_key(vpn, *size);
            // Only a 2 MiB page named by the PMD-CWC narrows the probes to its way; looking the
            // key up for other sizes would read the table once more for nothing.
            let ways = match (way_known && s == 1).then(|| table.position(key)).flatten() {
                Some((w, _)) => w..w + 1,
                None => 0..table.ways(),
            };
            for w in ways {
                let (pa, c) = table.probe(w, key);
                addrs[n] = pa;
                n += 1;
                if let Some(c) = c {
                    let pte = c.vals[i];
                    if pte != 0 {
                        found = Some(Mapping {
                            vpn: vpn.align_down(*size),
                            pfn: Pfn(pte >> 12),
                            size: *size,
                            writable: pte & PTE_WRITABLE != 0,
                        });
                    }
                }
            }
        }
        if let Some(v) = fills[0] {
            self.pmd_cwc.insert(k2, v);
        }
        if let Some(v) = fills[1] {
            self.pud_cwc.insert(k1, v);
        }
        self.c.cwt_reads += cwt_addrs as u64;
        self.c.probes += (n - cwt_addrs) as u64;
        if resizing {
            self.c.walks_during_resize += 1;
        }
        WalkResult {
            mapping: found,
            latency_cycles: pre + parallel_reads(mem, &addrs[..n]),
            mem_accesses: n as u32,
        }
    }

    /// Give each of `n` cores its own (cold) CWCs (see [`Design::set_cores`]).
    pub fn set_cores(&mut self, n: usize) {
        self.pmd_cwc.set_cores(n);
        self.pud_cwc.set_cores(n);
    }

    /// Walk with core `core`'s CWCs.
    pub fn select_core(&mut self, core: usize) {
        self.pmd_cwc.select(core);
        self.pud_cwc.select(core);
    }

    /// Empty the running core's CWCs.
    pub fn flush_mmu_caches(&mut self) {
        self.pmd_cwc.remove_if(|_| true);
        self.pud_cwc.remove_if(|_| true);
    }

    /// CWC lookups that missed (PMD-CWC plus PUD-CWC), TLB-miss walks only.
    pub fn mmu_cache_misses(&self) -> u64 {
        (self.c.pmd_lookups - self.c.pmd_hits) + (self.c.pud_lookups - self.c.pud_hits)
    }

    /// Page-table memory held.
    pub fn footprint(&self) -> PtFootprint {
        self.mem.footprint()
    }

    /// Counters of every table of kind `t`, live and freed.
    fn table_stats(&self, t: usize) -> TableStats {
        let mut s = self.retired[t].clone();
        for p in &self.procs {
            if let Some(tb) = &p.tables[t] {
                s.merge(&tb.stats);
            }
        }
        s
    }

    /// Write the design's section (see `docs/designs/ecpt.md` for the keys).
    pub fn write_stats(&self, out: &mut Stats) {
        let fp = self.mem.footprint();
        let name = self.name;
        let s = out.section(name);
        s.put_u64("ways", self.policy.ways as u64);
        s.put_str(
            "hash",
            match self.policy.hash {
                HashKind::Crc => "crc",
                HashKind::Mix => "mix",
            },
        );
        s.put_u64("largest_contiguous_bytes", fp.max_contiguous_bytes);
        s.put_u64("pt_bytes_peak", fp.peak_bytes);
        s.put_u64("pt_bytes_final", fp.bytes);
        let c = &self.c;
        s.put_u64("walks", c.walks);
        s.put_u64("post_fault_walks", self.post_fault.walks);
        s.put_u64("probes", c.probes);
        s.put_f64("probes_per_walk", ratio(c.probes, c.walks));
        s.put_u64("cwt_reads", c.cwt_reads);
        s.put_u64("walks_during_resize", c.walks_during_resize);
        s.put_f64(
            "walks_during_resize_share",
            ratio(c.walks_during_resize, c.walks),
        );
        // Lookups are counted only in walks of processes with pages of two or more sizes (the
        // CWCs are of no use otherwise); with none, the hit rates are null, not 0 %.
        let rate = |hits: u64, lookups: u64| {
            if lookups == 0 {
                f64::NAN
            } else {
                ratio(hits, lookups)
            }
        };
        s.put_u64("pmd_cwc_lookups", c.pmd_lookups);
        s.put_f64("pmd_cwc_hit_rate", rate(c.pmd_hits, c.pmd_lookups));
        s.put_u64("pud_cwc_lookups", c.pud_lookups);
        s.put_f64("pud_cwc_hit_rate", rate(c.pud_hits, c.pud_lookups));
        s.put_u64("allocations", self.cost.allocations);
        s.put_u64("alloc_cycles", self.alloc_cycles());
        let mut hpt = TableStats::default();
        for (t, label) in TABLE_LABELS.iter().enumerate() {
            let ts = self.table_stats(t);
            let ways = if t < 3 {
                self.policy.ways
            } else {
                self.cwt_policy.ways
            };
            let mut way_bytes = vec![0u64; ways];
            let mut chunk_bytes = vec![0u64; ways];
            let mut bytes = 0;
            let mut entries = 0;
            for p in &self.procs {
                if let Some(tb) = &p.tables[t] {
                    for (w, b) in tb.way_bytes().enumerate() {
                        way_bytes[w] += b;
                    }
                    for (w, b) in tb.chunk_bytes().enumerate() {
                        chunk_bytes[w] = chunk_bytes[w].max(b);
                    }
                    bytes += tb.bytes();
                    entries += tb.clusters();
                }
            }
            s.put_u64(&format!("{label}_bytes_final"), bytes);
            s.put_u64(&format!("{label}_entries"), entries);
            if t < 3 {
                s.insert(
                    format!("{label}_upsizes_per_way"),
                    Value::from(ts.upsizes[..ways].to_vec()),
                );
                s.insert(
                    format!("{label}_downsizes_per_way"),
                    Value::from(ts.downsizes[..ways].to_vec()),
                );
                s.insert(format!("{label}_final_way_bytes"), Value::from(way_bytes));
                if self.chunk_stats {
                    s.insert(
                        format!("{label}_final_chunk_bytes"),
                        Value::from(chunk_bytes),
                    );
                }
                hpt.merge(&ts);
            }
        }
        s.put_u64("inserts", hpt.inserts);
        s.put_u64("placements", hpt.placements);
        s.put_u64("reinsertions", hpt.reinsertions);
        s.put_f64(
            "reinsertions_per_insert",
            ratio(hpt.reinsertions, hpt.placements),
        );
        s.put_f64(
            "no_reinsertion_share",
            ratio(hpt.kick_hist[0], hpt.placements),
        );
        s.insert(
            "reinsertions_hist".into(),
            Value::from(hpt.kick_hist[..KICK_BUCKETS].to_vec()),
        );
        s.put_u64("upsizes", hpt.upsizes.iter().sum());
        s.put_u64("downsizes", hpt.downsizes.iter().sum());
        s.put_u64("upsize_entries_rehashed", hpt.upsize_examined);
        s.put_u64("upsize_entries_moved", hpt.upsize_moved);
        s.put_f64(
            "moved_fraction_per_upsize",
            if hpt.upsizes_measured == 0 {
                0.0
            } else {
                hpt.moved_fraction_sum / hpt.upsizes_measured as f64
            },
        );
        s.put_f64(
            "moved_fraction_per_in_place_upsize",
            if hpt.in_place_upsizes_measured == 0 {
                0.0
            } else {
                hpt.in_place_moved_fraction_sum / hpt.in_place_upsizes_measured as f64
            },
        );
        s.put_u64("updates", hpt.updates);
        s.put_u64("updates_during_resize", hpt.updates_during_resize);
        s.put_f64(
            "updates_during_resize_share",
            ratio(hpt.updates_during_resize, hpt.updates),
        );
        s.put_u64("forced_rebuilds", hpt.forced_rebuilds);
        if self.chunk_stats {
            s.put_u64("chunk_switches", hpt.chunk_switches);
            s.put_u64("l2p_entries_used", self.l2p_used() as u64);
            s.put_u64("l2p_entries_used_max", self.l2p_used_max as u64);
        }
    }
}

/// The `Design` methods of a newtype around [`HashedPt`] (ecpt and mehpt differ only in how
/// they configure it): expands inside an `impl Design for X` block.
macro_rules! forward_design_to_hashed_pt {
    () => {
        fn map(
            &mut self,
            phys: &mut $crate::os::PhysMem,
            asid: $crate::addr::Asid,
            m: $crate::addr::Mapping,
        ) -> Result<(), $crate::os::OsError> {
            self.0.map(phys, asid, m)
        }

        fn unmap(
            &mut self,
            phys: &mut $crate::os::PhysMem,
            asid: $crate::addr::Asid,
            m: $crate::addr::Mapping,
        ) {
            self.0.unmap(phys, asid, m);
        }

        #[inline]
        fn walk(
            &mut self,
            asid: $crate::addr::Asid,
            vpn: $crate::addr::Vpn,
            mem: &mut $crate::mem::MemSystem,
        ) -> $crate::designs::WalkResult {
            self.0.walk(asid, vpn, mem)
        }

        fn walk_after_fault(
            &mut self,
            asid: $crate::addr::Asid,
            vpn: $crate::addr::Vpn,
            mem: &mut $crate::mem::MemSystem,
        ) -> $crate::designs::WalkResult {
            self.0.walk_after_fault(asid, vpn, mem)
        }

        #[inline]
        fn prefetch(
            &self,
            asid: $crate::addr::Asid,
            vpn: $crate::addr::Vpn,
            _mem: &$crate::mem::MemSystem,
        ) {
            self.0.prefetch(asid, vpn);
        }

        fn footprint(&self) -> $crate::designs::PtFootprint {
            self.0.footprint()
        }

        fn os_cycles(&self) -> u64 {
            self.0.os_cycles()
        }

        fn phys_work_cycles(&self) -> u64 {
            self.0.phys_work_cycles()
        }

        fn set_cores(&mut self, n: usize) {
            self.0.set_cores(n);
        }

        fn select_core(&mut self, core: usize) {
            self.0.select_core(core);
        }

        fn flush_mmu_caches(&mut self) {
            self.0.flush_mmu_caches();
        }

        fn mmu_cache_misses(&self) -> u64 {
            self.0.mmu_cache_misses()
        }

        fn stats(&self, out: &mut $crate::stats::Stats) {
            self.0.write_stats(out);
        }
    };
}
pub(crate) use forward_design_to_hashed_pt;

/// Elastic cuckoo page tables.
pub struct Ecpt(pub HashedPt);

impl Design for Ecpt {
    type Config = EcptConfig;

    fn new(cfg: &EcptConfig, _phys: &mut PhysMem) -> Result<Self, OsError> {
        cfg.validate().map_err(|e| OsError(format!("ecpt.{e}")))?;
        let hpt = HashedPt::new(
            "ecpt",
            cfg.policy(),
            cfg.cwt_policy(),
            WalkerParams {
                pmd_cwc_entries: cfg.pmd_cwc_entries,
                pud_cwc_entries: cfg.pud_cwc_entries,
                pre_probe_cycles: cfg.cwc_latency_cycles.max(cfg.hash_latency_cycles),
                reinsertion_cycles: 0,
            },
            cfg.seed,
        );
        let hpt = hpt.charging_allocations(cfg.charge_allocations);
        Ok(Ecpt(if cfg.contiguous_ways {
            hpt
        } else {
            hpt.without_chunk_figures()
        }))
    }

    forward_design_to_hashed_pt!();
}

/// This design's profile (`profile.toml` beside this file): the settings its paper assumes
/// around it, applied when the design is named (format and rules: `crate::profiles`).
pub const PROFILE: &str = include_str!("profile.toml");

#[cfg(test)]
mod tests;
