"""Steps 2 and 3 of Totok & Karamcheti's method: interpolate p_i(M, N) and q_i(M, N)/N
over the triangular domain M ≥ N, then

    λ_DB(M, N)  = N / Σ_i V_i q_i(M, N)                         (eq. 2)
    λ_THR(M, N) = M / Σ_i V_i (p_i(M, N) + q_i(M, N))           (eq. 3)
    λ(M, N)     = min(λ_DB, λ_THR)                              (eq. 4)
    λ(N)        = max_M λ(M, N), at M0(N)                       (eq. 5)

The interpolant is scipy's CloughTocher2DInterpolator: piecewise cubic and C1 over a
Delaunay triangulation of the profiled points, so it needs no rectangular grid (the
paper's "piecewise bicubic", on the triangle the data actually cover). Outside the
points' convex hull nothing is extrapolated: those (M, N) are left out. A cubic can
overshoot: on a coarse grid it gave Search a negative q at (12, 12) between measured
0.35 and 0.56, hence an infinite λ_DB and a false optimum. Each value is therefore held
within the range measured at the corners of its triangle.

λ itself is held likewise. Even where p and q/N stay within their corners, λ = min(λ_DB,
λ_THR) need not: between a profiled N where the connections bind (λ_DB low, λ_THR high,
since a thread waiting for a connection counts in neither p nor q) and one where the
threads bind, the two interpolants cross, and their minimum peaks above both profiled
points. On the TPC-W example's quick grid λ(N) rose to 4.85-4.96 at N = 5-6 between
profiled 3.11 (N = 4) and 2.99 (N = 10); measured, N = 5 sustained 3.2. Nothing was
measured there to support such a peak, so λ at each (M, N) is held within the range of
λ at the profiled corners of its grid cell (the nearest profiled M and N on either side),
widened by LAMBDA_TOLERANCE, the measurement error of a profiled λ. The table's
`lambda_db` and `lambda_thr` stay as interpolated; `held` marks where the bound acted.

A new request mix (V_i) reuses the same p_i, q_i — the paper's assumption that they
depend only weakly on the mix. How far a mix may move is measured by the total
variation distance between request shares, d = ½ Σ_i |s_i − s'_i|; past
MIX_DISTANCE_LIMIT the result carries a warning to profile again. The paper validated
its Loads 1 and 2 at d = 0.146 and 0.158 (Table II), so 0.2 is just beyond the
evidence."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.interpolate import CloughTocher2DInterpolator

from ...errors import InputError, TierlabWarning
from .profiling import ProfileGrid
from .validation import servers_needed

MIX_DISTANCE_LIMIT = 0.2
# The measurement error of λ at a profiled point: the same (M, N) profiled with seeds 1,
# 2, 3 (examples/totok_tpcw.yaml, runs of 3,600 s, (M, N) in {10, 20, 30} × {5, 10}) gave
# λ spread over 1.1-1.4% of their mean (standard deviations 0.6-0.7%).
LAMBDA_TOLERANCE = 0.015


class MixWarning(TierlabWarning):
    """The mix is too far from the profiling mix for the profiled p_i, q_i to be trusted."""


def mix_distance(a: pd.Series, b: pd.Series) -> float:
    """Total variation distance between two request mixes (shares or V_i)."""
    a, b = a / a.sum(), b / b.sum()
    idx = a.index.union(b.index)
    return 0.5 * float((a.reindex(idx, fill_value=0) - b.reindex(idx, fill_value=0)).abs().sum())


@dataclass
class Rates:
    """λ over the evaluated (M, N) domain for one mix."""

    table: pd.DataFrame  # M, N, lambda_db, lambda_thr, lambda (sessions/s), held
    distance: float  # mix distance from the profiling mix

    def best(self) -> pd.Series:
        """The optimal (M, N) and its λ."""
        return self.table.loc[self.table["lambda"].idxmax()]

    def by_N(self) -> pd.DataFrame:
        """λ(N) and the M0 that achieves it (eq. 5)."""
        t = self.table
        return t.loc[t.groupby("N")["lambda"].idxmax(), ["N", "M", "lambda"]].rename(columns={"M": "M0"}).reset_index(drop=True)

    def servers_for(self, session_rate: float) -> int:
        """Servers, each at the optimum, needed for a session arrival rate."""
        return servers_needed(session_rate, float(self.best()["lambda"]))


def _within_corners(f: CloughTocher2DInterpolator, M: np.ndarray, N: np.ndarray) -> np.ndarray:
    """f at (M, N), each value clipped to the range of the data at its triangle's corners."""
    values = f(M, N)
    simplex = f.tri.find_simplex(np.stack(np.broadcast_arrays(M, N), axis=-1))
    corners = f.values[f.tri.simplices[simplex]]  # (..., 3, columns)
    inside = (simplex >= 0)[..., None]
    lo, hi = corners.min(axis=-2), corners.max(axis=-2)
    return np.where(inside, np.clip(values, lo, hi), values)


