//! Step programs through the engine, exactly: the phases a request's time is charged
//! to, retransmitted connection attempts, transfers over links, FCFS disks, and what
//! a request record holds. Constant times and closed clients with no think time make
//! each request's history known by hand; the queueing cases use closed forms.

mod common;

use common::*;
use serde_json::{json, Value};
use trace::{
    Records, BEFORE_DB, OTHER, PHASES, WAIT_DB, WAIT_THREAD, WITH_DB_ACTIVE, WITH_DB_IDLE,
};

fn kind_pool(name: &str, kind: &str, size: u32) -> Value {
    let mut p = pool(name, size, None);
    p["kind"] = json!(kind);
    p
}

fn wait(seconds: f64) -> Value {
    json!({"op": "delay", "time": constant(seconds)})
}

/// `clients` closed clients with no think time, endless sessions, on one tier.
fn closed(clients: u32, tier: Value, program: Value, duration: f64) -> Value {
    let mut m = open_model(1.0, tier, program, duration);
    m["workload"]["population"] = json!({"kind": "closed", "clients": clients});
    m["workload"]["chain"] =
        json!({"roles": [{"kind": "request", "type": 0}], "start": 0, "matrix": [[1.0]]});
    m["run"]["warmup"] = json!(10.0);
    m
}

/// Request-wide connection use with a Close between two Gets and a Drop at the end:
/// thread 0.1 s before the DB, connection in use 0.2 + 0.05 s, cached idle 0.3 s,
/// thread alone again 0.04 s.
fn db_program() -> Value {
    json!([
        {"op": "acquire", "pool": 0}, wait(0.1),
        {"op": "get", "pool": 1}, wait(0.2), {"op": "close", "pool": 1}, wait(0.3),
        {"op": "get", "pool": 1}, wait(0.05), {"op": "close", "pool": 1}, {"op": "drop", "pool": 1},
        wait(0.04), {"op": "release", "pool": 0},
    ])
}

fn db_tier(threads: u32) -> Value {
    tier(
        "app",
        1,
        json!([
            kind_pool("threads", "threads", threads),
            kind_pool("db", "connections", 1)
        ]),
        json!([]),
    )
}

/// Every record's phases on tier 0, as [phase] → seconds, checked against `want`.
fn assert_phases(r: &Records, want: [f64; 6], db_requests: u32) {
    let t = &r.tiers[0];
    assert!(r.id.len() > 20);
    for i in 0..r.id.len() {
        for (p, w) in want.iter().enumerate() {
            let got = t.phases[p][i];
            assert!(
                (got - w).abs() < 1e-9,
                "record {i}: {} = {got}, want {w}",
                PHASES[p]
            );
        }
        assert!((t.time[i] - want.iter().sum::<f64>()).abs() < 1e-9);
        assert_eq!(t.db_requests[i], db_requests, "connections taken");
    }
}

/// Two clients on one thread: each request waits the other's whole 0.69 s.
#[test]
fn phases_with_a_wait_for_the_thread() {
    let out = run_recorded(&closed(2, db_tier(1), db_program(), 100.0));
    let pools = &out.summary.tiers["app"].servers[0].pools;
    let kinds = (pools["threads"].kind.as_str(), pools["db"].kind.as_str());
    assert_eq!(kinds, ("threads", "connections"));
    assert_eq!((pools["threads"].size, pools["db"].size), (1, 1));
    let r = out.records.unwrap();
    let mut want = [0.0; 6];
    (
        want[WAIT_THREAD],
        want[BEFORE_DB],
        want[WITH_DB_ACTIVE],
        want[WITH_DB_IDLE],
    ) = (0.69, 0.14, 0.25, 0.3);
    assert_phases(&r, want, 1); // the second Get reuses the cached connection
}

