"""`tierlab live up --cpu` refuses a wrong budget before anything starts, naming the
fix (issue 41 item 1); no server, no database is started by these."""

from __future__ import annotations

import subprocess
import sys

from conftest import EXAMPLES


def live_up(*args: str, workdir) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tierlab.cli", "live", "up", "--workdir", str(workdir), *args], capture_output=True, text=True)


def test_a_wrong_budget_is_refused_before_anything_starts(tmp_path):
    workdir = tmp_path / "live"
    for args, said in [
        (["--cpu", "web=1"], "TIER=CORES with TIER one of app, db"),
        (["--cpu", "app=0"], "positive"),
        (["--cpu", "app=0.5,db=0.5"], "SQLite runs inside the bookstore's process"),
        (["--cpu", "app=1", "--cpu-from", str(EXAMPLES / "tpcw_2tier.yaml")], "give one"),
    ]:
        r = live_up(*args, workdir=workdir)
        assert r.returncode == 2, r.stderr
        assert said in r.stderr and "Traceback" not in r.stderr
    assert not workdir.exists()
