//! Python bindings of the xlat core (module `xlat._core`). Bindings only: no simulation logic
//! lives here; every error of the core becomes an `xlat._core.XlatError` carrying its message.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::io::Read;
use xlat::config::{Config, Resolved};
use xlat::trace::lackey::LackeyDecoder;
use xlat::trace::native::NativeWriter;
use xlat::trace::vgstream::VgDecoder;

/// Large arrays on 2 MiB host pages (`xlat::host_alloc`: the simulator's page maps and page
/// tables at paper-scale footprints miss the host's TLBs on 4 KiB pages).
#[global_allocator]
static ALLOC: xlat::host_alloc::HugePageAdvising = xlat::host_alloc::HugePageAdvising;

create_exception!(
    _core,
    XlatError,
    PyException,
    "Any error reported by the xlat core."
);

fn err(e: impl std::fmt::Display) -> PyErr {
    XlatError::new_err(e.to_string())
}

/// Defaults, then the `base_layers` (`(origin, text)` pairs, e.g. a CPU preset), then the
/// profile the stack names (`sim.profile`), then the preset text, then the overrides.
fn resolve_full(
    preset_text: Option<&str>,
    preset_origin: &str,
    overrides: Vec<(String, String)>,
    base_layers: &[(String, String)],
) -> PyResult<Resolved> {
    let cpu: Vec<(&str, &str)> = base_layers
        .iter()
        .map(|(origin, text)| (origin.as_str(), text.as_str()))
        .collect();
    let presets: Vec<(&str, &str)> = preset_text
        .map(|text| (preset_origin, text))
        .into_iter()
        .collect();
    Config::resolve_stack(&cpu, &presets, &overrides).map_err(err)
}

/// [`resolve_full`]'s configuration alone.
fn resolve(
    preset_text: Option<&str>,
    preset_origin: &str,
    overrides: Vec<(String, String)>,
    base_layers: &[(String, String)],
) -> PyResult<Config> {
    Ok(resolve_full(preset_text, preset_origin, overrides, base_layers)?.config)
}

/// A profile as Python sees it: `(name, summary, paper, settings on one line, keys)`.
type ProfileRow = (String, String, String, String, Vec<String>);

/// A resolved configuration with its provenance: `(toml, [(key, source)], warnings)`.
type ResolvedRow = (String, Vec<(String, String)>, Vec<String>);

/// Each registered design's profile: `(name, summary, paper, settings on one line, keys)`.
#[pyfunction]
fn design_profiles() -> PyResult<Vec<ProfileRow>> {
    xlat::designs::REGISTRY
        .iter()
        .map(|d| {
            let p = xlat::profiles::design_profile(d.name).map_err(err)?;
            Ok((
                p.name.clone(),
                p.summary.clone(),
                p.paper.clone(),
                p.one_line(),
                p.keys(),
            ))
        })
        .collect()
}

/// The named baseline profiles: `(name, summary, paper, settings on one line)`.
#[pyfunction]
fn baseline_profiles() -> PyResult<Vec<(String, String, String, String)>> {
    xlat::profiles::BASELINES
        .iter()
        .map(|(name, text)| {
            let p = xlat::profiles::Profile::parse(name, text, None).map_err(err)?;
            Ok((
                p.name.clone(),
                p.summary.clone(),
                p.paper.clone(),
                p.one_line(),
            ))
        })
        .collect()
}

/// Registered designs as (name, summary) pairs, in registry order.
#[pyfunction]
fn designs() -> Vec<(String, String)> {
    xlat::designs::REGISTRY
        .iter()
        .map(|d| (d.name.to_string(), d.summary.to_string()))
        .collect()
}

/// Built-in workloads as (name, description) pairs.
#[pyfunction]
fn workloads() -> Vec<(String, String)> {
    xlat::workloads::WORKLOADS
        .iter()
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .collect()
}

/// Every valid configuration key (`section.field`).
#[pyfunction]
fn config_keys() -> Vec<String> {
    Config::keys()
}

/// Resolve defaults + base layers + preset + overrides and return the configuration as TOML
/// text. `base_layers` are `(origin, text)` pairs applied beneath the preset (a CPU preset).
#[pyfunction]
#[pyo3(signature = (preset_text, preset_origin, overrides, base_layers=Vec::new()))]
fn resolve_config(
    preset_text: Option<&str>,
    preset_origin: &str,
    overrides: Vec<(String, String)>,
    base_layers: Vec<(String, String)>,
) -> PyResult<String> {
    Ok(resolve(preset_text, preset_origin, overrides, &base_layers)?.to_toml())
}

