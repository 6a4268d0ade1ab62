"""Shared helpers: small models built in code, and Little's law checked on every run;
and the test tiers, marked by folder:

- `tests/unit/`: in-process only — no subprocess, no socket, no server, no study (held
  to it: a unit test that starts a process or opens a socket fails, naming the tier
  to move it to); `make test-fast` runs this tier;
- `tests/cli/`: what runs in processes of its own, simulator only: the commands as a
  user runs them, sweeps in worker processes and on a local Dask cluster, the fuzz
  campaign's worker;
- `tests/live/`: the testbed, PostgreSQL, Redis, the proxy, the JVM server, a browser;
- `tests/studies/`: quick studies re-run and the committed ledgers checked."""

from __future__ import annotations

import socket
import subprocess
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

import tierlab
from tierlab.live.mapping import load_mapping

ROOT = Path(__file__).resolve().parent.parent
TIERS = ("unit", "cli", "live", "studies")
EXAMPLES = ROOT / "examples"
MAPPING = EXAMPLES / "tpcw_http.yaml"
HTTP = load_mapping(MAPPING)  # the example's HTTP mapping, read once


# A small closed model that runs: the base the bad-input tests change one field of.
SMALL_MODEL = {
    "run": {"duration": 100, "seed": 1},
    "tiers": {"app": {"pools": {"threads": {"kind": "threads", "size": 4}}, "stations": {"cpu": {"kind": "cpu"}}}},
    "requests": {"A": {"app": [{"acquire": "threads"}, {"cpu": 0.01}, {"release": "threads"}]}},
    "workload": {"population": {"clients": 2}, "think": 1.0, "chain": {"matrix": {"A": {"A": 1.0}}, "start": "A"}},
}


def running_testbed(db: str, workdir: Path):
    """A live testbed (the bookstore on `db`, with live_model's pools) for the block."""
    from tierlab.live.testbed import Testbed

    return Testbed.started(workdir, db=db, threads=10, connections=5)


def live_model(**changes) -> tierlab.LoadedModel:
    """The TPC-W example as the live tests run it, short and busy; the server's pools
    come from the model."""
    base = {
        "workload.population": {"clients": 12},
        "workload.think": 0.02,
        "workload.session_end": {"after_requests": 100_000},
        "run.duration": 10,
        "run.warmup": 2,
        "run.seed": 4,
        "tiers.app.pools.threads.size": 10,
        "tiers.app.pools.db.size": 5,
        "tiers.app.pools.db.caching": "transaction",
    }
    return tierlab.load_model(EXAMPLES / "tpcw_2tier.yaml").with_changes(base | changes)


def single_request_sessions(rate: float, tiers: dict, program: dict, **run) -> dict:
    """An open model where every session is one request: Poisson request arrivals."""
    return {
        "name": "test",
        "run": {"duration": 50_000, "warmup": 500, "seed": 11, "records": False, **run},
        "tiers": tiers,
        "requests": {"job": program},
        "workload": {"population": {"session_rate": rate}, "chain": {"matrix": {"job": {"END_OF_SESSION": 1}}, "start": "job"}},
    }


class StubServer(ThreadingHTTPServer):
    """A loopback HTTP stub for the live tests, listening as a real server does. The
    standard library's backlog is 5: twenty clients connecting at once overflow it, the
    kernel drops their SYNs and the clients retry from 1 s later on — requests "in
    flight" across the warm-up that broke Little's law over the measured window by 6%
    (CI of stop 57; 0.8–4.3% in three runs here, at most 0.01% with this backlog). The bookstore listens with
    `serve.BACKLOG`."""

    request_queue_size = 128
    daemon_threads = True


def check_little(trace: tierlab.Trace, rel: float = 0.02) -> None:
    """L = λW over the measured period (requests in system, all statuses)."""
    lt = trace.summary["little"]
    assert lt["mean_in_system"] == pytest.approx(lt["arrival_rate"] * lt["mean_time_in_system"], rel=rel)


def run(model: dict, **kw) -> tierlab.Trace:
    trace = tierlab.simulate(model, **kw)
    check_little(trace)
    return trace


