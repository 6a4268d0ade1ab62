"""Simulate a model with the Rust engine and return its trace."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path

from .. import _core
from ..errors import EngineError, ModelError
from ..model import LoadedModel, load_model
from ..trace import Trace
from ..trace.core import from_core
from .interrupt import raise_if_stopped

# The engine's own check names the model field it refuses: `engine model: PATH: why`.
_ENGINE_REFUSAL = re.compile(r"engine model: (?:([\w\-.\[\]]+): )?(.*)", re.S)


def run_engine(call: Callable, engine: dict, progress: Callable | None, source: str | None):
    """`call` (a `_core` entry point) on the engine input, its refusals as ModelError
    naming the field and its panics as EngineError."""
    try:
        return call(json.dumps(engine, allow_nan=False), progress)
    except ValueError as e:
        found = _ENGINE_REFUSAL.match(str(e))
        path, why = found.groups() if found else (None, str(e))
        raise ModelError([(path or "", f"the engine refuses it: {why}")], source) from None
    except RuntimeError as e:  # the bindings' catch_unwind
        raise EngineError(str(e)) from None
    except BaseException as e:
        # A panic outside catch_unwind: PyO3's PanicException, a BaseException that
        # cannot be imported by name.
        if type(e).__name__ != "PanicException":
            raise
        raise EngineError(f"the engine failed (a bug in tierlab, please report it): {e}") from None


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
    # The experiments layer sits above this one: imported only for a model that asks for it.
    from ..experiments.control.twin import TwinController

    return functools.partial(_core.simulate, controller=TwinController.of_model(loaded))
