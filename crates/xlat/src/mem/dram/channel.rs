//! One channel's resource calendar for the queued DRAM model: per bank, the rows it opens and
//! when; per rank, its ACTIVATEs; per channel, its column commands (and so its data-bus bursts).
//!
//! Owns [`Channel`] and [`Ticks`]; calls only `timing.rs` and `RowOutcome` of `dram/mod.rs`.
//!
//! Contract: [`Channel::plan`] finds, without changing anything, the earliest placement of one
//! access at or after a tick that every reservation already made allows (earliest fit), and
//! [`Channel::commit`] makes it; a committed reservation never moves. A bank's history is a list
//! of *sessions* (one row open from its ACTIVATE until the next session's ACTIVATE less tRP, or
//! until the refresh that closes it); an access either joins a session of its row (a row hit) or
//! opens a new session in a gap between two (empty bank or row conflict) that is long enough not
//! to disturb either neighbour. PRECHARGE times are not stored: a session only records the
//! earliest tick its row may close (tRAS, tRTP, write recovery), and its successor's ACTIVATE is
//! at least tRP after that. Every placement satisfies, against every committed command: tRCD,
//! tRP, tRAS, tRC, tRTP, tWR per bank; tRRD_S/L and tFAW per rank; tCCD_S/L (read and write),
//! READ-to-WRITE and WRITE-to-READ (tWTR_S/L) per rank; data-bus bursts of different ranks
//! apart by `t_cs`; refresh blackouts per rank. `tests.rs` checks this with an independent
//! validator over the command log.

use super::timing::{DramTimings, TickClock};
use super::window::Window;
use super::RowOutcome;

/// Timing constraints in ticks.
#[derive(Clone, Copy, Debug)]
pub struct Ticks {
    /// Burst on the data bus.
    pub bl: u64,
    /// READ to data.
    pub cl: u64,
    /// WRITE to data.
    pub cwl: u64,
    rcd: u64,
    rp: u64,
    ras: u64,
    rc: u64,
    rtp: u64,
    /// WRITE to PRECHARGE: tCWL + burst + tWR.
    write_to_pre: u64,
    ccd_s: u64,
    ccd_l: u64,
    ccd_s_wr: u64,
    ccd_l_wr: u64,
    rrd_s: u64,
    rrd_l: u64,
    faw: u64,
    /// WRITE to READ: tCWL + burst + tWTR_S / tWTR_L.
    wtr_s: u64,
    wtr_l: u64,
    /// READ to WRITE: tCL + burst + turnaround - tCWL.
    rtw: u64,
    cs: u64,
    refi: u64,
    rfc: u64,
    /// No two column commands further apart than this constrain each other.
    cas_window: u64,
    /// No two ACTIVATEs further apart than this constrain each other.
    act_window: u64,
}

