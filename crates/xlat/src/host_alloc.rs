//! A global allocator that asks Linux for 2 MiB host pages under the simulator's large arrays.
//!
//! **Why.** On paper-scale footprints the simulator is bound by its own host-memory misses:
//! the oracle's page map (4 bytes per simulated 4 KiB page), the page tables' node arrays
//! (8 bytes per entry) and the owner records are tens to hundreds of megabytes, read at random
//! by every TLB miss of a random-access workload. With 4 KiB host pages each such read also
//! misses the host's TLBs; this machine is a virtual machine, so every host TLB miss is a
//! two-dimensional walk. Transparent huge pages are `madvise`-only on Debian's default
//! (`/sys/kernel/mm/transparent_hugepage/enabled = madvise`), so they must be asked for.
//! Measured (docs/performance.md, "Host huge pages"): radix gups at 64 GiB, 100 M references,
//! runs about 15 % faster with every allocation on huge pages.
//!
//! **What.** [`HugePageAdvising`] hands every request to the system allocator; an allocation
//! of at least [`ADVISE_FROM_BYTES`] is then advised `MADV_HUGEPAGE` over its whole 2 MiB pages
//! before anything touches it (glibc serves such sizes with a fresh `mmap`, untouched), and a
//! reallocation that ends at or above that size is made as allocate-copy-free, not by the
//! system's `realloc`: glibc grows a large block with `mremap`, which moves the pages already
//! faulted in as 4 KiB pages, so a `Vec` grown by doubling would stay on 4 KiB pages. The copy
//! costs one `memcpy` per doubling (amortized constant per element).
//!
//! **What must stay true.** Host memory layout never reaches a simulated figure: results are
//! bit-identical with and without it (`XLAT_HOST_HUGE_PAGES=0` turns the advice off, for
//! measurement). Elsewhere than Linux the allocator is the system's, unchanged.
//!
//! Installed by the binaries, not by the library (a library cannot choose the global
//! allocator): the Python extension (`crates/xlat-py`), the `run` example and the throughput
//! bench:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: xlat::host_alloc::HugePageAdvising = xlat::host_alloc::HugePageAdvising;
//! ```

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicU8, Ordering};

/// Allocations from this size on are advised (twice the 2 MiB host huge page, so that the
/// advised range, the block's whole 2 MiB pages, covers at least half of it).
pub const ADVISE_FROM_BYTES: usize = 4 << 20;

/// Host huge page size on x86-64 and arm64 Linux with 4 KiB base pages.
#[cfg(target_os = "linux")]
const HOST_HUGE_PAGE_BYTES: usize = 2 << 20;

/// The system allocator, with `MADV_HUGEPAGE` on large blocks (see the module doc).
#[derive(Clone, Copy, Debug, Default)]
pub struct HugePageAdvising;

/// 0: not read yet; 1: advise; 2: do not (`XLAT_HOST_HUGE_PAGES=0`).
#[cfg(target_os = "linux")]
static STATE: AtomicU8 = AtomicU8::new(0);

#[cfg(target_os = "linux")]
extern "C" {
    fn madvise(addr: *mut core::ffi::c_void, len: usize, advice: i32) -> i32;
    fn getenv(name: *const core::ffi::c_char) -> *const core::ffi::c_char;
}

/// `MADV_HUGEPAGE` of Linux's `<asm-generic/mman-common.h>`.
#[cfg(target_os = "linux")]
const MADV_HUGEPAGE: i32 = 14;

/// Whether large blocks are advised: read once from `XLAT_HOST_HUGE_PAGES` with libc's
/// `getenv` (no allocation, so it may run inside the allocator); anything but `0` advises.
#[cfg(target_os = "linux")]
fn enabled() -> bool {
    match STATE.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            // SAFETY: a NUL-terminated name; the result is null or a NUL-terminated string
            // that stays valid while the environment is not modified (read at once).
            let off = unsafe {
                let v = getenv(c"XLAT_HOST_HUGE_PAGES".as_ptr());
                !v.is_null() && *v == b'0' as core::ffi::c_char && *v.add(1) == 0
            };
            STATE.store(if off { 2 } else { 1 }, Ordering::Relaxed);
            !off
        }
    }
}

/// Advise the whole 2 MiB pages of the block `[p, p + size)`. The advice is a hint: a failure
/// (e.g. a kernel without transparent huge pages) changes nothing, so it is ignored.
#[inline]
fn advise(p: *mut u8, size: usize) {
    #[cfg(target_os = "linux")]
    if size >= ADVISE_FROM_BYTES && !p.is_null() && enabled() {
        let start = (p as usize).next_multiple_of(HOST_HUGE_PAGE_BYTES);
        let end = (p as usize + size) & !(HOST_HUGE_PAGE_BYTES - 1);
        if end > start {
            // SAFETY: the range lies inside a block the system allocator just returned to us;
            // MADV_HUGEPAGE changes no contents and no permissions.
            unsafe { madvise(start as *mut core::ffi::c_void, end - start, MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (p, size);
}

// SAFETY: every method returns what `System` returns for the same layout (or, for a large
// `realloc`, a block `System` allocated for the new layout holding the old block's bytes), so
// `System`'s guarantees carry over; the advice changes no contents.
unsafe impl GlobalAlloc for HugePageAdvising {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        advise(p, layout.size());
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        advise(p, layout.size());
        p
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        System.dealloc(p, layout)
    }

    #[inline]
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size < ADVISE_FROM_BYTES || !advising() {
            return System.realloc(p, layout, new_size);
        }
        // SAFETY (of the layout): the caller guarantees `new_size`, rounded up to the
        // alignment, does not overflow `isize` (GlobalAlloc::realloc's contract).
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        let q = self.alloc(new_layout);
        if !q.is_null() {
            std::ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
            System.dealloc(p, layout);
        }
        q
    }
}

/// Whether blocks are advised on this host and run.
#[inline]
fn advising() -> bool {
    #[cfg(target_os = "linux")]
    return enabled();
    #[cfg(not(target_os = "linux"))]
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_reallocation_keeps_the_blocks_bytes() {
        let a = HugePageAdvising;
        let small = Layout::from_size_align(1 << 20, 64).unwrap();
        // SAFETY: layouts of non-zero size; every pointer is checked and freed once.
        unsafe {
            let p = a.alloc(small);
            assert!(!p.is_null());
            for i in 0..small.size() {
                *p.add(i) = (i % 251) as u8;
            }
            let q = a.realloc(p, small, 3 * ADVISE_FROM_BYTES);
            assert!(!q.is_null());
            assert_eq!(q as usize % 64, 0, "the alignment is kept");
            for i in 0..small.size() {
                assert_eq!(*q.add(i), (i % 251) as u8, "byte {i}");
            }
            let big = Layout::from_size_align(3 * ADVISE_FROM_BYTES, 64).unwrap();
            let r = a.realloc(q, big, 100);
            for i in 0..100 {
                assert_eq!(*r.add(i), (i % 251) as u8, "byte {i} after shrinking");
            }
            a.dealloc(r, Layout::from_size_align(100, 64).unwrap());
        }
    }

    #[test]
    fn a_large_zeroed_allocation_is_zero() {
        let a = HugePageAdvising;
        let l = Layout::from_size_align(2 * ADVISE_FROM_BYTES, 8).unwrap();
        // SAFETY: a layout of non-zero size, freed once.
        unsafe {
            let p = a.alloc_zeroed(l);
            assert!(!p.is_null());
            assert!((0..l.size()).step_by(4096).all(|i| *p.add(i) == 0));
            a.dealloc(p, l);
        }
    }
}
