//! TPS and its comparison points end to end: `tps` (alias PTEs and copies, with the Table I
//! TLB), `rmm` with a range TLB, and radix with CoLT, under 4 KiB-only, reservation and eager
//! paging, on built-in workloads and the recorded real program; the oracle must hold and each
//! mechanism must actually engage.

use serde_json::Value;
use std::path::PathBuf;
use xlat::config::Config;

fn o(k: &str, v: &str) -> (String, String) {
    (k.to_string(), v.to_string())
}

/// The configurations compared, as (label, overrides).
fn designs() -> Vec<(&'static str, Vec<(String, String)>)> {
    let table1 = || {
        vec![
            o("tlb.l2_organization", "split_1g"),
            o("tlb.l1_organization", "split_any_size"),
            o("tlb.l1_any.entries", "32"),
            o("tlb.l1_any.ways", "32"),
        ]
    };
    let mut alias = table1();
    alias.push(o("sim.design", "tps"));
    let mut copies = table1();
    copies.extend([o("sim.design", "tps"), o("tps.ptes", "copies")]);
    vec![
        ("tps-alias", alias),
        ("tps-copies", copies),
        (
            "rmm",
            vec![
                o("sim.design", "rmm"),
                o("tlb.l2_organization", "split_1g"),
                o("tlb.range.entries", "32"),
            ],
        ),
        (
            "radix-colt",
            vec![
                o("sim.design", "radix"),
                o("tlb.coalescing", "colt"),
                o("tlb.l1_organization", "any_size"),
            ],
        ),
    ]
}

fn policies() -> Vec<(&'static str, Vec<(String, String)>)> {
    vec![
        ("4k-only", vec![o("os.policy", "thp"), o("os.thp", "never")]),
        ("reservation", vec![o("os.policy", "reservation")]),
        (
            "reservation-0.5",
            vec![
                o("os.policy", "reservation"),
                o("os.reservation.promotion_threshold", "0.5"),
            ],
        ),
        ("eager", vec![o("os.policy", "eager")]),
    ]
}

fn check(label: &str, policy: &str, r: &Value) {
    assert_eq!(r["oracle"]["mismatches"], 0, "{label} {policy}");
    let sizes = r["os"]["mapped_bytes_by_size"].as_object().unwrap();
    let tailored = sizes
        .keys()
        .any(|k| !["4k", "2m", "1g"].contains(&k.as_str()));
    if label.starts_with("tps") && policy.starts_with("reservation") {
        assert!(tailored, "{label} {policy}: no tailored page in {sizes:?}");
        assert!(r["tps"]["tailored_updates"].as_u64().unwrap() > 0);
        if label == "tps-alias" {
            assert!(
                r["tps"]["alias_accesses"].as_u64().unwrap() > 0,
                "{label} {policy}"
            );
        } else {
            assert_eq!(r["tps"]["alias_accesses"], 0, "{label} {policy}");
        }
    }
    if !label.starts_with("tps") {
        assert!(!tailored, "{label} {policy}: {sizes:?}");
    }
    if label == "rmm" && policy == "eager" {
        assert!(r["tlb"]["range_hits"].as_u64().unwrap() > 0, "{policy}");
        assert!(r["rmm"]["range_table_hits"].as_u64().unwrap() > 0);
    }
    if label == "radix-colt" && policy == "4k-only" {
        assert!(
            r["tlb"]["coalesced_fills"].as_u64().unwrap() > 0,
            "{policy}"
        );
    }
}

#[test]
fn tps_rmm_and_colt_pass_the_oracle_under_every_policy_on_built_in_workloads() {
    for (label, design) in designs() {
        for (policy, pol) in policies() {
            for workload in ["gups", "xsbench", "bfs"] {
                let mut ov = vec![
                    o("sim.refs", "40000"),
                    o("workload.name", workload),
                    o("workload.footprint", "24MiB"),
                    o("os.phys_mem_bytes", "1GiB"),
                    // Tailored pages are built at faults: count from the first reference.
                    o("sim.warmup_refs", "0"),
                ];
                ov.extend(design.iter().cloned());
                ov.extend(pol.iter().cloned());
                let cfg = Config::resolve(None, &ov).unwrap();
                let r = xlat::engine::run_workload(&cfg)
                    .unwrap_or_else(|e| panic!("{label} {policy} {workload}: {e}"));
                check(label, policy, &r);
            }
        }
    }
}