/// Two clients, two threads, one connection: a request holds it 0.55 s of its 1.1 s
/// cycle, so the other, asking 0.1 s after its own start, waits 0.41 s.
#[test]
fn phases_with_a_wait_for_the_connection() {
    let out = run_recorded(&closed(2, db_tier(2), db_program(), 100.0));
    assert_eq!(out.summary.tiers["app"].servers[0].pools["threads"].size, 2);
    let r = out.records.unwrap();
    let mut want = [0.0; 6];
    (
        want[BEFORE_DB],
        want[WAIT_DB],
        want[WITH_DB_ACTIVE],
        want[WITH_DB_IDLE],
    ) = (0.14, 0.41, 0.25, 0.3);
    assert_phases(&r, want, 1);
}

/// A one-slot backlog (no queue) held for ever by the first client: the second's
/// attempts are dropped and retried 1 s then 2 s later, then it is rejected — 3 s,
/// all of it waiting for the thread-kind pool; every attempt counted. It starts at
/// 0, 3, 6, …; measured over [10, 98.5]: requests 12 … 93 s (28, rejected at 15 … 96),
/// rejections at 12 … 96 (29), drops at 10, then 12, 13, …, 96, 97 (59).
#[test]
fn a_full_backlog_drops_the_attempt_and_the_client_retransmits() {
    let mut backlog = kind_pool("backlog", "threads", 1);
    backlog["max_queue"] = json!(0);
    backlog["retransmit"] = json!({"initial": 1.0, "attempts": 2});
    let t = tier("app", 1, json!([backlog]), json!([]));
    let program = json!([{"op": "acquire", "pool": 0}, wait(1000.0), {"op": "release", "pool": 0}]);
    let out = run_recorded(&closed(2, t, program, 98.5));
    let r = out.records.unwrap();
    assert_eq!(r.id.len(), 28);
    for i in 0..r.id.len() {
        assert_eq!(r.status[i], trace::Status::Rejected as u8);
        assert_eq!(r.retransmissions[i], 2);
        assert!((r.end[i] - r.start[i] - 3.0).abs() < 1e-9);
        assert!((r.tiers[0].phases[WAIT_THREAD][i] - 3.0).abs() < 1e-9);
    }
    let p = &out.summary.tiers["app"].servers[0].pools["backlog"];
    assert_eq!((p.rejected, p.dropped), (29, 59));
    assert_eq!(out.summary.requests.rejected, 28);
}

/// A record: ids in order, each tier's first server (tier-local) and visits, -1 on a
/// tier the request never reached.
#[test]
fn a_record_holds_the_first_server_and_the_visits_per_tier() {
    let tiers = json!([
        tier("web", 1, json!([]), json!([])),
        tier("app", 2, json!([]), json!([])),
        tier("db", 1, json!([]), json!([])),
    ]);
    let twice = json!([{"op": "call", "tier": 1}, {"op": "call", "tier": 1}]);
    let mut m = open_model_of(1.0, tiers, json!([twice, [wait(0.01)], null]), 100.0);
    m["workload"]["population"] = json!({"kind": "closed", "clients": 1});
    sessions_of(&mut m, 1e9, 0.5);
    m["run"]["warmup"] = json!(10.0);
    let r = run_recorded(&m).records.unwrap();
    assert!(
        r.id.windows(2).all(|w| w[1] == w[0] + 1),
        "ids count requests"
    );
    assert!(r.id[0] > 1);
    let (web, app, db) = (&r.tiers[0], &r.tiers[1], &r.tiers[2]);
    for i in 0..r.id.len() {
        // Round robin sends the first call of each request to server 0, the second to 1.
        assert_eq!((web.server[i], app.server[i], db.server[i]), (0, 0, -1));
        assert_eq!((web.visits[i], app.visits[i], db.visits[i]), (1, 2, 0));
        assert!((app.time[i] - 0.02).abs() < 1e-9 && (web.time[i] - 0.02).abs() < 1e-9);
        assert_eq!(web.phases[OTHER][i], web.time[i]);
    }
}

