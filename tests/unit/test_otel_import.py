"""`tierlab import otel`: OTLP/JSON lines as a server-side trace (trace/imports/otel.py).

The committed fixture is the Python bookstore's own OpenTelemetry (tests/fixtures/otel/
README.md says how it was made); the semantic-convention cases are built here in the
shapes the Java agent writes (older attribute and metric names, INTERNAL spans between a
request and its JDBC spans) and the newer ones, so that each mapping is asserted against
a figure set by hand."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tierlab.errors import InputError, TraceError
from tierlab.trace import read_trace
from tierlab.trace.imports import otel

FIXTURES = Path(__file__).parent.parent / "fixtures" / "otel"
T0 = 1_800_000_000_000_000_000  # ns since the epoch
MS = 1_000_000


def kv(attrs: dict) -> list[dict]:
    def value(v):
        if isinstance(v, bool):
            return {"boolValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        if isinstance(v, float):
            return {"doubleValue": v}
        return {"stringValue": v}

    return [{"key": k, "value": value(v)} for k, v in attrs.items()]


def span(trace: int, sid: int, parent: int | None, kind: int, start_ms: float, end_ms: float | None, name: str = "op", **attrs) -> dict:
    out = {
        "traceId": f"{trace:032x}",
        "spanId": f"{sid:016x}",
        "name": name,
        "kind": kind,
        "startTimeUnixNano": str(T0 + int(start_ms * MS)),
        "attributes": kv({k.replace("__", "."): v for k, v in attrs.items()}),
        "status": {},
    }
    if end_ms is not None:
        out["endTimeUnixNano"] = str(T0 + int(end_ms * MS))
    if parent is not None:
        out["parentSpanId"] = f"{parent:016x}"
    return out


def spans_line(spans: list[dict], service: str = "shop") -> str:
    return json.dumps(
        {"resourceSpans": [{"resource": {"attributes": kv({"service.name": service})}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}
    )


def metrics_line(metrics: list[dict], service: str = "shop") -> str:
    return json.dumps(
        {"resourceMetrics": [{"resource": {"attributes": kv({"service.name": service})}, "scopeMetrics": [{"scope": {"name": "t"}, "metrics": metrics}]}]}
    )


def gauge(name: str, points: list[tuple[float, float, dict]], kind: str = "sum", unit: str = "") -> dict:
    data = [{"timeUnixNano": str(T0 + int(t_ms * MS)), "asDouble": v, "attributes": kv(a)} for t_ms, v, a in points]
    body = {"dataPoints": data} | ({"aggregationTemporality": 2, "isMonotonic": False} if kind == "sum" else {})
    return {"name": name, "unit": unit, kind: body}


def write(path: Path, lines: list[str], end: str = "\n") -> Path:
    path.write_text("\n".join(lines) + end)
    return path


def java_agent_like(tmp_path: Path) -> Path:
    """Two requests in the Java agent's shapes: GET /books/{id} (SERVER span with
    http.route, a Spring INTERNAL span under it, two JDBC spans under that with the older
    db.system, one newer db.system.name span straight under the request, and an HTTP
    CLIENT call without db.system), and a POST without route answered 503; plus the older
    pool metrics (use_time a histogram in ms), Tomcat's thread pool and the JVM's CPU time."""
    spans = [
        span(1, 10, None, 2, 0, 20, "GET /books/{id}", http__route="/books/{id}", http__response__status_code=200),
        span(1, 11, 10, 1, 1, 19, "BookController.get"),
        span(1, 12, 11, 3, 2, 5, "SELECT books", db__system="postgresql"),
        span(1, 13, 11, 3, 6, 10, "SELECT authors", db__system="postgresql"),
        span(1, 14, 10, 3, 12, 13, "SELECT stock", db__system__name="postgresql"),
        span(1, 15, 10, 3, 14, 18, "GET", http__request__method="GET"),
        span(2, 20, None, 2, 1500, 1530, "POST /order", http__status_code=503),
        span(3, 30, None, 3, 500, 501, "SELECT 1", db__system="postgresql"),  # a pool's health check: in no request
    ]
    pool = {"pool.name": "HikariPool-1"}
    metrics = [
        gauge("db.client.connections.usage", [(0, 1, pool | {"state": "used"}), (0, 4, pool | {"state": "idle"}), (1000, 3, pool | {"state": "used"})]),
        gauge("db.client.connections.max", [(0, 5, pool)]),
        gauge("db.client.connections.pending_requests", [(0, 0, pool), (1000, 2, pool)]),
        gauge("tomcat.thread.busy.count", [(0, 2, {"tomcat.thread_pool.name": "http-nio-8080"})]),
        gauge("tomcat.thread.max", [(0, 8, {"tomcat.thread_pool.name": "http-nio-8080"})]),
        gauge("jvm.cpu.time", [(0, 10.0, {}), (2000, 11.0, {})], unit="s"),
        gauge("jvm.memory.used", [(0, 1e6, {})]),
        {
            "name": "db.client.connections.use_time",
            "unit": "ms",
            "histogram": {
                "aggregationTemporality": 2,
                "dataPoints": [
                    {"timeUnixNano": str(T0), "count": "10", "sum": 50.0, "attributes": kv(pool)},
                    {"timeUnixNano": str(T0 + 2000 * MS), "count": "30", "sum": 250.0, "attributes": kv(pool)},
                ],
            },
        },
    ]
    return write(tmp_path / "agent.jsonl", [spans_line(spans[:4]), metrics_line(metrics), spans_line(spans[4:])])


def test_java_agent_shapes_map_by_the_semantic_conventions(tmp_path):
    t = otel.read(java_agent_like(tmp_path), window=1.0)
    r = t.requests.set_index("type")
    assert sorted(r.index) == ["/books/{id}", "POST /order"]  # http.route, else the span's name
    get, post = r.loc["/books/{id}"], r.loc["POST /order"]
    assert get["app.db_queries"] == get["app.db_requests"] == get["db.visits"] == 3  # both generations of db.system; the HTTP call is not one
    assert get["app.db_time"] == pytest.approx(0.008)  # 3 + 4 + 1 ms
    assert get["app.time"] == pytest.approx(0.020) and get["app.before_db"] == pytest.approx(0.012)
    assert get["status"] == "ok" and post["status"] == "rejected" and post["db.server"] == -1
    s = t.summary
    assert s["errors"]["http_503"] == 1 and s["source"] == "import" and s["model"] == "otel: shop"
    pools = s["tiers"]["app"]["servers"][0]["pools"]
    assert pools["db"]["size"] == 5 and pools["threads"]["size"] == 8
    assert s["tiers"]["db"]["servers"][0]["visits"] == 3  # a database of its own (PostgreSQL): a tier
    busy = t.series("app", "busy", "db")[0]
    assert list(busy) == [1.0, 3.0]  # the used connections when exported, at each window's middle
    assert list(t.series("app", "queued", "db")[0]) == [0.0, 2.0]
    assert pools["db"]["acquired"] == 15  # the use_time histogram's count over the run's 1.53 s: 10 + 20 × 1.53 / 2 − 10
    assert list(t.series("app", "use_time", "db")[0]) == pytest.approx([0.01, 0.01])  # 200 ms over 20 connections, in ms (the older unit)
    cpu = t.series("app", "cpu_user")[0]
    assert list(cpu) == pytest.approx([0.5, 0.5])  # 1 s of CPU over 2 s of the JVM's cumulative time
    missing = s["missing"]
    assert "1 database spans outside any SERVER span" in missing["skipped.db_spans"]
    assert missing["skipped.CLIENT spans without db.system (calls to other services)"] == "1 skipped"
    assert missing["skipped.metrics a trace does not use"] == "1 skipped"
    assert "wait for a worker thread" in missing["app.wait_thread"]


def test_the_trace_reads_back_and_every_analysis_runs(tmp_path):
    from tierlab.analysis.bottleneck import bottleneck, breakdown, resources
    from tierlab.analysis.fluctuations import fluctuations
    from tierlab.analysis.profile import request_profile

    folder = otel.read(FIXTURES / "python_bookstore.otlp.jsonl.gz", window=0.5).write(tmp_path / "trace")
    t = read_trace(folder)
    assert "db" in set(resources(t)["resource"])
    bottleneck(t)
    assert breakdown(t).set_index("tier").loc["app", "with_db_active"] > 0
    fluctuations(t)
    p = request_profile(t, without_sessions=True)
    assert p.sessions == 0 and "V" not in p.table() and p.table().loc["/execute_search", "db_requests"] == 101
    with pytest.raises(TraceError, match="sessions.started is 0"):
        request_profile(t)  # V = share × L needs sessions: `size optimize --trace` must not take NaN


def test_embedded_database_stays_in_the_process(tmp_path):
    f = write(tmp_path / "x.jsonl", [spans_line([span(1, 1, None, 2, 0, 10, "GET /a", http__route="/a"), span(1, 2, 1, 3, 1, 3, db__system="sqlite")])])
    t = otel.read(f)
    assert "db" not in t.summary["tiers"] and "db.visits" not in t.requests
    assert t.requests["app.db_queries"].tolist() == [1]


def test_python_bookstore_fixture():
    """The Python bookstore's own export (tests/fixtures/otel/README.md): every page's
    statements as the bookstore runs them (TPC-W: Search 101, Home 1, Best Sellers 2,
    Shopping Cart 5, the forms none), the connection pool's size from its metrics."""
    t = otel.read(FIXTURES / "python_bookstore.otlp.jsonl.gz", window=0.5)
    visits = t.requests.groupby("type", observed=True)["app.db_queries"].agg(["min", "max"])
    expected = {"/execute_search": 101, "/home": 1, "/best_sellers": 2, "/product_detail": 1, "/new_products": 1, "/search_request": 0}
    for page, n in expected.items():
        if page in visits.index:
            assert (visits.loc[page, "min"], visits.loc[page, "max"]) == (n, n), page
    assert t.summary["tiers"]["app"]["servers"][0]["pools"]["db"]["size"] == 2
    assert t.summary["model"] == "otel: tierlab-bookstore"
    assert t.series("app", "cpu_user")[0].sum() > 0
    assert "app.cpu" not in t.summary["missing"]


