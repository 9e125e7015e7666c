//! Tests of the DRAM models: the idle one (`mod.rs`, moved here unchanged) and the queued one
//! (`controller.rs`, `channel.rs`, `timing.rs`, `mapping.rs`): idle latencies against the idle
//! model's formula, clock conversions, the bandwidth curve against the peak and the activate
//! bound computed from the timings, FR-FCFS order, the write drain, refresh, determinism, bounded
//! history, and every schedule checked by an independent validator of the DDR timing rules.

use super::channel::LoggedCommand;
use super::controller::{
    DramCompletion, DramController, DramRequest, DramService, QueuedDramCounters, RequestKind,
};
use super::timing::{TickClock, DDR4_3200AA, DDR5_4800B};
use super::*;
use crate::rng::Rng;
use proptest::prelude::*;

// The idle model (moved unchanged from `mod.rs`).

#[test]
fn row_hit_empty_and_conflict_cost_what_the_timings_say() {
    let cfg = DramConfig {
        address_mapping: DramMapping::RowContiguous,
        ..DramConfig::default()
    };
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

#[test]
fn streams_over_arrays_a_multiple_of_2_mib_apart_share_a_bank_row_contiguously_and_not_row_hashed()
{
    // Contiguous arrays of 342 x 2 MiB each (what THP gives STREAM's three arrays of 2 GiB / 3):
    // a row difference of 2736 = 16 x 171 rows, which `row_contiguous`'s XOR of the row's low
    // four bits cannot tell apart.
    let hit_rate = |mapping: DramMapping| {
        let mut d = Dram::new(&DramConfig {
            address_mapping: mapping,
            ..DramConfig::default()
        });
        let array_lines = 342 * (2u64 << 20) / 64;
        for i in 0..100_000u64 {
            for a in 0..3 {
                d.read(a * array_lines + i, false);
            }
        }
        d.c.row[0] as f64 / d.c.reads as f64
    };
    assert!(hit_rate(DramMapping::RowContiguous) < 0.05);
    assert!(hit_rate(DramMapping::RowHashed) > 0.95);
    assert_eq!(
        DramConfig::default().address_mapping,
        DramMapping::RowHashed
    );
}

#[test]
fn row_hashed_folds_every_row_bit_into_channel_and_bank() {
    // Two channels, 16 banks, 128-line rows: line bits from the bottom are column 7, channel 1,
    // bank 4, row.
    let map = AddressMap::new(DramMapping::RowHashed, 2, 16, 8192, 1, 4);
    let line = |row: u64, bank: u64, ch: u64, col: u64| (row << 12) | (bank << 8) | (ch << 7) | col;
    // Row 0x12: parity even keeps the channel; the bank 6 ^ 0x2 ^ 0x1 = 5.
    assert_eq!(map.locate(line(0x12, 6, 1, 9)), (16 + 5, 0x12));
    // Row 0xab0 (171 x 16): odd parity flips the channel; 6 ^ 0x0 ^ 0xb ^ 0xa = 7. Under
    // `row_contiguous` the same line stays in channel 1, bank 6 ^ 0 = 6, as row 0 does.
    assert_eq!(map.locate(line(0xab0, 6, 1, 0)), (7, 0xab0));
    let old = AddressMap::new(DramMapping::RowContiguous, 2, 16, 8192, 1, 4);
    assert_eq!(old.locate(line(0xab0, 6, 1, 0)), (16 + 6, 0xab0));
    assert_eq!(old.locate(line(0, 6, 1, 0)), (16 + 6, 0));
}

proptest! {
    /// Whatever the geometry (powers of two or not: six channels, 24), every (bank, row) of a
    /// stretch of whole rows holds exactly one row's lines: the map is one-to-one.
    #[test]
    fn row_hashed_maps_each_row_of_each_bank_to_exactly_one_rows_lines(
        channels in prop::sample::select(vec![1u32, 2, 3, 4, 6, 8, 24]),
        banks in prop::sample::select(vec![8u32, 12, 16, 32]),
        lines_per_row in prop::sample::select(vec![16u64, 32, 128]),
        first_row in 0u64..1 << 30,
    ) {
        let map = AddressMap::new(DramMapping::RowHashed, channels, banks, lines_per_row * 64, 1, 1);
        let group = lines_per_row * channels as u64 * banks as u64;
        let rows = 20u64;
        let mut seen = std::collections::HashMap::new();
        for line in first_row * group..(first_row + rows) * group {
            let (bank, row) = map.locate(line);
            prop_assert!(bank < (channels * banks) as usize);
            prop_assert!((first_row..first_row + rows).contains(&row));
            *seen.entry((bank, row)).or_insert(0u64) += 1;
        }
        prop_assert_eq!(seen.len() as u64, rows * (channels * banks) as u64);
        prop_assert!(seen.values().all(|&n| n == lines_per_row));
    }
}

// The queued model.

/// One DDR4-3200AA channel, 1 rank x 4 bank groups x 4 banks, 8 KiB rows, no refresh, no fixed
/// controller latency: the times below are the DRAM's alone. `row_contiguous`, whose layout
/// [`line_of`] spells out.
fn one_channel() -> DramConfig {
    DramConfig {
        channels: 1,
        address_mapping: DramMapping::RowContiguous,
        model: DramModel::Queued,
        refresh: false,
        controller_cycles: 0,
        ..DramConfig::default()
    }
}

fn rd(line: u64, at: u64) -> DramRequest {
    DramRequest {
        line,
        write: false,
        arrival_cycle: at,
        kind: RequestKind::Data,
    }
}

fn wr(line: u64, at: u64) -> DramRequest {
    DramRequest {
        write: true,
        ..rd(line, at)
    }
}

/// The line at column `col` of `row` in `bank` of a one-channel, 16-bank `row_contiguous`
/// mapping (the bank is XORed with the row's low bits).
fn line_of(row: u64, bank: u64, col: u64) -> u64 {
    (((row << 4) | ((bank ^ row) & 15)) << 7) | col
}

#[test]
fn a_lone_read_costs_what_the_idle_model_charges_for_a_hit_an_empty_bank_and_a_conflict() {
    let ddr5 = DramConfig {
        timing: DramTimingSet::Ddr5x4800,
        t_cl: 40,
        t_rcd: 39,
        t_rp: 39,
        dram_clock_mhz: 2400,
        core_clock_mhz: 2400,
        bank_groups: 8,
        banks_per_channel: 32,
        ..DramConfig::default()
    };
    for base in [DramConfig::default(), ddr5] {
        for refresh in [false, true] {
            let cfg = DramConfig {
                model: DramModel::Queued,
                refresh,
                ..base.clone()
            };
            let mut idle = Dram::new(&cfg);
            let mut q = DramController::new(&cfg).unwrap();
            assert_eq!(q.idle_latencies(), idle.latencies());
            let lpr = cfg.row_bytes / 64;
            let per_row = lpr * cfg.channels as u64 * cfg.banks_per_channel as u64;
            let same_bank_next_row = per_row + lpr * cfg.channels as u64;
            // Far enough apart that each read finds an idle channel, well before any refresh.
            for (i, line) in [0, 1, same_bank_next_row].into_iter().enumerate() {
                let at = 1000 * i as u64;
                let (want, outcome) = idle.read(line, false);
                let got = q.access(&rd(line, at));
                assert_eq!(got.service, DramService::Row(outcome), "line {line}");
                assert_eq!(got.latency_cycles, want as u64, "line {line}");
                assert_eq!(got.done_cycle, at + want as u64);
            }
        }
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
    let two = DramController::new(&DramConfig::default()).unwrap();
    assert_eq!(two.peak_bytes_per_second(), 2.0 * 25.6e9);
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
    // The idle model ignores the queued keys (presets with other bank counts stay valid); `auto`
    // may become the queued model, so it checks them.
    assert_eq!(
        DramConfig {
            bank_groups: 3,
            model: DramModel::Idle,
            ..DramConfig::default()
        }
        .validate(),
        Ok(())
    );
    assert!(DramConfig {
        bank_groups: 3,
        ..DramConfig::default()
    }
    .validate()
    .is_err());
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
    // `auto` under the default out-of-order core is the queued model, under `simple` the idle
    // one, and the record names the model used.
    let auto = set(&[]).unwrap().to_json();
    assert_eq!(auto["mem"]["dram"]["model"], "queued");
    assert!(auto["mem"]["dram"].get("write_queue_entries").is_some());
    let idle = set(&[("timing.model", "simple")]).unwrap().to_json();
    assert!(idle["mem"]["dram"].get("model").is_none());
    assert!(idle["mem"]["dram"].get("write_queue_entries").is_none());
    let e = set(&[("mem.dram.model", "queued"), ("timing.model", "simple")]).unwrap_err();
    assert!(e.to_string().contains("needs each request's time"), "{e}");
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

/// Delivered bandwidth (GB/s, first arrival to the end of the last burst) and average read
/// latency (core cycles) of `n` reads, one every `interval` core cycles: random lines over
/// 8 GiB, or one sequential stream.
fn curve_point(cfg: &DramConfig, random: bool, interval: f64, n: u64) -> (f64, f64) {
    let mut d = DramController::new(cfg).unwrap();
    let mut rng = Rng::new(42, 0);
    let base = rng.below(1 << 20) << 7;
    let (mut end, mut latency) = (0f64, 0u64);
    let burst_cycles =
        cfg.timings().t_bl as f64 * cfg.core_clock_mhz as f64 / cfg.dram_clock_mhz as f64;
    for i in 0..n {
        let line = if random { rng.below(8 << 24) } else { base + i };
        let r = d.access(&rd(line, (i as f64 * interval) as u64));
        end = end.max(r.done_cycle as f64 + burst_cycles);
        latency += r.latency_cycles;
    }
    let seconds = end / (cfg.core_clock_mhz as f64 * 1e6);
    (n as f64 * 64.0 / seconds / 1e9, latency as f64 / n as f64)
}

#[test]
fn streaming_reads_rise_in_latency_with_the_rate_and_saturate_near_but_never_above_the_peak() {
    let cfg = DramConfig {
        address_mapping: DramMapping::LineInterleaved,
        ..one_channel()
    };
    let peak = 25.6;
    let mut last_latency = 0.0;
    // 64 B every 6.5 core cycles at 2.6 GHz is the peak; go from a third of it to twice.
    for interval in [20.0, 13.0, 9.0, 7.0, 6.0, 4.0, 3.0] {
        let (gbps, latency) = curve_point(&cfg, false, interval, 20_000);
        assert!(
            gbps <= peak,
            "{gbps} GB/s above the peak at interval {interval}"
        );
        assert!(
            latency >= last_latency,
            "latency fell at interval {interval}"
        );
        last_latency = latency;
        if interval <= 4.0 {
            assert!(gbps > 0.9 * peak, "{gbps} GB/s at interval {interval}");
        }
    }
}

#[test]
fn a_row_contiguous_stream_is_held_by_tccd_l_within_a_row_and_overlaps_only_at_row_ends() {
    // row_contiguous keeps a stream in one bank for a row (128 lines): back-to-back reads of one
    // bank group are tCCD_L = 8 clocks apart, twice the 4-clock burst, so half the peak. Only
    // where the stream crosses into the next row (another bank) can the reads of both rows share
    // the bus, and at most a read queue's worth (32) of the next row's reads can be waiting then:
    // each row of 128 lines takes at least (128 - 32) x tCCD_L.
    let cfg = one_channel();
    let (gbps, _) = curve_point(&cfg, false, 2.0, 20_000);
    let per_row = 128.0;
    let queue = cfg.read_queue_entries as f64;
    let half_peak = 64.0 * 1600e6 / DDR4_3200AA.t_ccd_l as f64 / 1e9;
    let bound = half_peak * per_row / (per_row - queue);
    assert!(
        gbps > half_peak && gbps <= bound,
        "{gbps} GB/s, bounds {half_peak} .. {bound}"
    );
}

#[test]
fn random_reads_saturate_at_the_four_activate_window_below_streaming() {
    let cfg = one_channel();
    // Random lines over 8 GiB almost always need an ACTIVATE; one rank allows four per tFAW:
    // 4 x 64 B / (34 x 0.625 ns) = 12.05 GB/s, below the 25.6 GB/s peak.
    let t = &DDR4_3200AA;
    let faw_bound = 4.0 * 64.0 / (t.t_faw as f64 / 1600e6) / 1e9;
    let mut last_latency = 0.0;
    let mut saturated = 0.0;
    for interval in [60.0, 30.0, 20.0, 15.0, 10.0, 5.0] {
        let (gbps, latency) = curve_point(&cfg, true, interval, 20_000);
        assert!(
            gbps <= faw_bound,
            "{gbps} GB/s above the tFAW bound {faw_bound}"
        );
        assert!(
            latency >= last_latency,
            "latency fell at interval {interval}"
        );
        last_latency = latency;
        saturated = gbps;
    }
    assert!(
        saturated > 0.75 * faw_bound,
        "{saturated} GB/s, bound {faw_bound}"
    );
    let streaming = DramConfig {
        address_mapping: DramMapping::LineInterleaved,
        ..cfg
    };
    assert!(curve_point(&streaming, false, 5.0, 20_000).0 > 1.5 * saturated);
}

#[test]
fn fr_fcfs_serves_a_row_hit_before_an_older_conflict_when_both_wait() {
    let mut d = DramController::new(&one_channel()).unwrap();
    let first = d.access(&rd(line_of(1, 0, 0), 0));
    assert_eq!(first.service, DramService::Row(RowOutcome::Empty));
    // The conflict must wait for tRAS of row 1; the hit to row 1 arriving after it fits before
    // that precharge and goes first.
    let conflict = d.access(&rd(line_of(2, 0, 0), 1));
    let hit = d.access(&rd(line_of(1, 0, 1), 2));
    assert_eq!(conflict.service, DramService::Row(RowOutcome::Conflict));
    assert_eq!(hit.service, DramService::Row(RowOutcome::Hit));
    assert!(hit.done_cycle < conflict.done_cycle);
    // The hit is one tCCD_L after the first read (same bank group): 8 clocks = 13 core cycles.
    assert_eq!(hit.done_cycle, first.done_cycle + 13);
}

#[test]
fn a_hit_arriving_after_a_conflict_once_its_row_has_no_room_is_served_after_the_conflict() {
    // The approximation of the module doc: with eight hits queued on row 1, a conflict's
    // precharge is placed right after them; a ninth hit cannot delay it.
    let mut d = DramController::new(&one_channel()).unwrap();
    for col in 0..8 {
        d.access(&rd(line_of(1, 0, col), 0));
    }
    let conflict = d.access(&rd(line_of(2, 0, 0), 1));
    let late_hit = d.access(&rd(line_of(1, 0, 8), 2));
    assert_eq!(conflict.service, DramService::Row(RowOutcome::Conflict));
    assert_eq!(late_hit.service, DramService::Row(RowOutcome::Conflict));
    assert!(late_hit.done_cycle > conflict.done_cycle);
}

#[test]
fn writes_wait_for_the_high_watermark_then_drain_to_the_low_one_ahead_of_later_reads() {
    let cfg = DramConfig {
        write_queue_entries: 8,
        write_high_watermark_entries: 6,
        write_low_watermark_entries: 2,
        ..one_channel()
    };
    let mut d = DramController::new(&cfg).unwrap();
    for bank in 0..5 {
        let w = d.access(&wr(line_of(1, bank, 0), 100));
        assert_eq!(w.service, DramService::Posted);
        assert_eq!(w.done_cycle, 100);
    }
    assert_eq!(d.counters().channels[0].writes, 0, "below the watermark");
    d.access(&wr(line_of(1, 5, 0), 100));
    let c = d.counters();
    assert_eq!((c.watermark_drains, c.watermark_drained_writes), (1, 4));
    assert_eq!(c.channels[0].writes, 4);
    // A read right after the drain waits for the writes' bursts and tWTR.
    let idle_empty = d.idle_latencies()[1] as u64;
    let r = d.access(&rd(line_of(1, 9, 0), 101));
    assert!(r.latency_cycles > idle_empty, "{r:?}");
    // Long after, the two writes left drain into the idle time before the next read, which
    // then sees an idle channel.
    let later = d.access(&rd(line_of(1, 12, 0), 10_000));
    assert_eq!(d.counters().idle_drained_writes, 2);
    assert_eq!(d.counters().channels[0].writes, 6);
    assert_eq!(later.latency_cycles, idle_empty);
}

#[test]
fn a_read_of_a_line_waiting_in_the_write_queue_is_served_from_it_and_writes_to_it_merge() {
    let cfg = DramConfig {
        controller_cycles: 40,
        ..one_channel()
    };
    let mut d = DramController::new(&cfg).unwrap();
    d.access(&wr(77, 100));
    d.access(&wr(77, 120));
    let r = d.access(&rd(77, 150));
    assert_eq!(r.service, DramService::WriteQueue);
    assert_eq!(r.latency_cycles, 40);
    let c = d.counters();
    assert_eq!((c.write_merges, c.write_queue_reads), (1, 1));
}

#[test]
fn a_full_read_queue_holds_later_reads_back_until_an_entry_frees() {
    let cfg = DramConfig {
        read_queue_entries: 2,
        ..one_channel()
    };
    let mut d = DramController::new(&cfg).unwrap();
    // Four conflicting rows of one bank at once. The first activates at once and leaves the
    // queue; the second and third wait for the bank in it, so the fourth cannot enter until
    // the second's ACTIVATE.
    d.access(&rd(line_of(1, 0, 0), 0));
    let b = d.access(&rd(line_of(2, 0, 0), 0));
    d.access(&rd(line_of(3, 0, 0), 0));
    assert_eq!(d.counters().read_queue_full_cycles, 0);
    d.access(&rd(line_of(4, 0, 0), 0));
    assert!(d.counters().read_queue_full_cycles > 0);
    // It entered when the second read's ACTIVATE issued: tRCD + tCL before that read's data
    // (the two figures rounded up to core cycles separately: within one cycle).
    let rcd_cl_cycles = d.idle_latencies()[1] as u64;
    let waited = d.counters().read_queue_full_cycles;
    assert!(
        waited.abs_diff(b.done_cycle - rcd_cl_cycles) <= 1,
        "waited {waited}, second read's data at {}",
        b.done_cycle
    );
}

#[test]
fn a_read_leaves_the_queue_at_its_activate_not_its_read() {
    // One entry: a conflicting read of the same bank is admitted once the first read's
    // ACTIVATE has issued, though the first read's READ is still tRCD away (Ramulator 2's
    // `promote_to_active`); a row hit to the open row holds its entry until its READ.
    let cfg = DramConfig {
        read_queue_entries: 1,
        ..one_channel()
    };
    let mut d = DramController::new(&cfg).unwrap();
    d.access(&rd(line_of(1, 0, 0), 0));
    d.access(&rd(line_of(1, 0, 1), 0));
    assert_eq!(d.counters().read_queue_full_cycles, 0);
    d.access(&rd(line_of(1, 0, 2), 0));
    assert!(d.counters().read_queue_full_cycles > 0);
}

#[test]
fn a_refresh_closes_every_row_and_holds_the_rank_for_trfc() {
    let cfg = DramConfig {
        refresh: true,
        ..one_channel()
    };
    let mut d = DramController::new(&cfg).unwrap();
    assert_eq!(
        d.access(&rd(line_of(1, 0, 0), 0)).service,
        DramService::Row(RowOutcome::Empty)
    );
    // The first refresh starts at tREFI = 12480 clocks = 162240 ticks (13 per clock, 8 per core
    // cycle); its blackout runs from tRP before to tRFC = 560 clocks after. A read arriving at
    // cycle 20300 (tick 162400) waits for its end, then finds the row closed: ACTIVATE at
    // 169520, data tRCD + tCL later, at tick 170092.
    let r = d.access(&rd(line_of(1, 0, 1), 20_300));
    assert_eq!(r.service, DramService::Row(RowOutcome::Empty));
    assert_eq!(r.latency_cycles, (170_092u64 - 162_400).div_ceil(8));
}

#[test]
fn the_same_requests_give_the_same_answers() {
    let run = || {
        let mut d = DramController::new(&DramConfig {
            refresh: true,
            ..one_channel()
        })
        .unwrap();
        let mut rng = Rng::new(3, 1);
        let out: Vec<DramCompletion> = (0..5000u64)
            .map(|i| {
                let at = (i * 9).saturating_sub(rng.below(300));
                let line = rng.below(1 << 22);
                d.access(&if rng.below(3) == 0 {
                    wr(line, at)
                } else {
                    rd(line, at)
                })
            })
            .collect();
        (out, d.counters().clone())
    };
    assert_eq!(run(), run());
}

#[test]
fn the_history_stays_bounded_over_a_long_run_even_under_overload() {
    for (random, interval) in [(true, 3u64), (true, 20), (false, 2)] {
        let mut d = DramController::new(&DramConfig {
            refresh: true,
            ..one_channel()
        })
        .unwrap();
        let mut rng = Rng::new(5, 2);
        let mut most = 0;
        for i in 0..300_000u64 {
            let line = if random { rng.below(1 << 27) } else { i };
            let req = if i % 3 == 2 {
                wr(line ^ 1, i * interval)
            } else {
                rd(line, i * interval)
            };
            d.access(&req);
            most = most.max(d.retained_entries());
        }
        // The window (4096 cycles) holds at most a few thousand commands whatever the length.
        assert!(
            most < 5000,
            "{most} entries held (random {random}, interval {interval})"
        );
    }
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

/// Check a channel's committed commands against the DDR rules, from the timings alone (not the
/// model's own tick tables): per bank tRCD, tRAS, tRC, tRTP/tWR + tRP and the row each column
/// command reads; per rank tRRD_S/L, tFAW, tCCD_S/L, READ-to-WRITE, tWTR_S/L; bursts of
/// different ranks apart by tCS; and no command in a refresh blackout, no row open across one.
fn check_schedule(
    log: &[LoggedCommand],
    t: &DramTimings,
    clock: &TickClock,
    groups: usize,
    banks_per_rank: usize,
    refresh: bool,
) -> Result<(), String> {
    let k = |n: u32| clock.dram(n);
    let mut cmds = log.to_vec();
    cmds.sort_by_key(|c| c.tick);
    let rank_of = |bank: usize| bank / banks_per_rank;
    let group_of = |bank: usize| bank % groups;
    let ranks = cmds.iter().map(|c| rank_of(c.bank)).max().unwrap_or(0) + 1;
    let refreshes = |rank: usize| {
        let first = k(t.t_refi) + rank as u64 * (k(t.t_refi) / ranks.max(1) as u64);
        (0..).map(move |i| first + i * k(t.t_refi))
    };
    let in_blackout = |rank: usize, tick: u64| {
        refresh
            && refreshes(rank)
                .take_while(|&r| r < tick + k(t.t_rp) + 1)
                .any(|r| tick + k(t.t_rp) >= r && tick < r + k(t.t_rfc))
    };
    // Per bank: (ACTIVATE tick, row, earliest close) of the open session.
    let mut open: std::collections::HashMap<usize, (u64, u64, u64)> = Default::default();
    for c in &cmds {
        if in_blackout(rank_of(c.bank), c.tick) {
            return Err(format!("{c:?} in a refresh blackout"));
        }
        match c.column {
            None => {
                if let Some(&(a, _, close)) = open.get(&c.bank) {
                    if c.tick < a + k(t.t_rc) || c.tick < close + k(t.t_rp) {
                        return Err(format!("{c:?}: tRC/tRAS/tRTP/tWR + tRP after {a}"));
                    }
                }
                open.insert(c.bank, (c.tick, c.row, c.tick + k(t.t_ras)));
            }
            Some(write) => {
                let Some(s) = open.get_mut(&c.bank) else {
                    return Err(format!("{c:?} on a closed bank"));
                };
                if s.1 != c.row || c.tick < s.0 + k(t.t_rcd) {
                    return Err(format!("{c:?}: row {} open at {}", s.1, s.0));
                }
                let need = if write {
                    k(t.t_cwl + t.t_bl + t.t_wr)
                } else {
                    k(t.t_rtp)
                };
                s.2 = s.2.max(c.tick + need);
                if refresh {
                    let r = refreshes(rank_of(c.bank))
                        .find(|&r| r > s.0 + k(t.t_rp))
                        .unwrap();
                    if s.2 + k(t.t_rp) > r {
                        return Err(format!("{c:?}: row open across the refresh at {r}"));
                    }
                }
            }
        }
    }
    // Pairs of commands of one rank, and bursts across ranks.
    let window = k(t.t_faw + t.t_cl + t.t_cwl + t.t_ccd_l_wr + t.t_wtr_l + t.t_bl + t.t_cs);
    for (i, a) in cmds.iter().enumerate() {
        let mut acts_in_faw = 0;
        for b in &cmds[i + 1..] {
            if b.tick > a.tick + window {
                break;
            }
            let same_rank = rank_of(a.bank) == rank_of(b.bank);
            let same_group = same_rank && group_of(a.bank) == group_of(b.bank);
            let gap = b.tick - a.tick;
            match (a.column, b.column) {
                (None, None) if same_rank => {
                    let rrd = if same_group { t.t_rrd_l } else { t.t_rrd_s };
                    if gap < k(rrd) {
                        return Err(format!("tRRD: {a:?} {b:?}"));
                    }
                    if gap < k(t.t_faw) {
                        acts_in_faw += 1;
                        if acts_in_faw >= 4 {
                            return Err(format!("tFAW: five ACTIVATEs from {a:?}"));
                        }
                    }
                }
                (Some(wa), Some(wb)) if same_rank => {
                    let need = match (wa, wb) {
                        (false, false) if same_group => k(t.t_ccd_l),
                        (false, false) => k(t.t_ccd_s),
                        (true, true) if same_group => k(t.t_ccd_l_wr),
                        (true, true) => k(t.t_ccd_s_wr),
                        (false, true) => k(t.t_cl + t.t_bl + t.t_rtw_turnaround) - k(t.t_cwl),
                        (true, false) if same_group => k(t.t_cwl + t.t_bl + t.t_wtr_l),
                        (true, false) => k(t.t_cwl + t.t_bl + t.t_wtr_s),
                    };
                    if gap < need {
                        return Err(format!("column gap {gap} < {need}: {a:?} {b:?}"));
                    }
                }
                (Some(wa), Some(wb)) => {
                    let start = |tick: u64, w: bool| tick + k(if w { t.t_cwl } else { t.t_cl });
                    let (sa, sb) = (start(a.tick, wa), start(b.tick, wb));
                    if sa.abs_diff(sb) < k(t.t_bl + t.t_cs) {
                        return Err(format!("bursts of two ranks overlap: {a:?} {b:?}"));
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn every_schedule_obeys_the_ddr_timing_rules(
        seed in any::<u64>(),
        n in 50usize..600,
        interval in 1u64..40,
        write_share in 0u64..3,
        two_ranks in any::<bool>(),
        refresh in any::<bool>(),
        ddr5 in any::<bool>(),
        jitter in 0u64..400,
        short_history in any::<bool>(),
    ) {
        let mut cfg = DramConfig {
            ranks: if two_ranks { 2 } else { 1 },
            refresh,
            // A window shorter than the jitter: late arrivals are moved up, history pruned often.
            reorder_window_cycles: if short_history { 50 } else { 4096 },
            ..one_channel()
        };
        if ddr5 {
            cfg = DramConfig {
                timing: DramTimingSet::Ddr5x4800,
                t_cl: 40,
                t_rcd: 39,
                t_rp: 39,
                dram_clock_mhz: 2400,
                bank_groups: 8,
                banks_per_channel: 32 * cfg.ranks,
                ..cfg
            };
        }
        let mut d = DramController::new(&cfg).unwrap();
        let mut rng = Rng::new(seed, 9);
        // A few hot rows and some random lines, arrivals going back by up to `jitter`; long
        // enough (with a small interval) to cross a refresh now and then.
        let hot: Vec<u64> = (0..6).map(|_| rng.below(1 << 24) << 7).collect();
        for i in 0..n as u64 {
            let line = if rng.below(2) == 0 {
                hot[rng.below(6) as usize] + rng.below(128)
            } else {
                rng.below(1 << 27)
            };
            let at = (i * interval + 19_000).saturating_sub(rng.below(jitter + 1));
            let r = if rng.below(3) < write_share { wr(line, at) } else { rd(line, at) };
            let done = d.access(&r);
            prop_assert!(done.done_cycle >= at);
            if let DramService::Row(o) = done.service {
                prop_assert!(done.latency_cycles >= d.idle_latencies()[o as usize] as u64);
            }
        }
        d.flush_writes(n as u64 * interval + 19_000);
        let clock = TickClock::new(cfg.core_clock_mhz, cfg.dram_clock_mhz);
        let groups = cfg.bank_groups as usize;
        let per_rank = cfg.banks_per_channel as usize / cfg.ranks as usize;
        let checked = check_schedule(d.command_log(0), &cfg.timings(), &clock, groups, per_rank, refresh);
        prop_assert!(checked.is_ok(), "{}", checked.unwrap_err());
    }
}

#[test]
fn the_ro_ba_ra_co_ch_mapping_is_ramulator_2s() {
    // Ramulator 2's DDR4 8 Gb x8 rank under RoBaRaCoCh: from the line address up, 7 column bits
    // (1024 columns / prefetch 8), 0 rank bits, 2 bank-group bits, 2 bank bits, then the row.
    let cfg = DramConfig {
        channels: 1,
        address_mapping: DramMapping::RoBaRaCoCh,
        ..DramConfig::default()
    };
    assert_eq!(cfg.validate(), Ok(()));
    let map = AddressMap::new(DramMapping::RoBaRaCoCh, 1, 16, 8192, 1, 4);
    let line =
        |row: u64, bank: u64, group: u64, col: u64| (row << 11) | (bank << 9) | (group << 7) | col;
    // Flat bank = bank * bank_groups + group (bank groups fastest, as `split_bank` reads it).
    assert_eq!(map.locate(line(5, 2, 3, 17)), (2 * 4 + 3, 5));
    assert_eq!(map.split_bank(2 * 4 + 3), (0, 0, 3, 2));
    // A row's 128 lines share one bank and row; the next line opens the next bank group.
    assert!((0..128).all(|c| map.locate(line(9, 1, 1, c)) == map.locate(line(9, 1, 1, 0))));
    assert_eq!(map.locate(line(9, 1, 1, 127) + 1), (4 + 2, 9));
    // No XOR: the row does not move the bank.
    assert_eq!(map.locate(line(0x7777, 0, 0, 0)), (0, 0x7777));
    // Two channels, two ranks: channel in the lowest line bit, rank right above the column.
    let map = AddressMap::new(DramMapping::RoBaRaCoCh, 2, 32, 8192, 2, 4);
    let line = |row: u64, bank: u64, group: u64, rank: u64, col: u64, ch: u64| {
        (row << 13) | (bank << 11) | (group << 9) | (rank << 8) | (col << 1) | ch
    };
    assert_eq!(map.locate(line(3, 1, 2, 1, 100, 1)), (32 + 16 + 4 + 2, 3));
    assert_eq!(map.split_bank(32 + 16 + 4 + 2), (1, 1, 2, 1));
    let bad = DramConfig {
        banks_per_channel: 12,
        bank_groups: 4,
        ..cfg
    };
    assert!(bad.validate().unwrap_err().contains("ro_ba_ra_co_ch"));
}

#[test]
fn a_write_activated_in_idle_read_time_drains_though_its_write_comes_after_the_next_read() {
    // Ramulator 2 switches to writes whenever its read queue is empty and finishes a write it
    // has activated: a lone write to a closed bank has its ACTIVATE at once and its WRITE tRCD
    // (22 clocks, 36 core cycles) later. A read arriving in between must not leave it buffered
    // (before, the idle drain wanted the WRITE before the read, so at any rate with less than
    // tRCD between requests writes left only through the high watermark).
    let mut d = DramController::new(&one_channel()).unwrap();
    d.access(&wr(line_of(1, 0, 0), 100));
    assert_eq!(
        d.counters().channels[0].writes,
        0,
        "buffered until the next request"
    );
    let r = d.access(&rd(line_of(1, 5, 0), 120));
    let c = d.counters();
    assert_eq!((c.idle_drained_writes, c.channels[0].writes), (1, 1));
    assert_eq!(c.watermark_drains, 0);
    // The read to another bank group is delayed only by the write's burst and tWTR_S on the
    // shared bus, not by a drain of its own.
    assert_eq!(r.service, DramService::Row(RowOutcome::Empty));
    // A write whose ACTIVATE would come after the next arrival still waits: a conflict in a
    // bank activated at 0 cannot activate before tRC (74 clocks, 121 core cycles).
    let mut d = DramController::new(&one_channel()).unwrap();
    d.access(&rd(line_of(1, 0, 0), 0));
    d.access(&wr(line_of(2, 0, 0), 40));
    d.access(&rd(line_of(1, 5, 0), 60));
    assert_eq!(d.counters().idle_drained_writes, 0);
    assert_eq!(d.counters().channels[0].writes, 0);
}

#[test]
fn an_empty_read_queue_starts_a_write_mode_that_drains_to_the_low_watermark() {
    // Ramulator 2 (`set_write_mode`) enters write mode whenever its read queue is empty and
    // leaves it only once fewer than the low watermark's writes wait and a read does: twelve
    // writes to twelve rows of one bank, then a read shortly after. Only the first write could
    // activate before the read arrives (the next one tRC later), yet the write mode the empty
    // read queue started drains down to the low watermark, six, before the read is served.
    let mut d = DramController::new(&one_channel()).unwrap();
    for row in 1..=12 {
        d.access(&wr(line_of(row, 0, 0), 0));
    }
    assert_eq!(
        d.counters().channels[0].writes,
        0,
        "below the high watermark"
    );
    let r = d.access(&rd(line_of(100, 0, 0), 50));
    let c = d.counters();
    assert_eq!(c.watermark_drains, 0);
    assert_eq!(c.idle_drained_writes, 6);
    assert_eq!(c.channels[0].writes, 6);
    // The read to the same bank waits behind the six writes' row cycles.
    let trc_cycles = 121;
    assert!(r.latency_cycles > 5 * trc_cycles, "{r:?}");
}

#[test]
fn a_drain_takes_the_write_that_can_issue_first_before_an_older_one() {
    // Ramulator 2's FR-FCFS serves the oldest request among those ready to issue: with one
    // write to drain, a newer write to an idle bank goes before an older one that conflicts
    // with the row a read has just opened (its ACTIVATE waits tRC).
    let cfg = DramConfig {
        write_low_watermark_entries: 1,
        ..one_channel()
    };
    let mut d = DramController::new(&cfg).unwrap();
    d.access(&rd(line_of(1, 0, 0), 0));
    d.access(&wr(line_of(2, 0, 0), 1));
    d.access(&wr(line_of(1, 5, 0), 2));
    assert_eq!(d.counters().channels[0].writes, 0);
    // The read queue is empty (the read has activated) and two writes wait: a write mode
    // drains one, the one to the idle bank.
    d.access(&rd(line_of(1, 9, 0), 3));
    let c = d.counters();
    assert_eq!(c.channels[0].writes, 1);
    assert_eq!(
        c.write_row,
        [0, 1, 0],
        "the write to the idle bank, not the conflict"
    );
}

// Bit-identity of the queued model's answers: a hash of every answer and the final counters
// over long pseudo-random request mixes. Recorded before the controller's data structures were
// reworked for speed (the rework left them unchanged), and again after the idle drain started
// going by a write's ACTIVATE (a model fix, found against Ramulator 2: the old and the reworked
// controller with the fix give these same hashes). A change of the model's results changes
// these hashes on purpose only.

/// Fold `v` into the running hash `h`.
fn mix(h: u64, v: u64) -> u64 {
    let mut s = h ^ v;
    crate::rng::splitmix64(&mut s)
}

/// Drive a controller for `cfg` with `n` requests of a mix seeded by `seed`: reads and writes,
/// data and page-table, random lines, two streams, hot rows and re-reads of recent writes;
/// arrivals mostly increasing, some going back by up to `jitter` cycles, bursts that fill the
/// queues, quiet gaps; the write queue flushed at the end. Returns the hash of every answer and
/// of the final counters, and the counters.
fn answers_hash(cfg: &DramConfig, seed: u64, n: u64, jitter: u64) -> (u64, QueuedDramCounters) {
    let mut d = DramController::new(cfg).unwrap();
    let mut rng = Rng::new(seed, 77);
    let hot: Vec<u64> = (0..8).map(|_| rng.below(1 << 22) << 7).collect();
    let mut streams = [rng.below(1 << 26), rng.below(1 << 26)];
    let mut recent = [0u64; 16];
    let (mut now, mut h) = (1000u64, 0u64);
    let mut burst = 0u64;
    for i in 0..n {
        if burst > 0 {
            burst -= 1;
            now += rng.below(2);
        } else {
            match rng.below(1000) {
                0..=4 => burst = 20 + rng.below(80),
                5..=7 => now += 500 + rng.below(20_000),
                _ => now += rng.below(24),
            }
        }
        let at = if rng.below(8) == 0 {
            now.saturating_sub(rng.below(jitter + 1))
        } else {
            now
        };
        let line = match rng.below(10) {
            0..=2 => rng.below(1 << 27),
            3 | 4 => {
                let s = rng.below(2) as usize;
                streams[s] += 1;
                streams[s]
            }
            5 | 6 => hot[rng.below(8) as usize] + rng.below(128),
            _ => recent[rng.below(16) as usize],
        };
        let write = rng.below(3) == 0;
        if write {
            recent[(i % 16) as usize] = line;
        }
        let kind = if rng.below(4) == 0 {
            RequestKind::PageTable
        } else {
            RequestKind::Data
        };
        let c = d.access(&DramRequest {
            line,
            write,
            arrival_cycle: at,
            kind,
        });
        let service = match c.service {
            DramService::Row(o) => o as u64,
            DramService::WriteQueue => 10,
            DramService::Posted => 11,
        };
        h = mix(mix(mix(h, c.done_cycle), c.latency_cycles), service);
    }
    d.flush_writes(now + 1000);
    for b in format!("{:?}", d.counters()).bytes() {
        h = mix(h, b as u64);
    }
    (h, d.counters().clone())
}

/// The configurations of the bit-identity test: 1-2 channels, 1-2 ranks, `row_contiguous`,
/// `line_interleaved`, `champsim` and `row_hashed`, refresh on, DDR4 and DDR5, small queues, a short
/// reorder window and a fixed controller latency.
fn identity_configs() -> Vec<(&'static str, DramConfig, u64)> {
    let base = DramConfig {
        model: DramModel::Queued,
        refresh: true,
        address_mapping: DramMapping::RowContiguous,
        ..DramConfig::default()
    };
    let ddr5 = DramConfig {
        timing: DramTimingSet::Ddr5x4800,
        t_cl: 40,
        t_rcd: 39,
        t_rp: 39,
        dram_clock_mhz: 2400,
        bank_groups: 8,
        banks_per_channel: 64,
        ranks: 2,
        ..base.clone()
    };
    vec![
        ("2ch_1rank_row", base.clone(), 400),
        (
            "1ch_2rank_row",
            DramConfig {
                channels: 1,
                ranks: 2,
                banks_per_channel: 32,
                ..base.clone()
            },
            400,
        ),
        (
            "2ch_2rank_line",
            DramConfig {
                ranks: 2,
                banks_per_channel: 32,
                address_mapping: DramMapping::LineInterleaved,
                ..base.clone()
            },
            400,
        ),
        (
            "1ch_1rank_line_small_queues",
            DramConfig {
                channels: 1,
                address_mapping: DramMapping::LineInterleaved,
                read_queue_entries: 8,
                write_queue_entries: 8,
                write_high_watermark_entries: 6,
                write_low_watermark_entries: 2,
                controller_cycles: 0,
                ..base.clone()
            },
            400,
        ),
        (
            "1ch_short_window",
            DramConfig {
                channels: 1,
                reorder_window_cycles: 50,
                ..base.clone()
            },
            400,
        ),
        (
            "2ch_champsim",
            DramConfig {
                address_mapping: DramMapping::Champsim,
                ..base.clone()
            },
            100,
        ),
        ("ddr5_2rank", ddr5, 400),
        (
            "2ch_row_hashed",
            DramConfig {
                address_mapping: DramMapping::RowHashed,
                ..base.clone()
            },
            400,
        ),
    ]
}

#[test]
fn the_answers_are_bit_identical_to_the_recorded_ones() {
    let expected: [(&str, u64); 8] = [
        ("2ch_1rank_row", 0xa094c1d0be6cf219),
        ("1ch_2rank_row", 0xbbe8559b865850bc),
        ("2ch_2rank_line", 0xf97ecf363ae89a08),
        ("1ch_1rank_line_small_queues", 0x50bcc09871a71a91),
        ("1ch_short_window", 0xa4a2b46c0e2833e1),
        ("2ch_champsim", 0x65e3e01e90c61871),
        ("ddr5_2rank", 0x78023f355e0009d0),
        ("2ch_row_hashed", 0x7dd2962b837bf17f),
    ];
    let mut got = Vec::new();
    // Every mechanism of the model is exercised somewhere.
    let mut seen = [0u64; 8];
    for ((name, cfg, jitter), (want_name, _)) in identity_configs().into_iter().zip(expected) {
        assert_eq!(name, want_name);
        let mut h = 0;
        for seed in 0..3 {
            let (one, c) = answers_hash(&cfg, seed, 40_000, jitter);
            h = mix(h, one);
            let k = [
                c.write_queue_reads,
                c.write_merges,
                c.read_queue_full_cycles,
                c.write_queue_full_cycles,
                c.watermark_drains,
                c.idle_drained_writes,
                c.late_arrivals,
                c.read_row[0] * c.read_row[1] * c.read_row[2],
            ];
            for (s, k) in seen.iter_mut().zip(k) {
                *s += k.min(1);
            }
        }
        got.push((name, h));
    }
    assert!(seen.iter().all(|&s| s > 0), "mechanisms seen {seen:?}");
    let got_fmt: Vec<String> = got
        .iter()
        .map(|(n, h)| format!("(\"{n}\", {h:#018x}),"))
        .collect();
    assert_eq!(
        got.iter().map(|g| g.1).collect::<Vec<_>>(),
        expected.iter().map(|e| e.1).collect::<Vec<_>>(),
        "got:\n{}",
        got_fmt.join("\n")
    );
}

#[test]
fn row_hashed_folds_of_power_of_two_widths_equal_the_chunk_by_chunk_fold() {
    // The halving folds of `fold_into` against the plain loop over every chunk.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let row = x >> (x % 64);
        for width in [2u32, 4, 8, 16, 32] {
            let count = 1u64 << width;
            let field = x.rotate_left(width) & (count - 1);
            assert_eq!(
                super::mapping::fold_into(field, row, count),
                super::mapping::fold_chunks(field, row, width),
                "row {row:#x}, width {width}"
            );
        }
    }
}
