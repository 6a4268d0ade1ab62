"""Fine-grained analysis on data with a known answer: a bimodal mixture, Poisson-like
rates with a known amplification, and a trace with retransmissions."""

from __future__ import annotations

import tierlab

from conftest import single_request_sessions


def test_cli_analyze_fluctuations(tmp_path):
    import json
    import subprocess
    import sys

    program = {"web": [{"loop": {"count": 3, "steps": [{"call": "db"}]}}], "db": [{"delay": {"exponential": 0.002}}]}
    tierlab.simulate(single_request_sessions(20.0, {"web": {}, "db": {}}, program, duration=300, warmup=10, records=True)).write(tmp_path / "t")
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "tierlab.cli",
            "analyze",
            "fluctuations",
            str(tmp_path / "t"),
            "--json",
            str(tmp_path / "f.json"),
            "--plot",
            str(tmp_path / "f.png"),
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    f = json.loads((tmp_path / "f.json").read_text())
    assert [t["tier"] for t in f["tiers"]] == ["web", "db"] and "bimodal" in p.stdout
    assert (tmp_path / "f.png").stat().st_size > 0
