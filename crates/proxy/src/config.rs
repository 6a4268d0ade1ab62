//! The proxy's configuration file (JSON): where to listen, which backends, the policy
//! exactly as the model's `dispatch:` section compiles for the engine (`policy::Policy`),
//! how sessions and request types are recognized, the wait queue, peers and limits.
//! Every limit has a documented default; errors name the field and the fix.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use policy::Policy;
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Client-facing address, e.g. "127.0.0.1:8000".
    pub listen: SocketAddr,
    /// Backends as "host:port", in the policy's server order.
    pub backends: Vec<SocketAddr>,
    /// The policy, as the engine's `dispatch.policy` (e.g. `{"policy": "redal", …}`).
    pub policy: Policy,
    /// Seed of the randomized policies (random, power_of_two).
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub session: SessionConfig,
    #[serde(default)]
    pub types: TypeConfig,
    #[serde(default)]
    pub queue: QueueConfig,
    #[serde(default)]
    pub health: HealthConfig,
    #[serde(default)]
    pub limits: Limits,
    pub sync: Option<SyncConfig>,
    pub admin: Option<AdminConfig>,
    /// A limit on each backend's requests in flight (503 + Retry-After past it); none if
    /// absent.
    pub limit: Option<LimitConfig>,
    /// JSON-lines file of per-request decisions (format in README.md); none if absent.
    pub decisions: Option<PathBuf>,
    /// Written at shutdown: the tier's `dispatch` summary as the simulator writes it.
    pub summary: Option<PathBuf>,
}

/// How a request's session is known, and its home server remembered.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionConfig {
    /// `insert`: the proxy sets its own cookie naming the server and a session id
    /// (HAProxy `cookie SRV insert`); `follow`: the application's session cookie
    /// `cookie` names the session and the proxy remembers its server; `none`: only
    /// the session header names a session (a request without one is anonymous).
    #[serde(default = "SessionConfig::default_mode")]
    pub mode: CookieMode,
    #[serde(default = "SessionConfig::default_cookie")]
    pub cookie: String,
    /// A header carrying a numeric session id (the load generator's
    /// `X-Tierlab-Session`); when present it names the session in either mode.
    #[serde(default = "SessionConfig::default_header")]
    pub header: Option<String>,
    /// Seconds after which an idle session is forgotten (its home and think time).
    #[serde(default = "SessionConfig::default_idle")]
    pub idle: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CookieMode {
    Insert,
    Follow,
    None,
}

impl SessionConfig {
    fn default_mode() -> CookieMode {
        CookieMode::Insert
    }
    fn default_cookie() -> String {
        "TIERLAB_SRV".into()
    }
    fn default_header() -> Option<String> {
        Some("x-tierlab-session".into())
    }
    fn default_idle() -> f64 {
        1800.0
    }
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            mode: Self::default_mode(),
            cookie: Self::default_cookie(),
            header: Self::default_header(),
            idle: Self::default_idle(),
        }
    }
}

/// The request type (ReDAL keeps its slopes per type): the header's value if it names
/// one of `names`, else the longest matching path prefix, else type 0.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TypeConfig {
    #[serde(default = "TypeConfig::default_header")]
    pub header: Option<String>,
    #[serde(default)]
    pub names: Vec<String>,
    /// (path prefix, type name) pairs.
    #[serde(default)]
    pub paths: Vec<(String, String)>,
}

impl TypeConfig {
    fn default_header() -> Option<String> {
        Some("x-tierlab-type".into())
    }
}

impl Default for TypeConfig {
    fn default() -> Self {
        TypeConfig {
            header: Self::default_header(),
            names: Vec::new(),
            paths: Vec::new(),
        }
    }
}

/// ReDAL-W's wait queue at this proxy (the model's `dispatch.queue`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    #[serde(default = "QueueConfig::default_size")]
    pub size: usize,
    /// Seconds a request may wait before it is refused with 503.
    #[serde(default = "QueueConfig::default_timeout")]
    pub timeout: f64,
    /// The `Retry-After` seconds sent with a 503.
    #[serde(default = "QueueConfig::default_retry_after")]
    pub retry_after: u32,
}

impl QueueConfig {
    fn default_size() -> usize {
        1000
    }
    fn default_timeout() -> f64 {
        10.0
    }
    fn default_retry_after() -> u32 {
        1
    }
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            size: Self::default_size(),
            timeout: Self::default_timeout(),
            retry_after: Self::default_retry_after(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealthConfig {
    /// Seconds a backend that refused a connection stays down before it is tried again.
    #[serde(default = "HealthConfig::default_retry")]
    pub retry: f64,
    /// Seconds a connection attempt may take before the backend counts as refusing.
    #[serde(default = "HealthConfig::default_connect_timeout")]
    pub connect_timeout: f64,
}

impl HealthConfig {
    fn default_retry() -> f64 {
        2.0
    }
    fn default_connect_timeout() -> f64 {
        1.0
    }
}

impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig {
            retry: Self::default_retry(),
            connect_timeout: Self::default_connect_timeout(),
        }
    }
}

