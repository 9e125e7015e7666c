//! The out-of-order core on a thread of its own: the engine hands it references in batches and
//! goes on simulating while the core accounts them.
//!
//! The core only reads the references it is given, in program order, and nothing in a
//! single-core run reads the core back before the record is written, unless the run has an OS
//! clock to keep (daemons, a design's OS work): then the engine brings the core back to the
//! engine's thread at the first reading ([`CoreModel::bring_here`]). So the core's work can overlap the
//! engine's on another CPU and the results are bit-identical to accounting each reference at
//! once: the worker accounts the same references, in the same order, with the same code
//! ([`OooCore::take_refs`]). Multi-core runs read every core's clock between turns and keep
//! their cores on the engine's thread.
//!
//! Contract: [`CoreModel::reference`] takes references in program order and fails, as
//! [`OooCore::reference`] does, on a dependence before the first reference; a
//! [`CoreModel::snapshot`] is the core with every reference given so far accounted; memory is
//! bounded (a few batches in flight, their buffers reused); a panic of the worker is raised
//! again on the engine's thread at its next hand-over.
//!
//! Whether a run uses the thread is an execution detail, not part of its configuration:
//! `XLAT_TIMING_THREAD` = `on` / `off` / `auto` (the default: on when this process may use at
//! least two CPUs). A sweep whose workers fill the CPUs turns it off in its workers.

use super::ooo::{CoreConfig, CoreRef, DramHandle, OooCore};
use crate::mem::MemEvent;
use std::borrow::Cow;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// References handed to the worker at once: enough to make the hand-over's cost (a channel
/// message) negligible, few enough that the buffer stays in the nearest shared cache.
const THREAD_BATCH: usize = 16384;

/// Batches in flight between the engine and the worker (bounds the memory: the engine waits
/// when the worker is this far behind).
const IN_FLIGHT: usize = 2;

/// The out-of-order core of a run, on the engine's thread or on a worker thread.
// One per simulated core and read on every reference: the core in place, not behind a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum CoreModel {
    /// Accounted on the engine's thread as references arrive.
    Here(OooCore),
    /// Accounted on a worker thread of its own.
    Thread(ModelThread),
}

impl CoreModel {
    /// A core for `cfg` on a worker thread when `thread` and a thread can be started, else on
    /// this thread.
    pub fn new(cfg: &CoreConfig, l1d_hit_cycles: u32, thread: bool) -> CoreModel {
        Self::with_dram(cfg, l1d_hit_cycles, thread, None)
    }

    /// [`CoreModel::new`] timing its references' memory events on the queued DRAM controller
    /// `dram` ([`OooCore::with_dram`]).
    pub fn with_dram(
        cfg: &CoreConfig,
        l1d_hit_cycles: u32,
        thread: bool,
        dram: Option<DramHandle>,
    ) -> CoreModel {
        Self::with_memory(cfg, l1d_hit_cycles, thread, dram, false)
    }

    /// [`CoreModel::with_dram`] for a memory system whose L2 prefetcher is on or not
    /// ([`OooCore::with_memory`]).
    pub fn with_memory(
        cfg: &CoreConfig,
        l1d_hit_cycles: u32,
        thread: bool,
        dram: Option<DramHandle>,
        prefetching: bool,
    ) -> CoreModel {
        let core = OooCore::with_memory(cfg, l1d_hit_cycles, dram, prefetching);
        if thread {
            match ModelThread::start(core.clone()) {
                Some(t) => return CoreModel::Thread(t),
                None => return CoreModel::Here(core),
            }
        }
        CoreModel::Here(core)
    }

    /// Take one reference (in program order); see [`OooCore::reference`].
    #[inline]
    pub fn reference(&mut self, r: &CoreRef) -> Result<(), String> {
        self.reference_with(r, &[])
    }

    /// Take one reference with its memory events; see [`OooCore::reference_with`].
    #[inline]
    pub fn reference_with(&mut self, r: &CoreRef, events: &[MemEvent]) -> Result<(), String> {
        match self {
            CoreModel::Here(core) => core.reference_with(r, events),
            CoreModel::Thread(t) => t.reference(r, events),
        }
    }

    /// Retire every reference given so far, in place ([`OooCore::settle`]): when the core's
    /// process ends on a machine of several cores or processes, whose cores are never on a
    /// thread of their own (so a threaded core does nothing here).
    pub fn settle(&mut self) {
        match self {
            CoreModel::Here(core) => core.settle(),
            CoreModel::Thread(_) => debug_assert!(false, "a machine's cores run here"),
        }
    }

    /// The core's clock as the multi-core scheduler reads it ([`OooCore::clock`]).
    pub fn clock(&mut self) -> f64 {
        match self {
            CoreModel::Here(core) => core.clock(),
            CoreModel::Thread(t) => t.snapshot().clock(),
        }
    }

    /// Bring a core on a worker thread back to this thread, stopping the worker: the core
    /// continues as its snapshot (every reference given so far accounted), which gives the
    /// answers it would have given there. A core already here stays. For a run that reads the
    /// clock often (the OS clock of a one-core run with daemons or a design's OS work), where
    /// each read of a threaded core's clock would copy the whole core.
    pub fn bring_here(&mut self) {
        if let CoreModel::Thread(t) = self {
            let core = t.snapshot();
            *self = CoreModel::Here(core);
        }
    }

