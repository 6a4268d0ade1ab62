//! ReDAL (Dutta et al.): session affinity while the affined server is lightly loaded,
//! else the least loaded lightly-loaded server, judged by two measures:
//!
//! - *dispatchability*: the slope of each request type's throughput against its
//!   arrivals over the last m intervals, summed over types (§II-A); a server whose
//!   slope is ≤ 0 is past its peak;
//! - *modified load* m_k = l_k + α·e0_k (§II-C): l_k = requests assigned to server k in
//!   the current time slice, e0_k = requests expected there, from reservations made one
//!   think time h ahead of every request and cancelled when the request comes early.
//!
//! A server is a candidate only while it is dispatchable and, given a threshold T
//! (`threshold`, requests per second), while the capacity reserved in the current
//! slice is under T (§II-A: "we check the different application servers in the
//! cluster to see which ones have the property that the amount of reserved capacity
//! in the current time slice is under the desired maximum throughput T, and choose
//! the least loaded server among them"). The reserved capacity is m_k, counted per
//! slice of d seconds, so the bound is m_k < T·d. The affined server too must be a
//! candidate, so a server past T loses its sessions' next requests.
//!
//! ReDAL-W (`wait`) holds a request at the dispatcher while no server is a candidate.
//!
//! ReDAL-N (`test: in_progress`, the model's `redal_n`) judges dispatchability on the
//! x-axis of the paper's Fig. 4 instead: the load *in* the server. Per interval it
//! measures the throughput X_i and the time-averaged requests in progress N_i, and a
//! server is past its peak when the least-squares slope of X on N over the last m
//! intervals is ≤ 0. With closed-loop sessions arrivals follow completions, so the
//! paper's slope against arrivals stays positive even at saturation; against requests
//! in progress it flattens there (Little's law: more in progress, no more served).

use std::collections::{HashMap, VecDeque};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::{argmin_from, Dispatch, Load, Metrics, Request};

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedalConfig {
    /// Expected-load factor α ∈ (0, 1].
    pub alpha: f64,
    /// Time-slice length d, seconds (less than the think time).
    pub slice: f64,
    /// Think time h assumed until the first inter-request time is seen, seconds.
    pub think_time: f64,
    /// g: inter-request times in the moving average of h.
    pub window: usize,
    /// m: intervals in the throughput-slope window (≥ 2).
    pub intervals: usize,
    /// Length of one throughput-measurement interval, seconds.
    pub interval: f64,
    /// ReDAL-W: hold requests at the dispatcher while no server is dispatchable.
    pub wait: bool,
    /// What the throughput slope is taken against (default: arrivals, as the paper).
    #[serde(default)]
    pub test: SlopeTest,
    /// T: the throughput, requests per second, a server is kept under (none: no bound).
    #[serde(default)]
    pub threshold: Option<f64>,
}

/// The dispatchability test's x-axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SlopeTest {
    /// Per type, Σ Δthroughput / Δarrivals between intervals (§II-A).
    #[default]
    Arrivals,
    /// Least-squares slope of throughput on the mean requests in progress (ReDAL-N).
    InProgress,
}

/// ReDAL-N judges nothing while the window's mean requests in progress span less than
/// this: a slope over an unchanged load is noise.
pub const MIN_LOAD_SPREAD: f64 = 0.5;

/// Reservations are kept per slice up to h/d slices ahead, each a vector over the
/// servers: more slices than this is a typo, not a setting.
pub const MAX_SLICES_AHEAD: f64 = 100_000.0;

impl RedalConfig {
    pub fn check(&self) -> Result<(), String> {
        let c = self;
        if !(c.alpha > 0.0 && c.alpha <= 1.0) {
            return Err(format!("alpha = {} is outside (0, 1]", c.alpha));
        }
        if !(c.slice > 0.0 && c.slice < c.think_time && c.think_time / c.slice <= MAX_SLICES_AHEAD)
        {
            return Err(format!(
                "slice d = {} must be > 0 and less than the think time h = {}, with at most {MAX_SLICES_AHEAD} slices C = ⌈h/d⌉ ahead",
                c.slice, c.think_time
            ));
        }
        if c.window == 0 || c.intervals < 2 || c.interval.is_nan() || c.interval <= 0.0 {
            return Err("window g ≥ 1, intervals m ≥ 2 and interval > 0 are required".into());
        }
        if let Some(t) = c.threshold.filter(|t| !(t.is_finite() && *t > 0.0)) {
            return Err(format!(
                "threshold T = {t} must be a positive number of requests per second"
            ));
        }
        Ok(())
    }
}

/// Payload bytes of one sync message as the paper counts it (§II-D): per server, one
/// byte each for actual load and current throughput plus one per time slice of
/// expected load — 50 servers, h = 60 s, d = 5 s: 50 · (2 + 12) = 700 bytes.
pub fn sync_message_bytes(servers: usize, think_time: f64, slice: f64) -> usize {
    servers * (2 + (think_time / slice).ceil() as usize)
}

