"""The capacity search's bisection below its grid (issue 41 item 2: λ_max to ≤ 1%), on a
simulated queue whose capacity under the search's rule is known in closed form."""

from __future__ import annotations

import pytest
from queue_models import SERVICE, md1_queue

from tierlab.experiments.sizing.validation import max_sustainable_rate
from tierlab.trace.outcome import UNFINISHED_SHARE


def test_bisection_below_the_grid_finds_the_closed_form_capacity_within_one_percent():
    known = 1 / SERVICE / (1 - UNFINISHED_SHARE)
    common = dict(step=10.0, runs=1, success=1.0, progress=False, workers=1)
    grid, _ = max_sustainable_rate(md1_queue(), [(1, 1)], 60.0, **common)
    fine, trials = max_sustainable_rate(md1_queue(), [(1, 1)], 60.0, tolerance=0.01, max_rounds=30, **common)
    # The grid of 10/s says only "100 passes, 110 fails"; the bisection goes on.
    assert grid.lambda_max[0] == 100.0
    lam = fine.lambda_max[0]
    assert fine.bracketed[0]
    failed = trials[~trials.passed]["lambda"].min()
    assert lam < failed <= lam * 1.01  # the bracket: at most 1% wide
    assert lam == pytest.approx(known, rel=0.01)
    # The trials tried rates off the grid, each once.
    assert trials["lambda"].is_unique and (trials["lambda"] % 10 != 0).any()


def test_bracketing_downwards_never_more_than_halves_the_rate():
    # A start ten times the capacity: the search comes down 1, 2, 4, … steps, but never
    # below half the rate that failed (a stride past it would try the grid's first step,
    # a rate at which a short run may send nothing).
    _, trials = max_sustainable_rate(md1_queue(), [(1, 1)], 1000.0, step=1.0, runs=1, success=1.0, progress=False, workers=1, max_rounds=30)
    tried = trials["lambda"].tolist()
    assert all(b >= a / 2 - 1 for a, b in zip(tried, tried[1:])), tried
    assert min(tried) > 1.0
