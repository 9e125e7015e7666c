//! The authoritative per-process page map (the oracle's source of truth).
//!
//! Contract: `get(vpn)` returns exactly the mappings installed with `insert` and not removed;
//! mappings never overlap (the OS model guarantees it, `insert` debug-asserts it).
//!
//! `get` runs on every simulated reference, so the structure is built for the simulator's own
//! cache: a hash map from the 2 MiB region number to either one 2 MiB leaf or a 2 KiB array of
//! 512 compact 4 KiB entries, and a separate (rarely non-empty) map of 1 GiB leaves.

use crate::addr::{Mapping, PageSize, Pfn, Vpn};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Multiply-shift hasher for integer keys: deterministic and a few cycles, unlike SipHash.
#[derive(Default, Clone, Copy)]
pub struct IntHasher(u64);

impl Hasher for IntHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ *b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 ^= (v ^ (v >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A `HashMap` keyed by integers with [`IntHasher`].
pub type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

const WRITABLE: u32 = 1 << 31;

/// One 2 MiB virtual region.
#[derive(Clone, Debug)]
enum Region {
    /// A 2 MiB leaf.
    Huge { pfn: Pfn, writable: bool },
    /// 4 KiB entries: `pfn + 1` (0 = unmapped) with the writable bit on top; `count` mapped.
    Small {
        entries: Box<[u32; 512]>,
        count: u16,
    },
}

/// Mappings of one address space.
#[derive(Clone, Debug, Default)]
pub struct PageMap {
    regions: IntMap<u64, Region>,
    giant: IntMap<u64, (Pfn, bool)>,
    pages_4k: u64,
    pages_2m: u64,
}

impl PageMap {
    /// Prefetch (host caches) the entry `get(vpn)` will read.
    #[inline]
    pub fn prefetch(&self, vpn: Vpn) {
        if let Some(Region::Small { entries, .. }) = self.regions.get(&(vpn.0 >> 9)) {
            crate::prefetch::host_prefetch(&entries[(vpn.0 & 511) as usize]);
        }
    }

    /// The mapping containing `vpn`.
    #[inline]
    pub fn get(&self, vpn: Vpn) -> Option<Mapping> {
        match self.regions.get(&(vpn.0 >> 9)) {
            Some(Region::Small { entries, .. }) => {
                let e = entries[(vpn.0 & 511) as usize];
                (e != 0).then(|| Mapping {
                    vpn,
                    pfn: Pfn(((e & !WRITABLE) - 1) as u64),
                    size: PageSize::Size4K,
                    writable: e & WRITABLE != 0,
                })
            }
            Some(Region::Huge { pfn, writable }) => Some(Mapping {
                vpn: vpn.align_down(PageSize::Size2M),
                pfn: *pfn,
                size: PageSize::Size2M,
                writable: *writable,
            }),
            None if !self.giant.is_empty() => {
                self.giant
                    .get(&(vpn.0 >> 18))
                    .map(|(pfn, writable)| Mapping {
                        vpn: vpn.align_down(PageSize::Size1G),
                        pfn: *pfn,
                        size: PageSize::Size1G,
                        writable: *writable,
                    })
            }
            None => None,
        }
    }

    /// Whether any 4 KiB page of the 2 MiB region containing `vpn` is mapped (or the region is).
    pub fn region_in_use(&self, vpn: Vpn) -> bool {
        self.regions.contains_key(&(vpn.0 >> 9)) || self.giant.contains_key(&(vpn.0 >> 18))
    }

    /// Install `m`.
    pub fn insert(&mut self, m: Mapping) {
        debug_assert!(self.get(m.vpn).is_none(), "overlapping mapping {m:?}");
        match m.size {
            PageSize::Size4K => {
                assert!(
                    m.pfn.0 < (WRITABLE - 1) as u64,
                    "frame number too large for the page map"
                );
                let region = self
                    .regions
                    .entry(m.vpn.0 >> 9)
                    .or_insert_with(|| Region::Small {
                        entries: Box::new([0; 512]),
                        count: 0,
                    });
                let Region::Small { entries, count } = region else {
                    panic!("4 KiB mapping inside a 2 MiB page: {m:?}");
                };
                entries[(m.vpn.0 & 511) as usize] =
                    (m.pfn.0 as u32 + 1) | if m.writable { WRITABLE } else { 0 };
                *count += 1;
                self.pages_4k += 1;
            }
            PageSize::Size2M => {
                self.regions.insert(
                    m.vpn.0 >> 9,
                    Region::Huge {
                        pfn: m.pfn,
                        writable: m.writable,
                    },
                );
                self.pages_2m += 1;
            }
            PageSize::Size1G => {
                self.giant.insert(m.vpn.0 >> 18, (m.pfn, m.writable));
            }
        }
    }

    /// Remove exactly `m` (which must be installed).
    pub fn remove(&mut self, m: Mapping) {
        match m.size {
            PageSize::Size4K => {
                let key = m.vpn.0 >> 9;
                if let Some(Region::Small { entries, count }) = self.regions.get_mut(&key) {
                    let slot = &mut entries[(m.vpn.0 & 511) as usize];
                    if *slot != 0 {
                        *slot = 0;
                        *count -= 1;
                        self.pages_4k -= 1;
                        if *count == 0 {
                            self.regions.remove(&key);
                        }
                    }
                }
            }
            PageSize::Size2M => {
                if self.regions.remove(&(m.vpn.0 >> 9)).is_some() {
                    self.pages_2m -= 1;
                }
            }
            PageSize::Size1G => {
                self.giant.remove(&(m.vpn.0 >> 18));
            }
        }
    }

    /// Every mapping overlapping `[start, end)` (VPNs), in address order.
    pub fn in_range(&self, start: Vpn, end: Vpn) -> Vec<Mapping> {
        let (r0, r1) = (start.0 >> 9, (end.0 + 511) >> 9);
        let mut keys: Vec<u64> = if r1 - r0 <= self.regions.len() as u64 {
            (r0..r1).filter(|r| self.regions.contains_key(r)).collect()
        } else {
            self.regions
                .keys()
                .copied()
                .filter(|r| (r0..r1).contains(r))
                .collect()
        };
        keys.sort_unstable();
        let mut out = Vec::new();
        for r in keys {
            match &self.regions[&r] {
                Region::Huge { .. } => out.push(self.get(Vpn(r << 9)).expect("huge region")),
                Region::Small { entries, .. } => {
                    for (i, e) in entries.iter().enumerate() {
                        let vpn = Vpn((r << 9) | i as u64);
                        if *e != 0 && vpn >= start && vpn < end {
                            out.push(self.get(vpn).expect("small entry"));
                        }
                    }
                }
            }
        }
        let mut giants: Vec<Mapping> = self
            .giant
            .keys()
            .filter(|g| (**g << 18) < end.0 && ((**g + 1) << 18) > start.0)
            .map(|g| self.get(Vpn(g << 18)).expect("giant"))
            .collect();
        giants.sort_by_key(|m| m.vpn);
        out.extend(giants);
        out
    }

    /// Mapped 4 KiB pages and 2 MiB pages.
    pub fn counts(&self) -> (u64, u64) {
        (self.pages_4k, self.pages_2m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(vpn: u64, pfn: u64, size: PageSize) -> Mapping {
        Mapping {
            vpn: Vpn(vpn),
            pfn: Pfn(pfn),
            size,
            writable: vpn.is_multiple_of(2),
        }
    }

    #[test]
    fn lookups_return_what_was_inserted_until_removed() {
        let mut p = PageMap::default();
        p.insert(m(5, 77, PageSize::Size4K));
        p.insert(m(1024, 2048, PageSize::Size2M));
        p.insert(m(1 << 18, 1 << 18, PageSize::Size1G));
        assert_eq!(p.get(Vpn(5)), Some(m(5, 77, PageSize::Size4K)));
        assert_eq!(p.get(Vpn(6)), None);
        assert_eq!(p.get(Vpn(1500)).unwrap().size, PageSize::Size2M);
        assert_eq!(p.get(Vpn((1 << 18) + 99)).unwrap().pfn, Pfn(1 << 18));
        assert_eq!(p.in_range(Vpn(0), Vpn(2000)).len(), 2);
        p.remove(m(5, 77, PageSize::Size4K));
        assert_eq!(p.get(Vpn(5)), None);
        assert!(!p.region_in_use(Vpn(5)));
    }
}
