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
    pub rejected_window: u64,
    pub rejected_total: u64,
}

pub enum Acquire {
    Granted,
    Queued,
    Rejected,
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
            rejected_window: 0,
            rejected_total: 0,
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
            self.count_rejection();
            return Acquire::Rejected;
        }
        self.arrivals += 1;
        let prio = if self.fifo { 0 } else { priority };
        self.waiters
            .push((Reverse(prio), Reverse(self.arrivals), req, ticket));
        self.queued += 1;
        self.queue.set(now, self.queued as f64);
        Acquire::Queued
    }

    pub fn count_rejection(&mut self) {
        self.rejected_window += 1;
        self.rejected_total += 1;
    }

    /// A waiter gave up (timeout); it stays in the heap until it reaches the head.
    pub fn abandon(&mut self, now: f64) {
        self.queued -= 1;
        self.queue.set(now, self.queued as f64);
        self.count_rejection();
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
