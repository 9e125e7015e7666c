//! The allocation-cost table of docs/os-model.md ("Fragmentation and compaction"): the OS cycles
//! PhysMem reports (zeroing + direct compaction) for allocating page-table blocks of ME-HPT §III's
//! sizes in memory filled like a long-running system (`os.fragmenter.mode = "fill"`), next to the
//! paper's measurements. Each size starts from the same fragmented state; the table gives the
//! first allocation and the mean of `COUNT` consecutive ones. Prints a Markdown table.
//!
//! `cargo run --release -p xlat --example alloc_cost -- [PHYS_GIB] [FMFI] [COUNT] [FREE_SHARE]
//! [KERNEL_SHARE] [POLLUTED_SHARE] [SEED]` (defaults: 64 0.7 8 and the `os.fragmenter` defaults,
//! seed 1).
use xlat::os::{CompactionConfig, FragmenterConfig, FragmenterMode, FrameUse, PhysMem};

/// ME-HPT §III: allocating and zeroing a chunk at FMFI 0.7 (bytes, cycles).
const PAPER: [(u64, f64); 5] = [
    (4 << 10, 4.0e3),
    (8 << 10, 5.0e3),
    (1 << 20, 7.5e5),
    (8 << 20, 1.3e7),
    (64 << 20, 1.2e8),
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, d: f64| args.get(i).map_or(d, |s| s.parse().expect("a number"));
    let defaults = FragmenterConfig::default();
    let phys_gib = num(0, 64.0) as u64;
    let fmfi = num(1, 0.7);
    let count = num(2, 8.0) as usize;
    let frag = FragmenterConfig {
        mode: FragmenterMode::Fill,
        free_share: num(3, defaults.free_share),
        kernel_share: num(4, defaults.kernel_share),
        polluted_share: num(5, defaults.polluted_share),
    };
    let seed = num(6, 1.0) as u64;
    let mut base = PhysMem::new(phys_gib << 30);
    base.set_compaction(&CompactionConfig::default());
    let reached = base
        .fragment_fill(fmfi, 9, &frag, seed)
        .expect("fill fragmenter");
    println!(
        "{phys_gib} GiB, FMFI(9) {reached:.3}, {:.1} % free, largest free block order {:?}, \
         fragmenter {frag:?}\n",
        base.free_bytes() as f64 * 100.0 / base.total_bytes() as f64,
        base.largest_free_order()
    );
    println!("| size | paper (cycles) | first (cycles) | mean of {count} (cycles) | mean / paper | pages migrated (mean) | compactions |");
    println!("|---|---|---|---|---|---|---|");
    for (bytes, paper) in PAPER {
        let order = (bytes / 4096).trailing_zeros() as u8;
        let mut p = base.clone();
        let mut costs = Vec::new();
        let migrated_before = p.compaction_stats().pages_migrated;
        for _ in 0..count {
            let before = p.alloc_work_cycles();
            match p.alloc(order, FrameUse::PageTable) {
                Ok(_) => costs.push(p.alloc_work_cycles() - before),
                Err(e) => {
                    println!("| {bytes} | allocation failed: {e} |");
                    break;
                }
            }
        }
        if costs.is_empty() {
            continue;
        }
        let mean = costs.iter().sum::<u64>() as f64 / costs.len() as f64;
        let c = p.compaction_stats();
        println!(
            "| {} | {:.3e} | {:.3e} | {:.3e} | {:.2} | {:.0} | {}/{} |",
            xlat::addr::format_bytes(bytes),
            paper,
            costs[0] as f64,
            mean,
            mean / paper,
            (c.pages_migrated - migrated_before) as f64 / costs.len() as f64,
            c.direct_successes,
            c.direct_attempts
        );
    }
}
