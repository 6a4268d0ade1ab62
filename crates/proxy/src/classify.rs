//! What the proxy reads from a request before asking the policy: its session (and the
//! home server an inserted cookie names) and its type.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use hyper::header::{HeaderMap, HeaderName, COOKIE};

use crate::config::{CookieMode, SessionConfig, TypeConfig};

pub struct Classifier {
    mode: CookieMode,
    cookie: String,
    session_header: Option<HeaderName>,
    type_header: Option<HeaderName>,
    names: Vec<String>,
    /// (prefix, type index), longest prefix first.
    paths: Vec<(String, usize)>,
    /// New session ids: a per-process random base plus a counter.
    next_session: AtomicU64,
}

/// A request's session as the proxy knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionKey {
    pub id: u64,
    /// The server an inserted cookie names.
    pub cookie_home: Option<usize>,
    /// Whether the request named its session (else a new one was minted).
    pub known: bool,
}

fn header_name(h: &Option<String>, field: &str) -> Result<Option<HeaderName>, String> {
    h.as_ref()
        .map(|h| {
            HeaderName::from_bytes(h.as_bytes())
                .map_err(|_| format!("proxy configuration: {field}: {h:?} is not a header name"))
        })
        .transpose()
}

fn hash(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

impl Classifier {
    pub fn new(s: &SessionConfig, t: &TypeConfig) -> Result<Classifier, String> {
        let mut paths: Vec<(String, usize)> = t
            .paths
            .iter()
            .map(|(p, n)| (p.clone(), t.names.iter().position(|x| x == n).unwrap_or(0)))
            .collect();
        paths.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        let base = hash(&format!(
            "{:?}{}",
            std::time::SystemTime::now(),
            std::process::id()
        ));
        Ok(Classifier {
            mode: s.mode,
            cookie: s.cookie.clone(),
            session_header: header_name(&s.header, "session.header")?,
            type_header: header_name(&t.header, "types.header")?,
            names: t.names.clone(),
            paths,
            next_session: AtomicU64::new(base & !(u64::MAX >> 16)),
        })
    }

    pub fn cookie_mode(&self) -> CookieMode {
        self.mode
    }

    fn cookie<'a>(&self, headers: &'a HeaderMap) -> Option<&'a str> {
        headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .find(|(k, _)| *k == self.cookie)
            .map(|(_, v)| v)
    }

    /// The session: the session header's number, else the cookie (inserted:
    /// `SESSION.SERVER`; followed: the application's value, hashed), else a new id.
    pub fn session(&self, headers: &HeaderMap) -> SessionKey {
        let from_header = self
            .session_header
            .as_ref()
            .and_then(|h| headers.get(h))
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let cookie = self.cookie(headers);
        let (from_cookie, cookie_home) = match (self.mode, cookie) {
            (CookieMode::Insert, Some(v)) => match v.split_once('.') {
                Some((s, k)) => (u64::from_str_radix(s, 16).ok(), k.parse().ok()),
                None => (None, None),
            },
            (CookieMode::Follow, Some(v)) => (Some(hash(v)), None),
            (CookieMode::None, _) | (_, None) => (None, None),
        };
        match from_header.or(from_cookie) {
            Some(id) => SessionKey {
                id,
                cookie_home,
                known: true,
            },
            None => SessionKey {
                id: self.next_session.fetch_add(1, Ordering::Relaxed),
                cookie_home: None,
                known: false,
            },
        }
    }

    /// The inserted cookie's value for a session placed on `server`.
    pub fn insert_value(&self, session: u64, server: usize) -> String {
        format!("{}={session:x}.{server}; Path=/; HttpOnly", self.cookie)
    }

    /// The session id of an application cookie value set in a response (follow mode).
    pub fn followed_session(&self, set_cookie: &str) -> Option<u64> {
        let (k, rest) = set_cookie.split_once('=')?;
        (k.trim() == self.cookie).then(|| hash(rest.split(';').next().unwrap_or("").trim()))
    }

    /// The load generator's request id (`X-Tierlab-Request`), by which the live
    /// trace joins a decision to the client's record of the request.
    pub fn request_id(headers: &HeaderMap) -> Option<u64> {
        // A constant name: looking a `&str` up parses it first, once per request.
        const REQUEST_ID: HeaderName = HeaderName::from_static("x-tierlab-request");
        headers
            .get(REQUEST_ID)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
    }

    /// The request type: the type header's name (or index), else the longest path
    /// prefix, else 0.
    pub fn request_type(&self, headers: &HeaderMap, path: &str) -> usize {
        if let Some(v) = self
            .type_header
            .as_ref()
            .and_then(|h| headers.get(h))
            .and_then(|v| v.to_str().ok())
        {
            if let Some(i) = self.names.iter().position(|n| n == v) {
                return i;
            }
            if let Ok(i) = v.parse::<usize>() {
                return i;
            }
        }
        self.paths
            .iter()
            .find(|(p, _)| path.starts_with(p.as_str()))
            .map_or(0, |(_, i)| *i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(kv: &[(&str, &str)]) -> HeaderMap {
        kv.iter()
            .map(|(k, v)| (k.parse().unwrap(), v.parse().unwrap()))
            .collect()
    }

    #[test]
    fn sessions_from_header_inserted_cookie_or_minted() {
        let c = Classifier::new(&SessionConfig::default(), &TypeConfig::default()).unwrap();
        let h = headers(&[("x-tierlab-session", "42")]);
        assert_eq!(c.session(&h).id, 42);
        let h = headers(&[("cookie", "a=1; TIERLAB_SRV=ff.3")]);
        let s = c.session(&h);
        assert_eq!((s.id, s.cookie_home, s.known), (255, Some(3), true));
        let (a, b) = (c.session(&HeaderMap::new()), c.session(&HeaderMap::new()));
        assert!(!a.known && a.id != b.id);
        assert_eq!(c.insert_value(255, 3), "TIERLAB_SRV=ff.3; Path=/; HttpOnly");
    }

    #[test]
    fn follow_mode_hashes_the_application_cookie() {
        let s = SessionConfig {
            mode: CookieMode::Follow,
            cookie: "JSESSIONID".into(),
            ..Default::default()
        };
        let c = Classifier::new(&s, &TypeConfig::default()).unwrap();
        let id = c.session(&headers(&[("cookie", "JSESSIONID=abc")])).id;
        assert_eq!(c.followed_session("JSESSIONID=abc; Path=/"), Some(id));
        assert_eq!(c.followed_session("OTHER=abc"), None);
    }

    #[test]
    fn types_by_header_then_longest_prefix() {
        let t = TypeConfig {
            names: vec!["home".into(), "item".into(), "items".into()],
            paths: vec![
                ("/item".into(), "item".into()),
                ("/items".into(), "items".into()),
            ],
            ..Default::default()
        };
        let c = Classifier::new(&SessionConfig::default(), &t).unwrap();
        assert_eq!(
            c.request_type(&headers(&[("x-tierlab-type", "items")]), "/"),
            2
        );
        assert_eq!(c.request_type(&HeaderMap::new(), "/items?x"), 2);
        assert_eq!(c.request_type(&HeaderMap::new(), "/item?i=1"), 1);
        assert_eq!(c.request_type(&HeaderMap::new(), "/other"), 0);
    }
}
