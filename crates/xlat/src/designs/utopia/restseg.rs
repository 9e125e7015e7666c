//! One restrictive segment (RestSeg): a physically contiguous, set-associative region of
//! equal-size pages, its per-slot state (the global TAR the OS allocates from), the sizes of
//! its per-process translation structures (TAR, SF) and its set-index hash.
//!
//! What must stay true: a slot holds at most one page (`occupant`); a page at `(set, way)`
//! lives at frame `base + (set * ways + way) * page_frames`; a page may only occupy a slot of
//! the set its VPN hashes to.

use crate::addr::{Asid, PageSize, Pfn, Vpn};
use serde::{Deserialize, Serialize};

/// The set-index function of a RestSeg (Utopia §8.3.8).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RestSegHash {
    /// `vpn mod sets` (the paper's default: the low bits of the page number).
    Modulo,
    /// Prime displacement (Kharbutli et al., HPCA 2004): `(tag * 17 + index) mod sets`.
    PrimeDisplacement,
    /// XOR of the index bits with the next bits of the page number (Gonzalez et al., ICS 1997).
    Xor,
    /// Mersenne modulo: `vpn mod (sets - 1)` (a Mersenne number when `sets` is a power of two;
    /// the last set is never used).
    Mersenne,
}

/// Metadata bits per TAR entry beside the tag (permissions, valid, replacement; §5.1.2).
pub const TAR_METADATA_BITS: u32 = 10;
/// Virtual-address bits the paper's formulas assume.
pub const VA_BITS: u32 = 48;
/// SRRIP's re-reference prediction values (2 bits).
const RRPV_MAX: u8 = 3;
/// SRRIP inserts with a long re-reference prediction.
pub const RRPV_INSERT: u8 = 2;

/// A page held by a RestSeg slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Occupant {
    /// Owner process.
    pub asid: Asid,
    /// First 4 KiB VPN of the page.
    pub vpn: Vpn,
    /// Write permission (a TAR metadata bit).
    pub writable: bool,
    /// SRRIP re-reference prediction value.
    pub rrpv: u8,
    /// RSW hits since the page entered the slot (reuse before eviction).
    pub reuse: u32,
}

/// The state of one slot.
#[derive(Clone, Copy, Debug, Default)]
pub struct Slot {
    /// The page in it, if any.
    pub occupant: Option<Occupant>,
    /// The design holds the slot's frames as reserved memory (free for placement). False
    /// while a page occupies it, while a placed page is being mapped, and when the frames
    /// went back to the buddy allocator and could not be taken back yet.
    pub reserved: bool,
    /// The design handed the slot's frames out (placement or a migration into it) and the
    /// page is not mapped there yet: nothing else may take or reserve them meanwhile.
    pub claimed: bool,
}

/// A RestSeg's geometry and slots.
#[derive(Clone, Debug)]
pub struct RestSeg {
    /// Size of its pages.
    pub page: PageSize,
    /// Ways per set.
    pub ways: u32,
    /// Sets (a power of two).
    pub sets: u64,
    /// First frame.
    pub base: Pfn,
    /// Set-index function.
    pub hash: RestSegHash,
    /// `sets * ways` slots, set-major. Change a slot's occupant only through
    /// [`RestSeg::set_occupant`] (it keeps `tags` in step).
    pub slots: Vec<Slot>,
    /// Each slot's occupant as one word ([`tag`]; 0 when empty), set-major: a walk's tag match
    /// and set-filter count read a set's tags, 8 bytes a way, not its slots (the host's cache
    /// misses on the slots were 40 % of Utopia's walk time).
    tags: Vec<u64>,
}

/// The tag word of `asid`'s page at `vpn`: never 0 (the empty slot's).
#[inline]
fn tag(asid: Asid, vpn: Vpn) -> u64 {
    (asid as u64 + 1) << 48 | vpn.0
}

impl RestSeg {
    /// A RestSeg of `bytes` of `page`-size pages in sets of `ways`, starting at `base`.
    /// `bytes / page / ways` must be a power of two (checked by the config).
    pub fn new(base: Pfn, bytes: u64, page: PageSize, ways: u32, hash: RestSegHash) -> RestSeg {
        let pages = bytes / page.bytes();
        let sets = pages / ways as u64;
        debug_assert!(sets.is_power_of_two());
        RestSeg {
            page,
            ways,
            sets,
            base,
            hash,
            slots: vec![
                Slot {
                    occupant: None,
                    reserved: true,
                    claimed: false,
                };
                pages as usize
            ],
            tags: vec![0; pages as usize],
        }
    }

    /// Put `occupant` (or nothing) in slot `slot`.
    #[inline]
    pub fn set_occupant(&mut self, slot: usize, occupant: Option<Occupant>) {
        self.tags[slot] = occupant.map_or(0, |o| tag(o.asid, o.vpn));
        self.slots[slot].occupant = occupant;
    }

    /// Frames the segment spans.
    pub fn frames(&self) -> u64 {
        self.slots.len() as u64 * self.page.base_pages()
    }

