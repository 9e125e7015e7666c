//! DRAM with channels, banks and open-page row buffers.
//!
//! Address mapping (line = physical address >> 6), `mem.dram.address_mapping`: by default
//! (`row_hashed`) the `row_bytes / 64` consecutive lines of a row come first, then channels,
//! then banks, then rows; every row bit is folded by XOR into the channel and the bank index so
//! that strided streams and arrays at power-of-two distances spread over banks.
//! `row_contiguous` (the default before model version 9) XORs only the row's low bits into the
//! bank (permutation-based interleaving). `line_interleaved` (ChampSim's
//! field order): channel, then bank, then the row's lines, then row, no XOR; `champsim` adds
//! ChampSim's XOR of row bits into channel, bank group and bank; `ro_ba_ra_co_ch` is Ramulator 2's
//! `RoBaRaCoCh`: channel, the row's lines, rank, bank group, bank, row, no XOR (see
//! [`DramMapping`]).
//! Latency per access, in core cycles: `controller_cycles` + (row hit: tCL; row empty: tRCD + tCL;
//! row conflict: tRP + tRCD + tCL) converted from DRAM clocks. No queueing, refresh, or bus
//! contention: every access sees an idle channel.
//!
//! This file is the *idle* model ([`Dram`], `mem.dram.model = "idle"`: what `auto` gives under
//! `timing.model = "simple"` and the other models that give requests no time; the memory
//! system's row buffers always follow it, in program order). Beside it, the *queued* model
//! (`controller.rs`, [`controller::DramController`]: read and write queues, FR-FCFS
//! approximated by earliest-fit reservation of banks and the data bus, datasheet timings of
//! `timing.rs`, refresh) times every request under `ooo` (`auto`, the default); its module doc
//! has its model, configuration and deviations. Both share the address mapping
//! (`mapping.rs`).
//!
//! Owns its configuration (`mem.dram`, [`DramConfig`], composed into `[mem]` by `mem/mod.rs`);
//! calls nothing else of the crate.

mod channel;
pub mod controller;
pub mod mapping;
#[cfg(test)]
mod tests;
pub mod timing;
mod window;

pub use mapping::{AddressMap, DramMapping};
pub use timing::{DramTimingSet, DramTimings};

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
    /// Which DRAM model the memory system uses: `idle` (this file) or `queued` (the queued
    /// model, not wired into the engine yet). The keys below are the queued model's.
    pub model: DramModel,
    /// The queued model's timing set (`ddr4_3200`, `ddr5_4800` or `custom`); its tCL, tRCD, tRP
    /// and clock must equal `t_cl`, `t_rcd`, `t_rp` and `dram_clock_mhz`.
    pub timing: DramTimingSet,
    /// Ranks per channel (queued model; `banks_per_channel` counts all ranks' banks).
    pub ranks: u32,
    /// Bank groups per rank (queued model; DDR4 x8: 4, DDR5 x8: 8).
    pub bank_groups: u32,
    /// Read-queue entries per channel (queued model; Ramulator 2's default 32).
    pub read_queue_entries: u32,
    /// Write-queue entries per channel (queued model; Ramulator 2's default 32).
    pub write_queue_entries: u32,
    /// Buffered writes that start a write drain (queued model; 26: Ramulator 2 drains above
    /// 0.8 x 32 entries).
    pub write_high_watermark_entries: u32,
    /// Buffered writes at which a drain stops (queued model; 6: Ramulator 2 stops below
    /// 0.2 x 32 entries).
    pub write_low_watermark_entries: u32,
    /// All-bank refresh every tREFI, blocking the rank for tRFC (queued model).
    pub refresh: bool,
    /// How far back in core cycles a request's arrival may go behind the latest arrival seen
    /// (queued model): the history kept for placing it. An older arrival is moved up to it.
    pub reorder_window_cycles: u64,
    /// The timings of `timing = "custom"` (defaults: DDR4-3200AA).
    pub custom: DramTimings,
}

/// `mem.dram.model`: the DRAM model behind the caches.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DramModel {
    /// `queued` when the core model gives every request a time (`timing.model = "ooo"` with
    /// `core.resource_grant` `time_order` or `program_order`), else `idle`. A run's record
    /// names the model it used ([`DramModel::resolve`]).
    #[default]
    Auto,
    /// Every access sees an idle channel: [`Dram`].
    Idle,
    /// Queues, FR-FCFS, bank and bus timing: [`controller::DramController`], driven by the
    /// out-of-order core at each request's time (see `crate::timing::ooo`).
    Queued,
}

impl DramModel {
    /// The model a run uses: `auto` becomes `queued` when `timed` (the core model gives each
    /// request a time), else `idle`; an explicit choice stays.
    pub fn resolve(self, timed: bool) -> DramModel {
        match self {
            DramModel::Auto if timed => DramModel::Queued,
            DramModel::Auto => DramModel::Idle,
            m => m,
        }
    }
}

/// The `mem.dram` keys that only the queued model reads: a run's record leaves them out under
/// `model = "idle"` (see [`DramConfig::trim_record`]), so that records stay as they were before
/// the queued model existed.
pub const QUEUED_MODEL_KEYS: [&str; 11] = [
    "model",
    "timing",
    "ranks",
    "bank_groups",
    "read_queue_entries",
    "write_queue_entries",
    "write_high_watermark_entries",
    "write_low_watermark_entries",
    "refresh",
    "reorder_window_cycles",
    "custom",
];

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
            address_mapping: DramMapping::RowHashed,
            model: DramModel::Auto,
            timing: DramTimingSet::Ddr4x3200,
            ranks: 1,
            bank_groups: 4,
            read_queue_entries: 32,
            write_queue_entries: 32,
            write_high_watermark_entries: 26,
            write_low_watermark_entries: 6,
            refresh: true,
            reorder_window_cycles: 4096,
            custom: DramTimings::default(),
        }
    }
}

