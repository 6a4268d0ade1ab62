//! Gradient2 (Netflix concurrency-limits, `Gradient2Limit.java`) on the thread pool: a
//! long-term exponential average of the latency against the interval's, their ratio (the
//! gradient, times a tolerance, within [0.5, 1]) scaling the limit, plus a queue
//! allowance, the result smoothed into the estimate:
//!
//!   gradient = max(0.5, min(1, tolerance × long / short))
//!   limit'   = limit × (1 − smoothing) + (limit × gradient + queue) × smoothing
//!
//! The latency is the interval's mean thread hold time (`PoolObs::hold`): the library
//! times a request from its admission to its end, not its wait to be admitted — timing
//! the wait too would read the queue a smaller limit makes as congestion and shrink the
//! limit further. As in the library, a limit not half used is left alone (the tier is
//! limited by its load, not by the limit), and a long-term latency above twice the
//! interval's decays by 5% (the latency has come back down after a long overload).

use std::collections::BTreeMap;

use crate::observation::Observation;
use crate::spec::{Bounds, GradientParams, PoolKind};
use crate::{Controller, Decision};

pub struct Gradient {
    p: GradientParams,
    bounds: Bounds,
    /// The estimated limit (fractional: smoothing moves it by less than a thread); set
    /// from the size in force at the first observation.
    limit: Option<f64>,
    long: ExpAvg,
}

impl Gradient {
    pub fn new(p: GradientParams, bounds: Bounds) -> Self {
        Gradient {
            long: ExpAvg::new(p.long_window, p.warmup),
            p,
            bounds,
            limit: None,
        }
    }

    /// The estimated limit now (None before the first observation).
    pub fn limit(&self) -> Option<f64> {
        self.limit
    }
}

impl Controller for Gradient {
    fn decide(&mut self, o: &Observation) -> Decision {
        let mut sizes = o.sizes(&self.bounds);
        let [lo, hi] = self.bounds[&PoolKind::Threads];
        let Some(pool) = o.pools.get(&PoolKind::Threads) else {
            let reason = "gradient: no thread pool observed; nothing changed".into();
            return Decision { sizes, reason };
        };
        let (lo, hi) = (f64::from(lo), f64::from(hi));
        let limit = *self
            .limit
            .get_or_insert_with(|| f64::from(pool.size).clamp(lo, hi));
        let size = |limit: f64| limit as u32; // the library's (int) newLimit
                                              // Held (no sample, or load-limited): the limit stays, and the size in force
                                              // follows it if it differs (out of bounds at the start, or set by someone else).
        let held = |mut sizes: BTreeMap<PoolKind, u32>, why: String| {
            let to = size(limit);
            sizes.insert(PoolKind::Threads, to);
            let reason = if to == pool.size {
                format!("gradient: {why}; limit {limit:.2} held")
            } else {
                format!(
                    "gradient: {why}; limit {limit:.2} held, the {} threads in force set to {to}",
                    pool.size
                )
            };
            Decision { sizes, reason }
        };
        let Some(short) = pool.hold(o.interval) else {
            return held(sizes, "no thread was taken, no latency sample".into());
        };
        let long = self.long.add(short);
        if long / short > 2.0 {
            self.long.scale(0.95);
        }
        let inflight = pool.busy + pool.queued;
        if inflight < limit / 2.0 {
            let why =
                format!("{inflight:.1} threads busy or wanted, under half the limit: load-limited");
            return held(sizes, why);
        }
        let p = self.p;
        let gradient = (p.tolerance * long / short).clamp(0.5, 1.0);
        let next = limit * (1.0 - p.smoothing) + (limit * gradient + p.queue) * p.smoothing;
        let next = next.clamp(lo, hi);
        self.limit = Some(next);
        sizes.insert(PoolKind::Threads, size(next));
        let reason = format!(
            "gradient {gradient:.3} = min(1, {tol} × long {long_ms:.2} ms / hold {short_ms:.2} ms); limit {limit:.2} → {next:.2}",
            tol = p.tolerance,
            long_ms = long * 1e3,
            short_ms = short * 1e3,
        );
        Decision { sizes, reason }
    }
}

/// The library's `ExpAvgMeasurement`: the plain mean of the first `warmup` samples, then
/// an exponential average with factor 2 / (window + 1).
struct ExpAvg {
    value: f64,
    sum: f64,
    count: u32,
    warmup: u32,
    factor: f64,
}

