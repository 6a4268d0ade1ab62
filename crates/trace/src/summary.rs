//! The run summary (`summary.json`), typed: the simulator and the load generator fill
//! the same structs, so both write one schema. Field names are a contract with the
//! Python side (docs/trace.md). Every key is always present: what one source does
//! not measure is null, never missing.

use std::collections::BTreeMap;

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::Serialize;

/// Version of the trace schema (summary, series and records). 4: requests left
/// unfinished at the end are an outcome of their own (`StatusCounts::unfinished`),
/// where 3 had one count beside the outcomes (`in_flight_at_end`) that no verdict read.
pub const SCHEMA_VERSION: u32 = 4;

/// The summary of one run, simulated or live.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Summary {
    /// "simulation" or "live".
    pub source: String,
    pub schema_version: u32,
    /// Monitoring window of the series, seconds.
    pub window: f64,
    pub seed: u64,
    pub duration: f64,
    pub warmup: f64,
    /// From the end of the warm-up to the end of the run.
    pub measured_seconds: f64,
    /// Stopped early (Ctrl-C): the trace covers the time until then.
    pub interrupted: bool,
    /// Parts of the trace that could not be measured, each with the reason (a live
    /// server that ended during the run: its phases, series and pools); empty when the
    /// trace is whole.
    pub missing: BTreeMap<String, String>,
    /// Requests that arrived after the warm-up, by outcome.
    pub requests: StatusCounts,
    /// `ok` requests per measured second.
    pub throughput: f64,
    /// Of the `ok` requests; null when none completed.
    pub response_time: Option<Percentiles>,
    pub types: BTreeMap<String, TypeSummary>,
    pub tiers: BTreeMap<String, TierSummary>,
    pub links: BTreeMap<String, LinkSummary>,
    pub sessions: SessionSummary,
    pub little: Little,
    // Simulator only (null from the load generator).
    pub simulated_until: Option<f64>,
    /// Engine events processed.
    pub events: Option<u64>,
    // Load generator only (null from the simulator).
    /// Seconds the run went.
    pub elapsed: Option<f64>,
    /// The HTTP target, "host:port".
    pub target: Option<String>,
    pub errors: Option<Errors>,
    pub bytes_received: Option<u64>,
    /// Kept-alive connections the server had closed, retried on a new one.
    pub reconnects: Option<u64>,
    /// The online controller's decisions (a model with `control:`; `tierlab control`'s
    /// log). Absent, not null, without one: traces written before it stay valid and a
    /// run without control is byte for byte what it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control: Option<ControlSummary>,
}

/// An online controller over a run: what it controlled and every decision it made.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ControlSummary {
    pub strategy: String,
    pub tier: String,
    /// Seconds between two decisions.
    pub interval: f64,
    pub decisions: Vec<ControlDecision>,
}

/// One decision: when, the pool sizes in force after it (by pool kind), whether it
/// changed any, and why.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ControlDecision {
    pub t: f64,
    pub sizes: BTreeMap<String, u32>,
    pub changed: bool,
    pub reason: String,
}

/// Request counts by outcome: the finished ones by status (`trace::STATUS_NAMES`), and
/// those sent and not answered by the end of the run. Every request sent after the
/// warm-up is in exactly one count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct StatusCounts {
    pub ok: u64,
    pub rejected: u64,
    pub timeout: u64,
    pub error: u64,
    /// Sent (arrived) after the warm-up, still in the system when the run ended: no
    /// record, no response time — a backlog a verdict must see (docs/trace.md).
    pub unfinished: u64,
}

impl StatusCounts {
    /// Every request sent after the warm-up: ok + rejected + timeout + error + unfinished.
    pub fn sent(&self) -> u64 {
        self.ok + self.rejected + self.timeout + self.error + self.unfinished
    }
}

