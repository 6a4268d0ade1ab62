"""The JVM bookstore (jvm/bookstore, issue 40): built with Maven on demand, started as
`tierlab live up --server java` starts it (`Testbed.started(server="java")`) on a
database the Python data generator made (SQLite, and the project's PostgreSQL); every
page answers as the Python bookstore's does, M and N change at run time through the
admin endpoint, drain gives the middleware's phase columns, a live run through the
unchanged Testbed joins them, and stopping it leaves no process."""

from __future__ import annotations

import io
import os
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tierlab import PHASES
from tierlab.errors import InputError
from tierlab.live import jvm, lifecycle, testbed
from tierlab.live.cluster import up_cluster
from tierlab.live.server.bookstore import Bookstore, Database
from tierlab.live.server.middleware import ConnectionPool, Tier

from conftest import HTTP, ROOT, live_model

PHASE_COLUMNS = [f"app.{p}" for p in PHASES]
# One request of each page, as examples/tpcw_http.yaml sends them: (type, method, path, form).
PAGES = [
    ("HOME", "GET", "/home?c_id=5", None),
    ("NEWP", "GET", "/new_products?subject=ARTS", None),
    ("BESS", "GET", "/best_sellers?subject=HISTORY", None),
    ("PROD", "GET", "/product_detail?i_id=7", None),
    ("SREQ", "GET", "/search_request", None),
    ("SRES", "GET", "/execute_search?search_type=author&search_string=war", None),
    ("SHOP", "GET", "/shopping_cart?i_id=3&qty=2", None),
    ("CREG", "GET", "/customer_registration", None),
    ("BUYR", "POST", "/buy_request", {"c_id": "4"}),
    ("BUYC", "POST", "/buy_confirm", {"c_id": "4", "cc_type": "VISA"}),
    ("ORDI", "GET", "/order_inquiry", None),
    ("ORDD", "POST", "/order_display", {"c_id": "4"}),
    ("ADMR", "GET", "/admin_request?i_id=4", None),
    ("ADMC", "POST", "/admin_confirm", {"i_id": "4"}),
]
# Pages that read only: the same database gives both servers the same bytes.
READ_ONLY = ["HOME", "NEWP", "BESS", "PROD", "SREQ", "SRES", "CREG", "ORDI", "ADMR"]

pytestmark = pytest.mark.skipif(jvm.tools() is not None, reason=f"the JVM bookstore cannot be built here: {jvm.tools()}")


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def bed(request, tmp_path_factory):
    """The JVM bookstore up, as `live up --server java` brings it up: M = 4, N = 2, on
    SQLite (the embedded default) and on the project's PostgreSQL (postgres.sh)."""
    if request.param == "postgres" and not _postgres_available() and not os.environ.get("CI"):
        pytest.skip("PostgreSQL is not installed and cannot be (not root); CI installs it")
    # PostgreSQL's data must be reachable by its own user: under the project, beside test_live_testbed's.
    workdir = (ROOT / ".tierlab" / "test" / "jvm") if request.param == "postgres" else tmp_path_factory.mktemp("jvm") / "live"
    with testbed.Testbed.started(workdir, db=request.param, server="java", threads=4, connections=2) as bed:
        yield bed


def _postgres_available() -> bool:
    """PostgreSQL's binaries, or a package manager that can install them."""
    return any(Path("/usr/lib/postgresql").glob("*/bin")) or os.geteuid() == 0


