"""`calibrate(lock=True)` finds an interpreter lock from the traces and fits its hand-off
(issue 41 item 3): simulated traces of a model whose lock is known — two request types,
an app station of two cores under `interpreter_lock` — must be found locked, with the
hand-off recovered; the same model without the lock must not be."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from twin_models import known, traces

import tierlab
from tierlab.experiments.twin import calibrate
from tierlab.experiments.twin.lock import SWITCH_INTERVAL, Lock, fitted
from tierlab.live import cpu_budget

LOADS = (3, 30)  # closed clients: the lock contended now and then, and always


@pytest.mark.parametrize("handoff", [0.0001, 0.0005, 0.001])
def test_a_lock_is_found_and_its_handoff_recovered(tmp_path, handoff):
    """With CPython's switch interval and a known hand-off, the process never uses more
    than one of its two cores where two or more requests compute: the lock is found.
    Its hand-off, fitted at the two loads, within 10% (measured: +0.5% at 0.1 ms, −0.9%
    at 0.5, +0.7% at 1), the CPU outside the handlers (none in the model) under 5% of
    the demands' 3.4 ms per request (measured: none), and the twin's CPU per request at
    each load within 3% of the trace's (measured: within 1%); the twin's app tier is one
    core under the lock."""
    m = known(2, {"switch_interval": SWITCH_INTERVAL, "handoff": handoff})
    cal = calibrate(traces(m, tmp_path, LOADS), m, lock=True)
    found = cal.report()["interpreter_lock"]
    assert found["present"] and found["ceiling"] == pytest.approx(1.0, abs=0.01)
    assert found["separable"]
    assert found["handoff"] == pytest.approx(handoff, rel=0.10)
    assert found["outside_handlers"] < 0.05 * 0.0034
    for t in found["traces"]:
        assert t["twin_cpu"] == pytest.approx(t["live_cpu"], rel=0.03)
    assert found["traces"][1]["handoffs_per_request"] > 1.5 * found["traces"][0]["handoffs_per_request"]
    app = cal.model["tiers"]["app"]
    assert app["interpreter_lock"] == {"switch_interval": SWITCH_INTERVAL, "handoff": found["handoff"]}
    assert app["stations"]["cpu"]["cores"] == 1


def test_the_locked_twin_serves_what_the_original_served(tmp_path):
    """The loop closes: the twin, simulated at the heavy load with another seed, serves the
    original's throughput within 2% (the lock, not the two cores, bounds it)."""
    m = known(2, {"switch_interval": SWITCH_INTERVAL, "handoff": 0.0005})
    folders = traces(m, tmp_path, LOADS)
    twin = tierlab.load_model(calibrate(folders, m, lock=True).write(tmp_path / "twin.yaml"))
    heavy = {"workload.population.clients": LOADS[1]}
    original = tierlab.simulate(m.with_changes(heavy).with_run(records=False)).summary["throughput"]
    assert tierlab.simulate(twin.with_changes(heavy).with_run(seed=8, records=False)).summary["throughput"] == pytest.approx(original, rel=0.02)


def test_no_lock_is_found_where_the_process_uses_both_cores(tmp_path):
    """The same model without the lock: 2+ requests computing use both cores (ceiling 2),
    so the twin has no lock and its station the two cores, as without `lock`."""
    m = known(2, None)
    cal = calibrate(traces(m, tmp_path, LOADS), m, lock=True)
    found = cal.report()["interpreter_lock"]
    assert not found["present"] and found["ceiling"] > 1.9
    assert "interpreter_lock" not in cal.model["tiers"]["app"]
    assert cal.model == calibrate(traces(m, tmp_path / "again", LOADS), m).model


def test_a_lock_is_not_looked_for_on_one_core(tmp_path):
    """On a one-core station a lock and the core look alike from the process's CPU: not
    looked for, and said so."""
    m = known(1, None)
    cal = calibrate(traces(m, tmp_path, LOADS), m, lock=True)
    assert cal.report()["interpreter_lock"]["present"] is False
    assert any("not looked for" in n for n in cal.notes)


@pytest.mark.parametrize("budget,looked", [(0.5, False), (2.0, True)])
def test_a_cpu_budget_below_two_cores_hides_a_lock(tmp_path, budget, looked):
    """Traces of the lock-free two-core model recorded as run under a CPU budget
    (`live up --cpu`): held to half a core a process stays below one whatever its threads
    share, so the lock is not looked for; under two cores it is, and is absent."""
    m = known(2, None)
    folders = []
    for n in LOADS:
        trace = tierlab.simulate(m.with_changes({"workload.population.clients": n}))
        trace.timeseries = pd.concat([trace.timeseries, cpu_budget.series({"app": budget}, {"app": "app"})], ignore_index=True)
        folders.append(trace.write(tmp_path / f"at{n}"))
    cal = calibrate(folders, m, lock=True)
    found = cal.report()["interpreter_lock"]
    assert found["cores"] == int(budget) and not found["present"]
    assert any("not looked for" in n for n in cal.notes) is not looked


def test_one_load_finds_the_lock_but_not_its_handoff(tmp_path):
    """One trace cannot tell the lock's hand-offs from a constant CPU per request: the lock
    is in the twin with no hand-off, the CPU outside the handlers the service demand
    law's residual (the hand-offs' CPU, here), and the note says what to give."""
    m = known(2, {"switch_interval": SWITCH_INTERVAL, "handoff": 0.0005})
    cal = calibrate(traces(m, tmp_path, (30,)), m, lock=True)
    found = cal.report()["interpreter_lock"]
    assert found["present"] and not found["separable"] and found["handoff"] == 0
    assert found["outside_handlers"] == pytest.approx(cal.law["outside_handlers"] / cal.cores["speed"], rel=1e-9)
    assert any("give traces at two loads" in n for n in cal.notes)


def test_a_cpu_outside_the_handlers_is_fitted_with_its_own_handoffs():
    """`lock.fitted` on a twin whose CPU per request is known in closed form: demands of
    3 ms, and k hand-offs per request at two loads (1 and 3), 0.3 and 1 more where a step
    outside the handlers runs (its own waits for the lock). Traces made with 0.8 ms
    outside and a 0.2 ms hand-off: a hand-off alone cannot meet both loads within 2%, so
    the step's fit is taken, and it recovers both (to rounding)."""
    d, bare, more = np.array([0.003, 0.003]), np.array([1.0, 3.0]), np.array([0.3, 1.0])

    def cpu(lock: Lock) -> np.ndarray:
        o = lock.outside or 0.0
        return d + o + (bare + (more if o > 0 else 0.0)) * lock.handoff

    live = d + 0.0008 + (bare + more) * 0.0002
    fit = fitted(cpu, live, outside=0.0012)
    assert fit.separable
    assert fit.lock.outside == pytest.approx(0.0008, rel=1e-9) and fit.lock.handoff == pytest.approx(0.0002, rel=1e-9)
    assert fit.twin == pytest.approx(list(live), rel=1e-9)
    assert fit.per_request == pytest.approx(list(bare + more), rel=1e-9)
