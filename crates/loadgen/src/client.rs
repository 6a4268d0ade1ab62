//! Emulated users: sessions walking the model's chain with think times, as a closed
//! population (N browsers, each starting a new session when one ends) or an open one
//! (sessions arriving as a Poisson process), optionally modulated by bursts, following
//! the workload's phases' session rates and chains (their added delays are refused:
//! `Config::from_json`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{sleep_until, timeout, Instant};
use workload::burst::Phases;
use workload::rng::{burst_streams, client_seed, session_seed, Stream, Streams};
use workload::spec::Population;
use workload::walk::{navigators, Navigator, Walk};

use crate::collect::{Collector, Done, Failure};
use crate::config::{Config, HttpRequest, Per};
use crate::http::{Browser, Outgoing};

/// What every task reads, and the counters the progress line shows.
pub struct Shared {
    pub cfg: Config,
    /// The chain of each workload phase that has one (`workload::walk::navigators`).
    navs: Vec<Navigator>,
    phases: Phases,
    /// The targets' addresses: `target`, then `also` (config order).
    addrs: Vec<SocketAddr>,
    pub t0: Instant,
    end: Instant,
    next_request: AtomicU64,
    next_session: AtomicU64,
    pub finished: AtomicU64,
    pub failed: AtomicU64,
    pub reconnects: AtomicU64,
    /// Taken when the run ends; sessions of an aborted arrival task may still finish a
    /// request on another worker after that, and record nothing: it counts as sent and
    /// unfinished.
    pub collector: Mutex<Option<Collector>>,
}

impl Shared {
    pub fn new(cfg: Config, addrs: Vec<SocketAddr>) -> Result<Self, String> {
        let collector = Collector::new(cfg.type_names.len(), cfg.warmup, cfg.window, cfg.records);
        let t0 = Instant::now();
        Ok(Shared {
            navs: navigators(&cfg.workload),
            phases: Phases::new(cfg.workload.burst.as_ref()),
            end: t0 + Duration::from_secs_f64(cfg.duration),
            cfg,
            addrs,
            t0,
            next_request: AtomicU64::new(0),
            next_session: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            collector: Mutex::new(Some(collector)),
        })
    }

    /// Session `sid`'s target: its address and its `host:port` (the Host header).
    fn entry(&self, sid: u64) -> (SocketAddr, &str) {
        let i = (sid % self.addrs.len() as u64) as usize;
        let host = if i == 0 {
            &self.cfg.target
        } else {
            &self.cfg.also[i - 1]
        };
        (self.addrs[i], host)
    }

    fn record(&self, f: impl FnOnce(&mut Collector)) {
        if let Some(c) = self
            .collector
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            f(c);
        }
    }

    /// Requests sent so far, warm-up included (finished or not).
    pub fn sent(&self) -> u64 {
        self.next_request.load(Relaxed)
    }

    fn since_start(&self, t: Instant) -> f64 {
        (t - self.t0).as_secs_f64()
    }

    /// The chain in force `t` seconds into the run: a session's next step follows it.
    fn nav(&self, t: f64) -> &Navigator {
        &self.navs[self.cfg.workload.chain_at(t)]
    }
}

/// Spawn the population's tasks onto the current runtime.
pub fn start(sh: &Arc<Shared>) -> tokio::task::JoinSet<()> {
    let mut tasks = tokio::task::JoinSet::new();
    let phase = bursts(sh, &mut tasks);
    match sh.cfg.workload.population {
        Population::Closed { clients } => {
            for i in 0..clients {
                let (sh, phase) = (sh.clone(), phase.clone());
                tasks.spawn(async move {
                    let mut rng = Streams::new(client_seed(sh.cfg.seed, i as u64));
                    let mut browser = Browser::default();
                    while session(&sh, &mut rng, &mut browser, phase.clone(), None).await {}
                });
            }
        }
        Population::Open { session_rate } => {
            let sh = sh.clone();
            let spawner = tasks.spawn(async move { arrivals(sh, session_rate, phase).await });
            drop(spawner);
        }
    }
    tasks
}