    /// The segment's page number of the page holding `vpn` (its VPN in `page` units).
    #[inline]
    pub fn page_number(&self, vpn: Vpn) -> u64 {
        vpn.0 >> self.page.order()
    }

    /// The set `vpn`'s page maps to.
    #[inline]
    pub fn set_of(&self, vpn: Vpn) -> u64 {
        set_index(self.hash, self.page_number(vpn), self.sets)
    }

    /// First frame of slot `(set, way)`: base + (set x assoc + way) x page size.
    #[inline]
    pub fn slot_pfn(&self, set: u64, way: u32) -> Pfn {
        Pfn(self.base.0 + (set * self.ways as u64 + way as u64) * self.page.base_pages())
    }

    /// The slot index holding frame `pfn`, if it lies in the segment.
    #[inline]
    pub fn slot_of_pfn(&self, pfn: Pfn) -> Option<usize> {
        let off = pfn.0.checked_sub(self.base.0)?;
        (off < self.frames()).then(|| (off / self.page.base_pages()) as usize)
    }

    /// The way of set `set` holding `asid`'s page of `vpn`, if any (tag matching).
    #[inline]
    pub fn find(&self, asid: Asid, vpn: Vpn, set: u64) -> Option<u32> {
        let want = tag(asid, vpn.align_down(self.page));
        let row = &self.tags[(set * self.ways as u64) as usize..][..self.ways as usize];
        debug_assert!(self.tags_match_slots(set));
        row.iter().position(|&t| t == want).map(|w| w as u32)
    }

    /// Hint the host to bring set `set`'s tags into its caches (a walk of the set will read
    /// them; no simulated effect).
    #[inline]
    pub fn prefetch_set(&self, set: u64) {
        let first = (set * self.ways as u64) as usize;
        crate::prefetch::host_prefetch(&self.tags[first]);
        // A set of more than 8 ways spans a second host line.
        crate::prefetch::host_prefetch(&self.tags[first + self.ways as usize - 1]);
    }

    /// Hint the host to bring slot `slot`'s state into its caches (no simulated effect).
    #[inline]
    pub fn prefetch_slot(&self, slot: usize) {
        crate::prefetch::host_prefetch(&self.slots[slot]);
    }

    /// Pages of `asid` in set `set` (the value of its set-filter counter).
    #[inline]
    pub fn count_in_set(&self, asid: Asid, set: u64) -> u32 {
        let row = &self.tags[(set * self.ways as u64) as usize..][..self.ways as usize];
        let owner = asid as u64 + 1;
        row.iter().filter(|&&t| t >> 48 == owner).count() as u32
    }

    /// Whether set `set`'s tags are its occupants' (what [`RestSeg::set_occupant`] keeps).
    fn tags_match_slots(&self, set: u64) -> bool {
        let first = (set * self.ways as u64) as usize;
        (first..first + self.ways as usize)
            .all(|i| self.tags[i] == self.slots[i].occupant.map_or(0, |o| tag(o.asid, o.vpn)))
    }

    /// SRRIP victim of set `set` among its occupied ways: the first way predicted for distant
    /// re-reference, ageing the set until one is (Jaleel et al., ISCA 2010); `None` when no
    /// way is occupied.
    pub fn srrip_victim(&mut self, set: u64) -> Option<u32> {
        let first = (set * self.ways as u64) as usize;
        let row = &mut self.slots[first..first + self.ways as usize];
        if row.iter().all(|s| s.occupant.is_none()) {
            return None;
        }
        loop {
            if let Some(w) = row
                .iter()
                .position(|s| s.occupant.is_some_and(|o| o.rrpv >= RRPV_MAX))
            {
                return Some(w as u32);
            }
            for s in row.iter_mut() {
                if let Some(o) = s.occupant.as_mut() {
                    o.rrpv += 1;
                }
            }
        }
    }

    /// Bits of one TAR entry: the virtual-page tag plus metadata (§5.1.2, footnote 8).
    pub fn tar_entry_bits(&self) -> u32 {
        VA_BITS - self.page.shift() - self.sets.trailing_zeros() + TAR_METADATA_BITS
    }

    /// Bits of one set-filter counter: log2(assoc) + 1 (§5.1.2, footnote 9).
    pub fn sf_counter_bits(&self) -> u32 {
        self.ways.next_power_of_two().trailing_zeros() + 1
    }

    /// Bytes of one process's TAR for this segment (footnote 8's formula).
    pub fn tar_bytes(&self) -> u64 {
        (self.slots.len() as u64 * self.tar_entry_bits() as u64).div_ceil(8)
    }

    /// Bytes of one process's SF for this segment (footnote 9's formula).
    pub fn sf_bytes(&self) -> u64 {
        (self.sets * self.sf_counter_bits() as u64).div_ceil(8)
    }

