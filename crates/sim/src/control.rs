//! The online controller in the engine's loop (the model's `control:`): every interval
//! (a whole number of monitoring windows) the tier's observation is read from the
//! windows the observer just closed and the requests that arrived and finished, the
//! controller (`crates/control`, the same object `tierlab control` drives live)
//! decides, and the engine re-sizes the tier's pools on every server. Nothing here
//! draws a random number or schedules an event: a run with control is as deterministic
//! as one without, and `static` changes nothing of it. The `twin` strategy is decided
//! outside the engine (in Python, where the twin is simulated): its controller is
//! handed over before the run (`hand_over`) and put through the same guards.

use std::collections::BTreeMap;

use control::{Controller, Latency, Observation, PoolKind as Kind, PoolObs};
use trace::summary::{ControlDecision, ControlSummary};
use trace::{SeriesMeta, Status};

use crate::model::{Control as Spec, Model, PoolKind, Step};
use crate::state::Server;

impl Spec {
    /// The kind of pool a bounded kind is in the engine model's terms.
    fn pool_kind(kind: Kind) -> PoolKind {
        match kind {
            Kind::Threads => PoolKind::Threads,
            Kind::Connections => PoolKind::Connections,
        }
    }

    /// The tier's pool of each bounded kind (its index), in the bounds' order.
    fn pools(&self, m: &Model) -> Vec<(Kind, Option<usize>)> {
        let t = &m.tiers[self.tier];
        self.bounds
            .keys()
            .map(|&k| (k, t.pools.iter().position(|p| p.kind == Self::pool_kind(k))))
            .collect()
    }

    /// Each bounded kind and the tier's pool of that kind, in the bounds' order.
    pub(crate) fn bounded_pools(&self, m: &Model) -> impl Iterator<Item = (Kind, usize)> {
        self.pools(m)
            .into_iter()
            .map(|(k, p)| (k, p.expect("checked: the tier has the pool")))
    }

    pub(crate) fn problem(&self, m: &Model) -> Option<(String, String)> {
        let bad = |path: &str, why: String| Some((format!("control.{path}"), why));
        let Some(t) = m.tiers.get(self.tier) else {
            return bad("tier", "out of range".into());
        };
        let spec = self.spec();
        if let Some((path, why)) = spec.problem() {
            return bad(&path, why);
        }
        let windows = self.interval / m.run.window;
        if windows.round() < 1.0 || (windows - windows.round()).abs() > 1e-9 * windows {
            let why = format!(
                "{} s is not a whole number of monitoring windows (run.window {} s)",
                self.interval, m.run.window
            );
            return bad("interval", why);
        }
        for (kind, pool) in self.pools(m) {
            let path = format!("bounds.{}", kind.name());
            let Some(p) = pool else {
                return bad(
                    &path,
                    format!("tier {} has no {} pool", t.name, kind.name()),
                );
            };
            let exclusive = m.types.iter().any(|ty| {
                ty.programs[self.tier]
                    .as_ref()
                    .is_some_and(|steps| takes_all(steps, p))
            });
            if exclusive {
                let why = format!(
                    "pool {} is taken whole (exclusive) by a step: it cannot be re-sized",
                    t.pools[p].name
                );
                return bad(&path, why);
            }
        }
        None
    }

    pub(crate) fn spec(&self) -> control::Spec {
        control::Spec {
            interval: self.interval,
            bounds: self.bounds.clone(),
            strategy: self.strategy.clone(),
            max_step: self.max_step,
            revert: self.revert,
            dwell: self.dwell,
        }
    }
}

/// Whether a step of `steps` (or nested in them) takes every token of pool `p`.
fn takes_all(steps: &[Step], p: usize) -> bool {
    steps.iter().any(|s| match s {
        Step::Acquire {
            pool,
            cost,
            exclusive,
        } => (*exclusive && *pool == p) || takes_all(cost, p),
        Step::Get { cost, .. } => takes_all(cost, p),
        Step::Loop { body, .. } | Step::Session { body } => takes_all(body, p),
        _ => false,
    })
}

