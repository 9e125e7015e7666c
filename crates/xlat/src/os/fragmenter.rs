//! The fragmenters and free-memory snapshots: physical memory as a long-running system leaves
//! it, made before the run (`os.fmfi_target`, `os.fragmenter.*`, `os.buddyinfo`).
//!
//! Contract: each fragmenter expects all memory free (a fresh [`PhysMem`]), is deterministic in
//! its seed, and ends within 0.02 of the target FMFI or returns an error naming the setting to
//! change; a snapshot's free blocks become exactly the free memory. Frames it pins are
//! unmovable kernel memory, frames it fills are movable page-cache-like filler (compaction
//! moves them silently).
//!
//! Layering: `impl PhysMem` over `phys.rs`'s frame records; names `phys.rs`, `buddy.rs`,
//! `error.rs`.

use super::buddy::{Buddy, ORDERS};
use super::error::OsError;
use super::phys::{frame_byte, kind, kind_of, PhysMem, FILLER, PAGEBLOCK_ORDER, PINNED};
use crate::addr::{format_bytes, BASE_PAGE_BYTES};
use crate::rng::Rng;
use serde::{Deserialize, Serialize};

/// How the fragmenter fills memory before the run (`os.fragmenter.mode`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FragmenterMode {
    /// `fill` when `os.fmfi_target` is set (above 0), over a `/proc/buddyinfo` snapshot `pin`
    /// (`fill` cannot build on one); nothing without a target. A target alone thus gets the
    /// realistic fill, under which compaction can make blocks as it can on Linux.
    Auto,
    /// Pin one random unmovable frame in a random share of the free 2^`fmfi_order`-frame blocks
    /// until the FMFI is reached (the original method; memory otherwise stays free).
    Pin,
    /// Fill memory like a long-running Linux system: movable page-cache-like pages, whole
    /// unmovable kernel pageblocks and scattered unmovable pages in other pageblocks, then free
    /// page-cache pages until `free_share` of memory is free at the target FMFI.
    Fill,
    /// The Elastic Translations authors' fragmenter: fill memory with movable pages, then free
    /// 512 KiB chunks at alternating positions while the FMFI is below target and 32 MiB chunks
    /// (at alternating positions from the top of memory) once it is at or above it, until
    /// `free_share` of memory is free. "99 %" is the literal FMFI 0.99.
    Alternating,
}

/// `[os.fragmenter]`: the fragmenter's mix.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct FragmenterConfig {
    /// `auto` (default: `fill` when `os.fmfi_target` > 0), `pin` (runs when `os.fmfi_target`
    /// > 0), `fill` or `alternating` (always run).
    pub mode: FragmenterMode,
    /// Fill: share of memory left free.
    pub free_share: f64,
    /// Fill: share of the 2 MiB pageblocks that are wholly unmovable kernel memory (Linux groups
    /// unmovable allocations in their own pageblocks).
    pub kernel_share: f64,
    /// Fill: share of the other pageblocks that hold one scattered unmovable kernel page (the
    /// pageblocks unmovable allocations fall back to under pressure).
    pub polluted_share: f64,
}

impl Default for FragmenterConfig {
    fn default() -> Self {
        FragmenterConfig {
            mode: FragmenterMode::Auto,
            free_share: 0.25,
            kernel_share: 0.03,
            polluted_share: 0.03,
        }
    }
}

impl FragmenterConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        for (key, v, hi) in [
            ("free_share", self.free_share, 1.0),
            ("kernel_share", self.kernel_share, 1.0),
            ("polluted_share", self.polluted_share, 1.0),
        ] {
            if !(0.0..=hi).contains(&v) {
                return Err(format!("os.fragmenter.{key} must be in [0, 1], got {v}"));
            }
        }
        if self.free_share + self.kernel_share > 1.0 {
            return Err(format!(
                "os.fragmenter.free_share ({}) + kernel_share ({}) must not exceed 1",
                self.free_share, self.kernel_share
            ));
        }
        Ok(())
    }
}

