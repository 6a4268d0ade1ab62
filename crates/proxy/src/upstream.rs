//! HTTP/1.1 toward one backend: pooled keep-alive connections, each request written
//! and its response read in the request's own task. The client side of hyper (a
//! connection task woken through channels, header maps built twice) cost 2.5–3 µs of
//! CPU per request more than this in A/B runs (benchmarks/README.md), which was the gap
//! to HAProxy. Framing follows RFC 9112 §6: requests carry Content-Length when the
//! length is known, else chunked; responses are delimited by no body (HEAD, 1xx, 204,
//! 304), chunked, Content-Length, or the connection's close.
//!
//! Connecting is apart from sending, so the proxy knows whether a request reached the
//! backend: refused (or not accepted in time) → handed back for re-dispatch; failed
//! while writing the head of a request on a pooled connection → tried once on a fresh
//! one; lost after that → 502.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::header::{HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use hyper::{HeaderMap, Method, Request, Response, StatusCode};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use tokio_util::io::poll_read_buf;

use crate::body::ClientBody;
use crate::hop;

/// Response header fields beyond this many: the response is refused (502).
const MAX_HEADERS: usize = 100;
/// A response head larger than this: refused rather than buffered without bound.
const MAX_HEAD: usize = 64 * 1024;
/// A chunk-size or trailer line longer than this is a protocol error.
const MAX_LINE: usize = 4096;

/// One keep-alive connection and its response deadline, reused across requests:
/// pushing a timer's deadline later is cheap, whereas a new timer per request made
/// tokio's current-thread driver write its eventfd about once per request (strace).
pub struct Conn {
    io: Io,
    deadline: Pin<Box<Sleep>>,
}

/// The socket and the bytes read from it and not yet consumed.
struct Io {
    stream: TcpStream,
    buf: BytesMut,
}

impl Conn {
    /// Still usable: nothing unread, and the backend has not closed it while idle.
    fn is_fresh(&self) -> bool {
        let mut probe = [0u8; 1];
        self.io.buf.is_empty()
            && matches!(self.io.stream.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }
}

impl Io {
    /// Read more into the buffer; false at end of stream. Through `AsyncRead`, which
    /// takes a short read as "drained" (no probing read that fails with EAGAIN: one
    /// syscall per request less than `poll_read_ready` + `try_read_buf`, by strace).
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<bool>> {
        if self.buf.capacity() - self.buf.len() < 4096 {
            self.buf.reserve(16 * 1024);
        }
        let n = ready!(poll_read_buf(Pin::new(&mut self.stream), cx, &mut self.buf))?;
        Poll::Ready(Ok(n > 0))
    }

    async fn fill(&mut self) -> io::Result<bool> {
        std::future::poll_fn(|cx| self.poll_fill(cx)).await
    }
}

pub struct Upstream {
    pub addr: SocketAddr,
    idle: Mutex<Vec<Conn>>,
    max_idle: usize,
    connect_timeout: Duration,
}

/// How sending a request to a backend ended, if not with a response head. (Boxing
/// the handed-back request would cost an allocation on a path already slow.)
#[allow(clippy::large_enum_variant)]
pub enum Failure {
    /// The backend refused (or did not accept in time): the request is handed back.
    Refused(Request<ClientBody>),
    /// The request was (at least partly) written and no valid response head came.
    Lost,
    /// The client's request body broke off (the client is gone or lied about it).
    ClientBody,
    /// No response head within the backend timeout.
    Timeout,
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

    fn take_idle(&self) -> Option<Conn> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(c) = idle.pop() {
            if c.is_fresh() {
                return Some(c);
            }
        }
        None
    }

