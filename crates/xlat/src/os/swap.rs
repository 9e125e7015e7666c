//! Memory pressure's state: the swap device and the clock (second-chance) approximation of LRU
//! that picks reclaim's victims (Linux `mm/swapfile.c` and the LRU lists of `mm/vmscan.c`, much
//! simplified). Reclaim itself, which unmaps the victims, is `vmscan.rs`.
//!
//! Contract: every mapped data page enters the clock when it is installed; `referenced` is set
//! when the MMU walks to the page (the accessed bit hardware sets on a TLB fill); the clock
//! hand gives a referenced page a second chance (clearing the bit) and picks the first
//! unreferenced one. Entries of pages unmapped since are dropped lazily when the hand meets
//! them. A swapped-out base page is remembered until it is swapped in or unmapped; swap space
//! never exceeds `os.swap_bytes`.
//!
//! The accessed bits are kept per frame (the first 4 KiB frame of the page), in a bitmap, not
//! per page in the clock's map: every walk sets one, and a hash-map probe per walk into a map of
//! every mapped page took 27 % of radix on gups at 1 GiB under perf (host cache misses), with
//! nothing ever swapped. The two are equivalent because a page's frame changes only through
//! `install` (migration and compaction re-install), which sets the new frame's bit as tracking
//! the page did, and no frame is mapped twice; so a tracked page's bit is always the one its
//! current frame holds. A frame's bit may also be set by a walk to an untracked page (pieces
//! left by a partial `munmap` or `mprotect`); no tracked page reads it before an `install`
//! of that frame sets it anyway.
//!
//! Layering: a data file below `os/mod.rs` (names only `pagemap.rs`).

use crate::addr::{Asid, Pfn, Vpn};
use crate::os::pagemap::IntMap;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `os.swap`: reclaim and the swap device.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SwapConfig {
    /// Swap space in bytes (0 = no swap: running out of memory is an error).
    pub bytes: u64,
    /// Latency of a major fault (one 4 KiB read from the swap device), in core cycles:
    /// an NVMe SSD read of about 10 us at 3 GHz.
    pub swap_in_cycles: u64,
    /// OS cycles to write one 4 KiB page out (the write itself is asynchronous; this is the
    /// kernel's unmap, I/O submission and bookkeeping).
    pub swap_out_cycles: u64,
    /// Reclaim keeps at least this many bytes free, so that page-table allocations made while
    /// a design installs a mapping (which cannot wait for reclaim) find memory.
    pub min_free_bytes: u64,
    /// Pages reclaimed per reclaim pass (Linux `SWAP_CLUSTER_MAX`, 32).
    pub batch_pages: u64,
}

impl Default for SwapConfig {
    fn default() -> Self {
        SwapConfig {
            bytes: 0,
            swap_in_cycles: 30_000,
            swap_out_cycles: 2_000,
            min_free_bytes: 4 << 20,
            batch_pages: 32,
        }
    }
}

impl SwapConfig {
    /// Check ranges (errors name the key).
    pub fn validate(&self, phys_mem_bytes: u64) -> Result<(), String> {
        if !self.bytes.is_multiple_of(4096) {
            return Err(format!(
                "os.swap.bytes must be a multiple of 4 KiB, got {}",
                self.bytes
            ));
        }
        if self.bytes > 1 << 50 {
            return Err(format!(
                "os.swap.bytes must be at most 1 PiB (the model's page numbers), got {}",
                self.bytes
            ));
        }
        if self.bytes > 0 && self.min_free_bytes >= phys_mem_bytes / 2 {
            return Err(format!(
                "os.swap.min_free_bytes must be below half of os.phys_mem_bytes, got {}",
                self.min_free_bytes
            ));
        }
        if self.batch_pages == 0 {
            return Err("os.swap.batch_pages must be at least 1".into());
        }
        Ok(())
    }
}

fn key(asid: Asid, vpn: Vpn) -> u64 {
    (asid as u64) << 48 | vpn.0
}

/// The clock over mapped pages and the swapped-out pages.
#[derive(Debug, Default)]
pub struct Swap {
    /// Pages in clock order (first VPN of each installed page).
    clock: VecDeque<(Asid, Vpn)>,
    /// Pages tracked by the clock (a page met by the hand without an entry here is evicted).
    tracked: IntMap<u64, ()>,
    /// Accessed bit per frame (bit `pfn % 64` of word `pfn / 64`), grown on demand.
    accessed: Vec<u64>,
    /// Swapped-out base pages.
    swapped: IntMap<u64, ()>,
    /// Swap slots in use (4 KiB each).
    pub used_pages: u64,
    /// Pages written out.
    pub swap_outs: u64,
    /// Major faults (pages read back).
    pub swap_ins: u64,
    /// Pages the clock hand looked at.
    pub scanned: u64,
    /// Reclaim passes.
    pub reclaims: u64,
}

impl Swap {
    /// Page `vpn` was installed on frame `pfn` (installing counts as a reference).
    pub fn track(&mut self, asid: Asid, vpn: Vpn, pfn: Pfn) {
        if self.tracked.insert(key(asid, vpn), ()).is_none() {
            self.clock.push_back((asid, vpn));
        }
        self.referenced(pfn);
    }

    /// The MMU walked to the page whose first frame is `pfn` (the accessed bit).
    #[inline]
    pub fn referenced(&mut self, pfn: Pfn) {
        let word = (pfn.0 / 64) as usize;
        if word >= self.accessed.len() {
            self.accessed.resize(word + 1, 0);
        }
        self.accessed[word] |= 1 << (pfn.0 % 64);
    }

