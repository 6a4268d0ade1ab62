//! Dispatch policies, written once against no particular clock: the simulator calls
//! them in virtual time and the live proxy in real time. `now` is seconds since any
//! fixed origin, passed in by the caller; a policy never reads a clock itself.
//!
//! A dispatcher owns one policy instance for the servers it may use. Several
//! dispatchers sharing one cluster exchange [`Metrics`] now and then ([`Dispatch::sync`]).

mod config;
mod metrics;
mod queue;
mod redal;
mod simple;

pub use config::Policy;
pub use metrics::{Load, Metrics};
pub use queue::WaitQueue;
pub use redal::{sync_message_bytes, Redal, RedalConfig, SlopeTest};
pub use simple::{Affinity, AffinityCap, LeastActive, PowerOfTwo, Random, RoundRobin};

/// What a dispatcher knows about the request it must place.
#[derive(Debug, Clone, Copy, Default)]
pub struct Request {
    pub session: u64,
    /// Request type (an index; policies that care keep statistics per type).
    pub ty: usize,
    /// The server (index among this dispatcher's servers) holding the session's state.
    pub home: Option<usize>,
    /// Seconds since the session's previous request reached the cluster; None for a
    /// session's first request and when the same request is asked about again.
    pub gap: Option<f64>,
}

/// Chooses the server of a cluster that receives the next request.
pub trait Dispatch: Send {
    /// The server for `req`, or None to hold the request at the dispatcher and ask
    /// again later (only waiting policies such as ReDAL-W do that).
    fn pick(&mut self, now: f64, req: &Request) -> Option<usize>;

    /// A request this dispatcher sent to `server` has finished there (any status).
    fn done(&mut self, _now: f64, _server: usize, _ty: usize) {}

    /// This dispatcher's own contribution to the load metrics, to share with others.
    fn metrics(&mut self, _now: f64) -> Metrics {
        Metrics::default()
    }

    /// The other dispatchers' contributions (summed) as of their last sync.
    fn sync(&mut self, _now: f64, _others: &Metrics) {}

    /// Payload bytes of one metrics message, at one byte per counter as the ReDAL
    /// paper counts them (§II-D); 0 for a policy that shares nothing.
    fn message_bytes(&self) -> usize {
        0
    }

    /// Whether `server` may take requests now, as the policy judges its load (ReDAL's
    /// throughput-slope test); true for policies that judge nothing. For observers
    /// (the proxy's `/metrics`): it changes no state.
    fn dispatchable(&self, _server: usize) -> bool {
        true
    }
}

/// Index of the smallest `key` among `candidates`; ties go to the first candidate at
/// or after `start` (rotating `start` spreads ties instead of piling them on server 0).
fn argmin_from<K: PartialOrd>(
    candidates: impl Iterator<Item = usize>,
    n: usize,
    start: usize,
    key: impl Fn(usize) -> K,
) -> Option<usize> {
    let mut best: Option<(usize, K)> = None;
    for k in candidates {
        let v = key(k);
        let better = match &best {
            None => true,
            Some((b, bv)) => v < *bv || (v == *bv && (k + n - start) % n < (*b + n - start) % n),
        };
        if better {
            best = Some((k, v));
        }
    }
    best.map(|(k, _)| k)
}
