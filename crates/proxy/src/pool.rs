//! Pooled HTTP/1.1 keep-alive connections to one backend. Connecting is kept apart from
//! sending so the proxy knows whether a request reached the backend: a refused or
//! timed-out connection means it never did (re-dispatch elsewhere), a request that
//! hyper hands back unsent is tried on a fresh connection, and one lost after it was
//! written is a 502.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

pub type Sender = SendRequest<Incoming>;

pub struct Upstream {
    pub addr: SocketAddr,
    idle: Mutex<Vec<Sender>>,
    max_idle: usize,
    connect_timeout: Duration,
}

/// How sending a request to a backend ended, if not with a response. (Boxing the
/// handed-back request would cost an allocation on a path that is already slow.)
#[allow(clippy::large_enum_variant)]
pub enum Failure {
    /// The backend refused (or did not accept in time): the request is handed back.
    Refused(Request<Incoming>),
    /// The request was written and the connection lost before a whole response head.
    Lost,
}

impl Upstream {
    pub fn new(addr: SocketAddr, max_idle: usize, connect_timeout: Duration) -> Upstream {
        Upstream {
            addr,
            idle: Mutex::new(Vec::new()),
            max_idle,
            connect_timeout,
        }
    }

    fn take_idle(&self) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(s) = idle.pop() {
            if !s.is_closed() {
                return Some(s);
            }
        }
        None
    }

    /// A connection back from a finished exchange; kept if the pool has room.
    pub fn put(&self, s: Sender) {
        if s.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < self.max_idle {
            idle.push(s);
        }
    }

    async fn connect(&self) -> Option<Sender> {
        let stream = tokio::time::timeout(self.connect_timeout, TcpStream::connect(self.addr))
            .await
            .ok()?
            .ok()?;
        stream.set_nodelay(true).ok()?;
        let (sender, conn) = http1::handshake(TokioIo::new(stream)).await.ok()?;
        tokio::spawn(async move {
            // The connection's errors reach the request that was on it.
            let _ = conn.await;
        });
        Some(sender)
    }

    /// Send `req` on a pooled connection (else a new one) and wait for the response
    /// head; the connection is returned with the response for [`Upstream::put`] once the
    /// response body has been relayed.
    pub async fn send(
        &self,
        mut req: Request<Incoming>,
    ) -> Result<(Response<Incoming>, Sender), Failure> {
        let mut fresh = false;
        loop {
            let mut s = match self.take_idle() {
                Some(s) => s,
                None => {
                    fresh = true;
                    match self.connect().await {
                        Some(s) => s,
                        None => return Err(Failure::Refused(req)),
                    }
                }
            };
            if s.ready().await.is_err() {
                if fresh {
                    return Err(Failure::Refused(req));
                }
                continue;
            }
            match s.try_send_request(req).await {
                Ok(resp) => return Ok((resp, s)),
                Err(mut e) => match e.take_message() {
                    // Never written (the pooled connection had closed): try a fresh one.
                    Some(r) if !fresh => req = r,
                    Some(r) => return Err(Failure::Refused(r)),
                    None => return Err(Failure::Lost),
                },
            }
        }
    }
}
