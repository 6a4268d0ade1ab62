"""Simulate a model with the Rust engine and return its trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from . import _core
from .model import LoadedModel, load_model
from .trace import SCHEMA_VERSION, Trace, timeseries_frame


class SimulationInterrupted(KeyboardInterrupt):
    """Ctrl-C (or an exception from the progress callback) stopped the run; `.result`
    holds what was measured up to that point."""

    def __init__(self, result: Trace):
        super().__init__("simulation interrupted")
        self.result = result


def simulate(
    model: "str | Path | dict | LoadedModel",
    *,
    seed: int | None = None,
    duration: float | None = None,
    warmup: float | None = None,
    records: bool | None = None,
    progress: Callable[[float], None] | None = None,
) -> Trace:
    """Run the model (a YAML path, a mapping or a loaded model); keyword arguments
    override its `run` section. `progress(fraction)` is called about every 0.1 s."""
    loaded = load_model(model).with_run(seed=seed, duration=duration, warmup=warmup, records=records)
    engine = loaded.engine()
    out = _core.simulate(json.dumps(engine), progress)
    trace = _to_trace(out, loaded)
    if out["stopped_by"] is not None:
        if isinstance(out["stopped_by"], KeyboardInterrupt):
            raise SimulationInterrupted(trace) from out["stopped_by"]
        raise out["stopped_by"]
    return trace


def _to_trace(out: dict, loaded: LoadedModel) -> Trace:
    summary = json.loads(out["summary"])
    summary.update(model=loaded.spec.name, window=loaded.spec.run.window, schema_version=SCHEMA_VERSION, source="simulation")
    s = out["series"]
    ts = timeseries_frame(s["window_start"], s["values"], s["tier"], s["server"], s["resource"], s["metric"])
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
        requests = pd.DataFrame({**front, **r})
    return Trace(summary, ts, requests)
