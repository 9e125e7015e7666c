//! Tests of the built-in workloads.

use super::implicit::ImplicitGraph;
use super::program::{store, touch_pages};
use super::programs::Zipf;
use super::*;
use crate::rng::Rng;
use crate::trace::{AccessKind, Event};

fn cfg(name: &str, footprint: u64) -> WorkloadConfig {
    WorkloadConfig {
        name: name.into(),
        footprint,
        ..WorkloadConfig::default()
    }
}

fn events(c: &WorkloadConfig, refs: u64, seed: u64) -> Vec<Event> {
    let mut src = create(c, refs, seed).unwrap();
    let mut out = Vec::new();
    while src.fill(&mut out, 1000).unwrap() > 0 {}
    out
}

fn accesses(evs: &[Event]) -> Vec<(AccessKind, u64)> {
    evs.iter()
        .filter_map(|e| match e {
            Event::Access { kind, va, .. } => Some((*kind, va.0)),
            _ => None,
        })
        .collect()
}

#[test]
fn every_workload_is_deterministic_and_emits_exactly_the_requested_references() {
    for (name, _) in WORKLOADS {
        let c = cfg(name, 8 << 20);
        let a = events(&c, 30_000, 1);
        let b = events(&c, 30_000, 1);
        let d = events(&c, 30_000, 2);
        assert!(a == b, "{name}: same seed, different stream");
        // STREAM has no random choice; every other workload must depend on the seed.
        assert!(
            *name == "stream" || a != d,
            "{name}: different seeds, same stream"
        );
        assert_eq!(accesses(&a).len(), 30_000, "{name}");
    }
}

#[test]
fn the_stream_of_events_does_not_depend_on_how_it_is_fetched() {
    for (name, _) in WORKLOADS {
        let c = cfg(name, 8 << 20);
        let whole = events(&c, 20_000, 3);
        for max in [1, 7, 512] {
            let mut src = create(&c, 20_000, 3).unwrap();
            let mut out = Vec::new();
            loop {
                let before = out.len();
                let n = src.fill(&mut out, max).unwrap();
                assert!(n <= max, "{name}: {n} events for max {max}");
                assert_eq!(out.len() - before, n, "{name}");
                if n == 0 {
                    break;
                }
            }
            assert!(
                out == whole,
                "{name}: fetched {max} at a time, a different stream"
            );
            assert_eq!(
                src.fill(&mut out, max).unwrap(),
                0,
                "{name}: the end is final"
            );
        }
    }
}

#[test]
fn every_access_falls_inside_a_live_mapping_and_the_footprint_is_respected() {
    for (name, _) in WORKLOADS {
        let footprint = 16u64 << 20;
        let evs = events(&cfg(name, footprint), 200_000, 3);
        let mut regions: Vec<(u64, u64)> = Vec::new();
        let mut heap: Option<(u64, u64)> = None;
        let mut peak = 0u64;
        for e in &evs {
            match *e {
                Event::Mmap { addr, len, .. } => regions.push((addr.0, addr.0 + len)),
                Event::Munmap { addr, len } => {
                    regions.retain(|r| !(r.0 >= addr.0 && r.1 <= addr.0 + len))
                }
                Event::Brk { new_brk } => {
                    let start = heap.map_or(new_brk.0, |h| h.0);
                    heap = Some((start, new_brk.0));
                }
                Event::Access { va, .. } => {
                    let inside = regions.iter().any(|r| va.0 >= r.0 && va.0 < r.1)
                        || heap.is_some_and(|h| va.0 >= h.0 && va.0 < h.1);
                    assert!(inside, "{name}: access to {va} outside every mapping");
                }
                _ => {}
            }
            let mapped: u64 =
                regions.iter().map(|r| r.1 - r.0).sum::<u64>() + heap.map_or(0, |h| h.1 - h.0);
            peak = peak.max(mapped);
        }
        let ratio = peak as f64 / footprint as f64;
        assert!(
            (0.95..=1.05).contains(&ratio),
            "{name}: mapped {peak} for a footprint of {footprint}"
        );
    }
}

#[test]
fn gups_updates_spread_over_the_whole_table_as_load_store_pairs() {
    let evs = events(&cfg("gups", 1 << 20), 300_000, 1);
    let acc = accesses(&evs);
    let main = &acc[256..]; // after the first-touch stores of 256 pages
    assert!(main
        .chunks(2)
        .all(|p| p[0].0 == AccessKind::Load && p[1] == (AccessKind::Store, p[0].1)));
    let pages: std::collections::HashSet<u64> = main.iter().map(|a| a.1 >> 12).collect();
    assert_eq!(pages.len(), 256, "every page of the table is updated");
}

#[test]
fn stream_reads_b_and_c_and_writes_a_sequentially() {
    let evs = events(&cfg("stream", 3 << 20), 10_000, 1);
    let acc = accesses(&evs);
    let main = &acc[768..]; // 3 arrays x 256 pages of first touch
    for (i, t) in main.chunks(3).take(100).enumerate() {
        assert_eq!(
            (t[0].0, t[1].0, t[2].0),
            (AccessKind::Load, AccessKind::Load, AccessKind::Store)
        );
        if i > 0 {
            assert_eq!(t[0].1, main[(i - 1) * 3].1 + 8, "sequential");
        }
    }
}

#[test]
fn pointer_chase_visits_every_node_once_per_cycle() {
    let evs = events(&cfg("pointer_chase", 64 << 10), 2000 + 16, 5);
    let acc = accesses(&evs);
    let main: Vec<u64> = acc[16..].iter().map(|a| a.1).collect(); // 16 pages first-touched
    let nodes = (64u64 << 10) / 64;
    let first: std::collections::HashSet<u64> = main[..nodes as usize].iter().copied().collect();
    assert_eq!(first.len() as u64, nodes, "one cycle through all nodes");
    assert_eq!(main[nodes as usize], main[0], "and back to the start");
}

