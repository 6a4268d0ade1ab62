"""Within one live run, does a request's own CPU grow with the requests it arrives
among? (issue 16)

The twin's largest misses are near capacity, where the live CPU per request grows with
the load and the twin's does not (studies/results/twin/notes.md at 0e0577b, point 3). Across
configurations, one growth per thread held did not carry over (`twin calibrate
--contention`), and across runs the interpreter's CPU outside the pool and the
statements did not track the threads busy (investigations/twin/results/contention). This study
looks inside a run instead, request by request, in the live calibration traces the
twin studies committed (kept in inputs/cpu_growth; SQLite and PostgreSQL at (M, N) = (8, 4), a light and a heavy
run each): a request's handler CPU (the middleware's thread CPU time, `app.cpu_time`),
divided by the mean of its type over the requests that arrived to an empty system, and
grouped by how many other requests were in the system (sent and not yet answered) when
it was sent. That count is fixed before the request runs, so a long request cannot
raise its own count, as it would the mean concurrency over its life. Requests sent
within MARGIN of the measured period's ends are left out: the records hold only
requests sent after the warm-up and answered before the end, so their counts there
would miss some of the others.

    python investigations/twin/cpu_growth.py      # seconds: reads the committed traces, runs nothing

The criterion, written after looking at the full study's two heavy runs (SQLite: 0.88
of the base with none in the system, about 1.6 with 8 or more; PostgreSQL: 0.87 and
about 1.2, levelling from 8 on) and before reading twin_quick's, which is the test:
in twin_quick's heavy run, the requests sent among 8 or more others use at least 1.25×
the CPU of those sent to an empty system, and the growth levels off at the thread
count (8): those sent among 16 or more within 10% of those sent among 8–15."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tierlab.experiments.study.claims import Criterion, Ledger
from tierlab.experiments.study.provenance import output_dir, study_parser, write_result
from tierlab.experiments.twin.growth import MARGIN, binned, empty_base, relative, requests

TRACES = {
    "twin_quick/sqlite": "the test",
    "twin/sqlite": "seen before the criterion",
    "twin/postgres": "seen before the criterion",
}
# The twin studies' calibration runs as they were when this ran (studies/results/<source>
# at 3f3cb12), copied under inputs/: the studies re-ran since at other sizes
# (twin_quick at 3799436, now four calibration runs; twin on 2026-11-29), and the
# criterion was written on these.
TRACES_AT = Path(__file__).resolve().parent / "inputs" / "cpu_growth"
BINS = [(0, 0), (1, 1), (2, 3), (4, 7), (8, 15), (16, None)]
GROWTH, LEVEL = 1.25, 0.10


def held_and_computing(run: pd.DataFrame, base: pd.Series) -> pd.DataFrame:
    """The heavy run's relative CPU by the threads held by others and, of them, those
    computing, when the request got its thread. Held is at most 7 at (8, 4), but the
    rebuilt timelines overlap by a millisecond or so, hence one bin for 4 and more."""
    rel = relative(run, base)
    cells = [pd.cut(run.held, [-1, 3, 100], labels=["0-3", "4+"]), pd.cut(run.computing, [-100, 1, 3, 100], labels=["0-1", "2-3", "4+"])]
    return rel.groupby(cells, observed=True).agg(["size", "mean"]).rename(columns={"size": "requests", "mean": "cpu_vs_empty"}).reset_index()


def growth(runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per run and bin of `others`: requests and their mean CPU relative to their type's
    mean over the requests of both runs that arrived to an empty system."""
    base = empty_base(runs)
    return pd.concat([binned(r.others, relative(r, base), BINS, "others").assign(run=run) for run, r in runs.items()])


def main() -> None:
    a = study_parser(__doc__, quick=False).parse_args()
    out = output_dir("cpu_growth", a)
    tables, splits = [], []
    for source, role in TRACES.items():
        folder = TRACES_AT / source / "calibration"
        runs = {run.name: requests(run) for run in sorted(folder.iterdir())}
        tables.append(growth(runs).assign(traces=source, role=role))
        splits.append(held_and_computing(runs["run2"], empty_base(runs)).assign(traces=source))
    split = pd.concat(splits)[["traces", "held", "computing", "requests", "cpu_vs_empty"]]
    split.to_csv(out / "held_and_computing.csv", index=False)
    print(split.to_string(index=False))
    table = pd.concat(tables)[["traces", "role", "run", "others", "requests", "cpu_vs_empty"]]
    table.to_csv(out / "growth.csv", index=False)
    print(table.to_string(index=False))
    test = table[(table.traces == "twin_quick/sqlite") & (table.run == "run2")].set_index("others")
    at = test["cpu_vs_empty"]
    ledger = Ledger()
    ledger.check(
        "a request's own CPU grows with the requests it is sent among: in twin_quick's heavy calibration run (SQLite, (8, 4)), those sent among 8 or more others use at least 1.25x the CPU of those sent to an empty system",
        GROWTH,
        float(np.average(at[["8-15", "16+"]], weights=test.loc[["8-15", "16+"], "requests"]) / at["0"]),
        Criterion(f"ratio ≥ {GROWTH}", lambda ours, bound: ours >= bound),
        "the CPU per request does not grow with the requests in the system within the run (growth.csv)",
        assumes="the middleware's thread CPU per request, per type; the count at the request's send time, from the client's times",
    )
    ledger.check(
        "the growth levels off at the thread count (8): in the same run, those sent among 16 or more others within 10% of those sent among 8–15",
        LEVEL,
        abs(float(at["16+"] / at["8-15"]) - 1),
        Criterion(f"|ratio − 1| ≤ {LEVEL}", lambda ours, bound: ours <= bound),
        "the CPU per request goes on growing past the thread count: it is not the threads busy that it follows (growth.csv)",
        assumes="the same; both bins hold requests: " + ", ".join(f"{b} {int(test.loc[b, 'requests'])}" for b in ("8-15", "16+")),
    )
    ledger.write(out)
    write_result(out, {"traces": TRACES, "margin_s": MARGIN, "growth": table.astype(object).where(table.notna(), None).to_dict(orient="records")}, [])


if __name__ == "__main__":
    main()
