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
//! **CoalaKhugepaged** ([`khugepaged`]; the daemon and its OS operations are in
//! `os/daemons/coala_khugepaged.rs`): a daemon on simulated time ([`Design::os_work`]) that
//! works through Leshy's hints hottest first — a
//! 32 MiB hint by copy into a fresh 32 MiB block (16 x 2 MiB pages that form one group; 2 MiB
//! collapses of its ranges when no block is found or the range is not promotable whole), a
//! 2 MiB hint by an ordinary collapse, a 64 KiB hint by the collapse of its 2 MiB range — at
//! most `pages_to_scan` collapsed pages per wake-up.
//!
//! **Leshy** ([`leshy`]): samples 1 in `sample_period` TLB-miss walks (with jitter, as SPE),
//! counts samples per 4 KiB page and selects greedily which 64 KiB / 2 MiB / 32 MiB ranges to
//! hint under the budget `tlb_entries` x slack. `profile` mode writes the hints of a run to a
//! file; `offline` mode reads one and restricts CoalaPaging to hinted ranges and THP to ranges
//! hinted 2 MiB or larger ([`Design::allows_huge`]); `online` mode re-selects every epoch over
//! the last two epochs' samples and hands the hints to CoalaKhugepaged.
//!
//! **Nested** (`virt.enabled` with `tlb.coalescing = "contiguous_bit"`): the combined TLB
//! entry is the smaller of the guest's and the host's contiguous sizes
//! (`virt::effective_span`); run `et` as the host design too for host contiguity.
//!
//! ## Configuration
//! `[et]`: `coala_paging` (true; false leaves placement to the OS policy, i.e. the contiguous
//! bit is still managed but contiguity arises only by chance or from mTHP folios),
//! `range_invalidation` (false: Neoverse N1's 16 invalidations per broken group),
//! `invalidation_cycles` (500, as `os.migration.shootdown_cycles`), and the radix table's
//! `levels`, `pwc_levels`, `pwc_entries`, `pwc_ways`, `pwc_latency_cycles` (as `[radix]`).
//! `[et.khugepaged]`: `enabled` (false), `sleep_cycles` (2.7 G: 1000 ms at 2.7 GHz),
//! `pages_to_scan` (8192). `[et.leshy]`: `mode` (`off`, `profile`, `offline`, `online`),
//! `sample_period` (1024), `jitter` (true), `tlb_entries` (1280), `offline_slack` (1.0),
//! `online_slack` (0.7), `coverage` (1.0), `epoch_cycles` (13.5 G: 5 s), `epoch_cap_bytes`
//! (1.875 GiB), `hints_file`, `hints_out`.
//!
//! Statistics (`et.*`): CoalaPaging's outcomes (`place_requests_4k` / `_2m`,
//! `placed_by_sibling_4k` / `_2m`, `placed_new_group_4k` / `_2m`, `fallback_target_busy`,
//! `fallback_no_block`, `fallback_misaligned_group`), contiguous groups formed and broken
//! (`groups_formed_64k` / `_32m`, `groups_broken_64k` / `_32m`), `group_invalidations` (TLB
//! invalidations of the other members of broken groups) and `invalidation_cycles` (their OS
//! cost), plus the radix PWC figures (`pwc_*`); with CoalaKhugepaged on `khugepaged.*`
//! (`wakeups`, `hints_handled`, `promotions_2m`, `promotions_32m`, `copies`, `bytes_copied`,
//! `fallbacks_32m`, `no_block`), with Leshy on `leshy.*` (`samples`, `epochs`,
//! `hint_entries`, `hinted_{64k,2m,32m}_bytes`, `thp_refused`, `placements_unhinted`).
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
//! - Leshy samples one in `sample_period` TLB-miss *walks* (SPE samples one in 1024
//!   operations and keeps those that walked: the same expected rate of walk samples); the
//!   jitter is uniform within +-1/8 of the period; the translation latency SPE records is not
//!   used (the facts file's target counts sampled misses).
//! - Leshy's "at least 2 sampled sub-regions" is read as: of the next smaller size; a region
//!   with fewer stands for that sub-region's candidates. The trade-down trades the cheapest
//!   region of the largest size (fewest added entries; ties: coldest) and stops at the first
//!   trade that does not fit. Both are our reading of the facts file.
//! - Offline hints come from a file written by a profiling run (`profile` mode) that we run
//!   first; the artifact's own profiling setup is not known, see docs/designs/et.md.
//! - CoalaKhugepaged's pacing (`sleep_cycles`, Leshy's `epoch_cycles`) defaults to the
//!   evaluation's 1000 ms / 5 s at 2.7 GHz, longer than our simulated runs: scale them down to
//!   see promotions. Its scans cost nothing beyond the copies and shootdowns (charged as OS
//!   time like khugepaged's); it replaces `os.khugepaged` (do not turn both on). Holes of a
//!   32 MiB range are mapped zero-filled by the promotion.
//! - The N1 L1 DTLB, which holds 64 KiB but not 32 MiB entries, is the machine's
//!   `tlb.l1_max_span_bytes` (set to 64 KiB by the `neoverse-n1` preset): a 32 MiB entry is held
//!   in the L1 as the 2 MiB page that was accessed.
//!
//! ## References
//! Elastic Translations (MICRO'24) talk slides ("CoalaPaging", "transparent contiguous-bit
//! management"); `elastic-translations-facts.md` (from the authors' artifact: CoalaPaging's
//! rule, contiguous-bit management, invalidation cost, N1 TLBs); Arm ARM (DDI 0487) D8.6.1,
//! the Contiguous bit.