#[test]
fn pointer_chase_with_chains_runs_k_chases_of_the_one_cycle_in_turn_each_load_after_its_own() {
    let (k, nodes) = (4usize, (64u64 << 10) / 64);
    let single = events(&cfg("pointer_chase", 64 << 10), 16 + nodes, 5);
    let cycle: Vec<u64> = accesses(&single)[16..].iter().map(|a| a.1).collect();
    let c = WorkloadConfig {
        chains: k as u32,
        ..cfg("pointer_chase", 64 << 10)
    };
    let evs = events(&c, 16 + 400, 5);
    let loads: Vec<(u64, u32, u16)> = evs
        .iter()
        .filter_map(|e| match e {
            Event::Access {
                kind: AccessKind::Load,
                va,
                instrs,
                dep,
                ..
            } => Some((va.0, *instrs, *dep)),
            _ => None,
        })
        .collect();
    assert_eq!(loads.len(), 400);
    let spacing = nodes as usize / k;
    for (n, &(va, instrs, dep)) in loads.iter().enumerate() {
        let (chase, step) = (n % k, n / k);
        assert_eq!(
            va,
            cycle[chase * spacing + step],
            "load {n}: chase {chase}, step {step}"
        );
        assert_eq!(instrs, 6);
        assert_eq!(dep, if n < k { 0 } else { k as u16 }, "load {n}");
    }
}

#[test]
fn workload_chains_outside_1_to_64_is_rejected_naming_the_key() {
    for bad in [0, 65] {
        let c = WorkloadConfig {
            chains: bad,
            ..cfg("pointer_chase", 64 << 10)
        };
        let err = c.validate().unwrap_err();
        assert!(err.contains("workload.chains"), "{err}");
    }
}

#[test]
fn bfs_sets_the_parent_of_exactly_the_vertices_reachable_from_the_source() {
    // 4096 vertices of degree 8: levels outgrow the 64-entry queue, so both the queue and the
    // overflow bitmap carry frontiers.
    let c = WorkloadConfig {
        name: "bfs".into(),
        degree: 8,
        footprint: 4096 * (8 + 32) + 4096 * 35 / 8,
        ..WorkloadConfig::default()
    };
    let mut g = ImplicitGraph::new(programs::graph_vertices(&c, 35), 8, 9).unwrap();
    g.build();
    let n = g.vertices();
    assert_eq!(n, 4096);
    let src = {
        let mut rng = Rng::new(9, 5);
        let mut s = rng.below(n);
        for _ in 0..64 {
            if g.degree(s) > 0 {
                break;
            }
            s = rng.below(n);
        }
        s
    };
    let mut reach = vec![false; n as usize];
    let mut stack = vec![src];
    reach[src as usize] = true;
    while let Some(u) = stack.pop() {
        let lo = g.first_edge(u);
        for e in lo..lo + g.degree(u) {
            let v = g.target(e);
            if !reach[v as usize] {
                reach[v as usize] = true;
                stack.push(v);
            }
        }
    }
    let mut p = programs::Bfs::new(&c, 9).unwrap();
    let mut mem = heap::AddressSpace::new(false);
    p.setup(&mut mem, &mut Burst::default());
    let mut q = Vec::new();
    let (mut parent_stores, mut bitmap_stores) = (0usize, 0usize);
    // Walk until the first search ends (the reset of parent[] is a burst of 64-byte stores).
    'outer: for _ in 0..1_000_000 {
        p.step(&mut mem, &mut q);
        for e in q.drain(..) {
            match e {
                // A newly visited vertex: its parent store depends on the neighbour id.
                Event::Access {
                    kind: AccessKind::Store,
                    size: 4,
                    dep: 2,
                    ..
                } => parent_stores += 1,
                Event::Access {
                    kind: AccessKind::Store,
                    size: 8,
                    dep: 1,
                    ..
                } => bitmap_stores += 1,
                Event::Access { size: 64, .. } => break 'outer,
                _ => {}
            }
        }
    }
    let reachable = reach.iter().filter(|r| **r).count();
    assert!(reachable > 1000, "{reachable}");
    // The source's parent store happened in setup.
    assert_eq!(
        parent_stores,
        reachable - 1,
        "visited set differs from the reachable set"
    );
    assert!(bitmap_stores > 0, "no level overflowed its queue");
}

#[test]
fn the_zipf_sampler_is_skewed_as_the_distribution_says() {
    let z = Zipf::new(1000, 0.99);
    let mut rng = Rng::new(1, 0);
    let mut hist = vec![0u64; 1000];
    let n = 200_000;
    for _ in 0..n {
        hist[z.sample(&mut rng) as usize] += 1;
    }
    let zeta: f64 = (1..=1000).map(|i| (i as f64).powf(-0.99)).sum();
    let expect_top = n as f64 / zeta;
    assert!(
        (hist[0] as f64 / expect_top - 1.0).abs() < 0.05,
        "{} vs {expect_top}",
        hist[0]
    );
    assert!(hist[0] > hist[10] && hist[10] > hist[500]);
}

#[test]
fn an_unknown_workload_is_rejected_with_a_suggestion() {
    let err = cfg("gupz", 1 << 20).validate().unwrap_err();
    assert!(err.contains("did you mean 'gups'"), "{err}");
}

