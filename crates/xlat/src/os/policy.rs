//! Settings of the OS model's placement policies, background daemons and migration costs
//! (`os.policy`, `os.mthp.*`, `os.reservation.*`, `os.hawkeye.*`, `os.trident.*`,
//! `os.khugepaged.*`, `os.kcompactd.*`, `os.migration.*`), and the state the `Os` struct holds
//! for the policies with a daemon of their own (HawkEye's, Trident's).
//!
//! Layering: a data file below `os/mod.rs` (which names these types in `OsConfig` and `Os`); it
//! names no other file of the model. The policies' behaviour is in `policies/<name>.rs`.
//!
//! Contract: every struct rejects unknown keys, has documented defaults, and `validate` names
//! the offending key and its valid range. The defaults leave the model as it was before these
//! settings existed (`policy = "thp"`, khugepaged off).

use crate::addr::{Asid, PageSize};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which fault-time placement policy the OS model runs (one per run).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PolicyKind {
    /// Linux's THP fault path (`os.thp` = never / madvise / always).
    Thp,
    /// Linux 6.8+ multi-size THP: the sizes of `os.mthp.sizes`, tried in order at each fault.
    Mthp,
    /// FreeBSD / TPS reservations: reserve an aligned block at the first fault of a region,
    /// map base pages from it, promote in place (`os.reservation.*`).
    Reservation,
    /// Eager paging (RMM, TPS): map a whole VMA at mmap time in the largest aligned pages.
    Eager,
    /// HawkEye-like (ASPLOS'19): THP's fault path, and a daemon promoting the 2 MiB regions
    /// with the most accessed base pages first (`os.hawkeye.*`, see `os::policies::hawkeye`).
    Hawkeye,
    /// Trident (MICRO'21): 1 GiB -> 2 MiB -> 4 KiB at fault and a background 1 GiB promoter
    /// (`os.trident.*`, see `os::policies::trident`).
    Trident,
    /// The "Adding an OS policy" guide's toy, fault-around (`os::policies::toy`; tests only).
    #[cfg(test)]
    Toy,
}

impl PolicyKind {
    /// The config value (`thp`, `mthp`, ...).
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Thp => "thp",
            PolicyKind::Mthp => "mthp",
            PolicyKind::Reservation => "reservation",
            PolicyKind::Eager => "eager",
            PolicyKind::Hawkeye => "hawkeye",
            PolicyKind::Trident => "trident",
            #[cfg(test)]
            PolicyKind::Toy => "toy",
        }
    }
}

/// `os.mthp`: multi-size THP (Linux `/sys/kernel/mm/transparent_hugepage/hugepages-*kB`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MthpConfig {
    /// Enabled folio sizes, tried in this order at a fault (each when its aligned range lies in
    /// the VMA, none of it is mapped and a block is free); 4 KiB is the last resort. A size the
    /// design cannot translate as one entry is mapped as pages of the largest size it can
    /// (Linux maps a 64 KiB folio with 16 PTEs on x86).
    pub sizes: Vec<PageSize>,
}

impl Default for MthpConfig {
    fn default() -> Self {
        MthpConfig {
            sizes: vec![PageSize::Size2M, PageSize::from_order(4).expect("64 KiB")],
        }
    }
}

/// How a reservation's target size is chosen for a VMA.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ReservationRule {
    /// The largest naturally aligned block that contains the fault and lies inside the VMA
    /// (and is at most `max_bytes`): a VMA is covered by the fewest exact pages, e.g. 28 KiB at
    /// a 32 KiB boundary -> 16 + 8 + 4 KiB (TPS's conservative split).
    Exact,
    /// TPS's aggressive rule: the block may reach past the VMA's end up to the VMA's size rounded
    /// up to a power of two (28 KiB -> one 32 KiB page), where no other VMA lies; pages mapped
    /// beyond the VMA by a promotion are bloat.
    NextPow2,
}

/// `os.reservation`: reservation-based paging (FreeBSD superpages, TPS §III-B).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ReservationConfig {
    /// Share of a page's base pages that must be touched before the reservation is promoted to
    /// that page (1.0 = every base page, the TPS paper's setting; 0.5 as its option). Pages
    /// mapped by a promotion without being touched are counted as bloat.
    pub promotion_threshold: f64,
    /// Largest reservation (and page) in bytes, a power of two from 8 KiB to 1 GiB.
    pub max_bytes: u64,
    /// How the target size is chosen per VMA.
    pub rule: ReservationRule,
}

