//! The proxy's counts as the simulator reports a tier's dispatch point
//! (`trace::summary::DispatchSummary`, one record type for both), plus what only a live
//! proxy has: 502s, re-dispatches, wire bytes, per-backend counts.

use serde_json::{json, Value};
use trace::summary::{mean, DispatchSummary};

use crate::dispatcher::Dispatcher;

pub fn of(d: &Dispatcher) -> Value {
    let s = &d.stats;
    let migrations: u64 = s.backends.iter().map(|b| b.migrations.get()).sum();
    let dispatch = DispatchSummary {
        dispatchers: 1,
        session_migrations: migrations,
        sessions_created: s.sessions_created.get(),
        queued: s.queued.get(),
        rejected_queue_full: s.rejected_queue_full.get(),
        rejected_queue_timeout: s.rejected_queue_timeout.get(),
        sync_messages: s.sync_messages.get(),
        sync_payload_bytes: mean(s.sync_model_bytes.get() as f64, s.sync_messages.get()),
    };
    let limits = d.limits();
    let backends: Vec<Value> = s
        .backends
        .iter()
        .enumerate()
        .map(|(k, b)| {
            let mut v = json!({
                "served": b.served.get(),
                "errors": b.errors.get(),
                "migrations": b.migrations.get(),
                "active": b.active.get(),
            });
            if let Some((limit, inflight, reason)) = limits.as_ref().map(|l| &l[k]) {
                v["limit"] = json!(limit);
                v["inflight"] = json!(inflight);
                v["rejected_limit"] = json!(b.rejected_limit.get());
                v["limit_reason"] = json!(reason);
            }
            v
        })
        .collect();
    json!({
        "dispatch": dispatch,
        "proxy": {
            "requests": s.requests.get(),
            "decisions": s.decisions.get(),
            "queue_left": s.queue_left.get(),
            "rejected_no_backend": s.rejected_no_backend.get(),
            "rejected_limit": s.rejected_limit.get(),
            "bad_gateway": s.bad_gateway.get(),
            "gateway_timeout": s.gateway_timeout.get(),
            "truncated": s.truncated.get(),
            "client_aborted": s.client_aborted.get(),
            "client_timeouts": s.client_timeouts.get(),
            "not_forwarded": s.not_forwarded.get(),
            "redispatches": s.redispatches.get(),
            "sync_datagrams": s.sync_datagrams.get(),
            "sync_wire_bytes_per_datagram": mean(s.sync_wire_bytes.get() as f64, s.sync_datagrams.get()),
            "sync_received": s.sync_received.get(),
            "sync_bad": s.sync_bad.get(),
            "backends": backends,
        },
    })
}