/// The setup burst, expanded lazily, is exactly the eager expansion — every event in order, one
/// store per page of each first-touch run (also from a start inside a page), cut before the
/// first reference beyond the budget — however many events each fetch asks for.
#[test]
fn a_setup_burst_expands_lazily_to_exactly_its_eager_events() {
    let call = Event::Munmap {
        addr: crate::addr::Vaddr(0x9000),
        len: 4096,
    };
    let mut burst = Burst::default();
    burst.events.push(call);
    touch_pages(&mut burst, 0x10_0800, 3 * 4096); // starts mid-page: 4 pages
    touch_pages(&mut burst, 0x20_0000, 0); // empty: nothing
    store(&mut burst.events, 0x30_0010, 4, 2);
    burst.events.push(call);
    touch_pages(&mut burst, 0x40_0000, 4096); // 1 page
    burst.events.push(call);
    let ta = |va: u64| Event::Access {
        kind: AccessKind::Store,
        va: crate::addr::Vaddr(va),
        size: 8,
        instrs: 2,
        dep: 0,
    };
    let eager = vec![
        call,
        ta(0x10_0800),
        ta(0x10_1000),
        ta(0x10_2000),
        ta(0x10_3000),
        Event::Access {
            kind: AccessKind::Store,
            va: crate::addr::Vaddr(0x30_0010),
            size: 4,
            instrs: 2,
            dep: 0,
        },
        call,
        ta(0x40_0000),
        call,
    ];
    for budget in 0..8u64 {
        // Eager: cut before the first reference beyond the budget.
        let mut seen = 0;
        let want: Vec<Event> = eager
            .iter()
            .copied()
            .take_while(|e| {
                seen += matches!(e, Event::Access { .. }) as u64;
                seen <= budget
            })
            .collect();
        for max in 1..=9 {
            let mut cursor = BurstCursor::new(Burst {
                events: burst.events.clone(),
                touches: burst.touches.clone(),
            });
            let mut refs_left = budget;
            let mut out = Vec::new();
            let mut done = false;
            for _ in 0..100 {
                let before = out.len();
                done = cursor.expand(&mut out, max, &mut refs_left);
                assert!(out.len() - before <= max);
                if done {
                    break;
                }
            }
            assert!(done, "budget {budget}, max {max}: never ended");
            assert_eq!(out, want, "budget {budget}, max {max}");
            assert_eq!(refs_left, budget - accesses(&want).len() as u64);
        }
    }
}

/// Host bytes of the program `c` names, as `create` measures it before a run.
fn program_host_bytes(c: &WorkloadConfig) -> u64 {
    match c.name.as_str() {
        "gups" => programs::Gups::new(c, 1).host_bytes(),
        "stream" => programs::Stream::new(c).host_bytes(),
        "pointer_chase" => programs::PointerChase::new(c, 1).host_bytes(),
        "bfs" => programs::Bfs::new(c, 1).unwrap().host_bytes(),
        "pagerank" => programs::PageRank::new(c, 1).unwrap().host_bytes(),
        "kv" => programs::Kv::new(c, 1).host_bytes(),
        "xsbench" => programs::XsBench::new(c, 1).host_bytes(),
        "dc" => programs::DegreeCentrality::new(c, 1).unwrap().host_bytes(),
        "sysbench" => programs::SysbenchMemory::new(c, 1).host_bytes(),
        "dlrm" => programs::DlrmSls::new(c, 1).host_bytes(),
        "btree" => programs::BTree::new(c, 1).host_bytes(),
        "hashjoin" => programs::HashJoin::new(c, 1).host_bytes(),
        "cc" => kernels::Sweep::new(c, 1, kernels::SweepKind::Cc)
            .unwrap()
            .host_bytes(),
        "gc" => kernels::Sweep::new(c, 1, kernels::SweepKind::Gc)
            .unwrap()
            .host_bytes(),
        "tc" => kernels::TriangleCount::new(c, 1).unwrap().host_bytes(),
        "sssp" => kernels::Sssp::new(c, 1).unwrap().host_bytes(),
        "dfs" => kernels::Dfs::new(c, 1).unwrap().host_bytes(),
        "kmer" => kernels::Kmer::new(c, 1).host_bytes(),
        "memcached" => kernels::Memcached::new(c, 1).host_bytes(),
        "bc" => kernels::Bc::new(c, 1).unwrap().host_bytes(),
        "svm" => apps::Svm::new(c, 1).host_bytes(),
        "canneal" => apps::Canneal::new(c, 1).host_bytes(),
        "streamcluster" => apps::StreamCluster::new(c, 1).host_bytes(),
        "mummer" => apps::Mummer::new(c, 1).host_bytes(),
        other => panic!("add {other} to program_host_bytes"),
    }
}

/// Issue 15: 64-128 GiB footprints in at most ~2 GiB of host memory. Every container a
/// generator fills is allocated by its constructor (see `Program::host_bytes`), so the sizes
/// measured here are the generator's whole state: graphs hold a degree index and bitmaps (about
/// 1 % of the footprint), every other generator a constant.
#[test]
fn generator_host_memory_stays_bounded_at_64_and_128_gib_footprints() {
    for (name, _) in WORKLOADS {
        let small = program_host_bytes(&cfg(name, 1 << 30));
        for footprint in [64u64 << 30, 128 << 30] {
            let bytes = program_host_bytes(&cfg(name, footprint));
            assert!(
                bytes <= HOST_BYTES_LIMIT,
                "{name} at {footprint}: {bytes} host bytes"
            );
            if *name == "bc" {
                // The degree index and a depth byte per vertex (of ~92 bytes of footprint).
                assert!(
                    bytes * 100 <= footprint * 16 / 10,
                    "bc at {footprint}: {bytes} host bytes, over 1.6 % of the footprint"
                );
            } else if matches!(
                *name,
                "bfs" | "pagerank" | "dc" | "cc" | "gc" | "tc" | "sssp" | "dfs"
            ) {
                assert!(
                    bytes * 100 <= footprint * 13 / 10,
                    "{name} at {footprint}: {bytes} host bytes, over 1.3 % of the footprint"
                );
            } else {
                assert!(
                    bytes <= small + (1 << 20),
                    "{name}: {small} host bytes at 1 GiB, {bytes} at {footprint}"
                );
            }
        }
    }
}

#[test]
fn a_generator_over_its_host_memory_limit_is_refused_with_a_clear_error() {
    // 1 TiB of graph at degree 1 needs more than 2^32 vertices.
    let c = WorkloadConfig {
        degree: 1,
        ..cfg("bfs", 1 << 40)
    };
    let err = create(&c, 1000, 1).err().expect("refused");
    assert!(
        err.contains("workload 'bfs'") && err.contains("32-bit"),
        "{err}"
    );
    // 512 GiB at degree 16: 6.7 G vertices, over the 32-bit ids too.
    let err = create(&cfg("pagerank", 512 << 30), 1000, 1)
        .err()
        .expect("refused");
    assert!(err.contains("workload 'pagerank'"), "{err}");
    // 256 GiB of BFS at degree 16: 3.6 G vertices fit 32-bit ids, their bitmaps not 2 GiB.
    let err = create(&cfg("bfs", 256 << 30), 1000, 1)
        .err()
        .expect("refused");
    assert!(err.contains("host memory"), "{err}");
    // 256 GiB of bc: 3 G vertices, a depth byte each: over 2 GiB, refused before the run.
    let err = create(&cfg("bc", 256 << 30), 1000, 1)
        .err()
        .expect("refused");
    assert!(
        err.contains("workload 'bc'") && err.contains("host memory"),
        "{err}"
    );
}

