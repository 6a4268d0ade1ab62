//! Probability distributions used for demands, think times, delays and sizes.

use rand::{Rng, RngExt};
use rand_distr::{Distribution, Exp1, LogNormal, StandardNormal};
use schemars::JsonSchema;
use serde::Deserialize;

/// A distribution as sent by the Python model compiler (already validated there).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
// A tag byte of its own: without it the kind hides in a niche of the empirical's
// vectors, and every draw decodes it (14 instructions more per M/M/8 customer).
#[repr(u8)]
pub enum Dist {
    Constant {
        value: f64,
    },
    /// Exponential with the given mean; `max` caps a draw (TPC-W think times).
    Exponential {
        mean: f64,
        max: Option<f64>,
    },
    Uniform {
        low: f64,
        high: f64,
    },
    /// Normal truncated at zero (negative draws are redrawn).
    Normal {
        mean: f64,
        sd: f64,
    },
    /// Lognormal given by the mean and standard deviation of the variable itself.
    Lognormal {
        mean: f64,
        sd: f64,
    },
    /// Discrete empirical distribution: `values` with cumulative `weights` ending at 1.
    Empirical {
        values: Vec<f64>,
        cumulative: Vec<f64>,
    },
}

impl Dist {
    /// The invariants `sample` relies on: finite, non-negative parameters, a positive
    /// exponential or lognormal mean, and an empirical table with one cumulative
    /// weight per value, non-decreasing up to 1.
    pub fn check(&self) -> Result<(), String> {
        let ok = |x: f64| x.is_finite() && x >= 0.0;
        let fine = match self {
            Dist::Constant { value } => ok(*value),
            Dist::Exponential { mean, max } => ok(*mean) && *mean > 0.0 && max.is_none_or(ok),
            Dist::Uniform { low, high } => ok(*low) && ok(*high) && low <= high,
            Dist::Normal { mean, sd } => ok(*mean) && ok(*sd),
            // σ² = ln(1 + (sd/mean)²) must be finite for the sampler.
            Dist::Lognormal { mean, sd } => {
                ok(*mean) && *mean > 0.0 && ok(*sd) && (sd / mean).powi(2).is_finite()
            }
            Dist::Empirical { values, cumulative } => {
                !values.is_empty()
                    && values.len() == cumulative.len()
                    && values.iter().all(|v| ok(*v))
                    && cumulative.iter().all(|c| ok(*c) && *c <= 1.0)
                    && cumulative.windows(2).all(|w| w[0] <= w[1])
                    && cumulative.last() == Some(&1.0)
            }
        };
        if fine {
            Ok(())
        } else {
            Err(format!("{self:?} is not a valid distribution (parameters must be finite and ≥ 0, means > 0, empirical weights one per value)"))
        }
    }

    /// A draw. A constant (a session's usual weight of 1, a fixed time) is read where
    /// it is used, without a call, and so is the commonest random kind, the exponential
    /// (its ziggurat's quick path is short): the other kinds' code is too large to inline.
    #[inline]
    pub fn sample(&self, rng: &mut impl Rng) -> f64 {
        match self {
            Dist::Constant { value } => *value,
            Dist::Exponential { mean, max: None } => {
                let x: f64 = Exp1.sample(rng);
                x * mean
            }
            _ => self.draw(rng),
        }
    }

    fn draw(&self, rng: &mut impl Rng) -> f64 {
        match self {
            Dist::Constant { .. } => unreachable!("read inline by sample"),
            Dist::Exponential { mean, max } => {
                let x: f64 = Exp1.sample(rng);
                let x = x * mean;
                max.map_or(x, |m| x.min(m))
            }
            Dist::Uniform { low, high } => low + (high - low) * rng.random::<f64>(),
            Dist::Normal { mean, sd } => {
                // Redraw negatives; after 64 tries (mean many sd below 0) give 0.
                for _ in 0..64 {
                    let z: f64 = StandardNormal.sample(rng);
                    let x = mean + sd * z;
                    if x >= 0.0 {
                        return x;
                    }
                }
                0.0
            }
            Dist::Lognormal { mean, sd } => {
                let s2 = (1.0 + (sd / mean).powi(2)).ln();
                let mu = mean.ln() - 0.5 * s2;
                LogNormal::new(mu, s2.sqrt())
                    .expect("validated lognormal")
                    .sample(rng)
            }
            Dist::Empirical { values, cumulative } => {
                let u: f64 = rng.random();
                let i = cumulative
                    .partition_point(|c| *c <= u)
                    .min(values.len() - 1);
                values[i]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    /// The analytic mean, to compare sampled means against.
    fn mean(d: &Dist) -> f64 {
        match d {
            Dist::Constant { value } => *value,
            Dist::Exponential { mean, max: None } => *mean,
            Dist::Exponential { mean, max: Some(m) } => mean * (1.0 - (-m / mean).exp()),
            Dist::Uniform { low, high } => 0.5 * (low + high),
            Dist::Normal { mean, .. } | Dist::Lognormal { mean, .. } => *mean,
            Dist::Empirical { values, cumulative } => {
                let mut prev = 0.0;
                values.iter().zip(cumulative).fold(0.0, |acc, (v, c)| {
                    let w = c - prev;
                    prev = *c;
                    acc + v * w
                })
            }
        }
    }

    fn sample_mean(d: &Dist) -> f64 {
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        let n = 200_000;
        (0..n).map(|_| d.sample(&mut rng)).sum::<f64>() / n as f64
    }

    #[test]
    fn sample_means_match_analytic_means() {
        let dists = [
            Dist::Constant { value: 2.0 },
            Dist::Exponential {
                mean: 0.5,
                max: None,
            },
            Dist::Exponential {
                mean: 7.0,
                max: Some(10.0),
            },
            Dist::Uniform {
                low: 1.0,
                high: 3.0,
            },
            Dist::Lognormal { mean: 2.0, sd: 1.5 },
            Dist::Empirical {
                values: vec![1.0, 5.0],
                cumulative: vec![0.25, 1.0],
            },
        ];
        for d in &dists {
            let (m, s) = (mean(d), sample_mean(d));
            assert!((m - s).abs() / m < 0.01, "{d:?}: analytic {m}, sampled {s}");
        }
    }

    #[test]
    fn truncated_normal_is_never_negative() {
        let d = Dist::Normal { mean: 0.1, sd: 1.0 };
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        assert!((0..10_000).all(|_| d.sample(&mut rng) >= 0.0));
    }
}
