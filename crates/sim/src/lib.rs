//! tierlab's discrete-event engine: multi-tier systems with soft resources (thread and
//! connection pools) and hardware stations, driven by session workloads.
//!
//! Input is a resolved [`model::Model`] (JSON from the Python model compiler); output is
//! a summary, a per-window time series and optional per-request records
//! ([`trace::Output`]), the trace schema of `docs/trace.md`.

mod cluster;
mod control;
mod engine;
mod events;
pub mod model;
mod observer;
mod pool;
mod program;
mod session;
mod state;
mod station;
mod timeavg;

pub use engine::Sim;

/// Simulate a model given as engine JSON. `tick(fraction)` may return false to stop.
pub fn simulate(model_json: &str, tick: impl FnMut(f64) -> bool) -> Result<trace::Output, String> {
    simulate_with(model_json, None, tick)
}

/// `simulate`, the model's control strategy decided outside the engine being `strategy`
/// (the `twin`: Python's, through crates/py), put through the control spec's guards.
pub fn simulate_with(
    model_json: &str,
    strategy: Option<Box<dyn ::control::Controller>>,
    tick: impl FnMut(f64) -> bool,
) -> Result<trace::Output, String> {
    let model = model::Model::from_json(model_json)?;
    Sim::with_controller(model, strategy)?.run(tick)
}