#[test]
fn a_footprint_larger_than_the_simulated_memory_is_refused_before_the_run() {
    let c = cfg("gups", 64 << 30);
    let err = check_fits(&c, 32 << 30, 0).unwrap_err();
    assert!(
        err.contains("workload.footprint") && err.contains("os.phys_mem_bytes"),
        "{err}"
    );
    assert!(
        check_fits(&c, 32 << 30, 32 << 30).is_ok(),
        "swap makes room"
    );
    let two = cfg("gups,kv", 40 << 30);
    assert!(check_fits(&two, 64 << 30, 0)
        .unwrap_err()
        .contains("x 2 processes"));
}

/// Accesses after the setup's first touches (the 8-byte stores, 2 instructions, no dependence,
/// one per page, that open every run; none of the workloads tested with it starts its kernel
/// with such a store).
fn after_first_touch(evs: &[Event]) -> Vec<Event> {
    let mut acc: Vec<Event> = evs
        .iter()
        .filter(|e| matches!(e, Event::Access { .. }))
        .copied()
        .collect();
    let first = acc
        .iter()
        .position(|e| {
            !matches!(
                e,
                Event::Access {
                    kind: AccessKind::Store,
                    size: 8,
                    instrs: 2,
                    dep: 0,
                    ..
                }
            )
        })
        .unwrap();
    acc.drain(..first);
    acc
}

#[test]
fn sysbench_writes_random_ints_over_its_whole_buffer() {
    let evs = events(&cfg("sysbench", 1 << 20), 100_000, 1);
    let main = after_first_touch(&evs);
    assert!(main.iter().all(
        |e| matches!(e, Event::Access { kind: AccessKind::Store, size: 4, va, .. } if va.0 % 4 == 0)
    ));
    let pages: std::collections::HashSet<u64> = main
        .iter()
        .map(|e| match e {
            Event::Access { va, .. } => va.0 >> 12,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(pages.len(), 256, "every page of the buffer is written");
}

#[test]
fn dlrm_loads_whole_rows_after_their_index_and_stores_each_pooled_bag() {
    let evs = events(&cfg("dlrm", 8 << 20), 60_000, 1);
    let main = after_first_touch(&evs);
    let mut i = 0;
    let mut lookups = 0;
    while i + 5 <= main.len() {
        let Event::Access { kind, size, va, .. } = main[i] else {
            unreachable!()
        };
        assert_eq!((kind, size), (AccessKind::Load, 8), "index load at {i}");
        let _ = va;
        let Event::Access { va: row, .. } = main[i + 1] else {
            unreachable!()
        };
        for line in 0..4 {
            assert!(matches!(main[i + 1 + line],
                Event::Access { kind: AccessKind::Load, size: 64, dep, va, .. }
                    if va.0 == row.0 + line as u64 * 64 && dep == line as u16 + 1));
        }
        i += 5;
        lookups += 1;
        if lookups % 32 == 0 && i + 4 <= main.len() {
            assert!(main[i..i + 4].iter().all(|e| matches!(
                e,
                Event::Access {
                    kind: AccessKind::Store,
                    size: 64,
                    ..
                }
            )));
            i += 4;
        }
    }
    assert!(lookups > 1000);
}

#[test]
fn btree_lookups_search_one_node_per_level_from_the_same_root() {
    // 1 MiB: 3840 leaves under 240, 15 and 1 inner nodes: 4 levels of 5 loads.
    let evs = events(&cfg("btree", 1 << 20), 50_000, 3);
    let main = after_first_touch(&evs);
    let va = |e: &Event| match e {
        Event::Access { va, .. } => va.0,
        _ => unreachable!(),
    };
    // A node's binary search probes key 8 first (64 bytes into the node); small levels come
    // from the brk heap, 16-byte aligned.
    let root = va(&main[0]) - 64;
    let mut leaves = std::collections::HashSet::new();
    for lookup in main.chunks_exact(20) {
        for level in lookup.chunks_exact(5) {
            let node = va(&level[0]) - 64;
            assert!(
                level.iter().all(|e| (node..node + 256).contains(&va(e))),
                "one node per level"
            );
            // The last load is the child pointer / value in the node's second half.
            assert!(va(&level[4]) - node >= 128);
        }
        assert_eq!(va(&lookup[0]) - 64, root, "every lookup starts at the root");
        leaves.insert(va(&lookup[15]) - 64);
    }
    assert!(
        leaves.len() > 1000,
        "lookups spread over the leaves: {}",
        leaves.len()
    );
}

#[test]
fn a_hashjoin_build_pass_puts_exactly_two_tuples_in_every_bucket() {
    let c = cfg("hashjoin", 1 << 20);
    // Per R tuple 16 + 16 + 24 bytes: 18724 tuples, 9362 buckets; a build pass is 3 accesses
    // per tuple.
    let tuples = ((1u64 << 20) / 56) & !1;
    let evs = events(&c, 3 * tuples + 200_000, 1);
    let main = after_first_touch(&evs);
    let build = &main[..3 * tuples as usize];
    let stores = build
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::Access {
                    kind: AccessKind::Store,
                    ..
                }
            )
        })
        .count() as u64;
    assert_eq!(stores, tuples, "one store per R tuple");
    // Each store follows the load of its bucket's header: count tuples per bucket by those.
    let mut headers: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
    for w in build.chunks_exact(3) {
        if let Event::Access { va, size: 8, .. } = w[1] {
            *headers.entry(va.0).or_default() += 1;
        }
    }
    assert_eq!(headers.len() as u64, tuples / 2);
    assert!(headers.values().all(|c| *c == 2));
}

