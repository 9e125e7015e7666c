//! Tests of the out-of-order core: closed-form cases (overlap of independent misses, chains,
//! walker and MSHR limits, ROB/LQ/SQ stalls, merging), each grant scheme's documented
//! behaviour and anomalies, and property tests (the heap against a plain list, idle-gap grants
//! against their definition, time order of grants, monotonicity under `program_order`).
//!
//! Contract: test code only; it may use every item of the model's files.

use super::pools::{Slots, Units};
use super::*;
use crate::mem::ServedBy;
use crate::trace::AccessKind;
use proptest::prelude::*;

const DRAM: u32 = 200;
const L1: u32 = 4;
const L2_TLB: u64 = 9;

/// The default machine with walkers and MSHRs granted in program order: the tests below
/// were written when that was `CoreConfig::default()`'s grant (the default is `time_order`
/// since 2026-11-25); a test of another grant names it.
fn program_order() -> CoreConfig {
    CoreConfig {
        resource_grant: ResourceGrant::ProgramOrder,
        ..CoreConfig::default()
    }
}

fn core(cfg: &CoreConfig) -> OooCore {
    OooCore::new(cfg, L1)
}

/// A load of 1 instruction to its own page and line, served by `level` in `data` cycles.
fn load(i: u64, data: u32, level: ServedBy) -> CoreRef {
    CoreRef {
        kind: AccessKind::Load,
        vpn: 1000 + i,
        line: 64_000 + i * 64,
        instrs: 1,
        dep: 0,
        xlat_cycles: 0,
        walk_cycles: 0,
        data_cycles: data,
        data_level: level,
        walk_events: 0,
        data_events: 0,
    }
}

fn miss(i: u64) -> CoreRef {
    load(i, DRAM, ServedBy::Dram)
}

fn hit(i: u64) -> CoreRef {
    load(i, L1, ServedBy::L1)
}

/// `r` after an L2 TLB miss and a walk of `walk` cycles.
fn walked(mut r: CoreRef, walk: u64) -> CoreRef {
    r.xlat_cycles = L2_TLB + walk;
    r.walk_cycles = walk;
    r
}

/// The core after `refs`, every one accounted (not settled: see `run_settled`).
fn run(cfg: &CoreConfig, refs: &[CoreRef]) -> OooCore {
    let mut c = core(cfg);
    for r in refs {
        c.reference(r).unwrap();
    }
    c.account_batch();
    c
}

#[test]
fn independent_dram_misses_within_one_rob_window_cost_one_latency_plus_dispatch() {
    let cfg = program_order();
    let n = 8;
    let refs: Vec<_> = (0..n).map(miss).collect();
    let c = run(&cfg, &refs);
    // Load i dispatches at i/4 and completes DRAM cycles later; retirement follows.
    assert_eq!(c.cycles(), DRAM as f64 + (n - 1) as f64 / 4.0);
}

#[test]
fn a_chain_of_dependent_misses_costs_one_latency_each() {
    let cfg = program_order();
    let n = 8;
    let refs: Vec<_> = (0..n)
        .map(|i| CoreRef {
            dep: (i > 0) as u16,
            ..miss(i)
        })
        .collect();
    assert_eq!(run(&cfg, &refs).cycles(), n as f64 * DRAM as f64);
}

#[test]
fn with_one_walker_two_simultaneous_tlb_misses_serialize() {
    let one = CoreConfig {
        page_walkers: 1,
        ..program_order()
    };
    let two = CoreConfig {
        page_walkers: 2,
        ..program_order()
    };
    let refs = [walked(hit(0), 100), walked(hit(1), 100)];
    // The second walk waits for the first: 9 + 100 + 100 + the L1 hit.
    let c = run(&one, &refs);
    assert_eq!(c.cycles(), 9.0 + 200.0 + 4.0);
    assert_eq!(c.c.walker_queue_cycles, 100.0 - 0.25);
    // Two walkers: both walks overlap; the second started a dispatch slot later.
    assert_eq!(run(&two, &refs).cycles(), 0.25 + 9.0 + 100.0 + 4.0);
}

fn gaps(cfg: CoreConfig) -> CoreConfig {
    CoreConfig {
        resource_grant: ResourceGrant::IdleGaps,
        ..cfg
    }
}

#[test]
fn under_idle_gaps_an_early_walk_uses_the_walker_idle_before_a_later_requested_walk() {
    let one = CoreConfig {
        page_walkers: 1,
        ..program_order()
    };
    // Reference 1's address waits for reference 0's DRAM miss, so its walk is requested at
    // about 200; reference 2 is independent and requests its walk at 0.5 + 9. With the
    // walker idle until 200, reference 2's 100-cycle walk fits before reference 1's.
    let refs = [
        miss(0),
        walked(CoreRef { dep: 1, ..hit(1) }, 100),
        walked(hit(2), 100),
    ];
    let c = run(&gaps(one.clone()), &refs);
    assert_eq!(c.c.walker_queue_cycles, 0.0);
    assert_eq!(c.done.get(2), 0.5 + 9.0 + 100.0 + 4.0);
    // In program order it queues behind the later-requested walk.
    let in_order = run(&one, &refs);
    let first_walk_done = DRAM as f64 + 9.0 + 100.0;
    assert_eq!(in_order.done.get(2), first_walk_done + 100.0 + 4.0);
    // A walk that does not fit in the gap waits for the walker under either scheme.
    let long = [refs[0], refs[1], walked(hit(2), 300)];
    for cfg in [gaps(one.clone()), one.clone()] {
        assert_eq!(run(&cfg, &long).done.get(2), first_walk_done + 300.0 + 4.0);
    }
}

#[test]
fn under_idle_gaps_an_early_miss_uses_the_mshr_idle_before_a_later_requested_miss() {
    let one = CoreConfig {
        l1d_mshrs: 1,
        ..program_order()
    };
    let l2 = |i: u64, cycles: u32| load(i, cycles, ServedBy::L2);
    // Reference 1's address waits for reference 0's 200-cycle walk, so it requests the only
    // MSHR at 213 and is granted it first; reference 2 is independent and requests it at
    // 0.5: its 10-cycle miss fits in the idle time before 213.
    let refs = [
        walked(hit(0), 200),
        CoreRef {
            dep: 1,
            ..l2(1, 18)
        },
        l2(2, 10),
    ];
    let r1_issue = 9.0 + 200.0 + 4.0;
    let c = run(&gaps(one.clone()), &refs);
    assert_eq!(c.done.get(1), r1_issue + 18.0);
    assert_eq!(c.done.get(2), 0.5 + 10.0);
    assert_eq!(c.c.mshr_wait_cycles, 0.0);
    let in_order = run(&one, &refs);
    assert_eq!(in_order.done.get(2), r1_issue + 18.0 + 10.0);
}

