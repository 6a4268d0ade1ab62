"""studies/cluster_live.py's scoring: which live orders the repeats decide, and the
committed ledgers recomputed from their committed runs (`--rescore`)."""

from __future__ import annotations

import runpy

import pandas as pd
import pytest

from conftest import ROOT

study = runpy.run_path(str(ROOT / "studies" / "cluster_live.py"))


def _live(values: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame([{"policy": p, "art": v} for p, vs in values.items() for v in vs])


def test_an_order_is_decided_only_by_pairs_apart_beyond_their_interval():
    apart = {"a": [1.0, 1.1, 0.9], "b": [5.0, 5.1, 4.9], "c": [9.0, 9.2, 8.8]}
    assert study["_decided_share"](_live(apart), "art") == 1.0
    # a and b overlap: one pair of three undecided.
    overlapping = {"a": [1.0, 1.5, 0.5], "b": [1.2, 1.6, 0.9], "c": [9.0, 9.2, 8.8]}
    assert study["_decided_share"](_live(overlapping), "art") == pytest.approx(2 / 3)
    # One run each: no interval, nothing decided, however far apart.
    assert study["_decided_share"](_live({"a": [1.0], "b": [100.0]}), "art") == 0.0


@pytest.mark.parametrize("folder", ["cluster_live", "cluster_live_quick", "cluster_live_redis"])
def test_the_committed_ledgers_are_their_runs_scored_again(folder, tmp_path):
    out = ROOT / "studies" / "results" / folder
    study["rescored"](out, quick=folder.endswith("_quick")).write(tmp_path)
    assert (tmp_path / "claims.json").read_text() == (out / "claims.json").read_text()
