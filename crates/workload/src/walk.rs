//! A session's walk through the chain of request types — the next page, BACK through a
//! history, and when the session ends. One implementation, used by the simulator and
//! by the live load generator alike.

use rand::{Rng, RngExt};

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
    /// When no row has a choice: the state each row leads to. The walk then draws
    /// nothing (its stream serves only the walk, so no other draw moves).
    fixed: Option<Vec<usize>>,
    /// The chain has a BACK state: only then is a history kept.
    back: bool,
}

impl Navigator {
    pub fn new(w: &Workload) -> Self {
        Self::with_matrix(w, &w.chain.matrix)
    }

    /// The workload's chain navigated by `matrix` (over the chain's states) instead of
    /// its own: a phase's mix.
    pub fn with_matrix(w: &Workload, matrix: &[Vec<f64>]) -> Self {
        let cumulative = matrix
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
            .collect::<Vec<Vec<f64>>>();
        let fixed = cumulative.iter().map(|row| only_outcome(row)).collect();
        let back = w.chain.roles.iter().any(|r| matches!(r, StateRole::Back));
        Navigator {
            cumulative,
            fixed,
            back,
        }
    }

    /// Reset `walk` for a new session at time `now`: draws its length or deadline
    /// (from `rng`, the session stream) and keeps the history's allocation.
    pub fn begin(&self, w: &Workload, walk: &mut Walk, rng: &mut impl Rng, now: f64) {
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
        rng: &mut impl Rng,
        now: f64,
    ) -> Option<usize> {
        match w.chain.roles[walk.state] {
            StateRole::Request(ty) => {
                self.remember(walk, walk.state);
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
        rng: &mut impl Rng,
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
    #[inline(always)]
    fn navigate(
        &self,
        w: &Workload,
        walk: &mut Walk,
        rng: &mut impl Rng,
        now: f64,
    ) -> Option<usize> {
        let chain = &w.chain;
        // Bounded: a chain of Entry states that never reaches a page ends the session.
        for _ in 0..1000 {
            let to = match &self.fixed {
                Some(to) => to[walk.state],
                None => draw(&self.cumulative[walk.state], rng),
            };
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
                    self.remember(walk, to);
                    to
                }
            };
            // The session-time rule ends a session after its first request, never
            // before (as after_requests keeps at least one): a session ended before
            // any request restarted at once, without end, in a closed population.
            if walk.requests > 0 && now >= walk.deadline && ends_at(w, page) {
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

    /// A page the walk reached, for BACK (when the chain has one).
    #[inline(always)]
    fn remember(&self, walk: &mut Walk, page: usize) {
        if self.back {
            if walk.history.len() == HISTORY {
                walk.history.remove(0);
            }
            walk.history.push(page);
        }
    }
}

/// One navigator per chain a run walks: the workload's own, then that of each phase
/// that changes the matrix, in the phases' order (each such phase moves the run on to
/// the next one).
pub fn navigators(w: &Workload) -> Vec<Navigator> {
    let phases = w.phases.iter().filter_map(|p| p.matrix.as_deref());
    std::iter::once(Navigator::new(w))
        .chain(phases.map(|m| Navigator::with_matrix(w, m)))
        .collect()
}

/// Whether a session past its time ends at `page` (the session-time rule's `at_state`:
/// any page when unset).
fn ends_at(w: &Workload, page: usize) -> bool {
    match w.end {
        SessionEnd::AfterTime { at_state, .. } => at_state.is_none_or(|s| s == page),
        _ => true,
    }
}

/// The next state from a row of cumulative probabilities.
fn draw(row: &[f64], rng: &mut impl Rng) -> usize {
    let u = rng.random::<f64>() * row[row.len() - 1];
    row.partition_point(|c| *c <= u).min(row.len() - 1)
}

/// The state `draw` returns whatever it draws, if there is one: the only state of
/// positive probability, or the last for a row of zeros.
fn only_outcome(row: &[f64]) -> Option<usize> {
    let mut positive = (1..row.len()).filter(|&i| row[i] > row[i - 1]);
    let first = if row[0] > 0.0 {
        Some(0)
    } else {
        positive.next()
    };
    match (first, positive.next()) {
        (None, _) => Some(row.len() - 1),
        (Some(i), None) => Some(i),
        (Some(_), Some(_)) => None,
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    use super::*;
    use crate::dist::Dist;
    use crate::spec::{Chain, Phase, Population};

    const A: StateRole = StateRole::Request(0);
    const B: StateRole = StateRole::Request(1);

    /// A workload on a chain whose rows are given as the one state each state goes to.
    fn workload(roles: Vec<StateRole>, to: &[usize], end: SessionEnd) -> Workload {
        let n = roles.len();
        let matrix = to
            .iter()
            .map(|&j| (0..n).map(|k| (k == j) as u8 as f64).collect())
            .collect();
        Workload {
            entry_tier: 0,
            population: Population::Closed { clients: 1 },
            chain: Chain {
                roles,
                start: 0,
                matrix,
            },
            think: Dist::Constant { value: 0.0 },
            weight: Dist::Constant { value: 1.0 },
            burst: None,
            end,
            phases: Vec::new(),
        }
    }

    /// The request types a session issues (at most 20), `next` being called at the
    /// times in `times` (0 once they run out).
    fn session(w: &Workload, times: &[f64]) -> Vec<usize> {
        let (nav, mut walk) = (Navigator::new(w), Walk::default());
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        nav.begin(w, &mut walk, &mut rng, 0.0);
        let mut next = nav.first(w, &mut walk, &mut rng, 0.0);
        let (mut out, mut times) = (Vec::new(), times.iter());
        while let Some(ty) = next {
            out.push(ty);
            if out.len() == 20 {
                break;
            }
            let now = times.next().copied().unwrap_or(0.0);
            next = nav.next(w, &mut walk, &mut rng, now);
        }
        out
    }

    /// Rows need not sum to 1: (0.5, 1.5) goes to A a quarter of the time. Over 4000
    /// steps A's count is 1000 ± 27 (binomial σ); ± 100 is beyond 3.5 σ.
    #[test]
    fn a_row_without_choice_is_the_state_every_draw_gives() {
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        for row in [
            vec![0.0, 0.3, 0.3],
            vec![0.7, 0.7],
            vec![0.0, 0.0, 0.0],
            vec![1.0],
        ] {
            let to = only_outcome(&row).expect("no choice");
            assert!((0..1000).all(|_| draw(&row, &mut rng) == to), "{row:?}");
        }
        assert_eq!(only_outcome(&[0.5, 1.0]), None);
        assert_eq!(only_outcome(&[0.0, 0.5, 0.5, 1.0]), None);
    }

    #[test]
    fn the_next_page_follows_the_row_weights() {
        let mut w = workload(vec![A, B], &[0, 0], SessionEnd::Chain);
        w.chain.matrix = vec![vec![0.5, 1.5]; 2];
        let (nav, mut walk) = (Navigator::new(&w), Walk::default());
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        nav.begin(&w, &mut walk, &mut rng, 0.0);
        nav.first(&w, &mut walk, &mut rng, 0.0);
        let a = (0..4000)
            .filter(|_| nav.next(&w, &mut walk, &mut rng, 0.0) == Some(0))
            .count();
        assert!((900..=1100).contains(&a), "{a}");
    }

    #[test]
    fn each_phase_with_a_matrix_has_its_navigator_in_force_from_its_start() {
        let mut w = workload(vec![A, B], &[0, 0], SessionEnd::Chain);
        let phase = |at, matrix| Phase {
            at,
            session_rate: None,
            matrix,
            delay: Vec::new(),
        };
        w.phases = vec![
            phase(10.0, Some(vec![vec![0.0, 1.0]; 2])),
            phase(20.0, None),
            phase(30.0, Some(vec![vec![1.0, 0.0]; 2])),
        ];
        let navs = navigators(&w);
        assert_eq!(navs.len(), 3);
        let at = [0.0, 9.9, 10.0, 25.0, 30.0, 99.0].map(|t| w.chain_at(t));
        assert_eq!(at, [0, 0, 1, 1, 2, 2]);
        // Every step from a state follows the navigator's own matrix.
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        for (nav, to) in navs.iter().zip([0, 1, 0]) {
            let mut walk = Walk::default();
            nav.begin(&w, &mut walk, &mut rng, 0.0);
            nav.first(&w, &mut walk, &mut rng, 0.0);
            assert!((0..20).all(|_| nav.next(&w, &mut walk, &mut rng, 0.0) == Some(to)));
        }
    }

    #[test]
    fn an_end_state_ends_the_session() {
        let w = workload(vec![A, B, StateRole::End], &[1, 2, 2], SessionEnd::Chain);
        assert_eq!(session(&w, &[]), [0, 1]);
    }

    #[test]
    fn an_entry_state_issues_nothing_and_passes_through() {
        let w = workload(
            vec![StateRole::Entry, B, StateRole::End],
            &[1, 2, 2],
            SessionEnd::Chain,
        );
        assert_eq!(session(&w, &[]), [1]);
        // A chain of Entry states that never reaches a page ends the session.
        let w = workload(vec![StateRole::Entry], &[0], SessionEnd::Chain);
        assert_eq!(session(&w, &[]), Vec::<usize>::new());
    }

    #[test]
    fn back_reissues_the_previous_page_and_ends_with_an_empty_history() {
        let (c, back) = (StateRole::Request(2), StateRole::Back);
        // A → B → C → BACK: B again (not the start), then C, BACK, B, …
        let w = workload(vec![A, B, c, back], &[1, 2, 3, 3], SessionEnd::Chain);
        assert_eq!(session(&w, &[])[..7], [0, 1, 2, 1, 2, 1, 2]);
        // A → BACK: no page before A, the session ends.
        let w = workload(vec![A, back], &[1, 1], SessionEnd::Chain);
        assert_eq!(session(&w, &[]), [0]);
    }

    #[test]
    fn after_requests_ends_the_session_at_the_drawn_count() {
        let count = Dist::Constant { value: 3.0 };
        let w = workload(vec![A], &[0], SessionEnd::AfterRequests { count });
        assert_eq!(session(&w, &[]), [0, 0, 0]);
    }

    #[test]
    fn after_time_ends_at_the_first_entry_into_at_state_past_the_deadline() {
        let duration = Dist::Constant { value: 10.0 };
        let end = |at_state| SessionEnd::AfterTime {
            duration: duration.clone(),
            at_state,
        };
        // A ⇄ B, deadline at t = 10; `next` is called at t = 5, 11, 12.
        let w = workload(vec![A, B], &[1, 0], end(Some(1)));
        assert_eq!(
            session(&w, &[5.0, 11.0, 12.0]),
            [0, 1, 0],
            "A past the deadline is not B"
        );
        let w = workload(vec![A, B], &[1, 0], end(None));
        assert_eq!(
            session(&w, &[5.0, 11.0]),
            [0, 1],
            "without at_state: at once"
        );
    }

    #[test]
    fn a_session_past_its_deadline_still_issues_its_first_request() {
        // From an entry state (TPC-W's INIT) with a zero session time: one request.
        let end = SessionEnd::AfterTime {
            duration: Dist::Constant { value: 0.0 },
            at_state: None,
        };
        let w = workload(vec![StateRole::Entry, A], &[1, 1], end);
        assert_eq!(session(&w, &[1.0, 2.0]), [0]);
    }
}
