"""The load generator's progress as Prometheus metrics during a run, on a loopback
port (`tierlab load --metrics-port P`, `generate_load(metrics_port=P)`).

They are served from Python, not from the Rust generator: the generator already hands
its counters to Python every 100 ms (the progress callback), so a scrape costs the
generator nothing, while an HTTP server inside it would share the runtime whose
timing it measures (a scrape handled on a worker delays the sends due then). The
latency distributions stay in the trace, measured from intended send times."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric


class _Progress:
    """The latest progress, read when scraped."""

    def __init__(self) -> None:
        self.fraction = self.finished = self.failed = 0.0

    def __call__(self, fraction: float, finished: float = 0, failed: float = 0) -> None:
        self.fraction, self.finished, self.failed = fraction, finished, failed

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily("tierlab_loadgen_requests_finished", "Requests the load generator finished, warm-up included.", value=self.finished)
        yield CounterMetricFamily("tierlab_loadgen_requests_failed", "Finished requests that failed (any status but ok).", value=self.failed)
        yield GaugeMetricFamily("tierlab_loadgen_run_fraction", "Share of the run's duration elapsed.", value=self.fraction)


@contextmanager
def serving(port: int | None, progress: Callable[..., None] | None) -> Iterator[Callable[..., None] | None]:
    """The progress callback to hand the generator: `progress`, and with a port, the
    metrics on http://127.0.0.1:PORT/metrics as well, for as long as the block runs."""
    if port is None:
        yield progress
        return
    latest = _Progress()
    registry = CollectorRegistry(auto_describe=True)
    registry.register(latest)
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)

    def tick(*values: float) -> None:
        latest(*values)
        if progress is not None:
            progress(*values)

    try:
        yield tick
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
