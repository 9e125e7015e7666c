//! DRAM with channels, banks and open-page row buffers.
//!
//! Address mapping (line = physical address >> 6), `mem.dram.address_mapping`: by default
//! (`row_contiguous`) the `row_bytes / 64` consecutive lines of a row come first, then channels,
//! then banks, then rows; the bank index is XORed with the low row bits (permutation-based
//! interleaving) so that strided streams spread over banks. `line_interleaved` (ChampSim's
//! mapping): channel, then bank, then the row's lines, then row, no XOR.
//! Latency per access, in core cycles: `controller_cycles` + (row hit: tCL; row empty: tRCD + tCL;
//! row conflict: tRP + tRCD + tCL) converted from DRAM clocks. No queueing, refresh, or bus
//! contention: every access sees an idle channel.
//!
//! Owns its configuration (`mem.dram`, [`DramConfig`], composed into `[mem]` by `mem/mod.rs`);
//! calls nothing else of the crate.

use serde::{Deserialize, Serialize};

/// DRAM timing and organisation.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DramConfig {
    /// Channels.
    pub channels: u32,
    /// Banks per channel (ranks x bank groups x banks).
    pub banks_per_channel: u32,
    /// Row-buffer size in bytes.
    pub row_bytes: u64,
    /// CAS latency (tCL) in DRAM clock cycles.
    pub t_cl: u32,
    /// RAS-to-CAS delay (tRCD) in DRAM clock cycles.
    pub t_rcd: u32,
    /// Row precharge (tRP) in DRAM clock cycles.
    pub t_rp: u32,
    /// DRAM command clock in MHz (DDR4-3200: 1600).
    pub dram_clock_mhz: u32,
    /// Core clock in MHz, to turn DRAM cycles into core cycles.
    pub core_clock_mhz: u32,
    /// Fixed controller + interconnect latency in core cycles added to every DRAM access.
    pub controller_cycles: u32,
    /// How a line's address picks its channel, bank and row (see [`DramMapping`]).
    pub address_mapping: DramMapping,
}

/// `mem.dram.address_mapping`: which address bits pick the channel, the bank and the row.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DramMapping {
    /// The consecutive lines of a row first, then channel, then bank (XORed with the low row
    /// bits), then row: a sequential stream stays in one open row for `row_bytes`.
    #[default]
    RowContiguous,
    /// Channel, then bank, then the row's columns, then row, from the line address up, with no
    /// XOR: consecutive lines go to different channels and banks, so streams over several
    /// arrays meet in every bank and conflict in its row buffer. ChampSim's mapping (its
    /// `DRAM_ADDRESS_MAPPING`: offset, channel, bank group, bank, column, rank, row), for the
    /// ChampSim validation (docs/timing.md).
    LineInterleaved,
}

impl Default for DramConfig {
    fn default() -> Self {
        DramConfig {
            channels: 2,
            banks_per_channel: 16,
            row_bytes: 8192,
            t_cl: 22,
            t_rcd: 22,
            t_rp: 22,
            dram_clock_mhz: 1600,
            core_clock_mhz: 2600,
            controller_cycles: 40,
            address_mapping: DramMapping::RowContiguous,
        }
    }
}

/// What the row buffer did for one access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowOutcome {
    /// The row was open.
    Hit,
    /// No row was open in the bank.
    Empty,
    /// Another row was open and had to be closed.
    Conflict,
}

/// Counters of the DRAM model.
#[derive(Clone, Copy, Debug, Default)]
pub struct DramCounters {
    /// Reads.
    pub reads: u64,
    /// Writes (write-backs from the LLC).
    pub writes: u64,
    /// Reads issued for page-table entries.
    pub pt_reads: u64,
    /// Row-buffer hits, empties and conflicts (reads and writes).
    pub row: [u64; 3],
    /// Sum of read latencies in core cycles.
    pub read_cycles: u64,
}

/// The DRAM model.
#[derive(Clone, Debug)]
pub struct Dram {
    lines_per_row: u64,
    channels: u64,
    banks: u64,
    /// log2 of (lines_per_row, channels, banks) when all are powers of two: the address split
    /// then costs shifts instead of five divisions per access.
    shifts: Option<(u32, u32, u32)>,
    /// `mem.dram.address_mapping = "line_interleaved"`.
    line_interleaved: bool,
    open_row: Vec<u64>,
    latency: [u32; 3],
    /// Counters.
    pub c: DramCounters,
}

const CLOSED: u64 = u64::MAX;

impl Dram {
    /// All banks closed.
    pub fn new(cfg: &DramConfig) -> Dram {
        let to_core = |dram_clocks: u32| {
            (dram_clocks as u64 * cfg.core_clock_mhz as u64).div_ceil(cfg.dram_clock_mhz as u64)
                as u32
                + cfg.controller_cycles
        };
        let lines_per_row = (cfg.row_bytes / 64).max(1);
        let (ch, bk) = (cfg.channels as u64, cfg.banks_per_channel as u64);
        let pow2 = lines_per_row.is_power_of_two() && ch.is_power_of_two() && bk.is_power_of_two();
        Dram {
            shifts: pow2.then(|| {
                (
                    lines_per_row.trailing_zeros(),
                    ch.trailing_zeros(),
                    bk.trailing_zeros(),
                )
            }),
            line_interleaved: cfg.address_mapping == DramMapping::LineInterleaved,
            lines_per_row,
            channels: cfg.channels as u64,
            banks: cfg.banks_per_channel as u64,
            open_row: vec![CLOSED; (cfg.channels * cfg.banks_per_channel) as usize],
            latency: [
                to_core(cfg.t_cl),
                to_core(cfg.t_rcd + cfg.t_cl),
                to_core(cfg.t_rp + cfg.t_rcd + cfg.t_cl),
            ],
            c: DramCounters::default(),
        }
    }

