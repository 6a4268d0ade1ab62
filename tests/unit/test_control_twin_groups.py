"""The twin re-calibrates the work behind its connections only where there is some: a
database in the server's process (the SQLite testbed's twin: its connections' steps are
the app's own CPU, the `db` tier never visited) has no group behind, and the
connections' hold is not read as another tier's demand (docs/control.md, twin, step 1)."""

from __future__ import annotations

import tierlab
from tierlab.model.spec import Twin
from tierlab.run.twin import TwinController, observed

from conftest import single_request_sessions


def in_process_db() -> dict:
    """100 requests/s: 2 ms of the app's core on a thread, then 3 ms more of it holding a
    connection (an embedded database); a `db` tier with a CPU that no request visits."""
    app = {"pools": {"threads": {"kind": "threads", "size": 4}, "db": {"kind": "connections", "size": 2}}, "stations": {"cpu": {"kind": "cpu", "cores": 1}}}
    db = {"stations": {"cpu": {"kind": "cpu", "cores": 2}}}
    program = {
        "app": [
            {"acquire": "threads"},
            {"cpu": {"exponential": 0.002}},
            {"use": {"pool": "db", "steps": [{"cpu": {"exponential": 0.003}}]}},
            {"release": "threads"},
        ]
    }
    return single_request_sessions(100.0, {"app": app, "db": db}, program, duration=60, warmup=0, window=1.0, seed=3, records=False)


def test_connections_held_longer_in_process_are_no_demand_behind():
    o = observed(tierlab.simulate(in_process_db()).summary, "app", {"threads": "threads", "connections": "db"})
    # The connections held twice as long (and the threads with them).
    extra = o["pools"]["connections"]["busy"]
    o["pools"]["connections"]["busy"] += extra
    o["pools"]["threads"]["busy"] += extra
    c = TwinController(tierlab.load_model(in_process_db()), Twin(slo_p99=0.2, horizon=10), {"threads": (2, 16), "connections": (1, 8)}, "app")
    for _ in range(4):
        _, reason = c.decide(o)
        assert "demand tier ×" in reason and "behind" not in reason, reason
    # The tier's demand is its CPU's work per request, which did not change.
    assert abs(c.scale["tier"] - 1) < 0.1, c.scale
