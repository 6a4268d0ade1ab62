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

/// The largest response time recorded as itself, in µs (10 days); a longer one is
/// recorded as this: bounded memory however long the run.
const HIGHEST_US: u64 = 864_000_000_000;

impl Default for Latency {
    fn default() -> Self {
        // From the smallest range (1–2 µs), grown to the largest value recorded: a
        // histogram over the whole 1 µs–10 days is 31,744 counters (250 KB), allocated,
        // zeroed and merged by every run for every request type — most of a short
        // simulation's fixed cost (the twin controller runs dozens a decision:
        // benchmarks/README.md). The buckets, and so every quantile, are the same at any
        // size: the lowest value and the digits set them.
        let mut hist = Histogram::new_with_bounds(1, 2, 3).expect("valid bounds");
        hist.auto(true);
        Latency { hist, sum: 0.0 }
    }
}

/// `x.round() as u64`, without the library call that `round` is on baseline x86-64:
/// the truncation is exact and so is the remainder (Sterbenz), for every x. Below 2^63
/// (every latency in µs) through i64, whose conversions to and from f64 are single
/// instructions there (u64's take a dozen); at and above it every f64 is an integer.
#[inline]
fn round_to_u64(x: f64) -> u64 {
    if x < 9_223_372_036_854_775_808.0 {
        let i = x as i64; // saturating: i64::MIN far below zero (NaN is not < anything)
        let r = if x - i as f64 >= 0.5 { i + 1 } else { i };
        r.max(0) as u64
    } else {
        x as u64 // saturating; 0 for NaN, as after `round`
    }
}

impl Latency {
    pub fn record(&mut self, seconds: f64) {
        self.hist
            .record(round_to_u64(seconds * 1e6).min(HIGHEST_US))
            .expect("a histogram that grows takes any value up to HIGHEST_US");
        self.sum += seconds;
    }

    /// Add `other`'s recorded values (the sum is kept apart: see `RequestStats`).
    fn merge_histogram(&mut self, other: &Latency) {
        self.hist
            .add(&other.hist)
            .expect("the same digits and lowest value; it grows to the other's largest");
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

/// One request type's (or all requests') counters: those sent after the warm-up, and of
/// them those finished, by status; the rest are unfinished.
#[derive(Default)]
pub struct TypeStats {
    pub latency: Latency,
    pub status: [u64; 4],
    pub sent: u64,
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
        let finished: u64 = self.status.iter().sum();
        debug_assert!(
            finished <= self.sent,
            "a request finished that was never sent"
        );
        StatusCounts {
            ok,
            rejected,
            timeout,
            error,
            unfinished: self.sent.saturating_sub(finished),
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

/// Each type's counters, and all requests' status counts and response-time sum. A
/// producer calls `sent` when a measured request starts and `record` when it ends, so
/// what was sent and never recorded is counted as unfinished. The
/// histogram of all requests is the sum of the types' (built on demand, `overall`):
/// the same counts as recording each value twice, at half the cost per request. The
/// sum is kept in record order so that the mean does not depend on the types' split.
pub struct RequestStats {
    pub per_type: Vec<TypeStats>,
    status: [u64; 4],
    sent: u64,
    sum: f64,
}

impl RequestStats {
    pub fn new(types: usize) -> Self {
        RequestStats {
            per_type: (0..types).map(|_| TypeStats::default()).collect(),
            status: [0; 4],
            sent: 0,
            sum: 0.0,
        }
    }

    /// A request of type `ty` was sent (arrived) after the warm-up.
    #[inline]
    pub fn sent(&mut self, ty: usize) {
        self.sent += 1;
        self.per_type[ty].sent += 1;
    }

    /// Requests sent after the warm-up, finished or not.
    pub fn sent_total(&self) -> u64 {
        self.sent
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
            sent: self.sent,
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

#[cfg(test)]
mod tests {
    use super::{round_to_u64, Latency, RequestStats, HIGHEST_US};
    use crate::records::Status;
    use hdrhistogram::Histogram;

    #[test]
    fn a_histogram_that_grows_gives_the_full_ranges_quantiles() {
        // The same values into grown histograms (two, merged) and into one over the
        // whole range from the start: every quantile, the max and the count alike.
        let mut full = Histogram::<u64>::new_with_bounds(1, HIGHEST_US, 3).unwrap();
        let (mut grown, mut other) = (Latency::default(), Latency::default());
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        for i in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // 1 µs to ~9 days, log-uniform.
            let seconds = 1e-6 * 10f64.powf((x >> 11) as f64 / (1u64 << 53) as f64 * 11.9);
            full.record(round_to_u64(seconds * 1e6)).unwrap();
            if i % 3 == 0 {
                other.record(seconds)
            } else {
                grown.record(seconds)
            }
        }
        grown.merge_histogram(&other);
        for q in [0.0, 0.5, 0.9, 0.95, 0.98, 0.99, 0.999, 1.0] {
            assert_eq!(
                grown.hist.value_at_quantile(q),
                full.value_at_quantile(q),
                "{q}"
            );
        }
        assert_eq!(
            (grown.hist.max(), grown.hist.len()),
            (full.max(), full.len())
        );
        // Past 10 days, a value is recorded as 10 days.
        let mut long = Latency::default();
        long.record(1e9);
        assert_eq!(long.hist.max(), long.hist.highest_equivalent(HIGHEST_US));
    }

    #[test]
    fn what_was_sent_and_not_recorded_is_unfinished_overall_and_per_type() {
        let mut s = RequestStats::new(2);
        for ty in [0, 0, 0, 1, 1] {
            s.sent(ty);
        }
        s.record(0, Status::Ok, 0.1);
        s.record(0, Status::Rejected, 0.2);
        s.record(1, Status::Timeout, 3.0);
        let all = s.overall().counts();
        assert_eq!(
            (all.ok, all.rejected, all.timeout, all.unfinished),
            (1, 1, 1, 2)
        );
        assert_eq!(all.sent(), 5);
        let per: Vec<u64> = s.per_type.iter().map(|t| t.counts().unfinished).collect();
        assert_eq!(per, [1, 1]);
    }

    #[test]
    fn rounds_as_round_then_cast_does() {
        let mut xs = vec![
            0.0,
            -0.0,
            0.5,
            1.5,
            2.5,
            0.49999999999999994,
            -0.7,
            4503599627370495.5,
            9007199254740993.0,
            1.8446744073709552e19,
            9223372036854775807.0,
            9223372036854774784.0,
            -9.3e18,
            -1e30,
            1e30,
            f64::INFINITY,
            f64::NAN,
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            xs.push((x >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi((x % 12) as i32));
        }
        for v in xs {
            assert_eq!(round_to_u64(v), v.round() as u64, "{v}");
        }
    }
}
