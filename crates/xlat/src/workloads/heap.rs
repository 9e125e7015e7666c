//! The simulated program's address space: where its allocator puts things, and the system calls
//! that placing them costs.
//!
//! Like glibc on Linux x86-64: allocations of 128 KiB or more (the default mmap threshold) get
//! their own anonymous `mmap`, placed top-down below [`MMAP_BASE`] with no gap (mappings of 2 MiB
//! or more start on a 2 MiB boundary, as Linux 6.7+ places large anonymous mappings so THP can
//! back them); smaller ones come
//! from the `brk` heap, which starts at [`HEAP_BASE`] (a typical PIE program's heap) and grows in
//! steps of at least 132 KiB (glibc's top pad). Every system call is queued as an [`Event`] with
//! its result, for the generator to emit before the references that depend on it.

use crate::addr::Vaddr;
use crate::trace::{advice, prot, Event};

/// First byte of the brk heap.
pub const HEAP_BASE: u64 = 0x5555_5600_0000;
/// Top of the mmap area (large allocations are placed below it, highest first).
pub const MMAP_BASE: u64 = 0x7fff_f7a0_0000;
/// glibc's default mmap threshold.
pub const MMAP_THRESHOLD: u64 = 128 << 10;
const HEAP_STEP: u64 = 132 << 10;
const PAGE: u64 = 4096;
const HUGE: u64 = 2 << 20;
/// `MAP_PRIVATE | MAP_ANONYMOUS`.
pub const MAP_ANON_PRIVATE: u32 = 0x22;

/// Address-space bookkeeping of one simulated process.
#[derive(Clone, Debug)]
pub struct AddressSpace {
    mmap_top: u64,
    heap_used: u64,
    heap_brk: u64,
    madvise_hugepage: bool,
    /// System-call events not yet emitted, in program order.
    pub pending: Vec<Event>,
    /// Bytes currently allocated (mmap'ed plus heap in use).
    pub live_bytes: u64,
}

impl AddressSpace {
    /// An empty address space; with `madvise_hugepage`, every mmap'ed region is also marked
    /// `MADV_HUGEPAGE` (what a THP-aware program does; matters under THP policy `madvise`).
    pub fn new(madvise_hugepage: bool) -> AddressSpace {
        AddressSpace {
            mmap_top: MMAP_BASE,
            heap_used: 0,
            heap_brk: HEAP_BASE,
            madvise_hugepage,
            pending: Vec::new(),
            live_bytes: 0,
        }
    }

    /// Allocate `bytes` (16-byte aligned; page-aligned when mmap'ed); returns the address.
    pub fn alloc(&mut self, bytes: u64) -> u64 {
        let bytes = bytes.max(1);
        self.live_bytes += bytes;
        if bytes >= MMAP_THRESHOLD {
            let len = bytes.div_ceil(PAGE) * PAGE;
            self.mmap_top -= len;
            if len >= HUGE {
                self.mmap_top &= !(HUGE - 1);
            }
            let addr = self.mmap_top;
            self.pending.push(Event::Mmap {
                addr: Vaddr(addr),
                len,
                prot: prot::READ | prot::WRITE,
                flags: MAP_ANON_PRIVATE,
            });
            if self.madvise_hugepage {
                self.pending.push(Event::Madvise {
                    addr: Vaddr(addr),
                    len,
                    advice: advice::HUGEPAGE,
                });
            }
            return addr;
        }
        let addr = HEAP_BASE + self.heap_used.next_multiple_of(16);
        self.heap_used = addr + bytes - HEAP_BASE;
        let needed = HEAP_BASE + self.heap_used;
        if needed > self.heap_brk {
            if self.heap_brk == HEAP_BASE {
                // A program's first brk call discovers the break.
                self.pending.push(Event::Brk {
                    new_brk: Vaddr(HEAP_BASE),
                });
            }
            self.heap_brk = (needed + HEAP_STEP).div_ceil(PAGE) * PAGE;
            self.pending.push(Event::Brk {
                new_brk: Vaddr(self.heap_brk),
            });
        }
        addr
    }

    /// Free an allocation made by [`AddressSpace::alloc`] of `bytes` at `addr`: an mmap'ed one is
    /// unmapped (heap memory stays with the process, as glibc keeps it).
    pub fn free(&mut self, addr: u64, bytes: u64) {
        self.live_bytes -= bytes.max(1);
        if bytes >= MMAP_THRESHOLD {
            self.pending.push(Event::Munmap {
                addr: Vaddr(addr),
                len: bytes.div_ceil(PAGE) * PAGE,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_allocations_are_mmaped_top_down_and_small_ones_come_from_brk() {
        let mut a = AddressSpace::new(false);
        let big = a.alloc(1 << 20);
        let big2 = a.alloc(200 << 10);
        let small = a.alloc(100);
        assert_eq!(big, MMAP_BASE - (1 << 20));
        assert!(big2 < big);
        assert_eq!(small, HEAP_BASE);
        assert!(matches!(a.pending[0], Event::Mmap { len, .. } if len == 1 << 20));
        assert!(matches!(a.pending[2], Event::Brk { .. }));
        let huge = a.alloc(5 << 20);
        assert_eq!(huge % (2 << 20), 0, "large mappings are 2 MiB aligned");
        assert!(huge + (5 << 20) <= big2);
        a.free(big, 1 << 20);
        assert!(matches!(a.pending.last(), Some(Event::Munmap { .. })));
    }
}
