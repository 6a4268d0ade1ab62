"""White-box testing on traces with a known bottleneck: a CPU, a disk, a socket limit."""

from __future__ import annotations

import tierlab

from conftest import single_request_sessions


def _two_tier(rate: float, db: dict, db_program: list) -> dict:
    tiers = {"web": {"pools": {"threads": {"kind": "threads", "size": 200}}, "stations": {"cpu": {"kind": "cpu", "cores": 4}}}, "db": db}
    program = {"web": [{"acquire": "threads"}, {"cpu": {"exponential": 0.01}}, {"call": "db"}, {"release": "threads"}], "db": db_program}
    return single_request_sessions(rate, tiers, program, duration=400, warmup=50, records=True)


def test_cli_analyze_bottleneck(tmp_path):
    import json
    import subprocess
    import sys

    db = {"pools": {"sockets": {"kind": "other", "size": 5}}, "stations": {"cpu": {"kind": "cpu", "cores": 8}}}
    tierlab.simulate(_two_tier(60.0, db, [{"acquire": "sockets"}, {"cpu": {"exponential": 0.1}}, {"release": "sockets"}])).write(tmp_path / "t")
    p = subprocess.run(
        [sys.executable, "-m", "tierlab.cli", "analyze", "bottleneck", str(tmp_path / "t"), "--json", str(tmp_path / "b.json")], capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr
    assert "bottleneck: db[0].sockets (other, token-based)" in p.stdout
    assert json.loads((tmp_path / "b.json").read_text())["bottleneck"]["resource"] == "sockets"
    missing = subprocess.run([sys.executable, "-m", "tierlab.cli", "analyze", "bottleneck", str(tmp_path / "nowhere")], capture_output=True, text=True)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
