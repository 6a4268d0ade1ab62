"""What a trace measured that a twin needs: the served requests with their demand
columns, the server's process CPU per window, and the database's own statement times —
pooled over one or more traces, each checked to be a run of the model's tiers with
per-request records. A live trace's process CPU is the resource monitor's
(`cpu_user` + `cpu_system`); a simulated one's is its tier's CPU station
(`utilization` × the model's cores): the simulator has no process and no user/system
split, so it does not write the monitor's series under their names. An imported
OpenTelemetry trace (`tierlab import otel`) has the process's CPU as a live one does,
from its `process.cpu.time`, but no CPU per request: `estimated_demands` apportions
the process's CPU among the requests."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...errors import InputError
from ...model import LoadedModel
from ...trace import Trace
from ...trace.schema import DEMANDS, PoolSummary

DONE = "done:"  # a window's column of requests of a type that ended in it: done:<type>
# What an imported server's records must have: its spans' times and database accesses.
SPANNED = ["time", "before_db", "with_db_active", "db_time", "db_requests", "db_queries"]


@dataclass
class Measured:
    tier: str  # the pooled tier, named as in the model
    db_tier: str | None  # the next tier when the trace has it: live, a database in a process of its own (monitored); simulated, always
    requests: pd.DataFrame  # ok requests of the measured periods, all traces
    # per measured window: trace, t, length, concurrency, cpu (cores busy), done:<type>,
    # and per pool busy:<pool>, queued:<pool>, handing_off:<pool>
    windows: pd.DataFrame
    statements: pd.DataFrame | None  # pg_stat_statements, all traces summed
    pools: dict[str, int]  # pool name → size, from the first trace
    measured_seconds: float
    handoff: dict[str, float]  # pool name → seconds per hand-off, all traces (Little's law); NaN if none waited
    granted: dict[str, int]  # pool name → waits that got their token, all traces: the hand-offs


def hand_offs(pool: PoolSummary, seconds: float) -> tuple[float, int]:
    """A pool's hand-offs over a run's `seconds` measured: (token-seconds spent being
    handed to a waiter, waits granted). Their ratio is the mean hand-off, by Little's law."""
    return pool.get("mean_handing_off", 0.0) * seconds, pool["waited"] - pool["timed_out"]


def cpu_cores(model: LoadedModel) -> dict[str, int | None]:
    """Each of the model's tiers and its CPU station's cores (None: no CPU station)."""
    return {t: next((int(s.cores) for s in spec.stations.values() if s.kind == "cpu"), None) for t, spec in model.spec.tiers.items()}


def measured(traces: list[tuple[str, Trace]], model_tiers: dict[str, int | None]) -> Measured:
    """The traces' measurements; `model_tiers` as `cpu_cores` gives them. An InputError
    names a trace that cannot calibrate a twin (no per-request records, no demand
    columns, a tier the model lacks)."""
    if not traces:
        raise InputError("give at least one trace folder to calibrate from")
    tier, db_tier, pools = None, None, {}
    requests, windows, statements, seconds = [], [], [], 0.0
    handing: defaultdict[str, float] = defaultdict(float)  # token-seconds handed off
    granted: defaultdict[str, int] = defaultdict(int)  # waits that got their token
    for k, (name, trace) in enumerate(traces):
        t, d = _tiers(name, trace, model_tiers)
        if tier is None:
            tier, db_tier = t, d
            pools = {p: v["size"] for p, v in trace.summary["tiers"][t]["servers"][0]["pools"].items()}
        elif t != tier:
            raise InputError(f"{name}: its pooled tier is {t!r}, the first trace's {tier!r}; calibrate one tier at a time")
        s = trace.summary
        r = trace.requests
        assert r is not None
        ok = r[(r.status == "ok") & (r[f"{t}.visits"] > 0)].copy()
        ok["trace"] = k
        windows.append(_windows(trace, t, d, k, model_tiers))
        requests.append(estimated_demands(name, ok, windows[-1], t, d is not None) if s["source"] == "import" else ok)
        if trace.statements is not None:
            statements.append(trace.statements)
        seconds += s["measured_seconds"]
        for p, v in s["tiers"][t]["servers"][0]["pools"].items():
            if "mean_handing_off" in v:  # a trace written before it has none
                t_off, n = hand_offs(v, s["measured_seconds"])
                handing[p] += t_off
                granted[p] += n
    assert tier is not None
    req = pd.concat(requests, ignore_index=True)
    if len(req) < 20:
        raise InputError(f"only {len(req)} served requests in the traces; calibrate from a longer run (20 or more)")
    stm = pd.concat(statements).groupby("query", as_index=False)[["calls", "total_time", "rows"]].sum() if statements else None
    handoff = {p: handing[p] / granted[p] if granted[p] else float("nan") for p in pools}  # NaN: no wait seen
    return Measured(tier, db_tier, req, pd.concat(windows, ignore_index=True).fillna(0.0), stm, pools, seconds, handoff, dict(granted))


