"""Black-box capacity: the knee of a p90 curve, on curves with a known knee and on a
simulated load ramp."""

from __future__ import annotations


def test_cli_ramp_writes_the_knee(tmp_path):
    import json
    import subprocess
    import sys

    import yaml

    model = {
        "run": {"duration": 600, "warmup": 50, "records": False},
        "tiers": {"app": {"stations": {"cpu": {"kind": "cpu"}}}},
        "requests": {"A": {"app": [{"cpu": {"exponential": 0.1}}]}},
        "workload": {"population": {"session_rate": 1.0}, "chain": {"matrix": {"A": {"END_OF_SESSION": 1}}, "start": "A"}},
    }
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(model))
    p = subprocess.run(
        [sys.executable, "-m", "tierlab.cli", "ramp", str(tmp_path / "m.yaml"), "--loads", "1,3,5,7,8,9,9.5", "--workers", "1", "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    assert "kneedle" in p.stdout
    result = json.loads((tmp_path / "r" / "result.json").read_text())
    assert 5 <= result["knee"]["load"] <= 9.5 and len(result["steps"]) == 7  # M/M/1, μ = 10
    assert (tmp_path / "r" / "ramp.png").exists()
