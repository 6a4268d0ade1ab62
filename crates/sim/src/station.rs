//! Hardware stations: processor sharing (CPU cores, shared links) and FCFS (disks).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::timeavg::TimeAvg;

/// Processor sharing over `cores` of relative `speed` with a concurrency-dependent
/// slowdown. Every job progresses at the same rate, so the station keeps one "virtual
/// work" clock and each job's finishing tag on it: arrivals and departures cost
/// O(log n), not O(n).
pub struct Ps {
    cores: f64,
    speed: f64,
    overhead: Vec<f64>,
    vwork: f64,
    last: f64,
    /// (finish tag's bits, arrival order, request slot), earliest tag first: a tag is
    /// positive (work is), and a positive f64's bits order as its value.
    jobs: BinaryHeap<Reverse<(u64, u64, u32)>>,
    arrivals: u64,
    /// Stopped (a garbage-collection pause): no job progresses, the CPU is busy.
    paused: bool,
    /// An interpreter lock over the station (`with_lock`): then its jobs are here, not
    /// in `jobs`.
    lock: Option<Lock>,
    pub epoch: u32,
    pub busy: TimeAvg,
}

/// An interpreter lock over a CPU station, as CPython 3 has one per process: one job
/// computes at a time, on one core at the station's speed (`overhead` does not apply).
/// An uncontended job takes the lock at once and keeps it to the end of its CPU step;
/// once another waits, the holder keeps it for at most `switch` seconds more (the
/// waiter's timeout, after which it asks for a drop), then queues behind the waiters.
/// Each change of holder among waiting jobs — a forced switch, or a step's end with
/// others waiting — first costs `handoff` seconds in which no one computes (the woken
/// thread's wake-up). Waiters take the lock in the order they came.
#[derive(Clone)]
struct Lock {
    switch: f64,
    handoff: f64,
    /// (request slot, work left), the holder (or the job taking the lock) first.
    jobs: VecDeque<(u32, f64)>,
    handing_off: bool,
    /// Seconds left of the hand-off, or of the holder's quantum (infinite alone).
    left: f64,
}

impl Lock {
    /// The front job's turn: a hand-off first if it was woken (`woken`), then its quantum.
    fn start(&mut self, woken: bool) {
        if woken && self.handoff > 0.0 {
            self.handing_off = true;
            self.left = self.handoff;
        } else {
            self.handing_off = false;
            self.left = if self.jobs.len() > 1 {
                self.switch
            } else {
                f64::INFINITY
            };
        }
    }

    /// Run the schedule for up to `budget` seconds at `speed`, stopping when the holder's
    /// work is done (its completion is the engine's event); the seconds run.
    fn run(&mut self, budget: f64, speed: f64) -> f64 {
        let mut used = 0.0;
        while let Some(&(_, work)) = self.jobs.front() {
            let dt = budget - used;
            if self.handing_off {
                if self.left > dt {
                    self.left -= dt;
                    return budget;
                }
                used += self.left;
                self.start(false);
                continue;
            }
            let finish = work / speed;
            if finish <= self.left && finish <= dt {
                self.jobs[0].1 = 0.0;
                return used + finish;
            }
            if self.left > dt {
                self.jobs[0].1 -= dt * speed;
                self.left -= dt;
                return budget;
            }
            // The quantum ends first: the holder queues behind the waiters.
            used += self.left;
            self.jobs[0].1 -= self.left * speed;
            self.jobs.rotate_left(1);
            self.start(true);
        }
        used
    }
}

impl Ps {
    pub fn new(cores: u32, speed: f64, mut overhead: Vec<f64>) -> Self {
        // Zero coefficients at the end add exactly nothing to the slowdown; without
        // them the usual `overhead: 0` costs no `powi` call per rate (-4% of a nested
        // model's instructions).
        while overhead.last() == Some(&0.0) {
            overhead.pop();
        }
        Ps {
            cores: cores as f64,
            speed,
            overhead,
            vwork: 0.0,
            last: 0.0,
            jobs: BinaryHeap::new(),
            arrivals: 0,
            paused: false,
            lock: None,
            epoch: 0,
            busy: TimeAvg::default(),
        }
    }

    /// The station under an interpreter lock (`Lock`): `switch` seconds a holder keeps
    /// it while others wait, `handoff` seconds per change of holder.
    pub fn with_lock(mut self, switch: f64, handoff: f64) -> Self {
        self.lock = Some(Lock {
            switch,
            handoff,
            jobs: VecDeque::new(),
            handing_off: false,
            left: f64::INFINITY,
        });
        self
    }

    /// Jobs at the station (holding or waiting for the lock, if it has one).
    fn len(&self) -> usize {
        self.lock.as_ref().map_or(self.jobs.len(), |l| l.jobs.len())
    }

    /// Work done per second by each of n jobs.
    fn rate(&self, n: usize) -> f64 {
        let n = n as f64;
        let share = (self.cores / n).min(1.0);
        let slowdown = self
            .overhead
            .iter()
            .enumerate()
            .fold(1.0, |acc, (j, c)| acc + c * (n - 1.0).powi(j as i32 + 1));
        self.speed * share / slowdown
    }

