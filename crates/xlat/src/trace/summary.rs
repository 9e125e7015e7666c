//! The incremental summary of a trace's events (what `xlat trace info` prints): counts,
//! instructions, footprint, VMAs, read/write mix; and [`summarize`] / [`Scan`], which feed it
//! from an event source.
//!
//! [`Summary`] is incremental: the native writer feeds it every event it writes and stores the
//! result in the trace (docs/trace-format.md, "Summary block"), so `xlat trace info` reads it in
//! constant time; [`summarize`] feeds it from a source (traces without a stored summary).
//! Both give the same JSON object for the same events (tested).
//!
//! Per-event cost matters (the recorder's converter feeds every event): an access sets bits of
//! its page in a per-128-MiB bitmap (found through a direct-mapped memo of regions) without a
//! data-dependent branch, and looks up the VMAs only for a page not yet found inside one since
//! the last event that may change them; mapped bytes are recomputed only after such events.
//! Memory is proportional to the address ranges touched and the VMAs, not to the trace length.
//!
//! Layering: this file calls only the event types of `trace` and the VMA set of `os::vma`; the
//! native writer (`native/writer.rs`) and `info.rs` (stored summaries, `--verify`) both call
//! it, so it sits below both.

use super::{AccessKind, Event, EventSource, SourceError};
use crate::os::vma::VmaSet;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};

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

/// Pages per bitmap region (2^15 pages of 4 KiB = 128 MiB of address space).
const REGION_SHIFT: u32 = 15;
const REGION_WORDS: usize = 1 << (REGION_SHIFT - 6);

/// Direct-mapped memo slots of region numbers (a 32 GiB span of address space hits it).
const MEMO_SLOTS: usize = 256;

/// The three bits kept per page, as three words of 64 pages side by side (one access touches
/// one 24-byte group): touched, written, and "known to be inside a VMA of the current process".
const SEEN: usize = 0;
const WRITTEN: usize = 1;
const INSIDE: usize = 2;
type Region = Box<[[u64; 3]; REGION_WORDS]>;

/// Per-page bits over the address space, as bitmaps of 128 MiB regions found through a
/// direct-mapped memo of region numbers (a random access over a few GiB must not cost a hash
/// lookup, and an access must not cost a data-dependent branch).
struct PageBits {
    index: HashMap<u64, usize>,
    regions: Vec<Region>,
    memo_key: Box<[u64; MEMO_SLOTS]>,
    memo_idx: Box<[u32; MEMO_SLOTS]>,
    /// Whether any `INSIDE` bit may be set (clearing them all is skipped otherwise).
    any_inside: bool,
}

impl PageBits {
    fn new() -> Self {
        PageBits {
            index: HashMap::new(),
            regions: Vec::new(),
            memo_key: Box::new([u64::MAX; MEMO_SLOTS]),
            memo_idx: Box::new([0; MEMO_SLOTS]),
            any_inside: false,
        }
    }

    /// The bit group holding `page`, and the page's bit in it.
    #[inline(always)]
    fn group(&mut self, page: u64) -> (&mut [u64; 3], u64) {
        let key = page >> REGION_SHIFT;
        let slot = (key as usize) % MEMO_SLOTS;
        if self.memo_key[slot] != key {
            self.memo_idx[slot] = self.region(key) as u32;
            self.memo_key[slot] = key;
        }
        let idx = self.memo_idx[slot] as usize;
        let bit = (page & ((1 << REGION_SHIFT) - 1)) as usize;
        (&mut self.regions[idx][bit >> 6], 1 << (bit & 63))
    }

    #[cold]
    #[inline(never)]
    fn region(&mut self, key: u64) -> usize {
        let regions = &mut self.regions;
        *self.index.entry(key).or_insert_with(|| {
            regions.push(Box::new([[0; 3]; REGION_WORDS]));
            regions.len() - 1
        })
    }

    /// Forget every `INSIDE` bit (the VMAs or the current process changed).
    fn clear_inside(&mut self) {
        if std::mem::take(&mut self.any_inside) {
            for r in &mut self.regions {
                for g in r.iter_mut() {
                    g[INSIDE] = 0;
                }
            }
        }
    }

    /// Pages with bit `which` set.
    fn count(&self, which: usize) -> u64 {
        self.regions
            .iter()
            .flat_map(|r| r.iter())
            .map(|g| g[which].count_ones() as u64)
            .sum()
    }
}

