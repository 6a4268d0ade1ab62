"""Gunther's Universal Scalability Law: throughput at concurrency N is

    X(N) = λ₁ N / (1 + σ (N − 1) + κ N (N − 1))

with σ the contention (the serial share), κ the coherency cost (crosstalk between
each pair) and λ₁ the throughput of one. X peaks at N* = √((1 − σ) / κ). The fit is
nonlinear least squares (scipy) within σ ∈ [0, 1], κ ≥ 0, λ₁ > 0; the confidence
intervals are the usual asymptotic ones, t-quantile × standard error from the
Jacobian at the optimum, and for N* by the delta method."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import optimize, stats

from ..errors import InputError
from .tables import positive_numbers, read_csv

COLUMNS = ("concurrency", "throughput")
MAX_CONCURRENCY = 1e9
MAX_THROUGHPUT = 1e12  # per second
NEGLIGIBLE = 1e-6
"""σ(N − 1) or κN(N − 1) below this at every N measured is 0, the fit's bound: it moves
no fitted throughput by a millionth, far below what a measurement resolves, and the
solver stops within ~1e-8 of a parameter (its `xtol`), not on it."""


@dataclass(frozen=True)
class Usl:
    sigma: float
    kappa: float
    lambda1: float
    n_star: float | None
    """Concurrency of the highest throughput; None when κ is 0 (no peak: X keeps
    growing towards λ₁/σ)."""
    ci: dict[str, list[float | None]] = field(default_factory=dict)
    """name → [low, high] at `level` (None where unbounded)."""
    level: float = 0.95

    def throughput(self, n) -> np.ndarray:
        return throughput(np.asarray(n, float), self.sigma, self.kappa, self.lambda1)

    def as_json(self) -> dict:
        return {"sigma": self.sigma, "kappa": self.kappa, "lambda1": self.lambda1, "n_star": self.n_star, "ci": self.ci}


def read_table(path: str | Path, concurrency: str = "concurrency") -> pd.DataFrame:
    """A CSV with columns `concurrency` (or the one named) and `throughput` as floats
    named `concurrency,throughput` (several rows per concurrency allowed)."""
    columns = (concurrency, "throughput")
    return positive_numbers(read_csv(path, columns, dtype=str), columns, str(path)).set_axis(list(COLUMNS), axis=1)


def throughput(n: np.ndarray, sigma: float, kappa: float, lambda1: float) -> np.ndarray:
    return lambda1 * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


def fit(concurrency, measured, level: float = 0.95) -> Usl:
    """σ, κ, λ₁ of the USL through (concurrency, throughput) points."""
    n = np.asarray(concurrency, float)
    x = np.asarray(measured, float)
    ok = np.isfinite(n) & np.isfinite(x)
    n, x = n[ok], x[ok]
    if len(n) < 4 or len(np.unique(n)) < 4:
        raise InputError(f"the USL has 3 parameters: it needs throughput at 4 or more distinct concurrencies (got {len(np.unique(n))})")
    if (n <= 0).any() or (x < 0).any():
        raise InputError("concurrency must be positive and throughput non-negative")
    # Beyond these the model's N(N − 1) and λ₁N overflow, and no measurement is that
    # large: 1e308 ended in scipy's "Residuals are not finite".
    for name, v, top in (("concurrency", n, MAX_CONCURRENCY), ("throughput", x, MAX_THROUGHPUT)):
        if v.max() > top:
            i = int(np.argmax(v))
            raise InputError(f"{name} = {v[i]:.6g} (point {i + 1}: concurrency {n[i]:g}) is beyond {top:g}; no measurement is that large")
    # λ₁ starts from the best throughput per unit of concurrency at the lowest load.
    start = [0.05, 1e-4, float(np.max(x[n == n.min()]) / n.min()) or 1.0]
    res = optimize.least_squares(
        lambda p: throughput(n, *p) - x,
        start,
        bounds=([0.0, 0.0, 1e-12], [1.0, np.inf, np.inf]),
        x_scale="jac",
    )
    sigma, kappa, lambda1 = (float(v) for v in res.x)
    # A parameter the solver leaves a rounding error above its bound (σ = 5.9e-18) is at
    # the bound (NEGLIGIBLE).
    top = float(n.max())
    sigma = 0.0 if sigma * (top - 1) < NEGLIGIBLE else sigma
    kappa = 0.0 if kappa * top * (top - 1) < NEGLIGIBLE else kappa
    dof = len(n) - 3
    s2 = float(res.fun @ res.fun) / dof if dof > 0 else float("nan")
    cov = np.linalg.pinv(res.jac.T @ res.jac) * s2
    t = float(stats.t.ppf(0.5 + level / 2, dof)) if dof > 0 else float("nan")
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    lows = [0.0, 0.0, 0.0]
    highs = [1.0, math.inf, math.inf]
    ci = {name: _interval(v, t * e, lo, hi) for name, v, e, lo, hi in zip(("sigma", "kappa", "lambda1"), res.x, se, lows, highs)}
    n_star = None
    ci["n_star"] = [None, None]
    if kappa > 0 and sigma < 1:
        n_star = math.sqrt((1 - sigma) / kappa)
        grad = np.array([-1 / (2 * kappa * n_star), -n_star / (2 * kappa), 0.0])
        ci["n_star"] = _interval(n_star, t * math.sqrt(max(float(grad @ cov @ grad), 0.0)), 0.0, math.inf)
    return Usl(sigma, kappa, lambda1, n_star, ci, level)


def _interval(value: float, half: float, low: float, high: float) -> list[float | None]:
    """value ± half within [low, high]; an unknown width (too few points) is None."""
    if not math.isfinite(half):
        return [None, None]
    hi = min(float(value) + half, high)
    return [max(float(value) - half, low), hi if math.isfinite(hi) else None]
