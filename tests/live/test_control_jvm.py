"""`tierlab control` against the JVM bookstore (issue 42: both reference servers are
live targets): the same control loop reads the JVM server's admin endpoint (its JSON
state and its Prometheus exposition) while a load runs, re-sizes its Tomcat thread pool
within the bounds, and the load sees every request answered across the shrink."""

from __future__ import annotations

import threading
import time

import pytest

from tierlab.experiments.control import control_loop, read_log
from tierlab.live import jvm, testbed

from conftest import HTTP, live_model

pytestmark = pytest.mark.skipif(jvm.tools() is not None, reason=f"the JVM bookstore cannot be built here: {jvm.tools()}")


def test_the_controller_resizes_the_jvm_servers_threads_within_bounds(tmp_path):
    with testbed.Testbed.started(tmp_path / "live", db="sqlite", server="java", threads=10, connections=5) as bed:
        out: dict = {}
        load = threading.Thread(target=lambda: out.update(trace=bed.run(live_model(**{"run.duration": 20}), HTTP)))
        load.start()
        time.sleep(3)  # the run has set the model's pools (10 threads) and its load is on
        final = control_loop(bed.admins, "gradient", {"threads": (2, 6)}, 2.0, tmp_path / "jvm.jsonl", duration=6, say=lambda _: None)
        in_force = bed.admin.metrics()["pools"]["threads"]["size"]
        load.join()
    decisions = read_log(tmp_path / "jvm.jsonl")["decisions"]
    assert len(decisions) == 3
    assert decisions[0]["changed"], "the first decision brings 10 threads within [2, 6]"
    assert all(2 <= d["sizes"]["threads"] <= 6 for d in decisions)
    assert final == {"threads": decisions[-1]["sizes"]["threads"]} == {"threads": in_force}
    # Every request the load sent was answered, ok or refused: none lost across the
    # shrink; unfinished are only those in flight when the run ended, one per browser at most.
    r = out["trace"].summary["requests"]
    assert r["ok"] > 0 and r["error"] == 0 and r["unfinished"] <= 12