#[test]
fn degree_centrality_increments_one_in_degree_per_edge_per_pass() {
    let c = WorkloadConfig {
        degree: 8,
        ..cfg("dc", 1 << 20)
    };
    let mut g = ImplicitGraph::new(programs::graph_vertices(&c, 64), 8, 4).unwrap();
    g.build();
    let (n, edges) = (g.vertices(), g.edges());
    // One pass: per vertex 2 offset loads + 1 store, per edge 3 accesses.
    let pass = 3 * n + 3 * edges;
    let evs = events(&c, pass + 100_000, 4);
    let main = after_first_touch(&evs);
    let increments = main[..pass as usize]
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::Access {
                    kind: AccessKind::Store,
                    dep: 2,
                    ..
                }
            )
        })
        .count() as u64;
    assert_eq!(increments, edges);
}

fn va_of(e: &Event) -> u64 {
    match e {
        Event::Access { va, .. } => va.0,
        _ => unreachable!(),
    }
}

fn is_store(e: &Event, size: u8) -> bool {
    matches!(e, Event::Access { kind: AccessKind::Store, size: s, .. } if *s == size)
}

#[test]
fn cc_stores_every_label_in_its_first_pass_and_about_half_in_the_second() {
    let c = WorkloadConfig {
        degree: 8,
        ..cfg("cc", 1 << 20)
    };
    let mut g = ImplicitGraph::new(programs::graph_vertices(&c, 32), 8, 4).unwrap();
    g.build();
    let (n, edges) = (g.vertices(), g.edges());
    // A pass: per vertex 3 loads (offsets, own label) and per edge 2 loads, plus the stores.
    let evs = events(&c, 2 * (3 * n + 2 * edges + n) + 100_000, 4);
    let main = after_first_touch(&evs);
    let mut pass_stores = [0u64; 2];
    let (mut pass, mut vertices) = (0, 0);
    let mut i = 0;
    while pass < 2 {
        // Offsets, own label, 2 per edge, then maybe the label store.
        let v = (va_of(&main[i]) - va_of(&main[0])) / 8;
        assert_eq!(v, vertices % n, "vertices in id order");
        i += 3 + 2 * g.degree(v) as usize;
        if is_store(&main[i], 4) {
            pass_stores[pass] += 1;
            i += 1;
        }
        vertices += 1;
        if vertices % n == 0 {
            pass += 1;
        }
    }
    assert_eq!(pass_stores[0], n, "pass 0 initializes every label");
    let half = pass_stores[1] as f64 / n as f64;
    assert!((0.45..0.55).contains(&half), "pass 1 changes {half}");
}

#[test]
fn gc_reads_every_neighbours_colour_and_stores_every_vertexs_colour_per_pass() {
    let c = WorkloadConfig {
        degree: 8,
        ..cfg("gc", 1 << 20)
    };
    let mut g = ImplicitGraph::new(programs::graph_vertices(&c, 32), 8, 4).unwrap();
    g.build();
    let (n, edges) = (g.vertices(), g.edges());
    let pass = 2 * n + 2 * edges + n;
    let evs = events(&c, pass + 100_000, 4);
    let main = after_first_touch(&evs);
    let stores = main[..pass as usize]
        .iter()
        .filter(|e| is_store(e, 4))
        .count() as u64;
    assert_eq!(stores, n);
    // Each colour load depends on its neighbour load.
    let colour_loads = main[..pass as usize]
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::Access {
                    kind: AccessKind::Load,
                    size: 4,
                    dep: 1,
                    ..
                }
            )
        })
        .count() as u64;
    assert_eq!(colour_loads, edges);
}

#[test]
fn tc_merges_the_sorted_prefixes_of_both_lists_for_every_smaller_neighbour() {
    let c = WorkloadConfig {
        degree: 8,
        ..cfg("tc", 256 << 10)
    };
    let mut g = ImplicitGraph::new(programs::graph_vertices(&c, 0), 8, 2).unwrap();
    g.build();
    let n = g.vertices();
    // The exact references of one sweep over every vertex.
    let below = |deg: u64, v: u64| (deg * v).div_ceil(n);
    let mut sweep = 0u64;
    let mut pairs = 0u64;
    for u in 0..n {
        sweep += 2;
        let lo = g.first_edge(u);
        for e in lo..lo + g.degree(u) {
            let v = g.target(e);
            sweep += 1;
            if v < u {
                pairs += 1;
                sweep += 2 + below(g.degree(v), v) + below(g.degree(u), v);
            }
        }
    }
    let evs = events(&c, sweep + 50_000, 2);
    let main = after_first_touch(&evs);
    // The next sweep starts with vertex 0's offsets again.
    assert_eq!(va_of(&main[sweep as usize]), va_of(&main[0]));
    let neighbour_offsets = main[..sweep as usize]
        .iter()
        .filter(|e| matches!(e, Event::Access { size: 8, dep, .. } if *dep > 0))
        .count() as u64;
    assert_eq!(neighbour_offsets, 2 * pairs);
}

#[test]
fn sssp_stores_a_distance_for_every_vertex_the_source_reaches() {
    let c = WorkloadConfig {
        degree: 8,
        ..cfg("sssp", 1 << 20)
    };
    let mut g = ImplicitGraph::new(programs::graph_vertices(&c, 34 + 32 * 8), 8, 9).unwrap();
    g.build();
    let n = g.vertices();
    let src = {
        let mut rng = Rng::new(9, 11);
        let mut s = rng.below(n);
        for _ in 0..64 {
            if g.degree(s) > 0 {
                break;
            }
            s = rng.below(n);
        }
        s
    };
    let mut reach = vec![false; n as usize];
    let mut stack = vec![src];
    reach[src as usize] = true;
    while let Some(u) = stack.pop() {
        let lo = g.first_edge(u);
        for e in lo..lo + g.degree(u) {
            let v = g.target(e);
            if !reach[v as usize] {
                reach[v as usize] = true;
                stack.push(v);
            }
        }
    }
    let evs = events(&c, 3_000_000, 9);
    let main = after_first_touch(&evs);
    let mut stored = std::collections::HashSet::new();
    let mut ended = false;
    for e in &main {
        match e {
            Event::Access { size: 64, .. } => {
                ended = true;
                break;
            }
            Event::Access {
                kind: AccessKind::Store,
                size: 4,
                va,
                ..
            } => {
                stored.insert(va.0);
            }
            _ => {}
        }
    }
    assert!(ended, "the first search did not end");
    let reachable = reach.iter().filter(|r| **r).count();
    assert!(reachable > 1000, "{reachable}");
    assert_eq!(stored.len(), reachable, "source included");
}

