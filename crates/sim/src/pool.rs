//! Soft, token-based resources: a counted set of tokens held exclusively, with a FIFO
//! or priority queue of waiters. Timed-out waiters are removed lazily (skipped when
//! they reach the head), so a timeout costs O(1).
//!
//! A request takes one token, or all of them (`exclusive`): a pool of size S is then a
//! readers–writer lock for S readers (a MyISAM table lock). Waiters are served in
//! order, so a writer at the head holds back the readers behind it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::model::{Counted, Discipline, Pool as Spec};
use crate::timeavg::TimeAvg;

/// A waiter: (priority, arrival order, request slot, ticket, tokens wanted). Ordered
/// so that the max-heap yields the lowest priority value, then the earliest arrival.
type Waiter = (Reverse<i32>, Reverse<u64>, u32, u64, u32);

/// The waiters in serving order: a FIFO pool's in a plain queue (its order is the
/// arrival order, kept without a heap's sifts), a priority pool's in a heap.
enum Waiters {
    Fifo(VecDeque<Waiter>),
    Priority(BinaryHeap<Waiter>),
}

impl Waiters {
    #[inline(always)]
    fn push(&mut self, w: Waiter) {
        match self {
            Waiters::Fifo(q) => q.push_back(w),
            Waiters::Priority(h) => h.push(w),
        }
    }

    fn head(&self) -> Option<&Waiter> {
        match self {
            Waiters::Fifo(q) => q.front(),
            Waiters::Priority(h) => h.peek(),
        }
    }

    #[inline]
    fn pop(&mut self) {
        match self {
            Waiters::Fifo(q) => q.pop_front(),
            Waiters::Priority(h) => h.pop(),
        };
    }
}

pub struct Pool {
    size: u32,
    /// The spec has a `handoff`: a grant without one skips the spec's look-up.
    pub has_handoff: bool,
    waiters: Waiters,
    arrivals: u64,
    in_use: u32,
    /// Tokens granted to a waiter that has not taken them yet (a hand-off): in use for
    /// whoever asks, but held by no one, so not in `busy`.
    promised: u32,
    /// Live waiters (`waiters` may also hold timed-out ones not yet skipped).
    queued: u32,
    pub busy: TimeAvg,
    pub queue: TimeAvg,
    /// Tokens being handed to the waiter granted them (see `promise`).
    pub handing_off: TimeAvg,
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
    /// Tokens granted since the run began (warm-up included): what an online
    /// controller's interval counts (`control.rs`).
    pub granted: u64,
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
    Queued,
    /// No token and no room to wait: the caller rejects (and counts) or retransmits.
    Full,
}

impl Pool {
    pub fn new(spec: &Spec) -> Self {
        Pool {
            size: spec.size,
            has_handoff: spec.handoff.is_some(),
            waiters: match spec.discipline {
                Discipline::Fifo => Waiters::Fifo(VecDeque::new()),
                Discipline::Priority => Waiters::Priority(BinaryHeap::new()),
            },
            arrivals: 0,
            in_use: 0,
            promised: 0,
            queued: 0,
            busy: TimeAvg::default(),
            queue: TimeAvg::default(),
            handing_off: TimeAvg::default(),
            rejected: Count::default(),
            dropped: Count::default(),
            acquired: 0,
            waited: 0,
            timed_out: 0,
            pinned_windows: 0,
            granted: 0,
        }
    }

    /// An online controller's new size. Shrunk below the tokens held, the pool lets its
    /// holders finish and grants nothing until they are under the size; grown, it
    /// lets in the waiters that now fit at the caller's next `grant`. Exclusive holds
    /// take the size at their acquisition: a pool under control has none (checked).
    pub fn resize(&mut self, size: u32) {
        self.size = size;
    }

    pub fn size(&self) -> u32 {
        self.size
    }

    /// Forget the warm-up: the measured period starts now.
    pub fn start_measuring(&mut self, now: f64) {
        self.busy.start_measuring(now);
        self.queue.start_measuring(now);
        self.handing_off.start_measuring(now);
        self.rejected.total = 0;
        self.dropped.total = 0;
        self.acquired = 0;
        self.waited = 0;
        self.timed_out = 0;
        self.pinned_windows = 0;
    }

    /// Tokens one acquisition takes: one, or every token for an exclusive hold.
    pub fn tokens(&self, exclusive: bool) -> u32 {
        if exclusive {
            self.size
        } else {
            1
        }
    }

    /// Take `tokens` if they are free; false if the request must wait (`wait`).
    #[inline]
    pub fn try_take(&mut self, now: f64, tokens: u32) -> bool {
        // Nobody passes a live waiter: the tokens are free only if none waits.
        if self.in_use + tokens <= self.size && self.queued == 0 {
            self.in_use += tokens;
            self.acquired += 1;
            self.granted += 1;
            self.busy.set(now, self.held());
            true
        } else {
            false
        }
    }

