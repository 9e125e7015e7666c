//! The queued DRAM model: per-channel read and write queues in front of a resource calendar of
//! banks, ranks and the data bus, for a trace-driven caller that needs each read's completion
//! time at once. The engine uses it whenever the core model gives each request a time
//! (`mem.dram.model = "auto"`, the default, under `timing.model = "ooo"`; one controller shared
//! by every core, driven from `timing/ooo/memory.rs`); otherwise the idle model of
//! `dram/mod.rs` (docs/timing.md, "The memory system under load").
//!
//! Owns [`DramController`], its requests, completions and counters; calls `channel.rs` (the
//! calendar), `timing.rs`, `mapping.rs` and [`DramConfig`].
//!
//! Contract: [`DramController::access`] takes requests in program order whose arrival times
//! (core cycles) are roughly increasing — they may go back by up to
//! `mem.dram.reorder_window_cycles` behind the latest arrival — and returns at once the read's
//! completion (first data beat on the bus) or the write's acceptance into the write queue.
//! Nothing already returned changes afterwards. The same requests give the same answers.
//!
//! ## Model
//! - Time: an exact tick base (a core cycle is `dram_clock_mhz / g` ticks, a DRAM clock
//!   `core_clock_mhz / g`, g their gcd), so nothing rounds until a latency is handed back in
//!   core cycles (rounded up). A request reaches its channel's queue `controller_cycles` after
//!   its arrival (`controller_cycles` is the fixed controller + interconnect latency of the idle
//!   model; the driver below sets it to 0).
//! - Banks: ranks x bank groups x banks per channel, open-page. Each access is placed in a
//!   calendar (`channel.rs`): a read or write joins a session of its row that is open at or
//!   after its queue entry and still has room before that row closes (a *row hit*), else opens
//!   a new session in the earliest gap of its bank that is long enough (after PRECHARGE: a *row
//!   conflict*; on a closed bank: *empty*). Commands obey tRCD, tRP, tRAS, tRC, tRTP, tWR per
//!   bank, tRRD_S/L and tFAW per rank, tCCD_S/L (separately for writes), READ-to-WRITE and
//!   WRITE-to-READ (tWTR_S/L) per rank, and rank-switch gaps on the shared data bus. A burst
//!   holds the data bus for `t_bl` clocks, so a channel's peak (64 B per burst: 25.6 GB/s for
//!   DDR4-3200) is what the bus can carry, not a separate cap.
//! - Scheduling (FR-FCFS approximated by earliest fit): requests are placed one at a time in
//!   arrival order, each at the earliest slot the reservations already made allow. A request
//!   to a row that is open at its time is served as a hit before a conflict placed earlier if
//!   it fits before that conflict's PRECHARGE (which waits for tRAS and for the hits already
//!   placed); requests to the same row placed while it is open are served together;
//!   a request arriving earlier than requests already placed (out of order) takes any gap they
//!   left.
//! - Read queue (`read_queue_entries` per channel): a read occupies an entry from its arrival
//!   at the channel until the command that commits its bank to it issues: its ACTIVATE, or its
//!   READ when its row is open or being opened (`Plan::committed_at` in `channel.rs`), as
//!   Ramulator 2 moves a request to its active buffer when its ACTIVATE issues
//!   (`promote_to_active`). A read that finds the queue full waits (in arrival order) for the
//!   first entry to free.
//! - Write queue (`write_queue_entries`): writes are posted (the caller gets the acceptance
//!   time) and buffered; a drained write holds its entry until its ACTIVATE (a row hit: its
//!   WRITE), as a read does. When `write_high_watermark_entries` wait, writes are drained
//!   until `write_low_watermark_entries` remain, one at a time, each the one whose ACTIVATE (a
//!   row hit: its WRITE) can issue first, the oldest among equals (Ramulator 2's FR-FCFS:
//!   ready first, then oldest; every drain below picks so); reads arriving meanwhile find the
//!   data bus and banks taken by the drain. When the read queue has been empty since some tick
//!   before a request's arrival (a write mode, as Ramulator 2's `set_write_mode` enters
//!   whenever its read queue is empty and leaves only once fewer than its low watermark's
//!   writes wait and a read does), the writes above `write_low_watermark_entries` are drained
//!   from that tick on, whatever arrives meanwhile; then the rest into the idle time, as many
//!   as are under way before the arrival: their ACTIVATE (a row hit: their WRITE) issues
//!   before it, their WRITE may come after (Ramulator 2 finishes a request it has activated
//!   first). Both count as `idle_drained_writes`. A read of a line waiting in the write queue
//!   is served from it (`controller_cycles`). A write to a line already buffered merges with
//!   it.
//! - Refresh (`refresh`): every rank refreshes all banks every tREFI (ranks staggered by
//!   tREFI / ranks); from tRP before until tRFC after, the rank takes no command, and every row
//!   is closed by it.
//! - Memory: only the history a new placement can depend on is kept: commands within their
//!   constraint windows of `reorder_window_cycles` before the latest arrival (or queue-full
//!   admission), each bank's sessions from the one open then, the queued entries. A long run
//!   holds a bounded number of entries (`DramController::retained_entries`).
//!
//! ## Configuration
//! `mem.dram.model` (`idle` | `queued`), `timing` (`ddr4_3200` | `ddr5_4800` | `custom`, with
//! `mem.dram.custom.*` in DRAM clocks; its tCL, tRCD, tRP and clock must equal `t_cl`, `t_rcd`,
//! `t_rp`, `dram_clock_mhz`), `ranks`, `bank_groups` (`banks_per_channel` counts every rank's
//! banks), `read_queue_entries`, `write_queue_entries`, `write_high_watermark_entries`,
//! `write_low_watermark_entries`, `refresh`, `reorder_window_cycles`, plus the idle model's
//! `channels`, `row_bytes`, `core_clock_mhz`, `controller_cycles`, `address_mapping`. With
//! `ddr5_4800` a channel is one 32-bit DDR5 subchannel (a DIMM is two).
//!
//! ## Deviations
//! - No lookahead: a placement is final when it is made, so FR-FCFS is approximated. A row hit
//!   that arrives after a conflict to its bank was placed cannot delay that conflict's
//!   PRECHARGE (a real FR-FCFS scheduler would serve the hit first if both still wait); it gets
//!   the open row only if it fits before, else it is served after the conflict (and conflicts in
//!   turn). There is no starvation cap, no per-bank queue limit, and no priority between
//!   requests of one queue other than this order.
//! - PRECHARGE times are implied, not placed: a row closes somewhere between its last access's
//!   tRTP/tWR (and tRAS) and tRP before the next ACTIVATE of its bank. No command-bus
//!   contention (one command per clock) and no tPPD; commands issue at any tick, not on DRAM
//!   clock edges (under a clock of difference per command).
//! - Refresh is all-bank, never postponed or pulled in, at fixed times; no same-bank refresh
//!   (DDR5 REFsb), no power-down.
//! - The write drain happens at the arrival that triggers it, not when the controller would
//!   switch to write mode; below the low watermark it stops before the next arrival when
//!   draining idle time, where Ramulator 2 would finish the write it is issuing commands for.
//! - An arrival more than `reorder_window_cycles` behind the latest one is moved up to that
//!   window (counted in `late_arrivals`).
//! - A request past its ACTIVATE holds no queue entry and nothing else: Ramulator 2 keeps it in
//!   an active buffer of one entry per bank; here the calendar already keeps one session per
//!   bank open at a time, so no cap is modelled.
//! - A read completes when its burst starts (tCL after READ), the idle model's convention;
//!   Ramulator 2 counts nCL + nBL (one burst, 2.5 ns for DDR4-3200, later).
//! - Open-page only: a row stays open until another row of its bank or a refresh needs the
//!   bank (no closed-page or timeout policy).
//! - Addresses map by `mem.dram.address_mapping`; with `row_contiguous` a single sequential
//!   stream stays in one bank for a row, so its reads are tCCD_L apart (half of DDR4-3200's
//!   peak) except where the stream crosses into the next row and the two banks share the bus
//!   for up to a read queue's worth of reads; `line_interleaved` and `champsim` spread
//!   consecutive lines over bank groups (tCCD_S, the full peak). Not a deviation from DDR4, but
//!   a property of the mapping to keep in mind when comparing with another simulator's.
//!
//! ## Validation driver
//! `crates/xlat/examples/dram_curve.rs` generates request streams (random reads, streaming
//! reads, 2:1 read/write mixes) at given injection intervals, or reads one from a file
//! (`<arrival_cycle> <hex byte address> <R|W>` per line), writes each stream for Ramulator 2 to
//! replay, and prints offered and delivered bandwidth and average / p50 / p99 read latency of
//! DDR4-3200AA, 1 channel, 1 rank, 4 x 4 banks, 8 KiB rows (Ramulator 2's `DDR4_8Gb_x8`,
//! `DDR4_3200AA`):
//! `cargo run --release -p xlat --example dram_curve -- [--pattern random|stream|random_mix|
//! stream_mix]... [--intervals 40,24,...] [--mapping row_contiguous|line_interleaved|champsim|
//! ro_ba_ra_co_ch] [--write-stream FILE] [--stream-in FILE] [--json]` (its module doc lists every
//! option). `scripts/ramulator_validate.py --compare-xlat` runs it on Ramulator's own streams
//! with `ro_ba_ra_co_ch` (results and deviations measured: docs/timing.md).
//!
//! ## References
//! JEDEC JESD79-4 (DDR4) and JESD79-5 (DDR5) speed bins and timing rules (`timing.rs` cites the
//! figures); Rixner et al., "Memory access scheduling", ISCA 2000 (FR-FCFS); Luo et al.,
//! "Ramulator 2.0", IEEE CAL 2023, and its source (`GenericDDR` controller: 32-entry read and
//! write buffers, write watermarks 0.8 / 0.2, write mode also when no read waits; DDR4 timing
//! constraints); ChampSim `src/dram_controller.cc` at 2ff25011 (address mapping, `swizzle_bits`).

