"""At what load does `twin calibrate` simulate the twin it fits? Every fit that matches the
twin to a trace by simulation (`calibrate.matched`: the hand-off's CPU, the contention,
the lock, the round trip's check) runs it at the trace's load as `_population` reads it —
for an open workload, the sessions the trace started per measured second. Found on the
PostgreSQL round trip's check (`results/round_trip/notes.md`): there the twin served 12%
fewer requests per second than the trace it stood for. This measures it on every
committed twin study's calibration runs.

    python investigations/twin/matched_load.py

Per calibration trace: the trace's requests per second; the committed twin's (8 seeds,
the trace's length) at the sessions started in the trace's window, as `matched` runs it,
and at the rate the study offered (testbed.json's `calibration.rates`). Nothing runs
live; it regenerates exactly. No criteria: a measurement for a later change (matching the
trace's request rate instead would move every committed twin), not a test of one."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from tierlab.experiments.study.provenance import output_dir, root, study_parser, write_result
from tierlab.experiments.twin.calibrate import _population
from tierlab.model import load_model
from tierlab.run import simulate
from tierlab.trace import Summary, read_trace

SEEDS = 8


def served(twin, summary: Summary, rate: float) -> float:
    """The twin's requests per second at `rate` sessions/s over the trace's length, mean of SEEDS runs."""
    run = twin.with_run(duration=summary["warmup"] + summary["measured_seconds"], warmup=summary["warmup"], records=False)
    run = run.with_changes({"workload.population.session_rate": rate})
    return float(np.mean([simulate(run, seed=s).summary["throughput"] for s in range(1, SEEDS + 1)]))


def main() -> None:
    a = study_parser(__doc__, quick=False).parse_args()
    out = output_dir("matched_load", a)
    rows = []
    for folder in sorted((root() / "studies" / "results").glob("*/*/calibration")):
        testbed = folder.parent
        twin = load_model(testbed / "twin.yaml")
        offered = json.loads((testbed / "testbed.json").read_text())["calibration"]["rates"]
        for run, rate in zip(sorted(folder.glob("run*")), offered):
            s = read_trace(run).summary
            started = _population(twin, s)["session_rate"]
            rows.append(
                {"testbed": str(testbed.relative_to(root() / "studies" / "results")), "run": run.name, "trace": s["throughput"]}
                | {"started": started, "at_started": served(twin, s, started), "offered": rate, "at_offered": served(twin, s, rate)}
            )
            print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    table["error_at_started"] = table.at_started / table.trace - 1
    table["error_at_offered"] = table.at_offered / table.trace - 1
    table.to_csv(out / "loads.csv", index=False, float_format="%.4g")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    figures = {k: [float(table[k].min()), float(table[k].max()), float(table[k].abs().mean())] for k in ("error_at_started", "error_at_offered")}
    write_result(out, {"traces": len(table), "min_max_mean_abs": figures}, range(1, SEEDS + 1))


if __name__ == "__main__":
    main()
