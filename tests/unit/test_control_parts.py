"""The pieces of `tierlab control` that need no server: the bounds option, the
histogram percentiles of the live observation, and the bindings feeding the Rust
controller (the hand-computed Gradient2 sequence of crates/control's tests)."""

from __future__ import annotations

import json

import pytest

from tierlab import _core
from tierlab.errors import InputError
from tierlab.experiments.control import parse_bounds
from tierlab.experiments.control.live import ControlMetrics, _latency


def test_bounds_are_parsed_once_and_a_bad_one_is_named():
    assert parse_bounds("threads=2..64,connections=1..32") == {"threads": (2, 64), "connections": (1, 32)}
    for bad, says in [("threads=8..4", "least ≤ greatest"), ("sockets=1..2", "POOL=LEAST..GREATEST"), ("", "at least one pool")]:
        with pytest.raises(InputError, match="--bounds") as e:
            parse_bounds(bad)
        assert says in str(e.value)


def test_percentiles_are_interpolated_within_the_buckets():
    # 100 requests: 50 under 10 ms, 40 more under 20 ms, 10 more under 40 ms.
    cumulative = {0.01: 50.0, 0.02: 90.0, 0.04: 100.0, float("inf"): 100.0}
    lat = _latency(100, 1.5, cumulative)
    assert lat == pytest.approx({"mean": 0.015, "p50": 0.01, "p90": 0.02, "p99": 0.04 - 0.02 * 0.1})
    assert _latency(0, 0.0, {}) is None


def test_the_decisions_are_exported_for_prometheus():
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry()
    m = ControlMetrics(registry)
    m.record({"threads": 6}, True)
    m.record({"threads": 5}, False)
    m.record({"threads": 5}, False)
    text = generate_latest(registry).decode()
    assert 'tierlab_control_size{pool="threads"} 5.0' in text
    assert 'tierlab_control_decisions_total{changed="true"} 1.0' in text
    assert 'tierlab_control_decisions_total{changed="false"} 2.0' in text


def observation(acquired: float) -> str:
    """30 threads busy and 10 waiting of 40 over 5 s: holds of 150 / acquired seconds."""
    pool = {"size": 40, "busy": 30.0, "queued": 10.0, "acquired": acquired, "rejected": 0.0}
    return json.dumps(
        {"interval": 5.0, "arrivals": 0.0, "mix": {}, "throughput": 0.0, "errors": 0.0, "response_time": None, "pools": {"threads": pool}, "cpu": None}
    )


def test_the_bindings_feed_the_rust_controller():
    spec = {
        "interval": 5.0,
        "bounds": {"threads": [2, 64]},
        "strategy": {"strategy": "gradient", "smoothing": 0.2, "queue": 4.0, "tolerance": 1.5, "long_window": 600, "warmup": 1},
    }
    c = _core.Controller(json.dumps(spec))
    assert c.decide(observation(15_000))[0] == {"threads": 40}  # 10 ms: limit 40.8
    sizes, reason = c.decide(observation(1_500))  # 100 ms: limit 37.52
    assert sizes == {"threads": 37} and "limit 40.80 → 37.52" in reason
    with pytest.raises(ValueError, match="control spec: bounds.threads"):
        _core.Controller(json.dumps(spec | {"bounds": {"threads": [8, 4]}}))
    with pytest.raises(ValueError, match="observation"):
        c.decide("{}")
