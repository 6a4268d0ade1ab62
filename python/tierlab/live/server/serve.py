"""Serve the bookstore (or any WSGI application wrapped in `Tier`) with waitress, plus
the loopback admin endpoint. `tierlab live up` runs this as a background process:

    python -m tierlab.live.server.serve --db sqlite:///.tierlab/live/bookstore.db --port 8080 \\
        --admin-port 8081 --token-file .tierlab/live/token --threads 20 --connections 10

Admin endpoint (127.0.0.1 only; header `Authorization: Bearer TOKEN`):
  GET  /metrics  the server now: requests by status, each pool (size, busy, queued, …);
                 in the Prometheus text format when asked (Accept: text/plain or OpenMetrics)
  POST /config   the pools, in the model's words: {"threads": {...}, "connections": {...}}
                 with any of "size", "timeout" (seconds a request waits, then 503),
                 "max_queue" (waiters beyond it are refused at once; null: unbounded),
                 "priorities" ({type: priority}, lower served first — cross-tier
                 priority; {} is FIFO), and for connections "caching" (request|transaction)
  POST /observe  {"origin": monotonic seconds, "window": seconds}: start the per-window
                 observation of a run afresh
  POST /sessions/forget  drop every session's state (in this process, and in Redis)
  POST /keys/forget      the bookstore's key counters seeded from the tables again at
                 their next use (after `data.restore` put the data back as populated)
  POST /drain    {"windows": n} → {"records": [...], "windows": {...}}: the per-request
                 phase records since the last drain, and the observation's first n windows
"""

from __future__ import annotations

import argparse
import hmac
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.utilities import BadRequest, Error

from .bookstore import Bookstore, Database
from .bookstore.app import parse_cpu
from .bookstore.sessions import SessionStore, session_store
from .metrics import wants_prometheus
from .middleware import ConnectionPool, Tier

# waitress's own threads. Requests beyond the middleware's M workers wait for one in
# the middleware (seen, timed out, rejected) only while a waitress thread carries them:
# enough for the largest M plus an overload's waiters (arrival rate × wait timeout).
# Idle ones only block on a lock.
SERVER_THREADS = 512
MAX_THREADS = 128  # the largest M
MAX_CONNECTIONS = 256  # below the project's PostgreSQL max_connections (300)

# Limits of a server that faces any client, chosen for a benchmark server on a LAN.
# The load generator sends requests of ~300 bytes; TPC-W's forms are a few fields.
MAX_REQUEST_LINE = 8 * 1024  # method, URL, version: Apache's LimitRequestLine (8,190), nginx's 8k buffer → 414
MAX_HEAD = 16 * 1024  # request line and headers together → 431
MAX_BODY = 64 * 1024  # a form body → 413
# A request must arrive whole within this many seconds of its first byte, else 408 —
# what waitress lacks: its channel_timeout counts from the last byte received, so a
# request trickled a byte at a time (slowloris) would hold a channel for ever.
REQUEST_TIMEOUT = 10
# Seconds a connection may sit idle between requests: longer than TPC-W's longest think
# time (70 s), so a browser keeps its connection; a silent half-sent request ends too.
CHANNEL_TIMEOUT = 75
CLEANUP_INTERVAL = 5  # how often idle connections are looked for (waitress: 30 s)
# Connections held at once (waitress polls with select(), which fails beyond 1,024
# descriptors); past it new connections wait in the listen backlog, not refused.
CONNECTION_LIMIT = 900
BACKLOG = 4096


class URITooLong(Error):
    code = 414
    reason = "URI Too Long"


class RequestTimeout(Error):
    code = 408
    reason = "Request Timeout"


class LimitedParser(HTTPRequestParser):
    """waitress's request parser with what it lacks: a request-line limit (414), a
    deadline for the whole request (408), and no request with both Content-Length and
    Transfer-Encoding (400: the shape of request smuggling; RFC 9112 §6.1 lets a server
    reject it, and any error response closes the connection). waitress itself would
    decode the chunks, drop the Content-Length and keep the connection."""

    request_line_limit = MAX_REQUEST_LINE
    request_timeout: float = REQUEST_TIMEOUT

    def __init__(self, adj):
        super().__init__(adj)
        self.began: float | None = None

    def received(self, data: bytes) -> int:
        if self.completed:
            return 0
        now = time.monotonic()
        self.began = self.began if self.began is not None else now
        if now - self.began > self.request_timeout:
            return self._refuse(RequestTimeout(f"the request did not arrive within {self.request_timeout:g} s"), data)
        in_head = self.body_rcv is None
        if in_head:
            buffered = self.header_plus + data
            first_line = buffered.find(b"\n")
            if (first_line if first_line >= 0 else len(buffered)) > self.request_line_limit:
                return self._refuse(URITooLong(f"the request line exceeds {self.request_line_limit} bytes"), data)
        consumed = super().received(data)
        if in_head and (self.body_rcv is not None or self.completed) and self.error is None and self.chunked and "CONTENT_LENGTH" in self.headers:
            return self._refuse(BadRequest("Content-Length together with Transfer-Encoding"), data)
        return consumed

    def _refuse(self, error: Error, data: bytes) -> int:
        if getattr(self, "command", None) is None:
            self.parse_header(b"GET / HTTP/1.0\r\n")  # as waitress answers a head too large: a request to answer
        self.error, self.completed = error, True
        return len(data)