/// The per-order counts of `os.free_blocks` (`"512MiB*2,2MiB*1311,1MiB*6400"`: COUNT free
/// blocks of SIZE per item; a size named twice adds up), or an error naming the bad item.
pub fn free_block_counts(text: &str) -> Result<[u64; ORDERS], String> {
    let mut counts = [0u64; ORDERS];
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let bad = |why: String| format!("os.free_blocks: item '{item}': {why}");
        let (size, count) = item
            .split_once('*')
            .ok_or_else(|| bad("expected SIZE*COUNT, e.g. 2MiB*512".into()))?;
        let bytes = crate::addr::parse_bytes(size.trim()).map_err(bad)?;
        let count: u64 = count
            .trim()
            .parse()
            .map_err(|_| bad(format!("'{}' is not a block count", count.trim())))?;
        let pages = bytes / BASE_PAGE_BYTES;
        if bytes % BASE_PAGE_BYTES != 0 || !pages.is_power_of_two() {
            return Err(bad(format!(
                "{} is not a power-of-two multiple of 4 KiB",
                format_bytes(bytes)
            )));
        }
        let order = pages.trailing_zeros() as usize;
        if order >= ORDERS {
            return Err(bad(format!(
                "{} is above the largest buddy block ({})",
                format_bytes(bytes),
                format_bytes(BASE_PAGE_BYTES << (ORDERS - 1))
            )));
        }
        counts[order] += count;
    }
    if counts.iter().all(|c| *c == 0) {
        return Err(format!("os.free_blocks: '{text}' names no free block"));
    }
    Ok(counts)
}

impl PhysMem {
    /// Fragment free memory until FMFI(`order`) reaches `target` (within 0.01), by pinning one
    /// random frame in a random share of the free `2^order`-frame blocks. Deterministic in `seed`.
    pub fn fragment(&mut self, target: f64, order: u8, seed: u64) -> Result<f64, OsError> {
        let block = 1u64 << order;
        let total = self.buddy.total_pages();
        let mut rng = Rng::new(seed, 0xf4a9);
        // Candidate blocks: every aligned block, in a seeded random order (Fisher-Yates).
        let mut blocks: Vec<u64> = (0..total / block).collect();
        for i in (1..blocks.len()).rev() {
            blocks.swap(i, rng.below(i as u64 + 1) as usize);
        }
        for b in blocks {
            if self.fmfi(order) >= target - 0.005 {
                break;
            }
            let start = b * block;
            // Only break blocks that are still whole: each pin then moves FMFI by one block.
            if self
                .buddy
                .free_block_containing(start)
                .is_none_or(|(_, o)| o < order)
            {
                continue;
            }
            let pfn = start + rng.below(block);
            if self.buddy.alloc_frame(pfn) {
                self.mark(pfn, 0, kind::KERNEL);
                self.account(PINNED, BASE_PAGE_BYTES as i64);
            }
        }
        let reached = self.fmfi(order);
        if (reached - target).abs() > 0.02 {
            return Err(OsError(format!(
                "cannot fragment free memory to FMFI {target:.2} at order {order}: reached {reached:.3}"
            )));
        }
        Ok(reached)
    }

