"""OpenTelemetry's OTLP in its JSON encoding (one export request per line, as the
Collector's file exporter, the SDKs' OTLP-JSON file and console exporters and the Java
agent's `logging-otlp` exporter write it; `.gz` read as it streams) as a server-side
trace of the one schema.

What the semantic conventions let it read:

- a SERVER span is a request: its type the `http.route` (else the span's name), its
  status from `http.response.status_code` (older `http.status_code`) and the span's
  status; its time at the tier (`app.time`) the span's duration;
- a CLIENT span with `db.system.name` (older `db.system`) under it — directly or below
  INTERNAL spans — is one database access: `app.db_queries` and `app.db_requests`
  count them (the visits), `app.db_time` and `app.with_db_active` add their durations
  (the time holding a connection to the database); an embedded database (SQLite, H2,
  HSQLDB, Derby) runs in the process, any other is the `db` tier, its records the
  accesses' count and time;
- the connection pool's metrics in both generations of names
  (`db.client.connection.count{db.client.connection.state=used|idle}`, `.max`,
  `.pending_requests`, `.timeouts`; `db.client.connections.usage{state}` …), Tomcat's
  thread pool (`tomcat.thread.busy.count`, `tomcat.thread.max`), the process's CPU
  (`process.cpu.time{cpu.mode}`, the JVM's `jvm.cpu.time`) and threads
  (`jvm.thread.count`) become the `app` tier's series, per window.

INTERNAL spans only link a database span to its request; other CLIENT spans (HTTP
calls to other services), logs and other metrics are skipped, and `missing` counts what
was skipped and why, as it names what no standard span shows (the wait for a worker
thread, getConnection(), the CPU per request).

Parsing: each line is parsed by orjson and checked field by field against the official
message definitions (`opentelemetry-proto`'s descriptors: the JSON names, the enum
values, which fields hold lists, messages or numbers). protobuf's own `json_format`
parses 6,800 spans/s here, a fifteenth of the rate a trace import must reach
(benchmarks/otel_import.py); a field the definitions do not know is skipped, as OTLP/JSON
receivers must, and counted in `missing`."""

from __future__ import annotations

import gzip
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError

try:
    import orjson
    from google.protobuf.descriptor import Descriptor, FieldDescriptor
    from opentelemetry.proto.common.v1 import common_pb2
    from opentelemetry.proto.metrics.v1 import metrics_pb2
    from opentelemetry.proto.resource.v1 import resource_pb2
    from opentelemetry.proto.trace.v1 import trace_pb2
except ImportError as e:  # an optional extra: say how to get it
    raise InputError(f"reading OpenTelemetry needs the otel extra: pip install 'tierlab[otel]' ({e})") from None
from ..core import timeseries_columns
from ..folder import Trace
from ..schema import PHASES, STATUSES, check_summary
from .client import NO_SESSIONS, Figures, _busy_time, failure, percentiles, summary, type_figures

TIER, DB_TIER = "app", "db"
THREADS, CONNECTIONS = "threads", "db"  # the trace's pool names, as the examples' models name them
SERVER, CLIENT, INTERNAL = 2, 3, 1  # Span.SpanKind
EMBEDDED = {"sqlite", "h2", "hsqldb", "derby"}  # databases that run inside the application's process
ROUTE, NAME_ATTRS = "http.route", ("http.route", "http.response.status_code", "http.status_code", "db.system.name", "db.system")
ERROR = 2  # Status.StatusCode.STATUS_CODE_ERROR
WANTED = set(NAME_ATTRS) | {"service.name", "db.client.connection.state", "state", "cpu.mode", "process.cpu.state"}


class _Shape:
    """One OTLP message's JSON shape from its descriptor: the names a field may have
    (proto3's JSON mapping accepts the lowerCamelCase and the original name), and per
    name whether it repeats, holds a message, an enum or a 64-bit integer."""

    def __init__(self, d: Descriptor) -> None:
        self.name = d.name
        self.fields: dict[str, FieldDescriptor] = {}
        for f in d.fields:
            self.fields[f.json_name] = self.fields[f.name] = f

    def check(self, obj: Any, where: str, line: int, seen: Seen) -> dict:
        if not isinstance(obj, dict):
            raise InputError(f"{seen.path} line {line}: {where} is a {type(obj).__name__}, not a JSON object ({self.name})")
        if not self.fields.keys() >= obj.keys():
            for k in obj.keys() - self.fields.keys():
                seen.unknown[f"{self.name}.{k}"] += 1
        return obj


