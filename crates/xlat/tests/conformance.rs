//! Conformance suite: every registered design, driven through random map / unmap / walk
//! sequences, must agree with a plain reference map (the contract of `designs::Design`).
//!
//! The suite iterates `designs::REGISTRY`, so a new design is covered the moment it is registered.

use proptest::prelude::*;
use xlat::addr::Vaddr;
use xlat::addr::{Asid, Mapping, PageSize, Pfn, Vpn};
use xlat::config::Config;
use xlat::designs::{build_and_visit, Design, DesignVisitor, REGISTRY};
use xlat::mem::MemSystem;
use xlat::os::aslr::{Aslr, EXEC_ZONE, MMAP_ZONE_LO};
use xlat::os::PhysMem;

/// One step of a conformance sequence.
#[derive(Clone, Debug)]
enum Op {
    /// Map a page of `size` in `slot` of ASID `asid` (slots are aligned for the size).
    Map {
        asid: Asid,
        size: PageSize,
        slot: u64,
    },
    /// Unmap the `nth` live mapping (modulo the number live).
    Unmap { nth: usize },
    /// Walk VPN `offset` inside the `nth` live mapping, or a random VPN when none is live.
    WalkMapped { nth: usize, offset: u64 },
    /// Walk an arbitrary VPN.
    WalkAny { asid: Asid, vpn: u64 },
}

fn op_strategy() -> impl Strategy<Value = Op> {
    // x86 sizes most of the time; the others are tried on the designs that declare them.
    let size = prop_oneof![
        6 => Just(PageSize::Size4K),
        3 => Just(PageSize::Size2M),
        1 => Just(PageSize::Size1G),
        2 => (1u8..9).prop_map(|o| PageSize::from_order(o).unwrap()),
        1 => (10u8..18).prop_map(|o| PageSize::from_order(o).unwrap()),
    ];
    prop_oneof![
        4 => (0u16..3, size, 0u64..64).prop_map(|(asid, size, slot)| Op::Map { asid, size, slot }),
        2 => any::<usize>().prop_map(|nth| Op::Unmap { nth }),
        4 => (any::<usize>(), any::<u64>()).prop_map(|(nth, offset)| Op::WalkMapped { nth, offset }),
        2 => (0u16..3, 0u64..(1 << 24)).prop_map(|(asid, vpn)| Op::WalkAny { asid, vpn }),
    ]
}

/// Spread slots over distinct 1 GiB regions per size class plus a shared region, so that sizes
/// sometimes share upper-level tables and sometimes do not.
fn slot_vpn(size: PageSize, slot: u64) -> Vpn {
    let base = if size < PageSize::Size2M {
        // clustered pages below 2 MiB (4 KiB pages and 8 KiB .. 1 MiB pages share regions)
        0x10_0000 + (slot % 8) * 0x200 * 37 + slot * size.base_pages()
    } else if size < PageSize::Size1G {
        0x40_0000 + slot * size.base_pages()
    } else {
        0x800_0000 + slot * (1 << 18)
    };
    Vpn(base).align_down(size)
}

struct Conformance {
    ops: Vec<Op>,
    /// Cores (`Design::set_cores`) when above 1: op `i` walks on core `i % cores`, so an MMU-cache
    /// entry one core kept after a table change would be caught on that core.
    cores: usize,
    /// `os.aslr`: the design is told the layouts and every page lives in a randomized zone
    /// (the executable or mmap zone, chosen per op) at its placed address.
    aslr: Option<Aslr>,
}

/// Where `vpn` (a VPN of the plain sequence) lives with ASLR: in the executable zone for even
/// `zone`, the mmap zone for odd, moved by the layout of `asid`, aligned for `size` there.
fn aslr_vpn(aslr: Option<Aslr>, asid: Asid, zone: u64, vpn: Vpn, size: PageSize) -> Vpn {
    let Some(a) = aslr else { return vpn };
    let base = if zone.is_multiple_of(2) {
        EXEC_ZONE.0
    } else {
        MMAP_ZONE_LO
    };
    let canonical = Vaddr(base + (vpn.0 << 12));
    a.layout(asid)
        .place(canonical)
        .unwrap()
        .vpn()
        .align_down(size)
}