#[test]
fn kmer_streams_bases_in_order_and_increments_the_last_probed_bucket() {
    let evs = events(&cfg("kmer", 4 << 20), 100_000, 1);
    let main = after_first_touch(&evs);
    let mut i = 0;
    let mut bases = 0u64;
    let first = va_of(&main[0]);
    while i < main.len() {
        let Event::Access { kind, size, va, .. } = main[i] else {
            unreachable!()
        };
        assert_eq!((kind, size), (AccessKind::Load, 1), "base load at {i}");
        assert_eq!(va.0, first + bases, "sequential bases");
        let mut j = i + 1;
        while j < main.len() && matches!(main[j], Event::Access { size: 16, .. }) {
            j += 1;
        }
        if j == main.len() {
            break;
        }
        assert!(j > i + 1, "at least one probe");
        assert!(is_store(&main[j], 4));
        assert_eq!(
            va_of(&main[j]),
            va_of(&main[j - 1]) + 8,
            "the count of the last bucket"
        );
        i = j + 1;
        bases += 1;
    }
    assert!(bases > 20_000);
}

#[test]
fn memcached_gets_walk_chains_to_the_item_and_sets_link_it_at_the_lru_head() {
    let c = cfg("memcached", 8 << 20);
    let evs = events(&c, 200_000, 3);
    let main = after_first_touch(&evs);
    let mut items = std::collections::HashMap::<u64, u64>::new();
    let (mut gets, mut sets) = (0, 0);
    let mut i = 0;
    while i < main.len() {
        // An operation: bucket load (40 instructions of request handling), then the rest.
        let Event::Access {
            size: 8,
            instrs: 40,
            ..
        } = main[i]
        else {
            panic!("op start at {i}: {:?}", main[i])
        };
        let mut j = i + 1;
        while j < main.len() && !matches!(main[j], Event::Access { instrs: 40, .. }) {
            j += 1;
        }
        let op = &main[i + 1..j];
        let header = op
            .iter()
            .position(|e| matches!(e, Event::Access { size: 48, .. }))
            .expect("the item's header");
        assert!(header <= 3, "chains of at most 3 items before the key");
        *items.entry(va_of(&op[header])).or_default() += 1;
        if op.iter().any(|e| is_store(e, 64)) {
            sets += 1;
            if j < main.len() {
                assert!(is_store(&op[op.len() - 1], 16), "LRU link of the item");
            }
        } else {
            gets += 1;
        }
        i = j;
    }
    assert!(gets > 15 * sets, "{gets} gets, {sets} sets");
    // Zipfian popularity: the hottest item takes a few percent of all operations.
    let top = *items.values().max().unwrap();
    assert!(top * 100 > (gets + sets) * 2, "hottest {top}");
}

#[test]
fn dfs_marks_exactly_the_vertices_reachable_from_the_source_once() {
    let c = WorkloadConfig {
        degree: 8,
        ..cfg("dfs", 1 << 20)
    };
    let mut g = ImplicitGraph::new(programs::graph_vertices(&c, 35), 8, 7).unwrap();
    g.build();
    let n = g.vertices();
    let src = {
        let mut rng = Rng::new(7, 14);
        let mut s = rng.below(n);
        for _ in 0..64 {
            if g.degree(s) > 0 {
                break;
            }
            s = rng.below(n);
        }
        s
    };
    let mut reach = vec![false; n as usize];
    let mut stack = vec![src];
    reach[src as usize] = true;
    while let Some(u) = stack.pop() {
        let lo = g.first_edge(u);
        for e in lo..lo + g.degree(u) {
            let v = g.target(e);
            if !reach[v as usize] {
                reach[v as usize] = true;
                stack.push(v);
            }
        }
    }
    let evs = events(&c, 3_000_000, 7);
    let main = after_first_touch(&evs);
    let mut marks = Vec::new();
    let mut ended = false;
    for e in &main {
        match e {
            Event::Access { size: 64, .. } => {
                ended = true;
                break;
            }
            // The visited mark (1 instruction, after its own load); a push takes 2.
            Event::Access {
                kind: AccessKind::Store,
                size: 4,
                dep: 2,
                instrs: 1,
                va,
            } => marks.push(va.0),
            _ => {}
        }
    }
    assert!(ended, "the first search did not end");
    let unique: std::collections::HashSet<u64> = marks.iter().copied().collect();
    assert_eq!(unique.len(), marks.len(), "a vertex marked twice");
    let reachable = reach.iter().filter(|r| **r).count();
    assert!(reachable > 1000, "{reachable}");
    // Pushes beyond the n/16-entry stack go to the spill bitmap: none is lost.
    assert_eq!(marks.len(), reachable);
}

/// Depth of every vertex reached from `src` by a BFS on `g` (`u32::MAX`: not reached).
fn reference_depths(g: &ImplicitGraph, src: u64) -> Vec<u32> {
    let n = g.vertices();
    let mut depth = vec![u32::MAX; n as usize];
    depth[src as usize] = 0;
    let mut level = vec![src];
    while !level.is_empty() {
        let mut next = Vec::new();
        for &u in &level {
            let lo = g.first_edge(u);
            for e in lo..lo + g.degree(u) {
                let w = g.target(e);
                if depth[w as usize] == u32::MAX {
                    depth[w as usize] = depth[u as usize] + 1;
                    next.push(w);
                }
            }
        }
        level = next;
    }
    depth
}

