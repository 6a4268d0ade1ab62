//! A policy as configuration: what the model file and the proxy's configuration name.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::{
    Affinity, AffinityCap, Dispatch, LeastActive, PowerOfTwo, Random, Redal, RedalConfig,
    RoundRobin,
};

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(tag = "policy", rename_all = "snake_case", deny_unknown_fields)]
pub enum Policy {
    /// Per request, weighted (empty weights = equal); no affinity.
    RoundRobin {
        #[serde(default)]
        weights: Vec<u32>,
    },
    /// Round robin for new sessions, then session affinity.
    Affinity,
    Random,
    /// Least active requests, no affinity ("HJ").
    LeastActive,
    /// Power of two choices on active requests (Envoy's least request).
    PowerOfTwo,
    /// Affinity below a cap of active requests per server (HAProxy maxconn).
    AffinityCap {
        cap: u32,
    },
    Redal(RedalConfig),
}

impl Policy {
    /// Errors name the parameter out of range.
    pub fn check(&self, servers: usize) -> Result<(), String> {
        if servers == 0 {
            return Err("a dispatcher needs at least one server".into());
        }
        match self {
            Policy::RoundRobin { weights }
                if !weights.is_empty()
                    && (weights.len() != servers || weights.iter().all(|w| *w == 0)) =>
            {
                Err(format!(
                    "round_robin: {} weights for {servers} servers, or none positive",
                    weights.len()
                ))
            }
            Policy::AffinityCap { cap: 0 } => Err("affinity_cap: cap must be ≥ 1".into()),
            Policy::Redal(c) => c.check().map_err(|e| format!("redal: {e}")),
            _ => Ok(()),
        }
    }

    /// Whether dispatchers sharing servers have load metrics to exchange.
    pub fn shares_metrics(&self) -> bool {
        !matches!(
            self,
            Policy::RoundRobin { .. } | Policy::Affinity | Policy::Random
        )
    }

    /// One dispatcher's instance over `servers` servers, `peers` other dispatchers
    /// sharing them; `seed` feeds the randomized policies.
    pub fn build(
        &self,
        servers: usize,
        peers: usize,
        seed: u64,
    ) -> Result<Box<dyn Dispatch>, String> {
        self.check(servers)?;
        Ok(match self {
            Policy::RoundRobin { weights } if weights.is_empty() => {
                Box::new(RoundRobin::equal(servers))
            }
            Policy::RoundRobin { weights } => Box::new(RoundRobin::new(weights)),
            Policy::Affinity => Box::new(Affinity::new(servers)),
            Policy::Random => Box::new(Random::new(servers, seed)),
            Policy::LeastActive => Box::new(LeastActive::new(servers)),
            Policy::PowerOfTwo => Box::new(PowerOfTwo::new(servers, seed)),
            Policy::AffinityCap { cap } => Box::new(AffinityCap::new(servers, *cap)),
            Policy::Redal(c) => Box::new(Redal::new(servers, peers, *c)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsed_from_json_and_checked() {
        let p: Policy = serde_json::from_str(
            r#"{"policy": "redal", "alpha": 0.9, "slice": 0.1, "think_time": 1.0, "window": 50, "intervals": 5, "interval": 1.0, "wait": true}"#,
        )
        .unwrap();
        assert!(p.build(20, 1, 0).is_ok());
        assert!(p
            .build(0, 1, 0)
            .err()
            .unwrap()
            .contains("at least one server"));
        let bad: Policy = serde_json::from_str(r#"{"policy": "affinity_cap", "cap": 0}"#).unwrap();
        assert!(bad.build(2, 0, 0).err().unwrap().contains("cap"));
        let w: Policy =
            serde_json::from_str(r#"{"policy": "round_robin", "weights": [1, 2]}"#).unwrap();
        assert!(w.build(3, 0, 0).err().unwrap().contains("weights"));
    }

    fn picks(p: &Policy, servers: usize, n: usize) -> Vec<usize> {
        let mut d = p.build(servers, 0, 0).unwrap();
        (0..n)
            .map(|_| d.pick(0.0, &crate::Request::default()).unwrap())
            .collect()
    }

    #[test]
    fn round_robin_weights_are_checked_and_used() {
        let rr = |weights: Vec<u32>| Policy::RoundRobin { weights };
        assert_eq!(picks(&rr(vec![]), 3, 4), [0, 1, 2, 0], "no weights: equal");
        // Smooth weighted round robin over (3, 1): current (3,1)→0, (2,2)→0, (1,3)→1, (4,0)→0.
        assert_eq!(picks(&rr(vec![3, 1]), 2, 4), [0, 0, 1, 0]);
        assert!(rr(vec![0, 0])
            .check(2)
            .unwrap_err()
            .contains("none positive"));
    }

    #[test]
    fn a_bad_redal_configuration_is_refused_through_the_policy() {
        let p: Policy = serde_json::from_str(
            r#"{"policy": "redal", "alpha": 2.0, "slice": 0.1, "think_time": 1.0, "window": 50, "intervals": 5, "interval": 1.0, "wait": false}"#,
        )
        .unwrap();
        assert!(p.check(2).unwrap_err().starts_with("redal: alpha = 2"));
    }

    #[test]
    fn only_load_aware_policies_share_metrics_and_bytes() {
        let redal = Policy::Redal(RedalConfig {
            alpha: 0.5,
            slice: 1.0,
            think_time: 3.0,
            window: 2,
            intervals: 3,
            interval: 1.0,
            wait: false,
            test: Default::default(),
            threshold: None,
        });
        let cases = [
            (Policy::RoundRobin { weights: vec![] }, false, 0),
            (Policy::Affinity, false, 0),
            (Policy::Random, false, 0),
            (Policy::LeastActive, true, 4),
            (Policy::PowerOfTwo, true, 4),
            (Policy::AffinityCap { cap: 2 }, true, 4),
            // ReDAL: 4 servers · (2 + ⌈3/1⌉) = 20 bytes.
            (redal, true, 20),
        ];
        for (p, shares, bytes) in cases {
            assert_eq!(p.shares_metrics(), shares, "{p:?}");
            assert_eq!(p.build(4, 1, 0).unwrap().message_bytes(), bytes, "{p:?}");
        }
    }
}
