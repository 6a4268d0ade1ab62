//! Soft, token-based resources: a counted set of tokens held exclusively, with a FIFO
//! or priority queue of waiters. Timed-out waiters are removed lazily (skipped when
//! they reach the head), so a timeout costs O(1).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::model::{Discipline, Pool as Spec};
use crate::timeavg::TimeAvg;

/// A waiter: (priority, arrival order, request slot, ticket). Ordered so that the
/// max-heap yields the lowest priority value, then the earliest arrival.
type Waiter = (Reverse<i32>, Reverse<u64>, u32, u64);

pub struct Pool {
    size: u32,
    fifo: bool,
    waiters: BinaryHeap<Waiter>,
    arrivals: u64,
    pub in_use: u32,
    /// Live waiters (the heap may also hold timed-out ones not yet skipped).
    pub queued: u32,
    pub busy: TimeAvg,
    pub queue: TimeAvg,
    pub rejected: Count,
    /// Connection attempts refused while the pool was full, to be retransmitted.
    pub dropped: Count,
}

/// An event counter read per monitoring window and over the measured period.
#[derive(Default)]
pub struct Count {
    pub window: u64,
    pub total: u64,
}

impl Count {
    pub fn add(&mut self) {
        self.window += 1;
        self.total += 1;
    }

    /// This window's count, restarting the window.
    pub fn take_window(&mut self) -> f64 {
        std::mem::take(&mut self.window) as f64
    }
}

pub enum Acquire {
    Granted,
    Queued,
    /// No token and no room to wait: the caller rejects (and counts) or retransmits.
    Full,
}

impl Pool {
    pub fn new(spec: &Spec) -> Self {
        Pool {
            size: spec.size,
            fifo: spec.discipline == Discipline::Fifo,
            waiters: BinaryHeap::new(),
            arrivals: 0,
            in_use: 0,
            queued: 0,
            busy: TimeAvg::default(),
            queue: TimeAvg::default(),
            rejected: Count::default(),
            dropped: Count::default(),
        }
    }

    pub fn acquire(
        &mut self,
        now: f64,
        spec: &Spec,
        req: u32,
        priority: i32,
        ticket: u64,
    ) -> Acquire {
        if self.in_use < self.size {
            self.in_use += 1;
            self.busy.set(now, self.in_use as f64);
            return Acquire::Granted;
        }
        let may_wait = spec.timeout != Some(0.0) && spec.max_queue.is_none_or(|q| self.queued < q);
        if !may_wait {
            return Acquire::Full;
        }
        self.arrivals += 1;
        let prio = if self.fifo { 0 } else { priority };
        self.waiters
            .push((Reverse(prio), Reverse(self.arrivals), req, ticket));
        self.queued += 1;
        self.queue.set(now, self.queued as f64);
        Acquire::Queued
    }

    /// A waiter gave up (timeout); it stays in the heap until it reaches the head.
    pub fn abandon(&mut self, now: f64) {
        self.queued -= 1;
        self.queue.set(now, self.queued as f64);
        self.rejected.add();
    }

    /// Return a token. `is_live(req, ticket)` tells whether a waiter still waits; the
    /// token passes to the first live waiter, which is returned.
    pub fn release(&mut self, now: f64, mut is_live: impl FnMut(u32, u64) -> bool) -> Option<u32> {
        while let Some((_, _, req, ticket)) = self.waiters.pop() {
            if is_live(req, ticket) {
                self.queued -= 1;
                self.queue.set(now, self.queued as f64);
                return Some(req);
            }
        }
        self.in_use -= 1;
        self.busy.set(now, self.in_use as f64);
        None
    }
}