def _tiers(name: str, trace: Trace, model_tiers: dict[str, int | None]) -> tuple[str, str | None]:
    """The trace's pooled tier (the middleware's; simulated: the first with pools) and
    its database tier: the next one in the model's order, when the trace has it (live:
    a database in a process of its own, monitored; simulated: every tier)."""
    s = trace.summary
    imported = s["source"] == "import"
    if trace.requests is None or (imported and not s["tiers"]):
        raise InputError(
            f"{name} is not a trace with the server's per-request records (source {s['source']!r}); record one with `tierlab live run MODEL --out DIR`, "
            "simulate with records on (`run.records: true`), or import a server's OpenTelemetry (`tierlab import otel`)"
        )
    order = sorted(s["tiers"], key=lambda t: s["tiers"][t]["position"])
    # An imported server need not have exported its pools' metrics: its first tier is the server.
    pooled = [t for t in order if s["tiers"][t]["servers"] and s["tiers"][t]["servers"][0]["pools"]] or (order[:1] if imported else [])
    if not pooled:
        raise InputError(f"{name}: no tier with pools in summary.tiers; the server's side of the run is missing ({s['missing'] or 'no reason given'})")
    tier = pooled[0]
    needed = SPANNED if imported else [*DEMANDS, "db_queries"]
    lacking = [c for c in (f"{tier}.{d}" for d in needed) if c not in trace.requests.columns]
    if lacking:
        again = "record the trace again with this version's middleware" if s["source"] == "live" else "simulate it again with this version"
        raise InputError(f"{name}: requests.parquet lacks {', '.join(lacking)}; {again}")
    unknown = [t for t in s["tiers"] if t not in model_tiers]
    if unknown:
        raise InputError(
            f"{name} names tier(s) {', '.join(unknown)} that the model lacks (its tiers: {', '.join(model_tiers)}); give the model the trace was run from"
        )
    after = [t for t in order if s["tiers"][t]["position"] == s["tiers"][tier]["position"] + 1]
    return tier, (after[0] if after else None)


def _windows(trace: Trace, tier: str, db_tier: str | None, k: int, cores: dict[str, int | None]) -> pd.DataFrame:
    """Per measured window: the server's concurrency, each process's CPU (cores busy),
    its pools' levels and the ok requests of each type that ended in it."""
    s, w = trace.summary, trace.summary["window"]

    def series(t: str, metric: str, resource: str = "") -> pd.Series:
        f = trace.series(t, metric, resource)
        return f[0] if 0 in f.columns else pd.Series(dtype=float)

    def cpu(t: str) -> pd.Series:
        if s["source"] in ("live", "import"):
            return series(t, "cpu_user") + series(t, "cpu_system")
        n = cores.get(t)
        if n is None:
            raise InputError(f"tier {t!r} of the model has no CPU station: a simulated trace's process CPU is its tier's `cpu` station; give the tier one")
        return series(t, "utilization", "cpu") * n

    out = pd.DataFrame({"concurrency": series(tier, "concurrency"), "cpu": cpu(tier)})
    for p in s["tiers"][tier]["servers"][0]["pools"]:
        for level in ("busy", "queued", "handing_off"):
            out[f"{level}:{p}"] = series(tier, level, p)
    if db_tier is not None:
        out["db_cpu"] = cpu(db_tier)
    out = out[(out.index >= s["warmup"] - 1e-9) & (out.index < trace.end - 1e-9)]
    r = trace.requests
    assert r is not None
    ok = r[r.status == "ok"]
    ends = np.floor(ok["end"].to_numpy() / w + 1e-6) * w
    counts = pd.crosstab(np.round(ends, 9), ok["type"].astype(str)).add_prefix(DONE)
    out.index = np.round(out.index.to_numpy(dtype=float), 9)
    out = out.join(counts).fillna(0.0)
    out["length"] = np.minimum(w, trace.end - out.index.to_numpy())
    out["trace"] = k
    return out.rename_axis("t").reset_index()


