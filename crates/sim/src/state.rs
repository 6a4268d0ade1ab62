//! The simulation's state, shared by the engine that changes it and the observer that
//! reads it: servers with their pools, stations and visit counters, and requests with
//! their stacks of visits. Plain data with the small methods that keep it consistent;
//! no module here knows the engine.

use crate::model::{Station as StationSpec, Tier};
use crate::pool::Pool;
use crate::station::{Fcfs, Ps};
use crate::timeavg::TimeAvg;

pub(crate) enum StationState {
    Cpu(Ps),
    Disk(Fcfs),
}

impl StationState {
    pub(crate) fn busy(&mut self) -> &mut TimeAvg {
        match self {
            StationState::Cpu(s) => &mut s.busy,
            StationState::Disk(s) => &mut s.busy,
        }
    }
}

pub(crate) struct Server {
    pub(crate) tier: usize,
    pub(crate) pools: Vec<Pool>,
    pub(crate) stations: Vec<StationState>,
    pub(crate) stats: ServerStats,
    /// Garbage collection: MB allocated since the last collection, and whether one is
    /// in progress.
    pub(crate) allocated: f64,
    pub(crate) in_gc: bool,
}

impl Server {
    /// A server of tier `tier` (its index), idle: its pools' tokens free, its stations
    /// empty.
    pub(crate) fn new(tier: usize, spec: &Tier) -> Server {
        Server {
            tier,
            pools: spec.pools.iter().map(Pool::new).collect(),
            stations: spec
                .stations
                .iter()
                .map(|st| match st {
                    StationSpec::Cpu {
                        cores,
                        speed,
                        overhead,
                        ..
                    } => {
                        let ps = Ps::new(*cores, *speed, overhead.clone());
                        StationState::Cpu(match spec.interpreter_lock {
                            Some(l) => ps.with_lock(l.switch_interval, l.handoff),
                            None => ps,
                        })
                    }
                    StationSpec::Disk { channels, .. } => StationState::Disk(Fcfs::new(*channels)),
                })
                .collect(),
            stats: ServerStats::default(),
            allocated: 0.0,
            in_gc: false,
        }
    }
}

/// One visit of a request to a server: where it is in that tier's program.
#[derive(Clone, Copy, Default)]
pub(crate) struct Frame {
    pub(crate) tier: u16,
    /// Global server index.
    pub(crate) server: u32,
    /// The dispatcher that sent the visit here.
    pub(crate) dispatcher: u16,
    /// The session's state is not on this server (it must be fetched).
    pub(crate) remote: bool,
    pub(crate) pc: u32,
    pub(crate) loop_base: u32,
    /// Bit i set = this visit holds a token of pool i of its server.
    pub(crate) held: u64,
    /// Subset of `held`: tokens cached by the visit but not in use (after a Close).
    pub(crate) idle: u64,
    /// 1 + the pool whose acquisition cost is running (0: none), counted as waiting for it.
    pub(crate) opening: u8,
    /// Subset of `held`: pools held exclusively (every token).
    pub(crate) exclusive: u64,
    pub(crate) phase: u8,
    pub(crate) since: f64,
    pub(crate) entered: f64,
}

/// A request's stack of visits, a call to the next tier on top of its caller's. The
/// top one, the visit running, is kept in place: every step of the program reads it,
/// and a request that calls no deeper tier never has a second.
#[derive(Default)]
pub(crate) struct Visits {
    top: Frame,
    below: Vec<Frame>,
    depth: u32,
}

impl Visits {
    pub(crate) fn last(&self) -> Option<&Frame> {
        (self.depth > 0).then_some(&self.top)
    }

    /// The running visit. A request whose program runs has one; asserted in debug
    /// builds only (`cargo test`): on every step, the check cost 10 instructions per
    /// M/M/8 customer. On an empty stack this would be a stale frame, not a panic.
    #[inline(always)]
    pub(crate) fn top(&mut self) -> &mut Frame {
        debug_assert!(self.depth > 0, "a running request has a visit");
        &mut self.top
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.depth == 0
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, f: Frame) {
        if self.depth > 0 {
            self.below.push(self.top);
        }
        self.top = f;
        self.depth += 1;
    }