impl ExpAvg {
    fn new(window: u32, warmup: u32) -> Self {
        ExpAvg {
            value: 0.0,
            sum: 0.0,
            count: 0,
            warmup,
            factor: 2.0 / (f64::from(window) + 1.0),
        }
    }

    fn add(&mut self, sample: f64) -> f64 {
        if self.count < self.warmup {
            self.count += 1;
            self.sum += sample;
            self.value = self.sum / f64::from(self.count);
        } else {
            self.value = self.value * (1.0 - self.factor) + sample * self.factor;
        }
        self.value
    }

    fn scale(&mut self, by: f64) {
        self.value *= by;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gradient(lo: u32, hi: u32) -> Gradient {
        let p = GradientParams {
            smoothing: 0.2,
            queue: 4.0,
            tolerance: 1.5,
            long_window: 600,
            warmup: 1,
        };
        Gradient::new(p, BTreeMap::from([(PoolKind::Threads, [lo, hi])]))
    }

    /// 30 threads busy and 10 waiting over 5 s: 150 thread-seconds; 15,000 grants are
    /// holds of 10 ms, 1,500 of 100 ms.
    fn interval(size: u32, acquired: f64) -> Observation {
        Observation::threads(size, 30.0, 10.0, acquired, 5.0)
    }

    fn threads(d: &Decision) -> u32 {
        d.sizes[&PoolKind::Threads]
    }

    #[test]
    fn a_latency_step_lowers_the_limit_as_gradient2_says() {
        let mut g = gradient(2, 64);
        // Steady 10 ms: gradient 1, the limit grows by smoothing × queue = 0.8.
        let d = g.decide(&interval(40, 15_000.0));
        assert_eq!(g.limit(), Some(40.8));
        assert_eq!(threads(&d), 40);
        // 100 ms: long = 10 + 90 × 2/601 ms = 10.2995 ms, gradient 1.5 × 10.2995 / 100
        // = 0.154, held at 0.5: 40.8 × 0.8 + (40.8 × 0.5 + 4) × 0.2 = 37.52.
        let d = g.decide(&interval(40, 1_500.0));
        let limit = g.limit().expect("a limit");
        assert!((limit - 37.52).abs() < 1e-9, "{limit}");
        assert_eq!(threads(&d), 37);
        assert!(
            d.reason
                .starts_with("gradient 0.500 = min(1, 1.5 × long 10.30 ms / hold 100.00 ms)"),
            "{}",
            d.reason
        );
        // Held at 100 ms the limit falls as limit' = 0.9 limit + 0.8 (gradient 0.5 while
        // the long average lags), towards 8.
        let d = g.decide(&interval(37, 1_500.0));
        assert!((g.limit().expect("a limit") - (0.9 * 37.52 + 0.8)).abs() < 1e-9);
        assert_eq!(threads(&d), 34);
    }

    #[test]
    fn the_limit_never_leaves_its_bounds() {
        let mut g = gradient(10, 42);
        let mut seen = vec![];
        for k in 0..60 {
            let acquired = if k < 20 { 15_000.0 } else { 1_500.0 };
            seen.push(threads(&g.decide(&interval(40, acquired))));
        }
        assert_eq!(
            seen[..3],
            [40, 41, 42],
            "it grows by 0.8 a step, to the top"
        );
        assert!(seen.iter().all(|&s| (10..=42).contains(&s)), "{seen:?}");
        assert_eq!(
            *seen.last().expect("sizes"),
            10,
            "at the floor after the latency rose"
        );
        // A size in force outside the bounds is brought inside at the first decision,
        // and the reason says so even where the limit is held.
        assert_eq!(
            threads(&gradient(2, 16).decide(&interval(40, 15_000.0))),
            16
        );
        let idle = Observation::threads(40, 1.0, 0.0, 500.0, 5.0);
        let d = gradient(2, 16).decide(&idle);
        assert_eq!(threads(&d), 16);
        assert!(
            d.reason
                .ends_with("limit 16.00 held, the 40 threads in force set to 16"),
            "{}",
            d.reason
        );
    }

    #[test]
    fn a_limit_not_half_used_is_left_alone() {
        let mut g = gradient(2, 64);
        let idle = Observation::threads(40, 5.0, 0.0, 5_000.0, 5.0);
        let d = g.decide(&idle);
        assert_eq!((threads(&d), g.limit()), (40, Some(40.0)));
        assert!(d.reason.contains("load-limited"), "{}", d.reason);
        let none = Observation::threads(40, 0.0, 0.0, 0.0, 5.0);
        assert!(g.decide(&none).reason.contains("no latency sample"));
    }
}
