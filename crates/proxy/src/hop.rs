//! Hop-by-hop header fields (RFC 9110 §7.6.1): meaningful for one connection only, so
//! a proxy removes them before forwarding — `Connection` and every field it names,
//! plus Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade and the Proxy-* fields.
//! Framing is then hyper's job on each side (Content-Length or chunked).

use hyper::header::{HeaderMap, HeaderName, CONNECTION, TE, TRAILER, TRANSFER_ENCODING, UPGRADE};

const FIXED: [&str; 2] = ["keep-alive", "proxy-connection"];

pub fn strip(headers: &mut HeaderMap) {
    if headers.contains_key(CONNECTION) {
        strip_named(headers);
    }
    for n in [CONNECTION, TE, TRAILER, TRANSFER_ENCODING, UPGRADE] {
        headers.remove(n);
    }
    for n in FIXED {
        headers.remove(n);
    }
    if headers.keys().any(|k| k.as_str().starts_with("proxy-")) {
        let proxy: Vec<HeaderName> = headers
            .keys()
            .filter(|k| k.as_str().starts_with("proxy-"))
            .cloned()
            .collect();
        for n in proxy {
            headers.remove(n);
        }
    }
}

/// The fields `Connection` names.
fn strip_named(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .collect();
    for n in named {
        headers.remove(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_connection_and_what_it_names_keeps_the_rest() {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("connection", "close, x-secret"),
            ("x-secret", "1"),
            ("keep-alive", "timeout=5"),
            ("te", "trailers"),
            ("transfer-encoding", "chunked"),
            ("upgrade", "websocket"),
            ("proxy-authorization", "Basic x"),
            ("content-length", "3"),
            ("cookie", "a=b"),
        ] {
            h.append(k, v.parse().unwrap());
        }
        strip(&mut h);
        let mut left: Vec<_> = h.keys().map(|k| k.as_str()).collect();
        left.sort();
        assert_eq!(left, ["content-length", "cookie"]);
    }
}
