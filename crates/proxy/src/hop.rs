//! Hop-by-hop header fields (RFC 9110 §7.6.1): meaningful for one connection only, so
//! a proxy removes them before forwarding — `Connection` and every field it names,
//! plus Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade and the Proxy-* fields.
//! Framing is then rebuilt on each side (Content-Length or chunked).

use hyper::header::{HeaderMap, HeaderName, CONNECTION, TE, TRAILER, TRANSFER_ENCODING, UPGRADE};

/// Hop-by-hop whatever `Connection` names.
pub fn is_hop(name: &HeaderName) -> bool {
    [CONNECTION, TE, TRAILER, TRANSFER_ENCODING, UPGRADE].contains(name) || {
        let s = name.as_str();
        s == "keep-alive" || s.starts_with("proxy-")
    }
}

/// Remove the fields one `Connection` value names.
pub fn remove_named(headers: &mut HeaderMap, connection: &str) {
    for t in connection.split(',').map(str::trim) {
        // The usual value (nginx sends it on every response), whose field `is_hop`
        // covers: not parsed as a name.
        if t.eq_ignore_ascii_case("keep-alive") {
            continue;
        }
        if let Ok(n) = HeaderName::from_bytes(t.as_bytes()) {
            headers.remove(n);
        }
    }
}

pub fn strip(headers: &mut HeaderMap) {
    // Most messages carry none: one pass over the names, where each removal would hash.
    if !headers.keys().any(is_hop) {
        return;
    }
    let connection: Vec<_> = headers.get_all(CONNECTION).iter().cloned().collect();
    for v in connection.iter().filter_map(|v| v.to_str().ok()) {
        remove_named(headers, v);
    }
    let fixed: Vec<HeaderName> = headers.keys().filter(|k| is_hop(k)).cloned().collect();
    for n in fixed {
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
