//! Streaming request statistics: bounded memory however long the run.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::records::Status;
use crate::summary::{Percentiles, StatusCounts, TypeSummary};

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

    /// Add `other`'s recorded values (the sum is kept apart: see `RequestStats`).
    fn merge_histogram(&mut self, other: &Latency) {
        self.hist.add(&other.hist).expect("same bounds");
    }

    /// None when nothing was recorded.
    pub fn percentiles(&self) -> Option<Percentiles> {
        let n = self.hist.len();
        if n == 0 {
            return None;
        }
        let q = |p: f64| self.hist.value_at_quantile(p) as f64 / 1e6;
        Some(Percentiles {
            mean: self.sum / n as f64,
            p50: q(0.5),
            p90: q(0.9),
            p95: q(0.95),
            p98: q(0.98),
            p99: q(0.99),
            p99_9: q(0.999),
            max: self.hist.max() as f64 / 1e6,
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
    /// A finished request; the response times of `ok` ones make the distribution.
    #[inline]
    pub fn record(&mut self, status: Status, seconds: f64) {
        self.status[status as usize] += 1;
        if status == Status::Ok {
            self.latency.record(seconds);
        }
    }

    pub fn counts(&self) -> StatusCounts {
        let [ok, rejected, timeout, error] = self.status;
        StatusCounts {
            ok,
            rejected,
            timeout,
            error,
        }
    }

    /// `per_s` turns a count into a rate over the measured period.
    pub fn summary(&self, per_s: impl Fn(f64) -> f64) -> TypeSummary {
        TypeSummary {
            requests: self.counts(),
            throughput: per_s(self.status[Status::Ok as usize] as f64),
            response_time: self.latency.percentiles(),
        }
    }
}

/// Each type's counters, and all requests' status counts and response-time sum. The
/// histogram of all requests is the sum of the types' (built on demand, `overall`):
/// the same counts as recording each value twice, at half the cost per request. The
/// sum is kept in record order so that the mean does not depend on the types' split.
pub struct RequestStats {
    pub per_type: Vec<TypeStats>,
    status: [u64; 4],
    sum: f64,
}

impl RequestStats {
    pub fn new(types: usize) -> Self {
        RequestStats {
            per_type: (0..types).map(|_| TypeStats::default()).collect(),
            status: [0; 4],
            sum: 0.0,
        }
    }

    #[inline]
    pub fn record(&mut self, ty: usize, status: Status, seconds: f64) {
        self.status[status as usize] += 1;
        if status == Status::Ok {
            self.sum += seconds;
        }
        self.per_type[ty].record(status, seconds);
    }

    /// Requests finished, whatever their status.
    pub fn finished(&self) -> u64 {
        self.status.iter().sum()
    }

    /// All requests' counters.
    pub fn overall(&self) -> TypeStats {
        let mut all = TypeStats {
            status: self.status,
            ..TypeStats::default()
        };
        for t in &self.per_type {
            all.latency.merge_histogram(&t.latency);
        }
        all.latency.sum = self.sum;
        all
    }

    /// `summary.types`, keyed by the types' names (in type order).
    pub fn types(
        &self,
        names: &[String],
        per_s: impl Fn(f64) -> f64 + Copy,
    ) -> BTreeMap<String, TypeSummary> {
        names
            .iter()
            .zip(&self.per_type)
            .map(|(name, s)| (name.clone(), s.summary(per_s)))
            .collect()
    }
}
