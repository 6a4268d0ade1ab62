//! Per-request records, as columns: `requests.parquet` of the trace.

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

/// Per-tier columns of the request records.
#[derive(Default)]
pub struct TierColumns {
    pub server: Vec<i32>,
    pub visits: Vec<u32>,
    pub time: Vec<f64>,
    pub phases: [Vec<f64>; 6],
    pub db_requests: Vec<u32>,
    /// The demand columns, as the live middleware means them (docs/trace.md).
    pub db_queries: Vec<u32>,
    pub cpu_time: Vec<f64>,
    pub pool_cpu_time: Vec<f64>,
    pub db_time: Vec<f64>,
    pub db_cpu_time: Vec<f64>,
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
