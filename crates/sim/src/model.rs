//! The engine's input: a fully resolved model (names already turned into indices by
//! the Python compiler, which also did the user-facing validation). `Model::check`
//! re-verifies the invariants the engine relies on, so a hand-written JSON gets an
//! error, not a panic.

use policy::Policy;
use serde::Deserialize;
use workload::dist::Dist;
use workload::spec::{StateRole, Workload};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    pub tiers: Vec<Tier>,
    #[serde(default)]
    pub links: Vec<Link>,
    pub types: Vec<RequestType>,
    pub workload: Workload,
    pub run: Run,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tier {
    pub name: String,
    pub servers: usize,
    pub dispatch: Dispatcher,
    /// Sessions keep state in this tier's servers: each has a home server, and a
    /// request served elsewhere runs its programs' `Session` step (the fetch).
    #[serde(default)]
    pub stateful: bool,
    #[serde(default)]
    pub pools: Vec<Pool>,
    #[serde(default)]
    pub stations: Vec<Station>,
    /// Stop-the-world garbage collection on each server; None = none.
    #[serde(default)]
    pub gc: Option<Gc>,
}

/// A JVM-like heap: CPU work allocates `allocation` MB per CPU-second; when `heap` MB
/// have been allocated, every CPU of the server stops for `pause` seconds plus
/// `per_request` per request in progress (live objects grow with concurrency).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gc {
    pub heap: f64,
    pub allocation: f64,
    pub pause: f64,
    pub per_request: f64,
}

impl Tier {
    /// The servers (tier-local indices) each dispatcher may use.
    pub fn blocks(&self) -> Vec<std::ops::Range<usize>> {
        let (k, n) = (self.dispatch.dispatchers, self.servers);
        (0..k)
            .map(|i| {
                if self.dispatch.hierarchical {
                    i * n / k..(i + 1) * n / k
                } else {
                    0..n
                }
            })
            .collect()
    }
}

/// How requests reach a tier's servers: `dispatchers` instances of one policy. The
/// caller's server i (or, at the entry tier, session i) uses dispatcher i mod K.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dispatcher {
    pub policy: Policy,
    pub dispatchers: usize,
    /// Hierarchical: dispatcher i owns the i-th block of servers; else all share all.
    pub hierarchical: bool,
    /// Seconds between exchanges of load metrics among sharing dispatchers, and how
    /// long a message takes to arrive.
    pub sync_interval: f64,
    pub sync_delay: f64,
    /// Waiting policies (ReDAL-W): queue capacity per dispatcher and wait limit.
    pub queue: usize,
    pub queue_timeout: f64,
}

/// What a pool's tokens are; it decides which request phase holding or waiting counts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PoolKind {
    Threads,
    Connections,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Discipline {
    Fifo,
    Priority,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pool {
    pub name: String,
    pub kind: PoolKind,
    pub size: u32,
    /// Seconds a request may wait for a token before it is rejected; None = forever.
    pub timeout: Option<f64>,
    /// Waiters beyond this are rejected at once; None = unbounded.
    pub max_queue: Option<u32>,
    pub discipline: Discipline,
    /// A full pool (e.g. an accept backlog) drops the attempt and the client
    /// retransmits; None = the request is rejected.
    #[serde(default)]
    pub retransmit: Option<Retransmit>,
}

/// TCP SYN retransmission: the k-th retry comes `initial · 2^(k−1)` seconds after the
/// previous attempt; after `attempts` retries the request is rejected.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Retransmit {
    pub initial: f64,
    pub attempts: u32,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Station {
    /// Processor sharing over `cores`; with n jobs each progresses at
    /// min(1, cores/n) / (1 + Σ_j overhead[j]·(n−1)^(j+1)).
    Cpu {
        name: String,
        cores: u32,
        overhead: Vec<f64>,
    },
    /// FCFS with `channels` servers; each access misses the cache with probability
    /// 1 − hit_ratio and then takes an exponential (or constant) 1/iops seconds.
    Disk {
        name: String,
        iops: f64,
        hit_ratio: f64,
        channels: u32,
        constant_service: bool,
    },
}

impl PoolKind {
    pub fn name(self) -> &'static str {
        match self {
            PoolKind::Threads => "threads",
            PoolKind::Connections => "connections",
            PoolKind::Other => "other",
        }
    }
}

