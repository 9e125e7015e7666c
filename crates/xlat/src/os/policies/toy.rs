//! The "Adding an OS policy" guide (docs/architecture.md, `os/policies/mod.rs`) followed end to
//! end with a toy policy, compiled for tests only: a variant of `PolicyKind` (`Toy`, tag
//! `"toy"`), this file with its `Policy`, and its row in the `policies!` table, each marked
//! `#[cfg(test)]`; then `os.policy = "toy"` runs through the OS model and the whole engine with
//! the oracle checking every translation.
//!
//! The toy is fault-around for anonymous memory: a fault maps its 4 KiB page and, when it lies
//! in the same VMA and is not mapped yet, the next one (Linux does this for file pages,
//! `fault_around_bytes`). If a step of the guide stops being enough, this stops compiling or
//! fails: keep the guide and this file in step.

use super::FaultPolicy;
use crate::addr::{Asid, Mapping, PageSize, Vaddr, Vpn};
use crate::os::vma::Vma;
use crate::os::{MapChange, Os, OsError, Placer};

/// `os.policy = "toy"` (tests only).
pub struct Policy;

impl FaultPolicy for Policy {
    fn fault(
        os: &mut Os,
        asid: Asid,
        va: Vaddr,
        vma: &Vma,
        writable: bool,
        placer: &mut dyn Placer,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError> {
        let m = os.fault_base(asid, va, writable, placer, changes)?;
        let next = Vpn(va.vpn().0 + 1);
        if next.addr().0 < vma.end && os.translate(asid, next).is_none() {
            // The neighbour is a bonus: without a free frame the fault still succeeds.
            if let Ok(pfn) = os.alloc_page(asid, next, PageSize::Size4K, placer, changes) {
                let around = Mapping {
                    vpn: next,
                    pfn,
                    size: PageSize::Size4K,
                    writable,
                };
                os.install(asid, around, changes);
            }
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use crate::addr::{Vaddr, Vpn};
    use crate::config::Config;
    use crate::os::policies::REGISTRY;
    use crate::os::policy::PolicyKind;
    use crate::os::{Os, OsConfig};
    use crate::trace::{prot, AccessKind};

    fn config(policy: &str) -> Config {
        let o = |k: &str, v: &str| (k.to_string(), v.to_string());
        Config::resolve(
            None,
            &[
                o("sim.design", "radix"),
                o("sim.refs", "40000"),
                o("workload.name", "stream"),
                o("workload.footprint", "16MiB"),
                o("os.phys_mem_bytes", "1GiB"),
                o("os.thp", "never"),
                o("os.policy", policy),
                // The faults of the first-touch phase are what this test counts.
                o("sim.warmup_refs", "0"),
            ],
        )
        .unwrap()
    }

    #[test]
    fn the_toy_row_registers_the_config_tag() {
        let row = REGISTRY
            .iter()
            .find(|p| p.name == "toy")
            .expect("the toy's row");
        assert_eq!(row.kind, PolicyKind::Toy);
        assert_eq!(config("toy").os.policy, PolicyKind::Toy);
    }

    #[test]
    fn a_toy_fault_maps_its_page_and_the_next_one_inside_the_vma() {
        let cfg = OsConfig {
            phys_mem_bytes: 1 << 30,
            policy: PolicyKind::Toy,
            ..OsConfig::default()
        };
        let mut os = Os::new(&cfg, 1).unwrap();
        let asid = os.process(1);
        let rw = prot::READ | prot::WRITE;
        os.mmap(asid, Vaddr(0x4000_0000), 3 << 12, rw, 0x22, &mut Vec::new())
            .unwrap();
        let mut changes = Vec::new();
        os.fault(asid, Vaddr(0x4000_0010), AccessKind::Store, &mut changes)
            .unwrap();
        assert_eq!(changes.len(), 2, "the page and its neighbour: {changes:?}");
        let page = |i: u64| os.translate(asid, Vpn((0x4000_0000 >> 12) + i));
        assert!(page(0).is_some() && page(1).is_some() && page(2).is_none());
        // The last page of the VMA has no neighbour inside it.
        changes.clear();
        os.fault(asid, Vaddr(0x4000_2000), AccessKind::Load, &mut changes)
            .unwrap();
        assert_eq!(changes.len(), 1);
        assert!(os.translate(asid, Vpn((0x4000_0000 >> 12) + 3)).is_none());
    }

    #[test]
    fn the_toy_policy_runs_through_the_engine_and_halves_a_sequential_programs_faults() {
        let faults = |policy: &str| {
            let record = crate::engine::run_workload(&config(policy)).unwrap();
            assert_eq!(record["oracle"]["mismatches"], 0, "{policy}");
            assert_eq!(record["config"]["os"]["policy"], policy);
            record["os"]["page_faults"].as_u64().unwrap()
        };
        let (toy, thp) = (faults("toy"), faults("thp"));
        // stream's first touches walk its three arrays page by page: every other page is
        // already mapped by its neighbour's fault.
        assert!(thp > 4000, "16 MiB of 4 KiB pages first-touched: {thp}");
        assert!(
            toy * 2 <= thp + 3 && toy * 2 + 3 >= thp,
            "toy {toy}, thp {thp}"
        );
    }
}
