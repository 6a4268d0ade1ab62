//! The per-backend concurrency limit (`limit` in the configuration): a request the
//! policy places on a backend already holding `size` requests in flight is answered 503
//! with `Retry-After` (counted `rejected_limit`, outcome `limit`). The limit is fixed, or
//! re-sized every interval by a controller of `crates/control` — the same object the
//! simulator's engine and `tierlab control` call — fed, per backend, what the proxy saw
//! of it as a `control::Observation` whose thread pool is the limit: the requests in
//! flight as `busy` (their time average), the completions as `acquired`, the refusals as
//! `rejected`, and the completed requests' response times and statuses.
//!
//! [`Limit`] is the accounting, kept under the dispatcher's lock (a few additions per
//! request); [`run`] is the controller's loop.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use control::{Controller, Latency, Observation, PoolKind, PoolObs};

use crate::dispatcher::Dispatcher;

/// One backend's counts since the current interval began.
#[derive(Debug, Default)]
struct Window {
    /// ∫ requests in flight dt over the interval so far, up to `last`.
    area: f64,
    last: f64,
    /// Requests let in, refused at the limit, and finished ok / failed (a failed
    /// connection, a lost or truncated response, a timeout, a 5xx status).
    admitted: u64,
    refused: u64,
    ok: u64,
    failed: u64,
    /// Seconds each finished request was in flight.
    times: Vec<f64>,
}

/// Every backend's limit, requests in flight and interval counts.
#[derive(Debug)]
pub struct Limit {
    size: Vec<u32>,
    inflight: Vec<u32>,
    windows: Vec<Window>,
    began: f64,
    /// The controller's last reason per backend (None while fixed or before the first).
    reasons: Vec<Option<String>>,
}

impl Limit {
    /// `backends` limited to `size` requests in flight each, counted from `now`.
    pub fn new(backends: usize, size: u32, now: f64) -> Limit {
        Limit {
            size: vec![size; backends],
            inflight: vec![0; backends],
            windows: (0..backends)
                .map(|_| Window {
                    last: now,
                    ..Window::default()
                })
                .collect(),
            began: now,
            reasons: vec![None; backends],
        }
    }

    /// Bring backend `k`'s time integral of requests in flight up to `now`.
    fn level(&mut self, k: usize, now: f64) {
        let w = &mut self.windows[k];
        w.area += f64::from(self.inflight[k]) * (now - w.last).max(0.0);
        w.last = now;
    }

    /// Whether backend `k` has room for one more request; if so it is in flight there.
    pub fn admit(&mut self, k: usize, now: f64) -> bool {
        if self.inflight[k] >= self.size[k] {
            return false;
        }
        self.level(k, now);
        self.inflight[k] += 1;
        self.windows[k].admitted += 1;
        true
    }

    /// A request placed on `k` was answered 503 at the limit.
    pub fn refused(&mut self, k: usize) {
        self.windows[k].refused += 1;
    }

    /// A request admitted at `k` left it: finished after `held` seconds, ok or not
    /// (`Some((held, ok))`), or never sent (None: its client left as it was placed).
    pub fn release(&mut self, k: usize, now: f64, finished: Option<(f64, bool)>) {
        self.level(k, now);
        self.inflight[k] -= 1;
        if let Some((held, ok)) = finished {
            let w = &mut self.windows[k];
            if ok {
                w.ok += 1;
            } else {
                w.failed += 1;
            }
            w.times.push(held);
        }
    }

    /// Each backend's observation over the interval ending `now`, and a new interval
    /// begun.
    pub fn observe(&mut self, now: f64) -> Vec<Observation> {
        let dt = (now - self.began).max(f64::MIN_POSITIVE);
        self.began = now;
        (0..self.size.len())
            .map(|k| {
                self.level(k, now);
                let w = std::mem::replace(
                    &mut self.windows[k],
                    Window {
                        last: now,
                        ..Window::default()
                    },
                );
                let mut times = w.times;
                let pool = PoolObs {
                    size: self.size[k],
                    busy: w.area / dt,
                    // Refused at once, never waiting: nothing queues at the limit.
                    queued: 0.0,
                    acquired: (w.ok + w.failed) as f64,
                    rejected: w.refused as f64,
                };
                Observation {
                    interval: dt,
                    arrivals: (w.admitted + w.refused) as f64 / dt,
                    // The proxy keeps no per-type counts per backend.
                    mix: BTreeMap::new(),
                    throughput: w.ok as f64 / dt,
                    errors: w.failed as f64 / dt,
                    response_time: Latency::of(&mut times),
                    pools: BTreeMap::from([(PoolKind::Threads, pool)]),
                    cpu: None,
                }
            })
            .collect()
    }

