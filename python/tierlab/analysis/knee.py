"""The knee of a load curve (Andreolini et al.'s black-box capacity), found by Kneedle
(Satopää et al., 2011, via the `kneed` package): on the curve scaled to the unit
square, the point farthest below the chord from the first to the last step — where
the curve turns from flat to steep.

Kneedle's answer depends on where the curve ends, and a ramp usually runs past the
capacity, where the p90 turns again: it grows slowly again, or plateaus, once
time-outs cap the response times (the TPC-W example: p90 10.9 s at the last steps),
or it grows steeply again as TCP retransmissions pile up. Over the whole ramp Kneedle
then picks one of those later turns — on a plateau the last step. Given the
throughput, the rule is therefore:

    the knee is Kneedle's on the steps up to saturation and one step beyond it, where
    saturation is the first load whose throughput is within 2% of the ramp's highest.

Past saturation more load no longer buys throughput (Andreolini et al. §4: the knee
is where the throughput stops following the load and the response time grows), so
every later turn is overload, not capacity; the one step beyond lets a knee right at
saturation be found (Kneedle never picks an end point). Steps beyond the first that
reaches the highest p90 of that range are left out as well: a plateau holds no turn
towards steep."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from kneed import KneeLocator

from ..errors import InputError

# Throughput within this share of the ramp's highest counts as saturated.
SATURATED = 0.98


@dataclass(frozen=True)
class Knee:
    load: float | None
    """The load at the knee (None: the curve has no knee, e.g. still flat)."""
    value: float | None
    method: str = "kneedle (convex, increasing)"
    saturation: float | None = None
    """The first load whose throughput is within 2% of the highest; the knee is
    searched up to the step after it. None: no throughput given, or the ramp did not
    saturate (see `saturation_load`)."""


def saturation_load(load, throughput, overloaded=None) -> float | None:
    """The first load whose throughput is within 2% of the highest; None when that is
    the last step: the throughput was still rising there, and no later step shows it
    level off (a ramp that stops short of saturation would call its last step
    saturated). At the latest, though, the first load whose runs were `overloaded`
    (per step: their backlog grew, `trace.outcome.backlogged`): the throughput of a
    server that falls behind may still rise a little while what it leaves unanswered
    piles up."""
    t = pd.Series(np.asarray(throughput, float), index=np.asarray(load, float)).dropna().sort_index()
    if t.empty:
        raise InputError("no step of the ramp has a measured throughput")
    first = float(t.index[t >= SATURATED * t.max()][0])
    level = None if first == t.index[-1] and len(t) > 1 else first
    over = np.asarray(load, float)[np.asarray(overloaded, bool)] if overloaded is not None else np.array([])
    return min((x for x in (level, float(over.min()) if len(over) else None) if x is not None), default=None)


def find_knee(load, value, throughput=None, sensitivity: float = 1.0, overloaded=None) -> Knee:
    """The knee of an increasing, convex curve value(load) (e.g. p90 response time
    against clients); with the throughput, only the steps up to one beyond saturation
    count (see above; `overloaded`: per step, whether its runs were). Points whose
    value is missing (nothing completed) are left out."""
    d = pd.DataFrame({"x": np.asarray(load, float), "y": np.asarray(value, float)}).dropna().sort_values("x")
    if d.x.nunique() < 3:
        raise InputError(f"a knee needs at least 3 distinct loads with a measured value (got {d.x.nunique()}); ramp in finer steps")
    saturation = None
    method = "kneedle (convex, increasing)"
    if throughput is not None:
        saturation = saturation_load(load, throughput, overloaded)
        if saturation is None:
            method += "; the throughput still rises at the last step: no saturation over these loads"
        else:
            after = d.x[d.x > saturation]
            d = d[d.x <= (after.iloc[0] if len(after) else saturation)]
            method += f" up to the step after saturation (load {saturation:g})"
    # Steps past the first that reaches the highest value (a plateau) hold no turn
    # towards steep; Kneedle would take the plateau's end.
    d = d.iloc[: int(np.argmax(d.y.to_numpy())) + 1] if len(d) else d
    if d.x.nunique() < 3:
        # The steps were measured: a curve that saturates (or peaks) that early has no
        # knee to find here, which the caller reports beside the steps, not instead.
        return Knee(None, None, f"{method}: only {d.x.nunique()} step(s) up to saturation or the peak, a knee needs 3", saturation)
    k = KneeLocator(d.x, d.y, curve="convex", direction="increasing", S=sensitivity)
    return Knee(None if k.knee is None else float(k.knee), None if k.knee_y is None else float(k.knee_y), method, saturation)