/// The burst phase as a watch channel, switched by its own task (MMPP: exponential
/// sojourns, started in the stationary distribution). Without bursts, phase 0 forever.
fn bursts(sh: &Arc<Shared>, tasks: &mut tokio::task::JoinSet<()>) -> watch::Receiver<usize> {
    let (phases, mut rng) = (sh.phases, burst_streams(sh.cfg.seed));
    if !phases.modulated() {
        return watch::channel(0).1;
    }
    let first = phases.start(&mut rng);
    let (tx, rx) = watch::channel(first);
    tasks.spawn(async move {
        let mut phase = first;
        loop {
            let sojourn = phases.sojourn(phase, &mut rng);
            tokio::time::sleep(Duration::from_secs_f64(sojourn)).await;
            phase ^= 1;
            if tx.send(phase).is_err() {
                return;
            }
        }
    });
    rx
}

/// Open population: sessions arrive as a Poisson process at the burst phase's rate; a
/// burst phase switch or a workload phase's new rate redraws the pending gap
/// (memoryless, so exact). The sessions are this task's children: aborting it aborts them.
async fn arrivals(sh: Arc<Shared>, mut rate: f64, mut phase: watch::Receiver<usize>) {
    let mut rng = Streams::new(sh.cfg.seed);
    let mut sessions = tokio::task::JoinSet::new();
    let gap = |rng: &mut Streams, phase: usize, rate: f64| -> Duration {
        Duration::from_secs_f64(sh.phases.arrival_gap(rate, phase, rng))
    };
    // The workload phases' rates, from their instants on (a Vec: an iterator's closure
    // held across the awaits would not make the task's future Send).
    let mut rates: Vec<(Instant, f64)> = Vec::new();
    for p in &sh.cfg.workload.phases {
        if let Some(r) = p.session_rate {
            rates.push((sh.t0 + Duration::from_secs_f64(p.at), r));
        }
    }
    let mut rates = rates.into_iter().peekable();
    let mut at = Instant::now() + gap(&mut rng, *phase.borrow(), rate);
    let mut arrived = 0u64;
    while at < sh.end {
        let next_rate = rates.peek().map_or(sh.end, |r| r.0);
        tokio::select! {
            _ = sleep_until(at) => {
                let (child, child_phase) = (sh.clone(), phase.clone());
                arrived += 1; // the n-th session draws from its own streams, whatever the timing
                let seed = sh.cfg.seed;
                sessions.spawn(async move {
                    let mut rng = Streams::new(session_seed(seed, arrived));
                    let arrival = Some((arrived, at));
                    session(&child, &mut rng, &mut Browser::default(), child_phase, arrival).await;
                });
                at += gap(&mut rng, *phase.borrow(), rate);
            }
            Ok(()) = phase.changed() => at = Instant::now() + gap(&mut rng, *phase.borrow_and_update(), rate),
            _ = sleep_until(next_rate), if next_rate < at => {
                rate = rates.next().expect("peeked").1;
                at = next_rate + gap(&mut rng, *phase.borrow(), rate);
            }
            Some(_) = sessions.join_next(), if !sessions.is_empty() => {}
        }
    }
    while sessions.join_next().await.is_some() {}
}

/// Think before the next request: the intended send time. Under bursts the think
/// clock runs at the phase's rate, so a phase switch rescales what is left.
async fn think(sh: &Shared, rng: &mut Streams, phase: &mut watch::Receiver<usize>) -> Instant {
    let mut current = *phase.borrow_and_update();
    let draw = sh.cfg.workload.think.sample(rng.get(Stream::Think));
    let mut wake = Instant::now() + Duration::from_secs_f64(draw / sh.phases.factor(current));
    loop {
        if wake <= Instant::now() {
            return wake; // no think time (or already late): no timer round trip
        }
        tokio::select! {
            _ = sleep_until(wake) => return wake,
            Ok(()) = phase.changed() => {
                let (now, from) = (Instant::now(), current);
                current = *phase.borrow_and_update();
                let left = wake.saturating_duration_since(now).as_secs_f64();
                wake = now + Duration::from_secs_f64(sh.phases.rescale(left, from, current));
            }
        }
    }
}

