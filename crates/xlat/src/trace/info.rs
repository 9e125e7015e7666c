//! Summary of a trace (`xlat trace info`): counts, instructions, footprint, VMAs, read/write mix.
//!
//! Streams the source once; memory is proportional to the pages touched and the VMAs, not to the
//! trace length.

use super::{AccessKind, Event, EventSource, SourceError};
use crate::os::vma::VmaSet;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};

/// Largest number of VMAs listed per process (the count is always exact).
pub const MAX_LISTED_VMAS: usize = 64;

#[derive(Default)]
struct Proc {
    vmas: VmaSet,
    heap_start: Option<u64>,
    heap_end: u64,
    /// VMAs as they were before the process exited (a recorded trace ends with an exit).
    at_exit: Option<VmaSet>,
    peak_mapped: u64,
}

fn round_up(x: u64) -> u64 {
    x.saturating_add(4095) & !4095
}

fn mapped_bytes(v: &VmaSet) -> u64 {
    v.iter().map(|a| a.end - a.start).sum()
}

/// Read `source` to its end and summarize it as a JSON object (see `docs/trace-format.md`).
pub fn summarize(source: &mut dyn EventSource) -> Result<Value, SourceError> {
    let mut buf = Vec::with_capacity(4096);
    let (mut events, mut loads, mut stores, mut ifetches, mut instrs) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut syscalls: HashMap<&'static str, u64> = HashMap::new();
    let mut pages: HashSet<u64> = HashSet::new();
    let mut written: HashSet<u64> = HashSet::new();
    let mut outside = 0u64;
    let mut procs: Vec<(u32, Proc)> = vec![(0, Proc::default())];
    let mut cur = 0usize;
    let mut threads: HashSet<u32> = HashSet::new();
    loop {
        buf.clear();
        if source.fill(&mut buf, 4096)? == 0 {
            break;
        }
        for ev in &buf {
            events += 1;
            let p = &mut procs[cur].1;
            let sys = |name: &'static str, s: &mut HashMap<&'static str, u64>| {
                *s.entry(name).or_default() += 1
            };
            match *ev {
                Event::Access {
                    kind,
                    va,
                    instrs: n,
                    ..
                } => {
                    instrs += n as u64;
                    let page = va.0 >> 12;
                    pages.insert(page);
                    match kind {
                        AccessKind::Load => loads += 1,
                        AccessKind::Store => {
                            stores += 1;
                            written.insert(page);
                        }
                        AccessKind::IFetch => ifetches += 1,
                    }
                    if p.vmas.find(va.0).is_none() {
                        outside += 1;
                    }
                }
                Event::Mmap {
                    addr, len, prot, ..
                } => {
                    sys("mmap", &mut syscalls);
                    if len > 0 {
                        p.vmas
                            .insert(addr.0 & !4095, round_up(addr.0.saturating_add(len)), prot);
                    }
                }
                Event::Munmap { addr, len } => {
                    sys("munmap", &mut syscalls);
                    p.vmas
                        .remove_range(addr.0 & !4095, round_up(addr.0.saturating_add(len)));
                }
                Event::Brk { new_brk } => {
                    sys("brk", &mut syscalls);
                    let start = round_up(*p.heap_start.get_or_insert(new_brk.0));
                    let new_end = round_up(new_brk.0).max(start);
                    let old_end = p.heap_end.max(start);
                    if new_end > old_end {
                        p.vmas.insert(old_end, new_end, 3);
                    } else if new_end < old_end {
                        p.vmas.remove_range(new_end, old_end);
                    }
                    p.heap_end = new_end;
                }
                Event::Mprotect { addr, len, prot } => {
                    sys("mprotect", &mut syscalls);
                    let end = round_up(addr.0.saturating_add(len));
                    p.vmas.update_range(addr.0 & !4095, end, |v| v.prot = prot);
                }
                Event::Madvise { .. } => sys("madvise", &mut syscalls),
                Event::Switch { pid } => {
                    sys("switch", &mut syscalls);
                    cur = match procs.iter().position(|(q, _)| *q == pid) {
                        Some(i) => i,
                        None => {
                            procs.push((pid, Proc::default()));
                            procs.len() - 1
                        }
                    };
                }
                Event::Thread { tid } => {
                    threads.insert(tid);
                }
                Event::Exit { pid } => {
                    sys("exit", &mut syscalls);
                    if let Some((_, q)) = procs.iter_mut().find(|(q, _)| *q == pid) {
                        q.at_exit = Some(std::mem::take(&mut q.vmas));
                        q.heap_start = None;
                        q.heap_end = 0;
                    }
                }
            }
            let p = &mut procs[cur].1;
            p.peak_mapped = p.peak_mapped.max(mapped_bytes(&p.vmas));
        }
    }
    let refs = loads + stores + ifetches;
    let share = |x: u64| {
        if refs == 0 {
            0.0
        } else {
            x as f64 / refs as f64
        }
    };
    let processes: Vec<Value> = procs
        .iter()
        .filter(|(pid, p)| *pid != 0 || !p.vmas.is_empty() || p.at_exit.is_some())
        .map(|(pid, p)| {
            let v = p.at_exit.as_ref().unwrap_or(&p.vmas);
            let list: Vec<Value> = v
                .iter()
                .take(MAX_LISTED_VMAS)
                .map(|a| {
                    json!({
                        "start": format!("{:#x}", a.start),
                        "end": format!("{:#x}", a.end),
                        "bytes": a.end - a.start,
                        "prot": format!(
                            "{}{}{}",
                            if a.prot & 1 != 0 { 'r' } else { '-' },
                            if a.prot & 2 != 0 { 'w' } else { '-' },
                            if a.prot & 4 != 0 { 'x' } else { '-' }
                        ),
                    })
                })
                .collect();
            json!({
                "pid": pid,
                "exited": p.at_exit.is_some(),
                "vma_count": v.len(),
                "mapped_bytes": mapped_bytes(v),
                "peak_mapped_bytes": p.peak_mapped,
                "vmas": list,
            })
        })
        .collect();
    let mut sc: Vec<(&str, u64)> = syscalls.into_iter().collect();
    sc.sort();
    Ok(json!({
        "events": events,
        "refs": refs,
        "loads": loads,
        "stores": stores,
        "ifetches": ifetches,
        "instructions": instrs,
        "load_share": share(loads),
        "store_share": share(stores),
        "footprint_pages": pages.len(),
        "footprint_bytes": pages.len() as u64 * 4096,
        "written_pages": written.len(),
        "refs_outside_vmas": outside,
        "threads": threads.len().max(1),
        "syscalls": sc
            .into_iter()
            .map(|(k, v)| (k.to_string(), Value::from(v)))
            .collect::<serde_json::Map<String, Value>>(),
        "processes": processes,
    }))
}
