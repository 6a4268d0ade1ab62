"""Every committed quick study result regenerates from the code at HEAD, figure for
figure (studies/check.py; images are not compared). A failure names the file and the
first differing figure: regenerate the study with the command its result.json records,
in the same commit as the change that moved it."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys

import pytest

from conftest import ROOT

# studies/check.py is a script; its lists read without running it.
CHECK = runpy.run_path(str(ROOT / "studies" / "check.py"))
QUICK, STUDIES, committed_folder = CHECK["QUICK"], CHECK["STUDIES"], CHECK["committed_folder"]


@pytest.mark.studies
@pytest.mark.parametrize("study", QUICK)
def test_the_quick_study_regenerates_its_committed_result(study):
    done = subprocess.run([sys.executable, "studies/check.py", "--quick", study], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_check_names_only_studies_whose_results_are_committed():
    """`python studies/check.py` (every full study) and `--quick` compare with committed
    results: a study listed without one would only fail there, naming nothing wrong."""
    missing = [
        f"{s}{suffix}"
        for names, suffix in ((STUDIES, ""), (QUICK, "_quick"))
        for s in names
        if not (committed_folder(s, suffix == "_quick") / "result.json").exists()
    ]
    assert missing == []


def test_a_failed_comparison_names_the_versions_committed_and_now(tmp_path):
    versions = CHECK["versions"]
    committed, fresh = tmp_path / "committed.json", tmp_path / "fresh.json"
    fresh.write_text(json.dumps({"versions": {"python": "3.11.7", "numpy": "2.4.6", "scipy": "1.17.1"}}))
    committed.write_text(json.dumps({"commit": "abc"}))
    assert versions(committed, fresh) == (
        "versions: the committed result records none (written before they were recorded); now python 3.11.7, numpy 2.4.6, scipy 1.17.1"
    )
    committed.write_text(json.dumps({"versions": {"python": "3.11.7", "numpy": "2.3.1", "scipy": "1.17.1"}}))
    assert versions(committed, fresh) == "versions, committed -> now: numpy 2.3.1 -> 2.4.6 (the same: python 3.11.7, scipy 1.17.1)"
