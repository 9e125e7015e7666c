//! # mehpt — memory-efficient hashed page tables (ME-HPT)
//!
//! ## Model
//! ECPT (see [`crate::designs::ecpt`]: clustered 3-way cuckoo tables per page size, CWTs and
//! CWCs, parallel probes, gradual rehashing with per-way pointers) with the four techniques of
//! the paper, each of which can be switched off on its own:
//! - **L2P table** (§IV-A): a way is a list of equal, non-contiguous chunks; the MMU's L2P table
//!   maps the byte offset of a slot (index x 64) divided by the chunk size to the chunk's base,
//!   and the remainder is the offset inside the chunk. 32 entries per (way, page size), so 288
//!   for 3 ways. Its 4-cycle access (shift, L2P, mask) overlaps the CWC lookup on a walk; it is
//!   exposed only on a cuckoo re-insertion, done by the OS, which is charged 4 cycles each.
//! - **Dynamically changing chunk sizes** (§IV-B, §V-B): 8 KiB, 1 MiB, 8 MiB, 64 MiB; a way uses
//!   the smallest size whose chunks fit its L2P entries; when an upsize does not fit, the way
//!   switches to the next size that does, out of place (a new set of chunks, gradual rehash,
//!   old chunks freed at the end). A downsize switches to a smaller size only when the way could
//!   then grow once more without switching back.
//! - **L2P entry stealing** (§V-A): the three page-size subtables of a way share a pool of 96
//!   entries; a subtable may grow to 64 while the others leave room.
//! - **In-place resizing** (§IV-C): doubling a way appends chunks and uses one more bit of the
//!   same hash; an entry moves (to the same offset in the new upper half) only if that bit is 1,
//!   so about half move. Halving moves the upper half down onto the lower one (collisions are
//!   cuckooed to other ways) and frees the chunks past the new end. A resize that changes the
//!   chunk size is out of place.
//! - **Per-way resizing** (§IV-D): occupancy is tracked per way; a way past 0.6 (0.2) is resized
//!   alone, and only if no other way is smaller (larger), so no way is ever more than twice
//!   another; insertions pick a way at random weighted by its free slots, a way larger than
//!   another and past its threshold getting no weight.
//!
//! Allocation cost is the ECPT model: the work physical memory reports for each chunk (zeroing,
//! plus direct compaction when no free block of the chunk size exists).
//!
//! ## Configuration
//! `[mehpt]`: every `[ecpt]` key (same defaults) plus `l2p` (true; false = contiguous ways as in
//! ECPT), `dynamic_chunks` (true; false = every chunk is `chunk_bytes`, 1 MiB: the paper's
//! ME-HPT_1MB), `l2p_stealing` (true), `l2p_entries` per (way, page size) (32),
//! `l2p_latency_cycles` (4), `in_place` (true), `per_way` (true). The paper's breakdown of the
//! memory savings: run with `in_place = false` and with `per_way = false`.
//!
//! ## Deviations from the paper
//! - While a way switches chunk size out of place, its old chunks are reached through a shadow
//!   of the old L2P entries that does not count against the L2P capacity.
//! - In-place resizing requires the L2P table (`in_place = true` with `l2p = false` is
//!   rejected): a contiguous way cannot grow in place.
//! - The cuckoo walk tables stay ECPT-style (contiguous ways): the paper applies its techniques
//!   to the page tables only. They are small (one line per 16 MiB of mapped space).
//! - The L2P table is not saved and restored on context switches (no cost is charged).
//! - Everything listed under the deviations of `ecpt` applies too.
//!
//! ## References
//! Stojkovic et al., "Memory-Efficient Hashed Page Tables" (ME-HPT), HPCA 2023: §IV-A..D, §V-A..D,
//! Table II (chunk sizes), Table III (parameters), §VII (figures this design reports).

use crate::designs::ecpt::hash::{HashKind, MAX_WAYS};
use crate::designs::ecpt::table::{ChunkPolicy, Policy};
use crate::designs::ecpt::{EcptConfig, HashedPt, WalkerParams};
use crate::designs::Design;
use crate::os::{OsError, PhysMem};
use serde::{Deserialize, Serialize};

