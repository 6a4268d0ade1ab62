//! The workload: sessions walking a Markov chain of request types with think times,
//! as an open (Poisson session arrivals) or closed (N emulated browsers) population.

use trace::summary::{mean, SessionSummary};
use workload::burst::Phases;
use workload::rng::{burst_streams, Streams};
use workload::spec::{Population, Workload};
use workload::walk::{navigators, Navigator, Walk};

#[derive(Default)]
pub(crate) struct Session {
    pub(crate) id: u64,
    pub(crate) walk: Walk,
    /// The request type to send when the think time ends, and when that is (None: not
    /// thinking).
    pub(crate) pending: usize,
    pub(crate) wakes: Option<f64>,
    /// Multiplies the CPU work of the session's requests.
    pub(crate) weight: f64,
    /// Its walk's, think times' and length's draws, seeded as the load generator seeds
    /// them (`workload::rng::session_seed`).
    pub(crate) rng: Streams,
    /// Per tier: the server (tier-local) that served the session last — its home, which
    /// holds its state on a stateful tier — and when its previous request reached that
    /// tier's dispatcher.
    pub(crate) homes: Vec<(Option<usize>, Option<f64>)>,
    /// The token the session holds of its entry tier's session-held pool, as (server,
    /// pool), from its first request to its end (`Hold::Session`).
    pub(crate) connection: Option<(u32, u16)>,
}

pub struct Sessions {
    /// Homes kept per session: one per tier, or none when no tier reads them.
    pub(crate) tiers: usize,
    /// Burst modulation: the phases, the current one, and the epoch that invalidates
    /// an arrival or a think time's end scheduled at the previous phase's rate.
    pub(crate) phases: Phases,
    pub(crate) phase: usize,
    pub(crate) epoch: u32,
    /// An open population's session rate in force (the workload's phases change it),
    /// and the epoch that invalidates an arrival drawn at an earlier rate (burst phase
    /// or workload phase): not `epoch`, which also invalidates the sessions' think times.
    pub(crate) rate: f64,
    pub(crate) arrivals: u32,
    pub(crate) burst_rng: Streams,
    pub(crate) seed: u64,
    pub(crate) slots: Vec<Session>,
    pub(crate) free: Vec<u32>,
    pub(crate) next_id: u64,
    /// The chain of each workload phase that has one (`workload::walk::navigators`),
    /// and the one in force: a session's next step follows the chain of its time.
    pub(crate) navigators: Vec<Navigator>,
    pub(crate) chain: usize,
    pub(crate) measuring: bool,
    pub(crate) started: u64,
    pub(crate) completed: u64,
    pub(crate) requests_of_completed: u64,
}

impl Sessions {
    pub fn new(w: &Workload, tiers: usize, seed: u64) -> Self {
        Sessions {
            tiers,
            phases: Phases::new(w.burst.as_ref()),
            phase: 0,
            epoch: 0,
            rate: match w.population {
                Population::Open { session_rate } => session_rate,
                Population::Closed { .. } => 0.0,
            },
            arrivals: 0,
            burst_rng: burst_streams(seed),
            seed,
            slots: Vec::new(),
            free: Vec::new(),
            next_id: 0,
            navigators: navigators(w),
            chain: 0,
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

    pub fn connected(&self, slot: u32) -> bool {
        self.slots[slot as usize].connection.is_some()
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
