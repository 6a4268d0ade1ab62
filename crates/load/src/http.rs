//! One emulated browser's HTTP/1.1 keep-alive connection and cookie jar.

use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{HeaderValue, CONTENT_TYPE, COOKIE, HOST, SET_COOKIE};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::collect::Failure;

/// What a request is made of once its templates are rendered.
pub struct Outgoing<'a> {
    pub method: &'a Method,
    pub path_and_query: &'a str,
    /// url-encoded form body (POST), empty for none.
    pub body: String,
    /// Tags the middleware reads to join its profile to this record.
    pub tags: [(&'static str, String); 3],
}

#[derive(Default)]
pub struct Browser {
    conn: Option<SendRequest<Full<Bytes>>>,
    cookies: Vec<(String, String)>,
    /// Connections opened again after the server closed an idle one.
    pub reconnects: u64,
}

pub async fn connect(addr: SocketAddr) -> Result<SendRequest<Full<Bytes>>, Failure> {
    let tcp = TcpStream::connect(addr).await.map_err(|_| Failure::Connect)?;
    tcp.set_nodelay(true).map_err(|_| Failure::Connect)?;
    let (send, conn) = http1::handshake(TokioIo::new(tcp)).await.map_err(|_| Failure::Connect)?;
    tokio::spawn(conn); // drives the connection; ends when `send` is dropped
    Ok(send)
}

impl Browser {
    /// A new session: no cookies; the connection is kept, as a browser would.
    pub fn new_session(&mut self) {
        self.cookies.clear();
    }

    /// Send one request and read the whole response; the byte count on success.
    pub async fn fetch(&mut self, addr: SocketAddr, host: &HeaderValue, out: &Outgoing<'_>) -> Result<u64, Failure> {
        // A kept-alive connection the server has closed meanwhile fails before any
        // response byte; one retry on a fresh connection, as browsers do.
        let reused = self.conn.as_ref().is_some_and(|c| !c.is_closed());
        match self.try_fetch(addr, host, out).await {
            Err(Failure::Protocol) if reused => {
                self.reconnects += 1;
                self.try_fetch(addr, host, out).await
            }
            result => result,
        }
    }

    async fn try_fetch(&mut self, addr: SocketAddr, host: &HeaderValue, out: &Outgoing<'_>) -> Result<u64, Failure> {
        let mut send = match self.conn.take() {
            Some(c) if !c.is_closed() => c,
            _ => connect(addr).await?,
        };
        let mut req = Request::builder().method(out.method.clone()).uri(out.path_and_query).header(HOST, host);
        if !self.cookies.is_empty() {
            let jar = self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ");
            req = req.header(COOKIE, jar);
        }
        for (name, value) in &out.tags {
            req = req.header(*name, value.as_str());
        }
        if !out.body.is_empty() {
            req = req.header(CONTENT_TYPE, "application/x-www-form-urlencoded");
        }
        let req = req.body(Full::new(Bytes::from(out.body.clone()))).map_err(|_| Failure::Protocol)?;
        send.ready().await.map_err(|_| Failure::Protocol)?;
        let resp = send.send_request(req).await.map_err(|_| Failure::Protocol)?;
        for v in resp.headers().get_all(SET_COOKIE) {
            self.set_cookie(v);
        }
        let status = resp.status();
        let mut body = resp.into_body();
        let mut bytes = 0u64;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| Failure::Protocol)?;
            bytes += frame.data_ref().map_or(0, |d| d.len() as u64);
        }
        self.conn = Some(send);
        match status.as_u16() {
            200..=399 => Ok(bytes),
            503 => Err(Failure::Rejected),
            400..=499 => Err(Failure::Http4xx),
            _ => Err(Failure::Http5xx),
        }
    }

    /// Keep `name=value` of a Set-Cookie header (attributes ignored: one host, one run).
    fn set_cookie(&mut self, header: &HeaderValue) {
        let Ok(text) = header.to_str() else { return };
        let pair = text.split(';').next().unwrap_or("");
        let Some((k, v)) = pair.split_once('=') else { return };
        let (k, v) = (k.trim().to_string(), v.trim().to_string());
        match self.cookies.iter_mut().find(|(name, _)| *name == k) {
            Some(slot) => slot.1 = v,
            None => self.cookies.push((k, v)),
        }
    }
}

/// The method named in the mapping (validated in Python).
pub fn method(name: &str) -> Result<Method, String> {
    Method::from_bytes(name.as_bytes()).map_err(|_| format!("not an HTTP method: {name:?}"))
}
