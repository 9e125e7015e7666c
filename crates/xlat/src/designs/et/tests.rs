use super::*;
use crate::addr::{Vaddr, BASE_PAGE_BYTES};
use crate::config::Config;
use crate::mem::MemSystem;
use crate::mmu::{Coalescing, L1Organization, Mmu, TlbConfig, TlbOutcome};
use crate::os::{MapChange, Os, OsConfig, Placer};
use crate::trace::{prot, AccessKind};
use proptest::prelude::*;

const RW: u32 = prot::READ | prot::WRITE;

/// The engine's placer for a design, for driving the OS model by hand.
struct Coala<'a>(&'a mut Et);

impl Placer for Coala<'_> {
    fn place(&mut self, phys: &mut PhysMem, req: &PlaceRequest) -> Option<Pfn> {
        self.0.place(phys, req)
    }
}

/// An OS model with one process, an `et` design following its changes, and the THP mode.
struct Rig {
    os: Os,
    et: Et,
}

impl Rig {
    fn new(thp: &str) -> Rig {
        let mut cfg: OsConfig = Config::resolve(
            None,
            &[
                ("os.thp".to_string(), thp.to_string()),
                ("os.phys_mem_bytes".to_string(), "2GiB".to_string()),
            ],
        )
        .unwrap()
        .os;
        cfg.phys_mem_bytes = 2 << 30;
        let mut os = Os::new(&cfg, 1).unwrap();
        assert_eq!(os.process(1), 0);
        let et = Et::new(&EtConfig::default(), &mut os.phys).unwrap();
        Rig { os, et }
    }

    fn apply(&mut self, changes: Vec<MapChange>) {
        for ch in changes {
            match ch {
                MapChange::Map(a, m) => self.et.map(&mut self.os.phys, a, m).unwrap(),
                MapChange::Unmap(a, m) => self.et.unmap(&mut self.os.phys, a, m),
            }
        }
    }

    fn mmap(&mut self, va: u64, len: u64) {
        let mut ch = Vec::new();
        self.os.mmap(0, Vaddr(va), len, RW, 0x22, &mut ch).unwrap();
        self.apply(ch);
    }

    fn touch(&mut self, va: u64) -> Mapping {
        let mut ch = Vec::new();
        let m = match self.os.translate(0, Vaddr(va).vpn()) {
            Some(m) => m,
            None => self
                .os
                .fault_with(
                    0,
                    Vaddr(va),
                    AccessKind::Store,
                    &mut ch,
                    &mut Coala(&mut self.et),
                )
                .unwrap(),
        };
        self.apply(ch);
        m
    }

    fn stat(&self, key: &str) -> u64 {
        let mut out = Stats::new();
        self.et.stats(&mut out);
        out["et"][key].as_u64().unwrap()
    }

    /// `et.mapped_bytes_by_translation` as (4k, 64k, 2m, 32m).
    fn by_translation(&self) -> (u64, u64, u64, u64) {
        let mut out = Stats::new();
        self.et.stats(&mut out);
        let d = &out["et"]["mapped_bytes_by_translation"];
        let g = |k: &str| d[k].as_u64().unwrap();
        (g("4k"), g("64k"), g("2m"), g("32m"))
    }
}

const KIB64: u64 = 64 << 10;
const MIB2: u64 = 2 << 20;
const MIB32: u64 = 32 << 20;

#[test]
fn the_first_fault_in_an_empty_64k_group_lands_at_its_virtual_offset_and_15_more_complete_it_without_copies(
) {
    let mut r = Rig::new("never");
    let base = 0x4000_0000u64;
    r.mmap(base, 16 * KIB64);
    let group = base + 3 * KIB64;
    let first = r.touch(group + 5 * BASE_PAGE_BYTES);
    assert_eq!(first.pfn.0 % 16, 5, "block offset = virtual offset");
    let block = first.pfn.0 - 5;
    assert!(!r.et.is_marked(0, first));
    // The other 15, in a scrambled order: each lands at block + its offset, no copy, no
    // migration; the 16th write sets the bit on all 16.
    for j in [0u64, 15, 7, 1, 14, 2, 13, 3, 12, 4, 11, 6, 10, 8, 9] {
        let m = r.touch(group + j * BASE_PAGE_BYTES);
        assert_eq!(m.pfn.0, block + j, "page {j}");
    }
    assert_eq!(r.stat("placed_new_group_4k"), 1);
    assert_eq!(r.stat("placed_by_sibling_4k"), 15);
    assert_eq!(r.stat("groups_formed_64k"), 1);
    assert_eq!(r.by_translation(), (0, KIB64, 0, 0));
    let mut os_stats = Stats::new();
    r.os.stats(&mut os_stats);
    assert_eq!(os_stats["os"]["placed_by_design"], 16);
    assert_eq!(os_stats["os"]["bytes_copied"], 0);
    assert_eq!(os_stats["os"]["migrations"], 0);
    for j in 0..16 {
        let m =
            r.os.translate(0, Vaddr(group + j * BASE_PAGE_BYTES).vpn())
                .unwrap();
        assert!(r.et.is_marked(0, m), "page {j} marked");
    }
}

