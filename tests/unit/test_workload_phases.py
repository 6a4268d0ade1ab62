"""Workload phases (docs/phases.md): from each phase's `at` the open population's rate,
the chain's mix and a tier's added delay change, in closed forms — each phase's
throughput is its arrival rate on an infinite-server tier, each phase's mix its
chain's, and a delay of d on a tier visited k times raises every response time by
exactly k·d where nothing queues; a phase that changes nothing changes no result; and
every wrong field is named."""

from __future__ import annotations

import math
import warnings

import pandas as pd
import pytest
import yaml

import tierlab
from tierlab.errors import ModelError
from tierlab.model.chain import ChainData, reweighted, visit_mix
from tierlab.run.engine import run_engine

from conftest import EXAMPLES, single_request_sessions

# A pure delay: an infinite-server tier, where the departures are the arrivals shifted.
DELAY = {"app": [{"delay": 0.05}]}


def open_model(rate: float, phases: list, **run) -> dict:
    m = single_request_sessions(rate, {"app": {}}, DELAY, duration=900, warmup=0, window=1.0, seed=3, **run)
    m["workload"]["phases"] = phases
    return m


def test_each_phases_throughput_is_its_arrival_rate():
    """Poisson arrivals at 20/s, 40/s from 300 s, 10/s from 600 s, through a 50 ms delay:
    a phase's completions per second over its whole seconds after the first (the
    delay's transient) estimate its rate with standard error sqrt(λ/T) (0.26, 0.37,
    0.18 /s over 299 s); each is within 4 of them (seed 3: 1.8, 0.5 and 0.02)."""
    phases = [{"at": 300, "session_rate": 40}, {"at": 600, "session_rate": 10}]
    trace = tierlab.simulate(open_model(20, phases))
    done = trace.series("app", "completions")[0]
    for start, end, rate in [(0, 300, 20), (300, 600, 40), (600, 900, 10)]:
        window = done[(done.index >= start + 1) & (done.index < end)]
        seconds = len(window)
        measured = window.sum() / seconds
        assert abs(measured - rate) <= 4 * math.sqrt(rate / seconds), (start, measured, rate)
    r = trace.summary["requests"]
    assert r["rejected"] == r["timeout"] == r["error"] == 0


def two_types(phases: list, population: dict | None = None) -> dict:
    """Sessions of one request, of type a or b as the entry state's row says (½, ½)."""
    return {
        "run": {"duration": 600, "warmup": 0, "seed": 5, "window": 1.0, "records": True},
        "tiers": {"app": {}},
        "requests": {"a": DELAY, "b": DELAY},
        "workload": {
            "population": population or {"session_rate": 20},
            "chain": {"matrix": {"INIT": {"a": 0.5, "b": 0.5}, "a": {"END_OF_SESSION": 1}, "b": {"END_OF_SESSION": 1}}, "start": "INIT"},
            "phases": phases,
        },
    }


def test_each_phases_mix_is_its_chains():
    """b's share is ½, then ¾ from 300 s (b ×3 in INIT's row: 0.5·3 / (0.5 + 1.5)); with
    ~6,000 requests a phase its standard error is ≤ 0.0065, and each share is within 4
    (seed 5: 2.5 and 1.1)."""
    trace = tierlab.simulate(two_types([{"at": 300, "reweight": {"b": 3}}]))
    req = trace.requests
    for start, end, share in [(0, 300, 0.5), (300, 600, 0.75)]:
        types = req[(req.start >= start) & (req.start < end)].type
        measured = (types == "b").mean()
        assert abs(measured - share) <= 4 * math.sqrt(share * (1 - share) / len(types)), (start, measured)


def test_a_phases_reweight_replaces_the_models_own():
    """The model's chain.reweight holds until a phase gives another; `{}` is the chain as read."""
    m = two_types([{"at": 200, "reweight": {}}, {"at": 400, "reweight": {"a": 3}}])
    m["workload"]["chain"]["reweight"] = {"b": 3}
    trace = tierlab.simulate(m)
    req = trace.requests
    for start, end, share in [(0, 200, 0.75), (200, 400, 0.5), (400, 600, 0.25)]:
        types = req[(req.start >= start) & (req.start < end)].type
        measured = (types == "b").mean()
        assert abs(measured - share) <= 4 * math.sqrt(share * (1 - share) / len(types)), (start, measured)