#[test]
fn under_idle_gaps_a_miss_takes_the_same_idle_interval_at_every_level_it_passes() {
    // One L1D MSHR but a single LLC MSHR too: a DRAM miss needs both on one interval.
    let cfg = gaps(CoreConfig {
        l1d_mshrs: 2,
        l2_mshrs: 2,
        llc_mshrs: 1,
        ..program_order()
    });
    // Two independent DRAM misses: the LLC pool serializes them.
    let c = run(&cfg, &[miss(0), miss(1)]);
    assert_eq!(c.done.get(1), 2.0 * DRAM as f64);
    // An LLC hit passes only L1D and L2, so it overlaps a DRAM miss.
    let c = run(&cfg, &[miss(0), load(1, 58, ServedBy::Llc)]);
    assert_eq!(c.done.get(1), 0.25 + 58.0);
}

#[test]
fn idle_gap_grants_can_be_slower_with_more_mshrs_as_the_doc_shows() {
    // The case of `ResourceGrant`'s doc, on one walker. P: a DRAM miss (MSHR on [0, 200)).
    // M: an L2 hit, which with one MSHR waits for P (done 218), with two does not (18.25).
    // W: walks 100 cycles once P is done (the walker on [209, 309), granted first).
    // X: walks 150 cycles once M is done: requested at 227 it does not fit before W and
    // goes to [309, 459); requested at 27.25 it takes [27.25, 177.25).
    // Y: independent, walks 100 cycles from 10: into [10, 110) when X went after W, else
    // after W at 309. Then a chain of DRAM misses on Y.
    let fewer = gaps(CoreConfig {
        page_walkers: 1,
        l1d_mshrs: 1,
        l2_mshrs: 1,
        llc_mshrs: 1,
        ..program_order()
    });
    let more = CoreConfig {
        l1d_mshrs: 2,
        l2_mshrs: 2,
        llc_mshrs: 2,
        ..fewer.clone()
    };
    let refs = |chain: u64| {
        let mut refs = vec![
            miss(0),
            load(1, 18, ServedBy::L2),
            walked(CoreRef { dep: 2, ..hit(2) }, 100),
            walked(CoreRef { dep: 2, ..hit(3) }, 150),
            walked(hit(4), 100),
        ];
        refs.extend((0..chain).map(|i| CoreRef {
            dep: 1,
            ..miss(5 + i)
        }));
        refs
    };
    let x_and_y_done = |cfg: &CoreConfig| {
        let c = run(cfg, &refs(0));
        (c.done.get(3), c.done.get(4))
    };
    assert_eq!(
        x_and_y_done(&fewer),
        (309.0 + 150.0 + 4.0, 10.0 + 100.0 + 4.0)
    );
    assert_eq!(
        x_and_y_done(&more),
        (27.25 + 150.0 + 4.0, 309.0 + 100.0 + 4.0)
    );
    let slower = run(&more, &refs(4)).cycles();
    let faster = run(&fewer, &refs(4)).cycles();
    assert!(slower > faster, "more MSHRs {slower} vs fewer {faster}");
    // Granting in program order is monotone on the same references.
    let in_order = |c: &CoreConfig| {
        let cfg = CoreConfig {
            resource_grant: ResourceGrant::ProgramOrder,
            ..c.clone()
        };
        run(&cfg, &refs(4)).cycles()
    };
    assert!(in_order(&more) <= in_order(&fewer));
}

fn timed(cfg: CoreConfig) -> CoreConfig {
    CoreConfig {
        resource_grant: ResourceGrant::TimeOrder,
        ..cfg
    }
}

/// `run`, then every reference retired (under `time_order` the last ones may still wait).
fn run_settled(cfg: &CoreConfig, refs: &[CoreRef]) -> OooCore {
    run(cfg, refs).settled().into_owned()
}

#[test]
fn under_time_order_an_early_request_is_served_first_even_where_it_does_not_fit_a_gap() {
    let one = CoreConfig {
        l1d_mshrs: 1,
        ..program_order()
    };
    let l2 = |i: u64, cycles: u32| load(i, cycles, ServedBy::L2);
    // Reference 1's address waits for reference 0's 200-cycle walk: it requests the only
    // MSHR at 213. Reference 2 is independent and requests it at 0.5 for 300 cycles, more
    // than the idle time before 213.
    let refs = [
        walked(hit(0), 200),
        CoreRef {
            dep: 1,
            ..l2(1, 18)
        },
        l2(2, 300),
    ];
    let r1_request = 9.0 + 200.0 + 4.0;
    // In time order reference 2 asked first and gets it; reference 1 waits for it.
    let c = run_settled(&timed(one.clone()), &refs);
    assert_eq!(c.done.get(2), 0.5 + 300.0);
    assert_eq!(c.done.get(1), 0.5 + 300.0 + 18.0);
    assert_eq!(c.c.mshr_wait_cycles, 0.5 + 300.0 - r1_request);
    assert_eq!(c.tord.as_ref().unwrap().grants_back_in_time, 0);
    // Idle gaps leave it the time after reference 1's reservation, program order too.
    for cfg in [gaps(one.clone()), one.clone()] {
        let c = run(&cfg, &refs);
        assert_eq!(c.done.get(1), r1_request + 18.0);
        assert_eq!(c.done.get(2), r1_request + 18.0 + 300.0);
    }
}

/// A reference as the property tests' generator writes it (`arb_ref`).
#[allow(clippy::too_many_arguments)]
fn r(
    kind: AccessKind,
    vpn: u64,
    line: u64,
    instrs: u32,
    dep: u16,
    xlat_cycles: u64,
    walk_cycles: u64,
    data_cycles: u32,
    data_level: ServedBy,
) -> CoreRef {
    CoreRef {
        kind,
        vpn,
        line,
        instrs,
        dep,
        xlat_cycles,
        walk_cycles,
        data_cycles,
        data_level,
        walk_events: 0,
        data_events: 0,
    }
}

/// The configuration of `time_order_grants_follow_request_time_and_keep_program_facts`.
fn small_timed(walkers: u32, mshrs: u32) -> CoreConfig {
    timed(CoreConfig {
        page_walkers: walkers,
        l1d_mshrs: mshrs,
        l2_mshrs: mshrs,
        llc_mshrs: mshrs,
        lq_entries: 8,
        sq_entries: 8,
        rob_entries: 32,
        ..program_order()
    })
}

/// Grants made for a request earlier than one already granted, reading `refs` then
/// retiring everything.
fn grants_back_in_time(cfg: &CoreConfig, refs: &[CoreRef]) -> u64 {
    let c = run(cfg, refs);
    let read = c.tord.as_ref().unwrap().grants_back_in_time;
    let s = c.settled();
    assert!(s.tord.as_ref().unwrap().grants_back_in_time >= read);
    s.tord.as_ref().unwrap().grants_back_in_time
}

