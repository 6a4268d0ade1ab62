"""Totok & Karamcheti §5.2, Figs. 3–5: the phase breakdown of Search, Buy Request and
Buy Confirm under request-wide and transaction-wide connection caching, at loads from
50% of the server's capacity to beyond it, on the TPC-W example with the paper's pools
(M = N = 30) and at the pool-sizing optimum (M = 15, N = 5).

Capacity = the CPU bound of the example (`session_rate_bound`, sessions/s at which the
app CPU would be 100% busy). Both modes see the same offered loads.

    python studies/connection_caching.py [--quick]

Writes studies/results/connection_caching[_quick]/: phases.csv, connection_caching_M<M>_N<N>.png,
result.json (also printed last)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from tierlab import load_model  # noqa: E402
from tierlab.analysis.profile import request_profile  # noqa: E402
from tierlab.run import Run, sweep  # noqa: E402

from provenance import output_dir, study_parser, write_result  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TYPES = {"SRES": "Search", "BUYR": "Buy Request", "BUYC": "Buy Confirm"}
PHASES = ["wait_thread", "p", "wait_db", "q_active", "q_idle"]
MODES = ("request", "transaction")
POOLS = ((30, 30), (15, 5))  # the paper's (M, N), and the method's optimum for the example


def _phases(trace):
    return request_profile(trace).phases


def main() -> None:
    ap = study_parser(__doc__)
    a = ap.parse_args()
    out = output_dir("connection_caching", a)
    model = load_model(ROOT / "examples" / "tpcw_2tier.yaml")
    capacity = model.session_rate_bound()
    loads = (0.5, 0.9, 1.1) if a.quick else (0.5, 0.7, 0.8, 0.9, 1.0, 1.1)
    seeds = (1,) if a.quick else (1, 2, 3)
    keys = [(pools, mode, load, s) for pools in POOLS for mode in MODES for load in loads for s in seeds]
    runs = [
        Run(
            {
                "tiers.app.pools.threads.size": M,
                "tiers.app.pools.db.size": N,
                "tiers.app.pools.db.caching": mode,
                "workload.population.session_rate": load * capacity,
            },
            s,
        )
        for (M, N), mode, load, s in keys
    ]
    measured = sweep(model, runs, _phases, progress="connection caching")
    rows = []
    for ((M, N), mode, load, seed), ph in zip(keys, measured):
        for ty, name in TYPES.items():
            rows.append({"pools": f"M={M} N={N}", "mode": mode, "load": load, "seed": seed, "type": name, **ph.loc[ty, PHASES + ["db_requests"]].to_dict()})
    df = pd.DataFrame(rows).groupby(["pools", "mode", "load", "type"], as_index=False)[PHASES + ["db_requests"]].mean()
    df.to_csv(out / "phases.csv", index=False)
    for pools, d in df.groupby("pools"):
        _plot(d, out / f"connection_caching_{pools.replace(' ', '_').replace('=', '')}.png")
    df["with_thread"] = df[["p", "wait_db", "q_active", "q_idle"]].sum(axis=1)
    result = {"capacity_sessions_per_s": capacity}
    for pools, d in df.groupby("pools"):
        result[pools] = {
            f"{mode}@{load:.0%}": {
                row.type: {
                    "wait_thread_ms": round(row.wait_thread * 1000, 1),
                    "with_thread_ms": round(row.with_thread * 1000, 1),
                    "wait_db_ms": round(row.wait_db * 1000, 1),
                    "idle_ms": round(row.q_idle * 1000, 1),
                    "db_requests": round(row.db_requests, 2),
                }
                for row in g.itertuples()
            }
            for (mode, load), g in d.groupby(["mode", "load"])
        }
    print(df.to_string(index=False))
    write_result(out, result, seeds)


def _plot(df: pd.DataFrame, file: Path) -> None:
    fig, axes = plt.subplots(len(TYPES), 2, figsize=(10, 3 * len(TYPES)), sharey="row")
    for i, name in enumerate(TYPES.values()):
        for j, mode in enumerate(MODES):
            d = df[(df.type == name) & (df["mode"] == mode)].set_index("load")[PHASES] * 1000
            d.index = [f"{x:.0%}" for x in d.index]
            d.plot.bar(stacked=True, ax=axes[i][j], legend=(i == 0 and j == 0), rot=0)
            axes[i][j].set_title(f"{name}, {mode}-wide ({df.pools.iloc[0]})")
            axes[i][j].set_ylabel("ms")
    fig.tight_layout()
    fig.savefig(file, dpi=110)


if __name__ == "__main__":
    main()
