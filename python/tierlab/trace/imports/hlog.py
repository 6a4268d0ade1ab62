"""HdrHistogram interval logs (`.hlog`, as wrk2 --latency logs, HdrHistogram's
HistogramLogWriter and others write them): one compressed histogram of response times
per interval, optionally tagged. Distributions only: the tag (if any) is the request
type, every value a completed request's latency in `unit` seconds (wrk2 and most tools
record microseconds; Java's HdrHistogram users often nanoseconds), and failures are not
in the log at all."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hdrh.histogram import HdrHistogram

from ...errors import InputError
from ..folder import Trace
from .client import PERCENTILES, Figures, from_windows, type_figures
from .timeline import check_span

UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
UNTAGGED = "request"


def read(path: str | Path, unit: str = "us", warmup: float = 0.0) -> Trace:
    path = Path(path)
    if unit not in UNITS:
        raise InputError(f"unknown unit {unit!r}; one of {', '.join(UNITS)}")
    scale = UNITS[unit]
    intervals = _intervals(path)
    if not intervals:
        raise InputError(f"{path}: no interval histograms (lines `start,length,max,HISTFAA…`)")
    starts, lengths, lines = (np.array([iv[k] for iv in intervals], float) for k in (0, 1, 4))
    t0 = float(starts.min())
    window = float(np.median(lengths))
    if window <= 0:
        raise InputError(f"{path}: the intervals have no length")
    check_span(path, window, starts, starts + lengths, lines, "interval", option=False)
    duration = float((starts + lengths).max()) - t0
    # Sums of histograms need room for any interval's values.
    top = max(iv[3].highest_trackable_value for iv in intervals)
    by_window: dict[int, list[HdrHistogram]] = {}
    by_tag: dict[str, HdrHistogram] = {}
    for start, _, tag, h, _ in intervals:
        if start - t0 >= warmup:
            merged = by_tag.setdefault(tag, HdrHistogram(1, top, 3))
            merged.add(h)
        by_window.setdefault(int((start - t0) / window + 1e-9), []).append(h)
    n = max(by_window) + 1
    done = np.zeros(n)
    rt = np.full(n, np.nan)
    for k, hs in by_window.items():
        done[k] = sum(h.get_total_count() for h in hs)
        if done[k]:
            rt[k] = sum(h.get_mean_value() * h.get_total_count() for h in hs) / done[k] * scale
    measured = duration - warmup
    total = HdrHistogram(1, top, 3)
    for h in by_tag.values():
        total.add(h)
    f = Figures(
        counts={"ok": total.get_total_count()},
        response_time=_figures(total, scale),
        types={tag: type_figures({"ok": h.get_total_count()}, _figures(h, scale), measured) for tag, h in by_tag.items()},
        errors={},
        duration=duration,
        warmup=warmup,
        missing={
            "requests": "an HdrHistogram log holds distributions only: no per-request records",
            "failures": "an HdrHistogram log holds the latencies of completed requests: failures are not in it",
        },
    )
    return from_windows(f, "hlog", path, window, np.arange(n) * window, {"completions": done, "response_time": rt})


def _figures(h: HdrHistogram, scale: float) -> dict[str, float] | None:
    if h.get_total_count() == 0:
        return None
    return {"mean": h.get_mean_value() * scale, **{k: h.get_value_at_percentile(q) * scale for k, q in PERCENTILES.items()}, "max": h.get_max_value() * scale}


def _intervals(path: Path) -> list[tuple[float, float, str, HdrHistogram, int]]:
    """(start, length, tag, histogram, line number) of every interval line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not a text (UTF-8) file: byte {e.start} cannot be decoded") from None
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    out = []
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#") or line.startswith('"StartTimestamp"'):
            continue
        tag = UNTAGGED
        if line.startswith("Tag="):
            tag, _, line = line[4:].partition(",")
        fields = line.split(",")
        if len(fields) != 4:
            raise InputError(f"{path} line {number}: expected `[Tag=T,]start,length,max,histogram` (4 fields after the tag), got {len(fields)}")
        try:
            start, length = float(fields[0]), float(fields[1])
        except ValueError:
            raise InputError(f"{path} line {number}: start and length must be numbers (seconds), got {fields[0]!r}, {fields[1]!r}") from None
        try:
            h = HdrHistogram.decode(fields[3].encode())
        except Exception as e:  # noqa: BLE001 — the decoder raises several kinds for a damaged payload
            raise InputError(f"{path} line {number}: the histogram does not decode ({type(e).__name__}: {e})") from None
        if h is None or not 0 <= start < float("inf") or not 0 <= length < float("inf"):
            raise InputError(f"{path} line {number}: not a valid interval histogram (start and length finite seconds, not negative)")
        out.append((start, length, tag, h, number))
    return out
