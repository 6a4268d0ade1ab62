//! The client's view of a run, in the trace schema: per-request records, the 100 ms
//! series of the `client` tier, and the summary (HdrHistogram percentiles).

use std::collections::BTreeMap;

use trace::summary::{mean, rate, Errors, Little, SessionSummary, Summary, SCHEMA_VERSION};
use trace::{Output, Records, RequestStats, SeriesMeta, Status, TimeSeries};

use crate::config::Config;

/// Why a request failed, for the summary's `errors` (nothing is dropped silently), in
/// the order of its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Could not open a TCP connection.
    Connect,
    /// The response never came, or came broken: reset, closed early, not HTTP.
    Protocol,
    /// The client's timeout expired.
    Timeout,
    /// 503 from the server: an explicit rejection (a full pool).
    Rejected,
    /// Any other 4xx / 5xx.
    Http4xx,
    Http5xx,
}

impl Failure {
    pub fn status(self) -> Status {
        match self {
            Failure::Timeout => Status::Timeout,
            Failure::Rejected => Status::Rejected,
            _ => Status::Error,
        }
    }
}

/// One finished request; times in seconds from the start of the run. `start` is the
/// *intended* send time, so a late sender does not hide the wait (no coordinated
/// omission); `sent`, when the generator got to send it: `sent - start` is the
/// generator's own lag, which the response time holds and the server never sees.
pub struct Done {
    pub id: u64,
    pub session: u64,
    pub rtype: usize,
    pub start: f64,
    pub sent: f64,
    pub end: f64,
    pub failure: Option<Failure>,
    pub bytes: u64,
    /// SYNs sent again before the connection it opened got in (0 on a kept-alive one).
    pub retransmissions: u32,
}

/// Upper bounds (seconds) of the live response-time histogram's buckets, Prometheus
/// style; the last bucket (+Inf) is implicit, so a histogram has one count more.
pub const LATENCY_BOUNDS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// One request type's response times (from the intended send time) of every finished
/// request, warm-up included: counts per bucket (not cumulative) and their sum.
#[derive(Debug, Clone, Copy, Default)]
pub struct Latency {
    pub buckets: [u64; LATENCY_BOUNDS.len() + 1],
    pub sum: f64,
}

impl Latency {
    fn record(&mut self, rt: f64) {
        let i = LATENCY_BOUNDS.partition_point(|&b| b < rt);
        self.buckets[i] += 1;
        self.sum += rt;
    }
}

const METRICS: [&str; 6] = [
    "concurrency",
    "arrivals",
    "completions",
    "response_time",
    "errors",
    "send_lag",
];

pub struct Collector {
    warmup: f64,
    window: f64,
    requests: RequestStats,
    failures: [u64; 6],
    bytes: u64,
    /// Per window: METRICS, response_time and send_lag as sums until the end.
    windows: Vec<[f64; 6]>,
    records: Option<Records>,
    rt_sum: f64,
    sessions_started: u64,
    sessions_completed: u64,
    requests_of_completed: u64,
    /// Per type, for the live metrics (`Progress::latency`).
    pub latency: Vec<Latency>,
}

impl Collector {
    pub fn new(types: usize, warmup: f64, window: f64, records: bool) -> Self {
        Collector {
            warmup,
            window,
            requests: RequestStats::new(types),
            failures: [0; 6],
            bytes: 0,
            windows: Vec::new(),
            records: records.then(Records::default),
            rt_sum: 0.0,
            sessions_started: 0,
            sessions_completed: 0,
            requests_of_completed: 0,
            latency: vec![Latency::default(); types],
        }
    }

    fn window_mut(&mut self, t: f64) -> &mut [f64; 6] {
        let w = (t / self.window) as usize;
        if w >= self.windows.len() {
            self.windows.resize(w + 1, [0.0; 6]);
        }
        &mut self.windows[w]
    }

    pub fn request(&mut self, d: Done) {
        let sent = self.window_mut(d.start);
        sent[1] += 1.0;
        sent[5] += d.sent - d.start;
        let w = self.window_mut(d.end);
        w[2] += 1.0;
        w[3] += d.end - d.start;
        w[4] += d.failure.is_some() as u8 as f64;
        // Time-averaged in-flight requests: the request's overlap with each window.
        let (first, last) = (
            (d.start / self.window) as usize,
            (d.end / self.window) as usize,
        );
        for i in first..=last {
            let (a, b) = (i as f64 * self.window, (i + 1) as f64 * self.window);
            self.windows[i][0] += (d.end.min(b) - d.start.max(a)).max(0.0) / self.window;
        }
        self.latency[d.rtype].record(d.end - d.start);
        if d.start < self.warmup {
            return;
        }
        let status = d.failure.map_or(Status::Ok, Failure::status);
        self.requests.record(d.rtype, status, d.end - d.start);
        if let Some(f) = d.failure {
            self.failures[f as usize] += 1;
        }
        self.bytes += d.bytes;
        self.rt_sum += d.end - d.start;
        if let Some(r) = &mut self.records {
            r.id.push(d.id);
            r.session.push(d.session);
            r.rtype.push(d.rtype as u32);
            r.status.push(status as u8);
            r.start.push(d.start);
            r.end.push(d.end);
            r.retransmissions.push(d.retransmissions);
        }
    }

    /// A request of type `ty` was sent after the warm-up: unfinished until `request`
    /// records it.
    pub fn sent(&mut self, ty: usize) {
        self.requests.sent(ty);
    }

    pub fn session_started(&mut self, at: f64) {
        if at >= self.warmup {
            self.sessions_started += 1;
        }
    }

    pub fn session_ended(&mut self, at: f64, requests: u64) {
        if at >= self.warmup {
            self.sessions_completed += 1;
            self.requests_of_completed += requests;
        }
    }

