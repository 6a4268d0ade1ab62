"""The database's own account of a run: per-statement calls and time from PostgreSQL's
`pg_stat_statements` (loaded by postgres.sh), reset before the load and read after it —
a cross-check of the middleware's client-side `db_time` and `db_queries`, which also
count the round trip and the driver."""

from __future__ import annotations

import pandas as pd

from ..trace.schema import STATEMENT_COLUMNS
from .server.bookstore import Database

_READ = (
    "SELECT query, calls, total_exec_time / 1000.0, rows FROM pg_stat_statements "
    "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    "AND query NOT ILIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC"
)
UNAVAILABLE = "PostgreSQL's pg_stat_statements is not loaded; restart the cluster (`tierlab live down`, then `up`) so postgres.sh loads it"


def reset(db: Database) -> str | None:
    """Start counting afresh; the reason if the database cannot count."""
    return _call(db, "SELECT pg_stat_statements_reset()")[1]


def read(db: Database) -> tuple[pd.DataFrame | None, str | None]:
    """Per statement since the reset: its text (parameters as $1, …), `calls`,
    `total_time` (seconds executing, in the database) and `rows`; or the reason none."""
    rows, why = _call(db, _READ)
    if rows is None:
        return None, why
    df = pd.DataFrame(rows, columns=STATEMENT_COLUMNS).astype({"calls": "int64", "total_time": float, "rows": "int64"})
    return df, None


def _call(db: Database, sql: str) -> tuple[list | None, str | None]:
    try:
        conn = db.connect()
    except Exception as e:  # noqa: BLE001 — any driver failure: the run goes on without the cross-check
        return None, f"PostgreSQL did not answer ({type(e).__name__}: {e})"
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall(), None
    except Exception:  # noqa: BLE001 — the extension is missing or not preloaded
        return None, UNAVAILABLE
    finally:
        conn.close()
