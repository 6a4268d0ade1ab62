"""A study's provenance comes from the running script, wherever it lives in the
repository: the root is the folder above it holding pyproject.toml, its results go
beside it, and its command names it relative to the root without the placement options."""

from __future__ import annotations

import json
import sys

from tierlab.experiments.study import provenance
from tierlab.experiments.study.inputs import as_input


def test_an_investigation_writes_beside_itself_and_records_its_own_path(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("")
    script = tmp_path / "investigations" / "twin" / "gil_wait.py"
    script.parent.mkdir(parents=True)
    script.write_text("")
    monkeypatch.setattr(sys, "argv", [str(script), "--quick", "--out", "/elsewhere", "--scheduler=tcp://x:1", "--db", "sqlite"])
    assert provenance.root() == tmp_path
    assert provenance.command() == "python investigations/twin/gil_wait.py --quick --db sqlite"
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # the parser sets its own: pytest's back after the test
    args = provenance.study_parser(None).parse_args(["--quick"])
    assert provenance.output_dir("gil_wait", args) == tmp_path / "investigations" / "twin" / "results" / "gil_wait_quick"
    monkeypatch.setattr(provenance, "commit", lambda: "abc123")  # git runs in a subprocess: not in this tier
    provenance.write_result(tmp_path, {"figure": 1.5}, [1, 2])
    record = json.loads((tmp_path / "result.json").read_text())
    assert list(record)[:4] == ["commit", "seed", "command", "versions"] and record["figure"] == 1.5
    assert record["commit"] == "abc123" and record["seed"] == [1, 2]
    assert set(record["versions"]) == {"python", *provenance.NUMERICAL}


def test_a_script_outside_a_repository_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "loose.py")])
    try:
        provenance.root()
    except SystemExit as e:
        assert "not inside the tierlab repository" in str(e)
    else:
        raise AssertionError("a script outside the repository found a root")


def test_a_computed_input_is_rounded_to_six_significant_digits():
    # connection_caching's capacity on two installs, apart in the 16th digit, one input.
    assert as_input(3.369502750772942) == as_input(3.3695027507729436) == 3.3695
    assert as_input(0.000123456789) == 0.000123457 and type(as_input(2)) is float


def test_a_stop_ends_a_study_with_one_line_and_anything_else_with_its_traceback(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["/repo/studies/twin.py"])
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # pytest's own, back after the test
    provenance.study_parser(None)
    assert sys.excepthook is provenance.interrupted
    # SIGTERM raised where the run was, re-raised as a run's interruption (RunInterrupted).
    try:
        try:
            raise KeyboardInterrupt("SIGTERM")
        except KeyboardInterrupt as e:
            raise KeyboardInterrupt("run interrupted") from e
    except KeyboardInterrupt as e:
        provenance.interrupted(type(e), e, e.__traceback__)
    assert capsys.readouterr().err == "twin.py: stopped by SIGTERM; what it had written stays in its output folder\n"
    provenance.interrupted(KeyboardInterrupt, KeyboardInterrupt(), None)
    assert "stopped by Ctrl-C" in capsys.readouterr().err
    try:
        raise ValueError("a real failure")
    except ValueError as e:
        provenance.interrupted(type(e), e, e.__traceback__)
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and "ValueError: a real failure" in err
