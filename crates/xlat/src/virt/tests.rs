use super::*;
use crate::config::Config;
use crate::engine::{run, run_workload, SimError};
use crate::trace::{Event, EventSource, SourceError};
use serde_json::Value;

fn o(k: &str, v: &str) -> (String, String) {
    (k.to_string(), v.to_string())
}

fn cfg_with(extra: &[(&str, &str)]) -> Result<Config, crate::config::ConfigError> {
    let mut kv = vec![
        o("sim.refs", "30000"),
        o("workload.footprint", "16MiB"),
        o("os.phys_mem_bytes", "256MiB"),
        o("virt.enabled", "true"),
        o("virt.host_os.phys_mem_bytes", "512MiB"),
        // The host's faults happen in the guest's first-touch phase: measure from the start.
        o("sim.warmup_refs", "0"),
    ];
    kv.extend(extra.iter().map(|(k, v)| o(k, v)));
    Config::resolve(None, &kv)
}

/// Events from a list.
struct Events(std::vec::IntoIter<Event>);

impl EventSource for Events {
    fn fill(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, SourceError> {
        let before = out.len();
        out.extend(self.0.by_ref().take(max));
        Ok(out.len() - before)
    }
    fn name(&self) -> String {
        "events".into()
    }
}

const PAGES: u64 = 16;

/// `PAGES` 4 KiB pages that the guest maps at mmap (eager paging; the range is not 2 MiB
/// aligned, so every guest page is 4 KiB), each loaded once: `PAGES` TLB misses, no faults.
fn one_load_per_page(host_thp: &str, extra: &[(&str, &str)]) -> Value {
    let base = 0x7000_0000_1000u64;
    let mut events = vec![Event::Mmap {
        addr: Vaddr(base),
        len: PAGES * BASE_PAGE_BYTES,
        prot: prot::READ | prot::WRITE,
        flags: 0,
    }];
    for i in 0..PAGES {
        events.push(Event::Access {
            kind: AccessKind::Load,
            va: Vaddr(base + i * BASE_PAGE_BYTES + 8),
            size: 8,
            instrs: 1,
            dep: 0,
        });
    }
    let mut kv = vec![
        ("os.phys_mem_bytes", "64MiB"),
        ("os.policy", "eager"),
        ("radix.pwc_entries", "0"),
        ("virt.host.radix.pwc_entries", "0"),
        ("virt.ntlb_entries", "0"),
        ("virt.host_prefault", "true"),
        ("virt.host_os.thp", host_thp),
    ];
    kv.extend_from_slice(extra);
    let cfg = cfg_with(&kv).unwrap();
    run(&cfg, Box::new(Events(events.into_iter()))).unwrap()
}

#[test]
fn a_cold_walk_of_a_4_level_guest_on_a_4_level_host_with_all_caches_off_makes_24_references() {
    let r = one_load_per_page("never", &[]);
    let (walk, virt) = (&r["walk"], &r["virt"]);
    assert_eq!(walk["count"], PAGES);
    assert_eq!(walk["fault_walks"], 0);
    assert_eq!(virt["host_faults"], 0, "the host was prefaulted");
    assert_eq!(walk["mem_accesses"], 24 * PAGES);
    // By dimension: 4 guest reads, 4 x 4 host reads for them, 4 host reads for the data page.
    assert_eq!(virt["guest_pt_refs"], 4 * PAGES);
    assert_eq!(virt["host_refs_for_guest_pt"], 16 * PAGES);
    assert_eq!(virt["host_refs_for_data"], 4 * PAGES);
    assert_eq!(virt["host_os"]["mapped_2m"], 0);
    assert_eq!(r["oracle"]["mismatches"], 0);
}

#[test]
fn with_2_mib_host_pages_the_cold_walk_makes_19_references() {
    let r = one_load_per_page("always", &[]);
    let (walk, virt) = (&r["walk"], &r["virt"]);
    assert_eq!(walk["count"], PAGES);
    assert!(virt["host_os"]["mapped_2m"].as_u64().unwrap() > 0);
    assert_eq!(walk["mem_accesses"], 19 * PAGES);
    assert_eq!(virt["guest_pt_refs"], 4 * PAGES);
    assert_eq!(virt["host_refs_for_guest_pt"], 12 * PAGES);
    assert_eq!(virt["host_refs_for_data"], 3 * PAGES);
}

#[test]
fn the_nested_tlb_and_host_pwcs_cut_the_2d_walk_and_are_counted() {
    let off = one_load_per_page("never", &[]);
    let on = one_load_per_page(
        "never",
        &[
            ("virt.ntlb_entries", "16"),
            ("virt.host.radix.pwc_entries", "32"),
        ],
    );
    let (a, b) = (&off["virt"], &on["virt"]);
    // The guest pages' four table pages are the same for every walk: after the first walk
    // each guest reference's host translation hits the nested TLB.
    assert_eq!(b["ntlb_misses_guest_pt"], 4);
    assert_eq!(b["ntlb_hits_guest_pt"], 4 * (PAGES - 1));
    assert_eq!(b["ntlb_misses_data"], PAGES);
    // One host walk per guest table page; the host PWCs shorten all but the first.
    assert_eq!(b["host_walks_for_guest_pt"], 4);
    assert!(b["host_refs_for_guest_pt"].as_u64().unwrap() < 16);
    assert!(b["host"]["radix"]["pwc_pde_hits"].as_u64().unwrap() > 0);
    assert!(b["host_refs_for_data"].as_u64().unwrap() < a["host_refs_for_data"].as_u64().unwrap());
    assert_eq!(a["ntlb_hits_guest_pt"], 0);
    assert_eq!(
        a["ntlb_misses_guest_pt"], 0,
        "an absent nested TLB is not probed"
    );
}

fn nested_run(design: &str, host: &str, workload: &str, guest_thp: &str, host_thp: &str) -> Value {
    // RMM's range TLB is not built for nested runs (Config::validate): its tables only.
    let profile = if design == "rmm" { "none" } else { "auto" };
    let cfg = cfg_with(&[
        ("sim.design", design),
        ("sim.profile", profile),
        ("virt.host_design", host),
        ("workload.name", workload),
        ("os.thp", guest_thp),
        ("virt.host_os.thp", host_thp),
    ])
    .unwrap();
    run_workload(&cfg).unwrap_or_else(|e| {
        panic!("{design} on {host}, {workload}, guest thp {guest_thp}, host thp {host_thp}: {e}")
    })
}

/// What every nested run must show: the oracle ran, the host faulted guest memory in, and
/// the references by dimension add up to the walks' references.
fn assert_consistent(r: &Value, charged: bool) {
    assert_eq!(r["oracle"]["mismatches"], 0);
    assert!(r["oracle"]["checked"].as_u64().unwrap() >= r["refs"].as_u64().unwrap());
    let v = &r["virt"];
    assert!(v["host_faults"].as_u64().unwrap() > 0);
    if charged {
        let w = &r["walk"];
        let walk_refs =
            w["mem_accesses"].as_u64().unwrap() + w["post_fault_mem_accesses"].as_u64().unwrap();
        assert_eq!(v["refs_total"].as_u64().unwrap(), walk_refs);
        assert_eq!(v["walks"], w["count"]);
        assert_eq!(v["walk_cycles"], w["cycles"]);
    }
}

#[test]
fn radix_on_radix_passes_the_oracle_with_4k_and_2m_pages_on_each_side() {
    for workload in ["gups", "kv"] {
        for guest_thp in ["never", "always"] {
            for host_thp in ["never", "always"] {
                let r = nested_run("radix", "radix", workload, guest_thp, host_thp);
                assert_consistent(&r, true);
                let v = &r["virt"];
                assert_eq!(
                    v["host_os"]["mapped_2m"].as_u64().unwrap() > 0,
                    host_thp == "always",
                    "{workload} {guest_thp} {host_thp}"
                );
                assert_eq!(
                    r["os"]["mapped_2m"].as_u64().unwrap() > 0,
                    guest_thp == "always",
                    "{workload} {guest_thp} {host_thp}"
                );
            }
        }
    }
}

#[test]
fn every_registered_guest_design_runs_on_a_radix_host_under_the_oracle() {
    for info in crate::designs::REGISTRY {
        let r = nested_run(info.name, "radix", "gups", "always", "never");
        assert_consistent(&r, info.name != "perfect_tlb");
    }
}

#[test]
fn every_design_that_walks_a_table_can_be_the_host() {
    for info in crate::designs::REGISTRY {
        if info.name == "perfect_tlb" {
            continue;
        }
        for host_thp in ["never", "always"] {
            let r = nested_run("radix", info.name, "gups", "never", host_thp);
            assert_consistent(&r, true);
            assert_eq!(r["virt"]["host_design"], info.name);
            assert!(r["virt"]["host"][info.name].is_object(), "{}", info.name);
        }
    }
}

#[test]
fn a_design_without_a_table_is_refused_as_host_naming_the_key() {
    let cfg = cfg_with(&[("virt.host_design", "perfect_tlb")]).unwrap();
    match run_workload(&cfg) {
        Err(SimError::Config(msg)) => {
            assert!(msg.contains("virt.host_design"), "{msg}");
            assert!(msg.contains("cannot be a host"), "{msg}");
        }
        other => panic!("expected a configuration error, got {other:?}"),
    }
    let err = cfg_with(&[("virt.host_design", "radx")]).unwrap_err();
    assert!(err.0.contains("virt.host_design"), "{err}");
}

#[test]
fn a_host_smaller_than_guest_physical_memory_is_refused_naming_both_keys() {
    let err = cfg_with(&[("virt.host_os.phys_mem_bytes", "128MiB")]).unwrap_err();
    assert!(err.0.contains("virt.host_os.phys_mem_bytes"), "{err}");
    assert!(err.0.contains("os.phys_mem_bytes"), "{err}");
    // Not checked while nested translation is off.
    cfg_with(&[
        ("virt.enabled", "false"),
        ("virt.host_os.phys_mem_bytes", "128MiB"),
    ])
    .unwrap();
    let err = cfg_with(&[("virt.ntlb_entries", "100000")]).unwrap_err();
    assert!(err.0.contains("virt.ntlb_entries"), "{err}");
    let err = cfg_with(&[("virt.host.radix.levels", "3")]).unwrap_err();
    assert!(err.0.contains("virt.host.radix.levels"), "{err}");
}

#[test]
fn a_host_out_of_memory_stops_the_run_with_an_error_naming_the_host() {
    // The host's memory equals the guest's: guest data plus the host's own page tables do
    // not fit once the guest touches nearly all of its memory.
    let cfg = cfg_with(&[
        ("os.phys_mem_bytes", "64MiB"),
        ("virt.host_os.phys_mem_bytes", "64MiB"),
        ("virt.host_prefault", "true"),
    ])
    .unwrap();
    match run_workload(&cfg) {
        Err(SimError::Config(msg)) => assert!(msg.contains("virt.host_os"), "{msg}"),
        other => panic!("expected the host to run out of memory, got {other:?}"),
    }
}

#[test]
fn host_reclaim_to_swap_flushes_combined_translations_and_keeps_the_oracle() {
    let cfg = cfg_with(&[
        // The guest swaps too, so it ends up touching all of its memory, which the host's
        // equal memory cannot hold beside the host's own page tables.
        ("sim.refs", "100000"),
        ("workload.footprint", "160MiB"),
        ("os.phys_mem_bytes", "128MiB"),
        ("os.swap.bytes", "256MiB"),
        ("virt.host_os.phys_mem_bytes", "128MiB"),
        ("virt.host_os.swap.bytes", "256MiB"),
    ])
    .unwrap();
    let r = run_workload(&cfg).unwrap();
    assert_consistent(&r, true);
    let v = &r["virt"];
    assert!(v["host_os"]["swap"]["swap_outs"].as_u64().unwrap() > 0);
    assert!(v["host_flushes"].as_u64().unwrap() > 0);
}

#[test]
fn host_khugepaged_collapses_flush_combined_translations_and_keep_the_oracle() {
    // Guest 2 MiB pages over 4 KiB host pages are cached as 4 KiB combined entries; once the
    // host collapses the range into a 2 MiB page, the composition is one 2 MiB translation,
    // so an entry kept past the collapse would fail the oracle.
    let cfg = cfg_with(&[
        ("sim.refs", "100000"),
        ("workload.footprint", "8MiB"),
        ("os.thp", "always"),
        ("virt.host_os.thp", "never"),
        ("virt.host_os.khugepaged.enabled", "true"),
        ("virt.host_os.khugepaged.interval_cycles", "20000"),
        ("virt.host_os.khugepaged.max_ptes_none", "511"),
    ])
    .unwrap();
    let r = run_workload(&cfg).unwrap();
    assert_consistent(&r, true);
    let v = &r["virt"];
    assert!(v["host_os"]["khugepaged"]["collapses"].as_u64().unwrap() > 0);
    assert!(v["host_flushes"].as_u64().unwrap() > 0);
    assert!(v["host_os"]["mapped_2m"].as_u64().unwrap() > 0);
}

#[test]
fn nested_runs_are_deterministic_however_they_are_chunked() {
    let cfg = cfg_with(&[("virt.host_os.fmfi_target", "0.5"), ("os.thp", "always")]).unwrap();
    let strip = |mut v: Value| {
        v.as_object_mut().unwrap().remove("sim");
        v
    };
    let whole = run_workload(&cfg).unwrap();
    let source = crate::workloads::create(&cfg.workload, cfg.sim.refs, cfg.sim.seed).unwrap();
    let mut sim = crate::engine::Simulation::new(&cfg, source).unwrap();
    while !sim.step(333).unwrap() {}
    assert_eq!(strip(whole.clone()), strip(sim.record()));
    assert_eq!(strip(whole), strip(run_workload(&cfg).unwrap()));
}

#[test]
fn a_native_run_has_no_virt_section() {
    let cfg = cfg_with(&[("virt.enabled", "false")]).unwrap();
    let r = run_workload(&cfg).unwrap();
    assert!(r.get("virt").is_none());
    assert_eq!(r["config"]["virt"]["enabled"], false);
}

#[test]
fn the_combined_translation_takes_the_smaller_page_size() {
    let two_m = PageSize::Size2M.base_pages();
    // Guest 2 MiB page at gVPN 0x400 -> gPFN 0x1000; host 4 KiB page of gPFN 0x1003 -> 0x77.
    let g = Mapping::writable(0x400, 0x1000, PageSize::Size2M);
    let h = Mapping::writable(0x1003, 0x77, PageSize::Size4K);
    assert_eq!(
        combine(Vpn(0x403), g, h),
        Mapping::writable(0x403, 0x77, PageSize::Size4K)
    );
    // Guest 4 KiB page inside a host 2 MiB page.
    let g = Mapping {
        writable: false,
        ..Mapping::writable(0x9, 0x1005, PageSize::Size4K)
    };
    let h = Mapping::writable(0x1000, 4 * two_m, PageSize::Size2M);
    let c = combine(Vpn(0x9), g, h);
    assert_eq!(
        (c.vpn, c.pfn, c.size),
        (Vpn(0x9), Pfn(4 * two_m + 5), PageSize::Size4K)
    );
    assert!(!c.writable, "a read-only guest page stays read-only");
    // Both 2 MiB: one 2 MiB entry.
    let g = Mapping::writable(two_m, 3 * two_m, PageSize::Size2M);
    let h = Mapping::writable(3 * two_m, 8 * two_m, PageSize::Size2M);
    assert_eq!(
        combine(Vpn(two_m + 17), g, h),
        Mapping::writable(two_m, 8 * two_m, PageSize::Size2M)
    );
}

#[test]
fn the_nested_tlb_evicts_the_least_recently_used_entry() {
    let mut t = Ntlb::new(2, 1);
    let m = |v: u64| Mapping::writable(v, v + 100, PageSize::Size4K);
    t.fill(m(1));
    t.fill(m(2));
    assert_eq!(t.lookup(Vpn(1)), Some(m(1)));
    t.fill(m(3));
    assert_eq!(t.lookup(Vpn(2)), None, "2 was the least recently used");
    assert_eq!(t.lookup(Vpn(1)), Some(m(1)));
    assert_eq!(t.lookup(Vpn(3)), Some(m(3)));
    t.flush();
    assert_eq!(t.lookup(Vpn(1)), None);
}

#[test]
fn unmapping_a_guest_huge_page_drops_the_smaller_combined_entries_inside_it() {
    // A guest 2 MiB page over 4 KiB host pages is cached as 4 KiB combined entries; after
    // munmap a load there must walk and fault (outside every VMA), not hit a stale entry.
    let base = 0x4000_0000u64;
    let load = |off: u64| Event::Access {
        kind: AccessKind::Load,
        va: Vaddr(base + off),
        size: 8,
        instrs: 1,
        dep: 0,
    };
    let events = vec![
        Event::Mmap {
            addr: Vaddr(base),
            len: 2 << 20,
            prot: prot::READ | prot::WRITE,
            flags: 0,
        },
        load(0x5_0000),
        load(0x5_0008),
        Event::Munmap {
            addr: Vaddr(base),
            len: 2 << 20,
        },
        load(0x5_0010),
    ];
    let cfg = cfg_with(&[("os.thp", "always"), ("virt.host_os.thp", "never")]).unwrap();
    match run(&cfg, Box::new(Events(events.into_iter()))) {
        Err(SimError::Os { event: 4, error }) => {
            assert!(error.0.contains("segmentation fault"), "{error}")
        }
        other => panic!("expected a segmentation fault at event 4, got {other:?}"),
    }
}

// ---- Elastic Translations in guest and host (contiguous bit over both dimensions) ----

fn span(vpn: u64, pfn: u64, base: PageSize, pages_log2: u8) -> CoalescedSpan {
    CoalescedSpan {
        vpn: Vpn(vpn),
        pfn: Pfn(pfn),
        base,
        pages_log2,
        writable: true,
    }
}

#[test]
fn the_effective_nested_entry_is_the_smaller_of_the_guest_and_host_contiguous_sizes() {
    const SIZE_4K: PageSize = PageSize::Size4K;
    const SIZE_2M: PageSize = PageSize::Size2M;
    // Guest: 64 KiB group of 4 KiB pages at gVA page 0x100 -> gPA page 0x5000; host: one
    // 2 MiB page over gPA 0x5000.. -> hPA 0x80000.. . The walked page is 0x105.
    let gm = Mapping::writable(0x105, 0x5005, SIZE_4K);
    let g64 = span(0x100, 0x5000, SIZE_4K, 4);
    let h2m = Mapping::writable(0x4e00, 0x80000, SIZE_2M);
    assert_eq!(
        effective_span(Vpn(0x105), gm, Some(g64), h2m, None),
        Some(span(0x100, 0x80200, SIZE_4K, 4))
    );
    // Without the guest's group, the guest page is the smaller: one 4 KiB entry.
    assert_eq!(effective_span(Vpn(0x105), gm, None, h2m, None), None);
    // Guest: 32 MiB group of 2 MiB pages; host: 64 KiB groups of 4 KiB pages -> 64 KiB.
    let gm = Mapping::writable(0x2000 + 512, 0x8000 + 512, SIZE_2M);
    let g32 = span(0x2000, 0x8000, SIZE_2M, 4);
    let hm = Mapping::writable(0x8000 + 512 + 0x37, 0x40000 + 0x37, SIZE_4K);
    let h64 = span(0x8000 + 512 + 0x30, 0x40000 + 0x30, SIZE_4K, 4);
    let vpn = Vpn(0x2000 + 512 + 0x37);
    let s = effective_span(vpn, gm, Some(g32), hm, Some(h64)).unwrap();
    assert_eq!(s, span(0x2000 + 512 + 0x30, 0x40000 + 0x30, SIZE_4K, 4));
    assert_eq!(s.base_of(vpn), combine(vpn, gm, hm));
    // Both 32 MiB groups -> one 32 MiB entry of 2 MiB pages.
    let hm = Mapping::writable(0x8000 + 512, 0x100000 + 512, SIZE_2M);
    let h32 = span(0x8000, 0x100000, SIZE_2M, 4);
    assert_eq!(
        effective_span(vpn, gm, Some(g32), hm, Some(h32)),
        Some(span(0x2000, 0x100000, SIZE_2M, 4))
    );
    // A guest 2 MiB page over host 2 MiB pages, neither grouped: the page alone.
    assert_eq!(effective_span(vpn, gm, None, hm, None), None);
}

#[test]
fn elastic_translations_in_guest_and_host_pass_the_oracle_and_coalesce_combined_entries() {
    for (guest_thp, host_thp, host) in [
        ("always", "always", "et"),
        ("never", "always", "et"),
        ("always", "never", "et"),
        ("never", "never", "et"),
        ("always", "always", "radix"),
    ] {
        let r = run_workload(
            &cfg_with(&[
                ("sim.design", "et"),
                ("workload.name", "gups"),
                ("workload.footprint", "96MiB"),
                ("os.phys_mem_bytes", "1GiB"),
                ("virt.host_os.phys_mem_bytes", "2GiB"),
                ("os.thp", guest_thp),
                ("virt.host_os.thp", host_thp),
                ("virt.host_design", host),
                ("tlb.l1_organization", "any_size"),
                ("tlb.coalescing", "contiguous_bit"),
                ("tlb.l1_max_span_bytes", "65536"),
            ])
            .unwrap(),
        )
        .unwrap_or_else(|e| panic!("{guest_thp}/{host_thp}/{host}: {e}"));
        let what = format!("guest thp {guest_thp}, host thp {host_thp}, host {host}");
        assert_eq!(r["oracle"]["mismatches"], 0, "{what}");
        let fills = r["tlb"]["coalesced_fills"].as_u64().unwrap_or(0);
        if host == "et" {
            // Both dimensions contiguous: combined 64 KiB or 32 MiB entries are built.
            assert!(fills > 0, "{what}: {}", r["tlb"]);
        } else {
            // A radix host sets no contiguous bit: with 2 MiB host pages and 32 MiB guest
            // groups the effective entry is the 2 MiB page.
            assert_eq!(fills, 0, "{what}");
        }
    }
}
