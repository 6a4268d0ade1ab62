"""An open population's sessions under bursts (the MMPP of `workload.burstiness`) all
go on across a phase switch: each think time under way is rescaled to the new phase's
clock rate, as a closed client's is (a switch once dropped every open session thinking
at that moment: it never sent again nor ended)."""

from __future__ import annotations

import tierlab


def test_every_open_session_goes_on_across_burst_switches():
    """Sessions of a geometric number of requests (mean 10: the chain ends a session after
    a request with probability 0.1) with 1 s think times, at 1 session/s for 3,000 s.
    Sessions still running at the end are a few tens (Little: ~1/s × ~20 s, bursts more);
    the lost ones were 346 of 2,881. The completed sessions' requests average 10 (standard
    error 0.19 over ~2,800 sessions; with the loss 8.8)."""
    model = {
        "run": {"duration": 3000, "warmup": 0, "seed": 1, "records": False, "window": 1.0},
        "tiers": {"app": {}},
        "requests": {"A": {"app": [{"delay": 0.01}]}},
        "workload": {
            "population": {"session_rate": 1.0},
            "think": 1.0,
            "chain": {"matrix": {"A": {"A": 0.9, "END_OF_SESSION": 0.1}}, "start": "A"},
            "burstiness": {"dispersion": 50},
        },
    }
    s = tierlab.simulate(model).summary["sessions"]
    assert s["started"] - s["completed"] <= 60, s
    assert abs(s["mean_requests"] - 10) <= 4 * 0.19, s
