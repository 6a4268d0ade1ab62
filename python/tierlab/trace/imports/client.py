"""A client-only trace (what a load tool sees) from either of the two kinds of results
load tools write: one record per request (JMeter, k6), or per-window distributions
only (Locust, HdrHistogram logs). Both end in the same summary and `client` series as
`tierlab load` writes (docs/trace.md), with `source` "import" and `missing` saying
what the tool did not measure."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import InputError
from ..columns import Columns
from ..core import timeseries_columns
from ..folder import Trace
from ..schema import OUTCOMES, RETRANSMISSIONS_UNMEASURED, SCHEMA_VERSION, STATUSES, Summary, check_summary

# The load generator's failure kinds (summary `errors`).
FAILURES = ("connect", "protocol", "timeout", "http_503", "http_4xx", "http_5xx")
PERCENTILES = {"p50": 50, "p90": 90, "p95": 95, "p98": 98, "p99": 99, "p99.9": 99.9}
SERVER_SIDE = "a load tool measures the client only: no tiers, pools, stations or phases"
NO_SESSIONS = "the tool does not record sessions (all requests carry session 0)"
NO_UNFINISHED = "the tool records the requests that finished: any it left running at its end are not counted (requests.unfinished 0)"
NO_RETRANSMISSIONS = "the tool does not report the TCP handshake: retransmissions are 0 in the records, not measured"


def failure(code: str, message: str = "") -> tuple[str, str]:
    """(status, failure kind) of a failed request from its HTTP status code or, when
    it never got one, the tool's message: 503 is a rejection (as the live server's full
    pool answers), a time-out is `timeout`, anything else an error."""
    code = code.strip()
    if code.isdigit() and len(code) == 3:
        if code == "503":
            return "rejected", "http_503"
        return "error", "http_4xx" if code.startswith("4") else "http_5xx" if code.startswith("5") else "protocol"
    text = f"{code} {message}".lower()
    if "timeout" in text or "timed out" in text:
        return "timeout", "timeout"
    if "connect" in text or "refused" in text or "unreachable" in text:
        return "error", "connect"
    return "error", "protocol"


@dataclass
class Figures:
    """What a summary needs beyond the series, however it was measured."""

    counts: dict[str, int]
    response_time: dict[str, float] | None
    types: dict[str, dict]
    errors: dict[str, int]
    duration: float
    warmup: float
    in_system: float | None = None
    """Mean requests in flight over the measured period (None: unknown)."""
    time_in_system: float | None = None
    """Mean response time of all requests, failed too (None: the ok ones' mean)."""
    bytes_received: int | None = None
    missing: dict[str, str] = field(default_factory=dict)


def percentiles(rt: np.ndarray) -> dict[str, float] | None:
    """Mean, percentiles and max of response times (seconds); None if empty."""
    if len(rt) == 0:
        return None
    return {"mean": float(rt.mean()), **{k: float(np.percentile(rt, q)) for k, q in PERCENTILES.items()}, "max": float(rt.max())}


def summary(tool: str, results: str | Path, window: float, f: Figures) -> Summary:
    """The trace summary of an imported run."""
    measured = f.duration - f.warmup
    if measured <= 0:
        raise InputError(f"{results}: the run lasts {f.duration:.3g} s, not longer than the warm-up ({f.warmup:g} s); nothing is left to import")
    done = sum(f.counts.values())
    rt_mean = f.time_in_system if f.time_in_system is not None else (f.response_time or {}).get("mean", 0.0)
    s = {
        "model": f"{tool}: {Path(results).name}",
        "source": "import",
        "schema_version": SCHEMA_VERSION,
        "window": window,
        "seed": 0,
        "duration": f.duration,
        "warmup": f.warmup,
        "measured_seconds": measured,
        "interrupted": False,
        "missing": {
            "tiers": SERVER_SIDE,
            "sessions": NO_SESSIONS,
            "requests.unfinished": NO_UNFINISHED,
            RETRANSMISSIONS_UNMEASURED: NO_RETRANSMISSIONS,
            **f.missing,
        },
        "requests": {k: int(f.counts.get(k, 0)) for k in OUTCOMES},
        "throughput": f.counts.get("ok", 0) / measured,
        "response_time": f.response_time,
        "types": f.types,
        "tiers": {},
        "links": {},
        "sessions": {"started": 0, "completed": 0, "throughput": 0.0, "mean_requests": 0.0},
        "little": {
            "mean_in_system": f.in_system if f.in_system is not None else done / measured * rt_mean,
            "arrival_rate": done / measured,
            "mean_time_in_system": rt_mean,
        },
        "simulated_until": None,
        "events": None,
        "elapsed": f.duration,
        "target": str(results),
        "errors": {k: int(f.errors.get(k, 0)) for k in FAILURES},
        "bytes_received": f.bytes_received,
        "reconnects": None,
    }
    return check_summary(s, f"the summary imported from {results}")


def type_figures(counts: dict[str, int], response_time: dict[str, float] | None, measured: float) -> dict:
    return {"requests": {k: int(counts.get(k, 0)) for k in OUTCOMES}, "throughput": counts.get("ok", 0) / measured, "response_time": response_time}


def client_series(window_start: np.ndarray, columns: dict[str, np.ndarray]) -> Columns:
    """The `client` tier's series (server 0) from one array per metric."""
    names = list(columns)
    return timeseries_columns(window_start, np.column_stack([columns[m] for m in names]), ["client"] * len(names), [0] * len(names), [""] * len(names), names)


def from_records(r: pd.DataFrame, tool: str, results: str | Path, window: float = 0.1, warmup: float = 0.0, missing: dict[str, str] | None = None) -> Trace:
    """A trace from one row per request: `start` (seconds, any origin), `response_time`
    (seconds), `type`, `status` (one of the schema's), `failure` (a FAILURES kind or
    None) and `bytes`. Time 0 is the first request's start."""
    if r.empty:
        raise InputError(f"{results}: no requests in the file")
    r = r.sort_values("start", kind="stable").reset_index(drop=True)
    start = r.start.to_numpy(float) - float(r.start.min())
    rt = r.response_time.to_numpy(float)
    end = start + rt
    duration = float(end.max())
    n = int(np.floor(duration / window + 1e-9)) + 1
    edges = np.arange(n + 1) * window
    area = _busy_time(start, end, edges)
    ok = r.status.to_numpy() == "ok"
    at_end = np.minimum((end / window + 1e-9).astype(int), n - 1)
    completions = np.bincount(at_end, minlength=n).astype(float)
    rt_sum = np.bincount(at_end, weights=rt, minlength=n)
    series = client_series(
        edges[:-1],
        {
            "concurrency": area / window,
            "arrivals": np.bincount(np.minimum((start / window + 1e-9).astype(int), n - 1), minlength=n).astype(float),
            "completions": completions,
            "response_time": np.divide(rt_sum, completions, out=np.full(n, np.nan), where=completions > 0),
            "errors": np.bincount(at_end[~ok], minlength=n).astype(float),
        },
    )
    kept = start >= warmup
    f = measured_figures(r, start, end, warmup, duration, missing or {})
    f.bytes_received = int(r.bytes[kept].sum())
    s = summary(tool, results, window, f)
    requests = pd.DataFrame(
        {
            "id": np.arange(len(r), dtype=np.uint64),
            "session": np.zeros(len(r), dtype=np.uint64),
            "type": pd.Categorical(r.type.astype(str)),
            "status": pd.Categorical(r.status, categories=STATUSES),
            "start": start,
            "end": end,
            "response_time": rt,
            "retransmissions": np.zeros(len(r), dtype=np.uint32),
            "bytes": r.bytes.to_numpy(np.uint64),
        }
    )[kept].reset_index(drop=True)
    return Trace(s, series, requests)


def measured_figures(r: pd.DataFrame, start: np.ndarray, end: np.ndarray, warmup: float, duration: float, missing: dict[str, str]) -> Figures:
    """The summary's figures of the requests that started after the warm-up (`r`'s
    `type`, `status`, `response_time`, `failure`; `start` and `end` in the run's
    time), the time in system over the measured period by Little's law."""
    m = r[start >= warmup]
    measured = duration - warmup
    types = {
        str(t): type_figures(g.status.value_counts().to_dict(), percentiles(g.response_time[g.status == "ok"].to_numpy(float)), measured)
        for t, g in m.groupby("type", observed=True)
    }
    return Figures(
        counts=m.status.value_counts().to_dict(),
        response_time=percentiles(m.response_time[m.status == "ok"].to_numpy(float)),
        types=types,
        errors=m.failure.dropna().value_counts().to_dict(),
        duration=duration,
        warmup=warmup,
        in_system=float(_busy_time(start, end, np.array([warmup, duration]))[0]) / measured if measured > 0 else None,
        time_in_system=float(m.response_time.mean()) if len(m) else 0.0,
        missing=missing,
    )


def _busy_time(start: np.ndarray, end: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Request-seconds in flight within each [edges[k], edges[k+1]): the integral of
    the number in flight, Σᵢ |[startᵢ, endᵢ) ∩ [a, b)|, from its running sum
    I(x) = Σ_{startᵢ<x} (x − startᵢ) − Σ_{endᵢ<x} (x − endᵢ)."""
    s, e = np.sort(start), np.sort(end)
    cs, ce = np.concatenate([[0.0], np.cumsum(s)]), np.concatenate([[0.0], np.cumsum(e)])
    ks, ke = np.searchsorted(s, edges), np.searchsorted(e, edges)
    integral = ks * edges - cs[ks] - (ke * edges - ce[ke])
    return np.diff(integral)


def from_windows(f: Figures, tool: str, results: str | Path, window: float, window_start: np.ndarray, columns: dict[str, np.ndarray]) -> Trace:
    """A trace from distributions only: the summary's figures and per-window series
    (no request records: the tool kept none)."""
    return Trace(summary(tool, results, window, f), client_series(np.asarray(window_start, float), columns), None)
