"""Past the threads an (8, 4) run can hold, does a request's CPU go on growing? (issue 16)

`cpu_growth.py` found, in the (8, 4) calibration runs, that a request's handler CPU
grows with the threads other requests hold when it gets its own (0.96× the base with 3
or fewer, 1.47–1.69× with 4 or more), whether they compute or wait for a connection.
The twin's growth per thread held, fitted there, rated PostgreSQL's (16, 2) 33% low,
where live sustained as much with 16 threads as with 4. This study runs heavy live runs
at (16, 2) on SQLite (LOADS, twin.py's model and run lengths), keeps their records
(`run_<load>/requests.parquet`), and splits it as `cpu_growth.py` splits the (8, 4)
runs, by the threads held by others when a request got its thread.

The first run, at 26 sessions/s, was beyond (16, 2)'s capacity: every served request
found 8 or more threads held (14–16 for nearly all), none was sent to an empty system,
and neither claim could be scored. A run at 16 sessions/s was added after it and
before its own run, with the same criteria; both are kept, each scored on its own.

    python investigations/twin/cpu_growth_live.py            # SQLite, about 2 min
    python investigations/twin/cpu_growth_live.py --resume   # re-analyse the saved run

The criteria, written before the run, on the handler CPU per request divided by its
type's mean over the run's requests sent to an empty system:
1. the growth of the (8, 4) runs repeats: those that found 4–7 threads held use at least
   1.25× the CPU of those that found 0–3;
2. it stops there: those that found 8 or more use within 10% of those that found 4–7 —
   which a growth per thread held, carried to 16 threads, gets wrong.
Each side needs 30 requests, else the claim is not reproduced. Live timings are the
machine's; the run does not regenerate exactly, its analysis does (`--resume`)."""

from __future__ import annotations

import pandas as pd

from tierlab.experiments.study.claims import Criterion, Ledger
from tierlab.experiments.study.provenance import output_dir, study_parser, write_result
from tierlab.experiments.twin.growth import binned, empty_base, relative, requests
from tierlab.experiments.twin.setup import live_setup, own_testbed, sizes

M, N = 16, 2
LOADS = (26.0, 16.0)  # sessions/s; see the docstring for why two
GROWTH, FLAT, ENOUGH = 1.25, 0.10, 30
HELD: list[tuple[int, int | None]] = [(0, 3), (4, 7), (8, 11), (12, 15)]


def by_held(r: pd.DataFrame) -> pd.DataFrame:
    """Requests and their relative CPU per bin of the threads held by others."""
    return binned(r.held, r.rel, HELD, "held").set_index("held")


def score(ledger: Ledger, r: pd.DataFrame, load: float) -> dict:
    """The two claims on one run; its table and the 8-or-more side."""
    table = by_held(r)
    cpu, n = table.cpu_vs_empty, table.requests
    more = (r.held >= 8) & r.rel.notna()
    eight_plus = (float(r.rel[more].mean()) if more.any() else None, int(more.sum()))
    ledger.check(
        f"at (16, 2) and {load:g} sessions/s, a request's CPU grows with the threads held by others as in the (8, 4) runs: those that found 4-7 use at least 1.25x the CPU of those that found 0-3",
        GROWTH,
        float(cpu["4-7"] / cpu["0-3"]) if min(n["4-7"], n["0-3"]) >= ENOUGH else None,
        Criterion(f"ratio ≥ {GROWTH}, {ENOUGH} requests a side", lambda ours, bound: ours is not None and ours >= bound),
        "the growth with the threads held does not repeat at (16, 2), or too few requests on a side (by_held.csv)",
        assumes=f"one live run; {n['0-3']} and {n['4-7']} requests; timelines rebuilt from the phases (cpu_growth.py)",
    )
    ledger.check(
        f"at (16, 2) and {load:g} sessions/s the growth stops at the threads an (8, 4) run can hold: those that found 8 or more threads held within 10% of those that found 4-7",
        FLAT,
        abs(eight_plus[0] / float(cpu["4-7"]) - 1) if eight_plus[0] is not None and min(eight_plus[1], n["4-7"]) >= ENOUGH else None,
        Criterion(f"|ratio − 1| ≤ {FLAT}, {ENOUGH} requests a side", lambda ours, bound: ours is not None and ours <= bound),
        "the CPU goes on growing past 7 threads held, or too few requests on a side (by_held.csv)",
        assumes=f"the same run; {eight_plus[1]} requests found 8 or more",
    )
    return {"load": load, "by_held": table.reset_index().to_dict(orient="records"), "held_8_plus": eight_plus}


def main() -> None:
    ap = study_parser(__doc__, quick=False)
    ap.add_argument("--resume", action="store_true", help="re-analyse the runs saved in the output folder, run only those missing")
    a = ap.parse_args()
    out = output_dir("cpu_growth_live", a)
    runs = {load: out / f"run_{load:g}" for load in LOADS}
    missing = [load for load, run in runs.items() if not (a.resume and (run / "requests.parquet").exists())]
    if missing:
        with own_testbed("cpu-growth-live", "sqlite") as bed:
            _, runner, model = live_setup(bed, sizes(False), out)
            for load in missing:
                at = {"tiers.app.pools.threads.size": M, "tiers.app.pools.db.size": N, "workload.population.session_rate": load}
                trace = runner(model.with_changes(at))
                assert trace.requests is not None  # a live run records every request
                runs[load].mkdir(exist_ok=True)
                trace.requests.to_parquet(runs[load] / "requests.parquet")
                print(f"{load:g} sessions/s: requests {trace.summary['requests']}")
    ledger, results, tables = Ledger(), [], []
    for load, run in runs.items():
        r = requests(run)
        r = r.assign(rel=relative(r, empty_base({"run": r})))
        results.append(score(ledger, r, load))
        tables.append(by_held(r).assign(load=load))
    table = pd.concat(tables).reset_index()[["load", "held", "requests", "cpu_vs_empty"]]
    table.to_csv(out / "by_held.csv", index=False)
    print(table.to_string(index=False))
    ledger.write(out)
    write_result(out, {"M": M, "N": N, "runs": results}, [])


if __name__ == "__main__":
    main()
