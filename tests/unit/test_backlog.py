"""Token-based limits with TCP semantics: a full accept backlog drops the connection
attempt, the client retransmits after 3 s, then 6 s, … and the retries show in the
request's record and response time."""

from __future__ import annotations

import pytest

import tierlab

from conftest import run


def _web(threads: int, backlog: int, retransmit: dict | None, clients: int = 20) -> dict:
    pool = {"kind": "threads", "size": threads, "max_queue": backlog, **({"retransmit": retransmit} if retransmit else {})}
    return {
        "run": {"duration": 2_000, "warmup": 100, "seed": 3},
        "tiers": {"web": {"pools": {"threads": pool}, "stations": {"cpu": {"kind": "cpu"}}}},
        "requests": {"A": {"web": [{"acquire": "threads"}, {"cpu": {"exponential": 0.2}}, {"release": "threads"}]}},
        "workload": {"population": {"clients": clients}, "think": {"exponential": 2.0}, "chain": {"matrix": {"A": {"A": 1}}, "start": "A"}},
    }


def test_backlog_overflow_retransmits_after_the_initial_timeout():
    t = run(_web(threads=2, backlog=2, retransmit={"initial": 3.0, "attempts": 5}))
    r = t.requests
    # Rejected only after the last of the 5 retries.
    assert (r[r.status == "rejected"].retransmissions == 5).all()
    retried = r[(r.retransmissions > 0) & (r.status == "ok")]
    assert len(retried) > 0
    # A request retransmitted k times waited at least 3 + 6 + … = 3·(2^k − 1) seconds.
    floor = 3.0 * (2.0**retried.retransmissions - 1)
    assert (retried.response_time >= floor - 1e-9).all()
    assert retried.response_time.min() >= 3.0
    # The wait counts as waiting for a thread (the request is not in yet).
    assert (retried["web.wait_thread"] >= floor - 1e-9).all()
    # Every drop is counted: the pool's drops match the retransmissions recorded (up to
    # requests that straddle the warm-up or the end).
    assert t.summary["tiers"]["web"]["servers"][0]["pools"]["threads"]["dropped"] == pytest.approx(int(r.retransmissions.sum()), rel=0.02)


def test_without_retransmit_a_full_backlog_rejects():
    t = run(_web(threads=2, backlog=2, retransmit=None))
    r = t.requests
    assert (r.status == "rejected").sum() == t.summary["tiers"]["web"]["servers"][0]["pools"]["threads"]["rejected"] > 0
    assert r.retransmissions.max() == 0


def test_retries_exhausted_reject():
    t = run(_web(threads=1, backlog=0, retransmit={"initial": 0.5, "attempts": 1}, clients=40))
    r = t.requests
    rejected = r[r.status == "rejected"]
    assert len(rejected) > 0 and (rejected.retransmissions == 1).all()


def test_retransmit_needs_a_bounded_backlog():
    m = _web(threads=2, backlog=2, retransmit={"initial": 3.0})
    del m["tiers"]["web"]["pools"]["threads"]["max_queue"]
    with pytest.raises(tierlab.ModelError, match="tiers.web.pools.threads.retransmit"):
        tierlab.simulate(m)
