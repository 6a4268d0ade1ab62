//! What a controller is asked to do: its strategy and parameters, the interval and the
//! bounds of each pool it may re-size — the engine model's `control` (compiled from the
//! model's `control:` section) and `tierlab control`'s options alike.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The pools a controller re-sizes, by kind (a tier has at most one of each under
/// control): the request threads and the database connections.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum PoolKind {
    Threads,
    Connections,
}

impl PoolKind {
    pub fn name(self) -> &'static str {
        match self {
            PoolKind::Threads => "threads",
            PoolKind::Connections => "connections",
        }
    }
}

/// Each re-sized pool's [least, greatest] size; a pool without bounds is left alone.
pub type Bounds = BTreeMap<PoolKind, [u32; 2]>;

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Seconds between two decisions.
    pub interval: f64,
    pub bounds: Bounds,
    pub strategy: Strategy,
    /// The most one decision may move a pool's size (a rate limit on changes, per
    /// interval); none: as far as the strategy says.
    #[serde(default)]
    pub max_step: Option<u32>,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "strategy", rename_all = "lowercase", deny_unknown_fields)]
pub enum Strategy {
    /// Nothing changes: the baseline.
    Static,
    /// Gradient2 (Netflix concurrency-limits) on the thread pool.
    Gradient(GradientParams),
}

/// Gradient2's parameters (`Gradient2Limit.Builder`), its windows counted in intervals
/// (one latency sample per interval) rather than in the library's sampling windows.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GradientParams {
    /// The share of the new estimate taken each interval (0, 1]; the library's 0.2.
    pub smoothing: f64,
    /// Threads the limit may grow by while the latency holds (the queue allowance); 4.
    pub queue: f64,
    /// The latency rise tolerated before the limit shrinks (≥ 1); 1.5.
    pub tolerance: f64,
    /// Intervals the long-term latency's exponential average spans; the library's 600
    /// one-second windows are 120 intervals of 5 s.
    pub long_window: u32,
    /// Intervals averaged plainly before the exponential average starts; 10.
    pub warmup: u32,
}

impl Spec {
    /// What is wrong with the spec, as (field, why), or None.
    pub fn problem(&self) -> Option<(String, String)> {
        if !(self.interval.is_finite() && self.interval > 0.0) {
            return Some((
                "interval".into(),
                "must be a positive number of seconds".into(),
            ));
        }
        for (kind, [lo, hi]) in &self.bounds {
            if *lo < 1 || lo > hi {
                return Some((
                    format!("bounds.{}", kind.name()),
                    format!("[{lo}, {hi}]: need 1 ≤ least ≤ greatest"),
                ));
            }
        }
        if self.max_step == Some(0) {
            return Some(("max_step".into(), "must be ≥ 1 (or none)".into()));
        }
        if let Strategy::Gradient(p) = &self.strategy {
            if !self.bounds.contains_key(&PoolKind::Threads) {
                return Some((
                    "bounds.threads".into(),
                    "the gradient controller re-sizes the thread pool: give its bounds".into(),
                ));
            }
            let ok = p.smoothing > 0.0
                && p.smoothing <= 1.0
                && p.queue.is_finite()
                && p.queue >= 0.0
                && p.tolerance.is_finite()
                && p.tolerance >= 1.0
                && p.long_window >= 1;
            if !ok {
                return Some((
                    "strategy".into(),
                    "gradient: need 0 < smoothing ≤ 1, queue ≥ 0, tolerance ≥ 1, long_window ≥ 1"
                        .into(),
                ));
            }
        }
        None
    }
}
