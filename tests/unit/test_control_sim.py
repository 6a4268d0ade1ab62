"""The online controller in the simulator (the model's `control:`, docs/control.md):
Gradient2 lowers the thread limit when the threads' hold time rises under a burst of
load, within its bounds; a run is as deterministic with a controller as without; the
static controller changes nothing; and the model's `control:` is checked field by field."""

from __future__ import annotations

import json
import re

import jsonschema
import pandas as pd
import pytest
from control_models import BOUNDS, GRADIENT, bursty

import tierlab
from tierlab import _core
from tierlab.errors import ModelError

from conftest import check_little


def decisions(trace: tierlab.Trace) -> pd.DataFrame:
    return pd.DataFrame(trace.summary["control"]["decisions"]).assign(threads=lambda d: d.sizes.str["threads"])


def test_gradient_lowers_the_thread_limit_when_the_hold_time_rises():
    trace = tierlab.simulate(bursty(GRADIENT))
    c = trace.summary["control"]
    assert (c["strategy"], c["tier"], c["interval"]) == ("gradient", "app", 5.0)
    d = decisions(trace)
    assert len(d) == 900 // 5 and d.t.tolist() == [5.0 * (k + 1) for k in range(len(d))]
    assert d.threads.between(*BOUNDS).all()
    assert d.threads.min() < 40, "the limit came down in a burst"
    # Every fall is Gradient2's: a gradient under 1, the hold time above 1.5 × its long-term average.
    before = pd.concat([pd.Series([40]), d.threads[:-1]], ignore_index=True)
    falls = d[d.threads.to_numpy() < before.to_numpy()]
    assert len(falls) > 0
    for reason in falls.reason:
        m = re.match(r"gradient (\d\.\d+) = min\(1, 1\.5 × long ([\d.]+) ms / hold ([\d.]+) ms\)", reason)
        assert m, reason
        gradient, long, hold = map(float, m.groups())
        assert gradient < 1 and hold > 1.5 * long, reason
    # The control series: the size in force in each window, as decided at the interval before.
    s = trace.timeseries
    size = s[(s.resource == "control") & (s.metric == "threads")].set_index("t")["value"]
    assert size.loc[0.0] == 40
    for t, threads in zip(d.t, d.threads):
        if t < 900:
            assert size.loc[t] == threads
    # Shrinking while busy loses no request: every one sent is counted once.
    r = trace.summary["requests"]
    assert r["rejected"] == r["timeout"] == r["error"] == 0
    assert len(trace.requests) == r["ok"]
    check_little(trace)


def test_max_step_limits_every_change():
    trace = tierlab.simulate(bursty(GRADIENT | {"max_step": 2}))
    steps = decisions(trace).threads.diff().abs().dropna()
    assert steps.max() == 2 and (steps > 0).sum() > 0


def test_same_seed_same_decisions():
    a, b = tierlab.simulate(bursty(GRADIENT)), tierlab.simulate(bursty(GRADIENT))
    assert a.summary == b.summary
    pd.testing.assert_frame_equal(a.timeseries, b.timeseries)


def test_static_is_no_control_at_all():
    static = {"strategy": "static", "interval": 5, "bounds": {"threads": BOUNDS}}
    a, b = tierlab.simulate(bursty(static)), tierlab.simulate(bursty(None))
    assert "control" not in b.summary, "a run without control has no control field"
    d = decisions(a)
    assert (d.threads == 40).all() and not d.changed.any() and (d.reason == "static: sizes held").all()
    assert {k: v for k, v in a.summary.items() if k != "control"} == b.summary
    ours = a.timeseries[a.timeseries.resource != "control"].reset_index(drop=True)
    pd.testing.assert_frame_equal(ours, b.timeseries, check_categorical=False)
    pd.testing.assert_frame_equal(a.requests, b.requests)


def test_the_compiled_control_is_valid_under_the_engine_schema():
    for control in (GRADIENT, {"strategy": "static", "bounds": {"threads": BOUNDS}}):
        engine = tierlab.load_model(bursty(control)).engine()
        jsonschema.validate(engine, json.loads(_core.model_schema()))
        assert engine["control"]["tier"] == 0 and engine["control"]["strategy"]["strategy"] == control["strategy"]


@pytest.mark.parametrize(
    ("control", "field", "says"),
    [
        ({"interval": 2.5}, "control.interval", "whole number of monitoring windows"),
        ({"bounds": {"threads": [8, 4]}}, "control.bounds.threads", "least size is above the greatest"),
        ({"bounds": {"connections": [1, 4]}}, "control.bounds.connections", "has 0 connections pools"),
        ({"bounds": {}}, "control.bounds", "give bounds.threads"),
        ({"tier": "db"}, "control.tier", "'db' is not a tier"),
        ({"gradient": {"smoothing": 0}}, "control.gradient.smoothing", ""),
        ({"strategy": "pid"}, "control.strategy", ""),
    ],
)
def test_a_bad_control_section_names_its_field(control: dict, field: str, says: str):
    with pytest.raises(ModelError) as e:
        tierlab.load_model(bursty(GRADIENT | control)).engine()
    assert field in str(e.value) and says in str(e.value), str(e.value)
