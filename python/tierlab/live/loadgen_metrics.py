"""The load generator's progress as Prometheus metrics during a run, on a loopback
port (`tierlab load --metrics-port P`, `generate_load(metrics_port=P)`).

They are served from Python, not from the Rust generator: the generator already hands
its counters to Python every 100 ms (the progress callback), so a scrape costs the
generator nothing, while an HTTP server inside it would share the runtime whose
timing it measures (a scrape handled on a worker delays the sends due then). The
response-time histogram per request type (measured from intended send times, as in
the trace, but warm-up included) comes with every tick; the exact distributions stay
in the trace."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from itertools import accumulate

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from .. import _core

Latency = Callable[[list[list[int]], list[float]], None]


class _Progress:
    """The latest report, read when scraped. The generator hands over each report in two
    calls (`latency`, then the counters); a scrape takes one snapshot, replaced whole when
    a report's counters arrive, so it never pairs a report's histogram with the previous
    report's counters (where the histogram would count more than `finished`)."""

    def __init__(self, types: Sequence[str]) -> None:
        self.types = list(types)
        self.bounds = [*map(str, _core.latency_bounds()), "+Inf"]
        buckets = [[0] * len(self.bounds) for _ in self.types]
        sums = [0.0] * len(self.types)
        self._latency = (buckets, sums)  # of the report being handed over
        # (fraction, finished, failed, sent, buckets, sums) of the last whole report
        self.snapshot: tuple[float, float, float, float, list[list[int]], list[float]] = (0.0, 0.0, 0.0, 0.0, buckets, sums)

    def __call__(self, fraction: float, finished: float, failed: float, sent: float) -> None:
        self.snapshot = (fraction, finished, failed, sent, *self._latency)

    def latency(self, buckets: list[list[int]], sums: list[float]) -> None:
        self._latency = (buckets, sums)

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        fraction, finished, failed, sent, buckets, sums = self.snapshot
        yield CounterMetricFamily("tierlab_loadgen_requests_sent", "Requests the load generator sent, warm-up included.", value=sent)
        yield CounterMetricFamily("tierlab_loadgen_requests_finished", "Requests the load generator finished, warm-up included.", value=finished)
        yield CounterMetricFamily("tierlab_loadgen_requests_failed", "Finished requests that failed (any status but ok).", value=failed)
        yield GaugeMetricFamily(
            "tierlab_loadgen_requests_in_flight",
            "Requests sent and not yet answered (sent - finished); at the end of the run, those left unfinished.",
            value=sent - finished,
        )
        yield GaugeMetricFamily("tierlab_loadgen_run_fraction", "Share of the run's duration elapsed.", value=fraction)
        histogram = HistogramMetricFamily(
            "tierlab_loadgen_response_time_seconds",
            "Response time of the finished requests per type, from the intended send time, warm-up included.",
            labels=["type"],
        )
        for name, counts, total in zip(self.types, buckets, sums, strict=True):
            histogram.add_metric([name], list(zip(self.bounds, accumulate(counts), strict=True)), sum_value=total)
        yield histogram


@contextmanager
def serving(port: int | None, progress: Callable[..., None] | None, types: Sequence[str]) -> Iterator[tuple[Callable[..., None], Latency | None]]:
    """The progress and latency callbacks to hand the generator, whose reports are
    (fraction, finished, failed, sent): `progress(fraction, finished, failed)`, and with
    a port, the metrics of the request `types` on http://127.0.0.1:PORT/metrics as well,
    for as long as the block runs."""

    def report(fraction: float, finished: float, failed: float, sent: float) -> None:
        if progress is not None:
            progress(fraction, finished, failed)

    if port is None:
        yield report, None
        return
    latest = _Progress(types)
    registry = CollectorRegistry(auto_describe=True)
    registry.register(latest)
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)

    def tick(fraction: float, finished: float, failed: float, sent: float) -> None:
        latest(fraction, finished, failed, sent)
        report(fraction, finished, failed, sent)

    try:
        yield tick, latest.latency
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
