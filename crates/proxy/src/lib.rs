//! tierlab's dispatcher proxy: an HTTP/1.1 reverse proxy (tokio + hyper) that places
//! each request with one of `crates/policy`'s policies — the very objects the simulator
//! runs in virtual time — on the wall clock, in front of live backends.
//!
//! [`Proxy::start`] binds everything (client listener, admin endpoint, metric sync)
//! and serves until [`Proxy::shutdown`]; [`run_until_signal`] serves as a process
//! (the binary `tierlab-proxy`, and `python -m tierlab.live.proxy`).

mod admin;
mod body;
mod classify;
mod coarse_timer;
pub mod config;
mod decisions;
mod dispatcher;
mod hop;
mod limit;
mod relay;
mod run;
mod sessions;
mod stats;
mod summary;
pub mod sync;
mod target;
mod upstream;

use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::header::HeaderValue;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use policy::Dispatch;
use tokio::net::{TcpListener, UdpSocket};
use tokio::task::JoinHandle;

pub use config::Config;
pub use decisions::{Decision, Outcome};
pub use run::run_until_signal;

use classify::Classifier;
use coarse_timer::CoarseTimer;
use decisions::DecisionLog;
use dispatcher::{Clock, Dispatcher};
use relay::State;
use stats::Stats;
use upstream::Upstream;

/// A running proxy.
pub struct Proxy {
    /// Where clients connect (the port actually bound when 0 was asked for).
    pub addr: SocketAddr,
    pub admin_addr: Option<SocketAddr>,
    pub sync_addr: Option<SocketAddr>,
    state: Arc<State>,
    summary_path: Option<std::path::PathBuf>,
    tasks: Vec<JoinHandle<()>>,
}

impl Proxy {
    pub async fn start(c: Config) -> Result<Proxy, String> {
        let peers = c.sync.as_ref().map_or(0, |s| s.peers.len());
        let policy = c
            .policy
            .build(c.backends.len(), peers, c.seed)
            .map_err(|e| format!("proxy configuration: policy: {e}"))?;
        Self::start_with(c, policy).await
    }

    /// As [`Proxy::start`] with a policy object of the caller's instead of the
    /// configured one (tests script a policy's answers this way).
    pub async fn start_with(c: Config, policy: Box<dyn Dispatch>) -> Result<Proxy, String> {
        let names: Vec<String> = c.backends.iter().map(|b| b.to_string()).collect();
        let clock = Clock::new(c.sync.as_ref().and_then(|s| s.origin_unix));
        let dispatcher = Dispatcher::new(
            policy,
            c.backends.len(),
            (c.queue.size, c.queue.timeout),
            c.session.idle,
            c.health.retry,
            clock,
            Stats::new(&names),
        );
        let dispatcher = Arc::new(match &c.limit {
            Some(l) => dispatcher.limited(l.size),
            None => dispatcher,
        });
        let connect_timeout = Duration::from_secs_f64(c.health.connect_timeout);
        let state = Arc::new(State {
            dispatcher: Arc::clone(&dispatcher),
            upstreams: c
                .backends
                .iter()
                .map(|a| {
                    Arc::new(Upstream::new(
                        *a,
                        c.limits.idle_per_backend,
                        connect_timeout,
                    ))
                })
                .collect(),
            classify: Classifier::new(&c.session, &c.types)?,
            log: c
                .decisions
                .as_deref()
                .map(DecisionLog::create)
                .transpose()?,
            body_timeout: Duration::from_secs_f64(c.limits.body_timeout),
            buffer_body: c.limits.buffer_body,
            backend_timeout: Duration::from_secs_f64(c.limits.backend_timeout),
            retry_after: HeaderValue::from(c.queue.retry_after),
            limit_retry_after: HeaderValue::from(c.limit.as_ref().map_or(0, |l| l.retry_after)),
        });
        let listener = TcpListener::bind(c.listen)
            .await
            .map_err(|e| format!("listen {}: {e}", c.listen))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let mut tasks = vec![tokio::spawn(serve(
            listener,
            Arc::clone(&state),
            c.limits.clone(),
        ))];

        let mut admin_addr = None;
        if let Some(a) = &c.admin {
            let token = std::fs::read_to_string(&a.token_file)
                .map_err(|e| format!("admin.token_file {}: {e}", a.token_file.display()))?
                .trim()
                .to_string();
            if token.is_empty() {
                return Err(format!(
                    "admin.token_file {}: empty; write a token into it",
                    a.token_file.display()
                ));
            }
            let l = TcpListener::bind(a.listen)
                .await
                .map_err(|e| format!("admin.listen {}: {e}", a.listen))?;
            admin_addr = Some(l.local_addr().map_err(|e| e.to_string())?);
            tasks.push(tokio::spawn(serve_admin(
                l,
                Arc::new(token),
                Arc::clone(&dispatcher),
            )));
        }

        if let Some(spec) = c.limit.as_ref().and_then(|l| l.control.as_ref()) {
            // One controller per backend: each limit follows its own backend.
            let controllers = c.backends.iter().map(|_| control::build(spec)).collect();
            tasks.push(tokio::spawn(limit::run(
                Arc::clone(&dispatcher),
                controllers,
                spec.interval,
            )));
        }

        let mut sync_addr = None;
        if let Some(s) = &c.sync {
            let socket = UdpSocket::bind(s.listen)
                .await
                .map_err(|e| format!("sync.listen {}: {e}", s.listen))?;
            let bound = socket.local_addr().map_err(|e| e.to_string())?;
            sync_addr = Some(bound);
            let mut h = DefaultHasher::new();
            (bound, std::process::id()).hash(&mut h);
            tasks.push(tokio::spawn(sync::run(
                socket,
                h.finish(),
                s.peers.clone(),
                s.interval,
                s.delay,
                Arc::clone(&dispatcher),
            )));
        }
        Ok(Proxy {
            addr,
            admin_addr,
            sync_addr,
            state,
            summary_path: c.summary.clone(),
            tasks,
        })
    }