    /// The core with every reference given so far accounted (the worker's, copied: a record
    /// is written from it).
    pub fn snapshot(&self) -> Cow<'_, OooCore> {
        match self {
            CoreModel::Here(core) => Cow::Borrowed(core),
            CoreModel::Thread(t) => Cow::Owned(t.snapshot()),
        }
    }

    /// Whether the core runs on a worker thread (recorded as `sim.timing_thread`).
    pub fn threaded(&self) -> bool {
        matches!(self, CoreModel::Thread(_))
    }
}

/// What the engine sends the worker.
enum Message {
    /// References to account, in program order, with their memory events; the emptied
    /// buffers come back for reuse.
    Refs(Batch),
    /// A copy of the core with these references (not sent yet) accounted, to the reply channel.
    Snapshot(Batch, SyncSender<OooCore>),
}

/// References and their memory events, in program order.
#[derive(Clone, Debug, Default)]
struct Batch {
    refs: Vec<CoreRef>,
    events: Vec<MemEvent>,
}

impl Batch {
    fn with_capacity(n: usize) -> Batch {
        Batch {
            refs: Vec::with_capacity(n),
            events: Vec::new(),
        }
    }
}

/// The engine's side of a core on a worker thread.
#[derive(Debug)]
pub struct ModelThread {
    to_worker: Option<SyncSender<Message>>,
    /// Emptied buffers coming back.
    spare: Receiver<Batch>,
    /// References taken but not sent yet.
    batch: Batch,
    /// References taken so far (for the dependence check).
    given: u64,
    worker: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Message::Refs(v) => write!(f, "Refs({})", v.refs.len()),
            Message::Snapshot(v, _) => write!(f, "Snapshot({})", v.refs.len()),
        }
    }
}

impl ModelThread {
    /// Start the worker with `core` (nothing taken yet); `None` if no thread can be started.
    fn start(mut core: OooCore) -> Option<ModelThread> {
        let (to_worker, inbox) = sync_channel::<Message>(IN_FLIGHT);
        let (give_back, spare) = sync_channel::<Batch>(IN_FLIGHT + 2);
        let worker = std::thread::Builder::new()
            .name("xlat-timing".into())
            .spawn(move || {
                while let Ok(message) = inbox.recv() {
                    match message {
                        Message::Refs(mut b) => {
                            core.take_refs(&b.refs, &b.events);
                            b.refs.clear();
                            b.events.clear();
                            // A full return channel drops the buffer (the engine makes another).
                            let _ = give_back.try_send(b);
                        }
                        Message::Snapshot(pending, reply) => {
                            let mut copy = core.clone();
                            copy.take_refs(&pending.refs, &pending.events);
                            let _ = reply.send(copy);
                        }
                    }
                }
            })
            .ok()?;
        Some(ModelThread {
            to_worker: Some(to_worker),
            spare,
            batch: Batch::with_capacity(THREAD_BATCH),
            given: 0,
            worker: Some(worker),
        })
    }

    #[inline]
    fn reference(&mut self, r: &CoreRef, events: &[MemEvent]) -> Result<(), String> {
        OooCore::check_dependence(r, self.given)?;
        self.given += 1;
        self.batch.refs.push(*r);
        if !events.is_empty() {
            self.batch.events.extend_from_slice(events);
        }
        if self.batch.refs.len() >= THREAD_BATCH {
            self.send_batch();
        }
        Ok(())
    }

    /// Hand the batch to the worker and continue with an emptied one.
    #[cold]
    #[inline(never)]
    fn send_batch(&mut self) {
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Batch::with_capacity(THREAD_BATCH));
        let full = std::mem::replace(&mut self.batch, next);
        let sent = self
            .to_worker
            .as_ref()
            .is_some_and(|tx| tx.send(Message::Refs(full)).is_ok());
        if !sent {
            self.worker_failed();
        }
    }

    /// The worker's core with every reference given so far accounted.
    fn snapshot(&self) -> OooCore {
        let (reply, answer) = sync_channel(1);
        let asked = self.to_worker.as_ref().is_some_and(|tx| {
            tx.send(Message::Snapshot(self.batch.clone(), reply))
                .is_ok()
        });
        match answer.recv() {
            Ok(core) if asked => core,
            _ => panic!(
                "the timing model's worker thread stopped: {}",
                self.stop_reason()
            ),
        }
    }

    /// The worker stopped (it panicked): raise its panic here.
    #[cold]
    fn worker_failed(&mut self) -> ! {
        self.to_worker = None;
        match self.worker.take().map(JoinHandle::join) {
            Some(Err(payload)) => std::panic::resume_unwind(payload),
            _ => panic!("the timing model's worker thread stopped"),
        }
    }

    fn stop_reason(&self) -> &'static str {
        if self.worker.as_ref().is_some_and(|w| w.is_finished()) {
            "it panicked (see the message above)"
        } else {
            "its channel closed"
        }
    }
}

