"""`tierlab report` on a run with an online controller: the sizes in force over time and
the decisions that changed one, with their reasons; nothing of it without a controller."""

from __future__ import annotations

from control_models import GRADIENT, bursty

import tierlab
from tierlab.report.html import report


def test_the_report_shows_the_controllers_sizes_and_changes():
    controlled = tierlab.simulate(bursty(GRADIENT), duration=300)
    changes = [d for d in controlled.summary["control"]["decisions"] if d["changed"]]
    r = report([("controlled", controlled)])
    assert "control" in r.sections
    assert f"gradient every 5 s on app: {len(changes)} changes in 60 decisions." in r.html
    assert changes[0]["reason"] in r.html
    plain = report([("plain", tierlab.simulate(bursty(None), duration=300))])
    assert "control" not in plain.sections
