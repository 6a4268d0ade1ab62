"""The knee of a load curve (Andreolini et al.'s black-box capacity), found by Kneedle
(Satopää et al., 2011, via the `kneed` package): on the curve scaled to the unit
square, a point farthest above the chord from the first to the last step — where the
curve turns from flat to steep. A curve past its capacity may turn again (time-outs,
TCP retransmissions pile up) and Kneedle would take the sharper, later turn; given
the throughput, the curve is therefore cut at 1.5 × the first load whose throughput
is within 2% of the highest — all later turns happen where the throughput no longer
grows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from kneed import KneeLocator

from ..errors import InputError


@dataclass(frozen=True)
class Knee:
    load: float | None
    """The load at the knee (None: the curve has no knee, e.g. still flat)."""
    value: float | None
    method: str = "kneedle (convex, increasing)"


def find_knee(load, value, throughput=None, sensitivity: float = 1.0) -> Knee:
    """The knee of an increasing, convex curve value(load) (e.g. p90 response time
    against clients), within the range the throughput says holds the capacity (see
    above). Points whose value is missing (nothing completed) are left out."""
    d = pd.DataFrame({"x": np.asarray(load, float), "y": np.asarray(value, float)}).dropna().sort_values("x")
    if throughput is not None:
        t = pd.Series(np.asarray(throughput, float), index=np.asarray(load, float)).sort_index()
        flat = t.index[t >= 0.98 * t.max()][0]
        d = d[d.x <= 1.5 * flat]
    if d.x.nunique() < 3:
        raise InputError(f"a knee needs at least 3 distinct loads with a measured value (got {d.x.nunique()})")
    k = KneeLocator(d.x, d.y, curve="convex", direction="increasing", S=sensitivity)
    return Knee(None if k.knee is None else float(k.knee), None if k.knee_y is None else float(k.knee_y))