/// [`resolve_config`] with provenance: `(TOML text, [(key, source)], [warning])`, where the
/// sources name, for every key that differs from the built-in default, the layer that set it
/// (`cpu:<name>`, `profile:<name>`, `preset:<name>`, `set`, `derived`), and the warnings name the
/// profile settings that a preset or override replaced.
#[pyfunction]
#[pyo3(signature = (preset_text, preset_origin, overrides, base_layers=Vec::new()))]
fn resolve_config_sources(
    preset_text: Option<&str>,
    preset_origin: &str,
    overrides: Vec<(String, String)>,
    base_layers: Vec<(String, String)>,
) -> PyResult<ResolvedRow> {
    let r = resolve_full(preset_text, preset_origin, overrides, &base_layers)?;
    Ok((r.config.to_toml(), r.sources, r.warnings))
}

/// The core version.
#[pyfunction]
fn version() -> &'static str {
    xlat::VERSION
}

/// The simulation model's version (`xlat::MODEL_VERSION`): records of one model version agree.
#[pyfunction]
fn model_version() -> u32 {
    xlat::MODEL_VERSION
}

/// The model version of a run of `cores` cores and `processes` processes of design `design`
/// on `workload` (`xlat::model_version_of`): what its record's `model_version` will be.
#[pyfunction]
fn model_version_of(cores: u32, processes: u64, design: &str, workload: &str) -> u32 {
    xlat::model_version_of(cores, processes, design, workload)
}

/// The model version a build of model version `version` gave such a run
/// (`xlat::model_version_as_of`).
#[pyfunction]
fn model_version_as_of(
    cores: u32,
    processes: u64,
    design: &str,
    workload: &str,
    version: u32,
) -> u32 {
    xlat::model_version_as_of(cores, processes, design, workload, version)
}

fn open_trace(path: &str, format: Option<&str>) -> PyResult<Box<dyn xlat::trace::EventSource>> {
    let format = xlat::trace::TraceFormat::parse(format.unwrap_or("auto")).map_err(err)?;
    xlat::trace::open(path, format).map_err(err)
}

/// Summarize a trace file (counts, instructions, footprint, VMAs, read/write mix) as JSON text:
/// the summary stored in a native trace (constant time, `"summary_from": "trailer"`), else a
/// scan of the whole file (`"summary_from": "scan"`).
#[pyfunction]
#[pyo3(signature = (path, trace_format=None))]
fn trace_info(py: Python<'_>, path: &str, trace_format: Option<&str>) -> PyResult<String> {
    if let Some(v) = stored_summary(path, trace_format)? {
        return Ok(v);
    }
    py.allow_threads(|| scan_summary(path, trace_format, &TaskProgress::default()))
        .map_err(err)
}

/// The stored summary of a native trace as JSON text (with its `trace` section), read in
/// constant time; None when the trace has none (old recordings, ChampSim: scan it).
#[pyfunction]
#[pyo3(signature = (path, trace_format=None))]
fn trace_stored_summary(path: &str, trace_format: Option<&str>) -> PyResult<Option<String>> {
    stored_summary(path, trace_format)
}

fn stored_summary(path: &str, trace_format: Option<&str>) -> PyResult<Option<String>> {
    let format = xlat::trace::TraceFormat::parse(trace_format.unwrap_or("auto")).map_err(err)?;
    if matches!(format, Some(f) if f != xlat::trace::TraceFormat::Native) {
        return Ok(None);
    }
    match xlat::trace::info::stored_summary(path).map_err(err)? {
        Some(v) => Ok(Some(serde_json::to_string(&v).map_err(err)?)),
        None => Ok(None),
    }
}

/// Progress of a background task: work done and the total (0 = unknown), in `unit`s.
#[derive(Default)]
struct TaskProgress {
    done: std::sync::atomic::AtomicU64,
    total: std::sync::atomic::AtomicU64,
    verify: xlat::trace::native::VerifyProgress,
}

