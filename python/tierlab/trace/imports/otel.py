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
  `.pending_requests`, `.timeouts`, the `.wait_time` and `.use_time` histograms;
  `db.client.connections.usage{state}` …), Tomcat's
  thread pool (`tomcat.thread.busy.count`, `tomcat.thread.max`), the process's CPU
  (`process.cpu.time{cpu.mode}`, the JVM's `jvm.cpu.time`) and threads
  (`jvm.thread.count`) become the `app` tier's series, per window.

INTERNAL spans only link a database span to its request; other CLIENT spans (HTTP
calls to other services), logs and other metrics are skipped, and `missing` counts what
was skipped and why, as it names what no standard span shows (the wait for a worker
thread, getConnection(), the CPU per request).

Parsing: by the official message definitions (`opentelemetry-proto`'s descriptors),
not by hand — but not by protobuf's `json_format`, which parses 6,800 spans/s here, a
fifteenth of the rate an import must reach (benchmarks/otel_import.py). Each message a
trace reads becomes a msgspec Struct generated from its descriptor (the JSON names, the
types proto3's JSON mapping allows), so a line is decoded and type-checked in C. A line
the Structs refuse takes a careful path: parsed by orjson (a cut-off or malformed line
is named), original field names renamed to the JSON ones, fields the definitions lack
dropped and counted in `missing` (OTLP/JSON receivers must ignore them), then decoded
again, a wrong type named with its path."""

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
    import msgspec
    import orjson
    from google.protobuf.descriptor import Descriptor, FieldDescriptor
    from opentelemetry.proto.common.v1 import common_pb2
    from opentelemetry.proto.logs.v1 import logs_pb2
    from opentelemetry.proto.metrics.v1 import metrics_pb2
    from opentelemetry.proto.resource.v1 import resource_pb2
    from opentelemetry.proto.trace.v1 import trace_pb2
except ImportError as e:  # an optional extra: say how to get it
    raise InputError(f"reading OpenTelemetry needs the otel extra: pip install 'tierlab[otel]' ({e})") from None
from ..core import timeseries_columns
from ..folder import Trace
from ..schema import PHASES, STATUSES, check_summary
from .client import NO_SESSIONS, _busy_time, failure, measured_figures, summary

TIER, DB_TIER = "app", "db"
THREADS, CONNECTIONS = "threads", "db"  # the trace's pool names, as the examples' models name them
SERVER, CLIENT, INTERNAL = 2, 3, 1  # Span.SpanKind
EMBEDDED = {"sqlite", "h2", "hsqldb", "derby"}  # databases that run inside the application's process
ROUTE, NAME_ATTRS = "http.route", ("http.route", "http.response.status_code", "http.status_code", "db.system.name", "db.system")
ERROR = 2  # Status.StatusCode.STATUS_CODE_ERROR
WANTED = set(NAME_ATTRS) | {"service.name", "db.client.connection.state", "state", "cpu.mode", "process.cpu.state"}


# The messages a trace reads, decoded field by field; any other (events, links, the
# scope, histograms, exemplars) is skipped undecoded (msgspec.Raw), and so is an
# attribute's value (AnyValue) until its key is one a trace reads (`_value`): most are
# not (a statement's text, a peer's address), and decoding them was half the time.
MODELLED = {
    m.DESCRIPTOR.full_name
    for m in (
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
        metrics_pb2.NumberDataPoint,
        metrics_pb2.Histogram,
        metrics_pb2.HistogramDataPoint,
        resource_pb2.Resource,
        common_pb2.KeyValue,
    )
}
WIDE = {FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED64, FieldDescriptor.TYPE_SINT64}
FLOATS = {FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT}


def _field_type(f: FieldDescriptor, made: dict[str, Any]) -> Any:
    """The JSON type proto3's mapping gives a field: a 64-bit integer or an enum as a
    number or a string (its decimal digits; the enum's name), a float also as a string
    ("NaN"), bytes as a string (OTLP/JSON: ids in hex), a message as an object."""
    if f.type == FieldDescriptor.TYPE_MESSAGE:
        t: Any = _struct(f.message_type, made) if f.message_type.full_name in MODELLED else msgspec.Raw
    elif f.type == FieldDescriptor.TYPE_ENUM or f.type in WIDE:
        t = int | str
    elif f.type in FLOATS:
        t = float | str
    elif f.type == FieldDescriptor.TYPE_BOOL:
        t = bool
    elif f.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
        t = str
    else:
        t = int
    return list[t] if f.is_repeated else (t if t is msgspec.Raw else t | None)


def _struct(d: Descriptor, made: dict[str, Any]) -> Any:
    """The message as a msgspec Struct, its fields by their JSON (lowerCamelCase) names:
    decoded and type-checked in C, a field the definition lacks refused (the line then
    takes the careful path, `_cleaned`)."""
    if d.full_name not in made:
        fields: list[tuple[str, Any, Any]] = [(f.json_name, _field_type(f, made), [] if f.is_repeated else None) for f in d.fields]
        made[d.full_name] = msgspec.defstruct(d.name, fields, forbid_unknown_fields=True, frozen=True)
    return made[d.full_name]


def _request_struct() -> tuple[Any, dict[str, Any]]:
    """An export request of any signal (the fields of TracesData, MetricsData and
    LogsData: one line holds one of them), and every message's Struct by name."""
    made: dict[str, Any] = {}
    fields: list[tuple[str, Any, Any]] = [
        (f.json_name, _field_type(f, made), []) for data in (trace_pb2.TracesData, metrics_pb2.MetricsData, logs_pb2.LogsData) for f in data.DESCRIPTOR.fields
    ]
    return msgspec.defstruct("ExportRequest", fields, forbid_unknown_fields=True, frozen=True), made


REQUEST, STRUCTS = _request_struct()
DECODER = msgspec.json.Decoder(REQUEST)
ANY_VALUE = msgspec.json.Decoder(_struct(common_pb2.AnyValue.DESCRIPTOR, STRUCTS))
RESOURCE_DECODERS = {
    "resourceSpans": msgspec.json.Decoder(STRUCTS[trace_pb2.ResourceSpans.DESCRIPTOR.full_name]),
    "resourceMetrics": msgspec.json.Decoder(STRUCTS[metrics_pb2.ResourceMetrics.DESCRIPTOR.full_name]),
}
DESCRIPTORS = {m.DESCRIPTOR.full_name: m.DESCRIPTOR for m in (trace_pb2.TracesData, metrics_pb2.MetricsData, logs_pb2.LogsData)}
KINDS = {v.name: v.number for v in trace_pb2.Span.DESCRIPTOR.enum_types_by_name["SpanKind"].values}
TEMPORALITY = {v.name: v.number for v in metrics_pb2.AggregationTemporality.DESCRIPTOR.values}
STATUS_CODES = {v.name: v.number for v in trace_pb2.Status.DESCRIPTOR.enum_types_by_name["StatusCode"].values}
DELTA = TEMPORALITY["AGGREGATION_TEMPORALITY_DELTA"]
SIGNALS = {f.json_name for d in DESCRIPTORS.values() for f in d.fields} | {f.name for d in DESCRIPTORS.values() for f in d.fields}


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
    # database spans by their parent's key: [spans, total duration (ns)] — one entry per
    # parent, not per span, so the memory grows with the requests, not the statements
    db: dict[str, list[int]] = field(default_factory=dict)
    db_systems: set[str] = field(default_factory=set)
    # (metric, what it measures, its data point's attributes) → (ns, value): one series per
    # attribute set (a pool, a thread state), summed where read
    points: dict[tuple[str, str, tuple], list[tuple[int, float]]] = field(default_factory=lambda: defaultdict(list))
    pool_names: set[str] = field(default_factory=set)
    skipped: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))
    unknown: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))


