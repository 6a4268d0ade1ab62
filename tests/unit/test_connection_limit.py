"""The bookstore's connection limit (`live up --connection-limit`): the connections it
holds at once, which bound the sessions open at once since each keeps its connection
through its thinks (investigations/twin/results/pinned_core_placement). Refused before
anything starts where the server cannot hold it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import tierlab
from tierlab.errors import InputError
from tierlab.experiments.twin import calibrate
from tierlab.live import connections, lifecycle

# Thirty closed clients, never ending their sessions, on an app of 8 threads and 4
# database connections: a model `twin calibrate` can read.
KNOWN = {
    "name": "known",
    "run": {"duration": 30, "warmup": 5, "seed": 3, "records": True},
    "tiers": {
        "app": {
            "pools": {"threads": {"kind": "threads", "size": 8}, "db": {"kind": "connections", "size": 4}},
            "stations": {"cpu": {"kind": "cpu", "cores": 1}},
        },
        "db": {"stations": {"cpu": {"kind": "cpu", "cores": 2}}},
    },
    "requests": {
        "browse": {
            "app": [{"acquire": "threads"}, {"cpu": {"exponential": 0.002}}, {"use": {"pool": "db", "steps": [{"call": "db"}]}}, {"release": "threads"}],
            "db": [{"cpu": {"exponential": 0.0005}}],
        }
    },
    "workload": {"population": {"clients": 30}, "think": 0.0, "chain": {"matrix": {"browse": {"browse": 1}}, "start": "browse"}},
}


@pytest.mark.parametrize(
    ("server", "limit", "why"),
    [("python", 0, "at least 1"), ("java", -5, "at least 1"), ("python", 1001, "select"), ("python", 5000, "use --server java")],
)
def test_a_limit_the_server_cannot_hold_is_refused_before_anything_starts(tmp_path, server, limit, why):
    with pytest.raises(InputError, match=why):
        lifecycle.up(tmp_path / "live", server=server, connection_limit=limit)
    assert not (tmp_path / "live").exists()


def test_the_limit_reaches_the_python_servers_command_line(tmp_path):
    cmd = lifecycle.server_command("python", Path(tmp_path), "sqlite:///x.db", 1, 2, 8, 4, "transaction", "--connection-limit", "700")
    assert cmd[cmd.index("--connection-limit") + 1] == "700"
    # The default the state records, unset: the server's own (CONNECTION_LIMIT).
    assert lifecycle.State(1, 1, 2, "sqlite:///x.db", "sqlite", str(tmp_path), "log").connection_limit is None


@pytest.mark.parametrize(
    ("server", "limit", "clients"),
    [("java", None, lifecycle.CONNECTION_LIMIT), ("java", 3000, 3000), ("python", None, lifecycle.CONNECTION_LIMIT - 2), ("python", 12, 10)],
)
def test_the_state_knows_the_clients_connections_its_server_holds(tmp_path, server, limit, clients):
    """Tomcat holds its limit of clients; waitress two fewer (its listening socket and wake-up
    pipe count against it: tests/live/test_live_server_limits.py); a cluster's clients
    connect to its proxies, so none is recorded for it."""
    state = lifecycle.State(1, 1, 2, "sqlite:///x.db", "sqlite", str(tmp_path), "log", server=server, connection_limit=limit)
    assert state.client_connections == clients
    state.proxies = [{"pid": 3, "port": 4, "admin_port": 5, "log": "p"}]
    assert state.client_connections is None


def _recorded(trace: tierlab.Trace, clients: int | None) -> tierlab.Trace:
    if clients is not None:
        trace.timeseries = pd.concat([trace.timeseries, connections.series("app", clients)], ignore_index=True)
    return trace


def test_calibrate_gives_the_twin_the_clients_connections_the_traces_recorded(tmp_path):
    """A trace that recorded its server's 12 clients' connections makes a twin whose entry
    tier holds 12 for its sessions: 30 closed clients that never end their sessions get 12
    connections, and the other 18 wait. Unrecorded (a simulation's trace), no such pool."""
    model = tierlab.load_model(KNOWN)
    plain = calibrate([tierlab.simulate(model).write(tmp_path / "plain")], model)
    assert "clients" not in plain.loaded().spec.tiers["app"].pools
    recorded = _recorded(tierlab.simulate(model), 12).write(tmp_path / "recorded")
    cal = calibrate([recorded], model)
    pool = cal.loaded().spec.tiers["app"].pools["clients"]
    assert (pool.size, pool.hold, pool.kind) == (12, "session", "other")
    assert any("at most 12 clients' connections" in n for n in cal.notes)
    twin = tierlab.simulate(cal.loaded().with_changes({"run.duration": 20, "run.warmup": 2}))
    held = twin.summary["tiers"]["app"]["servers"][0]["pools"]["clients"]
    assert held["mean_busy"] == pytest.approx(12) and held["mean_queued"] == pytest.approx(18)


def test_a_limit_the_traces_lack_is_given_and_one_they_contradict_is_refused(tmp_path):
    model = tierlab.load_model(KNOWN)
    plain = tierlab.simulate(model).write(tmp_path / "plain")
    assert calibrate([plain], model, connection_limit=12).loaded().spec.tiers["app"].pools["clients"].size == 12
    recorded = _recorded(tierlab.simulate(model), 12).write(tmp_path / "recorded")
    with pytest.raises(InputError, match="the traces recorded 12"):
        calibrate([recorded], model, connection_limit=20)


def test_traces_under_different_limits_are_refused(tmp_path):
    model = tierlab.load_model(KNOWN)
    folders = [_recorded(tierlab.simulate(model), n).write(tmp_path / f"at{n}") for n in (12, 20)]
    with pytest.raises(InputError, match="different connection limits"):
        calibrate(folders, model)
