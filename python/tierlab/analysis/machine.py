"""The machine live runs shared, from their resource monitors' `machine` series
(docs/trace.md): its load and its speed, to read the runs' figures beside. The same
work's CPU time drifts by a third within minutes on a shared machine
(investigations/twin/cpu_drift.py)."""

from __future__ import annotations

import pandas as pd

from ..trace import Trace

# A probe counts as the machine's speed only with this much of a core idle in its
# second: with every core busy it reads the contention it runs in as well (caches,
# context switches). On the JVM bookstore with both cores full the probe read
# 1.64-2.29 ms against 1.59-1.73 ms beside the Python bookstore, which left part of a
# core free (studies/results/twin_java_quick/notes.md).
FREE_CORES = 0.5


def machine(traces: list[Trace]) -> dict[str, float | None]:
    """Over the runs: the mean 1-minute load average (`load_1m`) and the median time of
    the monitor's fixed probe work (`cpu_probe_ms`) over the seconds with FREE_CORES
    idle (`cpu_idle`; every second, in a trace from before that series); None for a
    figure no run recorded (a simulated or imported trace, or one from before the
    probe) and for a probe whose every second had the machine full (`probes_full`
    counts the probes left out)."""
    series = [t.timeseries[t.timeseries.tier == "machine"] for t in traces]
    load = pd.concat([s.value[s.metric == "load_1m"] for s in series] or [pd.Series(dtype=float)])
    probes, full = [], 0
    for s in series:
        probe = s[s.metric == "cpu_probe_ms"].set_index("t").value
        idle = s[s.metric == "cpu_idle"].set_index("t").value
        kept = probe[idle.reindex(probe.index) >= FREE_CORES] if len(idle) else probe
        probes.append(kept)
        full += len(probe) - len(kept)
    probe = pd.concat(probes or [pd.Series(dtype=float)])
    return {
        "load_1m": float(load.mean()) if len(load) else None,
        "cpu_probe_ms": float(probe.median()) if len(probe) else None,
        "probes_full": full,
    }
