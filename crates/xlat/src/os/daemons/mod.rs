//! The OS model's background daemons on simulated time (Linux's kernel threads): what runs in
//! [`Os::tick`] between the engine's accesses, one file each.
//!
//! - [`khugepaged`]: Linux's `mm/khugepaged.c` (`os.khugepaged.*`), the scan and the 2 MiB
//!   collapse that HawkEye's, Trident's and CoalaKhugepaged's promotions reuse;
//! - [`kcompactd`]: background compaction (`os.kcompactd.*`); the compaction itself is the
//!   allocator's (`os/compaction.rs`);
//! - [`coala_khugepaged`]: Elastic Translations' CoalaKhugepaged, driven by the design through
//!   `Design::os_work` with the ranges its Leshy hints name (the design keeps the hint
//!   selection, `designs/et/khugepaged.rs` only converts them).
//!
//! The placement policies' own daemons (HawkEye's, Trident's) are the policies' files in
//! `os/policies/`, run by the policy table's `tick` hook.
//!
//! Contract: [`Os::tick`] runs, in this order, khugepaged's, kcompactd's and the configured
//! policy's wake-ups due at `now_cycles`, then applies the relocations the compaction they
//! triggered made; each daemon keeps its own next wake-up (the first is one interval in) and
//! runs every wake-up it missed, so the result depends on simulated time only.
//!
//! Calls: the fault path's install (`fault.rs`), migration and collapse primitives
//! (`migrate.rs`), the allocator (`phys.rs`, `compaction.rs`), the policy table.

pub mod coala_khugepaged;
pub mod kcompactd;
pub mod khugepaged;

use crate::os::{MapChange, Os, OsError};

impl Os {
    /// Whether any background daemon runs (the engine then calls [`Os::tick`]).
    pub fn has_daemons(&self) -> bool {
        self.cfg.khugepaged.enabled || self.cfg.kcompactd.enabled || self.policy_has_daemon()
    }

    /// Run the daemons due at simulated cycle `now_cycles`; mapping changes go to `changes`.
    pub fn tick(&mut self, now_cycles: u64, changes: &mut Vec<MapChange>) -> Result<(), OsError> {
        self.khugepaged_tick(now_cycles, changes);
        self.kcompactd_tick(now_cycles);
        self.policy_tick(now_cycles, changes);
        self.apply_relocations(changes).map(|_| ())
    }
}
