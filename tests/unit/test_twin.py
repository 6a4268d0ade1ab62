"""The digital twin (issue 16) refuses what it cannot calibrate from (the twin against
a live run: tests/live/test_twin.py)."""

from __future__ import annotations

import pytest

import tierlab
from tierlab.errors import InputError
from tierlab.experiments.twin import calibrate

from conftest import live_model


def test_a_trace_without_records_cannot_calibrate_a_twin(tmp_path):
    folder = tierlab.simulate(live_model(**{"run.duration": 3, "run.warmup": 0.5, "run.records": False})).write(tmp_path / "sim")
    with pytest.raises(InputError, match="not a trace with the server.s per-request records.*run.records"):
        calibrate([folder], live_model())