def threads_at_start(requests: pd.DataFrame, tier: str) -> pd.DataFrame:
    """Per request of one run (give all of them: each counts the others), at the moment it got its worker thread at `tier`:
    the other requests holding one (`held`), and of them those not waiting for a
    connection (`computing`). Its timeline is rebuilt from its phases in the order a
    handler goes through them (a wait for a thread, work before its first connection
    request, the wait for a connection, the rest), the time outside the server split
    evenly before and after: on the live bookstore about 1.5 ms each way, so the
    counts are approximate at that scale (a request on a thread's hand-over may count
    one too many)."""
    outside = (requests.response_time - requests[f"{tier}.time"]) / 2
    got_thread = requests.start + outside + requests[f"{tier}.wait_thread"]
    waits_from = got_thread + requests[f"{tier}.before_db"]
    t = got_thread.to_numpy()

    def containing(a: pd.Series, b: pd.Series) -> np.ndarray:
        """How many of the intervals [a, b) hold each request's `got_thread`."""
        return np.searchsorted(np.sort(a.to_numpy()), t, side="right") - np.searchsorted(np.sort(b.to_numpy()), t, side="right")

    held = containing(got_thread, requests.start + outside + requests[f"{tier}.time"]) - 1  # not itself
    waiting = containing(waits_from, waits_from + requests[f"{tier}.wait_db"])
    return pd.DataFrame({"held": held, "computing": held - waiting}, index=requests.index)


def estimated_demands(name: str, requests: pd.DataFrame, windows: pd.DataFrame, tier: str, remote: bool) -> pd.DataFrame:
    """An imported server's requests with the demand columns its spans lack: the
    process's CPU over the trace's measured windows (its `process.cpu.time`) shared
    among the served requests in proportion to their time at the server outside a
    database of its own (an embedded one's statements run on the process's CPU: their
    share is `db_cpu_time`). Under processor sharing every request's time stretches
    alike, so the shares hold at any load; a request's wait for a connection, inside
    its span, is counted as its own (no standard span separates it). None of it is
    getConnection()'s (`pool_cpu_time` 0: no span shows it)."""
    busy = float((windows["cpu"] * windows["length"]).sum())
    if not busy > 0:
        raise InputError(
            f"{name}: no process CPU in the trace (its summary's missing names why): the twin apportions the process's CPU among the requests; "
            "export process.cpu.time (or the JVM's jvm.cpu.time) with the spans"
        )
    db = requests[f"{tier}.db_time"].clip(upper=requests[f"{tier}.time"])
    own = (requests[f"{tier}.time"] - (db if remote else 0.0)).clip(lower=0.0)
    total = float(own.sum())
    cpu = own * (busy / total) if total > 0 else pd.Series(busy / len(requests), index=requests.index)
    out = requests.copy()
    out[f"{tier}.cpu_time"] = cpu
    out[f"{tier}.pool_cpu_time"] = 0.0
    out[f"{tier}.db_cpu_time"] = 0.0 if remote else (cpu * (db / own.where(own > 0))).fillna(0.0)
    return out
