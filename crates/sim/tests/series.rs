//! The per-window series and the servers' summary, against a run worked out by hand:
//! one client, 1 s think, a visit of 0.01 s of CPU — so every window's arrivals,
//! completions, concurrency, response time and utilization are known exactly.

mod common;

use common::*;
use serde_json::json;
use trace::Output;

/// One client whose sends are at 1 + 1.01 k s, each visiting the tier for 0.01 s of
/// its CPU; windows of 1/8 s (exact in binary, so window edges fall on exact times).
fn one_client(duration: f64) -> Output {
    clients(1, duration)
}

/// `n` closed clients in step: each sends at the same instant and they share the CPU.
fn clients(n: u32, duration: f64) -> Output {
    let cpu = json!([{"kind": "cpu", "name": "cpu", "cores": 1, "overhead": []}]);
    let mut m = open_model(
        1.0,
        tier("s", 1, json!([]), cpu),
        json!([{"op": "cpu", "station": 0, "demand": constant(0.01)}]),
        duration,
    );
    m["workload"]["population"] = json!({"kind": "closed", "clients": n});
    m["run"]["window"] = json!(0.125);
    sessions_of(&mut m, 1e9, 1.0);
    run(&m)
}

/// The column `metric` of the server (`resource` "") or of its `resource`, one value
/// per window.
fn column(t: &Output, resource: &str, metric: &str) -> Vec<f64> {
    let s = &t.series;
    let width = s.meta.len();
    let at = s
        .meta
        .iter()
        .position(|c| c.resource == resource && c.metric == metric)
        .expect("a column");
    s.values.iter().skip(at).step_by(width).copied().collect()
}

#[test]
fn each_window_counts_its_visits_and_their_residence() {
    let t = one_client(200.0);
    let starts = &t.series.window_start;
    assert_eq!(starts.len(), 1600, "200 s of 1/8 s windows, none partial");
    let (arrivals, completions) = (column(&t, "", "arrivals"), column(&t, "", "completions"));
    let (rt, concurrency) = (
        column(&t, "", "response_time"),
        column(&t, "", "concurrency"),
    );
    let cpu = column(&t, "cpu", "utilization");
    // Sends k = 0..=197 (the last at 199.97 s, back at 199.98 s): one visit each.
    assert_eq!(arrivals.iter().sum::<f64>(), 198.0);
    assert_eq!(completions.iter().sum::<f64>(), 198.0);
    // The second visit, [2.01, 2.02), lies in window 16, [2.0, 2.125).
    assert_eq!(starts[16], 2.0);
    assert_eq!((arrivals[16], completions[16]), (1.0, 1.0));
    assert!((rt[16] - 0.01).abs() < 1e-12, "{}", rt[16]);
    assert!(
        (concurrency[16] - 0.01 / 0.125).abs() < 1e-12,
        "{}",
        concurrency[16]
    );
    assert!((cpu[16] - 0.01 / 0.125).abs() < 1e-12, "{}", cpu[16]);
    // A window without a completion has no response time, and nothing in progress.
    assert_eq!(
        (arrivals[15], completions[15], concurrency[15], cpu[15]),
        (0.0, 0.0, 0.0, 0.0)
    );
    assert!(rt[15].is_nan());
    // Time in the tier over the whole run: 198 visits of 0.01 s.
    let area: f64 = concurrency.iter().map(|c| c * 0.125).sum();
    assert!((area - 1.98).abs() < 1e-9, "{area}");
}

#[test]
fn a_window_s_response_time_is_the_mean_of_its_completions() {
    // Two clients send at 1 + 1.02 k s and share the one core: both back 0.02 s later.
    let t = clients(2, 200.0);
    let (completions, rt) = (
        column(&t, "", "completions"),
        column(&t, "", "response_time"),
    );
    assert_eq!(completions[16], 2.0, "both visits of [2.02, 2.04)");
    assert!((rt[16] - 0.02).abs() < 1e-12, "{}", rt[16]);
}

#[test]
fn the_summary_counts_the_measured_visits() {
    let s = one_client(200.0).summary;
    let server = &s.tiers["s"].servers[0];
    // Measured from 100 s: sends k = 99 (100.99 s) to 197.
    assert_eq!(server.visits, Some(99));
    assert!((server.throughput.unwrap() - 0.99).abs() < 1e-12);
    assert!((server.mean_residence.unwrap() - 0.01).abs() < 1e-12);
}

#[test]
fn a_run_that_ends_inside_a_window_closes_it() {
    let t = one_client(200.0625);
    let starts = &t.series.window_start;
    assert_eq!(
        starts.len(),
        1601,
        "the partial window [200, 200.0625) is a row"
    );
    assert_eq!(starts.last(), Some(&200.0));
}

#[test]
fn the_series_fill_the_room_reserved_from_the_horizon() {
    // Reserved once from duration ÷ window (plus one row against rounding): a buffer
    // regrown as it fills would have doubled, leaving far more than a row spare.
    for duration in [200.0, 200.06] {
        let t = one_client(duration);
        let s = &t.series;
        let rows = (duration / 0.125_f64).ceil() as usize;
        assert_eq!(s.window_start.len(), rows, "{duration} s");
        assert!(
            s.values.capacity() <= s.values.len() + s.meta.len(),
            "{duration} s: {} reserved for {}",
            s.values.capacity(),
            s.values.len()
        );
    }
}