class LimitedChannel(HTTPChannel):
    parser_class = LimitedParser


def admin_server(tier: Tier, port: int, token: str, sessions: SessionStore | None = None, forget_keys: Callable[[], None] | None = None) -> ThreadingHTTPServer:
    def sessions_of() -> dict:
        """The bookstore's session counts: created here, and migrated here (fetched from
        the external store: the cluster's session virtualization)."""
        return {"sessions": {"created": sessions.created, "migrations": sessions.migrations}} if sessions is not None else {}

    class Admin(BaseHTTPRequestHandler):
        def _reply(self, code: int, payload: dict) -> None:
            self._send(code, json.dumps(payload).encode(), "application/json")

        def _send(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _authorized(self) -> bool:
            given = self.headers.get("Authorization", "").removeprefix("Bearer ")
            if hmac.compare_digest(given, token):
                return True
            self._reply(401, {"error": "missing or wrong token (header Authorization: Bearer TOKEN)"})
            return False

        def do_GET(self):  # noqa: N802
            if not self._authorized():
                return
            if self.path == "/metrics":
                accept = self.headers.get("Accept", "")
                if wants_prometheus(accept):  # a Prometheus scraper: its text format (live/server/metrics.py)
                    return self._send(200, *tier.exposition.render(accept))
                return self._reply(200, tier.metrics() | sessions_of())
            self._reply(404, {"error": f"no {self.path}; GET /metrics, POST /config, /observe, /drain"})

        def do_POST(self):  # noqa: N802
            if not self._authorized():
                return
            size = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(size) or b"{}")
                if self.path == "/drain":
                    n = int(body.get("windows", 0))
                    return self._reply(200, {"records": tier.drain(), "windows": tier.windows(n)})
                if self.path == "/observe":
                    tier.observe(float(body["origin"]), float(body["window"]))
                    return self._reply(200, {})
                if self.path == "/sessions/forget" and sessions is not None:
                    sessions.forget()
                    return self._reply(200, {})
                if self.path == "/keys/forget" and forget_keys is not None:
                    forget_keys()
                    return self._reply(200, {})
                if self.path == "/config":
                    apply_config(tier, body)
                    return self._reply(200, tier.metrics())
            except (ValueError, TypeError, KeyError) as e:
                return self._reply(400, {"error": str(e)})
            self._reply(404, {"error": f"no {self.path}"})

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Admin)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="tierlab-admin", daemon=True).start()
    return server


POOL_SETTINGS = {"threads": ("size", "timeout", "max_queue", "priorities"), "connections": ("size", "timeout", "max_queue", "priorities", "caching")}


def apply_config(tier: Tier, body: dict) -> None:
    """Check every setting first, then apply them all: a bad request changes nothing."""
    changes = []
    for pool_name, settings in body.items():
        if pool_name not in POOL_SETTINGS or (pool_name == "connections" and tier.db is None):
            raise ValueError(f"unknown pool {pool_name!r}; configure {' or '.join(POOL_SETTINGS)}")
        if not isinstance(settings, dict):
            raise ValueError(f'{pool_name} takes an object of settings, e.g. {{"size": 10}}')
        for key, value in settings.items():
            if key not in POOL_SETTINGS[pool_name]:
                raise ValueError(f"{pool_name}.{key}: unknown setting; known: {', '.join(POOL_SETTINGS[pool_name])}")
            changes.append(_setting(tier, pool_name, key, value))
    for apply in changes:
        apply()


