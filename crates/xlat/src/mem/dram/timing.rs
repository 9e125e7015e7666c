//! Datasheet DRAM timings for the queued model (`mem.dram.timing`, `mem.dram.custom`), and the
//! exact clock arithmetic between core cycles and DRAM clocks.
//!
//! Owns [`DramTimingSet`], [`DramTimings`] with the named sets [`DDR4_3200AA`] and
//! [`DDR5_4800B`], and [`TickClock`]; calls nothing else of the crate.
//!
//! Contract: every timing is in DRAM command-clock cycles (nCK, one tCK = 1 / `clock_mhz`). A
//! burst moves exactly one 64-byte line in `t_bl` clocks (BL = 2 x `t_bl` transfers), so a
//! channel's peak is 64 B / (`t_bl` x tCK): for DDR4 8 B per transfer (a 64-bit channel), for
//! DDR5 4 B (a 32-bit subchannel, BL16). A named set's figures are copied from the JEDEC speed
//! bin and a vendor datasheet of that bin, rounded up to whole clocks as the standards do
//! (nCK = ceil(t / tCK)); none is tuned to a result.

use serde::{Deserialize, Serialize};

/// `mem.dram.timing`: which timing set the queued model uses.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub enum DramTimingSet {
    /// JEDEC DDR4-3200AA (22-22-22), x8 devices (1 KiB page), 8 Gb: [`DDR4_3200AA`].
    #[default]
    #[serde(rename = "ddr4_3200")]
    Ddr4x3200,
    /// JEDEC DDR4-2666V (19-19-19), x8 devices (1 KiB page), 8 Gb: [`DDR4_2666V`] (the
    /// `skylake-sp` CPU preset's).
    #[serde(rename = "ddr4_2666")]
    Ddr4x2666,
    /// JEDEC DDR5-4800B (40-39-39), x8 devices (1 KiB page), 16 Gb, one 32-bit subchannel per
    /// `channel`: [`DDR5_4800B`].
    #[serde(rename = "ddr5_4800")]
    Ddr5x4800,
    /// The table `mem.dram.custom`.
    #[serde(rename = "custom")]
    Custom,
}

impl DramTimingSet {
    /// The timings of this set (`custom` for [`DramTimingSet::Custom`]).
    pub fn timings(self, custom: &DramTimings) -> DramTimings {
        match self {
            DramTimingSet::Ddr4x3200 => DDR4_3200AA,
            DramTimingSet::Ddr4x2666 => DDR4_2666V,
            DramTimingSet::Ddr5x4800 => DDR5_4800B,
            DramTimingSet::Custom => custom.clone(),
        }
    }
}

/// One speed bin's timings, all in DRAM clocks (nCK) but `clock_mhz`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct DramTimings {
    /// Command clock in MHz (half the transfer rate).
    pub clock_mhz: u32,
    /// Burst duration: the data bus carries one 64-byte line for this many clocks (BL / 2).
    pub t_bl: u32,
    /// READ to first data (CL).
    pub t_cl: u32,
    /// ACTIVATE to READ/WRITE.
    pub t_rcd: u32,
    /// PRECHARGE to ACTIVATE.
    pub t_rp: u32,
    /// ACTIVATE to PRECHARGE, minimum.
    pub t_ras: u32,
    /// ACTIVATE to ACTIVATE, same bank.
    pub t_rc: u32,
    /// WRITE to first data (CWL).
    pub t_cwl: u32,
    /// READ to PRECHARGE.
    pub t_rtp: u32,
    /// Write recovery: end of write data to PRECHARGE.
    pub t_wr: u32,
    /// READ to READ, different bank group.
    pub t_ccd_s: u32,
    /// READ to READ, same bank group.
    pub t_ccd_l: u32,
    /// WRITE to WRITE, different bank group.
    pub t_ccd_s_wr: u32,
    /// WRITE to WRITE, same bank group.
    pub t_ccd_l_wr: u32,
    /// ACTIVATE to ACTIVATE, different bank group (same rank).
    pub t_rrd_s: u32,
    /// ACTIVATE to ACTIVATE, same bank group.
    pub t_rrd_l: u32,
    /// Four-activate window (per rank).
    pub t_faw: u32,
    /// End of write data to READ, different bank group.
    pub t_wtr_s: u32,
    /// End of write data to READ, same bank group.
    pub t_wtr_l: u32,
    /// Bus turnaround added to READ-to-WRITE (same rank): WRITE may follow READ after
    /// `t_cl + t_bl + t_rtw_turnaround - t_cwl` (read postamble and write preamble).
    pub t_rtw_turnaround: u32,
    /// Idle data-bus clocks between bursts of different ranks (rank switch).
    pub t_cs: u32,
    /// Average refresh interval (per rank).
    pub t_refi: u32,
    /// All-bank refresh time.
    pub t_rfc: u32,
}

impl Default for DramTimings {
    fn default() -> Self {
        DDR4_3200AA
    }
}

