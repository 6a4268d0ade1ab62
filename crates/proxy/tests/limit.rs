//! The per-backend limit on requests in flight (`limit`): past it, 503 with the
//! configured `Retry-After`, counted in the summary, the metrics and the decision log
//! (outcome `limit`), the backend never seeing the refused request; and Gradient2 from
//! `crates/control` re-sizing the limit from what the proxy sees of the backend.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_limit_503_with_retry_after_and_every_request_counted() {
    let dir = std::env::temp_dir().join(format!("tierlab-proxy-limit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("decisions.jsonl");
    let b = backend_gated(0).await;
    let p = start(
        &[b.addr],
        json!({"policy": "round_robin"}),
        json!({"limit": {"size": 2, "retry_after": 3}, "decisions": log}),
    )
    .await;
    let addr = p.addr;
    let held: Vec<_> = (0..2)
        .map(|_| tokio::spawn(async move { get(addr, "/", &[]).await }))
        .collect();
    eventually("two requests at the backend", || {
        b.seen.requests.load(Ordering::SeqCst) == 2
    })
    .await;
    let r = get(p.addr, "/", &[]).await;
    assert_eq!(r.status, 503);
    assert_eq!(r.headers["retry-after"], "3");
    assert!(r.body.contains("limit"), "{}", r.body);
    let s = p.summary();
    assert_eq!(s["proxy"]["rejected_limit"], 1);
    let b0 = &s["proxy"]["backends"][0];
    assert_eq!(
        (&b0["limit"], &b0["inflight"], &b0["rejected_limit"]),
        (&json!(2), &json!(2), &json!(1))
    );
    assert_eq!(b0["limit_reason"], Value::Null, "a fixed limit");
    let m = p.metrics_text();
    let label = format!("{{backend=\"{}\"}}", b.addr);
    assert_eq!(
        sample(&m, &format!("tierlab_proxy_backend_limit{label}")),
        2.0
    );
    assert_eq!(
        sample(
            &m,
            &format!("tierlab_proxy_backend_rejected_limit_total{label}")
        ),
        1.0
    );
    assert_eq!(sample(&m, "tierlab_proxy_rejected_limit_total"), 1.0);
    // Once the two are answered, there is room again.
    b.gate.add_permits(3);
    for h in held {
        assert_eq!(h.await.unwrap().status, 200);
    }
    assert_eq!(get(p.addr, "/", &[]).await.status, 200);
    eventually("nothing in flight", || {
        p.summary()["proxy"]["backends"][0]["inflight"] == 0
    })
    .await;
    p.shutdown().unwrap();
    // Sent 4 = served 3 + refused at the limit 1; the refused one never reached it.
    let outcomes: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["outcome"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(outcomes.len(), 4);
    assert_eq!(outcomes.iter().filter(|o| *o == "served").count(), 3);
    assert_eq!(outcomes.iter().filter(|o| *o == "limit").count(), 1);
    assert_eq!(b.seen.requests.load(Ordering::SeqCst), 3);
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gradient2_raises_the_limit_while_the_latency_holds() {
    // A 50 ms backend, the limit starting at 4 of bounds [2, 16], six clients: the limit
    // is full (4 in flight ≥ half of it) and the hold time steady, so Gradient2's
    // gradient is 1 and each interval adds smoothing × queue = 0.8 to the limit.
    let (b, _kill) = backend_killable(0, Duration::from_millis(50)).await;
    let control = json!({"interval": 0.25, "bounds": {"threads": [2, 16]},
        "strategy": {"strategy": "gradient", "smoothing": 0.2, "queue": 4.0,
                     "tolerance": 1.5, "long_window": 120, "warmup": 2}});
    let p = start(
        &[b.addr],
        json!({"policy": "round_robin"}),
        json!({"limit": {"size": 4, "control": control}}),
    )
    .await;
    let addr = p.addr;
    let clients: Vec<_> = (0..6)
        .map(|_| {
            tokio::spawn(async move {
                let mut c = Client::connect(addr).await;
                loop {
                    if c.get("/", &[]).await.status == 503 {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            })
        })
        .collect();
    eventually("the limit raised above 4", || {
        p.summary()["proxy"]["backends"][0]["limit"]
            .as_u64()
            .is_some_and(|l| l > 4)
    })
    .await;
    clients.iter().for_each(|c| c.abort());
    let b0 = &p.summary()["proxy"]["backends"][0];
    let limit = b0["limit"].as_u64().unwrap();
    assert!((2..=16).contains(&limit), "{limit}");
    let reason = b0["limit_reason"].as_str().unwrap();
    assert!(reason.contains("gradient"), "{reason}");
    let m = p.metrics_text();
    let label = format!("{{backend=\"{}\"}}", b.addr);
    let gauge = sample(&m, &format!("tierlab_proxy_backend_limit{label}"));
    assert!((2.0..=16.0).contains(&gauge), "{gauge}");
    p.shutdown().unwrap();
}
