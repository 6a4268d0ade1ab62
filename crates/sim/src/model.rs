//! The engine's input: a fully resolved model (names already turned into indices by
//! the Python compiler, which also did the user-facing validation). `Model::check`
//! re-verifies the invariants the engine relies on, so a hand-written JSON gets an
//! error, not a panic.

use policy::Policy;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::Deserialize;
use workload::dist::Dist;
use workload::spec::{Chain, Population, SessionEnd, StateRole, Workload};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Model {
    pub tiers: Vec<Tier>,
    #[serde(default)]
    pub links: Vec<Link>,
    pub types: Vec<RequestType>,
    pub workload: Workload,
    pub run: Run,
    /// An online controller re-sizing a tier's pools every interval (`control.rs`).
    #[serde(default)]
    pub control: Option<Control>,
}

/// The model's `control:`: the controller's spec (`control::Spec`'s fields) and the
/// tier whose pools it re-sizes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Control {
    pub tier: usize,
    /// Seconds between two decisions: a whole number of monitoring windows.
    pub interval: f64,
    pub bounds: control::Bounds,
    pub strategy: control::Strategy,
    #[serde(default)]
    pub max_step: Option<u32>,
    #[serde(default)]
    pub revert: control::Revert,
    #[serde(default)]
    pub dwell: u32,
}

#[derive(Debug, Deserialize, JsonSchema)]
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
    #[schemars(length(max = MAX_POOLS))]
    pub pools: Vec<Pool>,
    #[serde(default)]
    pub stations: Vec<Station>,
    /// Stop-the-world garbage collection on each server; None = none.
    #[serde(default)]
    pub gc: Option<Gc>,
    /// An interpreter lock over each server's CPU stations (CPython's); None = none.
    #[serde(default)]
    pub interpreter_lock: Option<InterpreterLock>,
}

/// CPython's interpreter lock (`station::Lock`): one CPU step computes at a time; a
/// holder keeps the lock at most `switch_interval` seconds while others wait, and each
/// change of holder among waiting steps costs `handoff` seconds.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InterpreterLock {
    pub switch_interval: f64,
    #[serde(default)]
    pub handoff: f64,
}

/// A JVM-like heap: CPU work allocates `allocation` MB per CPU-second; when `heap` MB
/// have been allocated, every CPU of the server stops for `pause` seconds plus
/// `per_request` per request in progress (live objects grow with concurrency) plus
/// `per_request_squared` per request in progress squared (a crowded server: more live
/// objects, and less CPU left for the collector as it saturates).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Gc {
    pub heap: f64,
    pub allocation: f64,
    pub pause: f64,
    pub per_request: f64,
    #[serde(default)]
    pub per_request_squared: f64,
}

impl Gc {
    /// The pause of a collection with `in_progress` requests in the server.
    pub fn pause_at(&self, in_progress: f64) -> f64 {
        self.pause + (self.per_request + self.per_request_squared * in_progress) * in_progress
    }
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
#[derive(Debug, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PoolKind {
    Threads,
    Connections,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Discipline {
    Fifo,
    Priority,
}

#[derive(Debug, Deserialize, JsonSchema)]
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
    /// How a token given back reaches the waiter it is granted to (a thread woken,
    /// which must run before it takes it): free, and promised, meanwhile. None = at once.
    #[serde(default)]
    pub handoff: Option<Handoff>,
    #[serde(default)]
    pub hold: Hold,
}

/// Who holds a pool's token. A request's visit takes it by a step and gives it back by
/// another or when the visit ends. A session takes it before its first request enters
/// the tier and keeps it to the session's end, through its think times: a client's
/// keep-alive connection, of which a server holds at most so many (Tomcat's
/// `maxConnections`); a session without one waits in the pool's queue (the kernel's
/// accept queue) before anything of its request runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Hold {
    #[default]
    Request,
    Session,
}

/// A hand-off's length: drawn, or the woken waiter's own run on a CPU station.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Handoff {
    /// Seconds, whatever else runs.
    Delay(Dist),
    /// CPU seconds on the tier's `station`: under processor sharing the hand-off then
    /// lasts longer the more jobs compete for that CPU.
    Cpu { station: usize, demand: Dist },
}

