"""The live truth's error bar (issue 41 item 2): the t-interval against its closed form,
the interleaved order, the machine-speed scaling, and the repeated capacity search on a
simulated queue (the simulator as the runner: every repeat the same, no spread)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from queue_models import SERVICE, md1_queue

import tierlab
from tierlab.errors import InputError
from tierlab.experiments.twin import truth


def test_the_interval_is_students_t_over_the_repeats():
    e = truth.estimate([1.0, 2.0, 3.0])
    # t(0.975, 2) = 4.302653 (tables); s = 1
    assert e.mean == 2.0 and e.halfwidth == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    assert e.relative == pytest.approx(e.halfwidth / 2)
    assert truth.estimate([5.0, 5.0, 5.0]).halfwidth == 0.0
    with pytest.raises(InputError, match="two repeats"):
        truth.estimate([1.0])


def test_configurations_are_measured_interleaved_and_three_times_at_least():
    assert truth.interleaved(["A", "B", "C"], 3) == [(1, "A"), (1, "B"), (1, "C"), (2, "A"), (2, "B"), (2, "C"), (3, "A"), (3, "B"), (3, "C")]
    with pytest.raises(InputError, match="at least 3"):
        truth.interleaved(["A"], 2)
    with pytest.raises(InputError, match="twice"):
        truth.interleaved(["A", "A"], 3)


def test_a_figure_is_brought_to_the_reference_speed_as_a_cpu_bound_systems_would_be():
    # A run at probe 2.4 ms on a reference of 2.0: the machine was 1.2x slower.
    assert truth.at_speed("lambda_max", 30.0, 2.4, 2.0) == pytest.approx(36.0)
    assert truth.at_speed("rt_mean", 0.12, 2.4, 2.0) == pytest.approx(0.1)
    assert truth.at_speed("throughput", 50.0, 2.4, 2.0) == 50.0  # the offered load's
    assert truth.at_speed("lambda_max", 30.0, None, 2.0) == 30.0


def test_measure_takes_each_repeats_probe_and_reports_raw_and_scaled():
    probes = iter([2.0, 4.0, 2.0, 4.0, 2.0, 4.0])  # B always ran on a machine twice as slow

    def machine_run(model):
        trace = tierlab.simulate(model)
        row = pd.DataFrame([(0.0, "machine", 0, "", "cpu_probe_ms", next(probes))], columns=trace.timeseries.columns)
        trace.timeseries = pd.concat([trace.timeseries.astype(object), row], ignore_index=True)
        return trace

    probed = truth.Probed(machine_run)
    model = md1_queue().with_changes({"run.duration": 20.0, "workload.population": {"session_rate": 10.0}})

    def run(config: str) -> dict[str, float]:
        probed(model)
        return {"lambda_max": 10.0 if config == "A" else 5.0}

    table, found = truth.measure(["A", "B"], run, probed, repeats=3, reference=2.0)
    assert table["config"].tolist() == ["A", "B"] * 3 and table["probe_ms"].tolist() == [2.0, 4.0] * 3
    at = found.set_index("config")
    assert at.loc["A", "mean"] == 10.0 and at.loc["B", "mean"] == 10.0  # 5/s on a machine twice as slow: 10/s at the reference
    assert at.loc["B", "raw_mean"] == 5.0 and (found["halfwidth"] == 0).all()


def test_a_capacity_not_set_by_the_cpu_is_taken_as_measured():
    """A λ_max the clients' connections set does not follow the machine's speed: a
    probe read slow beside it leaves it as measured, while a CPU-bound one is scaled."""
    rows = pd.DataFrame(
        {"repeat": [1, 1, 2, 2, 3, 3], "config": ["A", "B"] * 3, "probe_ms": [3.0, 3.0, 2.0, 2.0, 2.0, 2.0], "raw_lambda_max": [150.0, 150.0] * 3}
    )
    _, found = truth.summarized(rows, ["A", "B"], reference=2.0, not_cpu_bound=["B"])
    at = found.set_index("config")
    assert at.loc["B", "mean"] == 150.0 and at.loc["B", "halfwidth"] == 0
    assert at.loc["A", "mean"] == pytest.approx(175.0) and at.loc["A", "halfwidth"] > 0  # (225 + 150 + 150) / 3


def test_repeated_capacity_searches_bisect_each_to_one_percent():
    model = md1_queue().with_changes({"run.duration": 500.0})
    table, found = truth.capacity(model, [(1, 1)], tierlab.simulate, start=60.0, step=10.0, runs=1, repeats=3)
    assert len(table) == 3 and table["probe_ms"].isna().all()  # simulated: no machine to probe
    row = found.iloc[0]
    assert row["halfwidth"] == 0.0  # the simulator repeats itself exactly
    assert row["mean"] == pytest.approx(1 / SERVICE, rel=0.03)
