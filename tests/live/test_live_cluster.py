"""The live cluster (`tierlab live up --model`): K bookstore servers behind the
dispatcher proxy, one database. Up → a short load → down leaves no process and no
port behind; the trace has the simulator's cluster columns and dispatch summary, so
analysis/dispatch.py runs unchanged on it and on a simulated trace of the same model,
and its per-server counts are the proxy's own."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
from pathlib import Path

import psutil
import pytest

import tierlab
from tierlab.analysis.dispatch import cluster_metrics, load_imbalance
from tierlab.live import lifecycle, testbed
from tierlab.live.cluster import up_cluster
from tierlab.live.decisions import read_decisions
from tierlab.trace.folder import read_trace

from conftest import HTTP, live_model

K = 2


def cluster_model(policy: dict, **changes) -> tierlab.LoadedModel:
    return live_model(**{"tiers.app.servers": K, "tiers.app.dispatch": policy, "run.duration": 6, "run.warmup": 1, "run.records": True} | changes)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _run_and_stop(model, workdir):
    state = up_cluster(model, workdir, log=lambda *_: None)
    try:
        assert len(state.servers) == K and len(state.proxies) == 1
        assert all(_listening(p) for p in state.ports())
        bed = testbed.Testbed(workdir)
        trace = bed.run(model, HTTP)
    finally:
        assert lifecycle.down(workdir)
    # Nothing left: no recorded process runs, none of them lingers as our zombie (down
    # reaps what this process spawned), no port answers.
    assert not [pid for pid in state.pids() if lifecycle.running(pid)]
    assert not [pid for pid in state.pids() if psutil.pid_exists(pid) and psutil.Process(pid).ppid() == os.getpid()]
    assert not [p for p in state.ports() if _listening(p)]
    assert lifecycle.status(workdir) is None
    return state, trace


@pytest.fixture(scope="module")
def least_active(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("cluster") / "live"
    model = cluster_model({"policy": "least_active"})
    state, trace = _run_and_stop(model, workdir)
    return model, state, read_trace(trace.write(workdir.parent / "trace"))  # the schema holds the cluster columns


def test_up_load_down_serves_on_every_server_and_leaves_nothing(least_active):
    _, _, trace = least_active
    r, s = trace.requests, trace.summary
    assert s["requests"]["ok"] > 200 and s["requests"]["error"] == 0
    served = r["app.server"].value_counts()
    assert set(served.index) == set(range(K))  # least_active spreads over both
    assert len(s["tiers"]["app"]["servers"]) == K and all(sv["visits"] > 0 for sv in s["tiers"]["app"]["servers"])


def test_per_server_counts_in_the_trace_are_the_proxys_own(least_active):
    _, state, trace = least_active
    decisions = read_decisions(state.proxies[0]["decisions"])
    r = trace.requests
    proxy = decisions.set_index("request").loc[r["id"].to_numpy()]
    assert (proxy["server"].to_numpy() == r["app.server"].to_numpy()).all()
    assert (proxy["migrated"].to_numpy(dtype=bool) == r["app.migrated"].to_numpy(dtype=bool)).all()
    # And the proxy's summary (written at shutdown) counts every decision it logged.
    summary = json.loads((Path(state.workdir) / "proxy-0.summary.json").read_text())
    per_server = decisions[decisions.outcome == "served"]["server"].value_counts()
    assert [b["served"] for b in summary["proxy"]["backends"]] == [int(per_server.get(k, 0)) for k in range(K)]


def test_dispatch_summary_and_analysis_run_unchanged_on_live_and_simulated(least_active):
    model, _, live = least_active
    d = live.summary["tiers"]["app"]["dispatch"]
    # The measured requests' (the records'), as simulated: their sessions began in the
    # warm-up (12 closed clients), so none is created after it.
    assert d["dispatchers"] == 1 and d["sessions_created"] == 0
    assert d["session_migrations"] == live.requests["app.migrated"].sum() > 0
    simulated = tierlab.simulate(model)
    for trace in (live, simulated):
        m = cluster_metrics(trace, "app")
        assert m["throughput_per_server"] > 0 and m["art"] > 0 and m["rejected"] == 0
        assert 0 <= load_imbalance(trace, "app") < 2
    # One definition (docs/trace.md): a request placed away from its session's home,
    # on a tier without session state too; least active moves sessions often in both.
    assert cluster_metrics(live, "app")["migrations_per_request"] > 0.2
    assert cluster_metrics(simulated, "app")["migrations_per_request"] > 0.2
    assert simulated.summary["tiers"]["app"]["dispatch"]["sessions_created"] == 0


def test_affinity_keeps_sessions_home_and_every_run_starts_afresh(tmp_path):
    model = cluster_model({"policy": "affinity"}, **{"run.warmup": 0})  # every session created in the measured period
    up_cluster(model, tmp_path / "live", log=lambda *_: None)
    try:
        bed = testbed.Testbed(tmp_path / "live")
        runs = [bed.run(model, HTTP) for _ in range(2)]
    finally:
        lifecycle.down(tmp_path / "live")
    for trace in runs:
        r, d = trace.requests, trace.summary["tiers"]["app"]["dispatch"]
        assert r["app.migrated"].sum() == 0 and d["session_migrations"] == 0
        assert r.groupby("session")["app.server"].nunique().max() == 1
        # The load generator numbers sessions from 1 each run; the proxies forget the
        # last run's, so the second run creates its 12 sessions anew too.
        assert d["sessions_created"] == 12


# redis.sh installs Debian's redis-server when missing (as root, as CI runs).
redis_ready = (shutil.which("redis-server") is not None or os.geteuid() == 0) and importlib.util.find_spec("redis") is not None


@pytest.mark.skipif(not redis_ready, reason="needs redis-server (or root, for redis.sh to install it) and the redis package (pyproject)")
def test_session_state_in_redis_follows_a_migrating_session(tmp_path):
    model = cluster_model({"policy": "round_robin"}, **{"tiers.app.session_state": {"fetch": []}})
    state = up_cluster(model, tmp_path / "live", log=lambda *_: None)
    try:
        assert state.sessions is not None
        bed = testbed.Testbed(tmp_path / "live")
        trace = bed.run(model, HTTP)
        fetched = sum(a.metrics()["sessions"]["migrations"] for a in bed.admins)
        moved = bed.proxies[0].summary()["dispatch"]["session_migrations"]
    finally:
        lifecycle.down(tmp_path / "live")
    assert trace.requests["app.migrated"].mean() > 0.3  # round robin moves sessions every request
    # Every move the proxy made, a server fetched the state from Redis (give or take the
    # requests the clients abandoned at the end: one per client at most). Measured: 690 vs 689.
    assert moved > 100 and abs(fetched - moved) <= 12


def test_two_shared_proxies_split_the_sessions_and_exchange_metrics(tmp_path):
    """P = 2 shared dispatchers: session s enters through proxy s mod 2, both place
    requests on both servers, and they exchange load metrics (counted as the simulator
    counts them)."""
    model = cluster_model({"policy": "least_active", "dispatchers": 2, "sync": {"interval": 0.05}})
    state = up_cluster(model, tmp_path / "live", log=lambda *_: None)
    try:
        assert len(state.proxies) == 2
        trace = testbed.Testbed(tmp_path / "live").run(model, HTTP)
    finally:
        lifecycle.down(tmp_path / "live")
    logs = [read_decisions(m["decisions"]) for m in state.proxies]
    assert all(set(log["session"]) and set(log["server"].dropna()) == set(range(K)) for log in logs)
    assert set(logs[0]["session"]).isdisjoint(logs[1]["session"])  # each session through one proxy
    d = trace.summary["tiers"]["app"]["dispatch"]
    assert d["dispatchers"] == 2 and d["sync_messages"] > 0 and d["sync_payload_bytes"] > 0
    assert trace.summary["requests"]["error"] == 0
