"""`size optimize` says what its profile cannot support (issue 44, item 2): a profile
that never saturated its configurations, and an optimum on the edge of the profiled
grid, each a warning on stderr and an entry of `warnings` in the JSON; `size profile`
(and `live profile`, the same code) names the configurations that never reached
overload."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tierlab.experiments.sizing import PoolSizing, profile_grid
from tierlab.experiments.sizing.caveats import never_overloaded, optimum_caveats

from conftest import connection_bound_model

# conftest's connection-bound model (capacity 10·N sessions/s), with records. Runs of
# 180 s measured: at 2-4 sessions/s a 50 s run holds ~150 requests, and the one or two
# still in flight at its end (0.7-1.4%) count as not served past min_rejected (0.5%).
MODEL = connection_bound_model().with_run(records=True)
GRID = ([2, 4, 6], [1, 2, 3])


@pytest.fixture(scope="module")
def low():
    """The grid profiled from a bound of 1 session/s, far below every configuration's
    capacity of 10·N: pilots at 2, rounds 10% higher each, 8 of them."""
    return profile_grid(MODEL, *GRID, workers=1, progress=False, bound=1.0)


@pytest.fixture(scope="module")
def high():
    """The grid profiled from the model's CPU bound (200 sessions/s): all overloaded."""
    return profile_grid(MODEL, *GRID, workers=1, progress=False)


def kinds(grid) -> dict[str, list[tuple[int, int]]]:
    best = PoolSizing(grid).rates().best()
    return {c.kind: c.configurations for c in optimum_caveats(grid, int(best["M"]), int(best["N"]))}


def test_a_profile_at_too_low_a_load_is_said_to_support_no_capacity(low):
    grid = low
    # Offered 2 sessions/s and 10% more per round for 8 rounds: 4.3 at most, under 10.
    assert grid.runs["offered"].max() < 10
    every = sorted({(m, n) for m in GRID[0] for n in GRID[1] if m >= n})
    assert never_overloaded(grid.runs) == every
    assert kinds(grid)["never_saturated"] == every


def test_an_overloaded_profile_warns_only_of_an_optimum_on_its_edge(high):
    grid = high
    assert never_overloaded(grid.runs) == []
    found = kinds(grid)
    # λ_DB grows with N up to the largest profiled: the optimum is on that edge.
    assert "never_saturated" not in found and found["beyond_grid"][0][1] == max(GRID[1])


def test_an_optimum_inside_the_grid_has_no_caveat(high):
    assert optimum_caveats(high, 4, 2) == []  # (4, 2): inside, off the largest M and N


def test_the_commands_print_and_write_the_warnings(tmp_path: Path, low):
    low.write(tmp_path / "low")
    run = subprocess.run(
        [sys.executable, "-m", "tierlab.cli", "size", "optimize", str(tmp_path / "low"), "--json", str(tmp_path / "r.json")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    stderr = " ".join(run.stderr.split())
    assert "8 of 8 profiled configurations never reached overload" in stderr and "edge of the profiled grid" in stderr
    result = json.loads((tmp_path / "r.json").read_text())
    assert [w["kind"] for w in result["warnings"]] == ["never_saturated", "beyond_grid"]
    assert [2, 1] in result["warnings"][0]["configurations"]


def test_the_configurations_that_never_overloaded_are_read_from_runs_csv():
    """By runs.csv's `overloaded` (any seed's run counts), or its rejected share."""
    points = [(2, 1), (4, 1), (4, 2)]
    runs = pd.DataFrame([{"M": m, "N": n, "seed": 1, "offered": 1.0, "served": 1.0, "rejected": 0.0, "overloaded": (m, n) != (4, 1)} for m, n in points])
    assert never_overloaded(runs) == [(4, 1)]
    assert never_overloaded(runs.drop(columns="overloaded")) == points