/// The chunk sizes of §V-B, smallest first.
pub const CHUNK_SIZES_BYTES: [u64; 4] = [8 << 10, 1 << 20, 8 << 20, 64 << 20];

/// `[mehpt]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MehptConfig {
    /// Ways per hash table (2..=4).
    pub ways: u32,
    /// Hash family of the ways.
    pub hash: HashKind,
    /// Entries (64-byte lines) per way when a table is created; a power of two, at least 64.
    pub initial_entries: u64,
    /// Occupancy at which a way (or, without per-way resizing, a table) is upsized.
    pub upsize_occupancy: f64,
    /// Occupancy at which a way (or table) is downsized.
    pub downsize_occupancy: f64,
    /// Cuckoo displacements allowed per insertion before a forced rebuild.
    pub max_kicks: u32,
    /// Entries rehashed per table update while a resize is in progress.
    pub rehash_per_update: u32,
    /// Entries of the PMD cuckoo walk cache.
    pub pmd_cwc_entries: u32,
    /// Entries of the PUD cuckoo walk cache.
    pub pud_cwc_entries: u32,
    /// Latency of the CWC lookup in cycles.
    pub cwc_latency_cycles: u32,
    /// Latency of the hash functions in cycles.
    pub hash_latency_cycles: u32,
    /// Ways of the cuckoo walk tables.
    pub cwt_ways: u32,
    /// Seed of the random way choices.
    pub seed: u64,
    /// Chunked ways behind an L2P table (false: one contiguous block per way, as ECPT).
    pub l2p: bool,
    /// Change chunk sizes 8 KiB -> 1 MiB -> 8 MiB -> 64 MiB (false: always `chunk_bytes`).
    pub dynamic_chunks: bool,
    /// The chunk size when `dynamic_chunks` is false (a power of two, at least 8 KiB).
    pub chunk_bytes: u64,
    /// Let a page-size subtable of the L2P table use the entries of the others in its way.
    pub l2p_stealing: bool,
    /// L2P entries per (way, page size).
    pub l2p_entries: u32,
    /// Latency of shift + L2P access + mask, in cycles.
    pub l2p_latency_cycles: u32,
    /// Resize ways in place when the chunk size does not change.
    pub in_place: bool,
    /// Resize one way at a time with weighted random insertion.
    pub per_way: bool,
}

impl Default for MehptConfig {
    fn default() -> Self {
        let e = EcptConfig::default();
        MehptConfig {
            ways: e.ways,
            hash: e.hash,
            initial_entries: e.initial_entries,
            upsize_occupancy: e.upsize_occupancy,
            downsize_occupancy: e.downsize_occupancy,
            max_kicks: e.max_kicks,
            rehash_per_update: e.rehash_per_update,
            pmd_cwc_entries: e.pmd_cwc_entries,
            pud_cwc_entries: e.pud_cwc_entries,
            cwc_latency_cycles: e.cwc_latency_cycles,
            hash_latency_cycles: e.hash_latency_cycles,
            cwt_ways: e.cwt_ways,
            seed: e.seed,
            l2p: true,
            dynamic_chunks: true,
            chunk_bytes: 1 << 20,
            l2p_stealing: true,
            l2p_entries: 32,
            l2p_latency_cycles: 4,
            in_place: true,
            per_way: true,
        }
    }
}

impl MehptConfig {
    /// The ECPT part of the configuration.
    pub fn base(&self) -> EcptConfig {
        EcptConfig {
            ways: self.ways,
            hash: self.hash,
            initial_entries: self.initial_entries,
            upsize_occupancy: self.upsize_occupancy,
            downsize_occupancy: self.downsize_occupancy,
            max_kicks: self.max_kicks,
            rehash_per_update: self.rehash_per_update,
            pmd_cwc_entries: self.pmd_cwc_entries,
            pud_cwc_entries: self.pud_cwc_entries,
            cwc_latency_cycles: self.cwc_latency_cycles,
            hash_latency_cycles: self.hash_latency_cycles,
            cwt_ways: self.cwt_ways,
            seed: self.seed,
            ..EcptConfig::default()
        }
    }

    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        self.base().validate()?;
        if self.in_place && !self.l2p {
            return Err(
                "in_place = true needs l2p = true (a contiguous way cannot grow in place)".into(),
            );
        }
        // Checked even with dynamic chunks (where it is unused): a bad value is a typo either way.
        if !self.chunk_bytes.is_power_of_two() || self.chunk_bytes < 8192 {
            return Err(format!(
                "chunk_bytes must be a power of two of at least 8 KiB, got {}",
                self.chunk_bytes
            ));
        }
        if self.l2p && self.l2p_entries == 0 {
            return Err("l2p_entries must be at least 1".into());
        }
        Ok(())
    }

    /// The table policy of the page tables.
    pub fn policy(&self) -> Policy {
        Policy {
            per_way: self.per_way,
            in_place: self.in_place,
            chunks: self.l2p.then(|| ChunkPolicy {
                sizes_bytes: if self.dynamic_chunks {
                    CHUNK_SIZES_BYTES.to_vec()
                } else {
                    vec![self.chunk_bytes]
                },
                entries_per_subtable: self.l2p_entries,
                stealing: self.l2p_stealing,
            }),
            ..self.base().policy()
        }
    }
}

