"""`tierlab control --revert-margin / --revert-hold / --dwell`: a wrong value is a
one-line error naming the option (exit 2), before any server is touched."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(("option", "value"), [("--revert-margin", "2"), ("--revert-hold", "-1"), ("--dwell", "-3")])
def test_a_bad_guard_option_is_named_before_the_testbed_is_looked_for(tmp_path, option: str, value: str):
    args = ["control", "--strategy", "gradient", "--workdir", str(tmp_path), option, value]
    r = subprocess.run([sys.executable, "-m", "tierlab.cli", *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and f"{option}: " in r.stderr, r.stderr
    assert "tierlab live up" not in r.stderr and "Traceback" not in r.stderr
