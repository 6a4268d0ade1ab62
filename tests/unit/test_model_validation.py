"""Issue 20's reproducers: every bad number, type or size gets a ModelError naming the
field (or a correct run) — never a crash, an abort, a hang or a bare exception."""

from __future__ import annotations

import copy
import json
import math
import re

import pytest
import yaml

import tierlab
from tierlab.errors import EngineError
from tierlab.model import limits
from tierlab.run.simulate import run_engine

from conftest import EXAMPLES, SMALL_MODEL


def refused(change, model=None) -> str:
    """The ModelError text for `model` (default SMALL_MODEL) changed by `change`."""
    m = copy.deepcopy(model or SMALL_MODEL)
    change(m)
    with pytest.raises(tierlab.ModelError) as e:
        tierlab.simulate(tierlab.load_model(m, base_dir=EXAMPLES))
    return str(e.value)


def example(name: str) -> dict:
    return yaml.load((EXAMPLES / name).read_text(), Loader=tierlab.model._Loader)


def test_a_zero_session_time_runs_sessions_of_one_request():
    """It crashed the engine (SIGSEGV): closed clients replaced sessions that ended
    before their first request by recursion, at one instant, for ever."""
    m = example("tpcw_cluster.yaml")
    m["workload"]["session_end"] = {"after_time": {"duration": 0}}
    t = tierlab.simulate(tierlab.load_model(m, base_dir=EXAMPLES), duration=6, warmup=1)
    sessions = t.summary["sessions"]
    assert sessions["completed"] > 100 and sessions["mean_requests"] == 1.0


def test_a_clock_that_stops_is_refused_with_the_field():
    """Closed clients with no think time, rejected at once, resent for ever at t = 0 (a hang)."""

    def change(m):
        m["tiers"]["app"]["pools"]["threads"].update(size=1, timeout=0)
        m["workload"]["think"] = 0.0

    msg = refused(change)
    assert "workload.think" in msg and "clock stopped" in msg


@pytest.mark.parametrize(
    "path,value",
    [
        ("tiers.app.pools.threads.timeout", math.inf),
        ("tiers.app.stations.cpu.overhead", math.inf),
        ("tiers.app.stations.disk.iops", math.inf),
        ("run.duration", math.inf),
        ("run.window", math.nan),
        ("links.lan.bandwidth", math.inf),
        ("workload.population.session_rate", math.inf),
        ("workload.think.exponential", math.inf),
        ("requests.A.app[1].cpu.uniform[1]", math.inf),
        ("requests.A.app[3].loop.count", math.inf),
    ],
)
def test_infinity_and_nan_are_refused_by_field(path, value):
    def change(m):
        m["tiers"]["app"]["stations"]["disk"] = {"kind": "disk", "iops": 100}
        m["links"] = {"lan": {"bandwidth": 1e9}}
        m["requests"]["A"]["app"][1] = {"cpu": {"uniform": [0.0, 0.02]}}
        m["requests"]["A"]["app"].append({"loop": {"count": 2, "steps": [{"disk": 1}]}})
        m["workload"]["think"] = {"exponential": 1.0}
        if path.startswith("workload.population"):
            m["workload"]["population"] = {"session_rate": 1.0}
        *parents, last = path.replace("[", ".").replace("]", "").split(".")
        node = m
        for key in parents:
            node = node[int(key)] if key.isdigit() else node[key]
        node[int(last) if last.isdigit() else last] = value

    msg = refused(change)
    assert path in msg and "finite number" in msg, msg


@pytest.mark.parametrize(
    "change,path",
    [
        (lambda m: m["tiers"]["app"]["pools"]["threads"].update(size=True), "tiers.app.pools.threads.size"),
        (lambda m: m["tiers"]["app"]["stations"]["cpu"].update(cores=True), "tiers.app.stations.cpu.cores"),
        (lambda m: m["run"].update(warmup=True), "run.warmup"),
        (lambda m: m["workload"].update(population={"session_rate": True}), "workload.population"),
        (lambda m: m["tiers"]["app"]["stations"].update(disk={"kind": "disk", "iops": True}), "tiers.app.stations.disk.iops"),
        (lambda m: m["run"].update(duration="600"), "run.duration"),
    ],
)
def test_a_boolean_or_a_text_is_not_a_number(change, path):
    msg = refused(change)
    assert path in msg and "a number is needed, not the" in msg, msg


