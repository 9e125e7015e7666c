//! The system calls that change an address space (Linux `mm/mmap.c`, `mprotect.c`,
//! `madvise.c`, and `memory.c`'s `zap_page_range`): mmap, munmap, brk, mprotect, madvise, exit.
//!
//! Contract: a call either fails without changing anything (a range that is not page-aligned,
//! wraps, or leaves the virtual-address space; mprotect over a hole) or applies fully; every
//! translation it removes or re-installs is reported as [`MapChange`]s, the Unmap before the
//! Map; a page only partly inside the range becomes 4 KiB pages of the same frames; the
//! reservations overlapping the range are broken first. A policy that maps at mmap time
//! (eager paging) is asked once the VMA exists.
//!
//! Calls: `policies/reservation.rs` (break reservations), the HugeTLB pool and the swap device
//! (release frames and slots), the configured policy's `mapped` hook.

use super::vma::VmaSet;
use super::{MapChange, Os, OsError};
use crate::addr::{Asid, Mapping, PageSize, Pfn, Vaddr, Vpn, BASE_PAGE_BYTES};
use crate::trace::{advice, prot};

/// `len` rounded up to whole pages; `None` when that wraps (a length near 2^64).
fn page_round(len: u64) -> Option<u64> {
    len.div_ceil(BASE_PAGE_BYTES).checked_mul(BASE_PAGE_BYTES)
}

impl Os {
    pub(super) fn check_range(
        &self,
        addr: Vaddr,
        len: u64,
        what: &str,
    ) -> Result<(u64, u64), OsError> {
        if !addr.0.is_multiple_of(BASE_PAGE_BYTES) {
            return Err(OsError(format!(
                "{what}: address {addr} is not page-aligned"
            )));
        }
        let end = page_round(len)
            .and_then(|l| addr.0.checked_add(l))
            .ok_or_else(|| OsError(format!("{what}: range {addr} + {len} wraps around")))?;
        if end > self.va_limit() {
            return Err(OsError(format!(
                "{what}: range {addr} + {len} leaves {}",
                self.beyond_va_space()
            )));
        }
        Ok((addr.0, end))
    }

    /// `mmap` that returned `addr`.
    /// A mapping over existing pages (MAP_FIXED) replaces them: their translations are removed
    /// (appended to `changes`) and their frames freed.
    pub fn mmap(
        &mut self,
        asid: Asid,
        addr: Vaddr,
        len: u64,
        prot_bits: u32,
        _flags: u32,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        let (start, end) = self.check_range(addr, len, "mmap")?;
        if len == 0 {
            return Err(OsError(format!("mmap at {addr}: zero length")));
        }
        self.unmap_pages(asid, start, end, changes);
        self.procs[asid as usize].vmas.insert(start, end, prot_bits);
        self.policy_mapped(asid, start, end, prot_bits, changes)
    }

    /// Remove and free every page in `[start, end)`, splitting pages at the edges into 4 KiB
    /// pages of the same frames; reservations overlapping the range are broken first.
    pub(super) fn unmap_pages(
        &mut self,
        asid: Asid,
        start: u64,
        end: u64,
        changes: &mut Vec<MapChange>,
    ) {
        let (s, e) = (Vpn(start >> 12), Vpn(end >> 12));
        self.break_reservations(asid, s, e.0 - s.0);
        if self.swap_on {
            self.swap.discard(asid, s, e.0 - s.0);
        }
        let proc_ = &mut self.procs[asid as usize];
        for m in proc_.pages.in_range(s, e) {
            proc_.pages.remove(m);
            changes.push(MapChange::Unmap(asid, m));
            let pages = m.size.base_pages();
            if m.vpn >= s && m.vpn.0 + pages <= e.0 {
                self.hugetlb.release(&mut self.phys, m.pfn, m.size.order());
                continue;
            }
            if self.hugetlb.holds(m.pfn) {
                self.hugetlb.c.pages_split += 1;
            }
            // Partly inside: keep the outside part as 4 KiB pages of the same frames.
            for i in 0..pages {
                let piece = Mapping {
                    vpn: Vpn(m.vpn.0 + i),
                    pfn: Pfn(m.pfn.0 + i),
                    size: PageSize::Size4K,
                    writable: m.writable,
                };
                if piece.vpn >= s && piece.vpn < e {
                    self.hugetlb.release(&mut self.phys, piece.pfn, 0);
                } else {
                    proc_.pages.insert(piece);
                    changes.push(MapChange::Map(asid, piece));
                }
            }
        }
    }

    /// `munmap`; removed translations are appended to `changes`.
    pub fn munmap(
        &mut self,
        asid: Asid,
        addr: Vaddr,
        len: u64,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        let (start, end) = self.check_range(addr, len, "munmap")?;
        self.unmap_pages(asid, start, end, changes);
        self.procs[asid as usize].vmas.remove_range(start, end);
        Ok(())
    }