pub mod khugepaged;
pub mod leshy;

use crate::addr::{Asid, Mapping, PageSize, Pfn, Vpn};
use crate::designs::radix::{Radix, RadixConfig, CONTIG_ENTRIES};
use crate::designs::{Design, PtFootprint, WalkResult};
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
    /// CoalaKhugepaged, the asynchronous promotion daemon (`[et.khugepaged]`).
    pub khugepaged: khugepaged::CoalaKhugepagedConfig,
    /// Leshy, the translation-size selection (`[et.leshy]`).
    pub leshy: LeshyConfig,
}

/// What Leshy does (`et.leshy.mode`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum LeshyMode {
    /// No Leshy.
    #[default]
    Off,
    /// A profiling run: sample, and at the end select with the offline budget and write the
    /// hints to `et.leshy.hints_out` (the input of an `offline` run).
    Profile,
    /// Hints from `et.leshy.hints_file` (a profiling run's) steer CoalaPaging: placement only
    /// inside hinted ranges, THP faults only inside ranges hinted 2 MiB or larger (and
    /// CoalaKhugepaged, when it is on, works through them).
    Offline,
    /// Sample during the run; every `epoch_cycles` select with the online budget over the
    /// last two epochs' samples and hand the hints to CoalaKhugepaged.
    Online,
}

/// `[et.leshy]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LeshyConfig {
    /// `off`, `profile`, `offline` or `online`.
    pub mode: LeshyMode,
    /// Mean walk-causing references per sample (SPE's interval, 1024).
    pub sample_period: u64,
    /// Randomize each interval within +-1/8 of the period (SPE's jitter).
    pub jitter: bool,
    /// TLB entries of the budget (Neoverse N1's L2 TLB: 1280).
    pub tlb_entries: u64,
    /// Share of `tlb_entries` the offline / profile selection may use (100 %).
    pub offline_slack: f64,
    /// Share of `tlb_entries` the online selection may use (70 %).
    pub online_slack: f64,
    /// Share of the sampled misses the selection must cover (100 %).
    pub coverage: f64,
    /// Online mode: simulated core cycles per epoch (5 s at 2.7 GHz; scale it to the run).
    pub epoch_cycles: u64,
    /// Online mode: hinted bytes handed to CoalaKhugepaged per epoch at most (~1.875 GiB),
    /// hottest first.
    pub epoch_cap_bytes: u64,
    /// Offline mode: the hint file to read (a profiling run's `hints_out`).
    pub hints_file: String,
    /// Profile mode: the hint file to write (empty: select and count, write nothing).
    pub hints_out: String,
}

impl Default for LeshyConfig {
    fn default() -> Self {
        LeshyConfig {
            mode: LeshyMode::Off,
            sample_period: 1024,
            jitter: true,
            tlb_entries: 1280,
            offline_slack: 1.0,
            online_slack: 0.7,
            coverage: 1.0,
            epoch_cycles: 13_500_000_000,
            epoch_cap_bytes: 15 << 27,
            hints_file: String::new(),
            hints_out: String::new(),
        }
    }
}

impl LeshyConfig {
    /// Check ranges and the mode's needs.
    pub fn validate(&self, khugepaged: bool) -> Result<(), String> {
        if self.sample_period == 0 {
            return Err("et.leshy.sample_period must be > 0".into());
        }
        for (k, v) in [
            ("offline_slack", self.offline_slack),
            ("online_slack", self.online_slack),
            ("coverage", self.coverage),
        ] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(format!("et.leshy.{k} must be in (0, 1], got {v}"));
            }
        }
        if self.epoch_cycles == 0 {
            return Err("et.leshy.epoch_cycles must be > 0".into());
        }
        match self.mode {
            LeshyMode::Offline if self.hints_file.is_empty() => Err(
                "et.leshy.mode = \"offline\" needs et.leshy.hints_file (write one with mode = \"profile\" and et.leshy.hints_out)".into(),
            ),
            LeshyMode::Online if !khugepaged => Err(
                "et.leshy.mode = \"online\" steers CoalaKhugepaged: set et.khugepaged.enabled = true".into(),
            ),
            _ if khugepaged && !matches!(self.mode, LeshyMode::Online | LeshyMode::Offline) => Err(
                "et.khugepaged.enabled works through Leshy hints: set et.leshy.mode = \"online\" (or \"offline\" with a hint file)".into(),
            ),
            _ => Ok(()),
        }
    }

    fn budget(&self, slack: f64) -> u64 {
        (self.tlb_entries as f64 * slack).floor() as u64
    }
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
            khugepaged: Default::default(),
            leshy: Default::default(),
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
        self.radix().validate()?;
        self.khugepaged.validate()?;
        self.leshy.validate(self.khugepaged.enabled)
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

