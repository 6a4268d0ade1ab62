//! Bursty load: the two-phase Markov modulation (MMPP) of a workload's rates. The
//! simulator and the live load generator both run the phases through this one type,
//! drawing from the arrivals stream in the same order, so a seed gives the same phase
//! sequence in both.

use rand::RngExt;
use rand_distr::{Distribution, Exp1};

use crate::rng::{Stream, Streams};
use crate::spec::Burst;

/// The burst phases of a workload. In phase i the base rate (session arrivals of an
/// open population, the think-time clock of a closed one) is multiplied by
/// `factor[i]`, and the phase ends after an exponential time of rate `leave[i]`.
/// Without modulation there is one phase, 0, at factor 1, that never ends.
#[derive(Debug, Clone, Copy)]
pub struct Phases {
    factor: [f64; 2],
    /// None: unmodulated.
    leave: Option<[f64; 2]>,
}

impl Phases {
    pub fn new(burst: Option<&Burst>) -> Self {
        match burst {
            Some(b) => Phases {
                factor: b.factor,
                leave: Some(b.leave),
            },
            None => Phases {
                factor: [1.0; 2],
                leave: None,
            },
        }
    }

    /// Whether the phase ever changes (then the caller schedules the switches).
    pub fn modulated(&self) -> bool {
        self.leave.is_some()
    }

    /// The first phase, drawn from the stationary distribution: P(phase 0) =
    /// leave[1] / (leave[0] + leave[1]). Draws nothing when unmodulated.
    pub fn start(&self, rng: &mut Streams) -> usize {
        let Some(leave) = self.leave else { return 0 };
        let u: f64 = rng.get(Stream::Arrivals).random();
        (u >= leave[1] / (leave[0] + leave[1])) as usize
    }

    /// How long a visit to `phase` lasts: exponential with mean 1 / leave[phase].
    #[inline]
    pub fn sojourn(&self, phase: usize, rng: &mut Streams) -> f64 {
        let leave = self.leave.expect("sojourn of an unmodulated workload");
        let x: f64 = Exp1.sample(rng.get(Stream::Arrivals));
        x / leave[phase]
    }

    /// The rate multiplier of `phase`.
    #[inline]
    pub fn factor(&self, phase: usize) -> f64 {
        self.factor[phase]
    }

    /// The gap to the next session arrival of an open population of base `rate`
    /// (sessions per second) in `phase`. Memoryless, so a phase switch may redraw it.
    #[inline]
    pub fn arrival_gap(&self, rate: f64, phase: usize, rng: &mut Streams) -> f64 {
        let x: f64 = Exp1.sample(rng.get(Stream::Arrivals));
        x / (rate * self.factor[phase])
    }

    /// What is left of a think time, `remaining` seconds at the clock rate of phase
    /// `from`, once the clock runs at the rate of phase `to` (exact for exponential
    /// think times; no client sits out a burst in a think drawn before it).
    #[inline]
    pub fn rescale(&self, remaining: f64, from: usize, to: usize) -> f64 {
        remaining * (self.factor[from] / self.factor[to])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BURST: Burst = Burst {
        factor: [1.0, 4.0],
        leave: [1.0, 3.0],
    };

    #[test]
    fn starts_in_the_stationary_distribution() {
        let p = Phases::new(Some(&BURST));
        let n = 20_000;
        let in_0 = (0..n)
            .filter(|&seed| p.start(&mut Streams::new(seed)) == 0)
            .count();
        // P(phase 0) = 3 / (1 + 3); the standard error of the share is 0.003.
        let share = in_0 as f64 / n as f64;
        assert!((share - 0.75).abs() < 0.015, "share in phase 0: {share}");
    }

    #[test]
    fn sojourns_have_mean_one_over_the_leave_rate() {
        let p = Phases::new(Some(&BURST));
        let mut rng = Streams::new(1);
        let n = 100_000;
        for (phase, leave) in BURST.leave.iter().enumerate() {
            let mean = (0..n).map(|_| p.sojourn(phase, &mut rng)).sum::<f64>() / n as f64;
            assert!(
                (mean * leave - 1.0).abs() < 0.02,
                "phase {phase}: mean sojourn {mean}, expected {}",
                1.0 / leave
            );
        }
    }

    #[test]
    fn a_think_time_is_rescaled_by_the_ratio_of_the_factors() {
        let p = Phases::new(Some(&BURST));
        // 2 s left at factor 1 is 0.5 s at factor 4, and back.
        assert_eq!(p.rescale(2.0, 0, 1), 0.5);
        assert_eq!(p.rescale(0.5, 1, 0), 2.0);
        assert_eq!(p.rescale(2.0, 1, 1), 2.0);
        assert_eq!(p.factor(1), 4.0);
    }

    #[test]
    fn unmodulated_is_phase_0_at_factor_1_and_draws_nothing() {
        let p = Phases::new(None);
        let (mut used, mut fresh) = (Streams::new(9), Streams::new(9));
        assert!(!p.modulated());
        assert_eq!(p.start(&mut used), 0);
        assert_eq!(p.factor(0), 1.0);
        let next = |s: &mut Streams| s.get(Stream::Arrivals).random::<u64>();
        assert_eq!(
            next(&mut used),
            next(&mut fresh),
            "start drew from the stream"
        );
    }
}
