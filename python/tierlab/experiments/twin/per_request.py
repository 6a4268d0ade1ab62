"""The growth of a request's CPU with the worker threads other requests hold, from the
served requests one by one (issue 41 item 4; docs/twin.md, "The growth of the CPU per
request, once"): each one's handler CPU, relative to its type's mean, against the
threads held when it got its own, a line that levels off where the data say.

Live, the handlers' CPU grows with the threads held and stops past a few
(investigations/twin/results/cpu_growth, cpu_growth_live): a line through the
requests says it directly, where the traces' totals (`calibrate(contention=True)`)
say it only through a simulation that also grows the pools' hand-offs, so that the
twin grows the CPU per request twice."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .measured import Measured, threads_at_start

T_MIN = 3.0  # the slope's t statistic a growth must reach to be in the twin
GROWTH_MIN = 0.05  # and its growth at the cap (or at the most threads seen)


def scaled_line(n: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(scale, per) of scale · (1 + per · n) through the points (n, y), Chen & Gorton's
    contention form, least squares; a line that would not grow with n, or has no value
    of its own at n = 0, keeps per at 0 (scale the mean of y)."""
    slope, scale = np.polyfit(n, y, 1)
    if slope <= 0 or scale <= 0:
        return float(np.mean(y)), 0.0
    return float(scale), float(slope / scale)


@dataclass(frozen=True)
class Line:
    """rel = base + slope · min(held, cap) through the requests (rel: a request's CPU ÷
    its type's mean), least squares; `t` the slope's t statistic, `top` the count the
    growth reaches (the cap, or the most threads seen), `requests` how many."""

    base: float
    slope: float
    t: float
    cap: int | None
    top: int
    requests: int

    @property
    def shown(self) -> bool:
        """The data show a growth: a slope clear of noise, and large enough to matter."""
        return bool(self.t >= T_MIN and self.base > 0 and self.slope * self.top / self.base >= GROWTH_MIN)


def line(m: Measured, threads: int) -> Line | None:
    """The line through the served requests that fits best over the caps c below the
    pool's size (each request's CPU ÷ its type's mean against min(held, c), held as
    `threads_at_start` counts it); its `cap` None where the best is the largest (no
    levelling within the traces) or the CPU does not grow. None where the traces have
    too few requests with a known CPU, or a pool too small to level off below its size."""
    r = m.requests
    held = pd.concat([threads_at_start(run, m.tier).held for _, run in r.groupby("trace")])
    cpu = r[f"{m.tier}.cpu_time"]
    rel = (cpu / cpu.groupby(r.type, observed=True).transform("mean")).to_numpy()
    n = held.reindex(r.index).to_numpy()
    known = np.isfinite(rel)
    if threads < 3 or known.sum() < 3:
        return None  # no count below the pool's size but the largest to level off at
    x, y = n[known], rel[known]
    fits = []
    for c in range(1, threads):
        coef, residual, *_ = np.polyfit(np.minimum(x, c), y, 1, full=True)
        fits.append((float(residual[0]) if len(residual) else np.inf, c, float(coef[0]), float(coef[1])))
    best, c, slope, base = min(fits)
    levels = slope > 0 and c < threads - 1 and np.isfinite(best)
    seen = np.minimum(x, c)
    spread = float(np.sum((seen - seen.mean()) ** 2))
    se = np.sqrt(best / (len(y) - 2) / spread) if spread > 0 and len(y) > 2 and np.isfinite(best) else np.inf
    return Line(base, slope, float(slope / se) if se > 0 else 0.0, c if levels else None, c if levels else int(x.max()), int(len(y)))