/// Run one session; false once the run's time is up. `arrival`: the session's number
/// among the arrivals and its first request's send time (open population) — None to
/// number it when it starts and think first (closed population). An open session's
/// number is its arrival's, as in the simulator, whatever order the tasks start in.
async fn session(
    sh: &Shared,
    rng: &mut Streams,
    browser: &mut Browser,
    mut phase: watch::Receiver<usize>,
    arrival: Option<(u64, Instant)>,
) -> bool {
    let w = &sh.cfg.workload;
    let sid = arrival.map_or_else(|| sh.next_session.fetch_add(1, Relaxed) + 1, |a| a.0);
    let arrived = arrival.map(|a| a.1);
    let mut walk = Walk::default();
    let start = arrived.unwrap_or_else(Instant::now);
    let now_s = sh.since_start(start);
    sh.nav(now_s)
        .begin(w, &mut walk, rng.get(Stream::Session), now_s);
    browser.new_session(sh.entry(sid).0);
    let mut values: Vec<String> = sh
        .cfg
        .values
        .iter()
        .map(|v| {
            if v.per == Per::Session {
                v.draw.sample(rng.get(Stream::Session))
            } else {
                String::new()
            }
        })
        .collect();
    sh.record(|c| c.session_started(now_s));
    let mut next = sh
        .nav(now_s)
        .first(w, &mut walk, rng.get(Stream::Navigation), now_s);
    let mut send_at = arrived;
    while let Some(ty) = next {
        let intended = match send_at.take() {
            Some(t) => t,
            None => think(sh, rng, &mut phase).await,
        };
        if intended >= sh.end {
            return false;
        }
        if intended > Instant::now() {
            sleep_until(intended).await; // (a past deadline would still wait for a timer tick)
        }
        for (v, slot) in sh.cfg.values.iter().zip(values.iter_mut()) {
            if v.per == Per::Request {
                *slot = v.draw.sample(rng.get(Stream::Demand));
            }
        }
        request(sh, browser, sid, ty, &values, intended).await;
        let now_s = sh.since_start(Instant::now());
        next = sh
            .nav(now_s)
            .next(w, &mut walk, rng.get(Stream::Navigation), now_s);
    }
    let now_s = sh.since_start(Instant::now());
    sh.record(|c| c.session_ended(now_s, walk.requests));
    true
}

/// The request target and body with this draw's values: the form goes into the body
/// of a POST, into the query otherwise.
fn render(spec: &HttpRequest, values: &[String]) -> (String, String) {
    let mut target = String::new();
    spec.path.render(values, &mut target);
    let mut form = String::new();
    for (name, value) in &spec.form {
        if !form.is_empty() {
            form.push('&');
        }
        form.push_str(name);
        form.push('=');
        value.render(values, &mut form);
    }
    if spec.method == "GET" || spec.method == "HEAD" {
        if !form.is_empty() {
            target.push(if target.contains('?') { '&' } else { '?' });
            target.push_str(&form);
        }
        form.clear();
    }
    (target, form)
}

async fn request(
    sh: &Shared,
    browser: &mut Browser,
    sid: u64,
    ty: usize,
    values: &[String],
    intended: Instant,
) {
    let spec = &sh.cfg.requests[ty];
    let id = sh.next_request.fetch_add(1, Relaxed) + 1;
    let (start, sent) = (sh.since_start(intended), sh.since_start(Instant::now()));
    if start >= sh.cfg.warmup {
        sh.record(|c| c.sent(ty));
    }
    let (target, body) = render(spec, values);
    let out = Outgoing {
        method: &spec.method,
        target: &target,
        body: body.as_bytes(),
        id,
        session: sid,
        rtype: &sh.cfg.type_names[ty],
    };
    let (before, retransmitted) = (browser.reconnects, browser.retransmissions);
    let result = timeout(
        Duration::from_secs_f64(sh.cfg.timeout),
        browser.fetch(sh.entry(sid).0, sh.entry(sid).1, &out),
    )
    .await
    .unwrap_or(Err(Failure::Timeout));
    sh.reconnects
        .fetch_add(browser.reconnects - before, Relaxed);
    let (failure, bytes) = match result {
        Ok(bytes) => (None, bytes),
        Err(f) => (Some(f), 0),
    };
    sh.finished.fetch_add(1, Relaxed);
    if failure.is_some() {
        sh.failed.fetch_add(1, Relaxed);
    }
    let end = sh.since_start(Instant::now());
    sh.record(|c| {
        c.request(Done {
            id,
            session: sid,
            rtype: ty,
            start,
            sent,
            end,
            failure,
            bytes,
            retransmissions: (browser.retransmissions - retransmitted) as u32,
        })
    });
}
