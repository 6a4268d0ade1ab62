//! The engine end to end, from engine JSON, against results known in closed form or
//! exactly: queueing formulas, counts that must add up, session lengths, dispatch
//! splits and determinism. (The Python suite checks the same engine through the model
//! compiler; these let `cargo test` and `cargo mutants` judge the engine alone.)

mod common;

use common::*;
use serde_json::json;
use trace::Output;

/// An M/M/1 queue: Poisson arrivals at 0.7/s for one token held an exponential 1 s,
/// for `duration` seconds.
fn one_token_queue(duration: f64) -> serde_json::Value {
    open_model(
        0.7,
        tier("s", 1, json!([pool("one", 1, None)]), json!([])),
        held(1.0),
        duration,
    )
}

#[test]
fn a_one_token_pool_is_mm1() {
    // λ = 0.7, μ = 1: W = 1/(μ − λ) = 3.33 s; the token is busy ρ = 0.7 of the time.
    let t = run(&one_token_queue(100_000.0));
    let s = &t.summary;
    close(s.response_time.unwrap().mean, 1.0 / 0.3, 0.04);
    close(s.tiers["s"].servers[0].pools["one"].mean_busy, 0.7, 0.02);
    // Little's law between the engine's own counters.
    close(
        s.little.mean_in_system,
        s.little.arrival_rate * s.little.mean_time_in_system,
        0.01,
    );
}

#[test]
fn a_processor_sharing_cpu_is_mm1_ps() {
    // M/M/1-PS: W = S/(1 − ρ) = 0.5/(1 − 0.6) = 1.25 s.
    let cpu = json!([{"kind": "cpu", "name": "cpu", "cores": 1, "overhead": []}]);
    let program = json!([{"op": "cpu", "station": 0, "demand": exp(0.5)}]);
    let t = run(&open_model(
        1.2,
        tier("s", 1, json!([]), cpu),
        program,
        100_000.0,
    ));
    close(t.summary.response_time.unwrap().mean, 1.25, 0.04);
    let cpu = &t.summary.tiers["s"].servers[0].stations["cpu"];
    assert_eq!(cpu.kind, "cpu");
    close(cpu.utilization, 0.6, 0.02);
}

/// One client, 1 s think, 0.01 s requests: the measured period [100, 200) holds the
/// requests started in it and no other, and its length is duration − warm-up.
#[test]
fn only_requests_started_after_the_warm_up_are_measured() {
    let mut m = open_model(
        1.0,
        tier("s", 1, json!([]), json!([])),
        json!([{"op": "delay", "time": constant(0.01)}]),
        200.0,
    );
    m["workload"]["population"] = json!({"kind": "closed", "clients": 1});
    sessions_of(&mut m, 1e9, 1.0);
    let t = run_recorded(&m);
    let r = t.records.expect("records");
    // Sends at 1 + 1.01 k: k = 99 (100.99 s) to 197 (199.97 s).
    assert_eq!(r.start.len(), 99);
    assert!(r.start.iter().all(|s| (100.0..200.0).contains(s)));
    assert_eq!(t.summary.measured_seconds, 100.0);
    assert_eq!(t.summary.requests.ok, 99);
}

#[test]
fn timeouts_reject_and_every_request_is_counted() {
    // Arrivals at 3/s on one token held 1 s, waits of at most 0.2 s: most are rejected,
    // and each rejection is one timed-out waiter.
    let t = run(&open_model(
        3.0,
        tier("s", 1, json!([pool("one", 1, Some(0.2))]), json!([])),
        held(1.0),
        5_000.0,
    ));
    let s = &t.summary;
    let p = &s.tiers["s"].servers[0].pools["one"];
    assert!(s.requests.rejected > 0 && s.requests.ok > 0);
    assert_eq!(s.requests.rejected, p.timed_out);
    assert_eq!(
        p.acquired,
        s.requests.ok + s.requests.unfinished.min(1),
        "every served request took the token once"
    );
    assert!(p.waited >= p.timed_out);
    // Offered = everything that arrived: ok + rejected + the one possibly unfinished.
    let arrived = s.requests.sent();
    close(arrived as f64 / s.measured_seconds, 3.0, 0.03);
}

