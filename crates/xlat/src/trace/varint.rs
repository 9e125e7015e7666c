//! LEB128 variable-length integers and zigzag signed deltas, used by the native format.

/// Append `v` as unsigned LEB128 (1..=10 bytes).
#[inline]
pub(crate) fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Write `v` as unsigned LEB128 into `buf` at `at`; returns the index after it. `buf` must
/// have room for 10 bytes from `at` (a record's fixed encoding buffer).
#[inline(always)]
pub(crate) fn put_at<const N: usize>(buf: &mut [u8; N], mut at: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        buf[at] = (v as u8) | 0x80;
        v >>= 7;
        at += 1;
    }
    buf[at] = v as u8;
    at + 1
}

/// Decode an unsigned LEB128 at `buf[*pos..]`, advancing `pos`. `Err` names the problem.
#[inline]
pub(crate) fn get(buf: &[u8], pos: &mut usize) -> Result<u64, &'static str> {
    let mut v = 0u64;
    let mut shift = 0u32;
    loop {
        let Some(&b) = buf.get(*pos) else {
            return Err("record runs past the end of its chunk");
        };
        *pos += 1;
        if shift == 63 && b > 1 {
            return Err("variable-length integer overflows 64 bits");
        }
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 63 {
            return Err("variable-length integer overflows 64 bits");
        }
    }
}

/// Zigzag-encode a signed delta so that small magnitudes give small unsigned values.
#[inline]
pub(crate) fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub(crate) fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_boundary_value_round_trips() {
        for v in [
            0,
            1,
            127,
            128,
            16383,
            16384,
            u32::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut b = Vec::new();
            put(&mut b, v);
            let mut fixed = [0xeeu8; 12];
            let end = put_at(&mut fixed, 1, v);
            assert_eq!(
                &fixed[1..end],
                &b[..],
                "put_at and put write the same bytes for {v}"
            );
            let mut p = 0;
            assert_eq!(get(&b, &mut p), Ok(v));
            assert_eq!(p, b.len());
        }
        for d in [0i64, 1, -1, 63, -64, i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(d)), d);
        }
    }

    #[test]
    fn an_eleven_byte_integer_is_an_overflow_not_a_panic() {
        let b = [0xffu8; 11];
        let mut p = 0;
        assert!(get(&b, &mut p).is_err());
        let b = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        let mut p = 0;
        assert!(get(&b, &mut p).is_err());
    }
}