def delayed(phases: list) -> dict:
    """Each request visits `db` three times, 1 ms each; every wait a constant delay: no
    queue anywhere, so a response time is the sum of its steps."""
    m = single_request_sessions(
        5.0,
        {"app": {}, "db": {}},
        {"app": [{"loop": {"count": 3, "steps": [{"call": "db"}]}}], "db": [{"delay": 0.001}]},
        duration=300,
        warmup=0,
        window=1.0,
        seed=2,
        records=True,
    )
    m["workload"]["phases"] = phases
    return m


def test_an_added_delay_raises_each_response_time_by_visits_times_seconds():
    trace = tierlab.simulate(delayed([{"at": 100, "delay": {"db": 0.002}}, {"at": 200, "delay": {"db": 0}}]))
    req = trace.requests
    before, during, after = req[req.end < 100], req[(req.start >= 100) & (req.end < 200)], req[req.start >= 200]
    assert len(before) > 300 and len(during) > 300 and len(after) > 300
    assert before.response_time.to_numpy() == pytest.approx(3 * 0.001, abs=1e-9)
    assert during.response_time.to_numpy() == pytest.approx(3 * (0.001 + 0.002), abs=1e-9)
    assert after.response_time.to_numpy() == pytest.approx(3 * 0.001, abs=1e-9)
    # The delay is spent at the delayed tier: the database's residence, 3 visits each.
    assert (during["db.visits"] == 3).all()
    assert during["db.time"].to_numpy() == pytest.approx(3 * 0.003, abs=1e-9)


def test_a_delay_on_the_entry_tier_is_added_once_per_request():
    trace = tierlab.simulate(delayed([{"at": 100, "delay": {"app": 0.01}}]))
    req = trace.requests
    during = req[req.start >= 100]
    assert during.response_time.to_numpy() == pytest.approx(0.01 + 3 * 0.001, abs=1e-9)


def test_same_model_and_seed_same_result():
    phases = [{"at": 200, "session_rate": 30, "reweight": {"a": 2}}, {"at": 400, "delay": {"app": 0.01}}]
    a, b = tierlab.simulate(two_types(phases)), tierlab.simulate(two_types(phases))
    assert a.summary == b.summary
    pd.testing.assert_frame_equal(a.timeseries, b.timeseries)
    pd.testing.assert_frame_equal(a.requests, b.requests)


@pytest.mark.parametrize(
    "phase",
    [{"delay": {"app": 0}}, {"reweight": {}}],
    ids=["a zero delay", "the chain as read"],
)
def test_a_phase_that_changes_nothing_changes_no_result(phase):
    """A zero delay (its tier's programs gain the instruction, which waits nothing) and
    the chain as it was (another navigator, the same rows): byte for byte the run
    without phases — neither draws a random number — but for the phase's own event."""
    a, b = tierlab.simulate(two_types([{"at": 300, **phase}])), tierlab.simulate(two_types([]))
    assert a.summary.pop("events") == b.summary.pop("events") + 1
    assert a.summary == b.summary
    pd.testing.assert_frame_equal(a.timeseries, b.timeseries)
    pd.testing.assert_frame_equal(a.requests, b.requests)


def test_mix_and_delay_phases_work_for_a_closed_population():
    m = two_types([{"at": 300, "reweight": {"b": 3}, "delay": {"app": 0.01}}], {"clients": 4})
    m["workload"]["think"] = 0.2
    req = tierlab.simulate(m).requests
    late = req[req.start >= 300]
    assert (late.type == "b").mean() == pytest.approx(0.75, abs=4 * math.sqrt(0.75 * 0.25 / len(late)))
    assert late.response_time.to_numpy() == pytest.approx(0.06, abs=1e-9)


def refused(m: dict) -> str:
    with pytest.raises(ModelError) as e:
        tierlab.load_model(m).engine()
    return str(e.value)


