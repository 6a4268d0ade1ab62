//! The future-event list: a binary heap ordered by (time, insertion order), so that
//! simultaneous events run in the order they were scheduled — deterministic by design.
//! Events for the current instant skip the heap: they queue in a FIFO that is merged
//! with the heap by the same key, so the order is unchanged. A granted waiter resuming
//! when nothing else is due at this instant (the usual case) skips both: it waits in a
//! lane of request slots that goes before either. The next session arrival of an open
//! population waits beside the heap, compared with its top: one pending event that
//! would otherwise sift through the heap at every arrival.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ev {
    /// Close a monitoring window.
    Window,
    /// End of warm-up: statistics start here.
    Warmup,
    /// A new session arrives (open population); stale once the burst phase changed.
    SessionArrival { epoch: u32 },
    /// The burst modulation switches phase.
    BurstSwitch,
    /// The workload's next phase begins (`Workload::phases`).
    WorkloadPhase,
    /// A server's garbage-collection pause ends.
    GcEnd { server: u32 },
    /// A session's think time is over: send its next request.
    Send { session: u32, epoch: u32 },
    /// A request blocked on a timer or a granted pool resumes its program.
    Resume { req: u32 },
    /// The token a waiter was granted reaches it (the pool's `handoff` delay): it takes it and
    /// resumes.
    HandedOff { req: u32 },
    /// A CPU's next completion, valid while its epoch is unchanged.
    StationDone {
        server: u32,
        station: u16,
        epoch: u32,
    },
    /// A disk access of `req` ends.
    DiskDone { server: u32, station: u16, req: u32 },
    /// A shared network link's next completion.
    LinkDone { link: u16, epoch: u32 },
    /// A pool wait may time out; valid only if the request still waits on `ticket`.
    PoolTimeout { req: u32, ticket: u64 },
    /// Requests held at a dispatcher whose wait limit has passed are rejected.
    DispatchExpire { tier: u16, dispatcher: u16 },
    /// Dispatchers sharing a tier's servers exchange load metrics…
    Sync { tier: u16 },
    /// …which arrive after the configured delay.
    SyncDeliver { tier: u16 },
}

/// `key` packs (time, insertion order) into one integer that orders as the pair does:
/// the bits of a non-negative f64 order as its value, so one u128 comparison replaces
/// a float comparison and a tie-break on the hottest path of the engine. Keys are
/// unique (the insertion order is in them), so equality is never a question the heap
/// asks: `Eq` is derived only because `Ord` requires it.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Entry {
    key: u128,
    ev: Ev,
}

impl Entry {
    fn time(&self) -> f64 {
        f64::from_bits((self.key >> 64) as u64)
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap and we want the earliest event first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.key.cmp(&self.key)
    }
}

pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    /// The heap's top was returned by `pop` but is still in place: the next event for
    /// the heap takes its place (one sift down, where removing it then adding the new
    /// one sift twice and once), and anything else that reads the heap removes it first.
    taken: bool,
    /// Events at `now_bits` (the time of the last event popped), in insertion order.
    /// Each one is later than any event of the heap or the arrival slot at that time
    /// (pushed before it) and earlier than any later time, so `pop` takes the least of
    /// the fronts.
    now: VecDeque<Entry>,
    now_bits: u64,
    seq: u64,
    /// Requests resuming at `now_bits`, in order, ahead of everything else: each joined
    /// when nothing else was due at this instant, so it would have been next anyway.
    ready: VecDeque<u32>,
    /// The key and epoch of a session arrival (`NONE` if none), kept out of the heap,
    /// where it would sift at every arrival: an open population has one pending at a
    /// time, but for a burst switch, which leaves it stale and draws another (that one
    /// goes to the heap). `pop` compares it with the heap's top.
    arrival: u128,
    arrival_epoch: u32,
}

/// No event's key: its time would be NaN.
const NONE: u128 = u128::MAX;

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            taken: false,
            now: VecDeque::new(),
            now_bits: 0,
            seq: 0,
            ready: VecDeque::new(),
            arrival: NONE,
            arrival_epoch: 0,
        }
    }
}