    /// Read and clear the accessed bit of frame `pfn`.
    fn take_accessed(&mut self, pfn: Pfn) -> bool {
        let (word, bit) = ((pfn.0 / 64) as usize, 1u64 << (pfn.0 % 64));
        match self.accessed.get_mut(word) {
            Some(w) if *w & bit != 0 => {
                *w &= !bit;
                true
            }
            _ => false,
        }
    }

    /// The next page the clock hand evicts, among those `mapped_frame` says exist (it returns
    /// the first frame of the page mapped at that VPN, if the page still starts there): a
    /// referenced page gets a second chance. `None` when no page is left.
    pub fn victim(
        &mut self,
        mut mapped_frame: impl FnMut(Asid, Vpn) -> Option<Pfn>,
    ) -> Option<(Asid, Vpn)> {
        // Every page is met at most twice (once to clear its bit).
        let mut budget = 2 * self.clock.len() + 1;
        while let Some((asid, vpn)) = self.clock.pop_front() {
            self.scanned += 1;
            budget -= 1;
            let k = key(asid, vpn);
            let Some(pfn) = mapped_frame(asid, vpn) else {
                self.tracked.remove(&k);
                continue;
            };
            if self.tracked.contains_key(&k) && budget > 0 && self.take_accessed(pfn) {
                self.clock.push_back((asid, vpn));
            } else {
                self.tracked.remove(&k);
                return Some((asid, vpn));
            }
        }
        None
    }

    /// Forget a page the hand left (it was split: its pieces are tracked again).
    pub fn forget(&mut self, asid: Asid, vpn: Vpn) {
        self.tracked.remove(&key(asid, vpn));
    }

    /// Record base page `vpn` as swapped out.
    pub fn swap_out(&mut self, asid: Asid, vpn: Vpn) {
        self.swapped.insert(key(asid, vpn), ());
        self.used_pages += 1;
        self.swap_outs += 1;
    }

    /// If base page `vpn` is in swap, take it back (a major fault).
    pub fn swap_in(&mut self, asid: Asid, vpn: Vpn) -> bool {
        if self.swapped.is_empty() || self.swapped.remove(&key(asid, vpn)).is_none() {
            return false;
        }
        self.used_pages -= 1;
        self.swap_ins += 1;
        true
    }

    /// Drop swapped pages in `[start, start + pages)` of `asid` (the range was unmapped).
    pub fn discard(&mut self, asid: Asid, start: Vpn, pages: u64) {
        if self.swapped.is_empty() {
            return;
        }
        let before = self.swapped.len();
        if pages <= self.swapped.len() as u64 {
            for v in start.0..start.0 + pages {
                self.swapped.remove(&key(asid, Vpn(v)));
            }
        } else {
            let (lo, hi) = (key(asid, start), key(asid, start).saturating_add(pages));
            self.swapped.retain(|k, _| !(lo..hi).contains(k));
        }
        self.used_pages -= (before - self.swapped.len()) as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_gives_referenced_pages_a_second_chance() {
        let mut s = Swap::default();
        // Page v on frame 100 + v.
        let frame = |v: Vpn| Some(Pfn(100 + v.0));
        for v in 0..4 {
            s.track(0, Vpn(v), frame(Vpn(v)).unwrap());
        }
        // Installing counts as a reference: the first pass clears every bit.
        s.referenced(Pfn(100));
        assert_eq!(s.victim(|_, v| frame(v)), Some((0, Vpn(0))));
        // Page 1 is used again: page 2 goes next.
        s.referenced(Pfn(101));
        assert_eq!(s.victim(|_, v| frame(v)), Some((0, Vpn(2))));
        // Unmapped pages are skipped and forgotten.
        let but_3 = |_, v: Vpn| if v == Vpn(3) { None } else { frame(v) };
        assert_eq!(s.victim(but_3), Some((0, Vpn(1))));
        assert_eq!(s.victim(|_, v| frame(v)), None);
    }

    #[test]
    fn a_page_moved_to_another_frame_is_judged_by_its_new_frames_bit() {
        let mut s = Swap::default();
        s.track(0, Vpn(7), Pfn(5));
        s.track(0, Vpn(8), Pfn(6));
        // Both installed (referenced); page 7 migrates to a far frame (re-installed there).
        assert!(s.take_accessed(Pfn(5)) && s.take_accessed(Pfn(6)));
        s.track(0, Vpn(7), Pfn(1 << 20));
        let at = |_, v: Vpn| Some(if v == Vpn(7) { Pfn(1 << 20) } else { Pfn(6) });
        // Page 7's new frame is referenced, page 8's is not: 8 goes first.
        assert_eq!(s.victim(at), Some((0, Vpn(8))));
        assert_eq!(s.victim(at), Some((0, Vpn(7))));
    }

    #[test]
    fn a_forgotten_page_met_by_the_hand_is_evicted_whatever_its_bit() {
        let mut s = Swap::default();
        s.track(0, Vpn(1), Pfn(1));
        s.track(0, Vpn(2), Pfn(2));
        s.forget(0, Vpn(1));
        assert_eq!(s.victim(|_, v| Some(Pfn(v.0))), Some((0, Vpn(1))));
    }

    #[test]
    fn swapped_pages_come_back_once_and_discarding_frees_their_slots() {
        let mut s = Swap::default();
        for v in 10..20 {
            s.swap_out(1, Vpn(v));
        }
        assert!(s.swap_in(1, Vpn(12)) && !s.swap_in(1, Vpn(12)));
        assert!(!s.swap_in(0, Vpn(13)), "another process");
        s.discard(1, Vpn(15), 100);
        assert_eq!(s.used_pages, 4);
        s.discard(1, Vpn(0), 3);
        assert_eq!(s.used_pages, 4);
    }
}
