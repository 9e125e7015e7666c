//! The `[core]` section: [`CoreConfig`] (sizes and widths of the out-of-order core, Skylake-SP
//! by default), [`ResourceGrant`] (how walkers and MSHRs are granted) and [`Dependences`]
//! (whether the trace's dependences are honoured), with their checks.
//!
//! Contract: plain data; [`CoreConfig::validate`] rejects a zero count, a count above the
//! model's limit and a ROB narrower than a width. It calls nothing of the model.

use serde::{Deserialize, Serialize};

/// `[core]` section: the out-of-order core (used when `timing.model = "ooo"`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CoreConfig {
    /// Reorder-buffer entries (instructions in flight).
    pub rob_entries: u32,
    /// Integer physical registers for in-flight results: at most this many instructions past
    /// the oldest unretired one (every instruction counted as writing a register, stores and
    /// branches too: an approximation). 0: not modelled (the default; left out of a record's
    /// configuration, see `Config::to_json`). The window is the smaller of this and the ROB.
    pub int_prf_entries: u32,
    /// Instructions dispatched (allocated into the ROB) per cycle.
    pub dispatch_width: u32,
    /// Instructions retired per cycle.
    pub retire_width: u32,
    /// Load-queue entries (a load holds one from dispatch to retirement).
    pub lq_entries: u32,
    /// Store-queue / store-buffer entries (a store holds one from dispatch until it drains).
    pub sq_entries: u32,
    /// Concurrent page walks.
    pub page_walkers: u32,
    /// Outstanding L1D misses (fill buffers).
    pub l1d_mshrs: u32,
    /// Outstanding L2 misses.
    pub l2_mshrs: u32,
    /// Outstanding LLC misses of this core.
    pub llc_mshrs: u32,
    /// How walkers and MSHRs are granted (see [`ResourceGrant`]).
    pub resource_grant: ResourceGrant,
    /// Whether the references' dependences are honoured (see [`Dependences`]). Left out of a
    /// record's configuration at its default (`trace`; `Config::to_json`), so that records and
    /// snapshots written before the key existed keep their form.
    pub dependences: Dependences,
}

/// `core.dependences`: whether a reference waits for the load its address depends on
/// (`Event::Access::dep`, docs/timing.md "Dependences").
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Dependences {
    /// As the trace or workload gives them (the default).
    #[default]
    Trace,
    /// Every reference independent (every `dep` taken as 0): the overlap an unlimited
    /// memory-level parallelism would allow, to measure what the dependences cost.
    Ignore,
}

impl Dependences {
    /// The default (`trace`), left out of records.
    pub fn is_trace(&self) -> bool {
        *self == Dependences::Trace
    }
}

