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
            let row = &self.matrix[s];
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