impl Ticks {
    /// `t` on the time base `clock`.
    pub fn new(t: &DramTimings, clock: &TickClock) -> Ticks {
        let k = |n: u32| clock.dram(n);
        let rtw = k(t.t_cl + t.t_bl + t.t_rtw_turnaround) - k(t.t_cwl);
        let (wtr_s, wtr_l) = (
            k(t.t_cwl + t.t_bl + t.t_wtr_s),
            k(t.t_cwl + t.t_bl + t.t_wtr_l),
        );
        let cas_window = [
            k(t.t_ccd_l),
            k(t.t_ccd_l_wr),
            wtr_l,
            rtw,
            k(t.t_cl + t.t_bl + t.t_cs),
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        Ticks {
            bl: k(t.t_bl),
            cl: k(t.t_cl),
            cwl: k(t.t_cwl),
            rcd: k(t.t_rcd),
            rp: k(t.t_rp),
            ras: k(t.t_ras),
            rc: k(t.t_rc),
            rtp: k(t.t_rtp),
            write_to_pre: k(t.t_cwl + t.t_bl + t.t_wr),
            ccd_s: k(t.t_ccd_s),
            ccd_l: k(t.t_ccd_l),
            ccd_s_wr: k(t.t_ccd_s_wr),
            ccd_l_wr: k(t.t_ccd_l_wr),
            rrd_s: k(t.t_rrd_s),
            rrd_l: k(t.t_rrd_l),
            faw: k(t.t_faw),
            wtr_s,
            wtr_l,
            rtw,
            cs: k(t.t_cs),
            refi: k(t.t_refi),
            rfc: k(t.t_rfc),
            cas_window,
            act_window: k(t.t_faw.max(t.t_rrd_l)),
        }
    }

    /// Minimum ticks from column command `a` to a later one `b` of the same rank.
    #[inline]
    fn cas_gap(&self, a_write: bool, b_write: bool, same_group: bool) -> u64 {
        match (a_write, b_write, same_group) {
            (false, false, true) => self.ccd_l,
            (false, false, false) => self.ccd_s,
            (true, true, true) => self.ccd_l_wr,
            (true, true, false) => self.ccd_s_wr,
            (false, true, _) => self.rtw,
            (true, false, true) => self.wtr_l,
            (true, false, false) => self.wtr_s,
        }
    }

    /// Column command to the start of its burst.
    #[inline]
    fn data_delay(&self, write: bool) -> u64 {
        if write {
            self.cwl
        } else {
            self.cl
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Cas {
    tick: u64,
    rank: u16,
    group: u16,
    write: bool,
}

#[derive(Clone, Copy, Debug)]
struct Act {
    tick: u64,
    group: u16,
}

/// A row held open in one bank: from `act` until the next session's ACTIVATE less tRP (or the
/// refresh that closes it).
#[derive(Clone, Copy, Debug)]
struct Session {
    row: u64,
    act: u64,
    /// Earliest tick this row may be closed: tRAS after `act`, tRTP after its last READ, write
    /// recovery after its last WRITE.
    pre_earliest: u64,
}

/// Where a planned access goes in its bank's list of sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Joins session `i` (a row hit).
    Join(usize),
    /// Opens a new session at index `i`.
    Open(usize),
}

/// A placement found by [`Channel::plan`], to hand to [`Channel::commit`].
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    bank: usize,
    row: u64,
    write: bool,
    slot: Slot,
    act: Option<u64>,
    /// Tick of the READ or WRITE command.
    pub cas: u64,
    pre_earliest: u64,
    /// What the row buffer did.
    pub outcome: RowOutcome,
}

impl Plan {
    /// Tick of the command that commits its bank to this access: the ACTIVATE of a new row
    /// session, the READ or WRITE of a row hit. (Ramulator 2 finishes a request it has
    /// activated before any other of its bank: past this tick the access is under way.)
    pub fn committed_at(&self) -> u64 {
        self.act.unwrap_or(self.cas)
    }
}

/// One command as committed, for the schedule validator of the tests.
#[cfg(test)]
#[derive(Clone, Copy, Debug)]
pub struct LoggedCommand {
    pub tick: u64,
    pub bank: usize,
    pub row: u64,
    /// `None`: ACTIVATE; `Some(write)`: READ or WRITE.
    pub column: Option<bool>,
}

/// One channel's calendar.
#[derive(Clone, Debug)]
pub struct Channel {
    t: Ticks,
    bank_groups: usize,
    banks_per_rank: usize,
    /// `log2(banks_per_rank)` and `bank_groups - 1` when both are powers of two.
    pow2_shift_mask: Option<(u32, usize)>,
    refresh: bool,
    /// Tick of each rank's first refresh (ranks staggered by tREFI / ranks).
    first_refresh: Vec<u64>,
    /// Per rank, the last answer of [`Channel::next_refresh`] past the first refresh: it holds
    /// for every tick whose blackout start falls in the tREFI before it (saves a division).
    next_refresh_memo: Vec<std::cell::Cell<u64>>,
    /// Each bank's sessions in time order; those before the one open at `cutoff` are stale
    /// (nothing looks at them) and dropped when [`Channel::commit`] places another in the bank.
    sessions: Vec<Window<Session>>,
    cas: Window<Cas>,
    acts: Vec<Window<Act>>,
    /// The latest `cutoff` of [`Channel::prune`].
    cutoff: u64,
    #[cfg(test)]
    pub log: Vec<LoggedCommand>,
}

impl Channel {
    /// An idle channel of `ranks` x `bank_groups` x `banks_per_group` banks, all closed.
    pub fn new(
        t: Ticks,
        ranks: usize,
        bank_groups: usize,
        banks_per_group: usize,
        refresh: bool,
    ) -> Channel {
        let banks_per_rank = bank_groups * banks_per_group;
        Channel {
            t,
            bank_groups,
            banks_per_rank,
            pow2_shift_mask: (banks_per_rank.is_power_of_two() && bank_groups.is_power_of_two())
                .then(|| (banks_per_rank.trailing_zeros(), bank_groups - 1)),
            refresh,
            next_refresh_memo: vec![std::cell::Cell::new(0); ranks],
            first_refresh: (0..ranks as u64)
                .map(|r| t.refi + r * (t.refi / ranks as u64))
                .collect(),
            sessions: vec![Window::new(); ranks * banks_per_rank],
            cas: Window::new(),
            acts: vec![Window::new(); ranks],
            cutoff: 0,
            #[cfg(test)]
            log: Vec::new(),
        }
    }

    #[inline]
    fn rank_group(&self, bank: usize) -> (usize, u16) {
        // Banks per rank and bank groups are powers of two in every standard organisation:
        // shifts and masks then (a division took a few percent of the placement's time).
        match self.pow2_shift_mask {
            Some((shift, mask)) => (bank >> shift, (bank & mask) as u16),
            None => (bank / self.banks_per_rank, (bank % self.bank_groups) as u16),
        }
    }

    /// Start of the first refresh of `rank` whose blackout (it starts tRP earlier, when every
    /// bank must be precharged) begins after `tick`; `u64::MAX` without refresh.
    #[inline]
    fn next_refresh(&self, rank: usize, tick: u64) -> u64 {
        if !self.refresh {
            return u64::MAX;
        }
        let first = self.first_refresh[rank];
        if tick + self.t.rp < first {
            return first;
        }
        let x = tick + self.t.rp;
        let memo = &self.next_refresh_memo[rank];
        let m = memo.get();
        if x < m && x + self.t.refi >= m {
            return m;
        }
        let next = first + ((x - first) / self.t.refi + 1) * self.t.refi;
        memo.set(next);
        next
    }

    /// Latest tick a row opened at `act` in `rank` may close: tRP before the next refresh.
    #[inline]
    fn refresh_deadline(&self, rank: usize, act: u64) -> u64 {
        self.next_refresh(rank, act).saturating_sub(self.t.rp)
    }

    /// `tick`, or the end of the refresh of `rank` whose blackout holds it.
    #[inline]
    fn after_blackout(&self, rank: usize, tick: u64) -> u64 {
        if !self.refresh {
            return tick;
        }
        let next = self.next_refresh(rank, tick);
        match next.checked_sub(self.t.refi) {
            Some(prev) if prev >= self.first_refresh[rank] && tick < prev + self.t.rfc => {
                prev + self.t.rfc
            }
            _ => tick,
        }
    }

    /// Latest tick session `j` of `bank` may close: tRP before the next session's ACTIVATE,
    /// and before the refresh after its own.
    fn close_bound(&self, bank: usize, j: usize) -> u64 {
        let s = &self.sessions[bank];
        let (rank, _) = self.rank_group(bank);
        let by_refresh = self.refresh_deadline(rank, s[j].act);
        match s.get(j + 1) {
            Some(next) => by_refresh.min(next.act - self.t.rp),
            None => by_refresh,
        }
    }

    /// The earliest placement of an access to `row` of `bank` (a WRITE if `write`) at or after
    /// `from`: a hit in the first session of its row that still has room, else a new session in
    /// the first gap long enough, trying sessions in time order from the one open at `from`.
    pub fn plan(&self, bank: usize, row: u64, write: bool, from: u64) -> Plan {
        let s = &self.sessions[bank];
        let cur = s.partition_point_from_back(|x| x.act <= from);
        if cur == 0 {
            if let Some(p) = self.try_open(bank, row, write, from, None) {
                return p;
            }
        }
        for (j, session) in s.iter().enumerate().skip(cur.saturating_sub(1)) {
            if session.row == row {
                if let Some(p) = self.try_join(bank, j, write, from) {
                    return p;
                }
            }
            if let Some(p) = self.try_open(bank, row, write, from, Some(j)) {
                return p;
            }
        }
        unreachable!("a new session after the last one always fits")
    }

    fn try_join(&self, bank: usize, j: usize, write: bool, from: u64) -> Option<Plan> {
        let s = &self.sessions[bank][j];
        let (rank, group) = self.rank_group(bank);
        let cas = self.place_cas(rank, group, write, from.max(s.act + self.t.rcd));
        let close_at = cas
            + if write {
                self.t.write_to_pre
            } else {
                self.t.rtp
            };
        (close_at <= self.close_bound(bank, j)).then_some(Plan {
            bank,
            row: s.row,
            write,
            slot: Slot::Join(j),
            act: None,
            cas,
            pre_earliest: s.pre_earliest.max(close_at),
            outcome: RowOutcome::Hit,
        })
    }

    /// A new session of `row` after session `after` (before the first if `None`), if it fits
    /// before the session that follows.
    fn try_open(
        &self,
        bank: usize,
        row: u64,
        write: bool,
        from: u64,
        after: Option<usize>,
    ) -> Option<Plan> {
        let s = &self.sessions[bank];
        let (rank, group) = self.rank_group(bank);
        let next_act = s.get(after.map_or(0, |j| j + 1)).map(|n| n.act);
        // Without a previous session the bank is closed; with one, it is open until we close
        // it, unless its refresh comes first.
        // The ACTIVATE is at or after `act_from` and closes no earlier than tRAS and tRCD plus
        // tRTP (write recovery) after it: if even that does not fit before the next session,
        // nothing later does.
        let close_after = self.t.ras.max(
            self.t.rcd
                + if write {
                    self.t.write_to_pre
                } else {
                    self.t.rtp
                },
        );
        let fits = |act_from: u64| {
            next_act.is_none_or(|n| {
                act_from + close_after + self.t.rp <= n && act_from + self.t.rc <= n
            })
        };
        // A lower bound of `act_from` first, to skip the refresh arithmetic for gaps too short.
        if !fits(after.map_or(from, |j| from.max(s[j].act + self.t.rc))) {
            return None;
        }
        let (mut act_from, mut closes_by_refresh) = (from, u64::MAX);
        let mut outcome = RowOutcome::Empty;
        if let Some(j) = after {
            let prev = &s[j];
            let precharge = from.max(prev.pre_earliest);
            closes_by_refresh = self.refresh_deadline(rank, prev.act);
            act_from = prev.act + self.t.rc;
            if precharge < closes_by_refresh {
                act_from = act_from.max(precharge + self.t.rp);
                outcome = RowOutcome::Conflict;
            } else {
                act_from = act_from.max(from);
            }
        }
        if !fits(act_from) {
            return None;
        }
        loop {
            let act = self.place_act(rank, group, act_from);
            let cas = self.place_cas(rank, group, write, act + self.t.rcd);
            let close_at = (act + self.t.ras).max(
                cas + if write {
                    self.t.write_to_pre
                } else {
                    self.t.rtp
                },
            );
            let deadline = self.refresh_deadline(rank, act);
            if close_at > deadline {
                // Cannot finish before the refresh: try after it.
                act_from = deadline + self.t.rp + self.t.rfc;
                continue;
            }
            if let Some(n) = next_act {
                if close_at + self.t.rp > n || act + self.t.rc > n {
                    return None;
                }
            }
            if act >= closes_by_refresh {
                // The refresh closed the previous row before this ACTIVATE.
                outcome = RowOutcome::Empty;
            }
            return Some(Plan {
                bank,
                row,
                write,
                slot: Slot::Open(after.map_or(0, |j| j + 1)),
                act: Some(act),
                cas,
                pre_earliest: close_at,
                outcome,
            });
        }
    }

    /// Earliest ACTIVATE tick at or after `from` in `rank`, bank group `group`: outside refresh
    /// blackouts, tRRD_S/L from every other ACTIVATE, at most four in any tFAW.
    fn place_act(&self, rank: usize, group: u16, from: u64) -> u64 {
        let acts = &self.acts[rank];
        let t = &self.t;
        let mut a = from;
        // `a` only moves later, so the first ACTIVATE in its window only moves later too.
        let mut start = acts.partition_point_from_back(|x| x.tick < a.saturating_sub(t.act_window));
        'search: loop {
            a = self.after_blackout(rank, a);
            let lo = a.saturating_sub(t.act_window);
            while acts.get(start).is_some_and(|x| x.tick < lo) {
                start += 1;
            }
            // tRRD, both ways.
            for x in acts[start..].iter() {
                if x.tick > a + t.act_window {
                    break;
                }
                let rrd = if x.group == group { t.rrd_l } else { t.rrd_s };
                if x.tick.abs_diff(a) < rrd {
                    a = x.tick + rrd;
                    continue 'search;
                }
            }
            // tFAW: every five consecutive ACTIVATEs with `a` among them span at least tFAW.
            // At most four ACTIVATEs of a rank fall in any tFAW (every placement checks it), so
            // `a` and its neighbours within tFAW either side are at most nine: the cap never
            // binds, and a small array is cheap to clear (a larger one took a `memset` call).
            let mut near = [0u64; 16];
            let mut n = 0;
            let mut at = None;
            for x in acts[start..].iter() {
                if x.tick >= a + t.faw || n + 1 >= near.len() {
                    break;
                }
                if x.tick + t.faw <= a {
                    continue;
                }
                if at.is_none() && x.tick > a {
                    at = Some(n);
                    near[n] = a;
                    n += 1;
                }
                near[n] = x.tick;
                n += 1;
            }
            let at = at.unwrap_or_else(|| {
                near[n] = a;
                n += 1;
                n - 1
            });
            for i in at.saturating_sub(4)..=at {
                if i + 4 < n && near[i + 4] - near[i] < t.faw {
                    a = if i + 4 == at {
                        near[i] + t.faw
                    } else {
                        near[i + 4]
                    };
                    continue 'search;
                }
            }
            return a;
        }
    }

    /// Earliest READ (or WRITE) tick at or after `from` in `rank`, bank group `group`: tCCD,
    /// READ-to-WRITE and WRITE-to-READ against the rank's column commands both ways, and
    /// bursts of other ranks apart by `t_cs` on the shared data bus.
    fn place_cas(&self, rank: usize, group: u16, write: bool, from: u64) -> u64 {
        let t = &self.t;
        let rank = rank as u16;
        let mut c = from;
        // `c` only moves later, so the first column command in its window only moves later too.
        let mut start = self
            .cas
            .partition_point_from_back(|x| x.tick < c.saturating_sub(t.cas_window));
        'search: loop {
            let lo = c.saturating_sub(t.cas_window);
            while self.cas.get(start).is_some_and(|x| x.tick < lo) {
                start += 1;
            }
            for e in self.cas[start..].iter() {
                if e.tick > c + t.cas_window {
                    break;
                }
                if e.rank == rank {
                    let same = e.group == group;
                    if e.tick <= c {
                        let gap = t.cas_gap(e.write, write, same);
                        if c - e.tick < gap {
                            c = e.tick + gap;
                            continue 'search;
                        }
                    } else if e.tick - c < t.cas_gap(write, e.write, same) {
                        c = e.tick + t.cas_gap(e.write, write, same);
                        continue 'search;
                    }
                } else {
                    let ours = c + t.data_delay(write);
                    let theirs = e.tick + t.data_delay(e.write);
                    let apart = t.bl + t.cs;
                    if ours.abs_diff(theirs) < apart {
                        c = theirs + apart - t.data_delay(write);
                        continue 'search;
                    }
                }
            }
            return c;
        }
    }