#[test]
fn under_time_order_a_rob_check_on_a_non_memory_instruction_grants_nothing_out_of_time_order() {
    use AccessKind::{IFetch, Load, Store};
    use ServedBy::{Llc, L1 as H, L2};
    // Shrunk by proptest (crates/xlat/proptest-regressions/timing/ooo.txt, 35a1fd2a): one
    // walker, one MSHR, a 32-entry ROB. Dispatching a reference needed the retirement of
    // a non-memory instruction of an earlier group; answering it retired the group's memory
    // reference, which granted requests up to that reference's completion, later than the
    // dispatch it bounded, and a reference dispatched then requested the walker or the MSHR
    // earlier than grants already made.
    let refs = [
        r(Load, 3, 192, 0, 0, 187, 178, 58, Llc),
        r(Load, 0, 0, 0, 0, 0, 0, 4, H),
        r(Load, 0, 0, 0, 2, 245, 236, 58, Llc),
        r(Load, 1, 67, 3, 1, 240, 231, 18, L2),
        r(Store, 2, 128, 0, 0, 0, 0, 4, H),
        r(Load, 4, 259, 3, 0, 0, 0, 4, H),
        r(Store, 0, 3, 3, 0, 0, 0, 4, H),
        r(Load, 4, 258, 2, 2, 0, 0, 4, H),
        r(Store, 0, 2, 2, 0, 0, 0, 4, H),
        r(Load, 1, 65, 1, 0, 0, 0, 4, H),
        r(Load, 0, 3, 3, 0, 0, 0, 4, H),
        r(Load, 0, 1, 1, 0, 0, 0, 4, H),
        r(Load, 0, 1, 1, 0, 0, 0, 4, H),
        r(IFetch, 2, 128, 0, 0, 0, 0, 4, H),
        r(Store, 0, 2, 2, 0, 0, 0, 4, H),
        r(Store, 0, 1, 1, 0, 0, 0, 4, H),
        r(Load, 0, 2, 2, 0, 0, 0, 4, H),
        r(IFetch, 0, 2, 2, 0, 0, 0, 4, H),
        r(Store, 0, 1, 1, 0, 0, 0, 4, H),
        r(Store, 0, 2, 2, 0, 0, 0, 4, H),
        r(Store, 2, 131, 3, 0, 0, 0, 18, L2),
        r(IFetch, 0, 0, 0, 0, 0, 0, 18, L2),
    ];
    assert_eq!(grants_back_in_time(&small_timed(1, 1), &refs), 0);
}

#[test]
fn under_time_order_an_instruction_with_two_operands_frees_its_rob_entry_when_both_complete() {
    // Instruction 0 makes two DRAM references, the second waiting for the first (it
    // completes at about 400); with a 4-entry ROB the load of instruction 4 dispatches
    // only when instruction 0 retires. With resources to spare every grant scheme gives
    // the same schedule; `time_order` once answered instruction 0's retirement from its
    // first operand alone (about 200).
    let refs = [
        miss(0),
        CoreRef {
            instrs: 0,
            dep: 1,
            ..miss(1)
        },
        CoreRef {
            instrs: 4,
            ..miss(2)
        },
    ];
    let cfg = CoreConfig {
        rob_entries: 4,
        ..program_order()
    };
    let in_order = run_settled(&cfg, &refs).cycles();
    let in_time = run_settled(&timed(cfg), &refs).cycles();
    assert!(in_order >= 3.0 * DRAM as f64, "{in_order}");
    assert_eq!(in_time, in_order);
}

#[test]
fn under_time_order_a_run_of_instructions_longer_than_the_rob_dispatches_as_under_program_order() {
    // The ROB check of the run's last instruction asks for an instruction of the run itself
    // (beyond every reference read); this read never ended before the fix (found on `kv`
    // with a 16-entry ROB).
    let small = CoreConfig {
        rob_entries: 16,
        ..program_order()
    };
    let mut long = hit(1);
    long.instrs = 40;
    let refs = [miss(0), long, miss(2), hit(3)];
    let time_order = run_settled(&timed(small.clone()), &refs).cycles();
    let program_order = run(&small, &refs).cycles();
    assert_eq!(time_order, program_order);
    assert!(time_order > 40.0 / 4.0, "{time_order}");
}

#[test]
fn under_time_order_an_early_walk_is_served_before_a_later_requested_walk() {
    let one = timed(CoreConfig {
        page_walkers: 1,
        ..program_order()
    });
    // As under idle gaps: reference 2's walk, requested at 9.5, runs while reference 1
    // waits for its address (until 200), and a longer one delays reference 1's walk.
    let refs = [
        miss(0),
        walked(CoreRef { dep: 1, ..hit(1) }, 100),
        walked(hit(2), 100),
    ];
    let c = run_settled(&one, &refs);
    assert_eq!(c.c.walker_queue_cycles, 0.0);
    assert_eq!(c.done.get(2), 0.5 + 9.0 + 100.0 + 4.0);
    let long = [refs[0], refs[1], walked(hit(2), 300)];
    let c = run_settled(&one, &long);
    assert_eq!(c.done.get(2), 0.5 + 9.0 + 300.0 + 4.0);
    assert_eq!(c.done.get(1), 0.5 + 9.0 + 300.0 + 100.0 + 4.0);
}

#[test]
fn under_time_order_merges_wait_for_the_walk_and_the_fill_in_flight() {
    let cfg = timed(program_order());
    let c = run_settled(&cfg, &[walked(hit(0), 100), CoreRef { line: 1, ..hit(0) }]);
    assert_eq!(c.c.walk_merges, 1);
    assert_eq!(c.cycles(), 9.0 + 100.0 + 4.0 + 0.25);
    let c = run_settled(&cfg, &[miss(0), hit(0)]);
    assert_eq!(c.c.line_merges, 1);
    assert_eq!(c.cycles(), DRAM as f64 + 0.25);
    // A hit to a line whose miss waits for its address waits for that fill too.
    let c = run_settled(&cfg, &[miss(5), CoreRef { dep: 1, ..miss(0) }, hit(0)]);
    assert_eq!(c.c.line_merges, 1);
    assert_eq!(c.cycles(), 2.0 * DRAM as f64 + 0.25);
}