/// `core.resource_grant`: how page walkers and MSHRs are granted to the references, which the
/// model visits in program order.
///
/// The two schemes trade a guarantee for fidelity, and no scheme has both (proof below):
/// - `program_order`: each reference takes the unit free earliest, at
///   `max(request, earliest free)`. The pool is the multiset of free times; taking the minimum
///   and putting back `done` is monotone in the request and in every free time, and a unit
///   more is one more free time of 0. Every other step of the model is a max or a sum of
///   earlier times, so the whole schedule is monotone: more walkers, MSHRs or ROB entries never
///   make a run slower (property test `more_walkers_mshrs_or_rob_entries_are_never_slower`).
///   The cost: a reference whose address waited for a load (its request is late) is granted
///   before independent references after it in program order (whose requests are early), and
///   they queue behind it although the unit stands idle until its request.
/// - `idle_gaps`: each reference takes the earliest interval at or after its request in which
///   a unit is idle for its whole duration (per unit, a sorted set of busy intervals; for a data
///   miss, the same interval on one unit of every MSHR pool it passes). An early request fills
///   the idle time before a later one granted first, as hardware granting in time order would.
///   It is *not* monotone in resources, and cannot be: let a walker be reserved on [100, 200)
///   and let reference X (60-cycle walk) then Y (90-cycle walk, independent) follow in program
///   order, with Y requested at 0. If X is requested at 50, it does not fit before 100 and goes
///   to [200, 260); Y fits into [0, 90). If more MSHRs elsewhere make X's address ready at 0,
///   X takes [0, 60) (filling the gap is the point of the scheme, and X cannot know about Y),
///   and Y no longer fits before 100 and waits until 200. A chain of references behind Y makes
///   the run slower with more resources (a Graham scheduling anomaly, which real out-of-order
///   cores and ChampSim have too). The test
///   `idle_gap_grants_can_be_slower_with_more_mshrs_as_the_doc_shows` runs this case.
///   What does hold, and is tested: a grant never overlaps more intervals than a pool has units,
///   and it is the earliest such interval at or after the request.
/// - `time_order` (default): requests wait in a queue and are granted in the time order of the requests,
///   each to the unit free earliest (first come, first served, as hardware arbitrates; see
///   `TimeOrder`). Unlike `idle_gaps`, an early request that does not fit before a later
///   one's reservation is still served first (no fragmentation). Not monotone either (the
///   same kind of anomaly: test `time_order_grants_can_be_slower_with_more_mshrs_too`); what
///   holds and is tested: grants are made in non-decreasing request time.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ResourceGrant {
    /// In program order, to the unit free earliest (monotone in resources).
    ProgramOrder,
    /// The earliest idle interval at or after the request (fills idle gaps; not monotone).
    IdleGaps,
    /// In the time order of the requests, first come first served, as hardware grants (not
    /// monotone either; see [`ResourceGrant`]). The default: the scheme validated against
    /// ChampSim.
    #[default]
    TimeOrder,
}

impl Default for CoreConfig {
    /// Skylake-SP (see the module doc's references).
    fn default() -> Self {
        CoreConfig {
            rob_entries: 224,
            int_prf_entries: 0,
            dispatch_width: 4,
            retire_width: 4,
            lq_entries: 72,
            sq_entries: 56,
            page_walkers: 2,
            l1d_mshrs: 10,
            l2_mshrs: 16,
            llc_mshrs: 32,
            resource_grant: ResourceGrant::TimeOrder,
            dependences: Dependences::Trace,
        }
    }
}

impl CoreConfig {
    /// Instructions in flight at most: the ROB, or the register file when it is modelled and
    /// smaller.
    pub fn window_entries(&self) -> u32 {
        match self.int_prf_entries {
            0 => self.rob_entries,
            prf => prf.min(self.rob_entries),
        }
    }

    /// Every count must be positive (the register file's 0 means "not modelled") and the ROB
    /// and a modelled register file at least as large as each width.
    pub fn validate(&self) -> Result<(), String> {
        for (key, v) in [
            ("rob_entries", self.rob_entries),
            ("dispatch_width", self.dispatch_width),
            ("retire_width", self.retire_width),
            ("lq_entries", self.lq_entries),
            ("sq_entries", self.sq_entries),
            ("page_walkers", self.page_walkers),
            ("l1d_mshrs", self.l1d_mshrs),
            ("l2_mshrs", self.l2_mshrs),
            ("llc_mshrs", self.llc_mshrs),
        ] {
            if v == 0 {
                return Err(format!("core.{key} must be at least 1, got 0"));
            }
            if v > MAX_UNITS {
                return Err(format!("core.{key} must be at most {MAX_UNITS}, got {v}"));
            }
        }
        for (key, w) in [
            ("dispatch_width", self.dispatch_width),
            ("retire_width", self.retire_width),
        ] {
            if self.rob_entries < w {
                return Err(format!(
                    "core.rob_entries ({}) must be at least core.{key} ({w})",
                    self.rob_entries
                ));
            }
            if self.int_prf_entries > 0 && self.int_prf_entries < w {
                return Err(format!(
                    "core.int_prf_entries ({}) must be 0 (not modelled) or at least core.{key} \
                     ({w})",
                    self.int_prf_entries
                ));
            }
        }
        if self.int_prf_entries > MAX_UNITS {
            return Err(format!(
                "core.int_prf_entries must be at most {MAX_UNITS}, got {}",
                self.int_prf_entries
            ));
        }
        Ok(())
    }
}

/// Largest value of any `core.*` count (keeps the per-reference scans and rings small).
const MAX_UNITS: u32 = 1 << 16;
