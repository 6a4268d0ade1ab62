//! The workload as the engine's events: session arrivals and think times, burst
//! phase switches, the workload's phases (its changes over the run), and each
//! session's next request when one finishes.

use workload::rng::{client_seed, session_seed, Stream};
use workload::spec::Population;

use super::Sim;
use crate::events::Ev;
use crate::session::Session;

impl Sim {
    pub(super) fn start_workload(&mut self) {
        let s = &mut self.sessions;
        s.phase = s.phases.start(&mut s.burst_rng);
        if self.sessions.phases.modulated() {
            self.schedule_burst_switch();
        }
        if let Some(first) = self.m.workload.phases.first() {
            self.events.push(first.at, Ev::WorkloadPhase);
        }
        match self.m.workload.population {
            Population::Closed { clients } => {
                for _ in 0..clients {
                    self.new_session_after_think();
                }
            }
            Population::Open { .. } => self.schedule_arrival(),
        }
    }

    fn schedule_burst_switch(&mut self) {
        let s = &mut self.sessions;
        let t = self.now + s.phases.sojourn(s.phase, &mut s.burst_rng);
        self.events.push(t, Ev::BurstSwitch);
    }

    /// The phase changes; an open population's next arrival is redrawn at the new
    /// rate, and every think time under way (a closed population's clients', an open
    /// one's sessions': `schedule_send` runs both at the phase's clock rate, as the live
    /// generator's `think` does) is rescaled to the new clock rate. An open session's
    /// think was once left to its stale `Send`: the session never sent again, nor ended.
    pub(super) fn burst_switch(&mut self) {
        let from = self.sessions.phase;
        self.sessions.phase ^= 1;
        self.sessions.epoch += 1;
        self.sessions.arrivals += 1;
        self.schedule_burst_switch();
        if let Population::Open { .. } = self.m.workload.population {
            self.schedule_arrival();
        }
        let s = &mut self.sessions;
        let (now, to, epoch) = (self.now, s.phase, s.epoch);
        for (slot, sess) in s.slots.iter_mut().enumerate() {
            if let Some(t) = sess.wakes.as_mut() {
                *t = now + s.phases.rescale(*t - now, from, to);
                self.events.push(
                    *t,
                    Ev::Send {
                        session: slot as u32,
                        epoch,
                    },
                );
            }
        }
    }

    /// The workload's next phase begins: from now on an open population arrives at
    /// its rate (the pending arrival redrawn: memoryless, so exact), sessions walk its
    /// chain from their next step on, and its tiers' visits take its added delays.
    pub(super) fn workload_phase(&mut self) {
        let i = self.next_workload_phase;
        self.next_workload_phase += 1;
        let phases = &self.m.workload.phases;
        let (rate, chain) = (phases[i].session_rate, phases[i].matrix.is_some());
        for d in &phases[i].delay {
            self.added_delay[d.tier] = d.seconds;
        }
        if let Some(next) = phases.get(i + 1) {
            self.events.push(next.at, Ev::WorkloadPhase);
        }
        // `navigators` holds one chain per phase with a matrix, in order.
        self.sessions.chain += usize::from(chain);
        if let Some(rate) = rate {
            self.sessions.rate = rate;
            self.sessions.arrivals += 1;
            self.schedule_arrival();
        }
    }

    #[inline(always)]
    fn schedule_arrival(&mut self) {
        if let Population::Closed { .. } = self.m.workload.population {
            return;
        }
        let s = &self.sessions;
        let gap = s.phases.arrival_gap(s.rate, s.phase, &mut self.rng);
        let epoch = self.sessions.arrivals;
        self.events
            .push(self.now + gap, Ev::SessionArrival { epoch });
    }

    #[inline(always)]
    pub(super) fn session_arrival(&mut self, epoch: u32) {
        if epoch != self.sessions.arrivals {
            return; // drawn at a rate that no longer holds
        }
        self.schedule_arrival();
        if let Some((slot, ty)) = self.begin_session() {
            self.start_request(slot, ty);
        }
    }

