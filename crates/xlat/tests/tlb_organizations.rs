//! End-to-end runs of the TLB organizations (issue 13 part A): coalescing (contiguous bit, CoLT),
//! the L2 with separate 1 GiB entries, with the oracle on.

use serde_json::Value;
use xlat::config::Config;
use xlat::run_workload;

fn run(extra: &[(&str, &str)]) -> Value {
    let mut sets: Vec<(String, String)> = [
        ("sim.design", "radix"),
        ("sim.refs", "200000"),
        ("workload.name", "gups"),
        ("workload.footprint", "64MiB"),
        ("os.phys_mem_bytes", "1GiB"),
        // Walk counts per folio include the first touches: measure from the start.
        ("sim.warmup_refs", "0"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    sets.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let cfg = Config::resolve(None, &sets).unwrap();
    let r = run_workload(&cfg).unwrap_or_else(|e| panic!("{extra:?}: {e}"));
    assert_eq!(r["oracle"]["mismatches"], 0);
    assert_eq!(r["oracle"]["enabled"], true);
    r
}

fn walks(r: &Value) -> u64 {
    r["walk"]["count"].as_u64().unwrap()
}

const MTHP_64K: [(&str, &str); 2] = [("os.policy", "mthp"), ("os.mthp.sizes", "[\"64KiB\"]")];

#[test]
fn colt_serves_gups_with_fewer_walks_than_one_entry_per_page() {
    let none = run(&[]);
    let colt = run(&[("tlb.coalescing", "colt")]);
    assert!(
        walks(&colt) < walks(&none),
        "{} vs {}",
        walks(&colt),
        walks(&none)
    );
    let t = &colt["tlb"];
    assert!(t["coalesced_fills"].as_u64().unwrap() > 0);
    assert!(t["l2_coalesced_hits"].as_u64().unwrap() > 0);
    // Every reference was translated the same way (same references, same L1 behaviour: the
    // split L1 holds base pages either way).
    assert_eq!(colt["tlb"]["l1_misses"], none["tlb"]["l1_misses"]);
}

#[test]
fn the_contiguous_bit_over_64k_folios_walks_once_per_folio() {
    let none = run(&MTHP_64K);
    let mut with = MTHP_64K.to_vec();
    with.push(("tlb.coalescing", "contiguous_bit"));
    let contiguous = run(&with);
    with.push(("tlb.l1_organization", "any_size"));
    let arm = run(&with);
    // 64 MiB of 64 KiB folios: 1024 runs, each fits the L2 as one entry and is walked once.
    for r in [&contiguous, &arm] {
        assert_eq!(walks(r), 1024);
        assert_eq!(r["tlb"]["coalesced_fills"], 1024);
        assert_eq!(r["tlb"]["coalesced_fill_pages"], 1024 * 16);
    }
    assert!(walks(&none) > 50 * 1024);
    // The any-size L1 holds the runs too: fewer L1 misses than the split L1's base pages.
    assert!(
        arm["tlb"]["l1_misses"].as_u64().unwrap()
            < contiguous["tlb"]["l1_misses"].as_u64().unwrap()
    );
    assert!(
        arm["tlb"]["l1_coalesced_hits_by_size"]["64k"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn an_l2_with_separate_1g_entries_changes_nothing_without_1g_pages() {
    let unified = run(&[]);
    let split = run(&[("tlb.l2_organization", "split_1g")]);
    for key in ["l1_misses", "l2_misses", "l2_lookups"] {
        assert_eq!(unified["tlb"][key], split["tlb"][key], "{key}");
    }
    assert_eq!(unified["walk"], split["walk"]);
    assert_eq!(split["tlb"]["l2_1g_hits"], 0);
    assert_eq!(split["config"]["tlb"]["l2_organization"], "split_1g");
    // "any_size" is another name for the unified L2 (its entries carry their page size).
    let any = run(&[("tlb.l2_organization", "any_size")]);
    assert_eq!(any["config"]["tlb"]["l2_organization"], "unified");
    assert_eq!(any["walk"], unified["walk"]);
}

#[test]
fn the_default_hierarchy_writes_none_of_the_new_statistics() {
    let r = run(&[]);
    for key in [
        "coalesced_fills",
        "l2_hits_by_size",
        "l2_1g_hits",
        "range_hits",
    ] {
        assert!(r["tlb"].get(key).is_none(), "{key}");
    }
}

#[test]
fn bad_tlb_organization_settings_are_refused_naming_the_key() {
    let err = |k: &str, v: &str| {
        Config::resolve(None, &[(k.to_string(), v.to_string())])
            .err()
            .unwrap_or_else(|| panic!("{k}={v} accepted"))
            .to_string()
    };
    assert!(err("tlb.colt_max_pages", "6").contains("tlb.colt_max_pages"));
    assert!(err("tlb.colt_max_pages", "128").contains("tlb.colt_max_pages"));
    assert!(err("tlb.l2_1g.entries", "10").contains("tlb.l2_1g"));
    let e = Config::resolve(
        None,
        &[
            ("tlb.range.entries".to_string(), "32".to_string()),
            ("tlb.range.ways".to_string(), "4".to_string()),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("tlb.range.ways"), "{e}");
    let e = err("tlb.coalescing", "\"coalesce\"");
    assert!(e.contains("coalescing"), "{e}");
    let e = err("tlb.l2_organization", "\"split\"");
    assert!(e.contains("l2_organization"), "{e}");
}

/// Coalesced entries and the extended L2 under every OS policy with khugepaged (collapses,
/// splits and promotions shoot pages down under the coalesced entries) and under swap: the
/// oracle checks every hit. Radix coalesces; ecpt (no coalescing hook) must run unchanged.
#[test]
fn coalescing_keeps_the_oracle_under_every_policy_khugepaged_and_swap() {
    for design in ["radix", "ecpt"] {
        for policy in ["thp", "mthp", "reservation", "eager"] {
            for (coalescing, l1) in [
                ("contiguous_bit", "any_size"),
                ("colt", "split"),
                ("colt", "any_size"),
            ] {
                for workload in ["gups", "kv"] {
                    let r = run(&[
                        ("sim.design", design),
                        ("sim.refs", "30000"),
                        ("workload.name", workload),
                        ("workload.footprint", "24MiB"),
                        ("os.thp", "always"),
                        ("os.policy", policy),
                        ("os.mthp.sizes", "[\"2MiB\", \"64KiB\"]"),
                        ("os.reservation.promotion_threshold", "0.5"),
                        ("os.khugepaged.enabled", "true"),
                        ("os.khugepaged.interval_cycles", "20000"),
                        ("os.khugepaged.max_ptes_none", "256"),
                        ("tlb.coalescing", coalescing),
                        ("tlb.l1_organization", l1),
                        ("tlb.l2_organization", "split_1g"),
                    ]);
                    let fills = r["tlb"]["coalesced_fills"].as_u64().unwrap();
                    if design == "ecpt" {
                        assert_eq!(fills, 0, "{policy} {coalescing}");
                    }
                }
            }
        }
        for coalescing in ["contiguous_bit", "colt"] {
            let r = run(&[
                ("sim.design", design),
                ("sim.refs", "60000"),
                ("workload.footprint", "96MiB"),
                ("os.phys_mem_bytes", "64MiB"),
                ("os.swap.bytes", "256MiB"),
                ("os.policy", "mthp"),
                ("os.mthp.sizes", "[\"64KiB\"]"),
                ("tlb.coalescing", coalescing),
                ("tlb.l1_organization", "any_size"),
            ]);
            assert!(r["os"]["swap"]["swap_outs"].as_u64().unwrap() > 0);
            if design == "radix" {
                assert!(
                    r["tlb"]["coalesced_fills"].as_u64().unwrap() > 0,
                    "{coalescing}"
                );
            }
        }
    }
}
