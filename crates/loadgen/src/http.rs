//! One emulated browser: an HTTP/1.1 keep-alive connection and a cookie jar.
//!
//! The client writes each request in one call and parses the response with
//! `httparse` (hyper's parser), reading into a buffer reused across requests. It does
//! what a load generator needs — status, cookies, the body's length per RFC 9112 §6.3
//! (Content-Length, chunked, or until close) — and nothing else, which makes a small
//! request cost a third of what hyper's client costs in user time (its request and
//! header maps, and a connection task woken through channels): see
//! benchmarks/load_vs_wrk.

use std::io::Write;
use std::net::SocketAddr;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::collect::Failure;

/// Response headers beyond this many are an error (a sane server sends a dozen).
const MAX_HEADERS: usize = 64;
/// A response head larger than this is an error rather than unbounded buffering.
const MAX_HEAD: usize = 64 * 1024;

/// A request once its templates are rendered.
pub struct Outgoing<'a> {
    pub method: &'a str,
    /// Path and query.
    pub target: &'a str,
    /// url-encoded form body (POST), empty for none.
    pub body: &'a [u8],
    /// Tags the middleware reads to join its profile to this record.
    pub id: u64,
    pub session: u64,
    pub rtype: &'a str,
}

#[derive(Default)]
pub struct Browser {
    stream: Option<TcpStream>,
    /// Bytes read and not yet consumed.
    buf: BytesMut,
    /// The request being written.
    out: Vec<u8>,
    cookies: Vec<(String, String)>,
    /// Where `stream` leads.
    peer: Option<SocketAddr>,
    /// Connections opened again after the server closed an idle one.
    pub reconnects: u64,
    /// SYNs the kernel sent again before a connection of ours got in (`syn_retransmits`).
    pub retransmissions: u64,
}