    /// Keep the windows up to the end of the run (`elapsed`); returns how many. A
    /// request that ended after it (answered while the run drained) counts in the last
    /// one, as it counts in the summary and the records: its completion, response time
    /// and failure, not its time in flight past the end.
    fn close_windows(&mut self, elapsed: f64) -> usize {
        let n = ((elapsed / self.window).ceil() as usize).max(1);
        if self.windows.len() > n {
            let late: Vec<[f64; 6]> = self.windows.drain(n..).collect();
            let last = &mut self.windows[n - 1];
            for w in late {
                for (sum, x) in last[1..].iter_mut().zip(&w[1..]) {
                    *sum += x;
                }
            }
        }
        self.windows.resize(n, [0.0; 6]);
        n
    }

    /// The trace of the run `cfg`. `elapsed`: how long it went (short of its duration
    /// if stopped). The requests sent and not recorded are the unfinished ones.
    pub fn finish(
        mut self,
        cfg: &Config,
        elapsed: f64,
        reconnects: u64,
        interrupted: bool,
    ) -> Output {
        let span = (elapsed - self.warmup).max(0.0);
        let per_s = |x: f64| rate(x, span);
        let finished = self.requests.finished();
        let overall = self.requests.overall();
        let n = self.close_windows(elapsed);
        let mut in_system = 0.0;
        let mut values = Vec::with_capacity(n * METRICS.len());
        for (i, w) in self.windows.iter().enumerate() {
            let t = i as f64 * self.window;
            if t >= self.warmup {
                in_system += w[0] * self.window.min(elapsed - t);
            }
            let mean_rt = if w[2] > 0.0 { w[3] / w[2] } else { f64::NAN };
            let mean_lag = if w[1] > 0.0 { w[5] / w[1] } else { f64::NAN };
            values.extend([w[0], w[1], w[2], mean_rt, w[4], mean_lag]);
        }
        let series = TimeSeries {
            meta: METRICS
                .iter()
                .map(|m| SeriesMeta {
                    tier: "client".into(),
                    server: 0,
                    resource: String::new(),
                    metric: m,
                })
                .collect(),
            window_start: (0..n).map(|i| i as f64 * self.window).collect(),
            values,
        };
        let [connect, protocol, timeout, http_503, http_4xx, http_5xx] = self.failures;
        let (started, completed) = (self.sessions_started, self.sessions_completed);
        let summary = Summary {
            source: "live".into(),
            schema_version: SCHEMA_VERSION,
            window: self.window,
            seed: cfg.seed,
            duration: cfg.duration,
            warmup: self.warmup,
            measured_seconds: span,
            interrupted,
            missing: BTreeMap::new(),
            requests: overall.counts(),
            throughput: per_s(overall.status[Status::Ok as usize] as f64),
            response_time: overall.latency.percentiles(),
            types: self.requests.types(&cfg.type_names, per_s),
            tiers: BTreeMap::new(),
            links: BTreeMap::new(),
            sessions: SessionSummary {
                started,
                completed,
                throughput: per_s(completed as f64),
                mean_requests: mean(self.requests_of_completed as f64, completed),
            },
            little: Little {
                mean_in_system: per_s(in_system),
                arrival_rate: per_s(self.requests.sent_total() as f64),
                mean_time_in_system: mean(self.rt_sum, finished),
            },
            simulated_until: None,
            events: None,
            elapsed: Some(elapsed),
            target: Some(cfg.target.clone()),
            errors: Some(Errors {
                connect,
                protocol,
                timeout,
                http_503,
                http_4xx,
                http_5xx,
            }),
            bytes_received: Some(self.bytes),
            reconnects: Some(reconnects),
            control: None,
        };
        Output {
            summary,
            series,
            records: self.records,
            type_names: cfg.type_names.clone(),
            tier_names: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(start: f64, end: f64, failure: Option<Failure>) -> Done {
        Done {
            id: 0,
            session: 0,
            rtype: 0,
            start,
            sent: start,
            end,
            failure,
            bytes: 0,
            retransmissions: 0,
        }
    }

    #[test]
    fn a_request_answered_after_the_end_counts_in_the_last_window() {
        let mut c = Collector::new(1, 0.0, 0.1, false);
        c.request(done(0.05, 0.08, None));
        c.request(done(0.95, 1.03, Some(Failure::Http5xx)));
        assert_eq!(c.close_windows(1.0), 10);
        let sum = |k: usize| c.windows.iter().map(|w| w[k]).sum::<f64>();
        assert_eq!((sum(1), sum(2), sum(4)), (2.0, 2.0, 1.0));
        assert_eq!(c.windows[9][2..5], [1.0, 1.03 - 0.95, 1.0]);
        // In flight within the run only: 0.05 s of the window [0.9, 1.0).
        assert!((c.windows[9][0] - 0.5).abs() < 1e-9);
    }

    #[test]
    fn the_send_lag_is_kept_by_the_window_of_the_intended_send() {
        let mut c = Collector::new(1, 0.0, 0.1, false);
        c.request(Done {
            sent: 0.03,
            ..done(0.01, 0.05, None)
        });
        c.request(Done {
            sent: 0.07,
            ..done(0.03, 0.12, None)
        });
        c.request(done(0.15, 0.18, None));
        assert_eq!(c.close_windows(0.2), 2);
        // Window 0: two sends, lagging 0.02 and 0.04 s (the series gives their mean);
        // window 1: one on time. The second request ended in window 1, its lag stays in 0.
        assert_eq!((c.windows[0][1], c.windows[1][1]), (2.0, 1.0));
        assert!((c.windows[0][5] - 0.06).abs() < 1e-12 && c.windows[1][5] == 0.0);
    }
}