/// A bounded pool: its kind, its index in the tier, and its columns of the series.
struct Controlled {
    kind: Kind,
    pool: usize,
    /// Per server of the tier: the (busy, queued, rejected) columns.
    columns: Vec<[usize; 3]>,
    /// Tokens granted on all the tier's servers up to the last decision.
    granted: u64,
}

pub(crate) struct Control {
    /// The strategy's controller, guarded; None until `hand_over` gives it where the
    /// strategy is decided outside the engine (twin).
    controller: Option<Box<dyn Controller>>,
    spec: control::Spec,
    tier_name: String,
    strategy: &'static str,
    /// The tier's servers, as global indices.
    servers: std::ops::Range<usize>,
    windows: u32,
    pools: Vec<Controlled>,
    /// The utilization columns of the tier's first CPU station, one per server.
    cpu: Vec<usize>,
    type_names: Vec<String>,
    // Over the interval so far: windows closed, the series' values summed, requests
    // arrived by type, finished by status, and the finished ones' response times.
    seen: u32,
    sums: Vec<f64>,
    arrived: Vec<u64>,
    finished: [u64; 4],
    times: Vec<f64>,
    decisions: Vec<ControlDecision>,
}

impl Control {
    /// `columns`: the series' columns, where the interval's windows are read.
    pub(crate) fn new(c: &Spec, m: &Model, columns: &[SeriesMeta], first_server: usize) -> Self {
        let t = &m.tiers[c.tier];
        let col = |server: usize, resource: &str, metric: &str| {
            columns
                .iter()
                .position(|x| {
                    x.tier == t.name
                        && x.server as usize == server
                        && x.resource == resource
                        && x.metric == metric
                })
                .expect("the observer has a column for every server's pool and station")
        };
        let pools = c
            .bounded_pools(m)
            .map(|(kind, p)| {
                let name = &t.pools[p].name;
                Controlled {
                    kind,
                    pool: p,
                    columns: (0..t.servers)
                        .map(|s| {
                            [
                                col(s, name, "busy"),
                                col(s, name, "queued"),
                                col(s, name, "rejected"),
                            ]
                        })
                        .collect(),
                    granted: 0,
                }
            })
            .collect();
        let cpu = t
            .stations
            .iter()
            .find(|s| s.kind() == "cpu")
            .map(|st| {
                (0..t.servers)
                    .map(|s| col(s, st.name(), "utilization"))
                    .collect()
            })
            .unwrap_or_default();
        let spec = c.spec();
        Control {
            controller: (!external(&spec)).then(|| control::build(&spec)),
            strategy: match spec.strategy {
                control::Strategy::Static => "static",
                control::Strategy::Gradient(_) => "gradient",
                control::Strategy::Twin(_) => "twin",
            },
            spec,
            tier_name: t.name.clone(),
            servers: first_server..first_server + t.servers,
            windows: (c.interval / m.run.window).round() as u32,
            pools,
            cpu,
            type_names: m.types.iter().map(|t| t.name.clone()).collect(),
            seen: 0,
            sums: vec![0.0; columns.len()],
            arrived: vec![0; m.types.len()],
            finished: [0; 4],
            times: Vec::new(),
            decisions: Vec::new(),
        }
    }

    /// The servers (global indices) whose pools the controller re-sizes.
    pub(crate) fn servers(&self) -> std::ops::Range<usize> {
        self.servers.clone()
    }

    #[inline]
    pub(crate) fn arrived(&mut self, ty: usize) {
        self.arrived[ty] += 1;
    }

    #[inline]
    pub(crate) fn finished(&mut self, status: Status, response_time: f64) {
        self.finished[status as usize] += 1;
        self.times.push(response_time);
    }

