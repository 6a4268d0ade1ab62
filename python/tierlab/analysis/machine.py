"""The machine live runs shared, from their resource monitors' `machine` series
(docs/trace.md): its load and its speed, to read the runs' figures beside. The same
work's CPU time drifts by a third within minutes on a shared machine
(investigations/twin/cpu_drift.py)."""

from __future__ import annotations

import pandas as pd

from ..trace import Trace


def machine(traces: list[Trace]) -> dict[str, float | None]:
    """Over the runs: the mean 1-minute load average (`load_1m`) and the median time of
    the monitor's fixed probe work (`cpu_probe_ms`); None for a figure no run recorded
    (a simulated or imported trace, or one from before the probe)."""
    out: dict[str, float | None] = {}
    for metric, reduce in (("load_1m", pd.Series.mean), ("cpu_probe_ms", pd.Series.median)):
        values = pd.concat([t.timeseries.value[(t.timeseries.tier == "machine") & (t.timeseries.metric == metric)] for t in traces] or [pd.Series(dtype=float)])
        out[metric] = float(reduce(values)) if len(values) else None
    return out
