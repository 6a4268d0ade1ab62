"""The load generator is free of coordinated omission: against a server that stalls
every request for 1 s out of every 5 s, an open workload's response times — measured
from each request's *intended* send time and kept in the trace's HdrHistogram — show
the stall as the schedule implies, where a generator that measured from the moment it
got round to sending would hide it (the classic wrk vs wrk2 demonstration)."""

from __future__ import annotations

import numpy as np
import pytest
from stalling_server import PERIOD, STALL, StallingServer

import tierlab.live
from tierlab.live.mapping import load_mapping
from tierlab.model import load_model

from conftest import EXAMPLES

RATE = 100.0  # requests per second
LATE = 0.1  # seconds a busy machine may add to a response (the runs here: 0.01 to 0.04)


def test_a_stall_shows_in_the_percentiles_as_the_schedule_implies():
    server = StallingServer()
    measured = 6 * PERIOD  # a whole number of periods: whatever their phase against the
    # server's clock, they hold exactly 6 stalls, so the schedule fixes the expectation
    model = load_model(EXAMPLES / "tpcw_2tier.yaml").with_changes(
        {
            "workload.population": {"session_rate": RATE},
            "workload.session_end": {"after_requests": 1},
            "run.duration": 1.0 + measured,
            "run.warmup": 1.0,
            "run.seed": 5,
        }
    )
    types = ["HOME", "SREQ", "SRES", "NEWP", "BESS", "PROD", "SHOP", "CREG", "BUYR", "BUYC", "ORDI", "ORDD", "ADMR", "ADMC"]
    try:
        trace = tierlab.live.generate_load(model, load_mapping({"requests": {t: {"path": "/"} for t in types}}), target=f"127.0.0.1:{server.port}")
    finally:
        server.close()
    r = trace.requests
    assert (r.status == "ok").all(), r.status.value_counts()
    # From the schedule: a request intended at a time u into a stall waits STALL - u,
    # so the response time exceeds x for the arrivals in the first STALL - x seconds of
    # each stall, a fraction (STALL - x) / PERIOD of a Poisson stream: 10% above 0.5 s,
    # and the 99th percentile is at STALL - 0.01 · PERIOD = 0.95 s.
    above = float((r.response_time > 0.5).mean())
    expected_above = (STALL - 0.5) / PERIOD
    # ~3,000 Poisson arrivals put about 300 in those half-stalls: ±5 standard deviations
    # of that count is ±30%.
    n = len(r)
    assert n == pytest.approx(RATE * measured, rel=0.1)
    sd = np.sqrt(expected_above * n) / n
    # Lateness — the server answering a stall's hundred requests, the generator on a busy
    # machine — only adds time: allow it up to LATE seconds, one side only.
    assert expected_above - 5 * sd <= above <= expected_above + 5 * sd + LATE / PERIOD
    # The HdrHistogram's 99th percentile (summary), to its 3 significant digits: the
    # 30th-largest of ~3,000 response times, an arrival ~0.05 s into a stall, give or
    # take the Poisson noise of that rank (±0.02 s), plus lateness.
    p99 = trace.summary["response_time"]["p99"]
    assert STALL - 0.01 * PERIOD - 0.02 <= p99 <= STALL - 0.01 * PERIOD + 0.02 + LATE
    # …and the histogram agrees with the records it was fed from.
    assert p99 == pytest.approx(float(np.quantile(r.response_time, 0.99)), abs=0.01)
