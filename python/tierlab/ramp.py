"""Black-box capacity (Andreolini et al.): step the load up, measure the 90th
percentile of the response time at each step, and take the knee of that curve as the
capacity. The knee is found by Kneedle (Satopää et al., 2011, via the `kneed`
package): on the curve scaled to the unit square, the point farthest above the chord
from the first to the last step — where the curve turns from flat to steep."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from kneed import KneeLocator

from .errors import InputError
from .model import LoadedModel, load_model
from .model.spec import Closed
from .sweep import Run, sweep
from .trace import Trace


@dataclass(frozen=True)
class Knee:
    load: float | None
    """The load at the knee (None: the curve has no knee, e.g. still flat)."""
    value: float | None
    method: str = "kneedle (convex, increasing)"


def find_knee(load, value, sensitivity: float = 1.0) -> Knee:
    """The knee of an increasing, convex curve value(load) (e.g. p90 response time
    against clients). Points whose value is missing (nothing completed) are left out."""
    d = pd.DataFrame({"x": np.asarray(load, float), "y": np.asarray(value, float)}).dropna().sort_values("x")
    if d.x.nunique() < 3:
        raise InputError(f"a knee needs at least 3 distinct loads with a measured value (got {d.x.nunique()})")
    k = KneeLocator(d.x, d.y, curve="convex", direction="increasing", S=sensitivity)
    return Knee(None if k.knee is None else float(k.knee), None if k.knee_y is None else float(k.knee_y))


def load_path(model: LoadedModel) -> str:
    """The model field a ramp steps: clients (closed) or the session rate (open)."""
    closed = isinstance(model.spec.workload.population, Closed)
    return "workload.population.clients" if closed else "workload.population.session_rate"


def _point(trace: Trace) -> dict:
    s = trace.summary
    rt = s["response_time"] or {}
    return {"throughput": s["throughput"], "p90": rt.get("p90"), "mean": rt.get("mean"),
            "ok": s["requests"]["ok"], "rejected": s["requests"]["rejected"]}


def ramp(model, loads, seeds=(1,), workers=None, scheduler=None, progress: str | None = "ramp") -> tuple[pd.DataFrame, Knee]:
    """Run the model at every load (and seed) in parallel; the per-load means and the
    knee of the p90 curve."""
    model = load_model(model)
    path = load_path(model)
    loads = sorted(loads)
    if any(x <= 0 for x in loads):
        raise InputError(f"loads must be positive ({path}); got {loads}")
    keys = [(x, s) for x in loads for s in seeds]
    runs = [Run({path: int(x) if path.endswith("clients") else float(x)}, s) for x, s in keys]
    points = sweep(model, runs, _point, workers=workers, scheduler=scheduler, progress=progress)
    df = pd.DataFrame([{"load": x, "seed": s, **p} for (x, s), p in zip(keys, points)])
    table = df.groupby("load", as_index=False)[["throughput", "p90", "mean", "ok", "rejected"]].mean()
    return table, find_knee(table.load, table.p90)
