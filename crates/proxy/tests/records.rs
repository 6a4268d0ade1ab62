//! What the proxy leaves for the trace: one JSON line per request (format in
//! README.md) and, at shutdown, the dispatch summary file.

mod common;

use common::*;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_and_summary_are_written() {
    let dir = std::env::temp_dir().join(format!("tierlab-proxy-records-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (log, summary) = (dir.join("decisions.jsonl"), dir.join("summary.json"));
    let bs = [backend(0).await, backend(1).await];
    let addrs = [bs[0].addr, bs[1].addr];
    let p = start(
        &addrs,
        json!({"policy": "round_robin"}),
        json!({"decisions": log, "summary": summary,
               "types": {"names": ["home", "item"], "paths": [["/item", "item"]]}}),
    )
    .await;
    let mut c = Client::connect(p.addr).await;
    c.get("/item?i=1", &[("x-tierlab-session", "5")]).await;
    c.get(
        "/",
        &[("x-tierlab-session", "5"), ("x-tierlab-type", "item")],
    )
    .await;
    c.get("/", &[("x-tierlab-session", "6")]).await;
    p.shutdown().unwrap();
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    let pick = |i: usize, k: &str| lines[i][k].clone();
    assert_eq!(
        (pick(0, "session"), pick(0, "type"), pick(0, "server")),
        (json!(5), json!(1), json!(0))
    );
    assert_eq!(
        (pick(1, "home"), pick(1, "server"), pick(1, "migrated")),
        (json!(0), json!(1), json!(true))
    );
    assert_eq!(
        (pick(2, "type"), pick(2, "outcome"), pick(2, "status")),
        (json!(0), json!("served"), json!(200))
    );
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(s["dispatch"]["sessions_created"], 2);
    assert_eq!(s["dispatch"]["session_migrations"], 1);
    std::fs::remove_dir_all(dir).unwrap();
}
