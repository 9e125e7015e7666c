//! Decoding on a second thread: [`Background`] runs an [`EventSource`] on its own thread and
//! hands its events over in batches, so that decompressing a trace (xz/gzip ChampSim traces
//! spend most of their reading time there) overlaps the simulation.
//!
//! Contract: the events, their order and any error are exactly those of the wrapped source
//! (one producer, one ordered channel: results do not depend on thread timing). Memory is
//! bounded: at most [`BATCHES_IN_FLIGHT`] batches of [`BATCH_EVENTS`] events exist at a time,
//! whatever the trace length. An error is final, as the [`EventSource`] contract says.

use super::{Event, EventSource, SourceError};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Events per batch handed from the decoding thread to the simulation.
pub const BATCH_EVENTS: usize = 16 * 1024;
/// Batches decoded ahead of the simulation (plus one being filled and one being consumed).
pub const BATCHES_IN_FLIGHT: usize = 2;

/// An [`EventSource`] decoded on a background thread.
pub struct Background {
    name: String,
    describe: Option<serde_json::Value>,
    batches: Receiver<Result<Vec<Event>, SourceError>>,
    /// Emptied batches sent back for reuse (the hot path allocates nothing once warm).
    recycle: SyncSender<Vec<Event>>,
    current: Vec<Event>,
    pos: usize,
    ended: bool,
    failed: Option<SourceError>,
    thread: Option<JoinHandle<()>>,
}

impl Background {
    /// Start decoding `source` on a new thread.
    pub fn new(mut source: Box<dyn EventSource>) -> Background {
        let name = source.name();
        let describe = source.describe();
        let (tx, batches) = sync_channel(BATCHES_IN_FLIGHT);
        let (recycle, spare) = sync_channel::<Vec<Event>>(BATCHES_IN_FLIGHT + 2);
        let thread = std::thread::Builder::new()
            .name("xlat-decode".into())
            .spawn(move || loop {
                let mut batch = spare
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(BATCH_EVENTS));
                batch.clear();
                let r = source.fill(&mut batch, BATCH_EVENTS);
                let last = !matches!(r, Ok(n) if n > 0);
                let msg = r.map(|_| batch);
                // A closed channel means the simulation stopped early: stop decoding.
                if tx.send(msg).is_err() || last {
                    return;
                }
            })
            .expect("spawn the trace decoding thread");
        Background {
            name,
            describe,
            batches,
            recycle,
            current: Vec::new(),
            pos: 0,
            ended: false,
            failed: None,
            thread: Some(thread),
        }
    }
}

impl EventSource for Background {
    fn fill(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, SourceError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let mut n = 0;
        while n < max && !self.ended {
            if self.pos == self.current.len() {
                let done = std::mem::take(&mut self.current);
                let _ = self.recycle.try_send(done);
                self.pos = 0;
                match self.batches.recv() {
                    Ok(Ok(batch)) if !batch.is_empty() => self.current = batch,
                    Ok(Ok(_)) => self.ended = true,
                    Ok(Err(e)) => {
                        // Hand out what came before the error first, as the source did.
                        self.failed = Some(e.clone());
                        return if n > 0 { Ok(n) } else { Err(e) };
                    }
                    Err(_) => {
                        let e = SourceError {
                            source: self.name.clone(),
                            offset: None,
                            problem: "the trace decoding thread stopped unexpectedly".into(),
                        };
                        self.failed = Some(e.clone());
                        return Err(e);
                    }
                }
                continue;
            }
            let take = (max - n).min(self.current.len() - self.pos);
            out.extend_from_slice(&self.current[self.pos..self.pos + take]);
            self.pos += take;
            n += take;
        }
        Ok(n)
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn describe(&self) -> Option<serde_json::Value> {
        self.describe.clone()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // Closing the channel stops the decoder at its next batch; wait so that no thread
        // outlives the run.
        let (_, closed) = sync_channel(0);
        self.batches = closed;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Vaddr;
    use crate::trace::AccessKind;

    /// `n` events, then optionally an error.
    struct Numbers {
        next: u64,
        n: u64,
        fail: bool,
    }

    impl EventSource for Numbers {
        fn fill(&mut self, out: &mut Vec<Event>, max: usize) -> Result<usize, SourceError> {
            let mut k = 0;
            while k < max && self.next < self.n {
                out.push(Event::Access {
                    kind: AccessKind::Load,
                    va: Vaddr(self.next),
                    size: 8,
                    instrs: 1,
                    dep: 0,
                });
                self.next += 1;
                k += 1;
            }
            if k == 0 && self.fail {
                return Err(SourceError {
                    source: "numbers".into(),
                    offset: Some(self.n),
                    problem: "broken".into(),
                });
            }
            Ok(k)
        }
        fn name(&self) -> String {
            "numbers".into()
        }
    }

    fn drain(src: &mut dyn EventSource, step: usize) -> (Vec<u64>, Option<SourceError>) {
        let mut out = Vec::new();
        loop {
            let mut buf = Vec::new();
            match src.fill(&mut buf, step) {
                Ok(0) => return (out, None),
                Ok(_) => out.extend(buf.iter().map(|e| match e {
                    Event::Access { va, .. } => va.0,
                    _ => unreachable!(),
                })),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    #[test]
    fn the_background_source_gives_the_same_events_and_error_as_the_source() {
        for (n, fail) in [(0, false), (5, false), (100_000, false), (40_000, true)] {
            for step in [1, 512, 100_000] {
                let direct = drain(&mut Numbers { next: 0, n, fail }, step);
                let mut bg = Background::new(Box::new(Numbers { next: 0, n, fail }));
                let threaded = drain(&mut bg, step);
                assert!(direct == threaded, "n {n} fail {fail} step {step}");
                // An error repeats; an end stays an end.
                assert_eq!(drain(&mut bg, step).1, direct.1);
            }
        }
    }

    #[test]
    fn dropping_a_background_source_early_stops_its_thread() {
        let mut bg = Background::new(Box::new(Numbers {
            next: 0,
            n: u64::MAX,
            fail: false,
        }));
        let mut buf = Vec::new();
        bg.fill(&mut buf, 10).unwrap();
        drop(bg); // must return (the thread notices the closed channel)
    }
}
