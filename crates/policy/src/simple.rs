//! The industry's policies: round robin, affinity, random, least active (HJ), the
//! power of two choices (Envoy's least request) and affinity with a cap (HAProxy's
//! `hash-preserve-affinity maxconn`).

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::{argmin_from, Dispatch, Load, Metrics, Request};

/// Smooth weighted round robin (the nginx algorithm), per request: with equal weights
/// the cycle 0, 1, …, n−1; with weights, each server's share equals its weight's share
/// and its turns are spread out rather than bunched.
pub struct RoundRobin {
    weights: Vec<i64>,
    current: Vec<i64>,
    total: i64,
}

impl RoundRobin {
    /// `weights` must be non-empty with a positive sum.
    pub fn new(weights: &[u32]) -> Self {
        let weights: Vec<i64> = weights.iter().map(|w| *w as i64).collect();
        let total = weights.iter().sum();
        assert!(total > 0, "round robin needs a positive total weight");
        RoundRobin {
            current: vec![0; weights.len()],
            weights,
            total,
        }
    }

    pub fn equal(servers: usize) -> Self {
        Self::new(&vec![1; servers])
    }

    fn next(&mut self) -> usize {
        let mut best = 0;
        for i in 0..self.weights.len() {
            self.current[i] += self.weights[i];
            if self.current[i] > self.current[best] {
                best = i;
            }
        }
        self.current[best] -= self.total;
        best
    }
}

impl Dispatch for RoundRobin {
    fn pick(&mut self, _now: f64, _req: &Request) -> Option<usize> {
        Some(self.next())
    }
}

/// Session affinity, industry practice: a session's first request goes round robin,
/// the rest to the server holding its state.
pub struct Affinity(RoundRobin);

impl Affinity {
    pub fn new(servers: usize) -> Self {
        Affinity(RoundRobin::equal(servers))
    }
}

impl Dispatch for Affinity {
    fn pick(&mut self, _now: f64, req: &Request) -> Option<usize> {
        Some(req.home.unwrap_or_else(|| self.0.next()))
    }
}

/// Uniformly random, no affinity.
pub struct Random {
    n: usize,
    rng: Pcg64Mcg,
}

impl Random {
    pub fn new(servers: usize, seed: u64) -> Self {
        Random {
            n: servers,
            rng: Pcg64Mcg::seed_from_u64(seed),
        }
    }
}

impl Dispatch for Random {
    fn pick(&mut self, _now: f64, _req: &Request) -> Option<usize> {
        Some(self.rng.random_range(0..self.n))
    }
}

/// Least active requests, no affinity: the "HJ" policy of the ReDAL paper.
pub struct LeastActive {
    load: Load,
    turn: usize,
}

impl LeastActive {
    pub fn new(servers: usize) -> Self {
        LeastActive {
            load: Load::new(servers),
            turn: 0,
        }
    }
}

/// The load bookkeeping every active-count policy shares.
macro_rules! active_load {
    () => {
        fn done(&mut self, _now: f64, server: usize, _ty: usize) {
            self.load.done(server);
        }

        fn metrics(&mut self, _now: f64) -> Metrics {
            Metrics {
                active: self.load.own().to_vec(),
                ..Default::default()
            }
        }

        fn sync(&mut self, _now: f64, others: &Metrics) {
            self.load.sync(others);
        }

        /// One active count per server.
        fn message_bytes(&self) -> usize {
            self.load.servers()
        }
    };
}

impl Dispatch for LeastActive {
    fn pick(&mut self, _now: f64, _req: &Request) -> Option<usize> {
        let n = self.load.servers();
        let k = argmin_from(0..n, n, self.turn, |k| self.load.get(k)).expect("servers ≥ 1");
        self.turn = (k + 1) % n;
        self.load.sent(k);
        Some(k)
    }

    active_load!();
}

/// Power of two choices on active requests (Envoy's default least-request balancer):
/// two distinct servers drawn at random, the less busy one wins; no affinity.
pub struct PowerOfTwo {
    load: Load,
    rng: Pcg64Mcg,
}

impl PowerOfTwo {
    pub fn new(servers: usize, seed: u64) -> Self {
        PowerOfTwo {
            load: Load::new(servers),
            rng: Pcg64Mcg::seed_from_u64(seed),
        }
    }
}

impl Dispatch for PowerOfTwo {
    fn pick(&mut self, _now: f64, _req: &Request) -> Option<usize> {
        let n = self.load.servers();
        let a = self.rng.random_range(0..n);
        let k = if n == 1 {
            a
        } else {
            let b = (a + 1 + self.rng.random_range(0..n - 1)) % n;
            if self.load.get(b) < self.load.get(a) {
                b
            } else {
                a
            }
        };
        self.load.sent(k);
        Some(k)
    }

