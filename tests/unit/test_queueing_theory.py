"""The engine against closed-form queueing results (statistical tolerances; the runs
are long enough that the tolerances hold for any seed, and fixed seeds keep them
reproducible)."""

from __future__ import annotations

import math

import pytest

import tierlab

from conftest import run, single_request_sessions


def erlang_b(c: int, a: float) -> float:
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return b


def erlang_c(c: int, a: float) -> float:
    b = erlang_b(c, a)
    rho = a / c
    return b / (1 - rho + rho * b)


def mmc_response(c: int, lam: float, mu: float) -> float:
    a = lam / mu
    return erlang_c(c, a) / (c * mu - lam) + 1 / mu


def test_mm1_fcfs_disk():
    lam, mu = 0.7, 1.0
    m = single_request_sessions(lam, {"s": {"stations": {"disk": {"kind": "disk", "iops": mu}}}}, {"s": [{"disk": 1}]}, duration=200_000)
    t = run(m)
    rt = t.summary["response_time"]
    w = 1 / (mu - lam)
    assert rt["mean"] == pytest.approx(w, rel=0.04)
    # Sojourn time of M/M/1 FCFS is exponential with mean W: p90 = W ln 10.
    assert rt["p90"] == pytest.approx(w * math.log(10), rel=0.05)
    assert t.summary["tiers"]["s"]["servers"][0]["stations"]["disk"]["utilization"] == pytest.approx(lam / mu, rel=0.02)


@pytest.mark.parametrize("c,lam", [(2, 1.5), (3, 2.4)])
def test_mmc_fcfs_disk_uses_every_channel(c, lam):
    """A disk with c channels is M/M/c (W = 2.29 s for c = 2, λ = 1.5); a disk that
    served on one channel would be unstable here."""
    m = single_request_sessions(lam, {"s": {"stations": {"disk": {"kind": "disk", "iops": 1.0, "channels": c}}}}, {"s": [{"disk": 1}]}, duration=100_000)
    t = run(m)
    assert t.summary["response_time"]["mean"] == pytest.approx(mmc_response(c, lam, 1.0), rel=0.04)
    assert t.summary["tiers"]["s"]["servers"][0]["stations"]["disk"]["utilization"] == pytest.approx(lam / c, rel=0.02)


def test_constant_service_disk_is_md1():
    """Pollaczek–Khinchine for M/D/1: W = S + ρS / (2(1 − ρ)) = 2.17 s at ρ = 0.7 (an
    exponential disk gives 3.33 s)."""
    lam = 0.7
    m = single_request_sessions(
        lam, {"s": {"stations": {"disk": {"kind": "disk", "iops": 1.0, "service": "constant"}}}}, {"s": [{"disk": 1}]}, duration=100_000
    )
    assert run(m).summary["response_time"]["mean"] == pytest.approx(1 + lam / (2 * (1 - lam)), rel=0.03)


@pytest.mark.parametrize("shared,expected", [(True, 1 / (1 - 0.6)), (False, 1.0)])
def test_shared_link_is_processor_sharing(shared, expected):
    """Transfers of exponential size (mean 1 s at the link's bandwidth) at 0.6 per second:
    a shared link is M/M/1-PS (W = S/(1 − ρ) = 2.5 s); a link per client never queues (W = S)."""
    m = single_request_sessions(0.6, {"s": {}}, {"s": [{"transfer": {"link": "net", "bytes": {"exponential": 1000}}}]}, duration=100_000)
    m["links"] = {"net": {"bandwidth": 8000, "shared": shared}}
    assert run(m).summary["response_time"]["mean"] == pytest.approx(expected, rel=0.04)


@pytest.mark.parametrize("c,lam", [(2, 1.5), (4, 3.2)])
def test_mmc_fcfs_erlang_c(c, lam):
    """c tokens held for an exponential time, FIFO queue: M/M/c."""
    m = single_request_sessions(
        lam,
        {"s": {"pools": {"servers": {"size": c}}}},
        {"s": [{"acquire": "servers"}, {"delay": {"exponential": 1.0}}, {"release": "servers"}]},
        duration=100_000,
    )
    t = run(m)
    assert t.summary["response_time"]["mean"] == pytest.approx(mmc_response(c, lam, 1.0), rel=0.04)


