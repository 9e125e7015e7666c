//! "Adding a design" (docs/architecture.md, this module's parent) followed end to end with a
//! toy design: a folder-like module with a config, a [`Design`] and its profile, one row of the `designs!`
//! table (instantiated here beside `radix`, so the registry, the config section and
//! `build_and_visit` are generated for the toy exactly as for a real row), then a whole run
//! through the engine with the oracle checking every translation against the OS model.
//!
//! If a step of the guide stops being enough (a new required trait method, a macro change),
//! this test stops compiling or fails: keep the guide and this file in step.

use super::{Design, DesignVisitor};
use crate::os::PhysMem;

/// Step 1 of the guide: `designs/toy/mod.rs`, with its config and its design.
mod toy {
    use crate::addr::{Asid, Mapping, Paddr, PageSize, PageSizeSet, Pfn, Vpn};
    use crate::designs::{Design, PtFootprint, PtMemory, WalkResult};
    use crate::mem::MemSystem;
    use crate::os::{OsError, PhysMem};
    use crate::stats::{Stats, StatsExt};
    use serde::{Deserialize, Serialize};
    use std::collections::HashMap;

    /// Step 2 of the guide: the settings the toy's "paper" assumes around it (none).
    pub const PROFILE: &str = "[profile]\nsummary = \"no settings around the design\"\n\
                                paper = \"none: a toy for docs/architecture.md\"\n";

    /// `[toy]` section.
    #[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields, default)]
    pub struct ToyConfig {
        /// Cycles the walker spends before its first read (a made-up knob to configure).
        pub setup_cycles: u32,
    }

    impl Default for ToyConfig {
        fn default() -> Self {
            ToyConfig { setup_cycles: 3 }
        }
    }

    impl ToyConfig {
        /// Check ranges.
        pub fn validate(&self) -> Result<(), String> {
            if self.setup_cycles > 1000 {
                return Err(format!(
                    "setup_cycles must be at most 1000, got {}",
                    self.setup_cycles
                ));
            }
            Ok(())
        }
    }

    /// A flat table per page size: one 4 KiB frame of page-table memory holds the entries of
    /// 512 consecutive pages of a size; a walk reads the 4 KiB entry, then the 2 MiB one, then
    /// the 1 GiB one, until one maps the page.
    pub struct Toy {
        setup_cycles: u32,
        /// (address space, size, first VPN of a 512-page group) -> the group's table frame and
        /// how many of its entries are set.
        frames: HashMap<(Asid, PageSize, u64), (Pfn, u32)>,
        entries: HashMap<(Asid, Vpn), Mapping>,
        memory: PtMemory,
        walks: u64,
    }

    const SIZES: [PageSize; 3] = [PageSize::Size4K, PageSize::Size2M, PageSize::Size1G];

    fn group(size: PageSize, vpn: Vpn) -> (u64, u64) {
        let page = vpn.0 / size.base_pages();
        (page / 512, page % 512)
    }

    impl Design for Toy {
        type Config = ToyConfig;

        fn new(cfg: &ToyConfig, _phys: &mut PhysMem) -> Result<Self, OsError> {
            Ok(Toy {
                setup_cycles: cfg.setup_cycles,
                frames: HashMap::new(),
                entries: HashMap::new(),
                memory: PtMemory::default(),
                walks: 0,
            })
        }

        fn page_sizes(&self) -> PageSizeSet {
            PageSizeSet::X86
        }

        fn map(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) -> Result<(), OsError> {
            let (g, _) = group(m.size, m.vpn);
            let frame = match self.frames.get_mut(&(asid, m.size, g)) {
                Some(slot) => slot,
                None => {
                    let pfn = self.memory.alloc(phys, 0)?;
                    self.frames.entry((asid, m.size, g)).or_insert((pfn, 0))
                }
            };
            frame.1 += 1;
            self.entries.insert((asid, m.vpn), m);
            Ok(())
        }

        fn unmap(&mut self, phys: &mut PhysMem, asid: Asid, m: Mapping) {
            self.entries.remove(&(asid, m.vpn));
            let (g, _) = group(m.size, m.vpn);
            let frame = self
                .frames
                .get_mut(&(asid, m.size, g))
                .expect("mapped group");
            frame.1 -= 1;
            if frame.1 == 0 {
                let (pfn, _) = self.frames.remove(&(asid, m.size, g)).unwrap();
                self.memory.free(phys, pfn, 0);
            }
        }

