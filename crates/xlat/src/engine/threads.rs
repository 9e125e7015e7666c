//! The threads of one multi-threaded trace on several cores, taken apart so that the cores can
//! run them in simulated time rather than in the order the trace recorded them (model
//! version 8; docs/machine.md, "Multi-threaded traces").
//!
//! A recording serializes its threads: Valgrind runs one thread for about 100 000 blocks, then
//! the next. Run in that order on several cores, each thread's stretch starts on a core whose
//! clock is a whole stretch behind the previous core's, and a shared DRAM controller (which
//! needs its requests roughly in time order) would see the threads one after another. So the
//! trace is read ahead into one queue per thread, and the engine's scheduler (`sim/sched.rs`)
//! hands turns to the thread whose core has the fewest cycles, as it does for the processes
//! of several cores.
//!
//! Owns [`ThreadDemux`] and [`LOOKAHEAD_EVENTS`]. May call: `trace`, and the engine's
//! `stream` (the chunk); nothing else. Contract (what must stay true):
//! - Every event is handed out exactly once, to its thread (the thread of the last `Thread`
//!   event before it; events before the first `Thread` event belong to the first thread named),
//!   and each thread's events in the trace's order. `Thread` events are consumed here.
//! - Every event other than an `Access` (mmap, munmap, brk, mprotect, madvise, a process
//!   switch or exit) is a *barrier*: it is handed out only once every event before it in the
//!   trace has been handed out, and no event after it is handed out before it. Between two
//!   barriers the threads' references are independent; their order is the scheduler's.
//! - The caller consumes every event a [`ThreadDemux::fill`] handed out before it asks for
//!   another thread's (the engine asks for at most the references left in a turn), so an event
//!   handed out is an event run.
//! - A reference's dependence (`dep`: how many references back is the load its address comes
//!   from) counts the references of its own thread: the recording counts every thread's
//!   (one stream), and a core runs one thread's. A dependence on another thread's reference,
//!   or beyond the thread's last 65 535, becomes 0 (none).
//! - Memory: the queues hold at most [`LOOKAHEAD_EVENTS`] events plus one chunk read ahead. A
//!   thread whose next event lies beyond is not ready until the others have run theirs: there
//!   the run falls back to the trace's order.
//! - Deterministic: what is handed out depends only on the trace and the order of the calls.

use super::stream::CHUNK;
use crate::trace::{Event, EventSource, SourceError};
use std::collections::VecDeque;

/// Events read ahead of the ones handed out, at most (about 64 MiB at 32 bytes an event):
/// several of a Valgrind recording's stretches (100 000 blocks, about 200 000 references each),
/// so that every thread of a few has its next stretch in hand.
pub(super) const LOOKAHEAD_EVENTS: usize = 1 << 21;

/// One thread's events read ahead, with their positions in the trace.
#[derive(Default)]
struct Queue {
    events: VecDeque<Event>,
    /// The events' positions in the trace as runs of consecutive positions (first, length):
    /// a thread's events come in stretches, so this stays short.
    runs: VecDeque<(u64, u64)>,
    /// The trace-wide numbers (counting every thread's references) of the thread's last
    /// references read, at most `u16::MAX`: the dependences' reach.
    recent_refs: VecDeque<u64>,
}

impl Queue {
    fn head(&self) -> Option<u64> {
        self.runs.front().map(|r| r.0)
    }

    fn push(&mut self, seq: u64, ev: Event) {
        match self.runs.back_mut() {
            Some(last) if last.0 + last.1 == seq => last.1 += 1,
            _ => self.runs.push_back((seq, 1)),
        }
        self.events.push_back(ev);
    }

    fn pop(&mut self) -> Option<Event> {
        let front = self.runs.front_mut()?;
        front.0 += 1;
        front.1 -= 1;
        if front.1 == 0 {
            self.runs.pop_front();
        }
        self.events.pop_front()
    }
}

/// The events of one trace, read ahead and queued per thread (see the module doc).
#[derive(Default)]
pub(super) struct ThreadDemux {
    /// Thread ids in the order they were first named: thread `i` (its index) runs on core
    /// `i % cores`.
    tids: Vec<u32>,
    queues: Vec<Queue>,
    /// Positions of the barriers read and not yet handed out, in order.
    barriers: VecDeque<u64>,
    /// The thread the next event read belongs to.
    routing: usize,
    /// Position of the next event read.
    next_seq: u64,
    /// References read (every thread's): the recording's numbering of dependences.
    refs_read: u64,
    /// Events queued.
    held: usize,
    /// The trace has ended (every event is queued or handed out).
    ended: bool,
    chunk: Vec<Event>,
}

impl ThreadDemux {
    /// A demultiplexer that has read nothing yet.
    pub(super) fn new() -> Self {
        ThreadDemux {
            queues: vec![Queue::default()],
            ..Default::default()
        }
    }

    /// Threads named so far (at least one: the events before any `Thread` event).
    pub(super) fn threads(&self) -> usize {
        self.queues.len()
    }

