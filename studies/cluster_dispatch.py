"""Dutta et al. (ReDAL), §III on the TPC-W cluster example: every dispatch policy at
5–100 simultaneous sessions (20 app servers, 2 web servers, hierarchical), then 10/20/30
app servers, and 1/2/5 web servers hierarchical vs shared ("NH").

Measures per run (tierlab.analysis.dispatch.cluster_metrics): the cluster's throughput
(and per app server), average response time (ART), peak app-server CPU utilization, load
imbalance (coefficient of variation of per-server load over time), session migrations
per request and the requests ReDAL-W held; means with 95% confidence intervals over seeds.

Reading Figs. 8 and 9 together. Fig. 8's axis says "per application server", but the
two figures cannot both be per server: at 80 sessions ReDAL α=0.9 answers in 0.28 s on
average (Fig. 9), so by Little's law the 80 sessions send at most 80 / 0.28 ≈ 286
requests/s to the whole cluster, not 243 to each of 20 servers (4,860). Read as the
cluster's, the figures fit X = N / (R + Z) with one think time Z: 80 / 243 = 0.33 s =
0.28 + 0.049 (ReDAL α=0.9), 80 / 269 = 0.30 s = 0.25 + 0.047 (ReDAL-W), so Z ≈ 48 ms ("a
small number of milliseconds", §III-A). The example is calibrated on that reading (its
header): 48 ms of think time and an app demand that saturates the cluster between 60
and 80 sessions, as Figs. 8 and 9 do; those two figures are scored as `input`, and every
claim about the policies is scored at the paper's loads in the saturated region.

ReDAL's threshold T (§II-A), 12 requests/s a server (the example's), makes a server past
it no candidate: ReDAL then moves the session's request to the least loaded server under
T, and ReDAL-W, when every server is past T, holds it at the dispatcher.

    python studies/cluster_dispatch.py            # the full study
    python studies/cluster_dispatch.py --quick    # fewer loads and seeds

Writes studies/results/cluster_dispatch[_quick]/: runs.csv, summary.csv, *.png and
result.json (also printed last) and claims.json: the paper's claims scored (tierlab.experiments.study.claims)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402
from scipy import stats  # noqa: E402

from tierlab import load_model  # noqa: E402
from tierlab.analysis.dispatch import cluster_metrics  # noqa: E402
from tierlab.experiments.study.claims import Criterion, Ledger, apart, close, close_abs, decreasing_apart, each, ordered_as_paper  # noqa: E402
from tierlab.experiments.study.provenance import output_dir, study_parser, write_result  # noqa: E402
from tierlab.run import Run, sweep  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "tpcw_cluster.yaml"
# The example's ReDAL settings (d, h, the slope window, the threshold T), for every variant.
REDAL = {
    k: v for k, v in yaml.safe_load(MODEL.read_text())["tiers"]["app"]["dispatch"].items() if k in ("slice", "think_time", "interval", "intervals", "threshold")
}
POLICIES = {
    "RR+affinity": {"policy": "affinity"},
    "HJ (least active)": {"policy": "least_active"},
    "ReDAL α=0.5": {"policy": "redal", "alpha": 0.5, **REDAL},
    "ReDAL α=0.9": {"policy": "redal", "alpha": 0.9, **REDAL},
    "ReDAL-W α=0.9": {"policy": "redal_w", "alpha": 0.9, **REDAL},
    "ReDAL-N α=0.9": {"policy": "redal_n", "alpha": 0.9, **REDAL},
    "P2C (Envoy)": {"policy": "power_of_two"},
    "affinity cap 8 (HAProxy)": {"policy": "affinity_cap", "cap": 8},
}
# The paper's figures (§III-B, -C: Figs. 8, 9), by our policy names. Fig. 8's axis says
# "per application server", but 80 sessions at Fig. 9's 0.28 s allow at most
# 80 / 0.28 ≈ 286 requests/s for the whole cluster (Little's law), so 243 per server
# (4,860 for 20) cannot be; read cluster-wide, both figures fit X = N / (R + Z) with a
# think time Z ≈ 48 ms (80 / 243 − 0.28 = 0.049, 80 / 269 − 0.25 = 0.047). The study
# reads Fig. 8 as the cluster's throughput and compares ours summed over the servers.
PAPER_PEAK_THROUGHPUT = {"ReDAL-W α=0.9": 269, "ReDAL α=0.9": 243, "ReDAL α=0.5": 192, "HJ (least active)": 157, "RR+affinity": 130}
PAPER_PEAK_AT = {"ReDAL-W α=0.9": 80, "ReDAL α=0.9": 80, "ReDAL α=0.5": 80, "HJ (least active)": 60, "RR+affinity": 60}
PAPER_ART_80 = {"RR+affinity": 662, "HJ (least active)": 440, "ReDAL α=0.5": 346, "ReDAL α=0.9": 280, "ReDAL-W α=0.9": 250}
# Criteria, fixed before the run: orderings must clear the seeds' 95% confidence
# intervals; absolute figures read off the paper's plots: ±25%; "tightly clustered"
# curves (Fig. 13): within ±10% of each other; a ceiling (utilization within 0.02 of 1
# for every policy) orders nothing.
ABSOLUTE = close(0.25)
TIGHT = 0.10
CEILING = 0.98
CALIBRATED = (
    "examples/tpcw_cluster.yaml: every app CPU demand ×7.5 (~160 ms a request on 2 cores) and a 48 ms think time "
    "(Little's law on Figs. 8-9 read cluster-wide), so the cluster saturates between 60 and 80 sessions (ReDAL α=0.9 without T: ~236 requests/s at 80)"
)
FETCH = (
    "a session fetch costs HJ 3 ms of delay and 15 ms of CPU, ~11% of a request's ~160 ms; the paper's HJ lost 35% of ReDAL α=0.9's "
    "throughput (157 vs 243) to fetching from its Oracle session store, which would need a fetch of about half a request's work "
    "(the paper gives no fetch cost)"
)
NO_THRASHING = (
    "the paper's throughput falls 2-4% past its peak (269 → 264, 243 → 234 requests/s from 80 to 100 sessions); the model has no "
    "cost that grows with the queue (no thrashing, no timeouts at these loads), so a saturated closed loop holds its throughput flat"
)
COUNT_T = (
    "ReDAL judges load by counts of requests (T = 12 a second, 1.2 a 0.1 s slice), blind to their work, which varies ×5 with the "
    "session's weight (0.5 or 2.5) and ×9 with the page; HJ's requests in progress see the work queued"
)
MEASURES = ["throughput", "throughput_per_server", "art", "p95", "peak_utilization", "imbalance", "migrations_per_request", "queued", "rejected"]


def _measure(trace):
    metrics = cluster_metrics(trace, "app")
    return {**metrics, "queued": trace.summary["tiers"]["app"]["dispatch"]["queued"]}


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
    sessions = (20, 60, 80, 100) if a.quick else (5, 10, 20, 40, 60, 80, 100)
    seeds = (1, 2) if a.quick else (1, 2, 3, 4, 5)
    few = (20, 60, 100) if not a.quick else (60, 100)

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
    df["throughput"] = df.throughput_per_server * df.app_servers
    df.to_csv(out / "runs.csv", index=False)

    group = ["experiment", "policy", "sessions", "app_servers", "web_servers", "topology"]
    summary = df.groupby(group)[MEASURES].agg(["mean", _ci95]).reset_index()
    summary.columns = [c if isinstance(c, str) else (c[0] if not c[1] else f"{c[0]}_{'ci95' if c[1] == '_ci95' else c[1]}") for c in summary.columns]
    summary.to_csv(out / "summary.csv", index=False)
    _plot(summary, out)
    result = _result(summary, sessions)
    cols = ["policy", "sessions", "throughput_mean", "art_mean", "peak_utilization_mean", "imbalance_mean", "migrations_per_request_mean"]
    print(summary[summary.experiment == "base"][cols].round(3).to_string(index=False))
    write_result(out, result, seeds)
    _claims(summary, sessions).write(out)


def _claims(summary: pd.DataFrame, sessions) -> Ledger:
    ledger = Ledger()
    base = summary[summary.experiment == "base"].set_index(["policy", "sessions"])
    named = list(PAPER_PEAK_THROUGHPUT)
    top = max(sessions)
    value = lambda col, p, n: float(base.loc[(p, n), f"{col}_mean"])  # noqa: E731
    ci = lambda col, p, n: float(base.loc[(p, n), f"{col}_ci95"])  # noqa: E731
    # Saturation as the paper has it (§III-B: throughput "peaks when a resource on the
    # server reaches maximum utilization (e.g., CPU reaches 100%)"): the first load at
    # which the busiest app server's CPU is at the ceiling; None: not within the loads.
    saturated = {p: next((n for n in sessions if value("peak_utilization", p, n) >= CEILING), None) for p in POLICIES}
    peak = {p: base.loc[p].throughput_mean.idxmax() for p in named}
    at80 = 80 if 80 in sessions else top
    redal = "ReDAL α=0.9"
    ledger.input(
        f"The cluster saturates between 60 and 80 sessions (§III-B, -C: Figs. 8, 9's peaks and knees at 60 and 80): the first load where "
        f"the busiest app server's CPU passes {CEILING}, under RR with session affinity (the paper's baseline; it moves no session)",
        [60, 80],
        saturated["RR+affinity"],
        Criterion("within the paper's range", lambda ours, paper: ours is not None and paper[0] <= ours <= paper[1]),
        CALIBRATED,
    )
    ledger.input(
        f"Cluster throughput of ReDAL α=0.9 at {at80} sessions, requests/s (Fig. 8 read cluster-wide: 243)",
        243,
        value("throughput", redal, at80),
        ABSOLUTE,
        CALIBRATED,
    )
    ledger.check(
        "Peak cluster throughput: ReDAL-W α=0.9 > ReDAL α=0.9 > ReDAL α=0.5 > HJ > RR (§III-B, Fig. 8: 269 > 243 > 192 > 157 > 130)",
        PAPER_PEAK_THROUGHPUT,
        {p: value("throughput", p, peak[p]) for p in named},
        ordered_as_paper({p: ci("throughput", p, peak[p]) for p in named}),
        f"{FETCH}; and {COUNT_T}",
    )
    others = [p for p in named if p != redal]
    ledger.check(
        "Peak cluster throughput per policy, requests/s (§III-B, Fig. 8 read cluster-wide; ReDAL α=0.9's is the calibration's)",
        {p: PAPER_PEAK_THROUGHPUT[p] for p in others},
        {p: value("throughput", p, peak[p]) for p in others},
        each(ABSOLUTE),
        f"the policies' peaks lie within {_spread({p: value('throughput', p, peak[p]) for p in named}):.0%} of each other here; {FETCH}",
    )
    ledger.check(
        f"Throughput is an inverted U for every policy (§III-B, Fig. 8): past its peak it falls, {top} sessions below the peak by more than the 95% half-widths",
        {p: PAPER_PEAK_AT[p] for p in named},
        {p: {"peak": value("throughput", p, peak[p]), str(top): value("throughput", p, top)} for p in named},
        Criterion(
            f"each: the throughput at {top} sessions below the peak by more than their combined 95% half-widths",
            lambda ours, paper: all(o["peak"] - o[str(top)] > float(np.hypot(ci("throughput", p, peak[p]), ci("throughput", p, top))) for p, o in ours.items()),
        ),
        NO_THRASHING,
    )
    beyond = {p: n if n is not None else f"beyond {top}" for p, n in saturated.items() if p in named}
    ledger.check(
        f"RR and HJ saturate at fewer sessions than ReDAL (§III-B, Fig. 8: peaks at 60 vs 80; §III-E, Fig. 11: 'for RR and HJ, the peak CPU "
        f"reaches 100% earlier than in the ReDal case'): the first load where the busiest app server's CPU passes {CEILING}",
        PAPER_PEAK_AT,
        beyond,
        Criterion(
            "RR's and HJ's loads below each ReDAL's (one not reached within the loads counts as beyond them)",
            lambda ours, paper: (
                max(_load(ours["RR+affinity"]), _load(ours["HJ (least active)"])) < min(_load(v) for k, v in ours.items() if k.startswith("ReDAL"))
            ),
        ),
        f"{FETCH}; and {COUNT_T}",
    )
    ledger.check(
        f"Average response time at {at80} sessions: RR > HJ > ReDAL α=0.5 > ReDAL α=0.9 > ReDAL-W α=0.9 (§III-C, Fig. 9: 662 > 440 > 346 > 280 > 250 ms)",
        PAPER_ART_80,
        {p: 1000 * value("art", p, at80) for p in PAPER_ART_80},
        ordered_as_paper({p: 1000 * ci("art", p, at80) for p in PAPER_ART_80}),
        f"{FETCH}; and {COUNT_T}",
    )
    ledger.check(
        f"Average response time at {at80} sessions, per policy, ms (§III-C, Fig. 9; ReDAL α=0.9's follows from the calibration by Little's law)",
        {p: PAPER_ART_80[p] for p in PAPER_ART_80 if p != redal},
        {p: 1000 * value("art", p, at80) for p in PAPER_ART_80 if p != redal},
        each(ABSOLUTE),
        f"RR's 662 ms at 80 sessions means 80 / (0.662 + 0.048) ≈ 113 requests/s, less than its own peak of 130 at 60: a throughput that "
        f"falls past saturation, which the model lacks ({NO_THRASHING}); {FETCH}",
    )
    ledger.check(
        "ReDAL α=0.9 outperforms α=0.5 (§III-B, -C: 243 vs 192 requests/s at the peak, 280 vs 346 ms at 80 sessions): peak throughput and ART apart beyond the 95% half-widths",
        {"throughput": {redal: 243, "ReDAL α=0.5": 192}, "art_ms": {"ReDAL α=0.5": 346, redal: 280}},
        {
            "throughput": {p: value("throughput", p, peak[p]) for p in (redal, "ReDAL α=0.5")},
            "art_ms": {p: 1000 * value("art", p, at80) for p in ("ReDAL α=0.5", redal)},
        },
        Criterion(
            "each strictly decreasing in the order listed, each step beyond the combined 95% confidence half-widths",
            lambda ours, paper: (
                apart(ours["throughput"], {p: ci("throughput", p, peak[p]) for p in (redal, "ReDAL α=0.5")})
                and apart(ours["art_ms"], {p: 1000 * ci("art", p, at80) for p in ("ReDAL α=0.5", redal)})
            ),
        ),
        f"α moves only the weight of the reservations still pending in the current slice (m = l + α·e0, ±0.4·e0); here the two α differ by "
        f"{_spread({p: value('throughput', p, peak[p]) for p in (redal, 'ReDAL α=0.5')}):.1%} in peak throughput and "
        f"{_spread({p: value('migrations_per_request', p, at80) for p in (redal, 'ReDAL α=0.5')}):.0%} in migrations per request at {at80} "
        "sessions, against the paper's 27% in throughput; not diagnosed further",
    )
    low = min(n for n in sessions if n >= 60)
    cpu = {p: value("peak_utilization", p, low) for p in ("RR+affinity", "HJ (least active)", redal)}
    ledger.check(
        f"Peak app-server CPU higher under RR and HJ than under ReDAL, {low} sessions, where RR and HJ saturate (§III-E, Fig. 11)",
        "RR, HJ above ReDAL",
        cpu,
        Criterion(
            "RR's and HJ's above ReDAL α=0.9's, each by more than the combined 95% half-widths",
            lambda ours, paper: all(
                ours[p] - ours[redal] > float(np.hypot(ci("peak_utilization", p, low), ci("peak_utilization", redal, low)))
                for p in ("RR+affinity", "HJ (least active)")
            ),
        ),
        COUNT_T,
        testable=Criterion(f"not every policy's peak utilization at the ceiling (above {CEILING})", lambda ours, paper: min(ours.values()) <= CEILING),
    )
    ledger.check(
        f"RR with session affinity leaves the load imbalanced where ReDAL balances it (§I-C, §II), {at80} sessions: imbalance (CoV over servers)",
        "RR above ReDAL",
        {p: value("imbalance", p, at80) for p in ("RR+affinity", redal)},
        decreasing_apart({p: ci("imbalance", p, at80) for p in ("RR+affinity", redal)}),
        COUNT_T,
    )
    moved = {n: value("migrations_per_request", redal, n) for n in sessions}
    ledger.check(
        "ReDAL keeps sessions on their server while it is under T and moves them off a server past T (§II-A): migrations per request, "
        f"ReDAL α=0.9, saturated ({at80}, {top} sessions) above the lightest load ({min(sessions)})",
        "more at saturation",
        moved,
        Criterion(
            "each saturated load's migrations above the lightest load's by more than the combined 95% half-widths",
            lambda ours, paper: all(
                ours[n] - ours[min(sessions)] > float(np.hypot(ci("migrations_per_request", redal, n), ci("migrations_per_request", redal, min(sessions))))
                for n in (at80, top)
            ),
        ),
        "not diagnosed",
    )
    wait, held = "ReDAL-W α=0.9", {n: value("queued", "ReDAL-W α=0.9", n) for n in sessions}
    for n in sorted({at80, top}):
        paper = {80: {wait: 269, redal: 243}, 100: {wait: 264, redal: 234}}[n]
        ledger.check(
            f"At saturation ReDAL-W beats ReDAL α=0.9 (§III-B: {paper[wait]} vs {paper[redal]} requests/s at {n} sessions): cluster throughput",
            paper,
            {p: value("throughput", p, n) for p in paper},
            decreasing_apart({p: ci("throughput", p, n) for p in paper}),
            "ReDAL-W holds a request while every server is past T and sends it to the first server under T in the next slice; counted "
            "in requests, not work, that spreads no more of the work than ReDAL's least loaded server does (" + COUNT_T + ")",
            testable=Criterion("ReDAL-W held requests at the dispatcher (its runs differ from ReDAL's)", lambda ours, paper: ours > 0),
            testable_data=held[n],
        )
    ledger.check(
        f"At saturation ReDAL-W answers faster than ReDAL α=0.9 (§III-C: 250 vs 280 ms at 80 sessions, 'less' at 100): ART at {at80} and {top} sessions",
        {at80: {redal: 280, wait: 250}, top: "less"},
        {n: {p: 1000 * value("art", p, n) for p in (redal, wait)} for n in (at80, top)},
        Criterion(
            "each load: ReDAL's above ReDAL-W's beyond the combined 95% half-widths",
            lambda ours, paper: all(apart(ours[n], {p: 1000 * ci("art", p, n) for p in (redal, wait)}) for n in (at80, top)),
        ),
        "ReDAL-W's requests wait at the dispatcher instead of at the server: the same wait, moved (" + COUNT_T + ")",
        testable=Criterion("ReDAL-W held requests at both loads", lambda ours, paper: all(held[n] > 0 for n in (at80, top))),
        testable_data={},
    )
    below_peak = [n for n in sessions if n < _load(saturated["RR+affinity"])]
    ledger.check(
        "ReDAL-W performs the same as ReDAL α=0.9 until the servers saturate (§III-B): ReDAL-W's throughput / ReDAL's below the cluster's saturation",
        1.0,
        {n: value("throughput", wait, n) / value("throughput", redal, n) for n in below_peak},
        each(close_abs(0.05)),
        testable=Criterion(
            "ReDAL-W held requests at each of these loads (runs that never hold one are ReDAL's, identical: the ratio would be 1 by construction)",
            lambda ours, paper: bool(below_peak) and all(held[n] > 0 for n in below_peak),
        ),
        testable_data={},
    )
    webs = summary[summary.experiment == "web_servers"]
    few = sorted(webs.sessions.unique())
    redal = base.loc["ReDAL α=0.9"]
    art = {
        n: {
            **{
                f"{w} web{' NH' if t == 'shared' else ''}": float(g.art_mean.iloc[0])
                for (w, t), g in webs[webs.sessions == n].groupby(["web_servers", "topology"])
            },
            "2 web": float(redal.loc[n].art_mean),
        }
        for n in few
    }
    ledger.check(
        "Response time does not vary significantly with 1, 2 or 5 web servers (§III-G, Fig. 13: 'clustered tightly'): hierarchical, ReDAL α=0.9",
        f"within ±{TIGHT:.0%} of each other",
        {n: {k: v for k, v in a.items() if "NH" not in k} for n, a in art.items()},
        each(Criterion(f"the highest at most {TIGHT:.0%} above the lowest", lambda ours, paper: max(ours.values()) <= (1 + TIGHT) * min(ours.values()))),
    )
    ledger.check(
        f"Five web servers sharing the cluster (NH) are ~8% slower than five hierarchical at the highest load (§III-G, Fig. 13), {max(few)} sessions",
        0.08,
        art[max(few)]["5 web NH"] / art[max(few)]["5 web"] - 1,
        close_abs(0.05),
        "the model charges no web-server CPU for sharing load metrics (it counts the sync bytes) nor for the load matrix: "
        "NH dispatchers differ only in seeing the others' load at each sync",
    )
    return ledger


def _load(n) -> float:
    """A saturation load, or infinity for one not reached within the study's loads."""
    return float(n) if isinstance(n, int | float) else float("inf")


