//! The authoritative per-process page map (the oracle's source of truth).
//!
//! Contract: `get(vpn)` returns exactly the mappings installed with `insert` and not removed;
//! mappings never overlap (the OS model guarantees it, `insert` debug-asserts it).
//!
//! `get` runs on every simulated reference, so the structure is built for the simulator's own
//! cache: an open-addressing table from the 2 MiB region number to either one huge leaf or a
//! 2 KiB block of 512 compact 4 KiB entries (blocks live in one flat array), and a separate
//! (rarely non-empty) map of 1 GiB leaves.
//!
//! Any power-of-two page size is kept in one of the three: a page of 8 KiB .. 1 MiB occupies
//! its 4 KiB entries of a block (each the frame of that 4 KiB piece), with its order in a side
//! array that is read only for blocks flagged as holding such pages (so a 4 KiB-only map pays
//! nothing for it); a page of 2 MiB .. 512 MiB is a huge leaf in every 2 MiB region it covers
//! (each naming the page's first frame and order); 1 GiB pages are the giant map's.

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

/// Entries per small region (4 KiB pages in 2 MiB).
const REGION_PAGES: usize = 512;

/// One 2 MiB virtual region, packed in a u64 for [`RegionTable`]:
/// - part of a page of 2 MiB .. 512 MiB: `first_pfn << 7 | order << 2 | writable << 1 | 1`;
/// - pages below 2 MiB: `block << 2 | mixed << 1`, block `block` of [`PageMap::small`] (512
///   entries of `pfn + 1`, 0 = unmapped, with the writable bit on top); `mixed` is set once the
///   block holds a page larger than 4 KiB (whose orders are in [`PageMap::small_order`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Region(u64);

impl Region {
    fn huge(pfn: Pfn, order: u8, writable: bool) -> Region {
        Region(pfn.0 << 7 | (order as u64) << 2 | (writable as u64) << 1 | 1)
    }
    fn small(block: u32, mixed: bool) -> Region {
        Region((block as u64) << 2 | (mixed as u64) << 1)
    }
    /// The block of a small region, `None` for a huge leaf.
    #[inline(always)]
    fn block(self) -> Option<usize> {
        (self.0 & 1 == 0).then_some((self.0 >> 2) as usize)
    }
    /// The block of a small region that holds only 4 KiB pages.
    #[inline(always)]
    fn plain_block(self) -> Option<usize> {
        (self.0 & 3 == 0).then_some((self.0 >> 2) as usize)
    }
    /// Whether a small region's block holds pages above 4 KiB.
    #[inline(always)]
    fn mixed(self) -> bool {
        self.0 & 3 == 2
    }
    /// The huge leaf's page: (first frame, size, writable).
    #[inline(always)]
    fn leaf(self) -> (Pfn, PageSize, bool) {
        (
            Pfn(self.0 >> 7),
            PageSize::from_order(((self.0 >> 2) & 31) as u8).expect("leaf order"),
            self.0 & 2 != 0,
        )
    }
}

/// Open-addressing map from region number to [`Region`] (linear probing, at most half full,
/// backward-shift deletion). Built for `get`, which runs on every simulated reference: a
/// multiply, a shift and usually one probe, with no per-lookup metadata to decode.
#[derive(Clone, Debug)]
struct RegionTable {
    keys: Vec<u64>,
    vals: Vec<Region>,
    /// `64 - log2(capacity)`.
    shift: u32,
    len: usize,
}

/// Region-table slots from which [`PageMap::is_large`] holds: 16 Ki slots (256 KiB of keys
/// and values), reached past 8 Ki mapped 2 MiB regions (16 GiB with every region mapped; the
/// table stays at most half full).
const EARLY_PREFETCH_MIN_REGION_SLOTS: usize = 1 << 14;

/// A free slot of [`RegionTable`] (no region number reaches it).
const FREE: u64 = u64::MAX;

impl RegionTable {
    fn new() -> RegionTable {
        RegionTable {
            keys: vec![FREE; 16],
            vals: vec![Region(0); 16],
            shift: 64 - 4,
            len: 0,
        }
    }

    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    #[inline(always)]
    fn mask(&self) -> usize {
        self.keys.len() - 1
    }

