//! # lvm — Learned Virtual Memory: learned-index page tables
//!
//! ## Model
//! Per address space one learned index (`index.rs`): a hierarchy of linear models
//! `y = floor(a * x + b)` with Q44.20 fixed-point parameters (16 B per node, 4 nodes per 64 B
//! line; `model.rs`). Internal nodes divide their key range evenly among their children, which
//! are stored consecutively in the next level, so the model's output is the child's offset in
//! that level. A leaf's model maps a 4 KiB VPN to a slot of the leaf's own gapped page table
//! (GPT): one buddy block of 8-byte translation entries, 8 per 64 B line, each entry carrying
//! its VPN tag and 2 page-size bits. Huge pages are keyed by their first 4 KiB VPN.
//!
//! Training (§4.3.1-§4.3.3): a node first fits a leaf model (least squares on (VPN, rank),
//! scaled by `ga_scale`, the table sized to the model's range and at least `ga_scale` slots per
//! key; when a leaf mixes page sizes and that line breaks the error bound, the slope of the
//! smallest pages — `ga_scale` slots per such page — is tried too, if its table stays within 4x
//! the least-squares one or 512 KiB, and the better of the two kept); keys are placed in VPN
//! order at their predicted line or the nearest line with room
//! (0, +1, -1, +2, ...). If the leaf collides, the cost model
//! `C(n) = x1*d + x2*s + x3*cr*ma` (d = index levels down to the leaves, s = index size in
//! 64-byte lines, cr = collision rate, ma = extra lines per collision) is evaluated for child
//! counts n = the spline-point estimate +/- 2 (greedy spline corridor over (VPN, rank) with an
//! error of one line, 8 ranks), clamped to `[2, max_children]` and to the coverage-per-byte
//! constraint (a child covers at least 4 MiB: the per-byte coverage of a radix page-directory
//! page); the cheapest option (leaf or n children) wins, then each child is trained the same way
//! down to `depth_limit` levels. Options whose leaves break the error bound (a lookup reading
//! more than 1 + `error_bound` lines) or need a GPT larger than the largest available buddy
//! block (capped by `max_gpt_order`) are only chosen when nothing meets the bound, and then with
//! x3 boosted 1000x (§4.3.3). Where a node's children are at the depth limit (they cannot split)
//! and no candidate meets the bound, the child count doubles beyond the candidates, up to the
//! coverage-per-byte limit, until one does (§4.3.3: "more child nodes are created to subdivide
//! the key space at a finer granularity"; since model version 6). Leaves that still cannot meet
//! the bound keep a longer search and are counted (`bound_violations`).
//!
//! Inserts (§4.3.4): the first page of an address space builds the index; a key beyond the
//! index's range by less than `min_insert_distance_bytes` extends the range by at least that
//! distance, and the leaf's GPT is rescaled (grown to the model's slots for the distance,
//! without retraining, as far as the largest allowed block reaches; a larger buddy block and a
//! copy when its block is full); within bounds
//! the key goes to the model's line or the nearest free one within the bound, else the leaf is
//! retrained, else the whole index is rebuilt; a key further away rebuilds the index. Frees
//! clear the entry and keep the slot (§5.2); when the last entry of an address space is freed the
//! whole structure is released (the paper's "rebuild to reclaim", taken only in that case).
//!
//! Walk (§4.6.2): per level the walker looks the node up in the LVM walk cache (LWC: fully
//! associative, ASID + level + offset tags, `lwc_latency_cycles` per lookup including the model
//! computation); on a miss it reads the node through the data caches (one dependent reference)
//! and fills the LWC. Then it reads the predicted GPT line through the data caches and, on a
//! collision, the next lines of the search (each a dependent reference). The walker rounds down
//! (§4.4): in a leaf that holds huge pages it searches around the predictions of the VPN and of
//! the VPN rounded down to each huge size the leaf holds, step by step in turn, each line read
//! once, and accepts the entry whose page contains the VPN (2 size bits). A walk therefore costs
//! `depth * lwc_latency` + model-line misses + GPT lines; a collision is a found walk that read
//! more than one GPT line.
//!
//! OS cycles (`Design::os_cycles`, also `lvm.*_cycles`): `insert_cycles` per insert (beyond
//! the fault handler's PTE write, which every design pays: the model evaluation and slot search),
//! `train_cycles_per_key` per key of every fit the training evaluates (initial builds, leaf
//! fills, retrains and rebuilds, cost-model candidates included), 0.5 cycle per byte of GPT
//! zeroed and 1 cycle per byte copied when a GPT moves to a larger block. These per-operation
//! costs are our estimates (the paper reports the totals: management ~1.17 % of execution time
//! at 4 KiB, retrains < 1.7 ms), not measurements.
//!
//! ## Configuration
//! `[lvm]`: `x1` (10), `x2` (5), `x3` (200) cost weights; `depth_limit` (3, 1..8);
//! `error_bound` (3 extra lines); `ga_scale` (1.3); `min_insert_distance_bytes` (64 MiB);
//! `max_children` (4096 per node); `max_gpt_order` (18: at most a 1 GiB block per GPT; 6 caps
//! GPT contiguity at 256 KiB as in §7.3); `lwc_entries` (16), `lwc_latency_cycles` (2);
//! `insert_cycles` (50), `train_cycles_per_key` (40); `remove_aslr_bases` (true).
//!
//! ## Deviations from the paper
//! - Internal nodes of a wide key range would need slopes below 2^-20: an internal node's input
//!   is `vpn >> shift` with a per-node shift chosen so that every child spans 16-31 input steps;
//!   we assume the shift and the child count fit in the unused integer bits of the slope (an
//!   internal slope is always < 1). Routing is the same integer function in training and lookup,
//!   so quantization can make children unequal but never misroutes a key.
//! - The smallest-page-slope fit of mixed-size leaves is ours (the paper relies on the
//!   hierarchy alone to give 4 KiB and huge-page regions their own slopes).
//! - A lookup searches whole 64 B lines outward from the predicted line (nearest first) instead
//!   of an exponential/binary search over slots; a "collision" is an entry outside its predicted
//!   line (a collision inside the line costs no extra access in either scheme). Insertion
//!   searches the same order, which is what keeps the lookup bounded.
//! - A huge page that straddles a child boundary is entered in every leaf its range routes to.
//! - The kernel index (§4.5) holds every mapping in the kernel half of the address space
//!   (VA bit 63 set), keyed by its page number minus 0xffff_8000_0000_0000 (4-level kernel
//!   addresses only); it is shared by every process (one structure, one LWC tag), a process
//!   mapping a kernel page the index already holds trains nothing, and unmapping a kernel page
//!   unmaps it for all. The OS model maps no kernel memory, so the kernel index is exercised
//!   through the `Design` interface (unit tests), not by simulated runs.
//! - ASLR (§4.5): with `os.aslr` the OS tells the design each process's zone shifts (the base
//!   registers); the walker finds a page's zone by the placed address and subtracts its shift,
//!   so the index is trained on the unrandomized layout (`remove_aslr_bases`, default true;
//!   false keys the index by the randomized page numbers). Rounding down to a huge size is done
//!   in the placed space, where huge pages are aligned. The zones are those of `os::aslr`.
//! - The tag of a GPT entry is not charged any space (entries are counted at 8 B, as the
//!   paper's memory figures do). An out-of-bounds insert below the range is handled by the
//!   same path as within bounds (the model cannot be shifted without retraining).
//! - Spline points: the greedy spline corridor with an error of 8 ranks; besides +/- 2 around
//!   it we evaluate the child count that zooms onto the keys' span when they occupy under a
//!   quarter of the node's range, and the count the available contiguity forces. Where §4.3.3
//!   has the parent create "more child nodes" until a leaf meets the bound, the counts tried are
//!   the largest candidate doubled, again and again (the paper does not say how it searches);
//!   the first that meets the bound is taken.
//!
//! ## References
//! Lee et al., "LVM: Learned Virtual Memory", MICRO 2025: §3.1 (gap coverage), §4.2.1 (index),
//! §4.2.2 (gapped page tables), §4.2.3 (cost model), §4.3 (training, bounding mispredictions,
//! inserts), §4.4 (page sizes), §4.5 (fixed point), §4.6.2 (walker, LWC), §5.1 (parameters),
//! §5.2 (OS operations), §7.3 (figures), Table 1.

