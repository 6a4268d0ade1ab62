//! A client request's target and `Host` as RFC 9112 §3.2 wants them before it is
//! forwarded: exactly one valid `Host` field in an HTTP/1.1 request (else 400); for an
//! absolute-form target, the URI's authority replaces the received `Host` (§3.2.2: a
//! proxy "MUST ignore the received Host header field … and instead replace it with the
//! host information of the request-target"); the target sent on in origin form. CONNECT
//! asks for a tunnel, which this proxy does not make (501).

use bytes::Bytes;
use hyper::header::{HeaderValue, HOST};
use hyper::http::request::Parts;
use hyper::http::uri::Authority;
use hyper::{Method, StatusCode, Uri, Version};

/// Why a request is answered by the proxy instead of forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    NoHost,
    TwoHosts,
    InvalidHost,
    Connect,
}

impl Refused {
    pub fn status(self) -> StatusCode {
        match self {
            Refused::Connect => StatusCode::NOT_IMPLEMENTED,
            _ => StatusCode::BAD_REQUEST,
        }
    }

    pub fn text(self) -> &'static str {
        match self {
            Refused::NoHost => {
                "no Host field: an HTTP/1.1 request must carry one (RFC 9112 §3.2)\n"
            }
            Refused::TwoHosts => "more than one Host field (RFC 9112 §3.2)\n",
            Refused::InvalidHost => "the Host field is not host[:port] (RFC 9112 §3.2)\n",
            Refused::Connect => "CONNECT: this proxy does not open tunnels\n",
        }
    }
}

/// A `Host` field value: `uri-host [":" port]`, or empty (a target without authority).
fn valid_host(v: &HeaderValue) -> bool {
    if v.is_empty() {
        return true;
    }
    let Ok(a) = Authority::from_maybe_shared(Bytes::copy_from_slice(v.as_bytes())) else {
        return false;
    };
    // An authority may also have `userinfo@` and takes any characters as its port;
    // a `Host` has neither.
    match a.as_str().strip_prefix(a.host()) {
        Some(rest) => {
            rest.is_empty()
                || rest
                    .strip_prefix(':')
                    .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
        }
        None => false,
    }
}

/// The URI authority's host information (`userinfo@` left out: not part of `Host`).
fn host_of(a: &Authority) -> Option<HeaderValue> {
    let host = match a.port() {
        Some(p) => format!("{}:{}", a.host(), p.as_str()),
        None => a.host().to_string(),
    };
    HeaderValue::from_str(&host).ok()
}

/// Check the request's `Host` and target and rewrite them for the backend: one `Host`
/// (the URI's authority's for an absolute-form target), origin form, HTTP/1.1.
pub fn normalise(parts: &mut Parts) -> Result<(), Refused> {
    if parts.method == Method::CONNECT {
        return Err(Refused::Connect);
    }
    let mut hosts = parts.headers.get_all(HOST).iter();
    let received = hosts.next();
    if hosts.next().is_some() {
        return Err(Refused::TwoHosts);
    }
    if received.is_some_and(|v| !valid_host(v)) {
        return Err(Refused::InvalidHost);
    }
    let received = received.is_some();
    let from_uri = parts
        .uri
        .authority()
        .map(|a| host_of(a).ok_or(Refused::InvalidHost))
        .transpose()?;
    // An HTTP/1.0 client may omit it; forwarded as HTTP/1.1 the request must have one,
    // which then only an absolute-form target can supply.
    if !received && (parts.version == Version::HTTP_11 || from_uri.is_none()) {
        return Err(Refused::NoHost);
    }
    if let Some(h) = from_uri {
        parts.headers.insert(HOST, h);
    }
    // Origin form toward the backend, whatever form the client used (usually it
    // already is: nothing to rebuild).
    if parts.uri.scheme().is_some() || parts.uri.authority().is_some() {
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        parts.uri = Uri::from_maybe_shared(Bytes::copy_from_slice(path.as_bytes()))
            .unwrap_or_else(|_| Uri::from_static("/"));
    }
    parts.version = Version::HTTP_11;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(method: &str, uri: &str, version: Version, hosts: &[&str]) -> Parts {
        let mut b = hyper::Request::builder()
            .method(method)
            .uri(uri)
            .version(version);
        for h in hosts {
            b = b.header(HOST, *h);
        }
        b.body(()).unwrap().into_parts().0
    }

    fn host(p: &Parts) -> Vec<&str> {
        p.headers
            .get_all(HOST)
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect()
    }

    #[test]
    fn one_valid_host_is_required_of_http_1_1() {
        let v11 = Version::HTTP_11;
        let mut p = parts("GET", "/a?b", v11, &["t:8080"]);
        assert_eq!(normalise(&mut p), Ok(()));
        assert_eq!(
            (host(&p), p.uri.to_string()),
            (vec!["t:8080"], "/a?b".into())
        );
        let mut p = parts("GET", "/", v11, &["a", "b"]);
        assert_eq!(normalise(&mut p), Err(Refused::TwoHosts));
        let mut p = parts("GET", "/", v11, &["a", "a"]);
        assert_eq!(normalise(&mut p), Err(Refused::TwoHosts));
        let mut p = parts("GET", "/", v11, &[]);
        assert_eq!(normalise(&mut p), Err(Refused::NoHost));
        // Even with the authority in the target (§3.2.2: the client MUST send Host).
        let mut p = parts("GET", "http://u/", v11, &[]);
        assert_eq!(normalise(&mut p), Err(Refused::NoHost));
        for bad in ["a b", "u@h", "h:port", "h/x"] {
            let mut p = parts("GET", "/", v11, &[bad]);
            assert_eq!(normalise(&mut p), Err(Refused::InvalidHost), "{bad}");
        }
        let mut p = parts("GET", "/", v11, &[""]);
        assert_eq!(normalise(&mut p), Ok(()));
    }

    #[test]
    fn http_1_0_may_omit_host_when_the_target_names_it() {
        let v10 = Version::HTTP_10;
        let mut p = parts("GET", "http://u:81/x", v10, &[]);
        assert_eq!(normalise(&mut p), Ok(()));
        assert_eq!(host(&p), ["u:81"]);
        assert_eq!(p.version, Version::HTTP_11);
        let mut p = parts("GET", "/x", v10, &[]);
        assert_eq!(normalise(&mut p), Err(Refused::NoHost));
    }

    #[test]
    fn absolute_form_authority_replaces_the_received_host() {
        let mut p = parts(
            "GET",
            "http://user@origin.example:8080/p?q=1",
            Version::HTTP_11,
            &["client.example"],
        );
        assert_eq!(normalise(&mut p), Ok(()));
        assert_eq!(host(&p), ["origin.example:8080"]);
        assert_eq!(p.uri.to_string(), "/p?q=1");
        let mut p = parts("GET", "http://[::1]/", Version::HTTP_11, &["c"]);
        assert_eq!(normalise(&mut p), Ok(()));
        assert_eq!(host(&p), ["[::1]"]);
    }

    #[test]
    fn connect_is_not_tunnelled() {
        let mut p = parts("CONNECT", "origin.example:443", Version::HTTP_11, &["x"]);
        assert_eq!(normalise(&mut p), Err(Refused::Connect));
        assert_eq!(Refused::Connect.status(), StatusCode::NOT_IMPLEMENTED);
    }
}
