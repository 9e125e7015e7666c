//! The `[lvm]` configuration section: the index's cost model, training and walker parameters,
//! with their defaults and range checks.
//!
//! Contract: plain data; [`LvmConfig::validate`] rejects what the index cannot build. It calls
//! nothing of the design: the index (`index.rs`) and the design (`mod.rs`) read it, so it sits
//! below both.

use serde::{Deserialize, Serialize};

/// `[lvm]` section.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LvmConfig {
    /// Cost-model weight of the index depth.
    pub x1: f64,
    /// Cost-model weight of the index size (per 64-byte line).
    pub x2: f64,
    /// Cost-model weight of collision rate x extra accesses per collision.
    pub x3: f64,
    /// Most levels of models (1..=8).
    pub depth_limit: u32,
    /// Most extra GPT lines a lookup may read (C_err).
    pub error_bound: u32,
    /// Gapped-array scale: slots per key at training.
    pub ga_scale: f64,
    /// Smallest extension of the key range on an out-of-bounds insert near the edge, in bytes.
    pub min_insert_distance_bytes: u64,
    /// Most children of one node.
    pub max_children: u32,
    /// Largest buddy order of one GPT block (18 = 1 GiB; 6 = 256 KiB).
    pub max_gpt_order: u8,
    /// LWC entries (fully associative; 0 disables it).
    pub lwc_entries: u32,
    /// LWC lookup plus model computation, cycles per level.
    pub lwc_latency_cycles: u32,
    /// OS cycles per insert beyond the PTE write (model evaluation, slot search).
    pub insert_cycles: u64,
    /// OS cycles per key of every leaf fit made by training.
    pub train_cycles_per_key: u64,
    /// With `os.aslr`: key the index by the page number minus its zone's ASLR shift (the bases
    /// the OS exposes to the hardware, §4.5); false keys it by the randomized page number.
    pub remove_aslr_bases: bool,
}

impl Default for LvmConfig {
    fn default() -> Self {
        LvmConfig {
            x1: 10.0,
            x2: 5.0,
            x3: 200.0,
            depth_limit: 3,
            error_bound: 3,
            ga_scale: 1.3,
            min_insert_distance_bytes: 64 << 20,
            max_children: 4096,
            max_gpt_order: 18,
            lwc_entries: 16,
            lwc_latency_cycles: 2,
            insert_cycles: 50,
            train_cycles_per_key: 40,
            remove_aslr_bases: true,
        }
    }
}

impl LvmConfig {
    /// Check ranges.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=8).contains(&self.depth_limit) {
            return Err(format!(
                "depth_limit must be in 1..=8, got {}",
                self.depth_limit
            ));
        }
        if !(self.ga_scale >= 1.0 && self.ga_scale <= 16.0) {
            return Err(format!(
                "ga_scale must be in [1, 16], got {}",
                self.ga_scale
            ));
        }
        if self.max_children < 2 {
            return Err(format!(
                "max_children must be at least 2, got {}",
                self.max_children
            ));
        }
        if self.max_gpt_order > crate::os::buddy::MAX_ORDER {
            return Err(format!(
                "max_gpt_order must be at most {}, got {}",
                crate::os::buddy::MAX_ORDER,
                self.max_gpt_order
            ));
        }
        for (name, v) in [("x1", self.x1), ("x2", self.x2), ("x3", self.x3)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name} must be finite and >= 0, got {v}"));
            }
        }
        if self.error_bound > 64 {
            return Err(format!(
                "error_bound must be at most 64, got {}",
                self.error_bound
            ));
        }
        Ok(())
    }
}