/// Per-server, per-type arrivals and completions per interval: the throughput curve
/// whose slope says whether a server is still lightly loaded.
struct Analyzer {
    interval: f64,
    m: usize,
    test: SlopeTest,
    base: i64,
    /// [server][type] = (completions, arrivals) in the current interval.
    current: Vec<Vec<(i64, i64)>>,
    /// [server]: the last m−… completed intervals, oldest first.
    history: Vec<VecDeque<Vec<(i64, i64)>>>,
    /// [server]: this dispatcher's requests in progress, since when, and their
    /// integral over the current interval (ReDAL-N's load axis).
    in_progress: Vec<(i64, f64, f64)>,
    /// [server]: the mean requests in progress of each interval in `history`.
    levels: Vec<VecDeque<f64>>,
    dispatchable: Vec<bool>,
}

impl Analyzer {
    fn new(servers: usize, interval: f64, m: usize, test: SlopeTest) -> Self {
        Analyzer {
            interval,
            m,
            test,
            base: 0,
            current: vec![Vec::new(); servers],
            history: vec![VecDeque::new(); servers],
            in_progress: vec![(0, 0.0, 0.0); servers],
            levels: vec![VecDeque::new(); servers],
            dispatchable: vec![true; servers],
        }
    }

    /// Requests in progress on k integrated up to `t` (within the current interval).
    fn integrate(&mut self, k: usize, t: f64) {
        let (n, since, area) = &mut self.in_progress[k];
        *area += *n as f64 * (t - *since).max(0.0);
        *since = t;
    }

    fn count(&mut self, k: usize, ty: usize, completion: bool, now: f64) {
        self.integrate(k, now);
        self.in_progress[k].0 += if completion { -1 } else { 1 };
        let row = &mut self.current[k];
        if row.len() <= ty {
            row.resize(ty + 1, (0, 0));
        }
        if completion {
            row[ty].0 += 1;
        } else {
            row[ty].1 += 1;
        }
    }

    /// Close the intervals that ended before `now`; re-judge dispatchability.
    fn advance(&mut self, now: f64) {
        let idx = (now / self.interval).floor() as i64;
        if idx <= self.base {
            return;
        }
        let closed = (idx - self.base).min(self.m as i64);
        for k in 0..self.current.len() {
            let ntypes = self.current[k].len();
            for i in 0..closed {
                let row = if i == 0 {
                    std::mem::take(&mut self.current[k])
                } else {
                    vec![(0, 0); ntypes]
                };
                // The interval's mean in progress; later idle-of-events intervals
                // hold the level that was left.
                self.integrate(k, (self.base + 1 + i) as f64 * self.interval);
                let level = std::mem::take(&mut self.in_progress[k].2) / self.interval;
                let h = &mut self.history[k];
                h.push_back(row);
                let l = &mut self.levels[k];
                l.push_back(level);
                if h.len() > self.m {
                    h.pop_front();
                    l.pop_front();
                }
            }
            self.in_progress[k].1 = self.in_progress[k].1.max(idx as f64 * self.interval);
            let slope = match self.test {
                SlopeTest::Arrivals => self.slope(k),
                SlopeTest::InProgress => self.slope_in_progress(k),
            };
            self.dispatchable[k] = slope.is_none_or(|s| s > 0.0);
        }
        self.base = idx;
    }

    /// Σ_p Σ_i (th_p^{i+1} − th_p^i) / (count_p^{i+1} − count_p^i) over the window,
    /// skipping pairs whose arrivals did not change; None before two intervals exist.
    fn slope(&self, k: usize) -> Option<f64> {
        let h = &self.history[k];
        if h.len() < 2 {
            return None;
        }
        let mut s = 0.0;
        let mut terms = 0;
        for (a, b) in h.iter().zip(h.iter().skip(1)) {
            for ty in 0..a.len().max(b.len()) {
                let (th0, c0) = a.get(ty).copied().unwrap_or((0, 0));
                let (th1, c1) = b.get(ty).copied().unwrap_or((0, 0));
                if c1 != c0 {
                    s += (th1 - th0) as f64 / (c1 - c0) as f64;
                    terms += 1;
                }
            }
        }
        (terms > 0).then_some(s)
    }

    /// ReDAL-N: the least-squares slope of completions per interval on the mean
    /// requests in progress, over the window; None while the load spans less than
    /// MIN_LOAD_SPREAD or fewer than two intervals exist.
    fn slope_in_progress(&self, k: usize) -> Option<f64> {
        let (h, l) = (&self.history[k], &self.levels[k]);
        if h.len() < 2 {
            return None;
        }
        let x: Vec<f64> = h
            .iter()
            .map(|row| row.iter().map(|(c, _)| *c).sum::<i64>() as f64)
            .collect();
        let ml = l.iter().sum::<f64>() / l.len() as f64;
        let lo = l.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = l.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if hi - lo < MIN_LOAD_SPREAD {
            return None;
        }
        // Σ x (l − l̄) is the covariance's numerator: centring x too adds x̄ Σ (l − l̄) = 0.
        let cov: f64 = x.iter().zip(l).map(|(a, b)| a * (b - ml)).sum();
        let var: f64 = l.iter().map(|b| (b - ml).powi(2)).sum();
        Some(cov / var)
    }
}

