"""The server's side of a live trace, in the simulator's shape: the middleware's
per-window observation (`server.windows`) and the resource monitor's CPU series
become the tier's time series and its `summary.tiers.<tier>.servers[0]` — the same
metrics and fields a simulated server has (docs/trace.md), over the same measured
period as the load generator's figures."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..trace.schema import PoolKind, PoolSummary, ServerSummary, StationSummary

# The middleware's pool names → the trace's pool kinds.
POOL_KINDS: dict[str, PoolKind] = {"threads": "threads", "connections": "connections"}


@dataclass(frozen=True)
class Period:
    """The run's windows: `n` of `window` seconds from 0 (the last one cut at
    `elapsed`), measured from `warmup` on."""

    window: float
    warmup: float
    elapsed: float

    @property
    def n(self) -> int:
        return max(1, int(np.ceil(self.elapsed / self.window - 1e-9)))

    def starts(self) -> np.ndarray:
        return np.arange(self.n) * self.window

    def lengths(self) -> np.ndarray:
        return np.minimum(self.window, self.elapsed - self.starts())

    def measured(self) -> np.ndarray:
        """Which windows count for the summary: those starting at or after the warm-up."""
        return self.starts() >= self.warmup - 1e-9

    @property
    def seconds(self) -> float:
        return max(0.0, self.elapsed - self.warmup)


def server_series(tier: str, windows: dict, pool_names: dict[str, str], period: Period, server: int = 0) -> pd.DataFrame:
    """The tier's series: the server's concurrency, arrivals, completions and mean
    residence per window, and per pool busy, busy_max, queued, rejected, dropped,
    handing_off."""

    def _rows(tier: str, resource: str, metric: str, period: Period, values) -> pd.DataFrame:
        return pd.DataFrame(
            {"t": period.starts(), "tier": tier, "server": np.int32(server), "resource": resource, "metric": metric, "value": np.asarray(values, dtype=float)}
        )

    sv, length = windows["server"], period.lengths()
    completions = np.asarray(sv["completions"])
    with np.errstate(invalid="ignore", divide="ignore"):
        residence = np.where(completions > 0, np.asarray(sv["residence"]) / completions, np.nan)
    frames = [
        _rows(tier, "", "concurrency", period, np.asarray(sv["concurrency"]) / length),
        _rows(tier, "", "arrivals", period, sv["arrivals"]),
        _rows(tier, "", "completions", period, completions),
        _rows(tier, "", "response_time", period, residence),
    ]
    for pool, w in windows["pools"].items():
        name = pool_names[pool]
        frames += [
            _rows(tier, name, "busy", period, np.asarray(w["busy"]) / length),
            _rows(tier, name, "busy_max", period, w["busy_max"]),
            _rows(tier, name, "queued", period, np.asarray(w["queued"]) / length),
            _rows(tier, name, "rejected", period, w["rejected"]),
            _rows(tier, name, "dropped", period, np.zeros(period.n)),
            _rows(tier, name, "handing_off", period, np.asarray(w["handing_off"]) / length),
        ]
    return pd.concat(frames, ignore_index=True)


def pool_summary(kind: PoolKind, size: int, w: dict, period: Period) -> PoolSummary:
    """A pool over the measured windows, as the simulator sums up its own."""
    m, span = period.measured(), period.seconds
    busy_max = np.asarray(w["busy_max"])[m]
    total = lambda key: int(round(float(np.sum(np.asarray(w[key])[m]))))  # noqa: E731
    return {
        "kind": kind,
        "size": size,
        "mean_busy": float(np.sum(np.asarray(w["busy"])[m]) / span) if span > 0 else 0.0,
        "busy_max": float(busy_max.max()) if len(busy_max) else 0.0,
        "mean_queued": float(np.sum(np.asarray(w["queued"])[m]) / span) if span > 0 else 0.0,
        "acquired": total("acquired"),
        "waited": total("waited"),
        "timed_out": total("timed_out"),
        "rejected": total("rejected"),
        "dropped": 0,
        "pinned": float(np.mean(busy_max >= size)) if len(busy_max) else 0.0,
        "mean_handing_off": float(np.sum(np.asarray(w["handing_off"])[m]) / span) if span > 0 else 0.0,
    }


def station_summary(utilization: pd.Series, period: Period) -> StationSummary:
    """A CPU station from the monitor's utilization series (indexed by window start)."""
    u = utilization[utilization.index >= period.warmup - 1e-9]
    return {"kind": "cpu", "utilization": float(u.mean()) if len(u) else 0.0}


def server_summary(
    windows: dict | None, sizes: dict[str, int], pool_names: dict[str, str], stations: dict[str, StationSummary], period: Period
) -> ServerSummary:
    """`summary.tiers.<tier>.servers[0]`: visits, throughput and mean residence of the
    visits that ended in the measured windows, the stations and the pools; without the
    middleware's windows (a tier tierlab only monitors) those are null and empty."""
    if windows is None:
        return {"visits": None, "throughput": None, "mean_residence": None, "gc": None, "stations": stations, "pools": {}}
    m, sv, span = period.measured(), windows["server"], period.seconds
    visits = int(round(float(np.sum(np.asarray(sv["completions"])[m]))))
    residence = float(np.sum(np.asarray(sv["residence"])[m]))
    pools = {pool_names[p]: pool_summary(POOL_KINDS[p], sizes[p], w, period) for p, w in windows["pools"].items()}
    return {
        "visits": visits,
        "throughput": visits / span if span > 0 else 0.0,
        "mean_residence": residence / visits if visits else 0.0,
        "gc": None,
        "stations": stations,
        "pools": pools,
    }
