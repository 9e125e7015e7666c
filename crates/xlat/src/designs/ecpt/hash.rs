//! Per-way hash functions of the cuckoo tables.
//!
//! Contract: `hash(way, key)` is a pure function of the kind, the way and the key; different ways
//! use independent functions (a key pair that collides in one way rarely collides in another),
//! which cuckoo hashing needs. Table indices are the low bits of the hash, so doubling a way in
//! place uses exactly one more hash bit (ME-HPT §IV-C).

use serde::{Deserialize, Serialize};

/// Hash family of the ways.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum HashKind {
    /// CRC-32 over the 8 bytes of the key times a per-way odd constant, one polynomial per way
    /// (CRC-32C, CRC-32, CRC-32K, CRC-32Q): the CRC hash of ECPT and ME-HPT (Table III: 2
    /// cycles), with a multiply in front because a pure CRC is GF(2)-linear, which makes cuckoo
    /// insertion of sequential keys fail at low occupancy.
    Crc,
    /// A 64-bit multiply-xorshift mixer with a per-way seed (statistically stronger; not linear).
    Mix,
}

/// Reflected polynomials, one per way (at most 4 ways). Different polynomials, not different
/// initial values: CRC is linear, so a different init would only XOR a constant into every hash
/// and two keys colliding in one way would collide in all.
const POLYS: [u32; 4] = [0x82F6_3B78, 0xEDB8_8320, 0xEB31_D82E, 0xD582_8281];

const fn crc_table(poly: u32) -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ poly } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

/// Slicing-by-8 tables of `poly` (Kounavis and Berry, "A systematic approach to building high
/// performance software-based CRC generators", ISCC 2005): `t[0]` is the byte table, `t[k][n]`
/// the CRC register after byte `n` is followed by `k` zero bytes. The CRC of 8 bytes is then
/// 8 independent lookups XORed, where the byte loop chains 8 dependent ones (the hash was 11 %
/// of ME-HPT's time on gups: several ways and page sizes are hashed per walk and per prefetch).
const fn slicing_tables(poly: u32) -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    t[0] = crc_table(poly);
    let mut k = 1;
    while k < 8 {
        let mut n = 0;
        while n < 256 {
            let prev = t[k - 1][n];
            t[k][n] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            n += 1;
        }
        k += 1;
    }
    t
}

static CRC_SLICES: [[[u32; 256]; 8]; 4] = [
    slicing_tables(POLYS[0]),
    slicing_tables(POLYS[1]),
    slicing_tables(POLYS[2]),
    slicing_tables(POLYS[3]),
];

/// The reflected CRC register after the 8 little-endian bytes of `x` from the initial value
/// `init`: the byte loop's result, from the slicing tables `t`.
#[inline]
fn crc_u64(t: &[[u32; 256]; 8], init: u32, x: u64) -> u32 {
    let x = x ^ init as u64;
    let b = |i: u32| ((x >> (8 * i)) & 0xff) as usize;
    t[7][b(0)]
        ^ t[6][b(1)]
        ^ t[5][b(2)]
        ^ t[4][b(3)]
        ^ t[3][b(4)]
        ^ t[2][b(5)]
        ^ t[1][b(6)]
        ^ t[0][b(7)]
}

const MIX_SEEDS: [u64; 4] = [
    0x9e37_79b9_7f4a_7c15,
    0xc2b2_ae3d_27d4_eb4f,
    0x1656_67b1_9e37_79f9,
    0x27d4_eb2f_1656_67c5,
];

/// Maximum number of ways the hash family supports.
pub const MAX_WAYS: usize = 4;

/// Hash of `key` for `way` (`way < MAX_WAYS`).
#[inline]
pub fn hash(kind: HashKind, way: usize, key: u64) -> u64 {
    match kind {
        HashKind::Crc => {
            // CRC is linear over GF(2): on sequential keys (dense pages) the ways' collisions
            // then form closed groups of more keys than slots and cuckoo insertion fails at low
            // occupancy. The integer multiply (carries are not GF(2)-linear) breaks that.
            let key = key.wrapping_mul(MIX_SEEDS[way] | 1);
            !crc_u64(&CRC_SLICES[way], !0u32, key) as u64
        }
        HashKind::Mix => {
            let mut z = key ^ MIX_SEEDS[way];
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crc_of_the_standard_check_string_matches_crc32c() {
        // CRC-32C("123456789") = 0xE3069283; run the byte loop on the check string.
        assert_eq!(crc_bytes(0, b"123456789"), 0xE306_9283);
    }

    /// The CRC of `bytes` with way `way`'s polynomial: the byte loop over its byte table.
    fn crc_bytes(way: usize, bytes: &[u8]) -> u32 {
        let t = &CRC_SLICES[way][0];
        let mut c = !0u32;
        for b in bytes {
            c = t[((c ^ *b as u32) & 0xff) as usize] ^ (c >> 8);
        }
        !c
    }

    /// The CRC hash as defined: the byte loop over the multiplied key's 8 bytes.
    fn crc_bytewise(way: usize, key: u64) -> u64 {
        crc_bytes(way, &key.wrapping_mul(MIX_SEEDS[way] | 1).to_le_bytes()) as u64
    }

    #[test]
    fn the_sliced_crc_equals_the_byte_loop_for_every_way() {
        let mut rng = crate::rng::Rng::new(7, 0);
        let keys = (0..4096u64)
            .chain([u64::MAX, 1 << 63, 0xff << 56])
            .chain((0..20_000).map(|_| rng.next_u64()));
        for key in keys {
            for way in 0..MAX_WAYS {
                assert_eq!(
                    hash(HashKind::Crc, way, key),
                    crc_bytewise(way, key),
                    "{way} {key:#x}"
                );
            }
        }
    }

    #[test]
    fn ways_hash_independently() {
        // Keys colliding in the low 8 bits of way 0 are spread over way 1.
        for kind in [HashKind::Crc, HashKind::Mix] {
            let keys: Vec<u64> = (0..20_000u64)
                .filter(|k| hash(kind, 0, *k) & 0xff == 0)
                .collect();
            let mut in_way1: Vec<u64> = keys.iter().map(|k| hash(kind, 1, *k) & 0xff).collect();
            in_way1.sort();
            in_way1.dedup();
            assert!(keys.len() > 20, "{kind:?}");
            assert!(
                in_way1.len() * 2 > keys.len().min(256),
                "{kind:?}: {}",
                in_way1.len()
            );
        }
    }
}
