"""Totok & Karamcheti on the live bookstore (PostgreSQL): connection caching measured,
then the pool-sizing method's prediction checked against a measurement.

1. Request-wide vs transaction-wide caching at one (M, N) and rate: the phase
   breakdown of Search (SRES), Buy Request (BUYR) and Buy Confirm (BUYC) (§3, §5.2).
2. Profiling tests over an (M, N) grid on the running server (pools resized through its
   admin endpoint), λ(M, N) and the optimum (M0, N0) from them, and the maximum
   sustainable session throughput measured at M0 − 2 … M0 + 2 with N0 (§5.3: "we run
   tests with (M0 − 1, N), (M0, N), (M0 + 1, N), and (M0 − 2, N), (M0 + 2, N)"), each
   found by bisection on a grid of 1% of the method's λ: the 5% it scores is five steps.

    TIERLAB_BOOKSTORE_CPU=paper tierlab live up --db postgres   # the paper's CPU snippets (§5.1)
    python studies/live_sizing.py --quick   # 2 M × 2 N, 30 s runs, M0 ± 1 (~40 min)
    python studies/live_sizing.py           # 3 M × 2 N, 30 s runs, M0 ± 2 (~1.5 h on 2 cores)
    tierlab live down
    python studies/live_sizing.py --rescore # the claims again from the committed result.json

The workload is examples/totok_tpcw.yaml's (the paper's eight request types in Table
II's profiling shares, examples/totok_http.yaml's pages) with 0.5 s think times
(sessions of ~15 requests last seconds, so runs of half a minute see many whole
sessions). A request waits at most `--timeout` for a thread or a connection and is then
rejected (503), as in the paper's server. Writes studies/results/live_sizing[_quick]/:
caching.csv, profile/, rates.csv, validation.csv, trials.csv, result.json (also printed
last) and claims.json: the paper's claims scored (tierlab.experiments.study.claims)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from pool_sizing import CLOSE_N, ERROR_BOUND, ERROR_DECIDED, PAPER_OPTIMA

from tierlab import load_model
from tierlab.analysis.profile import request_profile
from tierlab.experiments.sizing import PoolSizing, ProfileGrid, max_sustainable_rate, profile_grid
from tierlab.experiments.study.claims import Criterion, Ledger, below, decreasing, each, spread_beyond
from tierlab.experiments.study.provenance import output_dir, study_parser, write_result
from tierlab.live.mapping import load_mapping
from tierlab.live.testbed import LiveRunner, Testbed

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "totok_tpcw.yaml"
MAPPING = ROOT / "examples" / "totok_http.yaml"
CACHING_TYPES = ["SRES", "BUYR", "BUYC"]
# The capacity search's step, as a share of the method's λ at the optimum: fixed before
# the run, a fifth of the 5% it scores (a step of 5% could not tell 4% from 6%).
RESOLUTION = 0.01
ROUNDS = 16  # bracketing up to ±30% of the prediction in 1% steps (~6 rounds), then bisecting (~5)


def caching_study(bed: Testbed, model, runner: LiveRunner, rate: float) -> pd.DataFrame:
    rows = []
    for caching in ("transaction", "request"):
        trace = runner(model.with_changes({"tiers.app.pools.db.caching": caching, "workload.population.session_rate": rate}))
        table = request_profile(trace).table().reset_index()
        rows.append(table[table["type"].isin(CACHING_TYPES)].assign(caching=caching, served=trace.summary["requests"]["ok"]))
    return pd.concat(rows, ignore_index=True)


def main() -> None:
    ap = study_parser(__doc__)
    ap.add_argument("--workdir", default=".tierlab/live", help="the running testbed (tierlab live up)")
    ap.add_argument("--threads", help="M values to profile (default 4,8,16; quick 4,8)")
    ap.add_argument("--connections", default="2,4", help="N values to profile")
    ap.add_argument("--duration", type=float, help="measured seconds per run (after the warm-up; default and quick 30: several sessions long)")
    ap.add_argument("--warmup", type=float, default=6.0)
    ap.add_argument("--timeout", type=float, default=1.0, help="seconds a request may wait for a thread or a connection")
    # With the paper's snippets a request of the mix costs 36 ms of CPU, and the
    # interpreter's lock lets the server use about one core: ~28 requests/s, 1.9 sessions/s.
    # The load structure is measured at half the bound: below that capacity, so that its
    # sessions (14.67 pages, 0.5 s think times: 7 s and more) end within a run.
    ap.add_argument("--bound", type=float, default=3.0, help="sessions/s no configuration serves (the pilot runs offer twice this)")
    ap.add_argument("--runs", type=int, default=2, help="runs per rate in the capacity search")
    ap.add_argument("--caching-rate", type=float, default=1.2, help="sessions/s for the caching comparison (below capacity)")
    ap.add_argument("--reuse", action="store_true", help="keep caching.csv and profile/ from an earlier run; validate only")
    ap.add_argument("--rescore", action="store_true", help="score the claims again from result.json; run nothing")
    a = ap.parse_args()
    out = output_dir("live_sizing", a)
    if a.rescore:
        _claims(json.loads((out / "result.json").read_text())).write(out)
        return
    threads = a.threads or ("4,8" if a.quick else "4,8,16")
    duration = a.duration or 30.0
    neighbours = 1 if a.quick else 2
    bed = Testbed(a.workdir)
    runner = LiveRunner(bed, load_mapping(MAPPING))
    model = load_model(MODEL).with_changes(
        {
            "workload.think": {"exponential": 0.5},
            "run.duration": a.warmup + duration,
            "run.warmup": a.warmup,
            "tiers.app.pools.threads.timeout": a.timeout,
            "tiers.app.pools.db.timeout": a.timeout,
            "tiers.app.pools.db.caching": "transaction",
        }
    )

    if a.reuse:
        caching, grid = pd.read_csv(out / "caching.csv"), ProfileGrid.read(out / "profile")
        Ms, Ns = sorted(grid.points.M.unique().tolist()), sorted(grid.points.N.unique().tolist())
    else:
        caching = caching_study(bed, model.with_changes({"tiers.app.pools.threads.size": 10, "tiers.app.pools.db.size": 5}), runner, a.caching_rate)
        caching.to_csv(out / "caching.csv", index=False)
        Ms, Ns = ([int(v) for v in s.split(",")] for s in (threads, a.connections))
        # Overload shows up late on this server (pilots beyond capacity thrash and
        # underestimate it), so the profiling rate climbs in steps of 25%.
        grid = profile_grid(model, Ms, Ns, runner=runner, bound=a.bound, overload=0.25, max_rounds=5)
        grid.write(out / "profile")
    rates = PoolSizing(grid).rates()
    rates.table.to_csv(out / "rates.csv", index=False)
    best = rates.best()
    M0, N0 = int(best["M"]), int(best["N"])
    table = rates.table.set_index(["M", "N"])["lambda"]
    # M0 − k … M0 + k at N0 (M ≥ N0); a configuration outside the profiled region has no
    # prediction, and its search starts from the optimum's.
    configs = [(M, N0) for M in range(max(N0, M0 - neighbours), M0 + neighbours + 1)]
    predicted = {c: float(table.loc[c]) if c in table.index else None for c in configs}
    start = {c: v if v is not None else float(best["lambda"]) for c, v in predicted.items()}
    step = round(RESOLUTION * float(best["lambda"]), 3)
    measured, trials = max_sustainable_rate(model, configs, start, step=step, runs=a.runs, runner=runner, max_rounds=ROUNDS, decided=True, log=print)
    measured["predicted"] = [predicted[(int(m), int(n))] for m, n in zip(measured.M, measured.N)]
    measured["error"] = (measured["predicted"] - measured["lambda_max"]) / measured["lambda_max"]
    measured.to_csv(out / "validation.csv", index=False)
    trials.to_csv(out / "trials.csv", index=False)
    top = measured.loc[measured["lambda_max"].idxmax()]
    result = {
        "runs": {"duration": duration, "warmup": a.warmup, "timeout": a.timeout, "capacity_runs_per_rate": a.runs, "step": step, "neighbours": neighbours},
        "grid": {"M": Ms, "N": Ns, "L": grid.L, "not_overloaded": int((~grid.runs["overloaded"]).sum()), "served_overloaded": _served_overloaded(grid)},
        "optimum": {"M": M0, "N": N0, "lambda_predicted": float(best["lambda"])},
        "validation": measured.to_dict(orient="records"),
        "measured_best": {"M": int(top.M), "N": int(top.N), "lambda_max": float(top.lambda_max)},
        "error_at_optimum": float(measured.set_index(["M", "N"]).loc[(M0, N0), "error"]),
        "caching": caching[["caching", "type", "count", "wait_thread", "p", "wait_db", "q_active", "q_idle", "db_requests"]].to_dict(orient="records"),
    }
    # The seeds drive the load generator's draws (profiling: 1; capacity runs: 1..runs);
    # the live server's timing is the machine's, so the figures do not regenerate exactly.
    write_result(out, result, range(1, a.runs + 1))
    _claims(result).write(out)


def _served_overloaded(grid: ProfileGrid) -> dict[str, float]:
    """Sessions/s each profiled (M, N) served in its runs past capacity ("M,N": mean)."""
    over = grid.runs[grid.runs["overloaded"]]
    return {f"{m},{n}": float(g["served"].mean()) for (m, n), g in over.groupby(["M", "N"])}


def _ceiling(result: dict) -> str:
    """A method claim's miss: what the profile says held the server, where it says it."""
    served = result["grid"].get("served_overloaded")
    if not served:
        return "not diagnosed: the live profile is a few M × 2 N points of short runs on a server whose timings are the machine's"
    lo, hi = min(served.values()), max(served.values())
    return (
        f"a ceiling that is not the pools': past capacity every profiled (M, N) served {lo:.2f}–{hi:.2f} sessions/s "
        f"(spread {hi / lo - 1:.0%}), about what the interpreter's one core allows with the paper's CPU snippets (~1.9, this "
        f"script's estimate), while the method, which knows only the pools' hold times, predicts {result['optimum']['lambda_predicted']:.2f} "
        f"at its optimum; the measured maxima lie lower still: the rates at which a 30 s run serves every request within the 1 s pool timeout"
    )


