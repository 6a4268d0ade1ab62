//! What a simulation measures: the per-window time series (each kind of column
//! declared right beside the code that fills it), the request statistics, records and
//! Little's-law counters, and at the end the run summary. The engine calls in at its
//! events; the observer reads the resources' counters and never changes the simulation.

use std::collections::BTreeMap;

use trace::summary::{
    mean, rate, GcSummary, LinkSummary, Little, PoolSummary, ServerSummary, StationSummary,
    Summary, TierSummary, SCHEMA_VERSION,
};
use trace::{Output, Records, RequestStats, SeriesMeta, Status, TierColumns, TimeSeries};

use crate::cluster::Cluster;
use crate::model::{Control, Model};
use crate::pool::Pool;
use crate::session::Sessions;
use crate::state::{Req, Server, ServerStats};
use crate::station::Ps;
use crate::timeavg::TimeAvg;

/// What the observer sees of the simulation at one instant.
pub(crate) struct View<'a> {
    pub(crate) m: &'a Model,
    pub(crate) now: f64,
    pub(crate) servers: &'a mut [Server],
    pub(crate) links: &'a mut [Ps],
    pub(crate) clusters: &'a [Cluster],
    pub(crate) sessions: &'a mut Sessions,
}

/// A level integrated over the measured period, as a `TimeAvg` without its window
/// statistics: the requests in the system, read only at the end (Little's law), not per
/// window. Two updates per request; the same sums as a `TimeAvg`'s `total_area`.
#[derive(Default)]
struct Level {
    value: f64,
    last: f64,
    area: f64,
}

impl Level {
    #[inline]
    fn add(&mut self, now: f64, delta: f64) {
        self.area += self.value * (now - self.last);
        self.last = now;
        self.value += delta;
    }

    fn start_measuring(&mut self, now: f64) {
        self.add(now, 0.0);
        self.area = 0.0;
    }

    /// Integral over the measured period, up to now.
    fn total_area(&mut self, now: f64) -> f64 {
        self.add(now, 0.0);
        self.area
    }
}

pub(crate) struct Observer {
    /// After the warm-up: requests, visits and dispatches count from then on.
    pub(crate) measuring: bool,
    requests: RequestStats,
    /// Requests in the system, and the measured ones' count and total time (Little).
    in_system: Level,
    little_count: u64,
    little_time: f64,
    series: TimeSeries,
    window_start: f64,
    /// Windows closed that started after the warm-up.
    measured_windows: u64,
    records: Option<Records>,
}

impl Observer {
    pub(crate) fn new(m: &Model) -> Self {
        Observer {
            measuring: false,
            requests: RequestStats::new(m.types.len()),
            in_system: Level::default(),
            little_count: 0,
            little_time: 0.0,
            // Every window of the run's horizon, and one more against rounding.
            series: TimeSeries::with_room(
                columns(m),
                (m.run.duration / m.run.window).ceil() as usize + 1,
            ),
            window_start: 0.0,
            measured_windows: 0,
            records: m.run.records.then(|| Records {
                tiers: m.tiers.iter().map(|_| TierColumns::default()).collect(),
                ..Default::default()
            }),
        }
    }

    #[inline]
    pub(crate) fn request_started(&mut self, now: f64, ty: usize) {
        self.in_system.add(now, 1.0);
        if self.measuring {
            self.requests.sent(ty); // unfinished until it finishes (summary.requests)
        }
    }

    /// A request finished with `status`; a measured one is counted and recorded.
    #[inline(always)]
    pub(crate) fn request_finished(&mut self, now: f64, r: &Req, s: &Sessions, status: Status) {
        self.in_system.add(now, -1.0);
        if !r.measured {
            return;
        }
        let rt = now - r.start;
        self.little_count += 1;
        self.little_time += rt;
        self.requests.record(r.ty as usize, status, rt);
        if let Some(rec) = &mut self.records {
            write_record(rec, now, r, s, status);
        }
    }

