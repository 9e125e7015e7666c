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

static CRC_TABLES: [[u32; 256]; 4] = [
    crc_table(POLYS[0]),
    crc_table(POLYS[1]),
    crc_table(POLYS[2]),
    crc_table(POLYS[3]),
];

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
            let t = &CRC_TABLES[way];
            let mut c = !0u32;
            // CRC is linear over GF(2): on sequential keys (dense pages) the ways' collisions
            // then form closed groups of more keys than slots and cuckoo insertion fails at low
            // occupancy. The integer multiply (carries are not GF(2)-linear) breaks that.
            let key = key.wrapping_mul(MIX_SEEDS[way] | 1);
            for b in key.to_le_bytes() {
                c = t[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
            }
            !c as u64
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
        let t = &CRC_TABLES[0];
        let mut c = !0u32;
        for b in b"123456789" {
            c = t[((c ^ *b as u32) & 0xff) as usize] ^ (c >> 8);
        }
        assert_eq!(!c, 0xE306_9283);
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