    fn advance(&mut self, now: f64) {
        if let Some(lock) = &mut self.lock {
            if !self.paused {
                lock.run(now - self.last, self.speed);
            }
        } else if !self.jobs.is_empty() && !self.paused {
            self.vwork += (now - self.last) * self.rate(self.jobs.len());
        }
        self.last = now;
    }

    fn note_jobs(&mut self, now: f64) {
        // Under a lock one job computes (a hand-off counts busy: the switch's own work).
        let n = if self.lock.is_some() {
            self.len().min(1) as f64
        } else {
            self.jobs.len() as f64
        };
        let busy = if self.paused {
            1.0
        } else {
            n.min(self.cores) / self.cores
        };
        self.busy.set(now, busy);
    }

    /// Stop every job (a stop-the-world pause); the scheduled completion goes stale.
    pub fn pause(&mut self, now: f64) {
        self.advance(now);
        self.paused = true;
        self.epoch = self.epoch.wrapping_add(1);
        self.note_jobs(now);
    }

    /// Restart after a pause; the next completion time, if any job waits.
    pub fn resume(&mut self, now: f64) -> Option<f64> {
        self.advance(now);
        self.paused = false;
        self.note_jobs(now);
        (self.len() > 0).then(|| self.next_completion(now))
    }

    /// Add a job; returns the time of the next completion (the caller schedules it
    /// with the new epoch).
    pub fn arrive(&mut self, now: f64, req: u32, work: f64) -> f64 {
        self.advance(now);
        self.arrivals += 1;
        if let Some(lock) = &mut self.lock {
            lock.jobs.push_back((req, work));
            if lock.jobs.len() == 1 {
                lock.start(false); // uncontended: taken at once
            } else if !lock.handing_off {
                lock.left = lock.left.min(lock.switch); // a waiter's timeout starts
            }
        } else {
            let tag = (self.vwork + work).to_bits();
            self.jobs.push(Reverse((tag, self.arrivals, req)));
        }
        self.note_jobs(now);
        self.next_completion(now)
    }

    /// Remove the finished job; returns it and the next completion time, if any.
    pub fn complete(&mut self, now: f64) -> (u32, Option<f64>) {
        self.advance(now);
        let req = if let Some(lock) = &mut self.lock {
            let (req, _) = lock
                .jobs
                .pop_front()
                .expect("completion of an empty locked station");
            if !lock.jobs.is_empty() {
                lock.start(true);
            }
            req
        } else {
            let Reverse((_, _, req)) = self.jobs.pop().expect("completion of an empty PS station");
            req
        };
        self.note_jobs(now);
        let next = (self.len() > 0).then(|| self.next_completion(now));
        (req, next)
    }

    /// The next completion time (infinite while paused), under a new epoch.
    fn next_completion(&mut self, now: f64) -> f64 {
        self.epoch = self.epoch.wrapping_add(1);
        if self.paused {
            return f64::INFINITY;
        }
        if let Some(lock) = &self.lock {
            return now + lock.clone().run(f64::INFINITY, self.speed);
        }
        let Reverse((tag, _, _)) = self.jobs.peek().expect("non-empty");
        now + ((f64::from_bits(*tag) - self.vwork).max(0.0) / self.rate(self.jobs.len()))
    }
}

/// First-come first-served with `channels` identical servers.
pub struct Fcfs {
    channels: usize,
    in_service: usize,
    queue: VecDeque<u32>,
    pub busy: TimeAvg,
}

impl Fcfs {
    pub fn new(channels: u32) -> Self {
        Fcfs {
            channels: channels as usize,
            in_service: 0,
            queue: VecDeque::new(),
            busy: TimeAvg::default(),
        }
    }

    /// True if the job starts service now (the caller schedules its completion).
    pub fn arrive(&mut self, now: f64, req: u32) -> bool {
        if self.in_service < self.channels {
            self.in_service += 1;
            self.busy
                .set(now, self.in_service as f64 / self.channels as f64);
            true
        } else {
            self.queue.push_back(req);
            false
        }
    }