#[test]
fn time_order_grants_can_be_slower_with_more_mshrs_too() {
    // First come, first served is not monotone either (a Graham anomaly). One walker.
    // P: a DRAM miss. M: an L2 hit, which with one MSHR waits for P (done 218), with two
    // does not (18.25). X: a 60-cycle walk once M is done, requested at 227 or 27.25.
    // Y: independent, 80 instructions on, a 200-cycle walk requested at 29.5: before X
    // with one MSHR ([29.5, 229.5), done 233.5), after X with two (X on [27.25, 87.25),
    // Y on [87.25, 287.25), done 291.25). Then four dependent DRAM misses on Y.
    let fewer = timed(CoreConfig {
        page_walkers: 1,
        l1d_mshrs: 1,
        l2_mshrs: 1,
        llc_mshrs: 1,
        ..program_order()
    });
    let more = CoreConfig {
        l1d_mshrs: 2,
        l2_mshrs: 2,
        llc_mshrs: 2,
        ..fewer.clone()
    };
    let mut refs = vec![
        miss(0),
        load(1, 18, ServedBy::L2),
        walked(CoreRef { dep: 1, ..hit(2) }, 60),
        walked(
            CoreRef {
                instrs: 80,
                ..hit(3)
            },
            200,
        ),
    ];
    refs.extend((0..4).map(|i| CoreRef {
        dep: 1,
        ..miss(5 + i)
    }));
    let a = run_settled(&fewer, &refs);
    let b = run_settled(&more, &refs);
    assert_eq!(a.done.get(3), 29.5 + 200.0 + 4.0);
    assert_eq!(b.done.get(3), 27.25 + 60.0 + 200.0 + 4.0);
    assert_eq!(a.cycles(), 233.5 + 4.0 * DRAM as f64);
    assert_eq!(b.cycles(), 291.25 + 4.0 * DRAM as f64);
    // Program order is monotone on the same references.
    let in_order = |c: &CoreConfig| {
        let cfg = CoreConfig {
            resource_grant: ResourceGrant::ProgramOrder,
            ..c.clone()
        };
        run(&cfg, &refs).cycles()
    };
    assert!(in_order(&more) <= in_order(&fewer));
}

#[test]
fn every_grant_scheme_overlaps_independent_misses_and_serializes_a_chain() {
    for grant in [
        ResourceGrant::ProgramOrder,
        ResourceGrant::IdleGaps,
        ResourceGrant::TimeOrder,
    ] {
        let cfg = CoreConfig {
            resource_grant: grant,
            ..program_order()
        };
        let n = 8;
        let independent: Vec<_> = (0..n).map(miss).collect();
        let c = run_settled(&cfg, &independent);
        assert_eq!(c.cycles(), DRAM as f64 + (n - 1) as f64 / 4.0, "{grant:?}");
        let chain: Vec<_> = (0..n)
            .map(|i| CoreRef {
                dep: (i > 0) as u16,
                ..miss(i)
            })
            .collect();
        let c = run_settled(&cfg, &chain);
        assert_eq!(c.cycles(), n as f64 * DRAM as f64, "{grant:?}");
        for mshrs in [1u32, 3] {
            let cfg = CoreConfig {
                l1d_mshrs: mshrs,
                ..cfg.clone()
            };
            let m = 12u64;
            let refs: Vec<_> = (0..m).map(miss).collect();
            let cycles = run_settled(&cfg, &refs).cycles();
            let ideal = m.div_ceil(mshrs as u64) as f64 * DRAM as f64;
            assert!(cycles >= ideal && cycles < ideal + m as f64, "{grant:?}");
        }
        let one = CoreConfig {
            page_walkers: 1,
            ..cfg.clone()
        };
        let c = run_settled(&one, &[walked(hit(0), 100), walked(hit(1), 100)]);
        assert_eq!(c.cycles(), 9.0 + 200.0 + 4.0, "{grant:?}");
    }
}

#[test]
fn n_independent_walks_on_w_walkers_cost_ceil_n_over_w_walk_latencies() {
    for walkers in 1..=4u32 {
        for n in 1..=9u64 {
            let cfg = CoreConfig {
                page_walkers: walkers,
                ..program_order()
            };
            let refs: Vec<_> = (0..n).map(|i| walked(hit(i), 1000)).collect();
            let cycles = run(&cfg, &refs).cycles();
            let rounds = n.div_ceil(walkers as u64) as f64;
            let ideal = 9.0 + rounds * 1000.0 + 4.0;
            // Dispatch offsets add less than one cycle per reference.
            assert!(
                cycles >= ideal && cycles < ideal + n as f64,
                "{n} walks on {walkers} walkers: {cycles} cycles, ideal {ideal}"
            );
        }
    }
}

#[test]
fn misses_further_apart_than_the_rob_do_not_overlap() {
    let small = CoreConfig {
        rob_entries: 32,
        ..program_order()
    };
    let big = CoreConfig {
        rob_entries: 128,
        ..program_order()
    };
    let n = 6;
    // 33 instructions per miss: two misses never fit in a 32-entry ROB.
    let refs: Vec<_> = (0..n)
        .map(|i| CoreRef {
            instrs: 33,
            ..miss(i)
        })
        .collect();
    let serial = run(&small, &refs);
    assert!(
        serial.cycles() >= (n * DRAM as u64) as f64,
        "{}",
        serial.cycles()
    );
    assert!(serial.c.rob_full_cycles > 0.0);
    // In a 128-entry ROB about four are in flight at once.
    let overlapped = run(&big, &refs).cycles();
    assert!(
        overlapped < serial.cycles() / 2.5,
        "{overlapped} vs {}",
        serial.cycles()
    );
}

#[test]
fn a_full_rob_stalls_dispatch_for_the_cycles_it_waits() {
    let cfg = CoreConfig {
        rob_entries: 4,
        dispatch_width: 4,
        retire_width: 4,
        ..program_order()
    };
    // Five one-instruction misses: the fifth waits for the first to retire (at 200).
    let refs: Vec<_> = (0..5).map(miss).collect();
    let c = run(&cfg, &refs);
    assert_eq!(c.c.rob_full_cycles, 200.0 - 1.0);
    assert_eq!(c.cycles(), 400.0);
}

#[test]
fn a_stores_walk_delays_its_retirement_but_its_data_miss_does_not() {
    let cfg = program_order();
    let store = CoreRef {
        kind: AccessKind::Store,
        ..miss(0)
    };
    let after: Vec<_> = (1..10).map(hit).collect();
    let mut refs = vec![store];
    refs.extend_from_slice(&after);
    let no_walk = run(&cfg, &refs);
    assert!(no_walk.cycles() < 20.0, "{}", no_walk.cycles());
    refs[0] = walked(store, 100);
    let c = run(&cfg, &refs);
    assert!(c.cycles() >= 9.0 + 100.0, "{}", c.cycles());
    assert_eq!(c.c.head_translation_cycles, 9.0 + 100.0 - 0.25);
    assert_eq!(c.c.head_data_cycles, 0.0);
}

#[test]
fn a_reference_to_a_page_being_walked_waits_for_that_walk() {
    let cfg = program_order();
    let first = walked(hit(0), 100);
    // Same page, TLB hit (the entry the walk fills), different line.
    let second = CoreRef { line: 1, ..hit(0) };
    let c = run(&cfg, &[first, second]);
    assert_eq!(c.c.walk_merges, 1);
    // Its data arrives with the first's; it retires one slot after it.
    assert_eq!(c.cycles(), 9.0 + 100.0 + 4.0 + 0.25);
}

