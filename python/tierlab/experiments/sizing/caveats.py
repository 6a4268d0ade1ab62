"""What a profile cannot support (issue 44): the paper's λ(M, N) holds where p_i and
q_i were measured at saturation, inside the profiled grid. Two ways to leave that
ground, each a `Caveat` that `tierlab size optimize` prints and writes to its JSON:

- a configuration whose profiling runs never reached overload: they served all they
  were offered, so its capacity is only known to exceed that rate, and p_i, q_i there
  are the waits of a system below saturation: λ computed from them is no measured
  capacity (a live profile that never overloaded gave λ = 7,506 sessions/s);
- an optimum on the edge of the profiled grid (the largest M or N profiled) or
  outside it: λ still rises towards it, so the true optimum may lie beyond, where
  nothing was measured."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from .profiling import ProfileGrid

# `profile_grid`'s default: runs rejecting this share of the requests were overloaded.
MIN_REJECTED = 0.005


@dataclass(frozen=True)
class Caveat:
    kind: str  # "never_saturated" or "beyond_grid"
    message: str
    configurations: list[tuple[int, int]]

    def as_json(self) -> dict:
        return {**asdict(self), "configurations": [list(c) for c in self.configurations]}


def never_overloaded(runs: pd.DataFrame) -> list[tuple[int, int]]:
    """The (M, N) none of whose profiling runs reached overload (runs.csv's
    `overloaded`, or its rejected share for a profile written without it)."""
    if "overloaded" in runs.columns:
        hit = runs["overloaded"].astype(str).str.lower() == "true"
    elif "rejected" in runs.columns:
        hit = runs["rejected"] >= MIN_REJECTED
    else:  # a profile of before either column: every point is in doubt
        hit = pd.Series(False, index=runs.index)
    reached = hit.groupby([runs["M"], runs["N"]]).any()
    return [(int(m), int(n)) for (m, n), ok in reached.items() if not ok]


def _configs(configs: list[tuple[int, int]]) -> str:
    shown = ", ".join(f"M={m} N={n}" for m, n in configs[:6])
    return shown + (f" and {len(configs) - 6} more" if len(configs) > 6 else "")


def optimum_caveats(grid: ProfileGrid, M: int, N: int) -> list[Caveat]:
    """What the profile cannot support about the optimum (M, N) found from it."""
    out = []
    low = never_overloaded(grid.runs)
    if low:
        offered = grid.runs.set_index(["M", "N"])["offered"]
        highest = max(float(offered.loc[[c]].max()) for c in low)
        out.append(
            Caveat(
                "never_saturated",
                f"{len(low)} of {len(grid.runs[['M', 'N']].drop_duplicates())} profiled configurations never reached overload ({_configs(low)}; "
                f"offered up to {highest:.4g} sessions/s): their capacity is only known to exceed what they were offered, and p_i, q_i there "
                "are the waits of a system below saturation, so λ is no measured capacity; profile again at a higher load",
                low,
            )
        )
    measured = grid.points[grid.points["count"] > 0][["M", "N"]].drop_duplicates().to_numpy(float)
    M_max, N_max = int(measured[:, 0].max()), int(measured[:, 1].max())
    edges = [f"M = {M}, the largest M profiled"] if M >= M_max else []
    edges += [f"N = {N}, the largest N profiled"] if N >= N_max else []
    if not _inside(measured, M, N):
        out.append(
            Caveat(
                "beyond_grid",
                f"the optimum M = {M}, N = {N} lies outside the profiled configurations: λ there is extrapolated; profile a grid that surrounds it",
                [(M, N)],
            )
        )
    elif edges:
        out.append(
            Caveat(
                "beyond_grid",
                f"the optimum lies on the edge of the profiled grid ({' and '.join(edges)}): λ still rises towards it, so the best "
                "configuration may lie beyond, where nothing was measured; profile larger pools to bracket it",
                [(M, N)],
            )
        )
    return out


def _inside(points: np.ndarray, M: int, N: int) -> bool:
    """(M, N) within the convex hull of the profiled points (their triangulation)."""
    from scipy.spatial import Delaunay, QhullError

    try:
        return bool(Delaunay(points).find_simplex(np.array([[M, N]], float))[0] >= 0)
    except QhullError:  # all on one line: inside only if it is one of them
        return bool(((points[:, 0] == M) & (points[:, 1] == N)).any())
