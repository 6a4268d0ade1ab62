"""Why the live bookstore's capacity depends on its pools when the twin's barely does
(issue 16).

Measured repeatedly (investigations/twin/results/capacity_repeat_quick), the maximum sustainable
throughput was 34–41 sessions/s at (M, N) = (4, 2), 50–57 at (4, 4) and 30–38 at
(8, 4); the twin calibrated at (8, 4) put all three within 4% of each other. The
hypothesis: CPython's interpreter lock. A handler thread leaves the lock while SQLite
runs a statement and must take it back afterwards; while other threads compute, it
waits for it (up to the 5 ms switch interval each time) — and it waits holding its
database connection. More threads computing, longer waits; fewer connections, a
scarcer resource held through them. The twin's processor sharing has no such wait:
there a thread holding a connection only computes or queries.

At one load that every configuration sustains (LOAD sessions/s), one live run per
configuration and the twin (studies/results/twin_quick/sqlite/twin.yaml, three seeds)
at the same configuration and load; per served request, means in ms: the handler's
CPU, its time at the tier off a CPU (its residence less its CPU: lock waits, I/O,
pool waits), the connection held (`with_db_active`), the statements' time inside it
(`db_time`), and the waits for a thread and for a connection.

    python investigations/twin/gil_wait.py      # SQLite, about 3 min

The criterion, written before the run: the lock's waits are a mechanism the twin lacks
if the connection held per request grows from (4, 4) to (8, 4) by at least 20 points
more live than on the twin (live ratio − twin ratio ≥ 0.2). Live timings are the
machine's; the figures do not regenerate exactly."""

from __future__ import annotations

import pandas as pd

from tierlab import load_model, simulate
from tierlab.experiments.study.claims import Criterion, Ledger
from tierlab.experiments.study.provenance import output_dir, root, study_parser, write_result
from tierlab.experiments.twin.setup import live_setup, own_testbed, sizes

# The twin of twin_quick (studies/twin.py --quick), from the repository's root.
TWIN = "studies/results/twin_quick/sqlite/twin.yaml"
CONFIGS = [(4, 2), (4, 4), (8, 4)]
LOAD = 20.0  # sessions/s: below every configuration's measured capacity (30–57)
SEEDS = (1, 2, 3)
GROWTH = 0.2


def per_request(trace) -> dict[str, float]:
    """Means over served requests, in ms, of the figures the docstring names."""
    r = trace.requests[trace.requests.status == "ok"]
    residence = r["app.time"]
    figures = {
        "cpu": r["app.cpu_time"],
        "off_cpu": residence - r["app.cpu_time"],
        "held": r["app.with_db_active"] + r["app.with_db_idle"],
        "statements": r["app.db_time"],
        "wait_thread": r["app.wait_thread"],
        "wait_db": r["app.wait_db"],
    }
    return {k: float(v.mean()) * 1e3 for k, v in figures.items()} | {"served_per_s": trace.summary["throughput"]}


def main() -> None:
    a = study_parser(__doc__, quick=False).parse_args()
    out = output_dir("gil_wait", a)
    s = sizes(True) | {"duration": 20.0}
    twin_file = root() / TWIN
    twin = load_model(twin_file)
    rows = []
    with own_testbed("gil-wait", "sqlite") as bed:
        _, runner, model = live_setup(bed, s, out)
        for M, N in CONFIGS:
            at = {"tiers.app.pools.threads.size": M, "tiers.app.pools.db.size": N, "workload.population.session_rate": LOAD}
            rows.append({"M": M, "N": N, "side": "live"} | per_request(runner(model.with_changes(at))))
            twins = [
                per_request(simulate(twin.with_changes(at | {"run.seed": k, "run.duration": model.spec.run.duration, "run.warmup": model.spec.run.warmup})))
                for k in SEEDS
            ]
            rows.append({"M": M, "N": N, "side": "twin"} | {k: sum(t[k] for t in twins) / len(twins) for k in twins[0]})
            print(rows[-2], rows[-1], sep="\n", flush=True)
    table = pd.DataFrame(rows)
    table.to_csv(out / "per_request.csv", index=False)
    held = table.set_index(["side", "M", "N"])["held"]
    growth = {side: float(held[side, 8, 4] / held[side, 4, 4]) for side in ("live", "twin")}
    ledger = Ledger()
    ledger.check(
        "the connection held per request grows from (4, 4) to (8, 4) by at least 20 points more live than on the twin (the interpreter lock's waits, which the twin lacks)",
        GROWTH,
        growth["live"] - growth["twin"],
        Criterion(f"live ratio − twin ratio ≥ {GROWTH}", lambda ours, bound: ours >= bound),
        "the connection's hold does not grow with the threads more live than on the twin: the lock's waits are not where the capacities part (per_request.csv)",
        assumes=f"one live run per configuration at {LOAD:g} sessions/s; the twin of twin_quick",
    )
    ledger.write(out)
    write_result(
        out,
        {"load": LOAD, "twin": TWIN, "held_growth_4_4_to_8_4": growth, "per_request": table.to_dict(orient="records")},
        SEEDS,
    )


if __name__ == "__main__":
    main()
