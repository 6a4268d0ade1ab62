"""Serve the bookstore (or any WSGI application wrapped in `Tier`) with waitress, plus
the loopback admin endpoint. `tierlab live up` runs this as a background process:

    python -m tierlab.live.server.serve --db sqlite:///.tierlab/live/bookstore.db --port 8080 \\
        --admin-port 8081 --token-file .tierlab/live/token --threads 20 --connections 10

Admin endpoint (127.0.0.1 only; header `Authorization: Bearer TOKEN`):
  GET  /metrics  the server now: requests by status, each pool (size, busy, queued, …)
  POST /config   the pools, in the model's words: {"threads": {...}, "connections": {...}}
                 with any of "size", "timeout" (seconds a request waits, then 503),
                 "max_queue" (waiters beyond it are refused at once; null: unbounded),
                 "priorities" ({type: priority}, lower served first — cross-tier
                 priority; {} is FIFO), and for connections "caching" (request|transaction)
  POST /observe  {"origin": monotonic seconds, "window": seconds}: start the per-window
                 observation of a run afresh
  POST /drain    {"windows": n} → {"records": [...], "windows": {...}}: the per-request
                 phase records since the last drain, and the observation's first n windows
"""

from __future__ import annotations

import argparse
import hmac
import json
import logging
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .bookstore import Bookstore, Database
from .middleware import ConnectionPool, Tier

# waitress's own threads. Requests beyond the middleware's M workers wait for one in
# the middleware (seen, timed out, rejected) only while a waitress thread carries them:
# enough for the largest M plus an overload's waiters (arrival rate × wait timeout).
# Idle ones only block on a lock.
SERVER_THREADS = 512
MAX_THREADS = 128  # the largest M
MAX_CONNECTIONS = 256  # below the project's PostgreSQL max_connections (300)


def admin_server(tier: Tier, port: int, token: str) -> ThreadingHTTPServer:
    class Admin(BaseHTTPRequestHandler):
        def _reply(self, code: int, payload: dict) -> None:
            body = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
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
                return self._reply(200, tier.metrics())
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
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from waitress.server import create_server

    db = Database(a.db)
    pool = ConnectionPool(db.connect, size=a.connections, timeout=a.timeout, caching=a.caching)
    tier = Tier(Bookstore(db, pool), threads=a.threads, thread_timeout=a.timeout, db=pool)
    # waitress polls with select(), which fails beyond 1,024 descriptors; past its
    # connection limit new connections wait in the listen backlog instead.
    server = create_server(
        tier, host=a.host, port=a.port, threads=SERVER_THREADS, connection_limit=900, backlog=4096, channel_timeout=300, ident="tierlab-bookstore"
    )
    # Listening on the application port first: an answering admin endpoint means "up".
    admin = admin_server(tier, a.admin_port, a.token_file.read_text().strip())
    signal.signal(signal.SIGTERM, lambda *_: server.close())
    logging.getLogger("tierlab.live").info("bookstore on http://%s:%d (admin 127.0.0.1:%d), %s", a.host, a.port, a.admin_port, a.db)
    try:
        server.run()
    except (KeyboardInterrupt, OSError):
        pass
    finally:
        admin.shutdown()


if __name__ == "__main__":
    main()