/// The demand columns, as the live middleware means them: one client, so nothing
/// waits. Per request the app takes a thread (0.001 s of CPU to do so), runs 0.03 s of
/// CPU, takes the connection twice (0.002 s of `acquire_cpu` each, none for the cached
/// second Get), calls the db twice inside it (0.05 s of CPU and a 0.01 s delay each)
/// and the web tier once (not the next tier after app: not the database). The app's
/// cpu_time is 0.001 + 0.03 + 0.002 (the db's CPU is the db tier's: 0.1),
/// pool_cpu_time 0.002 (a connection pool's only), db_time 2 × 0.06, db_queries 2.
#[test]
fn a_record_holds_the_cpu_work_and_the_calls_to_the_next_tier() {
    let cpu = json!([{"kind": "cpu", "name": "cpu", "cores": 2, "overhead": []}]);
    let pools = json!([
        kind_pool("threads", "threads", 4),
        kind_pool("db", "connections", 2)
    ]);
    let on_cpu = |s: f64| json!({"op": "cpu", "station": 0, "demand": constant(s)});
    let tiers = json!([
        tier("web", 1, json!([]), json!([])),
        tier("app", 1, pools, cpu.clone()),
        tier("db", 1, json!([]), cpu),
    ]);
    let app = json!([
        {"op": "acquire", "pool": 0, "cost": [on_cpu(0.001)]}, on_cpu(0.03),
        {"op": "get", "pool": 1, "cost": [on_cpu(0.002)]}, {"op": "call", "tier": 2},
        {"op": "close", "pool": 1},
        {"op": "get", "pool": 1, "cost": [on_cpu(0.002)]}, {"op": "call", "tier": 2},
        {"op": "close", "pool": 1}, {"op": "drop", "pool": 1},
        {"op": "call", "tier": 0}, {"op": "release", "pool": 0},
    ]);
    let web = json!([wait(0.001)]);
    let db = json!([on_cpu(0.05), wait(0.01)]);
    let mut m = open_model_of(1.0, tiers, json!([web, app, db]), 100.0);
    m["workload"]["population"] = json!({"kind": "closed", "clients": 1});
    m["workload"]["entry_tier"] = json!(1);
    sessions_of(&mut m, 1e9, 0.5);
    m["run"]["warmup"] = json!(10.0);
    let r = run_recorded(&m).records.unwrap();
    assert!(r.id.len() > 20);
    let (web, app, db) = (&r.tiers[0], &r.tiers[1], &r.tiers[2]);
    for i in 0..r.id.len() {
        assert!(
            (app.cpu_time[i] - 0.033).abs() < 1e-9,
            "{}",
            app.cpu_time[i]
        );
        assert!((app.pool_cpu_time[i] - 0.002).abs() < 1e-9);
        assert!((app.db_time[i] - 0.12).abs() < 1e-9, "{}", app.db_time[i]);
        assert_eq!((app.db_queries[i], app.db_cpu_time[i]), (2, 0.0));
        assert!((db.cpu_time[i] - 0.1).abs() < 1e-9 && db.db_queries[i] == 0);
        assert_eq!(
            (web.visits[i], web.cpu_time[i], web.db_time[i]),
            (1, 0.0, 0.0)
        );
    }
}

