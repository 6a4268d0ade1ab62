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
    pub epoch: u32,
    pub busy: TimeAvg,
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
            epoch: 0,
            busy: TimeAvg::default(),
        }
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
        if !self.jobs.is_empty() && !self.paused {
            self.vwork += (now - self.last) * self.rate(self.jobs.len());
        }
        self.last = now;
    }

    fn note_jobs(&mut self, now: f64) {
        let n = self.jobs.len() as f64;
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
        (!self.jobs.is_empty()).then(|| self.next_completion(now))
    }

    /// Add a job; returns the time of the next completion (the caller schedules it
    /// with the new epoch).
    pub fn arrive(&mut self, now: f64, req: u32, work: f64) -> f64 {
        self.advance(now);
        self.arrivals += 1;
        let tag = (self.vwork + work).to_bits();
        self.jobs.push(Reverse((tag, self.arrivals, req)));
        self.note_jobs(now);
        self.next_completion(now)
    }

    /// Remove the finished job; returns it and the next completion time, if any.
    pub fn complete(&mut self, now: f64) -> (u32, Option<f64>) {
        self.advance(now);
        let Reverse((_, _, req)) = self.jobs.pop().expect("completion of an empty PS station");
        self.note_jobs(now);
        let next = (!self.jobs.is_empty()).then(|| self.next_completion(now));
        (req, next)
    }

    /// The next completion time (infinite while paused), under a new epoch.
    fn next_completion(&mut self, now: f64) -> f64 {
        self.epoch = self.epoch.wrapping_add(1);
        if self.paused {
            return f64::INFINITY;
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
    fn fcfs_queues_beyond_its_channels() {
        let mut d = Fcfs::new(1);
        assert!(d.arrive(0.0, 1));
        assert!(!d.arrive(0.0, 2));
        assert_eq!(d.depart(1.0), Some(2));
        assert_eq!(d.depart(2.0), None);
        assert!(d.arrive(3.0, 3), "idle again after both departures");
    }
}