    /// `brk` to `new_brk`: the first call fixes the heap start; growing extends the heap VMA,
    /// shrinking unmaps.
    pub fn brk(
        &mut self,
        asid: Asid,
        new_brk: Vaddr,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        let (va_limit, beyond) = (self.va_limit(), self.beyond_va_space());
        let p = &mut self.procs[asid as usize];
        let start = *p.heap_start.get_or_insert(new_brk.0);
        if new_brk.0 < start {
            return Err(OsError(format!(
                "brk to {new_brk} below the heap start {:#x}",
                start
            )));
        }
        let old_end = p.heap_end.max(start);
        let Some(new_end) = page_round(new_brk.0).filter(|e| *e <= va_limit) else {
            return Err(OsError(format!("brk to {new_brk} leaves {beyond}")));
        };
        p.heap_end = new_end;
        if new_end > old_end {
            let prot = prot::READ | prot::WRITE;
            // Extend the heap area (merging is cosmetic; a second area is equivalent).
            let from = page_round(start).unwrap_or(start).max(old_end);
            p.vmas.insert(from, new_end, prot);
            self.policy_mapped(asid, from, new_end, prot, changes)?;
        } else if new_end < old_end {
            self.unmap_pages(asid, new_end, old_end, changes);
            self.procs[asid as usize]
                .vmas
                .remove_range(new_end, old_end);
        }
        Ok(())
    }

    /// `mprotect`: translations whose writability changes are re-installed (Unmap + Map).
    pub fn mprotect(
        &mut self,
        asid: Asid,
        addr: Vaddr,
        len: u64,
        prot_bits: u32,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        let (start, end) = self.check_range(addr, len, "mprotect")?;
        // A reservation's pages must share one protection to be promoted together.
        self.break_reservations(asid, Vpn(start >> 12), (end - start) >> 12);
        let any = prot::READ | prot::WRITE | prot::EXEC;
        let downgrade = self.procs[asid as usize]
            .vmas
            .iter()
            .any(|v| v.start < end && v.end > start && v.prot & !prot_bits & any != 0);
        let covered = self.procs[asid as usize]
            .vmas
            .update_range(start, end, |v| v.prot = prot_bits);
        if covered != end - start {
            return Err(OsError(format!(
                "mprotect({addr}, {len}): part of the range is not mapped (ENOMEM)"
            )));
        }
        if prot_bits & (prot::READ | prot::WRITE | prot::EXEC) == 0 {
            self.unmap_pages(asid, start, end, changes);
            return Ok(());
        }
        let writable = prot_bits & prot::WRITE != 0;
        let (s, e) = (Vpn(start >> 12), Vpn(end >> 12));
        let proc_ = &mut self.procs[asid as usize];
        for m in proc_.pages.in_range(s, e) {
            // A permission removed (write, or execute, which a `Mapping` does not carry) must
            // reach the TLBs: the page is re-installed, so every cached entry is invalidated.
            if m.writable == writable && !downgrade {
                continue;
            }
            proc_.pages.remove(m);
            changes.push(MapChange::Unmap(asid, m));
            let inside = m.vpn >= s && m.vpn.0 + m.size.base_pages() <= e.0;
            if inside {
                let nm = Mapping { writable, ..m };
                proc_.pages.insert(nm);
                changes.push(MapChange::Map(asid, nm));
                continue;
            }
            for i in 0..m.size.base_pages() {
                let vpn = Vpn(m.vpn.0 + i);
                let w = if vpn >= s && vpn < e {
                    writable
                } else {
                    m.writable
                };
                let piece = Mapping {
                    vpn,
                    pfn: Pfn(m.pfn.0 + i),
                    size: PageSize::Size4K,
                    writable: w,
                };
                proc_.pages.insert(piece);
                changes.push(MapChange::Map(asid, piece));
            }
        }
        Ok(())
    }

    /// `madvise`: DONTNEED frees the range's pages; HUGEPAGE / NOHUGEPAGE mark it for THP.
    pub fn madvise(
        &mut self,
        asid: Asid,
        addr: Vaddr,
        len: u64,
        advice_value: u32,
        changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        let (start, end) = self.check_range(addr, len, "madvise")?;
        match advice_value {
            advice::DONTNEED => self.unmap_pages(asid, start, end, changes),
            advice::HUGEPAGE | advice::NOHUGEPAGE => {
                let on = advice_value == advice::HUGEPAGE;
                self.procs[asid as usize]
                    .vmas
                    .update_range(start, end, |v| v.thp = Some(on));
            }
            _ => {} // other advice does not change what the model simulates
        }
        Ok(())
    }

    /// Process exit: every translation of `asid` is removed and its frames freed.
    pub fn exit(&mut self, asid: Asid, changes: &mut Vec<MapChange>) -> Result<(), OsError> {
        if let Some(p) = self.procs.get(asid as usize) {
            self.exited_va_gaps
                .add_address_space(&p.pages.mapped_runs());
        }
        self.unmap_pages(asid, 0, 1 << 57, changes);
        let p = &mut self.procs[asid as usize];
        p.vmas = VmaSet::default();
        p.heap_start = None;
        p.heap_end = 0;
        Ok(())
    }
}
