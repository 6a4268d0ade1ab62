"""The machine's speed from the monitor's probe (analysis.machine): a probe taken with
every core busy reads the contention it runs in, so only the seconds with a free half
core count; a trace from before the idle series keeps every probe."""

from __future__ import annotations

import pandas as pd
import pytest
from queue_models import md1_queue

import tierlab
from tierlab.analysis.machine import FREE_CORES, machine


def with_machine(rows: list[tuple[float, str, float]]):
    trace = tierlab.simulate(md1_queue().with_changes({"run.duration": 5.0}))
    extra = pd.DataFrame([(t, "machine", 0, "", metric, v) for t, metric, v in rows], columns=trace.timeseries.columns)
    trace.timeseries = pd.concat([trace.timeseries.astype(object), extra], ignore_index=True)
    return trace


def test_a_probe_taken_on_a_full_machine_is_left_out():
    trace = with_machine(
        [
            (0.0, "cpu_probe_ms", 1.6),
            (0.0, "cpu_idle", 1.2),
            (1.0, "cpu_probe_ms", 2.3),
            (1.0, "cpu_idle", 0.1),
            (2.0, "cpu_probe_ms", 1.7),
            (2.0, "cpu_idle", FREE_CORES),
        ]
    )
    seen = machine([trace])
    assert seen["cpu_probe_ms"] == pytest.approx(1.65) and seen["probes_full"] == 1


def test_a_run_with_the_machine_full_throughout_has_no_probe_and_says_how_many_were_left_out():
    trace = with_machine([(0.0, "cpu_probe_ms", 2.3), (0.0, "cpu_idle", 0.0), (1.0, "cpu_probe_ms", 2.2), (1.0, "cpu_idle", 0.2)])
    assert machine([trace]) == {"load_1m": None, "cpu_probe_ms": None, "probes_full": 2}


def test_a_trace_from_before_the_idle_series_keeps_every_probe():
    trace = with_machine([(0.0, "cpu_probe_ms", 1.0), (1.0, "cpu_probe_ms", 3.0), (0.0, "load_1m", 0.5), (1.0, "load_1m", 1.5)])
    assert machine([trace]) == {"load_1m": 1.0, "cpu_probe_ms": 2.0, "probes_full": 0}


def test_a_simulated_trace_has_no_machine():
    assert machine([tierlab.simulate(md1_queue().with_changes({"run.duration": 5.0}))]) == {"load_1m": None, "cpu_probe_ms": None, "probes_full": 0}
