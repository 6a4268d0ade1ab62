"""White-box testing (Andreolini et al.): which resource limits capacity, read from
any trace. Gracefully degradable resources (CPU, disk) slow every request down as they
fill; token-based ones (threads, connections, sockets, accept backlog) have a hard cap:
at it, requests wait or are refused while the hardware behind them may be idle.

The rule: a hardware station at ≥ 95% utilization is the bottleneck (the busiest
one); failing that, a token pool pinned at its cap in at least half of the windows
(or refusing requests) is — the one furthest back if several are, since the pools in
front fill up behind it (tiers are taken in the model's order, front to back: `position` in the summary;
within a tier connections count as behind threads, as a thread is held while waiting for a connection);
failing that, nothing is saturated and the busiest resource is named as the one
closest to it."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..trace import Trace

GRACEFUL = "gracefully degradable"
TOKEN = "token-based"
SATURATED = 0.95
PINNED = 0.5


@dataclass(frozen=True)
class Bottleneck:
    tier: str
    server: int
    resource: str
    kind: str
    family: str
    saturated: bool
    level: float
    """Utilization (stations) or mean occupancy / size (pools)."""
    pinned: float
    """Share of the measured windows at full utilization or at the pool's cap."""


def resources(trace: Trace) -> pd.DataFrame:
    """One row per station and pool of every server: its tier's depth (model order),
    kind, family, level, pinned, refused."""
    warmup = trace.summary["warmup"]
    ts = trace.timeseries
    ts = ts[ts.t >= warmup]
    rows = []
    for tier, t in trace.summary["tiers"].items():
        depth = t["position"]
        for i, sv in enumerate(t["servers"]):
            here = ts[(ts.tier == tier) & (ts.server == i)]
            for name, st in sv["stations"].items():
                u = here[(here.resource == name) & (here.metric == "utilization")]["value"]
                rows.append(
                    {
                        "tier": tier,
                        "depth": depth,
                        "server": i,
                        "resource": name,
                        "kind": st["kind"],
                        "family": GRACEFUL,
                        "level": st["utilization"],
                        "pinned": float((u >= 0.99).mean()) if len(u) else 0.0,
                        "refused": 0,
                    }
                )
            for name, p in sv["pools"].items():
                rows.append(
                    {
                        "tier": tier,
                        "depth": depth,
                        "server": i,
                        "resource": name,
                        "kind": p["kind"],
                        "family": TOKEN,
                        "level": p["mean_busy"] / p["size"],
                        "pinned": p["pinned"],
                        "refused": p["rejected"] + p["dropped"],
                    }
                )
    return pd.DataFrame(rows)


def bottleneck(trace: Trace) -> Bottleneck | None:
    """The resource that limits the system in this trace (None: it has no resources)."""
    r = resources(trace)
    if r.empty:
        return None
    hardware = r[(r.family == GRACEFUL) & (r.level >= SATURATED)]
    tokens = r[(r.family == TOKEN) & ((r.pinned >= PINNED) | (r.refused > 0))]
    if not hardware.empty:
        row, saturated = hardware.sort_values("level").iloc[-1], True
    elif not tokens.empty:
        behind = tokens.assign(inner=tokens.kind == "connections")
        row, saturated = behind.sort_values(["depth", "inner", "pinned", "level"]).iloc[-1], True
    else:
        row, saturated = r.assign(score=r[["level", "pinned"]].max(axis=1)).sort_values("score").iloc[-1], False
    return Bottleneck(row.tier, int(row.server), row.resource, row.kind, row.family, saturated, float(row.level), float(row.pinned))


def breakdown(trace: Trace) -> pd.DataFrame:
    """Mean time per tier (a tier's time includes the tiers it called) and its phases,
    over the ok requests; empty without per-request records."""
    r = trace.requests
    if r is None:
        return pd.DataFrame()
    r = r[r.status == "ok"]
    tiers = [c[: -len(".time")] for c in r.columns if c.endswith(".time")]
    phases = ["wait_thread", "before_db", "wait_db", "with_db_active", "with_db_idle", "other"]
    return pd.DataFrame([{"tier": t, "time": r[f"{t}.time"].mean(), **{p: r[f"{t}.{p}"].mean() for p in phases}} for t in tiers])
