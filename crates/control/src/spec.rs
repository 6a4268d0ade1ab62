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
    /// When a change after which the errors rise is reverted (`crate::Reverting`).
    #[serde(default)]
    pub revert: Revert,
    /// Intervals a change stands before the next may be made (a minimum dwell,
    /// `crate::Dwelling`); 0: none.
    #[serde(default)]
    pub dwell: u32,
}

/// The revert guard's settings (the model's `control.revert`; `tierlab control
/// --revert-margin`, `--revert-hold`).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Revert {
    /// How far the error share may rise after a change before it is reverted (0.01: one
    /// percentage point, 0.2% → 1.1% stands, 0.2% → 1.3% is reverted): a share that
    /// moves by less is the load's noise, not the change's doing.
    #[serde(default = "Revert::default_margin")]
    pub margin: f64,
    /// Intervals a reverted change's sizes are held before the strategy may move again
    /// (6: 30 s at the usual 5 s interval, long enough for its estimates to see the
    /// restored sizes); 0: the strategy may move again at once.
    #[serde(default = "Revert::default_hold")]
    pub hold: u32,
}

impl Revert {
    fn default_margin() -> f64 {
        0.01
    }

    fn default_hold() -> u32 {
        6
    }
}

impl Default for Revert {
    fn default() -> Self {
        Revert {
            margin: Revert::default_margin(),
            hold: Revert::default_hold(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "strategy", rename_all = "lowercase", deny_unknown_fields)]
pub enum Strategy {
    /// Nothing changes: the baseline.
    Static,
    /// Gradient2 (Netflix concurrency-limits) on the thread pool.
    Gradient(GradientParams),
    /// A twin of the tier, re-calibrated every interval and searched for the best sizes
    /// at the observed load and mix; decided in Python (tierlab.experiments.control.twin,
    /// which simulates the twin), its decisions put through the same guards
    /// (`crate::guarded`).
    Twin(TwinParams),
}

/// The twin strategy's parameters (the model's `control.twin`; `tierlab control
/// --strategy twin`'s options).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TwinParams {
    /// The least predicted gain over the sizes in force that moves them (0.05: 5%).
    pub hysteresis: f64,
    /// Seconds the response time's 99th percentile must stay under.
    pub slo_p99: f64,
    /// Sizes per pool on the search's coarse grid (geometric between the bounds), beside
    /// the neighbours of the sizes in force.
    pub grid: u32,
    /// Seconds of the observed load simulated per candidate (after a warm-up of a
    /// quarter of it).
    pub horizon: f64,
    /// The share of an interval's measured-to-predicted hold time ratio taken into the
    /// twin's demands (an exponential average: 1 takes each interval's alone).
    pub smoothing: f64,
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
        if !(self.revert.margin.is_finite() && (0.0..=1.0).contains(&self.revert.margin)) {
            return Some((
                "revert.margin".into(),
                format!(
                    "{}: must be a share of the requests in [0, 1] (0.01: one percentage point)",
                    self.revert.margin
                ),
            ));
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
        if let Strategy::Twin(p) = &self.strategy {
            return p.problem(&self.bounds);
        }
        None
    }
}

impl TwinParams {
    /// What is wrong with the parameters, as (field, why) — the field as the model's
    /// `control:` names it — or None.
    fn problem(&self, bounds: &Bounds) -> Option<(String, String)> {
        let bad = |field: &str, why: &str| Some((field.to_string(), why.to_string()));
        if bounds.is_empty() {
            return bad(
                "bounds",
                "the twin controller searches the pools it has bounds for: give threads, connections or both",
            );
        }
        if !(self.hysteresis.is_finite() && self.hysteresis >= 0.0) {
            return bad("twin.hysteresis", "must be a share ≥ 0 (0.05: 5%)");
        }
        if !(self.slo_p99.is_finite() && self.slo_p99 > 0.0) {
            return bad("twin.slo_p99", "must be a positive number of seconds");
        }
        if self.grid < 2 {
            return bad("twin.grid", "must be ≥ 2 (the grid holds both bounds)");
        }
        if !(self.horizon.is_finite() && self.horizon > 0.0) {
            return bad("twin.horizon", "must be a positive number of seconds");
        }
        if !(self.smoothing > 0.0 && self.smoothing <= 1.0) {
            return bad("twin.smoothing", "must be in (0, 1]");
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: TwinParams = TwinParams {
        hysteresis: 0.05,
        slo_p99: 1.0,
        grid: 4,
        horizon: 20.0,
        smoothing: 0.5,
    };

    fn twin(bounds: &[PoolKind], p: TwinParams) -> Spec {
        Spec {
            interval: 5.0,
            bounds: bounds.iter().map(|k| (*k, [2, 64])).collect(),
            strategy: Strategy::Twin(p),
            max_step: None,
            revert: Revert::default(),
            dwell: 0,
        }
    }

    #[test]
    fn a_bad_twin_parameter_is_named_by_its_field() {
        let threads = [PoolKind::Threads];
        assert_eq!(twin(&threads, OK).problem(), None);
        for (p, field) in [
            (
                TwinParams {
                    hysteresis: -0.1,
                    ..OK
                },
                "twin.hysteresis",
            ),
            (TwinParams { slo_p99: 0.0, ..OK }, "twin.slo_p99"),
            (TwinParams { grid: 1, ..OK }, "twin.grid"),
            (
                TwinParams {
                    horizon: f64::NAN,
                    ..OK
                },
                "twin.horizon",
            ),
            (
                TwinParams {
                    smoothing: 1.5,
                    ..OK
                },
                "twin.smoothing",
            ),
        ] {
            assert_eq!(twin(&threads, p).problem().map(|p| p.0), Some(field.into()));
        }
        assert_eq!(twin(&[], OK).problem().map(|p| p.0), Some("bounds".into()));
    }
}
