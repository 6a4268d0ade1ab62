"""Andreolini et al.'s scenarios: memory (the buffer pool's share of the database sets
the disk's hit ratio) and client networks (bandwidth, delay, segment loss)."""

from __future__ import annotations

import pytest

import tierlab

from conftest import run, single_request_sessions


def _transfer(link: dict, size: int = 146_000) -> dict:
    return single_request_sessions(20.0, {"web": {}}, {"web": [{"transfer": {"link": "client", "bytes": size}}]}, duration=5_000, records=True) | {
        "links": {"client": link}
    }


def test_lost_segments_each_cost_one_timeout():
    # 100 segments of 1460 B at 8 Mbit/s: 0.146 s + delay + (lost segments) × rto.
    t = run(_transfer({"bandwidth": 8e6, "delay": 0.1, "loss": 0.01, "rto": 0.5}))
    rt = t.requests.response_time
    extra = rt - (0.146 + 0.1)
    assert extra.min() == pytest.approx(0.0, abs=1e-9)
    assert ((extra / 0.5).round() - extra / 0.5).abs().max() < 1e-6  # whole timeouts
    assert extra.mean() == pytest.approx(100 * 0.01 * 0.5, rel=0.05)  # Binomial(100, 1%) × 0.5 s


def test_presets_fill_the_papers_links_and_fields_override():
    well = tierlab.load_model({**_transfer({"preset": "well_connected"})}).spec.links["client"]
    bad = tierlab.load_model({**_transfer({"preset": "badly_connected", "rto": 1.0})}).spec.links["client"]
    assert (well.bandwidth, well.loss) == (64e6, 0.0) and (bad.bandwidth, bad.loss, bad.rto) == (8e6, 0.01, 1.0)
    rt = {name: run(_transfer({"preset": name})).requests.response_time.mean() for name in ("well_connected", "badly_connected")}
    # 100 segments in slow start from 3: flights of 3, 6, 12, 24, 48, 96 — the delay 11 times.
    assert rt["well_connected"] == pytest.approx(11 * 0.005 + 146_000 * 8 / 64e6, rel=0.02)
    assert rt["badly_connected"] == pytest.approx(11 * 0.2 + 146_000 * 8 / 8e6 + 100 * 0.01 * 0.6, rel=0.02)


@pytest.mark.parametrize("segments, flights", [(1, 1), (3, 1), (4, 2), (9, 2), (10, 3), (21, 3), (22, 4)])
def test_slow_start_costs_a_round_trip_per_further_flight(segments, flights):
    # Window 3, doubling: 3 | 6 | 12 … segments per flight; one-way delay 0.1 s.
    t = run(_transfer({"bandwidth": 1e12, "delay": 0.1, "initial_window": 3}, size=segments * 1460))
    assert t.requests.response_time.to_numpy() == pytest.approx(0.1 * (2 * flights - 1), abs=1e-6)


@pytest.mark.parametrize("memory, hits", [(0.1, 0.4), (0.2, 0.8), (0.6, 0.9)])
def test_locality_puts_the_hot_data_in_the_buffer_pool_first(memory, hits):
    # 80/20: the hottest 20% of the data takes 80% of the accesses.
    disk = {"kind": "disk", "iops": 1000, "memory": memory, "locality": {"hot_data": 0.2, "hot_accesses": 0.8}}
    model = tierlab.load_model(single_request_sessions(5.0, {"db": {"stations": {"disk": disk}}}, {"db": [{"disk": 1}]}))
    assert model.spec.tiers["db"].stations["disk"].hits() == pytest.approx(hits)


@pytest.mark.parametrize("memory, hits", [("all_in_memory", 1.0), ("partially_in_memory", 0.6), ("mostly_on_disk", 0.3), (0.5, 0.5)])
def test_memory_scenarios_set_the_disk_traffic(memory, hits):
    # 10 accesses per request, 5 requests/s, 1000 IOPS: utilization = 50 · (1 − hits) / 1000.
    tiers = {"db": {"stations": {"disk": {"kind": "disk", "iops": 1000, "memory": memory}}}}
    t = run(single_request_sessions(5.0, tiers, {"db": [{"disk": 10}]}, duration=20_000))
    u = t.summary["tiers"]["db"]["servers"][0]["stations"]["disk"]["utilization"]
    assert u == pytest.approx(50 * (1 - hits) / 1000, rel=0.05, abs=1e-9)


