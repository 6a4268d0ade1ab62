"""The digital twin (issue 16): calibrated from a short live run on the SQLite testbed,
simulated at the same load, it serves what the live system served; bad input gets a
clear error."""

from __future__ import annotations

import pytest

import tierlab
from tierlab.errors import InputError
from tierlab.experiments.twin import calibrate

from conftest import MAPPING, live_model, running_testbed


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    with running_testbed("sqlite", tmp_path_factory.mktemp("sqlite") / "live") as bed:
        yield bed


@pytest.fixture(scope="module")
def live(bed, tmp_path_factory):
    """A short live run (12 browsers, 20 ms think time: the server busy) and its model."""
    model = live_model()
    folder = bed.run(model, MAPPING).write(tmp_path_factory.mktemp("trace"))
    return folder, model


def test_a_trace_without_records_cannot_calibrate_a_twin(tmp_path):
    folder = tierlab.simulate(live_model(**{"run.duration": 3, "run.warmup": 0.5, "run.records": False})).write(tmp_path / "sim")
    with pytest.raises(InputError, match="not a trace with per-request records.*run.records"):
        calibrate([folder], live_model())