@pytest.mark.parametrize("c,lam", [(1, 0.5), (5, 4.0)])
def test_mmcc_loss_erlang_b(c, lam):
    """A pool with timeout 0 rejects when full: the rejected share is Erlang B."""
    m = single_request_sessions(
        lam,
        {"s": {"pools": {"lines": {"size": c, "timeout": 0}}}},
        {"s": [{"acquire": "lines"}, {"delay": {"exponential": 1.0}}, {"release": "lines"}]},
    )
    t = run(m)
    req = t.summary["requests"]
    loss = req["rejected"] / (req["ok"] + req["rejected"])
    assert loss == pytest.approx(erlang_b(c, lam), rel=0.05)
    assert t.summary["tiers"]["s"]["servers"][0]["pools"]["lines"]["rejected"] == req["rejected"]


@pytest.mark.parametrize("k,lam", [(1, 0.8), (4, 3.0)])
def test_mmk_processor_sharing(k, lam):
    """M/M/1-PS: W = S/(1−ρ). M/M/k-PS with per-job share min(1, k/n) has the birth–death
    process of M/M/k, hence the same mean response time (Erlang C)."""
    m = single_request_sessions(lam, {"s": {"stations": {"cpu": {"kind": "cpu", "cores": k}}}}, {"s": [{"cpu": {"exponential": 1.0}}]}, duration=200_000)
    t = run(m)
    expected = 1 / (1 - lam) if k == 1 else mmc_response(k, lam, 1.0)
    assert t.summary["response_time"]["mean"] == pytest.approx(expected, rel=0.04)


def test_cpu_speed_divides_the_demands():
    """A core twice as fast serves demands of 2 s as M/M/1-PS with S = 1 s: at λ = 0.7,
    W = 1/(1 − 0.7) = 3.33 s and utilization 0.7 (at speed 1 the queue is unstable)."""
    m = single_request_sessions(0.7, {"s": {"stations": {"cpu": {"kind": "cpu", "speed": 2.0}}}}, {"s": [{"cpu": {"exponential": 2.0}}]}, duration=200_000)
    t = run(m)
    assert t.summary["response_time"]["mean"] == pytest.approx(1 / 0.3, rel=0.04)
    assert t.summary["tiers"]["s"]["servers"][0]["stations"]["cpu"]["utilization"] == pytest.approx(0.7, rel=0.02)


def test_ps_is_insensitive_to_service_distribution():
    """M/G/1-PS: the mean response time depends on the service distribution only
    through its mean (constant demands give the same W as exponential ones)."""
    m = single_request_sessions(0.7, {"s": {"stations": {"cpu": {"kind": "cpu"}}}}, {"s": [{"cpu": 1.0}]}, duration=200_000)
    assert run(m).summary["response_time"]["mean"] == pytest.approx(1 / 0.3, rel=0.04)


def mva(n: int, think: float, demands: list[float]) -> tuple[float, float]:
    """Exact mean-value analysis of a closed product-form network: (X, R)."""
    q = [0.0] * len(demands)
    x = r = 0.0
    for pop in range(1, n + 1):
        rk = [d * (1 + qk) for d, qk in zip(demands, q)]
        r = sum(rk)
        x = pop / (think + r)
        q = [x * v for v in rk]
    return x, r


@pytest.mark.parametrize("clients", [5, 20])
def test_closed_network_matches_mva(clients):
    """N clients with exponential think time, a PS CPU and an FCFS disk (exponential)."""
    m = {
        "run": {"duration": 60_000, "warmup": 500, "seed": 5, "records": False},
        "tiers": {"s": {"stations": {"cpu": {"kind": "cpu"}, "disk": {"kind": "disk", "iops": 1 / 0.3}}}},
        "requests": {"job": {"s": [{"cpu": {"exponential": 0.2}}, {"disk": 1}]}},
        "workload": {
            "population": {"clients": clients},
            "think": {"exponential": 2.0},
            "chain": {"matrix": {"job": {"job": 1}}, "start": "job"},
        },
    }
    x, r = mva(clients, 2.0, [0.2, 0.3])
    s = run(m).summary
    assert s["throughput"] == pytest.approx(x, rel=0.03)
    assert s["response_time"]["mean"] == pytest.approx(r, rel=0.04)


def test_littles_law_from_the_records():
    """The number in system computed from the request records alone — each request's
    [start, start + response time] clipped to the measured window, integrated — equals
    the engine's own time average, λW from the records, and M/M/1's ρ/(1 − ρ)."""
    lam = 0.7
    m = single_request_sessions(lam, {"s": {"stations": {"disk": {"kind": "disk", "iops": 1.0}}}}, {"s": [{"disk": 1}]}, duration=50_000, records=True)
    t = tierlab.simulate(m)
    s = t.summary
    begin, end = s["warmup"], s["warmup"] + s["measured_seconds"]
    r = t.requests
    stop = r["start"] + r["response_time"]
    # Requests still in the system at the end have no record: they hold ~L·W/T ≈ 1e-4 of the integral.
    held = (stop.clip(upper=end) - r["start"].clip(lower=begin)).clip(lower=0).sum()
    L = held / (end - begin)
    assert L == pytest.approx(s["little"]["mean_in_system"], rel=2e-3)
    arrived = r[(r["start"] >= begin) & (r["start"] < end)]
    assert L == pytest.approx(len(arrived) / (end - begin) * arrived["response_time"].mean(), rel=0.01)
    assert L == pytest.approx(lam / (1 - lam), rel=0.05)


