"""Pool sizing (Totok & Karamcheti): profile p_i, q_i over an (M, N) grid, interpolate,
compute the maximum sustainable session throughput λ(M, N) and its optimum, and
measure the real one to check it."""

from .method import MIX_DISTANCE_LIMIT, MixWarning, PoolSizing, Rates, mix_distance
from .profiling import PAPER_M, PAPER_N, PoolSetting, ProfileGrid, RunLengthWarning, profile_grid
from .validation import all_served, max_sustainable_rate

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
    "max_sustainable_rate",
    "mix_distance",
    "profile_grid",
]
