//! Whole-set compares: which slots of a cache or TLB set hold a given tag.
//!
//! Every simulated reference scans several sets (a TLB set, up to three cache sets, more on a
//! miss), and where a tag sits is unpredictable, so the scan must be branch-free and short. The
//! compiler's auto-vectorization of a runtime-length loop builds the result with variable shifts
//! and reductions (measured: the set scan was a quarter of a GUPS run); with AVX-512 a group of
//! eight slots is one masked compare, with AVX2 two compares and two movemasks. Which path is
//! compiled depends only on the build's target features; all give the same answer, so results
//! never depend on the host CPU.

/// Which compare this build uses: `avx512`, `avx2` or `portable` (chosen by the build's target
/// features; recorded as `sim.simd`).
pub const PATH: &str = if cfg!(all(target_arch = "x86_64", target_feature = "avx512f")) {
    "avx512"
} else if cfg!(all(target_arch = "x86_64", target_feature = "avx2")) {
    "avx2"
} else {
    "portable"
};

/// Bit `j` set when `xs[j] & mask == value`.
#[inline(always)]
pub fn eq_mask8(xs: &[u64; 8], mask: u64, value: u64) -> u64 {
    #[cfg(all(target_arch = "x86_64", target_feature = "avx512f"))]
    {
        avx512::eq_mask8(xs, mask, value)
    }
    #[cfg(all(
        target_arch = "x86_64",
        target_feature = "avx2",
        not(target_feature = "avx512f")
    ))]
    {
        avx2::eq_mask8(xs, mask, value)
    }
    #[cfg(not(all(
        target_arch = "x86_64",
        any(target_feature = "avx2", target_feature = "avx512f")
    )))]
    {
        scalar_eq_mask(xs, mask, value)
    }
}

/// Bit `j` set when `xs[j] & mask == value`; `xs` holds at most 64 slots.
#[inline(always)]
pub fn eq_mask(xs: &[u64], mask: u64, value: u64) -> u64 {
    debug_assert!(xs.len() <= 64);
    // The usual set sizes without loop overhead.
    if let Ok(g) = <&[u64; 8]>::try_from(xs) {
        return eq_mask8(g, mask, value);
    }
    if let Ok(g) = <&[u64; 16]>::try_from(xs) {
        let (lo, hi) = g.split_at(8);
        return eq_mask8(lo.try_into().expect("8 slots"), mask, value)
            | (eq_mask8(hi.try_into().expect("8 slots"), mask, value) << 8);
    }
    let (groups, rest) = xs.as_chunks::<8>();
    let mut m = 0u64;
    for (g, group) in groups.iter().enumerate() {
        m |= eq_mask8(group, mask, value) << (8 * g);
    }
    if !rest.is_empty() {
        m |= scalar_eq_mask(rest, mask, value) << (8 * groups.len());
    }
    m
}

/// The portable definition the vector paths must agree with.
#[inline(always)]
pub fn scalar_eq_mask(xs: &[u64], mask: u64, value: u64) -> u64 {
    let mut m = 0u64;
    for (j, x) in xs.iter().enumerate() {
        m |= ((*x & mask == value) as u64) << j;
    }
    m
}

#[cfg(all(target_arch = "x86_64", target_feature = "avx512f"))]
#[allow(unsafe_code)]
mod avx512 {
    use core::arch::x86_64::{
        _mm512_and_si512, _mm512_cmpeq_epi64_mask, _mm512_loadu_si512, _mm512_set1_epi64,
    };

    #[inline(always)]
    pub fn eq_mask8(xs: &[u64; 8], mask: u64, value: u64) -> u64 {
        // SAFETY: this module is compiled only when the build targets AVX-512F, so the
        // instructions exist; the unaligned load reads exactly the 64 bytes of `xs`.
        unsafe {
            let v = _mm512_loadu_si512(xs.as_ptr().cast());
            let v = _mm512_and_si512(v, _mm512_set1_epi64(mask as i64));
            _mm512_cmpeq_epi64_mask(v, _mm512_set1_epi64(value as i64)) as u64
        }
    }
}

#[cfg(all(
    target_arch = "x86_64",
    target_feature = "avx2",
    not(target_feature = "avx512f")
))]
#[allow(unsafe_code)]
mod avx2 {
    use core::arch::x86_64::{
        _mm256_and_si256, _mm256_castsi256_pd, _mm256_cmpeq_epi64, _mm256_loadu_si256,
        _mm256_movemask_pd, _mm256_set1_epi64x,
    };

    #[inline(always)]
    pub fn eq_mask8(xs: &[u64; 8], mask: u64, value: u64) -> u64 {
        // SAFETY: this module is compiled only when the build targets AVX2, so the
        // instructions exist; the two unaligned loads read exactly the 64 bytes of `xs`.
        unsafe {
            let m = _mm256_set1_epi64x(mask as i64);
            let v = _mm256_set1_epi64x(value as i64);
            let lo = _mm256_and_si256(_mm256_loadu_si256(xs.as_ptr().cast()), m);
            let hi = _mm256_and_si256(_mm256_loadu_si256(xs[4..].as_ptr().cast()), m);
            let lo = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(lo, v))) as u64;
            let hi = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(hi, v))) as u64;
            lo | (hi << 4)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The compiled (vector) path agrees with the portable definition on every length.
        #[test]
        fn the_vector_compare_agrees_with_the_scalar_one(
            xs in prop::collection::vec(0u64..6, 0..=64),
            value in 0u64..4,
            dirty_bits in any::<u64>(),
        ) {
            // High bits outside the mask must not matter.
            let mask = (1u64 << 56) - 1;
            let xs: Vec<u64> = xs
                .iter()
                .enumerate()
                .map(|(j, x)| x | (((dirty_bits >> j) & 1) << 57))
                .collect();
            prop_assert_eq!(eq_mask(&xs, mask, value), scalar_eq_mask(&xs, mask, value));
        }
    }
}