/// The retransmissions of a connection just opened: the SYNs sent again because the
/// target dropped them, as a server whose accept backlog is full does (Linux sends the
/// first again after 1 s, the next ones later), read from the kernel's `TCP_INFO`.
/// Elsewhere 0.
#[cfg(target_os = "linux")]
fn syn_retransmits(s: &TcpStream) -> u32 {
    use std::os::fd::AsRawFd;
    // SAFETY: getsockopt writes at most `len` bytes into `info`, a plain C struct for
    // which all zeroes is a valid value, on a socket this stream owns.
    unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let rc = libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        if rc == 0 {
            info.tcpi_total_retrans
        } else {
            0
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn syn_retransmits(_: &TcpStream) -> u32 {
    0
}

/// How a response's body is delimited (RFC 9112 §6.3).
enum Length {
    None,
    Fixed(u64),
    Chunked,
    UntilClose,
}

/// Why an attempt failed; `Closed` (nothing received on a reused connection) is retried.
enum Attempt {
    Closed,
    Failed(Failure),
}

impl From<Failure> for Attempt {
    fn from(f: Failure) -> Self {
        Attempt::Failed(f)
    }
}

impl Browser {
    /// A new session, sent to `peer`: no cookies; the connection is kept, as a
    /// browser would, unless the session goes elsewhere (another of several targets).
    pub fn new_session(&mut self, peer: SocketAddr) {
        self.cookies.clear();
        if self.peer != Some(peer) {
            self.stream = None;
            self.peer = Some(peer);
        }
    }

    /// Send one request and read the whole response; the body's byte count on success.
    pub async fn fetch(
        &mut self,
        addr: SocketAddr,
        host: &str,
        req: &Outgoing<'_>,
    ) -> Result<u64, Failure> {
        // A kept-alive connection the server closed meanwhile fails before any response
        // byte; one retry on a fresh connection, as browsers do.
        let reused = self.stream.is_some();
        match self.attempt(addr, host, req).await {
            Ok(n) => Ok(n),
            Err(Attempt::Closed) if reused => {
                self.reconnects += 1;
                self.attempt(addr, host, req).await.map_err(|e| match e {
                    Attempt::Closed => Failure::Protocol,
                    Attempt::Failed(f) => f,
                })
            }
            Err(Attempt::Closed) => Err(Failure::Protocol),
            Err(Attempt::Failed(f)) => Err(f),
        }
    }

    async fn attempt(
        &mut self,
        addr: SocketAddr,
        host: &str,
        req: &Outgoing<'_>,
    ) -> Result<u64, Attempt> {
        self.write_request(host, req);
        let stream = match self.stream.take() {
            Some(s) => s,
            None => {
                let s = TcpStream::connect(addr)
                    .await
                    .map_err(|_| Failure::Connect)?;
                s.set_nodelay(true).map_err(|_| Failure::Connect)?;
                self.retransmissions += u64::from(syn_retransmits(&s));
                s
            }
        };
        self.buf.clear();
        let mut stream = stream;
        if stream.write_all(&self.out).await.is_err() {
            return Err(Attempt::Closed);
        }
        let (status, length, keep_alive) =
            self.read_head(&mut stream, req.method == "HEAD").await?;
        let bytes = self.read_body(&mut stream, length).await?;
        if keep_alive {
            self.stream = Some(stream);
        }
        match status {
            200..=399 => Ok(bytes),
            503 => Err(Failure::Rejected.into()),
            400..=499 => Err(Failure::Http4xx.into()),
            _ => Err(Failure::Http5xx.into()),
        }
    }

    fn write_request(&mut self, host: &str, req: &Outgoing<'_>) {
        let o = &mut self.out;
        o.clear();
        // Writing into a Vec cannot fail.
        let _ = write!(
            o,
            "{} {} HTTP/1.1\r\nHost: {host}\r\n",
            req.method, req.target
        );
        let _ = write!(
            o,
            "X-Tierlab-Request: {}\r\nX-Tierlab-Session: {}\r\nX-Tierlab-Type: {}\r\n",
            req.id, req.session, req.rtype
        );
        for (i, (k, v)) in self.cookies.iter().enumerate() {
            let _ = write!(o, "{}{k}={v}", if i == 0 { "Cookie: " } else { "; " });
        }
        if !self.cookies.is_empty() {
            o.extend_from_slice(b"\r\n");
        }
        if !req.body.is_empty() {
            let _ = write!(
                o,
                "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
                req.body.len()
            );
        }
        o.extend_from_slice(b"\r\n");
        o.extend_from_slice(req.body);
    }

    /// More bytes into the buffer; Ok(false) at the end of the stream.
    async fn fill(&mut self, stream: &mut TcpStream) -> Result<bool, Failure> {
        if self.buf.capacity() - self.buf.len() < 4096 {
            self.buf.reserve(16 * 1024);
        }
        match stream.read_buf(&mut self.buf).await {
            Ok(0) => Ok(false),
            Ok(_) => Ok(true),
            Err(_) => Err(Failure::Protocol),
        }
    }

    /// The status line and headers (1xx interim responses skipped): the status, how
    /// the body is delimited, and whether the connection stays open.
    async fn read_head(
        &mut self,
        stream: &mut TcpStream,
        head_request: bool,
    ) -> Result<(u16, Length, bool), Attempt> {
        let mut received = false;
        loop {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut resp = httparse::Response::new(&mut headers);
            let parsed = resp.parse(&self.buf).map_err(|_| Failure::Protocol)?;
            let httparse::Status::Complete(n) = parsed else {
                if self.buf.len() > MAX_HEAD {
                    return Err(Failure::Protocol.into());
                }
                match self.fill(stream).await {
                    Ok(true) => received = true,
                    // Closed or reset before any byte: the server dropped an idle connection.
                    Ok(false) | Err(_) if !received => return Err(Attempt::Closed),
                    _ => return Err(Failure::Protocol.into()),
                }
                continue;
            };
            let status = resp.code.unwrap_or(0);
            if !(100..=599).contains(&status) {
                return Err(Failure::Protocol.into());
            }
            let (mut length, mut chunked, mut close) = (None, false, resp.version == Some(0));
            let mut encoded = false;
            let mut cookies = Vec::new();
            for h in resp.headers.iter() {
                let value = std::str::from_utf8(h.value).unwrap_or("");
                if h.name.eq_ignore_ascii_case("content-length") {
                    let n = value.trim().parse::<u64>().map_err(|_| Failure::Protocol)?;
                    if length.is_some_and(|m| m != n) {
                        return Err(Failure::Protocol.into()); // two lengths: which one frames the body?
                    }
                    length = Some(n);
                } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                    encoded = true;
                    chunked = value.to_ascii_lowercase().contains("chunked");
                } else if h.name.eq_ignore_ascii_case("connection") {
                    let v = value.to_ascii_lowercase();
                    close = v.contains("close") || (close && !v.contains("keep-alive"));
                } else if h.name.eq_ignore_ascii_case("set-cookie") {
                    cookies.push(value.to_string());
                }
            }
            if encoded && length.is_some() {
                // RFC 9112 §6.3: the shape of response splitting, "ought to be handled as
                // an error"; the connection is not reused.
                return Err(Failure::Protocol.into());
            }
            self.buf.advance(n);
            if (100..200).contains(&status) {
                continue; // interim (100 Continue, 103 Early Hints): the real one follows
            }
            for c in cookies {
                self.set_cookie(&c);
            }
            let length = match () {
                _ if head_request || status == 204 || status == 304 => Length::None,
                _ if chunked => Length::Chunked,
                _ => length.map_or(Length::UntilClose, Length::Fixed),
            };
            let keep_alive = !close && !matches!(length, Length::UntilClose);
            return Ok((status, length, keep_alive));
        }
    }

    /// Read and discard the body; its length.
    async fn read_body(&mut self, stream: &mut TcpStream, length: Length) -> Result<u64, Failure> {
        match length {
            Length::None => Ok(0),
            Length::Fixed(n) => self.skip(stream, n).await.map(|_| n),
            Length::UntilClose => {
                let mut n = self.buf.len() as u64;
                self.buf.clear();
                while self.fill(stream).await? {
                    n += self.buf.len() as u64;
                    self.buf.clear();
                }
                Ok(n)
            }
            Length::Chunked => {
                let mut total = 0;
                loop {
                    match httparse::parse_chunk_size(&self.buf).map_err(|_| Failure::Protocol)? {
                        httparse::Status::Complete((n, 0)) => {
                            self.buf.advance(n);
                            self.skip_trailers(stream).await?;
                            return Ok(total);
                        }
                        httparse::Status::Complete((n, size)) => {
                            self.buf.advance(n);
                            self.skip(stream, size).await?;
                            self.expect_crlf(stream).await?;
                            total += size;
                        }
                        httparse::Status::Partial => self.more(stream).await?,
                    }
                }
            }
        }
    }

    /// Consume `n` body bytes.
    async fn skip(&mut self, stream: &mut TcpStream, mut n: u64) -> Result<(), Failure> {
        loop {
            let take = n.min(self.buf.len() as u64);
            self.buf.advance(take as usize);
            n -= take;
            if n == 0 {
                return Ok(());
            }
            self.more(stream).await?;
        }
    }

    async fn expect_crlf(&mut self, stream: &mut TcpStream) -> Result<(), Failure> {
        while self.buf.len() < 2 {
            self.more(stream).await?;
        }
        if &self.buf[..2] != b"\r\n" {
            return Err(Failure::Protocol);
        }
        self.buf.advance(2);
        Ok(())
    }

    async fn skip_trailers(&mut self, stream: &mut TcpStream) -> Result<(), Failure> {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            match httparse::parse_headers(&self.buf, &mut headers).map_err(|_| Failure::Protocol)? {
                httparse::Status::Complete((n, _)) => {
                    self.buf.advance(n);
                    return Ok(());
                }
                httparse::Status::Partial if self.buf.len() > MAX_HEAD => {
                    return Err(Failure::Protocol)
                }
                httparse::Status::Partial => self.more(stream).await?,
            }
        }
    }

    /// More bytes where the message says more must come: an early end is an error.
    async fn more(&mut self, stream: &mut TcpStream) -> Result<(), Failure> {
        if self.fill(stream).await? {
            Ok(())
        } else {
            Err(Failure::Protocol)
        }
    }

    /// Keep `name=value` of a Set-Cookie header (attributes ignored: one host, one run).
    fn set_cookie(&mut self, text: &str) {
        let pair = text.split(';').next().unwrap_or("");
        let Some((k, v)) = pair.split_once('=') else {
            return;
        };
        let (k, v) = (k.trim().to_string(), v.trim().to_string());
        match self.cookies.iter_mut().find(|(name, _)| *name == k) {
            Some(slot) => slot.1 = v,
            None => self.cookies.push((k, v)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    const GET: Outgoing = Outgoing {
        method: "GET",
        target: "/x",
        body: b"",
        id: 7,
        session: 3,
        rtype: "HOME",
    };

    /// A server that answers the n-th request on a connection with `replies[n]`, then
    /// closes; the requests it read come back through the handle.
    async fn serve(
        replies: Vec<&'static [u8]>,
        connections: usize,
    ) -> (SocketAddr, tokio::task::JoinHandle<Vec<String>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = tokio::spawn(async move {
            let mut seen = Vec::new();
            for _ in 0..connections {
                let (mut s, _) = listener.accept().await.unwrap();
                for reply in &replies {
                    let mut head = Vec::new();
                    while !head.ends_with(b"\r\n\r\n") {
                        let mut b = [0u8; 1];
                        if s.read(&mut b).await.unwrap_or(0) == 0 {
                            break;
                        }
                        head.push(b[0]);
                    }
                    if head.is_empty() {
                        break;
                    }
                    seen.push(String::from_utf8(head).unwrap());
                    s.write_all(reply).await.unwrap();
                }
            }
            seen
        });
        (addr, handle)
    }

    async fn fetch_all(addr: SocketAddr, n: usize) -> (Vec<Result<u64, Failure>>, Browser) {
        let mut b = Browser::default();
        let mut out = Vec::new();
        for _ in 0..n {
            out.push(b.fetch(addr, "h", &GET).await);
        }
        (out, b)
    }

    #[tokio::test]
    async fn bodies_are_delimited_by_length_chunks_or_close() {
        let (addr, server) = serve(
            vec![
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nSet-Cookie: sid=9; Path=/\r\n\r\nhello",
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\nTrailer: x\r\n\r\n",
                b"HTTP/1.1 204 No Content\r\n\r\n",
                b"HTTP/1.0 200 OK\r\n\r\nuntil the end",
            ],
            1,
        )
        .await;
        let (got, b) = fetch_all(addr, 4).await;
        assert_eq!(got, vec![Ok(5), Ok(7), Ok(0), Ok(13)]);
        assert_eq!(b.reconnects, 0, "one keep-alive connection for all four");
        let seen = server.await.unwrap();
        assert!(
            seen[0].starts_with("GET /x HTTP/1.1\r\nHost: h\r\nX-Tierlab-Request: 7\r\n"),
            "{}",
            seen[0]
        );
        assert!(
            !seen[0].contains("Cookie:") && seen[1].contains("Cookie: sid=9\r\n"),
            "{seen:?}"
        );
    }

    #[tokio::test]
    async fn a_closed_idle_connection_is_retried_once_on_a_fresh_one() {
        // Each connection answers one request and closes without saying so.
        let (addr, server) =
            serve(vec![b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"], 3).await;
        let (got, b) = fetch_all(addr, 3).await;
        assert_eq!(got, vec![Ok(2), Ok(2), Ok(2)]);
        assert_eq!(b.reconnects, 2);
        assert_eq!(server.await.unwrap().len(), 3);
    }

    #[tokio::test]
    async fn broken_responses_are_protocol_errors_and_statuses_are_classified() {
        let (addr, _server) = serve(
            vec![
                b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n",
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
                b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n",
                b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
            ],
            1,
        )
        .await;
        let (got, _) = fetch_all(addr, 4).await;
        let expected = [
            Failure::Rejected,
            Failure::Http4xx,
            Failure::Http5xx,
            Failure::Protocol,
        ];
        assert_eq!(got, expected.map(Err).to_vec());
        let (addr, _server) = serve(vec![b"this is not HTTP\r\n\r\n"], 1).await;
        assert_eq!(fetch_all(addr, 1).await.0, vec![Err(Failure::Protocol)]);
    }

    /// A server that answers one request with `reply` and then holds the connection
    /// open without a word: a client that waited for more would hang.
    async fn serve_and_hold(reply: Vec<u8>) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            while !head.ends_with(b"\r\n\r\n") {
                let mut b = [0u8; 1];
                if s.read(&mut b).await.unwrap_or(0) == 0 {
                    return;
                }
                head.push(b[0]);
            }
            let _ = s.write_all(&reply).await;
            tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
        });
        addr
    }

    /// One fetch, which must end (the tests' bound: far beyond a loopback exchange).
    async fn fetch_once(addr: SocketAddr) -> Result<u64, Failure> {
        let mut b = Browser::default();
        tokio::time::timeout(std::time::Duration::from_secs(20), b.fetch(addr, "h", &GET))
            .await
            .expect("the client hung on a malformed response")
    }

    #[tokio::test]
    async fn malformed_responses_are_protocol_failures_never_a_hang() {
        let many_headers: String = (0..MAX_HEADERS + 1)
            .map(|i| format!("X-{i}: y\r\n"))
            .collect();
        let huge_header = format!("X-Big: {}\r\n", "z".repeat(MAX_HEAD + 1));
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("bad status line", b"HTTP/1.1 abc OK\r\nContent-Length: 0\r\n\r\n".to_vec()),
            ("status out of range", b"HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n".to_vec()),
            ("not HTTP at all", b"\x00\xff garbage \x07\r\n\r\n".to_vec()),
            (
                "Content-Length with Transfer-Encoding",
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n".to_vec(),
            ),
            ("two different lengths", b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd".to_vec()),
            ("a length that is no number", b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n".to_vec()),
            ("a bad chunk size", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n".to_vec()),
            ("a chunk without its CRLF", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n".to_vec()),
            ("too many headers", format!("HTTP/1.1 200 OK\r\n{many_headers}").into_bytes()),
            ("a head without end", format!("HTTP/1.1 200 OK\r\n{huge_header}").into_bytes()),
        ];
        for (what, reply) in cases {
            let addr = serve_and_hold(reply).await;
            assert_eq!(fetch_once(addr).await, Err(Failure::Protocol), "{what}");
        }
    }

    #[tokio::test]
    async fn a_connection_closed_mid_response_is_a_protocol_failure() {
        for reply in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part"[..],
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nhalf",
            b"HTTP/1.1 200 OK\r\nContent-Le",
        ] {
            let (addr, _server) = serve(vec![reply], 1).await;
            assert_eq!(fetch_once(addr).await, Err(Failure::Protocol), "{reply:?}");
        }
        // Nothing at all on a fresh connection: the server closed it, not a retry case.
        let (addr, _server) = serve(vec![b""], 1).await;
        assert_eq!(fetch_once(addr).await, Err(Failure::Protocol));
    }

    #[tokio::test]
    async fn after_a_failure_the_connection_is_not_reused() {
        // A reply with a stray byte after its declared body, then a good one: had the
        // connection been kept, the next response would be read from the stray byte.
        let (addr, server) = serve(
            vec![b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabcX"],
            2,
        )
        .await;
        let mut b = Browser::default();
        assert_eq!(b.fetch(addr, "h", &GET).await, Err(Failure::Protocol));
        assert_eq!(b.fetch(addr, "h", &GET).await, Err(Failure::Protocol));
        assert_eq!(
            server.await.unwrap().len(),
            2,
            "each fetch on a connection of its own"
        );
        assert_eq!(b.reconnects, 0);
    }

    #[tokio::test]
    async fn a_form_goes_out_with_its_length_and_type() {
        let (addr, server) = serve(vec![b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"], 1).await;
        let post = Outgoing {
            method: "POST",
            body: b"a=1&b=2",
            ..GET
        };
        Browser::default().fetch(addr, "h", &post).await.unwrap();
        let seen = server.await.unwrap();
        assert!(
            seen[0].contains(
                "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 7\r\n\r\n"
            ),
            "{seen:?}"
        );
    }

    /// A listener whose accept queue is full (backlog 1: Linux queues two) drops the
    /// next SYN until it accepts; the browser that got in late counts the SYNs sent
    /// again, one that got in at once none.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn syns_a_full_backlog_dropped_are_counted() {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = socket.listen(1).unwrap();
        let addr = listener.local_addr().unwrap();
        let queued = [
            TcpStream::connect(addr).await.unwrap(),
            TcpStream::connect(addr).await.unwrap(),
        ];
        assert_eq!(queued.each_ref().map(syn_retransmits), [0, 0]);
        // Accepting only after the first retransmission (1 s) is due, and then
        // answering: the third connection's SYN was dropped at least once.
        let server = tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
            let mut open = Vec::new();
            for _ in 0..3 {
                open.push(listener.accept().await.unwrap().0);
            }
            let mut late = open.pop().unwrap();
            let mut head = [0u8; 1024];
            let _ = late.read(&mut head).await.unwrap();
            late.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                .await
                .unwrap();
        });
        let mut b = Browser::default();
        assert_eq!(b.fetch(addr, "h", &GET).await, Ok(0));
        assert!(b.retransmissions >= 1, "{}", b.retransmissions);
        server.await.unwrap();
    }
}