    /// A closed-population client starts its next session with a think time. Sessions
    /// that end before any request (the chain went from its entry state to its end) are
    /// replaced in a loop, not by recursion: a long run of them overflowed the stack.
    /// `Model::check` makes sure a request is reachable, so the loop ends.
    fn new_session_after_think(&mut self) {
        loop {
            if let Some((slot, ty)) = self.begin_session() {
                self.sessions.slots[slot as usize].pending = ty;
                self.schedule_send(slot);
                return;
            }
        }
    }

    fn schedule_send(&mut self, slot: u32) {
        let s = &mut self.sessions;
        let sess = &mut s.slots[slot as usize];
        let think = self.m.workload.think.sample(sess.rng.get(Stream::Think));
        let wakes = self.now + think / s.phases.factor(s.phase);
        sess.wakes = Some(wakes);
        let epoch = s.epoch;
        self.events.push(
            wakes,
            Ev::Send {
                session: slot,
                epoch,
            },
        );
    }

    pub(super) fn send(&mut self, slot: u32, epoch: u32) {
        if epoch != self.sessions.epoch {
            return; // rescheduled at a phase switch
        }
        self.sessions.slots[slot as usize].wakes = None;
        let ty = self.sessions.slots[slot as usize].pending;
        self.start_request(slot, ty);
    }

    /// Create a session and choose its first page; None if it ends before any request.
    #[inline(always)]
    fn begin_session(&mut self) -> Option<(u32, usize)> {
        let s = &mut self.sessions;
        let (w, now) = (&self.m.workload, self.now);
        let (slot, new_slot) = match s.free.pop() {
            Some(slot) => (slot, false),
            None => {
                s.slots.push(Session::default());
                ((s.slots.len() - 1) as u32, true)
            }
        };
        s.next_id += 1;
        if s.measuring {
            s.started += 1;
        }
        let sess = &mut s.slots[slot as usize];
        sess.id = s.next_id;
        sess.wakes = None;
        sess.connection = None;
        // A closed population's slot is its client's (a client's next session takes the
        // slot its last one freed), and the client's streams go on across its sessions.
        match w.population {
            Population::Open { .. } => sess.rng.reseed(session_seed(s.seed, s.next_id)),
            Population::Closed { .. } if new_slot => {
                sess.rng.reseed(client_seed(s.seed, u64::from(slot)))
            }
            Population::Closed { .. } => {}
        }
        let navigator = &s.navigators[s.chain];
        navigator.begin(w, &mut sess.walk, sess.rng.get(Stream::Session), now);
        sess.weight = w.weight.sample(sess.rng.get(Stream::Session));
        sess.homes.clear();
        sess.homes.resize(s.tiers, (None, None));
        match navigator.first(w, &mut sess.walk, sess.rng.get(Stream::Navigation), now) {
            Some(ty) => Some((slot, ty)),
            None => {
                self.count_ended(slot);
                None
            }
        }
    }

    /// A request of the session finished (any status): choose what comes next.
    #[inline(always)]
    pub(super) fn request_done(&mut self, slot: u32) {
        let s = &mut self.sessions;
        let sess = &mut s.slots[slot as usize];
        let rng = sess.rng.get(Stream::Navigation);
        match s.navigators[s.chain].next(&self.m.workload, &mut sess.walk, rng, self.now) {
            Some(ty) => {
                sess.pending = ty;
                self.schedule_send(slot);
            }
            None => self.end_session(slot),
        }
    }

    fn end_session(&mut self, slot: u32) {
        self.count_ended(slot);
        if matches!(self.m.workload.population, Population::Closed { .. }) {
            self.new_session_after_think();
        }
    }

    /// Count a finished session and free its slot; its connection, if it holds one,
    /// closes, and a session waiting for one takes it.
    fn count_ended(&mut self, slot: u32) {
        if let Some((server, p)) = self.sessions.slots[slot as usize].connection.take() {
            self.give_back(server as usize, p, false);
        }
        let s = &mut self.sessions;
        if s.measuring {
            s.completed += 1;
            s.requests_of_completed += s.slots[slot as usize].walk.requests;
        }
        s.free.push(slot);
    }
}
