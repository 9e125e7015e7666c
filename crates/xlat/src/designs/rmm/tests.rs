//! The range table against a reference, and RMM's hook contract.

use super::*;
use crate::addr::PageSize;
use proptest::prelude::*;

fn m(vpn: u64, pfn: u64, size: PageSize, writable: bool) -> Mapping {
    Mapping {
        vpn: Vpn(vpn),
        pfn: Pfn(pfn),
        size,
        writable,
    }
}

#[test]
fn adjacent_contiguous_pages_become_one_range_of_any_size_and_alignment() {
    let mut t = RangeTable::default();
    // 3 pages at VPN 5..8 to frames 100..103 (unaligned), mapped out of order.
    t.map(0, m(7, 102, PageSize::Size4K, true));
    t.map(0, m(5, 100, PageSize::Size4K, true));
    assert_eq!(t.len(), 2);
    t.map(0, m(6, 101, PageSize::Size4K, true));
    assert_eq!(t.len(), 1);
    let r = t.lookup(0, Vpn(6)).unwrap();
    assert_eq!(
        (r.vpn_start, r.vpn_end, r.pfn_start),
        (Vpn(5), Vpn(8), Pfn(100))
    );
    // A 2 MiB page continuing it joins it; another ASID or permission does not.
    t.map(0, m(8, 103, PageSize::Size4K, true));
    t.map(1, m(9, 104, PageSize::Size4K, true));
    t.map(0, m(9, 104, PageSize::Size4K, false));
    assert_eq!(t.lookup(0, Vpn(5)).unwrap().vpn_end, Vpn(9));
    assert_eq!((t.count_of(0), t.count_of(1)), (2, 1));
}

#[test]
fn unmapping_a_page_splits_its_range() {
    let mut t = RangeTable::default();
    t.map(0, m(512, 4096, PageSize::Size2M, true));
    t.map(0, m(1024, 4608, PageSize::Size2M, true));
    assert_eq!(t.len(), 1);
    t.unmap(0, m(512, 4096, PageSize::Size2M, true));
    assert_eq!(t.lookup(0, Vpn(600)), None);
    let r = t.lookup(0, Vpn(1100)).unwrap();
    assert_eq!((r.vpn_start, r.pfn_start), (Vpn(1024), Pfn(4608)));
}

#[test]
fn the_range_hook_counts_background_walks_and_their_btree_levels() {
    let mut phys = PhysMem::new(1 << 30);
    let mut d = Rmm::new(&RmmConfig::default(), &mut phys).unwrap();
    for i in 0..5u64 {
        // five separate ranges (frames apart)
        d.map(
            &mut phys,
            0,
            m(i * 16, 1000 + i * 32, PageSize::Size4K, true),
        )
        .unwrap();
    }
    assert!(d.range(0, Vpn(16)).is_some());
    assert!(d.range(0, Vpn(17)).is_none());
    let mut out = Stats::new();
    d.stats(&mut out);
    let s = &out["rmm"];
    assert_eq!(s["range_table_walks"], 2);
    assert_eq!(s["range_table_hits"], 1);
    // 5 ranges in a B-tree of fan-out 4: two levels per walk.
    assert_eq!(s["range_table_refs"], 4);
    assert_eq!(s["ranges"], 5);
}

proptest! {
    #[test]
    fn every_range_holds_exactly_what_is_mapped(
        ops in proptest::collection::vec((0u64..64, any::<bool>(), 0u64..3, any::<bool>()), 1..200)
    ) {
        let mut t = RangeTable::default();
        // Reference: VPN -> 4 KiB page; frames continue their neighbours' often, not always.
        let mut live: std::collections::BTreeMap<u64, Mapping> = Default::default();
        for (slot, map, frame_shift, writable) in ops {
            let vpn = slot;
            if map {
                if live.contains_key(&vpn) { continue; }
                let pm = m(vpn, 1000 + vpn + frame_shift * 7, PageSize::Size4K, writable);
                t.map(0, pm);
                live.insert(vpn, pm);
            } else if let Some(pm) = live.remove(&vpn) {
                t.unmap(0, pm);
            }
            for v in 0..70u64 {
                let want = live.get(&v).map(|pm| (pm.pfn, pm.writable));
                let got = t.lookup(0, Vpn(v)).map(|r| (r.base_of(Vpn(v)).pfn, r.writable));
                prop_assert_eq!(got, want, "vpn {}", v);
            }
            // Maximal: no two ranges continue each other.
            let ranges: Vec<VaRange> = live.keys().filter_map(|v| t.lookup(0, Vpn(*v))).collect();
            for w in ranges.windows(2) {
                prop_assert!(!(w[0].vpn_end == w[1].vpn_start
                    && w[0].writable == w[1].writable
                    && w[0].pfn_start.0 + (w[0].vpn_end.0 - w[0].vpn_start.0) == w[1].pfn_start.0));
            }
        }
    }
}
