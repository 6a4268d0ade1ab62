//! The workload: sessions walking a Markov chain of request types with think times,
//! as an open (Poisson session arrivals) or closed (N emulated browsers) population.

use trace::summary::{mean, SessionSummary};
use workload::burst::Phases;
use workload::rng::{burst_streams, client_seed, session_seed, Stream, Streams};
use workload::spec::{Population, Workload};
use workload::walk::{Navigator, Walk};

use crate::engine::Sim;
use crate::events::Ev;

#[derive(Default)]
struct Session {
    id: u64,
    walk: Walk,
    /// The request type to send when the think time ends, and when that is (None: not
    /// thinking).
    pending: usize,
    wakes: Option<f64>,
    /// Multiplies the CPU work of the session's requests.
    weight: f64,
    /// Its walk's, think times' and length's draws, seeded as the load generator seeds
    /// them (`workload::rng::session_seed`).
    rng: Streams,
    /// Per tier: the server (tier-local) that served the session last — its home, which
    /// holds its state on a stateful tier — and when its previous request reached that
    /// tier's dispatcher.
    homes: Vec<(Option<usize>, Option<f64>)>,
}

pub struct Sessions {
    /// Homes kept per session: one per tier, or none when no tier reads them.
    tiers: usize,
    /// Burst modulation: the phases, the current one, and the epoch that invalidates
    /// an arrival or a think time's end scheduled at the previous phase's rate.
    phases: Phases,
    phase: usize,
    epoch: u32,
    burst_rng: Streams,
    seed: u64,
    slots: Vec<Session>,
    free: Vec<u32>,
    next_id: u64,
    navigator: Navigator,
    measuring: bool,
    started: u64,
    completed: u64,
    requests_of_completed: u64,
}

impl Sessions {
    pub fn new(w: &Workload, tiers: usize, seed: u64) -> Self {
        Sessions {
            tiers,
            phases: Phases::new(w.burst.as_ref()),
            phase: 0,
            epoch: 0,
            burst_rng: burst_streams(seed),
            seed,
            slots: Vec::new(),
            free: Vec::new(),
            next_id: 0,
            navigator: Navigator::new(w),
            measuring: false,
            started: 0,
            completed: 0,
            requests_of_completed: 0,
        }
    }

    pub fn id(&self, slot: u32) -> u64 {
        self.slots[slot as usize].id
    }

    pub fn weight(&self, slot: u32) -> f64 {
        self.slots[slot as usize].weight
    }

    pub fn home(&self, slot: u32, tier: usize) -> Option<usize> {
        self.slots[slot as usize].homes[tier].0
    }

    pub fn set_home(&mut self, slot: u32, tier: usize, server: usize) {
        self.slots[slot as usize].homes[tier].0 = Some(server);
    }

    /// A request of the session reaches `tier` now: the time since its previous one.
    pub fn mark_arrival(&mut self, slot: u32, tier: usize, now: f64) -> Option<f64> {
        let last = &mut self.slots[slot as usize].homes[tier].1;
        let gap = last.map(|t| now - t);
        *last = Some(now);
        gap
    }

    pub fn start_measuring(&mut self) {
        self.measuring = true;
    }

    /// `per_second`: 1 / the measured seconds (0 for none).
    pub fn summary(&self, per_second: f64) -> SessionSummary {
        SessionSummary {
            started: self.started,
            completed: self.completed,
            throughput: self.completed as f64 * per_second,
            mean_requests: mean(self.requests_of_completed as f64, self.completed),
        }
    }
}

impl Sim {
    pub(crate) fn start_workload(&mut self) {
        let s = &mut self.sessions;
        s.phase = s.phases.start(&mut s.burst_rng);
        if self.sessions.phases.modulated() {
            self.schedule_burst_switch();
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
    /// rate, a closed population's think times are rescaled to the new clock rate.
    pub(crate) fn burst_switch(&mut self) {
        let from = self.sessions.phase;
        self.sessions.phase ^= 1;
        self.sessions.epoch += 1;
        self.schedule_burst_switch();
        match self.m.workload.population {
            Population::Open { .. } => self.schedule_arrival(),
            Population::Closed { .. } => {
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
        }
    }

    #[inline(always)]
    fn schedule_arrival(&mut self) {
        let Population::Open { session_rate } = self.m.workload.population else {
            return;
        };
        let s = &self.sessions;
        let gap = s.phases.arrival_gap(session_rate, s.phase, &mut self.rng);
        let epoch = self.sessions.epoch;
        self.events
            .push(self.now + gap, Ev::SessionArrival { epoch });
    }

    #[inline(always)]
    pub(crate) fn session_arrival(&mut self, epoch: u32) {
        if epoch != self.sessions.epoch {
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

    pub(crate) fn send(&mut self, slot: u32, epoch: u32) {
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
        // A closed population's slot is its client's (a client's next session takes the
        // slot its last one freed), and the client's streams go on across its sessions.
        match w.population {
            Population::Open { .. } => sess.rng.reseed(session_seed(s.seed, s.next_id)),
            Population::Closed { .. } if new_slot => {
                sess.rng.reseed(client_seed(s.seed, u64::from(slot)))
            }
            Population::Closed { .. } => {}
        }
        s.navigator
            .begin(w, &mut sess.walk, sess.rng.get(Stream::Session), now);
        sess.weight = w.weight.sample(sess.rng.get(Stream::Session));
        sess.homes.clear();
        sess.homes.resize(s.tiers, (None, None));
        match s
            .navigator
            .first(w, &mut sess.walk, sess.rng.get(Stream::Navigation), now)
        {
            Some(ty) => Some((slot, ty)),
            None => {
                self.count_ended(slot);
                None
            }
        }
    }

    /// A request of the session finished (any status): choose what comes next.
    #[inline(always)]
    pub(crate) fn request_done(&mut self, slot: u32) {
        let s = &mut self.sessions;
        let sess = &mut s.slots[slot as usize];
        let rng = sess.rng.get(Stream::Navigation);
        match s
            .navigator
            .next(&self.m.workload, &mut sess.walk, rng, self.now)
        {
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

    /// Count a finished session and free its slot.
    fn count_ended(&mut self, slot: u32) {
        let s = &mut self.sessions;
        if s.measuring {
            s.completed += 1;
            s.requests_of_completed += s.slots[slot as usize].walk.requests;
        }
        s.free.push(slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gap_is_per_tier_since_the_previous_arrival() {
        let w: Workload = serde_json::from_value(serde_json::json!({
            "entry_tier": 0,
            "population": {"kind": "closed", "clients": 1},
            "chain": {"roles": [{"kind": "request", "type": 0}], "start": 0, "matrix": [[1.0]]},
            "think": {"kind": "constant", "value": 1.0},
            "weight": {"kind": "constant", "value": 1.0},
            "end": {"kind": "chain"},
        }))
        .unwrap();
        let mut s = Sessions::new(&w, 2, 1);
        s.slots.push(Session {
            homes: vec![(None, None); 2],
            ..Default::default()
        });
        assert_eq!(s.mark_arrival(0, 1, 3.0), None, "the first request: no gap");
        assert_eq!(s.mark_arrival(0, 1, 4.5), Some(1.5));
        assert_eq!(s.mark_arrival(0, 0, 5.0), None, "another tier");
        assert_eq!(s.mark_arrival(0, 1, 8.0), Some(3.5));
    }
}
