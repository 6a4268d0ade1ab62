"""Request profiling from any trace (Totok & Karamcheti §2.2 and §5.2): the user load
structure — V_i, mean visits of type i per session, and L, the mean session length —
and, per request type, the phase breakdown at one tier: w^THR, p, w^DB, q (active and
idle) and the connection requests per request."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..errors import TraceError
from ..trace import Trace

# Output column ← trace phase column(s) at the profiled tier.
PHASE_COLUMNS = {
    "wait_thread": ["wait_thread"],
    "p": ["before_db"],
    "wait_db": ["wait_db"],
    "q_active": ["with_db_active"],
    "q_idle": ["with_db_idle"],
    "q": ["with_db_active", "with_db_idle"],
}


@dataclass
class RequestProfile:
    tier: str
    share: pd.Series  # V_i / L: fraction of requests of each type (all statuses: the offered mix)
    L: float  # mean requests per session (NaN: the trace records no sessions)
    sessions: int  # sessions the estimate of L rests on
    phases: pd.DataFrame  # index = type; served requests only; seconds, db_requests a count

    @property
    def V(self) -> pd.Series:
        """Mean requests of each type per session."""
        return self.share * self.L

    def table(self) -> pd.DataFrame:
        out = self.phases.copy()
        if self.sessions:  # else L, so V, is unknown
            out.insert(0, "V", self.V.reindex(out.index).fillna(0.0))
        out.insert(0, "share", self.share.reindex(out.index).fillna(0.0))
        return out


def request_profile(trace: Trace, tier: str | None = None, without_sessions: bool = False) -> RequestProfile:
    """Profile the requests of `trace` that arrived after its warm-up.

    `without_sessions`: a trace that records no sessions (an imported server's
    telemetry: `missing` names `sessions`) is profiled with L unknown (NaN), for its
    shares and phases; by default it is an error, as V = share × L needs L.

    L is estimated as (requests in the window) / (sessions started in the window,
    `summary.sessions.started`): in a steady state the request rate is the session rate
    times L. Under overload the window is rarely a steady state (sessions slowed by
    rejections pile up), so take L from a run below capacity. `tier` defaults to the
    tier that takes DB connections (or the first tier)."""
    r = trace.requests
    if r is None or r.empty:
        raise TraceError("the trace has no request records; run the simulation with records on (the default)")
    tier = tier or _pool_tier(r)
    missing = [f"{tier}.{c}" for cols in PHASE_COLUMNS.values() for c in cols if f"{tier}.{c}" not in r.columns]
    if missing:
        raise TraceError(f"no phase columns for tier {tier!r} ({', '.join(missing[:3])} …); tiers: {', '.join(_tiers(r))}")
    warmup = float(trace.summary.get("warmup", 0.0))
    window = r[r["start"] >= warmup]
    if window.empty:
        raise TraceError(f"no requests arrived after the warm-up ({warmup} s)")
    sessions = int(trace.summary.get("sessions", {}).get("started", 0))
    unrecorded = without_sessions and "sessions" in trace.summary.get("missing", {})
    if sessions == 0 and not unrecorded:
        raise TraceError("summary.sessions.started is 0 or missing: no session started after the warm-up; run longer")
    share = window["type"].value_counts(normalize=True).sort_index()
    share = share[share > 0].astype(float)
    share.index = share.index.astype(str)

    ok = window[window["status"] == "ok"]
    g = ok.groupby(ok["type"].astype(str), observed=True)
    phases = pd.DataFrame({"count": g.size()})
    for name, cols in PHASE_COLUMNS.items():
        phases[name] = g[[f"{tier}.{c}" for c in cols]].sum().sum(axis=1) / phases["count"]
    phases["db_requests"] = g[f"{tier}.db_requests"].mean()
    phases["response_time"] = g["response_time"].mean()
    phases.index.name = "type"
    return RequestProfile(tier, share.rename("share"), len(window) / sessions if sessions else float("nan"), sessions, phases)


def _tiers(r: pd.DataFrame) -> list[str]:
    return [c[: -len(".db_requests")] for c in r.columns if c.endswith(".db_requests")]


def _pool_tier(r: pd.DataFrame) -> str:
    tiers = _tiers(r)
    if not tiers:
        raise TraceError(
            "the request records have no per-tier phase columns: a client-only trace (`tierlab load`) measures no server phases; profile a simulated trace or one from `tierlab live run`"
        )
    return next((t for t in tiers if r[f"{t}.db_requests"].sum() > 0), tiers[0])