impl EventQueue {
    /// `time` is a simulated time: finite and not negative (`+ 0.0` turns a -0.0 into
    /// 0.0, whose bits would otherwise sort last).
    #[inline(always)]
    pub fn push(&mut self, time: f64, ev: Ev) {
        debug_assert!(time >= 0.0 && time.is_finite(), "event time {time}");
        self.seq += 1;
        let bits = (time + 0.0).to_bits();
        let e = Entry {
            key: (u128::from(bits) << 64) + u128::from(self.seq),
            ev,
        };
        if bits == self.now_bits {
            self.now.push_back(e);
        } else if let (Ev::SessionArrival { epoch }, NONE) = (ev, self.arrival) {
            (self.arrival, self.arrival_epoch) = (e.key, epoch);
        } else if self.taken {
            self.taken = false;
            *self.heap.peek_mut().expect("the taken top is in place") = e;
        } else {
            self.heap.push(e);
        }
    }

    /// Remove the top `pop` returned, if still in place.
    fn settle(&mut self) {
        if self.taken {
            self.taken = false;
            self.heap.pop();
        }
    }

    /// Resume request `req` at the current instant (the time of the last event popped),
    /// in the order `push` would give it; the lane is cheaper to go through than the FIFO.
    #[inline(always)]
    pub fn resume_now(&mut self, req: u32) {
        let heap = self.heap.as_slice();
        let due_now = |i: usize| {
            heap.get(i)
                .is_some_and(|e| (e.key >> 64) as u64 == self.now_bits)
        };
        // The earliest event of the heap: its top, or under a taken top one of its
        // children (indexed: skip/take adapters cost 20 more instructions per call).
        let due = if self.taken {
            due_now(1) || due_now(2)
        } else {
            due_now(0)
        } || (self.arrival >> 64) as u64 == self.now_bits;
        if self.now.is_empty() && !due {
            self.ready.push_back(req);
        } else {
            self.push(f64::from_bits(self.now_bits), Ev::Resume { req });
        }
    }

    /// The next request of the lane, if any: it resumes before anything else.
    #[inline(always)]
    pub fn take_ready(&mut self) -> Option<u32> {
        self.ready.pop_front()
    }

