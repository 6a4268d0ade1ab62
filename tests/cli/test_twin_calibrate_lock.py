"""`tierlab twin calibrate --lock --request-growth --handoff --idle-handoff` and
`--round-trip` as a user runs them (issue 41 items 2-4): on simulated traces of a model
under a known interpreter lock, the written twin has the lock and its report says what
the traces showed; asking for both growths is refused, named; a known round trip
reaches the twin and its report."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from twin_models import known, traces

from tierlab.experiments.twin.lock import SWITCH_INTERVAL
from tierlab.model import load_model


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


def test_the_round_trip_reaches_the_twin_and_its_report(tmp_path):
    """`--round-trip` on traces whose database calls each wait a known 0.3 ms before
    their CPU: the report finds it at both loads (within 10%), every access of the twin
    waits the line's time before its call, and the note is printed."""
    spec = known(1).spec.model_dump(mode="json", exclude_unset=True)
    spec["tiers"]["db"]["stations"]["cpu"]["cores"] = 4  # a core per connection: the database's CPU takes its own time
    for program in spec["requests"].values():
        program["db"].insert(0, {"delay": {"exponential": 0.0003}})
    m = load_model(spec)
    folders = traces(m, tmp_path, (3, 30))
    model = tmp_path / "model.yaml"
    model.write_text(yaml.safe_dump(spec))
    twin = tmp_path / "twin.yaml"
    r = tierlab("twin", "calibrate", *folders, "--model", model, "--out", twin, "--round-trip")
    assert r.returncode == 0, r.stderr
    report = json.loads(twin.with_suffix(".calibration.json").read_text())["round_trip"]
    assert [t["live_wait"] for t in report["traces"]] == pytest.approx([0.0003, 0.0003], rel=0.1)
    waits = [
        s
        for p in yaml.safe_load(twin.read_text())["requests"].values()
        for a in p["app"]
        if "loop" in a
        for u in a["loop"]["steps"]
        for s in u["use"]["steps"]
        if "delay" in s
    ]
    assert waits and all(w["delay"]["exponential"] == report["seconds"] for w in waits)
    assert "each access's statements wait" in r.stdout  # the note, printed
