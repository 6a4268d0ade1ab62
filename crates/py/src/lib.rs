//! `tierlab._core`: the engine behind a thin Python API. The simulation runs with the
//! GIL released; every ~0.1 s it re-attaches to report progress and to notice Ctrl-C,
//! and a panic comes back as a Python exception rather than an abort.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use numpy::{IntoPyArray, PyArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use trace::{Output, PHASES, SCHEMA_VERSION, STATUS_NAMES};

/// Run a simulation of an engine-JSON model. Returns a dict with `summary` (JSON text),
/// `series`, `records` (or None), `type_names`, `status_names`, `tier_names` and `stopped_by` (the
/// exception that stopped the run early — KeyboardInterrupt or one raised by
/// `progress` — or None). `progress(fraction)` is called about every 0.1 s.
/// `controller`: the strategy of a model whose control is decided in Python (twin), an
/// object whose `decide(observation)` is called at each interval (`PyStrategy`); an
/// exception it raises stops the run and is raised here.
#[pyfunction]
#[pyo3(signature = (model_json, progress=None, controller=None))]
fn simulate<'py>(
    py: Python<'py>,
    model_json: &str,
    progress: Option<Py<PyAny>>,
    controller: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let raised = Raised::default();
    let strategy = controller.map(|c| PyStrategy::boxed(c, &raised));
    let out = detached(py, progress, "the simulation engine", |tick| {
        let mut last = Instant::now();
        sim::simulate_with(model_json, strategy, |fraction| {
            if raised.lock().expect("never poisoned").is_some() {
                return false; // the strategy raised: the run is lost, stop it now
            }
            if fraction < 1.0 && last.elapsed() < Duration::from_millis(100) {
                return true;
            }
            last = Instant::now();
            tick(&[fraction])
        })
    });
    let failed = raised.lock().expect("never poisoned").take();
    match failed {
        Some(e) => Err(e),
        None => out,
    }
}

/// Drive a live HTTP target with the load described by `config_json` (built by
/// `tierlab.live.loadgen`). Returns the same dict as `simulate`; `progress(fraction,
/// finished, failed, sent)` is called every 0.1 s, and after it `latency(buckets, sums)`:
/// per request type, the response-time histogram so far (counts per bucket of
/// `latency_bounds()`, not cumulative, +Inf last) and the sum of the response times.
#[pyfunction]
#[pyo3(signature = (config_json, progress=None, latency=None))]
fn generate_load<'py>(
    py: Python<'py>,
    config_json: &str,
    progress: Option<Py<PyAny>>,
    latency: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    detached(py, progress, "the load generator", |tick| {
        loadgen::run(config_json, |p| {
            if let Some(cb) = &latency {
                Python::attach(|py| {
                    let buckets: Vec<&[u64]> = p.latency.iter().map(|l| &l.buckets[..]).collect();
                    let sums: Vec<f64> = p.latency.iter().map(|l| l.sum).collect();
                    // A failing metrics callback loses the metrics, never the run.
                    if let Err(e) = cb.call1(py, (buckets, sums)) {
                        e.print(py);
                    }
                });
            }
            tick(&[
                p.fraction,
                p.finished as f64,
                p.failed as f64,
                p.sent as f64,
            ])
        })
    })
}

/// Serve the dispatcher proxy configured by the JSON file `config_path`
/// (crates/proxy/README.md) until SIGINT or SIGTERM, then write its summary and flush
/// its decision log — the `tierlab-proxy` binary's work, in the extension `pip install`
/// builds (`python -m tierlab.live.proxy`). Meant for a process of its own: tokio takes
/// over SIGINT and SIGTERM.
#[pyfunction]
#[pyo3(signature = (config_path, threads=None))]
fn serve_proxy(py: Python<'_>, config_path: &str, threads: Option<usize>) -> PyResult<()> {
    let config =
        proxy::Config::load(std::path::Path::new(config_path)).map_err(PyValueError::new_err)?;
    let outcome = py.detach(|| {
        catch_unwind(AssertUnwindSafe(|| {
            proxy::run_until_signal(config, threads)
        }))
    });
    match outcome {
        Ok(result) => result.map_err(PyRuntimeError::new_err),
        Err(_) => Err(PyRuntimeError::new_err(
            "the proxy failed (a bug in tierlab, please report it)",
        )),
    }
}

/// The upper bounds (seconds) of `generate_load`'s latency buckets, +Inf implicit.
#[pyfunction]
fn latency_bounds() -> Vec<f64> {
    loadgen::LATENCY_BOUNDS.to_vec()
}

/// The JSON Schema of the summary both `simulate` and `generate_load` return (JSON text).
#[pyfunction]
fn summary_schema() -> String {
    trace::summary_schema()
}

/// The JSON Schema of the model `simulate` reads (JSON text): what the Python model
/// compiler must produce.
#[pyfunction]
fn model_schema() -> String {
    sim::model::Model::schema()
}

