"""Demands estimated the classical way, from utilization (the approaches LibReDE
packages), beside the direct per-request measurements: the service demand law
D = U / X per process, and a least-squares regression of each step's CPU on the
requests of each type that ended in it, U_s = Σ_c D_c · X_{s,c} + D_0 (non-negative:
scipy.optimize.nnls), whose intercept D_0 is CPU no request accounts for. Where the
direct figures and the utilization disagree, the difference is CPU spent outside the
handlers (the server's I/O thread, the garbage collector) — named in the residuals."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import nnls

from .measured import DONE, Measured


def demand_law(m: Measured, column: str = "cpu") -> dict[str, float]:
    """CPU-seconds per served request of a process over the measured windows (U / X),
    and the direct figure beside it for the application (mean handler CPU time)."""
    w = m.windows
    busy = float((w[column] * w["length"]).sum())
    served = float(w.filter(like=DONE).to_numpy().sum())
    law = busy / served if served else float("nan")
    out = {"utilization_cores": busy / float(w["length"].sum()), "served": served, "demand_law": law}
    if column == "cpu":
        direct = float(m.requests[f"{m.tier}.cpu_time"].mean())
        out |= {"direct": direct, "outside_handlers": law - direct}
    return out


def regression(m: Measured, column: str = "cpu") -> pd.DataFrame:
    """Per request type: the regression's demand (CPU-seconds per request) beside the
    direct mean handler CPU time; then `(all)`, one demand for every request (a fit
    that needs no variation in the mix), and `(background)`, the intercept in cores.
    The relative residuals are in `attrs`. At a steady load the mix barely varies from
    window to window, so the per-type demands are poorly determined (many come out 0):
    traces at several loads and mixes give the regression what it needs."""
    w = m.windows
    done = [c for c in w.columns if c.startswith(DONE)]
    types = [c.removeprefix(DONE) for c in done]
    busy, counts = (w[column] * w["length"]).to_numpy(), w[done].to_numpy()
    per_type, r_types = _nnls(counts, w["length"].to_numpy(), busy)
    pooled, r_all = _nnls(counts.sum(axis=1, keepdims=True), w["length"].to_numpy(), busy)
    ok = m.requests
    direct = ok.groupby(ok["type"].astype(str))[f"{m.tier}.cpu_time"].mean().reindex(types) if column == "cpu" else pd.Series(np.nan, index=types)
    table = pd.DataFrame({"requests": counts.sum(axis=0), "regression": per_type[:-1], "direct": direct.to_numpy()}, index=pd.Index(types, name="type"))
    all_direct = float(ok[f"{m.tier}.cpu_time"].mean()) if column == "cpu" else np.nan
    table.loc["(all)"] = [float(counts.sum()), pooled[0], all_direct]
    table.loc["(background)"] = [np.nan, per_type[-1], np.nan]
    table.attrs |= {"relative_residual": r_types, "relative_residual_all": r_all, "windows": len(w)}
    return table


def _nnls(counts: np.ndarray, length: np.ndarray, busy: np.ndarray) -> tuple[np.ndarray, float]:
    """Non-negative least squares of the windows' busy CPU-seconds on the requests that
    ended in them plus a background rate (cores) × the window's length; the
    coefficients and the relative residual ‖Ax − b‖ / ‖b‖."""
    a = np.column_stack([counts, length])
    coef, norm = nnls(a, busy)
    size = float(np.linalg.norm(busy))
    return coef, (norm / size if size > 0 else float("nan"))
