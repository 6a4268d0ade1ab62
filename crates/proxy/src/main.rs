//! `tierlab-proxy CONFIG.json [--threads N]`: serve until SIGINT or SIGTERM, then
//! write the summary and flush the decision log.

use std::path::PathBuf;
use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!("usage: tierlab-proxy CONFIG.json [--threads N]");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, threads) = match args.as_slice() {
        [p] => (PathBuf::from(p), None),
        [p, flag, n] if flag == "--threads" => match n.parse::<usize>() {
            Ok(n) if n >= 1 => (PathBuf::from(p), Some(n)),
            _ => {
                eprintln!("--threads {n}: give a whole number ≥ 1");
                return ExitCode::from(2);
            }
        },
        _ => return usage(),
    };
    let config = match proxy::Config::load(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tierlab-proxy: {e}");
            return ExitCode::from(2);
        }
    };
    // One thread: the current-thread scheduler (no work-stealing bookkeeping).
    let mut rt = match threads {
        Some(1) => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    if let Some(n) = threads.filter(|n| *n > 1) {
        rt.worker_threads(n);
    }
    let rt = match rt.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tierlab-proxy: runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(async {
        let p = proxy::Proxy::start(config).await?;
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
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tierlab-proxy: {e}");
            ExitCode::FAILURE
        }
    }
}