#[test]
fn bc_counts_paths_forward_and_accumulates_every_vertex_above_the_deepest_level() {
    let c = WorkloadConfig {
        degree: 8,
        ..cfg("bc", 1 << 20)
    };
    let mut g = ImplicitGraph::new(programs::graph_vertices(&c, 160), 8, 6).unwrap();
    g.build();
    let n = g.vertices();
    let src = {
        let mut rng = Rng::new(6, 15);
        let mut s = rng.below(n);
        for _ in 0..64 {
            if g.degree(s) > 0 {
                break;
            }
            s = rng.below(n);
        }
        s
    };
    let depth = reference_depths(&g, src);
    let reached = depth.iter().filter(|d| **d != u32::MAX).count() as u64;
    let deepest = *depth.iter().filter(|d| **d != u32::MAX).max().unwrap();
    let above_deepest = depth.iter().filter(|d| **d < deepest).count() as u64;
    // Edges from a reached vertex to one a level deeper: sigma updates forward, successor
    // reads backward (only from vertices above the deepest level, which are all of them).
    let mut successor_edges = 0u64;
    for u in 0..n {
        if depth[u as usize] == u32::MAX {
            continue;
        }
        let lo = g.first_edge(u);
        for e in lo..lo + g.degree(u) {
            successor_edges += (depth[g.target(e) as usize] == depth[u as usize] + 1) as u64;
        }
    }
    let mut p = kernels::Bc::new(&c, 6).unwrap();
    let mut mem = heap::AddressSpace::new(false);
    p.setup(&mut mem, &mut Burst::default());
    let in_array = |va: u64, base: u64| (base..base + n * 4).contains(&va);
    let (mut depth_stores, mut sigma_stores, mut delta_loads, mut score_stores) = (0, 0, 0, 0);
    let mut q = Vec::new();
    let mut ended = false;
    'outer: for _ in 0..2_000_000 {
        p.step(&mut mem, &mut q);
        for e in q.drain(..) {
            let Event::Access { kind, va, size, .. } = e else {
                continue;
            };
            if size == 64 {
                ended = true;
                break 'outer;
            }
            let va = va.0;
            match kind {
                AccessKind::Store if in_array(va, p.depth_addr) => depth_stores += 1,
                AccessKind::Store if in_array(va, p.sigma_addr) => sigma_stores += 1,
                AccessKind::Load if in_array(va, p.delta_addr) => delta_loads += 1,
                AccessKind::Store if in_array(va, p.score_addr) => score_stores += 1,
                _ => {}
            }
        }
    }
    assert!(ended, "the first search did not end");
    assert!(
        reached > 1000 && deepest >= 3,
        "{reached} reached, depth {deepest}"
    );
    // The source's depth and sigma were stored by the setup.
    assert_eq!(
        depth_stores,
        reached - 1,
        "one depth store per newly reached vertex"
    );
    assert_eq!(
        sigma_stores, successor_edges,
        "sigma[w] += sigma[u] per successor edge"
    );
    assert_eq!(
        delta_loads, successor_edges,
        "each successor's delta read once backward"
    );
    assert_eq!(
        score_stores, above_deepest,
        "every vertex above the deepest level scored"
    );
}

fn is_load(e: &Event, size: u8) -> bool {
    matches!(e, Event::Access { kind: AccessKind::Load, size: s, .. } if *s == size)
}

#[test]
fn svm_visits_every_instance_once_per_iteration_and_updates_w_at_each_feature() {
    let c = cfg("svm", 4 << 20);
    let l = (4u64 << 20) / 232;
    // Iteration 0 changes every alpha: per instance 1 + 1 + 3 + 12 + 11 loads, then the alpha
    // store and 11 x (node, w load, w store).
    let per = 28 + 1 + 33;
    let evs = events(&c, l * per + 4 * l + 10_000, 5);
    let main = after_first_touch(&evs);
    let mut rows = std::collections::HashSet::new();
    let mut w_hits = std::collections::HashMap::<u64, u64>::new();
    let index0 = va_of(&main[0]);
    for (s, u) in main[..(l * per) as usize]
        .chunks_exact(per as usize)
        .enumerate()
    {
        assert!(
            is_load(&u[0], 4) && va_of(&u[0]) == index0 + s as u64 * 4,
            "index[s]"
        );
        assert!(
            matches!(
                u[1],
                Event::Access {
                    size: 8,
                    dep: 1,
                    ..
                }
            ),
            "row pointer"
        );
        rows.insert(va_of(&u[1]));
        // Nodes of one row in sequence, each but the terminator followed by its w load.
        let node0 = va_of(&u[5]);
        for k in 0..12 {
            assert!(is_load(&u[5 + 2 * k], 16) && va_of(&u[5 + 2 * k]) == node0 + 16 * k as u64);
        }
        assert!(is_store(&u[28], 8), "alpha store");
        for k in 0..11 {
            let (w_load, w_store) = (&u[29 + 3 * k + 1], &u[29 + 3 * k + 2]);
            assert_eq!(va_of(w_load), va_of(w_store));
            assert_eq!(
                va_of(w_load),
                va_of(&u[6 + 2 * k]),
                "the feature read in the dot"
            );
            *w_hits.entry(va_of(w_load)).or_default() += 1;
        }
    }
    assert_eq!(rows.len() as u64, l, "each instance once per iteration");
    // Then the next iteration's shuffle: 4 accesses per instance over index[].
    let shuffle = &main[(l * per) as usize..(l * per + 4 * l) as usize];
    assert!(shuffle.iter().all(|e| is_load(e, 4) || is_store(e, 4)));
    // Zipfian features: the hottest w entry takes over 1 % of the updates.
    let top = *w_hits.values().max().unwrap();
    assert!(top * 100 > l * 11, "hottest feature {top} of {}", l * 11);
}

