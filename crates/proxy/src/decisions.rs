//! The per-request decision log: one JSON object per line, written by a thread of its
//! own so a slow disk never stalls a request (format in README.md), flushed whenever
//! it has caught up. The Python side folds it into the live trace.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::mpsc;
use std::sync::Mutex;
use std::thread::JoinHandle;

use serde::Serialize;

/// How a request ended at the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The backend's response was relayed completely.
    Served,
    /// The response began but the backend or the client broke off.
    Truncated,
    BadGateway,
    GatewayTimeout,
    QueueFull,
    QueueTimeout,
    NoBackend,
    /// The backend the policy chose held its limit of requests in flight (503).
    Limit,
    /// The client's request body broke off while it was read or sent on (400).
    ClientAborted,
    /// The client's request body did not arrive within `limits.body_timeout` (408).
    ClientTimeout,
    /// Answered by the proxy, not forwarded: a `Host` field missing, repeated or
    /// invalid (400), or CONNECT (501); RFC 9112 §3.2, `target.rs`.
    NotForwarded,
}

#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    /// Seconds (proxy clock) the request arrived.
    pub t: f64,
    /// The load generator's request id (`X-Tierlab-Request`), null without one.
    pub request: Option<u64>,
    pub session: u64,
    #[serde(rename = "type")]
    pub ty: usize,
    /// Backend index (config order); null if none was reached.
    pub server: Option<usize>,
    pub home: Option<usize>,
    pub migrated: bool,
    /// Seconds spent in the wait queue.
    pub queued: f64,
    /// Backends that refused the connection before one took the request.
    pub redispatched: u32,
    /// HTTP status sent to the client (0 if none could be).
    pub status: u16,
    pub outcome: Outcome,
    /// Seconds from arrival to the end of the response (or the refusal).
    pub rt: f64,
}

pub struct DecisionLog {
    tx: Mutex<Option<mpsc::Sender<Decision>>>,
    writer: Mutex<Option<JoinHandle<std::io::Result<()>>>>,
}

impl DecisionLog {
    pub fn create(path: &Path) -> Result<DecisionLog, String> {
        let file =
            File::create(path).map_err(|e| format!("decisions log {}: {e}", path.display()))?;
        let (tx, rx) = mpsc::channel::<Decision>();
        let writer = std::thread::spawn(move || {
            let mut out = BufWriter::new(file);
            while let Ok(mut d) = rx.recv() {
                // Everything queued is written, then flushed once the queue is empty:
                // a reader (the live trace, during the proxy's life) sees each line
                // soon after its request ended, at one write per burst, not per line.
                loop {
                    serde_json::to_writer(&mut out, &d)?;
                    out.write_all(b"\n")?;
                    match rx.try_recv() {
                        Ok(next) => d = next,
                        Err(_) => break,
                    }
                }
                out.flush()?;
            }
            out.flush()
        });
        Ok(DecisionLog {
            tx: Mutex::new(Some(tx)),
            writer: Mutex::new(Some(writer)),
        })
    }

    pub fn write(&self, d: Decision) {
        if let Some(tx) = self.tx.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            // Fails only once closed at shutdown, when no request is left to log.
            let _ = tx.send(d);
        }
    }

    /// Flush and close: every decision sent so far is on disk when this returns.
    pub fn close(&self) -> Result<(), String> {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        match self.writer.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(w) => w
                .join()
                .map_err(|_| "decisions log writer panicked".to_string())?
                .map_err(|e| format!("decisions log: {e}")),
            None => Ok(()),
        }
    }
}