    /// The warm-up ends: statistics over the measured period start now.
    pub(crate) fn start_measuring(&mut self, v: &mut View) {
        let now = v.now;
        self.measuring = true;
        self.in_system.start_measuring(now);
        for sv in v.servers.iter_mut() {
            for st in &mut sv.stations {
                st.busy().start_measuring(now);
            }
            for p in &mut sv.pools {
                p.start_measuring(now);
            }
        }
        for l in v.links.iter_mut() {
            l.busy.start_measuring(now);
        }
        v.sessions.start_measuring();
    }

    /// Close the monitoring window that ends now: one row of the series.
    pub(crate) fn close_window(&mut self, v: &mut View) {
        let (now, start) = (v.now, self.window_start);
        let len = now - start;
        // As the analyses select the series' measured windows: by their start.
        let measured = start >= v.m.run.warmup;
        self.measured_windows += measured as u64;
        let row = &mut self.series.values;
        for sv in v.servers.iter_mut() {
            row.extend(server_window(&mut sv.stats, now, len));
            for st in &mut sv.stations {
                row.extend(station_window(st.busy(), now, len));
            }
            for p in &mut sv.pools {
                row.extend(pool_window(p, now, len, measured));
            }
        }
        for l in v.links.iter_mut() {
            row.extend(station_window(&mut l.busy, now, len));
        }
        if let Some(c) = &v.m.control {
            row.extend(control_window(c, v.m, v.servers));
        }
        self.series.window_start.push(start);
        self.window_start = now;
    }

    /// The series' columns, and the row of the window closed last.
    pub(crate) fn columns(&self) -> &[SeriesMeta] {
        &self.series.meta
    }

    pub(crate) fn last_row(&self) -> &[f64] {
        let n = self.series.meta.len();
        &self.series.values[self.series.values.len() - n..]
    }

    /// The trace: the last (partial) window closed, the summary built.
    pub(crate) fn finish(&mut self, mut v: View, interrupted: bool, events: u64) -> Output {
        let now = v.now;
        if now > self.window_start {
            self.close_window(&mut v);
        }
        let m = v.m;
        let span = (now - m.run.warmup).max(0.0);
        let per_s = |x: f64| rate(x, span);
        let type_names: Vec<String> = m.types.iter().map(|t| t.name.clone()).collect();
        let overall = self.requests.overall();
        let summary = Summary {
            source: "simulation".into(),
            schema_version: SCHEMA_VERSION,
            window: m.run.window,
            seed: m.run.seed,
            duration: m.run.duration,
            warmup: m.run.warmup,
            measured_seconds: span,
            interrupted,
            missing: BTreeMap::new(),
            requests: overall.counts(),
            throughput: per_s(overall.status[Status::Ok as usize] as f64),
            response_time: overall.latency.percentiles(),
            types: self.requests.types(&type_names, per_s),
            tiers: tiers(&mut v, per_s, self.measured_windows),
            links: m
                .links
                .iter()
                .zip(v.links.iter_mut())
                .map(|(spec, l)| {
                    let utilization = per_s(l.busy.total_area(now));
                    (spec.name.clone(), LinkSummary { utilization })
                })
                .collect(),
            sessions: v.sessions.summary(per_s(1.0)),
            little: Little {
                mean_in_system: per_s(self.in_system.total_area(now)),
                arrival_rate: per_s(self.little_count as f64),
                mean_time_in_system: mean(self.little_time, self.little_count),
            },
            simulated_until: Some(now),
            events: Some(events),
            elapsed: None,
            target: None,
            errors: None,
            bytes_received: None,
            reconnects: None,
            control: None, // the engine's, from its controller
        };
        Output {
            summary,
            series: std::mem::take(&mut self.series),
            records: self.records.take(),
            type_names,
            tier_names: m.tiers.iter().map(|t| t.name.clone()).collect(),
        }
    }
}

