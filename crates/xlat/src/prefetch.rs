//! Host-memory prefetch hints for the simulator's own data structures.
//!
//! On large footprints the simulator is bound by its own cache misses (page-table node arrays,
//! the oracle's page map, the simulated caches' tag arrays are megabytes, touched at random). The
//! engine looks a few events ahead in its buffer and asks each structure to prefetch what that
//! event will touch. Hints only: they never change a simulated figure.

/// Hint the host CPU to bring the cache line holding `*p` into its caches (no effect elsewhere).
#[inline(always)]
pub fn host_prefetch<T>(p: &T) {
    host_prefetch_ptr(p as *const T as *const u8);
}

/// Hint the host CPU to bring every cache line `*p` spans into its caches: the object's first
/// and last byte (objects of at most two host lines, such as a 72-byte hash-table cluster,
/// which straddles two lines wherever it sits; a prefetch of its start alone leaves the fields
/// past the first line, in whatever order the compiler laid them out, to miss).
#[inline(always)]
pub fn host_prefetch_object<T>(p: &T) {
    const {
        assert!(
            std::mem::size_of::<T>() <= 128,
            "larger objects span more than two host lines"
        )
    };
    host_prefetch(p);
    let size = std::mem::size_of::<T>();
    if size > 1 {
        let last = (p as *const T as *const u8).wrapping_add(size - 1);
        host_prefetch_ptr(last);
    }
}

/// [`host_prefetch`] of a raw address (never dereferenced).
///
/// The crate's one exception to `unsafe_code = "deny"`: the intrinsic is `unsafe` only because
/// it is a `target_feature` function; SSE is part of the x86-64 baseline, and a prefetch never
/// faults nor has an architectural effect, whatever the address.
#[inline(always)]
#[allow(unsafe_code)]
fn host_prefetch_ptr(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: see above.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