#[test]
fn a_hit_to_a_line_being_filled_waits_for_the_fill() {
    let cfg = program_order();
    let c = run(&cfg, &[miss(0), hit(0)]);
    assert_eq!(c.c.line_merges, 1);
    assert_eq!(c.cycles(), DRAM as f64 + 0.25);
}

#[test]
fn n_misses_with_m_mshrs_cost_ceil_n_over_m_latencies() {
    for mshrs in [1u32, 2, 3, 10] {
        let cfg = CoreConfig {
            l1d_mshrs: mshrs,
            ..program_order()
        };
        let n = 12u64;
        let refs: Vec<_> = (0..n).map(miss).collect();
        let cycles = run(&cfg, &refs).cycles();
        let ideal = n.div_ceil(mshrs as u64) as f64 * DRAM as f64;
        assert!(
            cycles >= ideal && cycles < ideal + n as f64,
            "{mshrs} MSHRs: {cycles}, ideal {ideal}"
        );
    }
}

#[test]
fn a_smaller_l2_or_llc_mshr_pool_binds_and_a_larger_one_changes_nothing() {
    let n = 12u64;
    let refs: Vec<_> = (0..n).map(miss).collect();
    let with = |l1: u32, l2: u32, llc: u32| {
        let cfg = CoreConfig {
            l1d_mshrs: l1,
            l2_mshrs: l2,
            llc_mshrs: llc,
            ..program_order()
        };
        run(&cfg, &refs).cycles()
    };
    let ceil = |m: u64| n.div_ceil(m) as f64 * DRAM as f64;
    assert!((ceil(2)..ceil(2) + 12.0).contains(&with(10, 2, 32)));
    assert!((ceil(3)..ceil(3) + 12.0).contains(&with(10, 16, 3)));
    assert_eq!(with(4, 16, 32), with(4, 4, 4));
}

#[test]
fn a_load_queue_of_any_size_admits_exactly_that_many_loads() {
    for lq in [3u32, 5, 72] {
        let cfg = CoreConfig {
            lq_entries: lq,
            l1d_mshrs: 100,
            l2_mshrs: 100,
            llc_mshrs: 100,
            ..program_order()
        };
        // lq misses overlap; the next one waits for the first to retire.
        let refs: Vec<_> = (0..=lq as u64).map(miss).collect();
        let c = run(&cfg, &refs);
        assert_eq!(c.cycles(), 2.0 * DRAM as f64, "lq {lq}");
        let fewer = run(&cfg, &refs[..lq as usize]);
        assert!(fewer.cycles() < DRAM as f64 + 20.0, "lq {lq}");
    }
}

#[test]
fn a_full_load_queue_stalls_the_next_load() {
    let cfg = CoreConfig {
        lq_entries: 2,
        ..program_order()
    };
    let c = run(&cfg, &[miss(0), miss(1), miss(2)]);
    assert!(c.c.lq_full_cycles > 0.0);
    // The third load waits for the first to retire.
    assert_eq!(c.cycles(), 2.0 * DRAM as f64 + 0.0);
}

#[test]
fn a_dependence_before_the_start_of_the_trace_is_an_error_naming_the_reference() {
    let mut c = core(&program_order());
    c.reference(&hit(0)).unwrap();
    let err = c.reference(&CoreRef { dep: 3, ..hit(1) }).unwrap_err();
    assert!(
        err.contains("reference #1") && err.contains("before the start"),
        "{err}"
    );
}

#[test]
fn zero_counts_and_a_rob_smaller_than_the_width_are_rejected_by_key() {
    let zero = CoreConfig {
        page_walkers: 0,
        ..program_order()
    };
    assert!(zero.validate().unwrap_err().contains("core.page_walkers"));
    let tiny = CoreConfig {
        rob_entries: 2,
        ..program_order()
    };
    let e = tiny.validate().unwrap_err();
    assert!(
        e.contains("core.rob_entries") && e.contains("dispatch_width"),
        "{e}"
    );
    assert!(CoreConfig::default().validate().is_ok());
    // The register file: 0 (not modelled) or at least the widths.
    let prf = |n| CoreConfig {
        int_prf_entries: n,
        ..program_order()
    };
    let e = prf(2).validate().unwrap_err();
    assert!(
        e.contains("core.int_prf_entries") && e.contains("not modelled"),
        "{e}"
    );
    assert!(prf(0).validate().is_ok() && prf(200).validate().is_ok());
    assert_eq!(prf(0).window_entries(), program_order().rob_entries);
    assert_eq!(prf(16).window_entries(), 16);
}

fn arb_ref() -> impl Strategy<Value = CoreRef> {
    (
        0..3u8,
        0..8u64,
        // Now and then a run of instructions longer than the small cores' ROBs.
        prop_oneof![9 => 0..4u32, 1 => 30..80u32],
        0..4u16,
        0..3u8,
        prop_oneof![Just(0u64), 1..300u64],
        0..4u8,
    )
        .prop_map(|(kind, page, instrs, dep, tlb, walk, level)| {
            let (data_level, data_cycles) = match level {
                0 => (ServedBy::L1, L1),
                1 => (ServedBy::L2, 18),
                2 => (ServedBy::Llc, 58),
                _ => (ServedBy::Dram, DRAM),
            };
            let (xlat_cycles, walk_cycles) = match tlb {
                0 => (0, 0),
                1 => (L2_TLB, 0),
                _ => (L2_TLB + walk, walk),
            };
            CoreRef {
                kind: match kind {
                    0 => AccessKind::Load,
                    1 => AccessKind::Store,
                    _ => AccessKind::IFetch,
                },
                vpn: page,
                line: page * 64 + instrs as u64,
                instrs,
                dep,
                xlat_cycles,
                walk_cycles,
                data_cycles,
                data_level,
                walk_events: 0,
                data_events: 0,
            }
        })
}

fn cycles_of(cfg: &CoreConfig, refs: &[CoreRef]) -> f64 {
    let mut c = core(cfg);
    for (i, r) in refs.iter().enumerate() {
        let r = CoreRef {
            dep: if r.dep as usize > i { 0 } else { r.dep },
            ..*r
        };
        c.reference(&r).unwrap();
    }
    c.settled().cycles()
}