impl Drop for ModelThread {
    fn drop(&mut self) {
        // Closing the channel ends the worker's loop; a panic of its own was already reported
        // on its thread.
        self.to_worker = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

/// [`set_timing_thread`]'s choice: 0 none (the environment decides), 1 off, 2 on.
static CHOSEN: AtomicU8 = AtomicU8::new(0);

/// Decide for the simulations this process builds from now on whether their out-of-order core
/// runs on a thread of its own, overriding `XLAT_TIMING_THREAD` (`None`: the variable decides
/// again). For benchmarks and tests that run both ways in one process (setting the variable
/// there would race with the threads reading it).
pub fn set_timing_thread(on: Option<bool>) {
    CHOSEN.store(
        match on {
            None => 0,
            Some(false) => 1,
            Some(true) => 2,
        },
        Ordering::Relaxed,
    );
}

/// Whether runs put the out-of-order core on a thread of its own: as [`set_timing_thread`]
/// chose, else `XLAT_TIMING_THREAD` = `on` / `off`, or `auto` (unset): on when this process may
/// use at least two CPUs. Errors name the variable and the value.
pub fn thread_wanted() -> Result<bool, String> {
    match CHOSEN.load(Ordering::Relaxed) {
        1 => return Ok(false),
        2 => return Ok(true),
        _ => {}
    }
    let value = std::env::var("XLAT_TIMING_THREAD").unwrap_or_default();
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "auto" => Ok(std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2)),
        "on" | "1" | "true" | "yes" => Ok(true),
        "off" | "0" | "false" | "no" => Ok(false),
        _ => Err(format!(
            "XLAT_TIMING_THREAD must be on, off or auto, got '{value}'"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::ServedBy;
    use crate::trace::AccessKind;

    fn refs(n: usize) -> Vec<CoreRef> {
        (0..n as u64)
            .map(|i| CoreRef {
                kind: if i % 3 == 2 {
                    AccessKind::Store
                } else {
                    AccessKind::Load
                },
                vpn: i / 500,
                line: i / 8,
                instrs: 1 + (i % 4) as u32,
                dep: if i % 7 == 0 && i > 0 { 1 } else { 0 },
                xlat_cycles: if i % 500 == 0 { 109 } else { 0 },
                walk_cycles: if i % 500 == 0 { 100 } else { 0 },
                data_cycles: if i % 8 == 0 { 200 } else { 4 },
                data_level: if i % 8 == 0 {
                    ServedBy::Dram
                } else {
                    ServedBy::L1
                },
                walk_events: 0,
                data_events: 0,
            })
            .collect()
    }

    fn figures(core: &OooCore) -> String {
        let mut t = crate::stats::Stats::new();
        let s = core.settled();
        s.stats(&mut t);
        format!(
            "{:?} {}",
            s.cycles().to_bits(),
            serde_json::to_string(&t).unwrap()
        )
    }

    #[test]
    fn a_core_on_its_own_thread_gives_the_same_figures_as_one_here_at_every_snapshot() {
        let cfg = CoreConfig::default();
        let mut here = CoreModel::new(&cfg, 4, false);
        let mut there = CoreModel::new(&cfg, 4, true);
        assert!(there.threaded() && !here.threaded());
        for (i, r) in refs(3 * THREAD_BATCH + 123).iter().enumerate() {
            here.reference(r).unwrap();
            there.reference(r).unwrap();
            if i % 5000 == 17 {
                assert_eq!(
                    figures(&here.snapshot()),
                    figures(&there.snapshot()),
                    "at {i}"
                );
            }
        }
        assert_eq!(figures(&here.snapshot()), figures(&there.snapshot()));
    }

    #[test]
    fn a_core_brought_back_from_its_thread_mid_run_gives_the_figures_of_one_that_stayed_here() {
        // What the one-core OS clock relies on (`CoreModel::bring_here`, model version 5).
        let cfg = CoreConfig::default();
        let mut here = CoreModel::new(&cfg, 4, false);
        let mut moved = CoreModel::new(&cfg, 4, true);
        let all = refs(2 * THREAD_BATCH + 777);
        for (i, r) in all.iter().enumerate() {
            here.reference(r).unwrap();
            moved.reference(r).unwrap();
            if i == THREAD_BATCH + 5 {
                moved.bring_here();
                assert!(!moved.threaded());
                // Bringing a core that is already here back changes nothing.
                moved.bring_here();
                assert_eq!(here.clock(), moved.clock(), "at {i}");
            }
        }
        assert_eq!(figures(&here.snapshot()), figures(&moved.snapshot()));
    }

    #[test]
    fn a_dependence_before_the_trace_is_the_same_error_on_either_thread() {
        let r = CoreRef {
            dep: 3,
            ..refs(1)[0]
        };
        for thread in [false, true] {
            let mut core = CoreModel::new(&CoreConfig::default(), 4, thread);
            core.reference(&refs(1)[0]).unwrap();
            let e = core.reference(&r).unwrap_err();
            assert!(
                e.contains("reference #1") && e.contains("before the start"),
                "{e}"
            );
        }
    }
}
