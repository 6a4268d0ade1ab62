//! RFC 9112 §3.2 at the proxy's socket: a request without `Host` or with two is
//! answered 400 and never reaches a backend; an absolute-form target's authority
//! replaces the client's `Host` toward the backend; CONNECT is answered 501, not
//! forwarded as `CONNECT /`. Every refusal is counted (`not_forwarded`).

mod common;

use std::sync::atomic::Ordering;

use common::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A backend that answers each request with its own head as the body.
async fn backend_echo() -> (std::net::SocketAddr, std::sync::Arc<Seen>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let seen = std::sync::Arc::new(Seen::default());
    let s = std::sync::Arc::clone(&seen);
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = l.accept().await.unwrap();
            let s = std::sync::Arc::clone(&s);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut chunk = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&chunk[..n]),
                    }
                }
                s.requests.fetch_add(1, Ordering::SeqCst);
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    head.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
                let _ = stream.write_all(&head).await;
            });
        }
    });
    (addr, seen)
}

fn status(reply: &str) -> u16 {
    reply
        .split_once(' ')
        .and_then(|(_, r)| r.get(..3))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {reply:?}"))
}

/// The forwarded head's `Host` values, from the echo in the response body.
fn forwarded_hosts(reply: &str) -> Vec<&str> {
    let (_, body) = reply.split_once("\r\n\r\n").unwrap();
    body.lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.eq_ignore_ascii_case("host"))
        .map(|(_, v)| v.trim())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_fields_and_request_targets_as_rfc_9112_says() {
    let (b, seen) = backend_echo().await;
    let p = start(&[b], json!({"policy": "round_robin"}), json!({})).await;
    // Each on a connection of its own, closed after the answer.
    let refused = [
        (&b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n"[..], 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\nConnection: close\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: user@a\r\nConnection: close\r\n\r\n", 400),
        (b"GET / HTTP/1.0\r\n\r\n", 400),
        (
            b"CONNECT origin.example:443 HTTP/1.1\r\nHost: origin.example:443\r\nConnection: close\r\n\r\n",
            501,
        ),
    ];
    for (request, want) in refused {
        let out = raw(p.addr, request).await;
        assert_eq!(
            status(&out),
            want,
            "{}: {out}",
            String::from_utf8_lossy(request)
        );
    }
    assert_eq!(seen.requests.load(Ordering::SeqCst), 0);
    let counted = p.summary()["proxy"]["not_forwarded"].as_u64();
    assert_eq!(counted, Some(refused.len() as u64));

    let out = raw(
        p.addr,
        b"GET http://origin.example:8080/abs?q=1 HTTP/1.1\r\nHost: client.example\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status(&out), 200, "{out}");
    assert!(out.contains("\r\n\r\nGET /abs?q=1 HTTP/1.1\r\n"), "{out}");
    assert_eq!(forwarded_hosts(&out), ["origin.example:8080"]);
    // HTTP/1.0 without Host: the absolute-form target supplies it.
    let out = raw(p.addr, b"GET http://origin.example/x HTTP/1.0\r\n\r\n").await;
    assert_eq!(status(&out), 200, "{out}");
    assert_eq!(forwarded_hosts(&out), ["origin.example"]);
    let out = raw(
        p.addr,
        b"GET /o HTTP/1.1\r\nHost: t:81\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(forwarded_hosts(&out), ["t:81"]);
    assert_eq!(seen.requests.load(Ordering::SeqCst), 3);
    p.shutdown().unwrap();
}