    /// Slot holding `key`, or the free slot ending its probe sequence.
    #[inline(always)]
    fn find(&self, key: u64) -> (usize, bool) {
        let mut i = self.home(key);
        loop {
            debug_assert!(i < self.keys.len());
            // SAFETY: `home` is below `2^(64 - shift) == keys.len()` and every later probe is
            // masked to `keys.len() - 1` (a power of two). Unchecked: this is every oracle check.
            #[allow(unsafe_code)]
            let k = unsafe { *self.keys.get_unchecked(i) };
            if k == key {
                return (i, true);
            }
            if k == FREE {
                return (i, false);
            }
            i = (i + 1) & self.mask();
        }
    }

    #[inline(always)]
    fn get(&self, key: u64) -> Option<Region> {
        let (i, found) = self.find(key);
        // SAFETY: `find` returns a slot below `keys.len() == vals.len()`.
        #[allow(unsafe_code)]
        found.then(|| unsafe { *self.vals.get_unchecked(i) })
    }

    fn contains(&self, key: u64) -> bool {
        self.find(key).1
    }

    /// Prefetch (host caches) the home slot of `key`, where [`RegionTable::find`] starts.
    #[inline(always)]
    fn prefetch_home(&self, key: u64) {
        let i = self.home(key);
        crate::prefetch::host_prefetch(&self.keys[i]);
        crate::prefetch::host_prefetch(&self.vals[i]);
    }

    /// Insert or replace; returns the previous value.
    fn insert(&mut self, key: u64, val: Region) -> Option<Region> {
        debug_assert_ne!(key, FREE);
        if (self.len + 1) * 2 > self.keys.len() {
            self.grow();
        }
        let (i, found) = self.find(key);
        if found {
            return Some(std::mem::replace(&mut self.vals[i], val));
        }
        self.keys[i] = key;
        self.vals[i] = val;
        self.len += 1;
        None
    }

    fn grow(&mut self) {
        let old = std::mem::replace(self, RegionTable::with_capacity(self.keys.len() * 2));
        for (k, v) in old.keys.into_iter().zip(old.vals) {
            if k != FREE {
                let (i, _) = self.find(k);
                self.keys[i] = k;
                self.vals[i] = v;
                self.len += 1;
            }
        }
    }

    fn with_capacity(cap: usize) -> RegionTable {
        debug_assert!(cap.is_power_of_two() && cap >= 2);
        RegionTable {
            keys: vec![FREE; cap],
            vals: vec![Region(0); cap],
            shift: 64 - cap.trailing_zeros(),
            len: 0,
        }
    }

    /// Remove `key`; returns its value. Later entries of the probe run move back, so every key
    /// stays reachable from its home slot without tombstones.
    fn remove(&mut self, key: u64) -> Option<Region> {
        let (mut hole, found) = self.find(key);
        if !found {
            return None;
        }
        let val = self.vals[hole];
        let mask = self.mask();
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let k = self.keys[j];
            if k == FREE {
                break;
            }
            // `k` may fill the hole unless its home lies cyclically in (hole, j].
            let home = self.home(k);
            let stays = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !stays {
                self.keys[hole] = k;
                self.vals[hole] = self.vals[j];
                hole = j;
            }
        }
        self.keys[hole] = FREE;
        self.len -= 1;
        Some(val)
    }

    fn len(&self) -> usize {
        self.len
    }

    fn iter(&self) -> impl Iterator<Item = (u64, Region)> + '_ {
        self.keys
            .iter()
            .zip(&self.vals)
            .filter(|(k, _)| **k != FREE)
            .map(|(k, v)| (*k, *v))
    }
}

/// Whether the 4 KiB entry `e` of `vpn` holds exactly `m` (a 4 KiB mapping).
#[inline(always)]
fn entry_is(e: u32, vpn: Vpn, m: &Mapping) -> bool {
    let want = (m.pfn.0 as u32).wrapping_add(1) | if m.writable { WRITABLE } else { 0 };
    e == want && m.vpn == vpn && m.pfn.0 < (WRITABLE - 1) as u64
}

/// Mappings of one address space.
#[derive(Clone, Debug)]
pub struct PageMap {
    regions: RegionTable,
    /// Entries of the small regions, [`REGION_PAGES`] per block.
    small: Vec<u32>,
    /// Page order of each entry of `small` (meaningful only in blocks flagged `mixed`).
    small_order: Vec<u8>,
    /// Mapped entries per block (a block is freed when it drops to 0).
    small_count: Vec<u16>,
    /// Blocks free for reuse (all their entries are 0).
    free_blocks: Vec<u32>,
    giant: IntMap<u64, (Pfn, bool)>,
    /// Mapped pages per order.
    pages: [u64; PageSize::MAX_ORDER as usize + 1],
    /// 4 KiB entries read lately by [`PageMap::maps_recent`]; emptied by every change.
    recent: RecentEntries,
}

