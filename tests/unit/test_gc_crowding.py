"""GC pauses that grow with the square of the requests in progress (`per_request_squared`):
Wang et al.'s C-JDBC, whose collections lengthen faster than its concurrency as it
saturates (their Table 3)."""

from __future__ import annotations

import pytest

from conftest import run


def _closed(clients: int, gc: dict) -> dict:
    """`clients` sessions with no think time at one single-core tier: always `clients`
    requests in progress there, so every collection sees the same concurrency (the
    demands exponential: constant ones would end together, and the collection triggered
    by the last of them would see the others gone)."""
    return {
        "name": "gc-crowding",
        "run": {"duration": 2_000, "warmup": 100, "seed": 3, "records": False},
        "tiers": {"app": {"gc": {"heap": 100, "allocation": 500, **gc}, "stations": {"cpu": {"kind": "cpu", "cores": 1}}}},
        "requests": {"job": {"app": [{"cpu": {"exponential": 0.01}}]}},
        "workload": {"population": {"clients": clients}, "chain": {"matrix": {"job": {"job": 1}}, "start": "job"}},
    }


@pytest.mark.parametrize("clients", [1, 3, 8])
def test_each_pause_is_the_polynomial_of_the_requests_in_progress(clients):
    p, q1, q2 = 0.02, 0.003, 0.0005
    gc = run(_closed(clients, {"pause": p, "per_request": q1, "per_request_squared": q2})).summary["tiers"]["app"]["servers"][0]["gc"]
    assert gc["pauses"] > 50
    assert gc["pause_time"] / gc["pauses"] == pytest.approx(p + q1 * clients + q2 * clients**2, rel=1e-9)


def test_without_the_squared_term_pauses_are_as_before():
    gc = run(_closed(3, {"pause": 0.02, "per_request": 0.003})).summary["tiers"]["app"]["servers"][0]["gc"]
    assert gc["pause_time"] / gc["pauses"] == pytest.approx(0.02 + 0.003 * 3, rel=1e-9)
