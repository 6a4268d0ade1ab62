"""tierlab: find and fix the soft-resource bottlenecks of multi-tier web applications."""

from .errors import InputError, ModelError, TraceError
from .model import LoadedModel, ModelWarning, load_model
from .sim import SimulationInterrupted, simulate
from .trace import PHASES, Trace, read_trace

__all__ = [
    "InputError",
    "LoadedModel",
    "PHASES",
    "ModelError",
    "ModelWarning",
    "SimulationInterrupted",
    "Trace",
    "TraceError",
    "load_model",
    "read_trace",
    "simulate",
]
