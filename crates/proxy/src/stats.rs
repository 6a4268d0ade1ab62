//! The proxy's counters and gauges, registered once in a Prometheus registry
//! (`prometheus-client`), named as HAProxy's stats read: per backend `active`
//! (scur), `served`, `errors`, `migrations`, `dispatchable`, `up`; per proxy the
//! decisions, the wait queue (qcur), rejections, 502s (hrsp_5xx), re-dispatches
//! (wredis) and metric sync. Hot paths touch only pre-created atomics.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

type Labels = Vec<(String, String)>;

pub struct Backend {
    pub active: Gauge,
    pub served: Counter,
    pub errors: Counter,
    pub migrations: Counter,
    pub dispatchable: Gauge,
    pub up: Gauge,
    /// The limit on requests in flight in force (0: no limit), and the 503s past it.
    pub limit: Gauge,
    pub rejected_limit: Counter,
}

pub struct Stats {
    pub registry: Registry,
    pub backends: Vec<Backend>,
    pub requests: Counter,
    pub decisions: Counter,
    pub sessions_created: Counter,
    pub queued: Counter,
    pub queue_length: Gauge,
    pub queue_left: Counter,
    pub rejected_queue_full: Counter,
    pub rejected_queue_timeout: Counter,
    pub rejected_no_backend: Counter,
    pub rejected_limit: Counter,
    pub bad_gateway: Counter,
    pub gateway_timeout: Counter,
    pub truncated: Counter,
    pub client_aborted: Counter,
    pub client_timeouts: Counter,
    pub not_forwarded: Counter,
    pub redispatches: Counter,
    pub sync_messages: Counter,
    pub sync_datagrams: Counter,
    pub sync_wire_bytes: Counter,
    pub sync_model_bytes: Counter,
    pub sync_received: Counter,
    pub sync_bad: Counter,
}

impl Stats {
    pub fn new(backends: &[String]) -> Stats {
        let mut registry = Registry::with_prefix("tierlab_proxy");
        let gauge_family = |registry: &mut Registry, name: &str, help: &str| {
            let f: Family<Labels, Gauge> = Family::default();
            registry.register(name, help, f.clone());
            f
        };
        let counter_family = |registry: &mut Registry, name: &str, help: &str| {
            let f: Family<Labels, Counter> = Family::default();
            registry.register(name, help, f.clone());
            f
        };
        let active = gauge_family(
            &mut registry,
            "backend_active",
            "requests in progress at the backend (scur)",
        );
        let served = counter_family(
            &mut registry,
            "backend_served",
            "responses relayed completely",
        );
        let errors = counter_family(
            &mut registry,
            "backend_errors",
            "refused connections, lost requests, truncated responses",
        );
        let migrations = counter_family(
            &mut registry,
            "backend_migrations",
            "session requests served here, away from their home",
        );
        let dispatchable = gauge_family(
            &mut registry,
            "backend_dispatchable",
            "1 if the policy judges the backend lightly loaded",
        );
        let up = gauge_family(
            &mut registry,
            "backend_up",
            "1 unless the backend refused a connection within the health retry interval",
        );
        let limit = gauge_family(
            &mut registry,
            "backend_limit",
            "the limit on requests in flight at the backend (0: none)",
        );
        let rejected_limit_per = counter_family(
            &mut registry,
            "backend_rejected_limit",
            "503: placed on the backend while it held its limit of requests in flight",
        );
        let backends = backends
            .iter()
            .map(|b| {
                let l = vec![("backend".to_string(), b.clone())];
                Backend {
                    active: active.get_or_create(&l).clone(),
                    served: served.get_or_create(&l).clone(),
                    errors: errors.get_or_create(&l).clone(),
                    migrations: migrations.get_or_create(&l).clone(),
                    dispatchable: dispatchable.get_or_create(&l).clone(),
                    up: up.get_or_create(&l).clone(),
                    limit: limit.get_or_create(&l).clone(),
                    rejected_limit: rejected_limit_per.get_or_create(&l).clone(),
                }
            })
            .collect();
        let mut counter = |name: &str, help: &str| {
            let c = Counter::default();
            registry.register(name, help, c.clone());
            c
        };
        let requests = counter("requests", "requests received from clients");
        let decisions = counter("decisions", "times the policy was asked for a server");
        let sessions_created = counter("sessions_created", "first requests of sessions");
        let queued = counter("queued", "requests held in the wait queue (ReDAL-W)");
        let queue_left = counter("queue_left", "queued clients that disconnected");
        let rejected_queue_full = counter("rejected_queue_full", "503: the wait queue was full");
        let rejected_queue_timeout =
            counter("rejected_queue_timeout", "503: waited the queue timeout");
        let rejected_no_backend = counter("rejected_no_backend", "503: every backend was down");
        let rejected_limit = counter(
            "rejected_limit",
            "503: the chosen backend held its limit of requests in flight",
        );
        let bad_gateway = counter("bad_gateway", "502: sent to a backend that was lost");
        let gateway_timeout = counter("gateway_timeout", "504: the backend did not answer in time");
        let truncated = counter(
            "truncated",
            "responses cut off after their head (backend or client broke off)",
        );
        let client_aborted = counter(
            "client_aborted",
            "400: the client's request body broke off while being sent on",
        );
        let client_timeouts = counter(
            "client_timeouts",
            "408: the client's request body did not arrive within limits.body_timeout",
        );
        let not_forwarded = counter(
            "not_forwarded",
            "400/501: requests the proxy may not forward (Host missing, repeated or invalid; CONNECT)",
        );
        let redispatches = counter(
            "redispatches",
            "requests that never reached a backend, sent to another",
        );
        let sync_messages = counter(
            "sync_messages",
            "metric messages broadcast (as the simulator counts)",
        );
        let sync_datagrams = counter("sync_datagrams", "UDP datagrams sent to peers");
        let sync_wire_bytes = counter("sync_wire_bytes", "payload bytes of the datagrams sent");
        let sync_model_bytes = counter(
            "sync_model_bytes",
            "bytes of the messages as the ReDAL paper counts them",
        );
        let sync_received = counter("sync_received", "metric messages received from peers");
        let sync_bad = counter(
            "sync_bad",
            "datagrams received that were not metric messages",
        );
        let queue_length = Gauge::default();
        registry.register(
            "queue_length",
            "requests waiting now (qcur)",
            queue_length.clone(),
        );
        Stats {
            registry,
            backends,
            requests,
            decisions,
            sessions_created,
            queued,
            queue_length,
            queue_left,
            rejected_queue_full,
            rejected_queue_timeout,
            rejected_no_backend,
            rejected_limit,
            bad_gateway,
            gateway_timeout,
            truncated,
            client_aborted,
            client_timeouts,
            not_forwarded,
            redispatches,
            sync_messages,
            sync_datagrams,
            sync_wire_bytes,
            sync_model_bytes,
            sync_received,
            sync_bad,
        }
    }

    /// Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }
}
