"""Dispatch over a cluster in the simulator: queueing results where they exist
(Poisson splitting, Erlang arrivals), session state and migrations, ReDAL-W's
bounded queue, dispatchers sharing metrics, and bad parameters."""

from __future__ import annotations

import warnings

import pytest
from scipy.optimize import brentq

import tierlab
from tierlab.analysis.dispatch import cluster_metrics

from conftest import EXAMPLES, run, single_request_sessions


def _fcfs_cluster(policy: dict, servers: int = 4, rate: float = 2.0) -> dict:
    """Poisson arrivals over `servers` FCFS exp(1) servers (one thread each)."""
    app = {"servers": servers, "dispatch": policy, "pools": {"t": {"kind": "threads", "size": 1}}, "stations": {"cpu": {"kind": "cpu"}}}
    program = {"web": [{"call": "app"}], "app": [{"acquire": "t"}, {"cpu": {"exponential": 1.0}}, {"release": "t"}]}
    return single_request_sessions(rate, {"web": {}, "app": app}, program, duration=60_000)


def _mean_response(trace) -> float:
    return trace.summary["response_time"]["mean"]


def test_random_dispatch_is_poisson_splitting_into_mm1():
    # λ = 0.5 per server, μ = 1: W = 1/(μ − λ) = 2.
    assert _mean_response(run(_fcfs_cluster({"policy": "random"}))) == pytest.approx(2.0, rel=0.04)


def test_round_robin_gives_erlang_arrivals_e4_m_1():
    # Every 4th Poisson arrival: Erlang-4 interarrivals (mean 2). GI/M/1: W = 1/(μ(1−σ)),
    # σ the root in (0, 1) of σ = A*(μ(1−σ)), A*(s) = (2/(2+s))^4.
    sigma = brentq(lambda x: x - (2 / (2 + 1 - x)) ** 4, 1e-9, 1 - 1e-9)
    assert _mean_response(run(_fcfs_cluster({"policy": "round_robin"}))) == pytest.approx(1 / (1 - sigma), rel=0.03)


def test_load_aware_policies_beat_oblivious_ones():
    w = {p: _mean_response(run(_fcfs_cluster({"policy": p}, rate=3.0))) for p in ("random", "power_of_two", "least_active")}
    # Join-the-shortest-queue < two choices < random (M/M/1 at ρ = 0.75: W = 4).
    assert w["least_active"] < w["power_of_two"] < 0.7 * w["random"]
    assert w["random"] == pytest.approx(4.0, rel=0.08)


def _sessions(policy: dict, **app) -> dict:
    """Closed sessions of ~10 requests on a stateful app tier; a fetch costs 50 ms."""
    return {
        "run": {"duration": 3_000, "warmup": 300, "seed": 5},
        "tiers": {
            "web": {"servers": 2, "dispatch": {"policy": "affinity"}},
            "app": {
                "servers": 4,
                "dispatch": policy,
                "session_state": {"fetch": [{"delay": 0.05}]},
                "pools": {"t": {"kind": "threads", "size": 4}},
                "stations": {"cpu": {"kind": "cpu"}},
                **app,
            },
        },
        "requests": {"A": {"web": [{"call": "app"}], "app": [{"acquire": "t"}, {"cpu": {"exponential": 0.05}}, {"release": "t"}]}},
        "workload": {
            "population": {"clients": 20},
            "think": {"exponential": 1.0},
            "session_end": {"after_requests": {"exponential": 10}},
            "chain": {"matrix": {"A": {"A": 1}}, "start": "A"},
        },
    }


def test_affinity_keeps_sessions_home_least_active_migrates_and_pays_the_fetch():
    aff = run(_sessions({"policy": "affinity", "dispatchers": 2}))
    hj = run(_sessions({"policy": "least_active", "dispatchers": 2}))
    a, h = aff.summary["tiers"]["app"]["dispatch"], hj.summary["tiers"]["app"]["dispatch"]
    assert a["session_migrations"] == 0 and a["sessions_created"] > 0
    assert a["sync_messages"] == 0 and h["sync_messages"] > 0  # affinity has no metrics to share
    assert h["session_migrations"] > 0.3 * hj.summary["requests"]["ok"]
    # A migrated visit fetched the state: its app time includes the 50 ms fetch.
    moved = hj.requests["app.time"].mean() - aff.requests["app.time"].mean()
    share = h["session_migrations"] / len(hj.requests)
    assert moved == pytest.approx(0.05 * share, rel=0.35)
    # Affinity piles sessions up unevenly; least-active evens the load out.
    ma, mh = cluster_metrics(aff, "app"), cluster_metrics(hj, "app")
    assert mh["imbalance"] < 0.7 * ma["imbalance"]
    assert ma["migrations_per_request"] == 0 and mh["migrations_per_request"] == pytest.approx(share, rel=0.01)


