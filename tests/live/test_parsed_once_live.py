"""Values parsed once along a live run (issue 43 item 2): `Testbed.run` and a sweep of
live runs compile each distinct model once and never read the HTTP mapping again (the
unit side, a simulated sweep: tests/unit/test_parsed_once.py)."""

from __future__ import annotations

import tierlab.live.mapping as mapping_module
import tierlab.model as model_module
from tierlab.live.testbed import LiveRunner
from tierlab.run import Run, sweep

from conftest import HTTP, live_model, running_testbed, throughput


def test_a_live_run_and_a_live_sweep_compile_each_model_once(tmp_path, monkeypatch):
    compiled, read = [], []
    real = model_module.compile_model
    monkeypatch.setattr(model_module, "compile_model", lambda *a: compiled.append(a) or real(*a))
    monkeypatch.setattr(mapping_module, "load_mapping", lambda *a: read.append(a))  # any re-read fails the run
    model = live_model(**{"run.duration": 3, "run.warmup": 0.5})
    with running_testbed("sqlite", tmp_path / "live") as bed:
        bed.run(model, HTTP)
        assert len(compiled) == 1
        sweep(model, [Run({}, 1), Run({}, 2)], throughput, runner=LiveRunner(bed, HTTP), progress=None)
    assert len(compiled) == 3 and read == []  # one per distinct run (seeds 1 and 2), the mapping never again
