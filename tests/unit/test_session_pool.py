"""A pool held by sessions (`hold: session`): the clients' keep-alive connections a
server holds at most (Tomcat's maxConnections), each taken before a session's first
request runs and kept to the session's end."""

from __future__ import annotations

import copy

import pytest

import tierlab

from conftest import run

THINK, REQUESTS, DELAY = 1.0, 3, 0.001
LIFETIME = (REQUESTS - 1) * THINK + REQUESTS * DELAY  # a session's seconds with its connection, unqueued


def _model(limit: int, rate: float, timeout: float | None = None, duration: float = 2_000) -> dict:
    """Sessions of REQUESTS requests of DELAY seconds, THINK seconds apart, arriving at
    `rate` per second; the web tier holds `limit` clients' connections."""
    return {
        "run": {"duration": duration, "warmup": 100, "seed": 3},
        "tiers": {"web": {"pools": {"clients": {"size": limit, "hold": "session", "timeout": timeout}}}},
        "requests": {"A": {"web": [{"delay": DELAY}]}},
        "workload": {
            "population": {"session_rate": rate},
            "think": THINK,
            "chain": {"matrix": {"A": {"A": 1}}, "start": "A"},
            "session_end": {"after_requests": REQUESTS},
        },
    }


def _clients(trace: tierlab.Trace) -> dict:
    return trace.summary["tiers"]["web"]["servers"][0]["pools"]["clients"]


def test_below_the_limit_a_session_holds_its_connection_for_its_lifetime():
    """Little's law on the connections: mean held = session rate × session lifetime,
    and no session waits."""
    t = run(_model(limit=1_000, rate=10.0))
    clients = _clients(t)
    assert clients["mean_busy"] == pytest.approx(10.0 * LIFETIME, rel=0.03)
    assert clients["mean_queued"] == 0
    assert t.summary["response_time"]["p99"] == pytest.approx(DELAY)


def test_at_the_limit_sessions_queue_and_the_session_rate_is_the_limit_over_the_lifetime():
    """10 connections of 2.003 s each carry 4.99 sessions/s whatever is offered (10/s):
    the sessions served are that, the connections never exceed the limit, the waiting
    ones are counted as unfinished, and a waiting request's wait is in its response
    time."""
    t = tierlab.simulate(_model(limit=10, rate=10.0, duration=1_000))
    assert t.summary["sessions"]["throughput"] == pytest.approx(10 / LIFETIME, rel=0.02)
    ts = t.timeseries
    held = ts[(ts.resource == "clients") & (ts.metric == "busy_max")]
    assert held.value.max() == 10
    assert _clients(t)["mean_busy"] == pytest.approx(10, rel=0.01)
    assert t.summary["requests"]["unfinished"] > 1_000  # ~5 sessions/s queued for 900 s
    assert t.requests.response_time.max() > 100 * THINK


def test_a_connection_wait_past_the_timeout_is_rejected_and_the_session_goes_on():
    """The pool's timeout is the client's connect timeout: the request is rejected, the
    session sends its next one (which tries again), and every request is counted."""
    t = run(_model(limit=10, rate=10.0, timeout=0.5, duration=600))
    r, status = t.summary["requests"], t.requests.status
    assert r["rejected"] > 0 and r["ok"] > 0
    assert (r["ok"], r["rejected"]) == ((status == "ok").sum(), (status == "rejected").sum())
    assert list(t.requests[status == "rejected"].response_time) == pytest.approx([0.5] * r["rejected"])
    assert t.requests[status == "ok"].response_time.max() <= 0.5 + DELAY + 1e-9
    # A session goes on after its rejected request: sessions end after REQUESTS whatever they got.
    assert t.summary["sessions"]["mean_requests"] == REQUESTS


def test_the_pool_changes_nothing_while_it_does_not_bind():
    """With room for every session, the run is the run without the pool, request for
    request (the connection is taken at once and costs no time)."""
    without = copy.deepcopy(_model(limit=1_000, rate=10.0, duration=300))
    del without["tiers"]["web"]["pools"]
    a, b = tierlab.simulate(_model(limit=1_000, rate=10.0, duration=300)), tierlab.simulate(without)
    cols = ["id", "session", "type", "status", "start", "end"]
    assert a.requests[cols].equals(b.requests[cols])


@pytest.mark.parametrize(
    "change, where, why",
    [
        (lambda m: m["tiers"].update({"db": {"pools": {"c": {"size": 5, "hold": "session"}}}}), "tiers.db.pools.c.hold", "entry tier"),
        (lambda m: m["tiers"]["web"].update({"servers": 2}), "tiers.web.pools.clients.hold", "one server"),
        (lambda m: m["tiers"]["web"]["pools"]["clients"].update({"kind": "threads"}), "tiers.web.pools.clients.kind", "kind other"),
        (lambda m: m["tiers"]["web"]["pools"].update({"more": {"size": 5, "hold": "session"}}), "tiers.web.pools.clients.hold", "one pool held by sessions"),
        (lambda m: m["requests"]["A"].update({"web": [{"acquire": "clients"}, {"release": "clients"}]}), "requests.A.web[0]", "held by sessions"),
        (lambda m: m["tiers"]["web"]["pools"]["clients"].update({"acquire_cpu": 0.001}), "tiers.web.pools.clients.acquire_cpu", "no acquisition CPU"),
    ],
)
def test_refused_where_a_session_cannot_hold_it(change, where, why):
    m = _model(limit=10, rate=1.0)
    change(m)
    with pytest.raises(tierlab.ModelError) as e:
        tierlab.simulate(tierlab.load_model(m))
    assert any(path == where and why in problem for path, problem in e.value.problems), e.value.problems
