"""The claims ledgers: strict criteria, well-formed claims.json files, and a README whose
tables are the ones studies/ledger.py generates from them."""

from __future__ import annotations

import json

import pytest

from tierlab.experiments.study import claims
from tierlab.experiments.study.claims import ordered_as_paper, strictly_decreasing, strictly_increasing, times_the_second, within


def test_a_flat_series_neither_decreases_nor_increases():
    assert not strictly_decreasing([4200, 4200, 4200])
    assert not strictly_increasing([4200, 4200, 4200])
    # Wang's Table 1 as the study once scored it: one step down, then flat.
    assert not strictly_decreasing({1: 5400, 100: 4200, 400: 4200, 1000: 4200})
    assert strictly_decreasing({1: 5000, 100: 4800, 400: 4400, 1000: 3800})
    assert strictly_increasing([0.068, 0.189, 0.439, 0.776])
    # One value orders nothing; a missing one breaks the series.
    assert not strictly_decreasing([5000])
    assert not strictly_decreasing([5000, None, 3800])


def test_within_is_inclusive_and_needs_a_figure():
    assert within(115.0, 100.0, rel=0.15) and not within(115.1, 100.0, rel=0.15)
    assert within(0.875, 1.0, abs=0.125) and not within(0.87, 1.0, abs=0.125)
    assert not within(None, 100.0, rel=0.5)
    assert not within(float("nan"), 100.0, rel=0.5)
    with pytest.raises(ValueError):
        within(1.0, 1.0)


def test_an_order_needs_every_step_strict_and_clear_of_the_noise():
    paper = {"ReDAL": 243, "HJ": 157, "RR": 130}
    assert ordered_as_paper().holds({"ReDAL": 3.0, "HJ": 2.0, "RR": 1.0}, paper)
    assert not ordered_as_paper().holds({"ReDAL": 3.0, "HJ": 2.0, "RR": 2.0}, paper)  # a tie
    assert not ordered_as_paper().holds({"ReDAL": 2.0, "HJ": 3.0, "RR": 1.0}, paper)
    # 3.0 vs 2.0 with half-widths 0.8 each: 1.0 < hypot(0.8, 0.8) = 1.13, not apart.
    noisy = ordered_as_paper({"ReDAL": 0.8, "HJ": 0.8, "RR": 0.1})
    assert not noisy.holds({"ReDAL": 3.0, "HJ": 2.0, "RR": 1.0}, paper)
    assert ordered_as_paper({"ReDAL": 0.5, "HJ": 0.5, "RR": 0.1}).holds({"ReDAL": 3.0, "HJ": 2.0, "RR": 1.0}, paper)


def test_check_file_refuses_a_typed_verdict_or_a_missing_key(tmp_path):
    bad = tmp_path / "claims.json"
    bad.write_text(json.dumps([{"claim": "x", "paper": 1, "ours": 1, "criterion": "equal", "verdict": "true"}]))
    with pytest.raises(ValueError, match="verdict 'true'"):
        claims.check_file(bad)
    bad.write_text(json.dumps([{"claim": "x", "paper": 1, "ours": 1, "verdict": "reproduced"}]))
    with pytest.raises(ValueError, match="missing criterion"):
        claims.check_file(bad)


def test_much_larger_needs_the_factor():
    much = times_the_second(1.25)
    assert much.holds({"DBconn24": 1.373, "DBconn2": 0.547}, None)
    assert not much.holds({"FIFO": 1.127, "CTP": 1.059}, None)  # larger, not much larger
    assert not much.holds({"FIFO": 1.0, "CTP": None}, None)
