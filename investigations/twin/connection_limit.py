"""Is the JVM bookstore's flat λ_max on one pinned core its connection limit? (issue 41)

The quick twin study on the JVM (`studies/results/twin_java_budget_quick`, one core
pinned) measured λ_max flat at 157–159 sessions/s over (4, 2), (4, 4) and (8, 4), where
the twin, whose app station is the whole core, put it 7–13% higher; `pinned_core` found
the core only 0.6–0.8 busy there and the backlog outside the server's clock. Scratch
runs then (pinned_core_placement's notes) pointed at the Tomcat connector's
`maxConnections`, 900 on the testbed (`live up --connection-limit`): each session keeps
its connection through its thinks (keep-alive), a session lives ~6 s, so 900
connections carry ~150 sessions/s; a new session's connection waits in the kernel's
accept queue until one closes. This script turns that into a measurement: two JVM
testbeds alike (SQLite, the app pinned to one core, warmed up, every run on the data as
populated) but for the limit — 900 and 3,000 — at (8, 4) and 80%, 100%, 110% and 125%
of 158.5 sessions/s ((8, 4)'s quick truth), 3 interleaved repeats of the study's
verification runs (10 s after 5 s, seed 1). Per run: what was served and not, the
requests' time outside the server (response time − time at the app tier: the accept
queue, the sockets, the client), the connections the JVM held (the monitor's `sockets`),
the pinned core's use.

    python investigations/twin/connection_limit.py    # about 15 min

Criteria, written before the run (2026-11-28 18:29 UTC):
1. The limit is the bound: at 110% and 125%, with the limit at 3,000 the requests in
   flight at the run's end and the p99 time outside the server are each at most a
   quarter of what they are at 900 (means over the repeats).
2. The limit binds: at 110% and 125% with 900, the most connections the JVM held
   (`sockets`, the measured windows) at least 97% of 900, and at 125% with 3,000 above
   900 by at least 5%.
3. Below it, it does not matter: at 80% the two limits serve within 3% of each other's
   requests/s, and at 900 the JVM held fewer than 900.
4. The limit predicts the flat truth: the sessions' connection hold at 80% (Little's
   law: the connections held over the last 5 s of the run ÷ the session rate, mean of
   the six runs) puts the rate at which 900 fill, 900 ÷ hold, within 5% (the JVM's λ_max
   target) of 158.5.

Live timings are the machine's; the figures do not regenerate exactly."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any, cast

import pandas as pd

from tierlab.experiments.study.claims import Criterion, Ledger, each
from tierlab.experiments.study.provenance import output_dir, root, study_parser, write_result
from tierlab.experiments.twin.setup import CALIBRATED, live_setup, sizes
from tierlab.experiments.twin.truth import estimate, interleaved
from tierlab.live.testbed import Testbed
from tierlab.trace.schema import sent

CAPACITY = 158.5  # (8, 4)'s truth in the quick twin study's re-run at bfc7e45, sessions/s
LOADS = (0.80, 1.00, 1.10, 1.25)
LIMITS = (900, 3000)
REPEATS = 3
CPU = {"app": 1.0}
REMOVED = 0.25  # criterion 1: at 3,000, at most this share of 900's backlog
FILLED = 0.97  # criterion 2: at 900 the connections held reach this share of it
PAST = 1.05  # criterion 2: at 125% and 3,000, the connections held above 900 by this
SAME = 0.03  # criterion 3: requests/s at 80%, the two limits
TARGET = 0.05  # criterion 4: the JVM's λ_max target (issue 41)
STEADY = 5.0  # seconds at the run's end over which the hold is read (criterion 4)


def main() -> None:
    ap = study_parser(__doc__, quick=False)
    a = ap.parse_args()
    out = output_dir("connection_limit", a)
    rows: list[dict[str, Any]] = []
    with ExitStack() as stack:
        beds = {
            n: stack.enter_context(
                Testbed.started((root() / ".tierlab" / f"connection-limit-{n}").resolve(), db="sqlite", cpu=CPU, server="java", connection_limit=n)
            )
            for n in LIMITS
        }
        for bed in beds.values():
            if bed.state.cpu_note or bed.state.pin_note or not bed.state.pinned.get("app"):
                raise SystemExit(f"no pinned core here: {bed.state.cpu_note or bed.state.pin_note}")
        runners = {}
        for n, bed in beds.items():  # each warmed up
            _, runners[n], model = live_setup(bed, sizes(True), out / str(n))
        at = {"tiers.app.pools.threads.size": CALIBRATED[0], "tiers.app.pools.db.size": CALIBRATED[1]}
        for repeat, (load, limit) in interleaved([(x, n) for x in LOADS for n in LIMITS], REPEATS):
            rate = round(load * CAPACITY, 2)
            trace = runners[limit](model.with_changes(at | {"workload.population.session_rate": rate}))
            s = trace.summary
            requests = cast(pd.DataFrame, trace.requests)
            measured = requests[requests.start >= s["warmup"]]
            outside = (measured.response_time - measured["app.time"].fillna(0.0)).dropna()
            series = trace.timeseries
            app = series[(series.tier == "app") & (series.resource == "")]
            sockets = app[app.metric == "sockets"]
            pinned = app[(app.metric == "cpu_pinned") & (app.t >= s["warmup"])]
            end = float(sockets.t.max())
            rows.append(
                {
                    "repeat": repeat,
                    "load": load,
                    "limit": limit,
                    "rate": rate,
                    "ok": s["requests"]["ok"],
                    "not_served": sent(s["requests"]) - s["requests"]["ok"],
                    **{k: s["requests"][k] for k in ("rejected", "timeout", "error", "unfinished")},
                    "served_per_s": s["throughput"],
                    "outside_p99_ms": 1e3 * float(outside.quantile(0.99)),
                    "outside_mean_ms": 1e3 * float(outside.mean()),
                    "app_time_ms": 1e3 * float(measured["app.time"].mean()),
                    "connections_max": float(sockets[sockets.t >= s["warmup"]].value.max()),
                    "connections_late": float(sockets[sockets.t > end - STEADY].value.mean()),
                    "core_busy": float(pinned.value.mean()) if len(pinned) else float("nan"),
                }
            )
            x = rows[-1]
            print(
                f"limit {limit}, {load:.0%} ({rate} sessions/s), repeat {repeat}: {x['served_per_s']:.0f} req/s, {x['unfinished']} unfinished, "
                f"{x['not_served']} not served; outside the server p99 {x['outside_p99_ms']:.0f} ms; connections max {x['connections_max']:.0f}, "
                f"last {STEADY:g} s {x['connections_late']:.0f}; core {x['core_busy']:.2f}",
                flush=True,
            )
            pd.DataFrame(rows).to_csv(out / "runs.csv", index=False)
    score(pd.DataFrame(rows), out)


def score(table: pd.DataFrame, out) -> None:
    columns = [c for c in table.columns if c not in ("repeat", "load", "limit", "rate")]
    figures = {
        f"{n} {x:.0%}": {k: [e.mean, e.halfwidth] for k, e in ((k, estimate(list(g[k].astype(float)))) for k in columns)}
        for (n, x), g in table.groupby(["limit", "load"])
    }
    cell = {(n, x): g for (n, x), g in table.groupby(["limit", "load"])}
    mean = lambda n, x, k: estimate(list(cell[(n, x)][k].astype(float))).mean  # noqa: E731
    low, high = min(LOADS), sorted(LOADS)[-2:]
    few, many = LIMITS
    ledger = Ledger()
    ledger.check(
        f"the limit is the bound: at the two highest loads, with the limit at {many:,} the requests in flight at the end and the p99 time outside the server "
        f"each at most {REMOVED:g} of what they are at {few}",
        f"at most {REMOVED:g} of {few}'s",
        {f"{x:.0%}": {k: mean(many, x, k) / mean(few, x, k) for k in ("unfinished", "outside_p99_ms")} for x in high},
        each(Criterion(f"at most {REMOVED:g}", lambda ours, paper: all(v <= REMOVED for v in ours.values()))),
        "raising the limit does not remove the backlog (runs.csv: unfinished, outside_p99_ms)",
    )
    ledger.check(
        f"the limit binds: at the two highest loads with {few} the JVM held at least {FILLED:.0%} of {few} connections; at {max(LOADS):.0%} with {many:,}, "
        f"more than {few} by {PAST - 1:.0%}",
        f"≥ {FILLED * few:g} at {few}; ≥ {PAST * few:g} at {many:,}",
        {f"{x:.0%}": {str(n): mean(n, x, "connections_max") for n in LIMITS} for x in high},
        Criterion(
            "filled at the lower limit, past it at the higher",
            lambda ours, paper: all(ours[f"{x:.0%}"][str(few)] >= FILLED * few for x in high) and ours[f"{max(LOADS):.0%}"][str(many)] >= PAST * few,
        ),
        "the connections held stay under the limit (runs.csv: connections_max)",
    )
    ledger.check(
        f"below it the limit does not matter: at {low:.0%} the two limits serve within {SAME:.0%} of each other, and at {few} the JVM held fewer than {few}",
        f"within {SAME:.0%}; fewer than {few}",
        {"requests_per_s_ratio": mean(many, low, "served_per_s") / mean(few, low, "served_per_s"), "connections_max": mean(few, low, "connections_max")},
        Criterion(f"within {SAME:.0%}, under {few}", lambda ours, paper: abs(ours["requests_per_s_ratio"] - 1) <= SAME and ours["connections_max"] < few),
        "the limit changes what is served below it (runs.csv: served_per_s, connections_max)",
    )
    at_low = table[table.load == low]
    hold = estimate(list(at_low.connections_late / at_low.rate))
    filled_at = few / hold.mean
    ledger.check(
        f"the limit predicts the flat truth: {few} ÷ the sessions' connection hold at {low:.0%} (Little's law) within {TARGET:.0%} of {CAPACITY}",
        f"within {TARGET:.0%} of {CAPACITY}",
        {"hold_s": [hold.mean, hold.halfwidth], "fills_at": filled_at, "error": filled_at / CAPACITY - 1},
        Criterion(f"within {TARGET:.0%}", lambda ours, paper: abs(ours["error"]) <= TARGET),
        "the connections' fill rate is not the truth's λ_max (runs.csv: connections_late, rate)",
    )
    ledger.write(out)
    write_result(out, {"capacity": CAPACITY, "config": list(CALIBRATED), "limits": list(LIMITS), "by_limit_and_load": figures}, list(range(1, REPEATS + 1)))


if __name__ == "__main__":
    main()
