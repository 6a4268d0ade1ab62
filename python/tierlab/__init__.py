"""tierlab: find and fix the soft-resource bottlenecks of multi-tier web applications.

The package's folders are its layers, each using only those before it: `model` (the
system, validated and compiled) → `trace` (the one schema every run writes) → `run`
(simulate, sweep) → `live` (the same model on a real server) → `analysis` (what a
trace says) → `experiments` (many runs and their analyses) → `report` → `cli`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports
from .errors import EngineError, InputError, ModelError, ModelWarning, TraceError

if TYPE_CHECKING:
    from .model import LoadedModel, load_model
    from .run.interrupt import RunInterrupted
    from .run.simulate import simulate
    from .trace import PHASES, Trace, read_trace

# The rest of the public API is imported on first use, so that `import tierlab` stays
# cheap: the model pulls in pydantic and numpy, traces pandas.
__getattr__ = lazy_exports(
    __name__,
    {
        "LoadedModel": "model",
        "load_model": "model",
        "RunInterrupted": "run",
        "simulate": "run",
        "PHASES": "trace",
        "Trace": "trace",
        "read_trace": "trace",
    },
)

__all__ = [
    "EngineError",
    "InputError",
    "LoadedModel",
    "PHASES",
    "ModelError",
    "ModelWarning",
    "RunInterrupted",
    "Trace",
    "TraceError",
    "load_model",
    "read_trace",
    "simulate",
]
