"""The twin route of pool sizing: instead of interpolating profiled p_i and q_i (the
paper's method), measure the maximum sustainable session throughput of every candidate
(M, N) on a model — a twin calibrated from the live system (`tierlab twin calibrate`) —
by simulation, with the very search and rule that measure it live (`validation.py`:
≥ 60% of the runs at a rate serve every request), and take the best.

The search needs a first rate: by default the model's CPU bound (the rate at which its
busiest CPU would be saturated, which no configuration exceeds), from which it walks
down in strides that double. From there the boundary can be a few hundred grid steps
away, so the search gets more rounds than a live one would: they cost seconds here."""

from __future__ import annotations

import pandas as pd

from ...errors import InputError
from ...model import LoadedModel
from .profiling import grid_points
from .validation import max_sustainable_rate

ROUNDS = 24  # bracketing from the CPU bound down to a third of it (~8 rounds), then bisecting (~10)


def best_sustainable(result: pd.DataFrame) -> pd.Series:
    """The configuration with the highest λ_max; among equals (the rate grid makes
    ties), the one with the fewest connections, then the fewest threads."""
    return result.sort_values(["lambda_max", "N", "M"], ascending=[False, True, True]).iloc[0]


def sizing_by_simulation(
    model: LoadedModel,
    M_values,
    N_values,
    *,
    start: float | None = None,
    step: float = 0.05,
    runs: int = 5,
    **search,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    """(λ_max of every (M, N) with M ≥ N, the search's trials, the best configuration);
    `search`: `max_sustainable_rate`'s options (tier, workers, scheduler, progress, log)."""
    loaded = model
    first = start if start is not None else loaded.session_rate_bound()
    if first is None:
        raise InputError("the model's sessions never end, so it has no CPU bound to start the search from; give a first rate (--start)")
    configs = grid_points(M_values, N_values)
    result, trials = max_sustainable_rate(loaded, configs, first, step=step, runs=runs, max_rounds=search.pop("max_rounds", ROUNDS), **search)
    return result, trials, best_sustainable(result)