    /// The summary as `GET /summary` gives it.
    pub fn summary(&self) -> serde_json::Value {
        summary::of(&self.state.dispatcher)
    }

    /// Prometheus text as `GET /metrics` gives it.
    pub fn metrics_text(&self) -> String {
        self.state.dispatcher.refresh_gauges();
        self.state.dispatcher.stats.encode()
    }

    /// Stop accepting, write the summary file and flush the decision log. Requests
    /// still in flight finish on their own connections' tasks or are cut off when the
    /// runtime ends.
    pub fn shutdown(self) -> Result<(), String> {
        for t in &self.tasks {
            t.abort();
        }
        if let Some(p) = &self.summary_path {
            std::fs::write(p, format!("{:#}\n", self.summary()))
                .map_err(|e| format!("summary {}: {e}", p.display()))?;
        }
        match &self.state.log {
            Some(l) => l.close(),
            None => Ok(()),
        }
    }
}

/// How late the header-read timeout may fire (see `coarse_timer`).
const HEADER_TIMER_RESOLUTION: Duration = Duration::from_millis(100);

async fn serve(listener: TcpListener, state: Arc<State>, limits: config::Limits) {
    let mut builder = http1::Builder::new();
    builder
        .timer(CoarseTimer::start(HEADER_TIMER_RESOLUTION))
        .keep_alive(true)
        .header_read_timeout(Duration::from_secs_f64(limits.header_timeout))
        .max_buf_size(limits.max_header_bytes);
    let builder = Arc::new(builder);
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(_) => {
                // Out of descriptors and the like: back off instead of spinning.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (state, builder) = (Arc::clone(&state), Arc::clone(&builder));
        tokio::spawn(async move {
            let service = service_fn(move |req| relay::handle(Arc::clone(&state), req));
            // A client's protocol error or disconnect ends its connection only.
            let _ = builder
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn serve_admin(listener: TcpListener, token: Arc<String>, d: Arc<Dispatcher>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let (token, d) = (Arc::clone(&token), Arc::clone(&d));
        tokio::spawn(async move {
            let service =
                service_fn(move |req| admin::handle(Arc::clone(&token), Arc::clone(&d), req));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