#[test]
fn canneal_moves_chain_their_elements_and_read_every_fan_location_through_two_pointers() {
    let evs = events(&cfg("canneal", 4 << 20), 100_000, 2);
    let main = after_first_touch(&evs);
    let (mut i, mut moves, mut accepted) = (0, 0u64, 0u64);
    let mut prev_b = None;
    while i + 56 <= main.len() {
        let m = &main[i..i + 56];
        assert!(m.iter().all(|e| matches!(
            e,
            Event::Access {
                kind: AccessKind::Load,
                ..
            }
        )));
        // a's present_loc, its location, b's, its location.
        let (a, b) = (va_of(&m[0]), va_of(&m[2]));
        if let Some(pb) = prev_b {
            assert_eq!(a, pb, "a move starts with the previous move's b");
        }
        prev_b = Some(b);
        // Per fan entry: buffer pointer, the neighbour's present_loc, its location, each on the
        // one before.
        for list in 0..4 {
            let l = &m[4 + list * 13..4 + (list + 1) * 13];
            for k in 0..4 {
                assert!(matches!(
                    l[2 + 3 * k],
                    Event::Access {
                        dep: 1,
                        size: 8,
                        ..
                    }
                ));
                assert!(matches!(
                    l[3 + 3 * k],
                    Event::Access {
                        dep: 1,
                        size: 8,
                        ..
                    }
                ));
            }
        }
        i += 56;
        if i < main.len() && is_store(&main[i], 8) {
            assert_eq!((va_of(&main[i]), va_of(&main[i + 1])), (a, b), "the swap");
            accepted += 1;
            i += 2;
        }
        moves += 1;
    }
    assert!(moves > 1000);
    let share = accepted as f64 / moves as f64;
    assert!((0.45..0.55).contains(&share), "accepted {share}");
}

#[test]
fn streamcluster_sweeps_every_points_coordinates_against_one_candidate_centre() {
    let c = cfg("streamcluster", 2 << 20);
    let n = (2u64 << 20) / 550;
    let evs = events(&c, n * 22 + 10_000, 3);
    let main = after_first_touch(&evs);
    let mut coords = std::collections::HashSet::new();
    let mut centre = std::collections::HashSet::new();
    let (mut i, mut points) = (0, 0u64);
    while points < n {
        assert!(is_load(&main[i], 32), "the Point at {i}");
        for line in 0..8 {
            coords.insert(va_of(&main[i + 1 + 2 * line]));
            centre.insert(va_of(&main[i + 2 + 2 * line]));
        }
        i += 17;
        i += if is_store(&main[i], 1) { 1 } else { 3 };
        points += 1;
    }
    assert_eq!(coords.len() as u64, n * 8, "every point's 8 lines, once");
    assert_eq!(centre.len(), 8, "one candidate's lines, reused");
}

#[test]
fn mummer_searches_the_suffix_array_or_follows_a_suffix_link_at_each_query_base() {
    let c = cfg("mummer", 8 << 20);
    let p = apps::Mummer::new(&c, 4);
    let evs = events(&c, 200_000, 4);
    let main = after_first_touch(&evs);
    let (mut i, mut searches, mut links, mut bases) = (0, 0u64, 0u64, 0u64);
    let query0 = va_of(&main[0]);
    while i < main.len() {
        assert!(is_load(&main[i], 1), "query base at {i}");
        assert_eq!(va_of(&main[i]), query0 + bases);
        // The interval's lookups, up to the first LCP load (1 byte).
        let mut j = i + 1;
        while j < main.len() && !is_load(&main[j], 1) {
            j += 1;
        }
        if j + 3 > main.len() {
            break;
        }
        let lookups = j - (i + 1);
        if lookups == 2 {
            links += 1;
        } else {
            // Two loads (SA, then the suffix's text) per probe of a search over all bases.
            let probes = lookups / 2;
            let expect = 64 - (p.bases() - 1).leading_zeros() as usize;
            assert!(probes + 1 >= expect && probes <= expect, "{probes} probes");
            searches += 1;
        }
        assert!(
            is_load(&main[j + 1], 1) && is_load(&main[j + 2], 16),
            "LCP pair, match text"
        );
        i = j + 3;
        bases += 1;
    }
    let share = links as f64 / (links + searches) as f64;
    assert!((0.85..0.95).contains(&share), "suffix links {share}");
}

#[test]
fn the_setup_knows_its_references_before_it_is_read_and_while_it_is_read() {
    use super::heap::AddressSpace;
    use super::program::{Burst, BurstCursor, Program};
    let c = cfg("stream", (8 << 20) + 100);
    let mut burst = Burst::default();
    let mut program = programs::Stream::new(&c);
    program.setup(&mut AddressSpace::new(false), &mut burst);
    let mut cursor = BurstCursor::new(burst);
    let total = cursor.refs_ahead();
    let mut out = Vec::new();
    let mut left = u64::MAX;
    let mut handed = 0;
    // Expanded in uneven pieces, the count ahead always equals what is still to come.
    for max in [1, 7, 100, 1000].into_iter().cycle() {
        assert_eq!(cursor.refs_ahead(), total - handed);
        out.clear();
        let done = cursor.expand(&mut out, max, &mut left);
        handed += accesses(&out).len() as u64;
        if done {
            break;
        }
    }
    assert_eq!(handed, total);
    assert_eq!(cursor.refs_ahead(), 0);
    // Three arrays of (8 MiB + 100) / 3 bytes, each first-touched page by page.
    assert!((2048..=2052).contains(&total), "{total}");
}

#[test]
fn every_workload_tells_its_first_touch_phase_before_it_is_read() {
    for (name, _) in WORKLOADS {
        let c = cfg(name, 8 << 20);
        let mut src = create(&c, 1 << 30, 1).unwrap();
        let n = src.first_touch_refs().unwrap();
        // Every workload first-touches its data in its setup: at least most of its footprint's
        // pages (some round their structures down), and never more refs than a run would ask.
        assert!(n >= (8 << 20) / 4096 / 2, "{name}: {n}");
        let mut read = Vec::new();
        let mut refs = 0;
        while refs < n {
            read.clear();
            src.fill(&mut read, 1000).unwrap();
            refs += accesses(&read).len() as u64;
        }
        // Asking again does not change the stream; once read past, nothing of it is ahead.
        assert_eq!(src.first_touch_refs(), Some(0), "{name}");
        let again = events(&c, n, 1);
        assert_eq!(accesses(&again).len() as u64, n, "{name}");
    }
}