impl Default for ReservationConfig {
    fn default() -> Self {
        ReservationConfig {
            promotion_threshold: 1.0,
            max_bytes: 1 << 30,
            rule: ReservationRule::Exact,
        }
    }
}

/// `os.hawkeye`: the promotion daemon of `os.policy = "hawkeye"`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HawkeyeConfig {
    /// Simulated core cycles between wake-ups (one sampling interval each; scaled down as
    /// `os.khugepaged.interval_cycles`).
    pub interval_cycles: u64,
    /// Access-coverage buckets (HawkEye's `access_map` has 10).
    pub buckets: u32,
    /// Regions promoted at most per wake-up (8 = khugepaged's 4096 pages per wake-up).
    pub max_promotions: u32,
    /// Fewest accessed base pages of a region for it to be promoted.
    pub min_coverage: u32,
    /// OS cycles per tracked region per wake-up (reading 512 accessed bits).
    pub scan_cycles_per_region: u64,
}

impl Default for HawkeyeConfig {
    fn default() -> Self {
        HawkeyeConfig {
            interval_cycles: 10_000_000,
            buckets: 10,
            max_promotions: 8,
            min_coverage: 1,
            scan_cycles_per_region: 512 * 20,
        }
    }
}

impl HawkeyeConfig {
    /// Check ranges (errors name the key).
    pub fn validate(&self) -> Result<(), String> {
        if self.interval_cycles == 0 {
            return Err("os.hawkeye.interval_cycles must be at least 1".into());
        }
        if !(1..=512).contains(&self.buckets) {
            return Err(format!(
                "os.hawkeye.buckets must be in [1, 512], got {}",
                self.buckets
            ));
        }
        if !(1..=512).contains(&self.min_coverage) {
            return Err(format!(
                "os.hawkeye.min_coverage must be in [1, 512], got {}",
                self.min_coverage
            ));
        }
        Ok(())
    }
}

/// HawkEye's daemon state (`policies/hawkeye.rs`): accessed-page bitmaps per tracked region.
#[derive(Clone, Debug, Default)]
pub struct Hawkeye {
    /// (ASID, 2 MiB region number) -> bitmap of its 512 base pages accessed this interval.
    pub(super) regions: BTreeMap<(Asid, u64), [u64; 8]>,
    pub(super) next_wake: u64,
    pub(super) wakeups: u64,
    pub(super) regions_scanned: u64,
    pub(super) promotions: u64,
    pub(super) promotion_failures: u64,
    pub(super) coverage_promoted: u64,
}

/// `os.trident`: Trident's background promotion.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TridentConfig {
    /// Run the background promotion daemon (the fault path is Trident's either way).
    pub daemon: bool,
    /// Simulated core cycles between wake-ups (scaled down as `os.khugepaged.interval_cycles`).
    pub interval_cycles: u64,
    /// A 1 GiB range is promoted when at most this share of its 4 KiB pages is unmapped
    /// (511/512, Linux's `max_ptes_none` default ratio: any mapped range).
    pub max_unmapped_share: f64,
    /// 2 MiB collapses at most per wake-up when no 1 GiB block is available.
    pub collapses_2m_per_wake: u32,
    /// OS cycles per page-table entry examined.
    pub scan_cycles_per_entry: u64,
}

impl Default for TridentConfig {
    fn default() -> Self {
        TridentConfig {
            daemon: true,
            interval_cycles: 10_000_000,
            max_unmapped_share: 511.0 / 512.0,
            collapses_2m_per_wake: 8,
            scan_cycles_per_entry: 20,
        }
    }
}

impl TridentConfig {
    /// Check ranges (errors name the key).
    pub fn validate(&self) -> Result<(), String> {
        if self.interval_cycles == 0 {
            return Err("os.trident.interval_cycles must be at least 1".into());
        }
        if !(0.0..1.0).contains(&self.max_unmapped_share) {
            return Err(format!(
                "os.trident.max_unmapped_share must be in [0, 1), got {}",
                self.max_unmapped_share
            ));
        }
        Ok(())
    }
}

/// Trident's daemon state and counters (`policies/trident.rs`).
#[derive(Clone, Debug, Default)]
pub struct Trident {
    pub(super) next_wake: u64,
    /// Scan position: (process index, virtual address).
    pub(super) cursor: (usize, u64),
    pub(super) faults_1g: u64,
    pub(super) wakeups: u64,
    pub(super) promotions_1g: u64,
    pub(super) promotions_1g_in_place: u64,
    pub(super) promotion_1g_no_block: u64,
    pub(super) collapses_2m: u64,
    pub(super) bytes_copied: u64,
}

