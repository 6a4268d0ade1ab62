"""`size profile`'s progress has its total from the start: the most runs the profile
can take, lowered as each point's chain of rounds ends early, never raised (it was the
runs submitted so far: "1/40" … "39/67" … "138/138")."""

from __future__ import annotations

import re

import tierlab
from tierlab.experiments.sizing import profile_grid

from conftest import one_pool_model


def test_the_total_is_fixed_from_the_start_and_only_lowered(capsys):
    model = tierlab.load_model(one_pool_model(1.0)).with_changes({"run.duration": 300, "run.warmup": 50, "run.records": True})
    seeds, rounds, points = (1, 2), 3, 7  # points with M ≥ N
    grid = profile_grid(model, (1, 2, 4, 8), (1, 2), workers=1, seeds=seeds, overload=0.05, min_rejected=0.08, max_rounds=rounds, bound=20.0)
    steps = [(int(k), int(t)) for k, t in re.findall(r"runs done / at most: (\d+)/(\d+)", capsys.readouterr().err)]
    totals = [t for _, t in steps]
    assert totals[0] == 1 + points * (1 + rounds * len(seeds))  # the load structure, a pilot and the rounds per point
    assert all(a >= b for a, b in zip(totals, totals[1:]))
    # A line per run as it ends (the last again when the total comes down to it): the
    # last says every run the profile took, of as many.
    ran = steps[-1][0]
    assert [k for k, _ in steps][:ran] == list(range(1, ran + 1)) and steps[-1] == (ran, ran)
    assert totals[-1] < totals[0]  # some chains ended before their last round
    assert grid.runs["overloaded"].any()
