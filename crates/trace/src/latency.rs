//! Streaming response-time statistics: bounded memory however long the run.

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use crate::records::{Status, STATUS_NAMES};

/// A response-time distribution: HdrHistogram (µs, 3 significant digits) plus the
/// exact sum for the mean.
pub struct Latency {
    hist: Histogram<u64>,
    sum: f64,
}

impl Default for Latency {
    fn default() -> Self {
        // 1 µs to 10 days: fixed bounds keep the memory per histogram constant.
        Latency {
            hist: Histogram::new_with_bounds(1, 864_000_000_000, 3).expect("valid bounds"),
            sum: 0.0,
        }
    }
}

impl Latency {
    pub fn record(&mut self, seconds: f64) {
        self.hist.saturating_record((seconds * 1e6).round() as u64);
        self.sum += seconds;
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    pub fn to_json(&self) -> Value {
        let n = self.hist.len();
        if n == 0 {
            return Value::Null;
        }
        let q = |p: f64| self.hist.value_at_quantile(p) as f64 / 1e6;
        json!({
            "mean": self.sum / n as f64,
            "p50": q(0.5), "p90": q(0.9), "p95": q(0.95), "p98": q(0.98), "p99": q(0.99), "p99.9": q(0.999),
            "max": self.hist.max() as f64 / 1e6,
        })
    }
}

/// One request type's (or all requests') counters.
#[derive(Default)]
pub struct TypeStats {
    pub latency: Latency,
    pub status: [u64; 4],
}

impl TypeStats {
    /// Counts by status name.
    pub fn status_json(&self) -> Value {
        STATUS_NAMES
            .iter()
            .zip(self.status)
            .map(|(k, n)| (k.to_string(), json!(n)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    }

    /// A request type's entry of `summary.types`; `per_s` turns a count into a rate.
    pub fn to_json(&self, per_s: impl Fn(f64) -> f64) -> Value {
        json!({
            "requests": self.status_json(),
            "throughput": per_s(self.status[Status::Ok as usize] as f64),
            "response_time": self.latency.to_json(),
        })
    }
}
