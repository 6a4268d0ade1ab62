"""WSGI middleware that gives any Python web application the soft resources of the
paper's application server, and profiles every request the way the simulator does.

WSGI, not ASGI, because the request execution model being measured (Totok &
Karamcheti §2) is thread-per-request with blocking database calls: a request holds a
worker thread from start to end and a DB connection while it talks to the database.
Under WSGI those are real threads and real blocking calls; under ASGI "threads" would
be an artificial semaphore around coroutines.

    pool = ConnectionPool(lambda: sqlite3.connect(...), size=N, caching="request")
    app = Tier(my_wsgi_app, threads=M, db=pool)      # serve with any threaded WSGI server

Inside the application, `with pool.connection() as conn:` is getConnection() … close(),
and `with pool.transaction() as conn:` holds one connection for a transaction. Each
request's time at the tier is split into the trace schema's phases (docs/trace.md):
wait_thread, before_db, wait_db, with_db_active, with_db_idle; and what the request
demanded: its thread's CPU time while it held a worker (`cpu_time`), the part of it in
taking and giving back connections (`pool_cpu_time`), and the statements it ran on its
connections (`db_queries`) with their wall time (`db_time`) and the part of the thread's
CPU time spent in them (`db_cpu_time`: an embedded database's own work).
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
import traceback
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from ...trace.schema import PHASES
from .metrics import Exposition
from .pool import PoolRejected, TokenPool
from .windows import Counts, Level

log = logging.getLogger("tierlab.live")
STATUSES = ("ok", "rejected", "timeout", "error")


@dataclass
class RequestContext:
    """One request's timeline at the tier: the current phase and the time in each."""

    id: int
    session: int
    type: str
    priority: int
    start: float = field(default_factory=time.monotonic)
    phase: str = "wait_thread"
    since: float = 0.0
    time_in: dict = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))
    db_requests: int = 0
    cpu_since: float | None = None  # the thread's CPU clock when the request got its worker
    db_queries: int = 0
    db_time: float = 0.0
    db_cpu_time: float = 0.0
    pool_cpu_time: float = 0.0
    cached: Any = None  # the connection held across close() (request-wide, or in a transaction)
    in_transaction: bool = False

    def __post_init__(self):
        self.since = self.start

    def enter(self, phase: str) -> None:
        now = time.monotonic()
        self.time_in[self.phase] += now - self.since
        self.phase, self.since = phase, now


_current: contextvars.ContextVar[RequestContext] = contextvars.ContextVar("tierlab_request")


@contextmanager
def _pool_work(ctx: RequestContext):
    """Count the thread's CPU time in the block into the request's `pool_cpu_time`:
    getConnection()'s and close()'s work (the pool's bookkeeping, a connection made
    or rolled back), which the connection caching mode multiplies or spares."""
    cpu = time.thread_time()
    try:
        yield
    finally:
        ctx.pool_cpu_time += time.thread_time() - cpu


class _TimedCursor:
    """A DB-API cursor whose statements and fetches count into the request's
    `db_queries`, `db_time` and `db_cpu_time`; everything else is the cursor's own."""

    def __init__(self, cursor, ctx: RequestContext):
        self._cursor, self._ctx = cursor, ctx

    def _timed(self, call, *args, statement: bool = False):
        wall, cpu = time.monotonic(), time.thread_time()
        try:
            return call(*args)
        finally:
            self._ctx.db_time += time.monotonic() - wall
            self._ctx.db_cpu_time += time.thread_time() - cpu
            self._ctx.db_queries += statement

    def execute(self, *args):
        self._timed(self._cursor.execute, *args, statement=True)
        return self

    def executemany(self, *args):
        self._timed(self._cursor.executemany, *args, statement=True)
        return self

    def fetchone(self):
        return self._timed(self._cursor.fetchone)

    def fetchmany(self, *args):
        return self._timed(self._cursor.fetchmany, *args)

    def fetchall(self):
        return self._timed(self._cursor.fetchall)

    def __iter__(self):
        return iter(self.fetchall())

    def __getattr__(self, name):
        return getattr(self._cursor, name)


