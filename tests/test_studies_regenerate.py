"""Every committed quick study result regenerates from the code at HEAD, figure for
figure (studies/check.py; images are not compared). A failure names the file and the
first differing figure: regenerate the study with the command its result.json records,
in the same commit as the change that moved it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "studies"))
from check import QUICK  # noqa: E402


@pytest.mark.studies
@pytest.mark.parametrize("study", QUICK)
def test_the_quick_study_regenerates_its_committed_result(study):
    done = subprocess.run([sys.executable, "studies/check.py", "--quick", study], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