pub struct Redal {
    cfg: RedalConfig,
    /// Other dispatchers sharing these servers (for the new-session estimate).
    peers: i64,
    load: Load,
    gaps: VecDeque<f64>,
    gap_sum: f64,
    /// Absolute index ⌊now/d⌋ of the current slice.
    slice: i64,
    /// l_k: requests this dispatcher assigned in the current slice.
    actual: Vec<i64>,
    /// Between syncs: requests assumed sent by the other dispatchers for new sessions.
    estimate: Vec<i64>,
    /// e_i,k from the current slice on: expected[i][k].
    expected: VecDeque<Vec<i64>>,
    others: Metrics,
    /// session → (server, absolute slice) of its reservation.
    reservations: HashMap<u64, (usize, i64)>,
    pruned_at: usize,
    analyzer: Analyzer,
    turn: usize,
}

impl Redal {
    /// `peers`: how many other dispatchers share these servers.
    pub fn new(servers: usize, peers: usize, cfg: RedalConfig) -> Self {
        Redal {
            cfg,
            peers: peers as i64,
            load: Load::new(servers),
            gaps: VecDeque::new(),
            gap_sum: 0.0,
            slice: 0,
            actual: vec![0; servers],
            estimate: vec![0; servers],
            expected: VecDeque::from([vec![0; servers]]),
            others: Metrics::default(),
            reservations: HashMap::new(),
            pruned_at: 0,
            analyzer: Analyzer::new(servers, cfg.interval, cfg.intervals, cfg.test),
            turn: 0,
        }
    }

    /// The current think-time estimate h.
    pub fn think_time(&self) -> f64 {
        if self.gaps.is_empty() {
            self.cfg.think_time
        } else {
            self.gap_sum / self.gaps.len() as f64
        }
    }

    /// C = ⌈h/d⌉: slices of lookahead.
    pub fn slices(&self) -> usize {
        (self.think_time() / self.cfg.slice).ceil() as usize
    }

    pub fn dispatchable(&self, k: usize) -> bool {
        self.analyzer.dispatchable[k] || self.load.get(k) == 0
    }

    /// Whether the capacity reserved on k in the current slice, m_k, is under T·d.
    pub fn under_threshold(&self, k: usize) -> bool {
        self.cfg
            .threshold
            .is_none_or(|t| self.modified_load(k) < t * self.cfg.slice)
    }

    /// A server a request may be sent to: dispatchable and under the threshold.
    pub fn candidate(&self, k: usize) -> bool {
        self.dispatchable(k) && self.under_threshold(k)
    }

    /// m_k = l_k + α·e0_k, counting the other dispatchers' shares and estimates.
    pub fn modified_load(&self, k: usize) -> f64 {
        let l = self.actual[k] + self.estimate[k] + self.others.actual_at(self.slice, k);
        let e0 = self.expected[0][k] + self.others.expected_at(self.slice, k);
        l as f64 + self.cfg.alpha * e0 as f64
    }

    pub fn expected(&self, slice: i64, k: usize) -> i64 {
        usize::try_from(slice - self.slice)
            .ok()
            .and_then(|i| self.expected.get(i))
            .map_or(0, |row| row[k])
    }

    fn advance(&mut self, now: f64) {
        self.analyzer.advance(now);
        let idx = (now / self.cfg.slice).floor() as i64;
        if idx <= self.slice {
            return;
        }
        let n = self.actual.len();
        for _ in 0..(idx - self.slice).min(self.expected.len() as i64) {
            self.expected.pop_front();
        }
        if self.expected.is_empty() {
            self.expected.push_back(vec![0; n]);
        }
        self.actual.iter_mut().for_each(|x| *x = 0);
        self.slice = idx;
        // Reservations of ended sessions expire with their slice; drop them now and
        // then (amortized: when the map has doubled since the last pass).
        if self.reservations.len() > 2 * self.pruned_at + 1024 {
            let now_slice = self.slice;
            self.reservations.retain(|_, (_, s)| *s >= now_slice);
            self.pruned_at = self.reservations.len();
        }
    }

    fn observe_gap(&mut self, gap: f64) {
        self.gaps.push_back(gap);
        self.gap_sum += gap;
        if self.gaps.len() > self.cfg.window {
            self.gap_sum -= self.gaps.pop_front().expect("non-empty");
        }
    }