mod config;
pub mod gaps;
mod index;
pub mod model;
mod slots;

pub use config::LvmConfig;
pub use index::{Index, MIN_CHILD_PAGES, NODE_BYTES, SLOTS_PER_LINE};

use crate::addr::{Asid, Mapping, Vpn};
use crate::designs::{Design, PerCore, PtFootprint, PtMemory, WalkResult};
use crate::mem::MemSystem;
use crate::mmu::assoc::AssocCache;
use crate::os::{OsError, PhysMem};
use crate::stats::{ratio, Stats, StatsExt};
use index::Events;

/// Walk-time counters.
#[derive(Clone, Debug, Default)]
struct WalkCounters {
    walks: u64,
    found: u64,
    /// Found walks whose entry was not in the first GPT line read.
    collisions: u64,
    /// GPT lines beyond the first read by found walks.
    extra_lines: u64,
    /// Found walks with exactly one memory reference.
    single_access: u64,
    lwc_lookups: u64,
    lwc_hits: u64,
    model_reads: u64,
    gpt_reads: u64,
}

/// Page numbers at or above this are kernel addresses (virtual-address bit 63 set): they are
/// translated by the one kernel index all processes share.
pub const KERNEL_VPN: u64 = 1 << (63 - crate::addr::BASE_PAGE_SHIFT);
/// The base the kernel index removes from kernel page numbers (the lowest kernel address of
/// 4-level paging, 0xffff_8000_0000_0000): keys stay below 2^35 pages, as user keys do, so
/// that `slope * key` stays within the models' 44 integer bits.
pub const KERNEL_SHIFT: i64 = (0xffff_8000_0000_0000u64 >> crate::addr::BASE_PAGE_SHIFT) as i64;
/// The LWC tag's address-space field of the kernel index's nodes (above every ASID).
const KERNEL_TAG: u64 = 1 << 16;