/// Client-side limits (HAProxy's `timeout http-request`, `tune.bufsize`, `maxconn`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Seconds a client has to send a request's headers; a trickling client is closed.
    #[serde(default = "Limits::default_header_timeout")]
    pub header_timeout: f64,
    /// Bytes of request line and headers at most (beyond: 431).
    #[serde(default = "Limits::default_max_header_bytes")]
    pub max_header_bytes: usize,
    /// Seconds a client has to send a body of at most `buffer_body` bytes, read whole
    /// before dispatch (beyond: 408, and no backend was held meanwhile).
    #[serde(default = "Limits::default_body_timeout")]
    pub body_timeout: f64,
    /// Bytes of request body read whole before dispatch; a larger body streams to the
    /// backend as it comes (bounded by `backend_timeout`).
    #[serde(default = "Limits::default_buffer_body")]
    pub buffer_body: usize,
    /// Seconds a backend has to answer (headers) before the request gets 504.
    #[serde(default = "Limits::default_backend_timeout")]
    pub backend_timeout: f64,
    /// Idle upstream connections kept per backend.
    #[serde(default = "Limits::default_idle_per_backend")]
    pub idle_per_backend: usize,
}

impl Limits {
    fn default_header_timeout() -> f64 {
        10.0
    }
    fn default_max_header_bytes() -> usize {
        16 * 1024
    }
    fn default_body_timeout() -> f64 {
        10.0
    }
    fn default_buffer_body() -> usize {
        64 * 1024
    }
    fn default_backend_timeout() -> f64 {
        60.0
    }
    fn default_idle_per_backend() -> usize {
        256
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_timeout: Self::default_header_timeout(),
            max_header_bytes: Self::default_max_header_bytes(),
            body_timeout: Self::default_body_timeout(),
            buffer_body: Self::default_buffer_body(),
            backend_timeout: Self::default_backend_timeout(),
            idle_per_backend: Self::default_idle_per_backend(),
        }
    }
}

/// The per-backend limit on requests in flight (`limit.rs`): a request the policy
/// places on a backend holding `size` is answered 503 with `Retry-After`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitConfig {
    /// Requests in flight per backend at most; with `control`, the limit it starts at.
    pub size: u32,
    /// The `Retry-After` seconds of a 503 past the limit.
    #[serde(default = "LimitConfig::default_retry_after")]
    pub retry_after: u32,
    /// A controller of `crates/control` (its spec, as `tierlab control` and the model's
    /// `control:` give it) re-sizing each backend's limit every `interval` seconds; the
    /// limit is its `threads` pool: `{"interval": 1, "bounds": {"threads": [2, 64]},
    /// "strategy": {"strategy": "gradient", …}}`. None: the limit stays at `size`.
    pub control: Option<control::Spec>,
}

impl LimitConfig {
    fn default_retry_after() -> u32 {
        1
    }
}

/// Load-metric exchange with the other proxies in front of the same backends (UDP).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncConfig {
    pub listen: SocketAddr,
    pub peers: Vec<SocketAddr>,
    /// Seconds between this proxy's messages.
    pub interval: f64,
    /// Seconds a received message is held before it is applied (models staleness).
    #[serde(default)]
    pub delay: f64,
    /// Unix time (seconds) all the proxies measure `now` from, so their ReDAL slices
    /// line up; default: each proxy's own start.
    pub origin_unix: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminConfig {
    /// Must be a loopback address.
    pub listen: SocketAddr,
    /// File holding the token clients send as `Authorization: Bearer TOKEN`.
    pub token_file: PathBuf,
}

impl Config {
    pub fn from_json(text: &str) -> Result<Config, String> {
        let c: Config =
            serde_json::from_str(text).map_err(|e| format!("proxy configuration: {e}"))?;
        c.check()?;
        Ok(c)
    }