/// A transfer of 14 600 bytes (10 segments of the default 1460 bytes) at 1 MB/s with
/// 0.01 s one-way delay and slow start from 2 segments: ⌈log₂(10/2 + 1)⌉ = 3 flights,
/// 0.0146 + 0.01·(2·3 − 1).
#[test]
fn a_transfer_takes_its_bytes_plus_its_flights() {
    let link = json!({"name": "lan", "bandwidth": 1e6, "delay": constant(0.01), "shared": false,
                      "loss": 0.0, "rto": 2.0, "initial_window": 2.0});
    let program = json!([{"op": "transfer", "link": 0, "bytes": constant(14600.0)}]);
    let mut m = closed(1, tier("app", 1, json!([]), json!([])), program, 100.0);
    m["links"] = json!([link.clone()]);
    let r = run_recorded(&m).records.unwrap();
    assert!(r.id.len() > 100);
    assert!(r.tiers[0].time.iter().all(|t| (t - 0.0646).abs() < 1e-9));
    // Shared, alone on the link: the same, with the latency after the bytes.
    let mut shared = m.clone();
    shared["links"][0]["shared"] = json!(true);
    let r = run_recorded(&shared).records.unwrap();
    assert!(r.tiers[0].time.iter().all(|t| (t - 0.0646).abs() < 1e-9));
    // 8 segments: ⌈log₂(8/2 + 1)⌉ = 3 flights still, 0.01168 + 0.05.
    let mut eight = m.clone();
    eight["types"][0]["programs"][0][0]["bytes"] = constant(11680.0);
    let r = run_recorded(&eight).records.unwrap();
    assert!(r.tiers[0].time.iter().all(|t| (t - 0.06168).abs() < 1e-9));
    // Each of the 10 segments lost with probability 0.5 costs one 2 s timeout:
    // 10 s more on average (σ of the mean over n requests: 2·√2.5/√n).
    let mut lossy = m;
    lossy["links"][0]["loss"] = json!(0.5);
    lossy["links"][0]["rto"] = json!(2.0);
    lossy["run"]["duration"] = json!(5000.0);
    let r = run_recorded(&lossy).records.unwrap();
    let n = r.id.len() as f64;
    let mean = r.tiers[0].time.iter().sum::<f64>() / n;
    assert!(
        (mean - 10.0646).abs() < 4.0 * 2.0 * (2.5 / n).sqrt(),
        "{mean} over {n}"
    );
}

/// A shared link is processor sharing: exponential transfers of mean 0.5 s at 1.2 per
/// second give M/M/1-PS, W = 0.5/(1 − 0.6) = 1.25 s, plus the 0.1 s delay after.
#[test]
fn a_shared_link_is_mm1_ps_plus_its_delay() {
    let link = json!({"name": "wan", "bandwidth": 1000.0, "delay": constant(0.1), "shared": true});
    let program = json!([{"op": "transfer", "link": 0, "bytes": exp(500.0)}]);
    let mut m = open_model(
        1.2,
        tier("app", 1, json!([]), json!([])),
        program,
        100_000.0,
    );
    m["links"] = json!([link]);
    let s = run(&m).summary;
    close(s.response_time.unwrap().mean, 1.35, 0.04);
    close(s.links["wan"].utilization, 0.6, 0.02);
}

fn disk_model(rate: f64, channels: u32, hit_ratio: f64, constant_service: bool) -> Value {
    let disk = json!([{"kind": "disk", "name": "disk", "iops": 2.0, "hit_ratio": hit_ratio,
                       "channels": channels, "constant_service": constant_service}]);
    let program = json!([{"op": "disk", "station": 0, "accesses": constant(1.0)}]);
    open_model(rate, tier("db", 1, json!([]), disk), program, 100_000.0)
}

/// M/M/2 (λ = 3, μ = 2 per channel, a = 1.5): Erlang C = 4.5/7, W = 1/2 + C/(4 − 3)
/// = 1.142857 s; each channel busy ρ = 3/4 of the time.
#[test]
fn a_disk_with_two_channels_is_mm2() {
    let s = run(&disk_model(3.0, 2, 0.0, false)).summary;
    close(s.response_time.unwrap().mean, 0.5 + 4.5 / 7.0, 0.05);
    close(
        s.tiers["db"].servers[0].stations["disk"].utilization,
        0.75,
        0.02,
    );
}

/// Half the accesses hit the cache (no time): misses are M/M/1 at λ = 1, μ = 2,
/// W = 1/(2 − 1) = 1 s, so a request takes 0.5 s on average.
#[test]
fn cache_hits_skip_the_disk() {
    let s = run(&disk_model(2.0, 1, 0.5, false)).summary;
    close(s.response_time.unwrap().mean, 0.5, 0.05);
}

/// Constant service 0.5 s, one channel: M/D/1 at ρ = 0.5 gives W = 0.5 + 0.5·0.5/(2·0.5)
/// = 0.75 s.
#[test]
fn a_constant_service_disk_is_md1() {
    let s = run(&disk_model(1.0, 1, 0.0, true)).summary;
    close(s.response_time.unwrap().mean, 0.75, 0.04);
}

