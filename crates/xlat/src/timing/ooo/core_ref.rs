//! [`CoreRef`]: what the engine tells the core about one reference once the functional
//! simulation has handled it (kind, page and line for merging, instruction count, dependence,
//! translation and data latencies, the level that served it).
//!
//! Contract: plain data, read in program order by the model. It calls nothing of the model.

use crate::mem::ServedBy;
use crate::trace::AccessKind;

/// What the engine knows about one reference once the functional simulation has handled it.
#[derive(Clone, Copy, Debug)]
pub struct CoreRef {
    /// Load, store or instruction fetch.
    pub kind: AccessKind,
    /// Virtual page number (4 KiB) referenced: walks to the same page merge.
    pub vpn: u64,
    /// Physical line referenced: fills of the same line merge.
    pub line: u64,
    /// Instructions since the previous reference, this one's included (0: same instruction).
    pub instrs: u32,
    /// References back to the one whose loaded value this address depends on (0: none).
    pub dep: u16,
    /// Translation cycles beyond an L1 TLB hit, walk included.
    pub xlat_cycles: u64,
    /// The page walk's part of `xlat_cycles` (0: no walk).
    pub walk_cycles: u64,
    /// Latency of the data access through the hierarchy.
    pub data_cycles: u32,
    /// The level that served the data access.
    pub data_level: ServedBy,
    /// Memory events ([`crate::mem::MemEvent`]) of its page walk, given with it (0 unless the
    /// queued DRAM model is on).
    pub walk_events: u16,
    /// Memory events of its data access, after the walk's.
    pub data_events: u8,
}

impl CoreRef {
    /// Its memory events, walk and data.
    #[inline(always)]
    pub fn events(&self) -> usize {
        self.walk_events as usize + self.data_events as usize
    }
}
