"""The simulated queue whose capacity under the sustainability rule is known in closed
form (tests/unit/test_capacity_bisection.py, test_truth.py)."""

from __future__ import annotations

import tierlab

SERVICE = 0.01  # seconds of one core per request: μ = 100 requests/s
DURATION = 2_000.0  # 2·10⁵ requests near μ: the backlog's random walk ~0.2% of them


def md1_queue() -> tierlab.LoadedModel:
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
