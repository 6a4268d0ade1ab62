//! One client request through the proxy: classify it, get a backend from the
//! dispatcher (waiting or refused there), send it on a pooled connection, re-dispatch
//! it if the backend refused the connection, and stream the response back. The
//! backend stays leased until the response body has been relayed.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, RETRY_AFTER, SET_COOKIE};
use hyper::{Request, Response, StatusCode};

use crate::body::{ClientBody, Unread};
use crate::classify::Classifier;
use crate::config::CookieMode;
use crate::decisions::{Decision, DecisionLog, Outcome};
use crate::dispatcher::{Dispatcher, Lease, Refusal};
use crate::hop;
use crate::target;
use crate::upstream::{Conn, Failure, Upstream, UpstreamBody};

pub struct State {
    pub dispatcher: Arc<Dispatcher>,
    pub upstreams: Vec<Arc<Upstream>>,
    pub classify: Classifier,
    pub log: Option<DecisionLog>,
    pub body_timeout: Duration,
    pub buffer_body: usize,
    pub backend_timeout: Duration,
    pub retry_after: HeaderValue,
    /// The `Retry-After` of a 503 past a backend's limit (`limit.retry_after`).
    pub limit_retry_after: HeaderValue,
}

impl State {
    fn log(&self, d: Decision) {
        if let Some(l) = &self.log {
            l.write(d);
        }
    }
}

/// Resume once every other ready task has run and the driver has been polled (tokio
/// wakes deferred tasks last). Awaited before each write of a relayed message, so the
/// proxy reads all ready connections first and then writes in a burst, as HAProxy's
/// event loop does: nginx and the client wake once per burst rather than once per
/// message, for two more polls of the connection's task (crates/proxy/README.md).
async fn after_reads() {
    tokio::task::yield_now().await;
}

fn plain(status: StatusCode, text: &'static str) -> Response<RelayBody> {
    let mut r = Response::new(RelayBody::Full(Full::new(Bytes::from_static(
        text.as_bytes(),
    ))));
    *r.status_mut() = status;
    r
}

pub async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
) -> Result<Response<RelayBody>, Infallible> {
    let d = &state.dispatcher;
    d.stats.requests.inc();
    let t0 = d.clock.now();
    let (mut parts, body) = req.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let ty = state.classify.request_type(&parts.headers, path);
    let key = state.classify.session(&parts.headers);
    let request = Classifier::request_id(&parts.headers);
    hop::strip(&mut parts.headers);
    let mut redispatched = 0u32;
    let decision =
        |server: Option<usize>, lease: Option<&Lease>, redispatched: u32, status: u16, outcome| {
            Decision {
                t: t0,
                request,
                session: key.id,
                ty,
                server,
                home: lease.and_then(|l| l.placement.home),
                migrated: lease.is_some_and(|l| l.placement.migrated),
                queued: lease.map_or(0.0, |l| l.placement.queued),
                redispatched,
                status,
                outcome,
                rt: d.clock.now() - t0,
            }
        };
    if let Err(why) = target::normalise(&mut parts) {
        d.stats.not_forwarded.inc();
        let status = why.status();
        state.log(decision(
            None,
            None,
            0,
            status.as_u16(),
            Outcome::NotForwarded,
        ));
        return Ok(plain(status, why.text()));
    }
    // The body (if small) before any backend is chosen: a slow client holds none.
    let body = match ClientBody::read(body, state.buffer_body, state.body_timeout).await {
        Ok(body) => body,
        Err(why) => {
            let (counter, status, outcome, text) = match why {
                Unread::BrokeOff => (
                    &d.stats.client_aborted,
                    StatusCode::BAD_REQUEST,
                    Outcome::ClientAborted,
                    "the request body broke off\n",
                ),
                Unread::TimedOut => (
                    &d.stats.client_timeouts,
                    StatusCode::REQUEST_TIMEOUT,
                    Outcome::ClientTimeout,
                    "the request body did not arrive in time\n",
                ),
            };
            counter.inc();
            state.log(decision(None, None, 0, status.as_u16(), outcome));
            return Ok(plain(status, text));
        }
    };
    let mut req = Request::from_parts(parts, body);
    let remember = key.known || state.classify.cookie_mode() != CookieMode::None;
    loop {
        let lease = match d
            .acquire(key.id, ty, key.cookie_home, redispatched == 0, remember)
            .await
        {
            Ok(l) => l,
            Err(r) => {
                let (outcome, text, retry_after) = match r {
                    Refusal::QueueFull => (
                        Outcome::QueueFull,
                        "no backend available\n",
                        &state.retry_after,
                    ),
                    Refusal::QueueTimeout => (
                        Outcome::QueueTimeout,
                        "no backend available\n",
                        &state.retry_after,
                    ),
                    Refusal::NoBackend => (
                        Outcome::NoBackend,
                        "no backend available\n",
                        &state.retry_after,
                    ),
                    Refusal::Limit => (
                        Outcome::Limit,
                        "the backend is at its limit of requests in flight\n",
                        &state.limit_retry_after,
                    ),
                };
                state.log(decision(None, None, redispatched, 503, outcome));
                let mut resp = plain(StatusCode::SERVICE_UNAVAILABLE, text);
                resp.headers_mut().insert(RETRY_AFTER, retry_after.clone());
                return Ok(resp);
            }
        };
        let mut lease = lease;
        let k = lease.placement.server;
        let up = &state.upstreams[k];
        after_reads().await;
        let sent = up.send(req, state.backend_timeout).await;
        if !matches!(sent, Err(Failure::Refused(_))) {
            lease.reached();
        }
        let resp = match sent {
            Ok(r) => r,
            Err(Failure::Refused(r)) => {
                lease.failed();
                d.mark_down(k);
                d.stats.redispatches.inc();
                redispatched += 1;
                req = r;
                continue;
            }
            Err(Failure::ClientBody) => {
                d.stats.client_aborted.inc();
                state.log(decision(
                    Some(k),
                    Some(&lease),
                    redispatched,
                    400,
                    Outcome::ClientAborted,
                ));
                return Ok(plain(
                    StatusCode::BAD_REQUEST,
                    "the request body broke off\n",
                ));
            }
            Err(Failure::Lost) => {
                lease.failed();
                d.stats.bad_gateway.inc();
                d.stats.backends[k].errors.inc();
                state.log(decision(
                    Some(k),
                    Some(&lease),
                    redispatched,
                    502,
                    Outcome::BadGateway,
                ));
                return Ok(plain(StatusCode::BAD_GATEWAY, "the backend was lost\n"));
            }
            Err(Failure::Timeout) => {
                lease.failed();
                d.stats.gateway_timeout.inc();
                d.stats.backends[k].errors.inc();
                state.log(decision(
                    Some(k),
                    Some(&lease),
                    redispatched,
                    504,
                    Outcome::GatewayTimeout,
                ));
                return Ok(plain(
                    StatusCode::GATEWAY_TIMEOUT,
                    "the backend did not answer in time\n",
                ));
            }
        };
        let (mut rparts, rbody) = resp.into_parts(); // hop-by-hop fields left out already
        match state.classify.cookie_mode() {
            CookieMode::Insert if key.cookie_home != Some(k) => {
                let v = state.classify.insert_value(key.id, k);
                if let Ok(v) = HeaderValue::from_str(&v) {
                    rparts.headers.append(SET_COOKIE, v);
                }
            }
            CookieMode::Follow => {
                for v in rparts.headers.get_all(SET_COOKIE) {
                    if let Some(s) = v
                        .to_str()
                        .ok()
                        .and_then(|v| state.classify.followed_session(v))
                    {
                        d.remember(s, k);
                    }
                }
            }
            CookieMode::Insert | CookieMode::None => {}
        }
        let status = rparts.status.as_u16();
        let record = decision(Some(k), Some(&lease), redispatched, status, Outcome::Served);
        let body = RelayBody::Relay {
            inner: rbody,
            end: Some(End {
                state: Arc::clone(&state),
                lease,
                record,
            }),
        };
        after_reads().await;
        return Ok(Response::from_parts(rparts, body));
    }
}

