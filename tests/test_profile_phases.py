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