// ---- the series' columns: per kind, the metric names beside the values ------------

const SERVER_METRICS: [&str; 4] = ["concurrency", "arrivals", "completions", "response_time"];

fn server_window(s: &mut ServerStats, now: f64, len: f64) -> [f64; SERVER_METRICS.len()] {
    // 0/0 is NaN: a window without completions has no response time.
    let response_time = s.residence / s.completions as f64;
    let row = [
        s.concurrency.close_window(now, len).0,
        s.arrivals as f64,
        s.completions as f64,
        response_time,
    ];
    (s.arrivals, s.completions, s.residence) = (0, 0, 0.0);
    row
}

/// Stations (CPU, disk) and shared links.
const STATION_METRICS: [&str; 1] = ["utilization"];

fn station_window(busy: &mut TimeAvg, now: f64, len: f64) -> [f64; STATION_METRICS.len()] {
    [busy.close_window(now, len).0]
}

const POOL_METRICS: [&str; 6] = [
    "busy",
    "busy_max",
    "queued",
    "rejected",
    "dropped",
    "handing_off",
];

fn pool_window(p: &mut Pool, now: f64, len: f64, measured: bool) -> [f64; POOL_METRICS.len()] {
    let (busy, busy_max) = p.busy.close_window(now, len);
    if measured && busy_max >= p.size() as f64 {
        p.pinned_windows += 1;
    }
    [
        busy,
        busy_max,
        p.queue.close_window(now, len).0,
        p.rejected.take_window(),
        p.dropped.take_window(),
        p.handing_off.close_window(now, len).0,
    ]
}

/// An online controller's tier: the size in force during the window of each pool it
/// re-sizes (alike on every server; read on the first).
fn control_window<'a>(
    c: &'a Control,
    m: &'a Model,
    servers: &'a [Server],
) -> impl Iterator<Item = f64> + 'a {
    let first = servers
        .iter()
        .find(|s| s.tier == c.tier)
        .expect("a tier has a server");
    c.bounded_pools(m)
        .map(move |(_, p)| first.pools[p].size() as f64)
}

/// One measured request's row of the per-request records (out of the hot path's line:
/// most runs keep none).
fn write_record(rec: &mut Records, now: f64, r: &Req, s: &Sessions, status: Status) {
    rec.id.push(r.id);
    rec.session.push(s.id(r.session));
    rec.rtype.push(r.ty);
    rec.status.push(status as u8);
    rec.start.push(r.start);
    rec.end.push(now);
    rec.retransmissions.push(r.retransmissions);
    for (col, acc) in rec.tiers.iter_mut().zip(&r.tiers) {
        col.server.push(acc.server);
        col.visits.push(acc.visits);
        col.time.push(acc.time);
        for (c, v) in col.phases.iter_mut().zip(acc.phases) {
            c.push(v);
        }
        col.db_requests.push(acc.db_requests);
        col.db_queries.push(acc.db_queries);
        col.cpu_time.push(acc.cpu_time);
        col.pool_cpu_time.push(acc.pool_cpu_time);
        col.db_time.push(acc.db_time);
        // A caller runs no CPU while its call is out: the simulator's database
        // is never embedded in its caller's process.
        col.db_cpu_time.push(0.0);
    }
}

