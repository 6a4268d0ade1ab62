//! Step programs flattened for execution: loops become jumps, distributions move to an
//! arena so an instruction is a few bytes and `Copy`.

use workload::dist::Dist;

use crate::model::{Contention, Step};

/// What the instructions index: distributions and contention terms.
#[derive(Default)]
pub struct Constants {
    pub dists: Vec<Dist>,
    pub contentions: Vec<Contention>,
}

pub const NO_CONTENTION: u16 = u16::MAX;

#[derive(Debug, Clone, Copy)]
pub enum Instr {
    Acquire {
        pool: u16,
        exclusive: bool,
    },
    Release(u16),
    /// Take a token of the tier's session-held `pool` unless the session holds one
    /// (first in the entry tier's programs; `Hold::Session`).
    Connect(u16),
    Get(u16),
    /// About to take a token of `pool` (at `end`, its Get or Acquire): a Get whose token
    /// is cached jumps there, anything else runs the acquisition cost that follows first.
    Opening {
        pool: u16,
        end: u32,
    },
    Close(u16),
    Drop(u16),
    Cpu {
        station: u16,
        demand: u32,
        /// Index into `Constants::contentions`, or NO_CONTENTION.
        contention: u16,
    },
    Disk {
        station: u16,
        accesses: u32,
    },
    Call(u16),
    /// Draw the iteration count; zero jumps to `end` (just past the matching LoopEnd).
    LoopBegin {
        count: u32,
        end: u32,
    },
    LoopEnd {
        begin: u32,
    },
    Delay {
        time: u32,
        /// Index into `Constants::contentions`, or NO_CONTENTION.
        contention: u16,
    },
    Transfer {
        link: u16,
        bytes: u32,
    },
    /// The session's state is local to the visit's server: jump to `end`.
    SessionBegin {
        end: u32,
    },
    /// The visit waits the delay its tier's workload phase adds, if any (first in the
    /// programs of a tier some phase delays; absent from all others).
    AddedDelay,
    /// The program is done: the visit leaves its tier.
    End,
}

pub fn flatten(steps: &[Step], consts: &mut Constants, out: &mut Vec<Instr>) {
    fn dist(consts: &mut Constants, d: &Dist) -> u32 {
        consts.dists.push(d.clone());
        (consts.dists.len() - 1) as u32
    }
    fn growth(consts: &mut Constants, c: &Option<Contention>) -> u16 {
        c.map_or(NO_CONTENTION, |c| {
            consts.contentions.push(c);
            (consts.contentions.len() - 1) as u16
        })
    }
    for s in steps {
        match s {
            Step::Acquire {
                pool,
                cost,
                exclusive,
            } => {
                opening(*pool as u16, cost, consts, out);
                out.push(Instr::Acquire {
                    pool: *pool as u16,
                    exclusive: *exclusive,
                });
            }
            Step::Release { pool } => out.push(Instr::Release(*pool as u16)),
            Step::Get { pool, cost } => {
                opening(*pool as u16, cost, consts, out);
                out.push(Instr::Get(*pool as u16));
            }
            Step::Close { pool } => out.push(Instr::Close(*pool as u16)),
            Step::Drop { pool } => out.push(Instr::Drop(*pool as u16)),
            Step::Cpu {
                station,
                demand,
                contention,
            } => out.push(Instr::Cpu {
                station: *station as u16,
                demand: dist(consts, demand),
                contention: growth(consts, contention),
            }),
            Step::Disk { station, accesses } => out.push(Instr::Disk {
                station: *station as u16,
                accesses: dist(consts, accesses),
            }),
            Step::Call { tier } => out.push(Instr::Call(*tier as u16)),
            Step::Delay { time, contention } => out.push(Instr::Delay {
                time: dist(consts, time),
                contention: growth(consts, contention),
            }),
            Step::Transfer { link, bytes } => out.push(Instr::Transfer {
                link: *link as u16,
                bytes: dist(consts, bytes),
            }),
            Step::Loop { count, body } => {
                let count = dist(consts, count);
                let begin = out.len();
                out.push(Instr::LoopBegin { count, end: 0 });
                flatten(body, consts, out);
                out.push(Instr::LoopEnd {
                    begin: begin as u32 + 1,
                });
                let end = out.len() as u32;
                out[begin] = Instr::LoopBegin { count, end };
            }
            Step::Session { body } => {
                let begin = out.len();
                out.push(Instr::SessionBegin { end: 0 });
                flatten(body, consts, out);
                out[begin] = Instr::SessionBegin {
                    end: out.len() as u32,
                };
            }
        }
    }
}

/// An acquisition's cost steps, behind the Opening that skips them for a cached token.
fn opening(pool: u16, cost: &[Step], consts: &mut Constants, out: &mut Vec<Instr>) {
    if cost.is_empty() {
        return;
    }
    let begin = out.len();
    out.push(Instr::Opening { pool, end: 0 });
    flatten(cost, consts, out);
    out[begin] = Instr::Opening {
        pool,
        end: out.len() as u32,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_become_jumps() {
        let one = Dist::Constant { value: 1.0 };
        let steps = vec![
            Step::Loop {
                count: one.clone(),
                body: vec![Step::Delay {
                    time: one.clone(),
                    contention: None,
                }],
            },
            Step::Call { tier: 1 },
        ];
        let (mut consts, mut out) = (Constants::default(), vec![]);
        flatten(&steps, &mut consts, &mut out);
        assert!(matches!(out[0], Instr::LoopBegin { end: 3, .. }));
        assert!(matches!(out[2], Instr::LoopEnd { begin: 1 }));
        assert!(matches!(out[3], Instr::Call(1)));
        assert_eq!(consts.dists.len(), 2);
    }

    #[test]
    fn an_acquisition_cost_sits_behind_an_opening_that_lands_on_the_get() {
        let cost = vec![Step::Delay {
            time: Dist::Constant { value: 1.0 },
            contention: None,
        }];
        let (mut consts, mut out) = (Constants::default(), vec![]);
        let get = |cost| Step::Get { pool: 2, cost };
        flatten(&[get(vec![]), get(cost)], &mut consts, &mut out);
        assert!(matches!(out[0], Instr::Get(2)));
        assert!(matches!(out[1], Instr::Opening { pool: 2, end: 3 }));
        assert!(matches!(out[2], Instr::Delay { .. }));
        assert!(matches!(out[3], Instr::Get(2)));
    }
}
