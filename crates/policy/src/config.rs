//! A policy as configuration: what the model file and the proxy's configuration name.

use serde::Deserialize;

use crate::{
    Affinity, AffinityCap, Dispatch, LeastActive, PowerOfTwo, Random, Redal, RedalConfig,
    RoundRobin,
};

#[derive(Debug, Clone, PartialEq, Deserialize)]
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
}