    /// A service ended; returns the next job to start, if one waits.
    pub fn depart(&mut self, now: f64) -> Option<u32> {
        let next = self.queue.pop_front();
        if next.is_none() {
            self.in_service -= 1;
            self.busy
                .set(now, self.in_service as f64 / self.channels as f64);
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ps_shares_one_core_equally() {
        let mut ps = Ps::new(1, 1.0, vec![]);
        assert_eq!(ps.arrive(0.0, 1, 1.0), 1.0);
        // Second job at t=0.5: both progress at 1/2, job 1 has 0.5 left → done at 1.5.
        assert_eq!(ps.arrive(0.5, 2, 1.0), 1.5);
        let (first, next) = ps.complete(1.5);
        assert_eq!((first, next), (1, Some(2.0)));
        assert_eq!(ps.complete(2.0), (2, None));
    }

    #[test]
    fn ps_overhead_slows_every_job() {
        // Two jobs on two cores with 50% linear overhead: each runs at 1/1.5.
        let mut ps = Ps::new(2, 1.0, vec![0.5]);
        ps.arrive(0.0, 1, 1.0);
        assert!((ps.arrive(0.0, 2, 1.0) - 1.5).abs() < 1e-12);
    }

    #[test]
    fn ps_overhead_grows_with_each_power_of_the_others() {
        // Three jobs on two cores, overhead 0.5·(n−1) + 0.25·(n−1)²: slowdown
        // 1 + 0.5·2 + 0.25·4 = 3, each job gets 2/3 of a core, so runs at 2/9.
        let mut ps = Ps::new(2, 1.0, vec![0.5, 0.25]);
        ps.arrive(0.0, 1, 1.0);
        ps.arrive(0.0, 2, 1.0);
        assert!((ps.arrive(0.0, 3, 1.0) - 4.5).abs() < 1e-12);
    }

    #[test]
    fn ps_speed_scales_every_rate() {
        // Twice as fast: alone, 1 s of work takes 0.5 s; with a second job and 50%
        // overhead on one core, each runs at 2 · (1/2) / 1.5 = 2/3.
        let mut ps = Ps::new(1, 2.0, vec![0.5]);
        assert_eq!(ps.arrive(0.0, 1, 1.0), 0.5);
        assert!((ps.arrive(0.0, 2, 1.0) - 1.5).abs() < 1e-12);
    }

    #[test]
    fn ps_equal_tags_finish_in_arrival_order() {
        let mut ps = Ps::new(1, 1.0, vec![]);
        ps.arrive(0.0, 5, 1.0);
        ps.arrive(0.0, 2, 1.0);
        assert_eq!(
            ps.complete(2.0).0,
            5,
            "the first to arrive, not the lower slot"
        );
    }

    #[test]
    fn ps_busy_is_the_share_of_cores_in_use() {
        let mut ps = Ps::new(2, 1.0, vec![]);
        ps.arrive(0.0, 1, 1.0);
        ps.complete(1.0);
        assert_eq!(ps.busy.total_area(2.0), 0.5, "one core of two for 1 s");
    }

    #[test]
    fn a_lock_alone_is_the_cpu_at_its_speed() {
        let mut ps = Ps::new(2, 2.0, vec![0.5]).with_lock(0.005, 0.001);
        assert_eq!(
            ps.arrive(0.0, 1, 1.0),
            0.5,
            "uncontended: no switch, no hand-off"
        );
        assert_eq!(ps.complete(0.5), (1, None));
    }

    #[test]
    fn a_lock_serialises_two_cores() {
        // Two jobs on two cores: without the lock both end at 1; with it (switch
        // longer than the work), one after the other.
        let mut ps = Ps::new(2, 1.0, vec![]).with_lock(10.0, 0.0);
        ps.arrive(0.0, 1, 1.0);
        assert_eq!(ps.arrive(0.0, 2, 1.0), 1.0);
        assert_eq!(ps.complete(1.0), (1, Some(2.0)));
        assert_eq!(ps.complete(2.0), (2, None));
        assert_eq!(ps.busy.total_area(2.0), 1.0, "one core of two for 2 s");
    }

    #[test]
    fn a_lock_round_robins_in_quanta_with_a_handoff_each_change() {
        // Two jobs of 1 s, switch 0.25, hand-off 0.05: A B A B A B A (A ends after 7
        // quanta and 6 hand-offs: 2.05), a hand-off to B, B's last quantum alone:
        // 8 quanta and 7 hand-offs, 2.35.
        let mut ps = Ps::new(1, 1.0, vec![]).with_lock(0.25, 0.05);
        ps.arrive(0.0, 1, 1.0);
        let first = ps.arrive(0.0, 2, 1.0);
        assert!((first - 2.05).abs() < 1e-12, "{first}");
        let (req, next) = ps.complete(first);
        assert_eq!(req, 1);
        assert!((next.unwrap() - 2.35).abs() < 1e-12, "{next:?}");
        // A third job arriving mid-schedule changes it; its own answer stands.
        let mut ps = Ps::new(1, 1.0, vec![]).with_lock(0.25, 0.0);
        ps.arrive(0.0, 1, 1.0);
        ps.arrive(0.1, 2, 0.1); // waits from 0.1; A keeps the lock to 0.35, B runs 0.35-0.45
        assert!((ps.arrive(0.2, 3, 1.0) - 0.45).abs() < 1e-12);
        assert_eq!(ps.complete(0.45).0, 2);
    }

    #[test]
    fn fcfs_queues_beyond_its_channels() {
        let mut d = Fcfs::new(1);
        assert!(d.arrive(0.0, 1));
        assert!(!d.arrive(0.0, 2));
        assert_eq!(d.depart(1.0), Some(2));
        assert_eq!(d.depart(2.0), None);
        assert!(d.arrive(3.0, 3), "idle again after both departures");
    }
}
