"""Pool sizing (Totok & Karamcheti): profile p_i, q_i over an (M, N) grid, interpolate,
compute the maximum sustainable session throughput λ(M, N) and its optimum, and
measure the real one to check it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

if TYPE_CHECKING:
    from .by_simulation import best_sustainable, sizing_by_simulation
    from .method import MIX_DISTANCE_LIMIT, MixWarning, PoolSizing, Rates, mix_distance
    from .profiling import PAPER_M, PAPER_N, PoolSetting, ProfileGrid, RunLengthWarning, profile_grid
    from .validation import all_served, max_sustainable_rate, servers_needed

__all__ = [
    "MIX_DISTANCE_LIMIT",
    "MixWarning",
    "PAPER_M",
    "PAPER_N",
    "PoolSetting",
    "PoolSizing",
    "ProfileGrid",
    "Rates",
    "RunLengthWarning",
    "all_served",
    "best_sustainable",
    "max_sustainable_rate",
    "mix_distance",
    "profile_grid",
    "servers_needed",
    "sizing_by_simulation",
]
# Each part is imported on first use: profiling alone (`tierlab size profile`) does not
# need the method's interpolation (scipy, 0.6 s to import).
__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(["MIX_DISTANCE_LIMIT", "MixWarning", "PoolSizing", "Rates", "mix_distance"], "method"),
        **dict.fromkeys(["PAPER_M", "PAPER_N", "PoolSetting", "ProfileGrid", "RunLengthWarning", "profile_grid"], "profiling"),
        **dict.fromkeys(["all_served", "max_sustainable_rate", "servers_needed"], "validation"),
        **dict.fromkeys(["best_sustainable", "sizing_by_simulation"], "by_simulation"),
    },
)