def read(paths: list[str | Path] | str | Path, window: float = 1.0, warmup: float = 0.0, service: str | None = None) -> Trace:
    """The trace of the SERVER spans and metrics in `paths` (OTLP/JSON lines, `.gz`
    too; a logger's lines as `logging-otlp` writes them), `window` seconds per series window; `service`: the `service.name` to take
    when the files hold several."""
    files = [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    seen = Seen(service=service)
    for path in files:
        seen.path = path
        for line, text in _lines(path):
            try:
                request = _decoded(text, line, seen)
                if request is not None:
                    _request(request, line, seen)
            except _BadValue as e:
                raise InputError(f"{path} line {line}: {e}") from None
    return _trace(seen, files, window, warmup)


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    try:
        with gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb") as raw:
            for line, text in enumerate(raw, 1):
                if text.strip():
                    yield line, text
    except (OSError, EOFError) as e:
        raise InputError(f"cannot read {path}: {e}") from None


def _decoded(text: bytes, line: int, seen: Seen) -> Any:
    """One export request (None: a line without JSON, counted). Decoded straight into
    the Structs — an export request, or the one ResourceSpans or ResourceMetrics that
    the Java agent's `logging-otlp` exporters write per log line, after the logger's
    prefix; a line they refuse takes the careful path: parsed as JSON (a cut-off or
    malformed line is named), fields renamed from their original names to the JSON ones
    and those the definitions lack dropped and counted (OTLP/JSON receivers must ignore
    them), then decoded again — a field of the wrong type is then named with its path."""
    start = text.find(b"{")
    if start < 0:
        seen.skipped["lines without JSON (a logger's own lines)"] += 1
        return None
    text = text[start:]  # after a logger's prefix, if any
    try:
        return DECODER.decode(text)
    except msgspec.MsgspecError:
        pass
    for field_name, decoder in RESOURCE_DECODERS.items():
        try:
            return REQUEST(**{field_name: [decoder.decode(text)]})
        except msgspec.MsgspecError:
            pass
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError as e:
        cut = "" if text.endswith(b"\n") else " (the file ends inside it: cut off?)"
        raise InputError(f"{seen.path} line {line}: not a JSON object{cut}: {e}") from None
    if isinstance(obj, dict) and obj.keys() & {"scopeSpans", "scope_spans", "scopeMetrics", "scope_metrics"}:
        obj = {("resourceSpans" if obj.keys() & {"scopeSpans", "scope_spans"} else "resourceMetrics"): [obj]}  # logging-otlp's one resource
    if not isinstance(obj, dict) or not obj.keys() & SIGNALS:
        got = ", ".join(list(obj)[:4]) if isinstance(obj, dict) else type(obj).__name__
        raise InputError(
            f"{seen.path} line {line}: not an OTLP export request (expected resourceSpans or resourceMetrics, got {got or 'an empty object'}); "
            "write OTLP/JSON lines, e.g. the Collector's file exporter or otel.traces.exporter=logging-otlp"
        )
    top = {f.name: f for d in DESCRIPTORS.values() for f in d.fields} | {f.json_name: f for d in DESCRIPTORS.values() for f in d.fields}
    cleaned = {top[k].json_name: _cleaned(v, top[k], k, line, seen) for k, v in obj.items() if k in top}
    for k in obj.keys() - top.keys():
        seen.unknown[f"ExportRequest.{k}"] += 1
    try:
        return msgspec.json.decode(orjson.dumps(cleaned), type=REQUEST)
    except msgspec.ValidationError as e:
        raise InputError(f"{seen.path} line {line}: {e} (OTLP/JSON, opentelemetry-proto's definitions)") from None


def _cleaned(value: Any, f: FieldDescriptor, where: str, line: int, seen: Seen) -> Any:
    """`value` of field `f` with, in every modelled message under it, the original
    field names renamed to the JSON ones and the unknown ones dropped (counted)."""
    if f.type != FieldDescriptor.TYPE_MESSAGE or f.message_type.full_name not in MODELLED or value is None:
        return value
    if f.is_repeated:
        if not isinstance(value, list):
            raise InputError(f"{seen.path} line {line}: {where} is a {type(value).__name__}, not a list")
        return [_cleaned_message(v, f.message_type, where, line, seen) for v in value]
    return _cleaned_message(value, f.message_type, where, line, seen)


def _cleaned_message(obj: Any, d: Descriptor, where: str, line: int, seen: Seen) -> Any:
    if not isinstance(obj, dict):
        raise InputError(f"{seen.path} line {line}: {where} holds a {type(obj).__name__}, not a JSON object ({d.name})")
    by_name = {f.name: f for f in d.fields} | {f.json_name: f for f in d.fields}
    for k in obj.keys() - by_name.keys():
        seen.unknown[f"{d.name}.{k}"] += 1
    return {by_name[k].json_name: _cleaned(v, by_name[k], f"{where}.{k}", line, seen) for k, v in obj.items() if k in by_name}


def _request(req: Any, line: int, seen: Seen) -> None:
    for rs in req.resourceSpans:
        _resource_spans(rs, line, seen)
    for rm in req.resourceMetrics:
        _resource_metrics(rm, line, seen)
    if req.resourceLogs:
        seen.skipped["resourceLogs (not used by a trace)"] += len(req.resourceLogs)


class _BadValue(ValueError):
    """An attribute's value that is not an AnyValue (`read` names its line)."""


def _value(raw: Any) -> Any:
    """An AnyValue's scalar (arrays and maps are not read: None)."""
    try:
        v = ANY_VALUE.decode(raw)
    except msgspec.MsgspecError as e:
        raise _BadValue(f"an attribute's value {bytes(raw)[:60]!r}: {e} (OTLP/JSON AnyValue)") from None
    if v is None:
        return None
    if v.stringValue is not None:
        return v.stringValue
    if v.intValue is not None:
        return int(v.intValue)
    return v.doubleValue if v.doubleValue is not None else v.boolValue


def _attrs(items: list) -> dict[str, Any]:
    """The attributes a trace reads, of a list of KeyValue (the rest are passed over)."""
    return {kv.key: _value(kv.value) for kv in items if kv.key in WANTED}


def _ns(value: Any, what: str, name: str, line: int, seen: Seen) -> int:
    """A fixed64 time (ns since the epoch), 0 when absent."""
    try:
        return int(value or 0)
    except ValueError:
        raise InputError(f"{seen.path} line {line}: {name}: {what} is {value!r}, not a time in nanoseconds") from None


def _service_of(resource: Any) -> str:
    return str(_attrs(resource.attributes).get("service.name", "unknown_service")) if resource is not None else "unknown_service"


def _resource_spans(rs: Any, line: int, seen: Seen) -> None:
    name = _service_of(rs.resource)
    if not _service(name, line, seen):
        seen.skipped[f"spans of service {name!r} (not --service {seen.service})"] += sum(len(s.spans) for s in rs.scopeSpans)
        return
    for ss in rs.scopeSpans:
        for span in ss.spans:
            kind = span.kind or 0
            kind = KINDS.get(kind, -1) if isinstance(kind, str) else kind
            if kind not in (SERVER, CLIENT, INTERNAL):
                seen.skipped["spans of other kinds (PRODUCER, CONSUMER, unspecified)"] += 1
                continue
            trace_id, span_id = span.traceId or "", span.spanId or ""
            if not trace_id or not span_id:
                raise InputError(f"{seen.path} line {line}: span {span.name or ''!r} has no traceId or spanId")
            try:
                start, end = int(span.startTimeUnixNano or 0), int(span.endTimeUnixNano or 0)
            except ValueError:
                for what in ("startTimeUnixNano", "endTimeUnixNano"):  # the message names the one that is wrong
                    _ns(getattr(span, what), what, f"span {span.name or ''!r}", line, seen)
                raise
            if end <= 0:
                raise InputError(f"{seen.path} line {line}: span {span.name or ''!r} ({span_id}) has no endTimeUnixNano: an exported span has ended")
            if end < start:
                raise InputError(f"{seen.path} line {line}: span {span.name or ''!r} ({span_id}) ends {(start - end) / 1e9:.6g} s before it starts")
            parent = span.parentSpanId or ""
            if kind == SERVER:
                attrs = _attrs(span.attributes)
                seen.keys.append(trace_id + span_id)
                seen.start.append(start)
                seen.end.append(end)
                seen.types.append(str(attrs.get(ROUTE) or span.name or "unnamed"))
                seen.codes.append(str(attrs.get("http.response.status_code", attrs.get("http.status_code", ""))))
                code = span.status.code if span.status is not None else 0
                seen.errors.append((STATUS_CODES.get(code, 0) if isinstance(code, str) else code) == ERROR)
            elif kind == CLIENT:
                attrs = _attrs(span.attributes)
                system = attrs.get("db.system.name", attrs.get("db.system"))
                if system is None:
                    seen.skipped["CLIENT spans without db.system (calls to other services)"] += 1
                    continue
                seen.db_systems.add(str(system))
                counts = seen.db.setdefault(trace_id + parent, [0, 0])
                counts[0] += 1
                counts[1] += end - start
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
# The pool's histograms of the seconds a connection was waited for and held: their count
# is the acquisitions, their sum ÷ count the mean wait and hold (the older generation in ms).
POOL_HISTOGRAMS = {
    "db.client.connection.wait_time": "wait",
    "db.client.connections.wait_time": "wait",
    "db.client.connection.use_time": "use",
    "db.client.connections.use_time": "use",
}
THREAD_GAUGES = {"tomcat.thread.busy.count": "threads:busy", "tomcat.thread.max": "threads:size", "jvm.thread.count": "process_threads"}
CPU_TIME = {"process.cpu.time": ("cpu.mode", "process.cpu.state", "state"), "jvm.cpu.time": ()}
POOL_HISTOGRAMS_NOTE = "count of db.client.connection(s).use_time (or wait_time)"
POOL_NAME = ("db.client.connection.pool.name", "pool.name")


def _resource_metrics(rm: Any, line: int, seen: Seen) -> None:
    name = _service_of(rm.resource)
    if not _service(name, line, seen):
        seen.skipped[f"metrics of service {name!r} (not --service {seen.service})"] += 1
        return
    for sm in rm.scopeMetrics:
        for metric in sm.metrics:
            _metric(metric, line, seen)


def _metric(metric: Any, line: int, seen: Seen) -> None:
    name = metric.name or ""
    split = next((a for (m, a) in POOL_COUNT if m == name), None)
    if name in POOL_HISTOGRAMS:
        return _histogram(metric, name, line, seen)
    if split is None and name not in POOL_GAUGES and name not in THREAD_GAUGES and name not in CPU_TIME:
        seen.skipped["metrics a trace does not use"] += 1
        return
    data = metric.sum if metric.sum is not None else metric.gauge
    if data is None:
        raise InputError(f"{seen.path} line {line}: metric {name} has no gauge or sum data; the conventions make it a number")
    delta = _delta(data)
    for point in data.dataPoints:
        t = _ns(point.timeUnixNano, "timeUnixNano", f"a data point of {name}", line, seen)
        raw = point.asDouble if point.asDouble is not None else point.asInt
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise InputError(f"{seen.path} line {line}: a data point of {name} has value {raw!r}, not a number (asDouble or asInt)") from None
        attrs = _attrs(point.attributes)
        pool = next((str(attrs[a]) for a in POOL_NAME if a in attrs), None)
        if pool is not None:
            seen.pool_names.add(pool)
        if split is not None:
            label = f"{POOL_COUNT[(name, split)]}:{attrs.get(split, '')}"
        elif name in CPU_TIME:
            label = "cpu:" + str(next((attrs[a] for a in CPU_TIME[name] if a in attrs), "total"))
        else:
            label = POOL_GAUGES.get(name) or THREAD_GAUGES[name]
        key = (name, label, _identity(point.attributes))
        if delta:  # as cumulative
            value += seen.points[key][-1][1] if seen.points[key] else 0.0
        seen.points[key].append((t, value))


def _identity(attributes: list) -> tuple:
    """A data point's series: its attributes, whole."""
    return tuple(sorted((kv.key, bytes(kv.value)) for kv in attributes))


def _delta(data: Any) -> bool:
    temporality = getattr(data, "aggregationTemporality", 0) or 0
    return (TEMPORALITY.get(temporality, -1) if isinstance(temporality, str) else temporality) == DELTA


def _histogram(metric: Any, name: str, line: int, seen: Seen) -> None:
    """A pool's wait_time or use_time histogram: its count and sum, cumulative."""
    data = metric.histogram
    if data is None:
        raise InputError(f"{seen.path} line {line}: metric {name} has no histogram data; the conventions make it a histogram")
    scale = 1e-3 if metric.unit == "ms" else 1.0  # the older generation's unit
    kind = POOL_HISTOGRAMS[name]
    for point in data.dataPoints:
        t = _ns(point.timeUnixNano, "timeUnixNano", f"a data point of {name}", line, seen)
        try:
            count, total = float(point.count or 0), float(point.sum or 0) * scale
        except ValueError:
            raise InputError(f"{seen.path} line {line}: a data point of {name} has count {point.count!r} and sum {point.sum!r}, not numbers") from None
        for label, value in ((f"connections:{kind}_count", count), (f"connections:{kind}_sum", total)):
            key = (name, label, _identity(point.attributes))
            if _delta(data):
                value += seen.points[key][-1][1] if seen.points[key] else 0.0
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
    for parent, (n, ns) in seen.db.items():
        i = _request_of(parent, index, seen.parent)
        if i is None:
            outside += n
            continue
        visits[i] += n
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
        f"{TIER}.cpu_time": "spans carry no CPU time: the process's CPU is in the app series (cpu_user, cpu_system) where process.cpu.time (or jvm.cpu.time) was exported",
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
    f = measured_figures(r, start, end, warmup, duration, missing)
    pools = _pools(seen, levels, edges[:-1] >= warmup - 1e-9, t0, (warmup, duration), missing)  # before the summary: it adds to missing
    s = summary("otel", label, window, f)
    s["model"] = f"otel: {seen.service}"
    del s["missing"]["tiers"]
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
    """The sum over every series (both generations, several pools, a thread count's
    states) with this label."""
    found = [_at(p, t0, times) for (_, lab, _), p in seen.points.items() if lab == label and p]
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
    width = np.diff(edges)
    user, system = _counted(seen, "cpu:user", t0, edges), _counted(seen, "cpu:system", t0, edges)
    total = _counted(seen, "cpu:total", t0, edges)
    if user is not None or total is not None or system is not None:
        zero = np.zeros(len(mid))
        out[("", "cpu_user")] = (np.diff(user) if user is not None else zero) / width + (np.diff(total) / width if total is not None else zero)
        out[("", "cpu_system")] = np.diff(system) / width if system is not None else zero
    for kind in ("wait", "use"):
        count, held = _counted(seen, f"connections:{kind}_count", t0, edges), _counted(seen, f"connections:{kind}_sum", t0, edges)
        if count is not None and held is not None:
            n = np.diff(count)
            out[(CONNECTIONS, f"{kind}_time")] = np.divide(np.diff(held), n, out=np.full(len(n), np.nan), where=n > 0)
    return out


def _counted(seen: Seen, label: str, t0: int, times: np.ndarray) -> np.ndarray | None:
    """A cumulative counter (CPU seconds, a histogram's count or sum) at `times`,
    interpolated between its exports and summed over the metrics that have it."""
    found = []
    for (_, lab, _), p in seen.points.items():
        if lab == label and p:
            p = sorted(p)
            at = (np.array([x for x, _ in p], dtype=np.int64) - t0) / 1e9
            found.append(np.interp(times, at, np.array([y for _, y in p])))
    return np.sum(found, axis=0) if found else None


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
        acquired = _counted(seen, "connections:use_count", t0, np.array(span)) if kind == "connections" else None
        if acquired is None and kind == "connections":
            acquired = _counted(seen, "connections:wait_count", t0, np.array(span))
        out[pool] = {
            "kind": kind,
            "size": int(size[0]),
            "mean_busy": float(busy.mean()) if len(busy) else 0.0,
            "busy_max": float(busy.max()) if len(busy) else 0.0,
            "mean_queued": float(queued.mean()) if len(queued) else 0.0,
            "acquired": int(round(acquired[1] - acquired[0])) if acquired is not None else 0,
            "waited": 0,
            "timed_out": int(timeouts[1] - timeouts[0]) if timeouts is not None else 0,
            "rejected": 0,
            "dropped": 0,
            "pinned": float((busy >= size[0]).mean()) if len(busy) else 0.0,
        }
        zeros = ["waited", "rejected", "dropped"] + ([] if acquired is not None else ["acquired"]) + ([] if timeouts is not None else ["timed_out"])
        missing[f"{TIER}.pools.{pool}.counts"] = f"no metric of the pool counts them: {', '.join(zeros)} are 0" + (
            f" (acquired: the {POOL_HISTOGRAMS_NOTE})" if acquired is not None else ""
        )
    return out