    /// Fill memory like a long-running Linux system, then free page-cache pages until
    /// `cfg.free_share` of memory is free with FMFI(`order`) at `target` (within 0.02).
    /// Deterministic in `seed`; expects all memory free (a fresh [`PhysMem`]).
    ///
    /// Method: every frame starts as movable page-cache-like filler; a random `kernel_share` of
    /// the 2 MiB pageblocks become wholly unmovable kernel memory and a random `polluted_share`
    /// of the others get one unmovable kernel page at a random frame. Then, until enough is
    /// free: while FMFI is below the target a random filler frame is freed (a 4 KiB page-cache
    /// eviction, adding free memory below order `order`), otherwise the filler of a random
    /// aligned `2^order` block with no kernel page is freed (adding a whole free block). This is
    /// the Elastic Translations fragmenter's scheme (fill, then free small chunks while FMFI is
    /// below target and large ones at or above it) with 4 KiB and 2^`order` chunks and
    /// unmovable pages mixed in.
    pub fn fragment_fill(
        &mut self,
        target: f64,
        order: u8,
        cfg: &FragmenterConfig,
        seed: u64,
    ) -> Result<f64, OsError> {
        let total = self.buddy.total_pages();
        debug_assert_eq!(self.buddy.free_pages(), total, "fill expects free memory");
        let mut rng = Rng::new(seed, 0xf111);
        self.buddy = Buddy::new_full(total);
        self.frames.fill(frame_byte(kind::FILLER, 0));
        self.recount_pageblocks(0, total);
        self.account(FILLER, (total * BASE_PAGE_BYTES) as i64);
        let pb_frames = 1u64 << PAGEBLOCK_ORDER;
        let mut pbs: Vec<u64> = (0..total / pb_frames).collect();
        for i in (1..pbs.len()).rev() {
            pbs.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let kernel = (cfg.kernel_share * pbs.len() as f64).round() as usize;
        let polluted = (cfg.polluted_share * (pbs.len() - kernel) as f64).round() as usize;
        let to_kernel = |p: &mut PhysMem, f: u64| {
            p.frames[f as usize] = frame_byte(kind::KERNEL, 0);
            p.pb_unmovable[(f >> PAGEBLOCK_ORDER) as usize] += 1;
            p.account(FILLER, -(BASE_PAGE_BYTES as i64));
            p.account(PINNED, BASE_PAGE_BYTES as i64);
        };
        for pb in &pbs[..kernel] {
            for f in pb * pb_frames..(pb + 1) * pb_frames {
                to_kernel(self, f);
            }
        }
        for pb in &pbs[kernel..kernel + polluted] {
            to_kernel(self, pb * pb_frames + rng.below(pb_frames));
        }
        let want_free = (cfg.free_share * total as f64).round() as u64;
        let chunk = 1u64 << order;
        let chunks = total / chunk;
        // Generous bound on random picks, so an unreachable mix ends in an error, not a hang.
        let mut picks_left = 64 * total + 1024;
        while self.buddy.free_pages() < want_free && picks_left > 0 {
            picks_left -= 1;
            if self.fmfi(order) < target {
                let f = rng.below(total);
                if kind_of(self.frames[f as usize]) == kind::FILLER {
                    self.free_filler(f);
                }
                continue;
            }
            if chunks == 0 {
                continue;
            }
            let start = rng.below(chunks) * chunk;
            let frames = &self.frames[start as usize..(start + chunk) as usize];
            if frames.iter().any(|b| kind_of(*b) == kind::KERNEL)
                || frames.iter().all(|b| kind_of(*b) == kind::FREE)
            {
                continue;
            }
            for f in start..start + chunk {
                if kind_of(self.frames[f as usize]) == kind::FILLER {
                    self.free_filler(f);
                }
            }
        }
        let reached = self.fmfi(order);
        if self.buddy.free_pages() < want_free || (reached - target).abs() > 0.02 {
            return Err(OsError(format!(
                "cannot fill memory to {:.0} % free at FMFI {target:.2} (order {order}): reached \
                 {:.1} % free at FMFI {reached:.3} (lower os.fragmenter.free_share or \
                 kernel_share)",
                cfg.free_share * 100.0,
                self.buddy.free_pages() as f64 * 100.0 / total.max(1) as f64
            )));
        }
        self.peak[FILLER] = self.in_use[FILLER];
        Ok(reached)
    }

    /// The Elastic Translations authors' fragmenter (`os.fragmenter.mode = "alternating"`):
    /// all memory becomes movable filler; then, until `free_share` of memory is free, while
    /// FMFI(`order`) is below `target` the next 512 KiB chunk at alternating positions from the
    /// bottom of memory (chunks 0, 2, 4, ...) is freed, and once it is at or above the target
    /// the next 32 MiB chunk at alternating positions from the top (the last, the third from
    /// last, ...). Deterministic (no random choice). Ends within 0.02 of the target and at the
    /// free share, else a clear error. The kernel and polluted shares of `fill` do not apply.
    pub fn fragment_alternating(
        &mut self,
        target: f64,
        order: u8,
        cfg: &FragmenterConfig,
    ) -> Result<f64, OsError> {
        let total = self.buddy.total_pages();
        debug_assert_eq!(
            self.buddy.free_pages(),
            total,
            "the fragmenter expects free memory"
        );
        self.buddy = Buddy::new_full(total);
        self.frames.fill(frame_byte(kind::FILLER, 0));
        self.recount_pageblocks(0, total);
        self.account(FILLER, (total * BASE_PAGE_BYTES) as i64);
        let small = (512 << 10) / BASE_PAGE_BYTES;
        let large = (32 << 20) / BASE_PAGE_BYTES;
        let want_free = (cfg.free_share * total as f64).round() as u64;
        // Chunks not yet freed, as cursors: the small ones from the bottom, the large ones from
        // the top (a chunk already wholly free is skipped).
        let mut next_small = 0u64;
        let mut next_large = (total / large).checked_sub(1);
        while self.buddy.free_pages() < want_free {
            let (start, len) = if self.fmfi(order) < target && next_small * small + small <= total {
                next_small += 2;
                ((next_small - 2) * small, small)
            } else if let Some(j) = next_large {
                next_large = j.checked_sub(2);
                (j * large, large)
            } else if next_small * small + small <= total {
                // No 32 MiB chunk left: only small ones can still free memory.
                next_small += 2;
                ((next_small - 2) * small, small)
            } else {
                break;
            };
            for f in start..start + len {
                if self.buddy.free_pages() >= want_free {
                    break;
                }
                if kind_of(self.frames[f as usize]) == kind::FILLER {
                    self.free_filler(f);
                }
            }
        }
        let reached = self.fmfi(order);
        if self.buddy.free_pages() < want_free || (reached - target).abs() > 0.02 {
            return Err(OsError(format!(
                "cannot fragment memory to {:.0} % free at FMFI {target:.2} (order {order}) with \
                 512 KiB / 32 MiB chunks: reached {:.1} % free at FMFI {reached:.3} (change \
                 os.fragmenter.free_share or os.phys_mem_bytes)",
                cfg.free_share * 100.0,
                self.buddy.free_pages() as f64 * 100.0 / total.max(1) as f64
            )));
        }
        self.peak[FILLER] = self.in_use[FILLER];
        Ok(reached)
    }

    /// Free one filler frame (a page-cache eviction).
    fn free_filler(&mut self, f: u64) {
        self.unmark(f, 0);
        self.buddy.free(f, 0);
        self.account(FILLER, -(BASE_PAGE_BYTES as i64));
    }

    /// Physical memory of `total_bytes` whose free memory is exactly the free blocks of a
    /// `/proc/buddyinfo` snapshot (counts summed over zones); everything else is pinned
    /// (unmovable). A `/proc/pagetypeinfo` text (recognised by its "Free pages count per migrate
    /// type" header) is read by [`PhysMem::from_pagetypeinfo_text`] instead.
    pub fn from_buddyinfo_text(
        text: &str,
        origin: &str,
        total_bytes: u64,
    ) -> Result<PhysMem, OsError> {
        if text.contains("Free pages count per migrate type") {
            return Self::from_pagetypeinfo_text(text, origin, total_bytes);
        }
        let mut counts = [0u64; ORDERS];
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let bad = |why: &str| OsError(format!("{origin}: line {}: {why}: '{line}'", i + 1));
            let Some(zone_pos) = line.find("zone") else {
                return Err(bad("expected 'Node N, zone NAME count...'"));
            };
            let fields: Vec<&str> = line[zone_pos + 4..].split_whitespace().collect();
            if fields.len() < 2 {
                return Err(bad("no free-block counts"));
            }
            add_counts(&mut counts, &fields[1..], &bad)?;
        }
        Self::from_free_block_counts(&counts, origin, total_bytes)
    }

