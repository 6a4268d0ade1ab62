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

/// The controller a spec names, over its bounds.
pub fn build(spec: &Spec) -> Box<dyn Controller> {
    match &spec.strategy {
        Strategy::Static => Box::new(Static {
            bounds: spec.bounds.clone(),
        }),
        Strategy::Gradient(p) => Box::new(Gradient::new(*p, spec.bounds.clone())),
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
