"""The per-request CPU grouping the twin's investigations share (experiments/twin/growth.py):
who else was in the system when a request was sent, and a relative CPU per bin."""

from __future__ import annotations

import math

import pandas as pd

from tierlab.experiments.twin.growth import binned, empty_base, others_at_send, relative


def test_the_others_at_a_send_are_those_sent_before_and_not_yet_answered():
    r = pd.DataFrame({"start": [0.0, 1.0, 3.0, 5.0], "end": [10.0, 2.0, 4.0, 6.0]})
    # at 1: the first (0-10); at 3: the first only (the second ended at 2); at 5: the first (4 ended).
    assert others_at_send(r).tolist() == [0, 1, 1, 1]


def test_a_request_s_cpu_is_relative_to_its_type_sent_to_an_empty_system():
    r = pd.DataFrame({"type": ["a", "a", "b", "b"], "others": [0, 3, 0, 0], "app.cpu_time": [1.0, 1.5, 2.0, 4.0]})
    base = empty_base({"run": r})
    assert base.to_dict() == {"a": 1.0, "b": 3.0}
    assert relative(r, base).tolist() == [1.0, 1.5, 2.0 / 3.0, 4.0 / 3.0]


def test_bins_count_the_requests_with_a_figure_and_an_empty_bin_has_no_mean():
    table = binned(pd.Series([0, 1, 5, 9, 2]), pd.Series([1.0, 2.0, 3.0, math.nan, 4.0]), [(0, 0), (1, 4), (5, None), (20, 30)], "n")
    assert table.n.tolist() == ["0", "1-4", "5+", "20-30"] and table.requests.tolist() == [1, 2, 1, 0]
    assert table.cpu_vs_empty[:3].tolist() == [1.0, 3.0, 3.0] and math.isnan(table.cpu_vs_empty[3])  # None, as a table's NaN