/// ME-HPT.
pub struct Mehpt(pub HashedPt);

impl Design for Mehpt {
    type Config = MehptConfig;

    fn new(cfg: &MehptConfig, _phys: &mut PhysMem) -> Result<Self, OsError> {
        cfg.validate().map_err(|e| OsError(format!("mehpt.{e}")))?;
        let l2p_cycles = if cfg.l2p { cfg.l2p_latency_cycles } else { 0 };
        Ok(Mehpt(HashedPt::new(
            "mehpt",
            cfg.policy(),
            cfg.base().cwt_policy(),
            WalkerParams {
                pmd_cwc_entries: cfg.pmd_cwc_entries,
                pud_cwc_entries: cfg.pud_cwc_entries,
                // The L2P access overlaps the CWC lookup (§V-D, Fig. 7).
                pre_probe_cycles: cfg
                    .cwc_latency_cycles
                    .max(cfg.hash_latency_cycles)
                    .max(l2p_cycles),
                reinsertion_cycles: l2p_cycles,
            },
            cfg.seed,
        )))
    }

    crate::designs::ecpt::forward_design_to_hashed_pt!();
}

/// L2P entries one page-size subtable may use at most (for documentation and checks).
pub fn max_subtable_entries(cfg: &MehptConfig) -> u32 {
    if cfg.l2p_stealing {
        2 * cfg.l2p_entries
    } else {
        cfg.l2p_entries
    }
}

/// Total L2P entries of a process: per (way, page size) entries x ways x 3 page sizes.
pub fn l2p_table_entries(cfg: &MehptConfig) -> u32 {
    cfg.l2p_entries * cfg.ways.min(MAX_WAYS as u32) * 3
}