fn scan_summary(
    path: &str,
    trace_format: Option<&str>,
    progress: &TaskProgress,
) -> Result<String, String> {
    use std::sync::atomic::Ordering::Relaxed;
    let format = xlat::trace::TraceFormat::parse(trace_format.unwrap_or("auto"))?;
    progress
        .total
        .store(xlat::trace::info::total_events(path).unwrap_or(0), Relaxed);
    let mut src = xlat::trace::open(path, format).map_err(|e| e.to_string())?;
    let mut scan = xlat::trace::info::Scan::new();
    while !scan
        .step(src.as_mut(), 1 << 20)
        .map_err(|e| e.to_string())?
    {
        progress.done.store(scan.summary().events(), Relaxed);
    }
    progress.done.store(scan.summary().events(), Relaxed);
    let mut v = scan.summary().to_json();
    if let Some(d) = src.describe() {
        v["trace"] = d;
    }
    v["summary_from"] = "scan".into();
    serde_json::to_string(&v).map_err(|e| e.to_string())
}

/// A trace scan or verification running on its own threads: `wait(seconds)` until it returns
/// True, reading `progress` meanwhile, then `result()` (JSON text, or XlatError).
#[pyclass]
struct TraceTask {
    progress: std::sync::Arc<TaskProgress>,
    handle: Option<std::thread::JoinHandle<Result<String, String>>>,
    result: Option<Result<String, String>>,
    unit: &'static str,
}

#[pymethods]
impl TraceTask {
    /// Summarize the trace by reading it whole (for traces without a stored summary).
    #[staticmethod]
    #[pyo3(signature = (path, trace_format=None))]
    fn scan(path: String, trace_format: Option<String>) -> Self {
        let progress = std::sync::Arc::new(TaskProgress::default());
        let p = progress.clone();
        let handle = std::thread::spawn(move || scan_summary(&path, trace_format.as_deref(), &p));
        TraceTask {
            progress,
            handle: Some(handle),
            result: None,
            unit: "events",
        }
    }

    /// Check every chunk of a native trace on `workers` threads besides the reading one
    /// (`xlat trace info --verify`); the result is the verification report as JSON text.
    #[staticmethod]
    #[pyo3(signature = (path, workers=2))]
    fn verify(path: String, workers: usize) -> Self {
        let progress = std::sync::Arc::new(TaskProgress::default());
        let p = progress.clone();
        if let Ok(m) = std::fs::metadata(&path) {
            progress
                .total
                .store(m.len(), std::sync::atomic::Ordering::Relaxed);
        }
        let handle = std::thread::spawn(move || {
            let v =
                xlat::trace::info::verify(&path, workers, &p.verify).map_err(|e| e.to_string())?;
            serde_json::to_string(&v).map_err(|e| e.to_string())
        });
        TraceTask {
            progress,
            handle: Some(handle),
            result: None,
            unit: "bytes",
        }
    }

