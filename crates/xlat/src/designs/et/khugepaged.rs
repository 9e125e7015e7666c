//! **CoalaKhugepaged**, the design's side: Elastic Translations' asynchronous promotion daemon
//! is OS work and lives in `os/daemons/coala_khugepaged.rs` (its pacing, its counters and the
//! promotions themselves, re-exported here under their old paths); what is ET's is which ranges
//! it promotes: Leshy's hints ([`super::leshy`]), hottest first, which this file turns into
//! the daemon's [`PromotionHint`]s (a level-3 hint is a 32 MiB range, any other one a 2 MiB or
//! 64 KiB range whose enclosing 2 MiB range is collapsed).
//!
//! Contract: the conversion keeps the hints' order and drops only their sample counts (the
//! daemon never reads them).

pub use crate::os::daemons::coala_khugepaged::{
    CoalaKhugepaged, CoalaKhugepagedConfig, Counters, PromotionHint,
};

use super::leshy::Hint;

impl From<Hint> for PromotionHint {
    fn from(h: Hint) -> PromotionHint {
        let r = h.region;
        PromotionHint {
            asid: r.asid,
            vpn: r.vpn,
            is_32m: r.level == 3,
        }
    }
}