@pytest.mark.parametrize(
    "link, message",
    [
        ({"preset": "dial_up"}, "preset 'dial_up' does not exist; presets: well_connected, badly_connected"),
        ({"bandwidth": 1e6, "loss": 1.0}, "links.client.loss"),
        ({"bandwidth": 1e6, "loss": -0.1}, "links.client.loss"),
        ({"bandwidth": 1e6, "initial_window": 0.5}, "links.client.initial_window"),
    ],
)
def test_bad_links_are_named(link, message):
    with pytest.raises(tierlab.ModelError, match=message.replace("(", r"\(")):
        tierlab.load_model(_transfer(link))


def test_memory_or_hit_ratio_not_both():
    tiers = {"db": {"stations": {"disk": {"kind": "disk", "iops": 1000, "memory": "mostly_on_disk", "hit_ratio": 0.2}}}}
    with pytest.raises(tierlab.ModelError, match="hit_ratio or memory, not both"):
        tierlab.load_model(single_request_sessions(5.0, tiers, {"db": [{"disk": 1}]}))
    tiers["db"]["stations"]["disk"] = {"kind": "disk", "iops": 1000, "memory": "in_the_cloud"}
    with pytest.raises(tierlab.ModelError, match="memory"):
        tierlab.load_model(single_request_sessions(5.0, tiers, {"db": [{"disk": 1}]}))
    tiers["db"]["stations"]["disk"] = {"kind": "disk", "iops": 1000, "hit_ratio": 0.5, "locality": {"hot_data": 0.2, "hot_accesses": 0.8}}
    with pytest.raises(tierlab.ModelError, match="locality needs memory"):
        tierlab.load_model(single_request_sessions(5.0, tiers, {"db": [{"disk": 1}]}))


def test_db_socket_limit_pins_occupancy_at_its_maximum():
    # A database accepting at most 5 connections (sockets) under more load than 5 can carry.
    tiers = {"web": {}, "db": {"pools": {"sockets": {"kind": "other", "size": 5}}, "stations": {"cpu": {"kind": "cpu", "cores": 8}}}}
    program = {"web": [{"call": "db"}], "db": [{"acquire": "sockets"}, {"cpu": {"exponential": 0.1}}, {"release": "sockets"}]}
    t = tierlab.simulate(single_request_sessions(60.0, tiers, program, duration=300, warmup=50))  # overloaded: no steady state
    busy = t.series("db", "busy_max", "sockets")[0]
    busy = busy[busy.index >= 60]
    assert busy.max() == 5 and (busy == 5).mean() > 0.95  # a token-based limit: pinned at the cap
    # … while the CPU, which could do more, is not the bottleneck.
    assert t.summary["tiers"]["db"]["servers"][0]["stations"]["cpu"]["utilization"] < 0.65


def _gc_model(rate: float, per_request: float = 0.0) -> dict:
    tiers = {"app": {"gc": {"heap": 100, "allocation": 500, "pause": 0.2, "per_request": per_request}, "stations": {"cpu": {"kind": "cpu", "cores": 4}}}}
    return single_request_sessions(rate, tiers, {"app": [{"cpu": 0.01}]}, duration=3_000, records=True)


def test_gc_pauses_stop_the_world_more_often_under_more_load():
    # 0.01 CPU-s per request × 500 MB/s = 5 MB per request: a collection every 20 requests.
    low, high = (run(_gc_model(rate)) for rate in (10.0, 40.0))
    gc = {name: t.summary["tiers"]["app"]["servers"][0]["gc"] for name, t in (("low", low), ("high", high))}
    measured = low.summary["measured_seconds"]
    assert gc["low"]["pauses"] == pytest.approx(10 * measured / 20, rel=0.02)
    assert gc["high"]["pauses"] == pytest.approx(4 * gc["low"]["pauses"], rel=0.02)
    assert gc["low"]["pause_time"] == pytest.approx(0.2 * gc["low"]["pauses"])
    # A request caught by a pause waits it out: 0.01 s of work, up to 0.21 s of response.
    rt = low.requests.response_time
    assert rt.min() == pytest.approx(0.01) and rt.max() < 0.2 + 0.05 and (rt > 0.05).mean() > 0.03
    u = low.summary["tiers"]["app"]["servers"][0]["stations"]["cpu"]["utilization"]
    assert u == pytest.approx(10 * 0.01 / 4 + 0.2 * gc["low"]["pauses"] / measured, rel=0.05)  # the collector's CPU


def test_gc_pause_grows_with_concurrency():
    t = run(_gc_model(10.0, per_request=0.01))
    gc = t.summary["tiers"]["app"]["servers"][0]["gc"]
    # Each pause is 0.2 s + 0.01 s per request in progress; the request that fills the
    # heap is one of them, so the mean is over 0.21 s, a little more under load.
    assert 0.21 < gc["pause_time"] / gc["pauses"] < 0.25
