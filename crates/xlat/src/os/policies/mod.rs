//! The fault-time placement policies (`os.policy`): one file each, one trait, one table.
//!
//! A policy decides what a minor fault maps (the page size, through the allocator or the
//! design's placement hook), may map memory when a VMA is created, and may run a promotion
//! daemon of its own on simulated time. Each policy is a file holding a unit struct `Policy`
//! that implements [`FaultPolicy`], plus the `impl Os` methods of its mechanism:
//! [`thp`] (Linux THP), [`mthp`] (multi-size THP), [`reservation`] (FreeBSD / TPS),
//! [`eager`] (eager paging), [`hawkeye`] (HawkEye), [`trident`] (Trident). [`hugetlb`] is the
//! HugeTLB pool's fault, which runs before whichever policy is configured (`os.hugetlb.*` is not
//! an `os.policy`), so it has no row. ET's CoalaKhugepaged promotes from `os/daemons/`.
//!
//! # Adding a policy
//! 1. a variant of `PolicyKind` in `os/policy.rs` (its snake_case name is the config tag), and a
//!    settings section in `OsConfig` if it has settings (state for a daemon: a field of `Os`
//!    whose type lives in `os/policy.rs`);
//! 2. a file here with `pub struct Policy;` and `impl FaultPolicy for Policy`, overriding the
//!    hooks its mechanism needs;
//! 3. a row in the `policies!` table of [`registry`] (its dispatch matches every `PolicyKind`:
//!    a missing row does not compile).
//!
//! `toy.rs` follows these steps with a toy policy (fault-around), compiled for tests only, and
//! runs it through the whole engine.
//!
//! Layering: the policy files name [`FaultPolicy`] (this file) and `Os` (`os/mod.rs`);
//! `registry.rs` names the policy files; this file names neither, so there is no circle.

pub mod eager;
pub mod hawkeye;
pub mod hugetlb;
pub mod mthp;
pub mod registry;
pub mod reservation;
pub mod thp;
// The guide's toy, for tests only (its row and `PolicyKind::Toy` are `#[cfg(test)]` too).
#[cfg(test)]
pub mod toy;
pub mod trident;

pub use registry::{PolicyInfo, REGISTRY};

use crate::addr::{Asid, Mapping, Vaddr};
use crate::os::vma::Vma;
use crate::os::{MapChange, Os, OsError, Placer};
use crate::stats::Stats;

/// A fault-time placement policy: associated functions over the OS model, dispatched by
/// [`registry`] to the configured policy (static dispatch, a `match` on `os.policy`).
///
/// Contract:
/// - `fault` is called for every minor fault the HugeTLB pool did not take, after the fault was
///   checked (inside a VMA, permitted, not mapped yet) and counted. It maps the page(s) through
///   the fault path's primitives (`Os::alloc_page`, `Os::install`, so every mapping reaches
///   `changes`, the reclaim clock and compaction's owner records) and returns the translation
///   covering `va`. An error leaves no mapping half-made.
/// - The other hooks default to nothing; a policy overrides those its mechanism needs. Each runs
///   only when its policy is the configured one, at the point of the model's sequence its doc
///   names: the registry dispatches, it never reorders.
pub trait FaultPolicy {
    /// Whether the policy needs the design to translate 2 MiB pages (its daemon makes them
    /// whatever `os.thp` says); `Os::set_page_sizes` refuses a design without them.
    const NEEDS_2M: bool = false;

    /// Map the page(s) of a minor fault on `va` in `vma` and return the translation covering
    /// `va` (`writable`: the VMA allows stores; `placer`: the design's placement hook).
    fn fault(
        os: &mut Os,
        asid: Asid,
        va: Vaddr,
        vma: &Vma,
        writable: bool,
        placer: &mut dyn Placer,
        changes: &mut Vec<MapChange>,
    ) -> Result<Mapping, OsError>;

    /// `[start, end)` of `asid` was just made a VMA with `prot_bits` (an mmap, or heap growth
    /// by brk): a policy that maps ahead of faults does it here. Default: nothing.
    fn mapped(
        _os: &mut Os,
        _asid: Asid,
        _start: u64,
        _end: u64,
        _prot_bits: u32,
        _changes: &mut Vec<MapChange>,
    ) -> Result<(), OsError> {
        Ok(())
    }

    /// Whether the policy runs a daemon of its own (the engine then calls `Os::tick`).
    fn has_daemon(_os: &Os) -> bool {
        false
    }

    /// Run the policy's daemon wake-ups due at `now_cycles` (after khugepaged's and
    /// kcompactd's, before the relocations they made are applied).
    fn tick(_os: &mut Os, _now_cycles: u64, _changes: &mut Vec<MapChange>) {}

    /// The MMU walked to the page `m` of `asid` (hardware sets its accessed bit). Called on
    /// every page walk: keep it cheap.
    fn note_walk(_os: &mut Os, _asid: Asid, _m: &Mapping) {}

    /// Write the policy's counters into the `os` section (after `placed_by_design`).
    fn stats_into(_os: &Os, _s: &mut Stats) {}
}