def _shapes() -> dict[str, _Shape]:
    messages: list[Any] = [
        trace_pb2.TracesData,
        trace_pb2.ResourceSpans,
        trace_pb2.ScopeSpans,
        trace_pb2.Span,
        trace_pb2.Status,
        metrics_pb2.MetricsData,
        metrics_pb2.ResourceMetrics,
        metrics_pb2.ScopeMetrics,
        metrics_pb2.Metric,
        metrics_pb2.Gauge,
        metrics_pb2.Sum,
        metrics_pb2.Histogram,
        metrics_pb2.NumberDataPoint,
        metrics_pb2.HistogramDataPoint,
        resource_pb2.Resource,
        common_pb2.KeyValue,
        common_pb2.AnyValue,
    ]
    return {m.DESCRIPTOR.name: _Shape(m.DESCRIPTOR) for m in messages}


SHAPES = _shapes()
KINDS = {v.name: v.number for v in trace_pb2.Span.DESCRIPTOR.enum_types_by_name["SpanKind"].values}
TEMPORALITY = {v.name: v.number for v in metrics_pb2.AggregationTemporality.DESCRIPTOR.values}
DELTA = TEMPORALITY["AGGREGATION_TEMPORALITY_DELTA"]
# The top-level fields of an export request (ExportTraceServiceRequest and
# ExportMetricsServiceRequest have the same field as TracesData and MetricsData);
# resourceLogs and resourceProfiles are valid OTLP that a trace does not use.
SIGNALS = {"resourceSpans", "resource_spans", "resourceMetrics", "resource_metrics"}
OTHER_SIGNALS = {"resourceLogs", "resource_logs", "resourceProfiles", "resource_profiles"}


@dataclass
class Seen:
    """Everything read from the files, compactly (a file larger than memory imports:
    only the per-span figures a trace needs are kept)."""

    path: Path = Path()
    service: str | None = None
    service_line: int = 0
    # SERVER spans: key (trace id + span id), start and end (ns), type, HTTP status, error flag
    keys: list[str] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    end: list[int] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)
    errors: list[bool] = field(default_factory=list)
    parent: dict[str, str] = field(default_factory=dict)  # INTERNAL span → its parent (keys)
    db: list[tuple[str, int]] = field(default_factory=list)  # database spans: parent key, duration (ns)
    db_systems: set[str] = field(default_factory=set)
    points: dict[tuple[str, str], list[tuple[int, float]]] = field(default_factory=lambda: defaultdict(list))  # (metric, attribute) → (ns, value)
    units: dict[str, str] = field(default_factory=dict)
    pool_names: set[str] = field(default_factory=set)
    skipped: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))
    unknown: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))


