//! TPS's formula tests: PTE writes and walk accesses of tailored pages, and the OS model and TPS
//! together (the conservative split, promotion to 1 GiB).

use super::*;
use crate::addr::{PageSize, Pfn, Vaddr, Vpn};
use crate::mem::{MemConfig, MemSystem};
use crate::os::policy::PolicyKind;
use crate::os::{MapChange, Os, OsConfig};
use crate::trace::AccessKind;

fn setup(ptes: TailoredPtes) -> (Tps, PhysMem, MemSystem) {
    let mut phys = PhysMem::new(4 << 30);
    let cfg = TpsConfig {
        ptes,
        ..TpsConfig::default()
    };
    let t = Tps::new(&cfg, &mut phys).unwrap();
    (t, phys, MemSystem::new(&MemConfig::default()))
}

fn m(vpn: u64, pfn: u64, order: u8) -> Mapping {
    Mapping::writable(vpn, pfn, PageSize::from_order(order).unwrap())
}

fn stat(t: &Tps, key: &str) -> serde_json::Value {
    let mut out = Stats::new();
    t.stats(&mut out);
    out["tps"][key].clone()
}

#[test]
fn a_16k_tailored_page_writes_its_4_ptes_with_either_variant() {
    for ptes in [TailoredPtes::Copies, TailoredPtes::Alias] {
        let (mut t, mut phys, _) = setup(ptes);
        t.map(&mut phys, 0, m(0x1000, 0x8000, 2)).unwrap();
        assert_eq!(stat(&t, "pte_writes"), 4, "{ptes:?}");
        assert_eq!(stat(&t, "tailored_updates"), 1, "{ptes:?}");
        t.unmap(&mut phys, 0, m(0x1000, 0x8000, 2));
        assert_eq!(stat(&t, "pte_writes"), 8, "{ptes:?}: unmap clears all 4");
        assert_eq!(stat(&t, "pte_writes_per_update"), 4.0, "{ptes:?}");
    }
}

#[test]
fn an_alias_pte_costs_one_extra_walk_access_and_a_copy_none() {
    for (ptes, extra) in [(TailoredPtes::Alias, 1), (TailoredPtes::Copies, 0)] {
        let (mut t, mut phys, mut mem) = setup(ptes);
        let page = m(0x1000, 0x8000, 2);
        t.map(&mut phys, 0, page).unwrap();
        // The true PTE (first VPN): a cold 4-level walk.
        let w = t.walk(0, Vpn(0x1000), &mut mem);
        assert_eq!((w.mapping, w.mem_accesses), (Some(page), 4), "{ptes:?}");
        // Every other VPN of the page reads an alias (or a copy); PWCs are warm now.
        for v in 0x1001..0x1004 {
            let w = t.walk(0, Vpn(v), &mut mem);
            assert_eq!(w.mapping, Some(page), "{ptes:?} {v:#x}");
            assert_eq!(w.mem_accesses, 1 + extra, "{ptes:?} {v:#x}");
        }
        assert_eq!(stat(&t, "alias_accesses"), 3 * extra as u64, "{ptes:?}");
    }
}

#[test]
fn every_tailored_size_is_found_from_every_entry_it_takes() {
    for ptes in [TailoredPtes::Alias, TailoredPtes::Copies] {
        let (mut t, mut phys, mut mem) = setup(ptes);
        for order in (1u8..18).filter(|o| o % 9 != 0) {
            let size = PageSize::from_order(order).unwrap();
            let vpn = (order as u64) << 18; // one 1 GiB region per size
            let page = m(vpn, (1 << 19) + ((order as u64) << 17), order);
            assert_eq!(page.pfn.0 % size.base_pages(), 0);
            t.map(&mut phys, 0, page).unwrap();
            let entries = 1u64 << (order % 9);
            let step = size.base_pages() / entries;
            for e in 0..entries {
                for off in [0, step - 1] {
                    let v = Vpn(vpn + e * step + off);
                    assert_eq!(
                        t.walk(0, v, &mut mem).mapping,
                        Some(page),
                        "{ptes:?} {size}"
                    );
                }
            }
            assert_eq!(
                t.walk(0, Vpn(vpn + size.base_pages()), &mut mem).mapping,
                None
            );
        }
    }
}

