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
pub use spec::{Bounds, GradientParams, PoolKind, Revert, Spec, Strategy, TwinParams};

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

/// The controller a spec names, over its bounds, with the spec's guards (`guarded`).
/// The twin strategy is decided in Python (`tierlab.experiments.control.twin`, which
/// simulates the twin): its caller builds it and hands it to `guarded` itself.
pub fn build(spec: &Spec) -> Box<dyn Controller> {
    let strategy: Box<dyn Controller> = match &spec.strategy {
        Strategy::Static => Box::new(Static {
            bounds: spec.bounds.clone(),
        }),
        Strategy::Gradient(p) => Box::new(Gradient::new(*p, spec.bounds.clone())),
        Strategy::Twin(_) => {
            panic!("the twin strategy is decided in Python: its caller hands it to `guarded`")
        }
    };
    guarded(spec, strategy)
}

/// A strategy's controller with the spec's guards, for every strategy alike: its steps
/// limited to `max_step` (`Limited`), a change held `dwell` intervals (`Dwelling`),
/// then any change after which the errors rise reverted (`Reverting`, by `revert`).
pub fn guarded(spec: &Spec, strategy: Box<dyn Controller>) -> Box<dyn Controller> {
    let limited: Box<dyn Controller> = match spec.max_step {
        Some(step) => Box::new(Limited {
            inner: strategy,
            step,
        }),
        None => strategy,
    };
    let dwelling: Box<dyn Controller> = match spec.dwell {
        0 => limited,
        dwell => Box::new(Dwelling {
            inner: limited,
            bounds: spec.bounds.clone(),
            dwell,
            left: 0,
        }),
    };
    // Outermost: it judges the change actually made (after max_step), and undoing it
    // moves each pool back by no more than that change did.
    Box::new(Reverting::new(
        dwelling,
        spec.bounds.clone(),
        spec.revert.margin,
        spec.revert.hold,
    ))
}

/// A minimum dwell: after a decision that changed a size, the sizes in force stand for
/// the next `dwell` decisions whatever the strategy says (it is still fed each
/// observation: its estimates stay current), the reason saying so. A safety against a
/// strategy that flips between sizes faster than their effect can be seen.
pub struct Dwelling {
    inner: Box<dyn Controller>,
    bounds: Bounds,
    dwell: u32,
    /// Decisions still to stand after the last change.
    left: u32,
}

impl Controller for Dwelling {
    fn decide(&mut self, o: &Observation) -> Decision {
        let d = self.inner.decide(o);
        let in_force = o.sizes(&self.bounds);
        if self.left > 0 {
            self.left -= 1;
            let reason = format!(
                "{} stands after a change (dwell {}: {} more intervals); {}",
                sizes_text(&in_force),
                self.dwell,
                self.left,
                d.reason
            );
            return Decision {
                sizes: in_force,
                reason,
            };
        }
        if d.sizes != in_force {
            self.left = self.dwell;
        }
        d
    }
}

/// Reverts a change after which the errors rose: after a decision that changed a size,
/// if the next interval's error share (`Observation::error_share`: failed over finished
/// requests) exceeds the share of the interval before the change by more than `margin`,
/// the sizes before the change come back, the reason says so, and they are held for
/// `hold` intervals. The strategy is still fed every observation meanwhile (its
/// estimates stay current) and, after the hold, may decide the change again — judged
/// again the same way.
///
/// A change is judged only by the interval right after it, and only if its sizes are
/// the ones in force then (with `--dry-run`, or sizes set by someone else, nothing
/// changed, so nothing is reverted), and only if requests finished in both intervals
/// (a share of nothing says nothing).
pub struct Reverting {
    inner: Box<dyn Controller>,
    bounds: Bounds,
    margin: f64,
    hold: u32,
    /// The last change, awaiting the next interval's verdict.
    change: Option<Change>,
    /// The sizes a revert restored, and the intervals they are still to be held.
    held: Option<(BTreeMap<PoolKind, u32>, u32)>,
}

struct Change {
    before: BTreeMap<PoolKind, u32>,
    after: BTreeMap<PoolKind, u32>,
    /// The error share of the interval before the change.
    share: f64,
}

impl Reverting {
    pub fn new(inner: Box<dyn Controller>, bounds: Bounds, margin: f64, hold: u32) -> Self {
        Reverting {
            inner,
            bounds,
            margin,
            hold,
            change: None,
            held: None,
        }
    }
}