    /// Inlined into the run loop, its one caller: the event comes back in registers,
    /// not through memory (30 instructions less per M/M/8 customer).
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(f64, Ev)> {
        if let Some(req) = self.take_ready() {
            return Some((f64::from_bits(self.now_bits), Ev::Resume { req }));
        }
        self.settle();
        let heap = self.heap.peek().map_or(NONE, |h| h.key);
        if let Some(first) = self.now.front() {
            if first.key < heap.min(self.arrival) {
                return self.now.pop_front().map(|e| (e.time(), e.ev));
            }
        }
        if self.arrival < heap {
            let key = std::mem::replace(&mut self.arrival, NONE);
            self.now_bits = (key >> 64) as u64;
            let epoch = self.arrival_epoch;
            return Some((f64::from_bits(self.now_bits), Ev::SessionArrival { epoch }));
        }
        let e = *self.heap.peek()?;
        self.taken = true;
        self.now_bits = (e.key >> 64) as u64;
        Some((e.time(), e.ev))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_for_the_current_instant_keep_their_order_with_the_heap() {
        let mut q = EventQueue::default();
        q.push(1.0, Ev::Resume { req: 1 });
        q.push(1.0, Ev::Resume { req: 2 });
        q.push(2.0, Ev::Window);
        assert_eq!(q.pop(), Some((1.0, Ev::Resume { req: 1 })));
        // At 1.0 now: these two queue beside the heap, after request 2 (pushed first).
        q.push(1.0, Ev::Resume { req: 3 });
        q.push(1.0, Ev::Resume { req: 4 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        let at1 = |req| (1.0, Ev::Resume { req });
        assert_eq!(order, vec![at1(2), at1(3), at1(4), (2.0, Ev::Window)]);
    }

    #[test]
    fn many_ties_pop_in_insertion_order() {
        // Enough equal times that a heap without the insertion order in its key would
        // return some of them out of order.
        let mut q = EventQueue::default();
        for req in 0..64 {
            q.push(1.0, Ev::Resume { req });
        }
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(
            order,
            (0..64).map(|req| Ev::Resume { req }).collect::<Vec<_>>()
        );
    }

    #[test]
    fn negative_zero_is_time_zero() {
        let mut q = EventQueue::default();
        q.push(0.5, Ev::Window);
        q.push(-0.0, Ev::Warmup);
        assert_eq!(q.pop(), Some((0.0, Ev::Warmup)));
    }

    #[test]
    fn an_event_for_the_current_instant_skips_the_heap() {
        let mut q = EventQueue::default();
        q.push(1.0, Ev::Window);
        q.pop();
        q.push(1.0, Ev::Resume { req: 1 });
        q.push(2.0, Ev::Warmup);
        assert_eq!((q.now.len(), q.heap.len()), (1, 1));
    }

    #[test]
    fn the_next_session_arrival_kept_apart_keeps_its_place() {
        let mut q = EventQueue::default();
        q.push(1.0, Ev::Resume { req: 1 });
        q.push(1.0, Ev::SessionArrival { epoch: 7 });
        q.push(0.5, Ev::SessionArrival { epoch: 6 }); // a second one: to the heap
        assert_eq!(q.pop(), Some((0.5, Ev::SessionArrival { epoch: 6 })));
        assert_eq!(q.pop(), Some((1.0, Ev::Resume { req: 1 })));
        // The arrival pushed before it is due at this instant: no lane for request 2.
        q.resume_now(2);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        let at1 = |ev| (1.0, ev);
        assert_eq!(
            order,
            [
                at1(Ev::SessionArrival { epoch: 7 }),
                at1(Ev::Resume { req: 2 })
            ]
        );
    }

    #[test]
    fn a_request_resumed_now_keeps_the_order_push_would_give_it() {
        let mut q = EventQueue::default();
        q.push(1.0, Ev::Window);
        q.push(2.0, Ev::BurstSwitch);
        q.push(1.0, Ev::Warmup);
        q.pop();
        // The heap still holds an event at 1.0, pushed earlier (the second child of the
        // top just taken): the request goes after it.
        q.resume_now(1);
        assert_eq!((q.ready.len(), q.now.len()), (0, 1));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        let at1 = |ev| (1.0, ev);
        assert_eq!(
            order[..2],
            [at1(Ev::Warmup), at1(Ev::Resume { req: 1 })],
            "after the earlier event"
        );
        // At 2.0 nothing else is due: the lane, ahead of what is pushed for 2.0 after it
        // (and a request resumed after that goes behind it, in the FIFO).
        q.push(3.0, Ev::Window);
        q.resume_now(2);
        q.push(2.0, Ev::Warmup);
        q.resume_now(3);
        assert_eq!((q.ready.len(), q.now.len()), (1, 2));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        let at2 = |ev| (2.0, ev);
        assert_eq!(
            order,
            [
                at2(Ev::Resume { req: 2 }),
                at2(Ev::Warmup),
                at2(Ev::Resume { req: 3 }),
                (3.0, Ev::Window)
            ]
        );
    }

    #[test]
    fn pops_in_time_then_insertion_order_whatever_the_mix_of_pushes_and_pops() {
        // Against a plain list searched for its least (time, order): times on a coarse
        // grid so that many tie, some at the current instant, requests resumed at once,
        // session arrivals (one kept apart, any more in the heap).
        let (mut q, mut list, mut order) = (EventQueue::default(), Vec::new(), 0u32);
        let (mut x, mut now) = (12345u64, 0.0);
        for _ in 0..5000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (x >> 33) % 9;
            let time = now + ((x >> 40) % 3) as f64 * 0.5;
            let ev = match r {
                0..=2 => Ev::Resume { req: order },
                3 => Ev::SessionArrival { epoch: order },
                4 => {
                    q.resume_now(order);
                    list.push((now, order, Ev::Resume { req: order }));
                    order += 1;
                    continue;
                }
                _ => {
                    let least = (0..list.len()).min_by(|&i, &j| {
                        let (a, b) = (list[i], list[j]);
                        a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
                    });
                    let want = least.map(|i| list.remove(i));
                    let got = q.pop();
                    assert_eq!(got, want.map(|(t, _, ev)| (t, ev)));
                    now = got.map_or(now, |(t, _)| t);
                    continue;
                }
            };
            q.push(time, ev);
            list.push((time, order, ev));
            order += 1;
        }
    }

    #[test]
    fn earliest_first_and_ties_in_insertion_order() {
        let mut q = EventQueue::default();
        q.push(2.0, Ev::Window);
        q.push(1.0, Ev::Resume { req: 1 });
        q.push(1.0, Ev::Resume { req: 2 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (1.0, Ev::Resume { req: 1 }),
                (1.0, Ev::Resume { req: 2 }),
                (2.0, Ev::Window)
            ]
        );
    }
}