@pytest.mark.parametrize(
    ("lines", "end", "message"),
    [
        (['{"resourceSpans": ['], "", r"line 1: not a JSON object \(the file ends inside it: cut off\?\)"),
        (['{"resourceSpans": []}', "{resourceSpans: 1}"], "\n", r"line 2: not a JSON object: "),
        (['{"spans": []}'], "\n", r"line 1: not an OTLP export request \(expected resourceSpans or resourceMetrics, got spans\)"),
        (['{"resourceSpans": {"a": 1}}'], "\n", r"line 1: resourceSpans is a dict, not a list"),
        ([spans_line([span(1, 1, None, 2, 0, None, "GET /a")])], "\n", r"line 1: span 'GET /a' \(0000000000000001\) has no endTimeUnixNano"),
        ([spans_line([span(1, 1, None, 2, 10, 5, "GET /a")])], "\n", r"line 1: span 'GET /a' \(0000000000000001\) ends 0.005 s before it starts"),
        (
            [spans_line([span(1, 1, None, 2, 0, 5)]), spans_line([span(2, 2, None, 2, 0, 5)], service="other")],
            "\n",
            r"line 2: spans of service 'other', while line 1 had 'shop': .* --service 'shop'",
        ),
        (
            [spans_line([{**span(1, 1, None, 2, 0, 5), "startTimeUnixNano": "soon"}])],
            "\n",
            r"line 1: span 'op': startTimeUnixNano is 'soon', not a time in nanoseconds",
        ),
        ([metrics_line([{"name": "process.cpu.time", "histogram": {}}])], "\n", r"line 1: metric process.cpu.time has no gauge or sum data"),
        ([metrics_line([gauge("db.client.connection.max", [(0, 1, {})])])], "\n", r"no SERVER spans"),
    ],
)
def test_bad_input_names_the_line(tmp_path, lines, end, message):
    with pytest.raises(InputError, match=message):
        otel.read(write(tmp_path / "bad.jsonl", lines, end))


