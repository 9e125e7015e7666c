//! Tests of the DRAM models: the idle one (`mod.rs`, moved here unchanged) and the queued
//! model's configuration, timing sets and address mapping.

use super::timing::{TickClock, DDR4_3200AA, DDR5_4800B};
use super::*;

// The idle model (moved unchanged from `mod.rs`).

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

// The queued model's configuration.

/// One DDR4-3200AA channel, 1 rank x 4 bank groups x 4 banks, 8 KiB rows, no refresh, no fixed
/// controller latency: the times below are the DRAM's alone.
fn one_channel() -> DramConfig {
    DramConfig {
        channels: 1,
        model: DramModel::Queued,
        refresh: false,
        controller_cycles: 0,
        ..DramConfig::default()
    }
}

#[test]
fn dram_clocks_convert_to_core_cycles_on_an_exact_tick_base() {
    // 2600 MHz core, 1600 MHz DRAM: gcd 200, a core cycle is 8 ticks, a DRAM clock 13.
    let c = TickClock::new(2600, 1600);
    assert_eq!((c.core_ticks, c.dram_ticks), (8, 13));
    // tCL = 22 clocks = 13.75 ns = 35.75 core cycles, handed back as 36.
    assert_eq!(c.dram(22), 286);
    assert_eq!(c.to_core_ceil(c.dram(22)), 36);
    assert_eq!(c.core(36), 288);
    // Equal clocks: one tick each.
    let c = TickClock::new(2400, 2400);
    assert_eq!((c.core_ticks, c.dram_ticks), (1, 1));
    // Peak: one 64-byte burst per t_bl clocks.
    assert_eq!(DDR4_3200AA.peak_bytes_per_second(), 25.6e9);
    assert_eq!(DDR5_4800B.peak_bytes_per_second(), 19.2e9);
}

#[test]
fn the_queued_keys_are_checked_and_appear_in_the_record_only_under_the_queued_model() {
    let ddr5 = DramConfig {
        model: DramModel::Queued,
        timing: DramTimingSet::Ddr5x4800,
        ..DramConfig::default()
    };
    let e = ddr5.validate().unwrap_err();
    assert!(
        e.contains("mem.dram.t_cl = 22") && e.contains("(40)"),
        "{e}"
    );
    let ok = DramConfig {
        t_cl: 40,
        t_rcd: 39,
        t_rp: 39,
        dram_clock_mhz: 2400,
        ..ddr5
    };
    assert_eq!(ok.validate(), Ok(()));
    let bad = DramConfig {
        write_high_watermark_entries: 40,
        ..one_channel()
    };
    assert!(bad
        .validate()
        .unwrap_err()
        .contains("write_low_watermark_entries"));
    let bad = DramConfig {
        bank_groups: 3,
        ..one_channel()
    };
    assert!(bad.validate().unwrap_err().contains("multiple of ranks"));
    // The idle model ignores the queued keys (presets with other bank counts stay valid).
    assert_eq!(
        DramConfig {
            bank_groups: 3,
            ..DramConfig::default()
        }
        .validate(),
        Ok(())
    );
    // Unknown keys are rejected, in the table and in `custom`.
    assert!(toml::from_str::<DramConfig>("modle = \"queued\"").is_err());
    assert!(toml::from_str::<DramConfig>("[custom]\nt_xyz = 3").is_err());
    let custom: DramConfig =
        toml::from_str("model = \"queued\"\ntiming = \"custom\"\n[custom]\nt_faw = 40").unwrap();
    assert_eq!(custom.timings().t_faw, 40);
    assert_eq!(custom.timings().t_rrd_s, DDR4_3200AA.t_rrd_s);
    // Through the whole configuration: the keys exist, and records keep them out when idle.
    let set = |pairs: &[(&str, &str)]| {
        let o: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        crate::Config::resolve(None, &o)
    };
    let idle = set(&[]).unwrap().to_json();
    assert!(idle["mem"]["dram"].get("model").is_none());
    assert!(idle["mem"]["dram"].get("write_queue_entries").is_none());
    let queued = set(&[("mem.dram.model", "queued"), ("mem.dram.refresh", "false")])
        .unwrap()
        .to_json();
    assert_eq!(queued["mem"]["dram"]["model"], "queued");
    assert_eq!(queued["mem"]["dram"]["refresh"], false);
    assert!(queued["mem"]["dram"].get("custom").is_none());
    let e = set(&[("mem.dram.modle", "queued")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("mem.dram.model"), "{e}");
}

#[test]
fn the_champsim_mapping_xors_row_bits_into_channel_bank_group_and_bank() {
    let cfg = DramConfig {
        address_mapping: DramMapping::Champsim,
        ..DramConfig::default()
    };
    assert_eq!(cfg.validate(), Ok(()));
    let map = AddressMap::new(DramMapping::Champsim, 2, 16, 8192, 1, 4);
    // Line bits from the bottom: channel 1, (bank, bank group) 4, column 7, row.
    let line =
        |row: u64, col: u64, bank_bg: u64, ch: u64| (row << 12) | (col << 5) | (bank_bg << 1) | ch;
    // Row 5 = 0b101: even parity keeps the channel; the (bank, group) field 6 ^ 5 = 3.
    assert_eq!(map.locate(line(5, 3, 6, 1)), (16 + 3, 5));
    // Row 7: odd parity flips the channel; 6 ^ 7 = 1.
    assert_eq!(map.locate(line(7, 0, 6, 1)), (1, 7));
    // Row 0x12 folds by 4 bits into 0x2 ^ 0x1 = 3; parity even.
    assert_eq!(map.locate(line(0x12, 9, 0, 0)), (3, 0x12));
    // Bank group is the low bits of the field: field 3 = bank 0, group 3.
    assert_eq!(map.split_bank(16 + 3), (1, 0, 3, 0));
    let bad = DramConfig { channels: 3, ..cfg };
    assert!(bad.validate().unwrap_err().contains("power of two"));
}
