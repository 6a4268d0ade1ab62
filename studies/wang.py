"""Wang et al., "Response time fluctuations in n-tier systems" (RUBBoS browse-only,
1/2/1/2 topology) on examples/rubbos_3tier.yaml, the C-JDBC server the bottleneck:

1. Bi-modal response times near 90% bottleneck utilization (their Figs. 2–3): 5,200
   clients at burstiness I = 1, 100, 400, 1000 — mean, p95, p98, Hartigan's dip test
   and the modes; 100 ms against 10 s series (their Fig. 4).
2. The threshold workload beyond which more than 1% of requests see a TCP
   retransmission, per I (their Table 1), with the bottleneck's CPU there.
3. Top-down amplification (their Table 4): the request rate per 100 ms at each tier
   at 3,000 clients — mean, standard deviation, coefficient of variation.
4. Stabilizers: cross-tier priority at the Tomcat connection pool (their Fig. 10),
   and a lower DB-connection limit per servlet (their Fig. 11).

Bursty load is a two-state MMPP on the think times (tierlab.model.burst): bursts take 30% of
the time at 1.5× the calm rate (1.3× the mean), their length set by I.

    python studies/wang.py            # the full study
    python studies/wang.py --quick    # coarser ramps, one seed, shorter runs

Writes studies/results/wang[_quick]/: bimodal.csv, thresholds.csv, threshold_ramps.csv,
amplification.csv, stabilizers.csv, *.png, result.json (also printed last) and claims.json: the paper's claims scored (tierlab.experiments.study.claims)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from tierlab import load_model  # noqa: E402
from tierlab.analysis.fluctuations import bimodality, cov, rate, residence  # noqa: E402
from tierlab.experiments.ramp import retransmission_threshold  # noqa: E402
from tierlab.experiments.study.claims import (  # noqa: E402
    Criterion,
    Ledger,
    above,
    below,
    close,
    close_abs,
    decreasing,
    each,
    equal,
    increasing,
    times_the_second,
    within_decades,
)
from tierlab.experiments.study.provenance import output_dir, study_parser, write_result  # noqa: E402
from tierlab.run import Run, sweep  # noqa: E402
from tierlab.trace import window_of  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "rubbos_3tier.yaml"
BURSTS = [1, 100, 400, 1000]
STABILIZED = 5600
# The paper's figures.
PAPER_MEAN_RT = {1: 0.068, 100: 0.189, 400: 0.439, 1000: 0.776}  # Fig. 2, WL 5200
PAPER_THRESHOLD = {1: (5000, 0.881), 100: (4800, 0.863), 400: (4400, 0.804), 1000: (3800, 0.746)}  # Table 1
PAPER_RATE = {"web": (42.88, 6.71, 0.16), "app": (41.12, 6.53, 0.16), "db": (397.40, 77.70, 0.20)}  # Table 4, per 0.1 s
PAPER_TABLE3_5600 = {"DBconn24": {"throughput": 779, "cpu": 0.988, "gc": 2.15}, "DBconn2": {"throughput": 795, "cpu": 0.966, "gc": 0.45}}
# Criteria, fixed before the run. Mean response times read off Fig. 2's captions: ±25%.
# A threshold: ±400 clients (one step of the quick ramp, two of the full one).
# A CPU utilization: ±5 points. A request-rate CoV (Table 4, two digits): ±0.02.
MEAN_RT = close(0.25)
THRESHOLD = close_abs(400, " clients")
CPU = close_abs(0.05)
RATE_COV = close_abs(0.02)
# "Relatively stable" at 10 s (Fig. 4c vs 4b): a CoV under half the 100 ms one.
BLURRED = Criterion("the 10 s CoV below half the 100 ms CoV", lambda ours, paper: ours["10s"] < ours["100ms"] / 2)
# "Much larger fluctuations" (Figs. 10–11): a 100 ms CoV at least 1.25× the other's.
MUCH_MORE = times_the_second(1.25, "'much larger'")
# Heavy transactions "only negligibly penalized" by CTP (footnote 5): at most +10%.
NEGLIGIBLE = Criterion("heavy mean under CTP at most 10% above FIFO", lambda ours, paper: ours["CTP"] <= 1.1 * ours["FIFO"])
# Burstiness that the model's transient events cannot turn into lower thresholds (issue 17, point 3).
# Why the model cannot give Table 1's falling thresholds (computed from `burst` below):
# at 4,200 clients the MMPP's bursts run at 1.30× the mean rate, 30% of the time, for
# 3.0 s (I = 100), 12 s (400) or 30 s (1000) on average, while the bottleneck's queue
# at the burst's 94% utilization settles in about 1.3 s (1/(μ(1 − √ρ)²), μ ≈ 833/s).
# Every burst from I = 100 on is long enough to reach that high-load state, so the
# share of requests hit depends on the share of time in bursts (fixed), not on I.
FLAT_THRESHOLDS = (
    "the model's bursts (30% of the time at 1.3× the mean rate) last 3 s or more from I = 100 on, longer than the bottleneck "
    "queue takes to settle at the burst's load (~1.3 s), so the share of requests hit depends on the share of time in bursts, "
    "which I does not change; the paper's falling thresholds need bursts whose intensity or time share grows with I, and "
    "Wang et al. do not give their generator's shape (fitting it to Table 1 would make the thresholds an input)"
)


def burst(i: float) -> dict | None:
    return None if i == 1 else {"dispersion": float(i), "burst_share": 0.3, "ratio": 1.5}


# ---- what each run keeps (module level: sent to the workers) ----------------------------


def measure(trace) -> dict:
    s, r = trace.summary, trace.requests
    ok = r[r.status == "ok"]
    b = bimodality(ok.response_time)
    sv = s["tiers"]["cjdbc"]["servers"][0]
    web_rt = residence(trace, "web", 0.1)
    light = ok[ok.type != "story"].response_time.mean()
    conc = trace.series("web", "concurrency")[0]
    conc = conc[conc.index >= s["warmup"]]
    return {
        "throughput": s["throughput"],
        "mean": s["response_time"]["mean"],
        "p95": s["response_time"]["p95"],
        "p98": s["response_time"]["p98"],
        "retransmitted": float((r.retransmissions > 0).mean()),
        "failed": int((r.status != "ok").sum()),
        "bottleneck_cpu": sv["stations"]["cpu"]["utilization"],
        "gc_time": sv["gc"]["pause_time"],
        "dip": b.dip,
        "dip_p": b.p_value,
        "bimodal": b.bimodal,
        "modes": b.modes,
        "over_3s": float((ok.response_time > 3).mean()),
        "web_rt_cov_100ms": cov(web_rt),
        "web_rt_cov_10s": cov(residence(trace, "web", 10.0)),
        "web_concurrency_peak_to_mean": float(conc.max() / conc.mean()),
        "web_rt_max_100ms": float(web_rt.max()),
        "light_mean": float(light),
        "heavy_mean": float(ok[ok.type == "story"].response_time.mean()),
        "app_concurrency_cov_100ms": cov(trace.series("app", "concurrency").sum(axis=1)),
        "cjdbc_concurrency_mean": float(trace.series("cjdbc", "concurrency")[0].mean()),
    }


def rates(trace) -> dict:
    out = {}
    for tier in ("web", "app", "cjdbc", "db"):
        per_window = rate(trace, tier, 0.1) * 0.1
        out[tier] = (float(per_window.mean()), float(per_window.std(ddof=0)), cov(per_window))
    return out


def series(trace) -> dict:
    """Response time and web concurrency at 100 ms and 10 s (the paper's Fig. 4)."""
    out = {}
    for every in (0.1, 10.0):
        rt = residence(trace, "web", every)
        conc = trace.series("web", "concurrency")[0]
        conc = conc[conc.index >= trace.summary["warmup"]]
        out[every] = {"t": rt.index.tolist(), "rt": rt.tolist(), "concurrency": conc.groupby(window_of(conc.index, every)).mean().reindex(rt.index).tolist()}
    out["response_times"] = trace.requests.response_time.to_numpy()
    return out


# ---- model variants -------------------------------------------------------------------


def shared_pool(queue: str, size: int) -> dict:
    """The CTP variant: one connection pool per Tomcat shared by every servlet, FIFO or
    priority-ordered by request class (light before heavy)."""
    text = json.dumps(load_model(MODEL).spec.model_dump(mode="json", exclude_none=True, by_alias=True))
    model = json.loads(re.sub(r"conn_(story_list|story|search|light)\b", "db", text))
    model["tiers"]["app"]["pools"] = {
        "threads": model["tiers"]["app"]["pools"]["threads"],
        "db": {"kind": "connections", "size": size, "timeout": 30, "queue": queue},
    }
    return model


def per_servlet(size: int) -> dict:
    return {f"tiers.app.pools.conn_{c}.size": size for c in ("story_list", "story", "search", "light")}


def main() -> None:
    ap = study_parser(__doc__)
    ap.add_argument("--scheduler", help="a Dask scheduler address (default: local processes)")
    a = ap.parse_args()
    out = output_dir("wang", a)
    duration = 300.0 if a.quick else 600.0  # the paper's runs: 10 minutes
    seeds = (1,) if a.quick else (1, 2, 3)
    model = load_model(MODEL).with_run(duration=duration, warmup=60.0)
    go = dict(scheduler=a.scheduler)

    # 1. Bi-modality at 5,200 clients.
    runs = [Run({"workload.population.clients": 5200, "workload.burstiness": burst(i)}, s) for i in BURSTS for s in seeds]
    got = sweep(model, runs, measure, progress="bimodal", **go)
    bimodal = pd.DataFrame([{"I": i, "seed": s, **m} for (i, s), m in zip([(i, s) for i in BURSTS for s in seeds], got)])
    bimodal["paper_mean"] = bimodal.I.map(PAPER_MEAN_RT)
    bimodal.to_csv(out / "bimodal.csv", index=False)
    shown = sweep(model, [Run({"workload.population.clients": 5200, "workload.burstiness": burst(i)}, 1) for i in BURSTS], series, progress="series", **go)
    _plot_distributions(dict(zip(BURSTS, shown)), out / "distributions.png")
    _plot_series(shown[0], out / "fine_vs_coarse.png")

    # 2. Threshold workload per burstiness.
    loads = list(range(3400, 5401, 400 if a.quick else 200))
    keys = [(i, wl, s) for i in BURSTS for wl in loads for s in seeds]
    got = sweep(
        model, [Run({"workload.population.clients": wl, "workload.burstiness": burst(i)}, s) for i, wl, s in keys], measure, progress="thresholds", **go
    )
    ramps = pd.DataFrame([{"I": i, "load": wl, "seed": s, **m} for (i, wl, s), m in zip(keys, got)]).drop(columns="modes")
    ramps.to_csv(out / "threshold_ramps.csv", index=False)
    per_load = ramps.groupby(["I", "load"], as_index=False)[["retransmitted", "bottleneck_cpu", "p98"]].mean()
    thresholds = []
    for i, g in per_load.groupby("I"):
        wl = retransmission_threshold(g)
        cpu = float(g.set_index("load").bottleneck_cpu[wl]) if wl is not None else None
        thresholds.append(
            {"I": i, "threshold": wl, "bottleneck_cpu": cpu, "paper_threshold": PAPER_THRESHOLD[i][0], "paper_bottleneck_cpu": PAPER_THRESHOLD[i][1]}
        )
    thresholds = pd.DataFrame(thresholds)
    thresholds.to_csv(out / "thresholds.csv", index=False)

    # 3. Request-rate amplification at 3,000 clients (I = 1).
    got = sweep(model, [Run({"workload.population.clients": 3000}, s) for s in seeds], rates, progress="amplification", **go)
    amplification = pd.DataFrame(
        [
            {
                "tier": t,
                "mean": np.mean([g[t][0] for g in got]),
                "sd": np.mean([g[t][1] for g in got]),
                "cov": np.mean([g[t][2] for g in got]),
                "paper_mean": PAPER_RATE.get(t, (None,) * 3)[0],
                "paper_cov": PAPER_RATE.get(t, (None,) * 3)[2],
            }
            for t in ("web", "app", "cjdbc", "db")
        ]
    )
    amplification.to_csv(out / "amplification.csv", index=False)

    # 4. Stabilizers at 5,600 clients (the paper's Fig. 11; Fig. 10 used 5,800), I = 1:
    # CTP at a shared pool; connections per servlet.
    cases = {
        "shared pool, FIFO": (load_model(shared_pool("fifo", 8), base_dir=MODEL.parent), {}),
        "shared pool, CTP": (load_model(shared_pool("priority", 8), base_dir=MODEL.parent), {}),
        "DBconn24": (model, per_servlet(24)),
        "DBconn12": (model, per_servlet(12)),
        "DBconn2": (model, per_servlet(2)),
    }
    rows, traces = [], {}
    for name, (m, changes) in cases.items():
        m = m.with_run(duration=duration, warmup=60.0)
        got = sweep(m, [Run({**changes, "workload.population.clients": STABILIZED}, s) for s in seeds], measure, progress=name, **go)
        rows += [{"case": name, "seed": s, **g} for s, g in zip(seeds, got)]
        traces[name] = sweep(m, [Run({**changes, "workload.population.clients": STABILIZED}, 1)], series, progress=None, **go)[0]
    stabilizers = pd.DataFrame(rows).drop(columns="modes")
    stabilizers.to_csv(out / "stabilizers.csv", index=False)
    _plot_stabilizers(traces, out / "stabilizers.png")

    mean = bimodal.groupby("I")[["mean", "p95", "p98", "retransmitted", "over_3s", "bottleneck_cpu", "dip_p"]].mean()
    stab = stabilizers.groupby("case", sort=False)[
        [
            "throughput",
            "mean",
            "p98",
            "retransmitted",
            "bottleneck_cpu",
            "web_rt_cov_100ms",
            "web_rt_max_100ms",
            "light_mean",
            "heavy_mean",
            "gc_time",
            "cjdbc_concurrency_mean",
        ]
    ].mean()
    result = {
        "bimodal_at_5200": {
            int(i): {
                **mean.loc[i].round(4).to_dict(),
                "bimodal_in_all_seeds": bool(bimodal[bimodal.I == i].bimodal.all()),
                "modes_seed1": [round(x, 3) for x in bimodal[(bimodal.I == i) & (bimodal.seed == seeds[0])].modes.iloc[0]],
                "paper_mean": PAPER_MEAN_RT[i],
            }
            for i in BURSTS
        },
        "thresholds": thresholds.to_dict(orient="records"),
        "rate_cov_per_tier": amplification.set_index("tier")["cov"].round(3).to_dict(),
        "paper_rate_cov": {t: v[2] for t, v in PAPER_RATE.items()},
        "queries_per_page": float(amplification.set_index("tier")["mean"]["db"] / amplification.set_index("tier")["mean"]["web"]),
        "paper_queries_per_page": 9.3,
        "stabilizers": stab.round(4).to_dict(orient="index"),
    }
    write_result(out, result, seeds)
    _claims(bimodal, thresholds, amplification, stab, duration).write(out)


def _claims(bimodal: pd.DataFrame, thresholds: pd.DataFrame, amplification: pd.DataFrame, stab: pd.DataFrame, duration: float) -> Ledger:
    ledger = Ledger()
    at = bimodal.groupby("I").mean(numeric_only=True)
    per_i = lambda col, Is=BURSTS: {int(i): float(at.loc[i, col]) for i in Is}  # noqa: E731
    for i in BURSTS:
        ledger.check(
            f"Mean response time at 5,200 clients, I = {i} (Fig. 2{'abcd'[BURSTS.index(i)]})",
            PAPER_MEAN_RT[i],
            float(at.loc[i, "mean"]),
            MEAN_RT,
            FLAT_THRESHOLDS if i > 1 else "not diagnosed",
        )
    ledger.check(
        "Mean response time at 5,200 clients grows with burstiness I = 1, 100, 400, 1000 (Fig. 2)", PAPER_MEAN_RT, per_i("mean"), increasing(), FLAT_THRESHOLDS
    )
    ledger.check(
        "Bi-modal response times at 5,200 clients for every I (Fig. 2; Hartigan's dip test, p < 0.05, every seed)",
        True,
        {int(i): bool(bimodal[bimodal.I == i].bimodal.all()) for i in BURSTS},
        each(equal()),
    )
    ledger.input(
        "Bottleneck (C-JDBC) CPU near 90% at 5,200 clients, I = 1 (Fig. 2)",
        0.90,
        float(at.loc[1, "bottleneck_cpu"]),
        CPU,
        "examples/rubbos_3tier.yaml sets the C-JDBC CPU demand for ~90% at 5,200 clients",
    )
    ledger.check(
        "Bottleneck CPU still ~90% at 5,200 clients for I = 100, 400, 1000 (Fig. 2 caption: 'for all the four cases')",
        0.90,
        per_i("bottleneck_cpu", BURSTS[1:]),
        each(CPU),
        "likely the clients stalled in TCP retransmission (3 s, 6 s, …), which take load off the bottleneck in a closed population; "
        "the model's retransmitted share at I ≥ 100 is a multiple of its share at I = 1",
    )
    ledger.check(
        "The share of requests longer than 3 s grows with burstiness (Fig. 2: 'the more bursty the workload, the more requests … longer than 3 seconds')",
        "grows with I",
        per_i("over_3s"),
        increasing(),
        FLAT_THRESHOLDS,
    )
    ledger.check("95th percentile below 0.2 s at I = 1 and I = 100 (Fig. 3)", 0.2, per_i("p95", [1, 100]), each(below(0.2, " s")), FLAT_THRESHOLDS)
    ledger.check("98th percentile above 3 s at I = 1 and I = 100 (Fig. 3)", 3.0, per_i("p98", [1, 100]), each(above(3, " s")), FLAT_THRESHOLDS)
    ledger.check(
        "95th percentile beyond 3 s at the higher burstiness, I = 400 and 1000 (Fig. 3)",
        3.0,
        per_i("p95", [400, 1000]),
        each(above(3, " s")),
        FLAT_THRESHOLDS,
    )
    ledger.check("98th percentile above 9 s at I = 1000 (Fig. 3)", 9.0, float(at.loc[1000, "p98"]), above(9, " s"), FLAT_THRESHOLDS)
    ledger.check(
        "Web-tier response time fluctuates at 100 ms and looks stable at 10 s, I = 1, 5,200 clients (Fig. 4b vs 4c): CoV per window",
        "large at 100 ms, 'relatively stable' at 10 s",
        {"100ms": float(at.loc[1, "web_rt_cov_100ms"]), "10s": float(at.loc[1, "web_rt_cov_10s"])},
        BLURRED,
    )
    ledger.check(
        "Web-tier concurrency peaks at 100 ms 'can be 10 times higher than the average' (§5 heuristic iii, Fig. 4h): peak / mean, I = 1",
        10.0,
        float(at.loc[1, "web_concurrency_peak_to_mean"]),
        within_decades(0.5),
    )
    th = thresholds.set_index("I")
    for i in BURSTS:
        ours = th.threshold[i]
        ledger.check(
            f"Threshold workload (more than 1% of requests retransmitted), I = {i} (Table 1)",
            PAPER_THRESHOLD[i][0],
            None if pd.isna(ours) else float(ours),
            THRESHOLD,
            FLAT_THRESHOLDS if i > 1 else None,
        )
    ledger.check(
        "The threshold workload decreases as burstiness grows (Table 1: 5000, 4800, 4400, 3800)",
        {i: PAPER_THRESHOLD[i][0] for i in BURSTS},
        {int(i): (None if pd.isna(v) else float(v)) for i, v in th.threshold.items()},
        decreasing(),
        FLAT_THRESHOLDS,
    )
    ledger.check(
        "The bottleneck CPU at the threshold decreases as burstiness grows (Table 1: 88.1%, 86.3%, 80.4%, 74.6%)",
        {i: PAPER_THRESHOLD[i][1] for i in BURSTS},
        {int(i): (None if pd.isna(v) else float(v)) for i, v in th.bottleneck_cpu.items()},
        decreasing(),
        FLAT_THRESHOLDS,
    )
    ledger.check(
        "The bottleneck CPU at the threshold, per I (Table 1)",
        {i: PAPER_THRESHOLD[i][1] for i in BURSTS},
        {int(i): (None if pd.isna(v) else float(v)) for i, v in th.bottleneck_cpu.items()},
        each(CPU),
        FLAT_THRESHOLDS,
    )
    amp = amplification.set_index("tier")
    ledger.input(
        "Database queries per web request at 3,000 clients (Table 4: 397.40 / 42.88 = 9.3)",
        PAPER_RATE["db"][0] / PAPER_RATE["web"][0],
        float(amp["mean"]["db"] / amp["mean"]["web"]),
        close(0.05),
        "examples/rubbos_3tier.yaml gives a page ~9 SQL queries, as the paper's Table 4",
    )
    for tier in ("web", "db"):
        ledger.check(f"Request-rate CoV per 100 ms at the {tier} tier, 3,000 clients (Table 4)", PAPER_RATE[tier][2], float(amp["cov"][tier]), RATE_COV)
    ledger.check(
        "Top-down amplification: the DB tier's request-rate CoV above the web tier's (Table 4: 0.20 > 0.16)",
        {"db": 0.20, "web": 0.16},
        {"db": float(amp["cov"]["db"]), "web": float(amp["cov"]["web"])},
        decreasing(),
    )
    case = lambda name, col: float(stab.loc[name, col])  # noqa: E731
    ledger.check(
        "At 5,600 clients the C-JDBC JVM spends longer in GC with DBconn24 than with DBconn2 (Table 3: 2.15 s vs 0.45 s)",
        {k: v["gc"] for k, v in PAPER_TABLE3_5600.items()},
        {"DBconn24": case("DBconn24", "gc_time"), "DBconn2": case("DBconn2", "gc_time")},
        decreasing(),
    )
    ledger.check(
        f"C-JDBC GC time at 5,600 clients, DBconn24 and DBconn2 (Table 3; ours over {duration:g} s, the paper's over 600 s), scaled to 600 s",
        {k: v["gc"] for k, v in PAPER_TABLE3_5600.items()},
        {k: case(k, "gc_time") * 600 / duration for k in PAPER_TABLE3_5600},
        each(close(0.5)),
        "the model's GC pause grows with the requests in progress and is calibrated to no GC figure of the paper: its total is far above the paper's",
    )
    ledger.check(
        "At 5,600 clients C-JDBC's CPU is higher with DBconn24 than with DBconn2 (Table 3: 98.8% vs 96.6%)",
        {k: v["cpu"] for k, v in PAPER_TABLE3_5600.items()},
        {k: case(k, "bottleneck_cpu") for k in PAPER_TABLE3_5600},
        decreasing(),
    )
    ledger.check(
        "Throughput at 5,600 clients, DBconn24 and DBconn2 (Table 3: 779 and 795 requests/s)",
        {k: v["throughput"] for k, v in PAPER_TABLE3_5600.items()},
        {k: case(k, "throughput") for k in PAPER_TABLE3_5600},
        each(close(0.05)),
        "with 24 connections per servlet the model's C-JDBC loses more to GC and contention than the paper's, and retransmissions idle the clients",
    )
    ledger.check(
        "Limiting the bottleneck's concurrency stabilizes the web response time (Fig. 11, 5,600 clients): 100 ms CoV, DBconn24 above DBconn2",
        "DBconn24 fluctuates much more",
        {"DBconn24": case("DBconn24", "web_rt_cov_100ms"), "DBconn2": case("DBconn2", "web_rt_cov_100ms")},
        MUCH_MORE,
    )
    fifo, ctp = "shared pool, FIFO", "shared pool, CTP"
    ledger.check(
        "Cross-tier priority stabilizes the web response time (Fig. 10; ours at 5,600 clients, a shared pool of 8): 100 ms CoV, FIFO above CTP",
        "the original fluctuates much more",
        {"FIFO": case(fifo, "web_rt_cov_100ms"), "CTP": case(ctp, "web_rt_cov_100ms")},
        MUCH_MORE,
        "not diagnosed; the study's CTP case differs from the paper's: the C-JDBC-bound 1/2/1/2 topology with one shared pool of 8 "
        "at 5,600 clients, where the paper ran the MySQL-bound 1L/2L/1L with DBconn2 at 5,800",
    )
    ledger.check(
        "CTP shortens the light transactions (§4.3, §5 heuristic i): mean response time of light requests, FIFO above CTP",
        "light transactions wait less",
        {"FIFO": case(fifo, "light_mean"), "CTP": case(ctp, "light_mean")},
        decreasing(),
    )
    ledger.check(
        "CTP penalizes heavy transactions only negligibly (§5, footnote 5): mean response time of heavy requests",
        "negligible or no penalty",
        {"FIFO": case(fifo, "heavy_mean"), "CTP": case(ctp, "heavy_mean")},
        NEGLIGIBLE,
    )
    return ledger


# ---- figures --------------------------------------------------------------------------


def _plot_distributions(shown: dict, path: Path) -> None:
    fig, axes = plt.subplots(1, len(shown), figsize=(12, 3), sharey=True)
    bins = np.logspace(-3, 2, 60)
    for ax, (i, s) in zip(axes, shown.items()):
        ax.hist(s["response_times"], bins=bins)
        ax.set(xscale="log", yscale="log", title=f"I = {i}", xlabel="response time (s)")
    axes[0].set_ylabel("requests")
    fig.suptitle("Response-time distribution at 5,200 clients (the paper's Fig. 2)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _plot_series(s: dict, path: Path) -> None:
    fig, axes = plt.subplots(2, 2, figsize=(11, 5), sharex=True)
    for col, every in enumerate((0.1, 10.0)):
        axes[0, col].plot(s[every]["t"], s[every]["rt"], lw=0.5)
        axes[0, col].set(title=f"web tier, {every:g} s windows", ylabel="response time (s)")
        axes[1, col].plot(s[every]["t"], s[every]["concurrency"], lw=0.5)
        axes[1, col].axhline(178, ls=":", color="grey")
        axes[1, col].set(ylabel="concurrent requests", xlabel="time (s)")
    fig.suptitle("5,200 clients, I = 1: what 10 s averages hide (the paper's Fig. 4); dotted: 50 threads + 128 backlog")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _plot_stabilizers(traces: dict, path: Path) -> None:
    fig, axes = plt.subplots(len(traces), 1, figsize=(10, 2 * len(traces)), sharex=True, sharey=True)
    for ax, (name, s) in zip(axes, traces.items()):
        ax.plot(s[0.1]["t"], s[0.1]["rt"], lw=0.5)
        ax.set_ylabel(name, fontsize=8)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(f"Web-tier response time per 100 ms at {STABILIZED:,} clients (the paper's Figs. 10–11)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
