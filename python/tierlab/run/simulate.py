"""Simulate a model with the Rust engine and return its trace."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from .. import _core
from ..model import LoadedModel, load_model
from ..trace import Trace
from ..trace.core import from_core
from .interrupt import raise_if_stopped


def simulate(
    model: str | Path | dict | LoadedModel,
    *,
    seed: int | None = None,
    duration: float | None = None,
    warmup: float | None = None,
    records: bool | None = None,
    progress: Callable[[float], None] | None = None,
) -> Trace:
    """Run the model (a YAML path, a mapping or a loaded model); keyword arguments
    override its `run` section. `progress(fraction)` is called about every 0.1 s.
    Ctrl-C raises `RunInterrupted`, whose `.result` has what was measured."""
    loaded = load_model(model).with_run(seed=seed, duration=duration, warmup=warmup, records=records)
    engine = loaded.engine()
    out = _core.simulate(json.dumps(engine), progress)
    trace = from_core(out, loaded.spec.name)
    raise_if_stopped(out, trace)
    return trace
