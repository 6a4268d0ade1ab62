//! The wait queue (ReDAL-W's `WaitQueue`), driven by a scripted policy that holds
//! requests while told to: full → 503 + Retry-After, timed out → 503, a client that
//! leaves while queued leaves the queue (counted), and a finished request lets the
//! queue drain as in the simulator.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::*;
use policy::{Dispatch, Request, RoundRobin};
use proxy::Proxy;
use serde_json::json;
use tokio::io::AsyncWriteExt;

/// Round robin that answers "hold it" while `open` is false.
struct Hold {
    open: Arc<AtomicBool>,
    rr: RoundRobin,
}

impl Dispatch for Hold {
    fn pick(&mut self, now: f64, req: &Request) -> Option<usize> {
        if self.open.load(Ordering::SeqCst) {
            self.rr.pick(now, req)
        } else {
            None
        }
    }
}

async fn held_proxy(b: &Backend, open: bool, queue: serde_json::Value) -> (Proxy, Arc<AtomicBool>) {
    let flag = Arc::new(AtomicBool::new(open));
    let c = config(
        &[b.addr],
        json!({"policy": "round_robin"}),
        json!({"queue": queue}),
    );
    let p = Proxy::start_with(
        c,
        Box::new(Hold {
            open: Arc::clone(&flag),
            rr: RoundRobin::equal(1),
        }),
    )
    .await
    .unwrap();
    (p, flag)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_queue_answers_503_with_retry_after() {
    let b = backend(0).await;
    let (p, _) = held_proxy(
        &b,
        false,
        json!({"size": 2, "timeout": 600, "retry_after": 7}),
    )
    .await;
    let addr = p.addr;
    let waiting: Vec<_> = (0..2)
        .map(|_| tokio::spawn(async move { get(addr, "/", &[]).await }))
        .collect();
    eventually("two requests queued", || {
        p.summary()["dispatch"]["queued"] == 2
    })
    .await;
    let r = get(p.addr, "/", &[]).await;
    assert_eq!(r.status, 503);
    assert_eq!(r.headers["retry-after"], "7");
    let s = p.summary();
    assert_eq!(s["dispatch"]["rejected_queue_full"], 1);
    assert_eq!(sample(&p.metrics_text(), "tierlab_proxy_queue_length"), 2.0);
    assert_eq!(b.seen.requests.load(Ordering::SeqCst), 0);
    waiting.iter().for_each(|w| w.abort());
    p.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_timeout_answers_503() {
    let b = backend(0).await;
    let (p, _) = held_proxy(&b, false, json!({"size": 10, "timeout": 0.2})).await;
    let r = get(p.addr, "/", &[]).await;
    assert_eq!(r.status, 503);
    assert!(r.headers.contains_key("retry-after"));
    let s = p.summary();
    assert_eq!(s["dispatch"]["queued"], 1);
    assert_eq!(s["dispatch"]["rejected_queue_timeout"], 1);
    assert_eq!(sample(&p.metrics_text(), "tierlab_proxy_queue_length"), 0.0);
    p.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_while_queued_leaves_the_queue() {
    let b = backend(0).await;
    let (p, _) = held_proxy(&b, false, json!({"size": 10, "timeout": 600})).await;
    let mut s = tokio::net::TcpStream::connect(p.addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    eventually("queued", || p.summary()["dispatch"]["queued"] == 1).await;
    drop(s);
    eventually("left the queue", || p.summary()["proxy"]["queue_left"] == 1).await;
    assert_eq!(sample(&p.metrics_text(), "tierlab_proxy_queue_length"), 0.0);
    assert_eq!(p.summary()["dispatch"]["rejected_queue_timeout"], 0);
    p.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_request_drains_the_queue() {
    let b = backend_gated(0).await;
    let (p, open) = held_proxy(&b, true, json!({"size": 10, "timeout": 600})).await;
    let addr = p.addr;
    let first = tokio::spawn(async move { get(addr, "/", &[]).await });
    eventually("first at the backend", || {
        b.seen.requests.load(Ordering::SeqCst) == 1
    })
    .await;
    open.store(false, Ordering::SeqCst);
    let second = tokio::spawn(async move { get(addr, "/", &[]).await });
    eventually("second queued", || p.summary()["dispatch"]["queued"] == 1).await;
    open.store(true, Ordering::SeqCst);
    b.gate.add_permits(2);
    assert_eq!(first.await.unwrap().status, 200);
    assert_eq!(second.await.unwrap().status, 200);
    let s = p.summary();
    assert_eq!(s["proxy"]["backends"][0]["served"], 2);
    assert_eq!(s["dispatch"]["rejected_queue_timeout"], 0);
    p.shutdown().unwrap();
}
