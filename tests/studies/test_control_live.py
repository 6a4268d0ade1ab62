"""studies/control.py's live scoring: every repeat's phases are scored, and twin beats
gradient on the mix shift only where the paired interval says so."""

from __future__ import annotations

import runpy

import pandas as pd

from conftest import ROOT

study = runpy.run_path(str(ROOT / "studies" / "control.py"))


def _phases(served: dict[str, list[float]], static_share: float = 0.9, twin_p99: float = 1.0) -> pd.DataFrame:
    """The mix shift's two phases per strategy and repeat: `served` requests/s per repeat,
    each phase offered 100 (static serves `static_share` of it)."""
    rows = []
    for strategy, per_repeat in served.items():
        for seed, thr in enumerate(per_repeat, start=1):
            for phase in (0, 1):
                share = static_share if strategy == "static" else 1.0
                p99 = twin_p99 if strategy == "twin" else 2.0
                rows.append(
                    {
                        "scenario": "mix_shift",
                        "strategy": strategy,
                        "seed": seed,
                        "phase": phase,
                        "offered": thr / share,
                        "throughput": thr,
                        "p99": p99,
                        "p99_vs_slo": p99 / study["SLO"],
                        **dict.fromkeys(("rejected", "timeout", "error", "unfinished"), 0),
                        "ok": 1000,
                        "changes": 1,
                    }
                )
    return pd.DataFrame(rows)


def _verdict(table: pd.DataFrame, claim: str) -> dict:
    return next(c for c in study["_live_claims"](table).claims if c["claim"].startswith(claim))


def test_twin_beats_gradient_only_where_the_paired_interval_is_above_zero():
    apart = _phases({"static": [60, 62, 61], "gradient": [80, 85, 78], "twin": [95, 99, 94]})
    assert _verdict(apart, "twin beats gradient")["verdict"] == "reproduced"
    # Twin ahead in the mean but not in every repeat: the interval straddles 0.
    mixed = _phases({"static": [60, 62, 61], "gradient": [80, 95, 78], "twin": [95, 85, 94]})
    assert _verdict(mixed, "twin beats gradient")["verdict"] == "not reproduced"
    # One run each: no interval, so not testable however far apart.
    single = _phases({"static": [60], "gradient": [50], "twin": [99]})
    assert _verdict(single, "twin beats gradient")["verdict"] == "not testable here"
    # The static sizes keep up: nothing to gain, not testable.
    easy = _phases({"static": [60, 62, 61], "gradient": [80, 85, 78], "twin": [95, 99, 94]}, static_share=1.0)
    easy["p99_vs_slo"] = 0.5
    assert _verdict(easy, "twin beats gradient")["verdict"] == "not testable here"


def test_a_per_phase_target_holds_in_every_repeat():
    table = _phases({"static": [60, 62, 61], "gradient": [80, 85, 78], "twin": [95, 99, 94]})
    assert _verdict(table, "twin: p99 within")["verdict"] == "reproduced"
    late = table.copy()
    miss = (late.strategy == "twin") & (late.seed == 3) & (late.phase == 1)
    late.loc[miss, "p99"] = study["SLO"] * 2
    verdict = _verdict(late, "twin: p99 within")
    assert verdict["verdict"] == "not reproduced" and "mix_shift/1/s3" in verdict["ours"]


def test_a_measured_rate_puts_the_peak_midway_and_is_refused_where_no_size_serves_more(tmp_path, monkeypatch):
    import json

    import pytest

    import tierlab.experiments.sizing as sizing

    found = {(20, 15): 50.0, (4, 4): 56.0}
    asked = []

    def search(model, configs, start, **kw):
        asked.append((model.spec.run.duration, model.spec.run.warmup, configs, start, kw["step"], kw["runs"]))
        result = pd.DataFrame({"M": [c[0] for c in configs], "N": [c[1] for c in configs], "lambda_max": [found[c] for c in configs], "bracketed": True})
        return result, pd.DataFrame({"M": [20], "N": [15], "lambda": [30.0], "passed": [True]})

    monkeypatch.setattr(sizing, "max_sustainable_rate", search)
    base = study["load_model"](study["MODEL"])
    rate = study["_measured_rate"](None, base, None, 3.0, tmp_path)
    assert rate == pytest.approx(53.0 / 3.0)  # the peak, 3.0 × rate, midway between 50 and 56
    assert asked == [(40.0, 10.0, [(20, 15), (4, 4)], 30.0, 1.0, 1)]  # as `tierlab live validate` measured capacity.json
    assert json.loads((tmp_path / "capacity.json").read_text())["rate"] == pytest.approx(rate)
    found[(4, 4)] = 49.0
    with pytest.raises(SystemExit, match="nothing to control"):
        study["_measured_rate"](None, base, None, 3.0, tmp_path)
    # The refusal keeps its evidence: the capacities measured, no rate.
    refused = json.loads((tmp_path / "capacity.json").read_text())
    assert refused["rate"] is None and [r["lambda_max"] for r in refused["result"]] == [50.0, 49.0]
    assert study["_rate_arg"]("measure") == "measure" and study["_rate_arg"]("18.5") == 18.5
    with pytest.raises(Exception, match="neither a number nor"):
        study["_rate_arg"]("fast")
