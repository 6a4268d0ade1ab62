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
    match proxy::run_until_signal(config, threads) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tierlab-proxy: {e}");
            ExitCode::FAILURE
        }
    }
}
