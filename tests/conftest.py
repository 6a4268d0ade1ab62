"""Shared helpers: small models built in code, and Little's law checked on every run."""

from __future__ import annotations

from pathlib import Path

import pytest

import tierlab

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def single_request_sessions(rate: float, tiers: dict, program: dict, **run) -> dict:
    """An open model where every session is one request: Poisson request arrivals."""
    return {
        "name": "test",
        "run": {"duration": 50_000, "warmup": 500, "seed": 11, "records": False, **run},
        "tiers": tiers,
        "requests": {"job": program},
        "workload": {"population": {"session_rate": rate}, "chain": {"matrix": {"job": {"END_OF_SESSION": 1}}, "start": "job"}},
    }


def check_little(trace: tierlab.Trace, rel: float = 0.02) -> None:
    """L = λW over the measured period (requests in system, all statuses)."""
    lt = trace.summary["little"]
    assert lt["mean_in_system"] == pytest.approx(lt["arrival_rate"] * lt["mean_time_in_system"], rel=rel)


def run(model: dict, **kw) -> tierlab.Trace:
    trace = tierlab.simulate(model, **kw)
    check_little(trace)
    return trace