/// Loops repeat their body the drawn number of times (nested: 3 × (0.01 + 2 × 0.001));
/// a count of 0 skips it, as a CPU demand of 0 skips the CPU.
#[test]
fn loops_repeat_their_body_and_zero_skips_it() {
    let cpu = json!([{"kind": "cpu", "name": "cpu", "cores": 1, "overhead": []}]);
    let program = json!([
        {"op": "loop", "count": constant(3.0), "body": [
            wait(0.01), {"op": "loop", "count": constant(2.0), "body": [wait(0.001)]},
        ]},
        {"op": "loop", "count": constant(0.0), "body": [wait(1.0)]},
        {"op": "cpu", "station": 0, "demand": constant(0.0)},
    ]);
    let r = run_recorded(&closed(1, tier("app", 1, json!([]), cpu), program, 100.0))
        .records
        .unwrap();
    assert!(r.id.len() > 100);
    assert!(r.tiers[0].time.iter().all(|t| (t - 0.036).abs() < 1e-9));
}

/// Stop-the-world GC: 0.1 CPU-seconds per request at 10 MB per CPU-second fill a 5 MB
/// heap every 5th request, whose CPU then stops 0.5 s + 0.1 s per request in progress
/// (itself): it takes 0.1 + 0.6 s, the others 0.1 s. Cycle j (1.1 s) starts at 1.1 j;
/// over [10.05, 100.05] the records hold 10.1 … 99.3 s (3 + 80·5 + 4 = 407 requests,
/// 81 paused) and the pause at 99.4 s is counted too (82), its request in flight.
#[test]
fn a_full_heap_stops_the_cpus_for_the_pause() {
    let cpu = json!([{"kind": "cpu", "name": "cpu", "cores": 1, "overhead": []}]);
    let mut t = tier("app", 1, json!([]), cpu);
    t["gc"] = json!({"heap": 5.0, "allocation": 10.0, "pause": 0.5, "per_request": 0.1});
    let program = json!([{"op": "cpu", "station": 0, "demand": constant(0.1)}]);
    let mut m = closed(1, t, program, 100.05);
    m["run"]["warmup"] = json!(10.05);
    let out = run_recorded(&m);
    let times = &out.records.unwrap().tiers[0].time;
    let count = |want: f64| times.iter().filter(|t| (*t - want).abs() < 1e-9).count();
    assert_eq!((times.len(), count(0.7), count(0.1)), (407, 81, 326));
    let gc = out.summary.tiers["app"].servers[0].gc.expect("gc summary");
    assert_eq!((gc.pauses, out.summary.requests.unfinished), (82, 1));
    assert!((gc.pause_time - 0.6 * 82.0).abs() < 1e-9);
}

/// Two types alternating, each with its own program on each of two tiers: type 0
/// works 0.01 s on the second tier, type 1 0.02 s.
#[test]
fn each_type_runs_its_own_program_on_each_tier() {
    let tiers = json!([
        tier("web", 1, json!([]), json!([])),
        tier("app", 1, json!([]), json!([])),
    ]);
    let mut m = open_model_of(1.0, tiers, json!([]), 100.0);
    let call = json!([{"op": "call", "tier": 1}]);
    m["types"] = json!([
        {"name": "a", "priority": 0, "programs": [call, [wait(0.01)]]},
        {"name": "b", "priority": 0, "programs": [call, [wait(0.02)]]},
    ]);
    m["workload"]["population"] = json!({"kind": "closed", "clients": 1});
    m["workload"]["chain"] = json!({"roles": [{"kind": "request", "type": 0}, {"kind": "request", "type": 1}],
                                    "start": 0, "matrix": [[0.0, 1.0], [1.0, 0.0]]});
    m["workload"]["think"] = constant(0.5);
    m["run"]["warmup"] = json!(10.0);
    let r = run_recorded(&m).records.unwrap();
    assert!(r.rtype.contains(&0) && r.rtype.contains(&1));
    for (ty, t) in r.rtype.iter().zip(&r.tiers[1].time) {
        let want = [0.01, 0.02][*ty as usize];
        assert!((t - want).abs() < 1e-9, "type {ty}: {t}");
    }
}