#[test]
fn sessions_end_after_the_drawn_number_of_requests() {
    let mut m = open_model(
        0.5,
        tier("s", 1, json!([]), json!([])),
        json!([{"op": "delay", "time": constant(0.01)}]),
        2_000.0,
    );
    m["workload"]["chain"] =
        json!({"roles": [{"kind": "request", "type": 0}], "start": 0, "matrix": [[1.0]]});
    m["workload"]["think"] = constant(1.0);
    m["workload"]["end"] = json!({"kind": "after_requests", "count": constant(4.0)});
    let s = run(&m).summary;
    assert!(s.sessions.completed > 500);
    assert_eq!(s.sessions.mean_requests, 4.0);
}

#[test]
fn round_robin_splits_requests_evenly_over_servers() {
    let t = run(&open_model(
        2.0,
        tier("s", 4, json!([]), json!([])),
        json!([{"op": "delay", "time": exp(0.1)}]),
        2_000.0,
    ));
    let visits: Vec<u64> = t.summary.tiers["s"]
        .servers
        .iter()
        .map(|v| v.visits.unwrap())
        .collect();
    let (lo, hi) = (visits.iter().min().unwrap(), visits.iter().max().unwrap());
    assert!(hi - lo <= 1, "round robin: {visits:?}");
}

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_another() {
    let m = one_token_queue(2_000.0);
    let (a, b) = (run(&m), run(&m));
    let text = |o: &Output| serde_json::to_string(&o.summary).unwrap();
    assert_eq!(text(&a), text(&b));
    let mut other = m.clone();
    other["run"]["seed"] = json!(6);
    assert_ne!(run(&other).summary.response_time, a.summary.response_time);
}