/// Learned Virtual Memory.
pub struct Lvm {
    cfg: LvmConfig,
    indexes: Vec<Index>,
    /// The kernel address space's index, shared by every process (§4.5).
    kernel: Index,
    /// With `os.aslr` and `remove_aslr_bases`: the layout of each process whose bases the
    /// walker removes (empty otherwise: every shift is 0).
    aslr: Option<crate::os::aslr::Aslr>,
    layouts: Vec<crate::os::aslr::AslrLayout>,
    mem: PtMemory,
    /// One LWC per core (`sim.cores`); the running core's through `Deref`.
    lwc: PerCore<AssocCache>,
    ev: Events,
    c: WalkCounters,
    index_peak_bytes: u64,
}

#[inline]
fn lwc_key(space: u64, level: u32, offset: u32) -> u64 {
    (space << 40) | ((level as u64) << 32) | offset as u64
}

/// `m` with `shift` pages removed from its page number (its key).
fn keyed(m: Mapping, shift: i64) -> Mapping {
    Mapping {
        vpn: Vpn(m.vpn.0.wrapping_sub(shift as u64)),
        ..m
    }
}

impl Lvm {
    fn all_indexes(&self) -> impl Iterator<Item = &Index> {
        self.indexes.iter().chain(std::iter::once(&self.kernel))
    }

    fn index_bytes(&self) -> u64 {
        self.all_indexes().map(|i| i.index_bytes()).sum()
    }

    /// The index of `asid` (for tests and analysis).
    pub fn index(&self, asid: Asid) -> Option<&Index> {
        self.indexes.get(asid as usize)
    }

    /// The kernel index every process shares.
    pub fn kernel_index(&self) -> &Index {
        &self.kernel
    }

