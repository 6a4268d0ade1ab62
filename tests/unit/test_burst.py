"""Bursty arrivals: the MMPP fit hits its moments exactly, and the engine's arrival
stream has the index of dispersion the theory gives for the window measured."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tierlab
from tierlab.model.burst import fit_mmpp

from conftest import single_request_sessions


@pytest.mark.parametrize("I", [2.0, 100.0, 400.0, 1000.0])
def test_fit_reaches_mean_and_dispersion(I):
    m = fit_mmpp(50.0, I, burst_share=0.2, ratio=8.0)
    assert m.mean_rate == pytest.approx(50.0) and m.dispersion == pytest.approx(I)
    assert m.burst_share == pytest.approx(0.2) and m.rates[0] == pytest.approx(8 * m.rates[1])


def _window_dispersion(m, t: float) -> float:
    """Var N(t) / E N(t) of a stationary 2-state MMPP over windows of length t."""
    s = sum(m.leave)
    return 1 + (m.dispersion - 1) * (1 - (1 - math.exp(-s * t)) / (s * t))


@pytest.mark.parametrize("I", [100.0, 400.0, 1000.0])
def test_engine_arrivals_have_the_fitted_dispersion(I):
    rate = 1000.0
    m = fit_mmpp(rate, I)
    window = 2 / sum(m.leave)  # two mean phase cycles' worth of switching
    model = single_request_sessions(rate, {"web": {}}, {"web": [{"delay": 0.0}]}, duration=10_000 * window, warmup=0, window=window)
    model["workload"]["burstiness"] = {"dispersion": I}
    trace = tierlab.simulate(model)
    counts = trace.series("web", "arrivals")[0].to_numpy()[:-1]
    measured = counts.var(ddof=1) / counts.mean()
    assert counts.mean() == pytest.approx(rate * window, rel=0.15)  # bursty: the mean itself is noisy
    # The finite window sees part of I: I(t) = 1 + (I − 1)(1 − (1 − e^{−st})/(st)).
    assert measured == pytest.approx(_window_dispersion(m, window), rel=0.10)


def test_poisson_when_dispersion_is_one():
    model = single_request_sessions(200.0, {"web": {}}, {"web": [{"delay": 0.0}]}, duration=2000, warmup=0, window=1.0)
    model["workload"]["burstiness"] = {"dispersion": 1}
    counts = tierlab.simulate(model).series("web", "arrivals")[0].to_numpy()[:-1]
    assert counts.var(ddof=1) / counts.mean() == pytest.approx(1.0, abs=0.1)


def _closed_arrivals(I: float, duration: float = 4000) -> np.ndarray:
    model = {
        "run": {"duration": duration, "warmup": 100, "window": 5.0, "records": False},
        "tiers": {"web": {}},
        "requests": {"A": {"web": [{"delay": 0.01}]}},
        "workload": {
            "population": {"clients": 50},
            "think": {"exponential": 1.0},
            "chain": {"matrix": {"A": {"A": 1}}, "start": "A"},
            **({"burstiness": {"dispersion": I}} if I > 1 else {}),
        },
    }
    return tierlab.simulate(model).series("web", "arrivals")[0].to_numpy()[20:-1]


def test_closed_population_bursts_through_think_times():
    def dispersion(I):
        c = _closed_arrivals(I)
        return c.var(ddof=1) / c.mean()

    calm, bursty = dispersion(1), dispersion(100)
    assert calm == pytest.approx(1.0, abs=0.15)  # think ≫ response: nearly Poisson
    assert bursty > 10 * calm


def test_closed_bursts_keep_the_mean_rate():
    # Think times run on the phase's clock and are rescaled at each switch, so no client
    # sits out a burst in a long think drawn in the calm: the rate stays N / (Z + R).
    per_window = _closed_arrivals(1000, duration=40_000).mean()
    assert per_window / 5.0 == pytest.approx(50 / 1.01, rel=0.05)


@pytest.mark.parametrize(
    "burst, message",
    [({"dispersion": 0.5}, "dispersion"), ({"dispersion": 10, "burst_share": 1.0}, "burst_share"), ({"dispersion": 10, "ratio": 1}, "ratio")],
)
def test_bad_burstiness_is_named(burst, message):
    model = single_request_sessions(10.0, {"web": {}}, {"web": [{"delay": 0.0}]})
    model["workload"]["burstiness"] = burst
    with pytest.raises(tierlab.ModelError, match=f"workload.burstiness.{message}"):
        tierlab.simulate(model)


def test_fit_rejects_dispersion_below_one():
    with pytest.raises(tierlab.InputError, match="I = 0.9"):
        fit_mmpp(1.0, 0.9)