@pytest.mark.parametrize(
    "change,path,text",
    [
        (lambda m: m["workload"].update(burstiness={"dispersion": 1e308}), "workload.burstiness.dispersion", "less than or equal to 1000000"),
        (lambda m: m["requests"]["A"].update(priority=2**40), "requests.A.priority", "less than or equal to 2147483647"),
        (lambda m: m.update(links={"client": {"preset": {"a": 1}}}), "links.client", "preset {'a': 1} does not exist"),
        (lambda m: m["tiers"]["app"].update(dispatch={"policy": [1]}), "tiers.app.dispatch", "policy is one of"),
        (lambda m: m["run"].update(seed=2**64), "run.seed", "less than or equal to"),
        (lambda m: m["workload"].update(population={"clients": 2**32}), "workload.population.clients", "4294967295"),
        (lambda m: m["run"].update(duration=1e12), "run.duration", "less than or equal to 1000000000"),
        (lambda m: m["run"].update(duration=1e308), "run.duration", "less than or equal to 1000000000"),
        (lambda m: m["run"].update(window=200), "run.window", "longer than the run (100.0 s)"),
        (lambda m: m["tiers"]["app"].update(servers=10**7), "tiers.app.servers", "less than or equal to 1000000"),
        (
            lambda m: m["requests"]["A"]["app"].__setitem__(1, {"cpu": {"lognormal": {"mean": 1.5, "sd": 1e308}}}),
            "requests.A.app[1].cpu",
            "sd / mean = 6.67e+307 is too large",
        ),
    ],
)
def test_out_of_range_numbers_name_the_field(change, path, text):
    msg = refused(change)
    assert path in msg and text in msg, msg


@pytest.mark.parametrize(
    "change,path,text",
    [
        (lambda m: m["run"].update(window=1e-9), "run.window", "1e-09 s over 100 s gives 1e+11 windows × 10 series ≈ 44 TB"),
        (lambda m: m["tiers"]["app"].update(servers=1_000_000), "run.window", "1e+03 windows × 10000000 series"),
        (lambda m: m["workload"].update(population={"clients": 100_000_000}), "workload.population.clients", "1e+08 sessions at once ≈ 140 GB"),
        (
            lambda m: (m["workload"].update(think=0.001, population={"clients": 10_000}), m["requests"]["A"]["app"].__setitem__(1, {"delay": 0.01})),
            "run.records",
            "≈ 1e+09 requests (1e+07/s for 100 s) kept as records ≈ 260 GB",
        ),
        (lambda m: m["workload"].update(population={"session_rate": 1e6}), "workload.population.session_rate", "1e+08 sessions at once ≈ 140 GB"),
        (lambda m: m["run"].update(duration=1e9, window=1e6, records=False), "run.duration", "≈ 2e+09 requests (2/s for 1e+09 s) × 7 events each"),
        (
            lambda m: (m["workload"].update(think=0.0), m["requests"]["A"].update(app=[{"loop": {"count": 1e12, "steps": [{"delay": 0.001}]}}])),
            "run.duration",
            "≈ 2 requests (one per session at least) × 1e+12 events each",
        ),
    ],
)
def test_a_run_too_big_to_hold_or_to_finish_is_refused_up_front(change, path, text):
    msg = refused(change)
    assert path in msg and text in msg, msg


def test_the_limits_leave_room_for_every_example():
    for f in sorted(EXAMPLES.glob("*.yaml")):
        if "tiers" in example(f.name):  # not the HTTP mapping
            tierlab.load_model(f).engine()  # raises ModelError if over a limit
    assert limits.MAX_EVENTS == 1e10


def test_yaml_numbers_in_exponent_form_are_numbers(tmp_path):
    """PyYAML (YAML 1.1) reads `1e-9` and `1.0e9` as texts; the model file loader does not."""
    m = copy.deepcopy(SMALL_MODEL)
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump(m).replace("duration: 100", "duration: 1e2"))
    assert tierlab.load_model(f).spec.run.duration == 100.0


def test_engine_refusals_become_model_errors_with_the_field():
    """What slips past validation and fails the engine's own check names the field."""
    engine = tierlab.load_model(SMALL_MODEL).engine()
    engine["types"][0]["programs"][0].insert(0, {"op": "delay", "time": {"kind": "empirical", "values": [], "cumulative": []}})
    with pytest.raises(tierlab.ModelError) as e:
        run_engine(tierlab._core.simulate, engine, None, "m.yaml")
    assert e.value.problems[0][0] == "requests.A.app[0]" and "not a valid distribution" in str(e.value)


def test_an_engine_panic_becomes_an_engine_error():
    """The bindings catch a panic (catch_unwind in crates/py) and raise RuntimeError;
    no valid input is known to panic any more (the proptest and the fuzz campaign look
    for one), so the binding's behaviour is stood in for here."""

    def panics(model_json, progress):
        raise RuntimeError("the simulation engine failed (a bug in tierlab, please report it): index out of bounds")

    with pytest.raises(EngineError, match="a bug in tierlab"):
        run_engine(panics, tierlab.load_model(SMALL_MODEL).engine(), None, None)

    class PanicException(BaseException):  # PyO3's, for a panic outside catch_unwind
        pass

    def panics_outside(model_json, progress):
        raise PanicException("index out of bounds")

    with pytest.raises(EngineError, match="a bug in tierlab.*index out of bounds"):
        run_engine(panics_outside, tierlab.load_model(SMALL_MODEL).engine(), None, None)


def test_the_json_schema_states_every_range():
    """`tierlab schema` carries the ranges to editors (and to the fuzz campaign)."""
    schema = tierlab.model.json_schema()
    text = json.dumps(schema)
    assert not re.search(r'"(ge|gt|le|lt)":', text)
    run = schema["$defs"]["Run"]["properties"]
    assert run["duration"]["exclusiveMinimum"] == 0 and run["duration"]["maximum"] == 1e9
    assert run["seed"]["maximum"] == 2**64 - 1