    active_load!();
}

/// Affinity that skips a server at a static cap of active requests (HAProxy's
/// `hash-preserve-affinity maxconn`): the session stays on its server below the cap,
/// else moves to the least active server; new sessions go round robin over the
/// servers below the cap.
pub struct AffinityCap {
    load: Load,
    rr: RoundRobin,
    cap: i64,
    turn: usize,
}

impl AffinityCap {
    pub fn new(servers: usize, cap: u32) -> Self {
        AffinityCap {
            load: Load::new(servers),
            rr: RoundRobin::equal(servers),
            cap: cap as i64,
            turn: 0,
        }
    }
}

impl Dispatch for AffinityCap {
    fn pick(&mut self, _now: f64, req: &Request) -> Option<usize> {
        let n = self.load.servers();
        let below = |k: usize| self.load.get(k) < self.cap;
        let k = match req.home {
            Some(h) if below(h) => h,
            Some(_) => argmin_from(0..n, n, self.turn, |k| self.load.get(k)).expect("servers ≥ 1"),
            None => (0..n)
                .map(|_| self.rr.next())
                .find(|k| below(*k))
                .unwrap_or_else(|| {
                    argmin_from(0..n, n, self.turn, |k| self.load.get(k)).expect("servers ≥ 1")
                }),
        };
        self.turn = (k + 1) % n;
        self.load.sent(k);
        Some(k)
    }

    active_load!();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(home: Option<usize>) -> Request {
        Request {
            home,
            ..Default::default()
        }
    }

    /// A policy that judges no load calls every server dispatchable (the proxy's
    /// /metrics reports it).
    #[test]
    fn a_policy_without_a_load_test_calls_every_server_dispatchable() {
        let rr: &dyn Dispatch = &RoundRobin::equal(2);
        assert!(rr.dispatchable(0) && rr.dispatchable(1));
    }