@pytest.mark.parametrize("exclusive,expected", [(True, 1 / (1 - 0.7)), (False, mmc_response(5, 0.7, 1.0))])
def test_a_lock_held_exclusively_is_one_server(exclusive, expected):
    """A pool of 5 tokens held for an exponential second at 0.7 per second: holders that
    take every token (writers of a readers–writer lock) queue as M/M/1 (W = 3.33 s);
    holders of one token each (readers) as M/M/5 (W = 1.00 s)."""
    program = [{"acquire": "lock", "exclusive": exclusive}, {"delay": {"exponential": 1.0}}, {"release": "lock"}]
    m = single_request_sessions(0.7, {"s": {"pools": {"lock": {"size": 5}}}}, {"s": program}, duration=100_000)
    t = run(m)
    assert t.summary["response_time"]["mean"] == pytest.approx(expected, rel=0.04)
    lock = t.summary["tiers"]["s"]["servers"][0]["pools"]["lock"]
    assert lock["mean_busy"] / lock["size"] == pytest.approx(0.7 if exclusive else 0.7 / 5, rel=0.03)


@pytest.mark.parametrize("handoff,rate", [(0.25, 0.8), (None, 1.0)])
def test_a_hand_off_idles_the_token_between_holders(handoff, rate):
    """Two clients that always want a one-token pool, each holding it 1 s: with a 0.25 s
    hand-off the token serves one hold per 1.25 s (0.8 per second, held 0.8 of the
    time, handed off 0.2 of it: by Little's law, 0.2 / 0.8 = 0.25 s per hand-off), without
    one a hold per second."""
    pool: dict = {"size": 1} | ({"handoff": {"constant": handoff}} if handoff else {})
    program = [{"acquire": "p"}, {"delay": {"constant": 1.0}}, {"release": "p"}]
    m = single_request_sessions(1.0, {"s": {"pools": {"p": pool}}}, {"s": program}, duration=1_010, warmup=10)
    m["workload"] = {"population": {"clients": 2}, "think": 0.0, "chain": {"matrix": {"job": {"job": 1}}, "start": "job"}}
    t = run(m)
    assert t.summary["throughput"] == pytest.approx(rate, rel=0.005)
    p = t.summary["tiers"]["s"]["servers"][0]["pools"]["p"]
    assert p["mean_busy"] == pytest.approx(rate, rel=0.005)
    assert p["mean_handing_off"] == pytest.approx(0.2 if handoff else 0.0, abs=0.002)


C = 0.001  # a CPU demand small enough not to move the queues it is measured against


def _implied_count(t: tierlab.Trace, per: float) -> float:
    """n from the CPU's utilization, λ·C·(1 + per·n) on one core: the mean count the
    contention term read."""
    util = t.summary["tiers"]["s"]["servers"][0]["stations"]["cpu"]["utilization"]
    return (util / (t.summary["throughput"] * C) - 1) / per


@pytest.mark.parametrize("cap,count", [(None, 2.0), (1, 1 - math.exp(-2.0)), (2, 2 - 4 * math.exp(-2.0))])
def test_contention_on_the_busy_tokens_reads_the_others(cap, count):
    """M/M/∞ holds (λ = 1, 2 s each): an arriving request sees n ~ Poisson(2) others
    holding a token (PASTA), so a step inside its hold with `per` 0.5 costs
    C·(1 + 0.5·2); with `max` m it reads min(n, m), whose mean is 1 − e⁻² for m = 1 and
    2 − 4e⁻² for m = 2 (Σ min(n, m)·P(n))."""
    contention = {"pool": "db", "count": "busy", "per": 0.5} | ({"max": cap} if cap else {})
    program = [
        {"acquire": "db"},
        {"cpu": {"constant": C}, "contention": contention},
        {"delay": {"exponential": 2.0}},
        {"release": "db"},
    ]
    tiers = {"s": {"pools": {"db": {"size": 1000}}, "stations": {"cpu": {"kind": "cpu", "cores": 1}}}}
    t = run(single_request_sessions(1.0, tiers, {"s": program}, duration=100_000))
    assert _implied_count(t, 0.5) == pytest.approx(count, rel=0.03)


