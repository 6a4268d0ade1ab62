"""studies/twin.py's scoring: the pool-sizing claim is judged only where the truth tells
the best configuration apart, and `--rescore` re-scores a folder's testbeds without
running anything."""

from __future__ import annotations

import json
import runpy
import shutil
import subprocess
import sys

from conftest import ROOT

study = runpy.run_path(str(ROOT / "studies" / "twin.py"))


def _capacities(*rows: tuple[int, int, float, float]) -> list[dict]:
    return [{"M": m, "N": n, "lambda_max": lam, "halfwidth": hw} for m, n, lam, hw in rows]


def test_the_best_is_told_apart_only_where_its_interval_lies_above_every_other():
    assert study["_resolved"](_capacities((4, 4, 150.0, 5.0), (4, 2, 130.0, 10.0), (8, 4, 120.0, 20.0)))
    # (4, 4)'s interval reaches down into (4, 2)'s: which is best the truth cannot say.
    assert not study["_resolved"](_capacities((4, 4, 140.8, 5.8), (4, 2, 129.9, 15.9)))
    # One search each (no interval): repeated searches spread by 10%, so it cannot either.
    assert not study["_resolved"]([{"M": 4, "N": 4, "lambda_max": 47.0}, {"M": 16, "N": 4, "lambda_max": 35.0}])


def _sizing_verdict(capacities: list[dict], twin_optimum: dict) -> str:
    record = {
        "repeats": 3,
        "unseen_throughput_error_max": 0.0,
        "unseen_mean_rt_error_max": 0.0,
        "unseen_max_sustainable_error_max": 0.0,
        "unseen_beyond_allowance": {"throughput": -1.0, "rt_mean": -1.0, "lambda_max": -1.0},
        "sizing_error": {"paper": 0.5, "twin": 0.0},
        "paper_optimum": {"M": 16, "N": 2},
        "twin_optimum": twin_optimum,
        "measured_best": {"M": 4, "N": 4},
        "capacities": capacities,
    }
    claims = study["_claims"]({"sqlite": record}, study["TARGETS"]["java"]).claims
    return next(c["verdict"] for c in claims if "measured best" in c["claim"])


def test_the_sizing_claim_is_scored_where_the_best_is_told_apart_and_said_untestable_elsewhere():
    apart = _capacities((4, 4, 150.0, 5.0), (4, 2, 130.0, 10.0))
    assert _sizing_verdict(apart, {"M": 4, "N": 4}) == "reproduced"
    assert _sizing_verdict(apart, {"M": 8, "N": 2}) == "not reproduced"
    overlapping = _capacities((4, 4, 140.8, 5.8), (4, 2, 129.9, 15.9))
    assert _sizing_verdict(overlapping, {"M": 4, "N": 4}) == "not testable here"


def test_rescore_scores_the_folders_testbeds_and_runs_nothing(tmp_path):
    folder = tmp_path / "twin_java_budget_quick"
    shutil.copytree(ROOT / "studies" / "results" / "twin_java_budget_quick", folder)
    testbed = json.loads((folder / "sqlite" / "testbed.json").read_text())
    (folder / "claims.json").unlink()
    done = subprocess.run(
        [sys.executable, str(ROOT / "studies" / "twin.py"), "--server", "java", "--quick", "--rescore", "--out", str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((folder / "sqlite" / "testbed.json").read_text()) == testbed  # untouched: nothing ran
    claims = json.loads((folder / "claims.json").read_text())
    assert any("measured best" in c["claim"] for c in claims)
    result = json.loads((folder / "result.json").read_text())
    assert result["testbeds"]["sqlite"] == testbed and result["command"].endswith("--rescore")
    empty = subprocess.run(
        [sys.executable, str(ROOT / "studies" / "twin.py"), "--quick", "--rescore", "--out", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert empty.returncode != 0 and "no testbed.json" in empty.stderr
