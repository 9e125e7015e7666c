//! End-to-end runs of the Elastic Translations baselines (issue 20): HugeTLB pools, the
//! HawkEye-like and Trident policies, and the page-fault latency histogram, with the oracle on
//! (every translation a design returns is checked against the OS model's mapping).

use serde_json::Value;
use xlat::config::Config;
use xlat::designs::REGISTRY;
use xlat::run_workload;

fn run(extra: &[(&str, &str)]) -> Value {
    let mut sets: Vec<(String, String)> = [
        ("sim.design", "radix"),
        ("sim.refs", "30000"),
        ("workload.name", "gups"),
        ("workload.footprint", "24MiB"),
        ("os.phys_mem_bytes", "1GiB"),
        // The policies act at faults, in the first-touch phase these tests count.
        ("sim.warmup_refs", "0"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    sets.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let cfg = Config::resolve(None, &sets).unwrap_or_else(|e| panic!("{extra:?}: {e}"));
    let r = run_workload(&cfg).unwrap_or_else(|e| panic!("{extra:?}: {e}"));
    assert_eq!(r["oracle"]["mismatches"], 0, "{extra:?}");
    assert_eq!(r["oracle"]["enabled"], true);
    r
}

fn u(r: &Value, path: &str) -> u64 {
    path.split('.')
        .fold(r, |v, k| &v[k])
        .as_u64()
        .unwrap_or_else(|| panic!("{path} missing"))
}

/// The policies of the baselines, as settings.
const POLICIES: [&[(&str, &str)]; 5] = [
    &[
        ("os.policy", "hawkeye"),
        ("os.hawkeye.interval_cycles", "20000"),
    ],
    &[
        ("os.policy", "trident"),
        ("os.trident.interval_cycles", "20000"),
    ],
    &[("os.hugetlb.pages", "16"), ("os.hugetlb.size", "2MiB")],
    &[("os.hugetlb.pages", "256"), ("os.hugetlb.size", "64KiB")],
    &[("os.hugetlb.pages", "1"), ("os.hugetlb.size", "32MiB")],
];

#[test]
fn every_design_passes_the_oracle_under_every_baseline_policy() {
    for info in REGISTRY {
        // restrictive_only translates 4 KiB pages only: the OS model refuses khugepaged and
        // these huge-page policies for it (its own tests check the refusal).
        if info.name == "restrictive_only" {
            continue;
        }
        for policy in POLICIES {
            for workload in ["gups", "kv", "bfs"] {
                let mut sets = vec![
                    ("sim.design", info.name),
                    // The baselines' policies on every design's table: rmm's profile would
                    // replace them with eager paging (no faults to count).
                    ("sim.profile", "none"),
                    ("workload.name", workload),
                    ("os.thp", "always"),
                    ("os.khugepaged.enabled", "true"),
                    ("os.khugepaged.interval_cycles", "20000"),
                ];
                sets.extend_from_slice(policy);
                let r = run(&sets);
                assert!(u(&r, "os.fault_latency.count") > 0);
            }
        }
    }
}

#[test]
fn the_baselines_keep_the_oracle_with_contiguous_bits_fragmented_and_nested() {
    for policy in POLICIES {
        for extra in [
            &[("tlb.coalescing", "contiguous_bit")][..],
            &[
                ("tlb.coalescing", "contiguous_bit"),
                ("os.fragmenter.mode", "alternating"),
                ("os.fmfi_target", "0.5"),
                ("os.phys_mem_bytes", "4GiB"),
            ],
            &[
                ("tlb.coalescing", "contiguous_bit"),
                ("os.fragmenter.mode", "alternating"),
                ("os.fmfi_target", "0.99"),
                ("os.phys_mem_bytes", "8GiB"),
            ],
            &[("virt.enabled", "true")],
            &[("os.thp", "never")],
        ] {
            let mut sets = vec![("os.thp", "always"), ("workload.footprint", "96MiB")];
            sets.extend_from_slice(policy);
            sets.extend_from_slice(extra);
            run(&sets);
        }
    }
}

#[test]
fn hugetlb_64k_and_32m_pages_form_contiguous_bit_entries_on_radix() {
    for (size, pages) in [("64KiB", "2048"), ("32MiB", "5")] {
        let r = run(&[
            ("workload.footprint", "128MiB"),
            ("os.hugetlb.size", size),
            ("os.hugetlb.pages", pages),
            ("tlb.coalescing", "contiguous_bit"),
            ("tlb.l1_organization", "any_size"),
        ]);
        assert!(u(&r, "os.hugetlb.faults") > 0, "{size}");
        assert!(u(&r, "tlb.coalesced_fills") > 0, "{size}");
        let without = run(&[
            ("workload.footprint", "128MiB"),
            ("tlb.coalescing", "contiguous_bit"),
            ("tlb.l1_organization", "any_size"),
        ]);
        assert!(u(&r, "walk.count") < u(&without, "walk.count"), "{size}");
    }
}

#[test]
fn hugetlb_1g_and_trident_map_a_3g_footprint_with_1g_pages() {
    // The workloads place large mappings on 2 MiB boundaries: a 3 GiB one holds at least one
    // aligned 1 GiB range.
    let base = [
        ("workload.footprint", "3GiB"),
        ("os.phys_mem_bytes", "8GiB"),
        // gups initializes its table in order from the VMA's start: enough references to
        // pass the first 1 GiB boundary (134 MiB in).
        ("sim.refs", "100000"),
    ];
    let mut h = base.to_vec();
    h.extend([("os.hugetlb.size", "1GiB"), ("os.hugetlb.pages", "3")]);
    let r = run(&h);
    assert!(u(&r, "os.hugetlb.faults") > 0);
    assert!(u(&r, "os.mapped_bytes_by_size.1g") >= 1 << 30);
    let mut t = base.to_vec();
    t.extend([("os.policy", "trident"), ("os.thp", "always")]);
    let r = run(&t);
    assert!(u(&r, "os.trident.faults_1g") > 0);
    // A 1 GiB fault zeroes 1 GiB: its latency is at least 0.5 G cycles.
    assert!(u(&r, "os.fault_latency.max_cycles") >= 1 << 29);
}

#[test]
fn hawkeye_promotes_walked_regions_that_thp_never_left_as_4k_pages() {
    let sets = [
        ("os.thp", "never"),
        ("workload.footprint", "64MiB"),
        ("sim.refs", "200000"),
    ];
    let mut h = sets.to_vec();
    h.extend([
        ("os.policy", "hawkeye"),
        ("os.hawkeye.interval_cycles", "100000"),
    ]);
    let r = run(&h);
    assert!(u(&r, "os.hawkeye.promotions") > 0);
    assert!(u(&r, "os.mapped_bytes_by_size.2m") > 0);
    let base = run(&sets);
    assert!(u(&r, "walk.count") < u(&base, "walk.count"));
}
