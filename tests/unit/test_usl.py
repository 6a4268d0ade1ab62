"""The Universal Scalability Law fit: on curves from known σ, κ, λ₁ (exact and with
noise), on a simulated system whose contention is the USL's by construction, and
through `tierlab usl fit` and `tierlab ramp`."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from tierlab import load_model
from tierlab.analysis.usl import fit, throughput
from tierlab.cli import cli
from tierlab.errors import InputError
from tierlab.experiments.ramp import ramp, scalability

N = np.array([1, 2, 4, 8, 12, 16, 24, 32, 48, 64], float)
SIGMA, KAPPA, LAMBDA1 = 0.05, 0.002, 100.0


def test_exact_curve_gives_the_parameters_and_the_peak_back():
    u = fit(N, throughput(N, SIGMA, KAPPA, LAMBDA1))
    assert (u.sigma, u.kappa, u.lambda1) == pytest.approx((SIGMA, KAPPA, LAMBDA1), rel=1e-6)
    assert u.n_star == pytest.approx(math.sqrt((1 - SIGMA) / KAPPA), rel=1e-6)


def test_intervals_cover_the_truth_at_their_level():
    """2% multiplicative noise, 200 data sets: a 95% interval holds the true value in
    95% of them; with 200 trials the binomial standard error is 1.5%, so the observed
    coverage of each parameter must lie within 0.89..1 (4 standard errors)."""
    rng = np.random.default_rng(7)
    truth = {"sigma": SIGMA, "kappa": KAPPA, "lambda1": LAMBDA1, "n_star": math.sqrt((1 - SIGMA) / KAPPA)}
    hits = dict.fromkeys(truth, 0)
    for _ in range(200):
        u = fit(N, throughput(N, SIGMA, KAPPA, LAMBDA1) * (1 + rng.normal(0, 0.02, len(N))))
        for name, value in truth.items():
            low, high = u.ci[name]
            hits[name] += low <= value <= high
    assert all(0.89 <= h / 200 <= 1 for h in hits.values()), hits


def test_too_few_concurrencies_are_refused():
    with pytest.raises(InputError, match="4 or more distinct concurrencies"):
        fit([1, 2, 2, 4], [1, 2, 2, 3])


def test_a_linear_system_peaks_far_beyond_the_data():
    u = fit(N, 10 * N)
    assert u.kappa == pytest.approx(0, abs=1e-9) and u.sigma == pytest.approx(0, abs=1e-6)
    assert u.n_star is None or u.n_star > 1000 * N.max()


# One station whose every job slows by 1/(1 + a(N−1) + b(N−1)²) with N jobs present,
# enough cores for all, no think time: X(N) = N/D / (1 + a(N−1) + b(N−1)²), which is
# the USL with σ = a − b, κ = b, λ₁ = 1/D (b(N−1)² = bN(N−1) − b(N−1)).
A, B, D = 0.03, 0.0005, 0.1
CONTENDED = {
    "name": "usl",
    "run": {"duration": 2000, "warmup": 100, "seed": 5, "records": False},
    "tiers": {"s": {"stations": {"cpu": {"kind": "cpu", "cores": 100, "overhead": [A, B]}}}},
    "requests": {"job": {"s": [{"cpu": {"exponential": D}}]}},
    "workload": {"population": {"clients": 1}, "think": 0, "chain": {"matrix": {"job": {"job": 1}}, "start": "job"}},
}
LOADS = [1, 5, 10, 20, 30, 40, 50, 60, 80, 100]


def test_a_simulated_ramp_gives_the_contention_it_was_built_with():
    """Each step measures ~1900 s × 10–140 req/s of exponential work: the throughput's
    relative standard error is under 0.5%, so the parameters are within 2–4%."""
    table, _ = ramp(load_model(CONTENDED), LOADS, workers=1, progress=None)
    u = scalability(load_model(CONTENDED), table)
    assert u is not None
    assert u.sigma == pytest.approx(A - B, rel=0.03)
    assert u.kappa == pytest.approx(B, rel=0.04)
    assert u.lambda1 == pytest.approx(1 / D, rel=0.02)
    assert u.n_star == pytest.approx(math.sqrt((1 - (A - B)) / B), rel=0.02)


def test_usl_fit_command_writes_the_json_keys_and_the_plot(tmp_path):
    csv = tmp_path / "x.csv"
    pd.DataFrame({"concurrency": N, "throughput": throughput(N, SIGMA, KAPPA, LAMBDA1)}).to_csv(csv, index=False)
    res = CliRunner().invoke(cli, ["usl", "fit", str(csv), "--json", str(tmp_path / "u.json"), "--plot", str(tmp_path / "u.png")])
    assert res.exit_code == 0, res.output
    assert "N* = 21.8" in res.output
    data = json.loads((tmp_path / "u.json").read_text())
    assert set(data) == {"sigma", "kappa", "lambda1", "n_star", "ci"}
    assert set(data["ci"]) == {"sigma", "kappa", "lambda1", "n_star"}
    assert data["sigma"] == pytest.approx(SIGMA, rel=1e-6)
    assert (tmp_path / "u.png").stat().st_size > 0


def test_usl_fit_names_the_bad_line(tmp_path):
    csv = tmp_path / "x.csv"
    csv.write_text("concurrency,throughput\n1,10\n2,abc\n")
    with pytest.raises(InputError, match=r"x.csv line 3: throughput = 'abc'"):
        CliRunner().invoke(cli, ["usl", "fit", str(csv)], catch_exceptions=False)


def test_ramp_reports_the_usl_beside_the_knee(tmp_path):
    model = tmp_path / "m.json"
    model.write_text(json.dumps(CONTENDED | {"run": CONTENDED["run"] | {"duration": 300}}))
    res = CliRunner().invoke(cli, ["ramp", str(model), "--loads", "1,10,20,40,60,100", "--workers", "1", "--json", "-"])
    assert res.exit_code == 0, res.output
    usl = json.loads(res.stdout)["usl"]
    assert usl["sigma"] == pytest.approx(A - B, rel=0.15) and usl["kappa"] == pytest.approx(B, rel=0.15)