    /// Wait up to `seconds` for the task; True when it has finished.
    fn wait(&mut self, py: Python<'_>, seconds: f64) -> bool {
        if self.result.is_some() {
            return true;
        }
        let deadline =
            std::time::Instant::now() + std::time::Duration::from_secs_f64(seconds.max(0.0));
        let handle = self.handle.as_ref().expect("a handle until finished");
        py.allow_threads(|| {
            while !handle.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        if handle.is_finished() {
            let h = self.handle.take().expect("handle");
            self.result = Some(
                h.join()
                    .unwrap_or_else(|_| Err("internal error: the task panicked".into())),
            );
            return true;
        }
        false
    }

    /// `(done, total, unit)`: events summarized (total from the end-of-trace record, 0 when
    /// unknown) or bytes verified (total: the file's length).
    #[getter]
    fn progress(&self) -> (u64, u64, &'static str) {
        use std::sync::atomic::Ordering::Relaxed;
        let done = if self.unit == "bytes" {
            self.progress.verify.bytes.load(Relaxed)
        } else {
            self.progress.done.load(Relaxed)
        };
        (done, self.progress.total.load(Relaxed), self.unit)
    }

    /// The task's JSON result (after `wait` returned True); raises XlatError on failure.
    fn result(&self) -> PyResult<String> {
        match &self.result {
            None => Err(err(
                "the task has not finished (call wait until it returns True)",
            )),
            Some(Ok(s)) => Ok(s.clone()),
            Some(Err(e)) => Err(err(e)),
        }
    }
}

/// Converts the xlat Valgrind tool's record stream (read from `input_path`, a pipe) into a
/// native trace at `out_path`, while the recorded program runs.
#[pyclass(unsendable)]
struct Recorder {
    input: Option<std::fs::File>,
    writer: Option<NativeWriter<std::io::BufWriter<std::fs::File>>>,
    decoder: VgDecoder,
    lackey: Option<LackeyDecoder>,
    out_path: String,
    buf: Vec<u8>,
    refs: u64,
}

#[pymethods]
impl Recorder {
    #[new]
    #[pyo3(signature = (input_path, out_path, meta_json, zstd_level=3, lackey=false))]
    fn new(
        input_path: &str,
        out_path: &str,
        meta_json: &str,
        zstd_level: i32,
        lackey: bool,
    ) -> PyResult<Self> {
        let meta: serde_json::Value = serde_json::from_str(meta_json).map_err(err)?;
        let out = std::fs::File::create(out_path).map_err(|e| err(format!("{out_path}: {e}")))?;
        let writer = NativeWriter::with_meta_room(
            std::io::BufWriter::with_capacity(1 << 20, out),
            &meta,
            zstd_level,
            512,
        )
        // Compression on a second thread: the converting thread then keeps up with valgrind
        // (docs/performance.md, "Recording").
        .and_then(NativeWriter::compress_in_background)
        .map_err(|e| err(format!("{out_path}: {e}")))?;
        let input =
            std::fs::File::open(input_path).map_err(|e| err(format!("{input_path}: {e}")))?;
        Ok(Recorder {
            input: Some(input),
            writer: Some(writer),
            decoder: VgDecoder::new(),
            lackey: lackey.then(LackeyDecoder::new),
            out_path: out_path.to_string(),
            buf: vec![0u8; 1 << 20],
            refs: 0,
        })
    }

    /// Convert up to `max_bytes` more of the stream; True at its end (the tool closed it).
    fn pump(&mut self, py: Python<'_>, max_bytes: u64) -> PyResult<bool> {
        let (Some(input), Some(writer)) = (self.input.as_mut(), self.writer.as_mut()) else {
            return Ok(true);
        };
        let buf = &mut self.buf;
        let decoder = &mut self.decoder;
        let lackey = &mut self.lackey;
        let out_path = &self.out_path;
        let r = py.allow_threads(|| -> Result<bool, String> {
            let mut done = 0u64;
            while done < max_bytes {
                let n = match input.read(buf) {
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(format!("reading the recorder stream: {e}")),
                };
                if n == 0 {
                    return Ok(true);
                }
                done += n as u64;
                match lackey.as_mut() {
                    Some(l) => l.push(&buf[..n], |ev| writer.write(&ev)),
                    None => decoder.push(&buf[..n], |ev| writer.write(&ev)),
                }
                .map_err(|e| format!("{out_path}: {e}"))?;
            }
            Ok(false)
        });
        self.refs = match &self.lackey {
            Some(l) => l.accesses(),
            None => self.decoder.counts().accesses,
        };
        r.map_err(err)
    }

    /// References converted so far.
    #[getter]
    fn refs(&self) -> u64 {
        self.refs
    }

    /// Finish the trace: final exit event, end-of-trace record, and `meta_json` (now with the
    /// program's exit status) written into the header. Returns the counts as JSON text.
    fn finish(&mut self, meta_json: &str) -> PyResult<String> {
        let mut writer = self
            .writer
            .take()
            .ok_or_else(|| err("recorder already finished"))?;
        self.input = None;
        let mut counts = self
            .decoder
            .finish(|ev| writer.write(&ev))
            .map_err(|e| err(format!("{}: {e}", self.out_path)))?;
        let mut inferred_pages = 0;
        if let Some(l) = self.lackey.as_mut() {
            l.finish(|ev| writer.write(&ev))
                .map_err(|e| err(format!("{}: {e}", self.out_path)))?;
            counts.images = 1;
            counts.syscalls = l.syscalls();
            inferred_pages = l.inferred_pages();
        }
        let (_, totals) = writer
            .finish()
            .map_err(|e| err(format!("{}: {e}", self.out_path)))?;
        let mut meta: serde_json::Value = serde_json::from_str(meta_json).map_err(err)?;
        if self.lackey.is_some() {
            // Lackey does not report the start-up address space: those pages were inferred.
            meta["inferred_pages"] = inferred_pages.into();
        }
        xlat::trace::native::rewrite_meta(&self.out_path, &meta)
            .map_err(|e| err(format!("{}: {e}", self.out_path)))?;
        serde_json::to_string(&serde_json::json!({
            "events": totals.records,
            "refs": totals.accesses,
            "instructions": totals.instructions,
            "chunks": totals.chunks,
            "images": counts.images,
            "syscalls": counts.syscalls,
            "stream_bytes": counts.bytes,
            "tool_exit_code": counts.exit_code,
            "inferred_pages": inferred_pages,
        }))
        .map_err(err)
    }
}

/// An access's kind as the bindings name it.
fn kind_name(kind: xlat::trace::AccessKind) -> &'static str {
    match kind {
        xlat::trace::AccessKind::Load => "load",
        xlat::trace::AccessKind::Store => "store",
        xlat::trace::AccessKind::IFetch => "ifetch",
    }
}

/// `pick(kind, address, size, instrs, dep)` of each access of a trace whose address is in
/// `[lo, hi)`, in order, at most `limit`.
fn accesses_in<T: Send>(
    py: Python<'_>,
    path: &str,
    (lo, hi, limit): (u64, u64, usize),
    trace_format: Option<&str>,
    pick: impl Fn(&'static str, u64, u8, u32, u16) -> T + Send + Sync,
) -> PyResult<Vec<T>> {
    let mut src = open_trace(path, trace_format)?;
    py.allow_threads(|| {
        let mut out = Vec::new();
        let mut buf = Vec::with_capacity(4096);
        loop {
            buf.clear();
            if src.fill(&mut buf, 4096)? == 0 {
                return Ok(out);
            }
            for ev in &buf {
                if let xlat::trace::Event::Access {
                    kind,
                    va,
                    size,
                    instrs,
                    dep,
                } = *ev
                {
                    if va.0 >= lo && va.0 < hi && out.len() < limit {
                        out.push(pick(kind_name(kind), va.0, size, instrs, dep));
                    }
                }
            }
        }
    })
    .map_err(|e: xlat::trace::SourceError| err(e))
}

/// The accesses of a trace whose address is in `[lo, hi)`, in order, as
/// `(kind, address, size, instrs)` with kind `load`, `store` or `ifetch` (at most `limit`).
#[pyfunction]
#[pyo3(signature = (path, lo, hi, limit=1_000_000, trace_format=None))]
fn trace_accesses(
    py: Python<'_>,
    path: &str,
    lo: u64,
    hi: u64,
    limit: usize,
    trace_format: Option<&str>,
) -> PyResult<Vec<(&'static str, u64, u8, u32)>> {
    accesses_in(
        py,
        path,
        (lo, hi, limit),
        trace_format,
        |k, va, size, instrs, _| (k, va, size, instrs),
    )
}

/// The accesses of a trace whose address is in `[lo, hi)`, in order, as `(kind, address, dep)`
/// (`dep`: how many accesses back is the load the address depends on, 0 = none or unknown; at
/// most `limit`).
#[pyfunction]
#[pyo3(signature = (path, lo, hi, limit=1_000_000, trace_format=None))]
fn trace_deps(
    py: Python<'_>,
    path: &str,
    lo: u64,
    hi: u64,
    limit: usize,
    trace_format: Option<&str>,
) -> PyResult<Vec<(&'static str, u64, u16)>> {
    accesses_in(
        py,
        path,
        (lo, hi, limit),
        trace_format,
        |k, va, _, _, dep| (k, va, dep),
    )
}

/// The trace at `trace`, or else the configured workload's first process producing
/// `workload_refs` references.
fn trace_or_workload(
    cfg: &Config,
    trace: Option<&str>,
    trace_format: Option<&str>,
    workload_refs: u64,
) -> PyResult<Box<dyn xlat::trace::EventSource>> {
    match trace {
        Some(path) => open_trace(path, trace_format),
        None => Ok(
            xlat::workloads::create_all(&cfg.workload, workload_refs, cfg.sim.seed)
                .map_err(err)?
                .remove(0),
        ),
    }
}

/// The pages touched by a trace, or by the configured workload (first process, its
/// `sim.refs` references), as runs `(first 4 KiB VPN, pages)` sorted by VPN: the input of
/// `xlat analyze gaps` (LVM §3.1).
#[pyfunction]
#[pyo3(signature = (overrides, trace=None, trace_format=None))]
fn touched_page_runs(
    py: Python<'_>,
    overrides: Vec<(String, String)>,
    trace: Option<&str>,
    trace_format: Option<&str>,
) -> PyResult<Vec<(u64, u64)>> {
    let cfg = resolve(None, "", overrides, &[])?;
    let mut src = trace_or_workload(&cfg, trace, trace_format, cfg.sim.refs)?;
    let max_refs = if trace.is_some() {
        u64::MAX
    } else {
        cfg.sim.refs
    };
    py.allow_threads(|| xlat::designs::lvm::gaps::touched_runs(src.as_mut(), max_refs))
        .map_err(err)
}

/// The page heat of the configured workload (first process) or of a trace, as JSON text
/// (`xlat analyze heat`): `sim.refs` references after a warm-up of `sim.warmup_refs` ("auto":
/// the source's first-touch phase, at most `sim.refs`, as a run resolves it), with how the
/// warm-up was chosen and what the source says of its dependences.
#[pyfunction]
#[pyo3(signature = (overrides, trace=None, trace_format=None))]
fn page_heat(
    py: Python<'_>,
    overrides: Vec<(String, String)>,
    trace: Option<&str>,
    trace_format: Option<&str>,
) -> PyResult<String> {
    let cfg = resolve(None, "", overrides, &[])?;
    let mut src = trace_or_workload(&cfg, trace, trace_format, cfg.sim.simulated_refs())?;
    let (skip, why) = xlat::engine::resolve_warmup(&cfg, &mut src, &mut []);
    let dependences = match src.describe() {
        Some(d) => d["dependences"].as_str().unwrap_or("unknown").to_string(),
        None => "modelled by the generator".to_string(),
    };
    let refs = cfg.sim.refs;
    let heat = py
        .allow_threads(|| xlat::trace::heat::page_heat(src.as_mut(), skip, refs))
        .map_err(err)?;
    let mut v = serde_json::to_value(&heat).map_err(err)?;
    v["warmup_why"] = why.into();
    v["dependences"] = dependences.into();
    v["source"] = src.name().into();
    v["hot_percents"] = serde_json::json!(xlat::trace::heat::HOT_PERCENTS);
    v["dependence_distances"] = serde_json::json!(xlat::trace::heat::DEPENDENCE_DISTANCES);
    serde_json::to_string(&v).map_err(err)
}

/// The sources (a trace, several traces, or the configured workloads, one process each) and
/// the simulation over them, with the number of processes.
fn build_simulation(
    cfg: &Config,
    trace: Option<&str>,
    trace_format: Option<&str>,
    traces: Option<Vec<String>>,
) -> PyResult<(xlat::Simulation, u64)> {
    // Several workloads (a comma list) or traces (`traces`) are one process each.
    let sources = match (trace, traces) {
        (Some(path), None) => vec![open_trace(path, trace_format)?],
        (None, Some(paths)) => paths
            .iter()
            .map(|p| open_trace(p, trace_format))
            .collect::<PyResult<Vec<_>>>()?,
        (Some(_), Some(_)) => return Err(err("give trace or traces, not both")),
        (None, None) => {
            xlat::workloads::check_fits(&cfg.workload, cfg.os.phys_mem_bytes, cfg.os.swap.bytes)
                .map_err(err)?;
            xlat::workloads::create_all(&cfg.workload, cfg.sim.simulated_refs(), cfg.sim.seed)
                .map_err(err)?
        }
    };
    let processes = sources.len() as u64;
    let sim = if trace.is_some() {
        // One trace: on several cores, a multi-threaded program.
        let source = sources.into_iter().next().expect("one trace");
        xlat::Simulation::new(cfg, source).map_err(err)?
    } else {
        xlat::Simulation::with_sources(cfg, sources).map_err(err)?
    };
    Ok((sim, processes))
}

fn sources_json(sources: &[(String, String)]) -> serde_json::Value {
    serde_json::Value::Object(
        sources
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect(),
    )
}

/// A simulation in progress: `step()` until it returns True, then `record()`.
#[pyclass(unsendable)]
struct Simulation {
    inner: Option<xlat::Simulation>,
    total_refs: u64,
    /// Where each non-default setting came from (the record's `config_sources`).
    sources: Vec<(String, String)>,
    /// Profile settings a preset or override replaced (`Simulation.warnings`).
    warnings: Vec<String>,
}

#[pymethods]
impl Simulation {
    #[new]
    #[pyo3(signature = (preset_text, preset_origin, overrides, trace=None, trace_format=None, base_layers=Vec::new(), traces=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        preset_text: Option<&str>,
        preset_origin: &str,
        overrides: Vec<(String, String)>,
        trace: Option<&str>,
        trace_format: Option<&str>,
        base_layers: Vec<(String, String)>,
        traces: Option<Vec<String>>,
    ) -> PyResult<Self> {
        let resolved = resolve_full(preset_text, preset_origin, overrides, &base_layers)?;
        let cfg = resolved.config;
        // Building a workload can take long (a large graph): without the GIL, so that the
        // Python progress display can say so meanwhile; timed as `sim.setup_seconds`.
        let started = std::time::Instant::now();
        let (mut sim, processes) =
            py.allow_threads(|| build_simulation(&cfg, trace, trace_format, traces))?;
        sim.set_setup_seconds(started.elapsed().as_secs_f64());
        Ok(Simulation {
            inner: Some(sim),
            total_refs: cfg.sim.simulated_refs().saturating_mul(processes),
            sources: resolved.sources,
            warnings: resolved.warnings,
        })
    }

    /// The profile settings a preset or override replaced, one line each.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// Simulate up to `max_refs` more references; True when the run is complete.
    fn step(&mut self, py: Python<'_>, max_refs: u64) -> PyResult<bool> {
        let sim = self
            .inner
            .as_mut()
            .ok_or_else(|| err("simulation already failed"))?;
        // The GIL is released so other Python threads (progress display) keep running.
        let result = py.allow_threads(|| sim.step(max_refs));
        match result {
            Ok(done) => Ok(done),
            Err(e) => {
                self.inner = None;
                Err(err(e))
            }
        }
    }

    /// References simulated so far.
    #[getter]
    fn refs(&self) -> u64 {
        self.inner.as_ref().map_or(0, |s| s.refs())
    }

    /// The configured reference budget (`sim.warmup_refs + sim.refs` per process, times the
    /// processes).
    #[getter]
    fn total_refs(&self) -> u64 {
        self.total_refs
    }

    /// The result record as JSON text.
    fn record(&self) -> PyResult<String> {
        let sim = self
            .inner
            .as_ref()
            .ok_or_else(|| err("simulation failed; no record"))?;
        let record = sim.record();
        // `config_sources` follows `config`: where each setting that differs from the built-in
        // default came from (cpu, profile, preset, set, derived).
        let mut out = serde_json::Map::new();
        if let serde_json::Value::Object(fields) = record {
            for (k, v) in fields {
                let is_config = k == "config";
                out.insert(k, v);
                if is_config {
                    out.insert("config_sources".into(), sources_json(&self.sources));
                }
            }
        }
        serde_json::to_string(&serde_json::Value::Object(out)).map_err(err)
    }
}

/// The extension module: `xlat._core` (portable build), `xlat._core_v3` (the x86-64-v3 build,
/// feature `isa-v3`) or `xlat._core_v4` (the x86-64-v4 build, feature `isa-v4`); the package
/// loads the best one the CPU runs.
#[cfg(all(feature = "isa-v3", feature = "isa-v4"))]
compile_error!("features `isa-v3` and `isa-v4` name the module differently: enable one");

#[pymodule]
#[cfg_attr(feature = "isa-v3", pyo3(name = "_core_v3"))]
#[cfg_attr(feature = "isa-v4", pyo3(name = "_core_v4"))]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("XlatError", m.py().get_type::<XlatError>())?;
    m.add_function(wrap_pyfunction!(designs, m)?)?;
    m.add_function(wrap_pyfunction!(workloads, m)?)?;
    m.add_function(wrap_pyfunction!(config_keys, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_config, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_config_sources, m)?)?;
    m.add_function(wrap_pyfunction!(design_profiles, m)?)?;
    m.add_function(wrap_pyfunction!(baseline_profiles, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(model_version, m)?)?;
    m.add_function(wrap_pyfunction!(model_version_of, m)?)?;
    m.add_function(wrap_pyfunction!(model_version_as_of, m)?)?;
    m.add("SIMD_PATH", xlat::simd::PATH)?;
    m.add_function(wrap_pyfunction!(trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(trace_accesses, m)?)?;
    m.add_function(wrap_pyfunction!(trace_deps, m)?)?;
    m.add_function(wrap_pyfunction!(touched_page_runs, m)?)?;
    m.add_function(wrap_pyfunction!(page_heat, m)?)?;
    m.add_function(wrap_pyfunction!(trace_stored_summary, m)?)?;
    m.add_class::<TraceTask>()?;
    m.add_class::<Simulation>()?;
    m.add_class::<Recorder>()?;
    Ok(())
}
