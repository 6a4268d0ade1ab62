"""Scoring the twin against a repeated truth (issue 41 items 2 and 5): a point's
allowance is the target or the truth's own half-width, and verify's repeats become one
step's mean at the reference probe, its interval, and the twin's error against it."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from tierlab.errors import InputError
from tierlab.experiments.twin import truth
from tierlab.experiments.twin.verify import repeated


def test_the_allowance_is_the_target_or_the_truths_own_halfwidth_where_wider():
    assert truth.allowance(0.05, 0.02) == 0.05
    assert truth.allowance(0.05, 0.09) == 0.09
    assert truth.allowance(0.05, float("nan")) == 0.05  # no interval: the target


def _step(repeat: int, throughput: float, rt: float, probe: float | None) -> dict:
    return {
        "repeat": repeat,
        "M": 8,
        "N": 4,
        "mix": "model",
        "load": 20.0,
        "probe_ms.live": probe,
        "throughput.measured": throughput,
        "rt_mean.measured": rt,
        "throughput.predicted_calibration_speed": 10.5,
        "rt_mean.predicted_calibration_speed": 0.1,
    }


def test_repeats_become_one_step_at_the_reference_speed_with_its_interval():
    steps = pd.DataFrame([_step(1, 9.0, 0.1, 2.0), _step(2, 10.0, 0.12, 2.4), _step(3, 11.0, 0.09, 1.8)])
    [row] = repeated(steps, reference=2.0).to_dict(orient="records")
    assert row["repeats"] == 3
    # Throughput below capacity is the offered load's: not scaled.
    assert row["throughput.measured"] == pytest.approx(10.0)
    # t(0.975, 2) = 4.302653; s = 1 over three repeats.
    assert row["throughput.halfwidth"] == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    assert row["throughput.error"] == pytest.approx(0.05)
    # A time is brought to the reference probe: × reference ÷ the repeat's probe.
    rts = [0.1, 0.12 * 2.0 / 2.4, 0.09 * 2.0 / 1.8]
    assert row["rt_mean.measured"] == pytest.approx(sum(rts) / 3)
    assert row["rt_mean.error"] == pytest.approx(0.1 / (sum(rts) / 3) - 1)


def test_steps_are_scored_apart_and_a_single_repeat_has_no_interval():
    steps = pd.DataFrame([_step(1, 9.0, 0.1, None), _step(2, 9.0, 0.1, None)] + [_step(1, 5.0, 0.2, None) | {"load": 10.0}])
    with pytest.raises(InputError, match="two repeats"):
        repeated(steps, reference=None)
    rows = repeated(steps[steps["load"] == 20.0], reference=None)
    assert len(rows) == 1 and rows["throughput.halfwidth"].iloc[0] == 0.0
