//! The per-window time series: `timeseries.parquet` of the trace.

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