/// Leshy's state (see [`leshy`]).
struct LeshyState {
    cfg: LeshyConfig,
    sampler: leshy::Sampler,
    /// Samples of the current epoch (the whole run outside online mode).
    cur: leshy::Samples,
    /// Online mode: the previous epoch's samples.
    prev: leshy::Samples,
    /// The current hints (offline: the file's; online: the last epoch's).
    hints: Vec<leshy::Hint>,
    index: leshy::HintIndex,
    next_epoch: u64,
    samples: u64,
    epochs: u64,
    thp_refused: u64,
    placements_unhinted: u64,
}

impl LeshyState {
    /// Online mode: one epoch's selection over the last two epochs' samples, capped at
    /// `epoch_cap_bytes`, hottest first.
    fn epoch(&mut self) -> Vec<leshy::Hint> {
        self.epochs += 1;
        let mut both = std::mem::take(&mut self.prev);
        for (k, n) in &self.cur {
            *both.entry(*k).or_default() += n;
        }
        let mut hints = leshy::select(
            &both,
            self.cfg.budget(self.cfg.online_slack),
            self.cfg.coverage,
        );
        let mut bytes = 0;
        hints.retain(|h| {
            bytes += h.region.bytes();
            bytes <= self.cfg.epoch_cap_bytes
        });
        self.prev = std::mem::take(&mut self.cur);
        self.hints = hints.clone();
        hints
    }
}

/// Elastic Translations on a radix table.
pub struct Et {
    radix: Radix,
    cfg: EtConfig,
    c: Counters,
    /// The group the last `unmap` broke, until the engine takes it.
    broken: Option<CoalescedSpan>,
    /// CoalaKhugepaged (`et.khugepaged.enabled`).
    khugepaged: Option<Box<khugepaged::CoalaKhugepaged>>,
    /// Leshy (`et.leshy.mode` not `off`).
    leshy: Option<Box<LeshyState>>,
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

    fn va_bits(&self) -> Option<u32> {
        self.radix.va_bits()
    }

    fn coalesced(&self, asid: Asid, m: Mapping, req: CoalesceRequest) -> Option<CoalescedSpan> {
        self.radix.coalesced(asid, m, req)
    }