/// `threads 16 → 8, connections 4 → 6` for the pools whose sizes differ, and their sizes
/// before (`16, 4`).
fn moves(before: &BTreeMap<PoolKind, u32>, after: &BTreeMap<PoolKind, u32>) -> (String, String) {
    let moved: Vec<(PoolKind, u32, u32)> = after
        .iter()
        .filter_map(|(k, a)| before.get(k).filter(|b| *b != a).map(|b| (*k, *b, *a)))
        .collect();
    let what = moved
        .iter()
        .map(|(k, b, a)| format!("{} {b} → {a}", k.name()))
        .collect::<Vec<_>>()
        .join(", ");
    let back = moved
        .iter()
        .map(|(_, b, _)| b.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    (what, back)
}

fn sizes_text(sizes: &BTreeMap<PoolKind, u32>) -> String {
    sizes
        .iter()
        .map(|(k, v)| format!("{} {v}", k.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Controller for Reverting {
    fn decide(&mut self, o: &Observation) -> Decision {
        let d = self.inner.decide(o);
        let in_force = o.sizes(&self.bounds);
        let share = o.error_share();
        if let Some((sizes, left)) = self.held.take() {
            let reason = format!(
                "{} held after a revert ({} more intervals); {}",
                sizes_text(&sizes),
                left - 1,
                d.reason
            );
            if left > 1 {
                self.held = Some((sizes.clone(), left - 1));
            }
            return Decision { sizes, reason };
        }
        if let Some(c) = self.change.take() {
            let rose = share.filter(|s| in_force == c.after && *s > c.share + self.margin);
            if let Some(now) = rose {
                let (what, back) = moves(&c.before, &c.after);
                let reason = format!(
                    "errors {:.1}% → {:.1}% after {what}: reverted to {back}",
                    c.share * 100.0,
                    now * 100.0
                );
                if self.hold > 0 {
                    self.held = Some((c.before.clone(), self.hold));
                }
                return Decision {
                    sizes: c.before,
                    reason,
                };
            }
        }
        if let Some(share) = share.filter(|_| d.sizes != in_force) {
            self.change = Some(Change {
                before: in_force,
                after: d.sizes.clone(),
                share,
            });
        }
        d
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

    /// A strategy that answers the thread counts of `script` in turn.
    struct Script(std::vec::IntoIter<u32>);

    impl Controller for Script {
        fn decide(&mut self, _: &Observation) -> Decision {
            let t = self.0.next().expect("a scripted size");
            Decision {
                sizes: BTreeMap::from([(PoolKind::Threads, t)]),
                reason: format!("script: {t}"),
            }
        }
    }

    fn reverting(script: Vec<u32>, hold: u32) -> Reverting {
        let bounds = BTreeMap::from([(PoolKind::Threads, [1, 64])]);
        let inner = Box::new(Script(script.into_iter()));
        Reverting::new(inner, bounds, 0.01, hold)
    }

    /// `threads` in force over 5 s in which `ok` requests succeeded and `failed` failed.
    fn finished(threads: u32, ok: f64, failed: f64) -> Observation {
        Observation {
            throughput: ok / 5.0,
            errors: failed / 5.0,
            ..Observation::threads(threads, 4.0, 0.0, ok + failed, 5.0)
        }
    }

    fn threads(d: &Decision) -> u32 {
        d.sizes[&PoolKind::Threads]
    }

    #[test]
    fn a_change_after_which_errors_rise_is_reverted_and_held() {
        let mut c = reverting(vec![8; 7], 3);
        // 2 of 1,000 failed at 16 threads (0.2%); the strategy says 8.
        let d = c.decide(&finished(16, 998.0, 2.0));
        assert_eq!((threads(&d), d.reason.as_str()), (8, "script: 8"));
        // At 8, 41 of 1,000 fail (4.1% > 0.2% + 1 point): back to 16.
        let d = c.decide(&finished(8, 959.0, 41.0));
        assert_eq!(threads(&d), 16);
        assert_eq!(
            d.reason,
            "errors 0.2% → 4.1% after threads 16 → 8: reverted to 16"
        );
        // Held three intervals whatever the strategy says, which is still asked.
        for left in [2, 1, 0] {
            let d = c.decide(&finished(16, 1000.0, 0.0));
            assert_eq!(threads(&d), 16);
            assert_eq!(
                d.reason,
                format!("threads 16 held after a revert ({left} more intervals); script: 8")
            );
        }
        // Then the strategy's 8 again, judged afresh: 0.0% → 0.9% stands.
        assert_eq!(threads(&c.decide(&finished(16, 1000.0, 0.0))), 8);
        let d = c.decide(&finished(8, 991.0, 9.0));
        assert_eq!((threads(&d), d.reason.as_str()), (8, "script: 8"));
    }

    #[test]
    fn only_a_change_in_force_with_requests_on_both_sides_is_judged() {
        // Under the margin: 0.2% → 1.1% stands.
        let mut c = reverting(vec![8, 8], 3);
        c.decide(&finished(16, 998.0, 2.0));
        assert_eq!(threads(&c.decide(&finished(8, 989.0, 11.0))), 8);
        // Not applied (a dry run: 16 still in force), the errors rising are not its doing.
        let mut c = reverting(vec![8, 8], 3);
        c.decide(&finished(16, 998.0, 2.0));
        assert_eq!(threads(&c.decide(&finished(16, 500.0, 500.0))), 8);
        // Nothing finished before the change, or after it: no share, no verdict.
        let mut c = reverting(vec![8, 8], 3);
        c.decide(&finished(16, 0.0, 0.0));
        assert_eq!(threads(&c.decide(&finished(8, 500.0, 500.0))), 8);
        let mut c = reverting(vec![8, 4, 4], 3);
        c.decide(&finished(16, 1000.0, 0.0));
        assert_eq!(threads(&c.decide(&finished(8, 0.0, 0.0))), 4);
        // A verdict is given by the next interval only: errors rising two later stand.
        assert_eq!(threads(&c.decide(&finished(4, 500.0, 500.0))), 4);
    }

    #[test]
    fn build_reverts_gradient2_when_errors_follow_its_step() {
        let spec: Spec = serde_json::from_str(
            r#"{"interval": 5.0, "bounds": {"threads": [2, 64]},
                "strategy": {"strategy": "gradient", "smoothing": 0.2, "queue": 4.0,
                             "tolerance": 1.5, "long_window": 600, "warmup": 1}}"#,
        )
        .expect("a spec");
        let mut c = build(&spec);
        // gradient.rs's hand-computed sequence: holds of 10 ms, then 100 ms; the limit
        // 40 → 40.8 → 37.52, the size 40 → 37, no request failing.
        let o = |size, acquired: f64, failed: f64| Observation {
            throughput: (acquired - failed) / 5.0,
            errors: failed / 5.0,
            ..Observation::threads(size, 30.0, 10.0, acquired, 5.0)
        };
        assert_eq!(threads(&c.decide(&o(40, 15_000.0, 0.0))), 40);
        assert_eq!(threads(&c.decide(&o(40, 1_500.0, 0.0))), 37);
        // At 37, 75 of 1,500 fail (5%): 40 again, and held for the default hold's intervals
        // while the gradient's limit goes on falling (0.9 × 37.52 + 0.8 = 34.57, …).
        let d = c.decide(&o(37, 1_500.0, 75.0));
        assert_eq!(threads(&d), 40);
        assert_eq!(
            d.reason,
            "errors 0.0% → 5.0% after threads 40 → 37: reverted to 40"
        );
        let hold = Revert::default().hold;
        for k in 0..hold {
            let d = c.decide(&o(40, 1_500.0, 0.0));
            assert_eq!(threads(&d), 40);
            assert!(
                d.reason.starts_with(&format!(
                    "threads 40 held after a revert ({} more intervals); gradient 0.500",
                    hold - 1 - k
                )),
                "{}",
                d.reason
            );
        }
        assert!(threads(&c.decide(&o(40, 1_500.0, 0.0))) < 37);
    }

    #[test]
    fn the_revert_margin_and_hold_are_the_spec_s() {
        // 2 of 1,000 failed at 16 threads, 13 at 8 (0.2% → 1.3%): over the default
        // margin, under a margin of 2 points; a hold of 1 interval, then the strategy.
        let spec = |revert: &str| -> Spec {
            serde_json::from_str(&format!(
                r#"{{"interval": 5.0, "bounds": {{"threads": [1, 64]}}, "strategy": {{"strategy": "static"}}{revert}}}"#
            ))
            .expect("a spec")
        };
        assert_eq!(
            spec("").revert,
            Revert {
                margin: 0.01,
                hold: 6
            }
        );
        let run = |s: &Spec| {
            let mut c = guarded(s, Box::new(Script(vec![8; 4].into_iter())));
            c.decide(&finished(16, 998.0, 2.0));
            (1..4)
                .map(|_| threads(&c.decide(&finished(8, 987.0, 13.0))))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(&spec("")), [16, 16, 16]);
        assert_eq!(run(&spec(r#", "revert": {"margin": 0.02}"#)), [8, 8, 8]);
        // Reverted, held one interval, then the script's 8 again (its 4th answer).
        assert_eq!(run(&spec(r#", "revert": {"hold": 1}"#)), [16, 16, 8]);
        for (bad, field) in [("-0.1", "revert.margin"), ("1.5", "revert.margin")] {
            let s = spec(&format!(r#", "revert": {{"margin": {bad}}}"#));
            assert_eq!(s.problem().map(|p| p.0), Some(field.into()));
        }
    }

    #[test]
    fn a_change_stands_for_the_dwell_whatever_the_strategy_says() {
        let spec: Spec = serde_json::from_str(
            r#"{"interval": 5.0, "bounds": {"threads": [1, 64]}, "dwell": 2,
                "strategy": {"strategy": "static"}}"#,
        )
        .expect("a spec");
        // The script flips 8, 16, 8, 16, 4: the change to 8 stands two intervals (its
        // 16 and 8 unheeded), then 16 is taken, and stands two more (8, 16 unheeded).
        let script = vec![8, 16, 8, 16, 8, 16, 4];
        let mut c = guarded(&spec, Box::new(Script(script.into_iter())));
        let mut size = 16;
        let mut seen = Vec::new();
        for _ in 0..7 {
            let d = c.decide(&finished(size, 1000.0, 0.0));
            size = threads(&d);
            seen.push(size);
        }
        assert_eq!(seen, [8, 8, 8, 16, 16, 16, 4]);
        let d = {
            let mut c = guarded(&spec, Box::new(Script(vec![8, 16].into_iter())));
            c.decide(&finished(16, 1000.0, 0.0));
            c.decide(&finished(8, 1000.0, 0.0))
        };
        assert_eq!(
            d.reason,
            "threads 8 stands after a change (dwell 2: 1 more intervals); script: 16"
        );
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