/// Two clients on one token held 1 s, waits limited to 0.3 s: a request either gets
/// the token within 0.3 s and holds it 1 s, or is rejected exactly 0.3 s after it came.
/// The pool is neither threads nor connections: waiting for it and holding it are
/// both "other" time.
#[test]
fn a_pool_wait_ends_at_its_timeout() {
    let t = tier("app", 1, json!([pool("one", 1, Some(0.3))]), json!([]));
    let program = json!([{"op": "acquire", "pool": 0}, wait(1.0), {"op": "release", "pool": 0}]);
    let r = run_recorded(&closed(2, t, program, 100.0)).records.unwrap();
    let (mut ok, mut rejected) = (0, 0);
    for i in 0..r.id.len() {
        let took = r.end[i] - r.start[i];
        assert!((r.tiers[0].phases[OTHER][i] - took).abs() < 1e-9);
        if r.status[i] == trace::Status::Rejected as u8 {
            rejected += 1;
            assert!((took - 0.3).abs() < 1e-9, "rejected after {took}");
        } else {
            ok += 1;
            assert!((1.0..=1.3 + 1e-9).contains(&took), "served in {took}");
        }
    }
    assert!(ok > 50 && rejected > 50, "{ok} served, {rejected} rejected");
}

/// A program that ends holding two tokens gives both back as the visit leaves: the
/// next request of the one client finds them free.
#[test]
fn leaving_a_tier_gives_back_every_token_still_held() {
    let pools = json!([pool("a", 1, None), pool("b", 1, None)]);
    let program = json!([{"op": "acquire", "pool": 0}, {"op": "acquire", "pool": 1}, wait(0.25)]);
    let r = run_recorded(&closed(1, tier("app", 1, pools, json!([])), program, 100.0))
        .records
        .unwrap();
    assert_eq!(r.id.len(), 360, "one request every 0.25 s over [10, 100]");
}

/// A visit that leaves holding a shared token of a 2-token pool and an exclusive hold
/// of a 3-token lock (not the tier's first pool, so its own bit is what is tracked)
/// gives back one and three: the one client holds all three of the lock all the time.
#[test]
fn leaving_a_tier_gives_back_each_hold_as_it_was_taken() {
    let pools = json!([pool("a", 2, None), pool("lock", 3, None)]);
    let program = json!([
        {"op": "acquire", "pool": 0}, {"op": "acquire", "pool": 1, "exclusive": true}, wait(0.25),
    ]);
    let s = run(&closed(1, tier("app", 1, pools, json!([])), program, 100.0)).summary;
    let pools = &s.tiers["app"].servers[0].pools;
    close(pools["lock"].mean_busy, 3.0, 1e-9);
    close(pools["a"].mean_busy, 1.0, 1e-9);
}

/// An exclusive hold of a 3-token lock (the tier's second pool) for 0.1 s, then a
/// shared one for 0.3 s: (3 × 0.1 + 1 × 0.3) / 0.4 = 1.5 tokens busy on average. A
/// release that gave back one token of the exclusive hold would leave the next one
/// waiting for ever; one that gave back three of the shared hold would underflow.
#[test]
fn an_exclusive_hold_takes_and_gives_back_every_token() {
    let pools = json!([pool("a", 1, None), pool("lock", 3, None)]);
    let program = json!([
        {"op": "acquire", "pool": 1, "exclusive": true}, wait(0.1), {"op": "release", "pool": 1},
        {"op": "acquire", "pool": 1}, wait(0.3), {"op": "release", "pool": 1},
    ]);
    let s = run(&closed(1, tier("app", 1, pools, json!([])), program, 100.0)).summary;
    let lock = &s.tiers["app"].servers[0].pools["lock"];
    close(lock.mean_busy, 1.5, 1e-6);
    assert_eq!(lock.busy_max, 3.0);
}