    #[inline]
    fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut crate::mem::MemSystem) -> WalkResult {
        if let Some(l) = self.leshy.as_deref_mut() {
            // A walk-causing reference: SPE's sampler counts it.
            if l.sampler.tick() {
                l.samples += 1;
                *l.cur.entry((asid, vpn.0)).or_default() += 1;
            }
        }
        self.radix.walk(asid, vpn, mem)
    }

    fn walk_after_fault(
        &mut self,
        asid: Asid,
        vpn: Vpn,
        mem: &mut crate::mem::MemSystem,
    ) -> WalkResult {
        self.radix.walk_after_fault(asid, vpn, mem)
    }

    #[inline]
    fn prefetch(&self, asid: Asid, vpn: Vpn, mem: &crate::mem::MemSystem) {
        self.radix.prefetch(asid, vpn, mem)
    }

    #[inline]
    fn prefetch_early(&self, asid: Asid, vpn: Vpn) {
        self.radix.prefetch_early(asid, vpn)
    }

    fn footprint(&self) -> PtFootprint {
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

    fn new(cfg: &EtConfig, phys: &mut PhysMem) -> Result<Self, OsError> {
        cfg.validate().map_err(OsError)?;
        let mut leshy = None;
        if cfg.leshy.mode != LeshyMode::Off {
            let l = &cfg.leshy;
            let hints = if l.mode == LeshyMode::Offline {
                let text = std::fs::read_to_string(&l.hints_file).map_err(|e| {
                    OsError(format!(
                        "et.leshy.hints_file: cannot read {:?}: {e}",
                        l.hints_file
                    ))
                })?;
                leshy::parse_hints(&text, &format!("et.leshy.hints_file {:?}", l.hints_file))
                    .map_err(OsError)?
            } else {
                Vec::new()
            };
            if l.mode == LeshyMode::Profile && !l.hints_out.is_empty() {
                // Fail now, not after the run, on a path that cannot be written.
                std::fs::write(&l.hints_out, leshy::format_hints(&[])).map_err(|e| {
                    OsError(format!(
                        "et.leshy.hints_out: cannot write {:?}: {e}",
                        l.hints_out
                    ))
                })?;
            }
            leshy = Some(Box::new(LeshyState {
                cfg: l.clone(),
                sampler: leshy::Sampler::new(l.sample_period, l.jitter, 0x1e5),
                cur: Default::default(),
                prev: Default::default(),
                index: leshy::HintIndex::new(&hints),
                hints,
                next_epoch: l.epoch_cycles,
                samples: 0,
                epochs: 0,
                thp_refused: 0,
                placements_unhinted: 0,
            }));
        }
        let khugepaged = cfg.khugepaged.enabled.then(|| {
            let mut k = khugepaged::CoalaKhugepaged::new(&cfg.khugepaged);
            if let Some(l) = leshy.as_deref() {
                k.set_hints(l.hints.clone());
            }
            Box::new(k)
        });
        Ok(Et {
            radix: Radix::new(&cfg.radix(), phys)?,
            cfg: cfg.clone(),
            c: Counters::default(),
            broken: None,
            khugepaged,
            leshy,
        })
    }

    fn allows_huge(&mut self, asid: Asid, vpn: Vpn) -> bool {
        match self.leshy.as_deref_mut() {
            Some(l) if l.cfg.mode == LeshyMode::Offline => {
                // Offline hints: THP only inside ranges hinted 2 MiB or larger.
                let ok = l.index.overlaps_at_least(asid, vpn, 512, 2);
                if !ok {
                    l.thp_refused += 1;
                }
                ok
            }
            _ => true,
        }
    }

    fn wants_os_work(&self) -> bool {
        self.khugepaged.is_some()
    }

    fn os_work(
        &mut self,
        os: &mut crate::os::Os,
        now_cycles: u64,
        changes: &mut Vec<crate::os::MapChange>,
    ) -> Result<(), OsError> {
        let Some(k) = self.khugepaged.as_deref_mut() else {
            return Ok(());
        };
        if let Some(l) = self.leshy.as_deref_mut() {
            if l.cfg.mode == LeshyMode::Online {
                while now_cycles >= l.next_epoch {
                    l.next_epoch += l.cfg.epoch_cycles;
                    k.set_hints(l.epoch());
                }
            }
        }
        k.tick(os, now_cycles, changes);
        Ok(())
    }

    fn place(&mut self, phys: &mut PhysMem, req: &PlaceRequest) -> Option<Pfn> {
        if !self.cfg.coala_paging {
            return None;
        }
        let (kind, _) = group_kind(req.size)?;
        if let Some(l) = self.leshy.as_deref_mut() {
            // Offline hints: CoalaPaging places only inside hinted ranges.
            if l.cfg.mode == LeshyMode::Offline && l.index.find(req.asid, req.vpn).is_none() {
                l.placements_unhinted += 1;
                return None;
            }
        }
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
        if let Some(k) = self.khugepaged.as_deref() {
            k.stats(s);
        }
        if let Some(l) = self.leshy.as_deref() {
            // Profile mode: the selection over the whole run with the offline budget (what
            // the hint file holds).
            let profile;
            let hints = if l.cfg.mode == LeshyMode::Profile {
                profile = leshy::select(&l.cur, l.cfg.budget(l.cfg.offline_slack), l.cfg.coverage);
                if !l.cfg.hints_out.is_empty() {
                    if let Err(e) = std::fs::write(&l.cfg.hints_out, leshy::format_hints(&profile))
                    {
                        // Checked writable at the start; a later failure is reported here.
                        eprintln!(
                            "error: et.leshy.hints_out: cannot write {:?}: {e}",
                            l.cfg.hints_out
                        );
                    }
                }
                &profile
            } else {
                &l.hints
            };
            let ls = s.section("leshy");
            ls.put_u64("samples", l.samples);
            ls.put_u64("epochs", l.epochs);
            ls.put_u64("hint_entries", hints.len() as u64);
            for level in 1..4 {
                let bytes: u64 = hints
                    .iter()
                    .filter(|h| h.region.level == level)
                    .map(|h| h.region.bytes())
                    .sum();
                ls.put_u64(
                    &format!("hinted_{}_bytes", leshy::LEVEL_NAMES[level as usize]),
                    bytes,
                );
            }
            ls.put_u64("thp_refused", l.thp_refused);
            ls.put_u64("placements_unhinted", l.placements_unhinted);
        }
    }
}

/// This design's profile (`profile.toml` beside this file): the settings its paper assumes
/// around it, applied when the design is named (format and rules: `crate::profiles`).
pub const PROFILE: &str = include_str!("profile.toml");

#[cfg(test)]
mod tests;
