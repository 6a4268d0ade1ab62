"""The JVM's warm-up before a study's first scored run (`Testbed.warm_up`): one run of
the model given, shortened and with no warm-up of its own, on the JVM server only."""

from __future__ import annotations

from types import SimpleNamespace

import tierlab
from tierlab.live import testbed

from conftest import EXAMPLES


def _bed(server: str) -> tuple[testbed.Testbed, list]:
    bed = testbed.Testbed.__new__(testbed.Testbed)  # no testbed up: its state alone
    bed.state = SimpleNamespace(server=server)
    ran: list = []
    bed.run = lambda model, mapping, tier=None, **kw: ran.append((model, mapping))  # type: ignore[method-assign]
    return bed, ran


def test_the_jvm_runs_the_model_once_for_the_warm_up_and_python_not_at_all():
    model = tierlab.load_model(EXAMPLES / "tpcw_2tier.yaml").with_changes({"workload.population.session_rate": 40.0})
    bed, ran = _bed("java")
    assert bed.warm_up(model, "mapping") is True
    ((warm, mapping),) = ran
    assert mapping == "mapping" and warm.spec.run.duration == testbed.WARM_UP_S and warm.spec.run.warmup == 0.0
    assert warm.spec.workload.population.session_rate == 40.0 and warm.spec.tiers == model.spec.tiers
    bed, ran = _bed("python")
    assert bed.warm_up(model, "mapping") is False and ran == []