/// `os.khugepaged`: the background collapse daemon (Linux `mm/khugepaged.c`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct KhugepagedConfig {
    /// Run the daemon.
    pub enabled: bool,
    /// Simulated core cycles between wake-ups. Linux sleeps 10 s (`scan_sleep_millisecs`);
    /// simulated runs last well under a second, so the default is scaled down to 3.3 ms at
    /// 3 GHz (10 M cycles): set it to match the run length you model.
    pub interval_cycles: u64,
    /// 4 KiB pages scanned per wake-up (Linux `pages_to_scan`, 4096).
    pub pages_to_scan: u64,
    /// A 2 MiB range is collapsed when at most this many of its 512 pages are unmapped
    /// (Linux `max_ptes_none`, 511).
    pub max_ptes_none: u32,
    /// OS cycles per page scanned (page-table reads and checks).
    pub scan_cycles_per_page: u64,
}

impl Default for KhugepagedConfig {
    fn default() -> Self {
        KhugepagedConfig {
            enabled: false,
            interval_cycles: 10_000_000,
            pages_to_scan: 4096,
            max_ptes_none: 511,
            scan_cycles_per_page: 20,
        }
    }
}

/// `os.kcompactd`: background compaction (Linux `kcompactd`, `mm/compaction.c`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct KcompactdConfig {
    /// Run the daemon.
    pub enabled: bool,
    /// Simulated core cycles between wake-ups (scaled down as khugepaged's).
    pub interval_cycles: u64,
    /// Order of the free block each wake-up works toward (9 = 2 MiB, what THP needs).
    pub order: u8,
    /// At most this many 4 KiB pages migrated per wake-up.
    pub max_pages: u64,
}

impl Default for KcompactdConfig {
    fn default() -> Self {
        KcompactdConfig {
            enabled: false,
            interval_cycles: 10_000_000,
            order: 9,
            max_pages: 512,
        }
    }
}

impl KcompactdConfig {
    /// Check ranges (errors name the key).
    pub fn validate(&self) -> Result<(), String> {
        if self.interval_cycles == 0 {
            return Err("os.kcompactd.interval_cycles must be at least 1".into());
        }
        if self.order == 0 || self.order > PageSize::MAX_ORDER {
            return Err(format!(
                "os.kcompactd.order must be in [1, 18], got {}",
                self.order
            ));
        }
        Ok(())
    }
}

/// `os.migration`: the costs of moving, splitting and collapsing pages.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MigrationConfig {
    /// OS cycles to copy 4 KiB (Utopia's evaluation charges about 1000 cycles per migration,
    /// a DMA-engine copy; a CPU `memcpy` of 4 KiB is of the same order).
    pub copy_cycles_per_4k: u64,
    /// OS cycles of one TLB shootdown (the kernel's flush path and a local invalidation; with
    /// one core there is no inter-processor interrupt to wait for).
    pub shootdown_cycles: u64,
}

impl Default for MigrationConfig {
    fn default() -> Self {
        MigrationConfig {
            copy_cycles_per_4k: 1000,
            shootdown_cycles: 500,
        }
    }
}

/// Check the policy and daemon settings; errors name the key and its valid range.
pub fn validate(
    mthp: &MthpConfig,
    reservation: &ReservationConfig,
    khugepaged: &KhugepagedConfig,
) -> Result<(), String> {
    if mthp.sizes.is_empty() {
        return Err(
            "os.mthp.sizes must list at least one size (e.g. [\"2MiB\", \"64KiB\"])".into(),
        );
    }
    let t = reservation.promotion_threshold;
    if !(t > 0.0 && t <= 1.0) {
        return Err(format!(
            "os.reservation.promotion_threshold must be in (0, 1], got {t}"
        ));
    }
    if PageSize::from_bytes(reservation.max_bytes).is_none_or(|s| s == PageSize::Size4K) {
        return Err(format!(
            "os.reservation.max_bytes must be a power of two from 8KiB to 1GiB, got {}",
            reservation.max_bytes
        ));
    }
    if khugepaged.interval_cycles == 0 {
        return Err("os.khugepaged.interval_cycles must be at least 1".into());
    }
    if khugepaged.pages_to_scan < 512 {
        return Err(format!(
            "os.khugepaged.pages_to_scan must be at least 512 (one 2 MiB range), got {}",
            khugepaged.pages_to_scan
        ));
    }
    if khugepaged.max_ptes_none > 511 {
        return Err(format!(
            "os.khugepaged.max_ptes_none must be in [0, 511], got {}",
            khugepaged.max_ptes_none
        ));
    }
    Ok(())
}
