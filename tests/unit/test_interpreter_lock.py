"""The interpreter lock as a model mechanism (issue 41 item 3): a tier's
`interpreter_lock` lets one CPU step compute at a time, hands the lock over every
`switch_interval` while others wait, each change of holder costing `handoff`. Checked
against closed forms on a saturated closed system; its absence changes nothing
(benchmarks/result_digest.py, before and after)."""

from __future__ import annotations

import math

import pytest

import tierlab
from tierlab.errors import ModelError

WORK = 0.012  # seconds of CPU per request
CLIENTS = 4  # always at least two at the CPU: the lock is always contended


def _saturated(lock: dict | None, cores: int = 2) -> tierlab.LoadedModel:
    """CLIENTS endless sessions, no think time, each request one constant CPU step."""
    tier: dict = {"stations": {"cpu": {"kind": "cpu", "cores": cores}}}
    if lock is not None:
        tier["interpreter_lock"] = lock
    return tierlab.load_model(
        {
            "run": {"duration": 300, "warmup": 10, "records": False, "seed": 1},
            "tiers": {"app": tier},
            "requests": {"job": {"app": [{"cpu": {"constant": WORK}}]}},
            "workload": {"population": {"clients": CLIENTS}, "think": 0.0, "chain": {"matrix": {"job": {"job": 1}}, "start": "job"}},
        }
    )


def test_the_lock_holds_two_cores_to_one():
    free = tierlab.simulate(_saturated(None)).summary["throughput"]
    locked = tierlab.simulate(_saturated({"switch_interval": 1.0})).summary["throughput"]
    assert free == pytest.approx(2 / WORK, rel=0.01)
    assert locked == pytest.approx(1 / WORK, rel=0.01)


@pytest.mark.parametrize("switch, handoff", [(0.005, 0.001), (0.004, 0.0005), (0.1, 0.002)])
def test_saturated_throughput_is_one_over_work_plus_its_handoffs(switch, handoff):
    # Always contended: a request runs ceil(WORK / switch) quanta, and every quantum ends
    # in a change of holder (a forced switch, or its end with others waiting), each
    # costing `handoff` with no one computing: X = 1 / (WORK + ceil(WORK/switch)·handoff).
    quanta = math.ceil(WORK / switch - 1e-9)
    seen = tierlab.simulate(_saturated({"switch_interval": switch, "handoff": handoff})).summary["throughput"]
    assert seen == pytest.approx(1 / (WORK + quanta * handoff), rel=0.005)


def test_a_lock_is_checked_where_it_is_written():
    with pytest.raises(ModelError, match="interpreter_lock.switch_interval"):
        _saturated({"switch_interval": 0.0})
    with pytest.raises(ModelError, match="interpreter_lock.handoff"):
        _saturated({"switch_interval": 0.005, "handoff": -1.0})
