"""Dutta et al. (ReDAL), §III on the TPC-W cluster example: every dispatch policy at
5–100 simultaneous sessions (20 app servers, 2 web servers, hierarchical), then 10/20/30
app servers, and 1/2/5 web servers hierarchical vs shared ("NH").

Measures per run (tierlab.analysis.dispatch.cluster_metrics): throughput per app server, average
response time (ART), peak app-server CPU utilization, load imbalance (coefficient of
variation of per-server load over time) and session migrations per request; means with
95% confidence intervals over seeds.

    python studies/cluster_dispatch.py            # the full study
    python studies/cluster_dispatch.py --quick    # fewer loads and seeds

Writes studies/results/cluster_dispatch[_quick]/: runs.csv, summary.csv, *.png and
result.json (also printed last)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats  # noqa: E402

from tierlab import load_model  # noqa: E402
from tierlab.analysis.dispatch import cluster_metrics  # noqa: E402
from tierlab.run import Run, sweep  # noqa: E402

from provenance import output_dir, study_parser, write_result  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "tpcw_cluster.yaml"
REDAL = {"slice": 0.1, "think_time": 0.2, "interval": 1.0, "intervals": 5}
POLICIES = {
    "RR+affinity": {"policy": "affinity"},
    "HJ (least active)": {"policy": "least_active"},
    "ReDAL α=0.5": {"policy": "redal", "alpha": 0.5, **REDAL},
    "ReDAL α=0.9": {"policy": "redal", "alpha": 0.9, **REDAL},
    "ReDAL-W α=0.9": {"policy": "redal_w", "alpha": 0.9, **REDAL},
    "P2C (Envoy)": {"policy": "power_of_two"},
    "affinity cap 8 (HAProxy)": {"policy": "affinity_cap", "cap": 8},
}
MEASURES = ["throughput_per_server", "art", "p95", "peak_utilization", "imbalance", "migrations_per_request", "rejected"]


def _measure(trace):
    return cluster_metrics(trace, "app")


def _runs(experiment: str, cases: list[tuple[dict, dict]], seeds) -> tuple[list[Run], list[dict]]:
    runs, keys = [], []
    for labels, changes in cases:
        for seed in seeds:
            runs.append(Run(changes, seed))
            keys.append({"experiment": experiment, **labels, "seed": seed})
    return runs, keys


def _dispatch(policy: str, web: int, topology: str) -> dict:
    return {**POLICIES[policy], "dispatchers": web, "topology": topology}


def main() -> None:
    ap = study_parser(__doc__)
    ap.add_argument("--scheduler", help="a Dask scheduler address (default: local processes)")
    a = ap.parse_args()
    out = output_dir("cluster_dispatch", a)
    model = load_model(MODEL)
    sessions = (10, 40, 80) if a.quick else (5, 10, 20, 40, 60, 80, 100)
    seeds = (1, 2) if a.quick else (1, 2, 3, 4, 5)
    few = (20, 60, 100) if not a.quick else (40, 80)

    def case(policy, clients, app=20, web=2, topology="hierarchical"):
        labels = {"policy": policy, "sessions": clients, "app_servers": app, "web_servers": web, "topology": topology}
        changes = {
            "workload.population.clients": clients,
            "tiers.app.servers": app,
            "tiers.web.servers": web,
            "tiers.app.dispatch": _dispatch(policy, web, topology),
        }
        return labels, changes

    base = [case(p, n) for p in POLICIES for n in sessions]
    apps = [case(p, n, app=s) for p in ("RR+affinity", "HJ (least active)", "ReDAL α=0.9") for s in (10, 30) for n in few]
    webs = [case("ReDAL α=0.9", n, web=w, topology=t) for w, t in ((1, "hierarchical"), (5, "hierarchical"), (5, "shared")) for n in few]
    runs, keys = [], []
    for name, cases in (("base", base), ("app_servers", apps), ("web_servers", webs)):
        r, k = _runs(name, cases, seeds)
        runs += r
        keys += k
    measured = sweep(model, runs, _measure, scheduler=a.scheduler, progress="cluster dispatch")
    df = pd.DataFrame([{**k, **m} for k, m in zip(keys, measured)])
    df.to_csv(out / "runs.csv", index=False)

    group = ["experiment", "policy", "sessions", "app_servers", "web_servers", "topology"]
    summary = df.groupby(group)[MEASURES].agg(["mean", _ci95]).reset_index()
    summary.columns = [c if isinstance(c, str) else (c[0] if not c[1] else f"{c[0]}_{'ci95' if c[1] == '_ci95' else c[1]}") for c in summary.columns]
    summary.to_csv(out / "summary.csv", index=False)
    _plot(summary, out)
    result = _result(summary, sessions)
    cols = ["policy", "sessions", "throughput_per_server_mean", "art_mean", "peak_utilization_mean", "imbalance_mean", "migrations_per_request_mean"]
    print(summary[summary.experiment == "base"][cols].round(3).to_string(index=False))
    write_result(out, result, seeds)


def _ci95(x: pd.Series) -> float:
    """Half-width of the 95% Student-t interval of the mean."""
    n = len(x)
    return float(stats.t.ppf(0.975, n - 1) * x.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")


def _plot(summary: pd.DataFrame, out: Path) -> None:
    base = summary[summary.experiment == "base"]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    for ax, measure, label in zip(
        axes.flat,
        ["throughput_per_server", "art", "imbalance", "peak_utilization"],
        ["throughput per app server (req/s)", "average response time (s)", "load imbalance (CoV over servers)", "peak app-server CPU utilization"],
    ):
        for policy, d in base.groupby("policy", sort=False):
            ax.errorbar(d.sessions, d[f"{measure}_mean"], yerr=d[f"{measure}_ci95"], marker="o", capsize=2, label=policy)
        ax.set_xlabel("simultaneous sessions")
        ax.set_ylabel(label)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "policies.png", dpi=110)

    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for ax, exp, by in ((axes[0], "app_servers", "app_servers"), (axes[1], "web_servers", "web_servers")):
        d = pd.concat(
            [
                summary[summary.experiment == exp],
                summary[
                    (summary.experiment == "base")
                    & (summary.policy.isin(["RR+affinity", "HJ (least active)", "ReDAL α=0.9"] if exp == "app_servers" else ["ReDAL α=0.9"]))
                ],
            ]
        )
        d = d[d.sessions.isin(summary[summary.experiment == exp].sessions.unique())]
        for key, g in d.groupby(["policy", by, "topology"], sort=False):
            g = g.sort_values("sessions")
            label = f"{key[0]}, {key[1]} {by.replace('_', ' ')}" + (" NH" if key[2] == "shared" else "")
            ax.errorbar(g.sessions, g.art_mean, yerr=g.art_ci95, marker="o", capsize=2, label=label)
        ax.set_xlabel("simultaneous sessions")
        ax.set_ylabel("average response time (s)")
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out / "scaling.png", dpi=110)


def _result(summary: pd.DataFrame, sessions) -> dict:
    base = summary[summary.experiment == "base"]
    result: dict = {"base": {}}
    for policy, d in base.groupby("policy", sort=False):
        d = d.set_index("sessions")
        result["base"][policy] = {
            "peak_throughput_per_server": round(float(d.throughput_per_server_mean.max()), 1),
            "at_sessions": int(d.throughput_per_server_mean.idxmax()),
            f"art_ms_at_{max(sessions)}": round(1000 * float(d.art_mean[max(sessions)]), 1),
            f"imbalance_at_{max(sessions)}": round(float(d.imbalance_mean[max(sessions)]), 3),
            f"migrations_per_request_at_{max(sessions)}": round(float(d.migrations_per_request_mean[max(sessions)]), 3),
        }
    return result


if __name__ == "__main__":
    main()
