"""Chen & Gorton's measurement table by simulation: the mean response time of a
closed model at every (clients, threads), for the contention cost fit
(`tierlab.analysis.costfit`)."""

from __future__ import annotations

import pandas as pd

from ..analysis.costfit import COLUMNS
from ..errors import InputError
from ..model import LoadedModel
from ..run.sweep import Run, sweep


def _mean_response_time(trace) -> float:
    rt = trace.summary["response_time"]
    if not rt:
        raise InputError("a sweep run served no request; run longer")
    return rt["mean"]


def simulate_table(
    model: LoadedModel,
    clients,
    threads,
    *,
    pool: str | None = None,
    seed: int = 1,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """The measurement table from simulations of a closed model: mean response time for
    every (clients, threads). `pool` ("tier.pool") names the thread pool when the model
    has several."""
    loaded = model
    pools = [f"{t}.{p}" for t, tier in loaded.spec.tiers.items() for p, s in tier.pools.items() if s.kind == "threads"]
    if pool is None and len(pools) != 1:
        raise InputError(f"say which thread pool to vary (--pool TIER.POOL); threads pools: {', '.join(pools) or 'none'}")
    if pool is not None and pool not in pools:
        raise InputError(f"--pool {pool}: not a threads pool of the model (TIER.POOL); threads pools: {', '.join(pools) or 'none'}")
    tier, name = (pool or pools[0]).split(".", 1)
    grid = [(int(x), int(y)) for x in clients for y in threads]
    runs = [Run({"workload.population": {"clients": x}, f"tiers.{tier}.pools.{name}.size": y}, seed) for x, y in grid]
    values = sweep(loaded, runs, _mean_response_time, workers=workers, scheduler=scheduler, progress="cost table" if progress else None)
    return pd.DataFrame([(x, y, v) for (x, y), v in zip(grid, values)], columns=list(COLUMNS))