def read(paths: list[str | Path] | str | Path, window: float = 1.0, warmup: float = 0.0, service: str | None = None) -> Trace:
    """The trace of the SERVER spans and metrics in `paths` (OTLP/JSON lines, `.gz`
    too), `window` seconds per series window; `service`: the `service.name` to take
    when the files hold several."""
    files = [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    seen = Seen(service=service)
    for path in files:
        seen.path = path
        for line, text in _lines(path):
            _request(text, line, seen)
    return _trace(seen, files, window, warmup)


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    try:
        with gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb") as raw:
            for line, text in enumerate(raw, 1):
                if text.strip():
                    yield line, text
    except (OSError, EOFError) as e:
        raise InputError(f"cannot read {path}: {e}") from None


def _request(text: bytes, line: int, seen: Seen) -> None:
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError as e:
        cut = "" if text.endswith(b"\n") else " (the file ends inside it: cut off?)"
        raise InputError(f"{seen.path} line {line}: not a JSON object{cut}: {e}") from None
    if not isinstance(obj, dict) or not obj.keys() & (SIGNALS | OTHER_SIGNALS):
        got = ", ".join(list(obj)[:4]) if isinstance(obj, dict) else type(obj).__name__
        raise InputError(
            f"{seen.path} line {line}: not an OTLP export request (expected resourceSpans or resourceMetrics, got {got or 'an empty object'}); "
            "write OTLP/JSON lines, e.g. the Collector's file exporter or otel.traces.exporter=logging-otlp"
        )
    for key, value in obj.items():
        if key in ("resourceSpans", "resource_spans"):
            for rs in _list(value, key, line, seen):
                _resource_spans(rs, line, seen)
        elif key in ("resourceMetrics", "resource_metrics"):
            for rm in _list(value, key, line, seen):
                _resource_metrics(rm, line, seen)
        elif key in OTHER_SIGNALS:
            seen.skipped[f"{key} (not used by a trace)"] += len(value) if isinstance(value, list) else 1
        else:
            seen.unknown[f"ExportRequest.{key}"] += 1


def _list(value: Any, where: str, line: int, seen: Seen) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{seen.path} line {line}: {where} is a {type(value).__name__}, not a list")
    return value


def _attrs(items: Any, where: str, line: int, seen: Seen) -> dict[str, Any]:
    """The attributes a trace reads, of a list of KeyValue (the rest are passed over)."""
    out = {}
    for kv in _list(items, where, line, seen):
        if not isinstance(kv, dict) or "key" not in kv:
            raise InputError(f'{seen.path} line {line}: {where} holds {str(kv)[:60]}, not a KeyValue ({{"key": …, "value": …}})')
        if kv["key"] in WANTED:
            value = SHAPES["AnyValue"].check(kv.get("value", {}), f"{where}.{kv['key']}", line, seen)
            out[kv["key"]] = next(iter(value.values()), None)
    return out


def _ns(value: Any, where: str, line: int, seen: Seen) -> int:
    """A fixed64 time (ns since the epoch): a JSON string or number by the mapping."""
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InputError(f"{seen.path} line {line}: {where} is {value!r}, not a time in nanoseconds") from None


def _resource_spans(rs: Any, line: int, seen: Seen) -> None:
    rs = SHAPES["ResourceSpans"].check(rs, "resourceSpans[]", line, seen)
    resource = SHAPES["Resource"].check(rs.get("resource", {}), "resource", line, seen)
    name = str(_attrs(resource.get("attributes"), "resource.attributes", line, seen).get("service.name", "unknown_service"))
    scopes = _list(rs.get("scopeSpans", rs.get("scope_spans")), "scopeSpans", line, seen)
    if not _service(name, line, seen):
        seen.skipped[f"spans of service {name!r} (not --service {seen.service})"] += sum(len(s.get("spans") or []) for s in scopes if isinstance(s, dict))
        return
    span_shape, status_shape = SHAPES["Span"], SHAPES["Status"]
    for ss in scopes:
        ss = SHAPES["ScopeSpans"].check(ss, "scopeSpans[]", line, seen)
        for span in _list(ss.get("spans"), "spans", line, seen):
            span = span_shape.check(span, "span", line, seen)
            kind = span.get("kind", 0)
            kind = KINDS.get(kind, -1) if isinstance(kind, str) else kind
            if kind not in (SERVER, CLIENT, INTERNAL):
                seen.skipped["spans of other kinds (PRODUCER, CONSUMER, unspecified)"] += 1
                continue
            trace_id, span_id = span.get("traceId", ""), span.get("spanId", "")
            if not trace_id or not span_id:
                raise InputError(f"{seen.path} line {line}: span {span.get('name', '')!r} has no traceId or spanId")
            start = _ns(span.get("startTimeUnixNano"), "startTimeUnixNano", line, seen)
            end = _ns(span.get("endTimeUnixNano", 0), "endTimeUnixNano", line, seen)
            if end <= 0:
                raise InputError(f"{seen.path} line {line}: span {span.get('name', '')!r} ({span_id}) has no endTimeUnixNano: an exported span has ended")
            if end < start:
                raise InputError(f"{seen.path} line {line}: span {span.get('name', '')!r} ({span_id}) ends {(start - end) / 1e9:.6g} s before it starts")
            parent = span.get("parentSpanId") or ""
            attrs = _attrs(span.get("attributes"), "span.attributes", line, seen)
            if kind == SERVER:
                seen.keys.append(trace_id + span_id)
                seen.start.append(start)
                seen.end.append(end)
                seen.types.append(str(attrs.get(ROUTE) or span.get("name") or "unnamed"))
                code = attrs.get("http.response.status_code", attrs.get("http.status_code", ""))
                seen.codes.append(str(code))
                status = status_shape.check(span.get("status") or {}, "status", line, seen).get("code", 0)
                seen.errors.append(status in (ERROR, "STATUS_CODE_ERROR"))
            elif kind == CLIENT:
                system = attrs.get("db.system.name", attrs.get("db.system"))
                if system is None:
                    seen.skipped["CLIENT spans without db.system (calls to other services)"] += 1
                    continue
                seen.db_systems.add(str(system))
                seen.db.append((trace_id + parent, end - start))
            elif parent:
                seen.parent[trace_id + span_id] = trace_id + parent
            else:
                seen.skipped["INTERNAL spans outside any request"] += 1


def _service(name: str, line: int, seen: Seen) -> bool:
    """Whether spans of service `name` are taken: one service per trace, the first
    seen unless --service names one."""
    if seen.service is None:
        seen.service, seen.service_line = name, line
    if name == seen.service:
        return True
    if seen.service_line:  # no --service: the files hold two
        raise InputError(
            f"{seen.path} line {line}: spans of service {name!r}, while line {seen.service_line} had {seen.service!r}: a trace is one server's; "
            f"choose one with --service {seen.service!r} (or {name!r})"
        )
    return False


# The metrics a trace reads: (name, attribute that splits it, its value) → series name.
POOL_COUNT = {
    ("db.client.connection.count", "db.client.connection.state"): "connections",
    ("db.client.connections.usage", "state"): "connections",
}
POOL_GAUGES = {
    "db.client.connection.max": "connections:size",
    "db.client.connections.max": "connections:size",
    "db.client.connection.pending_requests": "connections:queued",
    "db.client.connections.pending_requests": "connections:queued",
    "db.client.connection.timeouts": "connections:timeouts",
    "db.client.connections.timeouts": "connections:timeouts",
}
THREAD_GAUGES = {"tomcat.thread.busy.count": "threads:busy", "tomcat.thread.max": "threads:size", "jvm.thread.count": "process_threads"}
CPU_TIME = {"process.cpu.time": ("cpu.mode", "process.cpu.state", "state"), "jvm.cpu.time": ()}
POOL_NAME = ("db.client.connection.pool.name", "pool.name")


def _resource_metrics(rm: Any, line: int, seen: Seen) -> None:
    rm = SHAPES["ResourceMetrics"].check(rm, "resourceMetrics[]", line, seen)
    resource = SHAPES["Resource"].check(rm.get("resource", {}), "resource", line, seen)
    name = str(_attrs(resource.get("attributes"), "resource.attributes", line, seen).get("service.name", "unknown_service"))
    if not _service(name, line, seen):
        seen.skipped[f"metrics of service {name!r} (not --service {seen.service})"] += 1
        return
    for sm in _list(rm.get("scopeMetrics", rm.get("scope_metrics")), "scopeMetrics", line, seen):
        sm = SHAPES["ScopeMetrics"].check(sm, "scopeMetrics[]", line, seen)
        for metric in _list(sm.get("metrics"), "metrics", line, seen):
            metric = SHAPES["Metric"].check(metric, "metric", line, seen)
            _metric(metric, line, seen)


def _metric(metric: dict, line: int, seen: Seen) -> None:
    name = str(metric.get("name", ""))
    split = next((a for (m, a) in POOL_COUNT if m == name), None)
    if split is None and name not in POOL_GAUGES and name not in THREAD_GAUGES and name not in CPU_TIME:
        seen.skipped["metrics a trace does not use"] += 1
        return
    data_key = next((k for k in ("gauge", "sum") if k in metric), None)
    if data_key is None:
        raise InputError(f"{seen.path} line {line}: metric {name} has no gauge or sum data (has: {', '.join(metric)}); the conventions make it a number")
    data = SHAPES["Sum" if data_key == "sum" else "Gauge"].check(metric[data_key], f"{name}.{data_key}", line, seen)
    temporality = data.get("aggregationTemporality", 0)
    delta = TEMPORALITY.get(temporality, -1) == DELTA if isinstance(temporality, str) else temporality == DELTA
    seen.units[name] = str(metric.get("unit", ""))
    for point in _list(data.get("dataPoints", data.get("data_points")), f"{name}.dataPoints", line, seen):
        point = SHAPES["NumberDataPoint"].check(point, f"{name}.dataPoints[]", line, seen)
        t = _ns(point.get("timeUnixNano"), f"{name} timeUnixNano", line, seen)
        raw = point.get("asDouble", point.get("asInt"))
        try:
            value = float(raw)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise InputError(f"{seen.path} line {line}: a data point of {name} has value {raw!r}, not a number (asDouble or asInt)") from None
        attrs = _attrs(point.get("attributes"), f"{name}.attributes", line, seen)
        pool = next((str(attrs[a]) for a in POOL_NAME if a in attrs), None)
        if pool is not None:
            seen.pool_names.add(pool)
        if split is not None:
            label = f"{POOL_COUNT[(name, split)]}:{attrs.get(split, '')}"
        elif name in CPU_TIME:
            label = "cpu:" + str(next((attrs[a] for a in CPU_TIME[name] if a in attrs), "total"))
        else:
            label = POOL_GAUGES.get(name) or THREAD_GAUGES[name]
        key = (name, label)
        if delta:  # as cumulative
            previous = seen.points[key][-1][1] if seen.points[key] else 0.0
            value += previous
        seen.points[key].append((t, value))


def _trace(seen: Seen, files: list[Path], window: float, warmup: float) -> Trace:
    label = str(files[0]) if len(files) == 1 else f"{files[0]} and {len(files) - 1} more"
    if not seen.keys:
        raise InputError(
            f"{label}: no SERVER spans; export the server's traces (a SERVER span per request, as the HTTP server instrumentations make)"
            + (f"; skipped: {_skipped_text(seen)}" if seen.skipped else "")
        )
    t0 = min(seen.start)
    start = (np.array(seen.start, dtype=np.int64) - t0) / 1e9
    end = (np.array(seen.end, dtype=np.int64) - t0) / 1e9
    index = {k: i for i, k in enumerate(seen.keys)}
    if len(index) < len(seen.keys):
        raise InputError(f"{label}: {len(seen.keys) - len(index)} SERVER spans appear twice (same trace and span id); was a file given twice?")
    visits = np.zeros(len(start), dtype=np.uint32)
    db_time = np.zeros(len(start))
    outside = 0
    for parent, ns in seen.db:
        i = _request_of(parent, index, seen.parent)
        if i is None:
            outside += 1
            continue
        visits[i] += 1
        db_time[i] += ns / 1e9
    missing = _missing(seen, outside)
    time = end - start
    db_held = np.minimum(db_time, time)  # spans that overlap (asynchronous drivers) cannot hold longer than the request
    statuses = [_status(code, error) for code, error in zip(seen.codes, seen.errors)]
    r = pd.DataFrame(
        {
            "type": seen.types,
            "status": [s for s, _ in statuses],
            "failure": [k for _, k in statuses],
            "start": start,
            "end": end,
            "response_time": time,
        }
    )
    phases = {p: np.zeros(len(r)) for p in PHASES}
    phases["before_db"] = time - db_held
    phases["with_db_active"] = db_held
    columns: dict[str, Any] = {
        f"{TIER}.server": np.zeros(len(r), dtype=np.int32),
        f"{TIER}.visits": np.ones(len(r), dtype=np.uint32),
        f"{TIER}.time": time,
        **{f"{TIER}.{p}": v for p, v in phases.items()},
        f"{TIER}.db_requests": visits,
        f"{TIER}.db_queries": visits,
        f"{TIER}.db_time": db_time,
    }
    remote = bool(seen.db_systems - EMBEDDED)
    if remote:
        columns |= {
            f"{DB_TIER}.server": np.where(visits > 0, 0, -1).astype(np.int32),
            f"{DB_TIER}.visits": visits,
            f"{DB_TIER}.time": db_held,
            **{f"{DB_TIER}.{p}": (db_held if p == "other" else np.zeros(len(r))) for p in PHASES},
        }
    for c, v in columns.items():
        r[c] = v
    r = r.sort_values("start", kind="stable").reset_index(drop=True)
    return _assemble(r, seen, label, window, warmup, missing, remote)


def _request_of(key: str, index: dict[str, int], parent: dict[str, str]) -> int | None:
    """The SERVER span a database span belongs to: its parent, or the first SERVER span
    up its chain of INTERNAL spans (None: none, e.g. a query at start-up)."""
    for _ in range(64):  # deeper chains than this are loops in bad data
        if key in index:
            return index[key]
        if key not in parent:
            return None
        key = parent[key]
    return None


def _status(code: str, error: bool) -> tuple[str, str | None]:
    """(status, failure kind) of a request from its HTTP status code and the span's
    status (an error without a code: the server failed it)."""
    if code.isdigit() and int(code) >= 400:
        return failure(code)
    return ("error", "http_5xx") if error else ("ok", None)


def _skipped_text(seen: Seen) -> str:
    return "; ".join(f"{n:,} {why}" for why, n in seen.skipped.items())


def _missing(seen: Seen, outside: int) -> dict[str, str]:
    """What the telemetry cannot show, and what was skipped and why."""
    missing = {
        f"{TIER}.wait_thread": "no standard span covers the wait for a worker thread: a SERVER span starts when a thread has the request (0 in the records)",
        f"{TIER}.wait_db": "no standard span covers getConnection(): the wait for a connection is inside before_db",
        f"{TIER}.cpu_time": "spans carry no CPU time: the process's CPU is in the app series (cpu_user, cpu_system) where process.cpu.time was exported",
        "client": "the telemetry is the server's: response times are the SERVER spans' (no network, no client queueing)",
        "sessions": NO_SESSIONS,
    }
    if not any(k[1].startswith("cpu:") for k in seen.points):
        missing[f"{TIER}.cpu"] = "no process.cpu.time or jvm.cpu.time in the input: the process's CPU is unknown"
    if not any(k[1].startswith("connections:") for k in seen.points):
        missing[f"{TIER}.pools.{CONNECTIONS}"] = "no db.client.connection.count (or db.client.connections.usage) in the input"
    if not any(k[0].startswith("tomcat.thread") for k in seen.points):
        missing[f"{TIER}.pools.{THREADS}"] = "no thread-pool metrics (tomcat.thread.*) in the input: the worker threads' occupancy is unknown"
    if outside:
        missing["skipped.db_spans"] = f"{outside:,} database spans outside any SERVER span of the input (start-up, background work): in no request's visits"
    for why, n in seen.skipped.items():
        missing[f"skipped.{why}"] = f"{n:,} skipped"
    if seen.unknown:
        missing["skipped.unknown_fields"] = "fields the OTLP definitions do not have, skipped as OTLP/JSON receivers must: " + ", ".join(
            f"{k} ({n:,})" for k, n in seen.unknown.items()
        )
    if len(seen.pool_names) > 1:
        missing[f"{TIER}.pools.{CONNECTIONS}.names"] = f"several connection pools ({', '.join(sorted(seen.pool_names))}): their metrics are summed"
    return missing


def _assemble(r: pd.DataFrame, seen: Seen, label: str, window: float, warmup: float, missing: dict[str, str], remote: bool) -> Trace:
    start, end, rt = r.start.to_numpy(), r.end.to_numpy(), r.response_time.to_numpy()
    duration = float(end.max())
    n = int(np.floor(duration / window + 1e-9)) + 1
    edges = np.arange(n + 1) * window
    t0 = min(seen.start)
    at_end = np.minimum((end / window + 1e-9).astype(int), n - 1)
    completions = np.bincount(at_end, minlength=n).astype(float)
    series = {
        ("", "concurrency"): _busy_time(start, end, edges) / window,
        ("", "arrivals"): np.bincount(np.minimum((start / window + 1e-9).astype(int), n - 1), minlength=n).astype(float),
        ("", "completions"): completions,
        ("", "response_time"): np.divide(np.bincount(at_end, weights=rt, minlength=n), completions, out=np.full(n, np.nan), where=completions > 0),
        ("", "errors"): np.bincount(at_end[r.status.to_numpy() != "ok"], minlength=n).astype(float),
    }
    levels = _pool_series(seen, edges, t0)
    series |= levels
    kept = start >= warmup
    m = r[kept]
    measured = duration - warmup
    types = {
        str(t): type_figures(g.status.value_counts().to_dict(), percentiles(g.response_time[g.status == "ok"].to_numpy(float)), measured)
        for t, g in m.groupby("type", observed=True)
    }
    f = Figures(
        counts=m.status.value_counts().to_dict(),
        response_time=percentiles(m.response_time[m.status == "ok"].to_numpy(float)),
        types=types,
        errors=m.failure.dropna().value_counts().to_dict(),
        duration=duration,
        warmup=warmup,
        in_system=float(_busy_time(start, end, np.array([warmup, duration]))[0]) / measured if measured > 0 else None,
        time_in_system=float(m.response_time.mean()) if len(m) else 0.0,
        missing=missing,
    )
    s = summary("otel", label, window, f)
    s["model"] = f"otel: {seen.service}"
    del s["missing"]["tiers"]
    pools = _pools(seen, levels, edges[:-1] >= warmup - 1e-9, t0, (warmup, duration), missing)
    server: dict[str, Any] = {
        "visits": len(m),
        "throughput": int((m.status == "ok").sum()) / measured,
        "mean_residence": float(m.response_time.mean()) if len(m) else None,
    }
    tiers: dict[str, Any] = {TIER: {"position": 0, "servers": [server | {"gc": None, "stations": {}, "pools": pools}], "dispatch": None}}
    if remote:
        v = m[f"{DB_TIER}.visits"].to_numpy()
        calls = int(v.sum())
        tiers[DB_TIER] = {
            "position": 1,
            "servers": [
                {
                    "visits": calls,
                    "throughput": calls / measured,
                    "mean_residence": float(m[f"{DB_TIER}.time"].sum() / calls) if calls else None,
                    "gc": None,
                    "stations": {},
                    "pools": {},
                }
            ],
            "dispatch": None,
        }
    s = check_summary(s | {"tiers": tiers}, f"the summary imported from {label}")
    names = list(series)
    ts = timeseries_columns(
        edges[:-1], np.column_stack([series[k] for k in names]), [TIER] * len(names), [0] * len(names), [k[0] for k in names], [k[1] for k in names]
    )
    requests = r[kept].drop(columns="failure").reset_index(drop=True)
    requests.insert(0, "id", np.arange(len(requests), dtype=np.uint64))
    requests.insert(1, "session", np.zeros(len(requests), dtype=np.uint64))
    requests["type"] = pd.Categorical(requests["type"].astype(str))
    requests["status"] = pd.Categorical(requests["status"], categories=STATUSES)
    requests.insert(7, "retransmissions", np.zeros(len(requests), dtype=np.uint32))
    return Trace(s, ts, requests)


def _at(points: list[tuple[int, float]], t0: int, times: np.ndarray) -> np.ndarray:
    """A sampled level (a gauge) at `times` (s from t0): the last sample at or before
    each, the first before any (NaN with no samples)."""
    p = sorted(points)
    at = (np.array([x for x, _ in p], dtype=np.int64) - t0) / 1e9
    v = np.array([y for _, y in p])
    i = np.searchsorted(at, times, side="right") - 1
    return v[np.clip(i, 0, len(v) - 1)]


def _sum_of(seen: Seen, label: str, t0: int, times: np.ndarray) -> np.ndarray | None:
    """The sum over every metric (both generations, several pools) with this label."""
    found = [_at(p, t0, times) for (_, lab), p in seen.points.items() if lab == label and p]
    return np.sum(found, axis=0) if found else None


def _pool_series(seen: Seen, edges: np.ndarray, t0: int) -> dict[tuple[str, str], np.ndarray]:
    """The app tier's pool, CPU and thread series per window: a pool's level sampled at
    the window's middle (the metrics are the level when exported, not a time average),
    the process's CPU from its cumulative time counter interpolated at the window's
    edges (cores busy over the window)."""
    mid = (edges[:-1] + edges[1:]) / 2
    out: dict[tuple[str, str], np.ndarray] = {}
    used = _sum_of(seen, "connections:used", t0, mid)
    if used is not None:
        out[(CONNECTIONS, "busy")] = used
        queued = _sum_of(seen, "connections:queued", t0, mid)
        out[(CONNECTIONS, "queued")] = queued if queued is not None else np.zeros(len(mid))
    busy = _sum_of(seen, "threads:busy", t0, mid)
    if busy is not None:
        out[(THREADS, "busy")] = busy
    threads = _sum_of(seen, "process_threads", t0, mid)
    if threads is not None:
        out[("", "threads")] = threads
    cpu = [(lab.removeprefix("cpu:"), p) for (_, lab), p in seen.points.items() if lab.startswith("cpu:") and p]
    if cpu:
        width = np.diff(edges)
        user = np.zeros(len(mid))
        system = np.zeros(len(mid))
        for mode, p in cpu:
            p = sorted(p)
            at = (np.array([x for x, _ in p], dtype=np.int64) - t0) / 1e9
            cores = np.diff(np.interp(edges, at, np.array([y for _, y in p]))) / width
            if mode == "system":
                system += cores
            elif mode in ("user", "total"):
                user += cores
        out[("", "cpu_user")] = user
        out[("", "cpu_system")] = system
    return out


def _pools(seen: Seen, levels: dict[tuple[str, str], np.ndarray], measured: np.ndarray, t0: int, span: tuple[float, float], missing: dict[str, str]) -> dict:
    """The summary's pools: those whose occupancy and size the metrics give. Their
    acquisitions and waits no metric counts (0, named in `missing`); time-outs where
    the pool's `timeouts` counter was exported."""
    out = {}
    for pool, kind in ((CONNECTIONS, "connections"), (THREADS, "threads")):
        if (pool, "busy") not in levels:
            continue
        size = _sum_of(seen, f"{kind}:size", t0, np.array([span[1]]))
        if size is None:
            missing[f"{TIER}.pools.{pool}.size"] = (
                f"its occupancy was exported but not its maximum size ({'db.client.connection.max' if kind == 'connections' else 'tomcat.thread.max'}): give it to `twin calibrate`"
            )
            continue
        busy = levels[(pool, "busy")][measured]
        queued = levels.get((pool, "queued"), np.zeros(len(measured)))[measured]
        timeouts = _sum_of(seen, f"{kind}:timeouts", t0, np.array(span))
        out[pool] = {
            "kind": kind,
            "size": int(size[0]),
            "mean_busy": float(busy.mean()) if len(busy) else 0.0,
            "busy_max": float(busy.max()) if len(busy) else 0.0,
            "mean_queued": float(queued.mean()) if len(queued) else 0.0,
            "acquired": 0,
            "waited": 0,
            "timed_out": int(timeouts[1] - timeouts[0]) if timeouts is not None else 0,
            "rejected": 0,
            "dropped": 0,
            "pinned": float((busy >= size[0]).mean()) if len(busy) else 0.0,
        }
        missing[f"{TIER}.pools.{pool}.counts"] = "no metric counts a pool's acquisitions and waits: acquired, waited, rejected and dropped are 0" + (
            "" if timeouts is not None else ", timed_out too (no timeouts counter)"
        )
    return out
