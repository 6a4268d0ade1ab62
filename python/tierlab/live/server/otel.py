"""The bookstore's OpenTelemetry, on request (`serve --otel FILE`): what an instrumented
production server exports, written as OTLP/JSON lines to FILE so that `tierlab import
otel FILE` reads it and the twin calibrates from it beside the middleware's own records
of the same run.

- traces: the SDK's WSGI instrumentation makes a SERVER span per request, inside the
  middleware's worker thread (as a servlet filter's span starts in a Tomcat worker: the
  wait for a thread is not in it), with `http.route` the bookstore's page; the DB-API
  instrumentations (sqlite3, psycopg) a CLIENT span per statement on the pool's
  connections;
- metrics, every `METRIC_INTERVAL`: the connection pool by the semantic conventions
  (`db.client.connection.count{db.client.connection.state=used|idle}`, `.max`,
  `.pending_requests`) and the process's CPU (`process.cpu.time{cpu.mode=user|system}`).

Off by default, and nothing of OpenTelemetry is imported then (`serve` imports this
module only with --otel). Needs the `otel` extra (`pip install 'tierlab[otel]'`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any, cast

METRIC_INTERVAL = 1.0  # seconds between metric exports: the twin's windows want several per run
SERVICE = "tierlab-bookstore"
POOL_NAME = "bookstore"


class _Lines:
    """One file for both exporters, a line written whole: each exporter writes its
    request as one `write`, and this lock keeps the two from interleaving."""

    def __init__(self, path: str) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 — closed by `close`
        self._lock = threading.Lock()
        self.closed = False

    def write(self, text: str) -> int:
        with self._lock:
            return self._file.write(text)

    def flush(self) -> None:
        with self._lock:
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self.closed = True
            self._file.close()


class Telemetry:
    """The providers, exporters and instrumentations of one server process."""

    def __init__(self, path: str, pool_sample: Callable[[], dict[str, Any]], postgres: bool) -> None:
        from opentelemetry.exporter.otlp.json.file import FileMetricExporter, FileSpanExporter
        from opentelemetry.metrics import CallbackOptions, Observation
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self._lines = _Lines(path)
        resource = Resource.create({"service.name": SERVICE})
        self.tracer_provider = TracerProvider(resource=resource)
        stream = cast(IO[str], self._lines)  # all the exporters use of a stream: write, flush, closed
        self.tracer_provider.add_span_processor(BatchSpanProcessor(FileSpanExporter(stream=stream)))
        reader = PeriodicExportingMetricReader(FileMetricExporter(stream=stream), export_interval_millis=METRIC_INTERVAL * 1000)
        self.meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
        meter = self.meter_provider.get_meter("tierlab.live.server")
        pool = {"db.client.connection.pool.name": POOL_NAME}

        def count(_: CallbackOptions) -> Iterable[Observation]:
            s = pool_sample()
            yield Observation(s["busy"], pool | {"db.client.connection.state": "used"})
            yield Observation(s["size"] - s["busy"], pool | {"db.client.connection.state": "idle"})

        def cpu(_: CallbackOptions) -> Iterable[Observation]:
            t = os.times()
            yield Observation(t.user, {"cpu.mode": "user"})
            yield Observation(t.system, {"cpu.mode": "system"})

        meter.create_observable_up_down_counter("db.client.connection.count", [count], unit="{connection}")
        meter.create_observable_up_down_counter("db.client.connection.max", [lambda _: [Observation(pool_sample()["size"], pool)]], unit="{connection}")
        meter.create_observable_up_down_counter(
            "db.client.connection.pending_requests", [lambda _: [Observation(pool_sample()["queued"], pool)]], unit="{request}"
        )
        meter.create_observable_counter("process.cpu.time", [cpu], unit="s")
        self.postgres = postgres

    def wrap_app(self, app: Any) -> Any:
        """The WSGI application with a SERVER span per request."""
        from opentelemetry.instrumentation.wsgi import OpenTelemetryMiddleware

        routes = set(getattr(app, "routes", {}))

        def route(span: Any, environ: dict) -> None:
            path = environ.get("PATH_INFO", "/")
            if span.is_recording() and path in routes:  # the bookstore's pages have no path parameters: the path is the route
                span.set_attribute("http.route", path)

        return OpenTelemetryMiddleware(app, request_hook=route, tracer_provider=self.tracer_provider)

    def wrap_connect(self, connect: Callable[[], Any]) -> Callable[[], Any]:
        """`connect` whose connections make a CLIENT span per statement."""
        if self.postgres:
            from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

            traced: Callable[..., Any] = PsycopgInstrumentor.instrument_connection
        else:
            from opentelemetry.instrumentation.sqlite3 import SQLite3Instrumentor

            traced = SQLite3Instrumentor.instrument_connection
        return lambda: traced(connect(), tracer_provider=self.tracer_provider)

    def close(self) -> None:
        """Export what is pending and close the file."""
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()
        if not self._lines.closed:
            self._lines.close()