    /// The ASLR shift (pages) the walker removes from `vpn` of `asid`: 0 without `os.aslr`.
    #[inline]
    fn key_shift(&self, asid: Asid, vpn: Vpn) -> i64 {
        match self.layouts.get(asid as usize) {
            Some(l) => l.shift_of_placed(vpn),
            None => 0,
        }
    }

    fn flush_lwc_space(&mut self, space: u64) {
        let tag = space << 40;
        for c in self.lwc.all_mut() {
            c.remove_if(|k| k >> 40 << 40 == tag);
        }
    }

    /// Enter a kernel mapping in the shared index: a mapping already there (another process
    /// mapped it) is not entered again.
    fn map_kernel(&mut self, phys: &mut PhysMem, m: Mapping) -> Result<(), OsError> {
        if m.vpn.0 < KERNEL_SHIFT as u64 {
            return Err(OsError(format!(
                "lvm: page {} is not a 4-level kernel address (below 0xffff_8000_0000_0000)",
                m.vpn
            )));
        }
        let key = keyed(m, KERNEL_SHIFT);
        match self.kernel.lookup_keyed(key.vpn, KERNEL_SHIFT) {
            Some(old) if old == key => {
                self.ev.kernel_shared_maps += 1;
                return Ok(());
            }
            Some(old) => {
                return Err(OsError(format!(
                    "lvm: kernel page {} mapped as {:?} in the shared kernel index, now as \
                     {m:?}: kernel mappings must be the same in every address space",
                    m.vpn,
                    keyed(old, -KERNEL_SHIFT)
                )))
            }
            None => {}
        }
        if self
            .kernel
            .insert(&self.cfg, phys, &mut self.mem, key, &mut self.ev)?
        {
            self.flush_lwc_space(KERNEL_TAG);
        }
        Ok(())
    }

    /// OS cycles of the training and insert work so far.
    fn mgmt_cycles(&self) -> u64 {
        self.ev.inserts * self.cfg.insert_cycles
            + self.ev.keys_trained * self.cfg.train_cycles_per_key
            + self.ev.zeroed_bytes / 2
            + self.ev.copied_bytes
    }
}

impl Design for Lvm {
    type Config = LvmConfig;

    fn new(cfg: &LvmConfig, _phys: &mut PhysMem) -> Result<Self, OsError> {
        cfg.validate().map_err(|e| OsError(format!("lvm.{e}")))?;
        Ok(Lvm {
            cfg: cfg.clone(),
            indexes: Vec::new(),
            kernel: Index::default(),
            aslr: None,
            layouts: Vec::new(),
            mem: PtMemory::default(),
            lwc: PerCore::new(AssocCache::new(
                cfg.lwc_entries as usize,
                cfg.lwc_entries as usize,
            )),
            ev: Events::default(),
            c: WalkCounters::default(),
            index_peak_bytes: 0,
        })
    }

    fn set_aslr(&mut self, aslr: crate::os::aslr::Aslr) {
        if self.cfg.remove_aslr_bases {
            self.aslr = Some(aslr);
        }
    }

    fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
        if m.vpn.0 >= KERNEL_VPN {
            self.map_kernel(phys, m)?;
            self.index_peak_bytes = self.index_peak_bytes.max(self.index_bytes());
            return Ok(());
        }
        if self.indexes.len() <= asid as usize {
            self.indexes.resize_with(asid as usize + 1, Index::default);
        }
        if let Some(a) = self.aslr {
            while self.layouts.len() <= asid as usize {
                let next = self.layouts.len() as Asid;
                self.layouts.push(a.layout(next));
            }
        }
        let key = keyed(m, self.key_shift(asid, m.vpn));
        let changed = self.indexes[asid as usize].insert(
            &self.cfg,
            phys,
            &mut self.mem,
            key,
            &mut self.ev,
        )?;
        if changed {
            // Retrained or rebuilt models must not be served stale from any core's LWC.
            self.flush_lwc_space(asid as u64);
        }
        self.index_peak_bytes = self.index_peak_bytes.max(self.index_bytes());
        Ok(())
    }

    fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
        let (space, shift) = if m.vpn.0 >= KERNEL_VPN {
            (KERNEL_TAG, KERNEL_SHIFT)
        } else {
            (asid as u64, self.key_shift(asid, m.vpn))
        };
        let ix = if space == KERNEL_TAG {
            Some(&mut self.kernel)
        } else {
            self.indexes.get_mut(asid as usize)
        };
        if let Some(ix) = ix {
            ix.remove(keyed(m, shift), shift);
            if ix.is_built() && ix.live == 0 {
                // Nothing left to translate: reclaim the whole structure (the next map builds
                // it anew), and drop its nodes from the LWC.
                ix.release(phys, &mut self.mem);
                self.ev.releases += 1;
                self.flush_lwc_space(space);
            }
        }
    }

    #[inline]
    fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
        self.c.walks += 1;
        let (ix, space, shift) = if vpn.0 >= KERNEL_VPN {
            (Some(&self.kernel), KERNEL_TAG, KERNEL_SHIFT)
        } else {
            (
                self.indexes.get(asid as usize),
                asid as u64,
                self.key_shift(asid, vpn),
            )
        };
        let placed = vpn;
        let vpn = Vpn(vpn.0.wrapping_sub(shift as u64));
        let Some(ix) = ix.filter(|i| i.is_built()) else {
            return WalkResult {
                mapping: None,
                latency_cycles: 0,
                mem_accesses: 0,
            };
        };
        let probe = ix.route(vpn);
        let mut latency = 0;
        let mut accesses = 0;
        for &(level, offset) in &probe.path[..probe.depth] {
            latency += self.cfg.lwc_latency_cycles;
            self.c.lwc_lookups += 1;
            let key = lwc_key(space, level, offset);
            if self.lwc.get(key).is_some() {
                self.c.lwc_hits += 1;
            } else {
                latency += mem.pt_access(ix.node_addr(level, offset)).latency_cycles;
                accesses += 1;
                self.c.model_reads += 1;
                self.lwc.insert(key, 0);
            }
        }
        let mut lines = 0;
        let found = ix.search(probe.leaf, vpn, shift, |pa| {
            latency += mem.pt_access(pa).latency_cycles;
            lines += 1;
        });
        accesses += lines;
        self.c.gpt_reads += lines as u64;
        if let Some((m, _slot)) = found {
            // Back to the placed address space (the key had the ASLR shift removed).
            let m = keyed(m, -shift);
            debug_assert!(m.contains(placed));
            self.c.found += 1;
            // A collision: the entry was not in the first GPT line the search read.
            if lines > 1 {
                self.c.collisions += 1;
                self.c.extra_lines += (lines - 1) as u64;
            }
            if accesses == 1 {
                self.c.single_access += 1;
            }
            return WalkResult {
                mapping: Some(m),
                latency_cycles: latency,
                mem_accesses: accesses,
            };
        }
        WalkResult {
            mapping: None,
            latency_cycles: latency,
            mem_accesses: accesses,
        }
    }

    fn set_cores(&mut self, n: usize) {
        self.lwc.set_cores(n);
    }

    fn select_core(&mut self, core: usize) {
        self.lwc.select(core);
    }

    fn flush_mmu_caches(&mut self) {
        self.lwc.remove_if(|_| true);
    }

    fn mmu_cache_misses(&self) -> u64 {
        self.c.lwc_lookups - self.c.lwc_hits
    }

    fn prefetch(&self, asid: Asid, vpn: Vpn, mem: &MemSystem) {
        let (ix, shift) = if vpn.0 >= KERNEL_VPN {
            (Some(&self.kernel), KERNEL_SHIFT)
        } else {
            (self.indexes.get(asid as usize), self.key_shift(asid, vpn))
        };
        if let Some(ix) = ix {
            ix.prefetch(Vpn(vpn.0.wrapping_sub(shift as u64)), shift, mem);
        }
    }

    fn footprint(&self) -> PtFootprint {
        self.mem.footprint()
    }

    fn os_cycles(&self) -> u64 {
        self.mgmt_cycles()
    }

    fn stats(&self, out: &mut Stats) {
        let s = out.section("lvm");
        let live: u64 = self.all_indexes().map(|i| i.live).sum();
        s.put_u64("index_bytes", self.index_bytes());
        s.put_u64("index_peak_bytes", self.index_peak_bytes);
        s.put_u64(
            "depth",
            self.all_indexes().map(|i| i.depth()).max().unwrap_or(0) as u64,
        );
        s.put_u64("nodes", self.all_indexes().map(|i| i.nodes()).sum());
        s.put_u64(
            "leaves",
            self.all_indexes().map(|i| i.leaves.len() as u64).sum(),
        );
        s.put_u64("kernel_index_bytes", self.kernel.index_bytes());
        s.put_u64("kernel_entries", self.kernel.live);
        s.put_u64("walks", self.c.walks);
        s.put_u64("collisions", self.c.collisions);
        s.put_f64("collision_rate", ratio(self.c.collisions, self.c.found));
        s.put_f64(
            "extra_accesses_per_collision",
            ratio(self.c.extra_lines, self.c.collisions),
        );
        s.put_f64(
            "single_access_walk_share",
            ratio(self.c.single_access, self.c.found),
        );
        s.put_u64("lwc_lookups", self.c.lwc_lookups);
        s.put_u64("lwc_hits", self.c.lwc_hits);
        s.put_f64("lwc_hit_rate", ratio(self.c.lwc_hits, self.c.lwc_lookups));
        s.put_u64("model_reads", self.c.model_reads);
        s.put_u64("gpt_reads", self.c.gpt_reads);
        s.put_u64(
            "max_search_lines",
            self.all_indexes()
                .flat_map(|i| i.leaves.iter().map(|l| l.search_lines as u64))
                .max()
                .unwrap_or(0),
        );
        let ev = &self.ev;
        s.put_u64("inserts", ev.inserts);
        s.put_u64("initial_builds", ev.initial_builds);
        s.put_u64("rebuilds", ev.rebuilds);
        s.put_u64("retrains", ev.retrains);
        s.put_u64("leaf_fills", ev.leaf_fills);
        s.put_u64("rescales", ev.rescales);
        s.put_u64("gpt_reallocs", ev.gpt_reallocs);
        s.put_u64("bound_violations", ev.bound_violations);
        s.put_u64("releases", ev.releases);
        s.put_u64("kernel_shared_maps", ev.kernel_shared_maps);
        s.put_u64("keys_trained", ev.keys_trained);
        let per_key = self.cfg.train_cycles_per_key;
        s.put_u64("retrain_cycles", ev.retrain_keys * per_key);
        s.put_f64(
            "cycles_per_retrain",
            ratio(ev.retrain_keys * per_key, ev.retrains),
        );
        s.put_u64("rebuild_cycles", ev.rebuild_keys * per_key);
        s.put_u64("os_cycles", self.mgmt_cycles());
        let gpt_bytes: u64 = self
            .all_indexes()
            .flat_map(|i| i.leaves.iter())
            .filter(|l| l.gpt.base.is_some())
            .map(|l| crate::addr::BASE_PAGE_BYTES << l.gpt.order)
            .sum();
        let gpt_slot_bytes: u64 = self
            .all_indexes()
            .flat_map(|i| i.leaves.iter())
            .map(|l| l.gpt.cap * crate::addr::PTE_BYTES)
            .sum();
        let min_bytes = live * crate::addr::PTE_BYTES;
        s.put_u64("live_entries", live);
        s.put_u64("gpt_block_bytes", gpt_bytes);
        s.put_u64("gpt_slot_bytes", gpt_slot_bytes);
        s.put_u64("gpt_min_bytes", min_bytes);
        s.put_f64("gpt_slot_overhead", ratio(gpt_slot_bytes, min_bytes));
        s.put_f64("gpt_block_overhead", ratio(gpt_bytes, min_bytes));
    }
}

/// This design's profile (`profile.toml` beside this file): the settings its paper assumes
/// around it, applied when the design is named (format and rules: `crate::profiles`).
pub const PROFILE: &str = include_str!("profile.toml");

#[cfg(test)]
mod tests;
