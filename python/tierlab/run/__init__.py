"""Executing a model: one simulation, a sweep of many, and the interrupt both share
with live runs."""

from .interrupt import RunInterrupted
from .simulate import simulate
from .sweep import Run, Sweep, sweep

__all__ = ["Run", "RunInterrupted", "Sweep", "simulate", "sweep"]
