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


def chain_mix(loaded) -> dict[str, float]:
    """The request mix of a loaded model's chain: its stationary distribution for
    sessions that never end by the chain (tierlab.model.chain.visit_mix)."""
    from tierlab.model.chain import read_chain, visit_mix

    spec = loaded.spec.workload.chain
    data, problems = read_chain(spec, loaded.base_dir)
    assert not problems
    roles = ["entry" if s == spec.start else "page" for s in data.states]
    return visit_mix(data, data.index(spec.start), roles)[0]


def mix_distance(seen, expected: dict[str, float]) -> float:
    """Total-variation distance between an observed type column and a mix."""
    share = seen.value_counts(normalize=True)
    return 0.5 * sum(abs(share.get(t, 0.0) - p) for t, p in expected.items())