/// A response-time distribution, seconds: exact mean, HdrHistogram quantiles.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct Percentiles {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p98: f64,
    pub p99: f64,
    #[serde(rename = "p99.9")]
    pub p99_9: f64,
    pub max: f64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TypeSummary {
    pub requests: StatusCounts,
    pub throughput: f64,
    pub response_time: Option<Percentiles>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TierSummary {
    /// The tier's place in the model, 0 = the front.
    pub position: usize,
    pub servers: Vec<ServerSummary>,
    pub dispatch: Option<DispatchSummary>,
}

/// How a tier's dispatchers placed its requests.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DispatchSummary {
    pub dispatchers: u64,
    /// Measured visits (requests, live) placed on a server other than their session's
    /// home on the tier (the server of its previous visit there), and those whose
    /// session had no home there yet: on every tier whose dispatcher reads homes
    /// (more than one server, or session state), simulated and live alike. On a
    /// stateful tier a migrated visit also fetches the session's state.
    pub session_migrations: u64,
    pub sessions_created: u64,
    /// Requests held at a waiting dispatcher, and those it rejected.
    pub queued: u64,
    pub rejected_queue_full: u64,
    pub rejected_queue_timeout: u64,
    /// Load-metric messages among sharing dispatchers, and their mean size.
    pub sync_messages: u64,
    pub sync_payload_bytes: f64,
}

/// One server over the measured period.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ServerSummary {
    pub visits: Option<u64>,
    pub throughput: Option<f64>,
    pub mean_residence: Option<f64>,
    pub gc: Option<GcSummary>,
    pub stations: BTreeMap<String, StationSummary>,
    pub pools: BTreeMap<String, PoolSummary>,
}

/// Stop-the-world garbage collections.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub struct GcSummary {
    pub pauses: u64,
    pub pause_time: f64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StationSummary {
    /// "cpu" or "disk".
    pub kind: String,
    pub utilization: f64,
}

/// A soft resource over the measured period.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PoolSummary {
    /// "threads", "connections" or "other".
    pub kind: String,
    pub size: u32,
    /// Time-averaged tokens held, and the most held at once.
    pub mean_busy: f64,
    pub busy_max: f64,
    /// Time-averaged waiters.
    pub mean_queued: f64,
    /// Tokens granted, at once or after waiting.
    pub acquired: u64,
    /// Requests that joined the queue (granted later or not).
    pub waited: u64,
    /// Waiters whose timeout expired (also counted in `rejected`).
    pub timed_out: u64,
    /// Timed out, or refused for lack of room to wait.
    pub rejected: u64,
    /// Connection attempts dropped by a full pool with retransmission.
    pub dropped: u64,
    /// Share of the measured windows in which every token was held at some point.
    pub pinned: f64,
    /// Time-averaged tokens free but promised to a waiter that has yet to take them
    /// (a hand-off); by Little's law, over the waits granted per second, the seconds
    /// a hand-off takes.
    pub mean_handing_off: f64,
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub struct LinkSummary {
    pub utilization: f64,
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub struct SessionSummary {
    pub started: u64,
    pub completed: u64,
    /// Completed sessions per second.
    pub throughput: f64,
    /// Requests per completed session.
    pub mean_requests: f64,
}

/// Little's law, L = λW, up to the edge effects of requests in flight at the start
/// and end of the measured period.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub struct Little {
    pub mean_in_system: f64,
    pub arrival_rate: f64,
    pub mean_time_in_system: f64,
}

/// Failed requests of a live run, by kind (nothing is dropped silently).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub struct Errors {
    pub connect: u64,
    pub protocol: u64,
    pub timeout: u64,
    pub http_503: u64,
    pub http_4xx: u64,
    pub http_5xx: u64,
}

/// `x` per second of a measured period of `seconds` (0 for an empty period).
pub fn rate(x: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        x / seconds
    } else {
        0.0
    }
}

/// `sum / n`, or 0 when there is nothing to average.
pub fn mean(sum: f64, n: u64) -> f64 {
    if n > 0 {
        sum / n as f64
    } else {
        0.0
    }
}

/// The JSON Schema (draft 2020-12) of [`Summary`] as serialized — every key required,
/// null allowed where optional — as JSON text.
pub fn summary_schema() -> String {
    let schema = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<Summary>();
    serde_json::to_string_pretty(&schema).expect("a schema serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_requires_every_key_and_allows_null_where_optional() {
        let schema: serde_json::Value = serde_json::from_str(&summary_schema()).unwrap();
        let required = schema["required"].as_array().unwrap();
        for key in [
            "source",
            "response_time",
            "simulated_until",
            "errors",
            "reconnects",
        ] {
            assert!(required.iter().any(|k| k == key), "{key} not required");
        }
        let events = &schema["properties"]["events"]["type"];
        assert!(
            events.as_array().unwrap().iter().any(|t| t == "null"),
            "events: {events}"
        );
        let pct = &schema["$defs"]["Percentiles"]["properties"];
        assert!(pct.get("p99.9").is_some(), "{pct}");
    }
}
