//! The simulation: a virtual clock, the event list, servers with their pools and
//! stations, and requests executing their step programs tier by tier. The engine's
//! other events are in its submodules: dispatching (`cluster`) and the workload
//! (`session`). It changes the state (`crate::state`, `crate::cluster`,
//! `crate::session`) and calls the observer, which only reads it: no module outside
//! `engine` imports it.

use rand::RngExt;
use trace::{Output, Status, BEFORE_DB, OTHER, WAIT_DB, WAIT_THREAD, WITH_DB_ACTIVE, WITH_DB_IDLE};
use workload::dist::Dist;
use workload::rng::{Stream, Streams};
use workload::spec::Population;

mod cluster;
mod session;

use crate::cluster::Cluster;
use crate::control::Control;
use crate::events::{Ev, EventQueue};
use crate::model::{
    Contention, Counted, Handoff, Hold, Model, Pool as PoolSpec, PoolKind, Station as StationSpec,
};
use crate::observer::{Observer, View};
use crate::pool::Acquire;
use crate::program::{flatten, Constants, Instr, NO_CONTENTION};
use crate::session::Sessions;
use crate::state::{Frame, Req, Server, StationState, TierAcc};
use crate::station::Ps;

/// Events between two calls of the run's `tick` (progress, Ctrl-C).
const TICK_EVENTS: u64 = 0x4000;

pub struct Sim {
    m: Model,
    now: f64,
    events: EventQueue,
    rng: Streams,
    consts: Constants,
    /// Every program, one after another, each closed by an `End`: a visit's `pc` points
    /// into it (jumps are absolute), so a step is one index, not a program lookup.
    code: Vec<Instr>,
    /// Where the program of each (type, tier) starts in `code`: entry[type * tiers + tier].
    entry: Vec<Option<u32>>,
    servers: Vec<Server>,
    tier_first_server: Vec<usize>,
    thread_mask: Vec<u64>,
    conn_mask: Vec<u64>,
    /// Per tier, the pools whose tokens sessions hold (`Hold::Session`).
    session_mask: Vec<u64>,
    clusters: Vec<Cluster>,
    links: Vec<Ps>,
    reqs: Vec<Req>,
    /// Requests keep their per-tier accumulators (`Req::tiers`, the visits' phases):
    /// only the per-request records read them, so a run without records skips them.
    tier_accs: bool,
    free_reqs: Vec<u32>,
    next_req_id: u64,
    next_ticket: u64,
    sessions: Sessions,
    obs: Observer,
    /// The online controller (the model's `control:`), called as windows close.
    control: Option<Control>,
    /// The workload phase that begins next (index into `Workload::phases`), and per
    /// tier the seconds the phases in force add to each visit.
    next_workload_phase: usize,
    added_delay: Vec<f64>,
    events_done: u64,
}

impl Sim {
    pub fn new(m: Model) -> Sim {
        let mut consts = Constants::default();
        let (mut code, mut entry) = (Vec::new(), Vec::new());
        let phases = &m.workload.phases;
        let delayed = |tier: usize| phases.iter().flat_map(|p| &p.delay).any(|d| d.tier == tier);
        for ty in &m.types {
            for (tier, p) in ty.programs.iter().enumerate() {
                entry.push(p.as_ref().map(|steps| {
                    let start = code.len() as u32;
                    if tier == m.workload.entry_tier {
                        let held = m.tiers[tier]
                            .pools
                            .iter()
                            .position(|p| p.hold == Hold::Session);
                        code.extend(held.map(|p| Instr::Connect(p as u16)));
                    }
                    if delayed(tier) {
                        code.push(Instr::AddedDelay);
                    }
                    flatten(steps, &mut consts, &mut code);
                    code.push(Instr::End);
                    start
                }));
            }
        }
        let mut servers = Vec::new();
        let mut tier_first_server = Vec::new();
        for (ti, t) in m.tiers.iter().enumerate() {
            tier_first_server.push(servers.len());
            for _ in 0..t.servers {
                servers.push(Server::new(ti, t));
            }
        }
        let mask = |of: fn(&PoolSpec) -> bool| -> Vec<u64> {
            m.tiers
                .iter()
                .map(|t| {
                    t.pools
                        .iter()
                        .enumerate()
                        .filter(|(_, p)| of(p))
                        .fold(0, |acc, (i, _)| acc | 1 << i)
                })
                .collect()
        };
        let thread_mask = mask(|p| p.kind == PoolKind::Threads);
        let conn_mask = mask(|p| p.kind == PoolKind::Connections);
        let session_mask = mask(|p| p.hold == Hold::Session);
        let clusters: Vec<Cluster> = m
            .tiers
            .iter()
            .enumerate()
            .map(|(i, t)| {
                Cluster::new(t, m.run.seed ^ (i as u64) << 32).expect("checked by Model::check")
            })
            .collect();
        let links = m.links.iter().map(|_| Ps::new(1, 1.0, vec![])).collect();
        // Without a tier that reads them, sessions keep no homes.
        let homes = m
            .tiers
            .iter()
            .zip(&clusters)
            .any(|(t, c)| c.reads_homes(t.stateful));
        let sessions = Sessions::new(
            &m.workload,
            if homes { m.tiers.len() } else { 0 },
            m.run.seed,
        );
        let obs = Observer::new(&m);
        let control = m
            .control
            .as_ref()
            .map(|c| Control::new(c, &m, obs.columns(), tier_first_server[c.tier]));
        let added_delay = vec![0.0; m.tiers.len()];
        Sim {
            rng: Streams::new(m.run.seed),
            tier_accs: m.run.records,
            m,
            now: 0.0,
            events: EventQueue::default(),
            consts,
            code,
            entry,
            servers,
            tier_first_server,
            thread_mask,
            conn_mask,
            session_mask,
            clusters,
            links,
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            next_req_id: 0,
            next_ticket: 0,
            sessions,
            obs,
            control,
            next_workload_phase: 0,
            added_delay,
            events_done: 0,
        }
    }

