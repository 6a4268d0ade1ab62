"""Sessions, determinism, nested holding, phases, pools, traces."""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pytest

import tierlab

from conftest import EXAMPLES, check_little, run, single_request_sessions


def _stationary(csv_path, drop=("INIT",)) -> dict[str, float]:
    """Independent computation: the stationary distribution of the chain's pages."""
    with open(csv_path, newline="") as f:
        rows = list(csv.reader(f))
    names = rows[0][1:]
    P = np.array([[float(x) for x in r[1:]] for r in rows[1:]])
    keep = [i for i, n in enumerate(names) if n not in drop]
    P = P[np.ix_(keep, keep)]
    P = P / P.sum(axis=1, keepdims=True)
    vals, vecs = np.linalg.eig(P.T)
    pi = np.abs(np.real(vecs[:, np.argmin(np.abs(vals - 1))]))
    return dict(zip([names[i] for i in keep], pi / pi.sum()))


def test_request_mix_is_the_chains_stationary_distribution():
    csv_path = EXAMPLES / "tpcw_shopping_transition_probabilities.csv"
    states = [s for s in _stationary(csv_path)]
    m = {
        "run": {"duration": 20_000, "seed": 2},
        "tiers": {"web": {}},
        "requests": {s: {"web": [{"delay": 0.01}]} for s in states},
        "workload": {
            "population": {"clients": 50},
            "think": {"exponential": 1.0},
            "chain": {"csv": str(csv_path), "start": "INIT"},
        },
    }
    t = run(m)
    observed = t.requests["type"].value_counts(normalize=True)
    for state, p in _stationary(csv_path).items():
        assert observed[state] == pytest.approx(p, abs=0.004), state


def test_back_returns_to_the_previous_page_and_end_ends_sessions():
    m = {
        "run": {"duration": 2_000, "seed": 4},
        "tiers": {"web": {}},
        "requests": {p: {"web": [{"delay": 0.001}]} for p in ("A", "B")},
        "workload": {
            "population": {"clients": 3},
            "think": 0.5,
            "chain": {"matrix": {"A": {"B": 1.0}, "B": {"BACK": 0.5, "END_OF_SESSION": 0.5}}, "start": "A"},
        },
    }
    t = run(m)
    seq = t.requests.sort_values("start").groupby("session")["type"].apply(lambda s: "".join(s.astype(str)))
    # Every session is A B, then (BACK → A, then B again) or the end: A B (A B)*.
    assert seq.str.fullmatch(r"AB(AB)*").all()
    assert (seq.str.len() > 2).any() and (seq == "AB").any()
    mean_requests = t.summary["sessions"]["mean_requests"]
    assert mean_requests == pytest.approx(4.0, rel=0.05)  # 2 × geometric(1/2) pairs


def test_session_end_after_requests_and_after_time():
    base = {
        "run": {"duration": 5_000, "seed": 8},
        "tiers": {"web": {}},
        "requests": {"A": {"web": [{"delay": 0.01}]}},
    }
    m = dict(
        base, workload={"population": {"clients": 4}, "think": 1.0, "chain": {"matrix": {"A": {"A": 1}}, "start": "A"}, "session_end": {"after_requests": 5}}
    )
    assert run(m).summary["sessions"]["mean_requests"] == 5
    m = dict(
        base,
        workload={
            "population": {"clients": 4},
            "think": 1.0,
            "chain": {"matrix": {"A": {"A": 1}}, "start": "A"},
            "session_end": {"after_time": {"duration": 10.0}},
        },
    )
    # A request every 1.01 s: the ones sent at 0 … 9.09 s fall within 10 s, plus the first.
    assert run(m).summary["sessions"]["mean_requests"] == pytest.approx(10, abs=1)


def test_same_seed_same_bytes_different_seed_differs(tmp_path):
    model = EXAMPLES / "tpcw_2tier.yaml"
    paths = []
    for i, seed in enumerate([7, 7, 8]):
        t = tierlab.simulate(model, seed=seed, duration=120, warmup=10)
        paths.append(t.write(tmp_path / str(i)))
    a, b, c = ((p / "summary.json").read_bytes() for p in paths)
    assert a == b
    assert a != c
    ra, rb = (pd.read_parquet(p / "requests.parquet") for p in paths[:2])
    pd.testing.assert_frame_equal(ra, rb)


