//! A session's walk through the chain of request types — the next page, BACK through a
//! history, and when the session ends. One implementation, used by the simulator and
//! by the live load generator alike.

use rand::RngExt;
use rand_pcg::Pcg64Mcg;

use crate::spec::{SessionEnd, StateRole, Workload};

/// Pages kept for BACK; older ones are forgotten.
const HISTORY: usize = 64;

/// One session's place in the chain.
#[derive(Default)]
pub struct Walk {
    state: usize,
    history: Vec<usize>,
    /// Requests finished so far (any status).
    pub requests: u64,
    limit: u64,
    deadline: f64,
}

/// The chain with its rows as cumulative probabilities, for sampling.
pub struct Navigator {
    cumulative: Vec<Vec<f64>>,
}

impl Navigator {
    pub fn new(w: &Workload) -> Self {
        let cumulative = w
            .chain
            .matrix
            .iter()
            .map(|row| {
                let mut acc = 0.0;
                row.iter()
                    .map(|p| {
                        acc += p;
                        acc
                    })
                    .collect()
            })
            .collect();
        Navigator { cumulative }
    }

    /// Reset `walk` for a new session at time `now`: draws its length or deadline
    /// (from `rng`, the session stream) and keeps the history's allocation.
    pub fn begin(&self, w: &Workload, walk: &mut Walk, rng: &mut Pcg64Mcg, now: f64) {
        let (limit, deadline) = match &w.end {
            SessionEnd::Chain => (u64::MAX, f64::INFINITY),
            SessionEnd::AfterRequests { count } => {
                (count.sample(rng).round().max(1.0) as u64, f64::INFINITY)
            }
            SessionEnd::AfterTime { duration, .. } => (u64::MAX, now + duration.sample(rng)),
        };
        walk.history.clear();
        walk.state = w.chain.start;
        walk.requests = 0;
        walk.limit = limit;
        walk.deadline = deadline;
    }

    /// The session's first request type; None if it ends before any request.
    pub fn first(
        &self,
        w: &Workload,
        walk: &mut Walk,
        rng: &mut Pcg64Mcg,
        now: f64,
    ) -> Option<usize> {
        match w.chain.roles[walk.state] {
            StateRole::Request(ty) => {
                walk.history.push(walk.state);
                Some(ty)
            }
            _ => self.navigate(w, walk, rng, now),
        }
    }

    /// A request of the session finished (any status): the next request type, or None
    /// when the session ends.
    pub fn next(
        &self,
        w: &Workload,
        walk: &mut Walk,
        rng: &mut Pcg64Mcg,
        now: f64,
    ) -> Option<usize> {
        walk.requests += 1;
        if walk.requests >= walk.limit {
            return None;
        }
        self.navigate(w, walk, rng, now)
    }

    /// Walk from the current state to the next page; None = the session ends (End
    /// state, BACK with no history, or the session-time rule).
    fn navigate(
        &self,
        w: &Workload,
        walk: &mut Walk,
        rng: &mut Pcg64Mcg,
        now: f64,
    ) -> Option<usize> {
        let chain = &w.chain;
        let at_state = match w.end {
            SessionEnd::AfterTime { at_state, .. } => at_state,
            _ => None,
        };
        // Bounded: a chain of Entry states that never reaches a page ends the session.
        for _ in 0..1000 {
            let row = &self.cumulative[walk.state];
            let u = rng.random::<f64>() * row[row.len() - 1];
            let to = row.partition_point(|c| *c <= u).min(row.len() - 1);
            let page = match chain.roles[to] {
                StateRole::End => return None,
                StateRole::Entry => {
                    walk.state = to;
                    continue;
                }
                StateRole::Back => {
                    walk.history.pop();
                    *walk.history.last()?
                }
                StateRole::Request(_) => {
                    if walk.history.len() == HISTORY {
                        walk.history.remove(0);
                    }
                    walk.history.push(to);
                    to
                }
            };
            if now >= walk.deadline && at_state.is_none_or(|s| s == page) {
                return None;
            }
            walk.state = page;
            let StateRole::Request(ty) = chain.roles[page] else {
                unreachable!("history holds pages only")
            };
            return Some(ty);
        }
        None
    }
}
