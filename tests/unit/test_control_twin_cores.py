"""The twin's CPU re-calibration reads the observation's CPU share as a share of the cores
it was measured over (docs/control.md, twin, step 1): live the machine's, simulated the
controlled tier's station's. A share of twice the cores is twice the work."""

from __future__ import annotations

import pytest

import tierlab
from tierlab.model.spec import Twin
from tierlab.run.twin import TwinController, observed

from conftest import single_request_sessions

BOUNDS = {"threads": (2, 16), "connections": (1, 8)}


def two_tier() -> dict:
    """100 requests/s, 4 ms of the app's one core on a thread, then 8 ms of a 4-core
    database on a connection."""
    app = {"pools": {"threads": {"kind": "threads", "size": 4}, "db": {"kind": "connections", "size": 2}}, "stations": {"cpu": {"kind": "cpu", "cores": 1}}}
    db = {"stations": {"cpu": {"kind": "cpu", "cores": 4}}}
    program = {
        "app": [{"acquire": "threads"}, {"cpu": {"exponential": 0.004}}, {"use": {"pool": "db", "steps": [{"call": "db"}]}}, {"release": "threads"}],
        "db": [{"cpu": {"exponential": 0.008}}],
    }
    return single_request_sessions(100.0, {"app": app, "db": db}, program, duration=60, warmup=0, window=1.0, seed=3, records=False)


@pytest.fixture(scope="module")
def interval() -> dict:
    """A minute of the twin itself at its sizes, as one observation (its CPU a share of
    its one core)."""
    o = observed(tierlab.simulate(two_tier()).summary, "app", {"threads": "threads", "connections": "db"})
    assert o["cpu"] is not None and 0.3 < o["cpu"] < 0.5
    return o


def tier_scale(interval: dict, cores: int | None, share: float) -> float:
    c = TwinController(tierlab.load_model(two_tier()), Twin(slo_p99=0.2, horizon=10), BOUNDS, "app", cores)
    c.decide(interval | {"cpu": interval["cpu"] * share})
    return c.scale["tier"]


def test_a_share_of_more_cores_is_more_work(interval: dict):
    own = tier_scale(interval, None, 1.0)
    assert own == pytest.approx(1.0, abs=0.1)  # the twin observing itself
    # The same work measured over 4 cores reads as a quarter of the share.
    assert tier_scale(interval, 4, 0.25) == pytest.approx(own, rel=1e-9)
    assert tier_scale(interval, 1, 1.0) == own
    # Read as a share of 4 cores, the same share is 4 times the work: one interval moves
    # the scale from 1 by its cap (×2) to the smoothing's power (0.5).
    assert tier_scale(interval, 4, 1.0) == pytest.approx(2**0.5, rel=1e-12)
