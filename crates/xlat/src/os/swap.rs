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
//! Layering: a data file below `os/mod.rs` (names only `pagemap.rs`).

use crate::addr::{Asid, Vpn};
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
    /// Referenced bit per page in the clock.
    referenced: IntMap<u64, bool>,
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
    /// A page was installed.
    pub fn track(&mut self, asid: Asid, vpn: Vpn) {
        if self.referenced.insert(key(asid, vpn), true).is_none() {
            self.clock.push_back((asid, vpn));
        }
    }

    /// The MMU walked to the page starting at `vpn` (the accessed bit).
    #[inline]
    pub fn referenced(&mut self, asid: Asid, vpn: Vpn) {
        if let Some(r) = self.referenced.get_mut(&key(asid, vpn)) {
            *r = true;
        }
    }

    /// The next page the clock hand evicts, among those `still_mapped` says exist: a
    /// referenced page gets a second chance. `None` when no page is left.
    pub fn victim(
        &mut self,
        mut still_mapped: impl FnMut(Asid, Vpn) -> bool,
    ) -> Option<(Asid, Vpn)> {
        // Every page is met at most twice (once to clear its bit).
        let mut budget = 2 * self.clock.len() + 1;
        while let Some((asid, vpn)) = self.clock.pop_front() {
            self.scanned += 1;
            budget -= 1;
            let k = key(asid, vpn);
            if !still_mapped(asid, vpn) {
                self.referenced.remove(&k);
                continue;
            }
            match self.referenced.get_mut(&k) {
                Some(r) if *r && budget > 0 => {
                    *r = false;
                    self.clock.push_back((asid, vpn));
                }
                _ => {
                    self.referenced.remove(&k);
                    return Some((asid, vpn));
                }
            }
        }
        None
    }

    /// Forget a page the hand left (it was split: its pieces are tracked again).
    pub fn forget(&mut self, asid: Asid, vpn: Vpn) {
        self.referenced.remove(&key(asid, vpn));
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
        for v in 0..4 {
            s.track(0, Vpn(v));
        }
        // Installing counts as a reference: the first pass clears every bit.
        s.referenced(0, Vpn(0));
        assert_eq!(s.victim(|_, _| true), Some((0, Vpn(0))));
        // Page 1 is used again: page 2 goes next.
        s.referenced(0, Vpn(1));
        assert_eq!(s.victim(|_, _| true), Some((0, Vpn(2))));
        // Unmapped pages are skipped and forgotten.
        assert_eq!(s.victim(|_, v| v != Vpn(3)), Some((0, Vpn(1))));
        assert_eq!(s.victim(|_, _| true), None);
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
