"""ReDAL's threshold T (Dutta et al. §II-A: a server is a candidate only while the
capacity reserved in the current slice is under T) in the simulator: a server past T
loses its sessions to the least loaded server under T; with nothing past T no session
moves; and with every server past T, ReDAL-W holds requests where ReDAL sends them."""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import run


def _three_sessions(threshold: float | None, policy: str = "redal") -> dict:
    """Three endless sessions on two app servers: round robin homes two on server 0
    (~8 requests/s there: 0.1 s of CPU and 0.1 s of think time each, sharing one core)
    and one on server 1 (~5 requests/s). T is counted per slice of d = 0.5 s. The slope
    test's interval is longer than the run, so it never judges (on 1 s intervals its
    noise moved 17 of ~4,000 requests here): T alone decides."""
    dispatch = {"policy": policy, "alpha": 0.9, "slice": 0.5, "think_time": 1.0, "interval": 1000.0, "intervals": 2}
    if threshold is not None:
        dispatch["threshold"] = threshold
    return {
        "run": {"duration": 600, "warmup": 60, "seed": 3},
        "tiers": {
            "web": {},
            "app": {
                "servers": 2,
                "dispatch": dispatch,
                "session_state": {"fetch": [{"delay": 0.001}]},
                "stations": {"cpu": {"kind": "cpu"}},
            },
        },
        "requests": {"A": {"web": [{"call": "app"}], "app": [{"cpu": {"exponential": 0.1}}]}},
        "workload": {
            "population": {"clients": 3},
            "think": {"exponential": 0.1},
            "session_end": {"after_requests": 1_000_000},
            "chain": {"matrix": {"A": {"A": 1}}, "start": "A"},
        },
    }


def _app(trace) -> tuple[dict, pd.DataFrame]:
    return trace.summary["tiers"]["app"]["dispatch"], trace.requests


def test_redal_moves_sessions_off_a_server_past_the_threshold():
    """T = 6 requests/s (3 a slice): the server holding two sessions is past it and
    sends requests to the other, which is under it; without T every session stays
    home."""
    moved, requests = _app(run(_three_sessions(threshold=6.0)))
    assert moved["session_migrations"] > 0.05 * len(requests)
    stayed, _ = _app(run(_three_sessions(threshold=None)))
    assert stayed["session_migrations"] == 0


def test_no_session_moves_while_no_server_is_past_the_threshold():
    """T = 40 requests/s (20 a slice), five times what either server receives: affinity
    holds, as without T."""
    d, requests = _app(run(_three_sessions(threshold=40.0)))
    assert d["session_migrations"] == 0 and requests.session.nunique() == 3
    assert (requests.groupby("session")["app.server"].nunique() == 1).all()


@pytest.mark.parametrize("policy", ["redal", "redal_w"])
def test_with_every_server_past_the_threshold_only_redal_w_holds_requests(policy):
    """T = 2 requests/s (1 a slice), below what each server receives: ReDAL sends every
    request at once (the least loaded server overall), ReDAL-W queues them until a new
    slice makes a server a candidate again, and so serves fewer (about T per server)."""
    t = run(_three_sessions(threshold=2.0, policy=policy))
    d = t.summary["tiers"]["app"]["dispatch"]
    served = t.summary["requests"]["ok"] / 540  # measured seconds
    if policy == "redal":
        assert d["queued"] == 0 and served > 10
    else:
        # Two servers, one request each per 0.5 s slice: at most 4 requests/s.
        assert d["queued"] > 0.5 * t.summary["requests"]["ok"] and served <= 4.0
