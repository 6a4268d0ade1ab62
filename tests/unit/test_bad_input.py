"""Every mistake gets one clear message naming the field and the fix."""

from __future__ import annotations

import copy
import json

import pytest

import tierlab
from tierlab import _core

from conftest import SMALL_MODEL


def problems(change) -> str:
    m = copy.deepcopy(SMALL_MODEL)
    change(m)
    with pytest.raises(tierlab.ModelError) as e:
        tierlab.simulate(m)
    return str(e.value)


def test_base_model_is_valid():
    assert tierlab.simulate(SMALL_MODEL).summary["requests"]["ok"] > 0


def test_unknown_field():
    msg = problems(lambda m: m["tiers"]["app"]["pools"]["threads"].update(sise=3))
    assert "tiers.app.pools.threads.sise" in msg and "Extra inputs are not permitted" in msg


def test_unknown_pool_and_tier():
    msg = problems(lambda m: m["requests"]["A"]["app"].insert(0, {"acquire": "conns"}))
    assert "requests.A.app[0]" in msg and "'conns' does not exist" in msg and "pools: threads" in msg
    msg = problems(lambda m: m["requests"]["A"]["app"].append({"call": "db"}))
    assert "requests.A.app[3]" in msg and "'db' is not a tier" in msg
    msg = problems(lambda m: m["requests"]["A"].update(dbx=[{"delay": 1}]))
    assert "requests.A.dbx" in msg and "not a tier" in msg


def _use(pool="threads", steps=()):
    return {"use": {"pool": pool, "steps": list(steps)}}


@pytest.mark.parametrize(
    "program,path,text",
    [
        ([_use("conns")], "requests.A.app[0].use.pool", "'conns' does not exist"),
        ([_use(steps=[_use()])], "requests.A.app[0].use.steps[0]", "do not nest"),
        ([_use(), {"acquire": "threads"}, {"release": "threads"}], "requests.A.app[1]", "use blocks only, or acquire/release only"),
        ([{"acquire": "threads"}, _use()], "requests.A.app[0]", "use blocks only"),
        (
            [{"transaction": {"pool": "threads", "steps": [{"transaction": {"pool": "threads", "steps": []}}]}}],
            "requests.A.app[0].transaction.steps[0]",
            "do not nest",
        ),
    ],
)
def test_use_blocks(program, path, text):
    msg = problems(lambda m: m["requests"]["A"].update(app=program))
    assert path in msg and text in msg


@pytest.mark.parametrize(
    "change,path",
    [
        (lambda m: m["workload"].update(population={"session_rate": 0}), "workload.population"),
        (lambda m: m["workload"].update(population={"session_rate": -1}), "workload.population"),
        (lambda m: m["tiers"]["app"]["stations"].update(disk={"kind": "disk", "iops": 0}), "tiers.app.stations.disk"),
        (lambda m: m["requests"]["A"]["app"].__setitem__(1, {"cpu": {"exponential": -2}}), "requests.A.app[1]"),
        (lambda m: m["tiers"]["app"]["pools"]["threads"].update(size=0), "tiers.app.pools.threads.size"),
    ],
)
def test_non_positive_rates_and_sizes(change, path):
    assert path in problems(change)


def test_rows_must_sum_to_one():
    msg = problems(lambda m: m["workload"]["chain"].update(matrix={"A": {"A": 0.5}}))
    assert "row 'A'" in msg and "sum to 0.5" in msg and "normalize: true" in msg
    m = copy.deepcopy(SMALL_MODEL)
    m["workload"]["chain"].update(matrix={"A": {"A": 0.5}}, normalize=True)
    assert tierlab.simulate(m).summary["requests"]["ok"] > 0


def test_release_not_held_and_unbalanced_loops():
    msg = problems(lambda m: m["requests"]["A"]["app"].append({"release": "threads"}))
    assert "requests.A.app[3]" in msg and "not held" in msg
    msg = problems(lambda m: m["requests"]["A"]["app"].append({"loop": {"count": 2, "steps": [{"acquire": "threads"}]}}))
    assert "loop body must give back" in msg


def test_chain_states_need_request_types():
    msg = problems(lambda m: m["workload"]["chain"].update(matrix={"A": {"B": 1.0}, "B": {"A": 1.0}}))
    assert "states with no request type: B" in msg


def test_call_cycles_are_rejected():
    def cyc(m):
        m["tiers"]["db"] = {}
        m["requests"]["A"]["app"].append({"call": "db"})
        m["requests"]["A"]["db"] = [{"call": "app"}]

    assert "cycle (app → db → app)" in problems(cyc)


