"""`tierlab control`'s wrong inputs, each a one-line error naming what to fix (exit 2),
before any server is touched."""

from __future__ import annotations

import subprocess
import sys


def tierlab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tierlab.cli", *args], capture_output=True, text=True, timeout=120)


def test_bad_bounds_are_named(tmp_path):
    r = tierlab("control", "--strategy", "gradient", "--workdir", str(tmp_path), "--bounds", "threads=8..4")
    assert r.returncode == 2 and "--bounds: 'threads=8..4': need 1 ≤ least ≤ greatest" in r.stderr, r.stderr


def test_no_testbed_says_how_to_start_one(tmp_path):
    r = tierlab("control", "--strategy", "gradient", "--workdir", str(tmp_path))
    assert r.returncode == 2 and "tierlab live up" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
