"""Which contention makes the live bookstore's CPU per request grow (issue 16).

studies/results/twin_quick showed the live process's CPU per request rising 25–78% from
40% to 80% of capacity while the machine's speed held, and the twin — fixed demands on
processor sharing — flat. Its calibration runs split the rise at (8, 4) (0.37 → 60
requests in service): the handler's CPU 0.92 → 1.69 ms, of which taking and giving
back connections (`pool_cpu_time`) 15 → 45 µs per connection request and SQLite's own
statements (`db_cpu_time`) 0.33 → 0.63 ms per request, the rest of the interpreter's
work only 0.37 → 0.44 ms. Chen & Gorton's cost model names such costs: contention for
the database's connections and data that grows with the server's concurrency. Which
concurrency? Three candidates, each a mechanism a twin could carry:

- the waiters for a connection (the pool's lock and condition variable, handed between
  threads through the interpreter lock): `pool_cpu_time` per connection request;
- the connections busy at once (SQLite's locks on one database file):
  `db_cpu_time` per statement;
- the threads busy at once (the interpreter lock's hand-offs): the handler's other CPU
  per request.

And one that costs no CPU but capacity: the server's pool hands a given-back connection
to no one — the first waiter must wake and take it, which needs the interpreter lock
while other threads compute — so connections sit free while threads wait for one. A
twin calibrated so far grants at once (the model's `handoff`: none). Per run, the
pool's `mean_handing_off` (connections free while threads wait, time-averaged) and, by
Little's law, the seconds each hand-off took (÷ the waits granted per second).

One live run per configuration (M, N) in CONFIGS and load in LOADS (sessions/s, from
light to past some configurations' capacity), SQLite testbed. Per run: each CPU figure
above, the process's CPU per served request (the service demand law) and the part no
handler accounts for, beside the run's mean threads busy, connections busy and waiters
for a connection (the server's pool summary). CPU figures are scaled to the study's
median machine speed (× the median `cpu_probe_ms` ÷ the run's: the same work's CPU time
drifts by up to a third within minutes, investigations/twin/cpu_drift.py).

The criterion, written before the run, for each of the three pairings: the figure grows
with its concurrency when their rank correlation over the runs is ≥ 0.7 and the mean
figure of the third of the runs with the most of that concurrency is ≥ 1.25× that of
the third with the least. For the hand-off: over the runs whose waiters average ≥ 1,
connections sit free while threads wait for them ≥ 20% of the pool on average. The
table also gives each figure's correlation with the other
two concurrencies, so the pairing that explains it best is read off, not assumed.

    python investigations/twin/contention.py      # SQLite, about 5 min

Live timings are the machine's; the figures do not regenerate exactly."""

from __future__ import annotations

import pandas as pd
from scipy.stats import spearmanr

from tierlab.analysis.machine import machine
from tierlab.experiments.study.claims import Criterion, Ledger
from tierlab.experiments.study.provenance import output_dir, study_parser, write_result
from tierlab.experiments.twin.classical import demand_law
from tierlab.experiments.twin.measured import cpu_cores, hand_offs, measured
from tierlab.experiments.twin.setup import live_setup, own_testbed, sizes

CONFIGS = [(2, 2), (4, 2), (4, 4), (8, 2), (8, 4), (16, 4)]
LOADS = (10.0, 25.0, 40.0)  # sessions/s; capacities measured 30-82 on this machine, by day
CONCURRENCY = ("threads_busy", "connections_busy", "connection_waiters")
# Each CPU figure and the concurrency it is paired with (the docstring's mechanisms).
PAIRS = {"pool_us_per_acquire": "connection_waiters", "sqlite_us_per_statement": "connections_busy", "interpreter_ms": "threads_busy"}
CPU = ("process_ms", "outside_handlers_ms", *PAIRS)
RANK, GROWTH = 0.7, 1.25
HANDOFF = 0.2  # share of the pool free while threads wait, in the runs with waiters


