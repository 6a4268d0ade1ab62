//! The dispatch point: one policy instance from `crates/policy`, called exactly as the
//! simulator calls it (crates/sim/src/cluster.rs) but with wall-clock seconds, plus
//! ReDAL-W's `WaitQueue`, backend health and the session table, all under one lock
//! (a decision is a few hundred nanoseconds; the lock is never held across I/O).
//!
//! A request leaves with a [`Lease`] on one backend; dropping the lease tells the
//! policy the request is done there (`done`) and tries the queued requests, as the
//! simulator's `dispatch_done` does. Nothing is dropped silently: every way out of
//! [`Dispatcher::acquire`] is counted.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use policy::{Dispatch, Metrics, Request, WaitQueue};
use tokio::sync::oneshot;

use crate::limit::Limit;
use crate::sessions::Sessions;
use crate::stats::Stats;

/// Seconds since an origin: the proxy's start, or a Unix time shared by peer proxies
/// so that their ReDAL slices line up.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: Instant,
    offset: f64,
}

impl Clock {
    pub fn new(origin_unix: Option<f64>) -> Clock {
        let offset = origin_unix.map_or(0.0, |o| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64())
                - o
        });
        Clock {
            start: Instant::now(),
            offset,
        }
    }

    pub fn now(&self) -> f64 {
        self.offset + self.start.elapsed().as_secs_f64()
    }

    /// The instant at which `now()` reaches `t`.
    fn instant(&self, t: f64) -> Instant {
        self.start + Duration::from_secs_f64((t - self.offset).max(0.0))
    }
}

/// Why a request got no backend (each answered 503 with Retry-After, and counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    QueueFull,
    QueueTimeout,
    NoBackend,
    /// The backend the policy chose holds its limit of requests in flight.
    Limit,
}

enum Ticket {
    Server(usize),
    Expired,
}

struct Waiter {
    id: u64,
    req: Request,
    tx: oneshot::Sender<Ticket>,
}

struct Inner {
    policy: Box<dyn Dispatch>,
    queue: WaitQueue<Waiter>,
    sessions: Sessions,
    /// Per backend: the time before which it counts as down (refused a connection).
    down_until: Vec<f64>,
    /// Per backend: types of the picks it got while down, still open with the policy.
    phantom: Vec<Vec<usize>>,
    phantoms: usize,
    next_waiter: u64,
    /// The per-backend limit on requests in flight, if configured.
    limit: Option<Limit>,
}

/// Picks per request at most, per backend, before every backend counts as down: a
/// load-aware policy may return to a down backend a few times before its phantom load
/// outweighs the live backends' real load.
const PICKS_PER_BACKEND: usize = 8;

pub struct Dispatcher {
    inner: Mutex<Inner>,
    pub clock: Clock,
    pub stats: Stats,
    retry: f64,
}

/// The placement of one request: which backend, whether the session migrated.
#[derive(Debug, Clone, Copy)]
pub struct Placement {
    pub server: usize,
    pub home: Option<usize>,
    pub migrated: bool,
    /// Seconds spent in the wait queue.
    pub queued: f64,
}

/// A request in progress at a backend; dropping it tells the policy it is done.
pub struct Lease {
    d: Arc<Dispatcher>,
    pub placement: Placement,
    ty: usize,
    session: u64,
    remember: bool,
    reached: bool,
    /// When it was placed, and whether the backend failed it (for the limit's controller).
    since: f64,
    failed: bool,
}

impl Lease {
    /// The request was written to the backend: the session's home moves there, and
    /// a new session or a migration is counted (not for a refused connection, which
    /// the request never crossed). Anonymous requests are no session.
    pub fn reached(&mut self) {
        if std::mem::replace(&mut self.reached, true) {
            return;
        }
        let (p, s) = (&self.placement, &self.d.stats);
        if p.migrated {
            s.backends[p.server].migrations.inc();
        }
        if self.remember {
            if p.home.is_none() {
                s.sessions_created.inc();
            }
            let now = self.d.clock.now();
            self.d.lock().sessions.set(self.session, p.server, now);
        }
    }