#[test]
fn the_first_2m_fault_in_an_empty_32m_group_lands_at_its_offset_and_15_more_complete_it() {
    let mut r = Rig::new("always");
    let base = 0x8000_0000u64;
    r.mmap(base, 2 * MIB32);
    let group = base + MIB32;
    let first = r.touch(group + 9 * MIB2 + 123);
    assert_eq!(first.size, PageSize::Size2M);
    assert_eq!(first.pfn.0 % 8192, 9 * 512);
    let block = first.pfn.0 - 9 * 512;
    for j in (0..16u64).filter(|j| *j != 9) {
        let m = r.touch(group + j * MIB2);
        assert_eq!(
            (m.size, m.pfn.0),
            (PageSize::Size2M, block + j * 512),
            "page {j}"
        );
    }
    assert_eq!(r.stat("placed_new_group_2m"), 1);
    assert_eq!(r.stat("placed_by_sibling_2m"), 15);
    assert_eq!(r.stat("groups_formed_32m"), 1);
    assert_eq!(r.by_translation(), (0, 0, 0, MIB32));
    let span = r.et.marked_group(0, first).unwrap();
    assert_eq!((span.vpn.0, span.pfn.0), (group >> 12, block));
    assert_eq!(span.size().bytes(), MIB32);
}

#[test]
fn a_2m_split_re_forms_32_groups_of_64k() {
    let mut r = Rig::new("always");
    let base = 0x8000_0000u64;
    r.mmap(base, MIB2);
    let huge = r.touch(base);
    assert_eq!(huge.size, PageSize::Size2M);
    assert_eq!(r.stat("groups_formed_64k"), 0);
    let mut ch = Vec::new();
    r.os.split(0, huge, PageSize::Size4K, &mut ch).unwrap();
    r.apply(ch);
    assert_eq!(r.stat("groups_formed_64k"), 32);
    assert_eq!(r.by_translation(), (0, MIB2, 0, 0));
    for j in 0..512 {
        let m = r.os.translate(0, Vpn(huge.vpn.0 + j)).unwrap();
        assert_eq!(m.pfn.0, huge.pfn.0 + j);
        assert!(r.et.is_marked(0, m), "4 KiB page {j}");
    }
}

#[test]
fn a_busy_target_frame_makes_the_fault_fall_back_and_the_group_stays_unmarked() {
    let mut r = Rig::new("never");
    let base = 0x4000_0000u64;
    r.mmap(base, KIB64);
    let first = r.touch(base);
    // Another allocation takes the soft-reserved frame of page 1.
    let stolen = Pfn(first.pfn.0 + 1);
    assert_eq!(r.os.phys.alloc_at(stolen, 0, FrameUse::Data), Some(stolen));
    let m = r.touch(base + BASE_PAGE_BYTES);
    assert_ne!(m.pfn, stolen);
    assert_eq!(r.stat("fallback_target_busy"), 1);
    for j in 2..16 {
        r.touch(base + j * BASE_PAGE_BYTES);
    }
    assert_eq!(r.stat("groups_formed_64k"), 0);
    assert!(!r.et.is_marked(0, first));
}

#[test]
fn without_coala_paging_the_os_policy_places_every_page() {
    let mut r = Rig::new("never");
    r.et.cfg.coala_paging = false;
    r.mmap(0x4000_0000, KIB64);
    for j in 0..16 {
        r.touch(0x4000_0000 + j * BASE_PAGE_BYTES);
    }
    assert_eq!(r.stat("place_requests_4k"), 0);
}

