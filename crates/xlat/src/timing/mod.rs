//! The core timing model: turns instruction counts and exposed latencies into cycles.
//!
//! Two models (`timing.model`, documented in `docs/timing.md`): `ooo` (the default), an
//! out-of-order core that schedules every reference (see [`ooo`]), and `simple`, the formula
//! below, kept for speed and comparison (`--set timing.model=simple`).
//! Both see the same functional simulation; they differ only in the `timing` figures.
//!
//! The `simple` model:
//! `cycles = instructions * base_cpi
//!         + (1 - translation_overlap) * mmu_overhead_cycles
//!         + (1 - data_overlap) * data_stall_cycles`
//! where `mmu_overhead_cycles` is every cycle of translation beyond an L1 TLB hit (L2 TLB lookups
//! and page walks) and `data_stall_cycles` every cycle of a data reference beyond an L1D hit.
//! It is a first-order model: no pipeline, no queueing, overlap as a fixed fraction.

mod model_thread;
pub mod ooo;

pub use model_thread::{set_timing_thread, thread_wanted, CoreModel, ModelThread};

use crate::stats::{Stats, StatsExt};
use serde::{Deserialize, Serialize};

/// Which core model turns latencies into cycles.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum TimingModel {
    /// The first-order formula (fast; kept for speed and comparison).
    Simple,
    /// The out-of-order core of [`ooo`] (parameters under `core.*`; the default since it
    /// matched ChampSim under `core.resource_grant = "time_order"`, docs/timing.md).
    #[default]
    Ooo,
}

/// `[timing]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TimingConfig {
    /// Core model: `simple` (formula) or `ooo` (out-of-order core, `core.*`).
    pub model: TimingModel,
    /// `simple` only: cycles per instruction when every reference hits the L1 TLB and L1D.
    pub base_cpi: f64,
    /// `simple` only: fraction of data-stall cycles hidden by out-of-order execution and memory-level parallelism.
    pub data_overlap: f64,
    /// `simple` only: fraction of translation cycles hidden (0: a walk blocks the dependent load, the papers' view).
    pub translation_overlap: f64,
    /// Cycles the OS spends on one page fault (charged to `os_cycles`, not to MMU overhead).
    pub page_fault_cycles: u64,
}

impl Default for TimingConfig {
    fn default() -> Self {
        TimingConfig {
            model: TimingModel::Ooo,
            base_cpi: 0.5,
            data_overlap: 0.5,
            translation_overlap: 0.0,
            page_fault_cycles: 1000,
        }
    }
}

impl TimingConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [
            ("data_overlap", self.data_overlap),
            ("translation_overlap", self.translation_overlap),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("timing.{name} must be in [0, 1], got {v}"));
            }
        }
        if self.base_cpi.is_nan() || self.base_cpi <= 0.0 {
            return Err(format!(
                "timing.base_cpi must be positive, got {}",
                self.base_cpi
            ));
        }
        Ok(())
    }
}

/// Accumulated latencies of a run.
#[derive(Clone, Debug, Default)]
pub struct Timing {
    /// Translation cycles beyond an L1 TLB hit.
    pub mmu_overhead_cycles: u64,
    /// Data-reference cycles beyond an L1D hit.
    pub data_stall_cycles: u64,
    /// Page faults handled.
    pub page_faults: u64,
}

impl Timing {
    /// Total cycles of the run under `cfg`, OS time excluded.
    pub fn core_cycles(&self, cfg: &TimingConfig, instructions: u64) -> f64 {
        instructions as f64 * cfg.base_cpi
            + (1.0 - cfg.translation_overlap) * self.mmu_overhead_cycles as f64
            + (1.0 - cfg.data_overlap) * self.data_stall_cycles as f64
    }

    /// Write the `timing` and `mmu` sections; `work_os_cycles` is the OS time beyond the faults'
    /// fixed cost (allocation work, background work, the design's page-table work: the engine's
    /// `fault_mark`), added to `os_cycles`. With an out-of-order `core`, its
    /// cycles replace the formula's and its own figures are added (`timing.model = "ooo"`).
    pub fn stats(
        &self,
        cfg: &TimingConfig,
        instructions: u64,
        work_os_cycles: u64,
        core: Option<&ooo::OooCore>,
        out: &mut Stats,
    ) {
        // Under `core.resource_grant = "time_order"` the last references may still wait for
        // their grants: the record is of the core with all of them retired.
        let settled = core.map(|c| c.settled());
        let core = settled.as_deref();
        out.section("mmu")
            .put_u64("overhead_cycles", self.mmu_overhead_cycles);
        let core_cycles = match core {
            Some(c) => c.cycles(),
            None => self.core_cycles(cfg, instructions),
        };
        let core_model = core;
        let core = core_cycles;
        let os = (self.page_faults * cfg.page_fault_cycles + work_os_cycles) as f64;
        let t = out.section("timing");
        t.put_f64("cycles", core);
        t.put_f64("os_cycles", os);
        t.put_f64(
            "ipc",
            if core > 0.0 {
                instructions as f64 / core
            } else {
                0.0
            },
        );
        t.put_u64("data_stall_cycles", self.data_stall_cycles);
        let exposed_translation = match core_model {
            // The cycles retirement stood still behind a translation.
            Some(c) => c.head_stall_translation_cycles(),
            None => (1.0 - cfg.translation_overlap) * self.mmu_overhead_cycles as f64,
        };
        t.put_f64(
            "mmu_overhead_share",
            if core > 0.0 {
                exposed_translation / core
            } else {
                0.0
            },
        );
        if let Some(c) = core_model {
            t.put_str("model", "ooo");
            c.stats(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_follow_the_documented_formula() {
        let cfg = TimingConfig {
            model: TimingModel::Ooo,
            base_cpi: 0.5,
            data_overlap: 0.25,
            translation_overlap: 0.5,
            page_fault_cycles: 0,
        };
        let t = Timing {
            mmu_overhead_cycles: 100,
            data_stall_cycles: 40,
            page_faults: 0,
        };
        assert_eq!(t.core_cycles(&cfg, 1000), 500.0 + 50.0 + 30.0);
    }
}