    /// The session's earlier reservation, if still ahead or current, is cancelled:
    /// its request is here (early or on time) and now counts as actual load.
    fn cancel(&mut self, session: u64) {
        if let Some((k, s)) = self.reservations.remove(&session) {
            if let Some(row) = usize::try_from(s - self.slice)
                .ok()
                .and_then(|i| self.expected.get_mut(i))
            {
                row[k] -= 1;
            }
        }
    }

    fn reserve(&mut self, now: f64, session: u64, k: usize) {
        let s = ((now + self.think_time()) / self.cfg.slice).floor() as i64;
        let i = (s - self.slice) as usize;
        let n = self.actual.len();
        while self.expected.len() <= i {
            self.expected.push_back(vec![0; n]);
        }
        self.expected[i][k] += 1;
        self.reservations.insert(session, (k, s));
    }

    fn least_loaded(&self, only_candidates: bool) -> Option<usize> {
        let n = self.actual.len();
        let candidates = (0..n).filter(|k| !only_candidates || self.candidate(*k));
        argmin_from(candidates, n, self.turn, |k| self.modified_load(k))
    }
}

impl Dispatch for Redal {
    fn pick(&mut self, now: f64, req: &Request) -> Option<usize> {
        self.advance(now);
        if let Some(g) = req.gap {
            self.observe_gap(g);
        }
        self.cancel(req.session);
        let k = match req.home {
            Some(h) if self.candidate(h) => h,
            _ => match self.least_loaded(true) {
                Some(k) => k,
                None if self.cfg.wait => return None,
                None => self.least_loaded(false).expect("servers ≥ 1"),
            },
        };
        self.turn = (k + 1) % self.actual.len();
        self.actual[k] += 1;
        if req.home.is_none() {
            self.estimate[k] += self.peers;
        }
        self.reserve(now, req.session, k);
        self.load.sent(k);
        self.analyzer.count(k, req.ty, false, now);
        Some(k)
    }

    fn done(&mut self, now: f64, server: usize, ty: usize) {
        self.advance(now);
        self.load.done(server);
        self.analyzer.count(server, ty, true, now);
    }

    fn metrics(&mut self, now: f64) -> Metrics {
        self.advance(now);
        Metrics {
            active: self.load.own().to_vec(),
            slice: self.slice,
            actual: self.actual.clone(),
            expected: self.expected.iter().cloned().collect(),
        }
    }

    fn sync(&mut self, now: f64, others: &Metrics) {
        self.advance(now);
        self.load.sync(others);
        self.others = others.clone();
        self.estimate.iter_mut().for_each(|x| *x = 0);
    }

    fn message_bytes(&self) -> usize {
        sync_message_bytes(self.load.servers(), self.cfg.think_time, self.cfg.slice)
    }