/// A few (VPN, 4 KiB entry) pairs copied from the page map: a cache of the map's own content,
/// so it can only be stale if a change forgot to empty it (`insert` and `remove`, the only
/// mutators, both do).
#[derive(Clone, Debug)]
struct RecentEntries {
    vpns: [u64; RECENT_ENTRIES],
    entries: [u32; RECENT_ENTRIES],
    next: usize,
}

/// Pages [`RecentEntries`] holds: enough for a loop over a few arrays at once.
const RECENT_ENTRIES: usize = 4;

impl RecentEntries {
    fn new() -> RecentEntries {
        RecentEntries {
            // No VPN reaches u64::MAX (VPNs have at most 52 bits).
            vpns: [u64::MAX; RECENT_ENTRIES],
            entries: [0; RECENT_ENTRIES],
            next: 0,
        }
    }

    #[inline(always)]
    fn get(&self, vpn: Vpn) -> Option<u32> {
        let i = self.vpns.iter().position(|v| *v == vpn.0)?;
        Some(self.entries[i])
    }

    #[inline(always)]
    fn remember(&mut self, vpn: Vpn, entry: u32) {
        self.vpns[self.next] = vpn.0;
        self.entries[self.next] = entry;
        self.next = (self.next + 1) % RECENT_ENTRIES;
    }
}

impl Default for PageMap {
    fn default() -> Self {
        PageMap {
            regions: RegionTable::new(),
            small: Vec::new(),
            small_order: Vec::new(),
            small_count: Vec::new(),
            free_blocks: Vec::new(),
            giant: IntMap::default(),
            pages: [0; PageSize::MAX_ORDER as usize + 1],
            recent: RecentEntries::new(),
        }
    }
}

impl PageMap {
    /// The entry of `vpn` in small-region block `block` (a block the region table names).
    /// Unchecked: this is every oracle check.
    #[inline(always)]
    fn small_entry(&self, block: usize, vpn: Vpn) -> u32 {
        let i = block * REGION_PAGES + (vpn.0 & 511) as usize;
        debug_assert!(i < self.small.len());
        // SAFETY: the region table only names blocks below `small_count.len()`, and `small`
        // holds `REGION_PAGES` entries for each of them (blocks are only ever added).
        #[allow(unsafe_code)]
        unsafe {
            *self.small.get_unchecked(i)
        }
    }

    /// Prefetch (host caches) the entry `get(vpn)` will read.
    #[inline]
    pub fn prefetch(&self, vpn: Vpn) {
        if let Some(block) = self.regions.get(vpn.0 >> 9).and_then(Region::block) {
            crate::prefetch::host_prefetch(
                &self.small[block * REGION_PAGES + (vpn.0 & 511) as usize],
            );
        }
    }

    /// Prefetch (host caches) the region slot [`PageMap::prefetch`] and `get` of `vpn` start
    /// from (issued earlier than `prefetch`, which reads it).
    #[inline]
    pub fn prefetch_early(&self, vpn: Vpn) {
        self.regions.prefetch_home(vpn.0 >> 9);
    }

    /// Whether the region table has outgrown the host's mid-level caches, so that an early
    /// prefetch of its slots (and of the designs' upper-level entries, which grow alike) pays
    /// for itself: at 1 GiB it cost gups 7 % with nothing to hide (docs/performance.md,
    /// "Two-stage look-ahead").
    #[inline]
    pub fn is_large(&self) -> bool {
        self.regions.keys.len() >= EARLY_PREFETCH_MIN_REGION_SLOTS
    }

    /// The mapping containing `vpn`.
    #[inline(always)]
    pub fn get(&self, vpn: Vpn) -> Option<Mapping> {
        let Some(r) = self.regions.get(vpn.0 >> 9) else {
            return self.get_giant(vpn);
        };
        match r.block() {
            Some(block) => {
                let e = self.small_entry(block, vpn);
                if e == 0 {
                    return None;
                }
                let pfn = ((e & !WRITABLE) - 1) as u64;
                let writable = e & WRITABLE != 0;
                if !r.mixed() {
                    return Some(Mapping {
                        vpn,
                        pfn: Pfn(pfn),
                        size: PageSize::Size4K,
                        writable,
                    });
                }
                Some(self.get_mixed(block, vpn, pfn, writable))
            }
            None => {
                let (pfn, size, writable) = r.leaf();
                Some(Mapping {
                    vpn: vpn.align_down(size),
                    pfn,
                    size,
                    writable,
                })
            }
        }
    }