#[test]
fn a_permission_change_of_one_member_breaks_the_group_and_costs_16_invalidations() {
    let mut r = Rig::new("never");
    let base = 0x4000_0000u64;
    r.mmap(base, KIB64);
    for j in 0..16 {
        r.touch(base + j * BASE_PAGE_BYTES);
    }
    assert_eq!(r.stat("groups_formed_64k"), 1);
    let mut ch = Vec::new();
    r.os.mprotect(
        0,
        Vaddr(base + 4 * BASE_PAGE_BYTES),
        BASE_PAGE_BYTES,
        prot::READ,
        &mut ch,
    )
    .unwrap();
    r.apply(ch);
    assert_eq!(r.stat("groups_broken_64k"), 1);
    assert_eq!(r.stat("group_invalidations"), 15);
    assert_eq!(r.stat("invalidation_cycles"), 15 * 500);
    let m0 = r.os.translate(0, Vaddr(base).vpn()).unwrap();
    assert!(!r.et.is_marked(0, m0));
    // Restoring the permission completes the group again: it is re-formed.
    let mut ch = Vec::new();
    r.os.mprotect(
        0,
        Vaddr(base + 4 * BASE_PAGE_BYTES),
        BASE_PAGE_BYTES,
        RW,
        &mut ch,
    )
    .unwrap();
    r.apply(ch);
    assert!(r.et.is_marked(0, m0));
    assert_eq!(r.stat("groups_formed_64k"), 2);
}

#[test]
fn with_range_invalidation_a_broken_group_costs_no_extra_invalidations() {
    let mut phys = PhysMem::new(1 << 30);
    let cfg = EtConfig {
        range_invalidation: true,
        ..EtConfig::default()
    };
    let mut et = Et::new(&cfg, &mut phys).unwrap();
    for j in 0..16 {
        et.map(
            &mut phys,
            0,
            Mapping::writable(0x100 + j, 0x800 + j, PageSize::Size4K),
        )
        .unwrap();
    }
    et.unmap(
        &mut phys,
        0,
        Mapping::writable(0x105, 0x805, PageSize::Size4K),
    );
    assert!(et.take_broken_group().is_some());
    assert_eq!(et.os_cycles(), 0);
}

/// Whether the aligned group of 16 `size` pages holding `vpn` is valid for the contiguous bit
/// in `live` (16 present pages of `size`, frames contiguous from a group-aligned frame, one
/// permission): the reference the marks must follow.
fn group_valid(live: &[Mapping], vpn: u64, size: PageSize) -> bool {
    let step = size.base_pages();
    let first = vpn & !(16 * step - 1);
    let members: Vec<Mapping> = (0..16)
        .filter_map(|j| {
            live.iter()
                .find(|m| m.size == size && m.vpn.0 == first + j * step)
                .copied()
        })
        .collect();
    members.len() == 16
        && members[0].pfn.0.is_multiple_of(16 * step)
        && members.iter().enumerate().all(|(j, m)| {
            m.pfn.0 == members[0].pfn.0 + j as u64 * step && m.writable == members[0].writable
        })
}

fn n1_mmu() -> Mmu {
    Mmu::new(&TlbConfig {
        l1_organization: L1Organization::AnySize,
        coalescing: Coalescing::ContiguousBit,
        l1_max_span_bytes: KIB64,
        ..TlbConfig::default()
    })
}