    fn dispatchable(&self, server: usize) -> bool {
        Redal::dispatchable(self, server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> RedalConfig {
        RedalConfig {
            alpha: 0.5,
            slice: 1.0,
            think_time: 3.0,
            window: 2,
            intervals: 3,
            interval: 1.0,
            wait: false,
            test: SlopeTest::Arrivals,
            threshold: None,
        }
    }

    fn req(session: u64, home: Option<usize>, gap: Option<f64>) -> Request {
        Request {
            session,
            ty: 0,
            home,
            gap,
        }
    }

    #[test]
    fn paper_sync_message_size() {
        assert_eq!(sync_message_bytes(50, 60.0, 5.0), 700);
    }

    #[test]
    fn parameters_out_of_range_are_named() {
        let bad = |f: fn(&mut RedalConfig)| {
            let mut c = cfg();
            f(&mut c);
            c.check().unwrap_err()
        };
        assert!(bad(|c| c.alpha = 0.0).contains("alpha"));
        assert!(bad(|c| c.alpha = 1.5).contains("alpha"));
        assert!(bad(|c| c.slice = 3.0).contains("think time"));
        assert!(bad(|c| c.intervals = 1).contains("intervals"));
        assert!(cfg().check().is_ok());
    }

    #[test]
    fn reservation_one_think_time_ahead_then_cancelled_early_or_expired() {
        let mut r = Redal::new(2, 0, cfg());
        assert_eq!(r.pick(0.2, &req(1, None, None)), Some(0));
        // h = 3 (assumed): reserved in slice ⌊3.2⌋ = 3 on server 0.
        assert_eq!(r.expected(3, 0), 1);
        assert_eq!(r.slices(), 3);
        // Early arrival (slice 1): the reservation is cancelled, a new one is made.
        assert_eq!(r.pick(1.5, &req(1, Some(0), Some(1.3))), Some(0));
        assert_eq!(r.expected(3, 0), 0);
        // h is now the mean of the gaps seen (1.3): reserved at ⌊1.5 + 1.3⌋ = 2.
        assert_eq!(r.expected(2, 0), 1);
        // A session that never returns: its reservation leaves with its slice.
        r.metrics(5.0);
        assert_eq!(r.expected(2, 0), 0);
        assert_eq!(r.expected[0], vec![0, 0]);
    }

    #[test]
    fn modified_load_is_actual_plus_alpha_expected() {
        let mut r = Redal::new(
            2,
            0,
            RedalConfig {
                think_time: 0.5 + 1e-9,
                slice: 0.5,
                ..cfg()
            },
        );
        // Two requests in slice 0 reserve for slice ⌊(0.1+0.5)/0.5⌋ = 1 on servers 0, 1.
        r.pick(0.1, &req(1, Some(0), None));
        r.pick(0.1, &req(2, Some(1), None));
        r.pick(0.2, &req(3, Some(0), None));
        assert_eq!(r.modified_load(0), 2.0);
        r.metrics(0.6); // slice 1: l = 0, e0 = reservations
        assert_eq!(r.modified_load(0), 0.5 * 2.0);
        assert_eq!(r.modified_load(1), 0.5 * 1.0);
        // A new session goes to the least modified load: server 1.
        assert_eq!(r.pick(0.6, &req(9, None, None)), Some(1));
    }

    /// One analyzer interval [t, t+1) on server 0: `arrivals` requests, then `completions`.
    fn interval(r: &mut Redal, t: f64, arrivals: u64, completions: u64) {
        for i in 0..arrivals {
            r.pick(t + 0.01, &req(1000 * t as u64 + i, Some(0), None));
        }
        for _ in 0..completions {
            r.done(t + 0.02, 0, 0);
        }
    }

    /// Arrivals keep growing while completions stay flat: slope ≤ 0 → not dispatchable.
    #[test]
    fn dispatchability_flips_when_the_slope_turns_non_positive() {
        let mut r = Redal::new(2, 0, cfg());
        for (t, n) in [2, 4, 6].into_iter().enumerate() {
            interval(&mut r, t as f64, n, n); // throughput follows load: slope +1 per pair
        }
        r.metrics(3.0);
        assert!(r.dispatchable(0));
        for (t, n) in [8, 10].into_iter().enumerate() {
            interval(&mut r, 3.0 + t as f64, n, 6); // saturated: completions flat at 6
        }
        r.metrics(5.0);
        assert_eq!(r.analyzer.slope(0), Some(0.0));
        assert!(!r.dispatchable(0));
        // The affined server is skipped for the least-loaded dispatchable one.
        assert_eq!(r.pick(5.1, &req(999, Some(0), None)), Some(1));
    }

    #[test]
    fn redal_w_waits_when_nothing_is_dispatchable() {
        // One server whose arrivals grow while completions stay at 2: slope ≤ 0.
        let saturated = |wait: bool| {
            let mut r = Redal::new(1, 0, RedalConfig { wait, ..cfg() });
            for (t, (a, c)) in [(2, 2), (4, 2), (6, 2), (8, 2)].into_iter().enumerate() {
                interval(&mut r, t as f64, a, c);
            }
            r.pick(4.1, &req(77, Some(0), None))
        };
        assert_eq!(saturated(true), None);
        // The standard variant sends it to the least loaded server anyway.
        assert_eq!(saturated(false), Some(0));
        // While a server is dispatchable, ReDAL-W sends at once.
        let mut w = Redal::new(
            2,
            0,
            RedalConfig {
                wait: true,
                ..cfg()
            },
        );
        assert_eq!(w.pick(0.1, &req(1, None, None)), Some(0));
    }

    /// Pick, then finish the request at once: no request stays in progress, so the
    /// slope test never judges (an idle server is dispatchable) and T alone decides.
    fn send(r: &mut Redal, now: f64, session: u64, home: Option<usize>) -> Option<usize> {
        let k = r.pick(now, &req(session, home, None));
        if let Some(k) = k {
            r.done(now, k, 0);
        }
        k
    }

    /// T = 2 requests/s on slices of d = 1 s: a server is a candidate while
    /// m_k = l_k + α·e0_k < 2. Two requests of sessions homed on server 0 fill it; the
    /// third session homed there goes to server 1, the least loaded under T.
    #[test]
    fn a_server_past_the_threshold_loses_affinity() {
        let config = RedalConfig {
            threshold: Some(2.0),
            ..cfg()
        };
        let mut r = Redal::new(2, 0, config);
        assert_eq!(send(&mut r, 0.1, 1, Some(0)), Some(0));
        assert!(r.under_threshold(0), "m_0 = 1 < T·d = 2");
        assert_eq!(send(&mut r, 0.2, 2, Some(0)), Some(0));
        assert!(
            !r.candidate(0) && r.dispatchable(0),
            "m_0 = 2: past T, slope fine"
        );
        assert_eq!(send(&mut r, 0.3, 3, Some(0)), Some(1));
        // The next slice starts empty (l = 0, nothing reserved for it): home again.
        assert_eq!(send(&mut r, 1.1, 4, Some(0)), Some(0));
        // Reservations count: h = 3 s puts session 5's next request in slice 4 on
        // server 1, α·e0 = 0.5 there; with l = 2 more, m_1 = 2.5 ≥ 2 in slice 4.
        send(&mut r, 1.2, 5, Some(1));
        send(&mut r, 4.1, 6, Some(1));
        assert_eq!(r.modified_load(1), 1.0 + 0.5);
        assert_eq!(send(&mut r, 4.2, 7, Some(1)), Some(1));
        assert_eq!(r.modified_load(1), 2.0 + 0.5);
        assert_eq!(send(&mut r, 4.3, 8, Some(1)), Some(0));
    }

    /// Without a threshold (the default) affinity holds however many requests a slice
    /// brings, while the slope test passes: the policy as it was.
    #[test]
    fn without_a_threshold_affinity_holds_at_any_count() {
        let mut r = Redal::new(2, 0, cfg());
        for s in 0..50 {
            assert_eq!(r.pick(0.1, &req(s, Some(0), None)), Some(0));
        }
        assert!(r.under_threshold(0));
    }

    /// Every server past T: ReDAL-W holds the request, ReDAL sends it to the least
    /// loaded server anyway; in the next slice both send it.
    #[test]
    fn redal_w_waits_while_every_server_is_past_the_threshold() {
        let full = |wait: bool| {
            let mut r = Redal::new(
                2,
                0,
                RedalConfig {
                    wait,
                    threshold: Some(1.0),
                    ..cfg()
                },
            );
            send(&mut r, 0.1, 1, Some(0));
            send(&mut r, 0.1, 2, Some(1));
            let now = send(&mut r, 0.2, 3, Some(0));
            (now, send(&mut r, 1.2, 3, Some(0)))
        };
        assert_eq!(full(true), (None, Some(0)));
        assert_eq!(full(false), (Some(0), Some(0)));
    }

    #[test]
    fn ranges_at_the_edges_of_the_configuration() {
        let with = |f: fn(&mut RedalConfig)| {
            let mut c = cfg();
            f(&mut c);
            c.check()
        };
        assert!(
            with(|c| c.intervals = 2).is_ok(),
            "m = 2 is the least slope window"
        );
        assert!(with(|c| c.interval = 0.0)
            .unwrap_err()
            .contains("interval > 0"));
        assert!(with(|c| c.window = 0).unwrap_err().contains("window"));
        // h/d = 3 / 3e-5 = 100 000 slices is the most; a smaller d is refused.
        assert!(with(|c| c.slice = 3.0 / MAX_SLICES_AHEAD).is_ok());
        assert!(with(|c| c.slice = 1e-5).unwrap_err().contains("slices"));
        assert!(with(|c| c.slice = -0.0).unwrap_err().contains("slice d"));
        assert!(with(|c| c.threshold = Some(0.0))
            .unwrap_err()
            .contains("threshold T"));
        assert!(with(|c| c.threshold = Some(f64::NAN))
            .unwrap_err()
            .contains("threshold T"));
    }

    #[test]
    fn think_time_is_the_mean_of_the_last_g_gaps_and_sets_the_lookahead() {
        let mut r = Redal::new(
            1,
            0,
            RedalConfig {
                slice: 0.5,
                ..cfg()
            },
        );
        assert_eq!(
            (r.think_time(), r.slices()),
            (3.0, 6),
            "assumed h = 3, d = 0.5"
        );
        for (i, g) in [1.0, 2.0, 4.0].into_iter().enumerate() {
            r.pick(0.1, &req(i as u64, None, Some(g)));
        }
        // g = 2: the mean of the last two gaps, (2 + 4) / 2; C = ⌈3/0.5⌉ = 6.
        assert_eq!(r.think_time(), 3.0);
        r.pick(0.1, &req(9, None, Some(1.0)));
        assert_eq!((r.think_time(), r.slices()), (2.5, 5));
    }

    /// The slope on 2 s intervals: (arrivals, completions) = (2, 2), (4, 3), (8, 4) give
    /// (3 − 2)/(4 − 2) + (4 − 3)/(8 − 4) = 0.75 over m = 3 intervals.
    #[test]
    fn the_slope_sums_throughput_over_arrival_differences() {
        let mut r = Redal::new(
            1,
            0,
            RedalConfig {
                interval: 2.0,
                ..cfg()
            },
        );
        interval(&mut r, 0.0, 2, 2);
        interval(&mut r, 2.0, 4, 3);
        r.metrics(4.0);
        assert_eq!(r.analyzer.slope(0), Some(0.5), "two intervals: one pair");
        interval(&mut r, 4.0, 8, 4);
        r.metrics(6.0);
        assert_eq!(r.analyzer.slope(0), Some(0.75));
        // A fourth interval pushes the first out of the window of m = 3: (4, 3) → (8, 4)
        // gives 0.25, then (8, 4) → (8, 4) has no arrival change and is skipped.
        interval(&mut r, 6.0, 8, 4);
        r.metrics(8.0);
        assert_eq!(r.analyzer.slope(0), Some(0.25));
        assert!(r.analyzer.dispatchable[0]);
    }

    /// (2, 2), (4, 4), (6, 4): slope 1 + 0 over the window of m = 3, still dispatchable;
    /// the last pair alone (0) would not be.
    #[test]
    fn the_window_holds_m_intervals() {
        let mut r = Redal::new(1, 0, cfg());
        for (t, (a, c)) in [(2, 2), (4, 4), (6, 4)].into_iter().enumerate() {
            interval(&mut r, t as f64, a, c);
        }
        r.metrics(3.0);
        assert_eq!(r.analyzer.slope(0), Some(1.0));
        assert!(r.analyzer.dispatchable[0]);
    }

    #[test]
    fn unchanged_arrivals_give_no_slope_and_keep_the_server_dispatchable() {
        let mut r = Redal::new(1, 0, cfg());
        interval(&mut r, 0.0, 2, 2);
        interval(&mut r, 1.0, 2, 1);
        r.metrics(2.0);
        assert_eq!(r.analyzer.slope(0), None);
        assert!(r.analyzer.dispatchable[0]);
    }

    /// A closed loop past its peak: arrivals equal completions every interval (7, 6, 5)
    /// while each request stays longer (0.1, 0.5, 0.98 s), so more are in progress
    /// (0.7, 3, 4.9) and fewer served. Δthroughput/Δarrivals is +1 for each pair, so
    /// the paper's test stays positive; ReDAL-N's slope on requests in progress is < 0.
    #[test]
    fn in_progress_test_flips_where_the_arrivals_test_does_not() {
        let run = |test: SlopeTest| {
            // One server: ReDAL (not -W) sends there even when it is not dispatchable.
            let mut r = Redal::new(1, 0, RedalConfig { test, ..cfg() });
            let mut session = 0;
            for (t, (n, stay)) in [(7, 0.1), (6, 0.5), (5, 0.98)].into_iter().enumerate() {
                let t = t as f64;
                for _ in 0..n {
                    session += 1;
                    r.pick(t + 0.01, &req(session, Some(0), None));
                }
                for _ in 0..n {
                    r.done(t + 0.01 + stay, 0, 0);
                }
            }
            r.metrics(3.0);
            r
        };
        let paper = run(SlopeTest::Arrivals);
        assert_eq!(paper.analyzer.slope(0), Some(2.0));
        assert!(paper.dispatchable(0));
        let n = run(SlopeTest::InProgress);
        assert!(n.analyzer.slope_in_progress(0).unwrap() < 0.0);
        assert!(!n.analyzer.dispatchable[0]);
        // Idle (nothing in progress), a server is dispatchable whatever its slope.
        assert!(n.dispatchable(0));
    }

    /// ReDAL-N's load axis, by hand, on 2 s intervals: 4 requests in progress over
    /// [0.5, 1.5), 2 of them done at 1.5 and the others at 21. Levels: interval 0
    /// (4·1 + 2·0.5)/2 = 2.5, then 2 while nothing changes; after a gap longer than the
    /// window, interval 10 counts from its own start: 2·1/2 = 1.
    #[test]
    fn in_progress_levels_are_each_interval_s_mean_load() {
        let config = RedalConfig {
            test: SlopeTest::InProgress,
            interval: 2.0,
            ..cfg()
        };
        let mut r = Redal::new(1, 0, config);
        for s in 0..4 {
            r.pick(0.5, &req(s, Some(0), None));
        }
        r.done(1.5, 0, 0);
        r.done(1.5, 0, 0);
        r.metrics(4.0);
        let a = &r.analyzer;
        assert_eq!(Vec::from(a.levels[0].clone()), [2.5, 2.0]);
        // Completions (2, 0) on loads (2.5, 2): slope 2·0.25 / (2·0.25²) = 4, with a
        // spread of exactly MIN_LOAD_SPREAD and two intervals: both just enough.
        assert_eq!(a.slope_in_progress(0), Some(4.0));
        r.metrics(6.0);
        assert_eq!(Vec::from(r.analyzer.levels[0].clone()), [2.5, 2.0, 2.0]);
        r.metrics(20.0);
        assert_eq!(Vec::from(r.analyzer.levels[0].clone()), [2.0, 2.0, 2.0]);
        assert_eq!(r.analyzer.slope_in_progress(0), None, "no spread");
        r.done(21.0, 0, 0);
        r.done(21.0, 0, 0);
        r.metrics(22.0);
        let a = &r.analyzer;
        assert_eq!(Vec::from(a.levels[0].clone()), [2.0, 2.0, 1.0]);
        // Completions (0, 0, 2) on loads (2, 2, 1): −2·(2/3) / (6/9) = −2.
        let slope = a.slope_in_progress(0).unwrap();
        assert!((slope + 2.0).abs() < 1e-12, "{slope}");
        assert!(!a.dispatchable[0]);
        // As the trait reports it (idle: dispatchable whatever the slope).
        let d: &dyn Dispatch = &r;
        assert!(d.dispatchable(0));
    }

    /// Through the trait, as the proxy's /metrics asks: a server judged past its peak
    /// is not dispatchable while requests are in progress there.
    #[test]
    fn the_trait_reports_redal_s_judgement() {
        let mut r = Redal::new(1, 0, cfg());
        // Arrivals 2, 4, 6 with completions 2, 2, 2: slope 0, not dispatchable.
        for (t, arrivals) in [(0.0, 2), (1.0, 4), (2.0, 6)] {
            interval(&mut r, t, arrivals, 2);
        }
        r.metrics(3.0);
        let d: &dyn Dispatch = &r;
        assert!(!d.dispatchable(0));
    }

    fn one_server_in_progress() -> Redal {
        let config = RedalConfig {
            test: SlopeTest::InProgress,
            ..cfg()
        };
        Redal::new(1, 0, config)
    }

    /// Throughput following the load in progress: slope X/N = 2 per request held.
    #[test]
    fn in_progress_slope_is_the_least_squares_fit_of_throughput_on_mean_load() {
        let mut r = one_server_in_progress();
        let mut s = 0;
        for (t, held) in [1u64, 2, 3].into_iter().enumerate() {
            // `held` requests in progress the whole second, 2·held completed at its end.
            let t = t as f64;
            for _ in 0..3 * held {
                s += 1;
                r.pick(t, &req(s, Some(0), None));
            }
            for _ in 0..2 * held {
                r.done(t + 0.5, 0, 0);
            }
            for _ in 0..held {
                r.done(t + 0.999_999, 0, 0);
            }
        }
        r.metrics(3.0);
        // Mean in progress per interval ≈ 3h·0.5 + h·0.5 = 2h; completions 3h: slope 1.5.
        let slope = r.analyzer.slope_in_progress(0).unwrap();
        assert!((slope - 1.5).abs() < 1e-3, "{slope}");
        assert!(r.dispatchable(0));
    }

    #[test]
    fn in_progress_test_judges_nothing_on_an_unchanged_load() {
        let mut r = one_server_in_progress();
        for t in 0..3 {
            interval(&mut r, t as f64, 2, 2);
        }
        r.metrics(3.0);
        assert_eq!(r.analyzer.slope_in_progress(0), None);
        assert!(r.analyzer.dispatchable[0]);
    }

    #[test]
    fn a_later_slice_keeps_the_reservations_still_ahead() {
        let mut r = Redal::new(1, 0, cfg());
        r.metrics(2.5); // slice 2
        r.pick(2.5, &req(1, None, None)); // reserved for ⌊2.5 + 3⌋ = 5
        r.metrics(3.5); // slice 3: one slice passed, slice 5 still two ahead
        assert_eq!(r.expected(5, 0), 1);
    }

    #[test]
    fn others_reservations_count_in_the_modified_load() {
        let mut r = Redal::new(2, 1, cfg());
        r.sync(
            0.2,
            &Metrics {
                active: vec![0, 0],
                slice: 0,
                actual: vec![1, 0],
                expected: vec![vec![2, 0]],
            },
        );
        assert_eq!(r.modified_load(0), 1.0 + 0.5 * 2.0);
    }

    /// Ties between equal modified loads rotate from the server after the last pick.
    #[test]
    fn ties_rotate_over_the_servers() {
        let mut r = Redal::new(3, 0, cfg());
        let picks: Vec<_> = (0..4)
            .map(|i| r.pick(0.1, &req(i, None, None)).unwrap())
            .collect();
        assert_eq!(picks, [0, 1, 2, 0]);
    }

    /// Reservations of sessions that never came back are dropped once the map holds
    /// more than 1024 + twice what the last pass kept; the live ones stay.
    #[test]
    fn expired_reservations_are_pruned_past_the_threshold() {
        let fill = |n: u64| {
            let mut r = Redal::new(1, 0, cfg());
            (0..n).for_each(|i| {
                r.pick(0.1, &req(i, None, None));
            });
            r.pick(9.1, &req(n, None, None)); // slice 9: all but this one expired
            r.reservations.len()
        };
        assert_eq!(fill(1024), 1025, "1024 reservations: not yet");
        assert_eq!(fill(1025), 1, "1025: only the live one is kept");
    }

    #[test]
    fn new_sessions_count_for_every_dispatcher_until_the_next_sync() {
        let mut r = Redal::new(2, 4, cfg());
        r.pick(0.1, &req(1, None, None));
        assert_eq!(r.modified_load(0), 1.0 + 4.0);
        r.sync(
            0.2,
            &Metrics {
                active: vec![0, 0],
                slice: 0,
                actual: vec![2, 1],
                expected: vec![vec![0, 0]],
            },
        );
        assert_eq!(r.modified_load(0), 1.0 + 2.0); // estimate replaced by the real counts
        assert_eq!(r.modified_load(1), 1.0);
    }
}
