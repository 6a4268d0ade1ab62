"""Sizing experiments say what they do and keep what they measured: one line per run
(point, rate, outcome, runs at most to go), a profile written as each point is
measured, and a capacity search bounded by its rounds. The same code drives the live
testbed (`tierlab live profile|validate`), where runs are long; here the simulator
runs it."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

import tierlab
from tierlab.experiments.sizing import RunLengthWarning, max_sustainable_rate, profile_grid

from conftest import EXAMPLES


def _one_pool_model(records: bool = False) -> tierlab.LoadedModel:
    """One connection serving 0.1 s jobs, a session being one job."""
    pools = {"threads": {"kind": "threads", "size": 4, "timeout": 1.0}, "db": {"kind": "connections", "size": 1, "timeout": 1.0}}
    job = [{"acquire": "threads"}, {"acquire": "db"}, {"delay": {"exponential": 0.1}}, {"release": "db"}, {"release": "threads"}]
    return tierlab.load_model(
        {
            "run": {"duration": 300, "warmup": 50, "records": records},
            "tiers": {"app": {"pools": pools}},
            "requests": {"job": {"app": job}},
            "workload": {"population": {"session_rate": 1.0}, "chain": {"matrix": {"job": {"END_OF_SESSION": 1}}, "start": "job"}},
        }
    )


def _to_go(line: str) -> int:
    return int(re.search(r"at most (\d+) runs?", line).group(1))


def test_a_capacity_search_stops_after_its_rounds_and_says_so():
    lines: list[str] = []
    # From 0.5 sessions/s, far below the boundary, two rounds only climb: 0.5, then 1.0.
    result, trials = max_sustainable_rate(_one_pool_model(), [(4, 1)], 0.5, step=0.5, runs=2, max_rounds=2, workers=1, log=lines.append)
    assert result.to_dict(orient="records") == [{"M": 4, "N": 1, "lambda_max": 1.0, "bracketed": False}]
    assert trials["lambda"].tolist() == [0.5, 1.0]
    assert lines[0] == "capacity search of 1 configuration: at most 4 runs of 300 s (≤ 20.0 min)"
    runs = [x for x in lines[1:-1] if ", run " in x]
    rounds = [x for x in lines[1:-1] if ", run " not in x]  # after each round, its rate and outcome
    assert rounds == [
        "capacity search round 1: M=4 N=1 at 0.500 sessions/s: 2 of 2 runs served all, sustained; next 1.000 sessions/s",
        "capacity search round 2: M=4 N=1 at 1.000 sessions/s: 2 of 2 runs served all, sustained; next 2.000 sessions/s",
    ]
    assert lines[-1] == "capacity search done (1 of 1 not bracketed within 2 rounds) after 4 runs"
    assert len(runs) == 4 and [_to_go(x) for x in runs] == [3, 2, 1, 0]
    assert all("M=4 N=1 at " in x and "all served" in x for x in runs), runs
    assert "at 0.500 sessions/s, seed 1" in runs[0] and "at 1.000 sessions/s, seed 2" in runs[3]


def test_a_profile_is_written_as_each_point_is_measured(tmp_path):
    out = tmp_path / "profile"
    seen: list[tuple[str, bool | None, list]] = []

    def log(line: str) -> None:  # what the folder held when each line came
        meta = json.loads((out / "profile.json").read_text()) if (out / "profile.json").exists() else None
        points = pd.read_csv(out / "points.csv")[["M", "N"]].drop_duplicates().values.tolist() if meta else []
        seen.append((line, None if meta is None else meta["complete"], points))

    grid = profile_grid(_one_pool_model(records=True), [2, 4], [1], bound=20.0, max_rounds=2, workers=1, out_dir=out, log=log)
    lines = [s[0] for s in seen]
    assert lines[0] == "profiling 2 points: at most 7 runs of 300 s (≤ 35.0 min)"
    assert lines[1].startswith("load structure, run 1/1: M=· N=· at 10.000 sessions/s")
    assert lines[2].startswith("pilot, run 1/2: M=2 N=1 at 40.000 sessions/s") and lines[3].startswith("pilot, run 2/2: M=4 N=1")
    profiling = [s for s in seen if s[0].startswith("profiling round")]
    assert len(profiling) == len(grid.runs) >= 2
    # Before the second point's line, the first point was already on disk, marked incomplete.
    assert seen[seen.index(profiling[1])][1:] == (False, [[2, 1]])
    assert json.loads((out / "profile.json").read_text())["complete"] is True
    assert [_to_go(x) for x in lines[1:-1]] == sorted((_to_go(x) for x in lines[1:-1]), reverse=True)  # never grows
    assert lines[-1] == f"profiled 2 points, {grid.runs['overloaded'].sum()} of 2 runs overloaded, after {len(lines) - 2} runs"


def test_runs_shorter_than_a_session_are_called_out():
    """TPC-W sessions last minutes (15 requests, 10 s think): in 16 s runs few end, and
    the requests per session measured there are far too few."""
    short = tierlab.load_model(EXAMPLES / "tpcw_2tier.yaml").with_run(duration=16, warmup=1)
    with pytest.warns(RunLengthWarning, match=r"only \d+% of its sessions end.*L = 1\.\d+ requests per session is too small"):
        profile_grid(short, [5], [2], max_rounds=1, workers=1, progress=False)
