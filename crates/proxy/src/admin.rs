//! The admin endpoint: loopback only (the configuration refuses anything else), every
//! request carrying `Authorization: Bearer TOKEN` (the testbed's convention), else 401.
//!
//!   GET /metrics  Prometheus text (prometheus-client)
//!   GET /summary  the tier's `dispatch` summary as the simulator writes it, plus the
//!                 proxy's own counts (JSON)

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};

use crate::dispatcher::Dispatcher;
use crate::summary;

/// Equal in constant time for equal lengths (the token's length is not a secret).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub async fn handle(
    token: Arc<String>,
    d: Arc<Dispatcher>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let reply = |status: StatusCode, ctype: &'static str, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        r.headers_mut()
            .insert(CONTENT_TYPE, hyper::header::HeaderValue::from_static(ctype));
        Ok(r)
    };
    let authorized = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
        .is_some_and(|t| same(t, token.as_bytes()));
    if !authorized {
        return reply(
            StatusCode::UNAUTHORIZED,
            "text/plain",
            "send the token as `Authorization: Bearer TOKEN`\n".into(),
        );
    }
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/metrics") => {
            d.refresh_gauges();
            reply(
                StatusCode::OK,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                d.stats.encode(),
            )
        }
        (&Method::GET, "/summary") => reply(
            StatusCode::OK,
            "application/json",
            summary::of(&d).to_string(),
        ),
        (&Method::POST, "/sessions/forget") => {
            d.forget_sessions();
            reply(StatusCode::OK, "application/json", "{}".into())
        }
        _ => reply(
            StatusCode::NOT_FOUND,
            "text/plain",
            "GET /metrics or /summary, POST /sessions/forget\n".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_compare_whole() {
        assert!(super::same(b"abc", b"abc"));
        assert!(!super::same(b"abc", b"abd"));
        assert!(!super::same(b"abc", b"ab"));
    }
}