proptest! {
    #[test]
    fn a_unit_pool_grants_like_taking_the_earliest_of_a_plain_list(
        n in 1..90u32,
        ops in proptest::collection::vec((0..500u32, 1..400u32), 1..100),
    ) {
        let mut heap = Units::new(n);
        let mut plain = vec![0.0f64; n as usize];
        for (request, latency) in ops {
            let i = (0..plain.len())
                .min_by(|&a, &b| plain[a].total_cmp(&plain[b]))
                .unwrap();
            prop_assert_eq!(heap.earliest(), plain[i]);
            let done = (request as f64).max(plain[i]) + latency as f64;
            plain[i] = done;
            heap.take_until(done);
        }
    }

    #[test]
    fn an_idle_gap_grant_is_the_earliest_start_at_which_fewer_than_n_units_are_busy(
        n in 1..6u32,
        ops in proptest::collection::vec((0..400u32, 1..200u32), 1..80),
    ) {
        let mut slots = Slots::new(n, 4);
        let mut granted: Vec<(f64, f64)> = Vec::new();
        let busy_at = |g: &[(f64, f64)], t: f64| g.iter().filter(|&&(a, b)| a <= t && t < b).count();
        for (request, len) in ops {
            let (request, len) = (request as f64, len as f64);
            let (start, unit) = slots.fit(request, len, 0.0);
            slots.take(unit, start, len);
            // Busy counts only change at interval starts, so checking them there (and at
            // `start`) covers the whole interval.
            let starts = || granted.iter().map(|&(a, _)| a).chain([start]);
            for t in starts().filter(|&t| t >= start && t < start + len) {
                prop_assert!(busy_at(&granted, t) < n as usize, "over capacity at {t}");
            }
            // No earlier start at or after the request fits on any unit: each candidate
            // (the request, or an interval's end) has a unit busy somewhere in its window
            // on every unit, checked against the per-unit intervals.
            let candidates: Vec<f64> = std::iter::once(request)
                .chain(slots.busy.iter().flatten().map(|&(_, b)| b))
                .filter(|&t| t >= request && t < start)
                .collect();
            for t in candidates {
                let fits = slots.busy.iter().enumerate().any(|(u, iv)| {
                    iv.iter().all(|&(a, b)| {
                        (u == unit && a == start) || b <= t || a >= t + len
                    })
                });
                prop_assert!(!fits, "{t} fits before {start}");
            }
            granted.push((start, start + len));
        }
    }

    #[test]
    fn idle_gap_grants_never_start_an_operation_before_its_request_nor_break_program_facts(
        refs in proptest::collection::vec(arb_ref(), 1..300),
    ) {
        // Under idle gaps every reference still completes after it dispatched and retires
        // in order: cycles are at least the dispatch time of the last instruction.
        let cfg = gaps(program_order());
        let mut c = core(&cfg);
        let mut last = 0.0;
        for (i, r) in refs.iter().enumerate() {
            let r = CoreRef { dep: if r.dep as usize > i { 0 } else { r.dep }, ..*r };
            c.reference(&r).unwrap();
            prop_assert!(c.cycles() >= last);
            prop_assert!(c.cycles() >= c.last_dispatch);
            last = c.cycles();
        }
        prop_assert_eq!(c.c.walker_queue_cycles >= 0.0, true);
        prop_assert_eq!(c.c.mshr_wait_cycles >= 0.0, true);
    }

    #[test]
    fn time_order_grants_follow_request_time_and_keep_program_facts(
        refs in proptest::collection::vec(arb_ref(), 1..300),
        walkers in 1..4u32,
        mshrs in 1..6u32,
    ) {
        let cfg = timed(CoreConfig {
            page_walkers: walkers,
            l1d_mshrs: mshrs,
            l2_mshrs: mshrs,
            llc_mshrs: mshrs,
            lq_entries: 8,
            sq_entries: 8,
            rob_entries: 32,
            ..program_order()
        });
        let mut c = core(&cfg);
        let mut last = 0.0;
        for (i, r) in refs.iter().enumerate() {
            let r = CoreRef { dep: if r.dep as usize > i { 0 } else { r.dep }, ..*r };
            c.reference(&r).unwrap();
            prop_assert!(c.cycles() >= last);
            last = c.cycles();
        }
        prop_assert_eq!(c.tord.as_ref().unwrap().grants_back_in_time, 0);
        let s = c.settled();
        prop_assert!(s.cycles() >= c.cycles());
        prop_assert!(s.cycles() >= c.last_dispatch);
        prop_assert!(s.c.walker_queue_cycles >= 0.0 && s.c.mshr_wait_cycles >= 0.0);
        // Settling a copy leaves the run as it was: the same references give the same cycles.
        prop_assert_eq!(s.cycles().to_bits(), cycles_of(&cfg, &refs).to_bits());
    }

    #[test]
    fn more_walkers_mshrs_or_rob_entries_are_never_slower(
        refs in proptest::collection::vec(arb_ref(), 1..300),
        walkers in 1..4u32,
        mshrs in 1..6u32,
        rob in 4..64u32,
    ) {
        let base = CoreConfig {
            rob_entries: rob,
            page_walkers: walkers,
            l1d_mshrs: mshrs,
            l2_mshrs: mshrs,
            llc_mshrs: mshrs,
            lq_entries: 8,
            sq_entries: 8,
            ..program_order()
        };
        let t = cycles_of(&base, &refs);
        for more in [
            CoreConfig { page_walkers: walkers + 1, ..base.clone() },
            CoreConfig { l1d_mshrs: mshrs + 2, ..base.clone() },
            CoreConfig { rob_entries: rob * 2, ..base.clone() },
        ] {
            let u = cycles_of(&more, &refs);
            prop_assert!(u <= t + 1e-9, "{more:?}: {u} > {t}");
        }
    }

    #[test]
    fn a_register_file_smaller_than_the_rob_times_as_a_rob_of_its_size_and_zero_leaves_the_rob(
        refs in proptest::collection::vec(arb_ref(), 1..300),
        prf in 4..48u32,
        grant in 0..3usize,
    ) {
        let base = CoreConfig {
            page_walkers: 2,
            l1d_mshrs: 4,
            l2_mshrs: 4,
            llc_mshrs: 4,
            lq_entries: 8,
            sq_entries: 8,
            resource_grant: [
                ResourceGrant::ProgramOrder,
                ResourceGrant::IdleGaps,
                ResourceGrant::TimeOrder,
            ][grant],
            ..program_order()
        };
        let as_rob = cycles_of(&CoreConfig { rob_entries: prf, ..base.clone() }, &refs);
        let with_prf = CoreConfig { rob_entries: 64, int_prf_entries: prf, ..base.clone() };
        prop_assert_eq!(cycles_of(&with_prf, &refs).to_bits(), as_rob.to_bits());
        let unmodelled = CoreConfig { rob_entries: 64, int_prf_entries: 0, ..base.clone() };
        let rob_only = CoreConfig { rob_entries: 64, ..base };
        prop_assert_eq!(cycles_of(&unmodelled, &refs).to_bits(), cycles_of(&rob_only, &refs).to_bits());
    }

    #[test]
    fn the_same_references_give_the_same_cycles(
        refs in proptest::collection::vec(arb_ref(), 1..200),
    ) {
        let cfg = CoreConfig::default();
        prop_assert_eq!(cycles_of(&cfg, &refs).to_bits(), cycles_of(&cfg, &refs).to_bits());
    }
}