def run_figures(trace, tiers) -> dict[str, float]:
    """One run's CPU figures (ms per served request, µs per connection request or
    statement) and its concurrency (means over the run, from the pools' summary)."""
    r = trace.requests[trace.requests.status == "ok"]
    c = lambda name: float(r[f"app.{name}"].sum())  # noqa: E731
    process = demand_law(measured([("run", trace)], tiers))["demand_law"]
    pools = trace.summary["tiers"]["app"]["servers"][0]["pools"]
    return {
        "served_per_s": trace.summary["throughput"],
        "refused_share": 1 - len(r) / max(1, len(trace.requests)),
        "cpu_probe_ms": machine([trace])["cpu_probe_ms"],
        "process_ms": process * 1e3,
        "outside_handlers_ms": (process - c("cpu_time") / len(r)) * 1e3,
        "interpreter_ms": (c("cpu_time") - c("pool_cpu_time") - c("db_cpu_time")) / len(r) * 1e3,
        "pool_us_per_acquire": c("pool_cpu_time") / c("db_requests") * 1e6,
        "sqlite_us_per_statement": c("db_cpu_time") / c("db_queries") * 1e6,
        "threads_busy": pools["threads"]["mean_busy"],
        "connections_busy": pools["db"]["mean_busy"],
        "connection_waiters": pools["db"]["mean_queued"],
        "handing_off": pools["db"]["mean_handing_off"],
        "handoff_us": handoff_us(pools["db"], trace.summary["measured_seconds"]),
    }


def handoff_us(pool, seconds: float) -> float:
    """The mean hand-off in µs (NaN if none waited)."""
    handed, granted = hand_offs(pool, seconds)
    return handed / granted * 1e6 if granted else float("nan")


def at_median_speed(table: pd.DataFrame) -> pd.DataFrame:
    """CPU figures as the study's median machine speed would have given them: a run whose
    probe took longer (a slower machine) had its CPU times inflated by as much."""
    scale = table["cpu_probe_ms"].median() / table["cpu_probe_ms"]
    return table.assign(**{k: table[k] * scale for k in CPU})


def growth(table: pd.DataFrame, figure: str, concurrency: str) -> dict[str, float]:
    """Rank correlation of `figure` with `concurrency` over the runs, and the mean figure
    of the third of runs with the most of it over the third with the least."""
    ordered = table.sort_values(concurrency)
    third = max(1, len(ordered) // 3)
    rho = spearmanr(table[figure], table[concurrency]).statistic
    return {"spearman": float(rho), "top_over_bottom": float(ordered[figure].tail(third).mean() / ordered[figure].head(third).mean())}


def main() -> None:
    a = study_parser(__doc__, quick=False).parse_args()
    out = output_dir("contention", a)
    s = sizes(True)
    rows = []
    with own_testbed("contention", "sqlite") as bed:
        _, runner, model = live_setup(bed, s, out)
        tiers = cpu_cores(model)
        for M, N in CONFIGS:
            for load in LOADS:
                at = {"tiers.app.pools.threads.size": M, "tiers.app.pools.db.size": N, "workload.population.session_rate": load}
                rows.append({"M": M, "N": N, "load": load} | run_figures(runner(model.with_changes(at)), tiers))
                print(rows[-1], flush=True)
    table = at_median_speed(pd.DataFrame(rows))
    table.to_csv(out / "runs.csv", index=False)
    fits = {f: {v: growth(table, f, v) for v in CONCURRENCY} for f in CPU}
    criterion = Criterion(
        f"rank correlation ≥ {RANK} and the most-contended third's mean ≥ {GROWTH}× the least-contended third's",
        lambda ours, bound: ours["spearman"] >= bound["spearman"] and ours["top_over_bottom"] >= bound["top_over_bottom"],
    )
    ledger = Ledger()
    for figure, concurrency in PAIRS.items():
        ledger.check(
            f"{figure} grows with {concurrency} (Chen & Gorton's contention cost; a mechanism the twin's fixed demands lack)",
            {"spearman": RANK, "top_over_bottom": GROWTH},
            fits[figure][concurrency],
            criterion,
            f"{figure} does not grow with {concurrency} across the runs (runs.csv; its correlations with the other concurrencies in result.json)",
            assumes=f"one live run per configuration and load, {len(CONFIGS)} configurations × {len(LOADS)} loads; CPU at the median machine speed",
        )
    contended = table[table["connection_waiters"] >= 1]
    ledger.check(
        "connections sit free while threads wait for one: the pool's hand-off goes through the waiter's waking (the twin's pool grants at once)",
        HANDOFF,
        float((contended["handing_off"] / contended["N"]).mean()) if len(contended) else None,
        Criterion(
            f"mean share of the pool free with waiters ≥ {HANDOFF:g} over the runs with ≥ 1 waiter", lambda ours, bound: ours is not None and ours >= bound
        ),
        "no run had connections free while threads waited (runs.csv)",
        assumes=f"{len(contended)} runs with a mean of ≥ 1 waiter for a connection",
    )
    ledger.write(out)
    write_result(out, {"configs": CONFIGS, "loads": list(LOADS), "fits": fits, "runs": table.to_dict(orient="records")}, [model.spec.run.seed])


if __name__ == "__main__":
    main()