def test_service_chooses_one_and_says_what_it_skipped(tmp_path):
    f = write(
        tmp_path / "two.jsonl", [spans_line([span(1, 1, None, 2, 0, 5)]), spans_line([span(2, 2, None, 2, 0, 5), span(2, 3, 2, 2, 1, 2)], service="other")]
    )
    t = otel.read(f, service="shop")
    assert len(t.requests) == 1
    assert t.summary["missing"]["skipped.spans of service 'other' (not --service shop)"] == "2 skipped"


def test_unknown_fields_are_skipped_and_counted(tmp_path):
    """OTLP/JSON receivers must ignore fields they do not know (forward compatibility);
    a misspelt one shows in `missing`, and a misspelt end time is still an error."""
    s = span(1, 1, None, 2, 0, 5) | {"colour": "blue"}
    t = otel.read(write(tmp_path / "u.jsonl", [spans_line([s])]))
    assert "Span.colour (1)" in t.summary["missing"]["skipped.unknown_fields"]
    s = span(1, 1, None, 2, 0, None) | {"endTimeUnixNanos": str(T0)}
    with pytest.raises(InputError, match="has no endTimeUnixNano"):
        otel.read(write(tmp_path / "v.jsonl", [spans_line([s])]))


def test_gzip_and_several_files(tmp_path):
    a = tmp_path / "a.jsonl.gz"
    with gzip.open(a, "wt") as f:
        f.write(spans_line([span(1, 1, None, 2, 0, 5, "GET /a", http__route="/a")]) + "\n")
    b = write(tmp_path / "b.jsonl", [spans_line([span(2, 2, None, 2, 10, 15, "GET /b", http__route="/b")])])
    t = otel.read([a, b])
    assert sorted(t.requests["type"].astype(str)) == ["/a", "/b"]
    with pytest.raises(InputError, match="appear twice"):
        otel.read([b, b])