    /// The page of `vpn` in a block holding pages above 4 KiB (`pfn` = its entry's frame).
    #[inline(never)]
    fn get_mixed(&self, block: usize, vpn: Vpn, pfn: u64, writable: bool) -> Mapping {
        let order = self.small_order[block * REGION_PAGES + (vpn.0 & 511) as usize];
        let size = PageSize::from_order(order).expect("entry order");
        let first = vpn.align_down(size);
        Mapping {
            vpn: first,
            pfn: Pfn(pfn - (vpn.0 - first.0)),
            size,
            writable,
        }
    }

    /// Whether `get(vpn) == Some(*m)`, cheaper in the common case (a 4 KiB page): the check
    /// the oracle makes on every reference.
    #[inline(always)]
    pub fn maps(&self, vpn: Vpn, m: &Mapping) -> bool {
        if m.size == PageSize::Size4K {
            if let Some(block) = self.regions.get(vpn.0 >> 9).and_then(Region::plain_block) {
                let e = self.small_entry(block, vpn);
                return entry_is(e, vpn, m);
            }
        }
        self.get(vpn) == Some(*m)
    }

    /// [`PageMap::maps`] for the oracle's hottest check (every L1 TLB hit): remembers the 4 KiB
    /// entries it reads, so a loop over a few pages asks the region table only when it enters
    /// a new page. Same answer as `maps`.
    #[inline(always)]
    pub fn maps_recent(&mut self, vpn: Vpn, m: &Mapping) -> bool {
        if m.size == PageSize::Size4K {
            if let Some(e) = self.recent.get(vpn) {
                return entry_is(e, vpn, m);
            }
        }
        self.maps_and_remember(vpn, m)
    }

    /// [`PageMap::maps`], remembering a 4 KiB entry it reads (out of line: the caller's hot
    /// path is the remembered case).
    #[inline(never)]
    fn maps_and_remember(&mut self, vpn: Vpn, m: &Mapping) -> bool {
        if m.size == PageSize::Size4K {
            if let Some(block) = self.regions.get(vpn.0 >> 9).and_then(Region::plain_block) {
                let e = self.small_entry(block, vpn);
                self.recent.remember(vpn, e);
                return entry_is(e, vpn, m);
            }
        }
        self.maps(vpn, m)
    }

    /// The 1 GiB mapping containing `vpn` (rare: out of line).
    #[inline(never)]
    fn get_giant(&self, vpn: Vpn) -> Option<Mapping> {
        if self.giant.is_empty() {
            return None;
        }
        self.giant
            .get(&(vpn.0 >> 18))
            .map(|(pfn, writable)| Mapping {
                vpn: vpn.align_down(PageSize::Size1G),
                pfn: *pfn,
                size: PageSize::Size1G,
                writable: *writable,
            })
    }

    /// Whether any 4 KiB page of the 2 MiB region containing `vpn` is mapped (or the region is).
    pub fn region_in_use(&self, vpn: Vpn) -> bool {
        self.regions.contains(vpn.0 >> 9) || self.giant.contains_key(&(vpn.0 >> 18))
    }

    /// Whether any page overlaps the `pages` 4 KiB pages from `start`.
    pub fn range_in_use(&self, start: Vpn, pages: u64) -> bool {
        let end = start.0 + pages;
        if !self.giant.is_empty()
            && (start.0 >> 18..=(end - 1) >> 18).any(|g| self.giant.contains_key(&g))
        {
            return true;
        }
        (start.0 >> 9..=(end - 1) >> 9).any(|r| match self.regions.get(r) {
            None => false,
            Some(region) => match region.block() {
                None => true,
                Some(block) => {
                    let lo = start.0.max(r << 9);
                    let hi = end.min((r + 1) << 9);
                    (lo..hi).any(|v| self.small_entry(block, Vpn(v)) != 0)
                }
            },
        })
    }

