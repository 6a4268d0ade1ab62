"""The RUBiS example (examples/rubis_auction.yaml): the auction site's default bidding
mix walks the shipped matrix to every page class and ends sessions, and the database
disk is as busy as the demands say."""

from __future__ import annotations

import pytest

import tierlab

from conftest import EXAMPLES, check_little

# Calls to the database per request and disk operations per call, by class (the model).
DB_CALLS = {"browse": 1, "view": 4, "authenticated": 3, "search": 3, "store": 2, "form": 0}
DISK_OPS = {"search": 2, "store": 2}
IOPS, HIT_RATIO = 500, 0.95


@pytest.fixture(scope="module")
def rubis():
    model = tierlab.load_model(EXAMPLES / "rubis_auction.yaml").with_run(duration=360, warmup=60)
    return model, tierlab.simulate(model)


def test_every_page_class_is_served(rubis):
    _, trace = rubis
    check_little(trace)
    s = trace.summary
    assert s["requests"]["ok"] > 30_000 and s["requests"]["rejected"] == s["requests"]["error"] == 0
    assert set(s["types"]) == set(DB_CALLS)
    assert s["sessions"]["completed"] > 0  # the chain's END_OF_SESSION ends sessions


def test_the_disk_is_as_busy_as_the_demands_say(rubis):
    """Utilization = Σ throughput × calls × disk operations × miss ratio / IOPS
    (the utilization law); ~18,000 disk services, so within 5%."""
    _, trace = rubis
    s = trace.summary
    expected = sum(t["throughput"] * DB_CALLS[name] * DISK_OPS.get(name, 1) * (1 - HIT_RATIO) / IOPS for name, t in s["types"].items())
    assert s["tiers"]["db"]["servers"][0]["stations"]["disk"]["utilization"] == pytest.approx(expected, rel=0.05)