/// The summary of the events seen so far; [`Summary::to_json`] gives the object `xlat trace
/// info` prints.
///
/// Per access: the counts, and three bits of the access's page set without a data-dependent
/// branch (touched; written when a store); the VMA lookup runs only for a page not yet found
/// inside a VMA since the last event that may change the VMAs or the process (VMAs are whole
/// pages, so a page found inside stays inside until then).
pub struct Summary {
    events: u64,
    /// Loads, stores, instruction fetches (indexed by [`kind_index`]).
    kinds: [u64; 3],
    instrs: u64,
    syscalls: BTreeMap<&'static str, u64>,
    pages: PageBits,
    outside: u64,
    procs: Vec<(u32, Proc)>,
    cur: usize,
    threads: HashSet<u32>,
    /// Distinct pages touched so far (the `SEEN` bits set).
    distinct_pages: u64,
    /// Accesses seen so far.
    refs: u64,
    /// The access count at which the next point of `touch_curve` is taken.
    next_mark: u64,
    /// (accesses, distinct pages) at accesses 1, 2, ... growing by 1/[`CURVE_STEP_DIVISOR`]:
    /// how fast the trace touches its footprint, for `sim.warmup_refs = "auto"` (about 450
    /// points for 2^40 accesses).
    touch_curve: Vec<(u64, u64)>,
}

/// The touch curve's points are 1/16 of the access count apart: the warm-up read from it
/// overestimates the exact point by at most 6.25 %.
const CURVE_STEP_DIVISOR: u64 = 16;

/// `sim.warmup_refs = "auto"` on a trace warms up until this share of the trace's footprint
/// (its distinct 4 KiB pages) has been touched: the last pages of a footprint are often
/// touched late (a buffer used once at the end), so "all of it" would warm up most traces to
/// their end.
pub const WARMUP_FOOTPRINT_SHARE: f64 = 0.9;

/// ... and at most this share of the trace's accesses, so that at least half is measured.
pub const WARMUP_MAX_TRACE_SHARE: f64 = 0.5;

/// The references a trace's first-touch phase takes, from its summary's `touch_curve`: the
/// first point at which [`WARMUP_FOOTPRINT_SHARE`] of its footprint was touched, at most
/// [`WARMUP_MAX_TRACE_SHARE`] of its references. `None` when the summary has no curve (a
/// summary of an older version).
pub fn first_touch_refs(summary: &Value) -> Option<u64> {
    let curve = summary.get("touch_curve")?;
    let refs = curve["refs"].as_array()?;
    let pages = curve["pages"].as_array()?;
    let total_refs = summary["refs"].as_u64()?;
    let footprint = summary["footprint_pages"].as_u64()?;
    let want = (footprint as f64 * WARMUP_FOOTPRINT_SHARE).ceil() as u64;
    let at = refs
        .iter()
        .zip(pages)
        .find(|(_, p)| p.as_u64().unwrap_or(0) >= want)
        .and_then(|(r, _)| r.as_u64())
        .unwrap_or(total_refs);
    Some(at.min((total_refs as f64 * WARMUP_MAX_TRACE_SHARE) as u64))
}

#[inline(always)]
fn kind_index(kind: AccessKind) -> usize {
    match kind {
        AccessKind::Load => 0,
        AccessKind::Store => 1,
        AccessKind::IFetch => 2,
    }
}

impl Default for Summary {
    fn default() -> Self {
        Self::new()
    }
}

impl Summary {
    /// The summary of no events.
    pub fn new() -> Self {
        Summary {
            events: 0,
            kinds: [0; 3],
            instrs: 0,
            syscalls: BTreeMap::new(),
            pages: PageBits::new(),
            outside: 0,
            procs: vec![(0, Proc::default())],
            cur: 0,
            threads: HashSet::new(),
            distinct_pages: 0,
            refs: 0,
            next_mark: 1,
            touch_curve: Vec::new(),
        }
    }

    /// Events seen.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Account for the next event.
    #[inline]
    pub fn observe(&mut self, ev: &Event) {
        if let Event::Access {
            kind,
            va,
            instrs: n,
            ..
        } = *ev
        {
            self.access(kind, va.0, n);
        } else {
            self.events += 1;
            self.system_event(ev);
        }
    }

