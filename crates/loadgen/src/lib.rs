//! tierlab's live load generator: the model's session workload (the same chain walk as
//! the simulator, `workload::walk`) against a real HTTP server, measured from each request's
//! intended send time into HdrHistogram, and written in the trace schema (client view).

mod client;
mod collect;
mod config;
mod http;

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use trace::Output;

pub use collect::{Latency, LATENCY_BOUNDS};
pub use config::Config;

/// Live counters for a progress line.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// Share of the duration elapsed.
    pub fraction: f64,
    /// Requests sent, warm-up included; `sent − finished` are in flight (at the end:
    /// unfinished, as the trace counts them after the warm-up).
    pub sent: u64,
    pub finished: u64,
    pub failed: u64,
    /// Per request type, the response times of the requests finished so far, taken
    /// before `finished`, so their counts add up to at most `finished`.
    pub latency: &'a [Latency],
}

/// Run the load described by `config_json` (see `tierlab.live.loadgen`). `tick` is called
/// every 100 ms; returning false stops the run early (Ctrl-C), keeping what was measured.
pub fn run(config_json: &str, mut tick: impl FnMut(Progress) -> bool) -> Result<Output, String> {
    let cfg = Config::from_json(config_json)?;
    // One worker: a current-thread runtime, without the cross-thread wake-ups of the
    // work-stealing scheduler (the common case on a small load machine).
    let mut builder = match cfg.workers {
        1 => tokio::runtime::Builder::new_current_thread(),
        n => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n);
            b
        }
    };
    let rt = builder
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the load generator's runtime: {e}"))?;
    rt.block_on(async move {
        let mut addrs = Vec::with_capacity(1 + cfg.also.len());
        for target in std::iter::once(&cfg.target).chain(&cfg.also) {
            addrs.push(reachable(target, cfg.connect_timeout).await?);
        }
        let duration = cfg.duration;
        let sh = Arc::new(client::Shared::new(cfg, addrs)?);
        let mut tasks = client::start(&sh);
        let mut interrupted = false;
        let mut ticker = tokio::time::interval(Duration::from_millis(100));
        // Copied into the same buffer at every tick: no allocation after the first.
        let mut latency = Vec::new();
        let mut report = |tick: &mut dyn FnMut(Progress) -> bool, elapsed: f64| {
            if let Some(c) = sh
                .collector
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
            {
                latency.clone_from(&c.latency);
            }
            // Finished before sent: a request finishing in between is not counted
            // finished and unsent (sent ≥ finished in every report).
            let finished = sh.finished.load(Relaxed);
            tick(Progress {
                fraction: (elapsed / duration).min(1.0),
                sent: sh.sent(),
                finished,
                failed: sh.failed.load(Relaxed),
                latency: &latency,
            })
        };
        loop {
            ticker.tick().await;
            let elapsed = sh.t0.elapsed().as_secs_f64();
            if !report(&mut tick, elapsed) {
                interrupted = true;
                break;
            }
            if elapsed >= duration {
                break;
            }
        }
        // Requests still running now are not waited for (the run allows no drain): they
        // count as unfinished.
        let elapsed = sh.t0.elapsed().as_secs_f64().min(duration);
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        // A last report with every finished request, as the trace has them.
        report(&mut tick, elapsed);
        // Aborted sessions may still be unwinding: take the collector, not the Arc.
        let collector = sh
            .collector
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or("the run was collected twice")?;
        let reconnects = sh.reconnects.load(Relaxed);
        Ok(collector.finish(&sh.cfg, elapsed, reconnects, interrupted))
    })
}

/// Resolve the target and open one connection, so that a wrong address fails at once
/// with a clear message instead of a run of connection errors.
async fn reachable(target: &str, within: f64) -> Result<SocketAddr, String> {
    let addr = target
        .to_socket_addrs()
        .map_err(|e| format!("target {target:?}: {e} (give HOST:PORT, e.g. 127.0.0.1:8080)"))?
        .next()
        .ok_or_else(|| format!("target {target:?} resolves to no address"))?;
    match tokio::time::timeout(Duration::from_secs_f64(within), tokio::net::TcpStream::connect(addr)).await {
        Ok(Ok(_)) => Ok(addr),
        Ok(Err(e)) => Err(format!("cannot reach the target {target} ({addr}): {e} — is the server running? (`tierlab live up` starts the bookstore)")),
        Err(_) => Err(format!("cannot reach the target {target} ({addr}): no answer within {within} s")),
    }
}
