"""The twin strategy from the command line: `tierlab simulate` runs a model whose
control is the twin (its controller built in Python, called by the engine), and
`tierlab control --strategy twin` asks for its twin before touching any server."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml


def tierlab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tierlab.cli", *args], capture_output=True, text=True, timeout=300)


def test_control_twin_needs_its_twin(tmp_path):
    r = tierlab("control", "--strategy", "twin", "--workdir", str(tmp_path))
    assert r.returncode == 2 and "--twin: give the twin model with --strategy twin" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_simulate_runs_a_twin_controlled_model(tmp_path):
    model = {
        "name": "twin-cli",
        "run": {"duration": 20, "warmup": 0, "seed": 3, "window": 1.0, "records": False},
        "tiers": {
            "app": {
                "pools": {"threads": {"kind": "threads", "size": 4}, "db": {"kind": "connections", "size": 1}},
                "stations": {"cpu": {"kind": "cpu", "cores": 1}},
            },
            "db": {"stations": {"cpu": {"kind": "cpu", "cores": 4}}},
        },
        "requests": {
            "job": {
                "app": [{"acquire": "threads"}, {"cpu": {"exponential": 0.004}}, {"use": {"pool": "db", "steps": [{"call": "db"}]}}, {"release": "threads"}],
                "db": [{"cpu": {"exponential": 0.008}}],
            }
        },
        "workload": {"population": {"session_rate": 110.0}, "chain": {"matrix": {"job": {"END_OF_SESSION": 1}}, "start": "job"}},
        "control": {"strategy": "twin", "bounds": {"threads": [2, 16], "connections": [1, 8]}, "twin": {"slo_p99": 0.2, "horizon": 5}},
    }
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump(model))
    r = tierlab("simulate", str(path), "--out", str(tmp_path / "out"), "--quiet")
    assert r.returncode == 0, r.stderr
    control = json.loads((tmp_path / "out" / "summary.json").read_text())["control"]
    assert control["strategy"] == "twin" and len(control["decisions"]) == 4
    assert all(d["reason"].startswith("twin at ") for d in control["decisions"]), control["decisions"]
