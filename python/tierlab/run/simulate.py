"""Simulate a model with the Rust engine and return its trace."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from .. import _core
from ..model import LoadedModel, load_model
from ..trace import Trace
from ..trace.core import from_core
from .engine import run_engine
from .interrupt import raise_if_stopped
from .twin import TwinController


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
    # The public entry point: the one below the CLI that takes a path (parsed here, once).
    loaded = load_model(model).with_run(seed=seed, duration=duration, warmup=warmup, records=records)
    engine = loaded.engine()
    out = run_engine(_engine(loaded), engine, progress, loaded.source)
    trace = from_core(out, loaded.spec.name)
    raise_if_stopped(out, trace)
    return trace


def _engine(loaded: LoadedModel) -> Callable:
    """`_core.simulate`, handed the model's controller where its strategy is decided in
    Python (twin: built here from the model's `control:`, and called by the engine at
    each interval)."""
    c = loaded.spec.control
    if c is None or c.strategy != "twin":
        return _core.simulate
    return functools.partial(_core.simulate, controller=TwinController.of_model(loaded))