    /// A connection whose exchange completed, back for the next request.
    pub fn put(&self, c: Conn) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < self.max_idle {
            idle.push(c);
        }
    }

    async fn connect(&self) -> Option<Conn> {
        let stream = tokio::time::timeout(self.connect_timeout, TcpStream::connect(self.addr))
            .await
            .ok()?
            .ok()?;
        stream.set_nodelay(true).ok()?;
        Some(Conn {
            io: Io {
                stream,
                buf: BytesMut::with_capacity(16 * 1024),
            },
            deadline: Box::pin(tokio::time::sleep(Duration::ZERO)),
        })
    }

    /// Send `req` and read the response head within `timeout`; the body streams from
    /// the connection.
    pub async fn send(
        &self,
        req: Request<ClientBody>,
        timeout: Duration,
    ) -> Result<Response<UpstreamBody>, Failure> {
        let head_only = req.body().is_empty();
        let length = req.body().length();
        let head = request_head(&req, self.addr, head_only, length);
        let head_request = req.method() == Method::HEAD;
        let pooled = match self.take_idle() {
            Some(mut c) => match c.io.stream.write_all(&head).await {
                Ok(()) => Some(c),
                // The backend closed it while idle: nothing was taken, try a fresh one.
                Err(_) => None,
            },
            None => None,
        };
        let mut conn = match pooled {
            Some(c) => c,
            None => match self.fresh(&head).await {
                Some(c) => c,
                None => return Err(Failure::Refused(req)),
            },
        };
        conn.deadline.as_mut().reset(Instant::now() + timeout);
        let Conn { io, deadline } = &mut conn;
        let exchange = async {
            if !head_only {
                write_body(&mut io.stream, req.into_body(), length.is_none()).await?;
            }
            read_head(io, head_request).await.ok_or(Failure::Lost)
        };
        let (resp, len, keep_alive) = tokio::select! {
            r = exchange => r?,
            _ = deadline.as_mut() => return Err(Failure::Timeout),
        };
        let body = UpstreamBody {
            conn: Some(conn),
            len,
            keep_alive,
        };
        Ok(resp.map(|()| body))
    }

    async fn fresh(&self, head: &[u8]) -> Option<Conn> {
        let mut c = self.connect().await?;
        c.io.stream.write_all(head).await.ok()?;
        Some(c)
    }
}

