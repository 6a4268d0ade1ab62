"""Values parsed once, at the edge (issue 43 item 2): a loaded model is one frozen value
whose chain is read and whose engine input is compiled once, however many layers it
passes through; a sweep compiles each distinct run's model once, in the parent, and no
worker compiles it again."""

from __future__ import annotations

import dataclasses

import pytest

import tierlab
import tierlab.model as model_module
from tierlab.run import Run, sweep

from conftest import EXAMPLES, one_pool_model

COMPILED = {"count": 0}


@pytest.fixture
def counted(monkeypatch):
    """Every compilation (of the model module's compile_model) counted in COMPILED."""
    real = model_module.compile_model

    def counting(*args, **kwargs):
        COMPILED["count"] += 1
        return real(*args, **kwargs)

    COMPILED["count"] = 0
    monkeypatch.setattr(model_module, "compile_model", counting)
    return COMPILED


def compilations_here(trace) -> int:
    """A sweep's measure: how many compilations the process that ran it made."""
    return COMPILED["count"]


def test_a_loaded_model_is_frozen_and_compiles_once(counted):
    m = tierlab.load_model(EXAMPLES / "tpcw_2tier.yaml").with_run(duration=20, warmup=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.source = "elsewhere"  # type: ignore[misc]
    m.session_rate_bound()
    m.engine()
    tierlab.simulate(m)  # no run change: the same value, compiled already
    assert counted["count"] == 1
    assert m.with_changes({}) is m


def test_a_change_keeps_the_chain_read_and_compiles_the_new_model_once(counted, monkeypatch):
    m = tierlab.load_model(EXAMPLES / "tpcw_2tier.yaml").with_run(duration=20, warmup=2)
    m.engine()
    reads = []
    real = model_module.read_chain
    monkeypatch.setattr(model_module, "read_chain", lambda *a: reads.append(a) or real(*a))
    changed = m.with_changes({"tiers.app.pools.threads.size": 7, "run.seed": 3})
    changed.engine()
    tierlab.simulate(changed)
    assert reads == [] and counted["count"] == 2  # the CSV not read again; one compilation each
    m.with_changes({"workload.chain.reweight": {"SRES": 2.0}}).engine()  # another chain: read afresh
    assert len(reads) == 1


@pytest.mark.parametrize("workers", [1, 2])
def test_a_sweep_compiles_each_run_once_in_the_parent(counted, workers):
    model = one_pool_model(1.0).with_run(duration=40, warmup=4)
    runs = [Run({"workload.population.session_rate": r}, s) for r in (1.0, 2.0) for s in (1, 2)]
    in_workers = sweep(model, runs, compilations_here, workers=workers, progress=None)
    assert counted["count"] == len(runs)
    if workers > 1:
        assert in_workers == [0] * len(runs)  # forked before the runs were checked: none compiled there