def test_affinity_never_changes_a_sessions_server():
    # The web tier keeps no state but is sticky too: affinity follows the last server.
    r = run(_sessions({"policy": "affinity"})).requests
    assert (r.groupby("session")[["web.server", "app.server"]].nunique() == 1).all().all()


def test_redal_w_holds_requests_then_rejects_and_counts_them():
    policy = {"policy": "redal_w", "slice": 0.1, "think_time": 1.0, "interval": 0.2, "intervals": 3, "queue": {"size": 3, "timeout": 0.5}}
    m = _sessions(policy, servers=2)
    m["workload"]["population"]["clients"] = 200  # far beyond 2 servers' capacity
    t = run(m)
    d = t.summary["tiers"]["app"]["dispatch"]
    assert d["queued"] > 0 and d["rejected_queue_full"] > 0 and d["rejected_queue_timeout"] > 0
    # Nothing is lost: every rejection is a request with status "rejected".
    assert t.summary["requests"]["rejected"] == d["rejected_queue_full"] + d["rejected_queue_timeout"]
    assert (t.requests.status == "rejected").sum() == t.summary["requests"]["rejected"]


@pytest.mark.parametrize("topology", ["shared", "hierarchical"])
def test_dispatchers_share_metrics_only_when_they_share_servers(topology):
    policy = {"policy": "redal", "slice": 0.1, "think_time": 1.0, "dispatchers": 2, "topology": topology, "sync": {"interval": 0.5}}
    t = run(_sessions(policy))
    d = t.summary["tiers"]["app"]["dispatch"]
    r = t.requests
    if topology == "shared":
        # A round every 0.5 s of the measured period, one message per dispatcher.
        measured = t.summary["measured_seconds"]
        assert measured / 0.5 == int(measured / 0.5) and d["sync_messages"] == 2 * int(measured / 0.5)
        # The paper's message (§II-D): per server, actual load, throughput and one
        # expected-load counter per slice of the think time: 4 · (2 + ⌈1.0/0.1⌉) = 48.
        assert d["sync_payload_bytes"] == 48
        assert set(r["app.server"]) == {0, 1, 2, 3}
    else:
        assert d["sync_messages"] == 0
        # Web server i dispatches only to its own block of app servers.
        assert (r["app.server"] // 2 == r["web.server"]).all()


def test_same_seed_same_dispatch():
    policy = {"policy": "redal", "slice": 0.1, "think_time": 1.0, "dispatchers": 2}
    a, b = (tierlab.simulate(_sessions(policy)).summary for _ in range(2))
    assert a == b


@pytest.mark.parametrize(
    "dispatch, field",
    [
        ({"policy": "redal", "alpha": 0}, "alpha"),
        ({"policy": "redal", "alpha": 1.5}, "alpha"),
        ({"policy": "redal", "slice": 2.0, "think_time": 1.0}, "slice d = 2.0 must be less than think_time"),
        ({"policy": "affinity", "dispatchers": 5, "topology": "hierarchical"}, "tiers.app.dispatch.dispatchers"),
        ({"policy": "affinity_cap", "cap": 0}, "cap"),
        ({"policy": "fastest"}, "policy is one of"),
    ],
)
def test_bad_dispatch_parameters_are_named(dispatch, field):
    with pytest.raises(tierlab.ModelError, match=field):
        tierlab.simulate(_sessions(dispatch))


def test_zero_servers_is_an_error():
    m = _sessions({"policy": "affinity"})
    m["tiers"]["app"]["servers"] = 0
    with pytest.raises(tierlab.ModelError, match="tiers.app.servers"):
        tierlab.simulate(m)


def test_session_weight_scales_the_cpu_work_of_its_requests():
    m = _sessions({"policy": "affinity"})
    m["workload"]["population"]["clients"] = 1  # no contention: time = work
    m["tiers"]["app"]["session_state"] = None
    base = run(m).requests
    m["workload"]["session_weight"] = {"empirical": [0.5, 3.0]}
    r = run(m).requests
    per_session = r.groupby("session")["app.time"].mean()
    # Heavy and light sessions: each session's mean is near 0.5× or 3× the unweighted.
    ratio = per_session / base["app.time"].mean()
    assert ((ratio < 1.0) | (ratio > 1.5)).mean() > 0.9 and (ratio < 1).any() and (ratio > 1.5).any()
    assert ratio[ratio < 1.5].median() == pytest.approx(0.5, abs=0.1)
    assert ratio[ratio > 1.5].median() == pytest.approx(3.0, abs=0.4)


@pytest.mark.parametrize("interval", [0.05, 0.1])
def test_sync_messages_follow_from_the_interval(interval):
    # 25 measured seconds: 25 / interval rounds, a message from each of the 2 dispatchers
    # (rounds at k × interval: summing 0.05s drifted, and a round at the warm-up's end
    # or at the run's end was miscounted).
    model = tierlab.load_model(EXAMPLES / "tpcw_cluster.yaml").with_run(duration=30, warmup=5)
    t = tierlab.simulate(model.with_changes({"tiers.app.dispatch.topology": "shared", "tiers.app.dispatch.sync.interval": interval}))
    assert t.summary["tiers"]["app"]["dispatch"]["sync_messages"] == 2 * round(25 / interval)


def test_cluster_metrics_of_a_tier_the_trace_lacks_names_the_tiers():
    t = run(_sessions({"policy": "round_robin"}))
    with pytest.raises(tierlab.InputError, match="no tier 'apps'; its tiers: app, web"):
        cluster_metrics(t, "apps")


@pytest.mark.parametrize(
    "dispatch, why",
    [
        ({"policy": "redal", "slice": 0.1, "think_time": 1.0, "dispatchers": 2, "topology": "hierarchical"}, "hierarchical dispatchers"),
        ({"policy": "affinity", "dispatchers": 2}, "affinity keeps no load metrics"),
        ({"policy": "least_active"}, "one dispatcher"),
        ({"policy": "least_active", "dispatchers": 2}, None),
    ],
)
def test_a_sync_that_exchanges_nothing_is_named(dispatch, why):
    model = tierlab.load_model(_sessions({**dispatch, "sync": {"interval": 0.5}}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.engine()
    said = [str(w.message) for w in caught if issubclass(w.category, tierlab.ModelWarning)]
    if why is None:
        assert said == []
    else:
        assert len(said) == 1 and said[0].startswith("tiers.app.dispatch.sync has no effect: ") and why in said[0]


def _heavy_sessions(policy: dict, rate: float) -> dict:
    """Poisson sessions of ~20 requests on two stateful servers; a fifth of the sessions
    weigh 8 times the others, so the server that holds several heavy ones saturates for
    a while (both servers average ρ ≈ 0.05 at 0.1 sessions/s, ≈ 0.75 at 1.5)."""
    return {
        "run": {"duration": 2_000, "warmup": 200, "seed": 3, "records": False},
        "tiers": {"app": {"servers": 2, "dispatch": policy, "session_state": {"fetch": [{"delay": 0.01}]}, "stations": {"cpu": {"kind": "cpu"}}}},
        "requests": {"A": {"app": [{"cpu": {"exponential": 0.02}}]}},
        "workload": {
            "population": {"session_rate": rate},
            "think": {"exponential": 1.0},
            "session_weight": {"empirical": {"values": [1, 8], "weights": [0.8, 0.2]}},
            "session_end": {"after_requests": {"exponential": 20}},
            "chain": {"matrix": {"A": {"A": 1}}, "start": "A"},
        },
    }


def test_redal_moves_sessions_off_a_server_only_when_its_throughput_stops_following_its_load():
    """ReDAL keeps a session home while the home's throughput still grows with its
    arrivals (slope > 0) and sends it to the least loaded server once it does not: so
    migrations are rare while both servers idle and common once one saturates.
    Affinity never moves a session, whatever the load."""
    redal = {"policy": "redal", "alpha": 0.5, "slice": 0.1, "think_time": 1.0, "interval": 1.0, "intervals": 3}
    share = {}
    for rate in (0.1, 1.5):
        t = run(_heavy_sessions(redal, rate))
        share[rate] = t.summary["tiers"]["app"]["dispatch"]["session_migrations"] / t.summary["requests"]["ok"]
        assert run(_heavy_sessions({"policy": "affinity"}, rate)).summary["tiers"]["app"]["dispatch"]["session_migrations"] == 0
    # Measured: 0.1% of requests at ρ ≈ 0.05 (3 of 3,124), 11% at ρ ≈ 0.75.
    assert share[0.1] < 0.005 and share[1.5] > 0.05


def test_redal_n_takes_the_slope_against_requests_in_progress_and_moves_sessions_under_load():
    """redal_n is ReDAL whose dispatchability slope is taken against the requests in
    progress (crates/policy, ReDAL-N): the engine gets `test: in_progress` (redal keeps
    `arrivals`), and on the heavy sessions it too moves few sessions idle, many loaded."""
    redal_n = {"policy": "redal_n", "alpha": 0.5, "slice": 0.1, "think_time": 1.0, "interval": 1.0, "intervals": 3}
    tests = {
        p: tierlab.load_model(_heavy_sessions({**redal_n, "policy": p}, 0.1)).engine()["tiers"][0]["dispatch"]["policy"]["test"] for p in ("redal", "redal_n")
    }
    assert tests == {"redal": "arrivals", "redal_n": "in_progress"}
    share = {
        rate: (s := run(_heavy_sessions(redal_n, rate)).summary)["tiers"]["app"]["dispatch"]["session_migrations"] / s["requests"]["ok"] for rate in (0.1, 1.5)
    }
    # Measured: 0.06% of requests at ρ ≈ 0.05 (2 of 3,124), 11% at ρ ≈ 0.75.
    assert share[0.1] < 0.005 and share[1.5] > 0.05
