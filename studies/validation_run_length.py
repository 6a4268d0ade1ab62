"""How the pool-sizing method's error depends on the run length and the pool timeout
that decide "sustainable" (Totok & Karamcheti: a rate is sustainable when ≥ 60% of its
runs serve every request; the paper states no run length). Near capacity, sessions
wait for their responses, so overload shows up as rejections only once waits reach the
timeout: short runs overstate the sustainable rate, and the method's λ with them.

At the method's M0 for N = 5 on the profiling mix of examples/tpcw_2tier.yaml (the quick
pool-sizing study's, as committed at 96b5d12: since then that study runs on
examples/totok_tpcw.yaml, so the point is pinned here), for run lengths of 10, 25 and 55 minutes (what a 2004 testbed could afford)
and timeouts of 10 s and 5 s, 5 runs at each rate from 60% to 105% of the method's λ
in 5% steps. Reported per (timeout, run length): the measured maximum sustainable rate,
the method's error against it, and the headroom h = 1 − measured / λ: the rule "offer
at most (1 − h)·λ" that makes the method's rate sustainable at that run length and
timeout.

    python studies/validation_run_length.py

Writes studies/results/validation_run_length/result.json (also printed last) and
claims.json: the paper's 5% error margin (§5.3) scored at each run length and timeout.
The paper states no run length, so the claim is the margin's, not a run length's; its
criterion is the paper's own figure (pool_sizing.py's), written after this study's first
run (the ledger's note says so)."""

from __future__ import annotations

import warnings

from tierlab import load_model
from tierlab.experiments.sizing import all_served
from tierlab.experiments.study.claims import Criterion, Ledger, each
from tierlab.experiments.study.provenance import output_dir, root, study_parser, write_result
from tierlab.run import Run, sweep

N = 5
FRACTIONS = tuple(round(0.60 + 0.05 * i, 2) for i in range(10))  # of the method's λ
SEEDS = range(1, 6)
MEASURED = (600, 1500, 3300)  # seconds after the warm-up
TIMEOUTS = (10.0, 5.0)
PASSING = 0.6  # the paper's share of runs that must serve every request
ERROR_BOUND = 0.05  # §5.3: the measured maximum "always lies within a 5% error margin" of the method's


def method_point() -> tuple[int, float]:
    """(M0, λ) of the quick pool-sizing study for N on the profiling mix of
    examples/tpcw_2tier.yaml, from its result.json at 96b5d12 (mixes.profiling.per_N)."""
    return 19, 4.847786661980302


def main() -> None:
    out_dir = output_dir("validation_run_length", study_parser(__doc__, quick=False).parse_args())
    warnings.simplefilter("ignore")
    M, lam = method_point()
    model = load_model(root() / "examples" / "tpcw_2tier.yaml")
    rates = [round(f * lam, 4) for f in FRACTIONS]
    pools = "tiers.app.pools"
    out: dict = {"M": M, "N": N, "lambda_method": lam, "rates": rates, "cases": []}
    for timeout in TIMEOUTS:
        for measured in MEASURED:
            changes = {
                f"{pools}.threads.size": M,
                f"{pools}.db.size": N,
                "run.duration": 300 + measured,
                f"{pools}.threads.timeout": timeout,
                f"{pools}.db.timeout": timeout,
            }
            runs = [Run({**changes, "workload.population.session_rate": r}, s) for r in rates for s in SEEDS]
            ok = sweep(model, runs, all_served, progress=f"timeout {timeout:g} s, {measured} s")
            passed = [sum(ok[i * len(SEEDS) : (i + 1) * len(SEEDS)]) for i in range(len(rates))]
            best = max((r for r, n in zip(rates, passed) if n >= PASSING * len(SEEDS)), default=None)
            case = {
                "timeout": timeout,
                "measured_seconds": measured,
                "passing": dict(zip(map(str, rates), passed)),
                "max_sustainable": best,
                "method_error": None if best is None else lam / best - 1,
                "headroom": None if best is None else 1 - best / lam,
            }
            out["cases"].append(case)
            print(f"timeout {timeout:g} s, {measured} s: max sustainable {best} of λ = {lam:.3f} (headroom {case['headroom']})", flush=True)
    write_result(out_dir, out, SEEDS)
    _claims(out).write(out_dir)


def _claims(result: dict) -> Ledger:
    """The paper's error margin at each run length and timeout (no sustainable rate: no error, a miss)."""
    ledger = Ledger()
    ledger.check(
        f"The method's λ at M0 (N = {N}) lies within {ERROR_BOUND:.0%} of the measured maximum sustainable session throughput (§5.3), "
        "whatever run length and pool timeout decide 'sustainable' (the paper states neither): λ / measured − 1",
        ERROR_BOUND,
        {f"{c['timeout']:g} s, {c['measured_seconds'] // 60} min": c["method_error"] for c in result["cases"]},
        each(Criterion(f"|error| at most {ERROR_BOUND:.0%} (none where no rate was sustainable)", lambda ours, bound: ours is not None and abs(ours) <= bound)),
        "not diagnosed: at every run length and timeout here the measured maximum lies 30-40% below λ (result.json's headroom), shorter runs sustaining more "
        "(10 min at 10 s: +43%; 25 and 55 min: +67%), and with a 5 s timeout runs of 25 or 55 min sustained none of the rates from 60% of λ",
        assumes="criterion written after the study's first run: the paper's own 5% (pool_sizing.py's ERROR_BOUND), not chosen on these figures",
    )
    return ledger


if __name__ == "__main__":
    main()
