"""`tierlab twin calibrate --lock --request-growth --handoff --idle-handoff` as a user runs
it (issue 41 items 3-4): on simulated traces of a model under a known interpreter lock,
the written twin has the lock and its report says what the traces showed; asking for
both growths is refused, named."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml
from twin_models import known, traces

from tierlab.experiments.twin.lock import SWITCH_INTERVAL


def tierlab(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tierlab.cli", *map(str, args)], capture_output=True, text=True)


def test_the_options_reach_the_twin_and_its_report(tmp_path):
    m = known(2, {"switch_interval": SWITCH_INTERVAL, "handoff": 0.0005})
    folders = traces(m, tmp_path, (3, 30))
    model = tmp_path / "model.yaml"
    model.write_text(yaml.safe_dump(m.spec.model_dump(mode="json", exclude_unset=True)))
    twin = tmp_path / "twin.yaml"
    r = tierlab("twin", "calibrate", *folders, "--model", model, "--out", twin, "--handoff", "--idle-handoff", "--lock", "--request-growth")
    assert r.returncode == 0, r.stderr
    assert yaml.safe_load(twin.read_text())["tiers"]["app"]["interpreter_lock"]["switch_interval"] == SWITCH_INTERVAL
    report = json.loads(twin.with_suffix(".calibration.json").read_text())
    assert report["interpreter_lock"]["present"] and report["interpreter_lock"]["handoff"] > 0
    assert report["growth_once"]["growth"]["shown"] is False  # the model's CPU does not grow with the threads held
    both = tierlab("twin", "calibrate", *folders, "--model", model, "--out", twin, "--contention", "--request-growth")
    assert both.returncode != 0 and "not both" in both.stderr
