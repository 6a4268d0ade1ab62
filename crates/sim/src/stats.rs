//! What a run produces: streaming summary statistics (bounded memory), the per-window
//! time series, and — only when asked — one record per request.

use hdrhistogram::Histogram;
use serde_json::{json, Value};

/// Request outcome, as in the trace schema (docs/trace.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    Ok = 0,
    Rejected = 1,
    Timeout = 2,
    Error = 3,
}
pub const STATUS_NAMES: [&str; 4] = ["ok", "rejected", "timeout", "error"];

/// Per-tier phases of a request (Totok & Karamcheti, eq. 1, with q split as in their
/// Figs. 3–5: a connection is active between getConnection() and close(), idle while
/// cached between them).
pub const PHASES: [&str; 6] = [
    "wait_thread",
    "before_db",
    "wait_db",
    "with_db_active",
    "with_db_idle",
    "other",
];
pub const WAIT_THREAD: usize = 0;
pub const BEFORE_DB: usize = 1;
pub const WAIT_DB: usize = 2;
pub const WITH_DB_ACTIVE: usize = 3;
pub const WITH_DB_IDLE: usize = 4;
pub const OTHER: usize = 5;

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

/// Identifies one column of the time series: a metric of a server or of one of its
/// resources (`resource` empty for the server itself).
#[derive(Debug, Clone)]
pub struct SeriesMeta {
    pub tier: String,
    pub server: u32,
    pub resource: String,
    pub metric: &'static str,
}

/// Windows × series, row-major.
#[derive(Default)]
pub struct TimeSeries {
    pub meta: Vec<SeriesMeta>,
    pub window_start: Vec<f64>,
    pub values: Vec<f64>,
}

/// Per-tier columns of the request records.
#[derive(Default)]
pub struct TierColumns {
    pub server: Vec<i32>,
    pub visits: Vec<u32>,
    pub time: Vec<f64>,
    pub phases: [Vec<f64>; 6],
    pub db_requests: Vec<u32>,
}

#[derive(Default)]
pub struct Records {
    pub id: Vec<u64>,
    pub session: Vec<u64>,
    pub rtype: Vec<u32>,
    pub status: Vec<u8>,
    pub start: Vec<f64>,
    pub end: Vec<f64>,
    pub retransmissions: Vec<u32>,
    pub tiers: Vec<TierColumns>,
}

pub struct Output {
    pub summary: Value,
    pub series: TimeSeries,
    pub records: Option<Records>,
    pub type_names: Vec<String>,
    pub tier_names: Vec<String>,
}