fn reference_lookup(live: &[(Asid, Mapping)], asid: Asid, vpn: Vpn) -> Option<Mapping> {
    live.iter()
        .find(|(a, m)| *a == asid && m.contains(vpn))
        .map(|(_, m)| *m)
}

impl DesignVisitor for Conformance {
    type Output = Result<(), String>;

    fn visit<D: Design + 'static>(self, mut d: D) -> Result<(), String> {
        let mut phys = PhysMem::new(64 << 30);
        let mut mem = MemSystem::new(&Config::default().mem);
        let mut live: Vec<(Asid, Mapping)> = Vec::new();
        let mut next_pfn = 1u64 << 20;
        if self.cores > 1 {
            d.set_cores(self.cores);
        }
        if let Some(a) = self.aslr {
            d.set_aslr(a);
        }
        for (i, op) in self.ops.into_iter().enumerate() {
            if self.cores > 1 {
                d.select_core(i % self.cores);
            }
            match op {
                Op::Map { asid, size, slot } => {
                    if !d.page_sizes().contains(size) {
                        continue; // the OS model maps only the sizes a design declares
                    }
                    let vpn = aslr_vpn(self.aslr, asid, slot / 8, slot_vpn(size, slot), size);
                    let m = Mapping {
                        vpn,
                        pfn: Pfn(next_pfn.next_multiple_of(size.base_pages())),
                        size,
                        writable: slot % 3 != 0,
                    };
                    let overlaps = live.iter().any(|(a, o)| {
                        *a == asid
                            && o.vpn.0 < m.vpn.0 + size.base_pages()
                            && m.vpn.0 < o.vpn.0 + o.size.base_pages()
                    });
                    if overlaps {
                        continue; // the OS model never maps overlapping pages
                    }
                    next_pfn = m.pfn.0 + size.base_pages();
                    d.map(&mut phys, asid, m)
                        .map_err(|e| format!("op {i}: map {m:?} failed: {e}"))?;
                    live.push((asid, m));
                }
                Op::Unmap { nth } => {
                    if live.is_empty() {
                        continue;
                    }
                    let (asid, m) = live.swap_remove(nth % live.len());
                    d.unmap(&mut phys, asid, m);
                }
                Op::WalkMapped { nth, offset } => {
                    if live.is_empty() {
                        continue;
                    }
                    let (asid, m) = live[nth % live.len()];
                    let vpn = Vpn(m.vpn.0 + offset % m.size.base_pages());
                    // The engine calls `prefetch` ahead of walks, on any address: it must not
                    // panic on any table state, nor change what the walk finds; the same for
                    // `prefetch_early`, called further ahead.
                    d.prefetch_early(asid, vpn);
                    d.prefetch(asid, vpn, &mem);
                    let got = d.walk(asid, vpn, &mut mem).mapping;
                    if got != Some(m) {
                        return Err(format!(
                            "op {i}: walk of mapped {vpn:?} (asid {asid}) gave {got:?}, want {m:?}"
                        ));
                    }
                }
                Op::WalkAny { asid, vpn } => {
                    let vpn =
                        aslr_vpn(self.aslr, asid, vpn, Vpn(vpn + 0x10_0000), PageSize::Size4K);
                    let want = reference_lookup(&live, asid, vpn);
                    d.prefetch_early(asid, vpn);
                    d.prefetch(asid, vpn, &mem);
                    let got = d.walk(asid, vpn, &mut mem).mapping;
                    if got != want {
                        return Err(format!(
                            "op {i}: walk of {vpn:?} (asid {asid}) gave {got:?}, want {want:?}"
                        ));
                    }
                }
            }
        }
        // Everything still mapped must still translate; then unmapping all must leave nothing.
        for (asid, m) in &live {
            let got = d.walk(*asid, m.vpn, &mut mem).mapping;
            if got != Some(*m) {
                return Err(format!("final check: {m:?} (asid {asid}) gave {got:?}"));
            }
        }
        for (asid, m) in live.drain(..) {
            d.unmap(&mut phys, asid, m);
            d.prefetch_early(asid, m.vpn);
            d.prefetch(asid, m.vpn, &mem);
            if d.walk(asid, m.vpn, &mut mem).mapping.is_some() {
                return Err(format!("{m:?} still translates after unmap"));
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_registered_design_agrees_with_a_reference_map(
        ops in prop::collection::vec(op_strategy(), 1..300)
    ) {
        let cfg = Config::default();
        for info in REGISTRY {
            let mut phys = PhysMem::new(64 << 30);
            let outcome = build_and_visit(info.name, &cfg.designs, &mut phys, Conformance { ops: ops.clone(), cores: 1, aslr: None })
                .map_err(|e| TestCaseError::fail(format!("{}: cannot build: {e}", info.name)))?;
            prop_assert!(outcome.is_ok(), "design {}: {}", info.name, outcome.unwrap_err());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn every_registered_design_agrees_with_a_reference_map_walking_on_four_cores(
        ops in prop::collection::vec(op_strategy(), 1..300)
    ) {
        let cfg = Config::default();
        for info in REGISTRY {
            let mut phys = PhysMem::new(64 << 30);
            let outcome = build_and_visit(info.name, &cfg.designs, &mut phys, Conformance { ops: ops.clone(), cores: 4, aslr: None })
                .map_err(|e| TestCaseError::fail(format!("{}: cannot build: {e}", info.name)))?;
            prop_assert!(outcome.is_ok(), "design {} on 4 cores: {}", info.name, outcome.unwrap_err());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// `os.aslr`: pages at randomized addresses in the executable and mmap zones, the design
    /// told the layouts (LVM removes the bases); every design still agrees with the reference.
    #[test]
    fn every_registered_design_agrees_with_a_reference_map_under_aslr(
        ops in prop::collection::vec(op_strategy(), 1..300),
        seed in any::<u64>(),
    ) {
        let cfg = Config::default();
        for info in REGISTRY {
            let mut phys = PhysMem::new(64 << 30);
            let c = Conformance { ops: ops.clone(), cores: 1, aslr: Some(Aslr { seed }) };
            let outcome = build_and_visit(info.name, &cfg.designs, &mut phys, c)
                .map_err(|e| TestCaseError::fail(format!("{}: cannot build: {e}", info.name)))?;
            prop_assert!(outcome.is_ok(), "design {} with aslr: {}", info.name, outcome.unwrap_err());
        }
    }
}

#[test]
fn page_table_memory_returns_to_the_allocator_when_everything_is_unmapped() {
    struct Check;
    impl DesignVisitor for Check {
        type Output = (u64, u64);
        fn visit<D: Design + 'static>(self, mut d: D) -> (u64, u64) {
            let mut phys = PhysMem::new(8 << 30);
            let ms: Vec<Mapping> = (0..2000u64)
                .map(|i| Mapping {
                    vpn: Vpn(0x10_0000 + i * 7),
                    pfn: Pfn(i),
                    size: PageSize::Size4K,
                    writable: true,
                })
                .collect();
            for m in &ms {
                d.map(&mut phys, 0, *m).unwrap();
            }
            let full = d.footprint().bytes;
            for m in &ms {
                d.unmap(&mut phys, 0, *m);
            }
            (full, d.footprint().bytes)
        }
    }
    for info in REGISTRY {
        let mut phys = PhysMem::new(8 << 30);
        let (full, after) =
            build_and_visit(info.name, &Config::default().designs, &mut phys, Check).unwrap();
        assert!(
            full > after,
            "{}: page-table memory did not shrink ({full} -> {after})",
            info.name
        );
        assert!(
            after <= 64 << 10,
            "{}: {after} bytes left after unmapping everything",
            info.name
        );
    }
}