    /// Physical memory of `total_bytes` whose free memory is exactly `counts[order]` free blocks
    /// of each order (as a `/proc/buddyinfo` line gives them; `os.free_blocks`), laid out as a
    /// snapshot's are; everything else is pinned.
    pub fn from_free_block_counts(
        counts: &[u64; ORDERS],
        origin: &str,
        total_bytes: u64,
    ) -> Result<PhysMem, OsError> {
        let mut p = PhysMem::new(total_bytes);
        let total = p.buddy.total_pages();
        p.buddy = Buddy::new_full(total);
        p.frames.fill(frame_byte(kind::KERNEL, 0));
        let mut cursor = 0u64;
        let free_pages = p.lay_out_free_blocks(counts, &mut cursor, origin, total_bytes)?;
        p.in_use = [0, 0, (total - free_pages) * BASE_PAGE_BYTES, 0, 0];
        p.peak = p.in_use;
        p.recount_pageblocks(0, total);
        Ok(p)
    }

    /// Free the blocks `counts` (per order, largest first) from `cursor` on, each beside a
    /// used buddy so none coalesce; returns the frames freed.
    fn lay_out_free_blocks(
        &mut self,
        counts: &[u64; ORDERS],
        cursor: &mut u64,
        origin: &str,
        total_bytes: u64,
    ) -> Result<u64, OsError> {
        let total = self.buddy.total_pages();
        let mut free_pages = 0;
        for order in (0..ORDERS).rev() {
            for _ in 0..counts[order] {
                let span = 2u64 << order;
                *cursor = cursor.next_multiple_of(span);
                if *cursor + span > total {
                    return Err(OsError(format!(
                        "{origin}: the snapshot's free memory does not fit in os.phys_mem_bytes = {} \
                         (each free block is laid out beside a pinned buddy, so up to twice the free \
                         memory is needed)",
                        format_bytes(total_bytes)
                    )));
                }
                for f in *cursor..*cursor + (1 << order) {
                    self.buddy.free(f, 0);
                    self.frames[f as usize] = frame_byte(kind::FREE, 0);
                }
                free_pages += 1 << order;
                *cursor += span;
            }
        }
        Ok(free_pages)
    }

