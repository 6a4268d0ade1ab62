"""Shared helpers: small models built in code, and Little's law checked on every run."""

from __future__ import annotations

import socket
from contextlib import contextmanager
from pathlib import Path

import pytest

import tierlab

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MAPPING = EXAMPLES / "tpcw_http.yaml"


def free_ports(n: int = 2) -> tuple[int, ...]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = tuple(s.getsockname()[1] for s in socks)
    for s in socks:
        s.close()
    return ports


@contextmanager
def running_testbed(db: str, workdir: Path):
    """A live testbed (the bookstore on `db`) for the duration of the block."""
    from tierlab.live import testbed

    port, admin = free_ports()
    testbed.up(workdir, db=db, port=port, admin_port=admin, threads=10, connections=5, log=lambda *_: None)
    try:
        yield testbed.Testbed(workdir)
    finally:
        testbed.down(workdir)


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


def check_little(trace: tierlab.Trace, rel: float = 0.02) -> None:
    """L = λW over the measured period (requests in system, all statuses)."""
    lt = trace.summary["little"]
    assert lt["mean_in_system"] == pytest.approx(lt["arrival_rate"] * lt["mean_time_in_system"], rel=rel)


def run(model: dict, **kw) -> tierlab.Trace:
    trace = tierlab.simulate(model, **kw)
    check_little(trace)
    return trace


def chain_mix(loaded) -> dict[str, float]:
    """The request mix of a loaded model's chain: its stationary distribution for
    sessions that never end by the chain (tierlab.model.chain.visit_mix)."""
    from tierlab.model.chain import read_chain, visit_mix

    spec = loaded.spec.workload.chain
    data, problems = read_chain(spec, loaded.base_dir)
    assert not problems
    roles = ["entry" if s == spec.start else "page" for s in data.states]
    return visit_mix(data, data.index(spec.start), roles)[0]


def mix_distance(seen, expected: dict[str, float]) -> float:
    """Total-variation distance between an observed type column and a mix."""
    share = seen.value_counts(normalize=True)
    return 0.5 * sum(abs(share.get(t, 0.0) - p) for t, p in expected.items())