/// Run `work` with the GIL released. Its `tick(args)` re-attaches to call
/// `progress(*args)` and to notice Ctrl-C; false tells `work` to stop. A panic comes
/// back as a Python exception rather than an abort.
fn detached<'py>(
    py: Python<'py>,
    progress: Option<Py<PyAny>>,
    what: &str,
    work: impl FnOnce(&mut dyn FnMut(&[f64]) -> bool) -> Result<Output, String> + Send,
) -> PyResult<Bound<'py, PyDict>> {
    let mut stopped_by: Option<PyErr> = None;
    let outcome = py.detach(|| {
        catch_unwind(AssertUnwindSafe(|| {
            work(&mut |args| {
                Python::attach(|py| {
                    let checked = py.check_signals().and_then(|_| match &progress {
                        Some(cb) => cb.call1(py, PyTuple::new(py, args)?).map(drop),
                        None => Ok(()),
                    });
                    checked.map_err(|e| stopped_by = Some(e)).is_ok()
                })
            })
        }))
    });
    let output = match outcome {
        Ok(Ok(out)) => out,
        Ok(Err(msg)) => return Err(PyValueError::new_err(msg)),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            return Err(PyRuntimeError::new_err(format!(
                "{what} failed (a bug in tierlab, please report it): {msg}"
            )));
        }
    };
    to_python(py, output, stopped_by)
}

fn to_python<'py>(
    py: Python<'py>,
    out: Output,
    stopped_by: Option<PyErr>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let summary = serde_json::to_string(&out.summary)
        .map_err(|e| PyRuntimeError::new_err(format!("summary: {e}")))?;
    d.set_item("summary", summary)?;
    let s = out.series;
    let series = PyDict::new(py);
    let (windows, columns) = (s.window_start.len(), s.meta.len());
    series.set_item("window_start", s.window_start.into_pyarray(py))?;
    series.set_item(
        "values",
        s.values.into_pyarray(py).reshape([windows, columns])?,
    )?;
    series.set_item(
        "tier",
        s.meta.iter().map(|m| m.tier.as_str()).collect::<Vec<_>>(),
    )?;
    series.set_item(
        "server",
        s.meta.iter().map(|m| m.server).collect::<Vec<_>>(),
    )?;
    series.set_item(
        "resource",
        s.meta
            .iter()
            .map(|m| m.resource.as_str())
            .collect::<Vec<_>>(),
    )?;
    series.set_item(
        "metric",
        s.meta.iter().map(|m| m.metric).collect::<Vec<_>>(),
    )?;
    d.set_item("series", series)?;
    match out.records {
        None => d.set_item("records", py.None())?,
        Some(r) => {
            let rec = PyDict::new(py);
            rec.set_item("id", r.id.into_pyarray(py))?;
            rec.set_item("session", r.session.into_pyarray(py))?;
            rec.set_item("type", r.rtype.into_pyarray(py))?;
            rec.set_item("status", r.status.into_pyarray(py))?;
            rec.set_item("start", r.start.into_pyarray(py))?;
            rec.set_item("end", r.end.into_pyarray(py))?;
            rec.set_item("retransmissions", r.retransmissions.into_pyarray(py))?;
            for (tier, cols) in out.tier_names.iter().zip(r.tiers) {
                rec.set_item(format!("{tier}.server"), cols.server.into_pyarray(py))?;
                rec.set_item(format!("{tier}.visits"), cols.visits.into_pyarray(py))?;
                rec.set_item(format!("{tier}.time"), cols.time.into_pyarray(py))?;
                for (name, col) in PHASES.iter().zip(cols.phases) {
                    rec.set_item(format!("{tier}.{name}"), col.into_pyarray(py))?;
                }
                rec.set_item(
                    format!("{tier}.db_requests"),
                    cols.db_requests.into_pyarray(py),
                )?;
                rec.set_item(
                    format!("{tier}.db_queries"),
                    cols.db_queries.into_pyarray(py),
                )?;
                for (name, col) in [
                    ("cpu_time", cols.cpu_time),
                    ("pool_cpu_time", cols.pool_cpu_time),
                    ("db_time", cols.db_time),
                    ("db_cpu_time", cols.db_cpu_time),
                ] {
                    rec.set_item(format!("{tier}.{name}"), col.into_pyarray(py))?;
                }
            }
            d.set_item("records", rec)?;
        }
    }
    d.set_item("type_names", out.type_names)?;
    d.set_item("status_names", STATUS_NAMES.to_vec())?;
    d.set_item("tier_names", out.tier_names)?;
    d.set_item("stopped_by", stopped_by.map(|e| e.into_value(py)))?;
    Ok(d)
}

/// An exception a Python strategy raised, kept until the caller can raise it.
type Raised = Arc<Mutex<Option<PyErr>>>;

/// A strategy decided by a Python object (the `twin`: tierlab.experiments.control.twin):
/// each interval its `decide(observation)` — the observation as the dict of
/// `control::Observation`'s JSON — is called with the GIL and returns (sizes by pool
/// kind, reason). Sizes of pools without bounds, or outside them, are an error, as is
/// an exception it raises: kept in `raised` for the caller to raise (the sizes in force
/// stay meanwhile).
struct PyStrategy {
    strategy: Py<PyAny>,
    raised: Raised,
}