    /// Backend `k`'s limit becomes `size` (at least 1), as decided for `reason`.
    pub fn set(&mut self, k: usize, size: u32, reason: String) {
        self.size[k] = size.max(1);
        self.reasons[k] = Some(reason);
    }

    pub fn size(&self, k: usize) -> u32 {
        self.size[k]
    }

    pub fn inflight(&self, k: usize) -> u32 {
        self.inflight[k]
    }

    pub fn reason(&self, k: usize) -> Option<&str> {
        self.reasons[k].as_deref()
    }
}

/// Every `interval` seconds: each backend's observation fed to its own controller, and
/// its limit set to the controller's `threads`; the wait queue is then drained, since a
/// raised limit may let a queued request in.
pub async fn run(d: Arc<Dispatcher>, mut controllers: Vec<Box<dyn Controller>>, interval: f64) {
    let mut tick = tokio::time::interval(Duration::from_secs_f64(interval));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await; // the first tick is at once
    loop {
        tick.tick().await;
        let observed = d.observe_limits();
        // Decided outside the dispatcher's lock: requests go on meanwhile.
        let decided: Vec<_> = controllers
            .iter_mut()
            .zip(&observed)
            .map(|(c, o)| c.decide(o))
            .collect();
        d.set_limits(decided);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_past_the_limit_are_refused_and_every_one_is_counted() {
        // Two backends limited to 2; from t = 0: three requests at 0 on backend 0
        // (the third refused), one at 1 on backend 1; backend 0's first finishes ok at
        // 2 (held 2 s), its second fails at 3; backend 1's is placed, then its client
        // leaves (never sent) at 1.5.
        let mut l = Limit::new(2, 2, 0.0);
        assert!(l.admit(0, 0.0) && l.admit(0, 0.0));
        assert!(!l.admit(0, 0.0));
        l.refused(0);
        assert_eq!(l.inflight(0), 2);
        assert!(l.admit(1, 1.0));
        l.release(1, 1.5, None);
        l.release(0, 2.0, Some((2.0, true)));
        assert!(l.admit(0, 2.0), "room again once one finished");
        l.release(0, 3.0, Some((3.0, false)));
        let o = l.observe(4.0);
        // Backend 0: in flight 2 over [0, 3], 1 over [3, 4]: busy (2·3 + 1·1) / 4.
        let (b0, b1) = (&o[0], &o[1]);
        let p0 = b0.pools[&PoolKind::Threads];
        assert_eq!(
            p0,
            PoolObs {
                size: 2,
                busy: 7.0 / 4.0,
                queued: 0.0,
                acquired: 2.0,
                rejected: 1.0
            }
        );
        assert_eq!(b0.interval, 4.0);
        assert_eq!(b0.arrivals, 4.0 / 4.0, "3 admitted + 1 refused");
        assert_eq!((b0.throughput, b0.errors), (0.25, 0.25));
        let rt = b0.response_time.expect("two finished");
        assert_eq!((rt.mean, rt.p50, rt.p99), (2.5, 2.0, 3.0));
        // Backend 1: one admitted, in flight over [1, 1.5], never finished.
        let p1 = b1.pools[&PoolKind::Threads];
        assert_eq!((p1.busy, p1.acquired, p1.rejected), (0.5 / 4.0, 0.0, 0.0));
        assert_eq!(
            (b1.throughput, b1.errors, b1.response_time),
            (0.0, 0.0, None)
        );
        // The next interval starts from what is still in flight (backend 0: 1).
        let o = l.observe(6.0);
        assert_eq!(o[0].pools[&PoolKind::Threads].busy, 1.0);
        assert_eq!((o[0].arrivals, o[0].interval), (0.0, 2.0));
        l.set(0, 0, "a controller's zero".into());
        assert_eq!(l.size(0), 1, "a limit is never below 1");
        assert_eq!(l.reason(0), Some("a controller's zero"));
    }
}