    /// The engine for `m`, its control's strategy decided outside the engine being
    /// `strategy` (twin: Python's, through crates/py); an error where the model's
    /// strategy needs one and none is given, or one is given to any other model.
    pub fn with_controller(
        m: Model,
        strategy: Option<Box<dyn ::control::Controller>>,
    ) -> Result<Sim, String> {
        let mut sim = Sim::new(m);
        crate::control::hand_over(&mut sim.control, strategy)?;
        Ok(sim)
    }

    /// Run to the model's duration. `tick(fraction done)` is called now and then; it
    /// returns false to stop early (the output then covers the time simulated so far).
    /// A model whose clock stops (events for ever at one instant) is an error.
    pub fn run(mut self, mut tick: impl FnMut(f64) -> bool) -> Result<Output, String> {
        let (duration, window, warmup) =
            (self.m.run.duration, self.m.run.window, self.m.run.warmup);
        self.events.push(window.min(duration), Ev::Window);
        for (t, spec) in self.m.tiers.iter().enumerate() {
            if self.clusters[t].shares() {
                self.events
                    .push(spec.dispatch.sync_interval, Ev::Sync { tier: t as u16 });
            }
        }
        if warmup > 0.0 {
            self.events.push(warmup, Ev::Warmup);
        } else {
            self.start_measuring();
        }
        self.start_workload();
        let mut interrupted = false;
        // The events run at the current instant are those counted since the clock last
        // moved, the first one not included (`advance` counts the lane's it runs).
        let (stall_limit, mut instant_start) = (self.stall_limit(), 0u64);
        while let Some((t, ev)) = self.events.pop() {
            if t > duration {
                break; // (the event list is not read again)
            }
            // Counted before it runs: the waiters `advance` then takes from the lane
            // are counted after it, in the order the run loop would have taken them.
            self.events_done += 1;
            if t > self.now {
                instant_start = self.events_done;
            }
            self.now = t;
            // Most events resume a request (a delay's end, a granted waiter): straight
            // to its program; an open population's arrivals and the windows skip the
            // general handler too.
            match ev {
                Ev::Resume { req } => self.advance(req),
                Ev::SessionArrival { epoch } => self.session_arrival(epoch),
                Ev::Window => self.close_window(),
                ev => self.handle(ev),
            }
            let same_instant = self.events_done - instant_start;
            if same_instant > stall_limit {
                return Err(format!(
                    "engine model: workload.think: the simulated clock stopped at {t} s ({same_instant} events \
                     at that instant): closed clients with no think time whose requests take no time \
                     (rejected at once by a pool with timeout 0 or a full queue, or programs with no work) \
                     resend for ever; give workload.think a positive mean or let requests wait"
                ));
            }
            if self.events_done.is_multiple_of(TICK_EVENTS) && !tick(self.now / duration) {
                interrupted = true;
                break;
            }
        }
        if !interrupted {
            self.now = duration;
        }
        tick(self.now / duration);
        let events = self.events_done;
        let control = self.control.take();
        let (obs, v) = self.observed();
        let mut out = obs.finish(v, interrupted, events);
        out.summary.control = control.map(Control::summary);
        Ok(out)
    }

    /// Events at one instant beyond which the clock has stopped: more than the start
    /// of every closed client (a few events each) can need.
    fn stall_limit(&self) -> u64 {
        let clients = match self.m.workload.population {
            Population::Closed { clients } => u64::from(clients),
            Population::Open { .. } => 0,
        };
        1_000_000 + 16 * clients
    }

