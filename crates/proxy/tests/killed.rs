//! A backend dies mid-run: every request the clients sent is accounted for — served
//! (perhaps after a re-dispatch), or an explicit 502/503, or a response cut off — and
//! the clients' counts, the proxy's metrics and its decision log agree.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};

const CLIENTS: usize = 8;
const PER_CLIENT: usize = 150;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_backend_loses_no_request_silently() {
    let dir = std::env::temp_dir().join(format!("tierlab-proxy-killed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("decisions.jsonl");
    let delay = Duration::from_millis(2);
    let (victim, kill) = backend_killable(0, delay).await;
    let (other, _keep) = backend_killable(1, delay).await;
    let p = start(
        &[victim.addr, other.addr],
        json!({"policy": "least_active"}),
        json!({"decisions": log, "health": {"retry": 600}}),
    )
    .await;
    let addr = p.addr;
    let sent = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let sent = Arc::clone(&sent);
            tokio::spawn(async move {
                let mut by: HashMap<String, u64> = HashMap::new();
                let mut c = Client::connect(addr).await;
                for _ in 0..PER_CLIENT {
                    sent.fetch_add(1, Ordering::SeqCst);
                    let key = match c.try_get("/").await {
                        Some(status) => status.to_string(),
                        None => {
                            c = Client::connect(addr).await;
                            "broken".to_string()
                        }
                    };
                    *by.entry(key).or_default() += 1;
                }
                by
            })
        })
        .collect();
    eventually("a third of the load sent", || {
        sent.load(Ordering::SeqCst) >= (CLIENTS * PER_CLIENT / 3) as u64
    })
    .await;
    kill.send(true).unwrap();
    let mut by: HashMap<String, u64> = HashMap::new();
    for c in clients {
        for (k, v) in c.await.unwrap() {
            *by.entry(k).or_default() += v;
        }
    }
    let total = (CLIENTS * PER_CLIENT) as u64;
    let n = |k: &str| by.get(k).copied().unwrap_or(0);
    assert_eq!(by.values().sum::<u64>(), total, "{by:?}");
    assert_eq!(
        n("200") + n("502") + n("503") + n("broken"),
        total,
        "{by:?}"
    );

    let s = p.summary();
    let served: u64 = (0..2)
        .map(|k| s["proxy"]["backends"][k]["served"].as_u64().unwrap())
        .sum();
    assert_eq!(s["proxy"]["requests"], total);
    assert_eq!(served, n("200"), "{s:#}");
    assert_eq!(s["proxy"]["bad_gateway"], n("502"));
    assert_eq!(s["proxy"]["truncated"], n("broken"));
    let refused = ["rejected_queue_full", "rejected_queue_timeout"]
        .iter()
        .map(|k| s["dispatch"][k].as_u64().unwrap())
        .sum::<u64>()
        + s["proxy"]["rejected_no_backend"].as_u64().unwrap();
    assert_eq!(refused, n("503"));
    assert!(victim.seen.requests.load(Ordering::SeqCst) > 0);
    p.shutdown().unwrap();

    let mut outcomes: HashMap<String, u64> = HashMap::new();
    for l in std::fs::read_to_string(&log).unwrap().lines() {
        let d: Value = serde_json::from_str(l).unwrap();
        *outcomes
            .entry(d["outcome"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    let o = |k: &str| outcomes.get(k).copied().unwrap_or(0);
    assert_eq!(outcomes.values().sum::<u64>(), total, "{outcomes:?}");
    assert_eq!(o("served"), n("200"));
    assert_eq!(o("bad_gateway"), n("502"));
    assert_eq!(o("truncated"), n("broken"));
    eprintln!(
        "clients: {by:?}; proxy: {outcomes:?}; re-dispatched {}",
        s["proxy"]["redispatches"]
    );
    std::fs::remove_dir_all(dir).unwrap();
}
