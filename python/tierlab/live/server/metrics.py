"""The live server's metrics in the Prometheus text format (the `prometheus_client`
library), for `GET /metrics` on the loopback admin port when the scraper asks for it
(Prometheus sends `Accept: text/plain` or OpenMetrics; tierlab's own client gets the
JSON state): a histogram of response time per request type and outcome, requests by
outcome, requests in progress, and per pool its size, busy, queued, and acquired and
rejected counts — read from the pools when scraped, so nothing is counted twice."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

# Seconds: from 1 ms (a cached page) to the 10 s a pool's waiter gives up at.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Exposition:
    """One tier's metrics. `state()` is the tier's JSON state (`Tier.metrics`)."""

    def __init__(self, tier: str, state: Callable[[], dict]):
        self.registry = CollectorRegistry(auto_describe=True)
        self.response_time = Histogram(
            "tierlab_response_seconds",
            "Response time of the requests the tier finished, by request type and outcome.",
            ["tier", "type", "status"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.tier = tier
        self.registry.register(_State(tier, state))

    def observe(self, rtype: str, status: str, seconds: float) -> None:
        self.response_time.labels(self.tier, rtype, status).observe(seconds)

    def render(self, accept: str) -> tuple[bytes, str]:
        """The exposition in the format `accept` asks for, and its content type."""
        encode, content_type = choose_encoder(accept)
        return encode(self.registry), content_type


def wants_prometheus(accept: str) -> bool:
    """Whether an Accept header asks for the Prometheus or OpenMetrics text format."""
    return "text/plain" in accept or "openmetrics" in accept


class _State:
    """The tier's counters and pools, read at scrape time."""

    def __init__(self, tier: str, state: Callable[[], dict]):
        self.tier, self.state = tier, state

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        s: dict[str, Any] = self.state()
        requests = CounterMetricFamily("tierlab_requests", "Requests the tier finished, by outcome.", labels=["tier", "status"])
        for status, n in s["requests"].items():
            requests.add_metric([self.tier, status], n)
        yield requests
        yield _gauge("tierlab_in_progress", "Requests in the tier now.", [([self.tier], s["in_progress"])])
        for key, help_text in (("size", "tokens"), ("busy", "tokens held now"), ("queued", "requests waiting for a token now")):
            yield _gauge(f"tierlab_pool_{key}", f"Pool {help_text}.", [([self.tier, p], v[key]) for p, v in s["pools"].items()], ["tier", "pool"])
        for key, help_text in (("acquired", "tokens granted"), ("rejected", "requests refused (time-out or full queue)")):
            c = CounterMetricFamily(f"tierlab_pool_{key}", f"Pool {help_text} since the server started.", labels=["tier", "pool"])
            for p, v in s["pools"].items():
                c.add_metric([self.tier, p], v[key])
            yield c


def _gauge(name: str, help_text: str, values: list[tuple[list[str], float]], labels: list[str] | None = None) -> GaugeMetricFamily:
    g = GaugeMetricFamily(name, help_text, labels=labels or ["tier"])
    for label_values, v in values:
        g.add_metric(label_values, v)
    return g