/// The request line and header fields, framing decided here (the hop-by-hop fields,
/// Transfer-Encoding among them, are gone already).
fn request_head(
    req: &Request<ClientBody>,
    addr: SocketAddr,
    head_only: bool,
    length: Option<u64>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    let target = req.uri().path_and_query().map_or("/", |p| p.as_str());
    for part in [req.method().as_str(), " ", target, " HTTP/1.1\r\n"] {
        out.extend_from_slice(part.as_bytes()); // not `write!`: formatting costs more
    }
    for (k, v) in req.headers() {
        out.extend_from_slice(k.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !req.headers().contains_key(HOST) {
        let _ = write!(out, "host: {addr}\r\n");
    }
    match (head_only, length) {
        (true, _) => {}
        (false, Some(n)) if !req.headers().contains_key(CONTENT_LENGTH) => {
            let _ = write!(out, "content-length: {n}\r\n");
        }
        (false, Some(_)) => {}
        (false, None) => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
    }
    out.extend_from_slice(b"\r\n");
    out
}

async fn write_body(
    stream: &mut TcpStream,
    body: ClientBody,
    chunked: bool,
) -> Result<(), Failure> {
    let (read, mut rest) = match body {
        ClientBody::Whole(all) => (all, None),
        ClientBody::Streaming(read, rest) => (read, Some(rest)),
    };
    write_data(stream, &read, chunked).await?;
    while let Some(frame) = match rest.as_mut() {
        Some(r) => r.frame().await,
        None => None,
    } {
        let frame = frame.map_err(|_| Failure::ClientBody)?;
        if let Ok(data) = frame.into_data() {
            write_data(stream, &data, chunked).await?; // trailers are not forwarded
        }
    }
    if chunked {
        stream
            .write_all(b"0\r\n\r\n")
            .await
            .map_err(|_| Failure::Lost)?;
    }
    Ok(())
}

/// One piece of a request body, as a chunk if the body is chunked.
async fn write_data(stream: &mut TcpStream, data: &[u8], chunked: bool) -> Result<(), Failure> {
    if data.is_empty() {
        return Ok(()); // an empty chunk would end a chunked body
    }
    if chunked {
        let size = format!("{:x}\r\n", data.len());
        stream
            .write_all(size.as_bytes())
            .await
            .map_err(|_| Failure::Lost)?;
        stream.write_all(data).await.map_err(|_| Failure::Lost)?;
        stream.write_all(b"\r\n").await.map_err(|_| Failure::Lost)
    } else {
        stream.write_all(data).await.map_err(|_| Failure::Lost)
    }
}

/// Read and parse the response head (skipping 1xx interim responses); None if the
/// connection ends first or the head is not valid HTTP/1.1.
async fn read_head(io: &mut Io, head_request: bool) -> Option<(Response<()>, Len, bool)> {
    loop {
        let parsed = {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut r = httparse::Response::new(&mut headers);
            match r.parse(&io.buf).ok()? {
                httparse::Status::Partial => None,
                httparse::Status::Complete(n) => Some((n, build(&r, head_request)?)),
            }
        };
        match parsed {
            Some((n, Some(head))) => {
                io.buf.advance(n);
                return Some(head);
            }
            Some((n, None)) => io.buf.advance(n), // 1xx: the real response follows
            None if io.buf.len() >= MAX_HEAD => return None,
            None => {
                if !io.fill().await.ok()? {
                    return None;
                }
            }
        }
    }
}

/// The response parts (without hop-by-hop fields), its body's delimitation and
/// whether the connection stays open; Some(None) for an interim 1xx response.
#[allow(clippy::type_complexity)]
fn build(
    r: &httparse::Response<'_, '_>,
    head_request: bool,
) -> Option<Option<(Response<()>, Len, bool)>> {
    let status = StatusCode::from_u16(r.code?).ok()?;
    if status.is_informational() {
        return Some(None);
    }
    let mut headers = HeaderMap::with_capacity(r.headers.len());
    let (mut length, mut chunked, mut te, mut close) = (None, false, false, r.version == Some(0));
    for h in r.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes()).ok()?;
        let value = HeaderValue::from_bytes(h.value).ok()?;
        if name == CONTENT_LENGTH {
            let n: u64 = std::str::from_utf8(h.value).ok()?.trim().parse().ok()?;
            if length.is_some_and(|l| l != n) {
                return None; // differing lengths: refuse (RFC 9112 §6.3)
            }
            length = Some(n);
        } else if name == TRANSFER_ENCODING {
            te = true;
            chunked = value
                .to_str()
                .ok()?
                .rsplit(',')
                .next()
                .is_some_and(|c| c.trim().eq_ignore_ascii_case("chunked"));
        } else if name == CONNECTION {
            let v = value.to_str().unwrap_or("");
            let has = |t: &str| v.split(',').any(|x| x.trim().eq_ignore_ascii_case(t));
            close = if r.version == Some(0) {
                !has("keep-alive")
            } else {
                has("close")
            };
        }
        if !hop::is_hop(&name) {
            headers.append(name, value);
        }
    }
    // What `Connection` names is hop-by-hop too, wherever it came in the head.
    for h in r
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("connection"))
    {
        hop::remove_named(&mut headers, std::str::from_utf8(h.value).unwrap_or(""));
    }
    let no_body =
        head_request || status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED;
    let len = if no_body {
        Len::Fixed(0)
    } else if chunked {
        Len::Chunked(Chunk::Size)
    } else if te {
        Len::UntilClose // a transfer coding we do not decode: read to the close
    } else if let Some(n) = length {
        Len::Fixed(n)
    } else {
        Len::UntilClose
    };
    // Both fields: framed by Transfer-Encoding, and the connection not reused.
    let one_shot = close || (te && length.is_some()) || matches!(len, Len::UntilClose);
    let keep_alive = !one_shot;
    let mut resp = Response::new(());
    *resp.status_mut() = status;
    *resp.headers_mut() = headers;
    Some(Some((resp, len, keep_alive)))
}

enum Len {
    Fixed(u64),
    Chunked(Chunk),
    UntilClose,
}

enum Chunk {
    Size,
    Data(u64),
    DataEnd,
    Trailers,
    Done,
}

/// A response body read from the backend connection as the client side asks for it.
pub struct UpstreamBody {
    conn: Option<Conn>,
    len: Len,
    keep_alive: bool,
}

fn broken(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("backend response: {what}"),
    )
}

impl UpstreamBody {
    /// The connection, once the body ended cleanly and it may carry another request.
    pub fn take_conn(&mut self) -> Option<Conn> {
        if self.keep_alive && self.is_end_stream() {
            self.conn.take()
        } else {
            None
        }
    }

