//! The workload through the engine: bursty (MMPP) arrivals and think times against
//! their stationary rates, session weights, session counts.

mod common;

use common::*;
use serde_json::{json, Value};

/// Phases with factors (3, 0.5) left at rates (2, 1): the stationary shares are
/// (1/3, 2/3), so the mean rate factor is 3/3 + 0.5·2/3 = 4/3 (the mean of 1/factor,
/// 7/9, and either phase alone, 3 or 0.5, are far from it).
fn bursty(m: &mut Value) {
    m["workload"]["burst"] = json!({"factor": [3.0, 0.5], "leave": [2.0, 1.0]});
}

/// Open sessions of one request at base rate 2/s arrive at 8/3 per second. The
/// time average of the factor over 20 000 s has σ ≈ 0.5%; ±3% allows for it.
#[test]
fn bursty_arrivals_average_the_phase_rates() {
    let mut m = open_model(2.0, tier("s", 1, json!([]), json!([])), json!([]), 20_000.0);
    bursty(&mut m);
    let s = run(&m).summary;
    close(
        s.sessions.started as f64 / s.measured_seconds,
        8.0 / 3.0,
        0.03,
    );
    close(
        s.sessions.throughput,
        s.sessions.completed as f64 / s.measured_seconds,
        1e-12,
    );
}

/// 20 closed clients thinking 1 s (exponential) for requests that take no time send
/// 20 per second at factor 1, so 80/3 per second under the bursts (σ ≈ 0.7% over
/// 10 000 s): a think time in progress at a switch is rescaled to the new phase's clock.
#[test]
fn bursty_think_times_average_the_phase_rates() {
    let mut m = open_model(1.0, tier("s", 1, json!([]), json!([])), json!([]), 10_000.0);
    m["workload"]["population"] = json!({"kind": "closed", "clients": 20});
    sessions_of(&mut m, 1e9, 1.0);
    m["workload"]["think"] = exp(1.0);
    bursty(&mut m);
    let s = run(&m).summary;
    close(s.throughput, 80.0 / 3.0, 0.03);
}

/// A session's weight multiplies the CPU work of its requests: 0.1 s of demand at
/// weight 2 takes 0.2 s alone on the CPU.
#[test]
fn the_session_weight_scales_the_cpu_work() {
    let cpu = json!([{"kind": "cpu", "name": "cpu", "cores": 1, "overhead": []}]);
    let program = json!([{"op": "cpu", "station": 0, "demand": constant(0.1)}]);
    let mut m = open_model(1.0, tier("s", 1, json!([]), cpu), program, 200.0);
    m["workload"]["population"] = json!({"kind": "closed", "clients": 1});
    sessions_of(&mut m, 1e9, 1.0);
    m["workload"]["weight"] = constant(2.0);
    let r = run_recorded(&m).records.unwrap();
    assert!(r.id.len() > 50);
    assert!(r.tiers[0].time.iter().all(|t| (t - 0.2).abs() < 1e-9));
}