use super::channel::{Channel, Plan, Ticks};
use super::mapping::AddressMap;
use super::timing::{DramTimings, TickClock};
use super::window::Window;
use super::{DramConfig, RowOutcome};

/// What a request is for; the counters split reads by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// A data access (demand miss or write-back).
    Data,
    /// A page-table entry read by the walker.
    PageTable,
}

/// One request to DRAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DramRequest {
    /// Line address (physical address >> 6).
    pub line: u64,
    /// A write-back (else a read).
    pub write: bool,
    /// When the request leaves the last cache level, in core cycles.
    pub arrival_cycle: u64,
    /// Data or page-table.
    pub kind: RequestKind,
}

/// How a request was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DramService {
    /// A read served by the banks, with what its row buffer did.
    Row(RowOutcome),
    /// A read served from the write queue (the line was waiting to be written).
    WriteQueue,
    /// A write accepted into the write queue (drained later).
    Posted,
}

/// The answer to one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DramCompletion {
    /// Core cycle the read's data arrives (first beat), or the write is accepted.
    pub done_cycle: u64,
    /// `done_cycle - arrival_cycle`.
    pub latency_cycles: u64,
    /// How it was served.
    pub service: DramService,
}

/// Buckets of [`QueuedDramCounters::read_latency_log2_hist`].
pub const LATENCY_BUCKETS: usize = 24;