    /// Physical memory of `total_bytes` seeded from a `/proc/pagetypeinfo` snapshot: its free
    /// blocks (per order, summed over zones and migrate types) become the free memory, and the
    /// used memory is split by pageblock type. Unmovable types (Unmovable, Reclaimable,
    /// HighAtomic, Isolate) are unmovable kernel memory, Movable and CMA pageblocks hold movable
    /// page-cache-like filler. Layout: the free blocks of unmovable types first (each beside a
    /// used buddy, as for buddyinfo), the pageblocks they touch being unmovable; then, from the
    /// next pageblock, the free blocks of movable types; then the top pageblocks of memory are
    /// made unmovable until the snapshot's share of unmovable pageblocks is reached; every other
    /// used frame is filler. Counts printed as ">100000" (the kernel stops counting there) are
    /// taken as 100000.
    pub fn from_pagetypeinfo_text(
        text: &str,
        origin: &str,
        total_bytes: u64,
    ) -> Result<PhysMem, OsError> {
        let movable_type = |t: &str| matches!(t, "Movable" | "CMA");
        let mut free_unmovable = [0u64; ORDERS];
        let mut free_movable = [0u64; ORDERS];
        let mut block_types: Vec<String> = Vec::new();
        let (mut unmovable_blocks, mut all_blocks) = (0u64, 0u64);
        let mut in_block_section = false;
        for (i, line) in text.lines().enumerate() {
            let bad = |why: &str| OsError(format!("{origin}: line {}: {why}: '{line}'", i + 1));
            let trimmed = line.trim();
            if trimmed.is_empty() {
                in_block_section = false;
                continue;
            }
            if let Some(rest) = trimmed.strip_prefix("Number of blocks type") {
                block_types = rest.split_whitespace().map(str::to_string).collect();
                in_block_section = true;
                continue;
            }
            if let Some(type_pos) = line.find(", type ") {
                let fields: Vec<&str> = line[type_pos + 7..].split_whitespace().collect();
                if fields.len() < 2 {
                    return Err(bad("no free-block counts"));
                }
                let counts = if movable_type(fields[0]) {
                    &mut free_movable
                } else {
                    &mut free_unmovable
                };
                add_counts(counts, &fields[1..], &bad)?;
                continue;
            }
            if in_block_section && line.contains("zone") {
                let zone_pos = line.find("zone").expect("checked") + 4;
                let fields: Vec<&str> = line[zone_pos..].split_whitespace().collect();
                if fields.len() != block_types.len() + 1 {
                    return Err(bad(&format!(
                        "expected a zone name and {} pageblock counts",
                        block_types.len()
                    )));
                }
                for (t, f) in block_types.iter().zip(&fields[1..]) {
                    let n: u64 = f
                        .parse()
                        .map_err(|_| bad(&format!("'{f}' is not a count")))?;
                    all_blocks += n;
                    if !movable_type(t) {
                        unmovable_blocks += n;
                    }
                }
            }
            // Other lines (page block order, other sections) carry nothing the model uses.
        }
        if all_blocks == 0 {
            return Err(OsError(format!(
                "{origin}: no 'Number of blocks type' section with pageblock counts (is this \
                 /proc/pagetypeinfo?)"
            )));
        }
        let mut p = PhysMem::new(total_bytes);
        let total = p.buddy.total_pages();
        p.buddy = Buddy::new_full(total);
        p.frames.fill(frame_byte(kind::KERNEL, 0));
        let mut cursor = 0u64;
        let mut free_pages =
            p.lay_out_free_blocks(&free_unmovable, &mut cursor, origin, total_bytes)?;
        let pb_frames = 1u64 << PAGEBLOCK_ORDER;
        let unmovable_low = cursor.div_ceil(pb_frames);
        cursor = unmovable_low * pb_frames;
        free_pages += p.lay_out_free_blocks(&free_movable, &mut cursor, origin, total_bytes)?;
        let pbs = total.div_ceil(pb_frames);
        let layout_end = cursor.div_ceil(pb_frames);
        let want = (unmovable_blocks as f64 / all_blocks as f64 * pbs as f64).round() as u64;
        let unmovable_high = want
            .saturating_sub(unmovable_low)
            .min(pbs.saturating_sub(layout_end));
        let mut filler = 0u64;
        for pb in unmovable_low..pbs - unmovable_high {
            let end = ((pb + 1) * pb_frames).min(total);
            for f in pb * pb_frames..end {
                if kind_of(p.frames[f as usize]) == kind::KERNEL {
                    p.frames[f as usize] = frame_byte(kind::FILLER, 0);
                    filler += 1;
                }
            }
        }
        p.in_use = [
            0,
            0,
            (total - free_pages - filler) * BASE_PAGE_BYTES,
            0,
            filler * BASE_PAGE_BYTES,
        ];
        p.peak = p.in_use;
        p.recount_pageblocks(0, total);
        Ok(p)
    }
}