    /// The backend failed the request (refused the connection, lost it, timed out,
    /// broke off its response or answered 5xx): an error in the limit controller's
    /// observation.
    pub fn failed(&mut self) {
        self.failed = true;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let k = self.placement.server;
        self.d.stats.backends[k].active.dec();
        let mut g = self.d.lock();
        let now = self.d.clock.now();
        let finished = (now - self.since, !self.failed);
        self.d.release(&mut g, now, k, self.ty, Some(finished));
        self.d.drain(&mut g, now);
    }
}

impl Dispatcher {
    pub fn new(
        policy: Box<dyn Dispatch>,
        backends: usize,
        queue: (usize, f64),
        session_idle: f64,
        retry: f64,
        clock: Clock,
        stats: Stats,
    ) -> Dispatcher {
        Dispatcher {
            inner: Mutex::new(Inner {
                policy,
                queue: WaitQueue::new(queue.0, queue.1),
                sessions: Sessions::new(session_idle),
                down_until: vec![f64::NEG_INFINITY; backends],
                phantom: vec![Vec::new(); backends],
                phantoms: 0,
                next_waiter: 0,
                limit: None,
            }),
            clock,
            stats,
            retry,
        }
    }

    /// With every backend limited to `size` requests in flight (`limit.rs`).
    pub fn limited(self, size: u32) -> Dispatcher {
        for b in &self.stats.backends {
            b.limit.set(i64::from(size));
        }
        let now = self.clock.now();
        self.lock().limit = Some(Limit::new(self.backends(), size, now));
        self
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the policy half-updated in a way
        // that matters more than stopping the proxy would; keep serving.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn backends(&self) -> usize {
        self.stats.backends.len()
    }

    /// A backend for the request of `session` (of type `ty`), whose home is `home` if
    /// the request says so (an inserted cookie) or else as remembered; waits in the
    /// queue while a waiting policy holds it. `first_ask` is false when the request is
    /// asked about again after its backend refused the connection (re-dispatch);
    /// `remember`: keep the session's home and arrival time (not for anonymous requests
    /// in `none` session mode, which would only fill the table).
    pub async fn acquire(
        self: &Arc<Self>,
        session: u64,
        ty: usize,
        home: Option<usize>,
        first_ask: bool,
        remember: bool,
    ) -> Result<Lease, Refusal> {
        let now = self.clock.now();
        let (rx, id, deadline, req) = {
            let mut g = self.lock();
            let (remembered, gap) = g.sessions.get(session, now);
            let req = Request {
                session,
                ty,
                home: home.filter(|h| *h < self.backends()).or(remembered),
                gap: if first_ask { gap } else { None },
            };
            match self.pick_up(&mut g, now, req) {
                Ok(Some(k)) if self.admit(&mut g, now, k, req.ty) => {
                    return Ok(self.lease(req, k, 0.0, remember, now))
                }
                Ok(Some(k)) => {
                    if let Some(l) = g.limit.as_mut() {
                        l.refused(k);
                    }
                    self.stats.rejected_limit.inc();
                    self.stats.backends[k].rejected_limit.inc();
                    return Err(Refusal::Limit);
                }
                Err(r) => return Err(r),
                Ok(None) => {}
            }
            let (tx, rx) = oneshot::channel();
            let id = g.next_waiter;
            g.next_waiter += 1;
            let req = Request { gap: None, ..req };
            match g.queue.push(now, Waiter { id, req, tx }) {
                Ok(deadline) => {
                    self.stats.queued.inc();
                    self.stats.queue_length.set(g.queue.len() as i64);
                    (rx, id, deadline, req)
                }
                Err(_) => {
                    self.stats.rejected_queue_full.inc();
                    return Err(Refusal::QueueFull);
                }
            }
        };
        let mut wait = Waiting {
            d: self,
            id,
            rx: Some(rx),
            req,
            remember,
        };
        wait.until(deadline, now).await
    }

    /// Ask the policy. A pick of a down backend stays with the policy as a request
    /// in progress there (a phantom) until the backend's retry time, so load-aware
    /// policies steer away from it as they would from a busy server; the request is
    /// asked about again as a new session's. Ok(None): the policy holds it.
    fn pick_up(&self, g: &mut Inner, now: f64, mut req: Request) -> Result<Option<usize>, Refusal> {
        if g.phantoms > 0 {
            self.release_phantoms(g, now);
        }
        let n = self.backends();
        for _ in 0..PICKS_PER_BACKEND * n {
            self.stats.decisions.inc();
            match g.policy.pick(now, &req) {
                None => return Ok(None),
                Some(k) if g.down_until[k] <= now => return Ok(Some(k)),
                Some(k) => {
                    g.phantom[k].push(req.ty);
                    g.phantoms += 1;
                    req.home = None;
                    req.gap = None;
                }
            }
        }
        self.stats.rejected_no_backend.inc();
        Err(Refusal::NoBackend)
    }

