"""The engine's entry points called with an engine input: its refusals turned into
ModelErrors naming the model's field, its panics into EngineErrors. Apart from
`simulate` so that the twin controller, which simulates its twin each interval, and
`simulate`, which hands the engine that controller, both use it without importing each
other."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from ..errors import EngineError, ModelError

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