/// A Get pays its cost only when the visit has no connection cached: after a Drop
/// both Gets pay 0.005 s, charged as waiting for the connection (the second pool).
#[test]
fn a_get_pays_its_cost_unless_the_connection_is_cached() {
    let get = json!({"op": "get", "pool": 1, "cost": [wait(0.005)]});
    let program = json!([
        {"op": "acquire", "pool": 0}, wait(0.1),
        get, wait(0.2), {"op": "close", "pool": 1}, {"op": "drop", "pool": 1}, wait(0.3),
        get, wait(0.05), {"op": "close", "pool": 1}, {"op": "drop", "pool": 1},
        wait(0.04), {"op": "release", "pool": 0},
    ]);
    let r = run_recorded(&closed(1, db_tier(1), program, 100.0))
        .records
        .unwrap();
    let mut want = [0.0; 6];
    (want[BEFORE_DB], want[WAIT_DB], want[WITH_DB_ACTIVE]) = (0.44, 0.01, 0.25);
    assert_phases(&r, want, 2);
}

/// Close and Drop act on a connection only when the visit holds it, and Drop only
/// when it is closed (idle): before the Get they do nothing, and a Drop of the
/// connection in use leaves it in use. A Get after the Drop takes a fresh one, in use.
#[test]
fn close_and_drop_touch_only_a_held_connection() {
    let program = json!([
        {"op": "close", "pool": 1}, {"op": "drop", "pool": 1},
        {"op": "get", "pool": 1}, {"op": "drop", "pool": 1}, wait(0.1),
        {"op": "close", "pool": 1}, {"op": "drop", "pool": 1}, wait(0.05),
        {"op": "get", "pool": 1}, wait(0.02),
    ]);
    let r = run_recorded(&closed(1, db_tier(1), program, 100.0))
        .records
        .unwrap();
    let mut want = [0.0; 6];
    (want[WITH_DB_ACTIVE], want[OTHER]) = (0.12, 0.05);
    assert_phases(&r, want, 2);
}

/// The GC pause grows with the requests in progress: two clients on two cores, 0.1
/// CPU-seconds then 1 s of delay each, fill a 4 MB heap at the second one's second
/// arrival, both in: 0.5 + 0.1 × 2 = 0.7 s, so each request takes 1.1 s or 1.8 s.
#[test]
fn the_gc_pause_grows_with_the_requests_in_progress() {
    let cpu = json!([{"kind": "cpu", "name": "cpu", "cores": 2, "overhead": []}]);
    let mut t = tier("app", 1, json!([]), cpu);
    t["gc"] = json!({"heap": 4.0, "allocation": 10.0, "pause": 0.5, "per_request": 0.1});
    let program = json!([{"op": "cpu", "station": 0, "demand": constant(0.1)}, wait(1.0)]);
    let out = run_recorded(&closed(2, t, program, 100.0));
    let times = &out.records.unwrap().tiers[0].time;
    let count = |want: f64| times.iter().filter(|t| (*t - want).abs() < 1e-9).count();
    assert!(count(1.8) > 20 && count(1.1) + count(1.8) == times.len());
    let gc = out.summary.tiers["app"].servers[0].gc.expect("gc summary");
    assert!((gc.pause_time - 0.7 * gc.pauses as f64).abs() < 1e-9);
}

/// One client holding one of a pool's two tokens all the time: never pinned (every
/// token held); the same with a one-token pool: pinned in every window.
#[test]
fn a_pool_is_pinned_only_when_every_token_is_held() {
    let pinned = |size: u32| {
        let t = tier("app", 1, json!([pool("p", size, None)]), json!([]));
        let program =
            json!([{"op": "acquire", "pool": 0}, wait(0.25), {"op": "release", "pool": 0}]);
        let s = run(&closed(1, t, program, 100.0)).summary;
        let p = &s.tiers["app"].servers[0].pools["p"];
        assert_eq!(p.busy_max, 1.0);
        p.pinned
    };
    assert_eq!((pinned(2), pinned(1)), (0.0, 1.0));
}