/// Add a line's per-order free-block counts to `counts` (">N" is read as N).
fn add_counts(
    counts: &mut [u64; ORDERS],
    fields: &[&str],
    bad: &dyn Fn(&str) -> OsError,
) -> Result<(), OsError> {
    if fields.len() > ORDERS {
        return Err(bad("more orders than 0..18"));
    }
    for (order, f) in fields.iter().enumerate() {
        counts[order] += f
            .trim_start_matches('>')
            .parse::<u64>()
            .map_err(|_| bad(&format!("'{f}' is not a count")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::FrameUse;

    #[test]
    fn fragmentation_reaches_the_target_fmfi() {
        for target in [0.5, 0.7, 0.9] {
            let mut p = PhysMem::new(4 << 30);
            let reached = p.fragment(target, 9, 3).unwrap();
            assert!((reached - target).abs() <= 0.02, "{target} -> {reached}");
            assert!(
                p.pinned_bytes() < (4u64 << 30) / 100,
                "pins only a few frames"
            );
        }
    }

    const PAGETYPEINFO: &str = "Page block order: 9
Pages per block:  512

Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10
Node    0, zone      DMA, type    Unmovable      0      0      0      1      2      1      1      0      1      0      0
Node    0, zone      DMA, type      Movable      0      0      0      0      0      0      0      0      0      1      3
Node    0, zone   Normal, type    Unmovable     40     20      5      0      0      0      0      0      0      0      0
Node    0, zone   Normal, type      Movable   >100000     30     10      4      2      0      0      0      0      2      1
Node    0, zone   Normal, type  Reclaimable     10      0      0      0      0      0      0      0      0      0      0
Node    0, zone   Normal, type   HighAtomic      0      0      0      0      0      0      0      0      0      0      0
Node    0, zone   Normal, type          CMA      0      0      0      0      0      0      0      0      0      0      0
Node    0, zone   Normal, type      Isolate      0      0      0      0      0      0      0      0      0      0      0

Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic          CMA      Isolate
Node 0, zone      DMA            1            7            0            0            0            0
Node 0, zone   Normal           90          850           60            0            0            0
";

    #[test]
    fn a_pagetypeinfo_snapshot_seeds_free_blocks_and_movable_vs_unmovable_memory() {
        let p = PhysMem::from_buddyinfo_text(PAGETYPEINFO, "pti", 4 << 30).unwrap();
        let b = p.free_blocks();
        // Summed over zones and types; ">100000" read as 100000.
        assert_eq!(&b[..11], &[100_050, 50, 15, 5, 4, 1, 1, 0, 1, 3, 4]);
        // 151 of 1008 pageblocks are of unmovable types: that share of the 2048 pageblocks of
        // 4 GiB is unmovable, the rest of the used memory is movable filler.
        let pbs = 2048.0_f64;
        let want = (151.0 / 1008.0 * pbs).round() as usize;
        let unmovable_pbs = p.pb_unmovable.iter().filter(|u| **u > 0).count();
        assert!(
            unmovable_pbs.abs_diff(want) <= 1,
            "{unmovable_pbs} vs {want}"
        );
        assert!(p.filler_bytes() > 0 && p.pinned_bytes() > 0);
        assert_eq!(
            p.filler_bytes() + p.pinned_bytes() + p.free_bytes(),
            p.total_bytes()
        );
        // Movable memory lets direct compaction make a block no snapshot free list had.
        let mut p = p;
        assert!(!p.can_alloc(12));
        p.alloc(12, FrameUse::PageTable).unwrap();
        assert_eq!(p.compaction_stats().direct_successes, 1);
        let err = PhysMem::from_buddyinfo_text(
            "Free pages count per migrate type at order 0 1\nNode 0, zone Normal, type Movable 1 x\n",
            "pti",
            1 << 30,
        )
        .err()
        .unwrap();
        assert!(
            err.0.contains("pti: line 2") && err.0.contains("'x'"),
            "{err}"
        );
        let err = PhysMem::from_buddyinfo_text(
            "Free pages count per migrate type at order 0 1\nNode 0, zone Normal, type Movable 1 2\n",
            "pti",
            1 << 30,
        )
        .err()
        .unwrap();
        assert!(err.0.contains("Number of blocks type"), "{err}");
    }

    #[test]
    fn a_buddyinfo_snapshot_becomes_the_free_memory() {
        let text = "Node 0, zone      DMA      1      1      1      0      2      1      1      0      1      1      3\n\
                    Node 0, zone    Normal    100     50     10      4      0      0      0      0      0      0      2\n";
        let p = PhysMem::from_buddyinfo_text(text, "snap", 1 << 30).unwrap();
        let b = p.free_blocks();
        assert_eq!(&b[..11], &[101, 51, 11, 4, 2, 1, 1, 0, 1, 1, 5]);
        let bad = PhysMem::from_buddyinfo_text("Node 0, zone Normal 1 x\n", "snap", 1 << 30)
            .err()
            .unwrap();
        assert!(
            bad.0.contains("snap: line 1") && bad.0.contains("'x'"),
            "{bad}"
        );
    }

    #[test]
    fn free_blocks_in_the_config_become_exactly_the_free_memory() {
        let counts = free_block_counts("512MiB*2, 2MiB*300,1MiB*100,2MiB*11").unwrap();
        let p = PhysMem::from_free_block_counts(&counts, "os.free_blocks", 4 << 30).unwrap();
        let b = p.free_blocks();
        assert_eq!((b[8], b[9], b[17]), (100, 311, 2));
        assert_eq!(b.iter().sum::<u64>(), 413, "no other block is free");
        for (text, why) in [
            ("2MiB", "expected SIZE*COUNT"),
            ("3MiB*1", "not a power-of-two multiple of 4 KiB"),
            ("2MiB*x", "'x' is not a block count"),
            ("", "names no free block"),
        ] {
            let err = free_block_counts(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }
}