/// JEDEC DDR4-3200AA (JESD79-4, speed bin DDR4-3200AA: CL-tRCD-tRP 22-22-22, tCK 0.625 ns; the
/// bin of Micron's 8 Gb x8 MT40A1G8 speed grade -062E): tAA = tRCD = tRP = 13.75 ns, tRAS 32 ns,
/// tRC 45.75 ns, tWR 15 ns, tRTP 7.5 ns, tCCD_L 5 ns, tWTR_S 2.5 ns, tWTR_L 7.5 ns,
/// tRRD_S(1K) 2.5 ns, tRRD_L(1K) 4.9 ns, tFAW(1K) 21 ns, tREFI 7.8 us, tRFC1(8 Gb) 350 ns; CWL 16
/// (the lower CWL of the bin, 1 tCK write preamble), BL8. The nanosecond figures were checked
/// against the SPD of a DDR4-3200 22-22-22-52 module and the clock counts against Ramulator 2's
/// `DDR4_3200AA` preset, which agrees on all of them but tRFC (it takes 360 ns for 8 Gb).
/// `t_rtw_turnaround` 2 and `t_cs` 2 are not datasheet figures: the 2 clocks of JEDEC's
/// READ-to-WRITE formula (RL + BL/2 - WL + 2 tCK) and Ramulator 2's rank-switch `nCS`.
pub const DDR4_3200AA: DramTimings = DramTimings {
    clock_mhz: 1600,
    t_bl: 4,
    t_cl: 22,
    t_rcd: 22,
    t_rp: 22,
    t_ras: 52,
    t_rc: 74,
    t_cwl: 16,
    t_rtp: 12,
    t_wr: 24,
    t_ccd_s: 4,
    t_ccd_l: 8,
    t_ccd_s_wr: 4,
    t_ccd_l_wr: 8,
    t_rrd_s: 4,
    t_rrd_l: 8,
    t_faw: 34,
    t_wtr_s: 4,
    t_wtr_l: 12,
    t_rtw_turnaround: 2,
    t_cs: 2,
    t_refi: 12480,
    t_rfc: 560,
};

/// JEDEC DDR4-2666V (JESD79-4, speed bin DDR4-2666V: CL-tRCD-tRP 19-19-19, tCK 0.75 ns): tRAS
/// 32 ns, tRC = tRAS + tRP, tWR 15 ns, tRTP 7.5 ns, CWL 14 (the lower CWL of the bin), tCCD_L
/// max(5 nCK, 5.355 ns), tWTR_S max(2 nCK, 2.5 ns), tWTR_L max(4 nCK, 7.5 ns), tRRD_S(1K) 4 nCK,
/// tRRD_L(1K) max(4 nCK, 4.9 ns), tFAW(1K) 28 nCK, tREFI 7.8 us, tRFC1(8 Gb) 350 ns, BL8. The
/// clock counts are Ramulator 2's `DDR4_2666V` preset and its x8 secondary timings
/// (`python/ramulator/dram/ddr4.py` at c5b1c3a4), but tRFC, which it takes as 360 ns (as for
/// [`DDR4_3200AA`], xlat keeps JEDEC's 350 ns). `t_rtw_turnaround` and `t_cs` as for DDR4-3200.
pub const DDR4_2666V: DramTimings = DramTimings {
    clock_mhz: 1333,
    t_bl: 4,
    t_cl: 19,
    t_rcd: 19,
    t_rp: 19,
    t_ras: 43,
    t_rc: 62,
    t_cwl: 14,
    t_rtp: 10,
    t_wr: 20,
    t_ccd_s: 4,
    t_ccd_l: 7,
    t_ccd_s_wr: 4,
    t_ccd_l_wr: 7,
    t_rrd_s: 4,
    t_rrd_l: 7,
    t_faw: 28,
    t_wtr_s: 4,
    t_wtr_l: 10,
    t_rtw_turnaround: 2,
    t_cs: 2,
    t_refi: 10400,
    t_rfc: 467,
};