def one_pool_model(timeout: float) -> tierlab.LoadedModel:
    """Sessions of one request holding one connection (of 4 threads) for 0.1 s: an M/M/1
    queue whose acquire timeout rejects."""
    return tierlab.load_model(
        {
            "run": {"duration": 700, "warmup": 100, "records": False},
            "tiers": {
                "app": {"pools": {"threads": {"kind": "threads", "size": 4, "timeout": timeout}, "db": {"kind": "connections", "size": 1, "timeout": timeout}}}
            },
            "requests": {
                "job": {"app": [{"acquire": "threads"}, {"acquire": "db"}, {"delay": {"exponential": 0.1}}, {"release": "db"}, {"release": "threads"}]}
            },
            "workload": {"population": {"session_rate": 1.0}, "chain": {"matrix": {"job": {"END_OF_SESSION": 1}}, "start": "job"}},
        }
    )


def connection_bound_model() -> tierlab.LoadedModel:
    """Sessions of one request holding one of N connections for 0.1 s (exponential):
    N connections serve at most 10·N sessions/s; the CPU (5 ms) would allow 200."""
    return tierlab.load_model(
        {
            "run": {"duration": 200, "warmup": 20, "records": False},
            "tiers": {
                "app": {
                    "pools": {"threads": {"kind": "threads", "size": 4, "timeout": 1}, "db": {"kind": "connections", "size": 1, "timeout": 1}},
                    "stations": {"cpu": {"kind": "cpu", "cores": 1}},
                }
            },
            "requests": {
                "job": {
                    "app": [
                        {"acquire": "threads"},
                        {"cpu": {"exponential": 0.005}},
                        {"use": {"pool": "db", "steps": [{"delay": {"exponential": 0.1}}]}},
                        {"release": "threads"},
                    ]
                }
            },
            "workload": {"population": {"session_rate": 1.0}, "chain": {"matrix": {"job": {"END_OF_SESSION": 1}}, "start": "job"}},
        }
    )


def throughput(trace) -> float:
    """A sweep's measure: the run's throughput."""
    return trace.summary["throughput"]


def chain_mix(loaded) -> dict[str, float]:
    """The request mix of a loaded model's chain: its stationary distribution for
    sessions that never end by the chain (tierlab.model.chain.visit_mix)."""
    from tierlab.model.chain import visit_mix

    spec = loaded.spec.workload.chain
    data, problems = loaded.chain
    assert not problems
    roles = ["entry" if s == spec.start else "page" for s in data.states]
    return visit_mix(data, data.index(spec.start), roles)[0]


def mix_distance(seen, expected: dict[str, float]) -> float:
    """Total-variation distance between an observed type column and a mix."""
    share = seen.value_counts(normalize=True)
    return 0.5 * sum(abs(share.get(t, 0.0) - p) for t, p in expected.items())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test carries its tier's marker (`-m unit`, `-m "not live"`), from its folder."""
    for item in items:
        tier = item.path.parent.name
        if tier in TIERS:
            item.add_marker(getattr(pytest.mark, tier))
        if tier == "live":
            # filterwarnings = error holds everywhere but here: a live test's servers,
            # clients and their libraries leave sockets to the collector (ResourceWarning,
            # reported by pytest as unraisable), which says nothing of the code under
            # test. They are shown, not failed.
            item.add_marker(pytest.mark.filterwarnings("default::ResourceWarning"))
            item.add_marker(pytest.mark.filterwarnings("default::pytest.PytestUnraisableExceptionWarning"))


class OutOfTier(AssertionError):
    pass


@pytest.fixture(autouse=True)
def _unit_stays_in_process(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit test may not start a process or open a network socket: that is what makes
    the tier fast and safe to run anywhere. (Worker pools of a sweep are allowed: they
    are the code under test, and start through multiprocessing, not these calls.)"""
    if request.node.path.parent.name != "unit":
        return

    def refuse(what: str):
        def call(*args, **kwargs):
            raise OutOfTier(f"a unit test may not {what}: move {request.node.nodeid} to tests/cli/ or tests/live/")

        return call

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse("start a subprocess"))
    monkeypatch.setattr(socket.socket, "connect", refuse("connect a socket"))
    monkeypatch.setattr(socket.socket, "bind", refuse("bind a socket"))
