//! The workload part of a model: who sends requests, in which order, how often — what
//! the simulator and the live load generator both execute.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::dist::Dist;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    pub entry_tier: usize,
    pub population: Population,
    pub chain: Chain,
    pub think: Dist,
    /// Drawn per session: multiplies the CPU work of its requests.
    pub weight: Dist,
    /// Bursty load: a two-phase Markov modulation of the session arrival rate (open)
    /// or of the think-time rate (closed); None = unmodulated.
    #[serde(default)]
    pub burst: Option<Burst>,
    pub end: SessionEnd,
    /// The workload's changes over the run, in time order; none: it is stationary.
    #[serde(default)]
    pub phases: Vec<Phase>,
}

impl Workload {
    /// Which chain is in force at `t` (seconds from the run's start): an index into
    /// `walk::navigators`, 0 being the workload's own.
    pub fn chain_at(&self, t: f64) -> usize {
        let changes = self.phases.iter().filter(|p| p.matrix.is_some());
        changes.take_while(|p| p.at <= t).count()
    }
}

/// From `at` (seconds from the run's start) on, each change given replaces what was in
/// force, until a later phase changes it again.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    pub at: f64,
    /// An open population's session arrival rate.
    #[serde(default)]
    pub session_rate: Option<f64>,
    /// The chain's matrix (over its states, as `Chain::matrix`): its mix.
    #[serde(default)]
    pub matrix: Option<Vec<Vec<f64>>>,
    /// Seconds added to every visit to a tier.
    #[serde(default)]
    pub delay: Vec<TierDelay>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TierDelay {
    pub tier: usize,
    pub seconds: f64,
}

/// A two-state MMPP as multipliers of the base rate: in phase i the rate is
/// `factor[i]` × base, and the phase leaves i after an exponential time of rate `leave[i]`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Burst {
    pub factor: [f64; 2],
    pub leave: [f64; 2],
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Population {
    Closed { clients: u32 },
    Open { session_rate: f64 },
}

/// What a chain state does when entered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(tag = "kind", content = "type", rename_all = "lowercase")]
pub enum StateRole {
    /// Issue a request of this type.
    Request(usize),
    /// Re-issue the previous page (a history stack, as the RUBBoS/RUBiS clients do).
    Back,
    /// End the session.
    End,
    /// A start-only state that issues nothing (TPC-W's INIT).
    Entry,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Chain {
    pub roles: Vec<StateRole>,
    pub start: usize,
    /// Row-stochastic matrix, rows = from, columns = to.
    pub matrix: Vec<Vec<f64>>,
}

impl Chain {
    /// Whether a session can issue a request: a request state is reached from the
    /// start through entry states (a walk through BACK or END first ends at once).
    pub fn request_reachable(&self) -> bool {
        self.request_reachable_in(&self.matrix)
    }

    /// `request_reachable` with `matrix` in place of the chain's own (a phase's).
    pub fn request_reachable_in(&self, matrix: &[Vec<f64>]) -> bool {
        let mut seen = vec![false; self.roles.len()];
        let mut todo = vec![self.start];
        while let Some(s) = todo.pop() {
            if std::mem::replace(&mut seen[s], true) {
                continue;
            }
            match self.roles[s] {
                StateRole::Request(_) => return true,
                StateRole::Entry => {}
                _ if s != self.start => continue,
                _ => {}
            }
            let row = &matrix[s];
            todo.extend((0..row.len()).filter(|&j| row[j] > 0.0 && !seen[j]));
        }
        false
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SessionEnd {
    /// Only an End state of the chain ends a session.
    Chain,
    /// After a drawn number of requests (rounded, at least 1).
    AfterRequests { count: Dist },
    /// After a drawn duration, at the next entry into `at_state` (or at once if None).
    AfterTime {
        duration: Dist,
        at_state: Option<usize>,
    },
}