    /// Account for an access (the same as [`Summary::observe`] of `Event::Access`).
    #[inline(always)]
    pub fn access(&mut self, kind: AccessKind, va: u64, instrs: u32) {
        self.events += 1;
        self.instrs += instrs as u64;
        let k = kind_index(kind);
        self.kinds[k] += 1;
        let store_mask = 0u64.wrapping_sub((k == 1) as u64);
        let (g, bit) = self.pages.group(va >> 12);
        let fresh = (g[SEEN] & bit == 0) as u64;
        g[SEEN] |= bit;
        g[WRITTEN] |= bit & store_mask;
        let outside = g[INSIDE] & bit == 0;
        self.distinct_pages += fresh;
        self.refs += 1;
        if self.refs == self.next_mark {
            self.mark();
        }
        if outside {
            self.find_vma(va);
        }
    }

    /// Take a point of the touch curve.
    #[cold]
    #[inline(never)]
    fn mark(&mut self) {
        self.touch_curve.push((self.refs, self.distinct_pages));
        self.next_mark = self.refs + (self.refs / CURVE_STEP_DIVISOR).max(1);
    }

    /// An access to a page not known to be inside a VMA: look it up in the current process's
    /// VMAs, and remember the page when it is inside.
    #[cold]
    #[inline(never)]
    fn find_vma(&mut self, va: u64) {
        if self.procs[self.cur].1.vmas.find(va).is_some() {
            let (g, bit) = self.pages.group(va >> 12);
            g[INSIDE] |= bit;
            self.pages.any_inside = true;
        } else {
            self.outside += 1;
        }
    }

    #[inline(never)]
    fn system_event(&mut self, ev: &Event) {
        if let Event::Thread { tid } = *ev {
            // Neither the VMAs nor the process change.
            self.threads.insert(tid);
            return;
        }
        self.pages.clear_inside();
        let syscalls = &mut self.syscalls;
        let mut sys = |name: &'static str| *syscalls.entry(name).or_default() += 1;
        let p = &mut self.procs[self.cur].1;
        match *ev {
            Event::Access { .. } | Event::Thread { .. } => {
                unreachable!("accesses and threads are handled above")
            }
            Event::Mmap {
                addr, len, prot, ..
            } => {
                sys("mmap");
                if len > 0 {
                    p.vmas
                        .insert(addr.0 & !4095, round_up(addr.0.saturating_add(len)), prot);
                }
            }
            Event::Munmap { addr, len } => {
                sys("munmap");
                p.vmas
                    .remove_range(addr.0 & !4095, round_up(addr.0.saturating_add(len)));
            }
            Event::Brk { new_brk } => {
                sys("brk");
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
                sys("mprotect");
                let end = round_up(addr.0.saturating_add(len));
                p.vmas.update_range(addr.0 & !4095, end, |v| v.prot = prot);
            }
            Event::Madvise { .. } => sys("madvise"),
            Event::Switch { pid } => {
                sys("switch");
                self.cur = match self.procs.iter().position(|(q, _)| *q == pid) {
                    Some(i) => i,
                    None => {
                        self.procs.push((pid, Proc::default()));
                        self.procs.len() - 1
                    }
                };
            }
            Event::Exit { pid } => {
                sys("exit");
                if let Some((_, q)) = self.procs.iter_mut().find(|(q, _)| *q == pid) {
                    q.at_exit = Some(std::mem::take(&mut q.vmas));
                    q.heap_start = None;
                    q.heap_end = 0;
                }
            }
        }
        // Mapped bytes change only here (accesses never change the VMAs).
        let p = &mut self.procs[self.cur].1;
        p.peak_mapped = p.peak_mapped.max(mapped_bytes(&p.vmas));
    }

    /// The summary as the JSON object `xlat trace info --json` prints (see
    /// `docs/trace-format.md`).
    pub fn to_json(&self) -> Value {
        let [loads, stores, ifetches] = self.kinds;
        let refs = loads + stores + ifetches;
        let share = |x: u64| {
            if refs == 0 {
                0.0
            } else {
                x as f64 / refs as f64
            }
        };
        let processes: Vec<Value> = self
            .procs
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
        let footprint = self.pages.count(SEEN);
        debug_assert_eq!(footprint, self.distinct_pages);
        let mut curve = self.touch_curve.clone();
        if curve.last().is_some_and(|&(r, _)| r != self.refs) {
            curve.push((self.refs, self.distinct_pages));
        }
        json!({
            "events": self.events,
            "refs": refs,
            "loads": loads,
            "stores": stores,
            "ifetches": ifetches,
            "instructions": self.instrs,
            "load_share": share(loads),
            "store_share": share(stores),
            "footprint_pages": footprint,
            "footprint_bytes": footprint * 4096,
            "written_pages": self.pages.count(WRITTEN),
            "refs_outside_vmas": self.outside,
            "threads": self.threads.len().max(1),
            "syscalls": self
                .syscalls
                .iter()
                .map(|(k, v)| (k.to_string(), Value::from(*v)))
                .collect::<serde_json::Map<String, Value>>(),
            "processes": processes,
            "touch_curve": {
                "refs": curve.iter().map(|p| p.0).collect::<Vec<_>>(),
                "pages": curve.iter().map(|p| p.1).collect::<Vec<_>>(),
            },
        })
    }
}