class _TimedConnection:
    """The connection the application sees: its cursors are timed (`_TimedCursor`)."""

    def __init__(self, conn, ctx: RequestContext):
        self._conn, self._ctx = conn, ctx

    def cursor(self, *args, **kwargs):
        return _TimedCursor(self._conn.cursor(*args, **kwargs), self._ctx)

    def __getattr__(self, name):
        return getattr(self._conn, name)


class ConnectionPool:
    """N database connections made by `connect()`, lent out by `connection()` and
    `transaction()` with request-wide or transaction-wide caching (§3 of the paper):

    - transaction-wide: close() returns the connection to the pool at once; a request
      asks the pool again for every access (Search: 101 connection requests);
    - request-wide: the first getConnection() takes a connection and the request keeps
      it, idle between accesses, until it ends (one connection request).

    `priorities` orders waiters by request type (lower first: CTP); `type_limits` caps
    the connections one request type may hold at once (per-servlet pools, Wang et al.).
    A connection that fails is discarded with every idle one (a database restart leaves
    them all dead) and replaced on demand; its token is always given back."""

    def __init__(
        self,
        connect: Callable[[], object],
        size: int,
        timeout: float = 10.0,
        caching: Literal["request", "transaction"] = "transaction",
        priorities: dict[str, int] | None = None,
        type_limits: dict[str, int] | None = None,
        max_queue: int | None = None,
    ):
        self.connect, self.caching = connect, caching
        self.priorities = priorities or {}
        self.tokens = TokenPool("connections", size, timeout, max_queue)
        self.type_tokens = {t: TokenPool(f"connections of {t}", n, timeout) for t, n in (type_limits or {}).items()}
        self._idle: list = []
        self._lock = threading.Lock()
        self.discarded = 0

    def set_caching(self, caching: str) -> None:
        if caching not in ("request", "transaction"):
            raise ValueError(f"caching must be 'request' or 'transaction', got {caching!r}")
        self.caching = "request" if caching == "request" else "transaction"

    def _checkout(self, ctx: RequestContext) -> Any:
        ctx.enter("wait_db")
        ctx.db_requests += 1
        with _pool_work(ctx):
            return self._take(ctx)

    def _take(self, ctx: RequestContext) -> Any:
        limit = self.type_tokens.get(ctx.type)
        if limit:
            limit.acquire(self.priorities.get(ctx.type, 0))
        try:
            self.tokens.acquire(self.priorities.get(ctx.type, 0))
        except PoolRejected:
            if limit:
                limit.release()
            raise
        try:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            return conn if conn is not None else self.connect()
        except BaseException:
            self._give_back(ctx, None, broken=True)
            raise

    def _give_back(self, ctx: RequestContext, conn, broken: bool) -> None:
        with _pool_work(ctx):
            self._return(ctx, conn, broken)

    def _return(self, ctx: RequestContext, conn, broken: bool) -> None:
        if conn is not None and not broken:
            try:
                conn.rollback()  # nothing uncommitted leaks into the next borrower
            except Exception:  # noqa: BLE001 — a dead connection; discard it below
                broken = True
        if broken:
            self._discard(conn)
        elif conn is not None:
            with self._lock:
                self._idle.append(conn)
        self.tokens.release()
        limit = self.type_tokens.get(ctx.type)
        if limit:
            limit.release()

    def _discard(self, conn) -> None:
        with self._lock:
            dead, self._idle = [c for c in (conn, *self._idle) if c is not None], []
            self.discarded += len(dead)
        for c in dead:
            try:
                c.close()
            except Exception:  # noqa: BLE001
                pass

    @contextmanager
    def connection(self):
        """getConnection() … close(): one database access."""
        ctx = _current.get()
        if ctx.cached is not None:  # request-wide caching, or inside a transaction
            ctx.enter("with_db_active")
            try:
                yield _TimedConnection(ctx.cached, ctx)
                if not ctx.in_transaction:
                    ctx.cached.commit()  # close() ends the access's work, as with autocommit
            except Exception:
                if not ctx.in_transaction and _is_broken(ctx.cached):
                    conn, ctx.cached = ctx.cached, None
                    self._give_back(ctx, conn, broken=True)
                    ctx.enter("before_db")
                raise
            ctx.enter("with_db_active" if ctx.in_transaction else "with_db_idle")
            return
        conn = self._checkout(ctx)
        ctx.enter("with_db_active")
        try:
            yield _TimedConnection(conn, ctx)
            conn.commit()
        except Exception:
            self._closed(ctx, conn, failed=True)
            raise
        self._closed(ctx, conn, failed=False)

    @contextmanager
    def transaction(self):
        """One connection for the block, committed at its end (rolled back on error);
        `connection()` inside it reuses that connection (one connection request)."""
        ctx = _current.get()
        owned = ctx.cached is None
        conn = self._checkout(ctx) if owned else ctx.cached
        ctx.cached, ctx.in_transaction = conn, True
        ctx.enter("with_db_active")
        failed = False
        try:
            yield _TimedConnection(conn, ctx)
            conn.commit()
        except Exception:
            failed = True
            raise
        finally:
            ctx.in_transaction = False
            if owned:
                ctx.cached = None
                self._closed(ctx, conn, failed)
            elif failed and _is_broken(conn):
                ctx.cached = None
                self._give_back(ctx, conn, broken=True)
                ctx.enter("before_db")
            else:
                ctx.enter("with_db_idle")

    def _closed(self, ctx: RequestContext, conn, failed: bool) -> None:
        """After close(): request-wide caching keeps the connection, idle, until the
        request ends; transaction-wide gives it back now. A broken one goes either way."""
        broken = failed and _is_broken(conn)
        if self.caching == "request" and not broken:
            ctx.cached = conn
            ctx.enter("with_db_idle")
        else:
            self._give_back(ctx, conn, broken)
            ctx.enter("before_db")

    def end_request(self, ctx: RequestContext) -> None:
        """Give back a connection the request still holds (request-wide caching, or an
        exception that escaped the application)."""
        if ctx.cached is not None:
            conn, ctx.cached, ctx.in_transaction = ctx.cached, None, False
            self._give_back(ctx, conn, _is_broken(conn))


