//! The table of placement policies: one row per `os.policy` value, the config tag (its file's
//! name), the `PolicyKind` variant and a summary; the `policies!` macro turns it into
//! [`REGISTRY`] and the dispatch of every [`FaultPolicy`] hook to the configured policy.
//!
//! Contract: the dispatch is a `match` on `os.policy` over every `PolicyKind` (exhaustive: a
//! variant without a row does not compile) calling the row's `Policy`; it adds nothing to what
//! the policy does, so the model's order of operations is the policies' own.

#[cfg(test)]
use super::toy;
use super::{eager, hawkeye, mthp, reservation, thp, trident, FaultPolicy};
use crate::addr::{Asid, Mapping, Vaddr};
use crate::os::policy::PolicyKind;
use crate::os::vma::Vma;
use crate::os::{MapChange, Os, OsError, Placer};
use crate::stats::Stats;

/// Registry entry of one placement policy.
#[derive(Clone, Copy, Debug)]
pub struct PolicyInfo {
    /// The `PolicyKind` variant.
    pub kind: PolicyKind,
    /// Name: the config tag (`os.policy`), the file in `os/policies/` and the `os.policy` stat.
    pub name: &'static str,
    /// One-line description.
    pub summary: &'static str,
}

macro_rules! policies {
    ($( $(#[$attr:meta])* $kind:ident => $file:ident : $summary:literal ;)*) => {
        /// Every placement policy, in table order.
        pub const REGISTRY: &[PolicyInfo] = &[
            $( $(#[$attr])* PolicyInfo { kind: PolicyKind::$kind, name: stringify!($file), summary: $summary }, )*
        ];

        impl Os {
            /// The configured policy's [`FaultPolicy::fault`].
            pub(in crate::os) fn policy_fault(
                &mut self,
                asid: Asid,
                va: Vaddr,
                vma: &Vma,
                writable: bool,
                placer: &mut dyn Placer,
                changes: &mut Vec<MapChange>,
            ) -> Result<Mapping, OsError> {
                match self.cfg.policy {
                    $( $(#[$attr])* PolicyKind::$kind => {
                        <$file::Policy as FaultPolicy>::fault(self, asid, va, vma, writable, placer, changes)
                    } )*
                }
            }

            /// The configured policy's [`FaultPolicy::mapped`].
            pub(in crate::os) fn policy_mapped(
                &mut self,
                asid: Asid,
                start: u64,
                end: u64,
                prot_bits: u32,
                changes: &mut Vec<MapChange>,
            ) -> Result<(), OsError> {
                match self.cfg.policy {
                    $( $(#[$attr])* PolicyKind::$kind => {
                        <$file::Policy as FaultPolicy>::mapped(self, asid, start, end, prot_bits, changes)
                    } )*
                }
            }

            /// The configured policy's [`FaultPolicy::NEEDS_2M`].
            pub(in crate::os) fn policy_needs_2m(&self) -> bool {
                match self.cfg.policy {
                    $( $(#[$attr])* PolicyKind::$kind => <$file::Policy as FaultPolicy>::NEEDS_2M, )*
                }
            }

            /// The configured policy's [`FaultPolicy::has_daemon`].
            pub(in crate::os) fn policy_has_daemon(&self) -> bool {
                match self.cfg.policy {
                    $( $(#[$attr])* PolicyKind::$kind => <$file::Policy as FaultPolicy>::has_daemon(self), )*
                }
            }

            /// The configured policy's [`FaultPolicy::tick`].
            pub(in crate::os) fn policy_tick(&mut self, now_cycles: u64, changes: &mut Vec<MapChange>) {
                match self.cfg.policy {
                    $( $(#[$attr])* PolicyKind::$kind => <$file::Policy as FaultPolicy>::tick(self, now_cycles, changes), )*
                }
            }

            /// The configured policy's [`FaultPolicy::note_walk`].
            #[inline]
            pub(in crate::os) fn policy_note_walk(&mut self, asid: Asid, m: &Mapping) {
                match self.cfg.policy {
                    $( $(#[$attr])* PolicyKind::$kind => <$file::Policy as FaultPolicy>::note_walk(self, asid, m), )*
                }
            }

            /// The configured policy's [`FaultPolicy::stats_into`].
            pub(in crate::os) fn policy_stats_into(&self, s: &mut Stats) {
                match self.cfg.policy {
                    $( $(#[$attr])* PolicyKind::$kind => <$file::Policy as FaultPolicy>::stats_into(self, s), )*
                }
            }
        }
    };
}

policies! {
    Thp => thp: "Linux's THP fault path: 2 MiB where os.thp allows it and a block is free, else 4 KiB";
    Mthp => mthp: "multi-size THP: the first size of os.mthp.sizes that fits and finds a block";
    Reservation => reservation: "FreeBSD / TPS reservations: an aligned block per region, promoted in place";
    Eager => eager: "eager paging: whole VMAs mapped at mmap time in the largest aligned pages";
    Hawkeye => hawkeye: "HawkEye: THP faults and a daemon promoting the most accessed 2 MiB regions first";
    Trident => trident: "Trident: 1 GiB, 2 MiB, 4 KiB at fault and a background 1 GiB promoter";
    #[cfg(test)]
    Toy => toy: "the Adding-an-OS-policy guide's toy: fault-around (tests only)";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_has_one_row_named_by_its_config_tag() {
        for (i, p) in REGISTRY.iter().enumerate() {
            assert_eq!(p.kind.name(), p.name);
            let tag: PolicyKind =
                serde_json::from_value(serde_json::Value::String(p.name.into())).unwrap();
            assert_eq!(tag, p.kind);
            assert!(REGISTRY[..i].iter().all(|q| q.kind != p.kind), "{}", p.name);
        }
        // The six policies, and the guide's toy in tests.
        assert_eq!(REGISTRY.len(), 7);
    }
}
