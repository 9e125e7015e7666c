//! The result record of a run (see `docs/results.md`): a one-core run's, and a machine's
//! (totals over cores, each core's entry, each process's).
//!
//! Owns the `impl Sim` methods that assemble it from every part's statistics. May call: `mem`,
//! `os`, `designs`, `simd` (the build's path), `stats` (and its `VERSION`), `timing`, `virt`
//! (through the memory system), and the engine's `counters` (the sections it writes), `machine`
//! and `sim`. Contract: a record is a pure function of the run's state; wall-clock
//! figures (`sim.*`) aside, it does not depend on the host or on how the run was chunked.

use super::{Runner, Sim};
use crate::designs::Design;
use crate::engine::counters::{
    core_record, count_keys, fix_fractions, sum_into, tlb_and_walk_sections,
};
use crate::engine::machine::INTERLEAVE_REFS;
use crate::mem::PrivateCaches;
use crate::stats::{Stats, StatsExt};
use crate::timing::CoreModel;
use serde_json::Value;

impl<D: Design> Sim<D> {
    /// The record of a one-process, one-core run (see `docs/results.md`).
    pub(super) fn record_one_core(&self, wall_seconds: f64) -> Value {
        let c = &self.c;
        let mut r = Stats::new();
        r.put_str("design", &self.cfg.sim.design);
        let workload = self.source.name();
        r.put_str("workload", &workload);
        if let Some(t) = self.source.describe() {
            r.insert("trace".into(), t);
        }
        r.put_u64("seed", self.cfg.sim.seed);
        r.put_str("version", crate::stats::VERSION);
        r.put_u64(
            "model_version",
            crate::stats::model_version_of(1, 1, &self.cfg.sim.design, &workload) as u64,
        );
        count_keys(&mut r, c);
        r.insert(
            "ended_by".into(),
            Value::from(if self.truncated_by_refs {
                "refs_limit"
            } else {
                "end_of_trace"
            }),
        );
        tlb_and_walk_sections(&mut r, c, &self.mmu, D::PERFECT_TLB);
        self.timing.stats(
            &self.cfg.timing,
            c.instructions,
            // Zeroing and direct compaction are OS time of the fault that allocates (Linux
            // clears a page, or a huge page, in the fault path), counted once with a hashed
            // design's table allocations (`fault_mark`).
            self.fault_mark()
                // Nested runs: the host's OS time (virt/).
                + self.mem.nested.as_ref().map_or(0, |h| {
                    h.os_cycles(self.cfg.timing.page_fault_cycles)
                }),
            self.core_model().map(CoreModel::snapshot).as_deref(),
            &mut r,
        );
        {
            let fp = self.design.footprint();
            let p = r.section("page_table");
            p.put_u64("bytes", fp.bytes);
            p.put_u64("peak_bytes", fp.peak_bytes);
            p.put_u64("max_contiguous_bytes", fp.max_contiguous_bytes);
        }
        {
            let o = r.section("oracle");
            o.put_u64("checked", c.oracle_checked);
            // A mismatch aborts the run, so a finished record always carries 0.
            o.put_u64("mismatches", 0);
            o.insert("enabled".into(), Value::from(self.cfg.sim.oracle));
        }
        self.mem.stats(&mut r);
        if let Some(core) = self.core_model() {
            let cycles = r["timing"]["cycles"].as_f64().unwrap_or(0.0);
            // Not settled: the controller as the run has driven it (its counts only grow).
            core.snapshot()
                .accounted()
                .dram_stats(cycles, r.section("dram"));
        }
        self.os.stats(&mut r);
        self.design.stats(&mut r);
        // Nested runs only: the `virt` section (virt/).
        if let Some(host) = self.mem.nested.as_ref() {
            host.stats(&mut r);
        }
        {
            let s = r.section("sim");
            s.put_f64("wall_seconds", wall_seconds);
            s.put_str("simd", crate::simd::PATH);
            s.put_f64(
                "refs_per_sec",
                if wall_seconds > 0.0 {
                    c.refs as f64 / wall_seconds
                } else {
                    0.0
                },
            );
            s.insert(
                "timing_thread".into(),
                Value::from(self.core_model().is_some_and(CoreModel::threaded)),
            );
        }
        r.insert("config".into(), self.cfg.to_json());
        Value::Object(r)
    }