    /// Make a placement from [`Channel::plan`] (planned against the current state).
    pub fn commit(&mut self, p: &Plan) {
        let (rank, group) = self.rank_group(p.bank);
        let sessions = &mut self.sessions[p.bank];
        match p.slot {
            Slot::Join(j) => sessions[j].pre_earliest = p.pre_earliest,
            Slot::Open(i) => sessions.insert(
                i,
                Session {
                    row: p.row,
                    act: p.act.expect("a new session has an ACTIVATE"),
                    pre_earliest: p.pre_earliest,
                },
            ),
        }
        // The sessions before the one open at `cutoff` are stale: no placement looks at them
        // (placements start at or after `cutoff`).
        while sessions.len() >= 2 && sessions[1].act <= self.cutoff {
            sessions.pop_front();
        }
        if let Some(a) = p.act {
            let acts = &mut self.acts[rank];
            let i = acts.partition_point_from_back(|x| x.tick <= a);
            acts.insert(i, Act { tick: a, group });
        }
        let i = self.cas.partition_point_from_back(|x| x.tick <= p.cas);
        self.cas.insert(
            i,
            Cas {
                tick: p.cas,
                rank: rank as u16,
                group,
                write: p.write,
            },
        );
        #[cfg(test)]
        {
            if let Some(a) = p.act {
                self.log.push(LoggedCommand {
                    tick: a,
                    bank: p.bank,
                    row: p.row,
                    column: None,
                });
            }
            self.log.push(LoggedCommand {
                tick: p.cas,
                bank: p.bank,
                row: p.row,
                column: Some(p.write),
            });
        }
    }

    /// Forget what no placement at or after `cutoff` (never decreasing) can depend on: column
    /// commands and ACTIVATEs further back than their constraint windows. (A bank's sessions
    /// before the one open at `cutoff` are dropped by [`Channel::commit`], when it adds one:
    /// that bank's sessions are then in the host's cache, and a bank holds no more than its
    /// last commit left.)
    pub fn prune(&mut self, cutoff: u64) {
        let t = self.t;
        self.cutoff = cutoff;
        self.cas
            .drop_front_while(|x| x.tick + t.cas_window < cutoff);
        for acts in &mut self.acts {
            acts.drop_front_while(|x| x.tick + t.act_window < cutoff);
        }
    }

    /// Entries held (commands and sessions), to check that memory stays bounded.
    pub fn retained(&self) -> usize {
        self.cas.len()
            + self.acts.iter().map(|a| a.len()).sum::<usize>()
            + self.sessions.iter().map(|s| s.len()).sum::<usize>()
    }
}