    /// A zeroed block for a new small region.
    fn new_block(&mut self) -> u32 {
        if let Some(b) = self.free_blocks.pop() {
            return b;
        }
        let b = self.small_count.len();
        assert!(b < (u32::MAX >> 2) as usize, "too many page-map blocks");
        self.small.resize(self.small.len() + REGION_PAGES, 0);
        self.small_order
            .resize(self.small_order.len() + REGION_PAGES, 0);
        self.small_count.push(0);
        b as u32
    }

    /// Install `m`.
    pub fn insert(&mut self, m: Mapping) {
        debug_assert!(
            !self.range_in_use(m.vpn, m.size.base_pages()),
            "overlapping mapping {m:?}"
        );
        debug_assert!(
            m.vpn.0.is_multiple_of(m.size.base_pages())
                && m.pfn.0.is_multiple_of(m.size.base_pages()),
            "misaligned mapping {m:?}"
        );
        self.recent = RecentEntries::new();
        self.pages[m.size.order() as usize] += 1;
        let order = m.size.order();
        if order < PageSize::Size2M.order() {
            assert!(
                m.pfn.0 + m.size.base_pages() < (WRITABLE - 1) as u64,
                "frame number too large for the page map"
            );
            let key = m.vpn.0 >> 9;
            let mixed = order > 0;
            let block = match self.regions.get(key) {
                Some(r) => {
                    let block = r
                        .block()
                        .unwrap_or_else(|| panic!("mapping inside a huge page: {m:?}"));
                    if mixed && !r.mixed() {
                        self.regions.insert(key, Region::small(block as u32, true));
                    }
                    block
                }
                None => {
                    let block = self.new_block();
                    self.regions.insert(key, Region::small(block, mixed));
                    block as usize
                }
            };
            let w = if m.writable { WRITABLE } else { 0 };
            for i in 0..m.size.base_pages() {
                let slot = block * REGION_PAGES + ((m.vpn.0 + i) & 511) as usize;
                self.small[slot] = ((m.pfn.0 + i) as u32 + 1) | w;
                self.small_order[slot] = order;
            }
            self.small_count[block] += m.size.base_pages() as u16;
        } else if order < PageSize::Size1G.order() {
            for r in 0..m.size.base_pages() >> 9 {
                let old = self
                    .regions
                    .insert((m.vpn.0 >> 9) + r, Region::huge(m.pfn, order, m.writable));
                debug_assert!(old.is_none(), "huge mapping over a mapped region: {m:?}");
            }
        } else {
            self.giant.insert(m.vpn.0 >> 18, (m.pfn, m.writable));
        }
    }

    /// Remove exactly `m` (which must be installed).
    pub fn remove(&mut self, m: Mapping) {
        self.recent = RecentEntries::new();
        let order = m.size.order();
        if order < PageSize::Size2M.order() {
            let key = m.vpn.0 >> 9;
            let Some(block) = self.regions.get(key).and_then(Region::block) else {
                return;
            };
            let mut removed = 0;
            for i in 0..m.size.base_pages() {
                let slot = block * REGION_PAGES + ((m.vpn.0 + i) & 511) as usize;
                if self.small[slot] != 0 {
                    self.small[slot] = 0;
                    self.small_order[slot] = 0;
                    removed += 1;
                }
            }
            if removed > 0 {
                self.pages[order as usize] -= 1;
                self.small_count[block] -= removed;
                if self.small_count[block] == 0 {
                    // Every entry is 0 again: the block is ready for reuse.
                    self.regions.remove(key);
                    self.free_blocks.push(block as u32);
                }
            }
        } else if order < PageSize::Size1G.order() {
            let mut found = false;
            for r in 0..m.size.base_pages() >> 9 {
                found |= self.regions.remove((m.vpn.0 >> 9) + r).is_some();
            }
            if found {
                self.pages[order as usize] -= 1;
            }
        } else if self.giant.remove(&(m.vpn.0 >> 18)).is_some() {
            self.pages[order as usize] -= 1;
        }
    }