def _spread(xs: dict) -> float:
    """How far the highest of `xs` lies above the lowest, as a share of the lowest."""
    return max(xs.values()) / min(xs.values()) - 1


def _ci95(x: pd.Series) -> float:
    """Half-width of the 95% Student-t interval of the mean."""
    n = len(x)
    return float(stats.t.ppf(0.975, n - 1) * x.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")


def _plot(summary: pd.DataFrame, out: Path) -> None:
    base = summary[summary.experiment == "base"]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    for ax, measure, label in zip(
        axes.flat,
        ["throughput", "art", "imbalance", "peak_utilization"],
        [
            "cluster throughput (req/s; the paper's Fig. 8 read cluster-wide)",
            "average response time (s)",
            "load imbalance (CoV over servers)",
            "peak app-server CPU utilization",
        ],
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
            "peak_throughput": round(float(d.throughput_mean.max()), 1),
            "at_sessions": int(d.throughput_mean.idxmax()),
            "saturation_sessions": next((int(n) for n, u in d.peak_utilization_mean.items() if u >= CEILING), None),
            f"art_ms_at_{max(sessions)}": round(1000 * float(d.art_mean[max(sessions)]), 1),
            f"imbalance_at_{max(sessions)}": round(float(d.imbalance_mean[max(sessions)]), 3),
            f"migrations_per_request_at_{max(sessions)}": round(float(d.migrations_per_request_mean[max(sessions)]), 3),
            f"queued_at_{max(sessions)}": round(float(d.queued_mean[max(sessions)]), 1),
        }
    return result


if __name__ == "__main__":
    main()