        fn walk(&mut self, asid: Asid, vpn: Vpn, mem: &mut MemSystem) -> WalkResult {
            self.walks += 1;
            let mut result = WalkResult {
                mapping: None,
                latency_cycles: self.setup_cycles,
                mem_accesses: 0,
            };
            for size in SIZES {
                let (g, index) = group(size, vpn);
                let Some(&(pfn, _)) = self.frames.get(&(asid, size, g)) else {
                    continue; // no table for this group: nothing to read
                };
                result.mem_accesses += 1;
                let entry = Paddr(pfn.addr().0 + 8 * index);
                result.latency_cycles += mem.pt_access(entry).latency_cycles;
                if let Some(&m) = self.entries.get(&(asid, vpn.align_down(size))) {
                    if m.size == size {
                        result.mapping = Some(m);
                        break;
                    }
                }
            }
            result
        }

        fn footprint(&self) -> PtFootprint {
            self.memory.footprint()
        }

        fn stats(&self, out: &mut Stats) {
            out.section("toy").put_u64("walks", self.walks);
        }
    }
}

/// Step 3 of the guide: the toy's row, beside an existing one, in the `designs!` table.
mod registry {
    // What the generated code names, as `designs/mod.rs` has it in scope.
    use super::toy;
    use crate::designs::{radix, Design, DesignInfo, DesignVisitor};
    use crate::os::{OsError, PhysMem};
    use serde::{Deserialize, Serialize};

    designs! {
        radix: Radix(RadixConfig) "x86-64 radix page table";
        toy: Toy(ToyConfig) "a flat table per page size (the guide's example)";
    }
}

#[test]
fn the_toy_row_registers_a_name_a_config_section_and_a_builder() {
    use registry::{build_and_visit, DesignsConfig, REGISTRY};
    let names: Vec<&str> = REGISTRY.iter().map(|d| d.name).collect();
    assert_eq!(names, ["radix", "toy"]);
    assert_eq!(REGISTRY[1].profile, toy::PROFILE);
    crate::profiles::Profile::parse("toy", REGISTRY[1].profile, Some("toy")).unwrap();
    // The row's config section parses, with defaults, and rejects unknown keys.
    let cfg: DesignsConfig = toml::from_str("[toy]\nsetup_cycles = 7\n").unwrap();
    assert_eq!(cfg.toy.setup_cycles, 7);
    assert_eq!(cfg.radix, crate::designs::radix::RadixConfig::default());
    assert!(toml::from_str::<DesignsConfig>("[toy]\nsetup_cyles = 7\n").is_err());
    cfg.validate().unwrap();
    let bad: DesignsConfig = toml::from_str("[toy]\nsetup_cycles = 5000\n").unwrap();
    assert!(bad.validate().unwrap_err().starts_with("toy.setup_cycles"));

    /// A visitor that reads the page sizes of whatever design it is handed.
    struct Sizes;
    impl DesignVisitor for Sizes {
        type Output = crate::addr::PageSizeSet;
        fn visit<D: Design + 'static>(self, d: D) -> Self::Output {
            d.page_sizes()
        }
    }
    let mut phys = PhysMem::new(1 << 30);
    let sizes = build_and_visit("toy", &cfg, &mut phys, Sizes).unwrap();
    assert_eq!(sizes, crate::addr::PageSizeSet::X86);
    let unknown = build_and_visit("toyy", &cfg, &mut phys, Sizes).unwrap_err();
    assert!(unknown.0.contains("unknown design 'toyy'"), "{unknown}");
}

#[test]
fn the_toy_design_runs_a_whole_workload_through_the_engine_with_every_translation_checked() {
    use crate::config::Config;
    let o = |k: &str, v: &str| (k.to_string(), v.to_string());
    // `sim.design` must name a registered design to validate; the record names it, while the
    // design that runs is the toy `with_design` builds (its stats section proves it).
    let cfg = Config::resolve(
        None,
        &[
            o("sim.design", "radix"),
            o("sim.refs", "20000"),
            o("workload.name", "gups"),
            o("workload.footprint", "64MiB"),
            o("os.phys_mem_bytes", "1GiB"),
        ],
    )
    .unwrap();
    let source =
        crate::workloads::create(&cfg.workload, cfg.sim.simulated_refs(), cfg.sim.seed).unwrap();
    let toy_cfg = toy::ToyConfig::default();
    let mut sim =
        crate::engine::Simulation::with_design(&cfg, source, |phys| toy::Toy::new(&toy_cfg, phys))
            .unwrap();
    while !sim.step(4096).unwrap() {}
    let record = sim.record();
    assert_eq!(record["refs"], 20000);
    assert_eq!(record["oracle"]["mismatches"], 0);
    let walks = record["toy"]["walks"].as_u64().unwrap();
    assert!(
        walks > 1000,
        "gups over 64 MiB misses the TLBs often: {walks} walks"
    );
    // Every walk the engine counts (after a TLB miss, and again after a fault) is the toy's.
    let engine_walks = record["walk"]["count"].as_u64().unwrap()
        + record["walk"]["post_fault_count"].as_u64().unwrap();
    assert_eq!(engine_walks, walks, "{}", record["walk"]);
    assert!(record["page_table"]["bytes"].as_u64().unwrap() >= 4096);
}