/// One channel's traffic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelCounters {
    /// Reads served by the banks.
    pub reads: u64,
    /// Writes written to the banks.
    pub writes: u64,
    /// Bytes moved on the data bus.
    pub bytes: u64,
    /// DRAM clocks the data bus carried bursts.
    pub busy_dram_cycles: u64,
}

/// Counters of the queued model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueuedDramCounters {
    /// Reads (every read request, those served from the write queue included).
    pub reads: u64,
    /// Reads of page-table entries.
    pub pt_reads: u64,
    /// Write requests.
    pub writes: u64,
    /// Reads served from the write queue.
    pub write_queue_reads: u64,
    /// Writes merged into a write already waiting for the same line.
    pub write_merges: u64,
    /// Row hits, empty banks and row conflicts of the reads served by the banks.
    pub read_row: [u64; 3],
    /// The same for the writes drained to the banks.
    pub write_row: [u64; 3],
    /// Sum of read latencies (arrival to first data), core cycles.
    pub read_latency_cycles: u64,
    /// Sum over reads of latency less the idle latency of their row outcome (queueing, bank and
    /// bus waits), core cycles.
    pub read_queue_cycles: u64,
    /// `read_latency_cycles` of page-table reads only.
    pub pt_read_latency_cycles: u64,
    /// `read_queue_cycles` of page-table reads only.
    pub pt_read_queue_cycles: u64,
    /// Read latencies in core cycles, bucket `k` holding [2^k, 2^(k+1)) (bucket 0 also 0, the
    /// last everything above).
    pub read_latency_log2_hist: [u64; LATENCY_BUCKETS],
    /// Core cycles reads waited for a read-queue entry (included in `read_queue_cycles`).
    pub read_queue_full_cycles: u64,
    /// Core cycles writes waited for a write-queue entry.
    pub write_queue_full_cycles: u64,
    /// Drains started by the high watermark.
    pub watermark_drains: u64,
    /// Writes drained by the watermark.
    pub watermark_drained_writes: u64,
    /// Writes drained by the write mode an empty read queue started (to the low watermark, then
    /// into the idle time).
    pub idle_drained_writes: u64,
    /// Arrivals further back than `reorder_window_cycles`, moved up.
    pub late_arrivals: u64,
    /// Core cycle the last burst placed so far ends (rounded up): with the first arrival, the
    /// span over which the bytes moved.
    pub data_end_cycle: u64,
    /// Per channel.
    pub channels: Vec<ChannelCounters>,
}

