//! Serving as a process does: until SIGINT or SIGTERM, then the summary written and
//! the decision log flushed. Both launchers call this — the `tierlab-proxy` binary and
//! `python -m tierlab.live.proxy` (through `tierlab._core`, which `pip install` builds,
//! so a cluster needs no separately built binary).

use crate::{Config, Proxy};

/// Serve `config` on a runtime of `threads` workers (1: the current-thread scheduler,
/// no work-stealing bookkeeping; None: one per core) until SIGINT or SIGTERM.
pub fn run_until_signal(config: Config, threads: Option<usize>) -> Result<(), String> {
    let mut rt = match threads {
        Some(1) => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    if let Some(n) = threads.filter(|n| *n > 1) {
        rt.worker_threads(n);
    }
    let rt = rt
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let result = rt.block_on(async {
        let p = Proxy::start(config).await?;
        eprintln!(
            "tierlab-proxy: listening on {} (admin {:?}, sync {:?})",
            p.addr, p.admin_addr, p.sync_addr
        );
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| format!("signal handler: {e}"))?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        p.shutdown()
    });
    rt.shutdown_background();
    result
}