    /// Backends whose retry time came: their phantom requests end (`done`).
    fn release_phantoms(&self, g: &mut Inner, now: f64) {
        for k in 0..self.backends() {
            if g.down_until[k] <= now && !g.phantom[k].is_empty() {
                let tys = std::mem::take(&mut g.phantom[k]);
                g.phantoms -= tys.len();
                for ty in tys {
                    g.policy.done(now, k, ty);
                }
            }
        }
    }

    /// Whether backend `k`, just picked, has room under its limit (the request then
    /// counts in flight there); if not, the pick is undone with the policy (`done`, as
    /// for any request that ended there).
    fn admit(&self, g: &mut Inner, now: f64, k: usize, ty: usize) -> bool {
        let admitted = g.limit.as_mut().is_none_or(|l| l.admit(k, now));
        if !admitted {
            g.policy.done(now, k, ty);
        }
        admitted
    }

    /// A request placed on `k` left it: the policy is told (`done`) and the limit
    /// counts it out, finished after so many seconds, ok or not, or never sent (None).
    fn release(&self, g: &mut Inner, now: f64, k: usize, ty: usize, finished: Option<(f64, bool)>) {
        g.policy.done(now, k, ty);
        if let Some(l) = g.limit.as_mut() {
            l.release(k, now, finished);
        }
    }

    /// The lease of `req` on `k`, placed at `since`: in progress there; sessions are
    /// booked once the request reaches it ([`Lease::reached`]).
    fn lease(
        self: &Arc<Self>,
        req: Request,
        k: usize,
        queued: f64,
        remember: bool,
        since: f64,
    ) -> Lease {
        self.stats.backends[k].active.inc();
        Lease {
            d: Arc::clone(self),
            placement: Placement {
                server: k,
                home: req.home,
                migrated: req.home.is_some_and(|h| h != k),
                queued,
            },
            ty: req.ty,
            session: req.session,
            remember,
            reached: false,
            since,
            failed: false,
        }
    }

    /// Send on the queued requests, in order, while the policy accepts (the
    /// simulator's `drain_queue`).
    fn drain(&self, g: &mut Inner, now: f64) {
        while let Some(w) = g.queue.front() {
            let req = w.req;
            match self.pick_up(g, now, Request { gap: None, ..req }) {
                Ok(Some(k)) if self.admit(g, now, k, req.ty) => {
                    let w = g.queue.pop_front().expect("front exists");
                    if let Err(Ticket::Server(k)) = w.tx.send(Ticket::Server(k)) {
                        // Unreachable while the waiter's guard removes it under this
                        // lock; release the pick all the same.
                        self.release(g, now, k, req.ty, None);
                    }
                }
                // A queued request is not refused at the limit: it waits on (until a
                // request ends there, or its queue timeout), as the policy's hold.
                Ok(Some(_)) | Ok(None) => break,
                Err(_) => {
                    // Every backend down: leave the queue as it is; expiry answers.
                    break;
                }
            }
        }
        self.stats.queue_length.set(g.queue.len() as i64);
    }

    /// An application session cookie set by backend `k` (follow mode): its home.
    pub fn remember(&self, session: u64, k: usize) {
        let now = self.clock.now();
        self.lock().sessions.set(session, k, now);
    }

    /// A connection to backend `k` was refused: down until the retry interval passed.
    pub fn mark_down(&self, k: usize) {
        let now = self.clock.now();
        self.lock().down_until[k] = now + self.retry;
        self.stats.backends[k].errors.inc();
    }

    /// This proxy's metrics for its peers, and the paper's byte count of the message.
    pub fn metrics(&self) -> (Metrics, usize) {
        let mut g = self.lock();
        let now = self.clock.now();
        let m = g.policy.metrics(now);
        (m, g.policy.message_bytes())
    }