    #[inline(always)]
    pub(crate) fn pop(&mut self) -> Frame {
        // On an empty stack the depth wraps in release builds and the `expect` panics:
        // no explicit check (it cost 5 instructions per M/M/8 customer).
        debug_assert!(self.depth > 0, "a visit to end");
        let f = self.top;
        self.depth -= 1;
        if self.depth > 0 {
            self.top = self
                .below
                .pop()
                .expect("a visit to end (depth counts the visits)");
        }
        f
    }

    pub(crate) fn clear(&mut self) {
        self.below.clear();
        self.depth = 0;
    }
}

#[derive(Default)]
pub(crate) struct Req {
    pub(crate) id: u64,
    pub(crate) session: u32,
    pub(crate) ty: u32,
    pub(crate) start: f64,
    /// Arrived after the warm-up: counted and recorded.
    pub(crate) measured: bool,
    pub(crate) visits: Visits,
    /// (first instruction of the body, iterations left) of the open loops.
    pub(crate) loops: Vec<(u32, u32)>,
    pub(crate) tiers: Vec<TierAcc>,
    /// Ticket of the pool wait in progress (0 = not waiting), and which pool.
    pub(crate) ticket: u64,
    pub(crate) waiting_pool: u16,
    /// The wait is for every token of `waiting_pool`.
    pub(crate) waiting_exclusive: bool,
    /// Waiting to retransmit a connection attempt to `waiting_pool`.
    pub(crate) retrying: bool,
    /// Network latency of the transfer in progress on a shared link (added when its
    /// bytes are through).
    pub(crate) link_latency: f64,
    pub(crate) retransmissions: u32,
    pub(crate) disk_left: u32,
}

/// A server's visit counters: the engine counts visits as they come and go, the
/// observer reads (and restarts) them per window and at the end.
#[derive(Default)]
pub(crate) struct ServerStats {
    /// Visits in progress.
    pub(crate) concurrency: TimeAvg,
    // This window.
    pub(crate) arrivals: u64,
    pub(crate) completions: u64,
    pub(crate) residence: f64,
    // The measured period.
    pub(crate) visits: u64,
    pub(crate) residence_total: f64,
    pub(crate) gc_pauses: u64,
    pub(crate) gc_time: f64,
}

impl ServerStats {
    #[inline]
    pub(crate) fn enter(&mut self, now: f64) {
        self.arrivals += 1;
        self.concurrency.add(now, 1.0);
    }

    #[inline]
    pub(crate) fn leave(&mut self, now: f64, entered: f64, measuring: bool) {
        self.concurrency.add(now, -1.0);
        self.completions += 1;
        self.residence += now - entered;
        if measuring {
            self.visits += 1;
            self.residence_total += now - entered;
        }
    }

    /// A garbage-collection pause began during the measured period.
    pub(crate) fn gc_pause(&mut self, pause: f64) {
        self.gc_pauses += 1;
        self.gc_time += pause;
    }
}

/// One request's accumulators on one tier: its columns of the request records.
#[derive(Clone, Copy, Default)]
pub(crate) struct TierAcc {
    /// Tier-local server of the first visit (−1: not visited).
    pub(crate) server: i32,
    pub(crate) visits: u32,
    pub(crate) time: f64,
    pub(crate) phases: [f64; 6],
    pub(crate) db_requests: u32,
    /// Calls to the next tier (the database, as `twin calibrate` takes it): `db_queries`.
    pub(crate) db_queries: u32,
    /// CPU work drawn at the tier (seconds of one core at speed 1), and the part of it
    /// that was a connection pool's `acquire_cpu`.
    pub(crate) cpu_time: f64,
    pub(crate) pool_cpu_time: f64,
    /// Wall time inside calls to the next tier, and when the current one began.
    pub(crate) db_time: f64,
    pub(crate) call_since: f64,
}