#[test]
fn tps_rmm_and_colt_pass_the_oracle_on_a_recorded_real_program() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/sort.xlat");
    for (label, design) in designs() {
        for (policy, pol) in policies() {
            let mut ov = vec![o("sim.refs", "300000"), o("os.phys_mem_bytes", "1GiB")];
            ov.extend(design.iter().cloned());
            ov.extend(pol.iter().cloned());
            let cfg = Config::resolve(None, &ov).unwrap();
            let source = xlat::trace::open(path.to_str().unwrap(), None).unwrap();
            let r =
                xlat::engine::run(&cfg, source).unwrap_or_else(|e| panic!("{label} {policy}: {e}"));
            assert_eq!(r["oracle"]["mismatches"], 0, "{label} {policy}");
        }
    }
}

#[test]
fn tps_under_fragmentation_falls_back_to_smaller_tailored_pages() {
    let run = |fmfi: &str| {
        let cfg = Config::resolve(
            None,
            &[
                o("sim.design", "tps"),
                o("sim.refs", "200000"),
                o("workload.name", "gups"),
                o("workload.footprint", "256MiB"),
                o("os.phys_mem_bytes", "1GiB"),
                o("os.policy", "reservation"),
                o("os.fmfi_target", fmfi),
                // Fragmentation pinned over a buddyinfo snapshot (the test's premise), not
                // filled: the fill's memory would leave too little for 256 MiB.
                o("os.fragmenter.mode", "pin"),
                o("sim.warmup_refs", "0"),
            ],
        )
        .unwrap();
        let r = xlat::engine::run_workload(&cfg).unwrap();
        assert_eq!(r["oracle"]["mismatches"], 0);
        r
    };
    // A size label (`64k`, `2m`, `1g`) in bytes.
    let label_bytes = |k: &str| -> u64 {
        let (n, unit) = k.split_at(k.len() - 1);
        n.parse::<u64>().unwrap()
            << match unit {
                "k" => 10,
                "m" => 20,
                _ => 30,
            }
    };
    let bytes_at_or_above_2m = |r: &Value| -> u64 {
        r["os"]["mapped_bytes_by_size"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| label_bytes(k) >= 2 << 20)
            .map(|(_, v)| v.as_u64().unwrap())
            .sum()
    };
    let (whole, fragmented) = (run("0"), run("0.9"));
    assert!(
        bytes_at_or_above_2m(&fragmented) < bytes_at_or_above_2m(&whole),
        "{} vs {}",
        fragmented["os"]["mapped_bytes_by_size"],
        whole["os"]["mapped_bytes_by_size"]
    );
    // Below 2 MiB, tailored sizes still form from the contiguity left.
    let sizes = fragmented["os"]["mapped_bytes_by_size"]
        .as_object()
        .unwrap();
    assert!(
        sizes
            .keys()
            .any(|k| label_bytes(k) > 4096 && label_bytes(k) < 2 << 20),
        "{sizes:?}"
    );
}

#[test]
fn tps_runs_from_a_buddyinfo_snapshot_building_the_sizes_its_free_blocks_allow() {
    // A fragmented machine's free memory: plenty of 1 MiB blocks (order 8), four 2 MiB blocks
    // and nothing larger (Linux's 11 orders, 4 KiB .. 4 MiB).
    let text =
        "Node 0, zone   Normal   300   200   100   100   100   100   100   100  2000  4  0\n";
    let path = std::env::temp_dir().join(format!("xlat-tps-buddyinfo-{}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let cfg = Config::resolve(
        None,
        &[
            o("sim.design", "tps"),
            o("sim.refs", "100000"),
            o("workload.name", "xsbench"),
            o("workload.footprint", "256MiB"),
            o("os.phys_mem_bytes", "8GiB"),
            o("os.policy", "reservation"),
            o("os.buddyinfo", path.to_str().unwrap()),
        ],
    )
    .unwrap();
    let r = xlat::engine::run_workload(&cfg).unwrap();
    std::fs::remove_file(&path).ok();
    assert_eq!(r["oracle"]["mismatches"], 0);
    let sizes = r["os"]["mapped_bytes_by_size"].as_object().unwrap();
    // The 1 MiB blocks become 1 MiB pages; no page can exceed the 2 MiB blocks there were.
    assert!(sizes["1m"].as_u64().unwrap() >= 200 << 20, "{sizes:?}");
    assert!(
        sizes.get("2m").map_or(0, |v| v.as_u64().unwrap()) <= 8 << 20,
        "{sizes:?}"
    );
    for big in ["4m", "8m", "16m", "1g"] {
        assert!(!sizes.contains_key(big), "{sizes:?}");
    }
}