@pytest.mark.parametrize("clients,cap,hold", [(2, None, 1.5), (3, None, 2.0), (3, 1, 1.5)])
def test_a_delay_grows_with_the_others_holding_as_a_cpu_step_does(clients, cap, hold):
    """Closed clients with no think time, each holding a large pool through a 1 s delay
    that grows by half per other holder: past the first holds, every hold starts with
    all the other clients holding, so it lasts 1 · (1 + 0.5 · min(clients − 1, max))."""
    contention = {"pool": "p", "count": "busy", "per": 0.5} | ({"max": cap} if cap else {})
    program = [{"acquire": "p"}, {"delay": {"constant": 1.0}, "contention": contention}, {"release": "p"}]
    m = single_request_sessions(1.0, {"s": {"pools": {"p": {"size": 100}}}}, {"s": program}, duration=1_010, warmup=10)
    m["workload"] = {"population": {"clients": clients}, "think": 0.0, "chain": {"matrix": {"job": {"job": 1}}, "start": "job"}}
    t = run(m)
    assert t.summary["response_time"]["mean"] == pytest.approx(hold, rel=1e-3)
    assert t.summary["throughput"] == pytest.approx(clients / hold, rel=0.005)


def test_contention_on_the_waiters_grows_the_acquisition():
    """An M/M/1 lock (λ = 0.5, μ = 1): an acquisition sees the time-average queue,
    ρ²/(1 − ρ) = 0.5 waiters, so its `acquire_cpu` C with `per` 1 costs C·1.5."""
    pool = {"size": 1, "acquire_cpu": {"constant": C}, "acquire_contention": {"count": "waiting", "per": 1.0}}
    tiers = {"s": {"pools": {"lock": pool}, "stations": {"cpu": {"kind": "cpu", "cores": 1}}}}
    program = [{"acquire": "lock"}, {"delay": {"exponential": 1.0}}, {"release": "lock"}]
    t = run(single_request_sessions(0.5, tiers, {"s": program}, duration=200_000))
    assert _implied_count(t, 1.0) == pytest.approx(0.5, rel=0.05)


@pytest.mark.parametrize("after,handoff,giver", [(0.0, 0.1, 0.0), (0.3, 0.2, 0.4)])
def test_a_hand_off_on_the_cpu_lasts_its_demand_times_the_jobs_sharing_it(after, handoff, giver):
    """As above, but the token reaches its waiter after 0.1 s of the waiter's own CPU
    (`handoff_cpu`) on a one-core processor-sharing station. Alone there, the hand-off
    takes 0.1 s; when the request that gave the token back computes 0.3 s more on the
    same core, the two share it and the hand-off takes 0.2 s (and the giver's 0.3 s,
    0.4 s). Per request: its CPU is its own plus the hand-off's 0.1 s (the pool's, as
    acquire_cpu's is), and it waits for the connection, hand-off included, two cycles
    less its hold and the time its CPU after the release took (`giver`)."""
    pool = {"kind": "connections", "size": 1, "handoff_cpu": {"constant": 0.1}}
    program: list = [{"acquire": "p"}, {"delay": {"constant": 1.0}}, {"release": "p"}]
    program += [{"cpu": {"constant": after}}] if after else []
    tier = {"pools": {"p": pool}, "stations": {"cpu": {"kind": "cpu"}}}
    m = single_request_sessions(1.0, {"s": tier}, {"s": program}, duration=1_010, warmup=10, records=True)
    m["workload"] = {"population": {"clients": 2}, "think": 0.0, "chain": {"matrix": {"job": {"job": 1}}, "start": "job"}}
    t = run(m)
    cycle = 1.0 + handoff
    assert t.summary["throughput"] == pytest.approx(1 / cycle, rel=0.005)
    server = t.summary["tiers"]["s"]["servers"][0]
    assert server["pools"]["p"]["mean_handing_off"] == pytest.approx(handoff / cycle, abs=0.002)
    assert server["stations"]["cpu"]["utilization"] == pytest.approx((0.1 + after) / cycle, rel=0.005)
    r = t.requests
    assert r is not None
    r = r[r.status == "ok"]
    assert r["s.cpu_time"].to_numpy() == pytest.approx(0.1 + after)
    assert r["s.pool_cpu_time"].to_numpy() == pytest.approx(0.1)
    assert r["s.wait_db"].to_numpy() == pytest.approx(2 * cycle - 1 - giver)
