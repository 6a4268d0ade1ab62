"""White-box testing on traces with a known bottleneck: a CPU, a disk, a socket limit."""

from __future__ import annotations

import tierlab
from tierlab.analysis.bottleneck import GRACEFUL, TOKEN, bottleneck, breakdown

from conftest import single_request_sessions


def _two_tier(rate: float, db: dict, db_program: list) -> dict:
    tiers = {"web": {"pools": {"threads": {"kind": "threads", "size": 200}}, "stations": {"cpu": {"kind": "cpu", "cores": 4}}}, "db": db}
    program = {"web": [{"acquire": "threads"}, {"cpu": {"exponential": 0.01}}, {"call": "db"}, {"release": "threads"}], "db": db_program}
    return single_request_sessions(rate, tiers, program, duration=400, warmup=50, records=True)


def test_a_saturated_cpu_is_named():
    m = _two_tier(11.0, {"stations": {"cpu": {"kind": "cpu"}}}, [{"cpu": {"exponential": 0.1}}])
    b = bottleneck(tierlab.simulate(m))
    assert (b.tier, b.resource, b.kind, b.family, b.saturated) == ("db", "cpu", "cpu", GRACEFUL, True)


def test_a_saturated_disk_is_named():
    db = {"stations": {"cpu": {"kind": "cpu", "cores": 8}, "disk": {"kind": "disk", "iops": 100, "memory": "mostly_on_disk"}}}
    m = _two_tier(15.0, db, [{"cpu": {"exponential": 0.01}}, {"disk": 10}])  # 15 × 10 × 0.7 = 105 of 100 IOPS
    b = bottleneck(tierlab.simulate(m))
    assert (b.resource, b.kind, b.family) == ("disk", "disk", GRACEFUL)


def test_a_socket_limit_is_a_token_bottleneck_while_hardware_idles():
    db = {"pools": {"sockets": {"kind": "other", "size": 5}}, "stations": {"cpu": {"kind": "cpu", "cores": 8}}}
    m = _two_tier(60.0, db, [{"acquire": "sockets"}, {"cpu": {"exponential": 0.1}}, {"release": "sockets"}])
    t = tierlab.simulate(m)
    b = bottleneck(t)
    assert (b.tier, b.resource, b.family, b.saturated) == ("db", "sockets", TOKEN, True) and b.pinned > 0.9
    # Requests spend their time waiting in the web tier for the database's sockets.
    bd = breakdown(t).set_index("tier")
    assert bd.loc["web", "wait_thread"] > bd.loc["db", "time"]


def test_nothing_saturated_names_the_busiest():
    m = _two_tier(2.0, {"stations": {"cpu": {"kind": "cpu"}}}, [{"cpu": {"exponential": 0.1}}])
    b = bottleneck(tierlab.simulate(m))
    assert not b.saturated and (b.tier, b.resource) == ("db", "cpu") and 0.1 < b.level < 0.3