impl DramConfig {
    /// Check the organisation, the clocks and (for `model = "queued"`) the queued model's keys.
    pub fn validate(&self) -> Result<(), String> {
        if self.channels == 0 || self.banks_per_channel == 0 || self.row_bytes < 64 {
            return Err(
                "mem.dram: channels, banks_per_channel must be positive and row_bytes >= 64".into(),
            );
        }
        if self.dram_clock_mhz == 0 || self.core_clock_mhz == 0 {
            return Err("mem.dram: dram_clock_mhz and core_clock_mhz must be positive".into());
        }
        let slices_bits = matches!(
            self.address_mapping,
            DramMapping::Champsim | DramMapping::RoBaRaCoCh
        );
        if self.model == DramModel::Idle && !slices_bits {
            return Ok(());
        }
        // Only the queued model and the `champsim` and `ro_ba_ra_co_ch` mappings see ranks and
        // bank groups.
        let per_rank_group = self.ranks as u64 * self.bank_groups as u64;
        if per_rank_group == 0 || !(self.banks_per_channel as u64).is_multiple_of(per_rank_group) {
            return Err(format!(
                "mem.dram.banks_per_channel ({}) must be a positive multiple of ranks ({}) x \
                 bank_groups ({})",
                self.banks_per_channel, self.ranks, self.bank_groups
            ));
        }
        if slices_bits {
            let banks_per_group = self.banks_per_channel as u64 / per_rank_group;
            let counts = [
                ("channels", self.channels as u64),
                ("ranks", self.ranks as u64),
                ("bank_groups", self.bank_groups as u64),
                ("banks per bank group", banks_per_group),
                ("row_bytes / 64", self.row_bytes / 64),
            ];
            if let Some((name, n)) = counts.iter().find(|(_, n)| !n.is_power_of_two()) {
                return Err(format!(
                    "mem.dram.address_mapping = \"{}\" slices address bits: {name} ({n}) \
                     must be a power of two",
                    if self.address_mapping == DramMapping::Champsim {
                        "champsim"
                    } else {
                        "ro_ba_ra_co_ch"
                    }
                ));
            }
        }
        if self.model == DramModel::Idle {
            return Ok(());
        }
        let key = match self.timing {
            DramTimingSet::Custom => "mem.dram.custom",
            _ => "mem.dram.timing",
        };
        let t = self.timings();
        t.validate(key)?;
        for (name, ours, theirs) in [
            ("t_cl", self.t_cl, t.t_cl),
            ("t_rcd", self.t_rcd, t.t_rcd),
            ("t_rp", self.t_rp, t.t_rp),
            ("dram_clock_mhz", self.dram_clock_mhz, t.clock_mhz),
        ] {
            if ours != theirs {
                return Err(format!(
                    "mem.dram.{name} = {ours} disagrees with {key} ({theirs}): the idle and \
                     queued models share tCL, tRCD, tRP and the clock; set them alike (a \
                     timing set, or `mem.dram.timing = \"custom\"` with mem.dram.custom.*), or \
                     keep the idle model with mem.dram.model = \"idle\""
                ));
            }
        }
        if self.read_queue_entries == 0 || self.write_queue_entries == 0 {
            return Err(
                "mem.dram: read_queue_entries and write_queue_entries must be positive".into(),
            );
        }
        if self.write_low_watermark_entries >= self.write_high_watermark_entries
            || self.write_high_watermark_entries > self.write_queue_entries
        {
            return Err(format!(
                "mem.dram: write_low_watermark_entries ({}) < write_high_watermark_entries ({}) \
                 <= write_queue_entries ({}) must hold",
                self.write_low_watermark_entries,
                self.write_high_watermark_entries,
                self.write_queue_entries
            ));
        }
        if self.reorder_window_cycles == 0 {
            return Err("mem.dram.reorder_window_cycles must be positive".into());
        }
        Ok(())
    }

    /// The queued model's timings: the named set, or `custom`.
    pub fn timings(&self) -> DramTimings {
        self.timing.timings(&self.custom)
    }

    /// Leave out of a run record's `mem.dram` table the keys the run does not use, and name the
    /// model it used (`used`, [`DramModel::resolve`]d) in place of `auto`: every
    /// [`QUEUED_MODEL_KEYS`] under the idle model, `custom` unless `timing = "custom"`.
    pub fn trim_record(
        &self,
        used: DramModel,
        dram: &mut serde_json::Map<String, serde_json::Value>,
    ) {
        if used == DramModel::Idle {
            for key in QUEUED_MODEL_KEYS {
                dram.shift_remove(key);
            }
        } else {
            dram.insert("model".into(), serde_json::json!("queued"));
            if self.timing != DramTimingSet::Custom {
                dram.shift_remove("custom");
            }
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
    map: AddressMap,
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
        Dram {
            map: AddressMap::new(
                cfg.address_mapping,
                cfg.channels,
                cfg.banks_per_channel,
                cfg.row_bytes,
                cfg.ranks,
                cfg.bank_groups,
            ),
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
    fn open(&mut self, line: u64) -> RowOutcome {
        let (bank, row) = self.map.locate(line);
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