    /// The observer and what it sees of the simulation now.
    fn observed(&mut self) -> (&mut Observer, View<'_>) {
        let v = View {
            m: &self.m,
            now: self.now,
            servers: &mut self.servers,
            links: &mut self.links,
            clusters: &self.clusters,
            sessions: &mut self.sessions,
        };
        (&mut self.obs, v)
    }

    fn start_measuring(&mut self) {
        let (obs, mut v) = self.observed();
        obs.start_measuring(&mut v);
    }

    /// Close the monitoring window that ends now; the next ends a window later. Called
    /// by the run loop itself: through `handle`, whose frame serves every rare event,
    /// a window cost 24 instructions more.
    #[inline(never)]
    fn close_window(&mut self) {
        let (obs, mut v) = self.observed();
        obs.close_window(&mut v);
        self.events.push(self.now + self.m.run.window, Ev::Window);
        if self.control.is_some() {
            self.control_window();
        }
    }

    /// The controller sees the window just closed; at its interval's end, the pools it
    /// re-sized change on every server of its tier, and the waiters a larger pool now
    /// fits are let in (a smaller one lets its holders finish: `Pool::resize`).
    fn control_window(&mut self) {
        let c = self.control.as_mut().expect("called with a controller");
        let changes = c.window(self.now, self.obs.last_row(), &self.servers);
        let servers = c.servers();
        for (p, size) in changes {
            for s in servers.clone() {
                self.servers[s].pools[p].resize(size);
                self.let_in(s, p as u16);
            }
        }
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::Window => unreachable!("the run loop closes windows itself"),
            Ev::Warmup => self.start_measuring(),
            Ev::SessionArrival { .. } => unreachable!("the run loop handles arrivals itself"),
            Ev::BurstSwitch => self.burst_switch(),
            Ev::WorkloadPhase => self.workload_phase(),
            Ev::GcEnd { server } => self.gc_end(server as usize),
            Ev::Send { session, epoch } => self.send(session, epoch),
            Ev::Resume { .. } => unreachable!("the run loop resumes requests itself"),
            Ev::HandedOff { req } => self.handed_off(req),
            Ev::StationDone {
                server,
                station,
                epoch,
            } => self.cpu_done(server as usize, station as usize, epoch),
            Ev::DiskDone {
                server,
                station,
                req,
            } => self.disk_done(server as usize, station as usize, req),
            Ev::LinkDone { link, epoch } => {
                let l = &mut self.links[link as usize];
                if l.epoch != epoch {
                    return;
                }
                let (req, next) = l.complete(self.now);
                if let Some(t) = next {
                    self.events.push(
                        t,
                        Ev::LinkDone {
                            link,
                            epoch: l.epoch,
                        },
                    );
                }
                let latency = std::mem::take(&mut self.reqs[req as usize].link_latency);
                self.events.push(self.now + latency, Ev::Resume { req });
            }
            Ev::DispatchExpire { tier, dispatcher } => {
                self.dispatch_expire(tier as usize, dispatcher as usize)
            }
            Ev::Sync { tier } => self.sync(tier as usize),
            Ev::SyncDeliver { tier } => self.sync_deliver(tier as usize),
            Ev::PoolTimeout { req, ticket } => {
                let r = &self.reqs[req as usize];
                if r.ticket == ticket {
                    let f = *r.visits.last().expect("waiting request has a frame");
                    let p = r.waiting_pool;
                    self.servers[f.server as usize].pools[p as usize].abandon(self.now);
                    self.abort(req, Status::Rejected);
                    // An exclusive waiter at the head may have held back others.
                    self.let_in(f.server as usize, p);
                }
            }
        }
    }

    // ---- requests ----------------------------------------------------------------

    /// Start a request of type `ty` for a session at the entry tier.
    #[inline(always)]
    fn start_request(&mut self, session: u32, ty: usize) {
        let nt = self.m.tiers.len();
        let slot = self.free_reqs.pop().unwrap_or_else(|| {
            self.reqs.push(Req::default());
            (self.reqs.len() - 1) as u32
        });
        self.next_req_id += 1;
        let r = &mut self.reqs[slot as usize];
        r.id = self.next_req_id;
        r.session = session;
        r.ty = ty as u32;
        r.start = self.now;
        r.measured = self.obs.measuring;
        r.visits.clear();
        r.loops.clear();
        if self.tier_accs {
            r.tiers.clear();
            r.tiers.resize(
                nt,
                TierAcc {
                    server: -1,
                    ..Default::default()
                },
            );
        }
        r.ticket = 0;
        r.retrying = false;
        r.retransmissions = 0;
        self.obs.request_started(self.now, ty);
        if let Some(c) = &mut self.control {
            c.arrived(ty);
        }
        let entry = self.m.workload.entry_tier;
        if self.dispatch(slot, entry) {
            self.advance(slot);
        }
    }

    /// Begin a visit of the request to `server` (global index), sent by `dispatcher`.
    #[inline(always)]
    fn enter_tier(&mut self, slot: u32, tier: usize, server: usize, dispatcher: u16, remote: bool) {
        let now = self.now;
        let sv = &mut self.servers[server];
        sv.stats.enter(now);
        let r = &mut self.reqs[slot as usize];
        if self.tier_accs {
            let acc = &mut r.tiers[tier];
            if acc.server < 0 {
                acc.server = (server - self.tier_first_server[tier]) as i32;
            }
            acc.visits += 1;
        }
        let loop_base = r.loops.len() as u32;
        let pc =
            self.entry[r.ty as usize * self.m.tiers.len() + tier].expect("checked: program exists");
        r.visits.push(Frame {
            tier: tier as u16,
            server: server as u32,
            dispatcher,
            remote,
            pc,
            loop_base,
            held: 0,
            idle: 0,
            opening: 0,
            exclusive: 0,
            phase: OTHER as u8,
            since: now,
            entered: now,
        });
    }

    /// Re-derive the top frame's phase from what it holds and waits for, charging the
    /// time since the last change to the phase it was in (when records are kept).
    #[inline]
    fn update_phase(&mut self, slot: u32) {
        if self.tier_accs {
            self.charge_phase(slot);
        }
    }

    fn charge_phase(&mut self, slot: u32) {
        let now = self.now;
        let r = &mut self.reqs[slot as usize];
        let f = r.visits.top();
        let t = f.tier as usize;
        let waiting = if r.ticket != 0 || r.retrying {
            Some(1u64 << r.waiting_pool)
        } else {
            (f.opening != 0).then(|| 1u64 << (f.opening - 1))
        };
        let phase = match waiting {
            Some(w) if w & self.conn_mask[t] != 0 => WAIT_DB,
            Some(w) if w & self.thread_mask[t] != 0 => WAIT_THREAD,
            _ if f.held & !f.idle & self.conn_mask[t] != 0 => WITH_DB_ACTIVE,
            _ if f.held & self.conn_mask[t] != 0 => WITH_DB_IDLE,
            _ if f.held & self.thread_mask[t] != 0 => BEFORE_DB,
            _ => OTHER,
        };
        r.tiers[t].phases[f.phase as usize] += now - f.since;
        f.since = now;
        f.phase = phase as u8;
    }

    /// Execute the request's program until it blocks or ends, then those of the
    /// waiters it let in that resume at once: the run loop would take them next
    /// (every caller of `advance` returns to it straight after), through one more
    /// event each. At a tick's count it stops: the run loop ticks, checks the clock
    /// and takes the rest of the lane itself, exactly as if it had taken every one.
    fn advance(&mut self, mut slot: u32) {
        loop {
            self.run_program(slot);
            if self.events_done.is_multiple_of(TICK_EVENTS) {
                return;
            }
            let Some(next) = self.events.take_ready() else {
                return;
            };
            self.events_done += 1;
            slot = next;
        }
    }

    #[inline(always)]
    fn run_program(&mut self, slot: u32) {
        loop {
            let r = &mut self.reqs[slot as usize];
            if r.visits.is_empty() {
                return;
            }
            let f = r.visits.top();
            let server = f.server as usize;
            let ins = self.code[f.pc as usize];
            f.pc += 1;
            match ins {
                Instr::End => {
                    self.leave_tier(slot);
                    if self.reqs[slot as usize].visits.is_empty() {
                        self.finish_request(slot, Status::Ok);
                        return;
                    }
                }
                Instr::Acquire { pool, exclusive } => {
                    f.opening = 0;
                    if !self.acquire(slot, server, pool, exclusive) {
                        return;
                    }
                }
                Instr::Connect(p) => {
                    let session = r.session;
                    if !self.sessions.connected(session) && !self.acquire(slot, server, p, false) {
                        return;
                    }
                }
                Instr::Release(p) => self.release(slot, p),
                Instr::Delay { time, contention } => {
                    let mut t =
                        self.consts.dists[time as usize].sample(self.rng.get(Stream::Demand));
                    if contention != NO_CONTENTION {
                        let c = self.consts.contentions[contention as usize];
                        t *= grown(c, &self.servers[server].pools[c.pool], f);
                    }
                    self.events.push(self.now + t, Ev::Resume { req: slot });
                    return;
                }
                other => {
                    if !self.step(slot, other) {
                        return;
                    }
                }
            }
        }
    }

    /// The steps other than a pool's acquire and release, a delay and the end: kept
    /// out of `advance`, whose loop then holds fewer values and enters at less cost.
    /// False when the request now waits (or was rejected).
    #[inline(never)]
    fn step(&mut self, slot: u32, ins: Instr) -> bool {
        let r = &mut self.reqs[slot as usize];
        let f = r.visits.top();
        let (tier, server) = (f.tier as usize, f.server as usize);
        match ins {
            Instr::Opening { pool, end } => {
                if f.held & (1 << pool) != 0 {
                    f.pc = end;
                } else {
                    f.opening = pool as u8 + 1;
                    self.update_phase(slot);
                }
            }
            Instr::Get(p) => {
                f.opening = 0;
                if f.held & (1 << p) != 0 {
                    f.idle &= !(1 << p);
                    self.update_phase(slot);
                } else if !self.acquire(slot, server, p, false) {
                    return false;
                }
            }
            Instr::Close(p) => {
                f.idle |= f.held & (1 << p);
                self.update_phase(slot);
            }
            Instr::Drop(p) => {
                if f.idle & (1 << p) != 0 {
                    self.release(slot, p);
                }
            }
            Instr::Cpu {
                station,
                demand,
                contention,
            } => {
                let mut work = self.consts.dists[demand as usize]
                    .sample(self.rng.get(Stream::Demand))
                    * self.sessions.weight(r.session);
                if contention != NO_CONTENTION {
                    let c = self.consts.contentions[contention as usize];
                    work *= grown(c, &self.servers[server].pools[c.pool], f);
                }
                if self.tier_accs {
                    let acc = &mut r.tiers[tier];
                    acc.cpu_time += work;
                    if f.opening != 0 && self.conn_mask[tier] & 1 << (f.opening - 1) != 0 {
                        acc.pool_cpu_time += work;
                    }
                }
                if work > 0.0 {
                    self.compute(slot, server, station, work);
                    return false;
                }
            }
            Instr::Disk { station, accesses } => {
                let n = self.consts.dists[accesses as usize]
                    .sample(self.rng.get(Stream::Demand))
                    .round()
                    .max(0.0) as u32;
                self.reqs[slot as usize].disk_left = n;
                if self.next_disk_access(slot, server, station as usize) {
                    return false;
                }
            }
            Instr::Call(t) => {
                if self.tier_accs && t as usize == tier + 1 {
                    let acc = &mut r.tiers[tier];
                    acc.db_queries += 1;
                    acc.call_since = self.now;
                }
                if !self.dispatch(slot, t as usize) {
                    return false;
                }
                self.update_phase(slot);
            }
            Instr::SessionBegin { end } => {
                if !f.remote {
                    f.pc = end;
                }
            }
            Instr::AddedDelay => {
                let delay = self.added_delay[tier];
                if delay > 0.0 {
                    self.events.push(self.now + delay, Ev::Resume { req: slot });
                    return false;
                }
            }
            Instr::LoopBegin { count, end } => {
                let n = self.consts.dists[count as usize]
                    .sample(self.rng.get(Stream::Demand))
                    .round()
                    .max(0.0) as u32;
                let r = &mut self.reqs[slot as usize];
                if n == 0 {
                    r.visits.top().pc = end;
                } else {
                    let begin = r.visits.top().pc;
                    r.loops.push((begin, n));
                }
            }
            Instr::LoopEnd { begin } => {
                let r = &mut self.reqs[slot as usize];
                let top = r.loops.last_mut().expect("loop open");
                top.1 -= 1;
                if top.1 > 0 {
                    r.visits.top().pc = begin;
                } else {
                    r.loops.pop();
                }
            }
            Instr::Transfer { link, bytes } => {
                let size = self.consts.dists[bytes as usize].sample(self.rng.get(Stream::Demand));
                let spec = &self.m.links[link as usize];
                let seconds = size / spec.bandwidth;
                let shared = spec.shared;
                let latency = self.latency(link as usize, size);
                if shared {
                    self.reqs[slot as usize].link_latency = latency;
                    let l = &mut self.links[link as usize];
                    let t = l.arrive(self.now, slot, seconds);
                    self.events.push(
                        t,
                        Ev::LinkDone {
                            link,
                            epoch: l.epoch,
                        },
                    );
                } else {
                    self.events
                        .push(self.now + seconds + latency, Ev::Resume { req: slot });
                }
                return false;
            }
            Instr::End
            | Instr::Acquire { .. }
            | Instr::Connect(_)
            | Instr::Release(_)
            | Instr::Delay { .. } => {
                unreachable!("run by advance")
            }
        }
        true
    }

    /// The request runs `work` CPU-seconds on CPU `station` of `server`; it goes on
    /// when the station completes it (`cpu_done`).
    fn compute(&mut self, slot: u32, server: usize, station: u16, work: f64) {
        let StationState::Cpu(ps) = &mut self.servers[server].stations[station as usize] else {
            unreachable!("checked: cpu station")
        };
        let t = ps.arrive(self.now, slot, work);
        let epoch = ps.epoch;
        if t.is_finite() {
            self.events.push(
                t,
                Ev::StationDone {
                    server: server as u32,
                    station,
                    epoch,
                },
            );
        }
        self.allocate(server, work);
    }

    /// CPU work allocates memory; a full heap stops the server's CPUs (stop the world).
    fn allocate(&mut self, server: usize, work: f64) {
        let Some(gc) = self.m.tiers[self.servers[server].tier].gc else {
            return;
        };
        let now = self.now;
        let sv = &mut self.servers[server];
        sv.allocated += work * gc.allocation;
        if sv.in_gc || sv.allocated < gc.heap {
            return;
        }
        let pause = gc.pause_at(sv.stats.concurrency.value());
        sv.allocated = 0.0;
        sv.in_gc = true;
        if self.obs.measuring {
            sv.stats.gc_pause(pause);
        }
        for st in &mut sv.stations {
            if let StationState::Cpu(ps) = st {
                ps.pause(now);
            }
        }
        self.events.push(
            now + pause,
            Ev::GcEnd {
                server: server as u32,
            },
        );
    }

    fn gc_end(&mut self, server: usize) {
        let now = self.now;
        let sv = &mut self.servers[server];
        sv.in_gc = false;
        for (i, st) in sv.stations.iter_mut().enumerate() {
            if let StationState::Cpu(ps) = st {
                if let Some(t) = ps.resume(now) {
                    let epoch = ps.epoch;
                    self.events.push(
                        t,
                        Ev::StationDone {
                            server: server as u32,
                            station: i as u16,
                            epoch,
                        },
                    );
                }
            }
        }
    }

    /// Seconds a transfer of `size` bytes over `link` takes beyond its bytes at full
    /// bandwidth: one-way delay d, then (slow start from `initial_window` segments,
    /// doubling each round trip) 2d per further flight, and one timeout per lost segment.
    fn latency(&mut self, link: usize, size: f64) -> f64 {
        let spec = &self.m.links[link];
        let segments = (size / spec.mss).ceil().max(1.0);
        let flights = spec
            .initial_window
            .map_or(1.0, |w| (segments / w + 1.0).log2().ceil());
        let rng = self.rng.get(Stream::Network);
        let lost = if spec.loss == 0.0 {
            0.0
        } else {
            let lost = rand_distr::Binomial::new(segments as u64, spec.loss)
                .expect("checked: loss in [0, 1)");
            rand_distr::Distribution::<u64>::sample(&lost, &mut *rng) as f64
        };
        let delay = spec.delay.sample(rng);
        delay * (2.0 * flights - 1.0) + lost * spec.rto
    }

    /// Try to take a token; false if the request now waits (or was rejected).
    #[inline(always)]
    fn acquire(&mut self, slot: u32, server: usize, p: u16, exclusive: bool) -> bool {
        self.reqs[slot as usize].retrying = false;
        let sv = &mut self.servers[server];
        let pool = &mut sv.pools[p as usize];
        let tokens = pool.tokens(exclusive);
        // A free token needs neither the pool's settings nor a ticket.
        if pool.try_take(self.now, tokens) {
            self.take(slot, p, exclusive);
            return true;
        }
        let spec = &self.m.tiers[sv.tier].pools[p as usize];
        let priority = self.m.types[self.reqs[slot as usize].ty as usize].priority;
        self.next_ticket += 1;
        let ticket = self.next_ticket;
        match pool.wait(self.now, spec, slot, priority, ticket, tokens) {
            Acquire::Queued => {
                let r = &mut self.reqs[slot as usize];
                r.ticket = ticket;
                r.waiting_pool = p;
                r.waiting_exclusive = exclusive;
                if let Some(t) = spec.timeout {
                    self.events
                        .push(self.now + t, Ev::PoolTimeout { req: slot, ticket });
                }
                self.update_phase(slot);
                false
            }
            Acquire::Full => {
                let r = &mut self.reqs[slot as usize];
                match spec.retransmit {
                    Some(rt) if r.retransmissions < rt.attempts => {
                        // The attempt is dropped; the client tries this step again.
                        let wait = rt.initial * 2f64.powi(r.retransmissions as i32);
                        r.retransmissions += 1;
                        r.retrying = true;
                        r.waiting_pool = p;
                        r.visits.top().pc -= 1;
                        self.servers[server].pools[p as usize].dropped.add();
                        self.update_phase(slot);
                        self.events.push(self.now + wait, Ev::Resume { req: slot });
                    }
                    _ => {
                        self.servers[server].pools[p as usize].rejected.add();
                        self.abort(slot, Status::Rejected);
                    }
                }
                false
            }
        }
    }

    /// The request now holds a token (or every token) of pool `p` of its current server.
    /// Inlined (`always`: the hint alone is ignored) into the grants of `acquire` and
    /// `let_in`, once per pool hold: a call costs more than its body.
    #[inline(always)]
    fn take(&mut self, slot: u32, p: u16, exclusive: bool) {
        let r = &mut self.reqs[slot as usize];
        r.ticket = 0;
        let f = r.visits.top();
        f.held |= 1 << p;
        if exclusive {
            f.exclusive |= 1 << p;
        }
        if self.tier_accs && self.conn_mask[f.tier as usize] & (1 << p) != 0 {
            r.tiers[f.tier as usize].db_requests += 1;
        }
        self.update_phase(slot);
    }

    /// Inlined into the step program (`always`: the hint alone is ignored), where every
    /// release happens: the call cost more than the bit operations it wraps.
    #[inline(always)]
    fn release(&mut self, slot: u32, p: u16) {
        let f = self.reqs[slot as usize].visits.top();
        let exclusive = f.exclusive & (1 << p) != 0;
        f.held &= !(1 << p);
        f.idle &= !(1 << p);
        f.exclusive &= !(1 << p);
        let server = f.server as usize;
        self.update_phase(slot);
        self.give_back(server, p, exclusive);
    }

    /// Return a hold's tokens to their pool, and let the waiters they free in.
    #[inline(always)]
    fn give_back(&mut self, server: usize, p: u16, exclusive: bool) {
        let pool = &mut self.servers[server].pools[p as usize];
        pool.release(pool.tokens(exclusive));
        self.let_in(server, p);
    }

    /// The waiters at the head of pool `p` whose tokens are free get them and resume, at
    /// once or after the pool's hand-off.
    #[inline(always)]
    fn let_in(&mut self, server: usize, p: u16) {
        loop {
            let reqs = &self.reqs;
            let sv = &mut self.servers[server];
            let pool = &mut sv.pools[p as usize];
            let Some(waiter) =
                pool.grant(self.now, |req, ticket| reqs[req as usize].ticket == ticket)
            else {
                return;
            };
            let exclusive = self.reqs[waiter as usize].waiting_exclusive;
            if !pool.has_handoff {
                // Full again (the usual case: the token passed straight on), nobody else
                // fits: the pool settles as the next `grant` would, without the look.
                let full = pool.is_full();
                if full {
                    pool.settle(self.now);
                }
                self.take(waiter, p, exclusive);
                self.events.resume_now(waiter);
                if full {
                    return;
                }
                continue;
            }
            let tier = sv.tier;
            let handoff = self.m.tiers[tier].pools[p as usize]
                .handoff
                .as_ref()
                .expect("the pool has a hand-off");
            pool.promise(self.now, pool.tokens(exclusive));
            // Still waiting (its phase), but no longer on the ticket its timeout was set
            // for: a granted token is not given up. `handed_off` ends the wait.
            self.next_ticket += 1;
            self.reqs[waiter as usize].ticket = self.next_ticket;
            match handoff {
                Handoff::Delay(d) => {
                    let delay = d.sample(self.rng.get(Stream::Demand));
                    self.events
                        .push(self.now + delay, Ev::HandedOff { req: waiter });
                }
                Handoff::Cpu { station, demand } => {
                    let (station, work) =
                        (*station as u16, demand.sample(self.rng.get(Stream::Demand)));
                    if self.tier_accs {
                        // The waiter's own CPU, spent taking the token: a connection's
                        // counts as the pool's, as `acquire_cpu` does.
                        let acc = &mut self.reqs[waiter as usize].tiers[tier];
                        acc.cpu_time += work;
                        if self.conn_mask[tier] & 1 << p != 0 {
                            acc.pool_cpu_time += work;
                        }
                    }
                    self.compute(waiter, server, station, work);
                }
            }
        }
    }

    /// The token granted to `slot` has reached it: it takes it and goes on.
    fn handed_off(&mut self, slot: u32) {
        let r = &self.reqs[slot as usize];
        let (p, exclusive) = (r.waiting_pool, r.waiting_exclusive);
        let server = r.visits.last().expect("waiting request has a frame").server as usize;
        let pool = &mut self.servers[server].pools[p as usize];
        pool.claim(self.now, pool.tokens(exclusive));
        self.take(slot, p, exclusive);
        self.advance(slot);
    }

    /// Start the next disk access that misses the cache; false if none is left.
    fn next_disk_access(&mut self, slot: u32, server: usize, station: usize) -> bool {
        let tier = self.servers[server].tier;
        let StationSpec::Disk { hit_ratio, .. } = self.m.tiers[tier].stations[station] else {
            unreachable!("checked: disk station")
        };
        loop {
            let r = &mut self.reqs[slot as usize];
            if r.disk_left == 0 {
                return false;
            }
            r.disk_left -= 1;
            if self.rng.get(Stream::Demand).random::<f64>() >= hit_ratio {
                break; // a cache miss: this access goes to the disk
            }
        }
        let StationState::Disk(d) = &mut self.servers[server].stations[station] else {
            unreachable!()
        };
        if d.arrive(self.now, slot) {
            self.schedule_disk_service(server, station, slot);
        }
        true
    }

    fn schedule_disk_service(&mut self, server: usize, station: usize, req: u32) {
        let tier = self.servers[server].tier;
        let StationSpec::Disk {
            iops,
            constant_service,
            ..
        } = self.m.tiers[tier].stations[station]
        else {
            unreachable!()
        };
        let t = if constant_service {
            1.0 / iops
        } else {
            Dist::Exponential {
                mean: 1.0 / iops,
                max: None,
            }
            .sample(self.rng.get(Stream::Demand))
        };
        self.events.push(
            self.now + t,
            Ev::DiskDone {
                server: server as u32,
                station: station as u16,
                req,
            },
        );
    }

    fn cpu_done(&mut self, server: usize, station: usize, epoch: u32) {
        let StationState::Cpu(ps) = &mut self.servers[server].stations[station] else {
            unreachable!()
        };
        if ps.epoch != epoch {
            return; // superseded by a later arrival or departure
        }
        let (req, next) = ps.complete(self.now);
        if let Some(t) = next {
            let epoch = ps.epoch;
            self.events.push(
                t,
                Ev::StationDone {
                    server: server as u32,
                    station: station as u16,
                    epoch,
                },
            );
        }
        // A request at a CPU still holding a ticket is a waiter running its hand-off
        // (`let_in`): every other wait ends, clearing the ticket, before it computes.
        if self.reqs[req as usize].ticket != 0 {
            self.handed_off(req);
        } else {
            self.advance(req);
        }
    }

    fn disk_done(&mut self, server: usize, station: usize, req: u32) {
        let StationState::Disk(d) = &mut self.servers[server].stations[station] else {
            unreachable!()
        };
        if let Some(next) = d.depart(self.now) {
            self.schedule_disk_service(server, station, next);
        }
        if !self.next_disk_access(req, server, station) {
            self.advance(req);
        }
    }

    /// The top visit ends: release what it still holds, account its residence.
    #[inline(always)]
    fn leave_tier(&mut self, slot: u32) {
        self.update_phase(slot);
        let now = self.now;
        let r = &mut self.reqs[slot as usize];
        let f = r.visits.pop();
        r.loops.truncate(f.loop_base as usize);
        if self.tier_accs {
            r.tiers[f.tier as usize].time += now - f.entered;
            // A visit to the next tier returns to its caller: the call's wall time.
            if let Some(caller) = r.visits.last().filter(|c| c.tier + 1 == f.tier) {
                let acc = &mut r.tiers[caller.tier as usize];
                acc.db_time += now - acc.call_since;
            }
        }
        let sv = &mut self.servers[f.server as usize];
        sv.stats.leave(now, f.entered, self.obs.measuring);
        // A session-held token stays with the session past the visit (`Instr::Connect`).
        let kept = f.held & self.session_mask[f.tier as usize];
        if kept != 0 {
            let session = r.session as usize;
            self.sessions.slots[session].connection =
                Some((f.server, kept.trailing_zeros() as u16));
        }
        let mut held = f.held & !kept;
        while held != 0 {
            let p = held.trailing_zeros() as u16;
            held &= held - 1;
            self.give_back(f.server as usize, p, f.exclusive & (1 << p) != 0);
        }
        let ty = self.reqs[slot as usize].ty as usize;
        self.dispatch_done(
            f.tier as usize,
            f.dispatcher as usize,
            f.server as usize,
            ty,
        );
    }

    /// End a request early (rejected at a pool): every visit on its call stack ends
    /// now and gives back what it holds.
    fn abort(&mut self, slot: u32, status: Status) {
        self.reqs[slot as usize].ticket = 0;
        while !self.reqs[slot as usize].visits.is_empty() {
            self.leave_tier(slot);
        }
        self.finish_request(slot, status);
    }

    #[inline(always)]
    fn finish_request(&mut self, slot: u32, status: Status) {
        let r = &self.reqs[slot as usize];
        self.obs
            .request_finished(self.now, r, &self.sessions, status);
        if let Some(c) = &mut self.control {
            c.finished(status, self.now - r.start);
        }
        let session = r.session;
        self.free_reqs.push(slot);
        self.request_done(session);
    }
}

/// Chen & Gorton's factor 1 + per · n of contention term `c` for the visit `f`, n the
/// count of `pool` (the term's) as the step starts: busy counts the others, not the
/// tokens the visit holds itself.
fn grown(c: Contention, pool: &crate::pool::Pool, f: &Frame) -> f64 {
    let own = if c.count == Counted::Busy && f.held & (1 << c.pool) != 0 {
        pool.tokens(f.exclusive & (1 << c.pool) != 0)
    } else {
        0
    };
    1.0 + c.per * (pool.count(c.count) - own).min(c.max) as f64
}
