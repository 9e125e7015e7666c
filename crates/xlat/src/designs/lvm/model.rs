//! Fixed-point linear models (LVM §4.5), the leaf fit (§4.3.2) and the spline-point estimate of
//! the cost model (§4.2.3).
//!
//! Contract: every model is evaluated with integer arithmetic only (`floor(slope * x +
//! intercept)` on Q44.20 values), the same function during training, insertion and the walk, so
//! the place an entry is put and the place a lookup searches can never disagree.

/// Fractional bits of a model parameter (the paper's 44-bit integer, 20-bit fraction).
pub const FRAC_BITS: u32 = 20;
/// 1.0 in Q44.20.
pub const ONE: i64 = 1 << FRAC_BITS;

/// A Q44.20 fixed-point value: `raw / 2^20`, 8 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fixed(pub i64);

impl Fixed {
    /// The nearest representable value to `v` (saturating at the i64 range).
    pub fn from_f64(v: f64) -> Fixed {
        Fixed((v * ONE as f64).round() as i64)
    }
    /// The value as a float (for statistics and training only, never for a lookup).
    pub fn to_f64(self) -> f64 {
        self.0 as f64 / ONE as f64
    }
}

/// `y = floor(slope * x + intercept)`: 16 bytes, the whole content of an index node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinearModel {
    /// Slope in Q44.20.
    pub slope: Fixed,
    /// Intercept in Q44.20.
    pub intercept: Fixed,
}

impl LinearModel {
    /// `floor(slope * x + intercept)`, exact (one multiply and one add, as the walker does it).
    #[inline]
    pub fn eval(&self, x: u64) -> i64 {
        let y = self.slope.0 as i128 * x as i128 + self.intercept.0 as i128;
        (y >> FRAC_BITS) as i64
    }
}

/// Offset (in lines) of the `i`-th line a search visits around its predicted line:
/// 0, +1, -1, +2, -2, ... (nearest line first).
#[inline]
pub fn search_offset(i: u32) -> i64 {
    if i == 0 {
        0
    } else if i % 2 == 1 {
        i.div_ceil(2) as i64
    } else {
        -((i / 2) as i64)
    }
}

/// Inverse of [`search_offset`]: how many lines a search from line `from` reads until it has
/// read line `to` (1 when they are the same line).
#[inline]
pub fn lines_to_reach(from: i64, to: i64) -> u32 {
    let d = to - from;
    let i = if d == 0 {
        0
    } else if d > 0 {
        2 * d - 1
    } else {
        -2 * d
    };
    i as u32 + 1
}

/// The number of linear segments the greedy spline corridor (Neumann & Michel, as used by
/// RadixSpline) needs to follow the points `(xs[i], i)` within `max_error` ranks: the
/// spline-point estimate of the cost model. One pass; at least 1 for a non-empty input.
pub fn spline_segments(xs: &[u64], max_error: f64) -> u32 {
    if xs.len() <= 2 {
        return 1;
    }
    let mut segments = 1;
    let (mut bx, mut by) = (xs[0] as f64, 0.0);
    let (mut upper, mut lower) = (f64::INFINITY, f64::NEG_INFINITY);
    for (i, &x) in xs.iter().enumerate().skip(1) {
        let (x, y) = (x as f64, i as f64);
        let dx = x - bx;
        let slope = (y - by) / dx;
        if slope > upper || slope < lower {
            // Start a new segment at the previous point.
            segments += 1;
            bx = xs[i - 1] as f64;
            by = (i - 1) as f64;
            let dx = x - bx;
            upper = (y + max_error - by) / dx;
            lower = (y - max_error - by) / dx;
        } else {
            upper = upper.min((y + max_error - by) / dx);
            lower = lower.max((y - max_error - by) / dx);
        }
    }
    segments
}

