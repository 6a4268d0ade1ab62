"""The trace's phase columns map onto Totok & Karamcheti's p and q exactly: p is the
time with a thread before the first connection request and holds no wait for a
connection; q is the time holding the connection."""

from __future__ import annotations

import pytest

from tierlab.analysis.profile import request_profile

from conftest import run, single_request_sessions

P, Q, RATE = 0.05, 0.1, 8.0


def _one_connection_model() -> dict:
    """Work of P seconds with a thread, then Q seconds with the one connection: the
    connection is an M/D/1 queue at ρ = RATE · Q = 0.8."""
    app = {"pools": {"threads": {"kind": "threads", "size": 50}, "db": {"kind": "connections", "size": 1}}}
    program = [{"acquire": "threads"}, {"delay": P}, {"acquire": "db"}, {"delay": Q}, {"release": "db"}, {"release": "threads"}]
    return single_request_sessions(RATE, {"app": app}, {"app": program}, duration=20_000, records=True)


def test_p_and_q_are_the_held_times_and_the_wait_is_apart():
    phases = request_profile(run(_one_connection_model())).phases.loc["job"]
    rho = RATE * Q
    # Every request spends exactly P before asking for the connection and Q with it.
    assert phases["p"] == pytest.approx(P, rel=1e-6)
    assert phases["q_active"] == pytest.approx(Q, rel=1e-6) and phases["q_idle"] == 0
    assert phases["db_requests"] == 1
    # The wait for the connection is M/D/1's: Wq = ρQ / (2(1 − ρ)) = 0.2 s.
    assert phases["wait_db"] == pytest.approx(rho * Q / (2 * (1 - rho)), rel=0.05)
    assert phases["response_time"] == pytest.approx(phases["wait_thread"] + P + phases["wait_db"] + Q, rel=1e-6)


@pytest.mark.parametrize("caching", ["transaction", "request"])
def test_acquisition_cost_is_paid_per_acquisition_and_counted_as_the_wait(caching):
    """Ten uses of a connection, each after C seconds of the pool's own CPU work when a
    connection is taken (getConnection/close): transaction-wide caching takes ten,
    request-wide one. Everything runs on one processor-sharing CPU with Poisson arrivals,
    so (BCMP) a request's mean time is its total demand D / (1 − λD), and the cost's
    share of it is the cost's share of D — counted as waiting for the connection."""
    uses, work, cost, rate = 10, 0.001, 0.002, 20.0
    app = {
        "pools": {"db": {"kind": "connections", "size": 100, "caching": caching, "acquire_cpu": {"exponential": cost}}},
        "stations": {"cpu": {"kind": "cpu"}},
    }
    program = [{"loop": {"count": uses, "steps": [{"use": {"pool": "db", "steps": [{"cpu": {"exponential": work}}]}}]}}]
    t = run(single_request_sessions(rate, {"app": app}, {"app": program}, duration=20_000, records=True))
    acquisitions = uses if caching == "transaction" else 1
    demand = uses * work + acquisitions * cost
    slowdown = 1 / (1 - rate * demand)
    assert t.summary["response_time"]["mean"] == pytest.approx(demand * slowdown, rel=0.04)
    phases = request_profile(t).phases.loc["job"]
    assert phases["db_requests"] == acquisitions
    assert phases["wait_db"] == pytest.approx(acquisitions * cost * slowdown, rel=0.05)
    assert phases["q_active"] == pytest.approx(uses * work * slowdown, rel=0.05)