    /// Every mapping overlapping `[start, end)` (VPNs), in address order.
    pub fn in_range(&self, start: Vpn, end: Vpn) -> Vec<Mapping> {
        let (r0, r1) = (start.0 >> 9, (end.0 + 511) >> 9);
        let mut regions: Vec<(u64, Region)> = if r1 - r0 <= self.regions.len() as u64 {
            (r0..r1)
                .filter_map(|r| self.regions.get(r).map(|v| (r, v)))
                .collect()
        } else {
            self.regions
                .iter()
                .filter(|(r, _)| (r0..r1).contains(r))
                .collect()
        };
        regions.sort_unstable_by_key(|(r, _)| *r);
        let mut out: Vec<Mapping> = Vec::new();
        // A page larger than 4 KiB is met at several entries or regions, consecutively.
        let mut push = |m: Mapping| {
            if out.last() != Some(&m) {
                out.push(m);
            }
        };
        for (r, region) in regions {
            match region.block() {
                None => push(self.get(Vpn(r << 9)).expect("huge region")),
                Some(block) => {
                    let entries = &self.small[block * REGION_PAGES..(block + 1) * REGION_PAGES];
                    for (i, e) in entries.iter().enumerate() {
                        let vpn = Vpn((r << 9) | i as u64);
                        if *e != 0 && vpn >= start && vpn < end {
                            push(self.get(vpn).expect("small entry"));
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

    /// The mapped virtual pages as runs `(first VPN, pages)` of consecutive 4 KiB VPNs (a
    /// larger page counts as all its 4 KiB VPNs), sorted, and merged so that no two runs touch.
    /// Costs one pass over the regions (not over the whole address space); memory grows with
    /// the number of runs.
    pub fn mapped_runs(&self) -> Vec<(u64, u64)> {
        let mut chunks: Vec<(u64, u64)> = Vec::new();
        for (r, region) in self.regions.iter() {
            match region.block() {
                None => chunks.push((r << 9, REGION_PAGES as u64)),
                Some(block) => {
                    let entries = &self.small[block * REGION_PAGES..(block + 1) * REGION_PAGES];
                    let mut i = 0;
                    while i < REGION_PAGES {
                        if entries[i] == 0 {
                            i += 1;
                            continue;
                        }
                        let start = i;
                        while i < REGION_PAGES && entries[i] != 0 {
                            i += 1;
                        }
                        chunks.push(((r << 9) | start as u64, (i - start) as u64));
                    }
                }
            }
        }
        chunks.extend(self.giant.keys().map(|g| (g << 18, 1u64 << 18)));
        chunks.sort_unstable();
        let mut runs: Vec<(u64, u64)> = Vec::with_capacity(chunks.len());
        for (start, pages) in chunks {
            match runs.last_mut() {
                Some((s, n)) if *s + *n >= start => *n = (*n).max(start + pages - *s),
                _ => runs.push((start, pages)),
            }
        }
        runs
    }

    /// Mapped 4 KiB pages and 2 MiB pages.
    pub fn counts(&self) -> (u64, u64) {
        (self.pages[0], self.pages[9])
    }

    /// Mapped pages per order (index = order, 0 = 4 KiB .. 18 = 1 GiB).
    pub fn pages_by_order(&self) -> [u64; PageSize::MAX_ORDER as usize + 1] {
        self.pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn m(vpn: u64, pfn: u64, size: PageSize) -> Mapping {
        Mapping {
            vpn: Vpn(vpn),
            pfn: Pfn(pfn),
            size,
            writable: vpn.is_multiple_of(2),
        }
    }

    #[test]
    fn mapped_runs_merge_touching_pages_of_every_size_in_address_order() {
        let mut pm = PageMap::default();
        let size_64k = PageSize::from_order(4).expect("64 KiB");
        // 4 KiB pages at 0..3 and 5; a 64 KiB page at 16..32 touching a 4 KiB page at 32; a
        // 2 MiB page right after a 4 KiB page at 511; a 1 GiB page far above.
        for v in [0, 1, 2, 5, 32, 511] {
            pm.insert(m(v, 1000 + v, PageSize::Size4K));
        }
        pm.insert(m(16, 2000, size_64k));
        pm.insert(m(512, 4096, PageSize::Size2M));
        pm.insert(m(1 << 20, 1 << 18, PageSize::Size1G));
        assert_eq!(
            pm.mapped_runs(),
            vec![(0, 3), (5, 1), (16, 17), (511, 513), (1 << 20, 1 << 18)]
        );
        pm.remove(m(1, 1001, PageSize::Size4K));
        assert_eq!(pm.mapped_runs()[..3], [(0, 1), (2, 1), (5, 1)]);
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

    #[test]
    fn early_prefetches_of_any_page_leave_every_lookup_unchanged() {
        // The engine calls `prefetch_early` on pages the oracle has not seen yet, far past the
        // table's capacity: the home slot must be in range for every key.
        let mut p = PageMap::default();
        for v in (0..4096u64).step_by(7) {
            p.insert(m(v * 513, 10 + v, PageSize::Size4K));
        }
        let probes = [0, 1, 513, 1 << 20, (1 << 36) - 1, u64::MAX >> 12];
        let before: Vec<_> = probes.iter().map(|&v| p.get(Vpn(v))).collect();
        for &v in &probes {
            p.prefetch_early(Vpn(v));
            p.prefetch(Vpn(v));
        }
        let after: Vec<_> = probes.iter().map(|&v| p.get(Vpn(v))).collect();
        assert_eq!(before, after);
        assert_eq!(p.get(Vpn(7 * 513)), Some(m(7 * 513, 17, PageSize::Size4K)));
    }

    proptest! {
        /// The region table against a plain map, through growth and backward-shift deletions
        /// (keys from a small range, so probe runs collide and wrap).
        #[test]
        fn the_region_table_behaves_as_a_map(
            ops in prop::collection::vec((any::<bool>(), 0u64..64, 0u64..1000), 1..400)
        ) {
            let mut t = RegionTable::new();
            let mut model: HashMap<u64, u64> = HashMap::new();
            for (insert, key, val) in ops {
                let key = key * 1_000_003;
                if insert {
                    prop_assert_eq!(t.insert(key, Region(val)).map(|r| r.0), model.insert(key, val));
                } else {
                    prop_assert_eq!(t.remove(key).map(|r| r.0), model.remove(&key));
                }
                prop_assert_eq!(t.len(), model.len());
                for probe in 0..64u64 {
                    let probe = probe * 1_000_003;
                    prop_assert_eq!(t.get(probe).map(|r| r.0), model.get(&probe).copied());
                }
            }
        }

        /// The page map against a plain list of mappings, through inserts and removals of
        /// 4 KiB and 2 MiB pages (regions emptied and refilled, blocks reused).
        #[test]
        fn lookups_agree_with_a_plain_list_of_mappings(
            ops in prop::collection::vec((0u8..4, 0u64..4, 0u64..4, 0u64..1000), 1..300)
        ) {
            let mut p = PageMap::default();
            let mut model: HashMap<u64, Mapping> = HashMap::new(); // first VPN -> mapping
            let region = |r: u64| r * 37 * 512;
            let covering = |model: &HashMap<u64, Mapping>, vpn: u64| {
                model
                    .values()
                    .find(|m| m.vpn.0 <= vpn && vpn < m.vpn.0 + m.size.bytes() / 4096)
                    .copied()
            };
            for (op, r, page, pfn) in ops {
                let base = region(r);
                match op {
                    0 | 1 => {
                        let vpn = base + page * 7;
                        if covering(&model, vpn).is_none() {
                            let m = Mapping {
                                vpn: Vpn(vpn),
                                pfn: Pfn(pfn),
                                size: PageSize::Size4K,
                                writable: pfn % 2 == 0,
                            };
                            p.insert(m);
                            model.insert(vpn, m);
                        }
                    }
                    2 => {
                        if !model.keys().any(|v| v >> 9 == base >> 9) {
                            let m = Mapping {
                                vpn: Vpn(base),
                                pfn: Pfn(pfn * 512),
                                size: PageSize::Size2M,
                                writable: true,
                            };
                            p.insert(m);
                            model.insert(base, m);
                        }
                    }
                    _ => {
                        let victim = model.keys().copied().filter(|v| v >> 9 == base >> 9).min();
                        if let Some(v) = victim {
                            p.remove(model.remove(&v).unwrap());
                        }
                    }
                }
                for r in 0..4 {
                    for probe in [0u64, 7, 14, 21, 300] {
                        let vpn = region(r) + probe;
                        let want = covering(&model, vpn).map(|m| Mapping {
                            vpn: if m.size == PageSize::Size4K { Vpn(vpn) } else { m.vpn },
                            ..m
                        });
                        prop_assert_eq!(p.get(Vpn(vpn)), want, "VPN {:#x}", vpn);
                        // `maps` is `get == Some(m)`, for the right mapping and near misses.
                        let right = want.unwrap_or(Mapping {
                            vpn: Vpn(vpn),
                            pfn: Pfn(1),
                            size: PageSize::Size4K,
                            writable: true,
                        });
                        let candidates = [
                            right,
                            Mapping { pfn: Pfn(right.pfn.0 + 1), ..right },
                            Mapping { writable: !right.writable, ..right },
                            Mapping { vpn: Vpn(right.vpn.0 ^ 1), ..right },
                            Mapping { size: PageSize::Size2M, vpn: Vpn(vpn & !511), ..right },
                        ];
                        for c in candidates {
                            prop_assert_eq!(p.maps(Vpn(vpn), &c), p.get(Vpn(vpn)) == Some(c));
                        }
                    }
                }
                // `maps_recent` gives the same answers from its memo. Four pages only, so the
                // memo keeps them from one operation to the next: a change that failed to
                // empty it would show here.
                for vpn in [region(0) + 7, region(1) + 7, region(0) + 14, region(1)] {
                    let got = p.get(Vpn(vpn));
                    let right = got.unwrap_or(Mapping {
                        vpn: Vpn(vpn),
                        pfn: Pfn(pfn),
                        size: PageSize::Size4K,
                        writable: pfn % 2 == 0,
                    });
                    for c in [right, Mapping { pfn: Pfn(right.pfn.0 ^ 1), ..right }] {
                        prop_assert_eq!(p.maps_recent(Vpn(vpn), &c), got == Some(c), "VPN {:#x}", vpn);
                    }
                }
                let listed = p.in_range(Vpn(0), Vpn(region(4)));
                prop_assert_eq!(listed.len(), model.len());
            }
        }

        /// Pages of every size from 4 KiB to 32 MiB (in blocks, in huge regions and across
        /// several regions) against a plain list: `get`, `maps`, `range_in_use`, `in_range`
        /// and the per-order counts agree through inserts and removals.
        #[test]
        fn pages_of_any_size_agree_with_a_plain_list(
            ops in prop::collection::vec((0u8..14, 0u64..64, any::<bool>(), 0u64..100), 1..120)
        ) {
            let mut p = PageMap::default();
            let mut model: Vec<Mapping> = Vec::new();
            let window = 1u64 << 14; // 64 MiB of VPNs from 0x40000
            let origin = 0x40000u64;
            for (order, slot, insert, pfn) in ops {
                let size = PageSize::from_order(order).unwrap();
                let pages = size.base_pages();
                let vpn = origin + (slot * 521 * pages) % window / pages * pages;
                let overlapping: Vec<Mapping> = model
                    .iter()
                    .filter(|m| m.vpn.0 < vpn + pages && vpn < m.vpn.0 + m.size.base_pages())
                    .copied()
                    .collect();
                prop_assert_eq!(p.range_in_use(Vpn(vpn), pages), !overlapping.is_empty());
                if insert && overlapping.is_empty() {
                    let m = Mapping { vpn: Vpn(vpn), pfn: Pfn(pfn * pages), size, writable: pfn % 2 == 0 };
                    p.insert(m);
                    model.push(m);
                } else if !insert {
                    for m in overlapping {
                        p.remove(m);
                        model.retain(|x| *x != m);
                    }
                }
                for probe in (origin..origin + window).step_by(97) {
                    let want = model.iter().find(|m| m.contains(Vpn(probe))).map(|m| {
                        if m.size == PageSize::Size4K { Mapping { vpn: Vpn(probe), ..*m } } else { *m }
                    });
                    prop_assert_eq!(p.get(Vpn(probe)), want, "VPN {:#x}", probe);
                    if let Some(w) = want {
                        prop_assert!(p.maps(Vpn(probe), &w));
                        prop_assert!(p.maps_recent(Vpn(probe), &w));
                        let off = Mapping { pfn: Pfn(w.pfn.0 + 1), ..w };
                        prop_assert!(!p.maps(Vpn(probe), &off));
                    }
                }
                let mut listed = p.in_range(Vpn(origin), Vpn(origin + window));
                let mut want = model.clone();
                listed.sort_by_key(|m| m.vpn);
                want.sort_by_key(|m| m.vpn);
                // 4 KiB pages are listed at their own VPN, as inserted.
                prop_assert_eq!(listed, want);
                let mut by_order = [0u64; 19];
                for m in &model { by_order[m.size.order() as usize] += 1; }
                prop_assert_eq!(p.pages_by_order(), by_order);
            }
        }
    }
}
