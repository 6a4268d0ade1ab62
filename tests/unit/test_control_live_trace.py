"""`tierlab control` beside a live run (docs/control.md, "Live"): the decisions it logged
during the run join the run's trace as a simulated controller's do — `summary.control`
with their `t` from the run's start, and the `control` series, the size in force in each
window — so `tierlab report` shows them. Tested on logs written here (no server): the
run's clock and the log's are the machine's monotonic clock."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from control_models import bursty

import tierlab
from tierlab.live.decisions import CONTROL_LOGS, control_during, read_control_log, register_control_log
from tierlab.live.observed import Period
from tierlab.report.html import report

RUN = Period(window=1.0, warmup=0.0, elapsed=20.0)
INITIAL = {"threads": 20, "connections": 4}


def log(workdir: Path, name: str, clock: float | None, decisions: list[tuple[float, int, bool]]) -> Path:
    """A control log as `tierlab control` writes it (gradient every 5 s), registered."""
    head = {"strategy": "gradient", "tier": "app", "interval": 5.0} | ({"clock": clock} if clock is not None else {})
    lines = [head] + [{"t": t, "sizes": {"threads": n}, "changed": changed, "reason": f"gradient: {n}"} for t, n, changed in decisions]
    path = workdir / name
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    register_control_log(workdir, path)
    return path


def sizes(series: list[pd.DataFrame]) -> dict[str, list[float]]:
    return {str(f.metric.iloc[0]): f.sort_values("t").value.tolist() for f in series}


def test_the_decisions_within_the_run_join_it_on_its_clock(tmp_path):
    # The controller started 3 s before the run: its t 5, 10, 15 are the run's 2, 7, 12;
    # its t 40 (the run's 37) is after the run's 20 s.
    log(tmp_path, "a.jsonl", 1000.0, [(5, 8, True), (10, 8, False), (15, 12, True), (40, 16, True)])
    control, series, missing = control_during(tmp_path, 1003.0, RUN, "app", INITIAL)
    assert control is not None and missing == {}
    assert (control["strategy"], control["tier"], control["interval"]) == ("gradient", "app", 5.0)
    assert [(d["t"], d["sizes"]["threads"], d["changed"]) for d in control["decisions"]] == [(2, 8, True), (7, 8, False), (12, 12, True)]
    # In force per window: the size at the run's start until the first decision.
    assert sizes(series) == {"threads": [20.0] * 2 + [8.0] * 10 + [12.0] * 8}
    (frame,) = series
    assert set(frame.tier) == {"app"} and set(frame.server) == {0} and set(frame.resource) == {"control"}
    assert frame.t.tolist() == [float(k) for k in range(20)]


def test_a_decision_before_the_run_is_the_size_it_starts_with(tmp_path):
    log(tmp_path, "a.jsonl", 990.0, [(5, 6, True), (15, 10, True)])
    control, series, _ = control_during(tmp_path, 1003.0, RUN, "app", INITIAL)
    assert control is not None and [d["t"] for d in control["decisions"]] == [2]
    assert sizes(series) == {"threads": [6.0] * 2 + [10.0] * 18}


def test_without_a_controller_during_the_run_the_trace_is_as_it_was(tmp_path):
    assert control_during(tmp_path, 1003.0, RUN, "app", INITIAL) == (None, [], {})  # none registered
    log(tmp_path, "after.jsonl", 2000.0, [(5, 8, True)])  # decided after the run
    log(tmp_path, "old.jsonl", None, [(5, 8, True)])  # a log that does not give its clock
    (tmp_path / "empty.jsonl").write_text("")  # its controller stopped before writing
    register_control_log(tmp_path, tmp_path / "empty.jsonl")
    register_control_log(tmp_path, tmp_path / "gone.jsonl")  # removed since
    assert control_during(tmp_path, 1003.0, RUN, "app", INITIAL) == (None, [], {})
    assert len((tmp_path / CONTROL_LOGS).read_text().splitlines()) == 4


def test_a_second_controller_during_the_run_is_named_not_merged(tmp_path):
    first = log(tmp_path, "a.jsonl", 1000.0, [(5, 8, True)])
    second = log(tmp_path, "b.jsonl", 1005.0, [(5, 12, True)])
    control, _, missing = control_during(tmp_path, 1003.0, RUN, "app", INITIAL)
    assert control is not None and [d["sizes"]["threads"] for d in control["decisions"]] == [8]
    assert str(second) in missing["control"] and str(first) in missing["control"]


def test_a_line_still_being_written_is_left_for_later(tmp_path):
    path = log(tmp_path, "a.jsonl", 1000.0, [(5, 8, True)])
    with path.open("a") as f:
        f.write('{"t": 10, "sizes": {"thr')
    logged, clock = read_control_log(path)
    assert clock == 1000.0 and len(logged["decisions"]) == 1


def test_the_report_shows_a_live_run_s_controller(tmp_path):
    # A run's trace (simulated here: the live runner's is the same schema) given the
    # decisions and series as `Testbed.run` gives them, written and read back.
    trace = tierlab.simulate(bursty(None), duration=20)
    log(tmp_path, "a.jsonl", 1000.0, [(5, 8, True), (10, 8, False), (15, 12, True)])
    control, series, _ = control_during(tmp_path, 1003.0, RUN, "app", INITIAL)
    assert control is not None
    trace.summary["control"] = control
    trace.timeseries = pd.concat([trace.timeseries, *series], ignore_index=True)
    for c in ("tier", "resource", "metric"):
        trace.timeseries[c] = trace.timeseries[c].astype("category")
    back = tierlab.read_trace(trace.write(tmp_path / "trace"))
    assert back.summary["control"] == control
    assert back.series("app", "threads", "control", 0)[0].tolist() == sizes(series)["threads"]
    r = report([("live", back)])
    assert "gradient every 5 s on app: 2 changes in 3 decisions." in r.html and "gradient: 12" in r.html