/// JEDEC DDR5-4800B (JESD79-5, speed bin DDR5-4800B: CL-tRCD-tRP 40-39-39, tCK 0.416 ns; the
/// bin of the `zen4` CPU preset): tRAS 32 ns, tRC = tRAS + tRP, tWR 30 ns, tRTP 7.5 ns,
/// CWL = CL - 2, BL16 on a 32-bit subchannel (8 clocks per 64-byte line), tCCD_S 8 nCK, tCCD_L
/// max(8 nCK, 5 ns), tCCD_L_WR max(32 nCK, 20 ns), tRRD_S 8 nCK, tRRD_L max(8 nCK, 5 ns),
/// tFAW(1K page) 32 nCK, tWTR_S max(4 nCK, 2.5 ns), tWTR_L max(16 nCK, 10 ns), tREFI 3.9 us,
/// tRFC1(16 Gb) 295 ns. The clock counts were checked against Ramulator 2's DDR5-4800 presets
/// (tRAS, tRTP, tWR, tCCD_S/L, tCCD_L_WR, tRRD_S/L, tWTR_S/L; its presets use other CL bins)
/// and against DRAMsim3-style DDR5-4800 configurations (tFAW 32, tRFC1 295 ns per JESD79-5's
/// refresh table); not against a vendor datasheet. `t_rtw_turnaround` 4 (DDR4's 2 clocks plus
/// DDR5's 2-clock write preamble) and `t_cs` 2 as in Ramulator 2's DDR5 model. Same-bank
/// refresh (REFsb) is not modelled.
pub const DDR5_4800B: DramTimings = DramTimings {
    clock_mhz: 2400,
    t_bl: 8,
    t_cl: 40,
    t_rcd: 39,
    t_rp: 39,
    t_ras: 77,
    t_rc: 116,
    t_cwl: 38,
    t_rtp: 18,
    t_wr: 72,
    t_ccd_s: 8,
    t_ccd_l: 12,
    t_ccd_s_wr: 8,
    t_ccd_l_wr: 48,
    t_rrd_s: 8,
    t_rrd_l: 12,
    t_faw: 32,
    t_wtr_s: 6,
    t_wtr_l: 24,
    t_rtw_turnaround: 4,
    t_cs: 2,
    t_refi: 9360,
    t_rfc: 708,
};

impl DramTimings {
    /// Reject timings the model cannot use: a zero clock or burst, a CAS-to-CAS spacing below
    /// the burst (bursts of one rank would overlap on the bus), a write latency above the read
    /// latency plus burst (the READ-to-WRITE formula would go negative), a refresh that never
    /// ends.
    pub fn validate(&self, key: &str) -> Result<(), String> {
        if self.clock_mhz == 0 || self.t_bl == 0 {
            return Err(format!("{key}: clock_mhz and t_bl must be positive"));
        }
        if self.t_ccd_s < self.t_bl || self.t_ccd_s_wr < self.t_bl {
            return Err(format!(
                "{key}: t_ccd_s ({}) and t_ccd_s_wr ({}) must be at least t_bl ({}): one rank's \
                 bursts would overlap on the data bus",
                self.t_ccd_s, self.t_ccd_s_wr, self.t_bl
            ));
        }
        if self.t_rrd_s == 0 || self.t_faw > 16 * self.t_rrd_s {
            return Err(format!(
                "{key}: t_rrd_s ({}) must be positive and t_faw ({}) at most 16 x t_rrd_s (the \
                 model looks at the ACTIVATEs of one tFAW window either side)",
                self.t_rrd_s, self.t_faw
            ));
        }
        if self.t_cwl > self.t_cl + self.t_bl + self.t_rtw_turnaround {
            return Err(format!(
                "{key}: t_cwl ({}) above t_cl + t_bl + t_rtw_turnaround ({})",
                self.t_cwl,
                self.t_cl + self.t_bl + self.t_rtw_turnaround
            ));
        }
        if self.t_refi <= self.t_rfc + self.t_rp + self.t_rc {
            return Err(format!(
                "{key}: t_refi ({}) must exceed t_rfc + t_rp + t_rc ({})",
                self.t_refi,
                self.t_rfc + self.t_rp + self.t_rc
            ));
        }
        Ok(())
    }

    /// Peak bandwidth of one channel in bytes per second: one line per burst.
    pub fn peak_bytes_per_second(&self) -> f64 {
        64.0 * self.clock_mhz as f64 * 1e6 / self.t_bl as f64
    }
}

/// Exact time base shared by core cycles and DRAM clocks: one core cycle is `core_ticks` ticks,
/// one DRAM clock `dram_ticks` ticks (the two clock rates over their greatest common divisor),
/// so that no conversion rounds until a latency is handed back in core cycles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TickClock {
    /// Ticks per core cycle.
    pub core_ticks: u64,
    /// Ticks per DRAM clock.
    pub dram_ticks: u64,
}

impl TickClock {
    /// The time base of a `core_mhz` core and a `dram_mhz` DRAM command clock (both positive).
    pub fn new(core_mhz: u32, dram_mhz: u32) -> TickClock {
        let (c, d) = (core_mhz.max(1) as u64, dram_mhz.max(1) as u64);
        let g = gcd(c, d);
        TickClock {
            core_ticks: d / g,
            dram_ticks: c / g,
        }
    }

    /// `cycles` core cycles in ticks.
    #[inline]
    pub fn core(&self, cycles: u64) -> u64 {
        cycles * self.core_ticks
    }

    /// `clocks` DRAM clocks in ticks.
    #[inline]
    pub fn dram(&self, clocks: u32) -> u64 {
        clocks as u64 * self.dram_ticks
    }

    /// `ticks` in core cycles, rounded up (a latency is over when its last tick is).
    #[inline]
    pub fn to_core_ceil(&self, ticks: u64) -> u64 {
        ticks.div_ceil(self.core_ticks)
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}