def _is_broken(conn) -> bool:
    """True if the connection can no longer be used (psycopg: `broken`/`closed`)."""
    if conn is None:
        return True
    if getattr(conn, "broken", False) or getattr(conn, "closed", False) is True:
        return True
    try:
        conn.rollback()
        return False
    except Exception:  # noqa: BLE001
        return True


class Tier:
    """The middleware: M worker threads (a request waits for one up to
    `thread_timeout`, else an explicit 503), an optional ConnectionPool, and per-request
    phase records. `X-Tierlab-Type`, `-Request` and `-Session` headers (sent by the load
    generator) name the request; without them the path is the type."""

    def __init__(
        self,
        app,
        *,
        threads: int = 20,
        thread_timeout: float = 10.0,
        db: ConnectionPool | None = None,
        priorities: dict[str, int] | None = None,
        name: str = "app",
        max_queue: int | None = None,
    ):
        self.app, self.db, self.name = app, db, name
        self.threads = TokenPool("threads", threads, thread_timeout, max_queue)
        self.priorities = priorities or {}
        self.records: list[dict] = []
        self.counts = dict.fromkeys(STATUSES, 0)
        self._lock = threading.Lock()
        self.in_progress = 0
        self.exposition = Exposition(name, self.metrics)
        self.observe(time.monotonic(), 0.1)

    def observe(self, origin: float, window: float) -> None:
        """Start the per-window observation afresh (the server's series of a run:
        requests in progress, visits begun and ended, residence; and each pool's)."""
        with self._lock:
            self._concurrency = Level(origin, window, self.in_progress)
            self._arrivals, self._completions, self._residence = (Counts(origin, window) for _ in range(3))
        for pool in self.pools().values():
            pool.observe(origin, window)

    def pools(self) -> dict[str, TokenPool]:
        return {"threads": self.threads, **({"connections": self.db.tokens} if self.db is not None else {})}

    def _arrive(self, now: float) -> None:
        with self._lock:
            self.in_progress += 1
            self._concurrency.set(now, self.in_progress)
            self._arrivals.add(now)

    def __call__(self, environ, start_response):
        ctx = RequestContext(
            id=_int(environ.get("HTTP_X_TIERLAB_REQUEST")),
            session=_int(environ.get("HTTP_X_TIERLAB_SESSION")),
            type=environ.get("HTTP_X_TIERLAB_TYPE") or environ.get("PATH_INFO", "/"),
            priority=0,
        )
        ctx.priority = self.priorities.get(ctx.type, 0)
        self._arrive(ctx.start)
        token = _current.set(ctx)
        try:
            try:
                self.threads.acquire(ctx.priority)
            except PoolRejected as e:
                return self._finish(ctx, "rejected", start_response, "503 Service Unavailable", f"rejected: {e}\n".encode())
            ctx.enter("before_db")
            ctx.cpu_since = time.thread_time()
            try:
                status, headers, body = self._run(environ)
                outcome = "ok" if status[:1] in "23" else "error"
                return self._finish(ctx, outcome, start_response, status, body, headers)
            except PoolRejected as e:
                return self._finish(ctx, "rejected", start_response, "503 Service Unavailable", f"rejected: {e}\n".encode())
            except Exception as e:  # noqa: BLE001 — an application failure is an explicit, counted 500
                log.warning("request %s (%s) failed: %s", ctx.id, ctx.type, "".join(traceback.format_exception_only(e)).strip())
                return self._finish(ctx, "error", start_response, "500 Internal Server Error", f"error: {type(e).__name__}: {e}\n".encode())
            finally:
                if self.db is not None:
                    self.db.end_request(ctx)
                self.threads.release()
        finally:
            _current.reset(token)

    def _run(self, environ):
        """Run the application to its last byte: the request's work ends with its body."""
        got = {}

        def start(status, headers, exc_info=None):
            got["status"], got["headers"] = status, headers

        result = self.app(environ, start)
        try:
            body = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()
        return got["status"], got["headers"], body

    def _finish(self, ctx, outcome, start_response, status, body, headers=()):
        cpu_time = time.thread_time() - ctx.cpu_since if ctx.cpu_since is not None else 0.0
        ctx.enter("done")
        end = ctx.since  # the instant the last phase ended: the phases add up to the time
        rec = {
            "id": ctx.id,
            "session": ctx.session,
            "type": ctx.type,
            "status": outcome,
            "start": ctx.start,
            "end": end,
            "time": end - ctx.start,
            "db_requests": ctx.db_requests,
            "cpu_time": cpu_time,
            "db_queries": ctx.db_queries,
            "db_time": ctx.db_time,
            "db_cpu_time": ctx.db_cpu_time,
            "pool_cpu_time": ctx.pool_cpu_time,
        }
        rec.update({p: ctx.time_in[p] for p in PHASES})
        with self._lock:
            self.counts[outcome] += 1
            self.records.append(rec)
            self.in_progress -= 1
            self._concurrency.set(end, self.in_progress)
            self._completions.add(end)
            self._residence.add(end, end - ctx.start)
        self.exposition.observe(ctx.type, outcome, end - ctx.start)
        headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
        start_response(status, headers + [("Content-Length", str(len(body)))])
        return [body]

    def drain(self) -> list[dict]:
        """The records since the last drain."""
        with self._lock:
            out, self.records = self.records, []
        return out

    def windows(self, n: int) -> dict:
        """The first `n` windows of the observation: the server's `concurrency` (an
        integral, request-seconds), `arrivals`, `completions`, `residence` (the summed
        residence of the visits that ended), and per pool its `TokenPool.windows`."""
        with self._lock:
            now = time.monotonic()
            server = {
                "concurrency": self._concurrency.windows(now, n)[0],
                "arrivals": self._arrivals.windows(n),
                "completions": self._completions.windows(n),
                "residence": self._residence.windows(n),
            }
        return {"server": server, "pools": {name: p.windows(n) for name, p in self.pools().items()}}

    def metrics(self) -> dict:
        """The server now: requests by status since it started, and each pool."""
        pools = {name: p.sample() for name, p in self.pools().items()}
        if self.db is not None:
            pools["connections"] |= {"caching": self.db.caching, "discarded": self.db.discarded}
        return {"tier": self.name, "requests": dict(self.counts), "in_progress": self.in_progress, "pools": pools}


def _int(v) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return 0