// ---- The memory system under load (`memory.rs`): walks' reads on MSHRs, queued DRAM. ----

/// A core timing its references' memory events on a one-channel queued DDR4-3200 controller,
/// `row_contiguous` (the layout [`bank0_row`] spells out).
fn queued_core(cfg: &CoreConfig) -> OooCore {
    let dram = crate::mem::DramConfig {
        channels: 1,
        refresh: false,
        address_mapping: crate::mem::dram::DramMapping::RowContiguous,
        ..crate::mem::DramConfig::default()
    };
    let c = crate::mem::dram::controller::DramController::new(&dram).unwrap();
    OooCore::with_dram(cfg, L1, Some(DramHandle::new(c)))
}

/// A DRAM read event of `line` after `pre` cycles of lookups, idle DRAM latency `dram`.
fn dram_event(
    line: u64,
    kind: crate::mem::MemEventKind,
    offset: u32,
    first_pool: u8,
) -> crate::mem::MemEvent {
    crate::mem::MemEvent {
        line,
        offset_cycles: offset,
        latency_cycles: 58 + 100,
        pre_dram_cycles: 58,
        dram_cycles: 100,
        first_pool,
        last_pool: 3,
        kind,
        parallel: false,
    }
}

/// `n` independent loads missing to DRAM, each with its data event (lines `line(i)`).
fn loaded_misses_at(
    n: u64,
    line: impl Fn(u64) -> u64,
) -> Vec<(CoreRef, Vec<crate::mem::MemEvent>)> {
    (0..n)
        .map(|i| {
            let line = line(i);
            let r = CoreRef {
                line,
                data_cycles: 158,
                data_events: 1,
                ..miss(i)
            };
            let e = dram_event(line, crate::mem::MemEventKind::DataRead, 0, 0);
            (r, vec![e])
        })
        .collect()
}

/// [`loaded_misses_at`] lines `base + i * stride`.
fn loaded_misses(n: u64, base: u64, stride: u64) -> Vec<(CoreRef, Vec<crate::mem::MemEvent>)> {
    loaded_misses_at(n, |i| base + i * stride)
}

/// The line of row `row`'s first column in bank 0 of channel 0 under the
/// `row_contiguous` mapping of one channel (16 banks of 128-line rows, the bank XORed with the
/// row's low bits).
fn bank0_row(row: u64) -> u64 {
    row * 2048 + (row % 16) * 128
}

fn run_queued(cfg: &CoreConfig, refs: &[(CoreRef, Vec<crate::mem::MemEvent>)]) -> OooCore {
    let mut c = queued_core(cfg);
    for (r, ev) in refs {
        c.reference_with(r, ev).unwrap();
    }
    finish(&mut c);
    c
}

/// Account and retire every reference given to `c`, in place (a settled copy keeps the
/// memory system's figures of the grants made before settling).
fn finish(c: &mut OooCore) {
    c.account_batch();
    if let Some(mut t) = c.tord.take() {
        while t.retired < c.refs {
            c.retire_one_in_time_order(&mut t);
        }
        c.tord = Some(t);
    }
}

#[test]
fn a_lone_dram_miss_under_the_queued_model_costs_its_lookups_plus_the_controllers_latency() {
    let cfg = CoreConfig::default();
    let c = run_queued(&cfg, &loaded_misses(1, 1 << 20, 1));
    let idle = c
        .dram
        .as_ref()
        .unwrap()
        .with(|d| d.idle_latencies()[1] as f64);
    // One load: dispatched at 0, its miss requested at 0, DRAM reached after 58 cycles of
    // lookups, an empty bank's latency there; retired the cycle after.
    assert_eq!(c.m.data_dram_reads, 1);
    assert_eq!(c.m.data_dram_cycles, idle);
    assert!((c.cycles() - (58.0 + idle)).abs() <= 1.0, "{}", c.cycles());
}

#[test]
fn misses_queued_on_one_bank_take_longer_than_the_same_misses_spread_over_banks() {
    let cfg = CoreConfig::default();
    // Lines in one bank's different rows conflict; consecutive lines of one row
    // hit. Both streams offer the controller ten misses at once (the L1D's fill buffers).
    let conflicting = run_queued(&cfg, &loaded_misses_at(200, |i| bank0_row(512 + i)));
    let hitting = run_queued(&cfg, &loaded_misses(200, 1 << 20, 1));
    assert!(
        conflicting.cycles() > 1.5 * hitting.cycles(),
        "conflicts {} vs hits {}",
        conflicting.cycles(),
        hitting.cycles()
    );
    // The idle model would have charged both the same latency per miss.
    assert!(conflicting.m.data_dram_cycles > conflicting.m.data_dram_idle_cycles);
}

#[test]
fn a_walks_reads_wait_for_l2_mshrs_that_data_misses_hold() {
    // One L2 MSHR (fewer than the L1D's 10, so the pool binds for data too) and a walk whose
    // only read misses L2 and goes to DRAM: behind a data miss holding that MSHR, the walk
    // waits, and the core says so.
    let cfg = CoreConfig {
        l2_mshrs: 1,
        ..CoreConfig::default()
    };
    let (data, data_ev) = loaded_misses(1, 1 << 20, 1).remove(0);
    let walk_read = dram_event(7 << 20, crate::mem::MemEventKind::PtRead, 0, 1);
    let walk = CoreRef {
        walk_events: 1,
        ..walked(hit(1), 158)
    };
    let alone = run_queued(&cfg, &[(walk, vec![walk_read])]);
    let behind = run_queued(&cfg, &[(data, data_ev), (walk, vec![walk_read])]);
    assert_eq!(alone.m.walk_mshr_wait_cycles, 0.0);
    assert!(behind.m.walk_mshr_wait_cycles > 100.0, "{:?}", behind.m);
    assert!(behind.cycles() > alone.cycles() + 100.0);
    assert_eq!((behind.m.walk_reads, behind.m.walk_dram_reads), (1, 1));
}

#[test]
fn a_parallel_group_of_walk_reads_costs_its_slowest_member_not_their_sum() {
    let cfg = CoreConfig::default();
    let mut serial = Vec::new();
    for k in 0..4u64 {
        // Four different banks (row 8192 (k + 1)'s bank 0 moved by k): no bank conflict.
        serial.push(dram_event(
            bank0_row(8192 * (k + 1)) + 128 * k,
            crate::mem::MemEventKind::PtRead,
            0,
            1,
        ));
    }
    let mut parallel = serial.clone();
    for e in parallel.iter_mut().skip(1) {
        e.parallel = true;
    }
    for (i, e) in serial.iter_mut().enumerate() {
        e.offset_cycles = 158 * i as u32;
    }
    let walk = |n: u64| CoreRef {
        walk_events: 4,
        ..walked(hit(0), n)
    };
    let s = run_queued(&cfg, &[(walk(4 * 158), serial)]);
    let p = run_queued(&cfg, &[(walk(158), parallel)]);
    assert!(
        p.cycles() < s.cycles() / 2.0,
        "parallel {} serial {}",
        p.cycles(),
        s.cycles()
    );
}

