//! tierlab's trace schema (docs/trace.md), written once for the simulator and the live
//! load generator: what a run produces is an [`Output`] — a summary, the per-window
//! time series and, when asked, one record per request.

mod latency;
mod records;
mod series;

pub use latency::{Latency, TypeStats};
pub use records::{
    Records, Status, TierColumns, BEFORE_DB, OTHER, PHASES, STATUS_NAMES, WAIT_DB, WAIT_THREAD,
    WITH_DB_ACTIVE, WITH_DB_IDLE,
};
pub use series::{SeriesMeta, TimeSeries};

/// What a run produces.
pub struct Output {
    pub summary: serde_json::Value,
    pub series: TimeSeries,
    pub records: Option<Records>,
    pub type_names: Vec<String>,
    pub tier_names: Vec<String>,
}