/// TCP SYN retransmission: the k-th retry comes `initial · 2^(k−1)` seconds after the
/// previous attempt; after `attempts` retries the request is rejected.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Retransmit {
    pub initial: f64,
    pub attempts: u32,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Station {
    /// Processor sharing over `cores` of relative `speed`; with n jobs each progresses
    /// at speed · min(1, cores/n) / (1 + Σ_j overhead[j]·(n−1)^(j+1)).
    Cpu {
        name: String,
        cores: u32,
        #[serde(default = "one")]
        speed: f64,
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

#[derive(Debug, Deserialize, JsonSchema)]
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

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestType {
    pub name: String,
    /// Lower is served first by `priority` pools.
    pub priority: i32,
    /// One step program per tier (None where the type never runs on that tier).
    pub programs: Vec<Option<Vec<Step>>>,
}

/// A CPU step's demand × (1 + per · min(n, max)), n read from a pool of the step's tier
/// when the step starts (the pool's own bookkeeping, or a shared database's, growing with
/// the requests it serves or queues at once, up to where the growth levels off).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Contention {
    pub pool: usize,
    pub count: Counted,
    pub per: f64,
    #[serde(default = "no_cap")]
    pub max: u32,
}

fn no_cap() -> u32 {
    u32::MAX
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Counted {
    /// Tokens held by other requests.
    Busy,
    /// Requests queued for a token.
    Waiting,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
pub enum Step {
    /// Take a token; `cost` runs first (the pool's own work per acquisition, e.g.
    /// getConnection()/close()), with the visit counted as waiting for the pool.
    Acquire {
        pool: usize,
        #[serde(default)]
        cost: Vec<Step>,
        /// Take every token (a writer's hold on a readers–writer lock).
        #[serde(default)]
        exclusive: bool,
    },
    Release {
        pool: usize,
    },
    /// JDBC's getConnection(): reuse the token this visit has cached, else run `cost`
    /// and acquire one (a reused token costs nothing).
    Get {
        pool: usize,
        #[serde(default)]
        cost: Vec<Step>,
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
        /// Chen & Gorton's contention: the demand grows with a pool's count.
        #[serde(default)]
        contention: Option<Contention>,
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
        /// The wait grows with a pool's count, as a CPU step's demand does (e.g. a
        /// statement's round trip with the statements in service at the database).
        #[serde(default)]
        contention: Option<Contention>,
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

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Run {
    pub duration: f64,
    pub warmup: f64,
    pub seed: u64,
    pub window: f64,
    pub records: bool,
}

/// Servers per tier, and dispatchers: each is a structure allocated up front.
pub const MAX_SERVERS: usize = 1_000_000;
/// Pools per tier: a request's held pools are a 64-bit set.
pub const MAX_POOLS: usize = 64;

impl Model {
    pub fn from_json(s: &str) -> Result<Model, String> {
        let m: Model = serde_json::from_str(s).map_err(|e| format!("engine model: {e}"))?;
        m.check()?;
        Ok(m)
    }

    /// The JSON Schema (draft 2020-12) of the JSON `from_json` reads, derived from the
    /// types it deserializes, as JSON text: the contract the Python model compiler's
    /// output is checked against (the invariants of `check` beyond shapes and names
    /// are not in it).
    pub fn schema() -> String {
        let schema = SchemaSettings::draft2020_12()
            .for_deserialize()
            .into_generator()
            .into_root_schema_for::<Model>();
        serde_json::to_string_pretty(&schema).expect("a schema serializes")
    }

    /// Every invariant the engine relies on. An error reads `engine model: PATH: why`,
    /// PATH being the field of the model file (names, as the Python compiler gave
    /// them), so the bindings' caller can name it.
    pub fn check(&self) -> Result<(), String> {
        self.problem().map_or(Ok(()), |(path, why)| {
            Err(format!("engine model: {path}: {why}"))
        })
    }

    fn problem(&self) -> Option<(String, String)> {
        let nt = self.tiers.len();
        let bad = |path: &str, why: &str| Some((path.to_string(), why.to_string()));
        if nt == 0 || self.types.is_empty() {
            return bad("tiers", "needs at least one tier and one request type");
        }
        for t in &self.tiers {
            if let Some(p) = self.tier_problem(t) {
                return Some(p);
            }
        }
        for l in &self.links {
            let w = l.initial_window;
            if !(positive(l.bandwidth)
                && (0.0..1.0).contains(&l.loss)
                && positive(l.mss)
                && finite_non_negative(l.rto)
                && w.is_none_or(|w| w.is_finite() && w >= 1.0))
            {
                return bad(
                    &format!("links.{}", l.name),
                    "bandwidth and mss finite and > 0, loss in [0, 1), rto ≥ 0, initial_window ≥ 1",
                );
            }
            if let Err(e) = l.delay.check() {
                return Some((format!("links.{}.delay", l.name), e));
            }
        }
        for ty in &self.types {
            if ty.programs.len() != nt {
                return bad(
                    &format!("requests.{}", ty.name),
                    "one program slot per tier expected",
                );
            }
            for (ti, prog) in ty.programs.iter().enumerate() {
                if let Some(p) = prog {
                    let path = format!("requests.{}.{}", ty.name, self.tiers[ti].name);
                    if let Some(p) = self.steps_problem(ty, ti, p, &path) {
                        return Some(p);
                    }
                }
            }
        }
        if let Some(c) = &self.control {
            if let Some(p) = c.problem(self) {
                return Some(p);
            }
        }
        self.workload_problem()
            .or_else(|| self.session_pools_problem())
            .or_else(|| {
                let r = &self.run;
                let ok = positive(r.duration)
                    && finite_non_negative(r.warmup)
                    && r.warmup < r.duration
                    && positive(r.window);
                (!ok).then(|| {
                    (
                        "run".into(),
                        "need duration > warmup ≥ 0 and window > 0, all finite".into(),
                    )
                })
            })
    }

    fn tier_problem(&self, t: &Tier) -> Option<(String, String)> {
        let at = |field: &str| format!("tiers.{}{field}", t.name);
        if !(1..=MAX_SERVERS).contains(&t.servers) {
            return Some((
                at(".servers"),
                format!("servers must be in 1..={MAX_SERVERS}"),
            ));
        }
        if t.pools.len() > MAX_POOLS {
            return Some((at(".pools"), format!("at most {MAX_POOLS} pools per tier")));
        }
        if let Some(g) = &t.gc {
            if !(positive(g.heap)
                && finite_non_negative(g.allocation)
                && finite_non_negative(g.pause)
                && finite_non_negative(g.per_request)
                && finite_non_negative(g.per_request_squared))
            {
                return Some((
                    at(".gc"),
                    "gc needs heap > 0 and finite, non-negative rates".into(),
                ));
            }
        }
        if let Some(l) = &t.interpreter_lock {
            if !(positive(l.switch_interval) && finite_non_negative(l.handoff)) {
                return Some((
                    at(".interpreter_lock"),
                    "interpreter_lock needs switch_interval > 0 and a finite, non-negative handoff"
                        .into(),
                ));
            }
        }
        let d = &t.dispatch;
        if !(1..=MAX_SERVERS).contains(&d.dispatchers)
            || (d.hierarchical && d.dispatchers > t.servers)
        {
            let why = format!("need 1 ≤ dispatchers ≤ {MAX_SERVERS} (≤ servers if hierarchical)");
            return Some((at(".dispatch.dispatchers"), why));
        }
        if !(positive(d.sync_interval)
            && finite_non_negative(d.sync_delay)
            && positive(d.queue_timeout))
        {
            let why = "sync interval and queue timeout finite and > 0, sync delay finite and ≥ 0";
            return Some((at(".dispatch"), why.into()));
        }
        for b in t.blocks() {
            if let Err(e) = d.policy.check(b.len()) {
                return Some((at(".dispatch"), e));
            }
        }
        for p in &t.pools {
            let ok = p.size >= 1
                && p.timeout.is_none_or(finite_non_negative)
                && p.retransmit.is_none_or(|r| positive(r.initial));
            if !ok {
                let why = "size ≥ 1, timeout finite and ≥ 0, retransmit.initial finite and > 0";
                return Some((at(&format!(".pools.{}", p.name)), why.into()));
            }
            let handoff = match &p.handoff {
                None => Ok(()),
                Some(Handoff::Delay(d)) => d.check(),
                Some(Handoff::Cpu { station, demand }) => match t.stations.get(*station) {
                    Some(Station::Cpu { .. }) => demand.check(),
                    _ => Err("handoff.cpu.station: not a CPU station of the tier".into()),
                },
            };
            if let Err(e) = handoff {
                return Some((at(&format!(".pools.{}.handoff", p.name)), e));
            }
        }
        for s in &t.stations {
            let ok = match s {
                Station::Cpu {
                    cores,
                    speed,
                    overhead,
                    ..
                } => {
                    *cores >= 1
                        && positive(*speed)
                        && overhead.iter().all(|c| finite_non_negative(*c))
                }
                Station::Disk {
                    iops,
                    hit_ratio,
                    channels,
                    ..
                } => positive(*iops) && (0.0..=1.0).contains(hit_ratio) && *channels >= 1,
            };
            if !ok {
                let why = "cores/channels ≥ 1, speed finite and > 0, overhead finite and ≥ 0, iops finite and > 0, hit ratio in [0, 1]";
                return Some((at(&format!(".stations.{}", s.name())), why.into()));
            }
        }
        None
    }

    fn workload_problem(&self) -> Option<(String, String)> {
        let w = &self.workload;
        let bad = |path: &str, why: &str| Some((path.to_string(), why.to_string()));
        if w.entry_tier >= self.tiers.len() {
            return bad("workload.entry", "entry tier out of range");
        }
        if let Population::Open { session_rate } = w.population {
            if !positive(session_rate) {
                return bad("workload.population.session_rate", "must be finite and > 0");
            }
        }
        let dists = [("think", &w.think), ("session_weight", &w.weight)];
        let end = match &w.end {
            SessionEnd::Chain => None,
            SessionEnd::AfterRequests { count } => Some(("session_end.after_requests", count)),
            SessionEnd::AfterTime { duration, .. } => {
                Some(("session_end.after_time.duration", duration))
            }
        };
        for (field, d) in dists.into_iter().chain(end) {
            if let Err(e) = d.check() {
                return Some((format!("workload.{field}"), e));
            }
        }
        let c = &w.chain;
        if c.start >= c.roles.len() {
            return bad("workload.chain", "the start state is not a state");
        }
        for role in &c.roles {
            if let StateRole::Request(t) = role {
                if *t >= self.types.len() || self.types[*t].programs[w.entry_tier].is_none() {
                    return bad(
                        "workload.chain",
                        "a state names a type with no entry-tier program",
                    );
                }
            }
        }
        if let Some(why) = matrix_problem(c, &c.matrix) {
            return bad("workload.chain", why);
        }
        for (i, p) in w.phases.iter().enumerate() {
            let path = |field: &str| format!("workload.phases[{i}]{field}");
            let increasing = i == 0 || p.at > w.phases[i - 1].at;
            if !(finite_non_negative(p.at) && increasing) {
                return Some((path(".at"), "finite, ≥ 0 and increasing".into()));
            }
            if let Some(rate) = p.session_rate {
                if !positive(rate) || matches!(w.population, Population::Closed { .. }) {
                    let why = "an open population's rate, finite and > 0";
                    return Some((path(".session_rate"), why.into()));
                }
            }
            if let Some(why) = p.matrix.as_ref().and_then(|m| matrix_problem(c, m)) {
                return Some((path(".reweight"), why.into()));
            }
            for d in &p.delay {
                if d.tier >= self.tiers.len() || !finite_non_negative(d.seconds) {
                    let why = "a tier's delay, finite and ≥ 0";
                    return Some((path(".delay"), why.into()));
                }
            }
        }
        if let Some(b) = &w.burst {
            if b.factor.iter().chain(&b.leave).any(|x| !positive(*x)) {
                return bad(
                    "workload.burstiness",
                    "factors and leave rates must be finite and > 0",
                );
            }
        }
        None
    }

    /// A pool held by sessions is taken before a request enters its tier, which must be
    /// where sessions send their requests (the entry tier), of one server (so that the
    /// session's connection is to the server its next request reaches), with one such
    /// pool; and it is no step's to take (`steps_problem`).
    fn session_pools_problem(&self) -> Option<(String, String)> {
        for (ti, t) in self.tiers.iter().enumerate() {
            let held: Vec<&Pool> = t.pools.iter().filter(|p| p.hold == Hold::Session).collect();
            let Some(p) = held.first() else { continue };
            let at = format!("tiers.{}.pools.{}.hold", t.name, p.name);
            let why = if ti != self.workload.entry_tier {
                "a pool held by sessions belongs to the entry tier, where sessions connect"
            } else if t.servers != 1 {
                "a pool held by sessions needs a tier of one server (its sessions' connections to a cluster go through a proxy)"
            } else if held.len() > 1 {
                "one pool held by sessions per tier"
            } else if p.kind != PoolKind::Other {
                "a pool held by sessions is kind other: waiting for it is neither a thread's wait nor a database connection's"
            } else {
                continue;
            };
            return Some((at, why.into()));
        }
        None
    }

    fn steps_problem(
        &self,
        ty: &RequestType,
        tier: usize,
        steps: &[Step],
        path: &str,
    ) -> Option<(String, String)> {
        let t = &self.tiers[tier];
        for (i, s) in steps.iter().enumerate() {
            let at = format!("{path}[{i}]");
            let dist = match s {
                Step::Cpu { demand: d, .. }
                | Step::Disk { accesses: d, .. }
                | Step::Loop { count: d, .. }
                | Step::Delay { time: d, .. }
                | Step::Transfer { bytes: d, .. } => Some(d),
                _ => None,
            };
            if let Some(Err(e)) = dist.map(Dist::check) {
                return Some((at, e));
            }
            let bad = match s {
                Step::Acquire { pool, cost, .. } | Step::Get { pool, cost } => {
                    if let Some(p) = self.steps_problem(ty, tier, cost, &at) {
                        return Some(p);
                    }
                    !t.pools.get(*pool).is_some_and(|p| p.hold == Hold::Request)
                }
                Step::Release { pool } | Step::Close { pool } | Step::Drop { pool } => {
                    !t.pools.get(*pool).is_some_and(|p| p.hold == Hold::Request)
                }
                Step::Cpu {
                    station,
                    contention,
                    ..
                } => {
                    !matches!(t.stations.get(*station), Some(Station::Cpu { .. }))
                        || contention
                            .is_some_and(|c| c.pool >= t.pools.len() || !finite_non_negative(c.per))
                }
                Step::Disk { station, .. } => {
                    !matches!(t.stations.get(*station), Some(Station::Disk { .. }))
                }
                Step::Call { tier: callee } => ty.programs.get(*callee).is_none_or(|p| p.is_none()),
                Step::Transfer { link, .. } => *link >= self.links.len(),
                Step::Loop { body, .. } | Step::Session { body } => {
                    if let Some(p) = self.steps_problem(ty, tier, body, &at) {
                        return Some(p);
                    }
                    false
                }
                Step::Delay { contention, .. } => contention
                    .is_some_and(|c| c.pool >= t.pools.len() || !finite_non_negative(c.per)),
            };
            if bad {
                return Some((
                    at,
                    format!(
                        "step {s:?} names something that does not exist (or a pool sessions hold)"
                    ),
                ));
            }
        }
        None
    }
}

fn one() -> f64 {
    1.0
}

/// What is wrong with `matrix` as the transitions of chain `c` (its own or a phase's).
fn matrix_problem(c: &Chain, matrix: &[Vec<f64>]) -> Option<&'static str> {
    let ns = c.roles.len();
    if matrix.len() != ns || matrix.iter().any(|r| r.len() != ns) {
        return Some("the matrix must be square over its states");
    }
    if matrix.iter().flatten().any(|p| !finite_non_negative(*p)) {
        return Some("probabilities must be finite and ≥ 0");
    }
    for (role, row) in c.roles.iter().zip(matrix) {
        let walks_on = matches!(role, StateRole::Request(_) | StateRole::Entry);
        if walks_on && row.iter().sum::<f64>() <= 0.0 {
            return Some("every page and entry state needs a way out (a row with a positive sum)");
        }
    }
    if !c.request_reachable_in(matrix) {
        return Some(
            "no request state can be reached from the start state; sessions would issue nothing",
        );
    }
    None
}

fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

fn finite_non_negative(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

#[cfg(test)]
pub(crate) mod tests {
    use proptest::prelude::*;
    use serde_json::{json, Value};

    use super::*;

    /// A small valid engine model: one tier, one pool, one request type (also the
    /// observer's tests' model).
    pub(crate) fn valid() -> Value {
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
    fn a_pool_held_by_sessions_is_the_entry_tiers_alone() {
        fn with_clients(m: &mut Value) {
            let held = json!({"name": "clients", "kind": "other", "size": 5, "timeout": null,
                "max_queue": null, "discipline": "fifo", "hold": "session"});
            m["tiers"][0]["pools"].as_array_mut().unwrap().push(held);
        }
        let mut m = valid();
        with_clients(&mut m);
        Model::from_json(&m.to_string()).unwrap();
        type Edit = fn(&mut Value);
        let cases: [(Edit, &str); 3] = [
            (
                |m| m["tiers"][0]["servers"] = json!(2),
                "tiers.app.pools.clients.hold: a pool held by sessions needs a tier of one server",
            ),
            (
                |m| m["tiers"][0]["pools"][1]["kind"] = json!("threads"),
                "tiers.app.pools.clients.hold: a pool held by sessions is kind other",
            ),
            (
                |m| m["types"][0]["programs"][0][0]["pool"] = json!(1),
                "requests.home.app[0]: step Acquire",
            ),
        ];
        for (edit, want) in cases {
            let e = error(|m| {
                with_clients(m);
                edit(m)
            });
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn bad_models_get_an_error_naming_the_field() {
        type Edit = fn(&mut Value);
        let cases: [(Edit, &str); 12] = [
            (
                |m| m["tiers"][0]["servers"] = json!(0),
                "tiers.app.servers: servers must be in 1..=1000000",
            ),
            (
                |m| m["run"]["warmup"] = json!(10.0),
                "run: need duration > warmup",
            ),
            (
                |m| m["run"]["window"] = json!(0.0),
                "run: need duration > warmup ≥ 0 and window > 0",
            ),
            (
                |m| m["types"][0]["programs"][0][2]["pool"] = json!(1),
                "requests.home.app[2]: step Release { pool: 1 }",
            ),
            (
                |m| m["types"][0]["programs"][0][1]["demand"]["mean"] = json!(-1.0),
                "requests.home.app[1]: Exponential",
            ),
            (
                |m| m["workload"]["chain"]["matrix"] = json!([[1.0, 0.0]]),
                "workload.chain: the matrix must be square",
            ),
            (
                |m| m["workload"]["chain"]["roles"][0]["type"] = json!(5),
                "workload.chain: a state names a type with no entry-tier program",
            ),
            (
                |m| m["workload"]["burst"] = json!({"factor": [1.0, 0.0], "leave": [1.0, 1.0]}),
                "workload.burstiness: factors",
            ),
            (
                |m| {
                    m["workload"]["phases"] =
                        json!([{"at": 2.0, "matrix": [[1.0]]}, {"at": 1.0, "matrix": [[1.0]]}])
                },
                "workload.phases[1].at: finite, ≥ 0 and increasing",
            ),
            (
                |m| m["workload"]["phases"] = json!([{"at": 2.0, "session_rate": 3.0}]),
                "workload.phases[0].session_rate: an open population's rate",
            ),
            (
                |m| m["workload"]["phases"] = json!([{"at": 2.0, "matrix": [[0.0]]}]),
                "workload.phases[0].reweight: every page and entry state needs a way out",
            ),
            (
                |m| {
                    m["workload"]["phases"] =
                        json!([{"at": 2.0, "delay": [{"tier": 1, "seconds": 0.1}]}])
                },
                "workload.phases[0].delay: a tier's delay",
            ),
        ];
        for (edit, text) in cases {
            let e = error(edit);
            assert!(e.starts_with("engine model: ") && e.contains(text), "{e}");
        }
    }

    #[test]
    fn a_clock_that_stops_is_an_error_not_a_hang() {
        // Two clients with no think time, one thread that rejects at once: the second
        // is rejected and resends at the same instant, for ever.
        let mut m = valid();
        m["tiers"][0]["pools"][0]["size"] = json!(1);
        m["tiers"][0]["pools"][0]["timeout"] = json!(0.0);
        m["workload"]["think"] = json!({"kind": "constant", "value": 0.0});
        let Err(e) = crate::simulate(&m.to_string(), |_| true) else {
            panic!("a stopped clock is refused")
        };
        assert!(
            e.starts_with("engine model: workload.think: the simulated clock stopped at 0 s"),
            "{e}"
        );
        // The limit: 10⁶ + 16 per closed client, so the 1 000 033rd event at 0 s stops it.
        assert!(e.contains("(1000033 events at that instant)"), "{e}");
        // With a think time the same model runs.
        m["workload"]["think"] = json!({"kind": "constant", "value": 0.001});
        assert!(crate::simulate(&m.to_string(), |_| true).is_ok());
    }

    #[test]
    fn a_chain_that_never_reaches_a_request_is_refused() {
        // An entry start whose only way out is the end state: closed clients would
        // start empty sessions for ever at one instant.
        let e = error(|m| {
            m["workload"]["chain"] = json!({
                "roles": [{"kind": "entry"}, {"kind": "end"}, {"kind": "request", "type": 0}],
                "start": 0,
                "matrix": [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]],
            })
        });
        assert!(
            e.contains("workload.chain: no request state can be reached"),
            "{e}"
        );
    }

    /// The valid model with a field of every kind the engine reads: a disk, a link
    /// with its transfer, GC, bursts, a loop and a session-time end.
    fn rich() -> Value {
        let mut m = valid();
        let exp = json!({"kind": "exponential", "mean": 0.01, "max": 1.0});
        m["tiers"][0]["stations"].as_array_mut().unwrap().push(json!({
            "kind": "disk", "name": "disk", "iops": 100.0, "hit_ratio": 0.5, "channels": 2, "constant_service": false,
        }));
        m["tiers"][0]["gc"] =
            json!({"heap": 64.0, "allocation": 10.0, "pause": 0.05, "per_request": 0.001});
        m["links"] = json!([{
            "name": "lan", "bandwidth": 1e6, "delay": {"kind": "uniform", "low": 0.0, "high": 0.01},
            "shared": true, "loss": 0.01, "mss": 1460.0, "rto": 0.2, "initial_window": 3.0,
        }]);
        let body = json!([
            {"op": "disk", "station": 1, "accesses": {"kind": "lognormal", "mean": 2.0, "sd": 1.0}},
            {"op": "transfer", "link": 0, "bytes": {"kind": "empirical", "values": [100.0, 5000.0], "cumulative": [0.5, 1.0]}},
            {"op": "delay", "time": {"kind": "normal", "mean": 0.01, "sd": 0.005}},
        ]);
        m["types"][0]["programs"][0]
            .as_array_mut()
            .unwrap()
            .insert(2, json!({"op": "loop", "count": exp, "body": body}));
        m["workload"]["burst"] = json!({"factor": [5.0, 0.5], "leave": [1.0, 0.1]});
        m["workload"]["end"] = json!({"kind": "after_time", "duration": exp, "at_state": 0});
        m
    }

    /// JSON pointers to every number in `v`.
    fn numbers(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Number(_) => out.push(at),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .for_each(|(i, x)| numbers(x, format!("{at}/{i}"), out)),
            Value::Object(o) => o
                .iter()
                .for_each(|(k, x)| numbers(x, format!("{at}/{k}"), out)),
            _ => {}
        }
    }

    /// Any JSON number, with the edges (0, negatives, the extremes of f64, u64, i64)
    /// drawn often.
    fn any_number() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<f64>()
                .prop_filter("JSON numbers are finite", |x| x.is_finite())
                .prop_map(|x| json!(x)),
            any::<i64>().prop_map(|x| json!(x)),
            any::<u64>().prop_map(|x| json!(x)),
            prop::sample::select(vec![0.0, -1.0, 1e-300, 0.5, 1.0, 2.0, 1e308, f64::MAX])
                .prop_map(|x| json!(x)),
        ]
    }

    #[test]
    fn the_rich_model_is_valid() {
        Model::from_json(&rich().to_string()).unwrap();
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Arbitrary numbers anywhere in a valid model give Ok or an error, never a panic.
        #[test]
        fn any_numbers_give_ok_or_an_error_never_a_panic(
            edits in prop::collection::vec((any::<prop::sample::Index>(), any_number()), 1..5)
        ) {
            let mut m = rich();
            let mut leaves = Vec::new();
            numbers(&m, String::new(), &mut leaves);
            for (ix, x) in edits {
                *m.pointer_mut(&leaves[ix.index(leaves.len())]).unwrap() = x;
            }
            if let Err(e) = Model::from_json(&m.to_string()) {
                prop_assert!(e.starts_with("engine model: "), "{}", e);
            }
        }
    }

    /// Every condition of `Model::check` on its own: the rich model with one field
    /// out of range is refused with that field's path (and, where the edge is valid,
    /// the edge passes).
    #[test]
    fn each_invariant_is_checked_on_its_own() {
        type Edit = fn(&mut Value);
        let cases: Vec<(Edit, &str)> = vec![
            (|m| m["tiers"] = json!([]), "tiers: needs at least one tier"),
            (|m| m["types"] = json!([]), "tiers: needs at least one tier"),
            (
                |m| m["links"][0]["bandwidth"] = json!(0.0),
                "links.lan: bandwidth",
            ),
            (
                |m| m["links"][0]["loss"] = json!(1.0),
                "links.lan: bandwidth",
            ),
            (
                |m| m["links"][0]["mss"] = json!(0.0),
                "links.lan: bandwidth",
            ),
            (
                |m| m["links"][0]["rto"] = json!(-1.0),
                "links.lan: bandwidth",
            ),
            (
                |m| m["links"][0]["initial_window"] = json!(0.5),
                "links.lan: bandwidth",
            ),
            (
                |m| m["links"][0]["delay"]["low"] = json!(0.5),
                "links.lan.delay: Uniform",
            ),
            (
                |m| m["types"][0]["programs"] = json!([]),
                "requests.home: one program slot per tier",
            ),
            (
                |m| m["run"]["warmup"] = json!(-1.0),
                "run: need duration > warmup ≥ 0",
            ),
            (
                |m| m["tiers"][0]["gc"]["heap"] = json!(0.0),
                "tiers.app.gc: gc needs heap > 0",
            ),
            (
                |m| m["tiers"][0]["gc"]["allocation"] = json!(-1.0),
                "tiers.app.gc: gc",
            ),
            (
                |m| m["tiers"][0]["gc"]["pause"] = json!(-1.0),
                "tiers.app.gc: gc",
            ),
            (
                |m| m["tiers"][0]["gc"]["per_request"] = json!(-1.0),
                "tiers.app.gc: gc",
            ),
            (
                |m| m["tiers"][0]["dispatch"]["dispatchers"] = json!(0),
                "tiers.app.dispatch.dispatchers: need 1 ≤ dispatchers",
            ),
            (
                |m| {
                    m["tiers"][0]["dispatch"]["dispatchers"] = json!(2);
                    m["tiers"][0]["dispatch"]["hierarchical"] = json!(true);
                },
                "tiers.app.dispatch.dispatchers: need 1 ≤ dispatchers",
            ),
            (
                |m| m["tiers"][0]["dispatch"]["sync_interval"] = json!(0.0),
                "tiers.app.dispatch: sync interval",
            ),
            (
                |m| m["tiers"][0]["dispatch"]["sync_delay"] = json!(-1.0),
                "tiers.app.dispatch: sync interval",
            ),
            (
                |m| m["tiers"][0]["dispatch"]["queue_timeout"] = json!(0.0),
                "tiers.app.dispatch: sync interval",
            ),
            (
                |m| {
                    m["tiers"][0]["dispatch"]["policy"] =
                        json!({"policy": "round_robin", "weights": [1, 2]})
                },
                "tiers.app.dispatch: round_robin: 2 weights for 1 servers",
            ),
            (
                |m| m["tiers"][0]["pools"][0]["size"] = json!(0),
                "tiers.app.pools.threads: size ≥ 1",
            ),
            (
                |m| m["tiers"][0]["pools"][0]["timeout"] = json!(-1.0),
                "tiers.app.pools.threads: size ≥ 1",
            ),
            (
                |m| {
                    m["tiers"][0]["pools"][0]["retransmit"] = json!({"initial": 0.0, "attempts": 3})
                },
                "tiers.app.pools.threads: size ≥ 1",
            ),
            (
                |m| {
                    m["tiers"][0]["pools"][0]["handoff"] = json!({"cpu": {"station": 1, "demand": {"kind": "constant", "value": 0.001}}})
                },
                "tiers.app.pools.threads.handoff: handoff.cpu.station: not a CPU station",
            ),
            (
                |m| m["tiers"][0]["stations"][0]["cores"] = json!(0),
                "tiers.app.stations.cpu: cores",
            ),
            (
                |m| m["tiers"][0]["stations"][0]["overhead"] = json!([-1.0]),
                "tiers.app.stations.cpu: cores",
            ),
            (
                |m| m["tiers"][0]["stations"][1]["iops"] = json!(0.0),
                "tiers.app.stations.disk: cores",
            ),
            (
                |m| m["tiers"][0]["stations"][1]["hit_ratio"] = json!(1.5),
                "tiers.app.stations.disk: cores",
            ),
            (
                |m| m["tiers"][0]["stations"][1]["channels"] = json!(0),
                "tiers.app.stations.disk: cores",
            ),
            (
                |m| m["workload"]["entry_tier"] = json!(1),
                "workload.entry: entry tier out of range",
            ),
            (
                |m| m["workload"]["population"] = json!({"kind": "open", "session_rate": 0.0}),
                "workload.population.session_rate: must be finite and > 0",
            ),
            (
                |m| m["workload"]["think"] = json!({"kind": "constant", "value": -1.0}),
                "workload.think: Constant",
            ),
            (
                |m| m["workload"]["weight"] = json!({"kind": "constant", "value": -1.0}),
                "workload.session_weight: Constant",
            ),
            (
                |m| m["workload"]["end"]["duration"] = json!({"kind": "constant", "value": -1.0}),
                "workload.session_end.after_time.duration: Constant",
            ),
            (
                |m| {
                    m["workload"]["end"] = json!({"kind": "after_requests", "count": {"kind": "constant", "value": -1.0}})
                },
                "workload.session_end.after_requests: Constant",
            ),
            (
                |m| m["workload"]["chain"]["start"] = json!(1),
                "workload.chain: the start state is not a state",
            ),
            (
                |m| m["workload"]["chain"]["matrix"] = json!([[1.0, 0.0]]),
                "workload.chain: the matrix must be square",
            ),
            (
                |m| m["workload"]["chain"]["matrix"] = json!([[-1.0]]),
                "workload.chain: probabilities must be finite",
            ),
            (
                |m| m["types"][0]["programs"][0] = json!(null),
                "workload.chain: a state names a type with no entry-tier program",
            ),
            (
                |m| m["workload"]["chain"]["matrix"] = json!([[0.0]]),
                "workload.chain: every page and entry state needs a way out",
            ),
            (
                |m| m["workload"]["burst"] = json!({"factor": [1.0, 1.0], "leave": [1.0, 0.0]}),
                "workload.burstiness: factors",
            ),
            (
                |m| m["types"][0]["programs"][0][1]["station"] = json!(1),
                "requests.home.app[1]: step Cpu",
            ),
            (
                |m| m["types"][0]["programs"][0][2]["body"][0]["station"] = json!(0),
                "requests.home.app[2][0]: step Disk",
            ),
            (
                |m| m["types"][0]["programs"][0][2]["body"][1]["link"] = json!(1),
                "requests.home.app[2][1]: step Transfer",
            ),
            (
                |m| m["types"][0]["programs"][0][2]["body"][2]["time"]["sd"] = json!(-1.0),
                "requests.home.app[2][2]: Normal",
            ),
            (
                |m| m["types"][0]["programs"][0][2]["count"]["mean"] = json!(-1.0),
                "requests.home.app[2]: Exponential",
            ),
            (
                |m| m["types"][0]["programs"][0][0] = json!({"op": "call", "tier": 1}),
                "requests.home.app[0]: step Call { tier: 1 }",
            ),
        ];
        for (edit, text) in cases {
            let mut m = rich();
            edit(&mut m);
            let e = Model::from_json(&m.to_string()).expect_err(text);
            assert!(
                e.starts_with("engine model: ") && e.contains(text),
                "{e}\nwant {text}"
            );
        }
    }

    /// The edges that are valid stay valid.
    #[test]
    fn the_edges_of_each_range_pass() {
        type Edit = fn(&mut Value);
        let cases: [Edit; 7] = [
            |m| m["links"][0]["initial_window"] = json!(1.0),
            |m| m["tiers"][0]["stations"][1]["hit_ratio"] = json!(1.0),
            |m| m["tiers"][0]["pools"][0]["timeout"] = json!(0.0),
            |m| m["run"]["warmup"] = json!(0.0),
            |m| {
                // An end state issues nothing and needs no way out.
                m["workload"]["chain"] = json!({
                    "roles": [{"kind": "request", "type": 0}, {"kind": "end"}],
                    "start": 0, "matrix": [[0.5, 0.5], [0.0, 0.0]],
                })
            },
            |m| {
                m["tiers"][0]["servers"] = json!(2);
                m["tiers"][0]["dispatch"]["dispatchers"] = json!(2);
                m["tiers"][0]["dispatch"]["hierarchical"] = json!(true);
            },
            |m| {
                let p = m["tiers"][0]["pools"][0].clone();
                m["tiers"][0]["pools"] = Value::Array(vec![p; MAX_POOLS]);
            },
        ];
        for (i, edit) in cases.into_iter().enumerate() {
            let mut m = rich();
            edit(&mut m);
            if let Err(e) = Model::from_json(&m.to_string()) {
                panic!("case {i}: {e}");
            }
        }
        let mut m = rich();
        let p = m["tiers"][0]["pools"][0].clone();
        m["tiers"][0]["pools"] = Value::Array(vec![p; MAX_POOLS + 1]);
        let e = Model::from_json(&m.to_string()).unwrap_err();
        assert!(
            e.contains("tiers.app.pools: at most 64 pools per tier"),
            "{e}"
        );
    }

    #[test]
    fn unknown_fields_are_refused_by_name() {
        let e = error(|m| m["run"]["seeed"] = json!(2));
        assert!(e.contains("unknown field `seeed`"), "{e}");
    }
}
