"""Traces from the Rust core's output (`_core.simulate`, `_core.generate_load`): the
typed summary as JSON text, the series as a windows × series matrix with one label
per series, the records as columns. The tables stay the core's arrays until read."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from .columns import Columns, Labels
from .folder import Trace
from .schema import check_summary

if TYPE_CHECKING:
    from .._core import Output


def timeseries_columns(window_start: np.ndarray, values: np.ndarray, tier: list, server: list, resource: list, metric: list) -> Columns:
    """Long format from a windows × series matrix plus per-series labels."""

    def build() -> dict:
        w, s = values.shape

        def labels(names: list) -> Labels:
            cats = list(dict.fromkeys(names))
            codes = np.array([cats.index(x) for x in names], dtype=np.int32)
            return Labels(np.tile(codes, w), cats)

        return {
            "t": np.repeat(window_start, s),
            "tier": labels(tier),
            "server": np.tile(np.asarray(server, dtype=np.int32), w),
            "resource": labels(resource),
            "metric": labels(metric),
            "value": values.ravel(),
        }

    return Columns(build)


def from_core(out: Output, model: str) -> Trace:
    """The trace of a run of the Rust core; `model` is the model's name."""
    summary = json.loads(out["summary"])
    summary["model"] = model
    check_summary(summary, "the core's summary")
    s = out["series"]
    requests = None
    if out["records"] is not None:
        records = out["records"]

        def build() -> dict:
            r = dict(records)
            start, end = r.pop("start"), r.pop("end")
            front = {
                "id": r.pop("id"),
                "session": r.pop("session"),
                "type": Labels(r.pop("type").astype(np.int32), out["type_names"]),
                "status": Labels(r.pop("status").astype(np.int8), out["status_names"]),
                "start": start,
                "end": end,
                "response_time": end - start,
                "retransmissions": r.pop("retransmissions"),
            }
            return {**front, **r}

        requests = Columns(build)
    return Trace(summary, timeseries_columns(s["window_start"], s["values"], s["tier"], s["server"], s["resource"], s["metric"]), requests)
