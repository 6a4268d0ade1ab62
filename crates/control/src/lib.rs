//! Online control of pool sizes, written once: a controller is a small pure object fed,
//! every interval, the last interval's [`Observation`] of a tier and returning a
//! [`Decision`] (the pool sizes to be in force, within bounds, and why). It has no clock,
//! no I/O and no server: the simulator's engine calls it at each interval
//! (`crates/sim`), `tierlab control` beside a running testbed (`crates/py`), and a unit
//! test with a hand-computed sequence — the shape of Netflix concurrency-limits'
//! `Gradient2Limit`.

mod gradient;
mod observation;
mod spec;

pub use gradient::Gradient;
pub use observation::{Latency, Observation, PoolObs};
pub use spec::{Bounds, GradientParams, PoolKind, Spec, Strategy};

use std::collections::BTreeMap;

use serde::Serialize;

/// The sizes to be in force after an interval (every bounded pool's, changed or not) and
/// the reason, in words a person reads in the trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    pub sizes: BTreeMap<PoolKind, u32>,
    pub reason: String,
}

/// A controller: fed each interval's observation in turn, it decides the sizes.
pub trait Controller: Send {
    fn decide(&mut self, o: &Observation) -> Decision;
}

/// The controller a spec names, over its bounds, its steps limited to `max_step`.
pub fn build(spec: &Spec) -> Box<dyn Controller> {
    let inner: Box<dyn Controller> = match &spec.strategy {
        Strategy::Static => Box::new(Static {
            bounds: spec.bounds.clone(),
        }),
        Strategy::Gradient(p) => Box::new(Gradient::new(*p, spec.bounds.clone())),
    };
    match spec.max_step {
        Some(step) => Box::new(Limited { inner, step }),
        None => inner,
    }
}

/// A rate limit on changes: each pool moves at most `step` from its size in force per
/// decision, towards what the strategy decided (which keeps its own state: it is
/// reached over the next intervals if the strategy holds to it).
pub struct Limited {
    inner: Box<dyn Controller>,
    step: u32,
}

impl Controller for Limited {
    fn decide(&mut self, o: &Observation) -> Decision {
        let mut d = self.inner.decide(o);
        for (kind, size) in d.sizes.iter_mut() {
            let Some(now) = o.pools.get(kind).map(|p| p.size) else {
                continue;
            };
            let limited =
                (*size).clamp(now.saturating_sub(self.step), now.saturating_add(self.step));
            if limited != *size {
                d.reason += &format!(
                    "; {} {now} → {size} limited to {limited} (max_step {})",
                    kind.name(),
                    self.step
                );
                *size = limited;
            }
        }
        d
    }
}

/// The baseline: the sizes in force stay, whatever is observed.
pub struct Static {
    bounds: Bounds,
}

impl Controller for Static {
    fn decide(&mut self, o: &Observation) -> Decision {
        Decision {
            sizes: o.sizes(&self.bounds),
            reason: "static: sizes held".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_step_limits_each_change_and_says_so() {
        let spec: Spec = serde_json::from_str(
            r#"{"interval": 5.0, "bounds": {"threads": [2, 16]}, "max_step": 3,
                "strategy": {"strategy": "gradient", "smoothing": 0.2, "queue": 4.0,
                             "tolerance": 1.5, "long_window": 600, "warmup": 1}}"#,
        )
        .expect("a spec");
        let mut c = build(&spec);
        // 40 threads in force, the gradient's limit brought to its bound 16: 3 a step.
        let mut size = 40;
        for expect in [37, 34, 31] {
            let d = c.decide(&Observation::threads(size, 1.0, 0.0, 500.0, 5.0));
            assert_eq!(d.sizes[&PoolKind::Threads], expect);
            assert!(
                d.reason.ends_with(&format!(
                    "threads {size} → 16 limited to {expect} (max_step 3)"
                )),
                "{}",
                d.reason
            );
            size = expect;
        }
        let zero: Spec = serde_json::from_str(
            r#"{"interval": 5.0, "bounds": {}, "max_step": 0, "strategy": {"strategy": "static"}}"#,
        )
        .expect("a spec");
        assert_eq!(zero.problem().map(|p| p.0), Some("max_step".into()));
    }

    #[test]
    fn static_never_changes_anything_whatever_it_sees() {
        let spec: Spec = serde_json::from_str(
            r#"{"interval": 5.0, "bounds": {"threads": [2, 64]}, "strategy": {"strategy": "static"}}"#,
        )
        .expect("a spec");
        let mut c = build(&spec);
        for (busy, queued, acquired) in [
            (1.0, 0.0, 500.0),
            (20.0, 9.0, 200.0),
            (20.0, 50.0, 20.0),
            (0.0, 0.0, 0.0),
        ] {
            let o = Observation::threads(20, busy, queued, acquired, 5.0);
            let d = c.decide(&o);
            assert_eq!(d.sizes, BTreeMap::from([(PoolKind::Threads, 20)]));
            assert_eq!(d.reason, "static: sizes held");
        }
    }
}
