//! Dispatching a request to a server of a tier (the tier's `Cluster`: its
//! dispatchers, their queues and the metrics they exchange), as the engine's events.

use policy::{Metrics, Request};

use super::Sim;
use crate::events::Ev;

impl Sim {
    /// Which dispatcher of `tier` handles the request: the calling server's, or at the
    /// entry tier the session's.
    fn dispatcher_of(&self, slot: u32, tier: usize) -> usize {
        let k = self.clusters[tier].dispatchers.len();
        let r = &self.reqs[slot as usize];
        match r.visits.last() {
            Some(f) => (f.server as usize - self.tier_first_server[f.tier as usize]) % k,
            None => (self.sessions.id(r.session) % k as u64) as usize,
        }
    }

    fn request_for(&self, slot: u32, tier: usize, d: usize) -> Request {
        let r = &self.reqs[slot as usize];
        let home = self.sessions.home(r.session, tier);
        let block = &self.clusters[tier].blocks[d];
        Request {
            session: self.sessions.id(r.session),
            ty: r.ty as usize,
            home: home.filter(|h| block.contains(h)).map(|h| h - block.start),
            gap: None,
        }
    }

    /// Send the request to a server of `tier`; false if it is held at the dispatcher
    /// (or was rejected there) and so does not run now.
    ///
    /// Inlined (`always`: the hint alone is ignored): with one server, the usual case,
    /// it is one test before `enter_server`.
    #[inline(always)]
    pub(super) fn dispatch(&mut self, slot: u32, tier: usize) -> bool {
        if self.clusters[tier].single {
            self.enter_server(slot, tier, 0, 0);
            return true;
        }
        self.dispatch_by_policy(slot, tier)
    }

    /// `dispatch` to a tier whose policy chooses among servers.
    #[inline(never)]
    fn dispatch_by_policy(&mut self, slot: u32, tier: usize) -> bool {
        let d = self.dispatcher_of(slot, tier);
        let mut req = self.request_for(slot, tier, d);
        req.gap = self
            .sessions
            .mark_arrival(self.reqs[slot as usize].session, tier, self.now);
        match self.clusters[tier].dispatchers[d].pick(self.now, &req) {
            Some(k) => {
                self.enter_server(slot, tier, d, k);
                true
            }
            None => {
                let c = &mut self.clusters[tier];
                match c.queues[d].push(self.now, slot) {
                    Ok(deadline) => {
                        c.queued += self.obs.measuring as u64;
                        self.events.push(
                            deadline,
                            Ev::DispatchExpire {
                                tier: tier as u16,
                                dispatcher: d as u16,
                            },
                        );
                    }
                    Err(_) => {
                        c.queue_full += self.obs.measuring as u64;
                        self.abort(slot, trace::Status::Rejected);
                    }
                }
                false
            }
        }
    }

    /// Enter server `k` of dispatcher `d`'s block, which becomes the session's home on
    /// this tier (what affinity follows); on a stateful tier the session's state is
    /// created there or migrates there. `sessions_created` and `session_migrations`
    /// mean what the live proxy's decisions do (docs/trace.md): a measured visit whose
    /// session had no home on the tier, or had another — on every tier that reads
    /// homes, stateful or not.
    ///
    /// Inlined with `enter_tier` (`always`: the hints alone are ignored) into
    /// `dispatch`'s callers: once per visit, where the calls cost more than the checks.
    #[inline(always)]
    fn enter_server(&mut self, slot: u32, tier: usize, d: usize, k: usize) {
        let local = self.clusters[tier].blocks[d].start + k;
        let session = self.reqs[slot as usize].session;
        let mut remote = false;
        let (stateful, c) = (self.m.tiers[tier].stateful, &mut self.clusters[tier]);
        if c.reads_homes(stateful) {
            match self.sessions.home(session, tier) {
                None => c.created += self.obs.measuring as u64,
                Some(h) if h != local => {
                    c.migrations += self.obs.measuring as u64;
                    remote = stateful;
                }
                Some(_) => {}
            }
            self.sessions.set_home(session, tier, local);
        }
        self.enter_tier(
            slot,
            tier,
            self.tier_first_server[tier] + local,
            d as u16,
            remote,
        );
    }

    /// A visit dispatched by `d` left server `server` (global index): tell the policy,
    /// then try the requests its queue holds. Inlined as `dispatch` is: one test for
    /// one server, whose dispatcher was never asked and never held a request.
    #[inline(always)]
    pub(super) fn dispatch_done(&mut self, tier: usize, d: usize, server: usize, ty: usize) {
        if !self.clusters[tier].single {
            self.policy_done(tier, d, server, ty);
        }
    }

    /// `dispatch_done` at a tier whose policy chooses among servers.
    #[inline(never)]
    fn policy_done(&mut self, tier: usize, d: usize, server: usize, ty: usize) {
        let c = &mut self.clusters[tier];
        let k = server - self.tier_first_server[tier] - c.blocks[d].start;
        c.dispatchers[d].done(self.now, k, ty);
        self.drain_queue(tier, d);
    }

    /// Send on the requests dispatcher `d` holds, in order, while its policy accepts.
    fn drain_queue(&mut self, tier: usize, d: usize) {
        while let Some(&slot) = self.clusters[tier].queues[d].front() {
            let req = self.request_for(slot, tier, d);
            let Some(k) = self.clusters[tier].dispatchers[d].pick(self.now, &req) else {
                break;
            };
            self.clusters[tier].queues[d].pop_front();
            self.enter_server(slot, tier, d, k);
            self.events.push(self.now, Ev::Resume { req: slot });
        }
    }

    pub(super) fn dispatch_expire(&mut self, tier: usize, d: usize) {
        for slot in self.clusters[tier].queues[d].expire(self.now) {
            self.clusters[tier].queue_timeouts += self.obs.measuring as u64;
            self.abort(slot, trace::Status::Rejected);
        }
    }

    /// Every dispatcher sends its metrics to the others; each receives their sum. The
    /// messages of the rounds in the measured period [warmup, duration) are counted.
    pub(super) fn sync(&mut self, tier: usize) {
        let now = self.now;
        let spec = &self.m.tiers[tier].dispatch;
        let (interval, delay) = (spec.sync_interval, spec.sync_delay);
        let measured = self.obs.measuring && now < self.m.run.duration;
        let c = &mut self.clusters[tier];
        c.rounds += 1;
        let own: Vec<Metrics> = c.dispatchers.iter_mut().map(|p| p.metrics(now)).collect();
        let others = (0..own.len())
            .map(|i| {
                let mut sum = Metrics::default();
                own.iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .for_each(|(_, m)| sum.add(m));
                sum
            })
            .collect();
        if measured {
            c.syncs += own.len() as u64;
            c.sync_bytes += c
                .dispatchers
                .iter()
                .map(|p| p.message_bytes() as u64)
                .sum::<u64>();
        }
        c.in_flight.push_back(others);
        self.events
            .push(now + delay, Ev::SyncDeliver { tier: tier as u16 });
        self.events.push(
            (c.rounds + 1) as f64 * interval,
            Ev::Sync { tier: tier as u16 },
        );
    }

    pub(super) fn sync_deliver(&mut self, tier: usize) {
        let now = self.now;
        let c = &mut self.clusters[tier];
        let others = c
            .in_flight
            .pop_front()
            .expect("a sync message is in flight");
        for (p, m) in c.dispatchers.iter_mut().zip(&others) {
            p.sync(now, m);
        }
        // New metrics may make servers dispatchable again.
        for d in 0..self.clusters[tier].dispatchers.len() {
            self.drain_queue(tier, d);
        }
    }
}
