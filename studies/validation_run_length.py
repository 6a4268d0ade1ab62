"""How the measured maximum sustainable throughput (Totok & Karamcheti's definition:
≥ 60% of runs serve every request) depends on the run length and the pool timeout,
at the example's method optimum (M, N) = (15, 5). Near capacity, sessions wait for
their responses, so overload shows up as rejections only once waits reach the timeout;
short runs therefore overstate the sustainable rate.

    python studies/validation_run_length.py

Prints, per (timeout, measured seconds), how many of 5 runs served every request at
each rate; writes studies/results/validation_run_length/result.json (also printed last)."""

from __future__ import annotations

import warnings

from tierlab.experiments.sizing import all_served
from tierlab.run import Run, sweep

from provenance import output_dir, study_parser, write_result

RATES = (2.9, 3.0, 3.1, 3.2, 3.3, 3.4)
SEEDS = range(1, 6)


def main() -> None:
    out_dir = output_dir("validation_run_length", study_parser(__doc__, quick=False).parse_args())
    warnings.simplefilter("ignore")
    out = {}
    for timeout in (10.0, 5.0):
        for measured in (600, 1500, 3300):
            pools = "tiers.app.pools"
            runs = [
                Run(
                    {
                        "workload.population.session_rate": r,
                        f"{pools}.threads.size": 15,
                        f"{pools}.db.size": 5,
                        "run.duration": 300 + measured,
                        f"{pools}.threads.timeout": timeout,
                        f"{pools}.db.timeout": timeout,
                    },
                    s,
                )
                for r in RATES
                for s in SEEDS
            ]
            ok = sweep("examples/tpcw_2tier.yaml", runs, all_served, progress=None)
            passed = [sum(ok[i * len(SEEDS) : (i + 1) * len(SEEDS)]) for i in range(len(RATES))]
            best = max((r for r, n in zip(RATES, passed) if n >= 0.6 * len(SEEDS)), default=None)
            print(f"timeout {timeout:g} s, {measured} s measured: runs passing per rate {dict(zip(RATES, passed))} → max sustainable {best}")
            out[f"timeout={timeout:g},measured={measured}"] = {"passing": dict(zip(map(str, RATES), passed)), "max_sustainable": best}
    write_result(out_dir, out, SEEDS)


if __name__ == "__main__":
    main()