#[test]
fn the_queued_model_gives_the_same_schedule_every_time_and_on_the_models_thread() {
    let cfg = CoreConfig::default();
    let refs = loaded_misses(3000, 1 << 20, 37);
    let a = run_queued(&cfg, &refs);
    let b = run_queued(&cfg, &refs);
    assert_eq!(a.cycles().to_bits(), b.cycles().to_bits());
    let dram = || {
        let d = crate::mem::DramConfig {
            channels: 1,
            refresh: false,
            address_mapping: crate::mem::dram::DramMapping::RowContiguous,
            ..crate::mem::DramConfig::default()
        };
        Some(DramHandle::new(
            crate::mem::dram::controller::DramController::new(&d).unwrap(),
        ))
    };
    let mut here = crate::timing::CoreModel::with_dram(&cfg, L1, false, dram());
    let mut there = crate::timing::CoreModel::with_dram(&cfg, L1, true, dram());
    for (r, ev) in &refs {
        here.reference_with(r, ev).unwrap();
        there.reference_with(r, ev).unwrap();
    }
    let (h, t) = (here.snapshot(), there.snapshot());
    assert_eq!(
        h.settled().cycles().to_bits(),
        t.settled().cycles().to_bits()
    );
    assert_eq!(h.settled().cycles().to_bits(), a.cycles().to_bits());
}

#[test]
fn cores_sharing_one_controller_slow_each_other_down() {
    let cfg = CoreConfig::default();
    let d = crate::mem::DramConfig {
        channels: 1,
        refresh: false,
        ..crate::mem::DramConfig::default()
    };
    let shared = DramHandle::new(crate::mem::dram::controller::DramController::new(&d).unwrap());
    let mut a = OooCore::with_dram(&cfg, L1, Some(shared.share()));
    let mut b = OooCore::with_dram(&cfg, L1, Some(shared.share()));
    let alone = run_queued(&cfg, &loaded_misses(2000, 1 << 20, 1));
    // Two cores streaming different rows, interleaved in chunks as the machine runs them.
    let ra = loaded_misses(2000, 1 << 20, 1);
    let rb = loaded_misses(2000, 1 << 28, 1);
    for (ca, cb) in ra.chunks(64).zip(rb.chunks(64)) {
        for (r, ev) in ca {
            a.reference_with(r, ev).unwrap();
        }
        for (r, ev) in cb {
            b.reference_with(r, ev).unwrap();
        }
        a.account_batch();
        b.account_batch();
    }
    assert!(
        a.settled().cycles() > alone.cycles() * 1.2,
        "{} vs {}",
        a.settled().cycles(),
        alone.cycles()
    );
    // A snapshot of one core copies the controller: it leaves the shared one as it was.
    let before = shared.with(|c| c.counters().reads);
    let _ = a.clone().settled();
    assert_eq!(shared.with(|c| c.counters().reads), before);
}

/// A `Prefetch` event of line `line`: served by DRAM `latency` cycles after its request.
fn prefetch_event(line: u64, latency: u32) -> crate::mem::MemEvent {
    crate::mem::MemEvent {
        line,
        offset_cycles: 0,
        latency_cycles: latency,
        pre_dram_cycles: 50,
        dram_cycles: latency - 50,
        first_pool: 1,
        last_pool: 3,
        kind: crate::mem::MemEventKind::Prefetch,
        parallel: false,
    }
}

/// A demand load whose L1D miss found line `line` in the L2, brought there by the prefetcher.
fn prefetch_hit_load(i: u64, line: u64) -> (CoreRef, Vec<crate::mem::MemEvent>) {
    let r = CoreRef {
        line,
        data_events: 1,
        ..load(i, L1 + 14, ServedBy::L2)
    };
    (r, vec![crate::mem::MemEvent::prefetch_hit(line)])
}

#[test]
fn a_demand_that_finds_its_line_prefetched_waits_for_the_prefetch_under_every_grant_scheme() {
    for grant in [
        ResourceGrant::ProgramOrder,
        ResourceGrant::IdleGaps,
        ResourceGrant::TimeOrder,
    ] {
        let cfg = CoreConfig {
            resource_grant: grant,
            ..CoreConfig::default()
        };
        // Reference 0 misses to DRAM and triggers a prefetch of line X (300 cycles); reference
        // 1, right after, finds X in the L2: its data is there when the prefetch's is, not an
        // L2 hit later.
        let x = 1 << 30;
        let trigger = CoreRef {
            data_events: 1,
            ..miss(0)
        };
        let (demand, demand_ev) = prefetch_hit_load(1, x);
        let mut c = OooCore::with_memory(&cfg, L1, None, true);
        c.reference_with(&trigger, &[prefetch_event(x, 300)])
            .unwrap();
        c.reference_with(&demand, &demand_ev).unwrap();
        finish(&mut c);
        let waited = c.cycles();
        assert!(waited >= L1 as f64 + 300.0, "{grant:?}: {waited}");
        assert_eq!(c.m.prefetches, 1, "{grant:?}");
        assert_eq!(c.m.prefetch_late_hits, 1, "{grant:?}");
        // Without the prefetch in flight (a prefetch long done, or none) the same demand is an
        // L2 hit.
        let mut alone = OooCore::with_memory(&cfg, L1, None, true);
        alone.reference_with(&miss(0), &[]).unwrap();
        alone.reference_with(&demand, &demand_ev).unwrap();
        finish(&mut alone);
        assert!(alone.cycles() < waited - 50.0, "{grant:?}");
        assert_eq!(alone.m.prefetch_late_hits, 0);
    }
}

#[test]
fn prefetches_hold_l2_mshrs_so_that_a_full_pool_delays_the_next_prefetch() {
    let cfg = CoreConfig {
        l2_mshrs: 2,
        ..CoreConfig::default()
    };
    let mut c = OooCore::with_memory(&cfg, L1, None, true);
    let trigger = CoreRef {
        data_events: 3,
        ..miss(0)
    };
    let ev: Vec<_> = (0..3).map(|k| prefetch_event((1 << 30) + k, 300)).collect();
    c.reference_with(&trigger, &ev).unwrap();
    finish(&mut c);
    assert_eq!(c.m.prefetches, 3);
    // Two prefetches fit the two L2 MSHRs the trigger's miss left... the trigger holds one L2
    // MSHR itself, so the second and third wait: at least one whole prefetch latency in all.
    assert!(
        c.m.prefetch_mshr_wait_cycles >= 300.0,
        "{}",
        c.m.prefetch_mshr_wait_cycles
    );
}
