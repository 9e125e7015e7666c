//! The paper-like comparison of docs/designs/ecpt.md and mehpt.md: radix, ecpt and mehpt (and
//! mehpt with in-place or per-way resizing switched off) on a few workloads, 4 KiB pages and
//! THP, in fragmented memory. Prints a Markdown table.
//!
//! `cargo run --release -p xlat --example hpt_compare -- [FOOTPRINT] [REFS] [FMFI] [WORKLOADS]
//! [THP] [DESIGNS]` (defaults: 1GiB 2000000 0.7 gups,bfs,kv never,always and every variant;
//! DESIGNS is a comma list of the labels in the table, e.g. `ecpt,mehpt`).
use xlat::stats::get_path;
use xlat::Config;

/// A row of the comparison: label, design, extra `--set` overrides.
type Variant = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, d: &str| args.get(i).cloned().unwrap_or_else(|| d.to_string());
    let (footprint, refs, fmfi) = (arg(0, "1GiB"), arg(1, "2000000"), arg(2, "0.7"));
    let workloads = arg(3, "gups,bfs,kv");
    let thps = arg(4, "never,always");
    let only = args.get(5).cloned();
    let variants: [Variant; 5] = [
        ("radix", "radix", &[]),
        ("ecpt", "ecpt", &[]),
        ("mehpt", "mehpt", &[]),
        ("mehpt -in_place", "mehpt", &[("mehpt.in_place", "false")]),
        ("mehpt -per_way", "mehpt", &[("mehpt.per_way", "false")]),
    ];
    println!(
        "| workload | pages | design | walk cycles | walk refs | PT peak | PT final | max contiguous | \
         alloc Mcycles | re-ins/insert (none) | moved/upsize (in place) | L2P max/end | Mcycles |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for w in workloads.split(',') {
        for thp in thps.split(',') {
            for (label, design, extra) in variants {
                if only
                    .as_ref()
                    .is_some_and(|o| !o.split(',').any(|x| x == label))
                {
                    continue;
                }
                let mut o: Vec<(String, String)> = [
                    ("sim.design", design),
                    ("workload.name", w),
                    ("workload.footprint", footprint.as_str()),
                    ("sim.refs", refs.as_str()),
                    ("os.fmfi_target", fmfi.as_str()),
                    ("os.thp", thp),
                ]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
                o.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
                let cfg = Config::resolve(None, &o).expect("config");
                let r = match xlat::run_workload(&cfg) {
                    Ok(r) => r,
                    Err(e) => {
                        let pages = if thp == "never" { "4K" } else { "THP" };
                        println!("| {w} | {pages} | {label} | run failed: {e} |");
                        continue;
                    }
                };
                let f = |p: &str| get_path(&r, p).and_then(|v| v.as_f64()).unwrap_or(f64::NAN);
                let kib = |p: &str| format!("{:.0} KiB", f(p) / 1024.0);
                let d = |k: &str| format!("{design}.{k}");
                let hashed = design != "radix";
                let opt = |k: &str, prec: usize| {
                    if hashed {
                        format!("{:.*}", prec, f(&d(k)))
                    } else {
                        "-".into()
                    }
                };
                println!(
                    "| {w} | {} | {label} | {:.1} | {:.2} | {} | {} | {} | {} | {} | {} | {} | {:.1} |",
                    if thp == "never" { "4K" } else { "THP" },
                    f("walk.avg_cycles"),
                    f("walk.avg_mem_accesses"),
                    kib("page_table.peak_bytes"),
                    kib("page_table.bytes"),
                    kib("page_table.max_contiguous_bytes"),
                    if hashed {
                        format!("{:.2}", f(&d("alloc_cycles")) / 1e6)
                    } else {
                        "-".into()
                    },
                    if hashed {
                        format!(
                            "{:.2} ({:.0} %)",
                            f(&d("reinsertions_per_insert")),
                            100.0 * f(&d("no_reinsertion_share"))
                        )
                    } else {
                        "-".into()
                    },
                    if hashed {
                        format!(
                            "{:.2} ({:.2})",
                            f(&d("moved_fraction_per_upsize")),
                            f(&d("moved_fraction_per_in_place_upsize"))
                        )
                    } else {
                        "-".into()
                    },
                    if design == "mehpt" {
                        format!(
                            "{}/{}",
                            opt("l2p_entries_used_max", 0),
                            opt("l2p_entries_used", 0)
                        )
                    } else {
                        "-".into()
                    },
                    (f("timing.cycles") + f("timing.os_cycles")) / 1e6,
                );
            }
        }
    }
}