#[test]
fn an_unmapped_tailored_page_leaves_no_alias_behind() {
    let (mut t, mut phys, mut mem) = setup(TailoredPtes::Alias);
    t.map(&mut phys, 0, m(0x1000, 0x8000, 3)).unwrap();
    t.unmap(&mut phys, 0, m(0x1000, 0x8000, 3));
    // A 4 KiB page where the true PTE was: the old aliases must not lead to it.
    t.map(&mut phys, 0, m(0x1000, 0x9000, 0)).unwrap();
    assert_eq!(t.walk(0, Vpn(0x1003), &mut mem).mapping, None);
    assert_eq!(
        t.walk(0, Vpn(0x1000), &mut mem).mapping,
        Some(m(0x1000, 0x9000, 0))
    );
    // And the slots take a tailored page again.
    t.unmap(&mut phys, 0, m(0x1000, 0x9000, 0));
    t.map(&mut phys, 0, m(0x1000, 0xa000, 3)).unwrap();
    assert_eq!(
        t.walk(0, Vpn(0x1007), &mut mem).mapping.unwrap().pfn,
        Pfn(0xa000)
    );
    t.unmap(&mut phys, 0, m(0x1000, 0xa000, 3));
    assert_eq!(t.footprint().bytes, 4096, "only the root remains");
}

#[test]
fn the_x86_radix_design_refuses_a_tailored_size() {
    use crate::designs::radix::Radix;
    let mut phys = PhysMem::new(1 << 30);
    let mut r = Radix::new(&RadixConfig::default(), &mut phys).unwrap();
    assert!(r.map(&mut phys, 0, m(0x1000, 0x8000, 2)).is_err());
}

/// An OS model with `sizes` and a TPS design fed by its changes.
struct System {
    os: Os,
    tps: Tps,
    mem: MemSystem,
}

impl System {
    fn new(tweak: impl FnOnce(&mut OsConfig)) -> System {
        let mut cfg = OsConfig {
            phys_mem_bytes: 4 << 30,
            policy: PolicyKind::Reservation,
            ..OsConfig::default()
        };
        tweak(&mut cfg);
        let mut os = Os::new(&cfg, 1).unwrap();
        let mut throwaway = PhysMem::new(1 << 20);
        let tps = Tps::new(&TpsConfig::default(), &mut throwaway).unwrap();
        os.set_page_sizes(tps.page_sizes()).unwrap();
        os.process(1);
        System {
            os,
            tps,
            mem: MemSystem::new(&MemConfig::default()),
        }
    }

    fn apply(&mut self, changes: Vec<MapChange>) {
        for c in changes {
            match c {
                MapChange::Map(a, m) => self.tps.map(&mut self.os.phys, a, m).unwrap(),
                MapChange::Unmap(a, m) => self.tps.unmap(&mut self.os.phys, a, m),
            }
        }
    }

    fn mmap(&mut self, va: u64, len: u64) {
        let mut ch = Vec::new();
        self.os.mmap(0, Vaddr(va), len, 3, 0x22, &mut ch).unwrap();
        self.apply(ch);
    }

    /// Touch `va`: a fault if it is not mapped, then a walk that must agree with the OS.
    fn touch(&mut self, va: u64) -> Mapping {
        let vpn = Vaddr(va).vpn();
        if self.os.translate(0, vpn).is_none() {
            let mut ch = Vec::new();
            self.os
                .fault(0, Vaddr(va), AccessKind::Store, &mut ch)
                .unwrap();
            self.apply(ch);
        }
        let got = self
            .tps
            .walk(0, vpn, &mut self.mem)
            .mapping
            .expect("mapped");
        assert_eq!(Some(got), self.os.translate(0, vpn), "{va:#x}");
        got
    }
}

#[test]
fn a_28k_vma_under_the_conservative_rule_is_walked_as_16k_8k_and_4k_pages() {
    let mut s = System::new(|_| {});
    let base = 0x4000_0000u64; // 32 KiB aligned
    s.mmap(base, 28 << 10);
    for i in 0..7 {
        s.touch(base + i * 4096);
    }
    let sizes: Vec<u64> = (0..7)
        .map(|i| s.touch(base + i * 4096).size.bytes() >> 10)
        .collect();
    assert_eq!(sizes, vec![16, 16, 16, 16, 8, 8, 4]);
}

#[test]
fn a_1g_region_touched_fully_at_threshold_one_ends_as_one_1g_page() {
    let mut s = System::new(|c| c.reservation.promotion_threshold = 1.0);
    let base = 1u64 << 30;
    s.mmap(base, 1 << 30);
    let pages = (1u64 << 30) >> 12;
    // A scattered order, so promotion climbs through many tailored sizes on the way.
    for i in 0..pages {
        let va = base + ((i * 40_503) % pages) * 4096;
        let got = s.touch(va);
        if i + 1 < pages {
            assert!(got.size < PageSize::Size1G, "touch {i}");
        }
    }
    let last = s.touch(base + 12345 * 4096);
    assert_eq!(last.size, PageSize::Size1G);
    assert_eq!(last.vpn, Vaddr(base).vpn());
    let mut out = Stats::new();
    s.os.stats(&mut out);
    assert_eq!(out["os"]["mapped_bytes_by_size"]["1g"], 1u64 << 30);
    assert!(stat(&s.tps, "tailored_updates").as_u64().unwrap() > 0);
}