    /// The request that `try_take` turned away queues for `tokens`, unless the pool
    /// allows no wait or its queue is full.
    #[inline(always)]
    pub fn wait(
        &mut self,
        now: f64,
        spec: &Spec,
        req: u32,
        priority: i32,
        ticket: u64,
        tokens: u32,
    ) -> Acquire {
        let may_wait = spec.timeout != Some(0.0) && spec.max_queue.is_none_or(|q| self.queued < q);
        if !may_wait {
            return Acquire::Full;
        }
        self.arrivals += 1;
        self.waiters.push((
            Reverse(priority),
            Reverse(self.arrivals),
            req,
            ticket,
            tokens,
        ));
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

    /// Give back `tokens`; then, in `grant`'s calls, the waiters at the head whose
    /// tokens are free get them.
    pub fn release(&mut self, tokens: u32) {
        self.in_use -= tokens;
    }

    /// The next live waiter at the head whose tokens are free, now holding them; None
    /// when the head must wait (or nobody does). `is_live(req, ticket)` tells whether
    /// a waiter still waits.
    #[inline(always)]
    pub fn grant(&mut self, now: f64, mut is_live: impl FnMut(u32, u64) -> bool) -> Option<u32> {
        // Full: nobody fits, whoever waits.
        while !self.is_full() {
            let Some(&(_, _, req, ticket, tokens)) = self.waiters.head() else {
                break;
            };
            if !is_live(req, ticket) {
                self.waiters.pop();
                continue;
            }
            if self.in_use + tokens > self.size {
                break;
            }
            self.waiters.pop();
            self.in_use += tokens;
            self.queued -= 1;
            self.acquired += 1;
            self.granted += 1;
            self.queue.set(now, self.queued as f64);
            return Some(req);
        }
        self.settle(now);
        None
    }

    /// The waiter just granted `tokens` takes them only after a hand-off: until then
    /// the tokens are free and it still waits (as a live pool's waiter is queued until it
    /// has woken and taken its token), though nobody else may take them.
    pub fn promise(&mut self, now: f64, tokens: u32) {
        self.promised += tokens;
        self.queued += 1;
        self.queue.set(now, self.queued as f64);
        self.handing_off.set(now, self.promised as f64);
    }

    /// A hand-off is over: the waiter holds its `tokens`.
    pub fn claim(&mut self, now: f64, tokens: u32) {
        self.promised -= tokens;
        self.queued -= 1;
        self.busy.set(now, self.held());
        self.queue.set(now, self.queued as f64);
        self.handing_off.set(now, self.promised as f64);
    }

    /// Tokens held by requests (granted ones still being handed off are not).
    /// What a contention term counts (`Counted`): tokens held, or live waiters.
    pub fn count(&self, what: Counted) -> u32 {
        match what {
            Counted::Busy => self.in_use - self.promised,
            Counted::Waiting => self.queued,
        }
    }

    fn held(&self) -> f64 {
        (self.in_use - self.promised) as f64
    }

    /// Every token is in use: `grant` admits nobody.
    pub fn is_full(&self) -> bool {
        self.in_use >= self.size
    }

    /// Record the tokens held after a release and its grants (only if they changed,
    /// so that a token passed straight to a waiter leaves the series untouched).
    pub fn settle(&mut self, now: f64) {
        if self.held() != self.busy.value() {
            self.busy.set(now, self.held());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PoolKind;

    impl Pool {
        /// What the engine does: take the tokens (Ok), or wait for them.
        fn acquire(
            &mut self,
            now: f64,
            s: &Spec,
            req: u32,
            prio: i32,
            ticket: u64,
            n: u32,
        ) -> Result<(), Acquire> {
            if self.try_take(now, n) {
                return Ok(());
            }
            Err(self.wait(now, s, req, prio, ticket, n))
        }
    }

    fn spec(discipline: Discipline, timeout: Option<f64>, max_queue: Option<u32>) -> Spec {
        Spec {
            name: "p".into(),
            kind: PoolKind::Threads,
            size: 1,
            timeout,
            max_queue,
            discipline,
            retransmit: None,
            handoff: None,
            hold: Default::default(),
        }
    }

    /// A one-token pool, held by request 0, with `waiters` (request, priority) queued
    /// in that order; request i waits on ticket 100 + i.
    fn held_with(s: &Spec, waiters: &[(u32, i32)]) -> Pool {
        let mut p = Pool::new(s);
        assert_eq!(p.acquire(0.0, s, 0, 0, 100, 1), Ok(()));
        for &(req, prio) in waiters {
            let ticket = 100 + req as u64;
            assert_eq!(
                p.acquire(0.0, s, req, prio, ticket, 1),
                Err(Acquire::Queued)
            );
        }
        p
    }

    /// Who gets the token at each release, `is_live` deciding who still waits.
    fn grants(p: &mut Pool, is_live: impl Fn(u32, u64) -> bool) -> Vec<u32> {
        std::iter::from_fn(|| pass_on(p, 1.0, &is_live)).collect()
    }

    /// One token given back, and whom it goes to.
    fn pass_on(p: &mut Pool, now: f64, is_live: impl Fn(u32, u64) -> bool) -> Option<u32> {
        p.release(1);
        p.grant(now, is_live)
    }

    #[test]
    fn fifo_serves_in_arrival_order_whatever_the_priority() {
        let s = spec(Discipline::Fifo, None, None);
        let mut p = held_with(&s, &[(1, 5), (2, 1), (3, 3)]);
        assert_eq!(grants(&mut p, |_, _| true), [1, 2, 3]);
        assert_eq!(
            p.acquire(2.0, &s, 4, 0, 1, 1),
            Ok(()),
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
        assert_eq!(p.acquire(0.0, &s, 2, 0, 102, 1), Err(Acquire::Full));
        let s = spec(Discipline::Fifo, Some(0.0), None);
        let mut p = held_with(&s, &[]);
        assert_eq!(p.acquire(0.0, &s, 1, 0, 101, 1), Err(Acquire::Full));
    }

    #[test]
    fn counts_grants_waits_and_timeouts_over_the_measured_period() {
        let s = spec(Discipline::Fifo, Some(1.0), None);
        let mut p = held_with(&s, &[(1, 0)]);
        p.start_measuring(0.0);
        assert_eq!((p.acquired, p.waited), (0, 0), "the warm-up is forgotten");
        assert_eq!(p.acquire(0.1, &s, 2, 0, 102, 1), Err(Acquire::Queued));
        assert_eq!(p.acquire(0.2, &s, 3, 0, 103, 1), Err(Acquire::Queued));
        p.abandon(1.1); // request 2 times out
        let live = |req: u32, ticket: u64| req != 2 && ticket == 100 + req as u64;
        assert_eq!(pass_on(&mut p, 1.5, live), Some(1));
        assert_eq!(pass_on(&mut p, 1.6, live), Some(3));
        assert_eq!(pass_on(&mut p, 1.7, live), None);
        assert_eq!(p.acquire(1.8, &s, 4, 0, 104, 1), Ok(()));
        assert_eq!((p.acquired, p.waited, p.timed_out), (3, 2, 1));
        assert_eq!((p.rejected.total, p.rejected.take_window()), (1, 1.0));
        assert_eq!(p.rejected.take_window(), 0.0, "a new window starts at 0");
        assert_eq!(p.busy.total_max(), 1.0);
    }

    #[test]
    fn an_exclusive_hold_takes_every_token_and_holds_back_the_readers_behind_it() {
        let s = Spec {
            size: 3,
            ..spec(Discipline::Fifo, None, None)
        };
        let mut p = Pool::new(&s);
        let all = p.tokens(true);
        assert_eq!(all, 3);
        // Two readers share the lock; a writer waits for both; a reader after the
        // writer waits too, although a token is free.
        assert_eq!(p.acquire(0.0, &s, 1, 0, 101, 1), Ok(()));
        assert_eq!(p.acquire(0.0, &s, 2, 0, 102, 1), Ok(()));
        assert_eq!(p.acquire(0.0, &s, 3, 0, 103, all), Err(Acquire::Queued));
        assert_eq!(p.acquire(0.0, &s, 4, 0, 104, 1), Err(Acquire::Queued));
        assert_eq!(p.acquire(0.0, &s, 5, 0, 105, 1), Err(Acquire::Queued));
        let live = |_: u32, _: u64| true;
        assert_eq!(
            pass_on(&mut p, 1.0, live),
            None,
            "one reader still holds it"
        );
        assert_eq!(pass_on(&mut p, 2.0, live), Some(3), "the writer");
        assert_eq!(p.grant(2.0, live), None);
        // The writer gives back all three: both readers behind it get in at once.
        p.release(all);
        assert_eq!(p.grant(3.0, live), Some(4));
        assert_eq!(p.grant(3.0, live), Some(5));
        assert_eq!(p.grant(3.0, live), None);
        assert_eq!(p.busy.value(), 2.0);
    }

    #[test]
    fn a_writer_that_gives_up_lets_the_readers_behind_it_in() {
        let s = Spec {
            size: 2,
            ..spec(Discipline::Fifo, Some(1.0), None)
        };
        let mut p = Pool::new(&s);
        assert_eq!(p.acquire(0.0, &s, 1, 0, 101, 1), Ok(()));
        assert_eq!(p.acquire(0.0, &s, 2, 0, 102, 2), Err(Acquire::Queued));
        assert_eq!(p.acquire(0.0, &s, 3, 0, 103, 1), Err(Acquire::Queued));
        p.abandon(1.0);
        assert_eq!(p.grant(1.0, |req, _| req != 2), Some(3));
        assert_eq!(p.grant(1.0, |req, _| req != 2), None);
        assert_eq!(p.busy.value(), 2.0);
    }
}
