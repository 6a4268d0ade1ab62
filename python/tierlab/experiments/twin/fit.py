"""A distribution for the model file from per-request samples: a lognormal fitted by
maximum likelihood (scipy), or the samples' quantiles as an empirical distribution."""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy import stats

Form = Literal["lognormal", "empirical"]
FLOOR = 1e-6  # seconds: a demand the clocks read as 0 (a few µs of work) still takes a little
QUANTILES = 100  # values kept by an empirical fit: the samples' percentiles


def fitted(samples: np.ndarray, form: Form = "lognormal") -> dict | float:
    """`{lognormal: {mean, sd}}` or `{empirical: [...]}` (seconds) for the model file;
    a constant when the samples do not vary."""
    x = np.maximum(np.asarray(samples, dtype=float), FLOOR)
    if len(x) < 2 or np.ptp(x) <= FLOOR:
        return float(np.mean(x))
    if form == "empirical":
        return {"empirical": [float(v) for v in np.quantile(x, (np.arange(QUANTILES) + 0.5) / QUANTILES)]}
    shape, _, scale = stats.lognorm.fit(x, floc=0)
    mean = scale * np.exp(shape**2 / 2)
    return {"lognormal": {"mean": float(mean), "sd": float(mean * np.sqrt(np.expm1(shape**2)))}}


def mean_of(dist: dict | float) -> float:
    if isinstance(dist, float):
        return dist
    if "lognormal" in dist:
        return float(dist["lognormal"]["mean"])
    return float(np.mean(dist["empirical"]))
