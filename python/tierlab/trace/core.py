"""Traces from the Rust core's output (`_core.simulate`, `_core.generate_load`): the
typed summary as JSON text, the series as a windows × series matrix with one label
per series, the records as columns."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .folder import Trace
from .schema import check_summary

if TYPE_CHECKING:
    from .._core import Output


def timeseries_frame(window_start: np.ndarray, values: np.ndarray, tier: list, server: list, resource: list, metric: list) -> pd.DataFrame:
    """Long format from a windows × series matrix plus per-series labels."""
    w, s = values.shape

    def cat(labels: list) -> pd.Categorical:
        cats = list(dict.fromkeys(labels))
        codes = np.array([cats.index(x) for x in labels], dtype=np.int32)
        return pd.Categorical.from_codes(np.tile(codes, w), cats)

    return pd.DataFrame(
        {
            "t": np.repeat(window_start, s),
            "tier": cat(tier),
            "server": np.tile(np.asarray(server, dtype=np.int32), w),
            "resource": cat(resource),
            "metric": cat(metric),
            "value": values.ravel(),
        }
    )


def from_core(out: Output, model: str) -> Trace:
    """The trace of a run of the Rust core; `model` is the model's name."""
    summary = json.loads(out["summary"])
    summary["model"] = model
    check_summary(summary, "the core's summary")
    s = out["series"]
    requests = None
    if out["records"] is not None:
        r = dict(out["records"])
        front = {
            "id": r.pop("id"),
            "session": r.pop("session"),
            "type": pd.Categorical.from_codes(r.pop("type").astype(np.int32), out["type_names"]),
            "status": pd.Categorical.from_codes(r.pop("status").astype(np.int8), out["status_names"]),
            "start": r.pop("start"),
            "end": r.pop("end"),
        }
        front["response_time"] = front["end"] - front["start"]
        front["retransmissions"] = r.pop("retransmissions")
        # The columns are the engine's own arrays, used by nothing else: no copy (a copy
        # into pandas' consolidated blocks doubled the records' peak memory).
        requests = pd.DataFrame({**front, **r}, copy=False)
    return Trace(summary, lambda: timeseries_frame(s["window_start"], s["values"], s["tier"], s["server"], s["resource"], s["metric"]), requests)
