"""A live run loses nothing: a server killed mid-run still leaves the client's trace,
its failures counted and what is missing named with the reason (and `live run` exits
with its own status); Ctrl-C or SIGTERM leaves the partial trace and exits with 130."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import tierlab
from tierlab.live import lifecycle

from conftest import EXAMPLES, HTTP, MAPPING, live_model, running_testbed


@pytest.fixture
def bed(tmp_path):
    with running_testbed("sqlite", tmp_path / "live") as bed:
        yield bed


def _kill_server(bed, after: float) -> threading.Timer:
    timer = threading.Timer(after, lambda: os.kill(bed.state.pid, signal.SIGKILL))
    timer.start()
    return timer


def test_a_server_killed_mid_run_leaves_the_clients_trace_and_says_what_is_missing(bed):
    killer = _kill_server(bed, 2.0)
    trace = bed.run(live_model(**{"run.duration": 5, "run.warmup": 0.5}), HTTP)
    killer.join()
    s = trace.summary
    # The client's view is whole: every request after the kill is a counted failure.
    assert s["requests"]["ok"] > 0
    errors = s["errors"]
    failed = errors["connect"] + errors["protocol"]
    assert failed > 0 and s["requests"]["error"] == sum(errors[k] for k in ("connect", "protocol", "http_4xx", "http_5xx"))
    r = trace.requests
    assert (r.status == "error").sum() >= failed  # records include the failures (some in the warm-up)
    late = r[r.start > 3.0]  # well after the kill: nothing succeeds
    assert len(late) > 0 and (late.status == "error").all()
    # The server's side is absent, not invented: no phase columns, no server series.
    assert not any(c.startswith("app.") for c in r.columns)
    assert set(s["missing"]) == {"app.phases", "app.series", "app.monitor"}
    assert f"pid {bed.state.pid}" in s["missing"]["app.phases"]
    ended = float(s["missing"]["app.monitor"].split("t ≈ ")[1].split(" s")[0])
    assert 1.5 <= ended <= 5.0, s["missing"]
    ts = trace.timeseries
    assert ts[(ts.tier == "app") & (ts.metric == "cpu_user")].t.max() < ended
    assert ts[(ts.tier == "app") & (ts.metric == "concurrency")].empty
    server = s["tiers"]["app"]["servers"][0]
    assert server["visits"] is None and server["pools"] == {}
    # It writes and reads back as a valid trace.
    folder = trace.write(bed.state.workdir + "/killed")
    assert tierlab.read_trace(folder).summary["missing"] == s["missing"]


def test_a_sweep_stops_with_a_clear_error_when_the_server_is_gone(bed):
    from tierlab.live.admin import ServerGone
    from tierlab.live.testbed import LiveRunner
    from tierlab.run import Run, sweep

    killer = _kill_server(bed, 1.0)
    with pytest.raises(ServerGone, match="app.phases: the server .* ended"):
        sweep(live_model(**{"run.duration": 3, "run.warmup": 0}), [Run({}, 1), Run({}, 2)], len, runner=LiveRunner(bed, HTTP), progress=None)
    killer.join()
    assert lifecycle.status(bed.state.workdir) is None  # the testbed knows it is down


def _live_run(bed, out, duration: float) -> subprocess.Popen:
    args = ["live", "run", _model_file(bed), "--http", str(MAPPING), "--workdir", bed.state.workdir, "--out", str(out)]
    args += ["--duration", str(duration), "--warmup", "0", "--quiet"]
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    # Ctrl-C comes from a terminal, where SIGINT is not ignored; a suite started in the
    # background by a shell ignores it and its children inherit that. Caught here while
    # spawning, it is at its default in the child (exec resets caught signals).
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen([sys.executable, "-m", "tierlab.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    finally:
        signal.signal(signal.SIGINT, before)


def _model_file(bed) -> str:
    """The live test model as a file of its own (JSON is YAML), its chain's CSV found
    where the example keeps it."""
    data = live_model().spec.model_dump(mode="json", exclude_unset=True)
    chain = data["workload"]["chain"]
    chain["csv"] = str(EXAMPLES / chain["csv"])
    path = os.path.join(bed.state.workdir, "model.yaml")
    with open(path, "w") as f:
        json.dump(data, f)
    return path


def test_live_run_with_the_server_killed_writes_the_trace_and_exits_incomplete(bed, tmp_path):
    from tierlab.cli.live import INCOMPLETE

    out = tmp_path / "trace"
    proc = _live_run(bed, out, 8)
    _wait_serving(bed)
    os.kill(bed.state.pid, signal.SIGKILL)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == INCOMPLETE != 130, stderr
    assert "missing" in stderr and "app.phases" in stderr
    summary = tierlab.read_trace(out).summary
    assert set(summary["missing"]) >= {"app.phases", "app.series"}
    assert summary["requests"]["error"] > 0 and summary["requests"]["ok"] > 0


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_of_live_run_writes_the_partial_trace_and_exits_130(bed, tmp_path, stop):
    out = tmp_path / "trace"
    proc = _live_run(bed, out, 60)
    _wait_serving(bed)
    proc.send_signal(stop)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    trace = tierlab.read_trace(out)
    s = trace.summary
    assert s["interrupted"] and s["missing"] == {}
    assert s["elapsed"] < 60 and s["requests"]["ok"] > 0
    assert (trace.requests["app.visits"] == 1).sum() > 0  # the server's side joined


def _wait_serving(bed, requests: int = 20) -> None:
    """Until the run under way has been served `requests` (a started process's run)."""
    deadline = time.monotonic() + 60
    while bed.admin.metrics()["requests"]["ok"] < requests:
        assert time.monotonic() < deadline, "the run did not start"
        time.sleep(0.1)
