//! Decision cost per request of every dispatch policy over 20 servers: one `pick` and
//! the matching `done`, with 2,000 sessions returning after ~1 s and time advancing
//! 0.5 ms per request (2,000 requests/s), so ReDAL's slices, intervals and
//! reservations roll as they do in a run.

use criterion::{criterion_group, criterion_main, Criterion};
use policy::{Dispatch, Policy, RedalConfig, Request, SlopeTest};
use std::hint::black_box;

const SERVERS: usize = 20;
const SESSIONS: u64 = 2_000;

fn policies() -> Vec<(&'static str, Policy)> {
    let redal = RedalConfig {
        alpha: 0.9,
        slice: 0.1,
        think_time: 1.0,
        window: 100,
        intervals: 5,
        interval: 1.0,
        wait: false,
        test: SlopeTest::Arrivals,
        threshold: None,
    };
    vec![
        ("round_robin", Policy::RoundRobin { weights: vec![] }),
        ("affinity", Policy::Affinity),
        ("random", Policy::Random),
        ("least_active", Policy::LeastActive),
        ("power_of_two", Policy::PowerOfTwo),
        ("affinity_cap", Policy::AffinityCap { cap: 8 }),
        ("redal", Policy::Redal(redal)),
        (
            "redal_w",
            Policy::Redal(RedalConfig {
                wait: true,
                ..redal
            }),
        ),
        (
            "redal_n",
            Policy::Redal(RedalConfig {
                test: SlopeTest::InProgress,
                ..redal
            }),
        ),
    ]
}

fn decide(c: &mut Criterion) {
    let mut g = c.benchmark_group("dispatch decision, 20 servers");
    for (name, policy) in policies() {
        let mut p: Box<dyn Dispatch> = policy.build(SERVERS, 1, 7).expect("valid");
        let mut homes = vec![None; SESSIONS as usize];
        let mut in_flight: std::collections::VecDeque<usize> = Default::default();
        let mut i: u64 = 0;
        g.bench_function(name, |b| {
            b.iter(|| {
                i += 1;
                let now = i as f64 * 0.0005;
                let session = i % SESSIONS;
                let req = Request {
                    session,
                    ty: (i % 14) as usize,
                    home: homes[session as usize],
                    gap: Some(1.0),
                };
                if let Some(k) = p.pick(now, black_box(&req)) {
                    homes[session as usize] = Some(k);
                    in_flight.push_back(k);
                }
                // ~20 requests in progress: the oldest one finishes.
                if in_flight.len() > 20 {
                    let k = in_flight.pop_front().expect("non-empty");
                    p.done(now, k, (i % 14) as usize);
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, decide);
criterion_main!(benches);