def _setting(tier: Tier, pool_name: str, key: str, value):
    """A checked setting, as a function that applies it."""
    db = tier.db
    assert pool_name == "threads" or db is not None, "checked by apply_config"
    pool = tier.threads if db is None or pool_name == "threads" else db.tokens
    where = f"{pool_name}.{key}"
    if key == "size":
        top = MAX_THREADS if pool_name == "threads" else MAX_CONNECTIONS
        if not (type(value) is int and 1 <= value <= top):
            raise ValueError(f"{where} must be a whole number 1…{top}, got {value!r}")
        return lambda: pool.resize(value)
    if key == "timeout":
        if not (type(value) in (int, float) and 0 < value < float("inf")):
            raise ValueError(f"{where} must be a positive number of seconds, got {value!r}")
        return lambda: setattr(pool, "timeout", float(value))
    if key == "max_queue":
        if not (value is None or (type(value) is int and value >= 0)):
            raise ValueError(f"{where} must be a whole number ≥ 0 or null (unbounded), got {value!r}")
        return lambda: setattr(pool, "max_queue", value)
    if key == "priorities":
        if not (isinstance(value, dict) and all(type(v) is int for v in value.values())):
            raise ValueError(f'{where} must map request types to whole numbers, e.g. {{"BUYC": 0, "SRES": 1}}')
        holder = tier if pool_name == "threads" else db
        return lambda: setattr(holder, "priorities", dict(value))
    if value not in ("request", "transaction"):
        raise ValueError(f"{where} must be request or transaction, got {value!r}")
    assert db is not None, "checked by apply_config"
    return lambda: db.set_caching(value)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Serve the TPC-W bookstore behind tierlab's middleware.")
    ap.add_argument("--db", required=True, help="sqlite:///PATH or postgresql://USER@HOST:PORT/DB")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--admin-port", type=int, default=8081)
    ap.add_argument("--token-file", type=Path, required=True)
    ap.add_argument("--threads", type=int, default=20)
    ap.add_argument("--connections", type=int, default=10)
    ap.add_argument("--caching", choices=["request", "transaction"], default="transaction")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds a request waits for a thread or a connection")
    ap.add_argument("--request-timeout", type=float, default=REQUEST_TIMEOUT, help="seconds a request may take to arrive whole (408)")
    ap.add_argument("--channel-timeout", type=int, default=CHANNEL_TIMEOUT, help="seconds an idle connection is kept")
    ap.add_argument("--connection-limit", type=int, default=CONNECTION_LIMIT, help="connections held at once (more wait in the backlog)")
    ap.add_argument("--server", type=int, default=0, help="this server's index in its cluster (keys ≡ it mod --servers)")
    ap.add_argument("--servers", type=int, default=1, help="the cluster's servers sharing the database")
    ap.add_argument("--sessions", default=None, help="redis://HOST:PORT/DB: session state in Redis (default: in this process)")
    ap.add_argument(
        "--cpu",
        type=parse_cpu,
        default=parse_cpu(os.environ.get("TIERLAB_BOOKSTORE_CPU", "")),
        help="PAGE=MS,... or 'paper': CPU a page spends before its first database access (Totok & Karamcheti's snippets); "
        "default $TIERLAB_BOOKSTORE_CPU, so `tierlab live up` passes it on",
    )
    ap.add_argument("--otel", default=None, help="FILE: also export OpenTelemetry traces and metrics to it as OTLP/JSON lines (live/server/otel.py)")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from waitress.server import create_server

    db = Database(a.db)
    telemetry = None
    if a.otel:  # imported only when asked: a server without it loads nothing of OpenTelemetry
        from .otel import Telemetry

        telemetry = Telemetry(a.otel, lambda: pool.tokens.sample(), db.postgres)
    pool = ConnectionPool(telemetry.wrap_connect(db.connect) if telemetry else db.connect, size=a.connections, timeout=a.timeout, caching=a.caching)
    sessions = session_store(a.sessions, f"{a.server}")
    app = Bookstore(db, pool, sessions, a.server, a.servers, a.cpu)
    tier = Tier(telemetry.wrap_app(app) if telemetry else app, threads=a.threads, thread_timeout=a.timeout, db=pool)
    server = create_server(
        tier,
        host=a.host,
        port=a.port,
        threads=SERVER_THREADS,
        connection_limit=a.connection_limit,
        backlog=BACKLOG,
        channel_timeout=a.channel_timeout,
        cleanup_interval=min(CLEANUP_INTERVAL, a.channel_timeout),
        max_request_header_size=MAX_HEAD,
        max_request_body_size=MAX_BODY,
        ident="tierlab-bookstore",
    )
    LimitedParser.request_timeout = a.request_timeout
    server.channel_class = LimitedChannel
    # Listening on the application port first: an answering admin endpoint means "up".
    admin = admin_server(tier, a.admin_port, a.token_file.read_text().strip(), sessions, app.forget_keys)
    signal.signal(signal.SIGTERM, lambda *_: server.close())
    logging.getLogger("tierlab.live").info("bookstore on http://%s:%d (admin 127.0.0.1:%d), %s", a.host, a.port, a.admin_port, a.db)
    try:
        server.run()
    except (KeyboardInterrupt, OSError):
        pass
    finally:
        admin.shutdown()
        if telemetry is not None:
            telemetry.close()


if __name__ == "__main__":
    main()