/// What happens when a relayed response ends: the backend's lease is released, the
/// connection pooled again if the exchange completed, the decision logged.
pub struct End {
    state: Arc<State>,
    lease: Lease,
    record: Decision,
}

impl End {
    /// `conn`: the backend connection, if the exchange left it reusable.
    fn finish(self, outcome: Outcome, backend_fault: bool, conn: Option<Conn>) {
        let d = &self.state.dispatcher;
        let k = self.lease.placement.server;
        if let Some(c) = conn {
            self.state.upstreams[k].put(c);
        }
        match outcome {
            Outcome::Served => {
                d.stats.backends[k].served.inc();
            }
            _ => {
                d.stats.truncated.inc();
                if backend_fault {
                    d.stats.backends[k].errors.inc();
                }
            }
        }
        let mut lease = self.lease;
        // A 5xx relayed whole is the backend's failure too (an error for the limit's
        // controller), as the load generator counts it.
        if backend_fault || self.record.status >= 500 {
            lease.failed();
        }
        let mut record = self.record;
        record.outcome = outcome;
        record.rt = d.clock.now() - record.t;
        self.state.log(record);
        drop(lease);
    }
}

/// Relay is the variant of nearly every response; boxing it would add an allocation
/// per request to spare the rare fixed answers some bytes.
#[allow(clippy::large_enum_variant)]
pub enum RelayBody {
    Full(Full<Bytes>),
    Relay {
        inner: UpstreamBody,
        end: Option<End>,
    },
}

impl Drop for RelayBody {
    fn drop(&mut self) {
        if let RelayBody::Relay { inner, end } = self {
            if let Some(e) = end.take() {
                // An empty body is never polled; any other dropped before its end
                // means the client went away mid-response.
                let outcome = if inner.is_end_stream() {
                    Outcome::Served
                } else {
                    Outcome::Truncated
                };
                e.finish(outcome, false, inner.take_conn());
            }
        }
    }
}

impl Body for RelayBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        match self.get_mut() {
            RelayBody::Full(f) => Pin::new(f).poll_frame(cx).map_err(|e| match e {}),
            RelayBody::Relay { inner, end } => {
                let polled = Pin::new(&mut *inner).poll_frame(cx);
                match &polled {
                    Poll::Ready(None) => {
                        if let Some(e) = end.take() {
                            e.finish(Outcome::Served, false, inner.take_conn());
                        }
                    }
                    Poll::Ready(Some(Err(_))) => {
                        if let Some(e) = end.take() {
                            e.finish(Outcome::Truncated, true, None);
                        }
                    }
                    Poll::Ready(Some(Ok(_))) if inner.is_end_stream() => {
                        if let Some(e) = end.take() {
                            e.finish(Outcome::Served, false, inner.take_conn());
                        }
                    }
                    _ => {}
                }
                polled
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RelayBody::Full(f) => f.is_end_stream(),
            RelayBody::Relay { inner, .. } => inner.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RelayBody::Full(f) => f.size_hint(),
            RelayBody::Relay { inner, .. } => inner.size_hint(),
        }
    }
}