/// Read `source` to its end and summarize it as a JSON object (see `docs/trace-format.md`).
pub fn summarize(source: &mut dyn EventSource) -> Result<Value, SourceError> {
    let mut scan = Scan::new();
    while !scan.step(source, u64::MAX)? {}
    Ok(scan.summary().to_json())
}

/// A summary computed by reading a source, in steps (so that a caller can show progress).
pub struct Scan {
    summary: Summary,
    buf: Vec<crate::trace::Event>,
}

impl Default for Scan {
    fn default() -> Self {
        Self::new()
    }
}

impl Scan {
    /// A scan at the start of a source.
    pub fn new() -> Self {
        Scan {
            summary: Summary::new(),
            buf: Vec::with_capacity(4096),
        }
    }

    /// Read up to about `max_events` more events of `source`; `true` at its end.
    pub fn step(
        &mut self,
        source: &mut dyn EventSource,
        max_events: u64,
    ) -> Result<bool, SourceError> {
        let mut done = 0u64;
        while done < max_events {
            self.buf.clear();
            let n = source.fill(&mut self.buf, 4096)?;
            if n == 0 {
                return Ok(true);
            }
            for ev in &self.buf {
                self.summary.observe(ev);
            }
            done += n as u64;
        }
        Ok(false)
    }

    /// What has been read so far.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Vaddr;
    use crate::trace::Event;
    use proptest::prelude::*;