    /// Data from the buffer, at most `max` bytes (reading more when it is empty).
    fn poll_data(&mut self, cx: &mut Context<'_>, max: u64) -> Poll<io::Result<Option<Bytes>>> {
        let conn = self
            .conn
            .as_mut()
            .ok_or_else(|| broken("read after the end"))?;
        if conn.io.buf.is_empty() && !ready!(conn.io.poll_fill(cx))? {
            return Poll::Ready(Ok(None));
        }
        let n = (conn.io.buf.len() as u64).min(max) as usize;
        Poll::Ready(Ok(Some(conn.io.buf.split_to(n).freeze())))
    }

    /// A CRLF-terminated line from the buffer (without it), reading more as needed.
    fn poll_line(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Bytes>> {
        let conn = self
            .conn
            .as_mut()
            .ok_or_else(|| broken("read after the end"))?;
        loop {
            if let Some(i) = conn.io.buf.windows(2).position(|w| w == b"\r\n") {
                let line = conn.io.buf.split_to(i).freeze();
                conn.io.buf.advance(2);
                return Poll::Ready(Ok(line));
            }
            if conn.io.buf.len() > MAX_LINE {
                return Poll::Ready(Err(broken("chunk line too long")));
            }
            if !ready!(conn.io.poll_fill(cx))? {
                return Poll::Ready(Err(broken("closed inside a chunked body")));
            }
        }
    }
}

impl Body for UpstreamBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        let this = self.get_mut();
        loop {
            match &mut this.len {
                Len::Fixed(0) | Len::Chunked(Chunk::Done) => return Poll::Ready(None),
                Len::Fixed(n) => {
                    let want = *n;
                    return match ready!(this.poll_data(cx, want))? {
                        Some(b) => {
                            this.len = Len::Fixed(want - b.len() as u64);
                            Poll::Ready(Some(Ok(Frame::data(b))))
                        }
                        None => Poll::Ready(Some(Err(broken("closed before Content-Length")))),
                    };
                }
                Len::UntilClose => {
                    return match ready!(this.poll_data(cx, u64::MAX))? {
                        Some(b) => Poll::Ready(Some(Ok(Frame::data(b)))),
                        None => {
                            this.len = Len::Fixed(0);
                            Poll::Ready(None)
                        }
                    };
                }
                Len::Chunked(Chunk::Size) => {
                    let line = ready!(this.poll_line(cx))?;
                    let hex = line.split(|b| *b == b';').next().unwrap_or(&[]);
                    let size = std::str::from_utf8(hex)
                        .ok()
                        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
                        .ok_or_else(|| broken("bad chunk size"))?;
                    this.len = Len::Chunked(if size == 0 {
                        Chunk::Trailers
                    } else {
                        Chunk::Data(size)
                    });
                }
                Len::Chunked(Chunk::Data(n)) => {
                    let want = *n;
                    return match ready!(this.poll_data(cx, want))? {
                        Some(b) => {
                            let left = want - b.len() as u64;
                            this.len = Len::Chunked(if left == 0 {
                                Chunk::DataEnd
                            } else {
                                Chunk::Data(left)
                            });
                            Poll::Ready(Some(Ok(Frame::data(b))))
                        }
                        None => Poll::Ready(Some(Err(broken("closed inside a chunk")))),
                    };
                }
                Len::Chunked(Chunk::DataEnd) => {
                    if !ready!(this.poll_line(cx))?.is_empty() {
                        return Poll::Ready(Some(Err(broken("chunk without its CRLF"))));
                    }
                    this.len = Len::Chunked(Chunk::Size);
                }
                Len::Chunked(Chunk::Trailers) => {
                    // Trailer fields are not forwarded; an empty line ends the body.
                    if ready!(this.poll_line(cx))?.is_empty() {
                        this.len = Len::Chunked(Chunk::Done);
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.len, Len::Fixed(0) | Len::Chunked(Chunk::Done))
    }

    fn size_hint(&self) -> SizeHint {
        match self.len {
            Len::Fixed(n) => SizeHint::with_exact(n),
            _ => SizeHint::default(),
        }
    }
}