    /// Read the trace ahead until [`LOOKAHEAD_EVENTS`] are queued or it ends.
    pub(super) fn read_ahead(&mut self, source: &mut dyn EventSource) -> Result<(), SourceError> {
        while !self.ended && self.held < LOOKAHEAD_EVENTS {
            self.chunk.clear();
            if source.fill(&mut self.chunk, CHUNK)? == 0 {
                self.ended = true;
                break;
            }
            for i in 0..self.chunk.len() {
                let ev = self.chunk[i];
                if let Event::Thread { tid } = ev {
                    self.routing = self.thread_of(tid);
                    continue;
                }
                let seq = self.next_seq;
                self.next_seq += 1;
                let ev = match ev {
                    Event::Access { dep, .. } => ev.with_dep(self.own_dependence(dep)),
                    other => {
                        self.barriers.push_back(seq);
                        other
                    }
                };
                self.queues[self.routing].push(seq, ev);
                self.held += 1;
            }
        }
        Ok(())
    }

    /// `dep` of the reference just read (counted over every thread's references) counted
    /// over the routing thread's own; 0 where the load it names is not the thread's (or is
    /// beyond its last `u16::MAX`). Notes the reference as the thread's.
    fn own_dependence(&mut self, dep: u16) -> u16 {
        let now = self.refs_read;
        self.refs_read += 1;
        let recent = &mut self.queues[self.routing].recent_refs;
        let own = match now.checked_sub(dep as u64) {
            Some(source) if dep > 0 => {
                // `recent` is increasing: the source's place among the thread's references.
                let at = recent.partition_point(|r| *r < source);
                if recent.get(at) == Some(&source) {
                    (recent.len() - at) as u16
                } else {
                    0
                }
            }
            _ => 0,
        };
        if recent.len() == u16::MAX as usize {
            recent.pop_front();
        }
        recent.push_back(now);
        own
    }

    /// The index of thread `tid`, numbering it if it is new. The first thread named takes
    /// index 0, to which the events before any `Thread` event already belong.
    fn thread_of(&mut self, tid: u32) -> usize {
        if let Some(i) = self.tids.iter().position(|t| *t == tid) {
            return i;
        }
        self.tids.push(tid);
        if self.tids.len() > self.queues.len() {
            self.queues.push(Queue::default());
        }
        self.tids.len() - 1
    }

    /// Position in the trace of thread `t`'s next event when it may be handed out now, else
    /// `None` (nothing queued, or behind a barrier that must wait for other threads).
    pub(super) fn ready(&self, t: usize) -> Option<u64> {
        let head = self.queues[t].head()?;
        match self.barriers.front() {
            Some(&b) if head > b => None,
            Some(&b) if head == b => self
                .queues
                .iter()
                .enumerate()
                .all(|(u, q)| u == t || q.head().is_none_or(|h| h > b))
                .then_some(head),
            _ => Some(head),
        }
    }

    /// Whether thread `t` will be handed nothing more: its queue is empty and the trace ended.
    pub(super) fn thread_ended(&self, t: usize) -> bool {
        self.ended && self.queues[t].head().is_none()
    }

    /// Whether every event has been handed out.
    pub(super) fn all_ended(&self) -> bool {
        self.ended && self.held == 0
    }

    /// Whether no thread can be named any more (the trace ended).
    pub(super) fn trace_ended(&self) -> bool {
        self.ended
    }