def _get(bed: testbed.Testbed, method: str, path: str, form: dict | None, headers: dict | None = None) -> tuple[int, str]:
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{bed.state.port}{path}", data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _python_page(db: str, method: str, path: str, form: dict | None) -> tuple[str, str]:
    """The Python bookstore's page for the same request, in process, on the same database."""
    database, made = Database(db), []

    def connect():
        made.append(database.connect())
        return made[-1]

    pool = ConnectionPool(connect, size=1)
    tier = Tier(Bookstore(database, pool), threads=1, db=pool)
    body = urllib.parse.urlencode(form).encode() if form else b""
    route, _, query = path.partition("?")
    environ = {"PATH_INFO": route, "QUERY_STRING": query, "REQUEST_METHOD": method, "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body)}
    got: dict = {}
    try:
        page = b"".join(tier(environ, lambda status, headers: got.update(status=status)))
    finally:
        for conn in made:
            conn.close()
    return got["status"], page.decode()


def test_every_page_answers_as_the_python_bookstores(bed):
    # The pages that read first, then those that write (which change what the others show).
    ordered = sorted(PAGES, key=lambda page: page[0] not in READ_ONLY)
    jvm_pages = {}
    for kind, method, path, form in ordered:
        jvm_pages[kind] = _get(bed, method, path, form)
        if kind in READ_ONLY:  # the same statements on the same data: the same page, byte for byte
            assert _python_page(bed.state.db, method, path, form) == ("200 OK", jvm_pages[kind][1]), kind
    assert {k: status for k, (status, _) in jvm_pages.items()} == dict.fromkeys(jvm_pages, 200)
    for kind, (_, page) in jvm_pages.items():
        title = page.split("<h1>")[1].split("</h1>")[0]
        assert page.startswith(f"<html><head><title>TPC-W {title}</title></head><body><h1>{title}</h1>"), kind
    # Bad input is the client's error, as in Python: 400 naming the parameter, 404 for no such item or page.
    assert _get(bed, "GET", "/product_detail?i_id=abc", None) == (400, "i_id must be a whole number 0…2147483647, got 'abc'\n")
    assert _get(bed, "GET", "/product_detail?i_id=999999", None) == (404, "no item 999999\n")
    assert _get(bed, "GET", "/nowhere", None)[0] == 404
    assert _get(bed, "POST", "/buy_request", {"c_id": "4", "note": "x" * 100_000}) == (413, "the request body exceeds 65536 bytes\n")


def test_threads_and_connections_resize_at_run_time(bed):
    admin = bed.admin
    m = admin.configure({"threads": {"size": 7, "timeout": 5}, "connections": {"size": 3, "caching": "request", "priorities": {}, "max_queue": None}})
    assert (m["pools"]["threads"]["size"], m["pools"]["connections"]["size"], m["pools"]["connections"]["caching"]) == (7, 3, "request")
    assert m["pools"]["threads"]["timeout"] == 5.0 and m["pools"]["connections"]["max_queue"] is None
    # A bad setting names itself and changes nothing, the valid ones beside it included.
    with pytest.raises(InputError, match=r"connections.size must be a whole number 1…256, got 0"):
        admin.configure({"threads": {"size": 9}, "connections": {"size": 0}})
    with pytest.raises(InputError, match=r"threads.priorities: the JVM server serves its waiters in arrival order"):
        admin.configure({"threads": {"priorities": {"BUYC": 0}}})
    assert admin.metrics()["pools"]["threads"]["size"] == 7
    # One worker and one connection: four searches at once take turns for both.
    admin.configure({"threads": {"size": 1}, "connections": {"size": 1, "caching": "transaction"}})
    admin.drain()
    admin.observe(time.monotonic(), 0.1)
    start, statuses = threading.Barrier(4), []

    def search():
        start.wait()
        statuses.append(_get(bed, "GET", "/execute_search?search_type=title&search_string=o", None)[0])

    clients = [threading.Thread(target=search) for _ in range(4)]
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    assert statuses == [200] * 4
    records, windows = admin.drain(600)
    assert len(records) == 4 and (records.db_requests == 101).all()
    pools = windows["pools"]
    assert max(pools["threads"]["busy_max"]) == 1 and max(pools["connections"]["busy_max"]) == 1
    assert sum(pools["threads"]["waited"]) >= 1 and sum(pools["threads"]["acquired"]) == 4
    assert sum(pools["connections"]["acquired"]) == 4 * 101
    assert admin.metrics()["pools"]["connections"]["open"] <= 1  # HikariCP holds no more than N
    admin.configure({"threads": {"size": 4}, "connections": {"size": 2}})


def test_drain_gives_the_middlewares_phase_columns(bed):
    admin = bed.admin
    admin.drain()
    origin = time.monotonic()
    admin.observe(origin, 0.1)
    for n, (kind, method, path, form) in enumerate(PAGES, 1):
        assert _get(bed, method, path, form, {"X-Tierlab-Type": kind, "X-Tierlab-Request": str(n), "X-Tierlab-Session": "7"})[0] == 200
    records, windows = admin.drain(600)
    assert sorted(records.id) == list(range(1, len(PAGES) + 1)) and set(records.type) == {k for k, *_ in PAGES}
    assert set(PHASES) <= set(records.columns)
    assert {"db_requests", "db_queries", "db_time", "db_cpu_time", "cpu_time", "pool_cpu_time", "start", "end", "status"} <= set(records.columns)
    # One clock reading ends the last phase and the request: the phases add up to its time.
    assert (records[PHASES].sum(axis=1) - records.time).abs().max() < 1e-6
    assert (records.start >= origin).all() and (records.status == "ok").all()
    per_type = records.set_index("type")
    assert per_type.loc["SRES", "db_requests"] == 101 and per_type.loc["BUYR", "db_requests"] == 10 and per_type.loc["BUYC", "db_requests"] == 1
    assert per_type.loc["SREQ", "db_requests"] == 0 and per_type.loc["SRES", "pool_cpu_time"] > 0
    assert (records.db_cpu_time <= records.cpu_time + 1e-6).all()
    assert sum(windows["server"]["completions"]) == len(PAGES) == sum(windows["server"]["arrivals"])
    assert admin.metrics()["sessions"]["created"] >= 1  # the named session's cart lives in this server


def test_metrics_in_the_prometheus_text_format_when_a_scraper_asks(bed):
    token = (Path(bed.state.workdir) / "token").read_text().strip()
    req = urllib.request.Request(f"http://127.0.0.1:{bed.state.admin_port}/metrics", headers={"Authorization": f"Bearer {token}", "Accept": "text/plain"})
    with urllib.request.urlopen(req, timeout=30) as r:
        families = {f.name: f for f in text_string_to_metric_families(r.read().decode())}
    state = bed.admin.metrics()
    assert {s.labels["status"]: s.value for s in families["tierlab_requests"].samples} == state["requests"]
    assert {s.labels["pool"]: s.value for s in families["tierlab_pool_size"].samples} == {p: v["size"] for p, v in state["pools"].items()}
    counts = {s.labels["type"]: s.value for s in families["tierlab_response_seconds"].samples if s.name.endswith("_count") and s.labels["status"] == "ok"}
    assert counts["SRES"] >= 1


def test_a_live_run_through_the_unchanged_testbed(bed):
    """`tierlab live run`'s path: the model's pools set on the server, the load, the
    server's records joined request by request, its series and pool summaries."""
    trace = bed.run(live_model(**{"run.duration": 6, "run.warmup": 1, "tiers.app.pools.threads.size": 6, "tiers.app.pools.db.size": 3}), HTTP)
    r = trace.requests
    assert len(r) > 50 and (r.status == "ok").all(), r[r.status != "ok"].head()
    assert (r["app.visits"] == 1).all()
    assert (r[PHASE_COLUMNS].sum(axis=1) - r["app.time"]).abs().max() < 1e-6
    assert (r.loc[r.type == "SRES", "app.db_requests"] == 101).all()
    pools = trace.summary["tiers"]["app"]["servers"][0]["pools"]
    assert {p["size"] for p in pools.values()} == {6, 3}
    assert all(p["busy_max"] <= p["size"] for p in pools.values())  # a connection handed over is counted once
    assert trace.summary["missing"].get("app.phases") is None


def test_a_hand_off_is_part_of_its_wait(bed):
    """The JVM's pools count a granted wait's hand-off inside the wait (PoolStats.handedOver:
    from the later of the wait's start and the pool's last release to the grant, less the
    taker's time on a run queue), so no pool hands off more token-seconds than its
    requests waited; with one thread, requests wait."""
    trace = bed.run(live_model(**{"run.duration": 6, "run.warmup": 1, "tiers.app.pools.threads.size": 1, "tiers.app.pools.db.size": 1}), HTTP)
    pools = trace.summary["tiers"]["app"]["servers"][0]["pools"]
    assert pools["threads"]["waited"] > 0
    for name, p in pools.items():
        assert 0.0 <= p["mean_handing_off"] <= p["mean_queued"] + 1e-9, (name, p)


def test_a_cluster_of_jvm_servers_behind_the_proxy(tmp_path):
    """`live up --model --server java`: two JVM bookstores behind the dispatcher proxy,
    one database; each request recorded by the server the proxy chose."""
    model = live_model(**{"tiers.app.servers": 2, "tiers.app.dispatch": {"policy": "least_active"}, "run.duration": 6, "run.warmup": 1})
    state = up_cluster(model, tmp_path / "live", log=lambda *_: None, server="java")
    try:
        trace = testbed.Testbed(tmp_path / "live").run(model, HTTP)
    finally:
        assert lifecycle.down(tmp_path / "live")
    r = trace.requests
    assert len(r) > 50 and (r.status == "ok").all() and set(r["app.server"]) == {0, 1}
    assert (r[PHASE_COLUMNS].sum(axis=1) - r["app.time"]).abs().max() < 1e-6
    assert not [pid for pid in state.pids() if lifecycle.running(pid)]


def test_stopping_leaves_no_process(bed):
    assert lifecycle.down(bed.state.workdir)
    assert not lifecycle.running(bed.state.pid)
    assert all(lifecycle.port_free(p) for p in (bed.state.port, bed.state.admin_port))


def test_maven_runs_only_when_a_source_is_newer_than_the_jar(tmp_path, monkeypatch):
    """The cache: `build` runs Maven (offline first) only for a missing or stale jar; a
    source is the pom, a Java file, or a file the jar bundles from the Python bookstore."""
    project = jvm.Project(tmp_path / "jvm" / "bookstore")
    shared = tmp_path / "python" / "tierlab" / "live" / "server" / "bookstore"
    for f in (project.root / "pom.xml", project.root / "src" / "Main.java", shared / "statements.sql", shared / "vocabulary.json"):
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("x")
        os.utime(f, (1000, 1000))
    monkeypatch.setattr(jvm, "project", lambda: project)
    calls: list[list[str]] = []
    monkeypatch.setattr(jvm.subprocess, "run", lambda cmd, **kw: calls.append(cmd) or jvm.subprocess.CompletedProcess(cmd, 0, "", ""))
    jvm.build(log=lambda *_: None)
    assert len(calls) == 1 and calls[0][:2] == ["mvn", "-o"] and "package" in calls[0]  # missing: built, offline sufficed
    project.jar.write_text("jar")
    os.utime(project.jar, (2000, 2000))
    calls.clear()
    jvm.build(log=lambda *_: None)
    assert calls == []  # fresh
    os.utime(shared / "statements.sql", (3000, 3000))
    jvm.build(log=lambda *_: None)
    assert len(calls) == 1  # a statement changed: built again