@pytest.mark.parametrize(
    "phases, text",
    [
        (
            [{"at": 300, "session_rate": 2}, {"at": 200, "session_rate": 3}],
            "workload.phases[1].at: must be increasing: 200.0 s is not after phases[0].at (300.0 s)",
        ),
        ([{"at": 300, "session_rate": 2}, {"at": 300, "session_rate": 3}], "workload.phases[1].at: must be increasing"),
        ([{"at": 600, "session_rate": 2}], "workload.phases[0].at: 600.0 s is not before the run's end (run.duration 600.0 s)"),
        ([{"at": -1, "session_rate": 2}], "workload.phases[0].at: Input should be greater than or equal to 0"),
        ([{"at": 10, "delay": {"dbx": 0.002}}], "workload.phases[0].delay.dbx: 'dbx' is not a tier (tiers: app)"),
        ([{"at": 10, "delay": {"app": -0.002}}], "workload.phases[0].delay.app: Input should be greater than or equal to 0"),
        ([{"at": 10, "reweight": {"NOPE": 2}}], "workload.phases[0].reweight.NOPE: 'NOPE' is not a state of the chain"),
        ([{"at": 10, "reweight": {"a": 0}}], "workload.phases[0].reweight.a: Input should be greater than 0"),
        ([{"at": 10, "session_rate": 0}], "workload.phases[0].session_rate: Input should be greater than 0"),
        ([{"at": 10}], "workload.phases[0]: Value error, a phase changes nothing; give session_rate, reweight or delay"),
        ([{"at": 10, "rate": 3}], "workload.phases[0].rate: Extra inputs are not permitted"),
    ],
)
def test_a_wrong_phase_is_named(phases, text):
    msg = refused(two_types(phases))
    assert text in msg, msg


def test_a_closed_populations_rate_is_refused():
    msg = refused(two_types([{"at": 10, "session_rate": 3}], {"clients": 4}))
    assert "workload.phases[0].session_rate: phases change an open population's session rate, and this one is closed" in msg, msg


def test_an_overloading_phase_is_warned_about():
    m = single_request_sessions(5.0, {"app": {"stations": {"cpu": {"kind": "cpu"}}}}, {"app": [{"cpu": 0.1}]}, duration=100, warmup=0)
    m["workload"]["phases"] = [{"at": 10, "session_rate": 20}]
    with pytest.warns(
        tierlab.ModelWarning,
        match=r"offers 20 sessions/s, which loads tiers\.app\.stations\.cpu to 200% .* while it holds \(lower workload\.phases\[0\]\.session_rate",
    ):
        tierlab.load_model(m).engine()


@pytest.mark.parametrize(
    "edit, path",
    [
        (lambda p: p[1].update(at=100.0), "workload.phases[1].at"),
        (lambda p: p[0].update(delay=[{"tier": 9, "seconds": 0.1}]), "workload.phases[0].delay"),
        (lambda p: p[0].update(matrix=[[1.0]]), "workload.phases[0].reweight"),
    ],
    ids=["not increasing", "no such tier", "not the chain's states"],
)
def test_the_engine_refuses_what_the_compiler_would(edit, path):
    """A compiled input edited past the compiler: the engine's own check names the field."""
    engine = tierlab.load_model(two_types([{"at": 300, "session_rate": 30}, {"at": 400, "session_rate": 20}])).engine()
    edit(engine["workload"]["phases"])
    with pytest.raises(ModelError) as e:
        run_engine(tierlab._core.simulate, engine, None, "m.yaml")
    assert e.value.problems[0][0] == path, e.value


# ---- the example's scenarios ------------------------------------------------------------

SCENARIOS = yaml.safe_load((EXAMPLES / "control_scenarios.yaml").read_text())
ORDERING = {"SHOP", "CREG", "BUYR", "BUYC", "ORDI", "ORDD", "ADMR", "ADMC"}


def test_the_example_mixes_are_tpcws_browsing_and_ordering_splits():
    """The example's factors give the browsing mix's 5% of ordering pages and the
    ordering mix's 50% (TPC-W's spec), to half a point, on the chain's stationary mix."""
    model = tierlab.load_model(EXAMPLES / "tpcw_2tier.yaml")
    chain, _ = model.chain
    roles = ["entry" if s == "INIT" else "page" for s in chain.states]
    for phase, share in zip(SCENARIOS["mix_shift"], (0.05, 0.50)):
        matrix, problems = reweighted(chain.states, chain.rows, phase["reweight"], "reweight")
        assert not problems
        mix, _ = visit_mix(ChainData(chain.states, matrix, chain.rows), chain.index("INIT"), roles)
        assert sum(v for s, v in mix.items() if s in ORDERING) == pytest.approx(share, abs=0.005)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_example_scenario_compiles_on_the_tpcw_model(scenario):
    """Within the model's capacity throughout: no overload warning."""
    model = tierlab.load_model(EXAMPLES / "tpcw_2tier.yaml").with_changes({"workload.phases": SCENARIOS[scenario]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", tierlab.ModelWarning)
        phases = model.engine()["workload"]["phases"]
    assert [p["at"] for p in phases] == [p["at"] for p in SCENARIOS[scenario]]