    /// Byte range of set `set`'s entries inside a TAR (entries are bit-packed, set-major).
    #[inline]
    pub fn tar_set_bytes(&self, set: u64) -> (u64, u64) {
        let bits = self.ways as u64 * self.tar_entry_bits() as u64;
        let lo = set * bits;
        (lo / 8, (lo + bits).div_ceil(8))
    }

    /// Byte offset of set `set`'s counter inside an SF.
    #[inline]
    pub fn sf_set_byte(&self, set: u64) -> u64 {
        set * self.sf_counter_bits() as u64 / 8
    }
}

/// The set index of segment page number `v` among `sets` (a power of two) sets.
#[inline]
pub fn set_index(hash: RestSegHash, v: u64, sets: u64) -> u64 {
    let bits = sets.trailing_zeros();
    let mask = sets - 1;
    match hash {
        RestSegHash::Modulo => v & mask,
        RestSegHash::PrimeDisplacement => (v >> bits).wrapping_mul(17).wrapping_add(v) & mask,
        RestSegHash::Xor => (v ^ (v >> bits)) & mask,
        RestSegHash::Mersenne => {
            if sets <= 2 {
                0
            } else {
                v % (sets - 1)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(bytes: u64, page: PageSize, ways: u32) -> RestSeg {
        RestSeg::new(Pfn(0), bytes, page, ways, RestSegHash::Modulo)
    }

    #[test]
    fn the_tar_of_a_512_mib_4_kib_16_way_restseg_is_528_kib() {
        let s = seg(512 << 20, PageSize::Size4K, 16);
        assert_eq!(s.sets, 8192);
        // 48 - 12 - 13 = 23 tag bits + 10 metadata bits, for 131072 ways.
        assert_eq!(s.tar_entry_bits(), 33);
        assert_eq!(s.tar_bytes(), 528 << 10);
    }

    #[test]
    fn the_sf_of_a_512_mib_4_kib_16_way_restseg_is_8192_counters_of_5_bits() {
        let s = seg(512 << 20, PageSize::Size4K, 16);
        assert_eq!(s.sf_counter_bits(), 5);
        assert_eq!(s.sf_bytes() * 8, 8192 * 5);
    }

    #[test]
    fn the_papers_2_way_example_has_a_180_bit_tar_and_a_4_bit_sf() {
        // §5.1.2: a 16 KiB, 4 KiB-page, 2-way RestSeg: 35-bit tags, TAR 4 x 45 bits, SF 2 x 2.
        let s = seg(16 << 10, PageSize::Size4K, 2);
        assert_eq!(s.tar_entry_bits(), 35 + 10);
        assert_eq!(s.slots.len() as u64 * s.tar_entry_bits() as u64, 180);
        assert_eq!(s.sets * s.sf_counter_bits() as u64, 4);
    }

    #[test]
    fn a_slot_lives_at_base_plus_set_times_assoc_plus_way_pages() {
        let s = RestSeg::new(
            Pfn(1 << 20),
            64 << 20,
            PageSize::Size2M,
            4,
            RestSegHash::Modulo,
        );
        assert_eq!(s.slot_pfn(3, 2), Pfn((1 << 20) + (3 * 4 + 2) * 512));
        assert_eq!(s.slot_of_pfn(Pfn((1 << 20) + 14 * 512)), Some(14));
        assert_eq!(s.slot_of_pfn(Pfn((1 << 20) + 32 * 512)), None);
        assert_eq!(s.slot_of_pfn(Pfn(5)), None);
    }

    #[test]
    fn every_hash_maps_into_the_sets_and_the_modulo_hash_takes_the_low_bits() {
        for h in [
            RestSegHash::Modulo,
            RestSegHash::PrimeDisplacement,
            RestSegHash::Xor,
            RestSegHash::Mersenne,
        ] {
            for v in (0..100_000u64).step_by(37) {
                assert!(set_index(h, v, 64) < 64, "{h:?}");
            }
        }
        assert_eq!(set_index(RestSegHash::Modulo, 0x1234_5678, 8192), 0x1678);
        // The other hashes spread a stride that modulo sends to one set.
        let sets: std::collections::BTreeSet<u64> = (0..16u64)
            .map(|i| set_index(RestSegHash::Xor, i * 64, 64))
            .collect();
        assert!(sets.len() > 1);
    }

    #[test]
    fn srrip_evicts_a_distant_way_and_ages_the_set_until_one_exists() {
        let mut s = seg(8 * 4096, PageSize::Size4K, 4);
        for w in 0..4 {
            s.set_occupant(
                w,
                Some(Occupant {
                    asid: 0,
                    vpn: Vpn(w as u64),
                    writable: true,
                    rrpv: if w == 2 { 1 } else { 0 },
                    reuse: 0,
                }),
            );
        }
        assert_eq!(s.srrip_victim(0), Some(2));
        s.slots[1].occupant.as_mut().unwrap().rrpv = RRPV_MAX;
        assert_eq!(s.srrip_victim(0), Some(1));
        assert_eq!(s.srrip_victim(1), None);
    }
}
