"""The README's YAML is documentation that runs: every block must load, and run."""

from __future__ import annotations

import re

import yaml

import tierlab

from conftest import ROOT

BLOCKS = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", (ROOT / "README.md").read_text(), re.S)]


def test_readme_model_runs():
    full = [b for b in BLOCKS if "requests" in b]
    assert full
    for b in full:
        t = tierlab.simulate(tierlab.load_model(b).with_run(duration=120, warmup=10))
        assert t.summary["requests"]["ok"] > 0


def test_readme_cluster_fragment_runs():
    fragment = next(b for b in BLOCKS if "requests" not in b)
    tiers = fragment["tiers"]
    model = {
        "run": {"duration": 60, "warmup": 5},
        "tiers": tiers,
        "requests": {"A": {"web": [{"call": "app"}], "app": [{"delay": 0.01}]}},
        "workload": {"population": {"clients": 20}, "think": 0.1, "session_end": {"after_requests": 5}, "chain": {"matrix": {"A": {"A": 1}}, "start": "A"}},
    }
    t = tierlab.simulate(model)
    assert t.summary["tiers"]["app"]["dispatch"]["sessions_created"] > 0
