//! Python bindings of the xlat core (module `xlat._core`). Bindings only: no simulation logic
//! lives here; every error of the core becomes an `xlat._core.XlatError` carrying its message.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use xlat::config::Config;

create_exception!(
    _core,
    XlatError,
    PyException,
    "Any error reported by the xlat core."
);

fn err(e: impl std::fmt::Display) -> PyErr {
    XlatError::new_err(e.to_string())
}

fn resolve(
    preset_text: Option<&str>,
    preset_origin: &str,
    overrides: Vec<(String, String)>,
) -> PyResult<Config> {
    Config::resolve(preset_text.map(|t| (preset_origin, t)), &overrides).map_err(err)
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

/// Resolve defaults + preset + overrides and return the configuration as TOML text.
#[pyfunction]
#[pyo3(signature = (preset_text, preset_origin, overrides))]
fn resolve_config(
    preset_text: Option<&str>,
    preset_origin: &str,
    overrides: Vec<(String, String)>,
) -> PyResult<String> {
    Ok(resolve(preset_text, preset_origin, overrides)?.to_toml())
}

/// The core version.
#[pyfunction]
fn version() -> &'static str {
    xlat::VERSION
}

/// A simulation in progress: `step()` until it returns True, then `record()`.
#[pyclass(unsendable)]
struct Simulation {
    inner: Option<xlat::Simulation>,
    total_refs: u64,
}

#[pymethods]
impl Simulation {
    #[new]
    #[pyo3(signature = (preset_text, preset_origin, overrides))]
    fn new(
        preset_text: Option<&str>,
        preset_origin: &str,
        overrides: Vec<(String, String)>,
    ) -> PyResult<Self> {
        let cfg = resolve(preset_text, preset_origin, overrides)?;
        let source =
            xlat::workloads::create(&cfg.workload, cfg.sim.refs, cfg.sim.seed).map_err(err)?;
        let sim = xlat::Simulation::new(&cfg, source).map_err(err)?;
        Ok(Simulation {
            inner: Some(sim),
            total_refs: cfg.sim.refs,
        })
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

    /// The configured reference budget (`sim.refs`).
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
        serde_json::to_string(&sim.record()).map_err(err)
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("XlatError", m.py().get_type::<XlatError>())?;
    m.add_function(wrap_pyfunction!(designs, m)?)?;
    m.add_function(wrap_pyfunction!(workloads, m)?)?;
    m.add_function(wrap_pyfunction!(config_keys, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_config, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_class::<Simulation>()?;
    Ok(())
}