/// This design's profile (`profile.toml` beside this file): the settings its paper assumes
/// around it, applied when the design is named (format and rules: `crate::profiles`).
pub const PROFILE: &str = include_str!("profile.toml");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::{Mapping, PageSize, Pfn, Vpn};
    use crate::designs::ecpt::hash::hash;
    use crate::designs::ecpt::table::testing::Env;
    use crate::designs::ecpt::table::{ClusterTable, Layout};
    use crate::designs::Design;
    use crate::mem::MemConfig;
    use crate::mem::MemSystem;
    use crate::rng::Rng;
    use crate::stats::Stats;

    fn m(vpn: u64, pfn: u64) -> Mapping {
        Mapping::writable(vpn, pfn, PageSize::Size4K)
    }

    #[test]
    fn the_288_entry_l2p_table_of_the_paper() {
        let cfg = MehptConfig::default();
        assert_eq!(l2p_table_entries(&cfg), 288);
        assert_eq!(max_subtable_entries(&cfg), 64);
    }

    #[test]
    fn l2p_indexing_is_the_slot_offset_divided_by_and_modulo_the_chunk_size() {
        // 8 KiB chunks hold 128 lines: slot 300 is byte 19200 = 2 * 8192 + 2816.
        assert_eq!(Layout::l2p_index(8 << 10, 300), (2, 2816));
        assert_eq!(Layout::l2p_index(8 << 10, 127), (0, 127 * 64));
        assert_eq!(Layout::l2p_index(8 << 10, 128), (1, 0));
        // 1 MiB chunks hold 16384 lines: slot 20000 is byte 1_280_000 = 1 MiB + 231_424.
        assert_eq!(Layout::l2p_index(1 << 20, 20_000), (1, 231_424));
        // 64 MiB chunk, slot 3 << 20 = byte 192 MiB: entry 3, offset 0.
        assert_eq!(Layout::l2p_index(64 << 20, 3 << 20), (3, 0));
    }

    /// Fill a table of `cfg`'s policy with random keys until a resize starts in a way that is
    /// resized in place; return the table and the keys.
    fn table_at_an_in_place_upsize(env: &mut Env, cfg: &MehptConfig) -> (ClusterTable, Vec<u64>) {
        let mut ctx = env.ctx();
        let mut t = ClusterTable::new(&cfg.policy(), &mut ctx, 3).unwrap();
        let mut rng = Rng::new(5, 0);
        let mut keys = Vec::new();
        while !t.resizing() {
            let k = rng.next_u64() >> 8;
            t.set(&mut ctx, k, 0, 1).unwrap();
            keys.push(k);
        }
        (t, keys)
    }

    #[test]
    fn an_in_place_upsize_moves_only_entries_whose_new_hash_bit_is_1() {
        let mut env = Env::new(4 << 30, "mehpt");
        let cfg = MehptConfig::default();
        let (mut t, keys) = table_at_an_in_place_upsize(&mut env, &cfg);
        let old_bits = 7; // 128 entries per way
        let before: Vec<(usize, u64)> = keys.iter().map(|k| t.position(*k).unwrap()).collect();
        let (rehashed_before, moved_before) = (t.stats.upsize_examined, t.stats.upsize_moved);
        let mut ctx = env.ctx();
        t.finish_resizes(&mut ctx).unwrap();
        let grown: Vec<usize> = t
            .way_bytes()
            .enumerate()
            .filter(|(_, b)| *b == 256 * 64)
            .map(|(w, _)| w)
            .collect();
        assert_eq!(grown.len(), 1, "per-way resizing grows one way");
        let mut expect_moved = 0;
        for (k, (w, idx)) in keys.iter().zip(&before) {
            let (w2, idx2) = t.position(*k).unwrap();
            assert_eq!(w2, *w, "rehashing keeps an entry in its way");
            if *w == grown[0] {
                let bit = (hash(cfg.hash, *w, *k) >> old_bits) & 1;
                assert_eq!(idx2, idx + bit * 128, "key {k:x}");
                expect_moved += bit;
            } else {
                assert_eq!(idx2, *idx);
            }
        }
        let moved = t.stats.upsize_moved - moved_before;
        let rehashed = t.stats.upsize_examined - rehashed_before;
        assert_eq!(moved, expect_moved);
        assert!(rehashed > 0 && moved > 0 && moved < rehashed);
        // No chunk switch: 16 KiB in two 8 KiB chunks, and nothing else was allocated.
        assert_eq!(t.chunk_bytes().collect::<Vec<_>>(), vec![8192; 3]);
        assert_eq!(t.bytes(), 4 * 8192);
    }

    #[test]
    fn per_way_resizing_never_lets_a_way_exceed_twice_another() {
        let mut env = Env::new(4 << 30, "mehpt");
        let cfg = MehptConfig::default();
        let mut ctx = env.ctx();
        let mut t = ClusterTable::new(&cfg.policy(), &mut ctx, 9).unwrap();
        let mut rng = Rng::new(11, 0);
        let mut live: Vec<u64> = Vec::new();
        let mut distinct_sizes_seen = false;
        for step in 0..60_000 {
            // Grow for half of the run, then shrink to (almost) nothing.
            if step < 30_000 || live.len() < 100 {
                let k = rng.next_u64() >> 8;
                t.set(&mut ctx, k, 1, 7).unwrap();
                live.push(k);
            } else {
                let k = live.swap_remove(rng.below(live.len() as u64) as usize);
                t.set(&mut ctx, k, 1, 0).unwrap();
            }
            let sizes: Vec<u64> = t.way_bytes().collect();
            let (lo, hi) = (*sizes.iter().min().unwrap(), *sizes.iter().max().unwrap());
            assert!(hi <= 2 * lo, "step {step}: way sizes {sizes:?}");
            distinct_sizes_seen |= hi != lo;
        }
        assert!(distinct_sizes_seen, "ways should be resized one at a time");
        for k in &live {
            assert_eq!(t.get(*k).unwrap().vals[1], 7);
        }
        assert!(t.stats.downsizes.iter().sum::<u64>() > 0);
    }

    #[test]
    fn a_way_switches_to_1_mib_chunks_when_its_8_kib_chunks_no_longer_fit_the_l2p() {
        let mut env = Env::new(4 << 30, "mehpt");
        let cfg = MehptConfig::default();
        let mut ctx = env.ctx();
        let mut t = ClusterTable::new(&cfg.policy(), &mut ctx, 1).unwrap();
        let mut k = 0u64;
        // 64 chunks of 8 KiB (with stealing) = 512 KiB per way; beyond that: 1 MiB chunks.
        while t.way_bytes().max().unwrap() <= 512 << 10 {
            t.set(&mut ctx, k * 0x9e37_79b9, 0, 1).unwrap();
            k += 1;
        }
        t.finish_resizes(&mut ctx).unwrap();
        assert!(t.stats.chunk_switches >= 1);
        assert!(t.chunk_bytes().any(|c| c == 1 << 20));
        assert!(env.mem.footprint().max_contiguous_bytes == 1 << 20);
        for i in 0..k {
            assert!(t.get(i * 0x9e37_79b9).is_some());
        }
    }

    #[test]
    fn without_stealing_a_subtable_uses_at_most_32_entries() {
        let mut env = Env::new(4 << 30, "mehpt");
        let cfg = MehptConfig {
            l2p_stealing: false,
            ..MehptConfig::default()
        };
        let mut t = ClusterTable::new(&cfg.policy(), &mut env.ctx(), 1).unwrap();
        for k in 0..60_000u64 {
            t.set(
                &mut env.ctx(),
                k.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 4,
                0,
                1,
            )
            .unwrap();
            assert!(env.l2p.iter().flatten().all(|n| *n <= 32));
        }
    }

    #[test]
    fn mehpt_needs_less_contiguous_memory_and_less_table_memory_than_ecpt() {
        use crate::designs::ecpt::Ecpt;
        let mut mem = MemSystem::new(&MemConfig::default());
        let mut phys_e = PhysMem::new(4 << 30);
        let mut phys_m = PhysMem::new(4 << 30);
        let mut e = Ecpt::new(&EcptConfig::default(), &mut phys_e).unwrap();
        let mut h = Mehpt::new(&MehptConfig::default(), &mut phys_m).unwrap();
        let mut rng = Rng::new(3, 0);
        for i in 0..150_000u64 {
            let v = rng.below(1 << 26);
            let x = m(v, i);
            if e.0
                .table(0, 0)
                .and_then(|t| t.get(v >> 3))
                .is_some_and(|c| c.vals[(v & 7) as usize] != 0)
            {
                continue;
            }
            e.map(&mut phys_e, 0, x).unwrap();
            h.map(&mut phys_m, 0, x).unwrap();
        }
        let (fe, fm) = (e.footprint(), h.footprint());
        assert!(
            fm.max_contiguous_bytes < fe.max_contiguous_bytes,
            "{fm:?} vs {fe:?}"
        );
        assert!(fm.peak_bytes < fe.peak_bytes, "{fm:?} vs {fe:?}");
        let w = h.walk(0, Vpn(rng.below(1 << 26)), &mut mem);
        assert!(w.mem_accesses >= 3);
    }

    /// Random maps, unmaps and walks of 4 KiB and 2 MiB pages against a reference map, through
    /// many upsizes, downsizes and chunk switches (tiny L2P so 1 MiB chunks come early).
    fn churn<D: Design>(mut d: D, phys: &mut PhysMem, seed: u64) -> D {
        use std::collections::HashMap;
        let mut mem = MemSystem::new(&MemConfig::default());
        let mut rng = Rng::new(seed, 0);
        let mut live: HashMap<u64, Mapping> = HashMap::new();
        let mut keys: Vec<u64> = Vec::new();
        let lookup = |live: &HashMap<u64, Mapping>, v: u64| {
            live.get(&v)
                .or_else(|| live.get(&(v & !511)).filter(|m| m.size == PageSize::Size2M))
                .copied()
        };
        for step in 0..40_000u64 {
            let grow = step < 24_000 || step % 5 == 0;
            match rng.below(4) {
                0 | 1 if grow => {
                    let (v, size) = if rng.below(16) == 0 {
                        ((1 << 20) + rng.below(256) * 512, PageSize::Size2M)
                    } else {
                        (rng.below(1 << 16), PageSize::Size4K)
                    };
                    if let std::collections::hash_map::Entry::Vacant(e) = live.entry(v) {
                        let x = Mapping {
                            vpn: Vpn(v),
                            pfn: Pfn(step << 9),
                            size,
                            writable: step % 3 == 0,
                        };
                        d.map(phys, 1, x).unwrap();
                        e.insert(x);
                        keys.push(v);
                    }
                }
                0..=2 if !keys.is_empty() => {
                    let v = keys.swap_remove(rng.below(keys.len() as u64) as usize);
                    d.unmap(phys, 1, live.remove(&v).unwrap());
                }
                _ => {
                    let v = if rng.below(2) == 0 {
                        rng.below(1 << 16)
                    } else {
                        (1 << 20) + rng.below(1 << 17)
                    };
                    assert_eq!(
                        d.walk(1, Vpn(v), &mut mem).mapping,
                        lookup(&live, v),
                        "step {step}"
                    );
                }
            }
        }
        for v in &keys {
            assert_eq!(d.walk(1, Vpn(*v), &mut mem).mapping, live.get(v).copied());
        }
        for v in keys.drain(..) {
            d.unmap(phys, 1, live.remove(&v).unwrap());
        }
        assert_eq!(d.footprint().bytes, 0);
        d
    }

    #[test]
    fn every_technique_combination_translates_like_a_reference_map_through_resizes() {
        let base = MehptConfig {
            initial_entries: 64,
            l2p_entries: 2,
            ..MehptConfig::default()
        };
        let variants = [
            base.clone(),
            MehptConfig {
                in_place: false,
                ..base.clone()
            },
            MehptConfig {
                per_way: false,
                ..base.clone()
            },
            MehptConfig {
                l2p_stealing: false,
                hash: HashKind::Mix,
                ..base.clone()
            },
            MehptConfig {
                dynamic_chunks: false,
                chunk_bytes: 16 << 10,
                l2p_entries: 32,
                ..base.clone()
            },
            MehptConfig {
                l2p: false,
                in_place: false,
                ..base.clone()
            },
        ];
        for (i, cfg) in variants.iter().enumerate() {
            let mut phys = PhysMem::new(4 << 30);
            let d = churn(Mehpt::new(cfg, &mut phys).unwrap(), &mut phys, i as u64);
            let t = TableTotals::of(&d.0);
            assert!(t.upsizes >= 6 && t.downsizes >= 1, "variant {i}: {t:?}");
            if cfg.l2p && cfg.dynamic_chunks {
                assert!(t.chunk_switches >= 1, "variant {i}: {t:?}");
            }
        }
        let mut phys = PhysMem::new(4 << 30);
        let ecpt = EcptConfig {
            initial_entries: 64,
            ..EcptConfig::default()
        };
        churn(
            crate::designs::ecpt::Ecpt::new(&ecpt, &mut phys).unwrap(),
            &mut phys,
            9,
        );
    }

    /// Resize counters summed from the design's stats section.
    #[derive(Debug)]
    struct TableTotals {
        upsizes: u64,
        downsizes: u64,
        chunk_switches: u64,
    }

    impl TableTotals {
        fn of(h: &HashedPt) -> TableTotals {
            let mut out = Stats::new();
            h.write_stats(&mut out);
            let s = &out["mehpt"];
            let n = |k: &str| s.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
            TableTotals {
                upsizes: n("upsizes"),
                downsizes: n("downsizes"),
                chunk_switches: n("chunk_switches"),
            }
        }
    }

    #[test]
    fn in_place_requires_the_l2p_table() {
        let bad = MehptConfig {
            l2p: false,
            ..MehptConfig::default()
        };
        assert!(bad.validate().unwrap_err().contains("in_place"));
        let ok = MehptConfig {
            l2p: false,
            in_place: false,
            ..MehptConfig::default()
        };
        assert!(ok.validate().is_ok());
    }
}