/// The series' columns, in the order `close_window` fills a row: per server (tiers in
/// order) its own metrics, its stations', its pools'; then the links'.
fn columns(m: &Model) -> Vec<SeriesMeta> {
    let mut out = Vec::new();
    let mut add = |tier: &str, server: usize, resource: &str, metrics: &[&'static str]| {
        out.extend(metrics.iter().map(|&metric| SeriesMeta {
            tier: tier.into(),
            server: server as u32,
            resource: resource.into(),
            metric,
        }))
    };
    for t in &m.tiers {
        for s in 0..t.servers {
            add(&t.name, s, "", &SERVER_METRICS);
            for st in &t.stations {
                add(&t.name, s, st.name(), &STATION_METRICS);
            }
            for p in &t.pools {
                add(&t.name, s, &p.name, &POOL_METRICS);
            }
        }
    }
    for l in &m.links {
        add("network", 0, &l.name, &STATION_METRICS);
    }
    if let Some(c) = &m.control {
        let tier = &m.tiers[c.tier].name;
        for (kind, _) in c.bounded_pools(m) {
            add(tier, 0, "control", &[kind.name()]);
        }
    }
    out
}

// ---- the summary's tiers ------------------------------------------------------------

/// `windows`: the measured monitoring windows.
fn tiers(
    v: &mut View,
    per_s: impl Fn(f64) -> f64 + Copy,
    windows: u64,
) -> BTreeMap<String, TierSummary> {
    let now = v.now;
    let mut out = BTreeMap::new();
    for (ti, t) in v.m.tiers.iter().enumerate() {
        let servers = v
            .servers
            .iter_mut()
            .filter(|sv| sv.tier == ti)
            .map(|sv| {
                let s = &sv.stats;
                ServerSummary {
                    visits: Some(s.visits),
                    throughput: Some(per_s(s.visits as f64)),
                    mean_residence: Some(mean(s.residence_total, s.visits)),
                    gc: Some(GcSummary {
                        pauses: s.gc_pauses,
                        pause_time: s.gc_time,
                    }),
                    stations: t
                        .stations
                        .iter()
                        .zip(&mut sv.stations)
                        .map(|(spec, st)| {
                            let s = StationSummary {
                                kind: spec.kind().into(),
                                utilization: per_s(st.busy().total_area(now)),
                            };
                            (spec.name().to_string(), s)
                        })
                        .collect(),
                    pools: t
                        .pools
                        .iter()
                        .zip(&mut sv.pools)
                        .map(|(spec, p)| {
                            let s = PoolSummary {
                                kind: spec.kind.name().into(),
                                size: spec.size,
                                mean_busy: per_s(p.busy.total_area(now)),
                                busy_max: p.busy.total_max(),
                                mean_queued: per_s(p.queue.total_area(now)),
                                acquired: p.acquired,
                                waited: p.waited,
                                timed_out: p.timed_out,
                                rejected: p.rejected.total,
                                dropped: p.dropped.total,
                                pinned: mean(p.pinned_windows as f64, windows),
                                mean_handing_off: per_s(p.handing_off.total_area(now)),
                            };
                            (spec.name.clone(), s)
                        })
                        .collect(),
                }
            })
            .collect();
        let tier = TierSummary {
            position: ti,
            servers,
            dispatch: Some(v.clusters[ti].summary()),
        };
        out.insert(t.name.clone(), tier);
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::Server;

    /// One server with a thread pool and a CPU (the model tests' valid model, its
    /// request one CPU step); measured from 2 s to 10 s in 4 s windows.
    fn model() -> Model {
        let mut m = crate::model::tests::valid();
        let exp = json!({"kind": "exponential", "mean": 0.01, "max": null});
        m["types"][0]["programs"] = json!([[{"op": "cpu", "station": 0, "demand": exp}]]);
        m["run"]["warmup"] = json!(2.0);
        m["run"]["window"] = json!(4.0);
        Model::from_json(&m.to_string()).expect("a valid model")
    }

    /// The state an engine would hold, without the engine: what the observer sees.
    struct World {
        m: Model,
        servers: Vec<Server>,
        clusters: Vec<Cluster>,
        sessions: Sessions,
    }

    impl World {
        fn view(&mut self, now: f64) -> View<'_> {
            View {
                m: &self.m,
                now,
                servers: &mut self.servers,
                links: &mut [],
                clusters: &self.clusters,
                sessions: &mut self.sessions,
            }
        }
    }

    /// The observer fed by hand: three requests on one server, X across the warm-up's
    /// end (1-3 s), Y measured (5-7 s, with the CPU busy), Z still in the system at the
    /// end (9 s-). Windows close at 4 and 8 s and at the end.
    #[test]
    fn the_observer_reads_its_view_in_closed_form() {
        let m = model();
        let mut w = World {
            servers: vec![Server::new(0, &m.tiers[0])],
            clusters: vec![Cluster::new(&m.tiers[0], 1).expect("a cluster")],
            sessions: Sessions::new(&m.workload, 0, 1),
            m,
        };
        let mut obs = Observer::new(&w.m);
        let req = |start: f64, measured: bool| Req {
            start,
            measured,
            ..Default::default()
        };
        let (x, y) = (req(1.0, false), req(5.0, true));
        // X: started in the warm-up, its visit ends after it.
        obs.request_started(1.0, 0);
        w.servers[0].stats.enter(1.0);
        obs.start_measuring(&mut w.view(2.0));
        w.servers[0].stats.leave(3.0, 1.0, true);
        obs.request_finished(3.0, &x, &w.sessions, Status::Ok);
        obs.close_window(&mut w.view(4.0));
        // Y: measured, 2 s at the server, the CPU busy throughout.
        obs.request_started(5.0, 0);
        w.servers[0].stats.enter(5.0);
        w.servers[0].stations[0].busy().add(5.0, 1.0);
        w.servers[0].stations[0].busy().add(7.0, -1.0);
        w.servers[0].stats.leave(7.0, 5.0, true);
        obs.request_finished(7.0, &y, &w.sessions, Status::Ok);
        obs.close_window(&mut w.view(8.0));
        // Z: sent, never finished.
        obs.request_started(9.0, 0);
        w.servers[0].stats.enter(9.0);
        let out = obs.finish(w.view(10.0), false, 0);

        // The series: per window the server's (concurrency, arrivals, completions,
        // response time), the CPU's utilization, the pool's six (all idle).
        let cols: Vec<_> = out
            .series
            .meta
            .iter()
            .map(|c| (c.resource.as_str(), c.metric))
            .collect();
        assert_eq!(cols.len(), 4 + 1 + 6);
        assert_eq!(cols[4], ("cpu", "utilization"));
        assert_eq!(out.series.window_start, [0.0, 4.0, 8.0]);
        let rows: Vec<&[f64]> = out.series.values.chunks(cols.len()).collect();
        assert_eq!(rows[0][..5], [0.5, 1.0, 1.0, 2.0, 0.0]);
        assert_eq!(rows[1][..5], [0.5, 1.0, 1.0, 2.0, 0.5]);
        // The last window is 2 s long, Z there for 1 s of it; nothing completed.
        assert_eq!(rows[2][..3], [0.5, 1.0, 0.0]);
        assert!(rows[2][3].is_nan(), "no completion, no response time");

        // The summary over the measured 8 s.
        let s = &out.summary;
        assert_eq!(s.measured_seconds, 8.0);
        assert_eq!(
            (s.requests.ok, s.requests.unfinished),
            (1, 1),
            "Y served, Z not"
        );
        assert_eq!(s.throughput, 1.0 / 8.0);
        let sv = &s.tiers["app"].servers[0];
        // X's visit ended in the measured period: counted with Y's, 2 s each.
        assert_eq!((sv.visits, sv.mean_residence), (Some(2), Some(2.0)));
        assert_eq!(sv.stations["cpu"].utilization, 2.0 / 8.0);
        // Little: X 1 s, Y 2 s and Z 1 s in the system over 8 s; Y the one measured.
        assert_eq!(s.little.mean_in_system, 4.0 / 8.0);
        assert_eq!(s.little.arrival_rate, 1.0 / 8.0);
        assert_eq!(s.little.mean_time_in_system, 2.0);
    }
}
