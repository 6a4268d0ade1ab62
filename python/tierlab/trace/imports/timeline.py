"""The bounds of an imported run's timeline. An import's series hold one row per
window from the first request to the last; one absurd time stamp (a k6 point dated
1900-01-01, a JMeter `timeStamp` of 12.5 ms after the epoch) stretched that over a
century, and the importer asked for 128-292 GiB. A run whose windows would exceed
MAX_WINDOWS is refused, naming the line of the request furthest from the others."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ...errors import InputError

# 10⁶ windows: a day and 3.8 hours at the default 0.1 s, 11.6 days at 1 s; the series
# then take some 160 MB. A longer run is imported with a wider --window.
MAX_WINDOWS = 1_000_000
# Integers a trace stores as uint64 (bytes received).
MAX_COUNT = 2**63


def check_span(path: str | Path, window: float, start: np.ndarray, end: np.ndarray, line: np.ndarray, what: str = "request", option: bool = True) -> None:
    """Refuse a run from min(start) to max(end) (seconds) longer than MAX_WINDOWS
    windows of `window` seconds, naming the line (`line[i]` of `what` i: a request, an
    interval) whose start or end lies furthest from the median start. `option`: the
    window is the importer's --window."""
    start, end = np.asarray(start, float), np.asarray(end, float)
    span = float(end.max() - start.min())
    if span / window <= MAX_WINDOWS:
        return
    middle = float(np.median(start))
    first, last = int(np.argmin(start)), int(np.argmax(end))
    i, verb, at = (first, "starts", start[first]) if middle - start[first] >= end[last] - middle else (last, "ends", end[last])
    raise InputError(
        f"{path} line {int(line[i])}: the {what} {verb} at {_when(at)}, {_duration(abs(at - middle))} from the median {what}'s start "
        f"({_when(middle)}); the run would span {_duration(span)}, more than {MAX_WINDOWS:,} windows of {window:g} s. "
        "Remove that line if its time is wrong" + (", or give a wider --window for a run that long" if option else "")
    )


def _when(t: float) -> str:
    """A time as a date if it is one (seconds since the epoch, years 1 to 9999), else as
    seconds (an offset from the run's start: an HdrHistogram log's)."""
    if -6.2e10 <= t <= 2.5e11 and not 0 <= t < 1e8:
        return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"{t:.6g} s"


def _duration(s: float) -> str:
    for unit, length in (("years", 365.25 * 86400), ("days", 86400.0), ("hours", 3600.0)):
        if s >= length:
            return f"{s / length:.4g} {unit}"
    return f"{s:.4g} s"