    /// A monitoring window closed at `now` with `row` its values: at the interval's end,
    /// the decision, as the (pool index, size) changes to apply on every server.
    pub(crate) fn window(
        &mut self,
        now: f64,
        row: &[f64],
        servers: &[Server],
    ) -> Vec<(usize, u32)> {
        for (s, v) in self.sums.iter_mut().zip(row) {
            *s += v;
        }
        self.seen += 1;
        if self.seen < self.windows {
            return Vec::new();
        }
        let o = self.observation(servers);
        let d = self
            .controller
            .as_mut()
            .expect("handed over before the run (Sim::with_controller)")
            .decide(&o);
        let changes: Vec<(usize, u32)> = self
            .pools
            .iter()
            .filter_map(|c| {
                let size = *d.sizes.get(&c.kind)?;
                (size != o.pools[&c.kind].size).then_some((c.pool, size))
            })
            .collect();
        self.decisions.push(ControlDecision {
            t: now,
            sizes: d
                .sizes
                .iter()
                .map(|(k, v)| (k.name().to_string(), *v))
                .collect(),
            changed: !changes.is_empty(),
            reason: d.reason,
        });
        self.seen = 0;
        self.sums.fill(0.0);
        self.arrived.fill(0);
        self.finished = [0; 4];
        self.times.clear();
        changes
    }

    /// The interval just ended, from the sums of its windows and its requests.
    fn observation(&mut self, servers: &[Server]) -> Observation {
        let interval = self.spec.interval;
        let (windows, n) = (f64::from(self.windows), self.servers.len() as f64);
        // A level's windows are means over equal windows: their mean is the interval's.
        let mean = |cols: &mut dyn Iterator<Item = usize>, sums: &[f64]| {
            cols.map(|c| sums[c]).sum::<f64>() / windows / n
        };
        let tier = &servers[self.servers.clone()];
        let mut pools = BTreeMap::new();
        for c in &mut self.pools {
            let granted: u64 = tier.iter().map(|s| s.pools[c.pool].granted).sum();
            let obs = PoolObs {
                size: tier[0].pools[c.pool].size(),
                busy: mean(&mut c.columns.iter().map(|x| x[0]), &self.sums),
                queued: mean(&mut c.columns.iter().map(|x| x[1]), &self.sums),
                // Counts per window summed: the interval's, per server.
                rejected: mean(&mut c.columns.iter().map(|x| x[2]), &self.sums) * windows,
                acquired: (granted - c.granted) as f64 / n,
            };
            c.granted = granted;
            pools.insert(c.kind, obs);
        }
        let arrived: u64 = self.arrived.iter().sum();
        let mix = if arrived == 0 {
            BTreeMap::new()
        } else {
            self.type_names
                .iter()
                .zip(&self.arrived)
                .map(|(name, k)| (name.clone(), *k as f64 / arrived as f64))
                .collect()
        };
        let ok = self.finished[Status::Ok as usize];
        let failed: u64 = self.finished.iter().sum::<u64>() - ok;
        Observation {
            interval,
            arrivals: arrived as f64 / interval,
            mix,
            throughput: ok as f64 / interval,
            errors: failed as f64 / interval,
            response_time: Latency::of(&mut self.times),
            pools,
            cpu: (!self.cpu.is_empty()).then(|| mean(&mut self.cpu.iter().copied(), &self.sums)),
        }
    }

    pub(crate) fn summary(self) -> ControlSummary {
        ControlSummary {
            strategy: self.strategy.into(),
            tier: self.tier_name,
            interval: self.spec.interval,
            decisions: self.decisions,
        }
    }
}

/// Whether the spec's strategy is decided outside the engine (and this crate): twin.
fn external(spec: &control::Spec) -> bool {
    matches!(spec.strategy, control::Strategy::Twin(_))
}

/// Give the model's controller (`c`) its strategy decided outside the engine, put
/// through the spec's guards (`control::guarded`): required where the model's strategy
/// is such (twin: Python's, `crates/py`), refused where it is the engine's own or the
/// model has no control.
pub(crate) fn hand_over(
    c: &mut Option<Control>,
    strategy: Option<Box<dyn Controller>>,
) -> Result<(), String> {
    let refuse =
        |why: &str| -> Result<(), String> { Err(format!("engine model: control.strategy: {why}")) };
    match (c, strategy) {
        (Some(c), Some(s)) if external(&c.spec) => {
            c.controller = Some(control::guarded(&c.spec, s));
            Ok(())
        }
        (Some(c), None) if external(&c.spec) => refuse(
            "the twin strategy is decided in Python: run the model through tierlab.simulate, which builds it",
        ),
        (_, Some(_)) => refuse(
            "a strategy was handed over, but the model's control is the engine's own (or there is none)",
        ),
        _ => Ok(()),
    }
}