def _claims(result: dict) -> Ledger:
    """Totok & Karamcheti's claims on the live server (the criteria of pool_sizing.py and
    connection_caching.py); its caching comparison runs at one rate below capacity."""
    ledger = Ledger()
    v = {(r["M"], r["N"]): r for r in result["validation"]}
    M0, N0 = result["optimum"]["M"], result["optimum"]["N"]
    step = result["runs"]["step"]
    measured = {f"M={m}": r["lambda_max"] for (m, n), r in sorted(v.items())}
    top = max(measured.values())
    ledger.check(
        "The method finds the best M for its N (§5.3, Fig. 9): M0 among the measured best of the configurations measured with N0",
        "M0 is the best",
        {"M0": M0, "measured_best_M": [int(k[2:]) for k, x in measured.items() if x == top], "N": N0},
        Criterion("M0 among the measured best M", lambda ours, paper: ours["M0"] in ours["measured_best_M"]),
        _ceiling(result),
        testable=spread_beyond(step, " sessions/s", "one step of the capacity search"),
        testable_data=measured,
    )
    ledger.check(
        f"The measured maximum session throughput at the optimum lies within {ERROR_BOUND:.0%} of the method's (§5.3): (method − measured) / measured",
        ERROR_BOUND,
        result["error_at_optimum"],
        Criterion(f"|error| at most {ERROR_BOUND:.0%}", lambda ours, paper: abs(ours) <= paper),
        _ceiling(result),
        # A search in steps of the 5% it scores decides only errors far from it (the first
        # live study's step was 5% of λ); RESOLUTION is a fifth of it.
        testable=ERROR_DECIDED,
        testable_data={"optimum": (result["optimum"]["lambda_predicted"], v[(M0, N0)]["lambda_max"], step)},
    )
    ledger.check(
        f"The measured maximum may be 'a little lower than projected', not higher (§5.3, a hedge): measured − method at the optimum, sessions/s (one step: {step:g})",
        "measured ≤ method (within one step)",
        v[(M0, N0)]["lambda_max"] - result["optimum"]["lambda_predicted"],
        Criterion("at most one step of the capacity search", lambda ours, paper: ours <= step * (1 + 1e-9)),
        _ceiling(result),
    )
    ledger.check(
        "The optimal (M, N) has N very close to M (§5.3: (8, 6), (14, 11), (30, 26)): N / M",
        min(n / m for m, n in PAPER_OPTIMA),
        N0 / M0,
        Criterion(f"N / M at least {CLOSE_N:g}", lambda ours, paper: ours >= CLOSE_N),
        _ceiling(result),
    )
    c = {(r["caching"], r["type"]): r for r in result["caching"]}
    ledger.check(
        "Idle time with a cached connection is negligible next to the active time, request-wide (§5.2): idle / active per type",
        "below 10%",
        {t: c[("request", t)]["q_idle"] / c[("request", t)]["q_active"] for t in ("SRES", "BUYR", "BUYC")},
        each(below(0.1)),
    )
    search = {m: c[(m, "SRES")] for m in ("transaction", "request")}
    ledger.check(
        "Search waits longer per connection acquisition request-wide than transaction-wide (§5.2, Fig. 3)",
        "request-wide longer",
        {m: search[m]["wait_db"] / search[m]["db_requests"] for m in ("request", "transaction")},
        decreasing(),
    )
    ledger.check(
        "Search waits less for connections in all under request-wide caching (one wait instead of 101) (§5.2, Fig. 3)",
        "transaction-wide longer",
        {m: search[m]["wait_db"] for m in ("transaction", "request")},
        decreasing(),
    )
    ledger.check(
        "Search holds its thread longer transaction-wide (§5.2, Fig. 3): p + wait for a connection + q",
        "transaction-wide longer",
        {m: search[m]["p"] + search[m]["wait_db"] + search[m]["q_active"] + search[m]["q_idle"] for m in ("transaction", "request")},
        decreasing(),
    )
    return ledger


if __name__ == "__main__":
    main()