    /// Hand out up to `max` of thread `t`'s events that may run now (appended to `out`), and
    /// stop after a barrier; returns how many. 0: the thread must wait (or has ended).
    pub(super) fn fill(
        &mut self,
        source: &mut dyn EventSource,
        t: usize,
        out: &mut Vec<Event>,
        max: usize,
    ) -> Result<usize, SourceError> {
        self.read_ahead(source)?;
        let mut n = 0;
        while n < max {
            let Some(head) = self.ready(t) else { break };
            let ev = self.queues[t].pop().expect("a ready thread has an event");
            self.held -= 1;
            out.push(ev);
            n += 1;
            if self.barriers.front() == Some(&head) {
                self.barriers.pop_front();
                break;
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Vaddr;
    use crate::engine::tests::{load as load_sized, Events};

    fn load(va: u64) -> Event {
        load_sized(va, 8)
    }

    fn mmap(addr: u64) -> Event {
        Event::Mmap {
            addr: Vaddr(addr),
            len: 4096,
            prot: 3,
            flags: 0,
        }
    }

    fn va(ev: &Event) -> u64 {
        match ev {
            Event::Access { va, .. } => va.0,
            Event::Mmap { addr, .. } => addr.0,
            _ => u64::MAX,
        }
    }

    fn take(d: &mut ThreadDemux, s: &mut Events, t: usize, max: usize) -> Vec<u64> {
        let mut out = Vec::new();
        d.fill(s, t, &mut out, max).unwrap();
        out.iter().map(va).collect()
    }

    #[test]
    fn events_before_the_first_thread_event_belong_to_the_first_thread_named() {
        let mut s = Events(
            vec![
                load(1),
                Event::Thread { tid: 7 },
                load(2),
                Event::Thread { tid: 9 },
                load(3),
                Event::Thread { tid: 7 },
                load(4),
            ]
            .into_iter(),
        );
        let mut d = ThreadDemux::new();
        d.read_ahead(&mut s).unwrap();
        assert_eq!(d.threads(), 2);
        // Thread 9 may run its reference before thread 7's: no barrier between them.
        assert_eq!(take(&mut d, &mut s, 1, 10), vec![3]);
        assert_eq!(take(&mut d, &mut s, 0, 10), vec![1, 2, 4]);
        assert!(d.all_ended());
    }

    #[test]
    fn a_barrier_waits_for_every_earlier_event_and_holds_back_every_later_one() {
        let mut s = Events(
            vec![
                Event::Thread { tid: 1 },
                load(10),
                Event::Thread { tid: 2 },
                load(20),
                mmap(0x5000),
                load(21),
                Event::Thread { tid: 1 },
                load(11),
            ]
            .into_iter(),
        );
        let mut d = ThreadDemux::new();
        d.read_ahead(&mut s).unwrap();
        // Thread 1's second reference comes after thread 2's mmap: it waits.
        assert_eq!(take(&mut d, &mut s, 0, 10), vec![10]);
        assert_eq!(d.ready(0), None);
        // Thread 2 runs up to and including its mmap (nothing earlier is left), then stops.
        assert_eq!(take(&mut d, &mut s, 1, 10), vec![20, 0x5000]);
        assert!(d.ready(0).is_some());
        assert_eq!(take(&mut d, &mut s, 1, 10), vec![21]);
        assert_eq!(take(&mut d, &mut s, 0, 10), vec![11]);
        assert!(d.all_ended());
    }

    #[test]
    fn a_barrier_is_not_handed_out_while_another_thread_has_an_earlier_event() {
        let mut s = Events(
            vec![
                Event::Thread { tid: 1 },
                load(10),
                Event::Thread { tid: 2 },
                mmap(0x5000),
            ]
            .into_iter(),
        );
        let mut d = ThreadDemux::new();
        d.read_ahead(&mut s).unwrap();
        assert_eq!(d.ready(1), None);
        assert!(take(&mut d, &mut s, 1, 10).is_empty());
        assert_eq!(take(&mut d, &mut s, 0, 10), vec![10]);
        assert_eq!(take(&mut d, &mut s, 1, 10), vec![0x5000]);
        assert!(d.thread_ended(0) && d.thread_ended(1));
    }

    #[test]
    fn a_dependence_counts_the_references_of_its_own_thread() {
        let dep = |va: u64, dep: u16| load(va).with_dep(dep);
        let mut s = Events(
            vec![
                Event::Thread { tid: 1 },
                load(10),
                load(11),
                Event::Thread { tid: 2 },
                load(20),
                // 3 back in the trace is thread 1's first load, 2 back its second.
                dep(21, 3),
                Event::Thread { tid: 1 },
                // 4 back: thread 1's first load (its own 2nd back); 2 back: thread 2's.
                dep(12, 4),
                dep(13, 2),
                dep(14, 1),
            ]
            .into_iter(),
        );
        let mut d = ThreadDemux::new();
        d.read_ahead(&mut s).unwrap();
        let deps = |d: &mut ThreadDemux, s: &mut Events, t| {
            let mut out = Vec::new();
            d.fill(s, t, &mut out, 10).unwrap();
            out.iter()
                .map(|e| match e {
                    Event::Access { dep, .. } => *dep,
                    _ => u16::MAX,
                })
                .collect::<Vec<_>>()
        };
        // Thread 2's dependence is on thread 1's load: none of its own.
        assert_eq!(deps(&mut d, &mut s, 1), vec![0, 0]);
        // Thread 1: 4 back in the trace is its first load (2 of its own back); 2 back is
        // thread 2's load; 1 back its own previous one.
        assert_eq!(deps(&mut d, &mut s, 0), vec![0, 0, 2, 0, 1]);
    }

    #[test]
    fn the_queues_never_hold_more_than_the_lookahead_and_a_chunk() {
        // One thread's stretch longer than the lookahead, then the other thread's event.
        let n = LOOKAHEAD_EVENTS + 3 * CHUNK;
        let mut events = vec![Event::Thread { tid: 1 }];
        events.extend((0..n as u64).map(load));
        events.push(Event::Thread { tid: 2 });
        events.push(load(u64::MAX - 1));
        let mut s = Events(events.into_iter());
        let mut d = ThreadDemux::new();
        d.read_ahead(&mut s).unwrap();
        assert!(d.held <= LOOKAHEAD_EVENTS + CHUNK);
        assert_eq!(
            d.threads(),
            1,
            "the second thread lies beyond the lookahead"
        );
        let mut handed = 0;
        while handed < n {
            handed += take(&mut d, &mut s, 0, 4096).len();
            assert!(d.held <= LOOKAHEAD_EVENTS + CHUNK);
        }
        assert_eq!(d.threads(), 2);
        assert_eq!(take(&mut d, &mut s, 1, 10), vec![u64::MAX - 1]);
        assert!(d.all_ended());
    }
}
