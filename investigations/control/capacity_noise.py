"""How well does one short simulation past capacity rank two pool sizes? (issue 42)

The twin strategy sizes for capacity in heavy traffic (docs/control.md, twin, step 5): each
candidate simulated for one horizon (10 s) past its capacity at the interval's mix, its
throughput there its capacity. Every candidate of a decision meets the same seed, but the
requests its run serves are not the same draws (the pools change which request takes
which thread when), and TPC-W's work per request varies by 25 times between types: a run's
capacity moves with the work its requests happened to bring. `_at_work` brings each
candidate's capacity to the CPU work per request of the sizes in force's run (the tier's
work served per second divided by that reference work: a control variate).

This measures it where the twin meets it, studies/control.py's load step at its peak:
examples/tpcw_2tier.yaml at 3.0 sessions/s with 1 s thinks, one 100 s interval observed
after 300 s; the twin at the study's parameters; (12, 15) — the hindsight best there — and
(20, 15), the model's sizes; over SEEDS seeds (the twin's own seed replaced), per seed the
ratio of (12, 15)'s capacity to (20, 15)'s, as run and at the same work, for runs of one
horizon and of three (the confirmation's length).

    python investigations/control/capacity_noise.py      # about 30 s

Criteria, written before this script's first run (2026-11-29 01:55 UTC; an exploration
minutes before, at another offer (2× the rate, not 1.5×) and not kept, gave a standard
deviation of the one-horizon ratio of 10.5% as run and 1.3% at the same work, which is
why the twin uses it):
- at the same work, the one-horizon ratio's standard deviation is at most a quarter of
  the ratio's as run;
- at the same work, one horizon tells the two apart for the twin: the mean ratio's 95%
  interval lies above 1 + its hysteresis (5%) or below 1 − it — or, failing that, the
  mean is within 2% of 1 (the two are then equal to the twin).
Simulated: the figures regenerate exactly (`studies/check.py capacity_noise`)."""

from __future__ import annotations

import statistics

from tierlab import simulate
from tierlab.experiments.study.claims import Criterion, Ledger
from tierlab.experiments.study.provenance import output_dir, root, study_parser, write_result
from tierlab.experiments.twin.truth import estimate
from tierlab.model import load_model
from tierlab.model.spec import Twin
from tierlab.run import twin as twin_module
from tierlab.run.twin import OVER, Offer, TwinController, _at_work, observed

SEEDS = range(1, 21)
PEAK = {"workload.population.session_rate": 3.0, "workload.think": {"exponential": 1.0}, "run.duration": 400.0, "run.warmup": 300.0, "run.seed": 1}
IN_FORCE, BEST = {"threads": 20, "connections": 15}, {"threads": 12, "connections": 15}
TWIN = Twin(slo_p99=3.0, hysteresis=0.05, grid=4, horizon=10.0, smoothing=0.5)  # studies/control.py's
QUARTER, TOLD_APART, EQUAL = 0.25, 0.05, 0.02


def main() -> None:
    a = study_parser(__doc__, quick=False).parse_args()
    out = output_dir("capacity_noise", a)
    model = load_model(root() / "examples" / "tpcw_2tier.yaml").with_changes(PEAK)
    o = observed(simulate(model, records=False).summary, "app", {"threads": "threads", "connections": "db"})
    twin = TwinController(model, TWIN, {"threads": (2, 64), "connections": (1, 32)}, "app")
    at = twin._at_mix({t: s for t, s in o["mix"].items() if s > 0 and t in twin._at.columns}, IN_FORCE)
    over = Offer(OVER * o["arrivals"], 0.0, saturating=True)
    rows = []
    try:
        for horizons in (1, 3):
            for seed in SEEDS:
                twin_module.SEED = seed - horizons + 1  # `_predict` runs seed SEED + horizons − 1: this seed
                now = twin._predict(at, IN_FORCE, over, horizons)
                raw = twin._predict(at, BEST, over, horizons)
                at_work = _at_work(raw, now)
                rows.append(
                    {
                        "horizons": horizons,
                        "seed": seed,
                        "in_force": now.throughput,
                        "best": raw.throughput,
                        "as_run": raw.throughput / now.throughput,
                        "same_work": at_work.throughput / now.throughput,
                    }
                )
    finally:
        twin_module.SEED = 1
    summary = {}
    for horizons in (1, 3):
        r = [x for x in rows if x["horizons"] == horizons]
        as_run, same = [x["as_run"] for x in r], [x["same_work"] for x in r]
        e = estimate(same)
        summary[horizons] = {
            "sd_as_run": statistics.stdev(as_run),
            "sd_same_work": statistics.stdev(same),
            "mean_as_run": statistics.mean(as_run),
            "mean_same_work": e.mean,
            "halfwidth_same_work": e.halfwidth,
        }
        print(
            f"{horizons} horizon(s): ratio (12, 15) / (20, 15) as run {summary[horizons]['mean_as_run']:.3f} sd {summary[horizons]['sd_as_run']:.3f}; at the same work {e.mean:.3f} ± {e.halfwidth:.3f} sd {summary[horizons]['sd_same_work']:.3f}"
        )
    one = summary[1]
    ledger = Ledger()
    ledger.check(
        "at the same work, the one-horizon capacity ratio of (12, 15) to (20, 15) varies over seeds at most a quarter as much as it does as run",
        QUARTER,
        one["sd_same_work"] / one["sd_as_run"],
        Criterion(f"sd ratio ≤ {QUARTER}", lambda ours, bound: ours <= bound),
        "the work per request is not what moves a run's capacity (result.json: rows)",
        assumes=f"{len(SEEDS)} seeds; the twin at studies/control.py's parameters; 1.5× the observed rate offered",
    )
    low, high = one["mean_same_work"] - one["halfwidth_same_work"], one["mean_same_work"] + one["halfwidth_same_work"]
    ledger.check(
        "at the same work one horizon tells the two apart for the twin: the mean ratio's 95% interval above 1 + its hysteresis, below 1 − it, or the mean within 2% of 1",
        TOLD_APART,
        one["mean_same_work"],
        Criterion(
            f"interval beyond 1 ± {TOLD_APART:g}, or mean within {EQUAL:g} of 1",
            lambda ours, bound: low > 1 + bound or high < 1 - bound or abs(ours - 1) <= EQUAL,
        ),
        "the twin's capacity ranking at this point is within its noise (result.json: rows)",
        assumes=f"95% interval {low:.3f}–{high:.3f}",
    )
    ledger.write(out)
    write_result(out, {"offer_over_rate": OVER, "observed_rate": o["arrivals"], "summary": summary, "rows": rows}, list(SEEDS))


if __name__ == "__main__":
    main()
