"""`tierlab control` beside a live run (docs/control.md, "Live"): the observation carries
the servers' CPU, and the decisions made during the run join its trace — the control
series and `summary.control`, as in simulation — through the log the controller names
in the testbed's folder."""

from __future__ import annotations

import threading
import time

from tierlab.experiments.control import LiveObserver, control_loop, read_log
from tierlab.live.decisions import register_control_log

from conftest import HTTP, live_model, running_testbed


def test_the_decisions_during_a_live_run_are_in_its_trace_and_the_cpu_observed(tmp_path):
    log = tmp_path / "control.jsonl"
    with running_testbed("sqlite", tmp_path / "live") as bed:
        out: dict = {}
        load = threading.Thread(target=lambda: out.update(trace=bed.run(live_model(**{"run.duration": 20}), HTTP)))
        load.start()
        time.sleep(3)  # the run has set the model's pools (10 threads) and its load is on
        observer = LiveObserver(bed.admins, pids=bed.server_pids())
        observer.start()
        cpu = observer.observe(2.0)["cpu"]
        register_control_log(bed.state.workdir, log)
        control_loop(bed.admins, "gradient", {"threads": (2, 6)}, 2.0, log, duration=6, pids=bed.server_pids())
        load.join()
    # The server's process was busy serving the load: some of the machine's cores.
    assert cpu is not None and 0 < cpu <= 1, cpu
    trace, logged = out["trace"], read_log(log)
    control = trace.summary["control"]
    assert (control["strategy"], control["tier"], control["interval"]) == ("gradient", "app", 2.0)
    # The three decisions, 3 s or more into the 20 s run, their t on the run's clock.
    assert [(d["sizes"], d["changed"], d["reason"]) for d in control["decisions"]] == [(d["sizes"], d["changed"], d["reason"]) for d in logged["decisions"]]
    times = [d["t"] for d in control["decisions"]]
    assert 3 < times[0] < times[1] < times[2] < 20 and [round(b - a) for a, b in zip(times, times[1:])] == [2, 2]
    # The series: 10 threads (the model's) until the first decision brings them within
    # [2, 6], the last decision's size to the end.
    s = trace.series("app", "threads", "control", 0)[0]
    assert (s[s.index < times[0]] == 10).all()
    assert s[s.index >= times[0]].between(2, 6).all() and s.iloc[-1] == control["decisions"][-1]["sizes"]["threads"]
    r = trace.summary["requests"]
    assert r["ok"] > 0 and r["error"] == 0
