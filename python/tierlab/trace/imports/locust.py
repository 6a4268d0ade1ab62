"""Locust results (`locust --headless --csv PREFIX [--csv-full-history]`): Locust
writes aggregates, never one line per request. PREFIX_stats.csv holds, per request
name, the counts, the mean, the percentiles 50 … 99.9 and the max (ms; Locust rounds
response times above 100 ms to two significant digits, and its percentiles include
the failed requests); PREFIX_stats_history.csv, when present, a line per second with
running totals, from which the per-second completions, failures and mean response
time follow; PREFIX_failures.csv the failures by error text (an HTTP error names its
code). Not exported at all: each request's time, its own response time and its
status code — so an imported Locust run has no request records (no bimodality test,
no 100 ms series) and no concurrency or arrivals series."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import InputError
from ..folder import Trace
from .client import Figures, failure, from_windows, type_figures
from .timeline import MAX_COUNT, check_span

# Locust's percentile columns for the summary's.
COLUMNS = {"p50": "50%", "p90": "90%", "p95": "95%", "p98": "98%", "p99": "99%", "p99.9": "99.9%", "max": "100%"}
STATS = ("Name", "Request Count", "Failure Count", "Average Response Time", "Requests/s", *COLUMNS.values())
HISTORY = ("Timestamp", "Name", "Total Request Count", "Total Failure Count", "Total Average Response Time")
HTTP_CODE = re.compile(r"\b([1-5]\d\d) (?:Client|Server) Error")
AGGREGATED = "Aggregated"


def read(prefix: str | Path, warmup: float = 0.0) -> Trace:
    prefix = str(prefix)
    stats_path = Path(f"{prefix}_stats.csv")
    if not stats_path.is_file():
        raise InputError(f"{stats_path} not found; give the prefix Locust was run with (`locust --headless --csv PREFIX`)")
    stats = _table(stats_path, STATS)
    per_name = stats[stats.Name != AGGREGATED]
    total = stats[stats.Name == AGGREGATED]
    if total.empty:
        raise InputError(f"{stats_path}: no {AGGREGATED} line; it is not a Locust stats file")
    total = total.iloc[0]
    kinds = _failures(Path(f"{prefix}_failures.csv"))
    history_path = Path(f"{prefix}_stats_history.csv")
    window_start, columns = np.zeros(0), {"completions": np.zeros(0), "errors": np.zeros(0), "response_time": np.zeros(0)}
    if total["Requests/s"] <= 0:
        raise InputError(f"{stats_path}: Requests/s of the {AGGREGATED} line is 0; the run recorded nothing")
    duration = total["Request Count"] / total["Requests/s"]
    if history_path.is_file():
        window_start, columns = _history(history_path)
        duration = max(duration, float(window_start[-1] + 1) if len(window_start) else 0.0)
    measured = duration - warmup
    types = {}
    counts_all: dict[str, int] = {}
    errors: dict[str, int] = {}
    for _, row in per_name.iterrows():
        counts = {"ok": int(row["Request Count"] - row["Failure Count"])}
        for (status, kind), n in kinds.get(row["Name"], {}).items():
            counts[status] = counts.get(status, 0) + n
            errors[kind] = errors.get(kind, 0) + n
        unexplained = int(row["Failure Count"]) - sum(n for k, n in counts.items() if k != "ok")
        if unexplained > 0:  # failures without a line in failures.csv
            counts["error"] = counts.get("error", 0) + unexplained
            errors["protocol"] = errors.get("protocol", 0) + unexplained
        for k, n in counts.items():
            counts_all[k] = counts_all.get(k, 0) + n
        types[str(row["Name"])] = type_figures(counts, _percentiles(row), measured)
    f = Figures(
        counts=counts_all,
        response_time=_percentiles(total),
        types=types,
        errors=errors,
        duration=duration,
        warmup=warmup,
        missing={
            "requests": "Locust exports no per-request records",
            "response_time": "Locust's percentiles include failed requests and are rounded to 2 significant digits above 100 ms",
            "series": "Locust's history is per second, without arrivals or concurrency"
            if history_path.is_file()
            else "no PREFIX_stats_history.csv (--csv-full-history)",
        },
    )
    return from_windows(f, "locust", stats_path, 1.0, window_start, columns)


def _table(path: Path, numeric: tuple[str, ...], text: tuple[str, ...] = ("Name",)) -> pd.DataFrame:
    """The CSV with `numeric` columns as numbers (Locust writes N/A where nothing was
    measured: 0 here); a missing column or a value that is no number names its line."""
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise InputError(f"{path} is empty; it is not a Locust CSV file") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not a regular CSV table ({e})") from None
    lacking = [c for c in numeric + text if c not in df.columns]
    if lacking:
        raise InputError(f"{path} line 1: no column(s) {', '.join(lacking)}; it is not what this Locust version writes with --csv")
    for c in numeric:
        if c in text:
            continue
        raw = df[c].replace("N/A", "0")
        values = pd.to_numeric(raw, errors="coerce")
        bad = values.isna() | ~np.isfinite(values) | (values < 0) | (values >= MAX_COUNT)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(f"{path} line {i + 2}: {c} = {df[c].iloc[i]!r}; it must be a non-negative number below {MAX_COUNT:.3g}")
        df[c] = values.astype(float)
    return df


def _percentiles(row: pd.Series) -> dict[str, float] | None:
    if row["Request Count"] == 0:
        return None
    return {"mean": row["Average Response Time"] / 1000, **{k: row[c] / 1000 for k, c in COLUMNS.items()}}


def _failures(path: Path) -> dict[str, dict[tuple[str, str], int]]:
    """Failures per request name, by (status, failure kind), from the error texts."""
    if not path.is_file():
        return {}
    df = _table(path, ("Occurrences",), ("Name", "Error"))
    out: dict[str, dict[tuple[str, str], int]] = {}
    for _, row in df.iterrows():
        code = HTTP_CODE.search(row["Error"])
        key = failure(code.group(1)) if code else failure("", row["Error"])
        by = out.setdefault(row["Name"], {})
        by[key] = by.get(key, 0) + int(row["Occurrences"])
    return out


def _history(path: Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Per-second completions, failures and mean response time from the running
    totals of the Aggregated lines (the last line of each second)."""
    df = _table(path, HISTORY[2:] + ("Timestamp",))
    lines = df[df.Name == AGGREGATED]
    if len(lines):
        stamps = lines["Timestamp"].to_numpy(float)
        check_span(path, 1.0, stamps, stamps + 1, lines.index.to_numpy() + 2, "history line", option=False)
    agg = lines.groupby("Timestamp").last().sort_index()
    if agg.empty:
        return np.zeros(0), {"completions": np.zeros(0), "errors": np.zeros(0), "response_time": np.zeros(0)}
    t = agg.index.to_numpy(float)
    count = agg["Total Request Count"].to_numpy()
    rt_sum = count * agg["Total Average Response Time"].to_numpy() / 1000
    done = np.diff(count, prepend=0.0)
    rt = np.divide(np.diff(rt_sum, prepend=0.0), done, out=np.full(len(done), np.nan), where=done > 0)
    return t - t[0], {"completions": done, "errors": np.diff(agg["Total Failure Count"].to_numpy(), prepend=0.0), "response_time": np.clip(rt, 0, None)}