fn tlb_holds(mmu: &mut Mmu, vpn: Vpn) -> bool {
    mmu.lookup_data_l1(0, vpn).is_some()
        || !matches!(mmu.lookup_data_after_l1_miss(0, vpn), TlbOutcome::Miss)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random writes of 4 KiB and 2 MiB leaves (frames either lined up for their group or
    /// anywhere), removals and permission changes: after every step a leaf is marked exactly
    /// when its group is valid, and after a change that breaks a marked group no TLB entry of
    /// any of its 16 pages survives (the engine's invalidation of the members).
    #[test]
    fn a_contiguous_bit_marks_exactly_the_valid_groups_and_a_broken_group_leaves_no_tlb_entry(
        ops in prop::collection::vec(
            (0u8..10, any::<bool>(), 0u64..40, prop::bool::weighted(0.97), prop::bool::weighted(0.99)),
            1..300,
        )
    ) {
        let mut phys = PhysMem::new(4 << 30);
        let mut et = Et::new(&EtConfig::default(), &mut phys).unwrap();
        let mut mmu = n1_mmu();
        let mem = MemSystem::new(&crate::mem::MemConfig::default());
        let mut walk_mem = MemSystem::new(&crate::mem::MemConfig::default());
        let mut live: Vec<Mapping> = Vec::new();
        // Mostly writes (so groups complete), then removals (op 8) and permission changes
        // (op 9). 4 KiB slots: two 64 KiB groups' worth and a half (vpn 0x1000..); 2 MiB slots:
        // vpn 0x10_0000.. (two 32 MiB groups' worth and a half).
        for (op, small, slot, aligned, writable) in ops {
            let (size, vpn) = if small {
                (PageSize::Size4K, 0x1000 + slot)
            } else {
                (PageSize::Size2M, 0x10_0000 + slot * 512)
            };
            let step = size.base_pages();
            let group_off = (vpn / step) % 16;
            let existing = live.iter().position(|m| m.vpn.0 == vpn && m.size == size);
            if op < 8 {
                if existing.is_some() {
                    continue;
                }
                // Lined-up frames sit at their virtual offset in a per-group block; others at
                // an odd place.
                let group_id = vpn / (16 * step);
                let pfn = if aligned {
                    (if size == PageSize::Size4K { 1 << 20 } else { 1 << 22 }) + (group_id % 64) * 16 * step * 2 + group_off * step
                } else {
                    (1 << 19) * 3 + (slot * 7 + 1) * step
                };
                if live.iter().any(|m| m.pfn.0 < pfn + step && pfn < m.pfn.0 + m.size.base_pages()) {
                    continue;
                }
                let m = Mapping { vpn: Vpn(vpn), pfn: Pfn(pfn), size, writable };
                et.map(&mut phys, 0, m).unwrap();
                live.push(m);
                // Cache it at once: entries from before a group forms must go when it breaks.
                let w = et.walk(0, m.vpn, &mut walk_mem).mapping.unwrap();
                mmu.fill_walked(&et, 0, m.vpn, w, false);
            } else {
                let Some(i) = existing else { continue };
                let m = live.swap_remove(i);
                // Warm the TLB with the group (span or pages) before the change.
                for other in &live {
                    if other.size == m.size && other.vpn.0 / (16 * step) == m.vpn.0 / (16 * step) {
                        let w = et.walk(0, other.vpn, &mut walk_mem).mapping.unwrap();
                        mmu.fill_walked(&et, 0, other.vpn, w, false);
                    }
                }
                let w = et.walk(0, m.vpn, &mut walk_mem).mapping.unwrap();
                mmu.fill_walked(&et, 0, m.vpn, w, false);
                let was_marked = et.is_marked(0, m);
                et.unmap(&mut phys, 0, m);
                mmu.invalidate(0, m);
                let group = et.take_broken_group();
                prop_assert_eq!(group.is_some(), was_marked);
                if let Some(g) = group {
                    crate::engine::invalidate_group_members(&mut mmu, &mem, 0, g, m.vpn, |_| {});
                    for j in 0..16 {
                        let v = Vpn(g.vpn.0 + j * step);
                        prop_assert!(!tlb_holds(&mut mmu, v), "TLB entry of member {} survived", j);
                    }
                }
                if op == 9 {
                    // A permission change: the OS re-installs the page with the other permission.
                    let n = Mapping { writable: !m.writable, ..m };
                    et.map(&mut phys, 0, n).unwrap();
                    live.push(n);
                }
            }
            for m in &live {
                prop_assert_eq!(
                    et.is_marked(0, *m),
                    group_valid(&live, m.vpn.0, m.size),
                    "{:?}", m
                );
            }
        }
    }
}

#[test]
fn the_n1_l1_holds_a_32m_span_as_its_2m_page_and_the_l2_holds_the_span() {
    let mut phys = PhysMem::new(4 << 30);
    let mut et = Et::new(&EtConfig::default(), &mut phys).unwrap();
    let mut mem = MemSystem::new(&crate::mem::MemConfig::default());
    for j in 0..16 {
        et.map(
            &mut phys,
            0,
            Mapping::writable(8192 + j * 512, 8192 * 4 + j * 512, PageSize::Size2M),
        )
        .unwrap();
    }
    let mut mmu = n1_mmu();
    let w = et.walk(0, Vpn(8192 + 3), &mut mem).mapping.unwrap();
    mmu.fill_walked(&et, 0, Vpn(8192 + 3), w, false);
    // The L1 holds the 2 MiB page accessed, not the span ...
    assert!(mmu.lookup_data_l1(0, Vpn(8192 + 100)).is_some());
    assert!(mmu.lookup_data_l1(0, Vpn(8192 + 512)).is_none());
    // ... the L2 the whole 32 MiB span.
    assert!(matches!(
        mmu.lookup_data_after_l1_miss(0, Vpn(8192 + 15 * 512)),
        TlbOutcome::L2Hit(m) if m.size == PageSize::Size2M && m.pfn.0 == 8192 * 4 + 15 * 512
    ));
    // A 64 KiB span fits the L1.
    for j in 0..16 {
        et.map(
            &mut phys,
            0,
            Mapping::writable(0x100 + j, 0x800 + j, PageSize::Size4K),
        )
        .unwrap();
    }
    let w = et.walk(0, Vpn(0x100), &mut mem).mapping.unwrap();
    mmu.fill_walked(&et, 0, Vpn(0x100), w, false);
    assert!(mmu.lookup_data_l1(0, Vpn(0x10f)).is_some());
}

fn run_et(extra: &[(&str, &str)]) -> serde_json::Value {
    let mut set: Vec<(String, String)> = [
        ("sim.design", "et"),
        ("sim.refs", "60000"),
        ("workload.name", "gups"),
        ("workload.footprint", "96MiB"),
        ("os.phys_mem_bytes", "8GiB"),
        ("tlb.l1_organization", "any_size"),
        ("tlb.coalescing", "contiguous_bit"),
        ("tlb.l1_max_span_bytes", "65536"),
        // Placement happens in the first-touch phase, which these tests count.
        ("sim.warmup_refs", "0"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    set.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let cfg = Config::resolve(None, &set).unwrap();
    crate::engine::run_workload(&cfg).unwrap_or_else(|e| panic!("{extra:?}: {e}"))
}

#[test]
fn et_passes_the_oracle_with_4k_only_and_thp_unfragmented_and_at_fmfi_half_and_99_percent() {
    for thp in ["never", "always"] {
        for (mode, fmfi) in [
            ("pin", "0"),
            ("alternating", "0.5"),
            ("alternating", "0.99"),
            ("fill", "0.5"),
            ("fill", "0.99"),
        ] {
            let r = run_et(&[
                ("os.thp", thp),
                ("os.fragmenter.mode", mode),
                ("os.fmfi_target", fmfi),
            ]);
            let what = format!("thp {thp}, {mode} {fmfi}");
            assert_eq!(r["oracle"]["mismatches"], 0, "{what}");
            assert!(r["oracle"]["checked"].as_u64().unwrap() >= 60000, "{what}");
            let et = &r["et"];
            let placed = et["placed_by_sibling_4k"].as_u64().unwrap()
                + et["placed_new_group_4k"].as_u64().unwrap()
                + et["placed_by_sibling_2m"].as_u64().unwrap()
                + et["placed_new_group_2m"].as_u64().unwrap();
            assert_eq!(
                r["os"]["placed_by_design"].as_u64().unwrap(),
                placed,
                "{what}"
            );
            if fmfi == "0" {
                // Unfragmented: every group of the footprint forms (64 KiB groups with 4 KiB
                // pages; 32 MiB groups of THPs where whole 32 MiB ranges are mapped).
                if thp == "never" {
                    assert!(
                        et["groups_formed_64k"].as_u64().unwrap() >= 96 * 16 - 16,
                        "{what}"
                    );
                    assert!(
                        r["tlb"]["l2_coalesced_hits"].as_u64().unwrap() > 0,
                        "{what}"
                    );
                } else {
                    assert!(et["groups_formed_32m"].as_u64().unwrap() >= 2, "{what}");
                }
            }
        }
    }
}

#[test]
fn breaking_a_group_in_a_run_invalidates_all_16_tlb_entries() {
    use crate::trace::Event;
    let base = 0x4000_0000u64;
    let mut events = vec![Event::Mmap {
        addr: Vaddr(base),
        len: KIB64,
        prot: RW,
        flags: 0x22,
    }];
    for j in 0..16 {
        events.push(Event::Access {
            kind: AccessKind::Store,
            va: Vaddr(base + j * BASE_PAGE_BYTES),
            size: 8,
            instrs: 1,
            dep: 0,
        });
    }
    events.push(Event::Mprotect {
        addr: Vaddr(base),
        len: BASE_PAGE_BYTES,
        prot: prot::READ,
    });
    let cfg = Config::resolve(
        None,
        &[
            ("sim.design".to_string(), "et".to_string()),
            ("os.thp".to_string(), "never".to_string()),
            ("tlb.coalescing".to_string(), "contiguous_bit".to_string()),
        ],
    )
    .unwrap();
    struct Events(std::vec::IntoIter<Event>);
    impl crate::trace::EventSource for Events {
        fn fill(
            &mut self,
            out: &mut Vec<Event>,
            max: usize,
        ) -> Result<usize, crate::trace::SourceError> {
            let before = out.len();
            out.extend(self.0.by_ref().take(max));
            Ok(out.len() - before)
        }
        fn name(&self) -> String {
            "events".into()
        }
    }
    let r = crate::engine::run(&cfg, Box::new(Events(events.into_iter()))).unwrap();
    assert_eq!(r["et"]["groups_formed_64k"], 1);
    assert_eq!(r["et"]["groups_broken_64k"], 1);
    // One for the re-protected page, 15 for the rest of its group.
    assert_eq!(r["tlb"]["invalidations"], 16);
    assert_eq!(r["et"]["invalidation_cycles"], 15 * 500);
}

// ---- CoalaKhugepaged ----

use super::khugepaged::{CoalaKhugepaged, CoalaKhugepagedConfig};
use super::leshy::{Hint, Region};

fn hint(va: u64, level: u8) -> Hint {
    Hint {
        region: Region {
            asid: 0,
            vpn: va >> 12,
            level,
        },
        samples: 1,
    }
}

fn daemon(pages_to_scan: u64, hints: Vec<Hint>) -> CoalaKhugepaged {
    let mut k = CoalaKhugepaged::new(&CoalaKhugepagedConfig {
        enabled: true,
        sleep_cycles: 1000,
        pages_to_scan,
    });
    k.set_hints(hints);
    k
}

impl Rig {
    fn wake(&mut self, k: &mut CoalaKhugepaged) {
        let mut ch = Vec::new();
        k.wake(&mut self.os, &mut ch);
        self.apply(ch);
    }

    fn os_stat(&self, key: &str) -> u64 {
        let mut out = Stats::new();
        self.os.stats(&mut out);
        out["os"][key].as_u64().unwrap()
    }
}

#[test]
fn a_32m_hint_is_promoted_by_copy_into_16_contiguous_2m_pages_that_form_one_group() {
    let mut r = Rig::new("never");
    let base = 0x8000_0000u64;
    r.mmap(base, 2 * MIB32);
    // 100 scattered 4 KiB pages in the first 32 MiB (CoalaPaging's 64 KiB groups).
    for i in 0..100u64 {
        r.touch(base + i * 81 * BASE_PAGE_BYTES);
    }
    let mut k = daemon(8192, vec![hint(base, 3)]);
    r.wake(&mut k);
    assert_eq!(k.c.promotions_32m, 1);
    assert_eq!(k.c.copies, 1);
    assert_eq!(
        k.c.bytes_copied,
        100 * BASE_PAGE_BYTES,
        "only mapped data is copied"
    );
    assert_eq!(r.os_stat("bytes_copied"), 100 * BASE_PAGE_BYTES);
    assert_eq!(r.stat("groups_formed_32m"), 1);
    assert_eq!(r.by_translation(), (0, 0, 0, MIB32));
    let first = r.os.translate(0, Vpn(base >> 12)).unwrap();
    assert_eq!(first.size, PageSize::Size2M);
    assert_eq!(first.pfn.0 % 8192, 0, "a fresh 32 MiB block");
    for j in 0..16 {
        let m = r.os.translate(0, Vpn((base >> 12) + j * 512)).unwrap();
        assert_eq!((m.size, m.pfn.0), (PageSize::Size2M, first.pfn.0 + j * 512));
        assert!(r.et.is_marked(0, m));
    }
    // A second wake-up finds it done: no progress, no copy.
    r.wake(&mut k);
    assert_eq!((k.c.promotions_32m, k.c.copies), (1, 1));
}

#[test]
fn a_2m_hint_collapses_its_range_and_a_64k_hint_collapses_the_enclosing_2m_range() {
    let mut r = Rig::new("never");
    let base = 0x8000_0000u64;
    r.mmap(base, 4 * MIB2);
    for i in 0..20u64 {
        r.touch(base + i * 7 * BASE_PAGE_BYTES);
        r.touch(base + 2 * MIB2 + i * 11 * BASE_PAGE_BYTES);
    }
    // 2 MiB hint on the first range; 64 KiB hint inside the third.
    let mut k = daemon(
        8192,
        vec![hint(base, 2), hint(base + 2 * MIB2 + 3 * KIB64, 1)],
    );
    r.wake(&mut k);
    assert_eq!(k.c.promotions_2m, 2);
    for va in [base, base + 2 * MIB2] {
        assert_eq!(
            r.os.translate(0, Vaddr(va).vpn()).unwrap().size,
            PageSize::Size2M
        );
    }
    // The untouched second range was not hinted and stays unmapped.
    assert!(r.os.translate(0, Vaddr(base + MIB2).vpn()).is_none());
    assert_eq!(r.stat("groups_formed_32m"), 0);
}

#[test]
fn a_wake_up_stops_after_pages_to_scan_collapsed_pages_and_the_next_resumes_hottest_first() {
    let mut r = Rig::new("never");
    let base = 0x8000_0000u64;
    r.mmap(base, 3 * MIB2);
    for j in 0..3 {
        r.touch(base + j * MIB2);
    }
    // Budget of one collapse; the hottest range is collapsed first.
    let mut k = daemon(
        512,
        vec![
            hint(base + 2 * MIB2, 2),
            hint(base, 2),
            hint(base + MIB2, 2),
        ],
    );
    r.wake(&mut k);
    let size = |r: &Rig, j: u64| {
        r.os.translate(0, Vaddr(base + j * MIB2).vpn())
            .unwrap()
            .size
    };
    assert_eq!(k.c.promotions_2m, 1);
    assert_eq!(size(&r, 2), PageSize::Size2M);
    assert_eq!(size(&r, 0), PageSize::Size4K);
    r.wake(&mut k);
    assert_eq!(size(&r, 0), PageSize::Size2M);
    assert_eq!(size(&r, 1), PageSize::Size4K);
    // A hint already done does not count as progress: the third wake-up passes the first
    // two and collapses the last.
    r.wake(&mut k);
    assert_eq!(size(&r, 1), PageSize::Size2M);
    assert_eq!((k.c.wakeups, k.c.promotions_2m), (3, 3));
}

#[test]
fn a_32m_hint_that_cannot_be_promoted_whole_falls_back_to_2m_collapses() {
    let mut r = Rig::new("never");
    let base = 0x8000_0000u64;
    r.mmap(base, MIB32);
    for j in 0..16 {
        r.touch(base + j * MIB2 + 5 * BASE_PAGE_BYTES);
    }
    // Read-only last 2 MiB: the 32 MiB range spans two VMAs.
    let mut ch = Vec::new();
    r.os.mprotect(0, Vaddr(base + 15 * MIB2), MIB2, prot::READ, &mut ch)
        .unwrap();
    r.apply(ch);
    let mut k = daemon(1 << 20, vec![hint(base, 3)]);
    r.wake(&mut k);
    assert_eq!((k.c.promotions_32m, k.c.fallbacks_32m), (0, 1));
    assert_eq!(k.c.promotions_2m, 16, "each 2 MiB range lies in one VMA");
    assert_eq!(r.stat("groups_formed_32m"), 0);
}

#[test]
fn the_daemon_wakes_every_sleep_cycles() {
    let mut r = Rig::new("never");
    let mut k = daemon(8192, vec![]);
    let mut ch = Vec::new();
    k.tick(&mut r.os, 999, &mut ch);
    assert_eq!(k.c.wakeups, 0);
    k.tick(&mut r.os, 1000, &mut ch);
    k.tick(&mut r.os, 3500, &mut ch);
    assert_eq!(k.c.wakeups, 3);
}

// ---- Leshy and CoalaKhugepaged in runs (oracle on) ----

#[test]
fn online_leshy_steers_coala_khugepaged_and_every_translation_passes_the_oracle() {
    for thp in ["never", "always"] {
        let r = run_et(&[
            ("os.thp", thp),
            ("et.leshy.mode", "online"),
            ("et.leshy.tlb_entries", "8"),
            ("et.leshy.sample_period", "64"),
            // Within the run's cycles by the core's own clock (the OS clock since model
            // version 5; the `simple` formula's, about twice as many, before).
            ("et.leshy.epoch_cycles", "1000000"),
            ("et.khugepaged.enabled", "true"),
            ("et.khugepaged.sleep_cycles", "250000"),
        ]);
        let what = format!("thp {thp}");
        assert_eq!(r["oracle"]["mismatches"], 0, "{what}");
        if thp == "always" {
            // CoalaPaging already maps the footprint with 32 MiB groups: next to no walks.
            continue;
        }
        let l = &r["et"]["leshy"];
        let k = &r["et"]["khugepaged"];
        assert!(l["samples"].as_u64().unwrap() > 100, "{what}: {l}");
        assert!(l["epochs"].as_u64().unwrap() >= 1, "{what}: {l}");
        assert!(k["wakeups"].as_u64().unwrap() >= 1, "{what}: {k}");
        // 96 MiB of random references do not fit 8 entries of less than 32 MiB: 32 MiB hints,
        // promoted by copy.
        assert!(l["hinted_32m_bytes"].as_u64().unwrap() > 0, "{what}: {l}");
        assert!(k["promotions_32m"].as_u64().unwrap() >= 1, "{what}: {k}");
        assert!(k["bytes_copied"].as_u64().unwrap() > 0, "{what}: {k}");
        assert!(
            r["et"]["groups_formed_32m"].as_u64().unwrap() >= 1,
            "{what}"
        );
    }
}

#[test]
fn a_profiling_run_writes_hints_that_an_offline_run_follows_under_the_oracle() {
    let dir = std::env::temp_dir().join(format!("xlat-leshy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("hints.txt");
    let path = file.to_str().unwrap();
    // Profiling with 4 KiB pages, where the walks show which ranges are hot.
    let p = run_et(&[
        ("os.thp", "never"),
        ("et.leshy.mode", "profile"),
        ("et.leshy.tlb_entries", "4"),
        ("et.leshy.sample_period", "64"),
        ("et.leshy.coverage", "0.5"),
        ("et.leshy.hints_out", path),
    ]);
    let hints = super::leshy::parse_hints(&std::fs::read_to_string(&file).unwrap(), "f").unwrap();
    assert!(!hints.is_empty());
    assert_eq!(
        p["et"]["leshy"]["hint_entries"].as_u64().unwrap(),
        hints.len() as u64
    );
    let o = run_et(&[
        ("os.thp", "always"),
        ("et.leshy.mode", "offline"),
        ("et.leshy.hints_file", path),
    ]);
    assert_eq!(o["oracle"]["mismatches"], 0);
    let l = &o["et"]["leshy"];
    assert_eq!(l["hint_entries"].as_u64().unwrap(), hints.len() as u64);
    // gups touches the whole 96 MiB: pages outside the hinted ranges are placed by the OS
    // policy, and THP faults outside ranges hinted 2 MiB or larger fall back to 4 KiB.
    let hinted_2m_up =
        l["hinted_2m_bytes"].as_u64().unwrap() + l["hinted_32m_bytes"].as_u64().unwrap();
    assert!(hinted_2m_up < 96 << 20);
    assert!(l["thp_refused"].as_u64().unwrap() > 0, "{l}");
    assert!(l["placements_unhinted"].as_u64().unwrap() > 0, "{l}");
    assert!(o["os"]["faults_2m"].as_u64().unwrap() <= hinted_2m_up >> 21);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn leshy_settings_that_cannot_work_are_errors_naming_the_key() {
    for (set, key) in [
        (vec![("et.leshy.mode", "offline")], "et.leshy.hints_file"),
        (vec![("et.leshy.mode", "online")], "et.khugepaged.enabled"),
        (vec![("et.khugepaged.enabled", "true")], "et.leshy.mode"),
        (
            vec![("et.leshy.online_slack", "1.5")],
            "et.leshy.online_slack",
        ),
    ] {
        let set: Vec<(String, String)> = set
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain([("sim.design".to_string(), "et".to_string())])
            .collect();
        let e = Config::resolve(None, &set).unwrap_err().to_string();
        assert!(e.contains(key), "{e}");
    }
}
