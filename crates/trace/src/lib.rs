//! tierlab's trace schema (docs/trace.md), written once for the simulator and the live
//! load generator: what a run produces is an [`Output`] — a typed summary, the
//! per-window time series and, when asked, one record per request.

mod records;
mod series;
mod stats;
pub mod summary;

pub use records::{
    Records, Status, TierColumns, BEFORE_DB, OTHER, PHASES, STATUS_NAMES, WAIT_DB, WAIT_THREAD,
    WITH_DB_ACTIVE, WITH_DB_IDLE,
};
pub use series::{SeriesMeta, TimeSeries};
pub use stats::{Latency, RequestStats, TypeStats};
pub use summary::{summary_schema, Summary, SCHEMA_VERSION};

/// What a run produces.
pub struct Output {
    pub summary: Summary,
    pub series: TimeSeries,
    pub records: Option<Records>,
    pub type_names: Vec<String>,
    pub tier_names: Vec<String>,
}
