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
from check import QUICK, STUDIES  # noqa: E402

from provenance import RESULTS  # noqa: E402


@pytest.mark.studies
@pytest.mark.parametrize("study", QUICK)
def test_the_quick_study_regenerates_its_committed_result(study):
    done = subprocess.run([sys.executable, "studies/check.py", "--quick", study], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_check_names_only_studies_whose_results_are_committed():
    """`python studies/check.py` (every full study) and `--quick` compare with committed
    results: a study listed without one would only fail there, naming nothing wrong."""
    missing = [f"{s}{suffix}" for names, suffix in ((STUDIES, ""), (QUICK, "_quick")) for s in names if not (RESULTS / f"{s}{suffix}" / "result.json").exists()]
    assert missing == []
