"""`--out` of the commands that write a trace (issue 44, item 6): a folder holding a
trace is refused before anything runs, and `--force` replaces that trace whole — a
run without records no longer leaves the older run's requests beside its summary."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import EXAMPLES, ROOT

LOCUST = ROOT / "tests" / "fixtures" / "imports" / "locust"


def tierlab(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tierlab.cli", *map(str, args)], capture_output=True, text=True)


def test_simulate_into_a_trace_folder(tmp_path):
    out = tmp_path / "trace"
    simulate = ["simulate", EXAMPLES / "tpcw_2tier.yaml", "--duration", "10", "--warmup", "1", "--quiet", "--out", out]
    assert tierlab(*simulate).returncode == 0
    again = tierlab(*simulate, "--no-records", "--seed", "2")
    assert again.returncode != 0 and "already holds a trace" in again.stderr and "--force" in again.stderr
    assert (out / "requests.parquet").is_file()
    forced = tierlab(*simulate, "--no-records", "--seed", "2", "--force")
    assert forced.returncode == 0, forced.stderr
    assert sorted(f.name for f in out.iterdir()) == ["summary.json", "timeseries.parquet"]
    profile = tierlab("analyze", "profile", out)
    assert profile.returncode != 0 and "no request records" in profile.stderr


def test_import_into_a_trace_folder(tmp_path):
    out = tmp_path / "trace"
    assert tierlab("simulate", EXAMPLES / "tpcw_2tier.yaml", "--duration", "10", "--warmup", "1", "--quiet", "--out", out).returncode == 0
    refused = tierlab("import", "locust", LOCUST, "--out", out, "--quiet")
    assert refused.returncode != 0 and "already holds a trace" in refused.stderr
    forced = tierlab("import", "locust", LOCUST, "--out", out, "--quiet", "--force")
    assert forced.returncode == 0, forced.stderr
    assert not (out / "requests.parquet").exists()  # Locust keeps no records: the simulated ones are gone
