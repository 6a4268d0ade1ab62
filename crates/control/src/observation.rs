//! What a controller sees of a tier each interval: the same figures from the simulator's
//! monitoring windows and from a live server's admin endpoint.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::spec::{Bounds, PoolKind};

/// One interval of a tier (all its servers together).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Observation {
    /// Seconds the interval lasted.
    pub interval: f64,
    /// Requests per second that arrived.
    pub arrivals: f64,
    /// Each request type's share of the arrivals (empty when none arrived).
    pub mix: BTreeMap<String, f64>,
    /// Requests per second that finished ok, and that failed (rejected, timed out, error).
    pub throughput: f64,
    pub errors: f64,
    /// Of the requests that finished in the interval; None when none did.
    pub response_time: Option<Latency>,
    pub pools: BTreeMap<PoolKind, PoolObs>,
    /// The tier's CPU utilization (0-1 per core), where measured.
    pub cpu: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
}

/// A pool over the interval, per server of the tier (their mean: a controller sizes
/// every server's pool alike).
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PoolObs {
    /// Size in force during the interval.
    pub size: u32,
    /// Mean tokens held, and mean requests waiting for one.
    pub busy: f64,
    pub queued: f64,
    /// Tokens granted, and requests refused (timed out or no room to wait).
    pub acquired: f64,
    pub rejected: f64,
}

impl Latency {
    /// The mean and nearest-rank percentiles of `times` (sorted in place); None when
    /// empty.
    pub fn of(times: &mut [f64]) -> Option<Latency> {
        if times.is_empty() {
            return None;
        }
        times.sort_by(f64::total_cmp);
        let n = times.len();
        let at = |q: f64| times[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        Some(Latency {
            mean: times.iter().sum::<f64>() / n as f64,
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
        })
    }
}

impl PoolObs {
    /// The mean time a token was held (Little's law: mean held × seconds / grants), the
    /// latency of the limited resource from its acquisition to its release — what a
    /// concurrency limiter measures; None without a grant.
    pub fn hold(&self, interval: f64) -> Option<f64> {
        (self.acquired > 0.0 && self.busy > 0.0).then(|| self.busy * interval / self.acquired)
    }
}

impl Observation {
    /// The sizes in force of the bounded pools (those observed).
    pub fn sizes(&self, bounds: &Bounds) -> BTreeMap<PoolKind, u32> {
        bounds
            .keys()
            .filter_map(|k| self.pools.get(k).map(|p| (*k, p.size)))
            .collect()
    }

    /// The share of the requests finished in the interval that failed, errors /
    /// (throughput + errors); None when none finished.
    pub fn error_share(&self) -> Option<f64> {
        let finished = self.throughput + self.errors;
        (finished > 0.0).then(|| self.errors / finished)
    }

    /// A tier whose only pool is a thread pool of `size`, `busy` held and `queued`
    /// waiting on average, `acquired` grants, over `interval` seconds.
    #[cfg(test)]
    pub(crate) fn threads(size: u32, busy: f64, queued: f64, acquired: f64, interval: f64) -> Self {
        Observation {
            interval,
            pools: BTreeMap::from([(
                PoolKind::Threads,
                PoolObs {
                    size,
                    busy,
                    queued,
                    acquired,
                    rejected: 0.0,
                },
            )]),
            ..Default::default()
        }
    }
}