    /// The summary as it was computed before the incremental one (mapped bytes summed after
    /// every event, a hash set of pages, a VMA lookup per access): the reference.
    fn naive(source: &mut dyn EventSource) -> Result<Value, SourceError> {
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
        // Distinct pages after each access, to take the touch curve's points from at the end.
        let mut distinct_after: Vec<u64> = Vec::new();
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
                        distinct_after.push(pages.len() as u64);
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
                            p.vmas.insert(
                                addr.0 & !4095,
                                round_up(addr.0.saturating_add(len)),
                                prot,
                            );
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
        let mut curve = Vec::new();
        let mut at = 1u64;
        while at <= refs {
            curve.push((at, distinct_after[at as usize - 1]));
            at += (at / 16).max(1);
        }
        if curve.last().is_some_and(|&(r, _)| r != refs) {
            curve.push((refs, pages.len() as u64));
        }
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
            "touch_curve": {
                "refs": curve.iter().map(|p| p.0).collect::<Vec<_>>(),
                "pages": curve.iter().map(|p| p.1).collect::<Vec<_>>(),
            },
        }))
    }

    struct Events(std::vec::IntoIter<Event>);
    impl EventSource for Events {
        fn fill(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, SourceError> {
            let before = out.len();
            out.extend(self.0.by_ref().take(max));
            Ok(out.len() - before)
        }
        fn name(&self) -> String {
            "events".into()
        }
    }

    fn event() -> impl Strategy<Value = Event> {
        // Addresses in a few 128 MiB regions and pages, so that VMAs, pages and memos repeat.
        let addr = (0u64..4, 0u64..64, 0u64..4096)
            .prop_map(|(r, p, o)| (r << 27) + (r << 40) + (p << 12) + o);
        prop_oneof![
            8 => (0u8..3, addr.clone(), 0u32..5).prop_map(|(k, a, n)| Event::Access {
                kind: [AccessKind::Load, AccessKind::Store, AccessKind::IFetch][k as usize],
                va: Vaddr(a),
                size: 8,
                instrs: n,
                dep: 0,
            }),
            1 => (addr.clone(), 1u64..(1 << 20), 0u32..8).prop_map(|(a, l, p)| Event::Mmap {
                addr: Vaddr(a),
                len: l,
                prot: p,
                flags: 0,
            }),
            1 => (addr.clone(), 1u64..(1 << 18)).prop_map(|(a, l)| Event::Munmap {
                addr: Vaddr(a),
                len: l,
            }),
            1 => addr.clone().prop_map(|a| Event::Brk { new_brk: Vaddr(a) }),
            1 => (addr.clone(), 1u64..(1 << 16), 0u32..8).prop_map(|(a, l, p)| Event::Mprotect {
                addr: Vaddr(a),
                len: l,
                prot: p,
            }),
            1 => (addr.clone(), 1u64..(1 << 16), 0u32..16).prop_map(|(a, l, v)| Event::Madvise {
                addr: Vaddr(a),
                len: l,
                advice: v,
            }),
            1 => (0u32..3).prop_map(|pid| Event::Switch { pid }),
            1 => (0u32..3).prop_map(|tid| Event::Thread { tid }),
            1 => (0u32..3).prop_map(|pid| Event::Exit { pid }),
        ]
    }

    #[test]
    fn a_page_seen_inside_a_vma_counts_as_outside_once_unmapped_and_inside_once_mapped_again() {
        let at = |va: u64, kind| Event::Access {
            kind,
            va: Vaddr(va),
            size: 8,
            instrs: 1,
            dep: 0,
        };
        let mmap = Event::Mmap {
            addr: Vaddr(0x10_0000),
            len: 0x2000,
            prot: 3,
            flags: 0,
        };
        let events = vec![
            mmap,
            at(0x10_0008, AccessKind::Load),
            at(0x10_1ff8, AccessKind::Store),
            Event::Thread { tid: 1 },
            at(0x10_0010, AccessKind::Load),
            Event::Munmap {
                addr: Vaddr(0x10_1000),
                len: 0x1000,
            },
            at(0x10_0010, AccessKind::Load),
            at(0x10_1000, AccessKind::Store), // unmapped: outside
            at(0x10_1008, AccessKind::Load),  // still outside
            mmap,
            at(0x10_1008, AccessKind::Load), // mapped again
            Event::Exit { pid: 0 },
            at(0x10_0000, AccessKind::IFetch), // the process's VMAs are gone
        ];
        let got = summarize(&mut Events(events.clone().into_iter())).unwrap();
        assert_eq!(got["refs_outside_vmas"], 3, "{got}");
        assert_eq!(got["footprint_pages"], 2);
        assert_eq!(got["written_pages"], 1);
        assert_eq!(got["loads"], 5);
        assert_eq!(got["stores"], 2);
        assert_eq!(got, naive(&mut Events(events.into_iter())).unwrap());
    }

    /// `pages` pages first touched in order, then `passes` more passes over them.
    fn touch_then_loop(pages: u64, passes: u64) -> Value {
        let events = (0..pages * (1 + passes)).map(|i| Event::Access {
            kind: AccessKind::Load,
            va: Vaddr(0x4000_0000 + (i % pages) * 4096),
            size: 8,
            instrs: 1,
            dep: 0,
        });
        summarize(&mut Events(events.collect::<Vec<_>>().into_iter())).unwrap()
    }

    #[test]
    fn a_trace_warms_up_until_nine_tenths_of_its_footprint_is_touched() {
        let s = touch_then_loop(1000, 9);
        let n = first_touch_refs(&s).unwrap();
        // 900 pages are touched by access 900; the curve's points are at most 1/16 apart.
        assert!((900..=900 + 900 / 16).contains(&n), "{n}");
    }

    #[test]
    fn a_trace_that_touches_new_pages_to_its_end_warms_up_at_most_half_of_it() {
        let s = touch_then_loop(10_000, 0);
        assert_eq!(first_touch_refs(&s), Some(5_000));
    }

    #[test]
    fn a_summary_without_a_touch_curve_cannot_tell_its_first_touch_phase() {
        let mut s = touch_then_loop(10, 1);
        s.as_object_mut().unwrap().remove("touch_curve");
        assert_eq!(first_touch_refs(&s), None);
    }

    proptest! {
        #[test]
        fn the_incremental_summary_equals_the_reference_on_any_event_sequence(
            events in proptest::collection::vec(event(), 0..400)
        ) {
            let want = naive(&mut Events(events.clone().into_iter())).unwrap();
            let got = summarize(&mut Events(events.into_iter())).unwrap();
            prop_assert_eq!(got, want);
        }
    }
}
