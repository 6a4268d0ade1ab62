//! Engine JSON builders shared by the integration tests: small models whose results
//! are known in closed form or by hand.
#![allow(dead_code)] // each test file uses some of them

use serde_json::{json, Value};
use trace::Output;

pub fn exp(mean: f64) -> Value {
    json!({"kind": "exponential", "mean": mean, "max": null})
}

pub fn constant(value: f64) -> Value {
    json!({"kind": "constant", "value": value})
}

pub fn pool(name: &str, size: u32, timeout: Option<f64>) -> Value {
    json!({"name": name, "kind": "other", "size": size, "timeout": timeout,
           "max_queue": null, "discipline": "fifo", "retransmit": null})
}

pub fn tier(name: &str, servers: u32, pools: Value, stations: Value) -> Value {
    json!({
        "name": name, "servers": servers,
        "dispatch": {"policy": {"policy": "round_robin", "weights": []}, "dispatchers": 1,
                     "hierarchical": false, "sync_interval": 0.05, "sync_delay": 0.0,
                     "queue": 1000, "queue_timeout": 10.0},
        "stateful": false, "gc": null, "pools": pools, "stations": stations,
    })
}

/// A tier of `servers` with no pools or stations whose dispatch section has the
/// fields of `dispatch` (the others as in [`tier`]).
pub fn dispatched(name: &str, servers: u32, dispatch: Value) -> Value {
    let mut t = tier(name, servers, json!([]), json!([]));
    for (k, v) in dispatch.as_object().expect("an object") {
        t["dispatch"][k] = v.clone();
    }
    t
}

/// One tier, one request type running `program`; sessions of one request arriving as
/// a Poisson stream of `rate` per second.
pub fn open_model(rate: f64, tier: Value, program: Value, duration: f64) -> Value {
    open_model_of(rate, json!([tier]), json!([program]), duration)
}

/// As [`open_model`] over several tiers (the first is the entry), the request type
/// running `programs[i]` on tier i.
pub fn open_model_of(rate: f64, tiers: Value, programs: Value, duration: f64) -> Value {
    json!({
        "tiers": tiers, "links": [],
        "types": [{"name": "job", "priority": 0, "programs": programs}],
        "workload": {
            "entry_tier": 0,
            "population": {"kind": "open", "session_rate": rate},
            "chain": {"roles": [{"kind": "request", "type": 0}, {"kind": "end"}], "start": 0,
                      "matrix": [[0.0, 1.0], [0.0, 0.0]]},
            "think": constant(0.0), "weight": constant(1.0), "end": {"kind": "chain"}, "burst": null,
        },
        "run": {"duration": duration, "warmup": 100.0, "seed": 5, "window": 0.1, "records": false},
    })
}

/// Sessions of exactly `n` requests `think` seconds apart.
pub fn sessions_of(m: &mut Value, n: f64, think: f64) {
    m["workload"]["chain"] =
        json!({"roles": [{"kind": "request", "type": 0}], "start": 0, "matrix": [[1.0]]});
    m["workload"]["think"] = constant(think);
    m["workload"]["end"] = json!({"kind": "after_requests", "count": constant(n)});
}

/// Hold the tier's pool 0 for an exponential time of mean `hold`.
pub fn held(hold: f64) -> Value {
    json!([{"op": "acquire", "pool": 0}, {"op": "delay", "time": exp(hold)}, {"op": "release", "pool": 0}])
}

pub fn run(model: &Value) -> Output {
    sim::simulate(&model.to_string(), |_| true).expect("the model runs")
}

/// Run with per-request records.
pub fn run_recorded(model: &Value) -> Output {
    let mut m = model.clone();
    m["run"]["records"] = json!(true);
    run(&m)
}

pub fn close(got: f64, want: f64, rel: f64) {
    assert!(
        (got - want).abs() <= rel * want.abs(),
        "got {got}, want {want} ± {:.1}%",
        rel * 100.0
    );
}
