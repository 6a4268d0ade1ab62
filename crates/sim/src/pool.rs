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
    in_use: u32,
    /// Live waiters (the heap may also hold timed-out ones not yet skipped).
    queued: u32,
    pub busy: TimeAvg,
    pub queue: TimeAvg,
    /// Waiters timed out plus requests refused for lack of room to wait.
    pub rejected: Count,
    /// Connection attempts refused while the pool was full, to be retransmitted.
    pub dropped: Count,
    // Over the measured period: tokens granted (at once or after waiting), requests
    // that joined the queue, waiters whose timeout expired, and monitoring windows in
    // which every token was held (counted by the observer).
    pub acquired: u64,
    pub waited: u64,
    pub timed_out: u64,
    pub pinned_windows: u64,
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

#[derive(Debug, PartialEq, Eq)]
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
            acquired: 0,
            waited: 0,
            timed_out: 0,
            pinned_windows: 0,
        }
    }

    pub fn size(&self) -> u32 {
        self.size
    }

    /// Forget the warm-up: the measured period starts now.
    pub fn start_measuring(&mut self, now: f64) {
        self.busy.start_measuring(now);
        self.queue.start_measuring(now);
        self.rejected.total = 0;
        self.dropped.total = 0;
        self.acquired = 0;
        self.waited = 0;
        self.timed_out = 0;
        self.pinned_windows = 0;
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
            self.acquired += 1;
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
        self.waited += 1;
        self.queue.set(now, self.queued as f64);
        Acquire::Queued
    }

    /// A waiter gave up (timeout); it stays in the heap until it reaches the head.
    pub fn abandon(&mut self, now: f64) {
        self.queued -= 1;
        self.queue.set(now, self.queued as f64);
        self.timed_out += 1;
        self.rejected.add();
    }

    /// Return a token. `is_live(req, ticket)` tells whether a waiter still waits; the
    /// token passes to the first live waiter, which is returned.
    pub fn release(&mut self, now: f64, mut is_live: impl FnMut(u32, u64) -> bool) -> Option<u32> {
        while let Some((_, _, req, ticket)) = self.waiters.pop() {
            if is_live(req, ticket) {
                self.queued -= 1;
                self.acquired += 1;
                self.queue.set(now, self.queued as f64);
                return Some(req);
            }
        }
        self.in_use -= 1;
        self.busy.set(now, self.in_use as f64);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PoolKind;

    fn spec(discipline: Discipline, timeout: Option<f64>, max_queue: Option<u32>) -> Spec {
        Spec {
            name: "p".into(),
            kind: PoolKind::Threads,
            size: 1,
            timeout,
            max_queue,
            discipline,
            retransmit: None,
        }
    }

    /// A one-token pool, held by request 0, with `waiters` (request, priority) queued
    /// in that order; request i waits on ticket 100 + i.
    fn held_with(s: &Spec, waiters: &[(u32, i32)]) -> Pool {
        let mut p = Pool::new(s);
        assert_eq!(p.acquire(0.0, s, 0, 0, 100), Acquire::Granted);
        for &(req, prio) in waiters {
            let ticket = 100 + req as u64;
            assert_eq!(p.acquire(0.0, s, req, prio, ticket), Acquire::Queued);
        }
        p
    }

    /// Who gets the token at each release, `is_live` deciding who still waits.
    fn grants(p: &mut Pool, is_live: impl Fn(u32, u64) -> bool) -> Vec<u32> {
        std::iter::from_fn(|| p.release(1.0, &is_live)).collect()
    }

    #[test]
    fn fifo_serves_in_arrival_order_whatever_the_priority() {
        let s = spec(Discipline::Fifo, None, None);
        let mut p = held_with(&s, &[(1, 5), (2, 1), (3, 3)]);
        assert_eq!(grants(&mut p, |_, _| true), [1, 2, 3]);
        assert_eq!(
            p.acquire(2.0, &s, 4, 0, 1),
            Acquire::Granted,
            "the token came back"
        );
    }

    #[test]
    fn priority_serves_the_lowest_value_first_and_fifo_among_equals() {
        let s = spec(Discipline::Priority, None, None);
        let mut p = held_with(&s, &[(1, 5), (2, 1), (3, 5), (4, 1)]);
        assert_eq!(grants(&mut p, |_, _| true), [2, 4, 1, 3]);
    }

    #[test]
    fn abandoned_waiters_are_skipped_when_they_reach_the_head() {
        let s = spec(Discipline::Fifo, Some(1.0), None);
        let mut p = held_with(&s, &[(1, 0), (2, 0), (3, 0)]);
        p.abandon(0.5);
        p.abandon(0.5);
        // Requests 1 and 2 timed out: their tickets are no longer the ones they wait on.
        assert_eq!(grants(&mut p, |req, ticket| req == 3 && ticket == 103), [3]);
        assert_eq!(p.queue.value(), 0.0);
        assert_eq!(
            p.busy.value(),
            0.0,
            "no live waiter left: the token is free"
        );
    }

    #[test]
    fn a_full_queue_or_a_zero_timeout_refuses_at_once() {
        let s = spec(Discipline::Fifo, None, Some(1));
        let mut p = held_with(&s, &[(1, 0)]);
        assert_eq!(p.acquire(0.0, &s, 2, 0, 102), Acquire::Full);
        let s = spec(Discipline::Fifo, Some(0.0), None);
        let mut p = held_with(&s, &[]);
        assert_eq!(p.acquire(0.0, &s, 1, 0, 101), Acquire::Full);
    }

    #[test]
    fn counts_grants_waits_and_timeouts_over_the_measured_period() {
        let s = spec(Discipline::Fifo, Some(1.0), None);
        let mut p = held_with(&s, &[(1, 0)]);
        p.start_measuring(0.0);
        assert_eq!((p.acquired, p.waited), (0, 0), "the warm-up is forgotten");
        assert_eq!(p.acquire(0.1, &s, 2, 0, 102), Acquire::Queued);
        assert_eq!(p.acquire(0.2, &s, 3, 0, 103), Acquire::Queued);
        p.abandon(1.1); // request 2 times out
        let live = |req: u32, ticket: u64| req != 2 && ticket == 100 + req as u64;
        assert_eq!(p.release(1.5, live), Some(1));
        assert_eq!(p.release(1.6, live), Some(3));
        assert_eq!(p.release(1.7, live), None);
        assert_eq!(p.acquire(1.8, &s, 4, 0, 104), Acquire::Granted);
        assert_eq!((p.acquired, p.waited, p.timed_out), (3, 2, 1));
        assert_eq!((p.rejected.total, p.rejected.take_window()), (1, 1.0));
        assert_eq!(p.rejected.take_window(), 0.0, "a new window starts at 0");
        assert_eq!(p.busy.total_max(), 1.0);
    }
}
