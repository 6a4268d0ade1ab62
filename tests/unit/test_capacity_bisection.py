"""The capacity search's bisection below its grid (issue 41 item 2: λ_max to ≤ 1%), on a
simulated queue whose capacity under the search's rule is known in closed form."""

from __future__ import annotations

import pytest

import tierlab
from tierlab.experiments.sizing.validation import max_sustainable_rate
from tierlab.trace.outcome import UNFINISHED_SHARE

SERVICE = 0.01  # seconds of one core per request: μ = 100 requests/s
DURATION = 2_000.0  # 2·10⁵ requests near μ: the backlog's random walk ~0.2% of them


def _queue() -> tierlab.LoadedModel:
    """Sessions of one request, each 10 ms of one core behind a single thread, no
    timeout: an M/D/1 queue. Past μ the requests unanswered at the end pile up as
    (λ − μ)·T of λ·T sent, so the rule (at most UNFINISHED_SHARE unanswered) sustains
    λ up to μ / (1 − UNFINISHED_SHARE): below it the queue is finite (ρ < 1), above it
    the backlog's share is 1 − μ/λ."""
    return tierlab.load_model(
        {
            "run": {"duration": DURATION, "warmup": 0, "records": False, "seed": 3},
            "tiers": {
                "app": {
                    "pools": {"threads": {"kind": "threads", "size": 1}, "db": {"kind": "connections", "size": 1}},
                    "stations": {"cpu": {"kind": "cpu", "cores": 1}},
                }
            },
            "requests": {"job": {"app": [{"acquire": "threads"}, {"cpu": {"constant": SERVICE}}, {"release": "threads"}]}},
            "workload": {"population": {"session_rate": 1.0}, "chain": {"matrix": {"job": {"END_OF_SESSION": 1}}, "start": "job"}},
        }
    )


def test_bisection_below_the_grid_finds_the_closed_form_capacity_within_one_percent():
    known = 1 / SERVICE / (1 - UNFINISHED_SHARE)
    common = dict(step=10.0, runs=1, success=1.0, progress=False, workers=1)
    grid, _ = max_sustainable_rate(_queue(), [(1, 1)], 60.0, **common)
    fine, trials = max_sustainable_rate(_queue(), [(1, 1)], 60.0, tolerance=0.01, max_rounds=30, **common)
    # The grid of 10/s says only "100 passes, 110 fails"; the bisection goes on.
    assert grid.lambda_max[0] == 100.0
    lam = fine.lambda_max[0]
    assert fine.bracketed[0]
    failed = trials[~trials.passed]["lambda"].min()
    assert lam < failed <= lam * 1.01  # the bracket: at most 1% wide
    assert lam == pytest.approx(known, rel=0.01)
    # The trials tried rates off the grid, each once.
    assert trials["lambda"].is_unique and (trials["lambda"] % 10 != 0).any()
