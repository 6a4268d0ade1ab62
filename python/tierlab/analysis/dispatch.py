"""What a dispatch policy did to a cluster, from any trace: throughput per server,
response time, peak server utilization, load imbalance over time, session migrations."""

from __future__ import annotations

from ..errors import InputError
from ..trace import Trace, window_of


def load_imbalance(trace: Trace, tier: str, every: float = 1.0) -> float:
    """Coefficient of variation of the servers' load, averaged over time: load =
    requests in progress on each server, averaged over `every` seconds; windows in
    which the tier is idle are left out. 0 = perfectly even."""
    c = trace.series(tier, "concurrency")
    c = c[c.index >= trace.summary["warmup"]]
    per = c.groupby(window_of(c.index, every)).mean()
    mean, sd = per.mean(axis=1), per.std(axis=1, ddof=0)
    busy = mean > 0
    return float((sd[busy] / mean[busy]).mean()) if busy.any() else 0.0


def cluster_metrics(trace: Trace, tier: str) -> dict:
    """The ReDAL paper's measures for one run, for the cluster of `tier`: a simulated
    trace, or a live cluster's (its proxies write the same dispatch summary)."""
    s = trace.summary
    if tier not in s["tiers"]:
        raise InputError(f"the trace has no tier {tier!r}; its tiers: {', '.join(s['tiers']) or 'none (a client-only trace)'}")
    servers = s["tiers"][tier]["servers"]
    d, rt = s["tiers"][tier]["dispatch"], s["response_time"]
    if d is None or rt is None:
        raise InputError(f"tier {tier!r} of this trace reports no dispatcher, or nothing completed: no cluster measures")
    served = sum(sv["visits"] or 0 for sv in servers)
    return {
        "throughput_per_server": s["throughput"] / len(servers),
        "art": rt["mean"],
        "p95": rt["p95"],
        "peak_utilization": max(max(st["utilization"] for st in sv["stations"].values()) for sv in servers),
        "imbalance": load_imbalance(trace, tier),
        "migrations_per_request": d["session_migrations"] / served if served else 0.0,
        "rejected": s["requests"]["rejected"],
        "sync_payload_bytes": d["sync_payload_bytes"],
    }