impl QueuedDramCounters {
    /// Average read latency in core cycles.
    pub fn avg_read_latency_cycles(&self) -> f64 {
        ratio(self.read_latency_cycles, self.reads)
    }

    /// Average read queueing delay (latency beyond the idle latency) in core cycles.
    pub fn avg_read_queue_cycles(&self) -> f64 {
        ratio(self.read_queue_cycles, self.reads)
    }

    /// Share of DRAM reads that read page-table entries.
    pub fn pt_read_share(&self) -> f64 {
        ratio(self.pt_reads, self.reads)
    }

    /// Average queueing delay of page-table reads in core cycles.
    pub fn avg_pt_read_queue_cycles(&self) -> f64 {
        ratio(self.pt_read_queue_cycles, self.pt_reads)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

#[derive(Clone, Copy, Debug)]
struct QueuedRead {
    admit: u64,
    /// Tick it leaves the read queue: its ACTIVATE, or its READ if it hits a row already open
    /// or being opened (`Plan::committed_at` in `channel.rs`).
    leave: u64,
}

#[derive(Clone, Copy, Debug)]
struct BufferedWrite {
    line: u64,
    bank: usize,
    row: u64,
    arrival: u64,
}

#[derive(Clone, Copy, Debug)]
struct ScheduledWrite {
    line: u64,
    admit: u64,
    leave: u64,
}

/// Insert `x` into `q`, kept sorted by `key` (after entries of an equal key).
fn insert_sorted<T>(q: &mut Window<T>, x: T, key: impl Fn(&T) -> u64) {
    let k = key(&x);
    let i = q.partition_point_from_back(|y| key(y) <= k);
    q.insert(i, x);
}

#[derive(Clone, Debug)]
struct ChannelState {
    cal: Channel,
    /// Reads placed that leave the queue after `cutoff`, sorted by `leave` (pruned at the front).
    reads: Window<QueuedRead>,
    /// Admission tick of the last read that waited for a queue entry: reads arriving before it
    /// queue behind it (the request port is in order).
    read_floor: u64,
    /// Writes waiting in the write queue, oldest first.
    buffered: Vec<BufferedWrite>,
    /// Writes drained that leave the queue after `cutoff`, sorted by `leave` (pruned at the
    /// front).
    scheduled: Window<ScheduledWrite>,
    write_floor: u64,
    /// No placement may start before this tick: the calendar's history before it is pruned.
    cutoff: u64,
}

/// The queued DRAM model (see the module doc).
#[derive(Clone, Debug)]
pub struct DramController {
    map: AddressMap,
    clock: TickClock,
    t: Ticks,
    timings: DramTimings,
    controller_ticks: u64,
    banks: usize,
    read_cap: usize,
    write_cap: usize,
    high: usize,
    low: usize,
    window: u64,
    latest_arrival: u64,
    idle: [u32; 3],
    channels: Vec<ChannelState>,
    c: QueuedDramCounters,
    core_clock_mhz: u32,
}

impl DramController {
    /// An idle controller (all banks closed, queues empty) for `cfg`, whatever its `model`.
    pub fn new(cfg: &DramConfig) -> Result<DramController, String> {
        let mut checked = cfg.clone();
        checked.model = super::DramModel::Queued;
        checked.validate()?;
        let timings = cfg.timings();
        let clock = TickClock::new(cfg.core_clock_mhz, cfg.dram_clock_mhz);
        let t = Ticks::new(&timings, &clock);
        let map = AddressMap::new(
            cfg.address_mapping,
            cfg.channels,
            cfg.banks_per_channel,
            cfg.row_bytes,
            cfg.ranks,
            cfg.bank_groups,
        );
        let ranks = cfg.ranks as usize;
        let groups = cfg.bank_groups as usize;
        let per_group = cfg.banks_per_channel as usize / (ranks * groups);
        let controller_ticks = clock.core(cfg.controller_cycles as u64);
        let idle_of =
            |clocks: u32| (controller_ticks + clock.dram(clocks)).div_ceil(clock.core_ticks) as u32;
        let channel = ChannelState {
            cal: Channel::new(t, ranks, groups, per_group, cfg.refresh),
            reads: Window::new(),
            read_floor: 0,
            buffered: Vec::new(),
            scheduled: Window::new(),
            write_floor: 0,
            cutoff: 0,
        };
        Ok(DramController {
            map,
            clock,
            t,
            idle: [
                idle_of(timings.t_cl),
                idle_of(timings.t_rcd + timings.t_cl),
                idle_of(timings.t_rp + timings.t_rcd + timings.t_cl),
            ],
            timings,
            controller_ticks,
            banks: cfg.banks_per_channel as usize,
            read_cap: cfg.read_queue_entries as usize,
            write_cap: cfg.write_queue_entries as usize,
            high: cfg.write_high_watermark_entries as usize,
            low: cfg.write_low_watermark_entries as usize,
            window: clock.core(cfg.reorder_window_cycles),
            latest_arrival: 0,
            channels: vec![channel; cfg.channels as usize],
            c: QueuedDramCounters {
                channels: vec![ChannelCounters::default(); cfg.channels as usize],
                ..QueuedDramCounters::default()
            },
            core_clock_mhz: cfg.core_clock_mhz,
        })
    }

    /// The core clock requests' cycles count, in MHz.
    pub fn core_clock_mhz(&self) -> u32 {
        self.core_clock_mhz
    }

    /// Latency in core cycles of a lone read that hits, finds its bank closed, or conflicts: the
    /// idle model's `controller_cycles + tCL | tRCD + tCL | tRP + tRCD + tCL`.
    pub fn idle_latencies(&self) -> [u32; 3] {
        self.idle
    }

    /// The timings in use.
    pub fn timings(&self) -> &DramTimings {
        &self.timings
    }

    /// Peak bandwidth of all channels in bytes per second (one 64-byte burst per `t_bl`).
    pub fn peak_bytes_per_second(&self) -> f64 {
        self.timings.peak_bytes_per_second() * self.channels.len() as f64
    }

    /// The counters so far.
    pub fn counters(&self) -> &QueuedDramCounters {
        &self.c
    }

    /// Entries held (calendar commands and sessions, queued requests), all channels.
    pub fn retained_entries(&self) -> usize {
        self.channels
            .iter()
            .map(|s| s.cal.retained() + s.reads.len() + s.buffered.len() + s.scheduled.len())
            .sum()
    }

    /// Every command committed in channel `ch` (tests' schedule validator).
    #[cfg(test)]
    pub(super) fn command_log(&self, ch: usize) -> &[super::channel::LoggedCommand] {
        &self.channels[ch].cal.log
    }

    /// Serve one request (see the module doc's contract).
    pub fn access(&mut self, req: &DramRequest) -> DramCompletion {
        let arrival = self.clock.core(req.arrival_cycle);
        let mut t = arrival + self.controller_ticks;
        self.latest_arrival = self.latest_arrival.max(t);
        if t + self.window < self.latest_arrival {
            t = self.latest_arrival - self.window;
            self.c.late_arrivals += 1;
        }
        let (flat, row) = self.map.locate(req.line);
        let (ch, bank) = if self.banks.is_power_of_two() {
            (flat >> self.banks.trailing_zeros(), flat & (self.banks - 1))
        } else {
            (flat / self.banks, flat % self.banks)
        };
        // Placements in this channel start at or after `cutoff`: a queue-full backlog moves it
        // with the admissions, so that the history stays bounded under overload too.
        let st = &mut self.channels[ch];
        let cutoff = self
            .latest_arrival
            .max(st.read_floor)
            .max(st.write_floor)
            .saturating_sub(self.window);
        let t = t.max(cutoff);
        st.cutoff = cutoff;
        st.cal.prune(cutoff);
        st.reads.drop_front_while(|r| r.leave <= cutoff);
        st.scheduled.drop_front_while(|w| w.leave <= cutoff);
        let done = if req.write {
            self.c.writes += 1;
            self.write(ch, bank, row, req.line, t)
        } else {
            self.c.reads += 1;
            if req.kind == RequestKind::PageTable {
                self.c.pt_reads += 1;
            }
            self.read(ch, bank, row, req.line, t)
        };
        let latency_cycles = self.clock.to_core_ceil(done.0.saturating_sub(arrival));
        if !req.write {
            self.count_read(req.kind, latency_cycles, done.1);
        }
        DramCompletion {
            done_cycle: req.arrival_cycle + latency_cycles,
            latency_cycles,
            service: done.1,
        }
    }

    /// Drain every buffered write from `at_cycle` on (at the end of a run, so that the counters
    /// hold every write).
    pub fn flush_writes(&mut self, at_cycle: u64) {
        let from = self.clock.core(at_cycle).max(self.latest_arrival);
        for ch in 0..self.channels.len() {
            let n = self.channels[ch].buffered.len();
            self.drain(ch, from, n);
        }
    }

    fn read(&mut self, ch: usize, bank: usize, row: u64, line: u64, t: u64) -> (u64, DramService) {
        let st = &self.channels[ch];
        let waiting = st.buffered.iter().any(|w| w.line == line && w.arrival <= t) || {
            let from = st.scheduled.partition_point_from_back(|w| w.leave <= t);
            st.scheduled[from..]
                .iter()
                .any(|w| w.line == line && w.admit <= t)
        };
        if waiting {
            self.c.write_queue_reads += 1;
            return (t, DramService::WriteQueue);
        }
        self.idle_drain(ch, t);
        let admit = self.admit_read(ch, t);
        let st = &mut self.channels[ch];
        let plan = st.cal.plan(bank, row, false, admit.max(st.cutoff));
        st.cal.commit(&plan);
        insert_sorted(
            &mut st.reads,
            QueuedRead {
                admit,
                leave: plan.committed_at(),
            },
            |r| r.leave,
        );
        self.count_bank_access(ch, &plan, false);
        (plan.cas + self.t.cl, DramService::Row(plan.outcome))
    }

    /// When a read arriving at channel tick `t` enters the read queue: at `t` unless the queue
    /// is full then (or an earlier read still waits for an entry).
    fn admit_read(&mut self, ch: usize, t: u64) -> u64 {
        let cap = self.read_cap;
        let st = &mut self.channels[ch];
        let mut at = t.max(st.read_floor);
        loop {
            let (mut queued, mut first_leave) = (0, u64::MAX);
            let from = st.reads.partition_point_from_back(|r| r.leave <= at);
            for r in st.reads[from..].iter() {
                if r.admit <= at {
                    queued += 1;
                    first_leave = first_leave.min(r.leave);
                }
            }
            if queued < cap {
                break;
            }
            at = first_leave;
        }
        if at > t {
            st.read_floor = at;
            self.c.read_queue_full_cycles += self.clock.to_core_ceil(at - t);
        }
        at
    }

    fn write(&mut self, ch: usize, bank: usize, row: u64, line: u64, t: u64) -> (u64, DramService) {
        if self.channels[ch].buffered.iter().any(|w| w.line == line) {
            self.c.write_merges += 1;
            return (t, DramService::Posted);
        }
        let mut at = t.max(self.channels[ch].write_floor);
        loop {
            let st = &self.channels[ch];
            let (mut queued, mut first_leave) = (st.buffered.len(), u64::MAX);
            let from = st.scheduled.partition_point_from_back(|w| w.leave <= at);
            for w in st.scheduled[from..].iter() {
                if w.admit <= at {
                    queued += 1;
                    first_leave = first_leave.min(w.leave);
                }
            }
            if queued < self.write_cap {
                break;
            }
            if first_leave == u64::MAX {
                // Only buffered writes fill the queue (a watermark above the queue size is
                // rejected by validation, so this is defensive): drain to the low watermark.
                let n = st.buffered.len() - self.low.min(st.buffered.len());
                self.drain(ch, at, n.max(1));
            } else {
                at = first_leave;
            }
        }
        if at > t {
            self.channels[ch].write_floor = at;
            self.c.write_queue_full_cycles += self.clock.to_core_ceil(at - t);
        }
        self.idle_drain(ch, at);
        let st = &mut self.channels[ch];
        st.buffered.push(BufferedWrite {
            line,
            bank,
            row,
            arrival: at,
        });
        if st.buffered.len() >= self.high {
            let n = st.buffered.len() - self.low;
            self.c.watermark_drains += 1;
            self.c.watermark_drained_writes += n as u64;
            self.drain(ch, at, n);
        }
        (at, DramService::Posted)
    }

    /// Write `count` buffered writes to the banks, from `from` on, ready first
    /// ([`Self::drain_ready_first`]).
    fn drain(&mut self, ch: usize, from: u64, count: usize) {
        self.drain_ready_first(ch, from, count, None);
    }

    /// Drain buffered writes from `from` on, one at a time, each the write whose ACTIVATE (a
    /// row hit: its WRITE) can issue first, the oldest among equals (Ramulator 2's FR-FCFS:
    /// requests ready to issue first, then the oldest): `count` of them, and with `before =
    /// Some(t)` only while that command issues before `t`. The number drained.
    fn drain_ready_first(
        &mut self,
        ch: usize,
        from: u64,
        count: usize,
        before: Option<u64>,
    ) -> usize {
        let mut drained = 0;
        while drained < count {
            let st = &self.channels[ch];
            let mut best: Option<(u64, usize, Plan)> = None;
            for (i, w) in st.buffered.iter().enumerate() {
                let start = from.max(w.arrival).max(st.cutoff);
                if before.is_some_and(|t| start >= t) {
                    continue;
                }
                let plan = st.cal.plan(w.bank, w.row, true, start);
                let at = plan.committed_at();
                if best.as_ref().is_none_or(|b| at < b.0) {
                    best = Some((at, i, plan));
                }
            }
            let Some((at, i, plan)) = best else {
                break;
            };
            if before.is_some_and(|t| at >= t) {
                break;
            }
            let w = self.channels[ch].buffered.remove(i);
            self.commit_write(ch, &w, &plan);
            drained += 1;
        }
        drained
    }

    /// The write mode an empty read queue starts before `t`: the writes above the low
    /// watermark drained from the tick the queue emptied (ready first, whatever arrives
    /// meanwhile), then, ready first, as many of the rest as issue their ACTIVATE (a row hit:
    /// their WRITE) before `t`.
    fn idle_drain(&mut self, ch: usize, t: u64) {
        let st = &self.channels[ch];
        if st.buffered.is_empty() {
            return;
        }
        // The latest READ of the reads admitted by `t` (sorted by it).
        let busy_until = st
            .reads
            .iter()
            .rev()
            .find(|r| r.admit <= t)
            .map_or(0, |r| r.leave);
        if busy_until >= t {
            return;
        }
        // A write starts no earlier than this: if none can start before `t`, none drains.
        let cutoff = st.cutoff;
        if st
            .buffered
            .iter()
            .all(|w| busy_until.max(w.arrival).max(cutoff) >= t)
        {
            return;
        }
        let excess = st.buffered.len().saturating_sub(self.low);
        if excess > 0 {
            self.c.idle_drained_writes += excess as u64;
            self.drain(ch, busy_until.max(cutoff), excess);
        }
        // A write whose ACTIVATE (a row hit: its WRITE) issues in the idle time is under way
        // when the next request arrives, though its WRITE may come after.
        let drained = self.drain_ready_first(ch, busy_until, usize::MAX, Some(t));
        self.c.idle_drained_writes += drained as u64;
    }

    fn commit_write(&mut self, ch: usize, w: &BufferedWrite, plan: &Plan) {
        let st = &mut self.channels[ch];
        st.cal.commit(plan);
        insert_sorted(
            &mut st.scheduled,
            ScheduledWrite {
                line: w.line,
                admit: w.arrival,
                leave: plan.committed_at(),
            },
            |w| w.leave,
        );
        self.count_bank_access(ch, plan, true);
    }

    fn count_bank_access(&mut self, ch: usize, plan: &Plan, write: bool) {
        let data = if write { self.t.cwl } else { self.t.cl };
        let end = self.clock.to_core_ceil(plan.cas + data + self.t.bl);
        self.c.data_end_cycle = self.c.data_end_cycle.max(end);
        let k = &mut self.c.channels[ch];
        k.bytes += 64;
        k.busy_dram_cycles += self.timings.t_bl as u64;
        if write {
            k.writes += 1;
            self.c.write_row[plan.outcome as usize] += 1;
        } else {
            k.reads += 1;
            self.c.read_row[plan.outcome as usize] += 1;
        }
    }

    fn count_read(&mut self, kind: RequestKind, latency: u64, service: DramService) {
        let idle = match service {
            DramService::Row(o) => self.idle[o as usize] as u64,
            _ => latency,
        };
        let queue = latency.saturating_sub(idle);
        let c = &mut self.c;
        c.read_latency_cycles += latency;
        c.read_queue_cycles += queue;
        if kind == RequestKind::PageTable {
            c.pt_read_latency_cycles += latency;
            c.pt_read_queue_cycles += queue;
        }
        let bucket = (63 - latency.max(1).leading_zeros()) as usize;
        c.read_latency_log2_hist[bucket.min(LATENCY_BUCKETS - 1)] += 1;
    }
}

/// Write the figures of controller `c` over a run of `cycles` core cycles into `out` (a run
/// record's `dram` section) as its `queued` section: traffic per channel and in all with the
/// bytes per core cycle beside the peak, read latency and queueing delay (page-table reads
/// apart), row outcomes of reads in time order, queue and drain counts, and the histogram of
/// read latencies (power-of-two buckets keyed by their lower bound). Every figure is a count, a state or a fraction the
/// warm-up subtraction recomputes (`crate::warmup`).
pub fn queued_stats(c: &DramController, cycles: f64, out: &mut crate::stats::Stats) {
    use crate::stats::StatsExt;
    let k = &c.c;
    let q = out.section("queued");
    let bytes: u64 = k.channels.iter().map(|ch| ch.bytes).sum();
    let peak = c.peak_bytes_per_second() / (c.core_clock_mhz as f64 * 1e6);
    q.put_u64("reads", k.reads);
    q.put_u64("writes", k.writes);
    q.put_u64("pt_reads", k.pt_reads);
    q.put_f64("pt_read_share", k.pt_read_share());
    q.put_u64("read_latency_cycles", k.read_latency_cycles);
    q.put_f64("avg_read_latency_cycles", k.avg_read_latency_cycles());
    q.put_u64("read_queue_cycles", k.read_queue_cycles);
    q.put_f64("avg_read_queue_cycles", k.avg_read_queue_cycles());
    q.put_u64("pt_read_latency_cycles", k.pt_read_latency_cycles);
    q.put_f64(
        "avg_pt_read_latency_cycles",
        ratio(k.pt_read_latency_cycles, k.pt_reads),
    );
    q.put_u64("pt_read_queue_cycles", k.pt_read_queue_cycles);
    q.put_f64("avg_pt_read_queue_cycles", k.avg_pt_read_queue_cycles());
    q.put_u64("row_hits", k.read_row[0]);
    q.put_u64("row_empty", k.read_row[1]);
    q.put_u64("row_conflicts", k.read_row[2]);
    q.put_f64(
        "row_hit_rate",
        ratio(k.read_row[0], k.read_row.iter().sum()),
    );
    q.put_u64("write_queue_reads", k.write_queue_reads);
    q.put_u64("write_merges", k.write_merges);
    q.put_u64("read_queue_full_cycles", k.read_queue_full_cycles);
    q.put_u64("write_queue_full_cycles", k.write_queue_full_cycles);
    q.put_u64("watermark_drains", k.watermark_drains);
    q.put_u64("late_arrivals", k.late_arrivals);
    q.put_u64("bytes_moved", bytes);
    for (i, ch) in k.channels.iter().enumerate() {
        q.put_u64(&format!("channel_{i}_bytes_moved"), ch.bytes);
    }
    q.put_f64("run_cycles", cycles);
    q.put_f64(
        "bandwidth_bytes_per_cycle",
        if cycles > 0.0 {
            bytes as f64 / cycles
        } else {
            0.0
        },
    );
    q.put_f64("peak_bandwidth_bytes_per_cycle", peak);
    // Keyed by each bucket's lower bound, as `walk.latency_hist` (bucket 0 holds 0-1 cycles,
    // bucket 64 holds 64-127, the last everything above its bound).
    let h = q.section("read_latency_hist");
    for (b, n) in k.read_latency_log2_hist.iter().enumerate() {
        let lo = if b == 0 { 0 } else { 1u64 << b };
        h.put_u64(&lo.to_string(), *n);
    }
}