    /// The other proxies' metrics (summed), as the simulator's `sync_deliver`.
    pub fn sync(&self, others: &Metrics) {
        let mut g = self.lock();
        let now = self.clock.now();
        g.policy.sync(now, others);
        self.drain(&mut g, now);
    }

    /// Forget every session's home and think-time gap (`POST /sessions/forget`: the
    /// live testbed starts each measured run with none, as a simulation does).
    pub fn forget_sessions(&self) {
        self.lock().sessions.clear();
    }

    /// Each backend's observation for its limit's controller since the last call (none
    /// without a limit).
    pub fn observe_limits(&self) -> Vec<control::Observation> {
        let now = self.clock.now();
        self.lock()
            .limit
            .as_mut()
            .map_or_else(Vec::new, |l| l.observe(now))
    }

    /// Each backend's limit as its controller decided (its `threads`); the queue is
    /// drained, since a raised limit may let a queued request in.
    pub fn set_limits(&self, decided: Vec<control::Decision>) {
        let mut g = self.lock();
        let Some(l) = g.limit.as_mut() else {
            return;
        };
        for (k, d) in decided.into_iter().enumerate() {
            let size = d.sizes.get(&control::PoolKind::Threads).copied();
            l.set(k, size.unwrap_or(l.size(k)), d.reason);
            self.stats.backends[k].limit.set(i64::from(l.size(k)));
        }
        let now = self.clock.now();
        self.drain(&mut g, now);
    }

    /// Per backend: its limit, requests in flight and the controller's last reason
    /// (None without a limit).
    pub fn limits(&self) -> Option<Vec<(u32, u32, Option<String>)>> {
        let g = self.lock();
        let l = g.limit.as_ref()?;
        Some(
            (0..self.backends())
                .map(|k| (l.size(k), l.inflight(k), l.reason(k).map(str::to_string)))
                .collect(),
        )
    }

    /// Refresh the gauges read at scrape time (dispatchability, health).
    pub fn refresh_gauges(&self) {
        let g = self.lock();
        let now = self.clock.now();
        for (k, b) in self.stats.backends.iter().enumerate() {
            b.dispatchable.set(g.policy.dispatchable(k) as i64);
            b.up.set((g.down_until[k] <= now) as i64);
        }
        self.stats.queue_length.set(g.queue.len() as i64);
    }
}

/// A request in the wait queue; dropped early (the client left), it leaves the queue.
struct Waiting<'a> {
    d: &'a Arc<Dispatcher>,
    id: u64,
    rx: Option<oneshot::Receiver<Ticket>>,
    req: Request,
    remember: bool,
}

impl Waiting<'_> {
    async fn until(&mut self, mut deadline: f64, since: f64) -> Result<Lease, Refusal> {
        let d = self.d;
        loop {
            let rx = self.rx.as_mut().expect("receiver until resolved");
            tokio::select! {
                t = rx => {
                    self.rx = None;
                    return match t {
                        Ok(Ticket::Server(k)) => {
                            let now = d.clock.now();
                            Ok(d.lease(self.req, k, now - since, self.remember, now))
                        }
                        Ok(Ticket::Expired) | Err(_) => Err(Refusal::QueueTimeout),
                    };
                }
                _ = tokio::time::sleep_until(d.clock.instant(deadline).into()) => {
                    let mut g = d.lock();
                    let now = d.clock.now();
                    for w in g.queue.expire(now) {
                        d.stats.rejected_queue_timeout.inc();
                        // A waiter leaves the queue under this lock before its
                        // receiver goes, so the send reaches it.
                        let _ = w.tx.send(Ticket::Expired);
                    }
                    d.stats.queue_length.set(g.queue.len() as i64);
                    // Rounding may leave this request a hair short of its deadline.
                    deadline += 0.001;
                }
            }
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let Some(mut rx) = self.rx.take() else {
            return;
        };
        let d = self.d;
        let mut g = d.lock();
        let id = self.id;
        if g.queue.retain(|w| w.id != id) > 0 {
            d.stats.queue_left.inc();
            d.stats.queue_length.set(g.queue.len() as i64);
        } else if let Ok(Ticket::Server(k)) = rx.try_recv() {
            // Placed just as the client left: the request never went; release it.
            d.stats.queue_left.inc();
            let now = d.clock.now();
            d.release(&mut g, now, k, self.req.ty, None);
            d.drain(&mut g, now);
        }
    }
}
