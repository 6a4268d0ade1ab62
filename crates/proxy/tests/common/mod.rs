//! Test backends on 127.0.0.1:0, a proxy started in-process, and a small client.
//! Waits are bounded polls of the proxy's own counters, never wall-time assertions.

#![allow(dead_code)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use proxy::{Config, Proxy};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// What a test backend saw.
#[derive(Default)]
pub struct Seen {
    pub connections: AtomicU64,
    pub requests: AtomicU64,
}

pub struct Backend {
    pub addr: SocketAddr,
    pub seen: Arc<Seen>,
    /// Responses wait for a permit when gated (`backend_gated`).
    pub gate: Arc<Semaphore>,
}

/// A backend answering `backend ID` (and header `x-backend: ID`) to every request.
pub async fn backend(id: usize) -> Backend {
    backend_with(id, Semaphore::MAX_PERMITS).await
}

/// A backend that holds each response until the test adds a permit to `gate`.
pub async fn backend_gated(id: usize) -> Backend {
    backend_with(id, 0).await
}

async fn backend_with(id: usize, permits: usize) -> Backend {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let gate = Arc::new(Semaphore::new(permits));
    let (s, g) = (Arc::clone(&seen), Arc::clone(&gate));
    tokio::spawn(async move {
        loop {
            let (stream, _) = l.accept().await.unwrap();
            s.connections.fetch_add(1, Ordering::SeqCst);
            let (s, g) = (Arc::clone(&s), Arc::clone(&g));
            tokio::spawn(async move {
                let svc = service_fn(move |req: Request<Incoming>| {
                    let (s, g) = (Arc::clone(&s), Arc::clone(&g));
                    async move {
                        s.requests.fetch_add(1, Ordering::SeqCst);
                        let body = req.into_body().collect().await.map(|b| b.to_bytes().len());
                        g.acquire().await.unwrap().forget();
                        let text = format!("backend {id} got {} bytes", body.unwrap_or(0));
                        let mut r = Response::new(Full::new(Bytes::from(text)));
                        r.headers_mut().insert("x-backend", id.into());
                        Ok::<_, Infallible>(r)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Backend { addr, seen, gate }
}

/// A backend taking `delay` per response that dies (listener and every connection
/// closed at once, as when its process is killed) when `kill` is sent true.
pub async fn backend_killable(
    id: usize,
    delay: Duration,
) -> (Backend, tokio::sync::watch::Sender<bool>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let (kill, killed) = tokio::sync::watch::channel(false);
    let s = Arc::clone(&seen);
    let mut on_kill = killed.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = tokio::select! {
                a = l.accept() => a.unwrap(),
                _ = on_kill.changed() => return,
            };
            s.connections.fetch_add(1, Ordering::SeqCst);
            let s = Arc::clone(&s);
            let mut on_kill = killed.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |_req: Request<Incoming>| {
                    let s = Arc::clone(&s);
                    async move {
                        s.requests.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(delay).await;
                        let mut r = Response::new(Full::new(Bytes::from(format!("backend {id}"))));
                        r.headers_mut().insert("x-backend", id.into());
                        Ok::<_, Infallible>(r)
                    }
                });
                let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), svc);
                tokio::select! {
                    _ = conn => {}
                    _ = on_kill.changed() => {}
                }
            });
        }
    });
    (
        Backend {
            addr,
            seen,
            gate: Arc::new(Semaphore::new(0)),
        },
        kill,
    )
}

/// A backend that reads a request head, writes `reply` and closes the connection.
pub async fn backend_raw(reply: &'static [u8]) -> Backend {
    backend_raw_with(reply, false).await
}

/// A backend that answers every request head on a connection with `reply` and keeps
/// the connection open (requests must have no body).
pub async fn backend_raw_keepalive(reply: &'static [u8]) -> Backend {
    backend_raw_with(reply, true).await
}

async fn backend_raw_with(reply: &'static [u8], keep: bool) -> Backend {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let s = Arc::clone(&seen);
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = l.accept().await.unwrap();
            s.connections.fetch_add(1, Ordering::SeqCst);
            let s = Arc::clone(&s);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                    buf.drain(..end);
                    s.requests.fetch_add(1, Ordering::SeqCst);
                    if stream.write_all(reply).await.is_err() || !keep {
                        return;
                    }
                }
            });
        }
    });
    Backend {
        addr,
        seen,
        gate: Arc::new(Semaphore::new(0)),
    }
}

/// An address nothing listens on (bound, then closed): connections are refused.
pub async fn refused_addr() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    l.local_addr().unwrap()
}

/// A proxy on 127.0.0.1:0 in front of `backends`; `extra` is merged into the
/// configuration's top level.
pub fn config(backends: &[SocketAddr], policy: Value, extra: Value) -> Config {
    let mut c = serde_json::json!({
        "listen": "127.0.0.1:0",
        "backends": backends.iter().map(|b| b.to_string()).collect::<Vec<_>>(),
        "policy": policy,
    });
    if let (Some(c), Value::Object(e)) = (c.as_object_mut(), extra) {
        c.extend(e);
    }
    Config::from_json(&c.to_string()).unwrap()
}

pub async fn start(backends: &[SocketAddr], policy: Value, extra: Value) -> Proxy {
    Proxy::start(config(backends, policy, extra)).await.unwrap()
}

/// A keep-alive client connection.
pub struct Client {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
}

pub struct Reply {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: String,
}

impl Reply {
    pub fn backend(&self) -> Option<usize> {
        self.headers
            .get("x-backend")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
    }
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).await.unwrap();
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(conn);
        Client { sender }
    }

    pub async fn get(&mut self, path: &str, headers: &[(&str, &str)]) -> Reply {
        self.send("GET", path, headers, Bytes::new()).await
    }

    /// The status, or None if the connection broke before a whole response came.
    pub async fn try_get(&mut self, path: &str) -> Option<u16> {
        let req = Request::builder()
            .uri(path)
            .header("host", "test")
            .body(Full::new(Bytes::new()))
            .unwrap();
        self.sender.ready().await.ok()?;
        let resp = self.sender.send_request(req).await.ok()?;
        let status = resp.status().as_u16();
        resp.into_body().collect().await.ok()?;
        Some(status)
    }

    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Reply {
        let mut b = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "test");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        self.sender.ready().await.unwrap();
        let resp = self
            .sender
            .send_request(b.body(Full::new(body)).unwrap())
            .await
            .unwrap();
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        Reply {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }
}

/// One request on a connection of its own.
pub async fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Reply {
    Client::connect(addr).await.get(path, headers).await
}

/// Write raw bytes, read until the proxy closes the connection (or 10 s pass).
pub async fn raw(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// Poll `cond` until it holds (bounded: generous on a busy machine).
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..2000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what}: not reached within 20 s");
}

/// The value of a sample line `name` (with its label set, if any) in Prometheus text.
pub fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(name)
                .and_then(|rest| rest.strip_prefix(' '))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or_else(|| panic!("{name} not in metrics:\n{text}"))
}

pub fn empty() -> Empty<Bytes> {
    Empty::new()
}
