"""Simulate a model with the Rust engine and return its trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from . import _core
from .model import LoadedModel, load_model
from .trace import Trace, from_core


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
    trace = from_core(out, loaded.spec.name, loaded.spec.run.window, "simulation")
    if out["stopped_by"] is not None:
        if isinstance(out["stopped_by"], KeyboardInterrupt):
            raise SimulationInterrupted(trace) from out["stopped_by"]
        raise out["stopped_by"]
    return trace
