"""Fine-grained analysis (Wang et al., RUBBoS): what averages hide. Request rates and
response times per tier at 100 ms against 10 s, how much the request rate fluctuates
at each tier (it grows from the front to the database when one page makes many
queries: top-down amplification), how much each tier's response time fluctuates
(bottom-up), a bimodality test of the response times with both modes, the high
percentiles, and TCP retransmissions per minute."""

from __future__ import annotations

from dataclasses import dataclass

import diptest
import numpy as np
import pandas as pd
from scipy.signal import find_peaks
from scipy.stats import gaussian_kde

from ..errors import InputError
from ..trace import Trace, window_of
from ..trace.schema import RETRANSMISSIONS_UNMEASURED, figures

DIP_TABLE_LIMIT = 72_000
"""The largest sample diptest's p-value tables cover."""


@dataclass(frozen=True)
class Bimodality:
    dip: float
    """Hartigan's dip statistic (0 = unimodal; larger = farther from it)."""
    p_value: float
    bimodal: bool
    modes: list[float]
    """The modes of the response-time density (seconds), when multimodal: its peaks at
    least 1% as high as the highest (a small slow mode, such as requests that waited
    for a TCP retransmission, is kept)."""


def bimodality(response_times, alpha: float = 0.01) -> Bimodality:
    """Hartigan's dip test (the `diptest` package) at level `alpha`; the modes are the
    peaks of a kernel density of log10(response time)."""
    x = np.asarray(response_times, dtype=float)
    x = x[np.isfinite(x) & (x > 0)]
    if len(x) < 10:
        raise InputError(f"a bimodality test needs at least 10 positive response times (got {len(x)})")
    if len(x) > DIP_TABLE_LIMIT:  # beyond it the p-value tables do not reach: test a fixed random sample
        x = np.random.default_rng(0).choice(x, DIP_TABLE_LIMIT, replace=False)
    dip, p = diptest.diptest(x)
    modes: list[float] = []
    if p < alpha:
        logx = np.log10(x)
        grid = np.linspace(logx.min(), logx.max(), 1024)
        density = gaussian_kde(logx)(grid)
        peaks, _ = find_peaks(density, height=0.01 * density.max())
        modes = [float(10 ** grid[i]) for i in peaks]
    return Bimodality(float(dip), float(p), bool(p < alpha), modes)


def rate(trace: Trace, tier: str, every: float) -> pd.Series:
    """Requests arriving at `tier` per second, in windows of `every` seconds (summed
    over its servers; the measured period only)."""
    s = trace.series(tier, "arrivals").sum(axis=1)
    s = s[s.index >= trace.summary["warmup"]]
    per = s.groupby(window_of(s.index, every)).sum() / every
    return per[per.index + every <= trace.end + 1e-6]  # whole windows only


def residence(trace: Trace, tier: str, every: float) -> pd.Series:
    """Mean time a visit spends at `tier` (mean over its servers' per-window means),
    in windows of `every` seconds over the measured period."""
    rt = trace.series(tier, "response_time").mean(axis=1)
    rt = rt[rt.index >= trace.summary["warmup"]]
    return rt.groupby(window_of(rt.index, every)).mean()


def cov(x: pd.Series) -> float:
    """Coefficient of variation (population standard deviation / mean) of the non-missing values."""
    x = x.dropna()
    return float(x.std(ddof=0) / x.mean()) if len(x) and x.mean() > 0 else float("nan")


def tiers(trace: Trace, fine: float = 0.1, coarse: float = 10.0) -> pd.DataFrame:
    """Per tier, in model order: mean request rate, its coefficient of variation at the
    fine and the coarse window, and the CoV of the per-window mean residence time."""
    rows = []
    for name, _ in sorted(trace.summary["tiers"].items(), key=lambda kv: kv[1]["position"]):
        rt = residence(trace, name, fine)
        rows.append(
            {
                "tier": name,
                "rate": rate(trace, name, coarse).mean(),
                f"rate_cov_{fine:g}s": cov(rate(trace, name, fine)),
                f"rate_cov_{coarse:g}s": cov(rate(trace, name, coarse)),
                "response_time_cov": cov(rt),
            }
        )
    return pd.DataFrame(rows)


def retransmissions_per_minute(trace: Trace) -> pd.Series:
    """TCP retransmissions of the recorded requests, per minute of their start."""
    r = trace.requests
    if r is None:
        return pd.Series(dtype=float)
    return r.groupby(window_of(r.start, 60.0))["retransmissions"].sum()


def fluctuations(trace: Trace) -> dict:
    """Everything above for one trace, as plain data."""
    rt = figures(trace.summary["response_time"])
    out: dict = {"p95": rt.get("p95"), "p98": rt.get("p98"), "mean": rt.get("mean"), "tiers": tiers(trace).to_dict(orient="records")}
    r = trace.requests
    if r is not None:
        ok = r[r.status == "ok"]
        b = bimodality(ok.response_time)
        out["bimodality"] = b.__dict__
        unmeasured = unmeasured_retransmissions(trace)
        if unmeasured is None:
            per_minute = retransmissions_per_minute(trace)
            out["retransmissions_per_minute"] = {"mean": float(per_minute.mean()), "max": float(per_minute.max())}
            out["share_retransmitted"] = float((r.retransmissions > 0).mean())
        else:
            out["retransmissions_per_minute"] = out["share_retransmitted"] = None
            out["retransmissions_not_measured"] = unmeasured
    return out


def unmeasured_retransmissions(trace: Trace) -> str | None:
    """Why the trace's retransmissions are not measured (another tool's results), or None."""
    return (trace.summary.get("missing") or {}).get(RETRANSMISSIONS_UNMEASURED)
