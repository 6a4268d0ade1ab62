"""Every mistake gets one clear message naming the field and the fix."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import EXAMPLES


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "tierlab.cli", *args], capture_output=True, text=True, cwd=cwd)


def test_cli_reports_errors_without_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("tiers: {app: {}}\nrequests: {A: {app: [{release: x}]}}\nworkload: {population: {clients: 1}, chain: {matrix: {A: {A: 1}}, start: A}}\n")
    r = cli("simulate", str(bad), "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert "requests.A.app[0]" in r.stderr and "Traceback" not in r.stderr
    r = cli("simulate", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "model file not found" in r.stderr


def test_cli_simulate_and_schema(tmp_path):
    r = cli("simulate", str(EXAMPLES / "tpcw_2tier.yaml"), "--out", str(tmp_path / "t"), "--duration", "120", "--warmup", "10", "--quiet")
    assert r.returncode == 0, r.stderr
    assert {p.name for p in (tmp_path / "t").iterdir()} == {"requests.parquet", "timeseries.parquet", "summary.json"}
    schema = json.loads(cli("schema").stdout)
    assert "tiers" in schema["properties"] and "workload" in schema["properties"]