    pub fn load(path: &Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("proxy configuration {}: {e}", path.display()))?;
        Self::from_json(&text)
    }

    /// Errors name the field and the fix.
    pub fn check(&self) -> Result<(), String> {
        let bad = |field: &str, why: String| Err(format!("proxy configuration: {field}: {why}"));
        if let Err(e) = self.policy.check(self.backends.len()) {
            return bad("policy", format!("{e} (backends: {})", self.backends.len()));
        }
        let positive = |v: f64| v.is_finite() && v > 0.0;
        for (field, v) in [
            ("queue.timeout", self.queue.timeout),
            ("health.retry", self.health.retry),
            ("health.connect_timeout", self.health.connect_timeout),
            ("limits.header_timeout", self.limits.header_timeout),
            ("limits.body_timeout", self.limits.body_timeout),
            ("limits.backend_timeout", self.limits.backend_timeout),
            ("session.idle", self.session.idle),
        ] {
            if !positive(v) {
                return bad(field, format!("{v} must be a positive number of seconds"));
            }
        }
        if self.queue.size == 0 {
            return bad("queue.size", "give at least 1".into());
        }
        if self.limits.max_header_bytes < 8192 {
            return bad(
                "limits.max_header_bytes",
                format!(
                    "{} is too small; give ≥ 8192 (hyper's minimum buffer)",
                    self.limits.max_header_bytes
                ),
            );
        }
        if let Some(s) = &self.sync {
            if !(positive(s.interval) && s.delay.is_finite() && s.delay >= 0.0) {
                return bad("sync", "interval must be > 0 and delay ≥ 0 seconds".into());
            }
        }
        if let Some(a) = &self.admin {
            if !a.listen.ip().is_loopback() {
                return bad(
                    "admin.listen",
                    format!("{} is not loopback; use 127.0.0.1:PORT", a.listen),
                );
            }
        }
        if let Some(l) = &self.limit {
            if l.size == 0 {
                return bad("limit.size", "give at least 1 request in flight".into());
            }
            if let Some(spec) = &l.control {
                if let Some((field, why)) = spec.problem() {
                    return bad(&format!("limit.control.{field}"), why);
                }
                if matches!(spec.strategy, control::Strategy::Twin(_)) {
                    return bad(
                        "limit.control.strategy",
                        "twin is decided in Python (it simulates the tier); give static or gradient".into(),
                    );
                }
                let threads = spec.bounds.contains_key(&control::PoolKind::Threads);
                if !threads || spec.bounds.len() > 1 {
                    return bad(
                        "limit.control.bounds",
                        "give `threads` alone: the controller sizes the limit as the backend's threads".into(),
                    );
                }
            }
        }
        for (prefix, name) in &self.types.paths {
            if !self.types.names.contains(name) {
                return bad(
                    "types.paths",
                    format!("{prefix:?} maps to {name:?}, which is not in types.names"),
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_config_gets_defaults_and_bad_fields_are_named() {
        let c = Config::from_json(
            r#"{"listen": "127.0.0.1:0", "backends": ["127.0.0.1:1", "127.0.0.1:2"],
                "policy": {"policy": "round_robin"}}"#,
        )
        .unwrap();
        assert_eq!(c.queue.size, 1000);
        assert_eq!(c.session.mode, CookieMode::Insert);
        let err = Config::from_json(
            r#"{"listen": "127.0.0.1:0", "backends": [], "policy": {"policy": "round_robin"}}"#,
        )
        .unwrap_err();
        assert!(
            err.contains("policy") && err.contains("at least one server"),
            "{err}"
        );
        let err = Config::from_json(
            r#"{"listen": "127.0.0.1:0", "backends": ["127.0.0.1:1"],
                "policy": {"policy": "random"},
                "admin": {"listen": "0.0.0.0:9", "token_file": "t"}}"#,
        )
        .unwrap_err();
        assert!(
            err.contains("admin.listen") && err.contains("127.0.0.1"),
            "{err}"
        );
    }

    #[test]
    fn a_limit_gets_its_defaults_and_a_bad_one_is_named() {
        let with = |limit: &str| {
            Config::from_json(&format!(
                r#"{{"listen": "127.0.0.1:0", "backends": ["127.0.0.1:1"],
                    "policy": {{"policy": "round_robin"}}, "limit": {limit}}}"#
            ))
        };
        let l = with(r#"{"size": 4}"#).unwrap().limit.unwrap();
        assert_eq!((l.size, l.retry_after, l.control.is_none()), (4, 1, true));
        let control = |bounds: &str, interval: f64| {
            format!(
                r#"{{"size": 4, "control": {{"interval": {interval}, "bounds": {bounds},
                    "strategy": {{"strategy": "static"}}}}}}"#
            )
        };
        for (limit, field) in [
            (r#"{"size": 0}"#.to_string(), "limit.size"),
            (
                control(r#"{"threads": [2, 8]}"#, 0.0),
                "limit.control.interval",
            ),
            (
                control(r#"{"threads": [9, 8]}"#, 1.0),
                "limit.control.bounds.threads",
            ),
            (
                control(r#"{"connections": [2, 8]}"#, 1.0),
                "limit.control.bounds",
            ),
        ] {
            let err = with(&limit).unwrap_err();
            assert!(err.contains(field), "{limit}: {err}");
        }
        assert!(with(&control(r#"{"threads": [2, 8]}"#, 1.0)).is_ok());
    }
}
