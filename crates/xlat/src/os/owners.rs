//! The owner of each owned data block, by its first frame: a map from frame number to
//! [`DataOwner`] stored as a two-level array, one chunk of 512 slots (a 2 MiB pageblock) per
//! pageblock that ever held an owned block.
//!
//! Why not a hash map: every 4 KiB data page the OS maps gets a record, so a 75 GiB footprint
//! inserts about 20 M of them; a hash map of that size costs a host cache miss per insert and
//! doubles (rehashing everything) on the way. Frames come from the buddy allocator in runs, so
//! the pageblocks in use are dense and a chunk costs 10 bytes per frame it covers (4 KiB of
//! virtual pages and 1 KiB of address spaces), less than the hash map's 24 bytes per entry at
//! its load factor.
//!
//! Contract: behaves as a `HashMap<u64, DataOwner>` restricted to `get`, `insert`, `remove` and
//! `len` (no iteration, so no order can leak into the simulation). Chunks are never freed: the
//! memory follows the most pageblocks ever owned, not the number of references.

use crate::addr::{Asid, Vpn};

/// Who maps a data block (recorded by the OS model right after it allocates / maps it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataOwner {
    /// Address space.
    pub asid: Asid,
    /// First virtual page of the block.
    pub vpn: Vpn,
}

/// Frames per chunk (a 2 MiB pageblock of 4 KiB frames).
const CHUNK_FRAMES: usize = 512;

/// `vpn` of an empty slot: no virtual page number reaches it (a 64-bit address has 52 bits
/// of page number).
const EMPTY: u64 = u64::MAX;

#[derive(Clone)]
struct Chunk {
    vpns: [u64; CHUNK_FRAMES],
    asids: [Asid; CHUNK_FRAMES],
}

/// Owner records by frame number (see the module doc).
#[derive(Clone, Default)]
pub struct OwnerMap {
    chunks: Vec<Option<Box<Chunk>>>,
    len: usize,
}

impl OwnerMap {
    /// The owner recorded for the block starting at frame `pfn` (the simulation only inserts
    /// and removes; tests read).
    #[cfg(test)]
    pub fn get(&self, pfn: u64) -> Option<DataOwner> {
        let (c, i) = split(pfn);
        let chunk = self.chunks.get(c)?.as_ref()?;
        let vpn = chunk.vpns[i];
        (vpn != EMPTY).then(|| DataOwner {
            asid: chunk.asids[i],
            vpn: Vpn(vpn),
        })
    }

    /// Record `owner` for the block starting at `pfn`; returns the record it replaces.
    #[inline]
    pub fn insert(&mut self, pfn: u64, owner: DataOwner) -> Option<DataOwner> {
        debug_assert_ne!(owner.vpn.0, EMPTY, "no virtual page has number u64::MAX");
        let (c, i) = split(pfn);
        if c >= self.chunks.len() {
            self.chunks.resize_with(c + 1, || None);
        }
        let chunk = self.chunks[c].get_or_insert_with(|| {
            Box::new(Chunk {
                vpns: [EMPTY; CHUNK_FRAMES],
                asids: [0; CHUNK_FRAMES],
            })
        });
        let old = std::mem::replace(&mut chunk.vpns[i], owner.vpn.0);
        let old_asid = std::mem::replace(&mut chunk.asids[i], owner.asid);
        if old == EMPTY {
            self.len += 1;
            None
        } else {
            Some(DataOwner {
                asid: old_asid,
                vpn: Vpn(old),
            })
        }
    }

    /// Forget the record of the block starting at `pfn`; returns it.
    #[inline]
    pub fn remove(&mut self, pfn: u64) -> Option<DataOwner> {
        let (c, i) = split(pfn);
        let chunk = self.chunks.get_mut(c)?.as_mut()?;
        let vpn = std::mem::replace(&mut chunk.vpns[i], EMPTY);
        if vpn == EMPTY {
            return None;
        }
        self.len -= 1;
        Some(DataOwner {
            asid: chunk.asids[i],
            vpn: Vpn(vpn),
        })
    }

    /// Number of records.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no records.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[inline]
fn split(pfn: u64) -> (usize, usize) {
    (
        (pfn / CHUNK_FRAMES as u64) as usize,
        (pfn % CHUNK_FRAMES as u64) as usize,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn owner(asid: u16, vpn: u64) -> DataOwner {
        DataOwner {
            asid,
            vpn: Vpn(vpn),
        }
    }

    #[test]
    fn the_owner_map_answers_as_a_hash_map_over_random_operations() {
        // Property test against the reference: inserts, replacements and removals over
        // frames spread across many chunks, including chunk edges and far-apart frames.
        let mut map = OwnerMap::default();
        let mut reference: HashMap<u64, DataOwner> = HashMap::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for step in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let pfn = match x % 4 {
                0 => x >> 40,                      // far apart (up to 2^24 frames)
                1 => (x >> 20) % 4096,             // dense, a few chunks
                2 => ((x >> 20) % 64) * 512 + 511, // chunk edges
                _ => ((x >> 20) % 64) * 512,
            };
            let o = owner((x >> 8) as u16, (x >> 3) % (1 << 40));
            match (x >> 60) % 3 {
                0 | 1 => assert_eq!(map.insert(pfn, o), reference.insert(pfn, o), "step {step}"),
                _ => assert_eq!(map.remove(pfn), reference.remove(&pfn), "step {step}"),
            }
            assert_eq!(map.get(pfn), reference.get(&pfn).copied(), "step {step}");
            assert_eq!(map.len(), reference.len(), "step {step}");
        }
        assert!(
            reference.len() > 1000,
            "the test must keep many records alive"
        );
        for (pfn, o) in &reference {
            assert_eq!(map.get(*pfn), Some(*o));
        }
    }

    #[test]
    fn an_empty_owner_map_answers_none_anywhere() {
        let mut map = OwnerMap::default();
        assert!(map.is_empty());
        assert_eq!(map.get(u32::MAX as u64), None);
        assert_eq!(map.remove(12345), None);
        map.insert(1000, owner(3, 7));
        assert_eq!(map.get(1000), Some(owner(3, 7)));
        assert_eq!(
            map.get(1001),
            None,
            "a neighbour in the same chunk is empty"
        );
        assert_eq!(
            map.get(10_000_000),
            None,
            "a frame beyond the chunks is empty"
        );
        assert_eq!(map.len(), 1);
    }
}
