"""Executing a model: one simulation, a sweep of many, and the interrupt both share
with live runs."""

from .interrupt import RunInterrupted
from .simulate import simulate
from .sweep import Run, sweep

__all__ = ["Run", "RunInterrupted", "simulate", "sweep"]