/// `tick` hears the fraction done every 16 384 events and once at the end (1.0).
#[test]
fn progress_is_reported_every_16384_events_and_at_the_end() {
    let m = one_token_queue(20_000.0);
    let mut fractions = Vec::new();
    let t = sim::simulate(&m.to_string(), |f| {
        fractions.push(f);
        true
    })
    .expect("runs");
    let events = t.summary.events.expect("events counted");
    assert!(events > 4 * t.summary.requests.ok, "{events} events");
    assert_eq!(fractions.len() as u64, events / 16384 + 1);
    assert!(fractions[0] > 0.0 && fractions.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(fractions.last(), Some(&1.0));
}

#[test]
fn a_stop_request_ends_the_run_early_and_marks_it() {
    let m = one_token_queue(100_000.0);
    let t = sim::simulate(&m.to_string(), |fraction| fraction < 0.1).expect("runs");
    assert!(t.summary.interrupted);
    assert!(t.summary.simulated_until.unwrap() < 50_000.0);
}

/// Waiters that a release lets in resume inside `advance`, not through the run loop;
/// the run loop still ticks at every 16 384th event, so a count stops a run exactly.
#[test]
fn a_run_stopped_at_its_60th_tick_ends_after_60_times_16384_events() {
    let m = one_token_queue(200_000.0);
    let mut calls = 0;
    let t = sim::simulate(&m.to_string(), |_| {
        calls += 1;
        calls < 60
    })
    .expect("runs");
    assert!(t.summary.interrupted);
    assert_eq!(t.summary.events, Some(60 * 16384));
}

/// Two clients pass one token back and forth at one instant, 600 000 times (each
/// release lets the other in, through the lane): more events at that instant than
/// the engine allows, although none of them goes through the run loop's own pop.
#[test]
fn a_zero_time_ping_pong_through_the_lane_is_a_stopped_clock() {
    let program = json!([
        {"op": "acquire", "pool": 0},
        {"op": "delay", "time": constant(0.0)},
        {"op": "loop", "count": constant(600_000.0), "body": [
            {"op": "release", "pool": 0},
            {"op": "acquire", "pool": 0}
        ]},
        {"op": "release", "pool": 0}
    ]);
    let mut m = open_model(
        1.0,
        tier("s", 1, json!([pool("one", 1, None)]), json!([])),
        program,
        3.0,
    );
    m["workload"]["population"] = json!({"kind": "closed", "clients": 2});
    m["workload"]["think"] = constant(1.0);
    m["run"]["warmup"] = json!(0.0);
    let err = sim::simulate(&m.to_string(), |_| true)
        .err()
        .expect("a stopped clock");
    assert!(err.contains("clock stopped at 1 s"), "{err}");
}

#[test]
fn a_hand_off_leaves_the_token_free_between_holders() {
    // Two clients always want the one token (no think time), each holding it 1 s; a
    // given-back token takes 0.25 s to reach the waiter. So the token cycles every
    // 1.25 s: 0.8 requests/s, held 0.8 of the time, and each request spends
    // 2 / 0.8 = 2.5 s in the system (Little). The waiter being handed the token still
    // waits, beside the client that just gave it back: 2 wait for 0.25 s of each cycle,
    // 1 for the rest, 1.2 on average; the token is being handed off 0.2 of the time.
    // Without the hand-off: 1/s, held always, 1 waiting.
    let mut handed = pool("one", 1, None);
    handed["handoff"] = json!({"delay": constant(0.25)});
    let cases = [
        (handed, 0.8, 1.2, 0.2),
        (pool("one", 1, None), 1.0, 1.0, 0.0),
    ];
    for (p, rate, queued, handing_off) in cases {
        let mut m = open_model(
            1.0,
            tier("s", 1, json!([p]), json!([])),
            json!([{"op": "acquire", "pool": 0}, {"op": "delay", "time": constant(1.0)},
                   {"op": "release", "pool": 0}]),
            1_010.0,
        );
        m["workload"]["population"] = json!({"kind": "closed", "clients": 2});
        m["run"]["warmup"] = json!(10.0);
        sessions_of(&mut m, 1e9, 0.0);
        let s = run(&m).summary;
        close(s.throughput, rate, 0.005);
        let one = &s.tiers["s"].servers[0].pools["one"];
        close(one.mean_busy, rate, 0.005);
        close(one.mean_queued, queued, 0.005);
        assert!((one.mean_handing_off - handing_off).abs() < 0.002);
        close(s.response_time.unwrap().mean, 2.0 / rate, 0.005);
    }
}

#[test]
fn a_hand_off_on_the_cpu_lasts_its_demand_times_the_jobs_sharing_it() {
    // As above, but the token reaches its waiter after 0.1 s of the waiter's own CPU on
    // a one-core processor-sharing station. Alone there, the hand-off takes 0.1 s: a
    // cycle of 1.1 s. When the request that gave the token back then computes 0.3 s on
    // the same core, the two share it: the hand-off takes 0.2 s, a cycle of 1.2 s, and
    // the core is busy 0.4 s of it. The token is being handed off throughout.
    for (after, handoff) in [(0.0, 0.1), (0.3, 0.2)] {
        let mut p = pool("one", 1, None);
        p["handoff"] = json!({"cpu": {"station": 0, "demand": constant(0.1)}});
        let cpu = json!([{"kind": "cpu", "name": "cpu", "cores": 1, "overhead": []}]);
        let mut program = vec![
            json!({"op": "acquire", "pool": 0}),
            json!({"op": "delay", "time": constant(1.0)}),
            json!({"op": "release", "pool": 0}),
        ];
        if after > 0.0 {
            program.push(json!({"op": "cpu", "station": 0, "demand": constant(after)}));
        }
        let mut m = open_model(1.0, tier("s", 1, json!([p]), cpu), json!(program), 1_010.0);
        m["workload"]["population"] = json!({"kind": "closed", "clients": 2});
        m["run"]["warmup"] = json!(10.0);
        sessions_of(&mut m, 1e9, 0.0);
        let s = run(&m).summary;
        let cycle = 1.0 + handoff;
        close(s.throughput, 1.0 / cycle, 0.005);
        let server = &s.tiers["s"].servers[0];
        close(server.pools["one"].mean_busy, 1.0 / cycle, 0.005);
        assert!((server.pools["one"].mean_handing_off - handoff / cycle).abs() < 0.002);
        close(
            server.stations["cpu"].utilization,
            (0.1 + after) / cycle,
            0.005,
        );
    }
}