class PoolSizing:
    def __init__(self, grid: ProfileGrid, tolerance: float = LAMBDA_TOLERANCE):
        """`tolerance`: how far (relative) λ between profiled points may leave the range
        of λ at its cell's profiled corners."""
        self.grid = grid
        self.tolerance = tolerance
        # One interpolant per set of profiled points, holding p and q/N of every type
        # measured at exactly those points: one triangulation, one evaluation for all.
        self._groups: list[tuple[list[str], CloughTocher2DInterpolator]] = []
        by_points: dict[tuple, list[str]] = {}
        measured = grid.points[grid.points["count"] > 0].sort_values(["M", "N"])
        for ty, d in measured.groupby("type"):
            by_points.setdefault(tuple(map(tuple, d[["M", "N"]].to_numpy())), []).append(ty)
        for pts, types in by_points.items():
            xy = np.array(pts, float)
            if len(xy) < 3 or np.linalg.matrix_rank(xy - xy.mean(axis=0)) < 2:
                continue  # too few points to span a triangle: the type is too rare to profile
            cols = []
            for ty in types:
                d = measured[measured["type"] == ty]
                cols += [d["p"].to_numpy(), (d["q"] / d["N"]).to_numpy()]
            self._groups.append((types, CloughTocher2DInterpolator(xy, np.column_stack(cols))))
        self.types = [t for types, _ in self._groups for t in types]
        if not self.types:
            raise InputError("the profile has no request type measured at 3 or more (M, N) points spanning a triangle; profile more points")

    def p_q(self, M, N) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """p_i(M, N) and q_i(M, N) of every interpolated type (NaN outside the profiled region)."""
        M, N = np.asarray(M, float), np.asarray(N, float)
        p, q = {}, {}
        for types, f in self._groups:
            values = _within_corners(f, M, N)
            for k, ty in enumerate(types):
                p[ty], q[ty] = values[..., 2 * k], values[..., 2 * k + 1] * N
        return p, q

    def rates(self, V: pd.Series | None = None, M_max: int | None = None, N_max: int | None = None) -> Rates:
        """λ_DB, λ_THR, λ at every integer M ≥ N inside the profiled region (or up to
        M_max, N_max) for the mix V (mean requests per session by type; default the
        profiling mix)."""
        V = self.grid.share * self.grid.L if V is None else V[V > 0]
        unknown = [t for t in V.index if t not in self.types and t not in self.grid.share.index]
        if unknown:
            raise InputError(f"request types {', '.join(unknown)} were never profiled (profiled: {', '.join(sorted(self.types))})")
        rare = [t for t in V.index if t not in self.types]
        covered = V.drop(rare)
        d = mix_distance(V, self.grid.share)
        if d > MIX_DISTANCE_LIMIT:
            warnings.warn(
                f"the mix is {d:.2f} (total variation) from the profiling mix, beyond {MIX_DISTANCE_LIMIT}: p_i and q_i may no longer hold; profile again with this mix",
                MixWarning,
                stacklevel=2,
            )
        pts = self.grid.points
        M_hi = M_max or int(pts["M"].max())
        N_hi = N_max or int(pts["N"].max())
        M, N = np.meshgrid(np.arange(1, M_hi + 1), np.arange(1, N_hi + 1), indexing="ij")
        keep = M >= N
        M, N = M[keep].astype(float), N[keep].astype(float)
        lam_db, lam_thr = self._lambdas(V, covered.index, rare, M, N)
        lam = np.minimum(lam_db, lam_thr)
        lo, hi = self._cell_range(V, covered.index, rare, M, N)
        bounded = np.where(np.isnan(lo), lam, np.clip(lam, lo * (1 - self.tolerance), hi * (1 + self.tolerance)))
        table = pd.DataFrame({"M": M.astype(int), "N": N.astype(int), "lambda_db": lam_db, "lambda_thr": lam_thr, "lambda": bounded, "held": bounded != lam})
        table = table[np.isfinite(table["lambda"])].reset_index(drop=True)
        if table.empty:
            raise InputError("no (M, N) of the requested range lies inside the profiled region")
        return Rates(table, d)

    def _lambdas(self, V: pd.Series, covered, rare, M: np.ndarray, N: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """λ_DB and λ_THR at (M, N) for the mix V (eqs. 2, 3); types too rare to
        interpolate count with their mean over the profile."""
        p, q = self.p_q(M, N)
        sum_q = sum(V[t] * q[t] for t in covered) + sum(V[t] * self._mean(t, "q") for t in rare)
        sum_p = sum(V[t] * p[t] for t in covered) + sum(V[t] * self._mean(t, "p") for t in rare)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(sum_q > 0, N / sum_q, np.inf), M / (sum_p + sum_q)

    def _cell_range(self, V: pd.Series, covered, rare, M: np.ndarray, N: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The lowest and highest λ at the profiled corners of each (M, N)'s grid cell:
        the profiled M and N nearest on either side (the point itself where profiled);
        a corner not profiled (M < N) is left out, and so is one where λ is not finite.
        NaN where no corner is left: nothing to hold the value to."""
        profiled = self.grid.points[["M", "N"]].drop_duplicates()
        Ms, Ns = np.unique(profiled["M"]).astype(float), np.unique(profiled["N"]).astype(float)
        at = np.full((len(Ms), len(Ns)), np.nan)
        i, j = np.searchsorted(Ms, profiled["M"]), np.searchsorted(Ns, profiled["N"])
        lam_db, lam_thr = self._lambdas(V, covered, rare, Ms[i], Ns[j])
        at[i, j] = np.where(np.isfinite(np.minimum(lam_db, lam_thr)), np.minimum(lam_db, lam_thr), np.nan)
        below_M = np.clip(np.searchsorted(Ms, M, side="right") - 1, 0, len(Ms) - 1)
        above_M = np.clip(np.searchsorted(Ms, M, side="left"), 0, len(Ms) - 1)
        below_N = np.clip(np.searchsorted(Ns, N, side="right") - 1, 0, len(Ns) - 1)
        above_N = np.clip(np.searchsorted(Ns, N, side="left"), 0, len(Ns) - 1)
        corners = np.stack([at[a, b] for a in (below_M, above_M) for b in (below_N, above_N)])
        missing = np.isnan(corners)
        none = missing.all(axis=0)  # (np.nanmin would warn on these)
        lo = np.where(none, np.nan, np.where(missing, np.inf, corners).min(axis=0))
        hi = np.where(none, np.nan, np.where(missing, -np.inf, corners).max(axis=0))
        return lo, hi

    def _mean(self, ty: str, col: str) -> float:
        d = self.grid.points[(self.grid.points["type"] == ty) & (self.grid.points["count"] > 0)]
        return float(np.average(d[col], weights=d["count"])) if len(d) else 0.0
