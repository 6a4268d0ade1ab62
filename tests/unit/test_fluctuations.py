"""Fine-grained analysis on data with a known answer: a bimodal mixture, Poisson-like
rates with a known amplification, and a trace with retransmissions."""

from __future__ import annotations

import numpy as np
import pytest

import tierlab
from tierlab.analysis.fluctuations import bimodality, fluctuations, tiers

from conftest import single_request_sessions


def test_a_bimodal_mixture_is_found_with_its_two_modes():
    rng = np.random.default_rng(4)
    # 90% fast (~20 ms) and 10% caught by a 3 s retransmission (~3.02 s): Wang et al.'s shape.
    x = np.r_[rng.lognormal(np.log(0.02), 0.3, 9000), 3.0 + rng.lognormal(np.log(0.02), 0.3, 1000)]
    b = bimodality(x)
    assert b.bimodal and b.p_value < 0.01
    assert b.modes[0] == pytest.approx(0.02, rel=0.25) and b.modes[1] == pytest.approx(3.02, rel=0.05)


def test_a_unimodal_sample_is_not_bimodal():
    b = bimodality(np.random.default_rng(5).lognormal(np.log(0.05), 0.5, 5000))
    assert not b.bimodal and b.modes == []


def test_too_few_values_is_an_error():
    with pytest.raises(tierlab.InputError, match="at least 10"):
        bimodality([0.1, 0.2])


def test_rate_fluctuation_grows_toward_the_database():
    # One page = 1 or 17 queries (mean 9): the DB's rate fluctuates more.
    tiersd = {"web": {}, "db": {}}
    program = {"web": [{"loop": {"count": {"empirical": [1, 17]}, "steps": [{"call": "db"}]}}], "db": [{"delay": 0.001}]}
    t = tierlab.simulate(single_request_sessions(50.0, tiersd, program, duration=2_000))
    d = tiers(t).set_index("tier")
    assert d.loc["db", "rate"] == pytest.approx(9 * d.loc["web", "rate"], rel=0.05)
    # Compound Poisson per 100 ms window: CoV = sqrt(λ·E[K²]) / (λ·E[K]) = sqrt(5·145) / 45.
    assert d.loc["db", "rate_cov_0.1s"] == pytest.approx(np.sqrt(5 * 145) / 45, rel=0.08)
    assert d.loc["db", "rate_cov_0.1s"] > 1.2 * d.loc["web", "rate_cov_0.1s"]
    # Poisson web arrivals at 50/s: CoV per 100 ms window = 1/sqrt(5).
    assert d.loc["web", "rate_cov_0.1s"] == pytest.approx(1 / np.sqrt(5), rel=0.05)
    assert d.loc["web", "rate_cov_10s"] < d.loc["web", "rate_cov_0.1s"] / 5


def _blocking(rho: float, K: int) -> float:
    """M/M/1/K: the share of arrivals that find K in the system."""
    return (1 - rho) * rho**K / (1 - rho ** (K + 1))


def test_retransmissions_make_response_times_bimodal():
    """2 threads on one PS core (together one exp(20/s) server) and a backlog of 2:
    M/M/1/4 at 15/s. A dropped attempt comes back 3 s later, so the offered rate is
    15/(1 − P) with P the blocking of M/M/1/4 at that rate: the fixed point P = 0.156 is
    the share of requests retransmitted at least once. Taking the retries as Poisson
    (they are not: each is a dropped attempt 3 s late) biases it by a few per cent."""
    P = 0.0
    for _ in range(200):
        P = _blocking(15.0 / (1 - P) / 20.0, 4)
    m = {
        "run": {"duration": 4_000, "warmup": 50, "seed": 2},
        "tiers": {
            "web": {"pools": {"threads": {"kind": "threads", "size": 2, "max_queue": 2, "retransmit": {"initial": 3.0}}}, "stations": {"cpu": {"kind": "cpu"}}}
        },
        "requests": {"A": {"web": [{"acquire": "threads"}, {"cpu": {"exponential": 0.05}}, {"release": "threads"}]}},
        "workload": {"population": {"session_rate": 15.0}, "chain": {"matrix": {"A": {"END_OF_SESSION": 1}}, "start": "A"}},
    }
    f = fluctuations(tierlab.simulate(m))
    assert f["share_retransmitted"] == pytest.approx(P, rel=0.12) and f["retransmissions_per_minute"]["max"] > 0
    assert f["bimodality"]["bimodal"] and f["bimodality"]["modes"][1] > 3.0
    assert f["p98"] >= 3.0 > f["mean"]
