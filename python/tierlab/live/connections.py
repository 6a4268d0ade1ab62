"""The clients' connections a live bookstore holds at once, as a trace records them:
Tomcat's `maxConnections`, waitress's `connection_limit` (`live up --connection-limit`).
Each session keeps its connection through its think times (keep-alive), so the limit
bounds the sessions open at once; past it a new session's connection waits in the
kernel's accept queue, outside the server's clock
(investigations/twin/results/connection_limit). The twin reads the record to give its
entry tier a pool the sessions hold (`hold: session`)."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from ..errors import InputError
from ..trace import Trace

METRIC = "connection_limit"  # the timeseries' record: the app tier's server, at t = 0


def series(tier: str, connections: int) -> pd.DataFrame:
    """A live trace's record of the clients' connections `tier`'s server held at most."""
    return pd.DataFrame([(0.0, tier, 0, "", METRIC, float(connections))], columns=["t", "tier", "server", "resource", "metric", "value"])


def recorded(traces: Iterable[Trace], tier: str) -> int | None:
    """The clients' connections `tier`'s server held at most in the traces' runs (None:
    not recorded — a simulation, an imported trace, a cluster); an InputError if the
    runs had different limits (a pool has one size)."""
    seen = set()
    for trace in traces:
        ts = trace.timeseries
        rows = ts[(ts.tier == tier) & (ts.resource == "") & (ts.metric == METRIC)]
        seen.add(int(rows.value.iloc[0]) if len(rows) else None)
    if len(seen) > 1:
        raise InputError(f"the traces ran under different connection limits ({', '.join(map(str, seen))}); calibrate from runs under one")
    return seen.pop() if seen else None