def nested_model(threads: int, conns: int) -> dict:
    return {
        "run": {"duration": 2_000, "warmup": 50, "seed": 3},
        "tiers": {
            "app": {
                "pools": {"threads": {"kind": "threads", "size": threads}, "db": {"kind": "connections", "size": conns}},
                "stations": {"cpu": {"kind": "cpu", "cores": 2}},
            },
            "db": {"stations": {"cpu": {"kind": "cpu", "cores": 2}}},
        },
        "requests": {
            "q": {
                "app": [
                    {"acquire": "threads"},
                    {"cpu": {"exponential": 0.01}},
                    {"acquire": "db"},
                    {"loop": {"count": 3, "steps": [{"call": "db"}]}},
                    {"release": "db"},
                    {"release": "threads"},
                ],
                "db": [{"cpu": {"exponential": 0.01}}],
            }
        },
        "workload": {"population": {"clients": 60}, "think": {"exponential": 0.2}, "chain": {"matrix": {"q": {"q": 1}}, "start": "q"}},
    }


def test_nested_holding_bounds_and_phases():
    M, N = 12, 4
    t = run(nested_model(M, N))
    ts = t.timeseries
    busy_max = ts[(ts.metric == "busy_max")].groupby("resource", observed=True)["value"].max()
    assert busy_max["db"] == N and busy_max["threads"] == M  # saturated, never exceeded
    queued = ts[(ts.metric == "queued")].groupby("resource", observed=True)["value"].max()
    assert queued["db"] > 0 and queued["threads"] > 0
    # Requests keep their thread while they wait for and use a connection.
    r = t.requests
    phases = r[[f"app.{p}" for p in tierlab.PHASES]].sum(axis=1)
    np.testing.assert_allclose(phases, r["app.time"], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(r["app.time"], r["response_time"], rtol=1e-9, atol=1e-9)
    assert (r["app.other"] < 1e-9).all() and (r["app.with_db_idle"] == 0).all()
    assert (r["app.db_requests"] == 1).all() and (r["db.visits"] == 3).all()
    # The db tier's residence is spent inside the app's with-DB phase.
    assert (r["db.time"] <= r["app.with_db_active"] + 1e-9).all()
    # The time-averaged holding equals the records' holding (Little for each pool).
    pools = t.summary["tiers"]["app"]["servers"][0]["pools"]
    span = t.summary["measured_seconds"]
    assert pools["db"]["mean_busy"] == pytest.approx(r["app.with_db_active"].sum() / span, rel=0.02)


def test_transaction_wide_caching_counts_each_connection_request():
    m = nested_model(12, 4)
    m["requests"]["q"]["app"] = [
        {"acquire": "threads"},
        {"cpu": {"exponential": 0.01}},
        {"loop": {"count": 3, "steps": [{"acquire": "db"}, {"call": "db"}, {"release": "db"}]}},
        {"release": "threads"},
    ]
    r = run(m).requests
    assert (r["app.db_requests"] == 3).all()


@pytest.mark.parametrize(
    "caching, before_db, active, idle, requests",
    [
        # Each use takes and gives back a connection, except inside the transaction.
        ("transaction", 0.1 + 3 * 0.02 + 0.05, 0.05, 0.02, 3 + 1),
        # The first use takes it; it stays cached (idle between uses) to the end.
        ("request", 0.1, 0.05, 3 * 0.02 + 0.02 + 0.05, 1),
    ],
)
def test_connection_caching_modes(caching, before_db, active, idle, requests):
    use = {"use": {"pool": "db", "steps": [{"delay": 0.01}]}}
    program = [
        {"acquire": "threads"},
        {"delay": 0.1},
        {"loop": {"count": 3, "steps": [use, {"delay": 0.02}]}},
        {"transaction": {"pool": "db", "steps": [use, {"delay": 0.02}, use]}},
        {"delay": 0.05},
        {"release": "threads"},
    ]
    tiers = {"app": {"pools": {"threads": {"kind": "threads", "size": 5}, "db": {"kind": "connections", "size": 5, "caching": caching}}}}
    r = run(single_request_sessions(0.1, tiers, {"app": program}, duration=2_000, warmup=0, records=True)).requests
    assert len(r) > 100
    expected = {"before_db": before_db, "with_db_active": active, "with_db_idle": idle, "wait_thread": 0, "wait_db": 0, "other": 0}
    for phase, value in expected.items():
        np.testing.assert_allclose(r[f"app.{phase}"], value, atol=1e-9, err_msg=phase)
    assert (r["app.db_requests"] == requests).all()


def test_priority_pool_serves_lower_priority_value_first():
    """One token held for 1 s; light (priority 0) and heavy (priority 1) requests wait.
    Under FIFO both wait alike; under priority the light class waits far less."""

    def model(queue):
        return {
            "run": {"duration": 20_000, "warmup": 100, "seed": 6},
            "tiers": {"s": {"pools": {"p": {"size": 1, "queue": queue}}}},
            "requests": {
                "light": {"priority": 0, "s": [{"acquire": "p"}, {"delay": {"exponential": 0.5}}, {"release": "p"}]},
                "heavy": {"priority": 1, "s": [{"acquire": "p"}, {"delay": {"exponential": 0.5}}, {"release": "p"}]},
            },
            "workload": {
                "population": {"session_rate": 1.6},
                "chain": {"matrix": {"X": {"light": 0.5, "heavy": 0.5}, "light": {"END_OF_SESSION": 1}, "heavy": {"END_OF_SESSION": 1}}, "start": "X"},
            },
        }

    fifo = run(model("fifo")).summary["types"]
    prio = run(model("priority")).summary["types"]
    assert fifo["light"]["response_time"]["mean"] == pytest.approx(fifo["heavy"]["response_time"]["mean"], rel=0.1)
    assert prio["light"]["response_time"]["mean"] < 0.5 * prio["heavy"]["response_time"]["mean"]


def test_pool_timeout_rejects_and_releases_everything():
    m = nested_model(6, 1)
    m["tiers"]["app"]["pools"]["db"]["timeout"] = 0.05
    m["run"]["warmup"] = 0  # pool counters cover a time span, request counts go by arrival: align them
    t = run(m)
    r = t.requests
    rejected = r[r.status == "rejected"]
    assert len(rejected) > 0
    assert t.summary["requests"]["rejected"] == len(rejected)
    assert t.summary["tiers"]["app"]["servers"][0]["pools"]["db"]["rejected"] == len(rejected)
    # A rejected request waited (about) the timeout for its connection, then left.
    assert rejected["app.wait_db"].max() == pytest.approx(0.05, abs=1e-9)
    # Tokens were returned: no pool stays pinned after the run's rejections.
    ts = t.timeseries
    assert ts[(ts.resource == "threads") & (ts.metric == "busy")]["value"].min() < 6


def test_weighted_round_robin_splits_load():
    m = {
        "run": {"duration": 5_000, "seed": 1},
        "tiers": {"web": {}, "app": {"servers": 3, "dispatch": {"policy": "round_robin", "weights": [2, 1, 1]}}},
        "requests": {"A": {"web": [{"call": "app"}], "app": [{"delay": 0.01}]}},
        "workload": {"population": {"clients": 5}, "think": 1.0, "chain": {"matrix": {"A": {"A": 1}}, "start": "A"}},
    }
    share = run(m).requests["app.server"].value_counts(normalize=True).sort_index()
    np.testing.assert_allclose(share.values, [0.5, 0.25, 0.25], atol=0.002)


def test_transfer_and_delay_add_their_times():
    m = {
        "run": {"duration": 1_000, "seed": 1},
        "tiers": {"web": {}},
        "links": {"client": {"bandwidth": 8e6, "delay": 0.2}},
        "requests": {"A": {"web": [{"delay": 0.1}, {"transfer": {"link": "client", "bytes": 100_000}}]}},
        "workload": {"population": {"clients": 3}, "think": 1.0, "chain": {"matrix": {"A": {"A": 1}}, "start": "A"}},
    }
    rt = run(m).requests["response_time"]
    np.testing.assert_allclose(rt, 0.1 + 0.2 + 0.1, rtol=1e-9)  # delay + latency + 100 kB at 1 MB/s


def test_trace_roundtrip_and_schema(tmp_path):
    t = tierlab.simulate(EXAMPLES / "tpcw_2tier.yaml", duration=1_200, warmup=60)
    t.write(tmp_path)
    back = tierlab.read_trace(tmp_path)
    assert back.summary == json.loads((tmp_path / "summary.json").read_text())
    pd.testing.assert_frame_equal(back.requests, t.requests)
    assert list(back.timeseries.columns) == ["t", "tier", "server", "resource", "metric", "value"]
    check_little(back)
    util = back.series("app", "utilization", resource="cpu")
    assert util.shape[1] == 1 and 0 < util[0].mean() < 1


def test_interrupt_keeps_what_was_measured():
    calls = []

    def progress(f):
        calls.append(f)
        if len(calls) == 2:
            raise KeyboardInterrupt

    with pytest.raises(tierlab.RunInterrupted) as e:
        tierlab.simulate(EXAMPLES / "rubbos_3tier.yaml", duration=3_000, warmup=1, progress=progress)
    t = e.value.result
    assert t.interrupted and t.summary["interrupted"]
    assert 0 < t.summary["simulated_until"] < 3_000
    assert t.summary["requests"]["ok"] == len(t.requests[t.requests.status == "ok"]) > 0