    /// Latency in core cycles of a row hit, an empty bank, and a row conflict.
    pub fn latencies(&self) -> [u32; 3] {
        self.latency
    }

    #[inline]
    fn locate(&self, line: u64) -> (usize, u64) {
        if self.line_interleaved {
            return self.locate_line_interleaved(line);
        }
        if let Some((lpr, ch, bk)) = self.shifts {
            let rest = line >> lpr;
            let channel = rest & ((1 << ch) - 1);
            let rest = rest >> ch;
            let row = rest >> bk;
            let bank = (rest ^ row) & ((1 << bk) - 1);
            return (((channel << bk) | bank) as usize, row);
        }
        let rest = line / self.lines_per_row;
        let channel = rest % self.channels;
        let rest = rest / self.channels;
        let row = rest / self.banks;
        let bank = (rest % self.banks) ^ (row % self.banks);
        ((channel * self.banks + bank) as usize, row)
    }

    /// (bank, row) under `line_interleaved`: channel from the lowest line bits, then bank, then
    /// the row's `lines_per_row` columns, then row.
    #[cold]
    fn locate_line_interleaved(&self, line: u64) -> (usize, u64) {
        let channel = line % self.channels;
        let rest = line / self.channels;
        let bank = rest % self.banks;
        let row = rest / self.banks / self.lines_per_row;
        ((channel * self.banks + bank) as usize, row)
    }

    #[inline]
    fn open(&mut self, line: u64) -> RowOutcome {
        let (bank, row) = self.locate(line);
        let outcome = match self.open_row[bank] {
            r if r == row => RowOutcome::Hit,
            CLOSED => RowOutcome::Empty,
            _ => RowOutcome::Conflict,
        };
        self.open_row[bank] = row;
        self.c.row[outcome as usize] += 1;
        outcome
    }

    /// A read of `line`; returns its latency in core cycles.
    #[inline]
    pub fn read(&mut self, line: u64, page_table: bool) -> (u32, RowOutcome) {
        let o = self.open(line);
        let lat = self.latency[o as usize];
        self.c.reads += 1;
        self.c.pt_reads += page_table as u64;
        self.c.read_cycles += lat as u64;
        (lat, o)
    }

    /// A write-back of `line` (off the critical path: no latency charged, row state changes).
    #[inline]
    pub fn write(&mut self, line: u64) {
        self.open(line);
        self.c.writes += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_hit_empty_and_conflict_cost_what_the_timings_say() {
        let cfg = DramConfig::default();
        let mut d = Dram::new(&cfg);
        // DDR4-3200 at 1600 MHz, core 2600 MHz: 22 clocks = ceil(22 * 2600 / 1600) = 36 cycles.
        let (cl, rcd_cl, rp_rcd_cl) = (36 + 40, 72 + 40, 108 + 40);
        assert_eq!(d.latencies(), [cl, rcd_cl, rp_rcd_cl]);
        assert_eq!(d.read(0, false), (rcd_cl, RowOutcome::Empty));
        assert_eq!(d.read(1, false), (cl, RowOutcome::Hit), "same row");
        // Same channel and bank, next row: lines_per_row * channels * banks lines further, with
        // the XOR permutation undone by also moving one bank.
        let lpr = cfg.row_bytes / 64;
        let per_row = lpr * cfg.channels as u64 * cfg.banks_per_channel as u64;
        let same_bank_next_row = per_row + lpr * cfg.channels as u64;
        assert_eq!(
            d.read(same_bank_next_row, true),
            (rp_rcd_cl, RowOutcome::Conflict)
        );
        assert_eq!(d.c.row, [1, 1, 1]);
        assert_eq!(d.c.pt_reads, 1);
    }

    #[test]
    fn line_interleaved_mapping_spreads_consecutive_lines_over_channels_and_banks_like_champsim() {
        let cfg = DramConfig {
            address_mapping: DramMapping::LineInterleaved,
            ..DramConfig::default()
        };
        let mut d = Dram::new(&cfg);
        let banks = (cfg.channels * cfg.banks_per_channel) as u64;
        // Lines 0 .. channels x banks each open their own bank.
        for line in 0..banks {
            assert_eq!(d.read(line, false).1, RowOutcome::Empty, "line {line}");
        }
        // The next lines are the next columns of the same rows.
        assert_eq!(d.read(banks, false).1, RowOutcome::Hit);
        // A row holds row_bytes / 64 columns per bank: the line that many columns on is in the
        // same bank's next row.
        let next_row = banks * cfg.row_bytes / 64;
        assert_eq!(d.read(next_row, false).1, RowOutcome::Conflict);
    }

    #[test]
    fn three_interleaved_streams_hit_open_rows_row_contiguously_and_conflict_line_interleaved() {
        let hit_rate = |mapping: DramMapping| {
            let mut d = Dram::new(&DramConfig {
                address_mapping: mapping,
                ..DramConfig::default()
            });
            // a[i] = b[i] + c[i] over three arrays 64 MiB + 3 row-groups apart (a power-of-two
            // spacing defeats the row-contiguous mapping's XOR: every array in the same bank),
            // one access per line.
            let array_lines = (64u64 << 20) / 64 + 3 * 128 * 2;
            for i in 0..100_000u64 {
                for a in 0..3 {
                    d.read(a * array_lines + i, false);
                }
            }
            d.c.row[0] as f64 / d.c.reads as f64
        };
        assert!(hit_rate(DramMapping::RowContiguous) > 0.95);
        assert!(hit_rate(DramMapping::LineInterleaved) < 0.05);
    }
}
