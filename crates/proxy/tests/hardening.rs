//! What clients cannot do to the proxy: malformed requests get 400/414/431 and the
//! proxy keeps serving; a request with both Content-Length and Transfer-Encoding is
//! never framed two ways (no smuggling); a client trickling its request is timed out
//! without ever holding a backend connection; the admin endpoint wants its token.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use common::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn status(reply: &str) -> u16 {
    reply
        .strip_prefix("HTTP/1.1 ")
        .and_then(|r| r.get(..3))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {reply:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_are_refused_and_the_proxy_keeps_serving() {
    let b = backend(0).await;
    let p = start(&[b.addr], json!({"policy": "round_robin"}), json!({})).await;
    let garbage = raw(p.addr, b"\x16\x03\x01\x02\x00garbage\r\n\r\n").await;
    assert_eq!(status(&garbage), 400);
    let bad_length = raw(
        p.addr,
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1x\r\n\r\n",
    )
    .await;
    assert_eq!(status(&bad_length), 400);
    let two_lengths = raw(
        p.addr,
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    )
    .await;
    assert_eq!(status(&two_lengths), 400);
    let big_header = format!(
        "GET / HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n",
        "a".repeat(40_000)
    );
    assert_eq!(status(&raw(p.addr, big_header.as_bytes()).await), 431);
    let long_url = format!("GET /{} HTTP/1.1\r\nHost: t\r\n\r\n", "u".repeat(70_000));
    let long = status(&raw(p.addr, long_url.as_bytes()).await);
    assert!([414, 431].contains(&long));
    // None of them reached the backend; a good request still does.
    assert_eq!(b.seen.requests.load(Ordering::SeqCst), 0);
    assert_eq!(get(p.addr, "/", &[]).await.status, 200);
    p.shutdown().unwrap();
}

/// RFC 9112 §6.3: Transfer-Encoding overrides Content-Length and the connection must
/// close after the response. The bytes a Content-Length reading would take as a second
/// request ("GET /smuggled") never reach the backend as one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_length_with_transfer_encoding_cannot_smuggle_a_request() {
    let b = backend(0).await;
    let p = start(&[b.addr], json!({"policy": "round_robin"}), json!({})).await;
    let attack = b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n";
    let out = raw(p.addr, attack).await;
    assert_eq!(out.matches("HTTP/1.1 ").count(), 1, "{out}");
    assert!([200, 400].contains(&status(&out)));
    assert!(b.seen.requests.load(Ordering::SeqCst) <= 1);
    assert_eq!(get(p.addr, "/", &[]).await.status, 200);
    p.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickling_client_is_timed_out_without_a_backend_connection() {
    let b = backend(0).await;
    let p = start(
        &[b.addr],
        json!({"policy": "round_robin"}),
        json!({"limits": {"header_timeout": 0.5}}),
    )
    .await;
    let mut s = tokio::net::TcpStream::connect(p.addr).await.unwrap();
    let request = b"GET / HTTP/1.1\r\nHost: t\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    let mut closed = false;
    // 200 ms a byte: the request would take ~30 s; the proxy allows 0.5 s.
    for byte in request {
        if s.write_all(&[*byte]).await.is_err() {
            closed = true;
            break;
        }
        let mut buf = [0u8; 256];
        match tokio::time::timeout(Duration::from_millis(200), s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                closed = true;
                break;
            }
            Ok(Ok(_)) => {} // a 408 may come first; the close follows
            Err(_) => {}
        }
    }
    assert!(closed, "the proxy kept a trickling client");
    assert_eq!(b.seen.connections.load(Ordering::SeqCst), 0);
    assert_eq!(get(p.addr, "/", &[]).await.status, 200);
    p.shutdown().unwrap();
}

/// A body trickled byte by byte is read before dispatch: 408 after `body_timeout`, and
/// no backend was connected to meanwhile. A small body sent at once is forwarded whole;
/// one past `buffer_body` streams (chunked toward the backend when its length is unknown).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickled_body_gets_408_without_a_backend_connection() {
    let b = backend(0).await;
    let p = start(
        &[b.addr],
        json!({"policy": "round_robin"}),
        json!({"limits": {"body_timeout": 0.5, "buffer_body": 16}}),
    )
    .await;
    let mut s = tokio::net::TcpStream::connect(p.addr).await.unwrap();
    s.write_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n")
        .await
        .unwrap();
    let mut reply = Vec::new();
    // 200 ms a byte: the body would take 2 s; the proxy allows 0.5 s.
    for byte in b"0123456789" {
        if s.write_all(&[*byte]).await.is_err() {
            break;
        }
        let mut buf = [0u8; 256];
        if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(200), s.read(&mut buf)).await
        {
            reply.extend_from_slice(&buf[..n]);
            break;
        }
    }
    assert_eq!(status(&String::from_utf8_lossy(&reply)), 408);
    assert_eq!(b.seen.connections.load(Ordering::SeqCst), 0);
    assert_eq!(p.summary()["proxy"]["client_timeouts"], 1);
    // Bodies still arrive whole: within the buffer, past it with a known length, and
    // past it chunked (the backend echoes the bytes it got).
    let mut c = Client::connect(p.addr).await;
    let small = c.send("POST", "/", &[], Bytes::from_static(b"small")).await;
    assert_eq!(small.body, "backend 0 got 5 bytes");
    let long = c.send("POST", "/", &[], Bytes::from(vec![b'x'; 40])).await;
    assert_eq!(long.body, "backend 0 got 40 bytes");
    let chunked = raw(
        p.addr,
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
          a\r\n0123456789\r\n1e\r\n0123456789abcdefghij0123456789\r\n0\r\n\r\n",
    )
    .await;
    assert!(chunked.ends_with("backend 0 got 40 bytes"), "{chunked}");
    p.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_wants_the_token_and_serves_metrics_and_summary() {
    let dir = std::env::temp_dir().join(format!("tierlab-proxy-admin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let token = dir.join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let b = backend(0).await;
    let p = start(
        &[b.addr],
        json!({"policy": "round_robin"}),
        json!({"admin": {"listen": "127.0.0.1:0", "token_file": token}}),
    )
    .await;
    let admin = p.admin_addr.unwrap();
    assert!(admin.ip().is_loopback());
    assert_eq!(get(admin, "/metrics", &[]).await.status, 401);
    assert_eq!(
        get(admin, "/metrics", &[("authorization", "Bearer nope")])
            .await
            .status,
        401
    );
    assert_eq!(
        get(admin, "/metrics", &[("authorization", "s3cret")])
            .await
            .status,
        401
    );
    get(p.addr, "/", &[]).await;
    let ok = [("authorization", "Bearer s3cret")];
    let m = get(admin, "/metrics", &ok).await;
    assert_eq!(m.status, 200);
    assert_eq!(sample(&m.body, "tierlab_proxy_requests_total"), 1.0);
    let s: serde_json::Value =
        serde_json::from_str(&get(admin, "/summary", &ok).await.body).unwrap();
    assert_eq!(s["dispatch"]["sessions_created"], 1);
    p.shutdown().unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}