    /// The record of a multi-core or multi-process run (see `docs/results.md`): the one-core
    /// keys hold totals, `cores` each core's figures, `processes` each process's.
    pub(super) fn record_machine(&self, wall_seconds: f64) -> Value {
        let m = self.machine.as_deref().expect("a machine");
        let cfg = &self.cfg;
        let n = m.sched.len();
        let mut per_core: Vec<Stats> = Vec::with_capacity(n);
        let mut cycles = Vec::with_capacity(n);
        for k in 0..n {
            let s = &m.sched[k];
            let mut rec = if k == m.running {
                core_record(
                    cfg,
                    D::PERFECT_TLB,
                    &self.c,
                    &self.mmu,
                    &self.timing,
                    self.core.as_ref().map(CoreModel::snapshot).as_deref(),
                    self.mem.private(),
                    s.ipi_cycles,
                )
            } else {
                let st = &m.cores[k];
                core_record(
                    cfg,
                    D::PERFECT_TLB,
                    &st.c,
                    &st.mmu,
                    &st.timing,
                    st.core.as_ref().map(CoreModel::snapshot).as_deref(),
                    &st.mem,
                    s.ipi_cycles,
                )
            };
            cycles.push(rec["timing"]["cycles"].as_f64().unwrap_or(0.0));
            {
                let w = rec.section("switch");
                w.put_u64("count", s.switches);
                w.put_u64("windows", s.windows);
                w.put_u64("window_refs", s.window.refs);
                w.put_u64("tlb_misses_in_window", s.window.tlb_l1_misses);
                w.put_u64("walks_in_window", s.window.walks);
                w.put_u64("walk_mem_accesses_in_window", s.window.walk_mem_accesses);
                w.put_u64("mmu_cache_misses_in_window", s.window.mmu_cache_misses);
            }
            {
                let sd = rec.section("shootdown");
                sd.put_u64("ipis_sent", s.ipis_sent);
                sd.put_u64("ipis_received", s.ipis_received);
                sd.put_u64("ipi_cycles", s.ipi_cycles);
            }
            per_core.push(rec);
        }
        // Totals: sums over cores, fractions recomputed (see `fix_fractions`).
        let mut total = Value::Object(Stats::new());
        for rec in &per_core {
            sum_into(&mut total, &Value::Object(rec.clone()));
        }
        let Value::Object(mut total) = total else {
            unreachable!("an object")
        };
        let instructions = total["instructions"].as_u64().unwrap_or(0);
        fix_fractions(&mut total, instructions, n);
        {
            // The machine's time is its slowest core's; IPC is the machine's throughput.
            let max_cycles = cycles.iter().cloned().fold(0.0, f64::max);
            let sum_cycles: f64 = cycles.iter().sum();
            let exposed: f64 = per_core
                .iter()
                .zip(&cycles)
                .map(|(r, c)| r["timing"]["mmu_overhead_share"].as_f64().unwrap_or(0.0) * c)
                .sum();
            let os_cycles =
                total["timing"]["os_cycles"].as_f64().unwrap_or(0.0) + self.fault_mark() as f64;
            let t = total.section("timing");
            t.put_f64("cycles", max_cycles);
            t.put_f64("os_cycles", os_cycles);
            // The OS clock when it was last read (daemons, the design's OS work; 0 when nothing
            // read it): the latest time any core had reached then (`Sim::os_now`).
            t.put_u64("os_clock_cycles", m.os_now);
            t.put_f64(
                "ipc",
                if max_cycles > 0.0 {
                    instructions as f64 / max_cycles
                } else {
                    0.0
                },
            );
            t.put_f64(
                "mmu_overhead_share",
                if sum_cycles > 0.0 {
                    exposed / sum_cycles
                } else {
                    0.0
                },
            );
        }
        let installed = m.current_proc(m.running);
        let mut procs = Vec::with_capacity(m.procs.len());
        let mut names = Vec::with_capacity(m.procs.len());
        let mut all_by_refs = true;
        for (j, p) in m.procs.iter().enumerate() {
            let (name, trace, asid, refs, truncated) = if j == installed {
                (
                    self.source.name(),
                    self.source.describe(),
                    self.asid,
                    if m.threaded() {
                        self.refs()
                    } else {
                        self.c.refs - self.proc_base
                    },
                    self.truncated_by_refs,
                )
            } else {
                (
                    p.source.name(),
                    p.source.describe(),
                    p.asid,
                    p.refs,
                    p.truncated_by_refs,
                )
            };
            all_by_refs &= truncated;
            let mut e = Stats::new();
            e.put_u64("process", j as u64);
            e.put_str("workload", &name);
            e.put_u64("core", p.core as u64);
            e.put_u64("asid", asid as u64);
            e.put_u64("refs", refs);
            if let Some(t) = trace {
                e.insert("trace".into(), t);
            }
            e.put_str(
                "ended_by",
                if truncated {
                    "refs_limit"
                } else if m.proc_done[j] || (j == installed && self.finished) {
                    "end_of_trace"
                } else {
                    "running"
                },
            );
            names.push(name);
            procs.push(Value::Object(e));
        }
        let mut r = Stats::new();
        r.put_str("design", &cfg.sim.design);
        let workload = names.join(",");
        r.put_str("workload", &workload);
        r.put_u64("seed", cfg.sim.seed);
        r.put_str("version", crate::stats::VERSION);
        r.put_u64(
            "model_version",
            crate::stats::model_version_of(
                cfg.sim.cores,
                m.procs.len() as u64,
                &cfg.sim.design,
                &workload,
            ) as u64,
        );
        for (k, v) in total {
            r.insert(k, v);
        }
        r.insert(
            "ended_by".into(),
            Value::from(if all_by_refs {
                "refs_limit"
            } else {
                "end_of_trace"
            }),
        );
        {
            let fp = self.design.footprint();
            let p = r.section("page_table");
            p.put_u64("bytes", fp.bytes);
            p.put_u64("peak_bytes", fp.peak_bytes);
            p.put_u64("max_contiguous_bytes", fp.max_contiguous_bytes);
        }
        {
            let o = r.section("oracle");
            o.put_u64("mismatches", 0);
            o.insert("enabled".into(), Value::from(cfg.sim.oracle));
        }
        {
            // The LLC's page-table share averaged over every core's samples.
            let others: Vec<&PrivateCaches> = m
                .cores
                .iter()
                .enumerate()
                .filter(|(k, _)| *k != m.running)
                .map(|(_, st)| &st.mem)
                .collect();
            self.mem.shared_stats(&mut r, &others);
        }
        // The cores share one queued DRAM controller: any core's handle reads it (the running
        // one's, live, every core's requests so far in it).
        if let Some(core) = self.core.as_ref() {
            let cycles = r["timing"]["cycles"].as_f64().unwrap_or(0.0);
            core.snapshot()
                .accounted()
                .dram_stats(cycles, r.section("dram"));
        }
        self.os.stats(&mut r);
        self.design.stats(&mut r);
        {
            let s = r.section("machine");
            s.put_u64("cores", n as u64);
            s.put_u64("processes", m.procs.len() as u64);
            s.put_u64("interleave_refs", INTERLEAVE_REFS);
            s.put_u64("quantum_cycles", m.quantum_cycles);
        }
        {
            let w = r.section("switch");
            w.put_u64("window_refs_configured", cfg.sim.switch_window_refs);
            w.insert(
                "flush_tlb_on_switch".into(),
                Value::from(cfg.sim.flush_tlb_on_switch),
            );
        }
        r.section("shootdown").put_u64("rounds", m.shootdown_rounds);
        r.insert(
            "cores".into(),
            Value::Array(per_core.into_iter().map(Value::Object).collect()),
        );
        r.insert("processes".into(), Value::Array(procs));
        {
            let refs = r["refs"].as_u64().unwrap_or(0);
            let s = r.section("sim");
            s.put_f64("wall_seconds", wall_seconds);
            s.put_str("simd", crate::simd::PATH);
            s.put_f64(
                "refs_per_sec",
                if wall_seconds > 0.0 {
                    refs as f64 / wall_seconds
                } else {
                    0.0
                },
            );
            // A machine's cores stay on the engine's thread (see `CoreModel`).
            s.insert("timing_thread".into(), Value::from(false));
        }
        r.insert("config".into(), cfg.to_json());
        Value::Object(r)
    }
}
