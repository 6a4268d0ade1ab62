"""tierlab: find and fix the soft-resource bottlenecks of multi-tier web applications.

The package's folders are its layers, each using only those before it: `model` (the
system, validated and compiled) → `trace` (the one schema every run writes) → `run`
(simulate, sweep) → `live` (the same model on a real server) → `analysis` (what a
trace says) → `experiments` (many runs and their analyses) → `report` → `cli`."""

from .errors import EngineError, InputError, ModelError, TraceError
from .model import LoadedModel, ModelWarning, load_model
from .run import RunInterrupted, simulate
from .trace import PHASES, Trace, read_trace

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