def test_enums_by_name_and_delta_sums(tmp_path):
    """The JSON mapping allows an enum's name for its number; a delta sum is accumulated."""
    s = span(1, 1, None, 2, 0, 5) | {"kind": "SPAN_KIND_SERVER"}
    cpu = gauge("process.cpu.time", [(0, 0.25, {"cpu.mode": "user"}), (1000, 0.25, {"cpu.mode": "user"}), (2000, 0.25, {"cpu.mode": "user"})])
    cpu["sum"]["aggregationTemporality"] = "AGGREGATION_TEMPORALITY_DELTA"
    t = otel.read(write(tmp_path / "e.jsonl", [spans_line([s, span(1, 2, None, 2, 1999, 2000)]), metrics_line([cpu])]), window=1.0)
    assert len(t.requests) == 2
    assert list(t.series("app", "cpu_user")[0]) == pytest.approx([0.25, 0.25, 0.0])


def test_original_field_names_and_wrong_types(tmp_path):
    """proto3's JSON mapping accepts a field's original name as well as its JSON one;
    a value of the wrong type is named with its path in the request."""
    s = span(1, 1, None, 2, 0, 5)
    snake = {
        "trace_id": s["traceId"],
        "span_id": s["spanId"],
        "kind": 2,
        "start_time_unix_nano": s["startTimeUnixNano"],
        "end_time_unix_nano": s["endTimeUnixNano"],
    }
    t = otel.read(write(tmp_path / "s.jsonl", [spans_line([snake])]))
    assert len(t.requests) == 1 and "skipped.unknown_fields" not in t.summary["missing"]
    with pytest.raises(InputError, match=r"line 1: Expected `int \| str \| null`, got `object` - at `\$.resourceSpans\[0\].scopeSpans\[0\].spans\[0\].kind`"):
        otel.read(write(tmp_path / "k.jsonl", [spans_line([s | {"kind": {"server": True}}])]))


def test_an_attribute_value_of_the_wrong_type(tmp_path):
    s = span(1, 1, None, 2, 0, 5) | {"attributes": [{"key": "http.route", "value": {"stringValue": 7}}]}
    with pytest.raises(InputError, match=r"line 1: an attribute's value .*Expected `str \| null`, got `int` - at `\$.stringValue`"):
        otel.read(write(tmp_path / "a.jsonl", [spans_line([s])]))


