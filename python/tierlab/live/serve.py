"""Serve the bookstore (or any WSGI application wrapped in `Tier`) with waitress, plus
the loopback admin endpoint. `tierlab live up` runs this as a background process:

    python -m tierlab.live.serve --db sqlite:///.tierlab/live/bookstore.db --port 8080 \\
        --admin-port 8081 --token-file .tierlab/live/token --threads 20 --connections 10

Admin endpoint (127.0.0.1 only; header `Authorization: Bearer TOKEN`):
  GET  /metrics  pools (size, busy, queued, rejected), requests by status, caching
  POST /config   JSON {"threads": M, "connections": N, "caching": "request"|"transaction",
                 "timeout": seconds a request waits for a thread or a connection,
                 "thread_priorities" / "connection_priorities": {type: priority}, lower
                 served first — cross-tier priority; {} is FIFO}
  POST /drain    JSON {"records": [...]}: the per-request phase records since the last drain
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
            self._reply(404, {"error": f"no {self.path}; GET /metrics, POST /config, POST /drain"})

        def do_POST(self):  # noqa: N802
            if not self._authorized():
                return
            size = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(size) or b"{}")
                if self.path == "/drain":
                    return self._reply(200, {"records": tier.drain()})
                if self.path == "/config":
                    apply_config(tier, body)
                    return self._reply(200, tier.metrics())
            except (ValueError, TypeError) as e:
                return self._reply(400, {"error": str(e)})
            self._reply(404, {"error": f"no {self.path}"})

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Admin)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="tierlab-admin", daemon=True).start()
    return server


def apply_config(tier: Tier, body: dict) -> None:
    known = ("threads", "connections", "caching", "timeout", "thread_priorities", "connection_priorities")
    unknown = set(body) - set(known)
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}; known: {', '.join(known)}")
    for key, holder in (("thread_priorities", tier), ("connection_priorities", tier.db)):
        if key in body:
            if not isinstance(body[key], dict) or not all(isinstance(v, int) for v in body[key].values()):
                raise ValueError(f"{key} must map request types to whole numbers, e.g. {{\"BUYC\": 0, \"SRES\": 1}}")
            holder.priorities = dict(body[key])
    if "timeout" in body:
        if not float(body["timeout"]) > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {body['timeout']}")
        tier.threads.timeout = tier.db.tokens.timeout = float(body["timeout"])
    if "threads" in body:
        if not 1 <= int(body["threads"]) <= MAX_THREADS:
            raise ValueError(f"threads must be 1…{MAX_THREADS}, got {body['threads']}")
        tier.threads.resize(int(body["threads"]))
    if "connections" in body:
        tier.db.tokens.resize(int(body["connections"]))
    if "caching" in body:
        tier.db.set_caching(body["caching"])


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
    server = create_server(tier, host=a.host, port=a.port, threads=SERVER_THREADS, connection_limit=900,
                           backlog=4096, channel_timeout=300, ident="tierlab-bookstore")
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