/// Least-squares fit of `(keys[i], i)`, scaled by `ga_scale` and shifted so that the first key
/// predicts slot 0. `pages_of_first` (4 KiB pages in the first key's page) sets the slope of a
/// single-key fit: one slot per page of that size, times `ga_scale`.
pub fn fit_leaf_model(keys: &[u64], pages_of_first: u64, ga_scale: f64) -> LinearModel {
    let n = keys.len();
    let x0 = keys.first().copied().unwrap_or(0);
    let slope = if n < 2 {
        1.0 / pages_of_first as f64
    } else {
        let nf = n as f64;
        let mean_x = keys.iter().map(|k| (k - x0) as f64).sum::<f64>() / nf;
        let mean_y = (nf - 1.0) / 2.0;
        let (mut cov, mut var) = (0.0, 0.0);
        for (i, k) in keys.iter().enumerate() {
            let dx = (k - x0) as f64 - mean_x;
            cov += dx * (i as f64 - mean_y);
            var += dx * dx;
        }
        if var > 0.0 && cov > 0.0 {
            cov / var
        } else {
            1.0 / pages_of_first as f64
        }
    };
    let slope_q = Fixed::from_f64(slope * ga_scale).0.max(1);
    // Intercept from the quantized slope, so that the mean key is predicted where the float
    // model predicts it; then shift so the first key lands on slot 0.
    let mut m = LinearModel {
        slope: Fixed(slope_q),
        intercept: Fixed(0),
    };
    if n >= 2 {
        let nf = n as f64;
        let mean_dx = keys.iter().map(|k| (k - x0) as f64).sum::<f64>() / nf;
        let mean_y = (nf - 1.0) / 2.0 * ga_scale;
        let at_x0 = mean_y - slope_q as f64 / ONE as f64 * mean_dx;
        m.intercept = Fixed((at_x0 * ONE as f64).round() as i64 - slope_q * x0 as i64);
    } else {
        m.intercept = Fixed(-(slope_q as i128 * x0 as i128) as i64);
    }
    let first = m.eval(x0);
    m.intercept.0 -= first * ONE;
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_point_keeps_20_fraction_bits() {
        assert_eq!(Fixed::from_f64(1.0).0, 1 << 20);
        assert_eq!(Fixed::from_f64(1.3).0, 1_363_149); // round(1.3 * 2^20) = 1363148.8
        assert_eq!(Fixed::from_f64(-0.5).0, -(1 << 19));
        assert_eq!(Fixed(3 << 19).to_f64(), 1.5);
    }

    #[test]
    fn a_model_rounds_down_as_the_walker_does() {
        // y = 1.3 x - 97: x = 139 gives 83.7 -> 83; x = 100 gives 33 exactly.
        let m = LinearModel {
            slope: Fixed::from_f64(1.3),
            intercept: Fixed(-97 * ONE),
        };
        // 1363149 * 139 = 189477711; >> 20 = 180.70..; minus 97 -> floor(83.70) = 83.
        assert_eq!(m.eval(139), 83);
        assert_eq!(m.eval(100), 33);
        // Negative results round towards minus infinity: 1.3 * 10 - 97 = -84.
        assert_eq!(m.eval(10), -84);
        // The paper's root example: y = 0.01 x - 1 sends x = 139 to child 0.
        let root = LinearModel {
            slope: Fixed::from_f64(0.01),
            intercept: Fixed(-ONE),
        };
        assert_eq!(root.eval(139), 0);
        assert_eq!(root.eval(250), 1);
    }

    #[test]
    fn the_search_visits_the_nearest_lines_first_and_reach_is_its_inverse() {
        let offs: Vec<i64> = (0..5).map(search_offset).collect();
        assert_eq!(offs, vec![0, 1, -1, 2, -2]);
        for i in 0..20 {
            assert_eq!(lines_to_reach(10, 10 + search_offset(i)), i + 1);
        }
    }

    #[test]
    fn a_contiguous_range_is_one_spline_segment_and_two_clusters_are_three() {
        let dense: Vec<u64> = (1000..5000).collect();
        assert_eq!(spline_segments(&dense, 8.0), 1);
        let mut two: Vec<u64> = (1000..2000).collect();
        two.extend(1_000_000..1_001_000);
        assert_eq!(spline_segments(&two, 8.0), 3);
    }

    #[test]
    fn a_dense_fit_predicts_rank_times_ga_scale() {
        let keys: Vec<u64> = (5000..6000).collect();
        let m = fit_leaf_model(&keys, 1, 1.3);
        assert_eq!(m.eval(5000), 0);
        for (i, k) in keys.iter().enumerate() {
            let want = (i as f64 * 1.3).floor() as i64;
            assert!((m.eval(*k) - want).abs() <= 1, "key {k}: {}", m.eval(*k));
        }
    }
}