#[test]
fn setting_a_16k_pages_accessed_bit_writes_1_entry_with_aliases_and_4_with_copies() {
    for (ptes, writes) in [(TailoredPtes::Alias, 1u64), (TailoredPtes::Copies, 4)] {
        let (mut t, mut phys, mut mem) = setup(ptes);
        let page = m(0x1000, 0x8000, 2);
        t.map(&mut phys, 0, page).unwrap();
        // The first walk sets the bit in place; later walks of any VPN of the page see it set.
        for v in [0x1002, 0x1000, 0x1003, 0x1001] {
            t.walk(0, Vpn(v), &mut mem);
        }
        assert_eq!(stat(&t, "ad_updates"), 1, "{ptes:?}");
        assert_eq!(stat(&t, "ad_pte_writes"), writes, "{ptes:?}");
        assert_eq!(stat(&t, "tailored_ad_pte_writes"), writes, "{ptes:?}");
        assert_eq!(stat(&t, "ad_pte_writes_per_ad_update"), writes as f64);
        // Unmapping clears the entries: the page mapped again starts with its bit clear.
        t.unmap(&mut phys, 0, page);
        t.map(&mut phys, 0, page).unwrap();
        t.walk_after_fault(0, Vpn(0x1001), &mut mem);
        assert_eq!(stat(&t, "ad_updates"), 2, "{ptes:?}");
        assert_eq!(stat(&t, "ad_pte_writes"), 2 * writes, "{ptes:?}");
    }
}

#[test]
fn an_x86_size_page_sets_its_accessed_bit_with_one_write_in_either_variant() {
    for ptes in [TailoredPtes::Alias, TailoredPtes::Copies] {
        let (mut t, mut phys, mut mem) = setup(ptes);
        t.map(&mut phys, 0, m(0x200, 0x400, 9)).unwrap(); // 2 MiB
        t.map(&mut phys, 0, m(0x9000, 0x9000, 0)).unwrap(); // 4 KiB
        for v in [0x200, 0x3ff, 0x9000, 0x9000] {
            t.walk(0, Vpn(v), &mut mem);
        }
        assert_eq!(stat(&t, "ad_updates"), 2, "{ptes:?}");
        assert_eq!(stat(&t, "ad_pte_writes"), 2, "{ptes:?}");
        assert_eq!(stat(&t, "tailored_ad_updates"), 0, "{ptes:?}");
    }
}

#[test]
fn the_alias_bit_vector_sets_one_bit_per_chunk_of_a_tailored_page() {
    // A 1 MiB page (256 base pages, 256 entries) with a 16-bit vector: 16 chunks of 64 KiB.
    let mut phys = PhysMem::new(4 << 30);
    let cfg = TpsConfig {
        ad_vector_bits: 16,
        ..TpsConfig::default()
    };
    cfg.validate().unwrap();
    let mut t = Tps::new(&cfg, &mut phys).unwrap();
    let mut mem = MemSystem::new(&MemConfig::default());
    let page = m(0x4_0000, 0x10_0000, 8);
    t.map(&mut phys, 0, page).unwrap();
    t.walk(0, Vpn(0x4_0000), &mut mem);
    t.walk(0, Vpn(0x4_000f), &mut mem); // same 16-page chunk
    assert_eq!(stat(&t, "ad_updates"), 1);
    t.walk(0, Vpn(0x4_0010), &mut mem); // the second chunk
    assert_eq!(stat(&t, "ad_updates"), 2);
    for v in 0x4_0000..0x4_0100 {
        t.walk(0, Vpn(v), &mut mem);
    }
    assert_eq!(stat(&t, "ad_updates"), 16);
    assert_eq!(
        stat(&t, "ad_pte_writes"),
        16,
        "one alias PTE written per chunk"
    );
    // An 8 KiB page has 2 base pages: its vector has 2 bits, whatever the limit.
    t.map(&mut phys, 0, m(0x8_0000, 0x20_0000, 1)).unwrap();
    for v in [0x8_0000, 0x8_0001, 0x8_0001] {
        t.walk(0, Vpn(v), &mut mem);
    }
    assert_eq!(stat(&t, "ad_updates"), 18);
}

#[test]
fn a_bit_vector_needs_alias_ptes_and_a_power_of_two_size() {
    let copies = TpsConfig {
        ptes: TailoredPtes::Copies,
        ad_vector_bits: 16,
        ..TpsConfig::default()
    };
    assert!(copies.validate().unwrap_err().contains("alias"));
    let odd = TpsConfig {
        ad_vector_bits: 12,
        ..TpsConfig::default()
    };
    assert!(odd.validate().unwrap_err().contains("ad_vector_bits"));
    let big = TpsConfig {
        ad_vector_bits: 512,
        ..TpsConfig::default()
    };
    assert!(big.validate().is_err());
}