impl PyStrategy {
    fn boxed(strategy: Py<PyAny>, raised: &Raised) -> Box<dyn control::Controller> {
        Box::new(PyStrategy {
            strategy,
            raised: raised.clone(),
        })
    }

    fn call(&self, py: Python<'_>, o: &control::Observation) -> PyResult<control::Decision> {
        let json = serde_json::to_string(o)
            .map_err(|e| PyValueError::new_err(format!("observation: {e}")))?;
        let observation = py.import("json")?.call_method1("loads", (json,))?;
        let (sizes, reason): (BTreeMap<String, u32>, String) = self
            .strategy
            .bind(py)
            .call_method1("decide", (observation,))?
            .extract()?;
        let sizes = sizes
            .into_iter()
            .map(|(name, size)| -> PyResult<(control::PoolKind, u32)> {
                let kind = serde_json::from_value(serde_json::Value::String(name.clone()))
                    .map_err(|_| {
                        PyValueError::new_err(format!(
                            "the strategy decided a size of {name:?}: not threads or connections"
                        ))
                    })?;
                Ok((kind, size))
            })
            .collect::<PyResult<_>>()?;
        Ok(control::Decision { sizes, reason })
    }
}

impl control::Controller for PyStrategy {
    fn decide(&mut self, o: &control::Observation) -> control::Decision {
        Python::attach(|py| {
            self.call(py, o).unwrap_or_else(|e| {
                self.raised.lock().expect("never poisoned").get_or_insert(e);
                control::Decision {
                    sizes: o.pools.iter().map(|(k, p)| (*k, p.size)).collect(),
                    reason: "the strategy raised an exception: sizes held".into(),
                }
            })
        })
    }
}

/// An online controller (`crates/control`), the one the engine calls, for a driver in
/// Python (`tierlab control` beside a live testbed): built from a spec (JSON of
/// `control::Spec`: interval, bounds, strategy), fed each interval's observation (JSON
/// of `control::Observation`), it returns the sizes to be in force and why. A strategy
/// decided in Python (twin) is the object `strategy` (`PyStrategy`), its decisions put
/// through the same guards as the engine's own strategies.
#[pyclass(module = "tierlab._core")]
struct Controller {
    inner: Mutex<Box<dyn control::Controller>>,
    raised: Raised,
}

#[pymethods]
impl Controller {
    #[new]
    #[pyo3(signature = (spec_json, strategy=None))]
    fn new(spec_json: &str, strategy: Option<Py<PyAny>>) -> PyResult<Self> {
        let spec: control::Spec = serde_json::from_str(spec_json)
            .map_err(|e| PyValueError::new_err(format!("control spec: {e}")))?;
        if let Some((field, why)) = spec.problem() {
            return Err(PyValueError::new_err(format!(
                "control spec: {field}: {why}"
            )));
        }
        let raised = Raised::default();
        let inner = match (&spec.strategy, strategy) {
            (control::Strategy::Twin(_), Some(s)) => {
                control::guarded(&spec, PyStrategy::boxed(s, &raised))
            }
            (control::Strategy::Twin(_), None) => {
                return Err(PyValueError::new_err(
                    "control spec: strategy: twin is decided in Python: give its controller (tierlab.experiments.control.TwinController)",
                ))
            }
            (_, Some(_)) => {
                return Err(PyValueError::new_err(
                    "control spec: strategy: the engine's own strategies take no Python controller",
                ))
            }
            (_, None) => control::build(&spec),
        };
        Ok(Controller {
            inner: Mutex::new(inner),
            raised,
        })
    }

    /// `(sizes by pool kind, reason)` for the interval `observation_json` describes; the
    /// exception a Python strategy raised, raised.
    fn decide(&self, observation_json: &str) -> PyResult<(BTreeMap<String, u32>, String)> {
        let o: control::Observation = serde_json::from_str(observation_json)
            .map_err(|e| PyValueError::new_err(format!("observation: {e}")))?;
        let d = self
            .inner
            .lock()
            .expect("a controller's lock is never poisoned")
            .decide(&o);
        if let Some(e) = self.raised.lock().expect("never poisoned").take() {
            return Err(e);
        }
        let sizes = d
            .sizes
            .iter()
            .map(|(k, v)| (k.name().to_string(), *v))
            .collect();
        Ok((sizes, d.reason))
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(generate_load, m)?)?;
    m.add_function(wrap_pyfunction!(summary_schema, m)?)?;
    m.add_function(wrap_pyfunction!(model_schema, m)?)?;
    m.add_function(wrap_pyfunction!(latency_bounds, m)?)?;
    m.add_function(wrap_pyfunction!(serve_proxy, m)?)?;
    m.add_class::<Controller>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("PHASES", PHASES.to_vec())?;
    m.add("SCHEMA_VERSION", SCHEMA_VERSION)?;
    // The engine's limit, stated once: the model compiler reads it from here.
    m.add("MAX_POOLS", sim::model::MAX_POOLS)?;
    m.add("MAX_SERVERS", sim::model::MAX_SERVERS)?;
    Ok(())
}