    #[test]
    fn equal_weights_cycle_in_order() {
        let mut rr = RoundRobin::equal(3);
        let picks: Vec<_> = (0..6).map(|_| rr.pick(0.0, &req(None)).unwrap()).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn weights_give_proportional_and_spread_shares() {
        let mut rr = RoundRobin::new(&[5, 1, 1]);
        let picks: Vec<_> = (0..7).map(|_| rr.pick(0.0, &req(None)).unwrap()).collect();
        assert_eq!(picks, [0, 0, 1, 0, 2, 0, 0]);
    }

    #[test]
    fn zero_weight_server_never_chosen() {
        let mut rr = RoundRobin::new(&[1, 0]);
        assert!((0..10).all(|_| rr.pick(0.0, &req(None)) == Some(0)));
    }

    #[test]
    fn affinity_keeps_sessions_and_round_robins_new_ones() {
        let mut a = Affinity::new(3);
        assert_eq!(a.pick(0.0, &req(None)), Some(0));
        assert_eq!(a.pick(0.0, &req(Some(2))), Some(2));
        assert_eq!(a.pick(0.0, &req(None)), Some(1));
    }

    #[test]
    fn least_active_picks_the_idlest_and_spreads_ties() {
        let mut p = LeastActive::new(3);
        let first: Vec<_> = (0..3)
            .map(|_| p.pick(0.0, &req(Some(0))).unwrap())
            .collect();
        assert_eq!(first, [0, 1, 2]); // ignores affinity; ties rotate
        p.done(0.0, 1, 0);
        assert_eq!(p.pick(0.0, &req(None)), Some(1));
        p.sync(
            0.0,
            &Metrics {
                active: vec![0, 0, 9],
                ..Default::default()
            },
        );
        p.done(0.0, 0, 0);
        assert_eq!(p.pick(0.0, &req(None)), Some(0)); // others' load counts
    }

    #[test]
    fn power_of_two_never_picks_the_busier_of_its_two() {
        let mut p = PowerOfTwo::new(2, 7);
        // With two servers both are always drawn: the pick is always the idler one.
        for _ in 0..50 {
            let k = p.pick(0.0, &req(None)).unwrap();
            let other = 1 - k;
            assert!(p.load.get(k) - 1 <= p.load.get(other));
        }
        assert_eq!(p.load.get(0) + p.load.get(1), 50, "every pick counted");
        assert!((p.load.get(0) - p.load.get(1)).abs() <= 1);
    }

    #[test]
    fn least_active_ties_start_after_the_last_pick() {
        let mut p = LeastActive::new(3);
        let picks: Vec<_> = (0..4).map(|_| p.pick(0.0, &req(None)).unwrap()).collect();
        assert_eq!(picks, [0, 1, 2, 0]);
        assert_eq!(p.metrics(0.0).active, [2, 1, 1], "its own active counts");
    }

    /// On a tie the first draw wins: with every server idle, the picks are the first
    /// draws of the seeded generator.
    #[test]
    fn power_of_two_keeps_the_first_draw_on_a_tie() {
        let mut p = PowerOfTwo::new(3, 11);
        let mut rng = Pcg64Mcg::seed_from_u64(11);
        for _ in 0..50 {
            let a = rng.random_range(0..3);
            rng.random_range(0..2);
            let k = p.pick(0.0, &req(None)).unwrap();
            assert_eq!(k, a);
            p.done(0.0, k, 0);
        }
    }

    /// Its two draws are distinct, so the one busiest server never wins.
    #[test]
    fn power_of_two_never_picks_the_busiest_of_three() {
        let mut p = PowerOfTwo::new(3, 5);
        p.sync(
            0.0,
            &Metrics {
                active: vec![9, 0, 0],
                ..Default::default()
            },
        );
        for _ in 0..100 {
            let k = p.pick(0.0, &req(None)).unwrap();
            assert_ne!(k, 0);
            p.done(0.0, k, 0);
        }
    }

    #[test]
    fn random_is_uniform_and_seeded() {
        let counts = |seed| {
            let mut p = Random::new(4, seed);
            let mut c = [0u32; 4];
            (0..4000).for_each(|_| c[p.pick(0.0, &req(None)).unwrap()] += 1);
            c
        };
        assert_eq!(counts(3), counts(3));
        assert!(counts(3).iter().all(|c| (900..1100).contains(c)));
    }

    #[test]
    fn affinity_cap_moves_a_session_off_a_full_server() {
        let mut p = AffinityCap::new(3, 2);
        assert_eq!(p.pick(0.0, &req(Some(1))), Some(1));
        assert_eq!(p.pick(0.0, &req(Some(1))), Some(1));
        assert_eq!(p.pick(0.0, &req(Some(1))), Some(2)); // at the cap: least active (tie 0/2)
        p.done(0.0, 1, 0);
        assert_eq!(p.pick(0.0, &req(Some(1))), Some(1));
        // New sessions: round robin, skipping servers at the cap (1 is full).
        assert_eq!(p.pick(0.0, &req(None)), Some(0));
        assert_eq!(p.pick(0.0, &req(None)), Some(2));
    }

    /// Cap 1: each session finds its server full and moves to the least active; the
    /// ties start after the last pick.
    #[test]
    fn affinity_cap_ties_start_after_the_last_pick() {
        let mut p = AffinityCap::new(3, 1);
        let picks: Vec<_> = [0, 0, 1, 2]
            .map(|h| p.pick(0.0, &req(Some(h))).unwrap())
            .to_vec();
        assert_eq!(picks, [0, 1, 2, 0]);
    }

    /// The ReDAL paper's worked example (§I-C, Figs. 2–3): two servers, RR + affinity,
    /// sessions s1 s2 S3 s4 s5 S6 s7 S8 S9 s10 one minute apart, s = 1 min, S = 3 min.
    #[test]
    fn paper_worked_example_affinity_imbalance() {
        let long = [
            false, false, true, false, false, true, false, true, true, false,
        ];
        let mut a = Affinity::new(2);
        let sessions: Vec<(usize, f64, f64)> = long
            .iter()
            .enumerate()
            .map(|(i, l)| {
                (
                    a.pick(i as f64, &req(None)).unwrap(),
                    i as f64,
                    i as f64 + if *l { 3.0 } else { 1.0 },
                )
            })
            .collect();
        let active = |server: usize, t: f64| {
            sessions
                .iter()
                .filter(|(s, b, e)| *s == server && *b <= t && t < *e)
                .count()
        };
        let timeline = |server| {
            (0..12)
                .map(|m| active(server, m as f64 + 0.5))
                .collect::<Vec<_>>()
        };
        // Minutes 0..11 (value at each minute's midpoint), A1 = server 0, A2 = server 1.
        assert_eq!(timeline(0), [1, 0, 1, 1, 2, 0, 1, 0, 1, 1, 1, 0]);
        assert_eq!(timeline(1), [0, 1, 0, 1, 0, 1, 1, 2, 1, 2, 0, 0]);
        assert_eq!((active(0, 4.5), active(1, 4.5)), (2, 0)); // (4,5): A1 full, A2 idle
        assert_eq!((active(0, 7.5), active(1, 7.5)), (0, 2)); // (7,8): the mirror image
    }
}