def test_java_agent_logging_otlp_lines(tmp_path):
    """The Java agent's `otel.traces.exporter=logging-otlp` logs one ResourceSpans (and
    `otel.metrics.exporter=logging-otlp` one ResourceMetrics) per line, after the
    logger's prefix, among the agent's own log lines (counted, not read)."""
    prefix = "[otel.javaagent 2026-11-27 14:00:00:000 +0000] [BatchSpanProcessor_WorkerThread-1] INFO io.opentelemetry.exporter.logging.otlp.OtlpJsonLoggingSpanExporter - "
    spans = json.loads(spans_line([span(1, 1, None, 2, 0, 5, "GET /a", http__route="/a"), span(1, 2, 1, 3, 1, 2, db__system="h2")]))["resourceSpans"][0]
    metrics = json.loads(metrics_line([gauge("db.client.connections.max", [(0, 7, {})])]))["resourceMetrics"][0]
    lines = [
        "[otel.javaagent 2026-11-27 13:59:59:000 +0000] [main] INFO io.opentelemetry.javaagent.tooling.VersionLogger - opentelemetry-javaagent",
        prefix + json.dumps(spans),
        prefix + json.dumps(metrics),
    ]
    t = otel.read(write(tmp_path / "agent.log", lines))
    assert t.requests["app.db_queries"].tolist() == [1] and "db" not in t.summary["tiers"]  # H2 runs in the JVM
    assert t.summary["missing"]["skipped.lines without JSON (a logger's own lines)"] == "1 skipped"


def test_jvm_bookstore_fixture():
    """The JVM bookstore's capture by the OpenTelemetry Java agent (tests/fixtures/otel/
    README.md): the agent's older pool names (db.client.connections.*, in ms), Tomcat's
    thread pool without its maximum, the JVM's CPU time and its threads by state."""
    t = otel.read(FIXTURES / "jvm_bookstore.otlp.jsonl.gz", window=0.5)
    visits = t.requests.groupby("type", observed=True)["app.db_queries"].median()
    assert visits["/execute_search"] == 101 and visits["/home"] == 1 and visits["/search_request"] == 0
    pool = t.summary["tiers"]["app"]["servers"][0]["pools"]["db"]
    assert pool["size"] == 2 and pool["acquired"] > 0
    assert "threads" not in t.summary["tiers"]["app"]["servers"][0]["pools"]  # its size was not exported: said, and asked of twin calibrate
    assert "tomcat.thread.max" in t.summary["missing"]["app.pools.threads.size"]
    assert t.series("app", "busy", "threads")[0].max() >= 1
    assert t.series("app", "threads")[0].min() > 10  # jvm.thread.count summed over its states, not one state's
    assert t.series("app", "cpu_user")[0].sum() > 0
    assert "database spans outside any SERVER span" in t.summary["missing"]["skipped.db_spans"]  # the pool's start-up queries


@pytest.mark.parametrize(("per_second", "bursty"), [([10, 10], False), ([40, 2], True)])
def test_observed_workload_keeps_the_arrival_process(tmp_path, per_second, bursty):
    """The twin's open workload without a model: the observed rate, and bursty arrivals
    where the traces' are over-dispersed (per second: 10, 10, … is regular; 40, 2, … has
    an index of dispersion near 20)."""
    from tierlab.experiments.twin.observed import index_of_dispersion, observed_model

    spans, k = [], 0
    for second in range(20):
        n = per_second[second % 2]
        for i in range(n):
            k += 1
            start = second * 1000 + i * (1000 / n)
            spans.append(span(k, k, None, 2, start, start + 1, "GET /a", http__route="/a"))
    folder = otel.read(write(tmp_path / "a.jsonl", [spans_line(spans)])).write(tmp_path / "trace")
    traces = [(str(folder), read_trace(folder))]
    model = observed_model(traces, threads=4, connections=2)
    rate = model.spec.workload.population.session_rate
    assert rate == pytest.approx(k / read_trace(folder).summary["measured_seconds"])
    assert (model.spec.workload.burstiness is not None) == bursty
    if bursty:
        assert model.spec.workload.burstiness.dispersion == pytest.approx(index_of_dispersion(traces), rel=1e-3)