def test_bad_distribution_and_step_shapes():
    msg = problems(lambda m: m["requests"]["A"]["app"].__setitem__(1, {"cpu": {"gamma": 1}}))
    assert "requests.A.app[1]" in msg and "exponential" in msg
    msg = problems(lambda m: m["requests"]["A"]["app"].append({"sleep": 1}))
    assert "exactly one of: acquire" in msg


def test_overloaded_open_workload_warns_but_runs():
    m = copy.deepcopy(SMALL_MODEL)
    m["workload"] = {"population": {"session_rate": 150}, "chain": {"matrix": {"A": {"END_OF_SESSION": 1.0}}, "start": "A"}}
    m["tiers"]["app"]["pools"]["threads"]["size"] = 1000
    with pytest.warns(tierlab.ModelWarning, match=r"tiers.app.stations.cpu to 150%"):
        t = tierlab.simulate(m, duration=20)
    assert t.summary["measured_seconds"] == 20


def test_engine_refusals_name_the_field():
    """A malformed engine input that slips past the checks gets the engine's own error."""
    m = json.loads(json.dumps(tierlab.load_model(SMALL_MODEL).engine()))
    m["types"][0]["programs"][0].insert(0, {"op": "delay", "time": {"kind": "empirical", "values": [], "cumulative": []}})
    with pytest.raises(ValueError, match=r"engine model: requests\.A\.app\[0\]: .* is not a valid distribution"):
        _core.simulate(json.dumps(m))
    with pytest.raises(ValueError, match="engine model"):
        _core.simulate('{"tiers": []}')


def test_missing_trace_table(tmp_path):
    t = tierlab.simulate(SMALL_MODEL)
    t.write(tmp_path)
    (tmp_path / "timeseries.parquet").unlink()
    with pytest.raises(tierlab.TraceError, match="missing timeseries.parquet"):
        tierlab.read_trace(tmp_path)


def test_acquire_cpu_needs_the_tier_to_have_one_cpu():
    def two_cpus(m):
        m["tiers"]["app"]["pools"]["threads"]["acquire_cpu"] = 0.001
        m["tiers"]["app"]["stations"]["cpu2"] = {"kind": "cpu"}
        m["requests"]["A"]["app"][1]["on"] = "cpu"

    msg = problems(two_cpus)
    assert msg.count("tiers.app.pools.threads.acquire_cpu") == 1 and "tier 'app' has 2" in msg


@pytest.mark.parametrize(
    "change,path,text",
    [
        (
            lambda m: m["requests"]["A"]["app"][1].update(contention={"pool": "db", "count": "busy", "per": 0.1}),
            "requests.A.app[1].contention.pool",
            "'db' is not a pool",
        ),
        (lambda m: m["requests"]["A"]["app"][1].update(contention={"count": "busy", "per": 0.1}), "requests.A.app[1].contention.pool", "name the pool"),
        (
            lambda m: m["requests"]["A"]["app"].insert(1, {"delay": 0.001, "contention": {"pool": "db", "count": "busy", "per": 0.1}}),
            "requests.A.app[1].contention.pool",
            "'db' is not a pool",
        ),
        (
            lambda m: m["tiers"]["app"]["pools"]["threads"].update(acquire_contention={"count": "waiting", "per": 0.1}),
            "tiers.app.pools.threads.acquire_contention",
            "lacks",
        ),
        (
            lambda m: m["requests"]["A"]["app"][1].update(contention={"pool": "threads", "count": "busy", "per": -1}),
            "requests.A.app[1].contention.per",
            "greater than or equal to 0",
        ),
    ],
)
def test_a_contention_term_names_its_field(change, path, text):
    msg = problems(change)
    assert path in msg and text in msg


def test_handoff_cpu_needs_the_tier_to_have_one_cpu_and_no_handoff_beside():
    def no_cpu(m):
        m["tiers"]["app"]["pools"]["threads"]["handoff_cpu"] = 0.001
        m["tiers"]["app"]["stations"] = {}
        m["requests"]["A"]["app"] = [s for s in m["requests"]["A"]["app"] if "cpu" not in s]

    msg = problems(no_cpu)
    assert "tiers.app.pools.threads.handoff_cpu" in msg and "tier 'app' has 0" in msg

    def both(m):
        m["tiers"]["app"]["pools"]["threads"] |= {"handoff": 0.001, "handoff_cpu": 0.001}

    msg = problems(both)
    assert "tiers.app.pools.threads" in msg and "handoff (a delay) or handoff_cpu (a CPU demand), not both" in msg
