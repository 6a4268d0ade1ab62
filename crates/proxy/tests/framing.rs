//! Response framing toward the backend (RFC 9112 §6): chunked (with extensions,
//! trailers and an interim 100 first), read until close, no body for HEAD, and
//! connections reused across chunked responses; malformed responses are 502 or a
//! counted truncation, never a hang.

mod common;

use std::sync::atomic::Ordering;

use bytes::Bytes;
use common::*;
use serde_json::json;

async fn through(reply: &'static [u8]) -> (Reply, proxy::Proxy) {
    let b = backend_raw(reply).await;
    let p = start(&[b.addr], json!({"policy": "round_robin"}), json!({})).await;
    (get(p.addr, "/", &[]).await, p)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_with_interim_extensions_and_trailers() {
    let (r, p) = through(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\nX-Trailer: x\r\n\r\n",
    )
    .await;
    assert_eq!((r.status, r.body.as_str()), (200, "abcdefg"));
    assert_eq!(p.summary()["proxy"]["backends"][0]["served"], 1);
    p.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_without_length_is_read_until_close() {
    let (r, p) = through(b"HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\nall of it, then close").await;
    assert_eq!((r.status, r.body.as_str()), (200, "all of it, then close"));
    p.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_responses_have_no_body_and_keep_the_connection() {
    let b = backend_raw_keepalive(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n").await;
    let p = start(&[b.addr], json!({"policy": "round_robin"}), json!({})).await;
    let mut c = Client::connect(p.addr).await;
    for _ in 0..3 {
        let r = c.send("HEAD", "/", &[], Bytes::new()).await;
        assert_eq!((r.status, r.body.as_str()), (200, ""));
        assert_eq!(r.headers["content-length"], "5");
    }
    assert_eq!(b.seen.connections.load(Ordering::SeqCst), 1);
    p.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hop_by_hop_response_fields_stay_behind() {
    let b = backend_raw_keepalive(
        b"HTTP/1.1 200 OK\r\nX-Secret: 1\r\nConnection: x-secret, keep-alive\r\nKeep-Alive: timeout=5\r\nProxy-Foo: a\r\nX-Kept: 2\r\nContent-Length: 2\r\n\r\nok",
    )
    .await;
    let p = start(&[b.addr], json!({"policy": "round_robin"}), json!({})).await;
    let mut c = Client::connect(p.addr).await;
    for _ in 0..2 {
        let r = c.get("/", &[]).await;
        assert_eq!((r.status, r.body.as_str()), (200, "ok"));
        assert_eq!(r.headers["x-kept"], "2");
        for gone in ["x-secret", "connection", "keep-alive", "proxy-foo"] {
            assert!(!r.headers.contains_key(gone), "{gone}: {:?}", r.headers);
        }
    }
    assert_eq!(b.seen.connections.load(Ordering::SeqCst), 1);
    p.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_responses_reuse_the_backend_connection() {
    let b = backend_raw_keepalive(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    )
    .await;
    let p = start(&[b.addr], json!({"policy": "round_robin"}), json!({})).await;
    let mut c = Client::connect(p.addr).await;
    for _ in 0..5 {
        assert_eq!(c.get("/", &[]).await.body, "ok");
    }
    assert_eq!(b.seen.connections.load(Ordering::SeqCst), 1);
    assert_eq!(b.seen.requests.load(Ordering::SeqCst), 5);
    p.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_responses_are_502_or_a_counted_truncation() {
    for reply in [
        &b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"[..],
        b"HTTP/1.1 2000 Wat\r\n\r\n",
        b"not http at all\r\n\r\n",
    ] {
        let (r, p) = through(reply).await;
        assert_eq!(r.status, 502, "{reply:?}");
        assert_eq!(p.summary()["proxy"]["bad_gateway"], 1);
        p.shutdown().unwrap();
    }
    for reply in [
        &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n"[..],
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n",
    ] {
        let b = backend_raw(reply).await;
        let p = start(&[b.addr], json!({"policy": "round_robin"}), json!({})).await;
        let out = raw(p.addr, b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").await;
        assert!(
            !out.contains("\r\n0\r\n\r\n"),
            "a cut body must not end cleanly: {out:?}"
        );
        eventually("the truncation counted", || {
            p.summary()["proxy"]["backends"][0]["errors"] == 1
        })
        .await;
        p.shutdown().unwrap();
    }
}