impl Station {
    pub fn kind(&self) -> &'static str {
        match self {
            Station::Cpu { .. } => "cpu",
            Station::Disk { .. } => "disk",
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Station::Cpu { name, .. } | Station::Disk { name, .. } => name,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub name: String,
    /// Bytes per second.
    pub bandwidth: f64,
    pub delay: Dist,
    /// Shared: concurrent transfers divide the bandwidth (processor sharing);
    /// otherwise every transfer has the whole bandwidth (one link per client).
    pub shared: bool,
    /// Each segment of `mss` bytes is lost with probability `loss`; a loss costs one
    /// retransmission timeout `rto` on top of the transfer.
    #[serde(default)]
    pub loss: f64,
    #[serde(default = "default_mss")]
    pub mss: f64,
    #[serde(default)]
    pub rto: f64,
    /// Slow start: the first flight carries this many segments, each round trip
    /// doubles it (None: the whole transfer is one flight).
    #[serde(default)]
    pub initial_window: Option<f64>,
}

fn default_mss() -> f64 {
    1460.0
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestType {
    pub name: String,
    /// Lower is served first by `priority` pools.
    pub priority: i32,
    /// One step program per tier (None where the type never runs on that tier).
    pub programs: Vec<Option<Vec<Step>>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
pub enum Step {
    Acquire {
        pool: usize,
    },
    Release {
        pool: usize,
    },
    /// JDBC's getConnection(): reuse the token this visit has cached, else acquire one.
    Get {
        pool: usize,
    },
    /// Connection.close() on the pool's wrapper: the token stays cached, idle.
    Close {
        pool: usize,
    },
    /// Give a cached idle token back to its pool (end of a transaction-wide use).
    Drop {
        pool: usize,
    },
    Cpu {
        station: usize,
        demand: Dist,
    },
    Disk {
        station: usize,
        accesses: Dist,
    },
    Call {
        tier: usize,
    },
    Loop {
        count: Dist,
        body: Vec<Step>,
    },
    Delay {
        time: Dist,
    },
    Transfer {
        link: usize,
        bytes: Dist,
    },
    /// Load the session's state: runs `body` (the external-store fetch) only when the
    /// visit's server does not hold it.
    Session {
        body: Vec<Step>,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    pub duration: f64,
    pub warmup: f64,
    pub seed: u64,
    pub window: f64,
    pub records: bool,
}

impl Model {
    pub fn from_json(s: &str) -> Result<Model, String> {
        let m: Model = serde_json::from_str(s).map_err(|e| format!("engine model: {e}"))?;
        m.check()?;
        Ok(m)
    }

    fn check(&self) -> Result<(), String> {
        let nt = self.tiers.len();
        let fail = |what: String| Err(format!("engine model: {what}"));
        if nt == 0 || self.types.is_empty() {
            return fail("needs at least one tier and one request type".into());
        }
        for t in &self.tiers {
            if t.servers == 0 {
                return fail(format!("tier {}: servers must be ≥ 1", t.name));
            }
            if let Some(g) = &t.gc {
                if !(g.heap > 0.0 && g.allocation >= 0.0 && g.pause >= 0.0 && g.per_request >= 0.0)
                {
                    return fail(format!(
                        "tier {}: gc needs heap > 0 and non-negative rates",
                        t.name
                    ));
                }
            }
            let d = &t.dispatch;
            if d.dispatchers == 0 || (d.hierarchical && d.dispatchers > t.servers) {
                return fail(format!(
                    "tier {}: need 1 ≤ dispatchers (≤ servers if hierarchical)",
                    t.name
                ));
            }
            if !(d.sync_interval > 0.0 && d.sync_delay >= 0.0 && d.queue_timeout > 0.0) {
                return fail(format!(
                    "tier {}: sync_interval and queue_timeout > 0, sync_delay ≥ 0",
                    t.name
                ));
            }
            for b in t.blocks() {
                d.policy
                    .check(b.len())
                    .map_err(|e| format!("engine model: tier {}: {e}", t.name))?;
            }
        }
        for ty in &self.types {
            if ty.programs.len() != nt {
                return fail(format!(
                    "type {}: one program slot per tier expected",
                    ty.name
                ));
            }
            for (ti, prog) in ty.programs.iter().enumerate() {
                if let Some(p) = prog {
                    self.check_steps(ty, ti, p)?;
                }
            }
        }
        let w = &self.workload;
        if w.entry_tier >= nt {
            return fail("workload.entry_tier out of range".into());
        }
        let c = &w.chain;
        let ns = c.roles.len();
        if c.start >= ns || c.matrix.len() != ns || c.matrix.iter().any(|r| r.len() != ns) {
            return fail("workload.chain: matrix must be square over its states".into());
        }
        for role in &c.roles {
            if let StateRole::Request(t) = role {
                if *t >= self.types.len() || self.types[*t].programs[w.entry_tier].is_none() {
                    return fail(
                        "workload.chain: a state names a type with no entry-tier program".into(),
                    );
                }
            }
        }
        if self.links.iter().any(|l| {
            !(0.0..1.0).contains(&l.loss)
                || l.mss <= 0.0
                || l.rto < 0.0
                || l.initial_window.is_some_and(|w| w < 1.0)
        }) {
            return fail(
                "links: loss must be in [0, 1), mss > 0, rto ≥ 0 and initial_window ≥ 1".into(),
            );
        }
        if let Some(b) = &w.burst {
            if b.factor
                .iter()
                .chain(&b.leave)
                .any(|x| !(x.is_finite() && *x > 0.0))
            {
                return fail("workload.burst: factors and leave rates must be positive".into());
            }
        }
        let r = &self.run;
        if !(r.duration > 0.0 && r.warmup >= 0.0 && r.warmup < r.duration && r.window > 0.0) {
            return fail("run: need duration > warmup ≥ 0 and window > 0".into());
        }
        Ok(())
    }

    fn check_steps(&self, ty: &RequestType, tier: usize, steps: &[Step]) -> Result<(), String> {
        let t = &self.tiers[tier];
        for s in steps {
            let bad = match s {
                Step::Acquire { pool }
                | Step::Release { pool }
                | Step::Get { pool }
                | Step::Close { pool }
                | Step::Drop { pool } => *pool >= t.pools.len(),
                Step::Cpu { station, .. } => {
                    !matches!(t.stations.get(*station), Some(Station::Cpu { .. }))
                }
                Step::Disk { station, .. } => {
                    !matches!(t.stations.get(*station), Some(Station::Disk { .. }))
                }
                Step::Call { tier: callee } => ty.programs.get(*callee).is_none_or(|p| p.is_none()),
                Step::Transfer { link, .. } => *link >= self.links.len(),
                Step::Loop { body, .. } | Step::Session { body } => {
                    self.check_steps(ty, tier, body)?;
                    false
                }
                Step::Delay { .. } => false,
            };
            if bad {
                return Err(format!("engine model: type {}, tier {}: step {s:?} names something that does not exist", ty.name, t.name));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    /// A small valid engine model: one tier, one pool, one request type.
    fn valid() -> Value {
        let exp = json!({"kind": "exponential", "mean": 0.01, "max": null});
        json!({
            "tiers": [{
                "name": "app",
                "servers": 1,
                "dispatch": {
                    "policy": {"policy": "round_robin"}, "dispatchers": 1,
                    "hierarchical": false, "sync_interval": 0.05, "sync_delay": 0.0,
                    "queue": 10, "queue_timeout": 1.0,
                },
                "pools": [{
                    "name": "threads", "kind": "threads", "size": 4, "timeout": null,
                    "max_queue": null, "discipline": "fifo",
                }],
                "stations": [{"kind": "cpu", "name": "cpu", "cores": 1, "overhead": []}],
            }],
            "types": [{
                "name": "home",
                "priority": 0,
                "programs": [[
                    {"op": "acquire", "pool": 0},
                    {"op": "cpu", "station": 0, "demand": exp},
                    {"op": "release", "pool": 0},
                ]],
            }],
            "workload": {
                "entry_tier": 0,
                "population": {"kind": "closed", "clients": 2},
                "chain": {"roles": [{"kind": "request", "type": 0}], "start": 0, "matrix": [[1.0]]},
                "think": exp,
                "weight": {"kind": "constant", "value": 1.0},
                "end": {"kind": "chain"},
            },
            "run": {"duration": 10.0, "warmup": 1.0, "seed": 1, "window": 0.1, "records": false},
        })
    }

    /// The error for the valid model changed by `edit`.
    fn error(edit: impl FnOnce(&mut Value)) -> String {
        let mut m = valid();
        edit(&mut m);
        Model::from_json(&m.to_string()).expect_err("a bad model is refused")
    }

    #[test]
    fn a_valid_model_passes() {
        Model::from_json(&valid().to_string()).unwrap();
    }

    #[test]
    fn bad_models_get_an_error_naming_the_problem() {
        let e = error(|m| m["tiers"][0]["servers"] = json!(0));
        assert!(e.contains("tier app: servers must be ≥ 1"), "{e}");

        let e = error(|m| m["run"]["warmup"] = json!(10.0));
        assert!(e.contains("run: need duration > warmup"), "{e}");

        let e = error(|m| m["types"][0]["programs"][0][2]["pool"] = json!(1));
        assert!(
            e.contains("type home, tier app") && e.contains("Release { pool: 1 }"),
            "{e}"
        );

        let e = error(|m| m["workload"]["chain"]["matrix"] = json!([[1.0, 0.0]]));
        assert!(e.contains("workload.chain: matrix must be square"), "{e}");

        let e = error(|m| m["workload"]["chain"]["roles"][0]["type"] = json!(5));
        assert!(
            e.contains("a state names a type with no entry-tier program"),
            "{e}"
        );

        let e =
            error(|m| m["workload"]["burst"] = json!({"factor": [1.0, 0.0], "leave": [1.0, 1.0]}));
        assert!(e.contains("workload.burst"), "{e}");
    }

    #[test]
    fn unknown_fields_are_refused_by_name() {
        let e = error(|m| m["run"]["seeed"] = json!(2));
        assert!(e.contains("unknown field `seeed`"), "{e}");
    }
}
